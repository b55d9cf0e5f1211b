//! Race C (response on the background GET, csharp-sdk #1381) and polling:
//!
//! - R13 (MUST): a GET gets an SSE stream or 405;
//! - C1 (R15, MUST): no response ever appears on a standalone GET opened
//!   without `Last-Event-ID`, not even while a tool's POST stream is closed
//!   for polling (the window race C needs: a late background GET);
//! - R36 (SHOULD): a POST SSE stream starts with a priming event;
//! - R38 (SHOULD): a stream closed before its response announces `retry`;
//! - R37 (SHOULD): after such a close, a GET with `Last-Event-ID` gets the
//!   response;
//! - B9: such a close comes after an event id reached the client (its
//!   priming event, or a message with an id): without one the client has
//!   nothing to resume from, and its call waits for ever.
//!
//! The polling rules need a tool that closes its stream: `--poll-tool`, or
//! `test_reconnection` if listed (the conformance suite's).

use super::wire::{describe, is_response, is_response_to, Open};
use super::{Probe, Verdict, QUICK};
use serde_json::json;
use std::time::Duration;

/// How long the late GET of race C listens.
const LATE_GET_WINDOW: Duration = Duration::from_millis(450);
/// The longest `retry` the prober waits before resuming.
const RETRY_WAIT_MAX: Duration = Duration::from_secs(2);

fn responses(o: &Open) -> Vec<String> {
    o.messages()
        .iter()
        .filter(|m| is_response(m))
        .map(describe)
        .collect()
}

const C1_WHAT: &str = "no response on a standalone GET (R15)";
const R13_WHAT: &str = "a GET gets an SSE stream or 405";
const R36_WHAT: &str = "a POST SSE stream starts with a priming event";
const R37_WHAT: &str = "after a polling close, GET + Last-Event-ID gets the response";
const R38_WHAT: &str = "a stream closed before its response announces retry";
const B9_WHAT: &str = "a stream closed before its response gave an event id first";

/// What the polling call showed about race C.
#[derive(Default)]
struct LateGets {
    /// The call's response appeared on a late plain GET.
    stolen: bool,
    evidence: String,
}

pub async fn run(p: &mut Probe) {
    let Some(sid) = p.ready_session().await else {
        p.add("C1", true, C1_WHAT, Verdict::CouldNotTest, "no session");
        return;
    };
    let tools = p.tools(&sid).await;
    let mut plain = p.get(&sid, None).await;
    match &plain {
        None => p.add(
            "R13",
            true,
            R13_WHAT,
            Verdict::CouldNotTest,
            p.t.no_answer(),
        ),
        Some(g) => {
            let ok = g.status == 405 || (g.status == 200 && g.is_sse());
            p.add("R13", true, R13_WHAT, Verdict::of(ok), g.summary());
        }
    }
    if plain.as_ref().is_some_and(|g| g.status != 200) {
        plain = None;
    }
    // Traffic while the plain GET is open: none of these answers belongs on it.
    for _ in 0..3 {
        let _ = p.request(Some(&sid), "ping", json!({}), QUICK).await;
    }
    let _ = p.request(Some(&sid), "tools/list", json!({}), QUICK).await;
    let notify_answer = p.trigger(&sid).await;

    if p.poll_tool.is_none() && tools.iter().any(|t| t == "test_reconnection") {
        p.poll_tool = Some("test_reconnection".to_owned());
    }
    let (late, first_sse) = match p.poll_tool.clone() {
        Some(tool) => match polling(p, &sid, &tool).await {
            Some((late, answer)) => (late, Some(answer)),
            None => return,
        },
        None => {
            let why = "no tool closes its stream (--poll-tool)";
            p.add("R38", false, R38_WHAT, Verdict::CouldNotTest, why);
            p.add("B9", false, B9_WHAT, Verdict::CouldNotTest, why);
            p.add("R37", false, R37_WHAT, Verdict::CouldNotTest, why);
            (LateGets::default(), notify_answer)
        }
    };
    match first_sse.filter(Open::is_sse) {
        Some(o) => {
            let primed = o
                .events
                .first()
                .is_some_and(|e| e.id.is_some() && e.message.is_none());
            p.add("R36", false, R36_WHAT, Verdict::of(primed), o.summary());
        }
        None => p.add(
            "R36",
            false,
            R36_WHAT,
            Verdict::NotApplicable,
            "no POST was answered with SSE",
        ),
    }
    match plain.as_mut() {
        Some(g) => {
            g.gather(Duration::from_millis(100)).await;
            let stolen = late.stolen || !responses(g).is_empty();
            let mut evidence = format!("plain GET open during 5 requests: {}", g.summary());
            if !late.evidence.is_empty() {
                evidence = format!("{evidence}; {}", late.evidence);
            }
            p.add("C1", true, C1_WHAT, Verdict::of(!stolen), evidence);
        }
        None => p.add(
            "C1",
            true,
            C1_WHAT,
            Verdict::NotApplicable,
            "the server offers no standalone GET",
        ),
    }
    p.delete(&sid).await;
}

/// Calls `tool`, which should close its POST stream and answer later: R38,
/// race C's late plain GETs, then R37's resumption. `None` if the call got
/// no answer at all.
async fn polling(p: &mut Probe, sid: &str, tool: &str) -> Option<(LateGets, Open)> {
    let call = json!({"name": tool, "arguments": {}});
    let Some((id, o)) = p
        .request(Some(sid), "tools/call", call, Duration::from_secs(3))
        .await
    else {
        let why = p.t.no_answer();
        p.add("B9", false, B9_WHAT, Verdict::CouldNotTest, why.clone());
        p.add("R37", false, R37_WHAT, Verdict::CouldNotTest, why);
        return None;
    };
    if !o.ended || o.messages().iter().any(|m| is_response_to(m, id)) {
        let why = format!(
            "{tool}: {}: the stream was not closed before its response",
            o.summary()
        );
        p.add("R38", false, R38_WHAT, Verdict::NotApplicable, why.clone());
        p.add("B9", false, B9_WHAT, Verdict::NotApplicable, why.clone());
        p.add("R37", false, R37_WHAT, Verdict::NotApplicable, why);
        return Some((LateGets::default(), o));
    }
    let retry = format!("{tool}: {}, retry {:?}", o.summary(), o.retries);
    p.add(
        "R38",
        false,
        R38_WHAT,
        Verdict::of(!o.retries.is_empty()),
        retry,
    );
    let cursor = format!("{tool}: {}, last event id {:?}", o.summary(), o.last_id());
    p.add(
        "B9",
        false,
        B9_WHAT,
        Verdict::of(o.last_id().is_some()),
        cursor,
    );

    // The late background GET of race C: plain, while the answer is pending;
    // twice, so one arrives after the answer is ready.
    let mut late = LateGets::default();
    let mut seen = Vec::new();
    for n in 1..=2 {
        if let Some(mut g) = p.get(sid, None).await {
            g.until(LATE_GET_WINDOW, |g| g.messages().iter().any(is_response))
                .await;
            late.stolen |= g.messages().iter().any(|m| is_response_to(m, id));
            seen.push(format!("late plain GET#{n} during {tool}: {}", g.summary()));
        }
    }
    late.evidence = seen.join("; ");

    let wait = Duration::from_millis(o.retries.last().copied().unwrap_or(0)).min(RETRY_WAIT_MAX);
    tokio::time::sleep(wait).await;
    let last = o.last_id();
    let resumed = match &last {
        Some(l) => p.get(sid, Some(l)).await,
        None => None,
    };
    match resumed {
        Some(mut r) => {
            r.until(Duration::from_secs(3), |g| {
                g.messages().iter().any(|m| is_response_to(m, id))
            })
            .await;
            let got = r.messages().iter().any(|m| is_response_to(m, id));
            let mut evidence = format!("GET Last-Event-ID {:?}: {}", last, r.summary());
            if late.stolen {
                evidence.push_str(" (the response went to the late plain GET: race C)");
            }
            p.add("R37", false, R37_WHAT, Verdict::of(got), evidence);
        }
        None => p.add(
            "R37",
            false,
            R37_WHAT,
            Verdict::Violates,
            format!("{tool}: no event id to resume from ({})", o.summary()),
        ),
    }
    Some((late, o))
}
