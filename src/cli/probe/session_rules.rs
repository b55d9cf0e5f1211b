//! Session and header rules: the session id's alphabet (R21) and what can be
//! measured of R20 from outside (length, alphabet, distinctness: an upper
//! bound on the id's entropy; whether its bits are unpredictable only a test
//! of the server's own generator can tell), missing and
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
                .map_or_else(|| p.t.no_answer(), |(_, _, o)| o.summary()),
            sid
        ),
    );
    if let Some(s) = &sid {
        let mut others = Vec::new();
        for _ in 0..2 {
            if let Some((o, _, _)) = p.initialize().await {
                others.push(o);
            }
        }
        let mut all = vec![s.as_str()];
        all.extend(others.iter().map(String::as_str));
        let shape = IdShape::of(&all);
        p.add(
            "R20",
            false,
            "session ids: >= 128 bits of room, distinct (unpredictability is not measurable here)",
            Verdict::of(others.len() == 2 && shape.holds()),
            shape.to_string(),
        );
        for o in &others {
            p.delete(o).await;
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

/// What the prober can see of session ids: their length, the alphabet they
/// draw from, and so an upper bound on their entropy, and whether they
/// differ. Not whether the generator can be predicted.
struct IdShape {
    len_min: usize,
    alphabet: &'static str,
    bits_max: f64,
    distinct: bool,
    count: usize,
}

impl IdShape {
    fn of(ids: &[&str]) -> IdShape {
        let chars = |f: fn(u8) -> bool| ids.iter().all(|id| id.bytes().all(f));
        let (alphabet, symbols, ignore_dashes) = if chars(|b| b.is_ascii_hexdigit()) {
            ("hex", 16.0, false)
        } else if chars(|b| b.is_ascii_hexdigit() || b == b'-') {
            ("hex with dashes", 16.0, true)
        } else if chars(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
            ("base64url", 64.0, false)
        } else {
            ("visible ASCII", 94.0, false)
        };
        let counted = |id: &&str| {
            if ignore_dashes {
                id.bytes().filter(|&b| b != b'-').count()
            } else {
                id.len()
            }
        };
        let counted_min = ids.iter().map(counted).min().unwrap_or(0);
        let mut sorted = ids.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        IdShape {
            len_min: ids.iter().map(|id| id.len()).min().unwrap_or(0),
            alphabet,
            bits_max: counted_min as f64 * f64::log2(symbols),
            distinct: sorted.len() == ids.len(),
            count: ids.len(),
        }
    }

    fn holds(&self) -> bool {
        self.len_min >= 16 && self.bits_max >= 128.0 && self.distinct
    }
}

impl std::fmt::Display for IdShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ids, {} chars at least, {}: at most {:.0} bits each; {}; \
             whether they can be predicted is not measurable from outside",
            self.count,
            self.len_min,
            self.alphabet,
            self.bits_max,
            if self.distinct {
                "distinct"
            } else {
                "REPEATED"
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::IdShape;

    #[test]
    fn shapes_of_real_ids() {
        let hex = IdShape::of(&[
            "0123456789abcdef0123456789abcdef",
            "f123456789abcdef0123456789abcdef",
        ]);
        assert_eq!(
            (hex.alphabet, hex.bits_max as u32, hex.holds()),
            ("hex", 128, true)
        );
        let uuid = IdShape::of(&[
            "123e4567-e89b-42d3-a456-426614174000",
            "223e4567-e89b-42d3-a456-426614174000",
        ]);
        assert_eq!(
            (uuid.alphabet, uuid.bits_max as u32, uuid.holds()),
            ("hex with dashes", 128, true)
        );
        let short = IdShape::of(&["0123456789abcdef", "1123456789abcdef"]);
        assert!(!short.holds(), "64 bits of room");
        let same = IdShape::of(&["0123456789abcdef0123456789abcdef"; 2]);
        assert!(!same.holds(), "repeated");
    }
}
