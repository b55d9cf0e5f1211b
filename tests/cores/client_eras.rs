//! The client core's eras against our dual-era server in the in-memory
//! world, the monitor judging both sides: `V2026` and `Auto` probe with
//! `server/discover` and speak 2026-07-28 (standard headers, `_meta`, no
//! session); `Auto` falls back to `initialize` against a session-era server;
//! `V2026` does not; a broken 2026-07-28 stream loses its request.

use mcp_streamable::client::{
    ClientConfig, ClientEra, ClientError, ClientEvent, ClientTransmitKind,
};
use mcp_streamable::version::ProtocolVersion;
use mcp_streamable_check::monitor::Observation;
use mcp_streamable_check::sim::{PairConfig, World};

fn world(era: ClientEra, server_v2026: bool) -> World {
    let mut config = PairConfig {
        client: ClientConfig {
            era,
            ..ClientConfig::default()
        },
        ..PairConfig::default()
    };
    config.server.v2026_era = server_v2026;
    let mut w = World::with(config);
    w.log = Some(Vec::new());
    w
}

fn initialized(w: &World) -> Option<(Option<String>, ProtocolVersion)> {
    w.client_events.iter().find_map(|e| match e {
        ClientEvent::Initialized {
            session_id,
            version,
            ..
        } => Some((session_id.as_ref().map(|s| s.to_string()), *version)),
        _ => None,
    })
}

/// One request head the client sent: its `Mcp-Method`, `Mcp-Name`,
/// `Mcp-Session-Id` and `MCP-Protocol-Version`.
#[derive(Debug)]
struct Sent {
    method: Option<String>,
    name: Option<String>,
    session: Option<String>,
    version: Option<String>,
}

fn heads(w: &World) -> Vec<Sent> {
    w.log
        .as_ref()
        .unwrap()
        .iter()
        .filter_map(|o| match o {
            Observation::ClientTransmit { transmit, .. } => match &transmit.kind {
                ClientTransmitKind::Send { head, .. } => {
                    let h = |n: &str| head.header(n).map(str::to_owned);
                    Some(Sent {
                        method: h("mcp-method"),
                        name: h("mcp-name"),
                        session: h("mcp-session-id"),
                        version: h("mcp-protocol-version"),
                    })
                }
                ClientTransmitKind::Abort => None,
            },
            _ => None,
        })
        .collect()
}

#[test]
fn v2026_and_auto_speak_2026_with_a_dual_era_server() {
    for era in [ClientEra::V2026, ClientEra::Auto] {
        let mut w = world(era, true);
        w.initialize();
        w.drive();
        assert_eq!(
            initialized(&w),
            Some((None, ProtocolVersion::LATEST_V2026)),
            "{era:?}"
        );
        let id = w.call("echo");
        w.drive();
        assert!(
            matches!(w.result_of(&id), Some(ClientEvent::Response { .. })),
            "{era:?}: {:?}",
            w.result_of(&id)
        );
        let sent = heads(&w);
        assert_eq!(
            sent.len(),
            2,
            "{era:?}: the probe and the call, nothing else: {sent:?}"
        );
        for s in &sent {
            assert!(s.method.is_some(), "{era:?}: Mcp-Method on every request");
            assert_eq!(s.session, None, "{era:?}: no session in this era");
            assert_eq!(s.version.as_deref(), Some("2026-07-28"));
        }
        assert_eq!(sent[0].method.as_deref(), Some("server/discover"));
        assert_eq!(
            sent[1].name.as_deref(),
            Some("echo"),
            "Mcp-Name names the tool"
        );
        assert_eq!(
            w.server.session_ids().count(),
            0,
            "nothing kept on the server"
        );
        w.finish();
        assert!(
            w.monitor.violations().is_empty(),
            "{era:?}: {:#?}",
            w.monitor.violations()
        );
    }
}

#[test]
fn auto_falls_back_to_initialize_with_a_session_era_server_and_v2026_does_not() {
    let mut w = world(ClientEra::Auto, false);
    w.initialize();
    w.drive();
    let (session, version) = initialized(&w).expect("initialized after the fallback");
    assert!(session.is_some(), "a session-era session");
    assert_eq!(version, ProtocolVersion::LATEST);
    assert!(
        !w.client_events
            .iter()
            .any(|e| matches!(e, ClientEvent::Failed { .. })),
        "the probe's refusal is no failure for the caller"
    );
    assert!(
        w.client_events.iter().any(|e| matches!(
            e,
            ClientEvent::FellBack {
                error: ClientError::Status { status: 400, .. },
                ..
            }
        )),
        "the application is told why: {:?}",
        w.client_events
    );
    let id = w.call("echo");
    w.drive();
    assert!(matches!(
        w.result_of(&id),
        Some(ClientEvent::Response { .. })
    ));
    let sent = heads(&w);
    assert_eq!(sent[0].method.as_deref(), Some("server/discover"));
    assert!(
        sent[1..].iter().all(|s| s.method.is_none()),
        "the session era has no Mcp-Method: {sent:?}"
    );
    w.finish();
    assert!(
        w.monitor.violations().is_empty(),
        "{:#?}",
        w.monitor.violations()
    );

    let mut w = world(ClientEra::V2026, false);
    w.initialize();
    w.drive();
    assert_eq!(initialized(&w), None);
    assert!(
        w.client_events.iter().any(|e| matches!(
            e,
            ClientEvent::Failed {
                error: ClientError::Status { status: 400, .. },
                ..
            }
        )),
        "{:?}",
        w.client_events
    );
}

#[test]
fn a_broken_v2026_stream_loses_its_request_and_tells_no_one() {
    let mut config = PairConfig {
        client: ClientConfig {
            era: ClientEra::V2026,
            ..ClientConfig::default()
        },
        server_auto_respond: false,
        ..PairConfig::default()
    };
    config.server.v2026_era = true;
    let mut w = World::with(config);
    w.log = Some(Vec::new());
    w.initialize();
    w.drive();
    w.server_respond_all();
    w.drive();
    assert!(initialized(&w).is_some());
    let id = w.call("slow");
    w.drive();
    // The call's exchange: the last one the client opened.
    let ch = *w.links.keys().last().expect("the call's exchange");
    w.drop_link(ch, true);
    w.drive();
    assert!(
        matches!(
            w.result_of(&id),
            Some(ClientEvent::Failed {
                error: ClientError::StreamLost,
                ..
            })
        ),
        "{:?}",
        w.result_of(&id)
    );
    assert_eq!(
        heads(&w).len(),
        2,
        "no cancellation notice: closing was the cancellation"
    );
    assert_eq!(
        w.server.session_ids().count(),
        0,
        "the server let the request go"
    );
}

#[test]
fn a_session_era_client_and_a_v2026_one_share_the_server() {
    let mut w = World::with(PairConfig {
        clients: 2,
        client_eras: vec![ClientEra::V2025, ClientEra::V2026],
        ..PairConfig::default()
    });
    w.log = Some(Vec::new());
    w.initialize_on(0).unwrap();
    w.initialize_on(1).unwrap();
    w.drive();
    let a = w.call_on(0, "echo").unwrap();
    let b = w.call_on(1, "echo").unwrap();
    w.drive();
    for id in [&a, &b] {
        assert!(
            w.client_events
                .iter()
                .filter(|e| matches!(e, ClientEvent::Response { id: r, .. } if r == id))
                .count()
                == 2
        );
    }
    assert_eq!(
        w.server.session_ids().count(),
        1,
        "the session-era session alone"
    );
    w.finish();
    assert!(
        w.monitor.violations().is_empty(),
        "{:#?}",
        w.monitor.violations()
    );
}
