//! I1 for requests that carry no session: two callers that happen to use
//! the same JSON-RPC id at the same time each get only their own answers.
//!
//! A session keeps its callers' ids apart; a request without one (a
//! sessionless 2025 server, or any 2026-07-28 request) has only the
//! exchange it came on. A server that keys its streams by request id alone
//! writes the first caller's progress and answer on the second caller's
//! exchange and loses the rest (TS SDK < 1.26.0 with one stateless
//! transport reused across requests, CVE-2026-25536 / GHSA-345p-7cg4-v4c7;
//! the preset `TS_SDK_1_25_SHARED`).
//!
//! The rule needs a call that stays in flight: `slow_progress` (A: 3 steps
//! of 100 ms, B: 6) or else the conformance suite's `test_tool_with_progress`,
//! whichever the server lists. Each caller asks for progress under a token
//! of its own; a message on one caller's exchange that names the other's
//! token, or an exchange left without its answer while the other got one,
//! is the violation.

use super::wire::{is_response_to, Open, PROGRESS_TOOL};
use super::{Probe, Verdict};
use serde_json::{json, Value};
use std::time::Duration;

pub const SESSIONLESS_WHAT: &str =
    "two sessionless callers under one request id at once get only their own answers";
pub const V2026_WHAT: &str =
    "two 2026-07-28 callers under one request id at once get only their own answers";

/// How long after A's request B's is sent: A is in flight by then.
const GAP: Duration = Duration::from_millis(20);
/// How long both answers are read (the slow calls take at most 600 ms).
const WINDOW: Duration = Duration::from_millis(3000);

/// The tool whose call stays in flight, and A's and B's arguments.
pub fn slow_tool(listed: &[String]) -> Option<(&'static str, Value, Value)> {
    if listed.iter().any(|t| t == "slow_progress") {
        let a = json!({"steps": 3, "step_ms": 100});
        let b = json!({"steps": 6, "step_ms": 100});
        return Some(("slow_progress", a, b));
    }
    listed
        .iter()
        .any(|t| t == PROGRESS_TOOL)
        .then(|| (PROGRESS_TOOL, json!({}), json!({})))
}

/// The 2025 form, on a server whose `initialize` minted no session
/// (`sessionless.rs`) and that lists `listed`.
pub async fn sessionless(p: &mut Probe, listed: &[String]) {
    let what = SESSIONLESS_WHAT;
    let Some((tool, args_a, args_b)) = slow_tool(listed) else {
        p.add("I1", true, what, Verdict::CouldNotTest, no_slow_tool());
        return;
    };
    let id = p.id();
    let caller = |args: Value, token: &str| Caller {
        headers: Probe::post_headers(None),
        body: body(id, &call_params(tool, args, token)),
        token: token.to_owned(),
    };
    let a = caller(args_a, &format!("i1-a-{id}"));
    let b = caller(args_b, &format!("i1-b-{id}"));
    judge_overlap(p, what, id, a, b).await;
}

/// What the missing slow tool means for the finding.
pub fn no_slow_tool() -> String {
    "lists neither slow_progress nor test_tool_with_progress (a call that stays in flight)"
        .to_owned()
}

/// One caller's request as sent: its headers and its body.
pub struct Caller {
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub token: String,
}

/// The `tools/call` params of one caller: `tool` with `arguments`, asking
/// for progress under `token`.
pub fn call_params(tool: &str, arguments: Value, token: &str) -> Value {
    json!({"name": tool, "arguments": arguments, "_meta": {"progressToken": token}})
}

/// The body of a request `id` with `params`.
pub fn body(id: u64, params: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
}

/// Sends A, then B [`GAP`] later, both under request `id`, and reads both
/// answers side by side; the finding under `what`.
pub async fn judge_overlap(p: &mut Probe, what: &'static str, id: u64, a: Caller, b: Caller) {
    let (oa, ob) = tokio::join!(p.t.open("POST", &a.headers, &a.body), async {
        tokio::time::sleep(GAP).await;
        p.t.open("POST", &b.headers, &b.body).await
    });
    let (Some(mut oa), Some(mut ob)) = (oa, ob) else {
        p.add("I1", true, what, Verdict::CouldNotTest, p.t.no_answer());
        return;
    };
    tokio::join!(oa.gather(WINDOW), ob.gather(WINDOW));
    let (verdict, evidence) = verdict(id, (&oa, &a.token), (&ob, &b.token));
    p.add("I1", true, what, verdict, evidence);
}

/// The finding for A's and B's answers (each with its own token).
fn verdict(id: u64, (a, ta): (&Open, &str), (b, tb): (&Open, &str)) -> (Verdict, String) {
    let evidence = format!(
        "id {id}: A (token {ta}) {}; B (token {tb}, {} ms later) {}",
        a.summary(),
        GAP.as_millis(),
        b.summary()
    );
    let crossed = |o: &Open, other: &str| {
        o.messages()
            .iter()
            .any(|m| m.to_string().contains(&format!("\"{other}\"")))
    };
    if crossed(b, ta) {
        return (
            Verdict::Violates,
            format!("B's exchange carried A's: {evidence}"),
        );
    }
    if crossed(a, tb) {
        return (
            Verdict::Violates,
            format!("A's exchange carried B's: {evidence}"),
        );
    }
    let answered = |o: &Open| o.messages().iter().any(|m| is_response_to(m, id));
    let refused = |o: &Open| o.status >= 400;
    match (answered(a) || refused(a), answered(b) || refused(b)) {
        (true, true) => (Verdict::Holds, evidence),
        (false, false) => (
            Verdict::CouldNotTest,
            format!("neither answered: {evidence}"),
        ),
        (false, true) => (Verdict::Violates, format!("A's answer lost: {evidence}")),
        (true, false) => (Verdict::Violates, format!("B's answer lost: {evidence}")),
    }
}

#[cfg(test)]
mod tests {
    use super::{verdict, Open, Verdict};
    use serde_json::{json, Value};

    fn progress(token: &str) -> Value {
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": 1}})
    }

    fn answer(text: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": text}]}})
    }

    fn judge(a: &Open, b: &Open) -> (Verdict, String) {
        verdict(7, (a, "i1-a-7"), (b, "i1-b-7"))
    }

    #[tokio::test]
    async fn each_caller_with_its_own_answer_holds() {
        let a = Open::canned(200, &[progress("i1-a-7"), answer("i1-a-7")]);
        let b = Open::canned(200, &[progress("i1-b-7"), answer("i1-b-7")]);
        assert_eq!(judge(&a, &b).0, Verdict::Holds);
    }

    #[tokio::test]
    async fn the_first_callers_answer_on_the_seconds_exchange_violates() {
        let a = Open::canned(200, &[]);
        let b = Open::canned(
            200,
            &[progress("i1-a-7"), progress("i1-b-7"), answer("i1-a-7")],
        );
        let (v, evidence) = judge(&a, &b);
        assert_eq!(v, Verdict::Violates);
        assert!(
            evidence.starts_with("B's exchange carried A's"),
            "{evidence}"
        );
        let (v, evidence) = judge(&b, &a);
        assert_eq!(v, Verdict::Violates, "either way round");
        assert!(
            evidence.starts_with("A's exchange carried B's"),
            "{evidence}"
        );
    }

    #[tokio::test]
    async fn a_refused_second_caller_holds_and_a_lost_answer_violates() {
        let a = Open::canned(200, &[answer("i1-a-7")]);
        let refused = Open::canned(500, &[]);
        assert_eq!(
            judge(&a, &refused).0,
            Verdict::Holds,
            "1.26.0 refuses the reuse"
        );
        let silent = Open::canned(200, &[progress("i1-b-7")]);
        let (v, evidence) = judge(&a, &silent);
        assert_eq!(v, Verdict::Violates);
        assert!(evidence.starts_with("B's answer lost"), "{evidence}");
        let nothing = Open::canned(200, &[]);
        let (v, _) = judge(&nothing, &nothing);
        assert_eq!(v, Verdict::CouldNotTest, "nothing answered: no finding");
    }
}
