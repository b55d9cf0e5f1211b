//! Unit tests of the client session's getters and commands: what a driver
//! or an application reads and calls, each pinned to what it must say.

use super::testing::{answer, sent, v2026, Sent};
use super::{ClientConfig, ClientEra, ClientError, ClientEvent, ClientSession, ClientUsageError};
use crate::head::ResponseHead;
use crate::ids::{HttpId, RequestId};
use crate::jsonrpc::{ErrorObject, RawJson};
use crate::policy::ClientPolicy;
use crate::preset::{Scheduled, SchedulingPoint};
use crate::sse::SseItem;
use crate::time::Instant;
use crate::version::ProtocolVersion;
use serde_json::{json, Value};
use std::time::Duration;

const NOW: Instant = Instant::ZERO;

fn events(c: &mut ClientSession) -> Vec<ClientEvent> {
    std::iter::from_fn(|| c.poll_event()).collect()
}

fn sse(c: &mut ClientSession, http: HttpId, data: Value) {
    let item = SseItem::Message {
        id: Some("e1".into()),
        event: None,
        data: data.to_string(),
    };
    c.handle_sse_event(http, item, NOW);
}

fn stream_head(c: &mut ClientSession, http: HttpId) {
    let head = ResponseHead::from_wire(200, [("content-type", "text/event-stream")]);
    c.handle_response_head(http, head, NOW);
}

/// Sends a `method` request and answers its POST with an event stream:
/// the request's id and what was sent.
fn streaming(c: &mut ClientSession, method: &str) -> (RequestId, Sent) {
    let id = c.send_request(method, None, NOW).unwrap();
    let post = sent(c).remove(0);
    stream_head(c, post.http);
    (id, post)
}

/// A session-era client under `policy`, its session `s1` agreed; what it
/// sent after the handshake (`notifications/initialized`, its GET) is
/// returned.
fn v2025(policy: ClientPolicy) -> (ClientSession, Vec<Sent>) {
    v2025_with(|_| {}, policy)
}

/// As [`v2025`], with the config changed by `edit` first.
fn v2025_with(
    edit: impl FnOnce(&mut ClientConfig),
    policy: ClientPolicy,
) -> (ClientSession, Vec<Sent>) {
    let mut config = ClientConfig {
        era: ClientEra::V2025,
        ..ClientConfig::default()
    };
    edit(&mut config);
    let mut c = ClientSession::new(config, policy);
    assert!(c.can_initialize());
    let params = RawJson::from(json!({"capabilities": {"roots": {}}}));
    c.initialize(params, NOW).unwrap();
    assert!(!c.can_initialize(), "not while initializing");
    let init = sent(&mut c).remove(0);
    assert_eq!(init.body["params"]["capabilities"], json!({"roots": {}}));
    assert_eq!(init.body["params"]["protocolVersion"], "2025-11-25");
    let head = ResponseHead::from_wire(
        200,
        [
            ("content-type", "application/json"),
            ("mcp-session-id", "s1"),
        ],
    );
    c.handle_response_head(init.http, head, NOW);
    let ok = json!({"jsonrpc": "2.0", "id": init.body["id"], "result": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "serverInfo": {"name": "s", "version": "1"}}});
    c.handle_body(init.http, ok.to_string().as_bytes(), NOW);
    c.handle_http_closed(init.http, NOW);
    // The policies that commit later do so at their scheduling point.
    while let Some(&(http, point)) = c.scheduling_points().first() {
        let elsewhere = HttpId(http.0 + 100);
        assert!(
            !c.handle_scheduling_point(elsewhere, point, NOW),
            "not its point"
        );
        assert!(
            !c.handle_scheduling_point(http, SchedulingPoint::ListenerWake, NOW),
            "not its kind"
        );
        assert_eq!(c.session_id(), None, "nothing committed");
        assert!(c.handle_scheduling_point(http, point, NOW));
    }
    assert!(c.is_ready());
    events(&mut c);
    let after = sent(&mut c);
    (c, after)
}

#[test]
fn the_getters_say_what_was_agreed_and_configured() {
    let (c, _) = v2025(ClientPolicy::CSHARP_PR1381);
    assert_eq!(c.version(), Some(ProtocolVersion::V2025_06_18));
    assert_eq!(c.session_id().map(|s| s.as_str()), Some("s1"));
    assert!(!c.can_initialize(), "a session is running");
    assert_eq!(c.policy(), &ClientPolicy::CSHARP_PR1381);
    assert_eq!(c.config().era, ClientEra::V2025);
    let fresh = super::testing::client(ClientEra::V2026);
    assert_eq!(fresh.version(), None);
    assert_eq!(fresh.config().era, ClientEra::V2026);
    assert_eq!(fresh.policy(), &ClientPolicy::FIXED);
}

#[test]
fn non_object_initialize_parameters_become_an_object_with_the_version() {
    let config = ClientConfig {
        era: ClientEra::V2025,
        ..ClientConfig::default()
    };
    let mut c = ClientSession::new(config, ClientPolicy::FIXED);
    c.initialize(RawJson::from(json!([1, 2])), NOW).unwrap();
    let init = sent(&mut c).remove(0);
    assert_eq!(
        init.body["params"],
        json!({"protocolVersion": "2025-11-25"})
    );
}

#[test]
fn pending_lists_requests_by_handle_until_their_answer() {
    let (mut c, _) = v2025(ClientPolicy::FIXED);
    let a = c.send_request("tools/list", None, NOW).unwrap();
    let b = c.send_request("prompts/list", None, NOW).unwrap();
    let mut pending: Vec<_> = c.pending().collect();
    pending.sort();
    assert_eq!(pending, [a.clone(), b.clone()]);
    let s = sent(&mut c);
    let body = json!({"jsonrpc": "2.0", "id": s[0].body["id"], "result": {}});
    answer(&mut c, s[0].http, 200, &body.to_string());
    assert_eq!(c.pending().collect::<Vec<_>>(), [b]);
}

#[test]
fn a_duplicate_and_a_stranger_are_each_counted_once() {
    let (mut c, _) = v2025(ClientPolicy::FIXED);
    c.send_request("tools/list", None, NOW).unwrap();
    let s = sent(&mut c).remove(0);
    stream_head(&mut c, s.http);
    let ok = json!({"jsonrpc": "2.0", "id": s.body["id"], "result": {}});
    sse(&mut c, s.http, ok.clone());
    assert_eq!((c.duplicates_dropped(), c.strangers_dropped()), (0, 0));
    // The exchange is aborted once answered; a copy on another stream
    // of ours is a duplicate, an id never sent a stranger.
    let (mut c2, _) = v2025(ClientPolicy::FIXED);
    c2.send_request("tools/list", None, NOW).unwrap();
    let s2 = sent(&mut c2).remove(0);
    stream_head(&mut c2, s2.http);
    c2.send_request("tools/list", None, NOW).unwrap();
    let s3 = sent(&mut c2).remove(0);
    stream_head(&mut c2, s3.http);
    let ok = json!({"jsonrpc": "2.0", "id": s2.body["id"], "result": {}});
    sse(&mut c2, s2.http, ok.clone());
    sse(&mut c2, s3.http, ok);
    assert_eq!((c2.duplicates_dropped(), c2.strangers_dropped()), (1, 0));
    sse(
        &mut c2,
        s3.http,
        json!({"jsonrpc": "2.0", "id": 999, "result": {}}),
    );
    sse(&mut c2, s3.http, json!("not a message"));
    let bad = SseItem::Message {
        id: None,
        event: None,
        data: "{".into(),
    };
    c2.handle_sse_event(s3.http, bad, NOW);
    let anonymous = json!({"jsonrpc": "2.0", "id": null,
        "error": {"code": -32700, "message": "parse error"}});
    sse(&mut c2, s3.http, anonymous);
    assert_eq!((c2.duplicates_dropped(), c2.strangers_dropped()), (1, 4));
}

#[test]
fn notify_and_respond_post_in_the_session_era_only_and_only_when_ready() {
    /// Both refuse with `error` and send nothing.
    fn refused(c: &mut ClientSession, error: ClientUsageError) {
        let notified = c.notify("notifications/roots/list_changed", None, NOW);
        assert_eq!(notified, Err(error.clone()));
        let answered = c.respond(RequestId::Num(1), Ok(RawJson::empty_object()), NOW);
        assert_eq!(answered, Err(error));
        assert!(sent(c).is_empty());
    }
    let mut fresh = ClientSession::new(ClientConfig::default(), ClientPolicy::FIXED);
    refused(&mut fresh, ClientUsageError::NotReady);
    let (mut c, _) = v2025(ClientPolicy::FIXED);
    // The server asks 7 and 8 on a call's stream: `respond` answers only
    // what the server asked.
    let (_, call) = streaming(&mut c, "tools/call");
    for id in [7, 8] {
        let ask = json!({"jsonrpc": "2.0", "id": id, "method": "roots/list"});
        sse(&mut c, call.http, ask);
    }
    assert_eq!(events(&mut c).len(), 2);
    assert!(sent(&mut c).is_empty());
    c.notify("notifications/roots/list_changed", None, NOW)
        .unwrap();
    c.respond(RequestId::Num(7), Ok(RawJson::empty_object()), NOW)
        .unwrap();
    let error = ErrorObject {
        code: -32601,
        message: "no".into(),
        data: None,
    };
    c.respond(RequestId::Num(8), Err(error), NOW).unwrap();
    let bodies: Vec<Value> = sent(&mut c).into_iter().map(|s| s.body).collect();
    assert_eq!(bodies[0]["method"], "notifications/roots/list_changed");
    assert_eq!(bodies[1], json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
    assert_eq!(bodies[2]["error"]["code"], -32601);
    refused(&mut v2026(json!({})), ClientUsageError::WrongEra);
    c.close(NOW);
    assert_eq!(
        c.send_request("tools/list", None, NOW),
        Err(ClientUsageError::Closed)
    );
    assert_eq!(
        c.notify("notifications/roots/list_changed", None, NOW),
        Err(ClientUsageError::Closed)
    );
}

#[test]
fn has_output_while_a_transmit_or_an_event_waits() {
    let mut c = super::testing::client(ClientEra::V2025);
    assert!(!c.has_output());
    c.initialize(RawJson::empty_object(), NOW).unwrap();
    assert!(c.has_output());
    sent(&mut c);
    assert!(!c.has_output());
    c.close(NOW);
    assert!(c.has_output(), "the initialize failed");
    events(&mut c);
    sent(&mut c);
    assert!(!c.has_output());
}

#[test]
fn a_request_whose_caller_has_its_result_cannot_be_cancelled() {
    // KeepRunning: the answer came on the background GET, the foreground
    // still runs; the caller has its outcome, so a cancel finds nothing.
    let (mut c, after) = v2025(ClientPolicy::CSHARP_PR1381);
    let get = after
        .iter()
        .find(|s| s.body.is_null())
        .expect("the background GET")
        .http;
    stream_head(&mut c, get);
    let (id, post) = streaming(&mut c, "tools/list");
    sse(
        &mut c,
        get,
        json!({"jsonrpc": "2.0", "id": post.body["id"], "result": {}}),
    );
    assert!(matches!(
        &events(&mut c)[..],
        [ClientEvent::Response { .. }]
    ));
    assert_eq!(c.pending().count(), 1, "the foreground still runs");
    assert_eq!(
        c.cancel(&id, NOW),
        Err(ClientUsageError::UnknownRequest(id))
    );
    assert!(events(&mut c).is_empty(), "no second outcome");
}

/// Breaks request stream `http` and fires the resumption timer: the GET
/// that resumes it, if one was sent.
fn break_and_resume(c: &mut ClientSession, http: HttpId) -> Option<HttpId> {
    c.handle_http_closed(http, NOW);
    let (at, _) = c.poll_timeout()?;
    c.handle_timeout(at);
    let get = sent(c).into_iter().find(|s| s.body.is_null())?;
    stream_head(c, get.http);
    Some(get.http)
}

#[test]
fn a_resumed_stream_that_delivers_a_message_starts_its_attempts_over() {
    let (mut c, _) = v2025(ClientPolicy::FIXED);
    let max = c.config().resume_attempts_max;
    let (id, post) = streaming(&mut c, "tools/call");
    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": 1, "progress": 1}});
    sse(&mut c, post.http, progress.clone());
    // Twice the bound, each resumed stream bringing a message: never exhausted.
    let mut http = post.http;
    for _ in 0..2 * max + 2 {
        http = break_and_resume(&mut c, http).expect("resumed again");
        sse(&mut c, http, progress.clone());
    }
    assert_eq!(c.pending().collect::<Vec<_>>(), std::slice::from_ref(&id));
    // Streams that bring nothing: the bound holds.
    let mut resumed = 0;
    while let Some(next) = break_and_resume(&mut c, http) {
        http = next;
        resumed += 1;
        assert!(resumed <= max, "more than resume_attempts_max resumptions");
    }
    assert_eq!(resumed, max);
    assert!(events(&mut c).iter().any(|e| matches!(
        e,
        ClientEvent::Failed { id: f, error: ClientError::ResumeExhausted } if *f == id
    )));
}

#[test]
fn an_answer_on_the_background_get_aborts_the_requests_own_stream() {
    let (mut c, after) = v2025(ClientPolicy::FIXED);
    let get = after.iter().find(|s| s.body.is_null()).unwrap().http;
    stream_head(&mut c, get);
    let (_, post) = streaming(&mut c, "tools/list");
    assert!(c.exchanges().any(|h| h == post.http));
    sse(
        &mut c,
        get,
        json!({"jsonrpc": "2.0", "id": post.body["id"], "result": {}}),
    );
    let aborted: Vec<HttpId> = std::iter::from_fn(|| c.poll_transmit())
        .filter(|t| t.kind == super::ClientTransmitKind::Abort)
        .map(|t| t.http)
        .collect();
    assert_eq!(aborted, [post.http]);
    assert!(!c.exchanges().any(|h| h == post.http));
    assert!(c.exchanges().any(|h| h == get), "the GET stays");
    assert_eq!(c.purpose(get), Some(super::Purpose::Background));
}

#[test]
fn the_last_finished_max_answered_ids_are_duplicates_older_ones_strangers() {
    let (mut c, _) = v2025_with(|c| c.finished_max = 2, ClientPolicy::FIXED);
    let mut ids = Vec::new();
    for _ in 0..3 {
        c.send_request("tools/list", None, NOW).unwrap();
        let s = sent(&mut c).remove(0);
        let ok = json!({"jsonrpc": "2.0", "id": s.body["id"], "result": {}});
        answer(&mut c, s.http, 200, &ok.to_string());
        ids.push(s.body["id"].clone());
    }
    c.send_request("tools/list", None, NOW).unwrap();
    let carrier = sent(&mut c).remove(0);
    stream_head(&mut c, carrier.http);
    for (k, id) in ids.iter().enumerate() {
        sse(
            &mut c,
            carrier.http,
            json!({"jsonrpc": "2.0", "id": id, "result": {}}),
        );
        let expected = if k == 0 { (0, 1) } else { (k as u64, 1) };
        assert_eq!(
            (c.duplicates_dropped(), c.strangers_dropped()),
            expected,
            "after the copy of answered request {k}"
        );
    }
    // A string id is never one of ours.
    sse(
        &mut c,
        carrier.http,
        json!({"jsonrpc": "2.0", "id": "1", "result": {}}),
    );
    assert_eq!(c.strangers_dropped(), 2);
}

#[test]
fn keep_running_ends_a_request_answered_on_its_own_stream_at_once() {
    let (mut c, _) = v2025(ClientPolicy::CSHARP_PR1381);
    let (_, post) = streaming(&mut c, "tools/list");
    let ok = json!({"jsonrpc": "2.0", "id": post.body["id"], "result": {}});
    sse(&mut c, post.http, ok);
    assert!(matches!(
        &events(&mut c)[..],
        [ClientEvent::Response { .. }]
    ));
    assert_eq!(c.pending().count(), 0, "nothing is left running");
}

#[test]
fn keep_running_counts_the_foregrounds_own_late_copy_as_a_duplicate() {
    let (mut c, after) = v2025(ClientPolicy::CSHARP_PR1381);
    let get = after.iter().find(|s| s.body.is_null()).unwrap().http;
    stream_head(&mut c, get);
    let (_, post) = streaming(&mut c, "tools/list");
    let ok = json!({"jsonrpc": "2.0", "id": post.body["id"], "result": {}});
    sse(&mut c, get, ok.clone());
    sse(&mut c, post.http, ok);
    assert_eq!(c.duplicates_dropped(), 1);
    assert_eq!(c.pending().count(), 0, "the foreground returned");
    assert_eq!(events(&mut c).len(), 1, "one outcome");
}

#[test]
fn after_foreground_returns_keeps_the_first_copy_and_counts_a_second() {
    let (mut c, after) = v2025(ClientPolicy::CSHARP_BASELINE);
    let get = after.iter().find(|s| s.body.is_null()).unwrap().http;
    stream_head(&mut c, get);
    let (_, post) = streaming(&mut c, "tools/list");
    let first = json!({"jsonrpc": "2.0", "id": post.body["id"], "result": {"n": 1}});
    let second = json!({"jsonrpc": "2.0", "id": post.body["id"], "result": {"n": 2}});
    sse(&mut c, get, first);
    sse(&mut c, get, second);
    assert_eq!(c.duplicates_dropped(), 1);
    assert!(
        events(&mut c).is_empty(),
        "held until the foreground returns"
    );
}

#[test]
fn a_cancelled_request_is_announced_to_the_server_and_the_session_stays() {
    let (mut c, _) = v2025(ClientPolicy::FIXED);
    let id = c.send_request("tools/call", None, NOW).unwrap();
    let post = sent(&mut c).remove(0);
    c.cancel(&id, NOW).unwrap();
    let notice = sent(&mut c);
    assert_eq!(notice.len(), 1, "one notifications/cancelled");
    assert_eq!(notice[0].body["method"], "notifications/cancelled");
    assert_eq!(notice[0].body["params"]["requestId"], post.body["id"]);
    assert!(c.is_ready(), "the session goes on");
    assert!(!c.can_initialize());
}

#[test]
fn an_initialize_that_times_out_is_not_cancelled_and_may_be_tried_again() {
    let mut c = super::testing::client(ClientEra::V2025);
    c.initialize(RawJson::empty_object(), NOW).unwrap();
    sent(&mut c);
    let (at, _) = c.poll_timeout().unwrap();
    c.handle_timeout(at);
    assert!(matches!(
        &events(&mut c)[..],
        [ClientEvent::Failed {
            error: ClientError::Timeout,
            ..
        }]
    ));
    assert!(sent(&mut c).is_empty(), "no cancellation of an initialize");
    assert!(c.can_initialize());
}

/// The GETs a step sent, each with its `Last-Event-ID`.
type Gets = Vec<(HttpId, Option<String>)>;

/// Breaks exchange `http` at `now` and fires the next timer: the time it
/// fired at and the GETs it sent, each with its `Last-Event-ID`.
fn break_then_fire(c: &mut ClientSession, http: HttpId, now: Instant) -> Option<(Instant, Gets)> {
    c.handle_http_closed(http, now);
    let (at, _) = c.poll_timeout()?;
    c.handle_timeout(at);
    let gets = std::iter::from_fn(|| c.poll_transmit())
        .filter_map(|t| match t.kind {
            super::ClientTransmitKind::Send { head, body } if body.is_empty() => {
                Some((t.http, head.header("last-event-id").map(str::to_owned)))
            }
            _ => None,
        })
        .collect();
    Some((at, gets))
}

/// How many times a request stream that keeps breaking without a message
/// is resumed before it is given up, under `policy`, retrying every 250 ms
/// within a 1,000 ms window, at most 8 attempts.
fn resumptions_without_messages(policy: ClientPolicy) -> usize {
    let (mut c, _) = v2025_with(
        |c| {
            c.retry_default_ms = 250;
            c.resume_window_ms = 1000;
            c.resume_attempts_max = 8;
            c.request_timeout_ms = 3_600_000;
        },
        policy,
    );
    let (_, post) = streaming(&mut c, "tools/call");
    sse(
        &mut c,
        post.http,
        json!({"jsonrpc": "2.0", "method": "notifications/message"}),
    );
    let (mut http, mut now, mut resumed) = (post.http, NOW, 0);
    while let Some((at, gets)) = break_then_fire(&mut c, http, now) {
        let Some((get, last)) = gets.into_iter().next() else {
            break;
        };
        assert_eq!(last.as_deref(), Some("e1"), "resumed from the last id");
        stream_head(&mut c, get);
        (http, now) = (get, at);
        resumed += 1;
        assert!(resumed < 100);
    }
    assert!(events(&mut c).iter().any(|e| matches!(
        e,
        ClientEvent::Failed {
            error: ClientError::ResumeExhausted,
            ..
        }
    )));
    resumed
}

#[test]
fn resumption_is_bounded_by_its_window_and_reset_on_event_id_by_attempts_only() {
    // Breaks at 0, 250, ..., 1,250 ms: the one at 1,000 is still inside
    // the window (not past it), the one at 1,250 is not.
    assert_eq!(resumptions_without_messages(ClientPolicy::FIXED), 5);
    // csharp's bound knows no window: only the attempts stop it.
    assert_eq!(
        resumptions_without_messages(ClientPolicy::CSHARP_BASELINE),
        8
    );
}

#[test]
fn the_background_get_is_reopened_from_its_cursor_and_given_up_after_its_failures() {
    let (mut c, after) = v2025_with(|c| c.background_failures_max = 2, ClientPolicy::FIXED);
    let get = after.iter().find(|s| s.body.is_null()).unwrap().http;
    stream_head(&mut c, get);
    sse(
        &mut c,
        get,
        json!({"jsonrpc": "2.0", "method": "notifications/message"}),
    );
    let (now, gets) = break_then_fire(&mut c, get, NOW).unwrap();
    let [(get, Some(last))] = &gets[..] else {
        panic!("{gets:?}");
    };
    assert_eq!(last, "e1", "reopened from the last event id");
    // The server forgot the cursor: start afresh.
    let head = ResponseHead::from_wire(400, [("content-type", "application/json")]);
    c.handle_response_head(*get, head, now);
    let (now, gets) = break_then_fire(&mut c, *get, now).unwrap();
    let [(get, None)] = &gets[..] else {
        panic!("{gets:?}");
    };
    // Two failures in a row are allowed (the 400 was the first), a third is not.
    let head = ResponseHead::from_wire(500, [("content-type", "application/json")]);
    c.handle_response_head(*get, head.clone(), now);
    let (now, gets) = break_then_fire(&mut c, *get, now).unwrap();
    let [(get, None)] = &gets[..] else {
        panic!("{gets:?}");
    };
    c.handle_response_head(*get, head, now);
    c.handle_http_closed(*get, now);
    assert_eq!(
        c.poll_timeout(),
        None,
        "given up after its third failure in a row"
    );
}

#[test]
fn a_background_get_answered_200_without_an_event_stream_is_a_failure() {
    // With no failure allowed, a 200 that is not an event stream ends the
    // background GET; a 200 event stream that breaks is reopened.
    for (content, again) in [("application/json", false), ("text/event-stream", true)] {
        let (mut c, after) = v2025_with(|c| c.background_failures_max = 0, ClientPolicy::FIXED);
        let get = after.iter().find(|s| s.body.is_null()).unwrap().http;
        let head = ResponseHead::from_wire(200, [("content-type", content)]);
        c.handle_response_head(get, head, NOW);
        c.handle_http_closed(get, NOW);
        assert_eq!(c.poll_timeout().is_some(), again, "{content}");
    }
}

#[test]
fn a_get_answered_405_is_never_tried_again() {
    let (mut c, after) = v2025(ClientPolicy::FIXED);
    let get = after.iter().find(|s| s.body.is_null()).unwrap().http;
    let head = ResponseHead::from_wire(405, [("content-type", "application/json")]);
    c.handle_response_head(get, head, NOW);
    c.handle_http_closed(get, NOW);
    assert!(matches!(
        &events(&mut c)[..],
        [ClientEvent::BackgroundDisabled]
    ));
    assert_eq!(c.poll_timeout(), None, "no reconnection scheduled");
}

#[test]
fn an_eventsource_reader_reconnects_after_a_clean_end_only() {
    // Reconnected while each stream ends cleanly (200, an event stream);
    // an answer that is not one fails it for good, as WHATWG says.
    for (status, content, again) in [
        (200, "text/event-stream", true),
        (200, "application/json", false),
        (500, "text/event-stream", false),
    ] {
        let (mut c, _) = v2025(ClientPolicy::EVENTSOURCE_RECONNECT);
        let (_, post) = streaming(&mut c, "tools/list");
        let ok = json!({"jsonrpc": "2.0", "id": post.body["id"], "result": {}});
        sse(&mut c, post.http, ok);
        let (now, gets) = break_then_fire(&mut c, post.http, NOW).unwrap();
        let [(get, Some(last))] = &gets[..] else {
            panic!("{gets:?}");
        };
        assert_eq!(last, "e1");
        let head = ResponseHead::from_wire(status, [("content-type", content)]);
        c.handle_response_head(*get, head, now);
        let next = break_then_fire(&mut c, *get, now).map(|(_, gets)| gets.len());
        assert_eq!(next.unwrap_or(0) == 1, again, "{status} {content}");
    }
}

#[test]
fn an_eventsource_reader_reconnects_at_most_reader_reconnects_max_times() {
    let (mut c, _) = v2025_with(
        |c| c.reader_reconnects_max = 2,
        ClientPolicy::EVENTSOURCE_RECONNECT,
    );
    let (_, post) = streaming(&mut c, "tools/list");
    let ok = json!({"jsonrpc": "2.0", "id": post.body["id"], "result": {}});
    sse(&mut c, post.http, ok);
    let (mut http, mut now, mut reconnects) = (post.http, NOW, 0);
    while let Some((at, gets)) = break_then_fire(&mut c, http, now) {
        let Some(&(get, _)) = gets.first() else {
            break;
        };
        stream_head(&mut c, get);
        (http, now) = (get, at);
        reconnects += 1;
        assert!(reconnects < 10);
    }
    assert_eq!(reconnects, 2);
}

#[test]
fn an_answer_over_the_bound_fails_its_request_at_once_instead_of_resuming() {
    let failure = |too_large: bool| {
        let (mut c, _) = v2025(ClientPolicy::FIXED);
        events(&mut c);
        let (id, post) = streaming(&mut c, "tools/call");
        // A priming event: the stream could be resumed from it.
        let priming = SseItem::NoMessage {
            id: Some("e0".into()),
        };
        c.handle_sse_event(post.http, priming, NOW);
        if too_large {
            c.handle_too_large(post.http, 1024);
        }
        c.handle_http_closed(post.http, NOW);
        events(&mut c).into_iter().find_map(|e| match e {
            ClientEvent::Failed { id: f, error } if f == id => Some(error),
            _ => None,
        })
    };
    assert_eq!(failure(true), Some(ClientError::TooLarge { max: 1024 }));
    assert_eq!(failure(false), None, "without it the stream is resumed");
}

#[test]
fn a_json_answer_without_the_response_says_what_it_held_instead() {
    let failure = |content_type: &str, body: &[u8]| {
        let (mut c, _) = v2025(ClientPolicy::FIXED);
        events(&mut c);
        let id = c.send_request("tools/call", None, NOW).unwrap();
        let post = sent(&mut c).remove(0);
        let head = ResponseHead::from_wire(200, [("content-type", content_type)]);
        c.handle_response_head(post.http, head, NOW);
        c.handle_body(post.http, body, NOW);
        c.handle_http_closed(post.http, NOW);
        events(&mut c).into_iter().find_map(|e| match e {
            ClientEvent::Failed { id: f, error } if f == id => Some(error),
            _ => None,
        })
    };
    let malformed = |why| Some(ClientError::Malformed(why));
    assert_eq!(
        failure("text/html", b"<html>502 Bad Gateway</html>"),
        malformed("its body was not JSON-RPC")
    );
    assert_eq!(
        failure(
            "application/json",
            br#"{"jsonrpc":"2.0","id":99,"result":{}}"#
        ),
        malformed("it answered an id the client never used")
    );
    assert_eq!(
        failure(
            "application/json",
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#
        ),
        malformed("it answered with an error that names no request")
    );
    // Only a notification: nothing wrong in it, the response never came.
    assert_eq!(
        failure(
            "application/json",
            br#"{"jsonrpc":"2.0","method":"notifications/message"}"#
        ),
        malformed("answer ended without the response")
    );
}

/// `JsonWithoutResponse::Wait` (rmcp's client, `RMCP_3_3`): a JSON answer
/// that holds no response leaves the request pending, no failure, until
/// its own deadline; FIXED fails it when the answer ends.
#[test]
fn rmcp_3_3_waits_for_a_response_no_stream_will_carry() {
    let answered = |policy: ClientPolicy, body: &[u8]| {
        let (mut c, _) = v2025(policy);
        events(&mut c);
        let id = c.send_request("tools/call", None, NOW).unwrap();
        let post = sent(&mut c).remove(0);
        let head = ResponseHead::from_wire(200, [("content-type", "application/json")]);
        c.handle_response_head(post.http, head, NOW);
        c.handle_body(post.http, body, NOW);
        c.handle_http_closed(post.http, NOW);
        let failed = events(&mut c)
            .into_iter()
            .any(|e| matches!(e, ClientEvent::Failed { id: f, .. } if f == id));
        (c, id, failed)
    };
    for body in [
        &br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#[..],
        b"{}",
    ] {
        let (_, _, failed) = answered(ClientPolicy::FIXED, body);
        assert!(failed, "FIXED fails it at once");
        let (mut c, id, failed) = answered(ClientPolicy::RMCP_3_3, body);
        assert!(!failed, "rmcp waits");
        assert!(c.pending().any(|p| p == id));
        let (deadline, _) = c.poll_timeout().expect("its deadline");
        c.handle_timeout(deadline);
        assert!(events(&mut c).into_iter().any(|e| matches!(
            e,
            ClientEvent::Failed { id: f, error: ClientError::Timeout } if f == id
        )));
    }
}

/// A call's stream is primed (`e0`) and closed for polling; its resumption
/// ends before any event. FIXED resumes from `e0` again; the TypeScript
/// SDK's client (`TS_SDK_1_32`) kept the cursor per connection, so it has
/// nothing to resume from, and leaves the call pending until its deadline.
/// A stream that ends with no event at all fails at once under FIXED and
/// is left pending the same way.
#[test]
fn ts_sdk_1_32_loses_its_place_after_an_empty_resumption() {
    let run = |policy: ClientPolicy, primed: bool| {
        let (mut c, _) = v2025(policy);
        events(&mut c);
        let (id, post) = streaming(&mut c, "tools/call");
        if primed {
            let priming = SseItem::NoMessage {
                id: Some("e0".into()),
            };
            c.handle_sse_event(post.http, priming, NOW);
        }
        c.handle_http_closed(post.http, NOW);
        let mut resumed_from = Vec::new();
        for _ in 0..2 {
            let Some((at, _)) = c
                .poll_timeout()
                .filter(|(_, t)| matches!(t, super::ClientTimer::Resume(_)))
            else {
                break;
            };
            c.handle_timeout(at);
            let Some(t) = std::iter::from_fn(|| c.poll_transmit()).find_map(|t| match t.kind {
                super::ClientTransmitKind::Send { head, .. }
                    if head.method == crate::head::Method::Get =>
                {
                    Some((t.http, head.header("last-event-id").map(str::to_owned)))
                }
                _ => None,
            }) else {
                break;
            };
            resumed_from.push(t.1.clone());
            stream_head(&mut c, t.0);
            c.handle_http_closed(t.0, at);
        }
        let failed = events(&mut c)
            .into_iter()
            .any(|e| matches!(e, ClientEvent::Failed { id: f, .. } if f == id));
        let pending = c.pending().any(|p| p == id);
        (resumed_from, failed, pending)
    };
    let e0 = Some("e0".to_owned());
    let (from, failed, pending) = run(ClientPolicy::FIXED, true);
    assert_eq!(
        from,
        [e0.clone(), e0.clone()],
        "FIXED resumes from e0 each time"
    );
    assert!(!failed && pending, "still resuming within its bound");
    let (from, failed, pending) = run(ClientPolicy::TS_SDK_1_32, true);
    assert_eq!(from, [e0], "one resumption, then no place to resume from");
    assert!(!failed && pending, "left pending");
    let (from, failed, _) = run(ClientPolicy::FIXED, false);
    assert!(
        from.is_empty() && failed,
        "FIXED: nothing to resume from, failed"
    );
    let (from, failed, pending) = run(ClientPolicy::TS_SDK_1_32, false);
    assert!(from.is_empty() && !failed && pending, "TS: left pending");
}

/// A POST `http` answered `202` with no body, and over: how a server
/// accepts a notification or an answer.
fn accepted(c: &mut ClientSession, http: HttpId) {
    let head = ResponseHead::from_wire(202, [("content-length", "0")]);
    c.handle_response_head(http, head, NOW);
    c.handle_http_closed(http, NOW);
}

/// The standalone GET never takes the pool's last free connection
/// (`ClientConfig::connections_max`): on one connection there is none; on
/// two it waits for the `notifications/initialized` POST to be done, then
/// takes one and leaves one for requests. csharp-sdk #1637's client
/// (`CSHARP_1637`) opens it beside that POST whatever the pool.
#[test]
fn the_standalone_get_leaves_the_pools_last_connection_to_requests() {
    let gets = |after: &[Sent]| after.iter().filter(|s| s.body.is_null()).count();
    let pool = |n| move |c: &mut ClientConfig| c.connections_max = n;
    let (_, after) = v2025_with(pool(None), ClientPolicy::FIXED);
    assert_eq!(gets(&after), 1, "no pool: the GET beside the POST");
    let (_, after) = v2025_with(pool(Some(1)), ClientPolicy::CSHARP_1637);
    assert_eq!(
        gets(&after),
        1,
        "csharp-sdk #1637: the GET whatever the pool"
    );
    for n in [1, 2] {
        let (mut c, after) = v2025_with(pool(Some(n)), ClientPolicy::FIXED);
        assert_eq!(
            gets(&after),
            0,
            "pool of {n}: not beside the initialized POST"
        );
        let notified = &after[0];
        assert_eq!(
            notified.body["method"], "notifications/initialized",
            "{:?}",
            notified.body
        );
        accepted(&mut c, notified.http);
        let later = sent(&mut c);
        assert_eq!(gets(&later), n - 1, "pool of {n}, the POST done");
    }
}

/// What the client transmits now, in order: each exchange sent (its
/// `Last-Event-ID`, and the `id` of the answer its body carries) or
/// aborted (`None`).
#[allow(clippy::type_complexity)]
fn transmits(c: &mut ClientSession) -> Vec<(HttpId, Option<(Option<String>, Value)>)> {
    std::iter::from_fn(|| c.poll_transmit())
        .map(|t| match t.kind {
            super::ClientTransmitKind::Send { head, body } => {
                let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let cursor = head.header("last-event-id").map(str::to_owned);
                (t.http, Some((cursor, body["id"].clone())))
            }
            super::ClientTransmitKind::Abort => (t.http, None),
        })
        .collect()
}

/// On a pool of one connection, the call's stream holds it while its tool
/// awaits the answer to the question that came on that stream. FIXED's
/// stream gives the connection to the answer and resumes from its last
/// event id behind it, after `retry` as any end it did not choose
/// (`AnswerRoom::YieldStream`); `AnswerRoom::Wait`
/// leaves the answer queued behind the stream that waits for it.
#[test]
fn an_answer_takes_the_connection_of_the_stream_that_asked() {
    use crate::policy::AnswerRoom;
    let run = |answer_room| {
        let pool = |c: &mut ClientConfig| c.connections_max = Some(1);
        let policy = ClientPolicy {
            answer_room,
            ..ClientPolicy::FIXED
        };
        let (mut c, after) = v2025_with(pool, policy);
        accepted(&mut c, after[0].http);
        assert!(sent(&mut c).is_empty(), "no GET on a pool of one");
        let (_, post) = streaming(&mut c, "tools/call");
        let question = json!({"jsonrpc": "2.0", "id": 7, "method": "roots/list"});
        sse(&mut c, post.http, question);
        events(&mut c);
        c.respond(RequestId::Num(7), Ok(RawJson::empty_object()), NOW)
            .unwrap();
        let out = transmits(&mut c);
        (c, post.http, out)
    };
    let (mut c, stream, out) = run(AnswerRoom::YieldStream);
    let [(answer, Some((None, id))), (aborted, None)] = &out[..] else {
        panic!("answer, abort: {out:?}");
    };
    assert_eq!(*id, json!(7), "the answer first");
    assert_eq!(*aborted, stream, "the asking stream yields");
    let retry = Duration::from_millis(c.config().retry_default_ms);
    c.handle_timeout(NOW + retry);
    let resumed = transmits(&mut c);
    let [(resumption, Some((Some(cursor), _)))] = &resumed[..] else {
        panic!("the resumption, after retry: {resumed:?}");
    };
    assert!(resumption > answer, "queued after the answer");
    assert_eq!(cursor, "e1", "from the stream's last event id");

    let (_, _, out) = run(AnswerRoom::Wait);
    assert!(
        matches!(&out[..], [(_, Some((None, id)))] if *id == json!(7)),
        "the answer alone, queued: {out:?}"
    );
}

/// A question on the standalone GET while a call's stream, which has read
/// nothing yet, and the GET fill a pool of two: the GET yields (it is
/// opened again once a connection is spare), and the call's stream keeps
/// its connection.
#[test]
fn an_answer_to_a_question_on_the_get_takes_the_gets_connection() {
    let pool = |c: &mut ClientConfig| c.connections_max = Some(2);
    let (mut c, after) = v2025_with(pool, ClientPolicy::FIXED);
    accepted(&mut c, after[0].http);
    let get = sent(&mut c).remove(0);
    assert!(get.body.is_null(), "the GET, once the POST is done");
    stream_head(&mut c, get.http);
    let (_, post) = streaming(&mut c, "tools/call");
    let question = json!({"jsonrpc": "2.0", "id": 8, "method": "roots/list"});
    sse(&mut c, get.http, question);
    events(&mut c);
    c.respond(RequestId::Num(8), Ok(RawJson::empty_object()), NOW)
        .unwrap();
    let out = transmits(&mut c);
    let [(answer, Some((None, id))), (aborted, None)] = &out[..] else {
        panic!("answer, the GET aborted: {out:?}");
    };
    assert_eq!(*id, json!(8));
    assert_eq!(*aborted, get.http, "the GET yields, not the call's stream");
    accepted(&mut c, *answer);
    assert!(transmits(&mut c).is_empty(), "no spare connection yet");
    let done = json!({"jsonrpc": "2.0", "id": post.body["id"], "result": {}});
    sse(&mut c, post.http, done);
    c.handle_http_closed(post.http, NOW);
    let again: Vec<_> = transmits(&mut c)
        .into_iter()
        .filter_map(|(_, send)| send)
        .collect();
    assert!(
        matches!(&again[..], [(Some(cursor), Value::Null)] if cursor == "e1"),
        "the GET again, from its cursor: {again:?}"
    );
}

/// A call whose stream carries the server's request `0` and then its
/// cancellation: what the application hears, and whether it may answer.
fn question_then_cancel(policy: ClientPolicy) -> (ClientSession, Vec<ClientEvent>) {
    let (mut c, _) = v2025(policy);
    let (_, post) = streaming(&mut c, "tools/call");
    sse(
        &mut c,
        post.http,
        json!({"jsonrpc": "2.0", "id": 0, "method": "roots/list"}),
    );
    let asked = events(&mut c);
    assert!(
        matches!(
            &asked[..],
            [ClientEvent::ServerRequest {
                id: RequestId::Num(0),
                ..
            }]
        ),
        "{asked:?}"
    );
    assert_eq!(c.asked().collect::<Vec<_>>(), [&RequestId::Num(0)]);
    sse(
        &mut c,
        post.http,
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 0, "reason": "timed out"}}),
    );
    let heard = events(&mut c);
    (c, heard)
}

#[test]
fn a_request_the_server_cancels_is_withdrawn_and_never_answered() {
    let (mut c, heard) = question_then_cancel(ClientPolicy::FIXED);
    assert!(
        matches!(&heard[..], [ClientEvent::ServerRequestCancelled { id: RequestId::Num(0), reason: Some(r) }] if r == "timed out"),
        "{heard:?}"
    );
    assert_eq!(c.asked().count(), 0);
    assert!(matches!(
        c.respond(RequestId::Num(0), Ok(RawJson::empty_object()), NOW),
        Err(ClientUsageError::UnknownRequest(_))
    ));
    assert!(
        sent(&mut c).is_empty(),
        "nothing answers a withdrawn request"
    );
}

#[test]
fn ts_sdk_2_0_ignores_a_cancellation_of_request_zero_and_answers_it() {
    let (mut c, heard) = question_then_cancel(ClientPolicy::TS_SDK_2_0);
    assert!(
        matches!(&heard[..], [ClientEvent::Notification { method, .. }] if method == "notifications/cancelled"),
        "passed on as a notice, not a withdrawal: {heard:?}"
    );
    c.respond(RequestId::Num(0), Ok(RawJson::empty_object()), NOW)
        .unwrap();
    let answer = sent(&mut c);
    assert_eq!(answer.len(), 1);
    assert_eq!(answer[0].body["id"], 0, "answered after its cancellation");
}

#[test]
fn a_request_answered_once_cannot_be_answered_again_and_a_flood_is_refused() {
    let (mut c, _) = v2025_with(|cfg| cfg.asked_max = 1, ClientPolicy::FIXED);
    let (_, post) = streaming(&mut c, "tools/call");
    for id in [7, 8] {
        let ask = json!({"jsonrpc": "2.0", "id": id, "method": "roots/list"});
        sse(&mut c, post.http, ask);
    }
    assert_eq!(
        events(&mut c).len(),
        1,
        "one held: the second past asked_max"
    );
    let refusal = sent(&mut c);
    assert_eq!(refusal.len(), 1);
    assert_eq!(refusal[0].body["id"], 8);
    assert_eq!(refusal[0].body["error"]["code"], -32603);
    c.respond(RequestId::Num(7), Ok(RawJson::empty_object()), NOW)
        .unwrap();
    assert!(c
        .respond(RequestId::Num(7), Ok(RawJson::empty_object()), NOW)
        .is_err());
}

/// A call in flight, and the server's elicitation for it sent on the
/// standalone GET (mcp-go before PR #933); then the call's own response.
fn question_on_the_get_during_a_call(policy: ClientPolicy) -> (Vec<ClientEvent>, Vec<ClientEvent>) {
    let (mut c, after) = v2025(policy);
    let get = after.iter().find(|s| s.body.is_null()).unwrap().http;
    stream_head(&mut c, get);
    let (_, post) = streaming(&mut c, "tools/call");
    sse(
        &mut c,
        get,
        json!({"jsonrpc": "2.0", "id": 0, "method": "elicitation/create"}),
    );
    let during = events(&mut c);
    sse(
        &mut c,
        post.http,
        json!({"jsonrpc": "2.0", "id": post.body["id"], "result": {}}),
    );
    (during, events(&mut c))
}

#[test]
fn a_request_on_the_get_waits_for_the_calls_only_under_after_calls() {
    let asked = |e: &ClientEvent| {
        matches!(
            e,
            ClientEvent::ServerRequest {
                id: RequestId::Num(0),
                ..
            }
        )
    };
    let (during, after) = question_on_the_get_during_a_call(ClientPolicy::FIXED);
    assert!(during.iter().any(asked), "FIXED: on arrival {during:?}");
    assert!(!after.iter().any(asked), "{after:?}");
    let (during, after) = question_on_the_get_during_a_call(ClientPolicy::CODEX_DESKTOP_2026_07);
    assert!(
        !during.iter().any(asked),
        "held back while the call is in flight {during:?}"
    );
    assert!(
        matches!(&after[..], [ClientEvent::Response { .. }, e] if asked(e)),
        "handed out once the call ended, after its response {after:?}"
    );
    // On the call's own stream it is handed out at once.
    let (mut c, _) = v2025(ClientPolicy::CODEX_DESKTOP_2026_07);
    let (_, post) = streaming(&mut c, "tools/call");
    sse(
        &mut c,
        post.http,
        json!({"jsonrpc": "2.0", "id": 0, "method": "elicitation/create"}),
    );
    assert!(events(&mut c).iter().any(asked));
}

/// A cancelled request's POST: FIXED aborts it with the request (its
/// connection free at once, whatever the server does with the stream); the
/// TypeScript SDK's client, and Python's in the session era
/// ([`CancelledStream::ReadToEnd`]), read it on,
/// dropping what comes, until the server ends it. Either way the caller has
/// its outcome and the server is told.
///
/// [`CancelledStream::ReadToEnd`]: crate::policy::CancelledStream::ReadToEnd
#[test]
fn a_cancelled_requests_stream_is_aborted_or_read_to_its_end() {
    use super::Purpose;
    let run = |policy: ClientPolicy| {
        let (mut c, _) = v2025(policy);
        let (id, post) = streaming(&mut c, "tools/call");
        c.cancel(&id, NOW).unwrap();
        let notice = sent(&mut c);
        assert_eq!(notice[0].body["method"], "notifications/cancelled");
        let failed = events(&mut c).into_iter().any(|e| {
            matches!(e, ClientEvent::Failed { id: f, error: ClientError::Cancelled } if f == id)
        });
        assert!(failed, "the caller has its outcome");
        (c, post)
    };
    for policy in [ClientPolicy::FIXED, ClientPolicy::RMCP_3_9] {
        let (c, post) = run(policy);
        assert_eq!(c.purpose(post.http), None, "aborted with the request");
    }
    let (c, post) = run(ClientPolicy::PYTHON_2_3);
    assert!(
        matches!(c.purpose(post.http), Some(Purpose::Request(_))),
        "Python's session era reads it on too"
    );
    let (mut c, post) = run(ClientPolicy::TS_SDK_1_32);
    assert!(
        matches!(c.purpose(post.http), Some(Purpose::Request(_))),
        "still read"
    );
    let late = json!({"jsonrpc": "2.0", "id": post.body["id"], "result": {}});
    let post = post.http;
    sse(&mut c, post, late);
    assert!(events(&mut c).is_empty(), "the late answer is dropped");
    c.handle_http_closed(post, NOW);
    assert_eq!(c.purpose(post), None, "gone once the server ends it");
    assert!(events(&mut c).is_empty());
    assert!(c.is_ready());
}
