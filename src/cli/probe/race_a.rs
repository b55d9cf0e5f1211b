//! Race A (stale notifications, mcp-go 0.44 / toolhive #4075): right after
//! `initialize`, and right after the notify tool fired with nothing
//! listening, does every POST get exactly its own answer?
//!
//! - A1 (R4, MUST): a notification POST gets 202 with an empty body;
//! - A2 (R6, MUST): a JSON answer is exactly the response to that request;
//! - A3 (R7, SHOULD): an SSE answer holds exactly one response, that
//!   request's, last, and no `…/list_changed` (never related to a request).
//!
//! The leak depends on scheduling, so the round (a fresh session each time)
//! is repeated up to [`ROUNDS`] times, each with its own pause between the
//! requests (a server's registration work may land a moment after its
//! answer), and the first violation is reported.

use super::wire::{describe, is_list_changed, is_response, is_response_to, Open};
use super::{Probe, Verdict, QUICK, SETTLE};
use mcp_streamable::headers;
use serde_json::json;
use std::time::Duration;

/// Rounds per run; each is a handful of requests.
const ROUNDS: usize = 6;

/// Pause before each request after `initialize`, per round (ms).
const GAPS_MS: [u64; ROUNDS] = [0, 5, 20, 0, 2, 50];

#[derive(Default)]
struct Tally {
    checked: usize,
    violation: Option<String>,
}

impl Tally {
    fn judge(&mut self, broken: Option<String>) {
        self.checked += 1;
        if self.violation.is_none() {
            self.violation = broken;
        }
    }

    fn report(self, p: &mut Probe, rule: &'static str, must: bool, what: &'static str) {
        let (verdict, evidence) = match self.violation {
            Some(v) => (Verdict::Violates, v),
            None if self.checked == 0 => (Verdict::CouldNotTest, p.t.no_answer()),
            None => (Verdict::Holds, format!("{} answers checked", self.checked)),
        };
        p.add(rule, must, what, verdict, evidence);
    }
}

/// A1: `Some(evidence)` if the notification POST got anything but an empty 202.
fn accepted(label: &str, o: &Open) -> Option<String> {
    (o.status != 202 || !o.body.is_empty()).then(|| format!("{label}: {}", o.summary()))
}

/// A2 / A3 for the answer to request `id`.
fn answer(label: &str, id: u64, o: &Open) -> (Option<String>, Option<String>) {
    let msgs = o.messages();
    let kinds: Vec<String> = msgs.iter().map(describe).collect();
    let evidence = || format!("{label}: {} {:?}", o.status, kinds);
    if o.is_sse() {
        let responses: Vec<_> = msgs.iter().filter(|m| is_response(m)).collect();
        let own_last = msgs.last().is_some_and(|m| is_response_to(m, id));
        let ok = !o.ended || (responses.len() == 1 && own_last);
        let stray =
            msgs.iter().any(is_list_changed) || responses.iter().any(|m| !is_response_to(m, id));
        (None, (!ok || stray).then(evidence))
    } else if o.content_type == headers::MIME_JSON {
        let ok = msgs.len() == 1 && is_response_to(&msgs[0], id);
        ((!ok).then(evidence), None)
    } else {
        (None, None)
    }
}

pub async fn run(p: &mut Probe) {
    let (mut a1, mut a2, mut a3) = (Tally::default(), Tally::default(), Tally::default());
    for (round, gap_ms) in GAPS_MS.into_iter().enumerate() {
        let Some((sid, id, init)) = p.initialize().await else {
            break;
        };
        let (v2, v3) = answer("initialize", id, &init);
        a2.judge(v2);
        a3.judge(v3);
        let gap = Duration::from_millis(gap_ms);
        tokio::time::sleep(gap).await;
        if let Some(o) = p
            .notification(&sid, "notifications/initialized", json!({}))
            .await
        {
            a1.judge(accepted("initialized", &o));
        }
        tokio::time::sleep(gap).await;
        if let Some((id, o)) = p.request(Some(&sid), "ping", json!({}), QUICK).await {
            let (v2, v3) = answer("ping after initialized", id, &o);
            a2.judge(v2);
            a3.judge(v3);
        }
        if p.notify.is_some() {
            // The tool's notification is sent while no POST is listening and no
            // GET is open: it must wait for a GET (or be dropped), never ride on
            // the next POST.
            if let Some(o) = p.trigger(&sid).await {
                a3.judge(
                    o.messages()
                        .iter()
                        .any(is_list_changed)
                        .then(|| format!("notify tool's own answer: {}", o.summary())),
                );
            }
            tokio::time::sleep(SETTLE).await;
            let cancel = json!({"requestId": 987654, "reason": "probe"});
            if let Some(o) = p
                .notification(&sid, "notifications/cancelled", cancel)
                .await
            {
                a1.judge(accepted("cancelled after notify", &o));
            }
            if let Some((id, o)) = p.request(Some(&sid), "ping", json!({}), QUICK).await {
                let (v2, v3) = answer("ping after notify", id, &o);
                a2.judge(v2);
                a3.judge(v3);
            }
        }
        p.delete(&sid).await;
        let found = [&a1, &a2, &a3].iter().any(|t| t.violation.is_some());
        if found && round >= 1 {
            break;
        }
    }
    a1.report(
        p,
        "A1",
        true,
        "a notification POST gets 202, empty body (R4)",
    );
    a2.report(
        p,
        "A2",
        true,
        "a JSON answer is exactly its own response (R6)",
    );
    a3.report(
        p,
        "A3",
        false,
        "an SSE answer: its response last, nothing unrelated (R7)",
    );
}
