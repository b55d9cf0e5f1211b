//! Isolation between sessions over the wire:
//!
//! - I1: a GET that names its own session and resumes from an event id of
//!   another session replays none of that session's events (an event store
//!   looked up by event id alone serves the other session's backlog:
//!   frontmcp GHSA-84j6-jc92-77jm, mcp_dart #137).
//!
//! The victim session's GET must carry an event id and a notification
//! after it: the rule needs `--notify-tool`.

use super::wire::is_list_changed;
use super::{Probe, Verdict, NOTIFY_WAIT};
use std::collections::BTreeSet;
use std::time::Duration;

const I1_WHAT: &str = "a Last-Event-ID of another session replays none of its events";

pub async fn run(p: &mut Probe) {
    if p.notify.is_none() {
        let why = "needs --notify-tool";
        p.add("I1", true, I1_WHAT, Verdict::CouldNotTest, why);
        return;
    }
    let Some(victim) = p.ready_session().await else {
        p.add("I1", true, I1_WHAT, Verdict::CouldNotTest, "no session");
        return;
    };
    cross_session_resume(p, &victim).await;
    p.delete(&victim).await;
}

/// Opens the victim's GET, takes the first event id on it, has the victim's
/// session notified after it, then resumes from that id on a GET naming a
/// second session.
async fn cross_session_resume(p: &mut Probe, victim: &str) {
    let Some(mut g) = p.get(victim, None).await else {
        p.add("I1", true, I1_WHAT, Verdict::CouldNotTest, p.t.no_answer());
        return;
    };
    g.gather(Duration::from_millis(150)).await;
    if g.status != 200 || !g.is_sse() {
        let why = format!("no standalone GET: {}", g.summary());
        p.add("I1", true, I1_WHAT, Verdict::NotApplicable, why);
        return;
    }
    let _ = p.trigger(victim).await;
    g.until(NOTIFY_WAIT, |g| g.messages().iter().any(is_list_changed))
        .await;
    let Some(cursor) = g.events.iter().find_map(|e| e.id.clone()) else {
        let why = format!("the session's GET carries no event id: {}", g.summary());
        p.add("I1", true, I1_WHAT, Verdict::NotApplicable, why);
        return;
    };
    let victims: BTreeSet<String> = g.events.iter().filter_map(|e| e.id.clone()).collect();
    let Some(attacker) = p.ready_session().await else {
        p.add(
            "I1",
            true,
            I1_WHAT,
            Verdict::CouldNotTest,
            "no second session",
        );
        return;
    };
    let answer = p.get(&attacker, Some(&cursor)).await;
    let verdict = match answer {
        None => {
            p.add("I1", true, I1_WHAT, Verdict::CouldNotTest, p.t.no_answer());
            p.delete(&attacker).await;
            return;
        }
        Some(mut r) => {
            r.gather(Duration::from_millis(300)).await;
            let leaked: Vec<&str> = r
                .events
                .iter()
                .filter_map(|e| e.id.as_deref())
                .filter(|id| *id != cursor && victims.contains(*id))
                .collect();
            let evidence = format!(
                "session A's GET {}; GET naming session B, Last-Event-ID {cursor:?} (A's): {}{}",
                g.summary(),
                r.summary(),
                if leaked.is_empty() {
                    String::new()
                } else {
                    format!(": replayed A's {leaked:?}")
                }
            );
            (Verdict::of(leaked.is_empty()), evidence)
        }
    };
    p.add("I1", true, I1_WHAT, verdict.0, verdict.1);
    p.delete(&attacker).await;
}
