//! Session and header rules: the session id's alphabet (R21) and length
//! (R20, a heuristic for "cryptographically secure"), missing and
//! unknown ids (R23, R24, B6: never 401), a bad protocol version (R31), a
//! POST that does not accept SSE (R2), a foreign Origin (R42), and DELETE
//! then reuse (R24).

use super::{Probe, Verdict, QUICK};
use mcp_streamable::headers;
use serde_json::json;

const PING: &str = r#"{"jsonrpc":"2.0","id":900001,"method":"ping"}"#;

fn status(o: &Option<super::Open>) -> String {
    o.as_ref()
        .map_or("no answer".to_owned(), |o| o.status.to_string())
}

fn verdict(o: &Option<super::Open>, ok: impl Fn(u16) -> bool) -> Verdict {
    o.as_ref()
        .map_or(Verdict::CouldNotTest, |o| Verdict::of(ok(o.status)))
}

pub async fn run(p: &mut Probe) {
    let init = p.initialize().await;
    let sid = init.as_ref().map(|(s, _, _)| s.clone());
    p.add(
        "R21",
        true,
        "session id is visible ASCII (0x21-0x7E)",
        match &sid {
            Some(s) => Verdict::of(!s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b))),
            None => Verdict::CouldNotTest,
        },
        format!(
            "initialize -> {}, Mcp-Session-Id {:?}",
            init.as_ref()
                .map_or("no answer".to_owned(), |(_, _, o)| o.summary()),
            sid
        ),
    );
    if let Some(s) = &sid {
        let other = p.initialize().await.map(|(o, _, _)| o);
        p.add(
            "R20",
            false,
            "session ids look unguessable: >= 16 chars, distinct",
            Verdict::of(s.len() >= 16 && other.as_ref().is_some_and(|o| o != s)),
            format!("{} chars; a second session's id {other:?}", s.len()),
        );
        if let Some(o) = other {
            p.delete(&o).await;
        }
    }
    let Some(sid) = sid else {
        p.add(
            "-",
            false,
            "session rules",
            Verdict::NotApplicable,
            "the server issued no session id",
        );
        return;
    };
    let _ = p
        .notification(&sid, "notifications/initialized", json!({}))
        .await;

    let r =
        p.t.send("POST", &Probe::post_headers(None), PING, QUICK)
            .await;
    p.add(
        "R23",
        false,
        "request without a session id gets 400 (B6: never 401)",
        verdict(&r, |s| s == 400),
        status(&r),
    );
    let r =
        p.t.send(
            "POST",
            &Probe::post_headers(Some("0123456789abcdef0123456789abcdef")),
            PING,
            QUICK,
        )
        .await;
    p.add(
        "R24",
        true,
        "unknown session id gets 404 (B6: never 401)",
        verdict(&r, |s| s == 404),
        status(&r),
    );

    let with = |name: &str, value: &str| {
        let mut h = Probe::post_headers(Some(&sid));
        h.retain(|(n, _)| n != name);
        h.push((name.to_owned(), value.to_owned()));
        h
    };
    let r =
        p.t.send(
            "POST",
            &with(headers::MCP_PROTOCOL_VERSION, "1999-01-01"),
            PING,
            QUICK,
        )
        .await;
    p.add(
        "R31",
        true,
        "unsupported MCP-Protocol-Version gets 400",
        verdict(&r, |s| s == 400),
        status(&r),
    );
    let r =
        p.t.send(
            "POST",
            &with(headers::ACCEPT, headers::MIME_JSON),
            PING,
            QUICK,
        )
        .await;
    p.add(
        "R2",
        true,
        "POST whose Accept lacks text/event-stream is refused (4xx)",
        verdict(&r, |s| (400..500).contains(&s)),
        status(&r),
    );
    let r =
        p.t.send(
            "POST",
            &with(headers::ORIGIN, "http://evil.example.com"),
            PING,
            QUICK,
        )
        .await;
    p.add(
        "R42",
        true,
        "invalid Origin gets 403",
        verdict(&r, |s| s == 403),
        status(&r),
    );

    let h = vec![(headers::MCP_SESSION_ID.to_owned(), sid.clone())];
    let r = p.t.send("DELETE", &h, "", QUICK).await;
    let deleted = r.as_ref().is_some_and(|r| (200..300).contains(&r.status));
    let after =
        p.t.send("POST", &Probe::post_headers(Some(&sid)), PING, QUICK)
            .await;
    if deleted {
        p.add(
            "R24",
            true,
            "a deleted session's id gets 404",
            verdict(&after, |s| s == 404),
            format!("DELETE {}, then {}", status(&r), status(&after)),
        );
    } else {
        p.add(
            "R26",
            false,
            "a deleted session's id gets 404",
            Verdict::NotApplicable,
            format!("DELETE answered {}", status(&r)),
        );
    }
}
