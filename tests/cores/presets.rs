//! Each preset's signature behaviour, reproduced on the core and caught by the
//! monitor; FIXED in the same scenario stays clean.

use crate::common;

use crate::common::Harness;
use mcp_streamable::policy::ServerPolicy;
use mcp_streamable::server::{Cause, Content, EndReason};

fn ids(h: &Harness) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = h.violations().iter().map(|v| v.id).collect();
    v.dedup();
    v
}

/// Race A: the registration hook's `list_changed` waits in mcp-go's session
/// queue; the `notifications/initialized` POST's listener wakes after the
/// handler wrote 202 and writes the notification into the 202's body.
fn race_a(policy: ServerPolicy) -> Harness {
    let mut h = Harness::new(policy);
    h.initialize();
    h.notify("notifications/resources/list_changed", Cause::Unrelated); // registration hook
    let init = h.initialized();
    h.handler_step(init); // WriteHeader(202)
    h.listener_wake(init); // L1 picks S.ch
    h.handler_step(init); // handler returns
    h.finish();
    h
}

#[test]
fn mcp_go_0_44_registration_notification_lands_in_the_202_body() {
    let h = race_a(ServerPolicy::MCP_GO_0_44);
    let init = h.log.keys().nth(1).copied().unwrap();
    let log = &h.log[&init];
    assert_eq!(log.status, Some(202));
    assert_eq!(
        log.messages().len(),
        1,
        "the 202 carries the stale notification"
    );
    assert!(ids(&h).contains(&"A1"), "{:?}", h.violations());
}

#[test]
fn mcp_go_0_44_listener_first_turns_the_202_into_an_sse_200() {
    let mut h = Harness::new(ServerPolicy::MCP_GO_0_44);
    h.initialize();
    h.notify("notifications/resources/list_changed", Cause::Unrelated);
    let init = h.initialized();
    h.listener_wake(init); // 8a: before WriteHeader(202)
    h.handler_step(init);
    h.handler_step(init);
    assert_eq!(h.log[&init].status, Some(200));
    assert_eq!(h.log[&init].content, Some(Content::Sse));
    assert!(ids(&h).contains(&"A1"), "{:?}", h.violations());
}

#[test]
fn mcp_go_0_44_stale_notification_rides_the_next_requests_json_turned_sse() {
    let mut h = Harness::new(ServerPolicy::MCP_GO_0_44);
    h.initialize();
    h.notify("notifications/resources/list_changed", Cause::Unrelated);
    let init = h.initialized();
    h.handler_step(init);
    h.handler_step(init); // the 202 finished first; its listener loses the race
    let (post, id) = h.call();
    h.respond(&id); // the handler drains the queue into its own stream
    let msgs = h.log[&post].messages();
    assert_eq!(msgs.len(), 2);
    assert_eq!(
        msgs[0].method(),
        Some("notifications/resources/list_changed")
    );
    assert!(ids(&h).contains(&"A3"), "{:?}", h.violations());
}

#[test]
fn mcp_go_0_44_listener_after_done_dequeues_and_drops() {
    let mut h = Harness::new(ServerPolicy::MCP_GO_0_44);
    h.initialize();
    let init = h.initialized();
    h.handler_step(init);
    h.handler_step(init);
    h.notify("notifications/resources/list_changed", Cause::Unrelated);
    assert!(
        h.listener_wake(init),
        "the finished POST's listener takes it and loses it"
    );
    let g = h.get(None);
    h.finish();
    assert!(h.log[&g].messages().is_empty());
    assert!(ids(&h).contains(&"A5"), "{:?}", h.violations());
}

#[test]
fn toolhive_4075_removes_the_registration_source_but_not_the_queue_hole() {
    let mut h = race_a(ServerPolicy::TOOLHIVE_4075);
    assert!(
        !ids(&h).contains(&"A1"),
        "registration notification suppressed: {:?}",
        h.violations()
    );
    assert_eq!(h.dropped.len(), 1, "dropped by explicit policy");
    // Any later notify while nothing reads replays race A.
    let n = h.post(r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#);
    h.notify("notifications/tools/list_changed", Cause::Unrelated);
    h.handler_step(n);
    h.listener_wake(n);
    assert!(ids(&h).contains(&"A1"), "{:?}", h.violations());
}

#[test]
fn fixed_has_no_race_a_in_any_order() {
    let h = race_a(ServerPolicy::FIXED);
    assert!(h.violations().is_empty(), "{:?}", h.violations());
    let g = h.log.keys().last().copied().unwrap();
    assert_eq!(
        h.log[&g].messages().len(),
        1,
        "delivered on the standalone GET"
    );
}

#[test]
fn rmcp_0_16_second_get_ends_the_first() {
    let mut h = Harness::new(ServerPolicy::RMCP_0_16);
    h.initialize();
    h.initialized();
    let a = h.get(None);
    let b = h.get(None);
    assert_eq!(h.log[&a].end, Some(EndReason::Replaced));
    assert!(h.log[&b].is_open());
    assert!(ids(&h).contains(&"B1"), "{:?}", h.violations());
}

#[test]
fn rmcp_0_16_inclusive_replay_and_priming_collision() {
    let mut h = Harness::new(ServerPolicy::RMCP_0_16);
    h.initialize();
    h.initialized();
    let a = h.get(None);
    h.notify("notifications/tools/list_changed", Cause::Unrelated);
    assert_eq!(h.log[&a].last_id(), Some("0"), "first common event is id 0");
    // An EventSource reader of a finished POST stream reconnects with its
    // priming id "0", which names the common stream.
    let b = h.get(Some("0"));
    assert_eq!(h.log[&b].messages().len(), 1, "re-sends event 0 itself");
    let v = ids(&h);
    assert!(v.contains(&"R32"), "{v:?}");
    assert!(v.contains(&"B1"), "{v:?}");
}

#[test]
fn rmcp_0_16_answers_401_and_500() {
    let mut h = Harness::new(ServerPolicy::RMCP_0_16);
    h.initialize();
    h.initialized();
    let no_session = h.request(
        &mcp_streamable::server::RequestHead::post(None, None),
        br#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#,
    );
    assert_eq!(h.log[&no_session].status, Some(401));
    assert!(ids(&h).contains(&"B6"));
    let (post, id) = h.call();
    h.respond(&id);
    let last = h.log[&post].last_id().unwrap().to_owned();
    assert!(
        last.starts_with("0/"),
        "response: index 0 of a request-wise stream, got {last}"
    );
    let resume = h.get(Some(&last));
    assert_eq!(h.log[&resume].status, Some(500));
}

#[test]
fn rmcp_3_9_shadow_never_promoted_starves_the_reconnect() {
    let mut h = Harness::new(ServerPolicy::RMCP_3_9);
    h.initialize();
    h.initialized();
    let primary = h.get(None);
    h.notify("notifications/a", Cause::Unrelated);
    let last = h.log[&primary].last_id().unwrap().to_owned();
    h.client_drop(primary, false); // dead, but the server has not noticed
    h.notify("notifications/b", Cause::Unrelated); // into the dead primary
    let shadow = h.get(Some(&last));
    assert_eq!(h.log[&shadow].status, Some(200));
    assert!(
        h.log[&shadow].messages().is_empty(),
        "a shadow: never written"
    );
    h.notify("notifications/c", Cause::Unrelated); // still to the dead primary
    assert!(h.log[&shadow].messages().is_empty());
    // Give the model a bounded future: the client gives up on the shadow.
    h.client_drop(shadow, true);
    h.finish();
    let v = ids(&h);
    assert!(
        v.contains(&"A5") || v.contains(&"B4") || v.contains(&"B2"),
        "{v:?}"
    );
}

#[test]
fn rmcp_3_9_get_priming_collides_with_common_index_0() {
    let mut h = Harness::new(ServerPolicy::RMCP_3_9);
    h.initialize();
    h.initialized();
    let g = h.get(None);
    h.notify("notifications/a", Cause::Unrelated);
    let ids_seen: Vec<_> = h.log[&g].events.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(ids_seen, vec![Some("0".to_owned()), Some("0".to_owned())]);
    assert!(ids(&h).contains(&"R32"), "{:?}", h.violations());
}

#[test]
fn fixed_has_no_race_b() {
    let mut h = Harness::new(ServerPolicy::FIXED);
    h.initialize();
    h.initialized();
    let a = h.get(None);
    h.notify("notifications/a", Cause::Unrelated);
    let last = h.log[&a].last_id().unwrap().to_owned();
    h.client_drop(a, false);
    h.notify("notifications/b", Cause::Unrelated);
    let b = h.get(None); // a second reader
    let r = h.get(Some(&last)); // and a's resumption
    h.notify("notifications/c", Cause::Unrelated);
    assert!(h.log[&b].is_open() && h.log[&r].is_open());
    h.finish();
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

/// Race C, server side: the tool call's POST stream is closed for polling; a
/// late background GET (no Last-Event-ID) arrives and the mock puts the
/// response there.
fn race_c(policy: ServerPolicy) -> Harness {
    let mut h = Harness::new(policy);
    h.initialize();
    h.initialized();
    let (_post, id) = h.call();
    h.close_connection(&id);
    h.respond(&id);
    h.get(None); // the background GET
    h
}

#[test]
fn conformance_sse_retry_sends_the_response_on_the_background_get() {
    let h = race_c(ServerPolicy::CONFORMANCE_SSE_RETRY);
    let g = h.log.keys().last().copied().unwrap();
    assert!(h.log[&g].messages().iter().any(|m| m.is_response()));
    assert!(ids(&h).contains(&"C1"), "{:?}", h.violations());
}

#[test]
fn fixed_keeps_the_response_for_its_own_stream() {
    let mut h = race_c(ServerPolicy::FIXED);
    let g = h.log.keys().last().copied().unwrap();
    assert!(h.log[&g].messages().is_empty());
    h.finish(); // the client resumes the POST stream and gets it
    assert!(h.violations().is_empty(), "{:?}", h.violations());
    let got = h
        .log
        .values()
        .filter(|l| {
            l.messages()
                .iter()
                .any(|m| m.is_response() && m.id() == Some(&mcp_streamable::ids::RequestId::Num(2)))
        })
        .count();
    assert!(got >= 1);
}

#[test]
fn monitor_b5_bounds_gets_without_faults() {
    use mcp_streamable::server::{Method, RequestHead};
    use mcp_streamable_check::monitor::{Monitor, Observation};
    let mut m = Monitor::with_gets_max(2);
    for i in 0..3 {
        let head = RequestHead::new(Method::Get).with("mcp-session-id", "s");
        m.observe(&Observation::request(
            mcp_streamable::ids::HttpId(i),
            &head,
            b"",
        ));
    }
    assert_eq!(
        m.violations().iter().map(|v| v.id).collect::<Vec<_>>(),
        vec!["B5"]
    );
}

/// mcp-go's scheduling points, as the checker and the driver see them: a
/// notification POST offers its handler's steps until the handler returns, and
/// its listener's wake until the listener, finding the queue empty after the
/// handler returned, exits; then the exchange is gone and nothing is offered.
#[test]
fn mcp_go_0_44_offers_each_step_until_it_is_taken_and_a_retired_listener_leaves() {
    use mcp_streamable::preset::Scheduled;
    use mcp_streamable::preset::SchedulingPoint::{HandlerStep, ListenerWake};
    let mut h = Harness::new(ServerPolicy::MCP_GO_0_44);
    h.initialize();
    let n = h.initialized();
    let points = |h: &Harness| -> Vec<_> {
        let s = h.ep.session(h.session.as_ref().unwrap()).unwrap();
        s.scheduling_points()
            .into_iter()
            .filter(|(http, _)| *http == n)
            .map(|(_, p)| p)
            .collect()
    };
    assert_eq!(points(&h), [HandlerStep, ListenerWake], "running handler");
    assert!(h.handler_step(n)); // WriteHeader(202)
    assert_eq!(points(&h), [HandlerStep, ListenerWake]);
    assert!(h.handler_step(n)); // returns
    assert!(!h.handler_step(n), "a returned handler has no step left");
    assert_eq!(points(&h), [ListenerWake], "only the listener is left");
    assert!(h.listener_wake(n), "the listener sees it is done and exits");
    assert!(points(&h).is_empty(), "{:?}", points(&h));
    assert!(!h.listener_wake(n), "an exited listener never wakes again");
    let s = h.ep.session(h.session.as_ref().unwrap()).unwrap();
    assert!(
        s.exchanges().all(|http| http != n),
        "the ended exchange is forgotten with its listener"
    );
    h.finish();
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

/// mcp-go's session channel holds exactly its capacity; a send past it is
/// dropped silently (a non-blocking send on a full Go channel): no
/// `Dropped` event tells the application.
#[test]
fn mcp_go_0_44_shared_queue_holds_exactly_its_capacity_and_drops_the_next_silently() {
    let policy = ServerPolicy {
        session_queue: mcp_streamable::policy::SessionQueue::SharedCompeting { capacity: 3 },
        ..ServerPolicy::MCP_GO_0_44
    };
    let mut h = Harness::with(
        policy,
        mcp_streamable::version::ProtocolVersion::V2025_11_25,
        common::test_config(),
    );
    h.initialize();
    let queued = |h: &Harness| {
        h.ep.session(h.session.as_ref().unwrap())
            .unwrap()
            .queued_keys()
            .len()
    };
    for n in 1..=3 {
        h.notify("notifications/tools/list_changed", Cause::Unrelated);
        assert_eq!(queued(&h), n, "within the bound");
    }
    h.notify("notifications/tools/list_changed", Cause::Unrelated);
    assert_eq!(queued(&h), 3, "one past the bound: not queued");
    assert!(
        h.dropped.is_empty(),
        "and not reported: mcp-go drops silently"
    );
}

/// Keep-alive comments are for streams: mcp-go's notification POST, still
/// running after its 202 (an `Accepted` exchange), and its ended exchange
/// kept for the listener goroutine, set no keep-alive timer.
#[test]
fn mcp_go_0_44_running_notification_posts_set_no_keepalive_timer() {
    use mcp_streamable::server::SessionTimer;
    let mut config = common::test_config();
    config.session.keepalive_ms = Some(1_000);
    let mut h = Harness::with(
        ServerPolicy::MCP_GO_0_44,
        mcp_streamable::version::ProtocolVersion::V2025_11_25,
        config,
    );
    h.initialize();
    let n = h.initialized();
    let keepalive = |h: &Harness| {
        let s = h.ep.session(h.session.as_ref().unwrap()).unwrap();
        s.poll_timeout()
            .is_some_and(|(_, t)| t == SessionTimer::KeepAlive)
    };
    assert!(!keepalive(&h), "a running 202 handler is no stream");
    assert!(h.handler_step(n));
    assert!(h.handler_step(n)); // returned: ended, kept for its listener
    assert!(!keepalive(&h), "an ended exchange is no stream");
    let get = h.get(None);
    assert!(keepalive(&h), "an open GET is");
    h.client_drop(get, true);
    assert!(!keepalive(&h));
}

/// rmcp 3.9's shadow stream (a second plain GET while one is live) opens
/// with the literal priming id `0` and the retry, like rmcp's own.
#[test]
fn rmcp_3_9_shadow_stream_is_primed_with_the_literal_zero() {
    let mut h = Harness::new(ServerPolicy::RMCP_3_9);
    h.initialize();
    h.initialized();
    let _live = h.get(None);
    let shadow = h.get(None);
    assert_eq!(h.log[&shadow].status, Some(200));
    assert_eq!(
        h.log[&shadow].events.first().map(|e| e.0.as_deref()),
        Some(Some("0"))
    );
    assert!(h.log[&shadow].retry_ms.is_some());
}

/// rmcp replays a request's stream from the named event itself (B2): the
/// resumption re-sends the event its `Last-Event-ID` names.
#[test]
fn rmcp_3_9_resumption_of_a_request_stream_starts_at_the_named_event() {
    let mut h = Harness::new(ServerPolicy::RMCP_3_9);
    h.initialize();
    h.initialized();
    let (http, id) = h.call();
    assert!(h.notify("notifications/message", Cause::Request(id.clone())));
    assert!(h.notify("notifications/message", Cause::Request(id.clone())));
    let named = h.log[&http]
        .events
        .iter()
        .filter(|e| e.1.is_some())
        .map(|e| e.0.clone().expect("an id"))
        .next()
        .expect("the first message's id");
    h.client_drop(http, true);
    let r = h.get(Some(&named));
    assert_eq!(h.log[&r].status, Some(200));
    assert_eq!(
        h.log[&r].messages().len(),
        2,
        "the named event again, then the next"
    );
    assert!(h.violation_ids().contains("B2"), "{:?}", h.violations());
}

/// csharp-sdk before PR #1212 (and rust-mcp-sdk before PR #197): a
/// standalone GET's `200` goes out before its stream is wired to the
/// session. A notification sent in that window is dropped although the
/// client reads the GET (B4); once the `RegisterGet` point fires, the next
/// one reaches the GET. FIXED, in the same order of events, delivers both.
#[test]
fn csharp_before_1212_drops_what_comes_between_the_gets_200_and_its_wiring() {
    use common::{Scheduled, SchedulingPoint};
    let run = |policy: ServerPolicy| {
        let mut h = Harness::new(policy);
        h.initialize();
        h.initialized();
        let get = h.get(None);
        assert_eq!(
            h.log[&get].status,
            Some(200),
            "the client sees its 200 at once"
        );
        h.notify("notifications/tools/list_changed", Cause::Unrelated);
        let points = h.ep.scheduling_points();
        if policy == ServerPolicy::FIXED {
            assert!(points.is_empty(), "FIXED wires the GET with its head");
        } else {
            assert_eq!(points, [(get, SchedulingPoint::RegisterGet)]);
            assert!(h.schedule(get, SchedulingPoint::RegisterGet));
            assert!(h.ep.scheduling_points().is_empty(), "taken once");
        }
        h.notify("notifications/prompts/list_changed", Cause::Unrelated);
        h.finish();
        let got: Vec<String> = h.log[&get]
            .messages()
            .iter()
            .map(|m| match m {
                mcp_streamable::jsonrpc::Message::Notification { method, .. } => method.clone(),
                other => format!("{other:?}"),
            })
            .collect();
        (got, ids(&h))
    };
    let (got, violations) = run(ServerPolicy::FIXED);
    assert_eq!(
        got,
        [
            "notifications/tools/list_changed",
            "notifications/prompts/list_changed"
        ]
    );
    assert!(violations.is_empty(), "{violations:?}");
    let (got, violations) = run(ServerPolicy::CSHARP_BEFORE_1212);
    assert_eq!(
        got,
        ["notifications/prompts/list_changed"],
        "the first is lost"
    );
    assert_eq!(violations, ["B4"]);
}

/// rmcp 3.0's betas (#980): with JSON answers, the first message written
/// for a call became its JSON body, the exchange ended and the handler was
/// cancelled: the progress went out as the answer and the result was lost
/// (A2). FIXED turns the answer SSE once anything precedes the response.
#[test]
fn rmcp_2_2_answers_a_call_with_its_first_progress() {
    use mcp_streamable::jsonrpc::Message;
    use mcp_streamable::server::ResponseMode;
    let run = |policy: ServerPolicy| {
        let mut config = common::test_config();
        config.session.response_mode = ResponseMode::JsonWhenAlone;
        let mut h = Harness::with(
            policy,
            mcp_streamable::version::ProtocolVersion::V2025_11_25,
            config,
        );
        h.initialize();
        h.initialized();
        let (post, id) = h.call();
        h.notify("notifications/progress", Cause::Request(id.clone()));
        h.respond(&id);
        h.finish();
        let log = &h.log[&post];
        let answered = log
            .json
            .iter()
            .chain(log.messages())
            .any(|m| matches!(m, Message::Response { id: r, .. } if *r == id));
        (log.content, answered, ids(&h))
    };
    let (content, answered, violations) = run(ServerPolicy::FIXED);
    assert_eq!(content, Some(Content::Sse));
    assert!(answered, "the result reaches the client");
    assert!(violations.is_empty(), "{violations:?}");
    let (content, answered, violations) = run(ServerPolicy::RMCP_2_2);
    assert_eq!(content, Some(Content::Json));
    assert!(!answered, "the result is lost");
    assert_eq!(violations, ["A2"]);
}

/// python-sdk before 1.27.2 (CVE-2026-52869): with authentication on,
/// `Mcp-Session-Id` alone chose the session, so bob, who learned alice's
/// session id and an event id, posts into her session, reads her stream
/// and deletes it (I2). FIXED answers him 404 each time.
#[test]
fn python_1_27_1_serves_a_stolen_session_id() {
    let run = |policy| {
        let (mut h, event) = Harness::opened_by(policy, "alice");
        h.as_principal(Some("bob"));
        let (post, _) = h.call();
        let resume = h.get(Some(&event));
        let delete = h.delete();
        let statuses = [post, resume, delete].map(|x| h.log[&x].status.unwrap_or(0));
        let ids: Vec<&str> = h.violations().iter().map(|v| v.id).collect();
        (statuses, ids)
    };
    let (statuses, ids) = run(ServerPolicy::FIXED);
    assert_eq!(statuses, [404, 404, 404]);
    assert!(ids.is_empty(), "{ids:?}");
    let (statuses, ids) = run(ServerPolicy::PYTHON_1_27_1);
    assert_eq!(statuses, [200, 200, 200], "bob is served");
    // Each verb served, and the session's end by bob's DELETE (the core's
    // account of it names his exchange).
    assert_eq!(ids, ["I2", "I2", "I2", "I2"], "each verb is caught");
    let (mut h, _) = Harness::opened_by(ServerPolicy::PYTHON_1_27_1, "alice");
    h.as_principal(Some("bob"));
    h.delete();
    let details: Vec<&str> = h.violations().iter().map(|v| v.detail.as_str()).collect();
    assert!(
        details
            .iter()
            .any(|d| d.contains("ended by another principal's DELETE")),
        "{details:?}"
    );
}

/// The TypeScript SDK's server (1.32.2, 2.4.0; mcp-ts-core #401): a call
/// the client cancels is never answered, and the POST that waits for its
/// answer never ends (L4, judged once nothing more can happen). FIXED
/// settles the cancelled request as an answer would: the stream ends. The
/// application's late answer is dropped either way.
#[test]
fn ts_sdk_1_32_leaves_a_cancelled_calls_post_open() {
    let run = |policy: ServerPolicy| {
        let mut h = Harness::new(policy);
        h.initialize();
        h.initialized();
        let (post, id) = h.call();
        h.notify("notifications/progress", Cause::Request(id.clone()));
        h.post(&format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#
        ));
        h.respond(&id);
        h.finish();
        let end = h.log[&post].end;
        (end, h.dropped.len(), h.mon.held_open(), ids(&h))
    };
    let (end, dropped, held, violations) = run(ServerPolicy::FIXED);
    assert_eq!(end, Some(EndReason::Complete));
    assert_eq!(dropped, 1, "the late answer, dropped visibly");
    assert!(held.is_empty(), "{held:?}");
    assert!(violations.is_empty(), "{violations:?}");
    let (end, dropped, held, violations) = run(ServerPolicy::TS_SDK_1_32);
    assert_eq!(end, None, "the POST is never ended");
    assert_eq!(dropped, 1, "the late answer, dropped as under FIXED");
    assert_eq!(held.len(), 1, "one stream held open for nothing");
    assert!(violations.is_empty(), "{violations:?}");
}
