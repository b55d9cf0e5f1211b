//! Byte budgets of the server core: held messages, each stream's replay
//! buffer and the whole session stay within their `*_bytes_max` after every
//! step of random runs with large messages, and the monitor stays silent
//! (trimming loses replay depth, never order, never a duplicate).

use crate::common;

use crate::common::{pick, Harness};
use mcp_streamable::jsonrpc::{Message, RawJson};
use mcp_streamable::policy::ServerPolicy;
use mcp_streamable::server::{Cause, EndpointConfig, ServerEvent};
use mcp_streamable::version::ProtocolVersion;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

const EVENTS_BYTES_MAX: usize = 2_000;
const HELD_BYTES_MAX: usize = 1_500;
const SESSION_BYTES_MAX: usize = 5_000;

fn config() -> EndpointConfig {
    let mut c = common::test_config();
    c.session.events_bytes_max = EVENTS_BYTES_MAX;
    c.session.held_bytes_max = HELD_BYTES_MAX;
    c.session.session_bytes_max = SESSION_BYTES_MAX;
    c.session.streams_max = 4;
    c
}

fn payload(size: u16) -> RawJson {
    RawJson::from(serde_json::json!({ "blob": "x".repeat(usize::from(size)) }))
}

#[derive(Clone, Debug)]
enum Op {
    Initialized,
    Call,
    Respond(u8),
    Progress { pick: u8, size: u16 },
    Notify(u16),
    Get,
    Resume(u8),
    Drop(u8),
    Tick(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => Just(Op::Initialized),
        3 => Just(Op::Call),
        2 => any::<u8>().prop_map(Op::Respond),
        4 => (any::<u8>(), 0u16..1_200).prop_map(|(pick, size)| Op::Progress { pick, size }),
        4 => (0u16..1_200).prop_map(Op::Notify),
        2 => Just(Op::Get),
        2 => any::<u8>().prop_map(Op::Resume),
        2 => any::<u8>().prop_map(Op::Drop),
        1 => (0u16..3000).prop_map(Op::Tick),
    ]
}

fn apply(h: &mut Harness, op: &Op) {
    match op {
        Op::Initialized => {
            h.initialized();
        }
        Op::Call => {
            h.call();
        }
        Op::Respond(i) => h.respond_pick(*i),
        Op::Progress { pick: i, size } => {
            if let Some(id) = pick(&h.pending, *i) {
                h.notify_with(
                    "notifications/progress",
                    Some(payload(*size)),
                    Cause::Request(id),
                );
            }
        }
        Op::Notify(size) => {
            h.notify_with(
                "notifications/message",
                Some(payload(*size)),
                Cause::Unrelated,
            );
        }
        Op::Get => {
            h.get(None);
        }
        Op::Resume(i) => h.resume_pick(*i),
        Op::Drop(i) => h.drop_pick(*i, true),
        Op::Tick(ms) => h.advance(u64::from(*ms)),
    }
}

fn within_budget(h: &Harness) -> Result<(), String> {
    let Some(s) = h.session.as_ref().and_then(|sid| h.ep.session(sid)) else {
        return Ok(());
    };
    if s.retained_bytes() > SESSION_BYTES_MAX {
        return Err(format!("session keeps {} bytes", s.retained_bytes()));
    }
    if s.held_bytes() > HELD_BYTES_MAX {
        return Err(format!("{} bytes held", s.held_bytes()));
    }
    Ok(())
}

#[test]
fn budgets_hold_after_every_step_and_the_monitor_stays_silent() {
    let mut runner = TestRunner::new(Config {
        cases: 512,
        failure_persistence: None,
        ..Config::default()
    });
    let peak = std::cell::Cell::new(0usize);
    runner
        .run(&prop::collection::vec(op(), 1..60), |ops| {
            let mut h = Harness::with(ServerPolicy::FIXED, ProtocolVersion::V2025_11_25, config());
            h.initialize();
            for op in &ops {
                apply(&mut h, op);
                within_budget(&h).map_err(|e| TestCaseError::fail(format!("{e} after {op:?}")))?;
                if let Some(s) = h.session.as_ref().and_then(|sid| h.ep.session(sid)) {
                    peak.set(peak.get().max(s.retained_bytes()));
                }
            }
            h.finish();
            prop_assert!(h.violations().is_empty(), "{:?}", h.violations());
            Ok(())
        })
        .unwrap();
    // The runs reached the budget (so trimming was exercised), never past it.
    let peak = peak.get();
    assert!(peak > SESSION_BYTES_MAX / 2, "peak {peak}");
}

#[test]
fn held_messages_are_dropped_visibly_past_their_byte_bound() {
    let mut h = Harness::with(ServerPolicy::FIXED, ProtocolVersion::V2025_11_25, config());
    h.initialize();
    h.initialized();
    let one = Message::notification("notifications/message", Some(payload(400))).approx_len();
    let fits = HELD_BYTES_MAX / one;
    for _ in 0..fits {
        h.notify_with(
            "notifications/message",
            Some(payload(400)),
            Cause::Unrelated,
        );
    }
    assert!(
        h.dropped.is_empty(),
        "{fits} x {one} bytes fit in {HELD_BYTES_MAX}"
    );
    h.notify_with(
        "notifications/message",
        Some(payload(400)),
        Cause::Unrelated,
    );
    assert_eq!(
        h.dropped.len(),
        1,
        "one past the bound: the oldest is dropped, visibly"
    );
    let s = h.ep.session(h.session.as_ref().unwrap()).unwrap();
    assert!(s.held_bytes() <= HELD_BYTES_MAX);
    assert!(s.held_bytes() > HELD_BYTES_MAX - one);
}

#[test]
fn a_replay_buffer_trimmed_by_bytes_answers_400_for_an_evicted_cursor() {
    let mut h = Harness::with(ServerPolicy::FIXED, ProtocolVersion::V2025_11_25, config());
    h.initialize();
    h.initialized();
    let get = h.get(None);
    let one = Message::notification("notifications/message", Some(payload(300))).approx_len();
    let n = EVENTS_BYTES_MAX / one + 3;
    for _ in 0..n {
        h.notify_with(
            "notifications/message",
            Some(payload(300)),
            Cause::Unrelated,
        );
    }
    let ids: Vec<String> = h.log[&get]
        .events
        .iter()
        .filter(|(_, m)| m.is_some())
        .filter_map(|(id, _)| id.clone())
        .collect();
    assert_eq!(ids.len(), n, "every event was sent live");
    h.client_drop(get, true);
    // The oldest events are gone from the buffer: resuming from the first is 400.
    let old = h.get(Some(&ids[0]));
    assert_eq!(h.log[&old].status, Some(400));
    // The newest are still there: resuming from the one before last replays one.
    let recent = h.get(Some(&ids[n - 2]));
    assert_eq!(h.log[&recent].status, Some(200));
    let replayed = h.log[&recent]
        .events
        .iter()
        .filter(|(_, m)| m.is_some())
        .count();
    assert_eq!(replayed, 1);
    let s = h.ep.session(h.session.as_ref().unwrap()).unwrap();
    assert!(s.retained_bytes() <= EVENTS_BYTES_MAX);
    let dropped_events =
        h.ep.poll_event()
            .map(|(_, e)| matches!(e, ServerEvent::Dropped { .. }));
    assert_ne!(
        dropped_events,
        Some(true),
        "replay trimming is not message loss"
    );
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

/// A session whose only tight budget is `session_bytes_max`, exactly `n`
/// messages of `payload(300)` ("notifications/message").
fn session_budget_of(n: usize) -> (Harness, usize) {
    let one = Message::notification("notifications/message", Some(payload(300))).approx_len();
    let mut c = common::test_config();
    c.session.events_bytes_max = 100_000;
    c.session.held_bytes_max = 100_000;
    c.session.session_bytes_max = n * one;
    let mut h = Harness::with(ServerPolicy::FIXED, ProtocolVersion::V2025_11_25, c);
    h.initialize();
    h.initialized();
    (h, one)
}

fn message(h: &mut Harness, cause: Cause) {
    assert!(h.notify_with("notifications/message", Some(payload(300)), cause));
}

fn retained(h: &Harness) -> usize {
    h.ep.session(h.session.as_ref().unwrap())
        .unwrap()
        .retained_bytes()
}

/// `session_bytes_max` at its edge: exactly the budget evicts nothing; one
/// message past it evicts exactly one message's worth (not two), and from a
/// stream whose client is gone (detached) before a stream still being read,
/// with the held message (not yet delivered at all) left alone.
#[test]
fn the_session_budget_evicts_one_detached_event_first_at_its_exact_edge() {
    let (mut h, one) = session_budget_of(4);
    let (x_http, x) = h.call();
    message(&mut h, Cause::Request(x.clone()));
    let (y_http, y) = h.call();
    message(&mut h, Cause::Request(y.clone()));
    message(&mut h, Cause::Request(y.clone()));
    h.client_drop(y_http, true);
    // No standalone stream: the unrelated message is held.
    message(&mut h, Cause::Unrelated);
    assert_eq!(retained(&h), 4 * one, "exactly the budget");
    assert!(h.dropped.is_empty(), "nothing evicted at the budget");

    message(&mut h, Cause::Request(x.clone()));
    assert_eq!(retained(&h), 4 * one, "one message's worth evicted");
    assert!(h.dropped.is_empty(), "the held message survives");
    // y's first event (detached) was the one evicted: resuming y from its
    // priming event is past the floor (400); from its first event, the second
    // is still there. x kept both of its events.
    let y_ids: Vec<String> = h.log[&y_http]
        .events
        .iter()
        .filter_map(|(id, _)| id.clone())
        .collect();
    let from_priming = h.get(Some(&y_ids[0]));
    assert_eq!(h.log[&from_priming].status, Some(400));
    let from_first = h.get(Some(&y_ids[1]));
    assert_eq!(h.log[&from_first].status, Some(200));
    assert_eq!(h.log[&from_first].messages().len(), 1, "y's second kept");
    h.client_drop(from_first, true);
    h.client_drop(x_http, true);
    let x_priming = h.log[&x_http].events[0].0.clone().expect("priming id");
    let resumed_x = h.get(Some(&x_priming));
    assert_eq!(h.log[&resumed_x].status, Some(200));
    assert_eq!(h.log[&resumed_x].messages().len(), 2, "x lost nothing");
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

/// Held messages count toward `session_bytes_max` too: at the budget all are
/// kept; past it the oldest is dropped, visibly, and only it.
#[test]
fn held_messages_count_toward_the_session_budget_at_its_edge() {
    let (mut h, one) = session_budget_of(2);
    message(&mut h, Cause::Unrelated);
    message(&mut h, Cause::Unrelated);
    assert_eq!(retained(&h), 2 * one);
    assert!(h.dropped.is_empty(), "two fit exactly");
    message(&mut h, Cause::Unrelated);
    assert_eq!(h.dropped.len(), 1, "the oldest, and only it");
    assert_eq!(retained(&h), 2 * one);
    let s = h.ep.session(h.session.as_ref().unwrap()).unwrap();
    assert_eq!(s.held_bytes(), 2 * one);
    // The two kept are delivered, in order, to the next standalone stream.
    let get = h.get(None);
    assert_eq!(h.log[&get].messages().len(), 2);
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

/// A message bigger than several held ones: the session budget drops as
/// many of the oldest held messages as it takes (two here), not one.
#[test]
fn the_session_budget_drops_as_many_held_messages_as_one_big_message_needs() {
    let (mut h, one) = session_budget_of(4);
    for _ in 0..3 {
        message(&mut h, Cause::Unrelated);
    }
    assert!(h.dropped.is_empty());
    // About three small messages' worth.
    assert!(h.notify_with(
        "notifications/message",
        Some(payload(960)),
        Cause::Unrelated
    ));
    assert_eq!(h.dropped.len(), 2, "two of the three small ones");
    assert!(retained(&h) <= 4 * one, "{} > {}", retained(&h), 4 * one);
    let s = h.ep.session(h.session.as_ref().unwrap()).unwrap();
    assert_eq!(s.held_bytes(), retained(&h));
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}
