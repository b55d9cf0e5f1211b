//! B8 over the wire: a request the server makes while serving a client
//! request (an elicitation for a `tools/call`) arrives on that call's own
//! stream, not on the standalone GET. A client that reads its GET only once
//! its POST is answered (mcp-go #932: Codex Desktop) would otherwise wait for
//! the call while the call waits for it.
//!
//! Needs a tool that asks the client something: `--ask-tool`, or
//! `test_elicitation` if the server lists it (the conformance suite's). The
//! prober declares the elicitation capability, keeps a standalone GET open,
//! calls the tool, sees where the server's request arrives, and declines it
//! so that the call ends.

use super::wire::Open;
use super::{Probe, Verdict, QUICK};
use serde_json::{json, Value};
use std::time::Duration;

const B8_WHAT: &str =
    "a request the server makes for a call arrives on the call's stream, not the GET";
/// How long the prober waits for the server's request.
const ASK_WAIT: Duration = Duration::from_secs(3);

/// The first request (a message with an id and a method) on `o`.
fn server_request(o: &Open) -> Option<Value> {
    o.messages()
        .into_iter()
        .find(|m| m.get("method").is_some() && m.get("id").is_some())
}

pub async fn run(p: &mut Probe) {
    let Some((sid, _, _)) = p.initialize_with(json!({"elicitation": {}})).await else {
        p.add("B8", false, B8_WHAT, Verdict::CouldNotTest, p.t.no_answer());
        return;
    };
    let _ = p
        .notification(&sid, "notifications/initialized", json!({}))
        .await;
    let tools = p.tools(&sid).await;
    let tool = match &p.ask_tool {
        Some(t) => t.clone(),
        None if tools.iter().any(|t| t == "test_elicitation") => "test_elicitation".into(),
        None => {
            p.add(
                "B8",
                false,
                B8_WHAT,
                Verdict::CouldNotTest,
                "needs --ask-tool (or a listed test_elicitation)",
            );
            p.delete(&sid).await;
            return;
        }
    };
    let Some(mut get) = p.get(&sid, None).await else {
        p.add("B8", false, B8_WHAT, Verdict::CouldNotTest, p.t.no_answer());
        p.delete(&sid).await;
        return;
    };
    if get.status != 200 {
        p.add(
            "B8",
            false,
            B8_WHAT,
            Verdict::NotApplicable,
            format!("no standalone GET: {}", get.summary()),
        );
        p.delete(&sid).await;
        return;
    }
    let id = p.id();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": {}}})
    .to_string();
    let Some(mut call) =
        p.t.open("POST", &Probe::post_headers(Some(&sid)), &body)
            .await
    else {
        p.add("B8", false, B8_WHAT, Verdict::CouldNotTest, p.t.no_answer());
        p.delete(&sid).await;
        return;
    };
    // Both streams read in turns until the server's request shows on one.
    let deadline = tokio::time::Instant::now() + ASK_WAIT;
    let mut found = None;
    while found.is_none() && tokio::time::Instant::now() < deadline {
        call.gather(Duration::from_millis(20)).await;
        get.gather(Duration::from_millis(20)).await;
        found = server_request(&call)
            .map(|r| (r, "the call's stream"))
            .or_else(|| server_request(&get).map(|r| (r, "the standalone GET")));
        if call.ended && found.is_none() {
            break;
        }
    }
    let evidence = |where_: &str| {
        format!(
            "{tool}: the request on {where_}; call {}; GET {}",
            call.summary(),
            get.summary()
        )
    };
    match &found {
        Some((request, on)) => {
            let verdict = Verdict::of(*on == "the call's stream");
            let evidence = evidence(on);
            // Declined, so that the call can end.
            let answer = json!({"jsonrpc": "2.0", "id": request["id"],
                "result": {"action": "decline"}});
            let _ =
                p.t.send(
                    "POST",
                    &Probe::post_headers(Some(&sid)),
                    &answer.to_string(),
                    QUICK,
                )
                .await;
            p.add("B8", false, B8_WHAT, verdict, evidence);
        }
        None => p.add(
            "B8",
            false,
            B8_WHAT,
            Verdict::CouldNotTest,
            evidence("neither: none came"),
        ),
    }
    call.gather(QUICK).await;
    p.delete(&sid).await;
}
