//! End-to-end flows of the client core against the server core over the
//! in-memory network, each judged by the monitor.

use mcp_streamable::client::{ClientError, ClientEvent, ServerRequests};
use mcp_streamable::head::Content;
use mcp_streamable::ids::RequestId;
use mcp_streamable::jsonrpc::{Message, METHOD_NOT_FOUND};
use mcp_streamable::policy::{ClientPolicy, ServerPolicy};
use mcp_streamable::server::{Cause, ResponseMode};
use mcp_streamable::version::ProtocolVersion;
use mcp_streamable_check::monitor::Observation;
use mcp_streamable_check::sim::{Pair, PairConfig};

fn ready() -> Pair {
    let mut p = Pair::new(ServerPolicy::FIXED, ClientPolicy::FIXED);
    p.initialize();
    p.drive();
    p
}

/// A ready pair whose server application answers only when told.
fn manual(tune: impl FnOnce(&mut PairConfig)) -> Pair {
    let mut config = PairConfig {
        server_auto_respond: false,
        ..PairConfig::default()
    };
    tune(&mut config);
    let mut p = Pair::with(config);
    p.initialize();
    p.drive();
    let init = p.server_pending[0].1.clone();
    p.server_respond(&init);
    p.drive();
    p
}

fn clean(p: &mut Pair) {
    p.finish();
    assert!(
        p.monitor.violations().is_empty(),
        "{:#?}",
        p.monitor.violations()
    );
}

fn response_ok(p: &Pair, id: &RequestId) -> bool {
    matches!(
        p.result_of(id),
        Some(ClientEvent::Response { result: Ok(_), .. })
    )
}

#[test]
fn initialize_commits_session_and_version_then_opens_background() {
    let mut p = ready();
    let sid = p.server_session().expect("server session");
    assert_eq!(p.client().session_id(), Some(&sid));
    assert_eq!(p.client().version(), Some(ProtocolVersion::V2025_11_25));
    assert!(matches!(
        p.client_events[0],
        ClientEvent::Initialized { .. }
    ));
    let session = p.server.session(&sid).unwrap();
    assert!(
        session.is_initialized(),
        "notifications/initialized arrived"
    );
    assert_eq!(
        p.client().exchanges().count(),
        1,
        "the background GET stays open"
    );
    clean(&mut p);
}

#[test]
fn tools_call_over_sse_and_over_json() {
    let mut p = ready();
    let id = p.call("echo");
    p.drive();
    assert!(response_ok(&p, &id));
    clean(&mut p);

    let mut config = PairConfig::default();
    config.server.session.response_mode = ResponseMode::JsonWhenAlone;
    let mut p = Pair::with(config);
    p.initialize();
    p.drive();
    let id = p.call("echo");
    p.drive();
    assert!(response_ok(&p, &id));
    clean(&mut p);
}

#[test]
fn progress_before_the_response() {
    let mut p = manual(|_| {});
    let id = p.call("slow");
    p.drive();
    let server_id = p.server_pending[0].1.clone();
    assert!(p.server_notify("notifications/progress", Cause::Request(server_id.clone())));
    p.drive();
    p.server_respond(&server_id);
    p.drive();
    let pos_progress = p
        .client_events
        .iter()
        .position(|e| matches!(e, ClientEvent::Notification { method, .. } if method == "notifications/progress"))
        .expect("progress");
    let pos_response = p
        .client_events
        .iter()
        .position(|e| matches!(e, ClientEvent::Response { id: r, .. } if *r == id))
        .expect("response");
    assert!(pos_progress < pos_response);
    clean(&mut p);
}

/// A client call whose server application asks the client `method` while
/// serving it: (the call's id, its id at the server, the server request's id).
fn ask_during_a_call(p: &mut Pair, method: &str) -> (RequestId, RequestId, RequestId) {
    let id = p.call("sample");
    p.drive();
    let server_id = p.server_pending[0].1.clone();
    let asked = p
        .server_request(method, Cause::Request(server_id.clone()))
        .expect("sent");
    p.drive();
    (id, server_id, asked)
}

#[test]
fn server_request_answered_by_the_client() {
    let mut p = manual(|_| {});
    let (id, server_id, asked) = ask_during_a_call(&mut p, "sampling/createMessage");
    assert!(p
        .client_events
        .iter()
        .any(|e| matches!(e, ClientEvent::ServerRequest { id, .. } if *id == asked)));
    p.server_respond(&server_id);
    p.drive();
    assert!(response_ok(&p, &id));
    let sid = p.server_session().unwrap();
    assert_eq!(
        p.server.session(&sid).unwrap().late_responses(),
        0,
        "the answer matched"
    );
    clean(&mut p);
}

#[test]
fn server_request_declined_by_the_core_when_nobody_answers_them() {
    let mut p = manual(|c| c.client.server_requests = ServerRequests::Decline);
    p.log = Some(Vec::new());
    let (id, server_id, asked) = ask_during_a_call(&mut p, "elicitation/create");
    assert!(
        !p.client_events
            .iter()
            .any(|e| matches!(e, ClientEvent::ServerRequest { .. })),
        "declined by the core: the application never sees it"
    );
    let answered = p.log.as_ref().unwrap().iter().any(|o| {
        matches!(o, Observation::Request { messages, .. } if messages.iter().any(|m| matches!(
            m,
            Message::Error { id: Some(i), error } if *i == asked && error.code == METHOD_NOT_FOUND
        )))
    });
    assert!(answered, "the server got -32601 for its request");
    p.server_respond(&server_id);
    p.drive();
    assert!(response_ok(&p, &id));
    clean(&mut p);
}

#[test]
fn polling_with_priming_and_retry() {
    let mut p = manual(|c| c.server.session.retry_ms = 500);
    let id = p.call("test_reconnection");
    p.drive();
    let server_id = p.server_pending[0].1.clone();
    p.server_close_connection(&server_id);
    p.drive();
    assert!(
        p.result_of(&id).is_none(),
        "still pending after the polling close"
    );
    p.advance(499);
    p.drive();
    let gets_before = p.links.len();
    p.advance(1);
    p.drive();
    assert_eq!(
        p.links.len(),
        gets_before + 1,
        "resumed exactly after retry"
    );
    p.server_respond(&server_id);
    p.drive();
    assert!(response_ok(&p, &id));
    clean(&mut p);
}

#[test]
fn resumption_after_a_dropped_connection() {
    let mut p = manual(|_| {});
    let id = p.call("slow");
    p.drive();
    let server_id = p.server_pending[0].1.clone();
    let post = *p.links.keys().last().unwrap();
    p.drop_link(post, true);
    p.server_respond(&server_id); // buffered for the resumption
    p.run(10_000);
    assert!(response_ok(&p, &id));
    clean(&mut p);
}

#[test]
fn not_found_means_session_lost_then_initialize_again() {
    let mut p = ready();
    let sid = p.server_session().unwrap();
    p.server.session_mut(&sid).unwrap().close(p.now); // the server ends the session
    p.pump();
    p.drive();
    assert!(
        p.client_events
            .iter()
            .any(|e| matches!(e, ClientEvent::SessionLost))
            || {
                let id = p.call("after");
                p.drive();
                matches!(
                    p.result_of(&id),
                    Some(ClientEvent::Failed {
                        error: ClientError::SessionLost,
                        ..
                    })
                )
            }
    );
    assert!(!p.client().is_ready());
    p.initialize();
    p.drive();
    assert!(p.client().is_ready());
    assert_ne!(p.client().session_id(), Some(&sid), "a new session");
    let id = p.call("again");
    p.drive();
    assert!(response_ok(&p, &id));
    clean(&mut p);
}

/// A call in flight when the server ends the session: the client learns it
/// from a `404` and, under FIXED, fails the call with `SessionLost`. Under
/// rmcp 1.7's `SessionLoss::OrphanInFlight` it aborts the call's stream and
/// leaves the call pending with no timer left to end it (rmcp #912).
#[test]
fn a_call_in_flight_when_the_session_is_lost_fails_unless_orphaned() {
    for (client, orphaned) in [(ClientPolicy::FIXED, false), (ClientPolicy::RMCP_1_7, true)] {
        let mut p = manual(|c| c.client_policy = client);
        let id = p.call("in flight");
        p.drive();
        assert!(p.result_of(&id).is_none(), "not answered yet");
        let sid = p.server_session().unwrap();
        p.server.session_mut(&sid).unwrap().close(p.now);
        p.pump();
        p.drive();
        // The streams ended: the client resumes or reconnects after the
        // announced `retry`, and the server answers 404.
        p.advance(1_000);
        p.drive();
        assert!(p
            .client_events
            .iter()
            .any(|e| matches!(e, ClientEvent::SessionLost)));
        let failed = matches!(
            p.result_of(&id),
            Some(ClientEvent::Failed {
                error: ClientError::SessionLost,
                ..
            })
        );
        assert_eq!(failed, !orphaned, "{client:?}");
        assert_eq!(p.result_of(&id).is_none(), orphaned, "{client:?}");
        if orphaned {
            assert!(
                p.client().poll_timeout().is_none(),
                "no deadline left to end it"
            );
        }
    }
}

#[test]
fn delete_on_close() {
    let mut p = ready();
    let sid = p.server_session().unwrap();
    {
        let now = p.now;
        p.client_mut().close(now)
    };
    p.pump();
    p.drive();
    assert!(p.server.session(&sid).is_none(), "DELETE ended the session");
    clean(&mut p);
}

#[test]
fn deadline_sends_cancelled_and_drops_the_late_response() {
    let mut p = manual(|c| c.client.request_timeout_ms = 1_000);
    let id = p.call("slow");
    p.drive();
    let server_id = p.server_pending[0].1.clone();
    p.advance(1_000);
    p.drive();
    assert!(matches!(
        p.result_of(&id),
        Some(ClientEvent::Failed {
            error: ClientError::Timeout,
            ..
        })
    ));
    p.server_respond(&server_id); // too late: the server knows it was cancelled
    p.drive();
    assert_eq!(
        p.client_events
            .iter()
            .filter(|e| matches!(e, ClientEvent::Response { .. }))
            .count(),
        0
    );
    clean(&mut p);
}

#[test]
fn background_get_is_disabled_by_405() {
    // A server without GET support is simulated by answering the GET head 405.
    let mut p = Pair::new(ServerPolicy::FIXED, ClientPolicy::FIXED);
    p.initialize();
    p.drive();
    let bg = p.client().exchanges().next().expect("background GET");
    let mut head = mcp_streamable::head::ResponseHead::new(405, Content::None);
    head.allow = true;
    {
        let now = p.now;
        p.client_mut().handle_response_head(bg, head, now)
    };
    {
        let now = p.now;
        p.client_mut().handle_http_closed(bg, now)
    };
    p.pump();
    assert!(p
        .client_events
        .iter()
        .any(|e| matches!(e, ClientEvent::BackgroundDisabled)));
    p.run(60_000);
    assert_eq!(p.client().exchanges().count(), 0, "never reopened");
}

/// An `initialize` whose SSE stream is cut after its priming event fails at
/// once with `StreamLost`: the session is not the client's until the answer
/// arrives, so there is nothing to resume it in, and a resumption timer
/// that did nothing would leave the caller waiting for its deadline (found
/// by the fleet world model, `models/fleet/world_call_resumed_elsewhere.json`).
#[test]
fn an_initialize_cut_after_its_priming_event_fails_at_once() {
    let mut p = Pair::with(PairConfig {
        server_auto_respond: false,
        ..PairConfig::default()
    });
    let init = p.initialize();
    p.drive();
    let (&ch, _) = p.links.iter().next().expect("the initialize exchange");
    assert!(
        p.client_events
            .iter()
            .all(|e| !matches!(e, ClientEvent::Initialized { .. })),
        "not answered yet"
    );
    p.drop_link(ch, true);
    assert!(
        matches!(
            p.result_of(&init),
            Some(ClientEvent::Failed {
                error: ClientError::StreamLost,
                ..
            })
        ),
        "{:?}",
        p.result_of(&init)
    );
    assert!(
        !matches!(
            p.client().poll_timeout(),
            Some((_, mcp_streamable::client::ClientTimer::Resume(_)))
        ),
        "no resumption left pending"
    );
}

/// A checker copies worlds by the million: a step that leaves the server
/// side alone leaves it shared with the world it came from (not copied, its
/// hash kept), and one that changes it does not.
#[test]
fn a_step_that_leaves_the_server_alone_keeps_it_shared() {
    use mcp_streamable_check::sim::{Delivery, Servers};
    let mut p = ready();
    p.call("echo");
    let (ch, request) = *p.deliverable().last().expect("the call in flight");
    assert!(request, "the call's request is what is in flight");
    let before = p.clone();
    assert!(p.deliver_request(ch));
    assert!(
        !std::ptr::eq(&*before.server, &*p.server),
        "the server took a request and stayed as it was"
    );
    let sh = p.links[&ch].server_http.expect("delivered");
    // The answer's head reaches the client alone.
    assert!(matches!(*p.links[&ch].to_client[0], Delivery::Head(_)));
    let before = p.clone();
    assert!(p.deliver_next(ch));
    assert!(
        std::ptr::eq(&*before.server, &*p.server),
        "a response head the client read copied the server"
    );
    // The answer: the client is done with the exchange and closes it, and
    // the server, which still routes it, hears so; a second close is
    // nothing to it.
    assert!(p.server.minds_http_closed(sh));
    let before = p.clone();
    while p.deliver_next(ch) {}
    assert!(!std::ptr::eq(&*before.server, &*p.server));
    assert!(
        !p.server.minds_http_closed(sh),
        "the route outlived the close"
    );
    clean(&mut p);
}

/// The world drives its server side only through `sim::Servers`, the seam
/// a fleet shares with one endpoint: under `Naming::ByExchange` each
/// exchange is named after the client's and each session is owned by the
/// client whose `initialize` opened it; a notify per client reaches that
/// client's sessions; what a session still holds is what the end-of-run
/// checks are told; and the server's timers are found, fired and, once
/// spent, leave it idle.
#[test]
fn the_world_drives_the_endpoint_through_the_servers_seam() {
    use mcp_streamable::policy::BackgroundGet;
    use mcp_streamable::server::ServerEndpoint;
    use mcp_streamable_check::sim::{Naming, Servers, LIST_CHANGED};
    let mut config = PairConfig {
        naming: Naming::ByExchange,
        ..PairConfig::default()
    };
    config.server.session.idle_timeout_ms = Some(60_000);
    config.client_policy.background_get = BackgroundGet::Off;
    let mut p = Pair::with(config);
    p.initialize();
    p.drive();
    let sid = p.server_session().expect("a session");
    assert!(p.links.len() >= 2, "initialize and initialized");
    for (ch, link) in &p.links {
        assert_eq!(link.server_http, Some(*ch), "named after the client's");
    }
    assert_eq!(p.session_owner.get(&sid), Some(&0));

    // No stream takes an unrelated message: the session holds it.
    assert_eq!(p.server_notify_sessions_of(0, LIST_CHANGED), 1);
    let held = <ServerEndpoint as Servers>::queued(&p.server);
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0].0, sid.to_string());

    assert!(
        !<ServerEndpoint as Servers>::is_idle(&p.server),
        "timers armed"
    );
    let first = <ServerEndpoint as Servers>::poll_timeout(&p.server).expect("a server timer");
    assert!(first > p.now);
    p.run(120_000);
    assert!(p.now >= first, "time stopped at {:?}", p.now);
    assert!(
        p.server.session(&sid).is_none_or(|s| s.is_ended()),
        "the idle session outlived its timeout"
    );
    assert!(
        <ServerEndpoint as Servers>::is_idle(&p.server),
        "a timer left"
    );
}
