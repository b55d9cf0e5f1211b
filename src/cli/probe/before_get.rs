//! B10 (SHOULD): a notification the application sends after the
//! handshake, while the client has no standalone GET open yet, reaches the
//! GET the client opens next. Every client has that window (its GET goes
//! out after `notifications/initialized`); a server that buffers nothing
//! for it loses what it sends there: java-sdk 2.0.x (#1114, wontfix: a
//! `roots/list` sent right after `initialize` fails with -32603 "Stream
//! unavailable"), and by its maintainers' word the C#, TS and Python SDKs.
//!
//! The notify tool is called on a ready session with no GET; once its
//! notification is due, a GET is opened and read for it.

use super::wire::is_list_changed;
use super::{Probe, Verdict, NOTIFY_WAIT, SETTLE};
use std::time::Duration;

const B10_WHAT: &str = "a notification sent before the client's GET opens arrives on that GET";

pub async fn run(p: &mut Probe) {
    if p.notify.is_none() {
        let why = "needs --notify-tool";
        p.add("B10", false, B10_WHAT, Verdict::CouldNotTest, why);
        return;
    }
    let Some(sid) = p.ready_session().await else {
        p.add(
            "B10",
            false,
            B10_WHAT,
            Verdict::CouldNotTest,
            p.t.no_answer(),
        );
        return;
    };
    let due = p.notify_delay() + SETTLE;
    let (verdict, evidence) = judge(p, &sid, due).await;
    p.add("B10", false, B10_WHAT, verdict, evidence);
    p.delete(&sid).await;
}

/// Calls the notify tool on session `sid`, waits `due`, opens a GET and
/// reads it for the notification.
async fn judge(p: &mut Probe, sid: &str, due: Duration) -> (Verdict, String) {
    let Some(call) = p.trigger(sid).await else {
        return (Verdict::CouldNotTest, p.t.no_answer());
    };
    if call.messages().iter().any(is_list_changed) {
        // It rode on the call's own answer (race A's A3): nothing was sent
        // without a stream.
        let why = format!(
            "the notification came on the tool's answer: {}",
            call.summary()
        );
        return (Verdict::CouldNotTest, why);
    }
    tokio::time::sleep(due).await;
    let Some(mut get) = p.get(sid, None).await else {
        return (Verdict::CouldNotTest, p.t.no_answer());
    };
    if get.status == 405 {
        let why = "no standalone GET (405): nothing to hold for".to_owned();
        return (Verdict::NotApplicable, why);
    }
    let arrived = get
        .until(NOTIFY_WAIT, |o| o.messages().iter().any(is_list_changed))
        .await;
    let evidence = format!(
        "notify tool answered, then {} ms later a GET: {}",
        due.as_millis(),
        get.summary()
    );
    (Verdict::of(arrived), evidence)
}
