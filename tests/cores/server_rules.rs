//! The server endpoint's status codes and the FIXED session's flows, each
//! watched by the monitor (which must stay silent).

use crate::common;

use crate::common::Harness;
use mcp_streamable::headers;
use mcp_streamable::ids::RequestId;
use mcp_streamable::jsonrpc::Message;
use mcp_streamable::policy::ServerPolicy;
use mcp_streamable::principal::Caller;
use mcp_streamable::server::{Cause, Content, EndReason, Method, RequestHead, SessionTimer};
use mcp_streamable::version::ProtocolVersion;

const PING: &str = r#"{"jsonrpc":"2.0","id":99,"method":"ping"}"#;

fn ready() -> Harness {
    let mut h = Harness::new(ServerPolicy::FIXED);
    h.initialize();
    h.initialized();
    h
}

/// A FIXED session of `version`, initialized.
fn ready_at(version: ProtocolVersion) -> Harness {
    let mut h = Harness::with(ServerPolicy::FIXED, version, common::test_config());
    h.initialize();
    h.initialized();
    h
}

/// A FIXED 2025-11-25 session under `config`, initialized.
fn ready_with(config: mcp_streamable::server::EndpointConfig) -> Harness {
    let mut h = Harness::with(ServerPolicy::FIXED, ProtocolVersion::V2025_11_25, config);
    h.initialize();
    h.initialized();
    h
}

/// The tests' endpoint configuration with calls answered in JSON when the
/// answer is alone (`ResponseMode::JsonWhenAlone`).
fn json_config() -> mcp_streamable::server::EndpointConfig {
    let mut config = common::test_config();
    config.session.response_mode = mcp_streamable::server::ResponseMode::JsonWhenAlone;
    config
}

fn status(h: &Harness, http: mcp_streamable::ids::HttpId) -> u16 {
    h.log[&http].status.expect("a head")
}

fn error_code(h: &Harness, http: mcp_streamable::ids::HttpId) -> i64 {
    match h.log[&http].json.first() {
        Some(Message::Error { error, .. }) => error.code,
        other => panic!("expected a JSON-RPC error body, got {other:?}"),
    }
}

#[test]
fn initialize_mints_a_visible_ascii_128_bit_session_id() {
    let mut h = Harness::new(ServerPolicy::FIXED);
    let http = h.initialize();
    let sid = h
        .session
        .clone()
        .expect("session id on the initialize response");
    assert_eq!(sid.as_str().len(), 32);
    assert!(sid.as_str().bytes().all(|b| (0x21..=0x7e).contains(&b)));
    assert_eq!(status(&h, http), 200);
    let response = h.log[&http].messages()[0].clone();
    let Message::Response { result, .. } = response else {
        panic!("not a response")
    };
    assert_eq!(result.to_value()["protocolVersion"], "2025-11-25");
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

#[test]
fn same_seed_same_session_ids() {
    let mut a = Harness::new(ServerPolicy::FIXED);
    let mut b = Harness::new(ServerPolicy::FIXED);
    a.initialize();
    b.initialize();
    assert_eq!(a.session, b.session);
}

#[test]
fn missing_session_is_400_unknown_is_404_never_401() {
    let mut h = ready();
    let no_session = h.request(
        &RequestHead::post(None, Some(ProtocolVersion::V2025_11_25)),
        PING.as_bytes(),
    );
    assert_eq!(status(&h, no_session), 400);
    let unknown: mcp_streamable::ids::SessionId = "deadbeef".parse().unwrap();
    let bad = h.request(&RequestHead::post(Some(&unknown), None), PING.as_bytes());
    assert_eq!(status(&h, bad), 404);
    let get = h.request(
        &RequestHead::get(&unknown, ProtocolVersion::V2025_11_25, None),
        b"",
    );
    assert_eq!(status(&h, get), 404);
    let get_none = h.request(
        &RequestHead::new(Method::Get).with(headers::ACCEPT, headers::MIME_SSE),
        b"",
    );
    assert_eq!(status(&h, get_none), 400);
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

#[test]
fn method_accept_content_type_size_version_origin() {
    let mut h = ready();
    let sid = h.session.clone().unwrap();
    let put = h.request(&RequestHead::new(Method::parse("PUT")), b"");
    assert_eq!(status(&h, put), 405);
    let json_only = RequestHead::new(Method::Post)
        .with(headers::CONTENT_TYPE, headers::MIME_JSON)
        .with(headers::ACCEPT, headers::MIME_JSON)
        .with(headers::MCP_SESSION_ID, sid.as_str());
    let h406 = h.request(&json_only, PING.as_bytes());
    assert_eq!(status(&h, h406), 406);
    let get_json = RequestHead::new(Method::Get)
        .with(headers::ACCEPT, headers::MIME_JSON)
        .with(headers::MCP_SESSION_ID, sid.as_str());
    let g406 = h.request(&get_json, b"");
    assert_eq!(status(&h, g406), 406);
    let text = RequestHead::new(Method::Post)
        .with(headers::CONTENT_TYPE, "text/plain")
        .with(headers::ACCEPT, "application/json, text/event-stream")
        .with(headers::MCP_SESSION_ID, sid.as_str());
    let h415 = h.request(&text, PING.as_bytes());
    assert_eq!(status(&h, h415), 415);
    let big = vec![b' '; (4 << 20) + 1];
    let h413 = h.request(&RequestHead::post(Some(&sid), None), &big);
    assert_eq!(status(&h, h413), 413);
    let bad_version =
        RequestHead::post(Some(&sid), None).with(headers::MCP_PROTOCOL_VERSION, "1999-01-01");
    let h400 = h.request(&bad_version, PING.as_bytes());
    assert_eq!(status(&h, h400), 400);
    let evil = RequestHead::post(Some(&sid), None).with(headers::ORIGIN, "http://evil.example.com");
    let h403 = h.request(&evil, PING.as_bytes());
    assert_eq!(status(&h, h403), 403);
    assert_eq!(
        error_code(&h, h403),
        mcp_streamable::jsonrpc::TRANSPORT_ERROR
    );
    let evil_host = RequestHead::post(Some(&sid), None).with(headers::HOST, "evil.example.com:80");
    let host403 = h.request(&evil_host, PING.as_bytes());
    assert_eq!(status(&h, host403), 403);
}

#[test]
fn parse_errors_are_typed_and_batches_follow_the_version() {
    let mut h = ready();
    let not_json = h.post("{nope");
    assert_eq!(status(&h, not_json), 400);
    assert_eq!(error_code(&h, not_json), -32700);
    let null_id = h.post(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#);
    assert_eq!(error_code(&h, null_id), -32600);
    let batch = h.post(r#"[{"jsonrpc":"2.0","id":7,"method":"ping"}]"#);
    assert_eq!(status(&h, batch), 400, "2025-11-25 rejects batches");

    let mut old = Harness::with(
        ServerPolicy::FIXED,
        ProtocolVersion::V2025_03_26,
        common::test_config(),
    );
    old.initialize();
    old.initialized();
    let batch = old.post(r#"[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"}]"#);
    assert_eq!(status(&old, batch), 200, "2025-03-26 accepts batches");
    old.respond(&RequestId::Num(7));
    assert_eq!(old.log[&batch].messages().len(), 1);
    assert!(old.violations().is_empty(), "{:?}", old.violations());
}

#[test]
fn initialize_twice_or_in_a_batch_is_400() {
    let mut h = ready();
    let again = h.post(r#"{"jsonrpc":"2.0","id":50,"method":"initialize","params":{}}"#);
    assert_eq!(status(&h, again), 400);
    let batch = h.request(
        &RequestHead::post(None, Some(ProtocolVersion::V2025_03_26)),
        br#"[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}]"#,
    );
    assert_eq!(status(&h, batch), 400);
}

#[test]
fn server_discover_gets_an_error_so_clients_fall_back_to_initialize() {
    let mut h = Harness::new(ServerPolicy::FIXED);
    let http = h.request(
        &RequestHead::post(None, None),
        br#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#,
    );
    assert_eq!(status(&h, http), 400);
    assert_eq!(error_code(&h, http), -32601);
    assert!(
        h.ep.session_ids().next().is_none(),
        "no session for a probe"
    );
}

#[test]
fn notification_post_gets_202_and_an_empty_body_at_once() {
    let mut h = Harness::new(ServerPolicy::FIXED);
    h.initialize();
    let http = h.initialized();
    let log = &h.log[&http];
    assert_eq!(log.status, Some(202));
    assert_eq!(log.content, Some(Content::None));
    assert!(log.events.is_empty() && log.json.is_empty());
    assert_eq!(log.end, Some(EndReason::Complete));
}

#[test]
fn request_stream_primes_then_carries_progress_then_the_response_last() {
    let mut h = ready();
    let (http, id) = h.call();
    assert!(h.notify("notifications/progress", Cause::Request(id.clone())));
    h.respond(&id);
    let log = &h.log[&http];
    assert_eq!(log.content, Some(Content::Sse));
    assert_eq!(log.retry_ms, Some(1000));
    assert!(log.events[0].1.is_none(), "priming first");
    let msgs = log.messages();
    assert_eq!(msgs.len(), 2);
    assert!(msgs[1].is_response());
    assert_eq!(log.end, Some(EndReason::Complete));
    // Nothing for a request after its response.
    assert!(!h.notify("notifications/progress", Cause::Request(id)));
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

#[test]
fn no_priming_before_2025_11_25() {
    let mut h = Harness::with(
        ServerPolicy::FIXED,
        ProtocolVersion::V2025_06_18,
        common::test_config(),
    );
    h.initialize();
    h.initialized();
    let (http, id) = h.call();
    h.respond(&id);
    assert!(h.log[&http].events.iter().all(|(_, m)| m.is_some()));
    assert_eq!(h.log[&http].retry_ms, None);
}

#[test]
fn json_mode_commits_once() {
    let mut h = ready_with(json_config());
    let (plain, id) = h.call();
    h.respond(&id);
    assert_eq!(h.log[&plain].content, Some(Content::Json));
    assert_eq!(h.log[&plain].json.len(), 1);
    let (streamed, id) = h.call();
    assert!(
        h.notify("notifications/progress", Cause::Request(id.clone())),
        "{:?}",
        h.log[&streamed]
    );
    h.respond(&id);
    assert_eq!(h.log[&streamed].content, Some(Content::Sse));
    assert_eq!(h.log[&streamed].messages().len(), 2);
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

#[test]
fn unrelated_notifications_go_to_exactly_one_standalone_stream_and_wait_for_one() {
    let mut h = ready();
    assert!(h.notify("notifications/tools/list_changed", Cause::Unrelated));
    let (post, id) = h.call();
    assert!(h.log[&post].messages().is_empty(), "never on a POST stream");
    let g1 = h.get(None);
    assert_eq!(h.log[&g1].messages().len(), 1, "held until a GET attached");
    let g2 = h.get(None);
    assert!(h.log[&g1].is_open(), "a second GET does not end the first");
    h.notify("notifications/resources/list_changed", Cause::Unrelated);
    let total = h.log[&g1].messages().len() + h.log[&g2].messages().len();
    assert_eq!(total, 2, "exactly one stream per message");
    h.respond(&id);
    h.finish();
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

#[test]
fn registration_notifications_are_held_until_initialized() {
    let mut h = Harness::new(ServerPolicy::FIXED);
    h.initialize();
    h.notify("notifications/resources/list_changed", Cause::Unrelated);
    let g = h.get(None);
    assert!(
        h.log[&g].messages().is_empty(),
        "not before notifications/initialized"
    );
    let init = h.initialized();
    assert!(h.log[&init].events.is_empty());
    assert_eq!(h.log[&g].messages().len(), 1);
    h.finish();
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

#[test]
fn polling_close_then_resume_replays_strictly_after_and_only_that_stream() {
    let mut h = ready();
    let (post, id) = h.call();
    h.notify("notifications/progress", Cause::Request(id.clone()));
    h.close_connection(&id);
    assert_eq!(h.log[&post].end, Some(EndReason::Polling));
    h.notify("notifications/message", Cause::Request(id.clone()));
    h.respond(&id);
    let last = h.log[&post].last_id().unwrap().to_owned();
    let resume = h.get(Some(&last));
    let msgs = h.log[&resume].messages();
    assert_eq!(
        msgs.len(),
        2,
        "the message and the response buffered after {last}"
    );
    assert!(msgs[1].is_response());
    assert_eq!(h.log[&resume].end, Some(EndReason::Complete));
    // Resuming the finished stream once more: nothing follows, so 204 (EventSource stops).
    let again_from = h.log[&resume].last_id().unwrap().to_owned();
    let again = h.get(Some(&again_from));
    assert_eq!(h.log[&again].status, Some(204));
    h.finish();
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

#[test]
fn resume_takes_over_only_its_own_stream() {
    let mut h = ready();
    let g1 = h.get(None);
    let g2 = h.get(None);
    h.notify("notifications/a", Cause::Unrelated);
    let first = h.log[&g1].last_id().unwrap().to_owned();
    h.client_drop(g1, false); // the server has not noticed yet
    h.notify("notifications/b", Cause::Unrelated); // goes to g1: lost unless resumed
    let r = h.get(Some(&first));
    assert!(h.log[&g2].is_open(), "g2 untouched");
    assert!(h.log[&r]
        .messages()
        .iter()
        .any(|m| m.method() == Some("notifications/b")));
    h.finish();
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

/// A resumed stream's events go out in the order of their ids, so that a
/// client that reads any part of it and loses the connection again resumes
/// from the last id it read and misses nothing: with two messages written
/// on a GET the server did not know was dead, every prefix of the
/// resumption, resumed again, delivers all the rest.
#[test]
fn a_resumption_read_in_part_and_resumed_again_loses_nothing() {
    for read in 0..4 {
        let mut h = ready();
        let g = h.get(None);
        let cursor = h.log[&g].last_id().expect("a priming id").to_owned();
        h.client_drop(g, false);
        h.notify("notifications/a", Cause::Unrelated);
        h.notify("notifications/b", Cause::Unrelated);
        let r = h.get(Some(&cursor));
        let events = h.log[&r].events.clone();
        assert!(events.len() >= 2, "{events:?}");
        // The client reads `read` events, then the connection drops.
        let seen = &events[..read.min(events.len())];
        let mut got: Vec<String> = seen
            .iter()
            .filter_map(|(_, m)| m.as_ref().and_then(|m| m.method()).map(str::to_owned))
            .collect();
        let from = seen
            .iter()
            .rev()
            .find_map(|(id, _)| id.clone())
            .unwrap_or_else(|| cursor.clone());
        h.client_drop(r, true);
        let again = h.get(Some(&from));
        got.extend(
            h.log[&again]
                .messages()
                .iter()
                .filter_map(|m| m.method().map(str::to_owned)),
        );
        h.finish();
        assert!(h.violations().is_empty(), "{:?}", h.violations());
        assert_eq!(
            got,
            ["notifications/a", "notifications/b"],
            "read {read} of {events:?}, then resumed from {from}"
        );
    }
}

#[test]
fn unknown_expired_and_foreign_event_ids_get_400_and_replay_nothing() {
    let mut h = ready();
    for bad in ["garbage", "00000000-1-1", "zz-1-1"] {
        let g = h.get(Some(bad));
        assert_eq!(h.log[&g].status, Some(400), "{bad}");
        assert!(h.log[&g].events.is_empty());
    }
    // An id from another session names nothing here.
    let mut other = ready();
    let g = other.get(None);
    other.notify("notifications/x", Cause::Unrelated);
    let foreign = other.log[&g].last_id().unwrap().to_owned();
    let r = h.get(Some(&foreign));
    assert_eq!(h.log[&r].status, Some(400));
    // Expired: a tiny replay buffer evicts the cursor.
    let mut config = common::test_config();
    config.session.events_max = 2;
    let mut small = Harness::with(ServerPolicy::FIXED, ProtocolVersion::V2025_11_25, config);
    small.initialize();
    small.initialized();
    let g = small.get(None);
    small.notify("notifications/1", Cause::Unrelated);
    let old = small.log[&g].last_id().unwrap().to_owned();
    for i in 2..6 {
        small.notify(&format!("notifications/{i}"), Cause::Unrelated);
    }
    let r = small.get(Some(&old));
    assert_eq!(small.log[&r].status, Some(400));
}

/// The core says why a session ended, to its application and, through the
/// shared drain, to the observer: the DELETE's exchange when one ended it,
/// none when the server did (I2 tells the two apart).
#[test]
fn a_sessions_end_names_the_delete_that_caused_it() {
    use mcp_streamable::observe::Observation;
    use mcp_streamable::server::{ServerEvent, ServerOutput};
    fn ends(h: &mut Harness) -> (Vec<Option<mcp_streamable::ids::HttpId>>, usize) {
        let (mut told, mut observed) = (Vec::new(), 0);
        h.ep.drain_observed(
            &mut |o| observed += matches!(o, Observation::SessionEnded { .. }) as usize,
            |_, out, _| {
                if let ServerOutput::Event(_, ServerEvent::SessionEnded { deleted_by }) = out {
                    told.push(deleted_by);
                }
            },
        );
        (told, observed)
    }
    let mut h = ready();
    let sid = h.session.clone().expect("a session");
    let d =
        h.ep.handle_request_from(&RequestHead::delete(&sid), b"", &Caller::default(), h.now)
            .http;
    assert_eq!(ends(&mut h), (vec![Some(d)], 1));
    let mut h = ready();
    let sid = h.session.clone().expect("a session");
    h.ep.session_mut(&sid).expect("live").close(h.now);
    assert_eq!(ends(&mut h), (vec![None], 1));
}

#[test]
fn delete_ends_the_session_and_its_streams() {
    let mut h = ready();
    let g = h.get(None);
    let d = h.delete();
    assert_eq!(h.log[&d].status, Some(200));
    assert_eq!(h.log[&g].end, Some(EndReason::SessionEnded));
    let after = h.post(PING);
    assert_eq!(h.log[&after].status, Some(404));
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

#[test]
fn cancelled_request_gets_no_response() {
    let mut h = ready();
    let (post, id) = h.call();
    h.post(&format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#
    ));
    assert_eq!(h.log[&post].end, Some(EndReason::Complete));
    h.respond(&id);
    assert!(h.log[&post].messages().is_empty());
    assert_eq!(
        h.dropped.len(),
        1,
        "the late response is dropped by policy, visibly"
    );
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

#[test]
fn idle_session_expires_then_404() {
    let mut config = common::test_config();
    config.session.idle_timeout_ms = Some(1_000);
    let mut h = ready_with(config);
    h.advance(999);
    assert!(h.ep.session(h.session.as_ref().unwrap()).is_some());
    h.advance(2);
    let after = h.post(PING);
    assert_eq!(h.log[&after].status, Some(404));
}

#[test]
fn held_messages_are_bounded_and_expire_visibly() {
    let mut config = common::test_config();
    config.session.held_max = 2;
    config.session.held_ttl_ms = 500;
    let mut h = ready_with(config);
    for i in 0..3 {
        h.notify(&format!("notifications/{i}"), Cause::Unrelated);
    }
    assert_eq!(h.dropped.len(), 1, "held_max");
    h.advance(600);
    assert_eq!(h.dropped.len(), 3, "held_ttl_ms");
    h.finish();
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

/// `held_ttl_ms` at its boundary: a held message goes exactly at its own
/// deadline, not a millisecond before, and a later one stays until its own.
#[test]
fn each_held_message_expires_exactly_at_its_own_deadline() {
    let mut config = common::test_config();
    config.session.held_ttl_ms = 500;
    let mut h = ready_with(config);
    h.notify("notifications/first", Cause::Unrelated);
    h.advance(300);
    h.notify("notifications/second", Cause::Unrelated);
    h.advance(199);
    assert!(h.dropped.is_empty(), "both within held_ttl_ms");
    h.advance(1);
    assert_eq!(
        h.dropped.len(),
        1,
        "the first at its deadline, the second kept"
    );
    h.advance(299);
    assert_eq!(h.dropped.len(), 1, "the second within its own");
    h.advance(1);
    assert_eq!(h.dropped.len(), 2, "the second at its deadline");
}

/// `held_bytes_max` at its boundary: held messages that add up to exactly
/// the bound are all kept; one byte more and the oldest goes.
#[test]
fn held_bytes_max_keeps_exactly_the_bound() {
    let one = mcp_streamable::jsonrpc::Message::Notification {
        method: "notifications/a".into(),
        params: None,
    }
    .approx_len();
    let mut config = common::test_config();
    config.session.held_bytes_max = 2 * one;
    let mut h = ready_with(config);
    h.notify("notifications/a", Cause::Unrelated);
    h.notify("notifications/b", Cause::Unrelated);
    assert!(h.dropped.is_empty(), "two messages of exactly the bound");
    h.notify("notifications/c", Cause::Unrelated);
    assert_eq!(h.dropped.len(), 1, "past the bound the oldest goes");
}

#[test]
fn in_flight_bound_is_429_at_one_past_the_limit_and_frees_up() {
    let mut config = common::test_config();
    config.session.in_flight_max = 2;
    let mut h = ready_with(config);
    let (a, id_a) = h.call();
    let (b, _) = h.call();
    assert!(
        h.log[&a].is_open() && h.log[&b].is_open(),
        "at the bound: accepted"
    );
    let (c, _) = h.call();
    assert_eq!(status(&h, c), 429, "one past the bound");
    assert_eq!(error_code(&h, c), -32000);
    assert!(h.log[&c].json[0].to_json().contains("in flight"));
    h.respond(&id_a);
    let (d, _) = h.call();
    assert_ne!(h.log[&d].status, Some(429), "a slot freed by an answer");
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

#[test]
fn a_later_request_reusing_the_initialize_id_is_not_stamped() {
    let mut h = ready();
    // The harness's initialize used id 1.
    let http = h.post(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    h.respond(&RequestId::Num(1));
    let Some(Message::Response { result, .. }) = h.log[&http].messages().last().cloned().cloned()
    else {
        panic!("a response: {:?}", h.log[&http]);
    };
    assert_eq!(result.to_value(), serde_json::json!({}));
}

/// `initialize` is never cancelled (R50) while it is served; once it is
/// answered its id names nothing, and a later request reusing it can be.
#[test]
fn a_cancellation_names_the_initialize_only_while_it_is_served() {
    let mut h = Harness::new(ServerPolicy::FIXED);
    let init = h.next_id();
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{init},"method":"initialize","params":{{"protocolVersion":"{}","capabilities":{{}},"clientInfo":{{"name":"t","version":"0"}}}}}}"#,
        ProtocolVersion::V2025_11_25
    );
    let first = h.request(&RequestHead::post(None, None), body.as_bytes());
    h.session = h.ep.route(first).cloned();
    let cancel = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{init}}}}}"#
    );
    h.post(&cancel);
    h.respond(&init);
    let Some(Message::Response { result, .. }) = h.log[&first].messages().last().cloned().cloned()
    else {
        panic!("the initialize answer: {:?}", h.log[&first]);
    };
    assert!(
        result.to_value().get("protocolVersion").is_some(),
        "answered and stamped: {result:?}"
    );
    h.initialized();
    // The same id, reused by a call after the handshake, is cancellable.
    let reused = h.post(&format!(
        r#"{{"jsonrpc":"2.0","id":{init},"method":"ping"}}"#
    ));
    h.post(&cancel);
    h.respond(&init);
    assert!(
        h.log[&reused].messages().iter().all(|m| !m.is_response()),
        "{:?}",
        h.log[&reused]
    );
    assert_eq!(h.dropped.len(), 1, "its late response dropped, visibly");
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

#[test]
fn a_session_that_never_sends_initialized_expires_at_the_init_timeout() {
    let mut config = common::test_config();
    config.session.init_timeout_ms = Some(1_000);
    config.session.idle_timeout_ms = None;
    let mut h = Harness::with(ServerPolicy::FIXED, ProtocolVersion::V2025_11_25, config);
    h.initialize();
    let half = h.session.clone().unwrap();
    h.advance(999);
    assert!(h.ep.session(&half).is_some(), "below the bound: kept");
    h.advance(1);
    assert!(h.ep.session(&half).is_none(), "at the bound: ended");
    let after = h.post(PING);
    assert_eq!(status(&h, after), 404);
    // An initialized session is not touched by it.
    h.initialize();
    h.initialized();
    let full = h.session.clone().unwrap();
    h.advance(5_000);
    assert!(h.ep.session(&full).is_some());
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

#[test]
fn a_full_table_evicts_half_open_then_idle_sessions_and_refuses_only_when_all_are_busy() {
    let mut config = common::test_config();
    config.sessions_max = 2;
    let mut h = ready_with(config);
    let a = h.session.clone().unwrap();
    h.advance(10);
    h.initialize();
    let half = h.session.clone().unwrap();
    h.advance(10);
    // Full: the half-open one goes, not the initialized one.
    h.initialize();
    h.initialized();
    let c = h.session.clone().unwrap();
    assert!(
        h.ep.session(&half).is_none(),
        "the half-open session was evicted"
    );
    assert!(h.ep.session(&a).is_some() && h.ep.session(&c).is_some());
    // Both initialized and idle: the longest idle (a) goes.
    h.advance(10);
    h.initialize();
    assert!(h.ep.session(&a).is_none(), "the longest idle was evicted");
    assert!(h.ep.session(&c).is_some());
    let d = h.session.clone().unwrap();
    h.initialized();
    // Both busy (a GET each): 503, nobody evicted.
    h.session = Some(c.clone());
    h.get(None);
    h.session = Some(d.clone());
    h.get(None);
    let body = r#"{"jsonrpc":"2.0","id":77,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#;
    let refused = h.request(&RequestHead::post(None, None), body.as_bytes());
    assert_eq!(status(&h, refused), 503);
    assert!(h.ep.session(&c).is_some() && h.ep.session(&d).is_some());
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

#[test]
fn the_per_peer_quota_counts_by_address() {
    let mut config = common::test_config();
    config.sessions_per_peer_max = Some(1);
    let mut h = Harness::with(ServerPolicy::FIXED, ProtocolVersion::V2025_11_25, config);
    let p: std::net::IpAddr = "192.0.2.1".parse().unwrap();
    let q: std::net::IpAddr = "192.0.2.2".parse().unwrap();
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#;
    let head = RequestHead::post(None, None);
    let first =
        h.ep.handle_request_from(&head, body, &Caller::from_peer(Some(p)), h.now);
    assert!(first.outcome.is_ok());
    let sid = first.session.unwrap();
    h.ep.session_mut(&sid)
        .unwrap()
        .respond(
            &RequestId::Num(1),
            Ok(mcp_streamable::jsonrpc::RawJson::empty_object()),
            h.now,
        )
        .unwrap();
    let init = RequestHead::post(Some(&sid), Some(ProtocolVersion::V2025_11_25));
    h.ep.handle_request_from(
        &init,
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        &Caller::from_peer(Some(p)),
        h.now,
    );
    h.drain();
    let second =
        h.ep.handle_request_from(&head, body, &Caller::from_peer(Some(p)), h.now);
    assert_eq!(second.outcome.as_ref().map_err(|e| e.status()), Err(429));
    let other =
        h.ep.handle_request_from(&head, body, &Caller::from_peer(Some(q)), h.now);
    assert!(other.outcome.is_ok(), "another address is not counted");
}

/// `streams_max` detached streams stay resumable; one more and the oldest is
/// forgotten (its cursor gets 400), the newest are kept.
#[test]
fn streams_max_forgets_the_oldest_detached_stream_past_the_bound() {
    let mut config = common::test_config();
    config.session.streams_max = 2;
    let mut h = ready_with(config);
    let mut cursors = Vec::new();
    for _ in 0..2 {
        let get = h.get(None);
        cursors.push(h.log[&get].last_id().expect("a priming id").to_owned());
        h.client_drop(get, true);
    }
    // At the bound: both resumable.
    for c in &cursors {
        let r = h.get(Some(c));
        assert_eq!(status(&h, r), 200, "{c}");
        h.client_drop(r, true);
    }
    // One past it: the oldest goes.
    let get = h.get(None);
    cursors.push(h.log[&get].last_id().unwrap().to_owned());
    h.client_drop(get, true);
    let oldest = h.get(Some(&cursors[0]));
    assert_eq!(
        status(&h, oldest),
        400,
        "the oldest detached stream was forgotten"
    );
    for c in &cursors[1..] {
        let r = h.get(Some(c));
        assert_eq!(status(&h, r), 200, "{c} kept");
        h.client_drop(r, true);
    }
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

/// A POST stream that finished stays replayable until `streams_max` evicts
/// it (then 400), also one that finished on a connection the server took
/// for live: that connection may have died unnoticed with the response.
#[test]
fn finished_request_streams_are_forgotten_past_streams_max() {
    finished_request_streams_with(1);
    finished_request_streams_with(2);
}

fn finished_request_streams_with(streams_max: usize) {
    let mut config = common::test_config();
    config.session.streams_max = streams_max;
    let mut h = ready_with(config);
    let first = |h: &Harness, http| h.log[&http].events[0].0.clone().expect("priming id");
    // Finished on a connection that died unnoticed: kept, the response
    // replayed; resumed at its last id, nothing follows (204, which stops
    // an EventSource reader).
    let (live, id) = h.call();
    h.client_drop(live, false);
    h.respond(&id);
    let cursor_live = first(&h, live);
    let r = h.get(Some(&cursor_live));
    assert_eq!(status(&h, r), 200, "kept for its resumption");
    assert!(h.log[&r].messages().iter().any(|m| m.is_response()));
    let last = h.log[&r].last_id().expect("the replay's ids").to_owned();
    let again = h.get(Some(&last));
    assert_eq!(status(&h, again), 204, "nothing follows the last id");
    // Finished while detached: kept for its resumption.
    let (a, id_a) = h.call();
    h.client_drop(a, true);
    h.respond(&id_a);
    let cursor_a = first(&h, a);
    let r = h.get(Some(&cursor_a));
    assert_eq!(status(&h, r), 200, "within the bound: replayable");
    assert!(h.log[&r].messages().iter().any(|m| m.is_response()));
    let (b, id_b) = h.call();
    h.client_drop(b, true);
    h.respond(&id_b);
    let gone = h.get(Some(&cursor_a));
    if streams_max == 1 {
        assert_eq!(status(&h, gone), 400, "past the bound: forgotten");
    } else {
        assert_eq!(status(&h, gone), 200, "at the bound: still kept");
    }
    let kept = h.get(Some(&first(&h, b)));
    assert_eq!(status(&h, kept), 200);
}

#[test]
fn keepalive_comments_go_out_at_the_interval_on_open_streams_only() {
    let mut config = common::test_config();
    config.session.keepalive_ms = Some(1_000);
    let mut h = ready_with(config);
    let get = h.get(None);
    h.advance(999);
    assert_eq!(h.log[&get].comments, 0, "not before the interval");
    h.advance(1);
    assert_eq!(h.log[&get].comments, 1, "at the interval");
    h.advance(1_000);
    assert_eq!(h.log[&get].comments, 2, "and again");
    h.client_drop(get, true);
    h.advance(5_000);
    assert_eq!(h.log[&get].comments, 2, "none on a closed stream");
    assert!(
        h.ep.poll_timeout()
            .is_none_or(|(_, t)| t != SessionTimer::KeepAlive),
        "no keep-alive timer without a stream"
    );
}

#[test]
fn outbound_requests_max_refuses_the_application_one_past_the_bound() {
    let mut config = common::test_config();
    config.session.outbound_requests_max = 2;
    let mut h = ready_with(config);
    let sid = h.session.clone().unwrap();
    let now = h.now;
    let s = h.ep.session_mut(&sid).unwrap();
    assert!(s.request("roots/list", None, Cause::Unrelated, now).is_ok());
    assert!(s.request("roots/list", None, Cause::Unrelated, now).is_ok());
    assert_eq!(
        s.request("roots/list", None, Cause::Unrelated, now),
        Err(mcp_streamable::error::UsageError::TooManyRequests)
    );
}

/// An ended session leaves the admission table: a busy session deleted
/// frees its place (a stale busy entry would refuse everyone with 503).
#[test]
fn an_ended_session_frees_its_place_in_a_full_table() {
    let mut config = common::test_config();
    config.sessions_max = 1;
    let mut h = ready_with(config);
    h.get(None);
    h.delete();
    h.initialize();
    assert!(
        h.ep.session(h.session.as_ref().unwrap()).is_some(),
        "admitted"
    );
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

/// The server-wide byte budget counts what sessions keep now: a session
/// whose held messages grew while it stayed idle is evicted for a newcomer.
#[test]
fn the_server_wide_byte_budget_follows_what_sessions_keep() {
    let mut config = common::test_config();
    config.retained_bytes_max = 1_000;
    let mut h = ready_with(config);
    let a = h.session.clone().unwrap();
    let blob = mcp_streamable::jsonrpc::RawJson::from(serde_json::json!({"blob": "x".repeat(500)}));
    for _ in 0..3 {
        h.notify_with(
            "notifications/message",
            Some(blob.clone()),
            Cause::Unrelated,
        );
    }
    assert!(h.ep.session(&a).unwrap().retained_bytes() > 1_000);
    h.initialize();
    assert!(
        h.ep.session(&a).is_none(),
        "over the budget: the idle session made room"
    );
    assert!(h.ep.session(h.session.as_ref().unwrap()).is_some());
}

/// What the server sends on the `initialize` POST's stream before its answer
/// (a log line, a progress step) carries an event id under FIXED like every
/// other SSE event, so a client that loses it can resume; only rmcp v0.16's
/// codec sends it unnumbered.
#[test]
fn events_before_the_initialize_answer_are_numbered_except_under_rmcp_0_16() {
    for (policy, numbered) in [
        (ServerPolicy::FIXED, true),
        (ServerPolicy::RMCP_0_16, false),
    ] {
        let mut h = Harness::new(policy);
        let id = h.next_id();
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"{}","capabilities":{{}},"clientInfo":{{"name":"t","version":"0"}}}}}}"#,
            h.version
        );
        let http = h.request(&RequestHead::post(None, None), body.as_bytes());
        h.session = h.ep.route(http).cloned();
        assert!(h.notify("notifications/message", Cause::Request(id.clone())));
        h.respond(&id);
        let log = &h.log[&http];
        assert_eq!(log.content, Some(Content::Sse), "{policy:?}");
        let ids: Vec<bool> = log
            .events
            .iter()
            .filter(|(_, m)| m.is_some())
            .map(|(id, _)| id.is_some())
            .collect();
        assert_eq!(ids, [numbered, numbered], "{policy:?}: {:?}", log.events);
    }
}

/// Ending a session (here a DELETE) ends every open exchange: one whose head
/// is not out yet (a call still undecided between JSON and SSE) gets `404`,
/// one already streaming (the GET) just ends, with no second head.
#[test]
fn ending_a_session_answers_404_only_where_no_head_went_out() {
    let mut h = ready_with(json_config());
    let get = h.get(None);
    let (call, _id) = h.call();
    assert_eq!(h.log[&call].status, None, "undecided: no head yet");
    let del = h.delete();
    assert_eq!(status(&h, del), 200);
    assert_eq!(h.log[&call].status, Some(404));
    assert_eq!(h.log[&call].end, Some(EndReason::SessionEnded));
    assert_eq!(h.log[&get].status, Some(200));
    assert_eq!(h.log[&get].end, Some(EndReason::SessionEnded));
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

/// A call to be answered in JSON that the client cancels before its answer
/// (its connection died unnoticed, or the client keeps it open) still gets
/// a head before its end: `202`, no body, as a POST with no request does.
/// Ended with no head, a shell would have had a body's end to write on a
/// response never opened (A4).
#[test]
fn a_json_call_cancelled_before_its_answer_is_accepted_with_202() {
    let mut h = ready_with(json_config());
    let (call, id) = h.call();
    assert_eq!(h.log[&call].status, None, "undecided: no head yet");
    let cancel = h.post(&format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#
    ));
    assert_eq!(status(&h, cancel), 202);
    assert_eq!(h.log[&call].status, Some(202));
    assert_eq!(h.log[&call].content, Some(Content::None), "no body");
    assert_eq!(h.log[&call].end, Some(EndReason::Complete));
    assert!(h.log[&call].json.is_empty());
    // The application's late answer is dropped, and nothing more is
    // written on the exchange.
    h.respond(&id);
    assert_eq!(h.log[&call].status, Some(202));
    assert!(h.log[&call].json.is_empty());
    h.finish();
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

/// `streams_max` trims idle streams only: a standalone GET still attached is
/// never trimmed, however many finished streams come after it.
#[test]
fn streams_max_never_trims_an_attached_standalone_stream() {
    let mut config = common::test_config();
    config.session.streams_max = 1;
    let mut h = ready_with(config);
    let get = h.get(None);
    for _ in 0..2 {
        let (http, id) = h.call();
        h.client_drop(http, true);
        h.respond(&id);
    }
    assert!(h.notify("notifications/tools/list_changed", Cause::Unrelated));
    assert!(
        h.log[&get]
            .messages()
            .iter()
            .any(|m| m.method() == Some("notifications/tools/list_changed")),
        "the GET still carries unrelated messages"
    );
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

/// A request answered on its live connection leaves nothing behind: the
/// session forgets its exchange as it answers, before the driver reports
/// the connection closed (FIXED has no listener that would keep it).
#[test]
fn an_answered_live_exchange_is_forgotten_at_once() {
    let mut h = ready_with(common::test_config());
    let (http, id) = h.call();
    let now = h.now;
    let s = h.ep.session_mut(h.session.as_ref().unwrap()).unwrap();
    assert!(s.exchanges().any(|x| x == http));
    s.respond(
        &id,
        Ok(mcp_streamable::jsonrpc::RawJson::empty_object()),
        now,
    )
    .expect("answered");
    assert!(
        s.exchanges().all(|x| x != http),
        "{:?}",
        s.exchanges().collect::<Vec<_>>()
    );
    h.drain();
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

/// A batch of requests (2025-03-26) cannot be answered by one JSON body:
/// even where a lone request's reply waits to choose JSON, the batch's reply
/// commits to SSE when it opens, and carries every answer.
#[test]
fn a_batch_reply_commits_sse_at_once_even_when_json_could_wait() {
    let mut h = Harness::with(
        ServerPolicy::FIXED,
        ProtocolVersion::V2025_03_26,
        json_config(),
    );
    h.initialize();
    h.initialized();
    let batch = h.post(
        r#"[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","id":8,"method":"ping"}]"#,
    );
    assert_eq!(h.log[&batch].status, Some(200));
    assert_eq!(h.log[&batch].content, Some(Content::Sse));
    h.respond(&RequestId::Num(7));
    h.respond(&RequestId::Num(8));
    let answered = h.log[&batch]
        .messages()
        .iter()
        .filter(|m| m.is_response())
        .count();
    assert_eq!(answered, 2);
    assert_eq!(h.log[&batch].end, Some(EndReason::Complete));
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

/// What an endpoint hands its application and its embedder: one secret,
/// drawn once from its source (or set: the instances of a fleet share one),
/// a forked source that follows the seed (same seed, same trace), and the
/// policy and configuration it was made with.
#[test]
fn an_endpoints_secret_entropy_policy_and_config_are_its_own() {
    use mcp_streamable::id_source::IdSource;
    use mcp_streamable::server::{EndpointConfig, ServerEndpoint};
    let make = |seed: u64| {
        let config = EndpointConfig {
            body_max: 12_345,
            ..EndpointConfig::default()
        };
        ServerEndpoint::with_ids(
            config,
            ServerPolicy::MCP_GO_0_44,
            IdSource::reproducible(seed),
        )
    };
    let (mut a, mut b, mut a_again) = (make(1), make(2), make(1));
    let key = a.app_secret();
    assert_eq!(a.app_secret(), key, "drawn once");
    assert_ne!(b.app_secret(), key, "each endpoint its own");
    assert_eq!(a_again.app_secret(), key, "the same seed draws the same");
    let shared = [7u8; 32];
    b.set_app_secret(shared);
    assert_eq!(b.app_secret(), shared);
    let (mut fa, mut fb) = (a.fork_entropy(), a_again.fork_entropy());
    let draws = |f: &mut IdSource| (0..4).map(|_| f.next_u64()).collect::<Vec<_>>();
    assert_eq!(draws(&mut fa), draws(&mut fb), "forks follow the seed");
    assert_ne!(
        draws(&mut a.fork_entropy()),
        draws(&mut fa),
        "each fork its own stream"
    );
    assert_eq!(*a.policy(), ServerPolicy::MCP_GO_0_44);
    assert_eq!(a.config().body_max, 12_345);
}

/// The endpoint's next deadline is its sessions' earliest: here an idle
/// session's expiry, `idle_timeout_ms` after its last exchange ended.
#[test]
fn the_endpoints_deadline_is_an_idle_sessions_expiry() {
    let mut config = common::test_config();
    config.session.idle_timeout_ms = Some(5_000);
    let h = ready_with(config);
    let (at, timer) = h.ep.poll_timeout().expect("the idle expiry");
    assert_eq!(
        (at.as_millis(), timer),
        (h.now.as_millis() + 5_000, SessionTimer::Idle)
    );
}

/// An `initialize` where none may be is refused as an invalid request
/// (-32600), not handled as any other message: inside a session's POST, or
/// batched with something else without a session.
#[test]
fn an_initialize_inside_a_session_or_a_batch_is_an_invalid_request() {
    let mut h = ready();
    let init = r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let again = h.post(init);
    assert_eq!(h.log[&again].status, Some(400));
    assert_eq!(error_code(&h, again), -32600);
    // Batches exist only in 2025-03-26 (later versions refuse any batch as
    // -32600 while parsing): there, an `initialize` batched with anything
    // is refused for itself, not as a request missing its session.
    let batch = format!(r#"[{init},{PING}]"#);
    let head = RequestHead::post(None, Some(ProtocolVersion::V2025_03_26));
    let batched = h.request(&head, batch.as_bytes());
    assert_eq!(h.log[&batched].status, Some(400));
    assert_eq!(error_code(&h, batched), -32600);
    match h.log[&batched].json.first() {
        Some(Message::Error { error, .. }) => {
            assert!(error.message.contains("initialize"), "{}", error.message);
        }
        other => panic!("{other:?}"),
    }
}

/// A POST body of exactly `body_max` bytes is read; one byte more is 413.
#[test]
fn a_post_body_of_exactly_body_max_is_accepted_and_one_more_is_413() {
    // Room for the handshake; the pings are padded to the edge with spaces.
    let mut config = common::test_config();
    config.body_max = 400;
    let mut h = ready_with(config);
    let at = h.post(&format!("{PING:<400}"));
    assert_eq!(h.log[&at].status, Some(200));
    let past = h.post(&format!("{PING:<401}"));
    assert_eq!(h.log[&past].status, Some(413));
}

/// What admission evicts by: an idle session is idle since its last
/// exchange ended (its idle deadline less the timeout), not since the
/// start; one with an exchange open is not idle; its requests in flight
/// are listed until answered.
#[test]
fn a_session_is_idle_since_its_last_exchange_and_lists_what_is_in_flight() {
    let mut config = common::test_config();
    config.session.idle_timeout_ms = Some(5_000);
    let mut h = Harness::with(ServerPolicy::FIXED, ProtocolVersion::V2025_11_25, config);
    h.now = mcp_streamable::time::Instant::from_millis(1_000);
    h.initialize();
    h.initialized();
    let sid = h.session.clone().unwrap();
    let session = |h: &Harness| h.ep.session(&sid).unwrap().clone();
    assert_eq!(
        session(&h).idle_since(),
        Some(mcp_streamable::time::Instant::from_millis(1_000))
    );
    h.now = mcp_streamable::time::Instant::from_millis(3_000);
    let (_, id) = h.call();
    assert_eq!(session(&h).idle_since(), None, "a call is open");
    let open = session(&h);
    assert_eq!(open.in_flight().collect::<Vec<_>>(), [&id]);
    h.respond(&id);
    assert_eq!(session(&h).in_flight().count(), 0);
    assert_eq!(
        session(&h).idle_since(),
        Some(mcp_streamable::time::Instant::from_millis(3_000))
    );
}

/// A client response that answers no request of the server's is accepted
/// (202) and counted, not handed to the application; the session's size
/// estimate grows with what it holds.
#[test]
fn a_response_to_nothing_is_counted_late_and_the_size_estimate_grows() {
    let mut h = ready();
    let sid = h.session.clone().unwrap();
    let idle = h.ep.session(&sid).unwrap().approx_bytes();
    assert!(idle >= std::mem::size_of::<mcp_streamable::server::ServerSession>());
    let late = h.post(r#"{"jsonrpc":"2.0","id":"nobody-asked","result":{}}"#);
    assert_eq!(h.log[&late].status, Some(202));
    assert_eq!(h.ep.session(&sid).unwrap().late_responses(), 1);
    let anonymous =
        h.post(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#);
    assert_eq!(h.log[&anonymous].status, Some(202));
    assert_eq!(
        h.ep.session(&sid).unwrap().late_responses(),
        2,
        "an error naming nothing"
    );
    let (_, _id) = h.call();
    assert!(
        h.ep.session(&sid).unwrap().approx_bytes() > idle,
        "a call open"
    );
}

/// A request id already in flight in the session is refused (400, -32600,
/// R45), whether the first use is still being served or sits earlier in
/// the same 2025-03-26 batch; once answered, the id may be used again.
#[test]
fn a_request_id_in_flight_is_refused_until_answered() {
    let mut h = ready();
    let (_, id) = h.call();
    let RequestId::Num(n) = id.clone() else {
        panic!("numeric ids")
    };
    let again =
        format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"t"}}}}"#);
    let refused = h.post(&again);
    assert_eq!(h.log[&refused].status, Some(400));
    assert_eq!(error_code(&h, refused), -32600);
    h.respond(&id);
    let reused = h.post(&again);
    assert_eq!(h.log[&reused].status, Some(200), "answered: free again");
    // Twice in one batch (2025-03-26, the one version with batches).
    let mut h = ready_at(ProtocolVersion::V2025_03_26);
    let twice =
        r#"[{"jsonrpc":"2.0","id":70,"method":"ping"},{"jsonrpc":"2.0","id":70,"method":"ping"}]"#;
    let batched = h.post(twice);
    assert_eq!(h.log[&batched].status, Some(400));
    assert_eq!(error_code(&h, batched), -32600);
}

/// Keep-alive comments go to the SSE streams whose head is out and which
/// are not over: never before a head (a JSON reply not yet written), never
/// after an end.
#[test]
fn keep_alive_comments_go_only_to_open_streams_whose_head_is_out() {
    let mut config = json_config();
    config.session.keepalive_ms = Some(1_000);
    let mut h = Harness::with(ServerPolicy::FIXED, ProtocolVersion::V2025_11_25, config);
    h.initialize();
    h.initialized();
    let (call, _) = h.call();
    let get = h.get(None);
    let (done, done_id) = h.call();
    h.respond(&done_id);
    assert_eq!(h.log[&done].end, Some(EndReason::Complete));
    let (at, _) = h.ep.poll_timeout().expect("a keep-alive");
    h.now = at;
    h.ep.handle_timeout(at);
    h.drain();
    assert!(h.log[&get].comments >= 1, "the GET");
    assert_eq!(h.log[&call].status, None, "no head yet");
    assert_eq!(h.log[&call].comments, 0, "nothing before its head");
    assert_eq!(h.log[&done].comments, 0, "nothing after its end");
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

/// Closing a call's connection for polling (R37) needs an event id the
/// client can resume from: on 2025-03-26 (no priming event) a stream with
/// nothing written yet keeps its connection.
#[test]
fn a_connection_is_closed_for_polling_only_after_an_event_id() {
    let mut h = ready_at(ProtocolVersion::V2025_03_26);
    let (call, id) = h.call();
    assert!(h.log[&call].events.is_empty(), "no priming event");
    h.close_connection(&id);
    assert_eq!(h.log[&call].end, None, "kept: nothing to resume from");
    assert!(h.notify("notifications/progress", Cause::Request(id.clone())));
    h.close_connection(&id);
    assert_eq!(h.log[&call].end, Some(EndReason::Polling));
}

/// The server's requests to the client are numbered one after another.
#[test]
fn server_requests_get_ids_one_after_another() {
    let mut h = ready();
    let (_, call) = h.call();
    let sid = h.session.clone().unwrap();
    let now = h.now;
    let s = h.ep.session_mut(&sid).unwrap();
    let (a, _) = s
        .request("roots/list", None, Cause::Request(call.clone()), now)
        .unwrap();
    let (b, _) = s
        .request("roots/list", None, Cause::Request(call), now)
        .unwrap();
    let awaited: Vec<RequestId> = s.awaited_answers().cloned().collect();
    assert_eq!(awaited, [a.clone(), b.clone()], "both await their answers");
    match (a, b) {
        (RequestId::Num(a), RequestId::Num(b)) => assert_eq!(b, a + 1),
        other => panic!("{other:?}"),
    }
}

/// A call the client cancels takes the requests the server sent for it
/// along: the application hears each one failed (`REQUEST_CANCELLED`), the
/// client is told (`notifications/cancelled` naming it), and nothing awaits
/// an answer that cannot come (the client stopped reading the call's
/// stream). A request sent for another call, or for none, still awaits its
/// answer. The same when the cancellation comes after the call finished.
#[test]
fn a_cancelled_call_takes_the_requests_sent_for_it_along() {
    use mcp_streamable::jsonrpc::REQUEST_CANCELLED;
    use mcp_streamable::server::{ServerEvent, TransmitKind};
    let mut h = ready();
    let (_, call) = h.call();
    let (_, other) = h.call();
    let sid = h.session.clone().unwrap();
    let now = h.now;
    let s = h.ep.session_mut(&sid).unwrap();
    let (asked, _) = s
        .request(
            "elicitation/create",
            None,
            Cause::Request(call.clone()),
            now,
        )
        .unwrap();
    let (kept, _) = s
        .request("roots/list", None, Cause::Request(other.clone()), now)
        .unwrap();
    let (unrelated, _) = s
        .request("roots/list", None, Cause::Unrelated, now)
        .unwrap();
    h.drain();
    let cancel = |id: &RequestId| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{}}}}}"#,
            serde_json::to_string(id).unwrap()
        )
    };
    let head = RequestHead::post(Some(&sid), Some(h.version));
    h.ep.handle_request(&head, cancel(&call).as_bytes(), now);
    let mut failed = Vec::new();
    while let Some((_, e)) = h.ep.poll_event() {
        if let ServerEvent::Response { id, result: Err(e) } = e {
            failed.push((id, e.code));
        }
    }
    assert_eq!(
        failed,
        [(asked.clone(), REQUEST_CANCELLED)],
        "the application hears it failed"
    );
    let mut told = Vec::new();
    while let Some(t) = h.ep.poll_transmit() {
        if let TransmitKind::Event {
            message: Some(o), ..
        } = t.kind
        {
            if let Message::Notification { method, params } = &o.message {
                if method == "notifications/cancelled" {
                    told.push(params.as_ref().unwrap().to_value()["requestId"].clone());
                }
            }
        }
    }
    let s = h.ep.session(&sid).unwrap();
    let awaited: Vec<RequestId> = s.awaited_answers().cloned().collect();
    assert_eq!(
        awaited,
        [kept.clone(), unrelated],
        "the others still await their answers"
    );
    // Held for want of a standalone GET, or written on it: either way it
    // goes out as any unrelated message does; here nothing is attached.
    assert!(told.is_empty() || told == [serde_json::to_value(&asked).unwrap()]);
    // The other call finishes first, then is cancelled: its request goes too.
    h.respond(&other);
    h.ep.handle_request(&head, cancel(&other).as_bytes(), h.now);
    let mut failed = Vec::new();
    while let Some((_, e)) = h.ep.poll_event() {
        if let ServerEvent::Response { id, result: Err(_) } = e {
            failed.push(id);
        }
    }
    assert_eq!(failed, [kept]);
    while h.ep.poll_transmit().is_some() {}
    let s = h.ep.session(&sid).unwrap();
    assert_eq!(s.awaited_answers().count(), 1, "the unrelated one only");
}

/// Only `notifications/initialized` completes the handshake: another
/// notification before it leaves the session uninitialized.
#[test]
fn only_the_initialized_notification_readies_a_session() {
    let mut h = Harness::new(ServerPolicy::FIXED);
    h.initialize();
    let sid = h.session.clone().unwrap();
    let other = h.post(r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#);
    assert_eq!(h.log[&other].status, Some(202));
    assert!(!h.ep.session(&sid).unwrap().is_initialized());
    h.initialized();
    assert!(h.ep.session(&sid).unwrap().is_initialized());
}

/// The session remembers the last `cancelled_max` cancelled requests: the
/// application's late answer to one of them is dropped as cancelled (R50),
/// to an older one it is a usage error (no such request).
#[test]
fn the_last_cancelled_max_cancellations_are_remembered() {
    let mut config = common::test_config();
    config.session.cancelled_max = 2;
    let mut h = Harness::with(ServerPolicy::FIXED, ProtocolVersion::V2025_11_25, config);
    h.initialize();
    h.initialized();
    let mut ids = Vec::new();
    for _ in 0..3 {
        let (_, id) = h.call();
        let RequestId::Num(n) = id else {
            panic!("numeric ids")
        };
        h.post(&format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{n}}}}}"#
        ));
        ids.push(RequestId::Num(n));
    }
    let sid = h.session.clone().unwrap();
    let now = h.now;
    let s = h.ep.session_mut(&sid).unwrap();
    let answer = |s: &mut mcp_streamable::server::ServerSession, id: &RequestId| {
        s.respond(
            id,
            Ok(mcp_streamable::jsonrpc::RawJson::empty_object()),
            now,
        )
    };
    assert!(answer(s, &ids[2]).is_ok(), "the last: dropped as cancelled");
    assert!(
        answer(s, &ids[1]).is_ok(),
        "the one before: still remembered"
    );
    assert!(answer(s, &ids[0]).is_err(), "past cancelled_max: forgotten");
}

/// A ready session whose requests to the client wait `ms` for their
/// answer, with its standalone GET open: the harness, the GET, the session
/// and the time.
fn asking_with_a_deadline_of(
    ms: u64,
) -> (
    Harness,
    mcp_streamable::ids::HttpId,
    mcp_streamable::ids::SessionId,
    mcp_streamable::time::Instant,
) {
    let mut config = common::test_config();
    config.session.outbound_timeout_ms = Some(ms);
    let mut h = ready_with(config);
    let get = h.get(None);
    let sid = h.session.clone().unwrap();
    let t0 = h.now;
    (h, get, sid, t0)
}

/// The `notifications/cancelled` the core sends on its own, for a request
/// to the client it gave up at its deadline, reaches every observer as
/// that message's `Sent` (the event `Withdrawn`, through the shared drain),
/// before the notice is written: the monitor tells a notice sent before a
/// call's cancellation from one sent after it (A3).
#[test]
fn a_notice_the_core_sends_itself_is_observed_as_sent() {
    use mcp_streamable::observe::Observation;
    use mcp_streamable::server::{ServerEvent, TransmitKind};
    use mcp_streamable::time::Instant;
    let (mut h, get, sid, t0) = asking_with_a_deadline_of(500);
    let s = h.ep.session_mut(&sid).unwrap();
    let (asked, _) = s.request("roots/list", None, Cause::Unrelated, t0).unwrap();
    h.drain();
    h.ep.handle_timeout(Instant::from_millis(t0.as_millis() + 500));
    let mut seen = Vec::new();
    let mut withdrawn = Vec::new();
    h.ep.drain_observed(&mut |o| seen.push(o.clone()), |_, out, _| {
        if let mcp_streamable::server::ServerOutput::Event(
            _,
            ServerEvent::Withdrawn { id, key, cause },
        ) = out
        {
            withdrawn.push((id, key, cause));
        }
    });
    let [(id, key, cause)] = &withdrawn[..] else {
        panic!("one notice: {withdrawn:?}");
    };
    assert_eq!((id, cause), (&asked, &Cause::Unrelated));
    let sent = seen.iter().position(
        |o| matches!(o, Observation::Sent { key: k, cause: Cause::Unrelated, .. } if k == key),
    );
    let written = seen.iter().position(|o| match o {
        Observation::Transmit(t) => {
            t.http == get
                && matches!(&t.kind, TransmitKind::Event { message: Some(m), .. }
                    if m.key == *key && m.message.method() == Some("notifications/cancelled"))
        }
        _ => false,
    });
    assert!(
        matches!((sent, written), (Some(a), Some(b)) if a < b),
        "sent {sent:?}, written {written:?}"
    );
}

/// A request to the client waits until its deadline (`outbound_timeout_ms`)
/// and no longer: the application hears it failed (`REQUEST_TIMEOUT`), the
/// client is told (`notifications/cancelled` on its standalone GET), and an
/// answer that comes after is counted late, not delivered. A request with a
/// later deadline still waits; the session's next deadline is its own.
#[test]
fn a_request_to_the_client_ends_at_its_deadline() {
    use mcp_streamable::jsonrpc::REQUEST_TIMEOUT;
    use mcp_streamable::server::ServerEvent;
    use mcp_streamable::time::Instant;
    let (mut h, get, sid, t0) = asking_with_a_deadline_of(500);
    let s = h.ep.session_mut(&sid).unwrap();
    let (first, _) = s.request("roots/list", None, Cause::Unrelated, t0).unwrap();
    let t1 = Instant::from_millis(t0.as_millis() + 200);
    let (second, _) = s.request("roots/list", None, Cause::Unrelated, t1).unwrap();
    assert_eq!(
        s.poll_timeout(),
        Some((
            Instant::from_millis(t0.as_millis() + 500),
            SessionTimer::Outbound
        ))
    );
    h.drain();
    let failed = |h: &mut Harness, at: u64| {
        h.now = Instant::from_millis(at);
        h.ep.handle_timeout(h.now);
        let mut failed = Vec::new();
        while let Some((_, e)) = h.ep.poll_event() {
            if let ServerEvent::Response { id, result: Err(e) } = e {
                failed.push((id, e.code));
            }
        }
        h.drain();
        failed
    };
    assert!(failed(&mut h, t0.as_millis() + 499).is_empty(), "not yet");
    assert_eq!(
        failed(&mut h, t0.as_millis() + 500),
        [(first.clone(), REQUEST_TIMEOUT)]
    );
    let told: Vec<serde_json::Value> = h.log[&get]
        .messages()
        .iter()
        .filter_map(|m| match m {
            Message::Notification { method, params } if method == "notifications/cancelled" => {
                Some(params.as_ref().unwrap().to_value()["requestId"].clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        told,
        [serde_json::to_value(&first).unwrap()],
        "the client is told"
    );
    let s = h.ep.session(&sid).unwrap();
    let awaited: Vec<&RequestId> = s.awaited_answers().collect();
    assert_eq!(awaited, [&second]);
    // The late answer is not delivered; the other one is.
    let answer = |id: &RequestId| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"roots":[]}}}}"#,
            serde_json::to_string(id).unwrap()
        )
    };
    h.post(&answer(&first));
    assert_eq!(h.ep.session(&sid).unwrap().late_responses(), 1);
    h.post(&answer(&second));
    let s = h.ep.session(&sid).unwrap();
    assert_eq!(s.late_responses(), 1);
    assert_eq!(s.awaited_answers().count(), 0);
    assert!(
        !matches!(s.poll_timeout(), Some((_, SessionTimer::Outbound))),
        "no deadline left once nothing is awaited"
    );
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

/// A request asked for a call the session still serves is withdrawn on
/// that call's stream, where the client reads and where the request went:
/// at its deadline (the application hears `REQUEST_TIMEOUT`), or when the
/// application withdraws it (`cancel_request`: it hears nothing, the id is
/// no longer awaited, a second withdrawal is refused, a late answer is
/// counted late). Nothing goes to the standalone GET.
#[test]
fn a_request_for_a_served_call_is_withdrawn_on_the_calls_stream() {
    use mcp_streamable::error::UsageError;
    use mcp_streamable::jsonrpc::REQUEST_TIMEOUT;
    use mcp_streamable::server::ServerEvent;
    use mcp_streamable::time::Instant;
    let mut config = common::test_config();
    config.session.outbound_timeout_ms = Some(500);
    let mut h = ready_with(config);
    let get = h.get(None);
    let (post, call) = h.call();
    h.drain();
    let sid = h.session.clone().unwrap();
    let t0 = h.now;
    let s = h.ep.session_mut(&sid).unwrap();
    let cause = Cause::Request(call.clone());
    let (timed, _) = s.request("roots/list", None, cause.clone(), t0).unwrap();
    let (withdrawn, _) = s.request("roots/list", None, cause, t0).unwrap();
    s.cancel_request(&withdrawn, "no longer needed", t0)
        .unwrap();
    assert!(matches!(
        s.cancel_request(&withdrawn, "again", t0),
        Err(UsageError::NotAwaited(_))
    ));
    let awaited: Vec<&RequestId> = s.awaited_answers().collect();
    assert_eq!(awaited, [&timed]);
    h.drain();
    h.now = Instant::from_millis(t0.as_millis() + 500);
    h.ep.handle_timeout(h.now);
    let mut failed = Vec::new();
    while let Some((_, e)) = h.ep.poll_event() {
        if let ServerEvent::Response { id, result } = e {
            failed.push((id, result.err().map(|e| e.code)));
        }
    }
    h.drain();
    assert_eq!(
        failed,
        [(timed.clone(), Some(REQUEST_TIMEOUT))],
        "the application hears of the deadline, not of its own withdrawal"
    );
    let cancelled = |h: &Harness, http| -> Vec<serde_json::Value> {
        h.log[&http]
            .messages()
            .iter()
            .filter_map(|m| match m {
                Message::Notification { method, params } if method == "notifications/cancelled" => {
                    Some(params.as_ref().unwrap().to_value()["requestId"].clone())
                }
                _ => None,
            })
            .collect()
    };
    let id = |r: &RequestId| serde_json::to_value(r).unwrap();
    assert_eq!(cancelled(&h, post), [id(&withdrawn), id(&timed)]);
    assert!(cancelled(&h, get).is_empty(), "nothing on the GET");
    let answer = format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{{"roots":[]}}}}"#,
        id(&withdrawn)
    );
    h.post(&answer);
    assert_eq!(h.ep.session(&sid).unwrap().late_responses(), 1);
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

/// Every verb on a session, from whoever `h.caller` is now: a call POSTed
/// into it, a GET, a GET resuming from `event`, a DELETE. Their statuses.
fn every_verb(h: &mut Harness, event: &str) -> [Option<u16>; 4] {
    let (post, _) = h.call();
    let get = h.get(None);
    let resume = h.get(Some(event));
    let delete = h.delete();
    [post, get, resume, delete].map(|x| h.log[&x].status)
}

/// A session opened by alice (initialized, a GET open with an event id).
fn alices_session() -> (Harness, String) {
    Harness::opened_by(ServerPolicy::FIXED, "alice")
}

/// A session serves the principal that opened it, and nobody else: bob,
/// holding alice's session id and an event id of hers, gets 404 for every
/// verb, exactly as for a session that does not exist (so the id is no
/// oracle); nothing reaches him and nothing of hers changes (her GET still
/// open, her session still answering, nothing queued for the application).
#[test]
fn another_principal_gets_only_404s_and_changes_nothing() {
    let (mut h, event) = alices_session();
    let pending = h.pending.len();
    h.as_principal(Some("bob"));
    assert_eq!(every_verb(&mut h, &event), [Some(404); 4]);
    assert_eq!(h.pending.len(), pending, "no call reached the application");
    let sid = h.session.clone().unwrap();
    let s = h.ep.session(&sid).expect("alice's session lives");
    assert!(!s.is_ended());
    assert_eq!(
        s.principal().map(|p| p.as_str()),
        Some("alice"),
        "the session records who opened it"
    );
    // The refusal is the unknown session's, byte for byte.
    let bobs = h
        .log
        .iter()
        .rev()
        .find(|(_, l)| l.status == Some(404))
        .unwrap()
        .1
        .json
        .clone();
    h.session = Some("0123456789abcdef0123456789abcdef".parse().unwrap());
    let unknown = h.delete();
    assert_eq!(h.log[&unknown].json, bobs);
    h.session = Some(sid);
    h.as_principal(Some("alice"));
    let (post, _) = h.call();
    assert_eq!(h.log[&post].status, Some(200), "alice is still served");
    h.finish();
    assert!(h.violations().is_empty(), "{:?}", h.violations());
}

/// An anonymous request is another principal too: it cannot use a session
/// an authenticated client opened. And a session opened anonymously (a
/// server without authentication) serves anonymous requests only.
#[test]
fn no_principal_is_not_a_wildcard() {
    let (mut h, event) = alices_session();
    h.as_principal(None);
    assert_eq!(every_verb(&mut h, &event), [Some(404); 4]);

    let mut h = Harness::new(ServerPolicy::FIXED);
    h.initialize();
    h.initialized();
    h.as_principal(Some("mallory"));
    let (post, _) = h.call();
    assert_eq!(h.log[&post].status, Some(404));
    h.as_principal(None);
    let (post, _) = h.call();
    assert_eq!(h.log[&post].status, Some(200));
}

/// A principal is the subject, not the token: a client whose token was
/// refreshed (the shell maps the new token to the same subject) keeps its
/// session, its GET resumable, its DELETE honoured.
#[test]
fn the_same_principal_keeps_its_session_across_credentials() {
    let (mut h, event) = alices_session();
    h.caller =
        Caller::from_peer(Some("192.0.2.9".parse().unwrap())).with_principal(Some("alice".into()));
    let [post, get, resume, delete] = every_verb(&mut h, &event);
    assert_eq!(post, Some(200));
    assert_eq!(get, Some(200));
    assert_eq!(resume, Some(200));
    assert_eq!(delete, Some(200));
}

/// The requests in flight on one session are bounded in bytes too
/// (`in_flight_bytes_max`): past it a request is refused 429 with a JSON-RPC
/// error and nothing of it is kept, while one request alone is always
/// taken whatever its size (up to `body_max`); answering one makes room.
#[test]
fn requests_in_flight_are_bounded_in_bytes() {
    let mut config = common::test_config();
    config.session.in_flight_bytes_max = 1_000;
    let mut h = Harness::with(ServerPolicy::FIXED, ProtocolVersion::V2025_11_25, config);
    h.initialize();
    h.initialized();
    let big = |id: i64, size: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"t","arguments":{{"x":"{}"}}}}}}"#,
            "x".repeat(size)
        )
    };
    let alone = h.post(&big(10, 5_000));
    assert_eq!(h.log[&alone].status, Some(200), "alone, any size");
    let refused = h.post(&big(11, 10));
    assert_eq!(h.log[&refused].status, Some(429));
    assert!(h.log[&refused].json[0]
        .to_json()
        .contains("more than 1000 bytes"));
    h.respond(&RequestId::Num(10));
    let pending = h.pending.len();
    let small = h.post(&big(12, 300));
    let second = h.post(&big(13, 300));
    assert_eq!(h.log[&small].status, Some(200));
    assert_eq!(
        h.log[&second].status,
        Some(200),
        "two of about 400 bytes fit"
    );
    let third = h.post(&big(14, 400));
    assert_eq!(h.log[&third].status, Some(429));
    assert_eq!(
        h.pending.len(),
        pending + 2,
        "only what was taken reached the application"
    );
    let sid = h.session.clone().unwrap();
    let held = h.ep.session(&sid).unwrap().in_flight_bytes();
    assert!(held <= 1_000 && held > 600, "{held} bytes in flight");
}
