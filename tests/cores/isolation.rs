//! Several clients in one world: each is judged on its own (C2–C5 per
//! client), and nothing of one session reaches another (I1).

use mcp_streamable::client::ClientEvent;
use mcp_streamable::ids::{HttpId, MsgKey};
use mcp_streamable::jsonrpc::{Message, RawJson};
use mcp_streamable::server::{Cause, Method, Outgoing, Transmit, TransmitKind};
use mcp_streamable::version::ProtocolVersion;
use mcp_streamable_check::monitor::Observation;
use mcp_streamable_check::sim::{PairConfig, World};
use std::sync::Arc;

/// Two clients, both initialized and both with a call answered, every
/// observation logged.
fn two_ready_clients() -> World {
    let mut w = World::with(PairConfig {
        clients: 2,
        ..PairConfig::default()
    });
    w.log = Some(Vec::new());
    let a = w.initialize_on(0).expect("client 0 initializes");
    let b = w.initialize_on(1).expect("client 1 initializes");
    assert_eq!(a, b, "both clients number their first request alike");
    w.drive();
    let a = w.call_on(0, "echo").expect("client 0 is ready");
    let b = w.call_on(1, "echo").expect("client 1 is ready");
    assert_eq!(a, b, "the calls' ids collide too");
    w.drive();
    w
}

fn ids(w: &World) -> Vec<&'static str> {
    w.monitor.violations().iter().map(|v| v.id).collect()
}

#[test]
fn two_clients_whose_request_ids_collide_are_judged_apart() {
    let mut w = two_ready_clients();
    let sessions: Vec<_> = w.server.session_ids().cloned().collect();
    assert_eq!(sessions.len(), 2);
    for sid in &sessions {
        assert!(w.server_notify_in(sid, "notifications/tools/list_changed", Cause::Unrelated));
    }
    w.run(5_000);
    w.finish();
    assert!(ids(&w).is_empty(), "{:#?}", w.monitor.violations());
    let answered = w.outcomes.values().filter(|done| **done).count();
    assert_eq!(answered, 4, "each client got its own two results");
}

#[test]
fn a_response_the_client_never_sent_is_i1() {
    let mut w = two_ready_clients();
    // Client 1 sent two requests; it never sent id 99.
    let response =
        mcp_streamable::jsonrpc::parse_message(r#"{"jsonrpc":"2.0","id":99,"result":{}}"#).unwrap();
    w.observe(&Observation::ClientReceived {
        client: 1,
        http: HttpId(1_000_000),
        message: response,
    });
    assert_eq!(ids(&w), ["I1"], "{:#?}", w.monitor.violations());
}

#[test]
fn a_message_of_another_session_on_this_sessions_stream_is_i1() {
    let mut w = two_ready_clients();
    let log = w.log.clone().unwrap();
    // The background GET of some session, as the server received it.
    let (get, its_session) = log
        .iter()
        .find_map(|o| match o {
            Observation::Request {
                http,
                method: Method::Get,
                session: Some(s),
                ..
            } => Some((*http, s.clone())),
            _ => None,
        })
        .expect("a background GET reached the server");
    let other = w
        .server
        .session_ids()
        .find(|s| s.as_str() != its_session)
        .cloned()
        .expect("a second session");
    let leak = Transmit {
        http: get,
        kind: TransmitKind::Event {
            id: Some("leak-1".into()),
            retry_ms: None,
            message: Some(Arc::new(Outgoing {
                session: other,
                key: MsgKey(1),
                cause: Cause::Unrelated,
                message: Message::notification("notifications/tools/list_changed", None),
            })),
        },
    };
    w.observe(&Observation::Transmit(leak.clone()));
    assert_eq!(ids(&w), ["I1"], "{:#?}", w.monitor.violations());

    // The same event labelled with its own session is fine.
    let mut w = two_ready_clients();
    let TransmitKind::Event { message, .. } = &leak.kind else {
        unreachable!()
    };
    let mut own = (**message.as_ref().unwrap()).clone();
    own.session = its_session.parse().unwrap();
    // A key of its own: key 1 of this session is the answer to its call,
    // which on a standalone GET would be B8.
    own.key = MsgKey(1 << 40);
    let fine = Transmit {
        http: get,
        kind: TransmitKind::Event {
            id: Some("own-1".into()),
            retry_ms: None,
            message: Some(Arc::new(own)),
        },
    };
    w.observe(&Observation::Transmit(fine));
    assert!(ids(&w).is_empty(), "{:#?}", w.monitor.violations());
}

#[test]
fn two_clients_given_one_session_is_i1() {
    let mut w = two_ready_clients();
    let first = w.clients[0]
        .session_id()
        .cloned()
        .expect("client 0 has a session");
    w.observe(&Observation::ClientEvent {
        client: 1,
        event: ClientEvent::Initialized {
            id: mcp_streamable::ids::RequestId::Num(0),
            session_id: Some(first),
            version: ProtocolVersion::V2025_11_25,
            result: RawJson::empty_object(),
        },
    });
    assert!(ids(&w).contains(&"I1"), "{:#?}", w.monitor.violations());
}

/// CVE-2026-25536 on the endpoint itself: two 2026-07-28 calls under one
/// request id from two callers, the application answering the first. FIXED
/// serves each in a session of its own and writes the answer on the first
/// caller's exchange; the TypeScript SDK's one shared stateless transport
/// (`TS_SDK_1_25_SHARED`) takes both into one session, the second in the
/// first one's place, and writes the first one's answer on the second
/// caller's exchange.
#[test]
fn a_shared_stateless_transport_answers_the_first_caller_on_the_seconds_exchange() {
    use mcp_streamable::head::RequestHead;
    use mcp_streamable::id_source::IdSource;
    use mcp_streamable::ids::RequestId;
    use mcp_streamable::policy::ServerPolicy;
    use mcp_streamable::server::{EndpointConfig, ServerEndpoint};
    use mcp_streamable::Instant;
    let body = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let head = RequestHead::post(None, None)
        .with("mcp-protocol-version", "2026-07-28")
        .with("mcp-method", "tools/call")
        .with("mcp-name", "echo");
    for (policy, shared) in [
        (ServerPolicy::FIXED, false),
        (ServerPolicy::TS_SDK_1_25_SHARED, true),
    ] {
        let mut ep =
            ServerEndpoint::with_ids(EndpointConfig::default(), policy, IdSource::reproducible(7));
        let now = Instant::ZERO;
        let a = ep.handle_request(&head, body, now);
        let b = ep.handle_request(&head, body, now);
        assert!(a.outcome.is_ok() && b.outcome.is_ok(), "{a:?} {b:?}");
        let (sa, sb) = (a.session.unwrap(), b.session.unwrap());
        assert_eq!(sa == sb, shared, "one session for both callers");
        while ep.poll_transmit().is_some() {}
        while ep.poll_event().is_some() {}
        let id = RequestId::Num(2);
        ep.session_mut(&sa)
            .unwrap()
            .respond(&id, Ok(RawJson::empty_object()), now)
            .expect("the first caller's request is being served");
        let mut answered_on = Vec::new();
        while let Some(t) = ep.poll_transmit() {
            let m = match &t.kind {
                TransmitKind::Json(m) => Some(m.clone()),
                TransmitKind::Event {
                    message: Some(o), ..
                } => Some(o.message.clone()),
                _ => None,
            };
            if matches!(m, Some(Message::Response { .. })) {
                answered_on.push(t.http);
            }
        }
        let expected = if shared { b.http } else { a.http };
        assert_eq!(answered_on, [expected], "{policy:?}");
    }
}
