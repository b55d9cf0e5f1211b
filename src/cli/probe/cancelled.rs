//! A4 over the wire, after a cancellation: a call the client cancels while
//! its POST waits is still answered, and the POST ends. The cancellation
//! travels on a POST of its own, and a client may keep the call's POST
//! open meanwhile. A server that drops the call's answer, as the receiver
//! of a cancellation should, must still end that exchange: with a head
//! (`202` and no body, or its event stream) and then the end. A server that
//! waits for an answer it will never write leaves the POST open for ever.
//! `models/json_call_cancelled_unnoticed.json` found this in our own JSON
//! mode.
//!
//! Needs a tool that takes a while to answer: `--slow-tool` (with
//! `--slow-args`), or `slow_progress` if the server lists it (20 steps of
//! 100 ms). The prober calls the tool and cancels the call on another POST
//! once the call has reached the server. It then reads the call's POST
//! until it ends, for [`ENDED_WITHIN`]: longer than the tool's own answer
//! takes, so a server that ignores the cancellation holds too.

use super::wire::{has_result, NO_HEAD};
use super::{Probe, Verdict};
use serde_json::{json, Value};
use std::time::Duration;

const WHAT: &str = "a call cancelled while its POST waits is answered and the POST ends";
/// When the cancellation is sent, after the call: past the server's
/// taking the call up, well before the tool's answer.
const CANCEL_AFTER: Duration = Duration::from_millis(300);
/// How long the call's POST is read once its head arrived. A tool given
/// with `--slow-tool` should answer within it when not cancelled.
const ENDED_WITHIN: Duration = Duration::from_secs(4);

/// The tool to call, and its arguments.
fn slow_tool(p: &Probe, tools: &[String]) -> Option<(String, Value)> {
    match &p.slow {
        Some(given) => Some(given.clone()),
        None if tools.iter().any(|t| t == "slow_progress") => {
            Some(("slow_progress".into(), json!({"steps": 20, "step_ms": 100})))
        }
        None => None,
    }
}

pub async fn run(p: &mut Probe) {
    let Some(sid) = p.ready_session().await else {
        p.add("A4", false, WHAT, Verdict::CouldNotTest, p.t.no_answer());
        return;
    };
    let tools = p.tools(&sid).await;
    let Some((tool, args)) = slow_tool(p, &tools) else {
        p.add(
            "A4",
            false,
            WHAT,
            Verdict::CouldNotTest,
            "needs --slow-tool (or a listed slow_progress)",
        );
        p.delete(&sid).await;
        return;
    };
    let id = p.id();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": args}})
    .to_string();
    let headers = Probe::post_headers(Some(&sid));
    let cancel = json!({"requestId": id, "reason": "the prober cancels it while its POST waits"});
    // The head of a JSON answer comes only with the answer, or when the
    // server gives the call up: the call's POST and the cancellation go
    // side by side.
    let (call, cancelled) = tokio::join!(p.t.open("POST", &headers, &body), async {
        tokio::time::sleep(CANCEL_AFTER).await;
        p.notification(&sid, "notifications/cancelled", cancel)
            .await
    });
    let (verdict, evidence) = match call {
        _ if cancelled.is_none() => (
            Verdict::CouldNotTest,
            format!("the cancellation got {}", p.t.no_answer()),
        ),
        None if p.t.no_answer().contains(NO_HEAD) => (
            Verdict::Violates,
            format!(
                "the call's POST got {} after its cancellation",
                p.t.no_answer()
            ),
        ),
        None => (Verdict::CouldNotTest, p.t.no_answer()),
        Some(mut call) => {
            call.gather(ENDED_WITHIN).await;
            let answered = if has_result(&call, id) {
                ", the call answered all the same"
            } else {
                ""
            };
            if call.ended {
                (
                    Verdict::Holds,
                    format!("ended after the cancellation: {}{answered}", call.summary()),
                )
            } else {
                (
                    Verdict::Violates,
                    format!(
                        "still open {ENDED_WITHIN:?} after its head, the call cancelled: {}{answered}",
                        call.summary()
                    ),
                )
            }
        }
    };
    p.add("A4", false, WHAT, verdict, evidence);
    p.delete(&sid).await;
}
