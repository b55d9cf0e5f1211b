//! The rmcp bridge's translation under proptest: random sequences of what
//! rmcp asks (requests, notifications, GETs, resumptions from any event
//! seen, dropped streams, DELETE) and what its handler sends (answers,
//! progress, unrelated notifications, requests with and without an
//! origin), judged by the monitor on the bridge's observations and by the
//! bridge's own contract: every client message reaches the handler once
//! with the extra it came with, nothing is written on an exchange after its
//! end, and each answer of the client reaches the handler under the
//! handler's own id.
#![cfg(feature = "rmcp")]

use mcp_streamable::ids::{HttpId, RequestId, SessionId};
use mcp_streamable::jsonrpc::{Message, RawJson};
use mcp_streamable::policy::ServerPolicy;
use mcp_streamable::server::{ResponseMode, ServerSession, SessionConfig};
use mcp_streamable::time::Instant;
use mcp_streamable::version::ProtocolVersion;
use mcp_streamable_check::monitor;
use mcp_streamable_rmcp::{Bridge, Output};
use proptest::prelude::*;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

#[derive(Clone, Debug)]
enum Op {
    /// A client request (with a progress token or not).
    Request { progress: bool },
    /// A client notification.
    Notification,
    /// A plain GET.
    Get,
    /// A GET resuming from the `n`th event id seen.
    Resume(usize),
    /// The `n`th open stream is dropped.
    Drop(usize),
    /// The handler answers the `n`th request it has.
    Answer(usize),
    /// The handler sends progress for the `n`th request it has.
    Progress(usize),
    /// The handler sends an unrelated notification.
    Unrelated,
    /// The handler asks the client, from the `n`th request it has (or none).
    Ask(Option<usize>),
    /// The client answers the `n`th server request it saw.
    ClientAnswers(usize),
    /// Time passes.
    Wait(u64),
    /// DELETE.
    Delete,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => any::<bool>().prop_map(|progress| Op::Request { progress }),
        1 => Just(Op::Notification),
        2 => Just(Op::Get),
        2 => (0usize..16).prop_map(Op::Resume),
        2 => (0usize..4).prop_map(Op::Drop),
        3 => (0usize..4).prop_map(Op::Answer),
        2 => (0usize..4).prop_map(Op::Progress),
        2 => Just(Op::Unrelated),
        2 => proptest::option::of(0usize..4).prop_map(Op::Ask),
        2 => (0usize..4).prop_map(Op::ClientAnswers),
        1 => (0u64..70_000).prop_map(Op::Wait),
        1 => Just(Op::Delete),
    ]
}

/// What the test knows of the world the bridge lives in.
#[derive(Default)]
struct World {
    now: u64,
    next_id: i64,
    /// Requests the handler has and has not answered.
    handler_has: Vec<RequestId>,
    /// Extras the client attached, not yet delivered.
    undelivered: BTreeSet<String>,
    open: BTreeSet<HttpId>,
    ended: BTreeSet<HttpId>,
    event_ids: Vec<String>,
    /// Server requests on the wire: the id the client saw → the handler's id.
    asked: BTreeMap<RequestId, RequestId>,
    wire_asks: Vec<RequestId>,
    next_ask: i64,
    /// Every id the handler asked under, and those it got an answer for.
    handler_asks: BTreeSet<RequestId>,
    answered: BTreeSet<RequestId>,
}

fn bridge() -> Bridge<String> {
    let config = SessionConfig {
        response_mode: ResponseMode::Sse,
        keepalive_ms: None,
        ..SessionConfig::default()
    };
    let core = ServerSession::new(
        SessionId::from_bits(9),
        3,
        ProtocolVersion::LATEST,
        config,
        ServerPolicy::FIXED,
    );
    Bridge::new(core)
}

fn drain(b: &mut Bridge<String>, w: &mut World) -> Result<(), TestCaseError> {
    while let Some(out) = b.poll_output() {
        match out {
            Output::Deliver { message, extra } => match (&message, extra) {
                (Message::Request { id, .. }, Some(extra)) => {
                    prop_assert!(w.undelivered.remove(&extra), "delivered twice: {extra}");
                    prop_assert_eq!(extra, format!("request {id}"));
                    w.handler_has.push(id.clone());
                }
                (Message::Notification { .. }, Some(extra)) => {
                    prop_assert!(w.undelivered.remove(&extra), "delivered twice: {extra}");
                }
                (Message::Response { id, .. }, None)
                | (Message::Error { id: Some(id), .. }, None) => {
                    prop_assert!(
                        w.handler_asks.contains(id),
                        "an answer under an id the handler never used: {id}"
                    );
                    prop_assert!(w.answered.insert(id.clone()), "answered twice: {id}");
                }
                (m, e) => prop_assert!(false, "unexpected delivery {m:?} {e:?}"),
            },
            Output::Event {
                http, id, message, ..
            } => {
                prop_assert!(w.open.contains(&http), "event on {http:?}, not open");
                w.event_ids.extend(id);
                if let Some(Message::Request { id, .. }) = message {
                    w.wire_asks.push(id);
                }
            }
            Output::End { http, .. } => {
                prop_assert!(w.open.remove(&http), "end of {http:?}, not open");
                w.ended.insert(http);
            }
            Output::SessionEnded => {}
        }
    }
    Ok(())
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let violations = Arc::new(Mutex::new(Vec::new()));
    let seen = violations.clone();
    let tap = monitor::watching(move |v| seen.lock().unwrap().push(format!("{v:?}")));
    let mut b = bridge().with_tap(Some(Arc::new(Mutex::new(tap))));
    let mut w = World::default();
    let at = |w: &World| Instant::from_millis(w.now);
    // The handshake: initialize, answered, initialized.
    let init = Message::request(
        RequestId::Num(0),
        "initialize",
        Some(RawJson::from(json!({"protocolVersion": "2025-11-25"}))),
    );
    w.undelivered.insert("request 0".into());
    let http = b
        .handle_initialize(init, "request 0".into(), at(&w))
        .unwrap();
    w.open.insert(http);
    drain(&mut b, &mut w)?;
    let answer = Message::Response {
        id: RequestId::Num(0),
        result: RawJson::from(json!({"protocolVersion": "2025-11-25"})),
    };
    b.send(answer, None, at(&w)).unwrap();
    w.handler_has.clear();
    let initialized = Message::notification("notifications/initialized", None);
    w.undelivered.insert("initialized".into());
    b.handle_message(initialized, "initialized".into(), at(&w))
        .unwrap();
    drain(&mut b, &mut w)?;
    w.next_id = 1;

    for op in ops {
        let now = at(&w);
        match op {
            Op::Request { progress } => {
                let id = RequestId::Num(w.next_id);
                w.next_id += 1;
                let params = if progress {
                    json!({"name": "t", "_meta": {"progressToken": format!("p{id}")}})
                } else {
                    json!({"name": "t"})
                };
                let m = Message::request(id.clone(), "tools/call", Some(RawJson::from(params)));
                let extra = format!("request {id}");
                if let Ok(http) = b.handle_request(m, extra.clone(), now) {
                    w.undelivered.insert(extra);
                    w.open.insert(http);
                }
            }
            Op::Notification => {
                let extra = format!("notification {}", w.next_id);
                w.next_id += 1;
                let m = Message::notification("notifications/roots/list_changed", None);
                if b.handle_message(m, extra.clone(), now).is_ok() {
                    w.undelivered.insert(extra);
                }
            }
            Op::Get => {
                if let Ok(http) = b.handle_get(None, now) {
                    w.open.insert(http);
                }
            }
            Op::Resume(n) => {
                if let Some(id) = w.event_ids.get(n % w.event_ids.len().max(1)).cloned() {
                    if let Ok(http) = b.handle_get(Some(&id), now) {
                        w.open.insert(http);
                    }
                }
            }
            Op::Drop(n) => {
                if let Some(http) = w.open.iter().nth(n % w.open.len().max(1)).copied() {
                    w.open.remove(&http);
                    b.handle_stream_dropped(http, now);
                }
            }
            Op::Answer(n) if !w.handler_has.is_empty() => {
                let id = w.handler_has.remove(n % w.handler_has.len());
                let m = Message::Response {
                    id,
                    result: RawJson::empty_object(),
                };
                let _ = b.send(m, None, now);
            }
            Op::Progress(n) if !w.handler_has.is_empty() => {
                let id = &w.handler_has[n % w.handler_has.len()];
                let params = json!({"progressToken": format!("p{id}"), "progress": 1});
                let m =
                    Message::notification("notifications/progress", Some(RawJson::from(params)));
                let _ = b.send(m, None, now);
            }
            Op::Unrelated => {
                let m = Message::notification("notifications/tools/list_changed", None);
                let _ = b.send(m, None, now);
            }
            Op::Ask(origin) => {
                let origin = origin
                    .filter(|_| !w.handler_has.is_empty())
                    .map(|n| w.handler_has[n % w.handler_has.len()].clone());
                let handler_id = RequestId::Str(format!("h{}", w.next_ask));
                w.next_ask += 1;
                let m = Message::request(handler_id.clone(), "roots/list", None);
                // Refused, it fails at once: the handler gets an error for it.
                w.handler_asks.insert(handler_id.clone());
                if b.send(m, origin, now).is_ok() {
                    // The core numbers what it sends the client 1, 2, 3…
                    w.asked
                        .insert(RequestId::Num(w.asked.len() as i64 + 1), handler_id);
                }
            }
            Op::ClientAnswers(n) if !w.wire_asks.is_empty() => {
                let id = w.wire_asks[n % w.wire_asks.len()].clone();
                let m = Message::Response {
                    id,
                    result: RawJson::from(json!({"roots": []})),
                };
                let _ = b.handle_message(m, "answer".into(), now);
            }
            Op::Wait(ms) => {
                w.now += ms;
                b.handle_timeout(at(&w));
            }
            Op::Delete => b.handle_delete(now),
            _ => {}
        }
        drain(&mut b, &mut w)?;
    }
    // Whatever the client sent reached the handler (or the session ended first).
    if !b.is_ended() {
        prop_assert!(
            w.undelivered.is_empty(),
            "never delivered: {:?}",
            w.undelivered
        );
    }
    let violations = violations.lock().unwrap();
    prop_assert!(violations.is_empty(), "{violations:?}");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_bridge_translates_without_loss_or_duplication(ops in proptest::collection::vec(op(), 1..40)) {
        run(ops)?;
    }
}
