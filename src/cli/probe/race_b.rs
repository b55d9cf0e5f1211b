//! Race B (competing GET streams, rmcp #660) and resumption:
//!
//! - B1: a second and third standalone GET, or a GET resuming a live
//!   stream, never end a live stream;
//! - R18 (MUST): each notification goes to exactly one open stream: never
//!   two copies, and a new plain GET does not re-send what was delivered;
//! - B4: a notification sent while a GET is open reaches an open GET, also
//!   after the stream that got the last one was closed (rmcp 3.9's shadow
//!   streams are never promoted);
//! - B2: replay is strictly after `Last-Event-ID` (rmcp replays the named
//!   event again);
//! - B3 (R35, MUST): resuming a POST stream replays nothing of another
//!   stream; R34: resuming a finished POST stream is not a server error;
//!   A5: a resumption of it the server accepts, from an id before its
//!   response, delivers that response (a client that lost the connection
//!   before reading it has no other way to get it: rmcp forgets a finished
//!   stream, PR #799's review);
//! - B5: a resumption with nothing left to replay tells the reader so
//!   (`204`, a 4xx) or holds the stream open; an SSE stream that ends with no
//!   message, again and again, keeps an EventSource-style reader reconnecting
//!   with the same `Last-Event-ID` for ever (rmcp #958).
//!
//! The delivery rules need `--notify-tool`.

use super::wire::{is_list_changed, is_response_to, Open};
use super::{Probe, Verdict, NOTIFY_WAIT, QUICK, SETTLE};
use serde_json::json;
use std::time::Duration;

/// Open GET streams under their labels.
#[derive(Default)]
struct Streams(Vec<(String, Open)>);

impl Streams {
    fn notifications(o: &Open) -> usize {
        o.messages().iter().filter(|m| is_list_changed(m)).count()
    }

    /// Notifications received so far on every stream.
    fn total(&mut self) -> usize {
        self.0
            .iter_mut()
            .map(|(_, o)| {
                o.poll();
                Self::notifications(o)
            })
            .sum()
    }

    /// Waits until more than `before` notifications arrived (or `window`), then a little more for copies.
    async fn wait_beyond(&mut self, before: usize, window: Duration) -> usize {
        let deadline = tokio::time::Instant::now() + window;
        while self.total() <= before && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        self.total() - before
    }

    fn summary(&mut self) -> String {
        self.0
            .iter_mut()
            .map(|(l, o)| {
                o.poll();
                format!("{l} {}", o.summary())
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

const B1_WHAT: &str = "a new standalone GET does not end a live one";
const R18_WHAT: &str = "a notification goes to exactly one stream, once";
const B4_WHAT: &str = "with a GET open, a notification reaches an open GET";
const B2_WHAT: &str = "replay is strictly after Last-Event-ID";
const B3_WHAT: &str = "resuming a POST stream replays only that stream (R35)";
const B5_WHAT: &str = "a resumption with nothing to replay does not end empty again and again";
/// How many times B5's reader resumes, as an EventSource reader would.
const B5_RESUMES: usize = 3;
const A5_WHAT: &str = "a resumption the server accepts delivers what followed the cursor";
const A5_POST_WHAT: &str =
    "a resumption of a finished POST stream the server accepts delivers its response";
const B4_RESUMED_WHAT: &str = "a resumed GET carries the notifications sent after it";
const B4_AT_OPEN_WHAT: &str = "a notification sent as a GET opens reaches that GET";

pub async fn run(p: &mut Probe) {
    let Some(sid) = p.ready_session().await else {
        p.add("B1", false, B1_WHAT, Verdict::CouldNotTest, "no session");
        return;
    };
    let mut s = Streams::default();
    let mut statuses = Vec::new();
    for n in 1..=3 {
        let label = format!("GET#{n}");
        let Some(mut g) = p.get(&sid, None).await else {
            statuses.push(format!("{label} no answer"));
            continue;
        };
        g.gather(Duration::from_millis(150)).await;
        statuses.push(format!("{label} {}", g.status));
        if g.status == 200 {
            s.0.push((label, g));
        }
    }
    if s.0.is_empty() {
        p.add(
            "B1",
            false,
            B1_WHAT,
            Verdict::NotApplicable,
            format!("no standalone GET: {}", statuses.join(", ")),
        );
        p.delete(&sid).await;
        return;
    }
    let ended: Vec<String> =
        s.0.iter()
            .filter(|(_, o)| o.ended)
            .map(|(l, _)| l.clone())
            .collect();
    let evidence = format!("{} ({})", s.summary(), statuses.join(", "));
    if s.0.len() == 1 && ended.is_empty() {
        p.add(
            "B1",
            false,
            B1_WHAT,
            Verdict::Holds,
            format!("one GET per session, others refused: {evidence}"),
        );
    } else {
        p.add(
            "B1",
            false,
            B1_WHAT,
            Verdict::of(ended.is_empty()),
            evidence,
        );
    }
    s.0.retain(|(_, o)| !o.ended);

    if p.notify.is_none() {
        for (rule, must, what) in [
            ("R18", true, R18_WHAT),
            ("B4", false, B4_WHAT),
            ("B2", false, B2_WHAT),
        ] {
            p.add(
                rule,
                must,
                what,
                Verdict::CouldNotTest,
                "needs --notify-tool",
            );
        }
    } else {
        delivery(p, &sid, s).await;
    }
    cross_stream(p, &sid).await;
    p.delete(&sid).await;
    if p.notify.is_some() {
        at_open(p).await;
    }
}

/// B4 for a GET that opens as a notification is made: the notification
/// is aimed just after the GET's request ([`Probe::aimed`]), on a fresh
/// session with no other GET, so a server that writes the GET's `200`
/// before it wires the stream to the session (csharp-sdk before PR
/// #1212, rust-mcp-sdk before PR #197) drops it while the client reads
/// the stream. What the session held from before (a notice sent as it
/// registered) is read off on a first GET, closed, so that only the aimed
/// notification can reach the second.
async fn at_open(p: &mut Probe) {
    let Some(sid) = p.ready_session().await else {
        let why = p.t.no_answer();
        p.add("B4", false, B4_AT_OPEN_WHAT, Verdict::CouldNotTest, why);
        return;
    };
    if let Some(mut backlog) = p.get(&sid, None).await {
        backlog.gather(SETTLE).await;
        drop(backlog);
        tokio::time::sleep(SETTLE).await;
    }
    let (get, call) = p.aimed(p.get(&sid, None), p.trigger(&sid)).await;
    let (verdict, evidence) = match get {
        Some(mut g) if g.status == 200 => {
            let on_call = call
                .as_ref()
                .is_some_and(|c| c.messages().iter().any(is_list_changed));
            let arrived = g
                .until(NOTIFY_WAIT, |o| Streams::notifications(o) > 0)
                .await;
            let verdict = if on_call {
                // It rode on the tool's own answer (race A's A3): the GET
                // was not what the server chose.
                Verdict::CouldNotTest
            } else {
                Verdict::of(arrived)
            };
            let evidence = format!(
                "a notification made {} ms after the GET: GET {}",
                super::AIM.as_millis(),
                g.summary()
            );
            (verdict, evidence)
        }
        Some(g) => (
            Verdict::NotApplicable,
            format!("no standalone GET: {}", g.summary()),
        ),
        None => (Verdict::CouldNotTest, p.t.no_answer()),
    };
    p.add("B4", false, B4_AT_OPEN_WHAT, verdict, evidence);
    p.delete(&sid).await;
}

/// R18, B4 (with a dead primary), duplicate re-send on a new GET, B2, B1 on resume.
async fn delivery(p: &mut Probe, sid: &str, mut s: Streams) {
    // One notification, every GET open.
    let before = s.total();
    let _ = p.trigger(sid).await;
    let first = s.wait_beyond(before, NOTIFY_WAIT).await;
    let first_evidence = s.summary();
    // The stream that got it is the "primary"; close it.
    let primary = s.0.iter().position(|(_, o)| Streams::notifications(o) > 0);
    let closed = primary.map(|i| s.0.remove(i).0);
    tokio::time::sleep(SETTLE).await;
    let mut reopened = false;
    if s.0.is_empty() {
        if let Some(mut g) = p.get(sid, None).await {
            g.gather(Duration::from_millis(150)).await;
            if g.status == 200 {
                s.0.push(("GET#4".into(), g));
                reopened = true;
            }
        }
    }
    let before = s.total();
    let _ = p.trigger(sid).await;
    let second = s.wait_beyond(before, NOTIFY_WAIT).await;
    let second_evidence = s.summary();
    p.add(
        "R18",
        true,
        R18_WHAT,
        Verdict::of(first <= 1 && second <= 1),
        format!("{first} and {second} copies; {first_evidence}"),
    );
    let b4 = if s.0.is_empty() {
        Verdict::CouldNotTest
    } else {
        Verdict::of(first >= 1 && second >= 1)
    };
    p.add(
        "B4",
        false,
        B4_WHAT,
        b4,
        format!(
            "all open: {first} delivered; after closing {} ({}): {second} delivered; {second_evidence}",
            closed.as_deref().unwrap_or("none"),
            if reopened { "then a new GET" } else { "others stay open" },
        ),
    );

    // Close everything; a new plain GET must not get the delivered ones again.
    let undelivered = usize::from(first == 0) + usize::from(second == 0);
    drop(s);
    tokio::time::sleep(SETTLE).await;
    let Some(mut g) = p.get(sid, None).await else {
        return;
    };
    g.gather(Duration::from_millis(500)).await;
    let resent = Streams::notifications(&g);
    if g.status == 200 {
        p.add(
            "R18",
            true,
            "a new plain GET does not re-send delivered notifications",
            Verdict::of(resent <= undelivered),
            format!(
                "{resent} re-sent ({undelivered} undelivered): new GET {}",
                g.summary()
            ),
        );
    }

    // Two more on this GET; then resume from the first of them.
    let mut s = Streams(vec![("GET#5".into(), g)]);
    for _ in 0..2 {
        let before = s.total();
        let _ = p.trigger(sid).await;
        s.wait_beyond(before, NOTIFY_WAIT).await;
    }
    let (_, g) = s.0.pop().expect("pushed above");
    let ids: Vec<Option<String>> = g
        .events
        .iter()
        .filter(|e| e.message.as_ref().is_some_and(is_list_changed))
        .map(|e| e.id.clone())
        .collect();
    let (from, next) = match ids.as_slice() {
        [.., Some(a), Some(b)] => (a.clone(), b.clone()),
        [.., _, _] => {
            p.add(
                "B2",
                false,
                B2_WHAT,
                Verdict::NotApplicable,
                format!("GET events carry no ids: {}", g.summary()),
            );
            return;
        }
        _ => {
            p.add(
                "B2",
                false,
                B2_WHAT,
                Verdict::CouldNotTest,
                format!("two notifications did not arrive: {}", g.summary()),
            );
            return;
        }
    };
    drop(g);
    tokio::time::sleep(SETTLE).await;
    let Some(mut r) = p.get(sid, Some(&from)).await else {
        return;
    };
    r.gather(Duration::from_millis(600)).await;
    let replayed: Vec<Option<String>> = r
        .events
        .iter()
        .filter(|e| e.message.as_ref().is_some_and(is_list_changed))
        .map(|e| e.id.clone())
        .collect();
    let evidence = format!("resume from {from:?} (next was {next:?}): {}", r.summary());
    let verdict = if r.status != 200 {
        Verdict::NotApplicable
    } else if replayed.iter().any(|i| i.as_deref() == Some(from.as_str())) || replayed.len() > 1 {
        Verdict::Violates
    } else if replayed.is_empty() {
        Verdict::NotApplicable
    } else {
        Verdict::Holds
    };
    p.add("B2", false, B2_WHAT, verdict, evidence.clone());
    // The cursor named an event with a later one on the same stream: a
    // server that accepts the resumption (200) owes what followed. One that
    // cannot serve it says so (a 4xx), and the client opens a fresh stream;
    // a 200 with nothing replayed loses the message while the client
    // believes its stream resumed. What is judged is that a notification
    // other than the cursor's own arrives (ids a server renumbers count).
    if r.status == 200 {
        p.add(
            "A5",
            false,
            A5_WHAT,
            Verdict::of(replayed.iter().any(|i| i.as_deref() != Some(from.as_str()))),
            evidence,
        );
    }

    // The resumed GET is the session's standalone stream now: what the
    // server sends next reaches it (a server that registered it under
    // another key leaves it open, kept alive and empty, for good).
    let r = if r.status == 200 && !r.ended {
        let mut s = Streams(vec![("resumed".into(), r)]);
        let before = s.total();
        let _ = p.trigger(sid).await;
        let got = s.wait_beyond(before, NOTIFY_WAIT).await;
        p.add(
            "B4",
            false,
            B4_RESUMED_WHAT,
            Verdict::of(got >= 1),
            format!(
                "a notification after the resumption: {got} on {}",
                s.summary()
            ),
        );
        s.0.pop().expect("pushed above").1
    } else {
        r
    };

    // A second resume of the same stream while the first is live: refused,
    // taken over, or a second connection; never two copies of what follows.
    if r.status == 200 && !r.ended {
        if let Some(mut r2) = p.get(sid, Some(&next)).await {
            r2.gather(Duration::from_millis(200)).await;
            let mut s = Streams(vec![("resumed".into(), r), ("resumed again".into(), r2)]);
            let before = s.total();
            let _ = p.trigger(sid).await;
            let copies = s.wait_beyond(before, NOTIFY_WAIT).await;
            p.add(
                "R18",
                true,
                "two resumes of one stream: what follows goes out once",
                Verdict::of(copies <= 1),
                format!("{copies} copies; {}", s.summary()),
            );
        }
    }
}

/// B3 and R34: resume a finished POST stream of this session.
async fn cross_stream(p: &mut Probe, sid: &str) {
    let call = match p.poll_tool.clone() {
        Some(tool) => Some((tool, json!({}))),
        None => p.notify.clone(),
    };
    let Some((tool, args)) = call else {
        p.add(
            "B3",
            true,
            B3_WHAT,
            Verdict::CouldNotTest,
            "needs --notify-tool or --poll-tool",
        );
        return;
    };
    let Some((call, o)) = p
        .request(
            Some(sid),
            "tools/call",
            json!({"name": tool, "arguments": args}),
            Duration::from_secs(3),
        )
        .await
    else {
        p.add("B3", true, B3_WHAT, Verdict::CouldNotTest, p.t.no_answer());
        return;
    };
    let Some(first) = o.events.iter().find_map(|e| e.id.clone()) else {
        p.add(
            "B3",
            true,
            B3_WHAT,
            Verdict::NotApplicable,
            format!("{tool}: no event ids on the POST stream: {}", o.summary()),
        );
        return;
    };
    // Let a polling tool finish.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let Some(mut r) = p.get(sid, Some(&first)).await else {
        p.add("B3", true, B3_WHAT, Verdict::CouldNotTest, p.t.no_answer());
        return;
    };
    r.gather(QUICK).await;
    let foreign = r.messages().iter().filter(|m| is_list_changed(m)).count();
    let evidence = format!(
        "{tool} stream {}; GET Last-Event-ID {first:?}: {}",
        o.summary(),
        r.summary()
    );
    p.add(
        "B3",
        true,
        B3_WHAT,
        Verdict::of(foreign == 0),
        evidence.clone(),
    );
    p.add(
        "R34",
        false,
        "resuming a finished POST stream is no server error",
        Verdict::of(r.status < 500),
        evidence.clone(),
    );
    // The resumption came from the stream's first id, before its response.
    let verdict = if (200..300).contains(&r.status) && r.is_sse() {
        Verdict::of(r.messages().iter().any(|m| is_response_to(m, call)))
    } else {
        Verdict::NotApplicable
    };
    p.add("A5", false, A5_POST_WHAT, verdict, evidence);
    // The reader goes on from the newest id it read: the resumption's, else the stream's.
    if let Some(last) = r.last_id().or_else(|| o.last_id()) {
        empty_resumptions(p, sid, &tool, last).await;
    }
}

/// B5: resumes a finished POST stream at the newest event id read, where
/// nothing is left to replay, as an EventSource reader does: again from the
/// newest id each time the stream ends. A violation is every resumption answered with
/// an SSE stream that ends without a message: that reader never stops.
async fn empty_resumptions(p: &mut Probe, sid: &str, tool: &str, mut cursor: String) {
    let mut answers = Vec::with_capacity(B5_RESUMES);
    for _ in 0..B5_RESUMES {
        let Some(mut r) = p.get(sid, Some(&cursor)).await else {
            p.add("B5", false, B5_WHAT, Verdict::CouldNotTest, p.t.no_answer());
            return;
        };
        r.until(QUICK, |o| !o.messages().is_empty()).await;
        answers.push(format!("Last-Event-ID {cursor:?}: {}", r.summary()));
        let ended_empty = r.status == 200 && r.is_sse() && r.ended && r.messages().is_empty();
        if !ended_empty {
            p.add(
                "B5",
                false,
                B5_WHAT,
                Verdict::Holds,
                format!("{tool} stream finished; {}", answers.join("; ")),
            );
            return;
        }
        cursor = r.last_id().unwrap_or(cursor);
    }
    p.add(
        "B5",
        false,
        B5_WHAT,
        Verdict::Violates,
        format!(
            "{tool} stream finished; {B5_RESUMES} resumptions, each an SSE stream that ended with no message (an EventSource reader reconnects for ever): {}",
            answers.join("; ")
        ),
    );
}
