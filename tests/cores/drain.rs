//! The observed drains (`ServerEndpoint::drain_observed`,
//! `ClientSession::drain_observed`), the loop every harness, fuzz target,
//! world and shell runs after an input: everything is observed before it is
//! handled, a handler that feeds the core is drained in the same call, the
//! core is quiet afterwards, and a quiet core reports nothing.

use crate::common;

use crate::common::Harness;
use mcp_streamable::client::{
    ClientConfig, ClientEvent, ClientOutput, ClientSession, ClientTransmitKind,
};
use mcp_streamable::head::ResponseHead;
use mcp_streamable::ids::HttpId;
use mcp_streamable::jsonrpc::RawJson;
use mcp_streamable::policy::{ClientPolicy, ServerPolicy};
use mcp_streamable::server::{Cause, RequestHead, ServerEvent, ServerOutput, TransmitKind};
use mcp_streamable::sse::SseItem;
use mcp_streamable::time::Instant;
use mcp_streamable::version::ProtocolVersion;
use mcp_streamable_check::monitor::Observation;

/// What a drain showed, in order: `o` observed, `h` handled.
#[derive(Debug, PartialEq)]
enum Seen {
    Observed(String),
    Handled(String),
}

fn observation_name(o: &Observation) -> Option<String> {
    match o {
        Observation::Transmit(t) => Some(format!("transmit {} {}", t.http.0, kind(&t.kind))),
        Observation::Dropped { .. } => Some("dropped".into()),
        Observation::ClientTransmit { transmit, .. } => {
            Some(format!("client transmit {}", transmit.http.0))
        }
        Observation::ClientEvent { event, .. } => {
            Some(format!("client event {}", event_name(event)))
        }
        _ => None,
    }
}

fn kind(k: &TransmitKind) -> &'static str {
    match k {
        TransmitKind::Head(_) => "head",
        TransmitKind::Json(_) => "json",
        TransmitKind::Event { .. } => "event",
        TransmitKind::Comment => "comment",
        TransmitKind::End(_) => "end",
    }
}

fn event_name(e: &ClientEvent) -> &'static str {
    match e {
        ClientEvent::Initialized { .. } => "initialized",
        ClientEvent::Response { .. } => "response",
        ClientEvent::Failed { .. } => "failed",
        _ => "other",
    }
}

/// Every handled transmit was observed, right before it was handled.
fn assert_observed_first(seen: &[Seen]) {
    for (i, s) in seen.iter().enumerate() {
        if let Seen::Handled(name) = s {
            if name.contains("transmit") {
                assert!(
                    i > 0 && seen[i - 1] == Seen::Observed(name.clone()),
                    "{name} handled without being observed just before: {seen:?}"
                );
            }
        }
    }
}

#[test]
fn the_server_drain_observes_first_and_drains_what_its_handler_causes() {
    let mut h = Harness::new(ServerPolicy::FIXED);
    h.initialize();
    h.initialized();
    let sid = h.session.clone().expect("a session");
    let head = RequestHead::post(Some(&sid), Some(h.version));
    let now = Instant::ZERO;
    let body = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t"}}"#;
    let http = h.ep.handle_request(&head, body, now).http;
    let mut seen = Vec::new();
    let log = std::cell::RefCell::new(&mut seen);
    let any = h.ep.drain_observed(
        &mut |o| {
            if let Some(n) = observation_name(o) {
                log.borrow_mut().push(Seen::Observed(n));
            }
        },
        |ep, out, _| match out {
            ServerOutput::Transmit(t) => log.borrow_mut().push(Seen::Handled(format!(
                "transmit {} {}",
                t.http.0,
                kind(&t.kind)
            ))),
            // The application answers at once, from inside the drain.
            ServerOutput::Event(s, ServerEvent::Request { id, .. }) => {
                log.borrow_mut().push(Seen::Handled("request".into()));
                let session = ep.session_mut(&s).expect("the session");
                session
                    .respond(&id, Ok(RawJson::empty_object()), now)
                    .expect("an answer");
            }
            ServerOutput::Event(..) => {}
        },
    );
    assert!(any);
    assert_observed_first(&seen);
    // The request came first, then its whole answer on its own exchange:
    // head, the response, the end, all in this one call.
    let request = seen
        .iter()
        .position(|s| *s == Seen::Handled("request".into()));
    let end = seen
        .iter()
        .position(|s| *s == Seen::Handled(format!("transmit {} end", http.0)));
    assert!(
        matches!((request, end), (Some(r), Some(e)) if r < e),
        "{seen:?}"
    );
    assert!(h.ep.poll_transmit().is_none() && h.ep.poll_event().is_none());
    // Quiet: nothing comes out, nothing is observed.
    let mut observed = 0;
    assert!(!h.ep.drain_observed(&mut |_| observed += 1, |_, _, _| {}));
    assert_eq!(observed, 0);
}

#[test]
fn the_server_drain_shows_dropped_messages_to_the_observer() {
    let mut config = common::test_config();
    config.session.held_max = 1;
    let mut h = Harness::with(ServerPolicy::FIXED, ProtocolVersion::V2025_11_25, config);
    h.initialize();
    h.initialized();
    let sid = h.session.clone().expect("a session");
    let now = Instant::ZERO;
    // No stream to carry them: held, and the second pushes out the first.
    for method in ["notifications/a", "notifications/b"] {
        let s = h.ep.session_mut(&sid).expect("the session");
        s.notify(method, None, Cause::Unrelated, now).expect("sent");
    }
    let (mut observed, mut handled) = (0, 0);
    h.ep.drain_observed(
        &mut |o| observed += matches!(o, Observation::Dropped { .. }) as usize,
        |_, out, _| {
            handled += matches!(out, ServerOutput::Event(_, ServerEvent::Dropped { .. })) as usize
        },
    );
    assert_eq!((observed, handled), (1, 1));
}

#[test]
fn the_client_drain_observes_first_and_drains_what_its_handler_causes() {
    let mut client = ClientSession::new(ClientConfig::default(), ClientPolicy::FIXED);
    let now = Instant::ZERO;
    client
        .initialize(RawJson::empty_object(), now)
        .expect("initialize");
    let mut sent: Vec<HttpId> = Vec::new();
    let mut seen = Vec::new();
    {
        let log = std::cell::RefCell::new(&mut seen);
        client.drain_observed(
            3,
            &mut |o| {
                if let Observation::ClientTransmit { client, .. } = o {
                    assert_eq!(*client, 3, "observed as the client it was told it is");
                }
                if let Some(n) = observation_name(o) {
                    log.borrow_mut().push(Seen::Observed(n));
                }
            },
            |_, out, _| {
                if let ClientOutput::Transmit(t) = out {
                    assert!(matches!(t.kind, ClientTransmitKind::Send { .. }));
                    sent.push(t.http);
                    log.borrow_mut()
                        .push(Seen::Handled(format!("client transmit {}", t.http.0)));
                }
            },
        );
    }
    assert_observed_first(&seen);
    let init = *sent.first().expect("initialize sent");
    // The server's answer: on `Initialized` the application sends a request
    // from inside the drain; it goes out in the same call.
    let head = ResponseHead::from_wire(
        200,
        [
            ("content-type", "text/event-stream"),
            ("mcp-session-id", "abc"),
        ],
    );
    client.handle_response_head(init, head, now);
    let data = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#;
    client.handle_sse_event(
        init,
        SseItem::Message {
            id: None,
            event: None,
            data: data.into(),
        },
        now,
    );
    let mut events = Vec::new();
    let mut requests = Vec::new();
    client.drain_observed(0, &mut |_| {}, |c, out, _| match out {
        ClientOutput::Event(e) => {
            if matches!(e, ClientEvent::Initialized { .. }) {
                requests.push(c.send_request("tools/list", None, now).expect("ready"));
            }
            events.push(event_name(&e));
        }
        ClientOutput::Transmit(t) => sent.push(t.http),
    });
    assert!(events.contains(&"initialized"), "{events:?}");
    assert_eq!(requests.len(), 1);
    // initialize, notifications/initialized, tools/list (and whatever else
    // the policy opens): the request made inside the drain went out.
    assert!(sent.len() >= 3, "{sent:?}");
    assert!(client.poll_transmit().is_none() && client.poll_event().is_none());
    assert!(!client.drain_observed(0, &mut |_| {}, |_, _, _| {}));
}

/// A broadcast is observed as such once, where it originates; an endpoint
/// that only fans out another's broadcast shows just what it sends.
#[test]
fn a_broadcast_is_observed_where_it_originates_only() {
    use mcp_streamable::server::BroadcastOrigin;
    for (origin, broadcasts) in [(BroadcastOrigin::Here, 1), (BroadcastOrigin::Elsewhere, 0)] {
        let mut h = Harness::new(ServerPolicy::FIXED);
        h.initialize();
        h.initialized();
        h.get(None);
        let mut seen = Vec::new();
        let now = h.now;
        let sent = h.ep.broadcast_observed(
            "notifications/tools/list_changed",
            None,
            now,
            origin,
            &mut |o| seen.push(o.clone()),
        );
        assert_eq!(sent, 1);
        let b = seen
            .iter()
            .filter(|o| matches!(o, Observation::Broadcast { .. }))
            .count();
        assert_eq!(b, broadcasts, "{origin:?}");
        assert_eq!(
            seen.iter()
                .filter(|o| matches!(o, Observation::Sent { .. }))
                .count(),
            1,
            "{origin:?}"
        );
    }
}
