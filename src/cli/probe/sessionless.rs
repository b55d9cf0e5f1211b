//! A server that serves requests without a session (a 2025 server in its
//! stateless mode: `initialize` answered, no `Mcp-Session-Id`). The
//! session rules cannot test it; these can:
//!
//! - I1 (`one_id.rs`): two callers under one request id at once each get
//!   only their own answers (TS SDK < 1.26.0, CVE-2026-25536).
//! - J1: a call whose tool reports progress gets its result, never the
//!   progress as its JSON body (rmcp 0.17.0 … 2.2.0's stateless JSON mode,
//!   rust-sdk #980); the 2026-07-28 form is `v2026.rs`'s.
//!
//! A server that mints sessions keeps its callers apart by them: each rule
//! is then not applicable.

use super::wire::{describe, has_result, tool_names, PROGRESS_TOOL};
use super::{one_id, Probe, Verdict, NOTIFY_WAIT, QUICK, VERSION};
use serde_json::json;

const J1_WHAT: &str =
    "a sessionless call whose tool reports progress gets its result (never the progress as its JSON body)";

pub async fn run(p: &mut Probe) {
    let whats = [("I1", one_id::SESSIONLESS_WHAT), ("J1", J1_WHAT)];
    let params = json!({"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "mcp-streamable-probe", "version": env!("CARGO_PKG_VERSION")}});
    let Some((id, o)) = p.request(None, "initialize", params, QUICK).await else {
        for (rule, what) in whats {
            p.add(rule, true, what, Verdict::CouldNotTest, p.t.no_answer());
        }
        return;
    };
    if let Some(s) = &o.session {
        let why = format!("initialize minted session {s}: each caller's ids are its session's");
        for (rule, what) in whats {
            p.add(rule, true, what, Verdict::NotApplicable, why.clone());
        }
        p.delete(s).await;
        return;
    }
    if !has_result(&o, id) {
        let why = format!("initialize was not served: {}", o.summary());
        for (rule, what) in whats {
            p.add(rule, true, what, Verdict::NotApplicable, why.clone());
        }
        return;
    }
    let listed = match p.request(None, "tools/list", json!({}), QUICK).await {
        Some((id, o)) => tool_names(&o, id),
        None => Vec::new(),
    };
    progress(p, &listed).await;
    one_id::sessionless(p, &listed).await;
}

/// J1 without a session: the conformance suite's progress tool, asking for
/// progress; its result must come, after any progress in an SSE answer.
async fn progress(p: &mut Probe, listed: &[String]) {
    if !listed.iter().any(|t| t == PROGRESS_TOOL) {
        let why = format!("no {PROGRESS_TOOL} tool listed");
        p.add("J1", true, J1_WHAT, Verdict::CouldNotTest, why);
        return;
    }
    let params = json!({"name": PROGRESS_TOOL, "arguments": {}, "_meta": {"progressToken": "j1"}});
    let Some((id, o)) = p.request(None, "tools/call", params, NOTIFY_WAIT).await else {
        p.add("J1", true, J1_WHAT, Verdict::CouldNotTest, p.t.no_answer());
        return;
    };
    let answered = has_result(&o, id);
    let got: Vec<String> = o.messages().iter().map(describe).collect();
    let evidence = format!(
        "tools/call {PROGRESS_TOOL}: {} carrying [{}]",
        o.summary(),
        got.join(", ")
    );
    p.add("J1", true, J1_WHAT, Verdict::of(answered), evidence);
}
