//! I2 over the wire: a session serves only the principal that opened it.
//!
//! The probe opens a session with its own credential (`--bearer`), then
//! names that session with a second principal's (`--intruder-bearer`): a
//! `tools/list`, a standalone GET and a DELETE. Each must be refused (the
//! session does not exist for that principal: 404, or 401/403), and the
//! owner must still be served afterwards. A server that routes by session
//! id alone serves the intruder in the owner's session (python-sdk
//! CVE-2026-52869, `mcp` 1.27.1 and earlier; the preset `PYTHON_1_27_1`).

use super::wire::has_result;
use super::{Probe, Verdict, QUICK};
use mcp_streamable::headers;
use serde_json::json;
use std::time::Duration;

const I2_WHAT: &str = "a request, GET or DELETE naming another principal's session is refused";

pub async fn run(p: &mut Probe) {
    let Some(intruder) = p.intruder.clone() else {
        let why = "needs two principals' credentials (--bearer, --intruder-bearer)";
        p.add("I2", true, I2_WHAT, Verdict::CouldNotTest, why);
        return;
    };
    let Some(sid) = p.ready_session().await else {
        let why = format!("no session: {}", p.t.no_answer());
        p.add("I2", true, I2_WHAT, Verdict::CouldNotTest, why);
        return;
    };
    let as_intruder = |mut h: Vec<(String, String)>| {
        h.push((headers::AUTHORIZATION.to_owned(), intruder.clone()));
        h
    };
    let mut served = Vec::new();
    let mut seen = Vec::new();

    let id = p.id();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}});
    let h = as_intruder(Probe::post_headers(Some(&sid)));
    match p.t.send("POST", &h, &body.to_string(), QUICK).await {
        Some(o) => {
            if has_result(&o, id) {
                served.push("its tools/list was answered");
            }
            seen.push(format!("tools/list {}", o.summary()));
        }
        None => seen.push(format!("tools/list: {}", p.t.no_answer())),
    }

    let h = as_intruder(Probe::get_headers(&sid, None));
    match p.t.open("GET", &h, "").await {
        Some(mut g) => {
            g.gather(Duration::from_millis(150)).await;
            if g.status == 200 && g.is_sse() {
                served.push("its GET was given the session's stream");
            }
            seen.push(format!("GET {}", g.summary()));
        }
        None => seen.push(format!("GET: {}", p.t.no_answer())),
    }

    let h = as_intruder(vec![(headers::MCP_SESSION_ID.to_owned(), sid.clone())]);
    let deleted = match p.t.send("DELETE", &h, "", QUICK).await {
        Some(o) => {
            seen.push(format!("DELETE {}", o.status));
            (200..300).contains(&o.status)
        }
        None => false,
    };
    // Whether the owner still has its session after the intruder's DELETE.
    let owner = p
        .request(Some(&sid), "tools/list", json!({}), QUICK)
        .await
        .map(|(id, o)| (has_result(&o, id), o.summary()));
    match &owner {
        Some((true, _)) => seen.push("the owner is still served".to_owned()),
        Some((false, s)) => {
            seen.push(format!("the owner's tools/list {s}"));
            if deleted {
                served.push("its DELETE ended the owner's session");
            }
        }
        None => seen.push(format!("the owner's tools/list: {}", p.t.no_answer())),
    }
    let evidence = if served.is_empty() {
        format!("as another principal: {}", seen.join("; "))
    } else {
        format!(
            "another principal was served: {}. Seen: {}",
            served.join(", "),
            seen.join("; ")
        )
    };
    p.add(
        "I2",
        true,
        I2_WHAT,
        Verdict::of(served.is_empty()),
        evidence,
    );
    p.delete(&sid).await;
}
