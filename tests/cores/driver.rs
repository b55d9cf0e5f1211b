//! [`ServerDriver`] on its own, as a transport sees it: requests in, `Write`s
//! out (whole or streamed, each saying when its exchange is over), time in,
//! closed exchanges in; the monitor judging every observation.

use mcp_streamable::head::RequestHead;
use mcp_streamable::ids::{HttpId, SessionId};
use mcp_streamable::policy::ServerPolicy;
use mcp_streamable::principal::Caller;
use mcp_streamable::server::wire::Write;
use mcp_streamable::server::{Admission, Cause, EndpointConfig, UnreadBody};
use mcp_streamable::version::ProtocolVersion;
use mcp_streamable_hyper::everything::Counting;

use crate::common::driver::{sse_events, DriverHarness as Harness};

impl Harness {
    fn post(&mut self, session: Option<&SessionId>, body: &str) -> HttpId {
        let head = RequestHead::post(session, session.map(|_| ProtocolVersion::LATEST));
        self.send(head, body)
    }

    fn initialize(&mut self) -> SessionId {
        let http = self.post(
            None,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        );
        let writes = self.writes();
        assert_eq!(writes.len(), 1, "one write: {writes:?}");
        let (h, w) = &writes[0];
        assert_eq!(*h, http);
        let Write::Whole { head, body } = w else {
            panic!("an answer given at once is a whole body: {w:?}")
        };
        assert_eq!(head.status, 200);
        assert!(String::from_utf8_lossy(body).contains(r#""id":1,"result""#));
        assert!(!self.driver.is_open(http), "a whole body ends the exchange");
        let sid: SessionId = head.header("mcp-session-id").unwrap().parse().unwrap();
        let http = self.post(
            Some(&sid),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        );
        let writes = self.writes();
        assert!(
            matches!(&writes[..], [(h, Write::Whole { head, body })] if *h == http && head.status == 202 && body.is_empty())
        );
        sid
    }
}

fn data(bytes: &[u8]) -> Vec<String> {
    sse_events(bytes)
        .into_iter()
        .filter(|(_, d)| !d.is_empty())
        .map(|(_, d)| d)
        .collect()
}

#[test]
fn answers_at_once_are_whole_bodies_and_late_ones_stream_with_app_timers() {
    let mut h = Harness::new();
    let sid = h.initialize();
    // Progress comes on timers of the application: the head goes first, alone.
    let call = h.post(
        Some(&sid),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":"p"}}}"#,
    );
    let writes = h.writes();
    let [(http, Write::Open { head, body })] = &writes[..] else {
        panic!("a stream opens: {writes:?}")
    };
    assert_eq!(
        (*http, head.header("content-type")),
        (call, Some("text/event-stream"))
    );
    let mut events = data(body);
    assert!(h.driver.is_open(call));
    let mut ended = false;
    for _ in 0..20 {
        let Some(at) = h.driver.poll_timeout() else {
            break;
        };
        h.now = at.as_millis();
        let now = h.now();
        h.driver.handle_timeout(now);
        for (http, w) in h.writes() {
            assert_eq!(http, call);
            assert!(matches!(w, Write::More(_) | Write::Last(_)));
            events.extend(data(w.body()));
            ended |= w.ends();
        }
        if ended {
            break;
        }
    }
    assert!(ended, "the stream ended with the answer");
    assert!(!h.driver.is_open(call));
    assert_eq!(
        events
            .iter()
            .filter(|e| e.contains("notifications/progress"))
            .count(),
        3
    );
    assert!(events.last().unwrap().contains(r#""id":2,"result""#));
    h.clean();
}

#[test]
fn slow_progress_counts_as_asked_on_the_apps_timers_and_within_its_bounds() {
    let mut h = Harness::new();
    let sid = h.initialize();
    let start = h.now;
    let call = h.post(
        Some(&sid),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow_progress","arguments":{"steps":5,"step_ms":200},"_meta":{"progressToken":"p"}}}"#,
    );
    let mut events: Vec<(u64, String)> = Vec::new();
    for (http, w) in h.writes() {
        assert_eq!(http, call);
        events.extend(data(w.body()).into_iter().map(|e| (h.now, e)));
    }
    // Bounded: a count that never ends fails here, not by hanging.
    for _ in 0..100 {
        if !h.driver.is_open(call) {
            break;
        }
        let at = h
            .driver
            .poll_timeout()
            .expect("a timer while the call runs");
        h.now = at.as_millis();
        let now = h.now();
        h.driver.handle_timeout(now);
        for (http, w) in h.writes() {
            assert_eq!(http, call);
            events.extend(data(w.body()).into_iter().map(|e| (h.now, e)));
        }
    }
    assert!(!h.driver.is_open(call), "the call ended");
    let progress: Vec<(u64, String)> = events
        .iter()
        .filter(|(_, e)| e.contains("notifications/progress"))
        .map(|(t, e)| {
            let v: serde_json::Value = serde_json::from_str(e).unwrap();
            (t - start, v["params"]["progress"].to_string())
        })
        .collect();
    let expected: Vec<(u64, String)> = [0, 25, 50, 75, 100]
        .iter()
        .enumerate()
        .map(|(k, p)| (200 * k as u64, p.to_string()))
        .collect();
    assert_eq!(progress, expected, "five steps, 200 ms apart, 0 to 100");
    let (at, last) = events.last().unwrap();
    assert!(
        last.contains(r#""id":2,"result""#),
        "then the answer: {last}"
    );
    assert_eq!(at - start, 800);
    // Asked for more than its bounds: 100 steps at most, 1 s apart at most.
    let asked = serde_json::json!({"steps": 1_000_000, "step_ms": 1_000_000});
    let c = Counting::slow(&asked);
    assert_eq!(
        (c.steps, c.step_ms),
        (Counting::STEPS_MAX, Counting::STEP_MS_MAX)
    );
    let c = Counting::slow(&serde_json::json!({"steps": 0}));
    assert_eq!(
        (c.steps, c.step_ms),
        (1, 100),
        "one step at least; 100 ms by default"
    );
    assert_eq!(Counting::slow(&serde_json::json!({})).steps, 10);
    h.clean();
}

#[test]
fn a_closed_stream_gets_no_more_writes_and_a_get_stream_carries_notifications() {
    let mut h = Harness::new();
    let sid = h.initialize();
    let now = h.now();
    let get = h.get(&sid);
    // The `notify` tool: an unrelated notification, on the GET stream.
    let call = h.post(
        Some(&sid),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"notify","arguments":{}}}"#,
    );
    let writes = h.writes();
    assert!(writes.iter().any(|(http, w)| *http == call && w.ends()));
    let on_get: Vec<String> = writes
        .iter()
        .filter(|(http, _)| *http == get)
        .flat_map(|(_, w)| data(w.body()))
        .collect();
    assert!(
        on_get
            .iter()
            .any(|d| d.contains("notifications/tools/list_changed")),
        "{writes:?}"
    );
    // The peer hangs up: nothing more is written there.
    h.driver.handle_http_closed(get, now);
    assert!(!h.driver.is_open(get));
    h.post(
        Some(&sid),
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"notify","arguments":{}}}"#,
    );
    assert!(h.writes().iter().all(|(http, _)| *http != get));
    h.clean();
}

#[test]
fn refusals_are_whole_json_rpc_errors_and_an_unread_body_is_answered() {
    let mut h = Harness::new();
    let now = h.now();
    let http = h.post(None, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let writes = h.writes();
    let [(x, Write::Whole { head, body })] = &writes[..] else {
        panic!("{writes:?}")
    };
    assert_eq!((*x, head.status), (http, 400));
    let v: serde_json::Value = serde_json::from_slice(body).unwrap();
    assert!(v["error"]["code"].is_i64());
    let big = h.driver.handle_request(
        &RequestHead::post(None, None),
        Err(UnreadBody::TooLarge),
        &Caller::default(),
        now,
    );
    let writes = h.writes();
    assert!(
        matches!(&writes[..], [(x, Write::Whole { head, .. })] if *x == big && head.status == 413)
    );
    assert!(!h.driver.has_open_exchanges());
    h.clean();
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

impl Harness {
    /// A standalone GET of `sid`, sent.
    fn send_get(&mut self, sid: &SessionId) -> HttpId {
        let now = self.now();
        self.driver.handle_request(
            &RequestHead::get(sid, ProtocolVersion::LATEST, None),
            Ok(b""),
            &Caller::default(),
            now,
        )
    }

    /// `initialize`, whatever its answer's framing, then
    /// `notifications/initialized`, not read: the session and that POST.
    fn initialize_then_post_initialized(&mut self) -> (SessionId, HttpId) {
        self.post(None, INITIALIZE);
        let writes = self.writes();
        let sid: SessionId = match &writes[..] {
            [(_, Write::Whole { head, .. } | Write::Open { head, .. })] => {
                head.header("mcp-session-id").unwrap().parse().unwrap()
            }
            _ => panic!("{writes:?}"),
        };
        let initialized = self.post(
            Some(&sid),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        );
        (sid, initialized)
    }

    /// A standalone GET of `sid`, open.
    fn get(&mut self, sid: &SessionId) -> HttpId {
        let get = self.send_get(sid);
        let writes = self.writes();
        assert!(matches!(&writes[..], [(g, Write::Open { .. })] if *g == get));
        get
    }
}

/// The messages on exchange `http` among `writes` whose data mention `what`.
fn count_on(writes: &[(HttpId, Write)], http: HttpId, what: &str) -> usize {
    writes
        .iter()
        .filter(|(h, _)| *h == http)
        .flat_map(|(_, w)| data(w.body()))
        .filter(|d| d.contains(what))
        .count()
}

/// What a shell asks before it parks a session: whether an exchange is
/// still being answered, whether the application holds a timer.
#[test]
fn open_exchanges_and_app_timers_are_what_a_shell_parks_by() {
    let mut h = Harness::new();
    let sid = h.initialize();
    assert!(!h.driver.has_open_exchanges() && !h.driver.has_app_timers());
    let call = h.post(
        Some(&sid),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":"p"}}}"#,
    );
    h.writes();
    assert!(h.driver.has_open_exchanges(), "the call's stream is open");
    assert!(h.driver.has_app_timers(), "its progress comes on timers");
    for _ in 0..20 {
        if !h.driver.has_app_timers() {
            break;
        }
        let at = h.driver.poll_timeout().expect("a timer is set");
        h.now = at.as_millis();
        h.driver.handle_timeout(at);
        h.writes();
    }
    assert!(!h.driver.has_app_timers(), "the tool's timers are done");
    assert!(!h.driver.is_open(call) && !h.driver.has_open_exchanges());
    h.clean();
}

/// A shell with one endpoint per session admits a new session through a
/// table it shares (the id returned is the exchange the answer goes on) and
/// ends, through the driver, a session that table evicts.
#[test]
fn a_session_admitted_by_a_shared_table_and_one_evicted_through_the_driver() {
    let mut h = Harness::new();
    let first = h.initialize();
    let mut admission = Admission::default();
    let now = h.now();
    let http = h.driver.handle_request_admitting(
        &RequestHead::post(None, None),
        INITIALIZE.as_bytes(),
        &Caller::default(),
        &mut admission,
        now,
    );
    let writes = h.writes();
    assert!(
        matches!(&writes[..], [(x, Write::Whole { head, .. })] if *x == http && head.status == 200),
        "{http:?}: {writes:?}"
    );
    h.driver.evict(&first, now);
    let ping = h.post(Some(&first), r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#);
    let writes = h.writes();
    assert!(
        matches!(&writes[..], [(x, Write::Whole { head, .. })] if *x == ping && head.status == 404),
        "the evicted session is gone: {writes:?}"
    );
    h.clean();
}

/// A broadcast made in another endpoint (a shell's fan-out) reaches every
/// GET here and says how many got it; the application run from outside any
/// callback (`with_app`) notifies through its `Cx`.
#[test]
fn a_broadcast_from_elsewhere_and_the_app_run_from_outside_reach_the_gets() {
    let mut h = Harness::new();
    let (a, b) = (h.initialize(), h.initialize());
    let (get_a, get_b) = (h.get(&a), h.get(&b));
    let now = h.now();
    let list = "notifications/tools/list_changed";
    assert_eq!(h.driver.handle_broadcast(list, None, now), 2);
    let writes = h.writes();
    assert_eq!(
        (
            count_on(&writes, get_a, list),
            count_on(&writes, get_b, list)
        ),
        (1, 1)
    );
    h.driver.with_app(a.clone(), now, |_, cx| {
        assert!(cx.notify("notifications/message", None, Cause::Unrelated));
    });
    let writes = h.writes();
    assert_eq!(count_on(&writes, get_a, "notifications/message"), 1);
    assert_eq!(count_on(&writes, get_b, "notifications/message"), 0);
    h.clean();
}

/// Under mcp-go's competing listeners (MCP_GO_0_44) a notification waits in
/// the shared queue until a scheduling point hands it on: the driver plays
/// the scheduler, so the notification still goes out, on a stream.
#[test]
fn under_mcp_go_the_driver_fires_the_scheduling_points_that_send_a_notification() {
    let mut h = Harness::with_policy(EndpointConfig::default(), ServerPolicy::MCP_GO_0_44);
    let (sid, initialized) = h.initialize_then_post_initialized();
    // Its handler's two steps (write the 202 head, then return) are
    // scheduling points too: the head and the end go out only because the
    // driver fires them.
    match &h.writes()[..] {
        [(a, Write::Open { head, body }), (b, Write::Last(last))] => {
            assert_eq!((*a, *b, head.status), (initialized, initialized, 202));
            assert!(body.is_empty() && last.is_empty());
        }
        other => panic!("{other:?}"),
    }
    let get = h.send_get(&sid);
    h.writes();
    let call = h.post(
        Some(&sid),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"notify","arguments":{}}}"#,
    );
    let writes = h.writes();
    let list = "notifications/tools/list_changed";
    assert_eq!(
        count_on(&writes, get, list) + count_on(&writes, call, list),
        1,
        "{writes:?}"
    );
}

/// Under CSHARP_BEFORE_1212 a GET's `200` goes out before its stream is
/// wired. Taken in the GET's own turn, the wiring leaves no window; held
/// back by a step delay, as a slow scheduler would, it leaves one that a
/// broadcast lands in and is lost (the monitor's B4), until the driver's
/// own timer wires the stream. Competing points are not held: mcp-go's
/// handler still answers its notification in the same turn.
#[test]
fn a_step_delay_holds_the_window_steps_back_until_their_timer() {
    let list = "notifications/tools/list_changed";
    for delay in [None, Some(200)] {
        let mut h =
            Harness::with_policy(EndpointConfig::default(), ServerPolicy::CSHARP_BEFORE_1212);
        if let Some(ms) = delay {
            h = h.with_step_delay(ms);
        }
        let sid = h.initialize();
        let get = h.get(&sid);
        let opened = h.now();
        assert_eq!(h.driver.has_held_steps(), delay.is_some());
        if let Some(ms) = delay {
            let due = opened + std::time::Duration::from_millis(ms);
            assert_eq!(h.driver.poll_timeout(), Some(due));
        }
        h.now += 50;
        let now = h.now();
        h.driver.handle_broadcast(list, None, now);
        let lost = count_on(&h.writes(), get, list) == 0;
        assert_eq!(lost, delay.is_some(), "{delay:?}");
        let violations: Vec<&str> = {
            let m = h.monitor.lock().unwrap();
            m.violations().iter().map(|v| v.id).collect()
        };
        assert_eq!(
            violations.contains(&"B4"),
            delay.is_some(),
            "{violations:?}"
        );
        if let Some(ms) = delay {
            // Not yet due, then due: the driver wires the stream itself.
            h.driver.handle_timeout(h.now());
            assert!(h.driver.has_held_steps());
            h.now = opened.as_millis() + ms;
            h.driver.handle_timeout(h.now());
            assert!(!h.driver.has_held_steps());
        }
        let now = h.now();
        h.driver.handle_broadcast(list, None, now);
        assert_eq!(count_on(&h.writes(), get, list), 1, "wired: {delay:?}");
    }
    let mut h = Harness::with_policy(EndpointConfig::default(), ServerPolicy::MCP_GO_0_44)
        .with_step_delay(200);
    let (_, initialized) = h.initialize_then_post_initialized();
    let writes = h.writes();
    assert!(
        writes
            .iter()
            .any(|(http, w)| *http == initialized && w.ends()),
        "{writes:?}"
    );
    assert!(!h.driver.has_held_steps());
}

/// A tap sees each request as the driver takes it and each exchange the
/// peer closed (what the monitor judges the server's side by).
#[test]
fn the_tap_sees_each_request_and_each_close() {
    use mcp_streamable::app::Tap;
    use mcp_streamable::id_source::IdSource;
    use mcp_streamable::server::{ServerDriver, ServerEndpoint};
    use mcp_streamable::time::Instant;
    use mcp_streamable_check::monitor::Observation;
    use mcp_streamable_hyper::EverythingApp;
    use std::sync::{Arc, Mutex};
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let tap: Tap = Box::new(move |o: &Observation| match o {
        Observation::Request { http, .. } => s.lock().unwrap().push(("request", *http)),
        Observation::Closed { http } => s.lock().unwrap().push(("closed", *http)),
        _ => {}
    });
    let ep = ServerEndpoint::with_ids(
        EndpointConfig::default(),
        ServerPolicy::FIXED,
        IdSource::reproducible(7),
    );
    let mut driver = ServerDriver::new(ep, EverythingApp::default(), 1)
        .with_tap(Some(Arc::new(Mutex::new(tap))));
    let now = Instant::ZERO;
    let init = driver.handle_request(
        &RequestHead::post(None, None),
        Ok(INITIALIZE.as_bytes()),
        &Caller::default(),
        now,
    );
    let sid: SessionId = match driver.poll_write() {
        Some((_, Write::Whole { head, .. })) => {
            head.header("mcp-session-id").unwrap().parse().unwrap()
        }
        w => panic!("{w:?}"),
    };
    let initialized = driver.handle_request(
        &RequestHead::post(Some(&sid), Some(ProtocolVersion::LATEST)),
        Ok(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
        &Caller::default(),
        now,
    );
    let get = driver.handle_request(
        &RequestHead::get(&sid, ProtocolVersion::LATEST, None),
        Ok(b""),
        &Caller::default(),
        now,
    );
    driver.handle_http_closed(get, now);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            ("request", init),
            ("request", initialized),
            ("request", get),
            ("closed", get)
        ]
    );
}

/// A session that ends takes its application's timers with it, and only
/// its own: another session's call on timers goes on to its result.
#[test]
fn an_ended_session_takes_its_app_timers_and_only_its_own() {
    let mut h = Harness::new();
    let (a, b) = (h.initialize(), h.initialize());
    let progress = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":"p"}}}"#;
    let call_a = h.post(Some(&a), progress);
    let call_b = h.post(Some(&b), progress);
    h.writes();
    let now = h.now();
    h.driver
        .handle_request(&RequestHead::delete(&a), Ok(b""), &Caller::default(), now);
    h.writes();
    let mut result_b = false;
    for _ in 0..20 {
        let Some(at) = h
            .driver
            .poll_timeout()
            .filter(|_| h.driver.has_app_timers())
        else {
            break;
        };
        h.now = at.as_millis();
        h.driver.handle_timeout(at);
        for (http, w) in h.writes() {
            assert_ne!(http, call_a, "nothing more for the ended session: {w:?}");
            if http == call_b && data(w.body()).iter().any(|d| d.contains(r#""result""#)) {
                result_b = true;
            }
        }
    }
    assert!(result_b, "b's call went on to its result");
    assert!(!h.driver.has_app_timers());
}

/// `test_sampling` asks the client on the call's own stream (R7) and answers
/// the call with what the client's answer said.
#[test]
fn a_tool_that_asks_the_client_answers_with_what_the_client_said() {
    let mut h = Harness::new();
    let sid = h.initialize();
    let call = h.post(
        Some(&sid),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_sampling","arguments":{"prompt":"hi"}}}"#,
    );
    let writes = h.writes();
    let [(http, Write::Open { body, .. })] = &writes[..] else {
        panic!("a stream opens with the question: {writes:?}")
    };
    assert_eq!(*http, call);
    let asked: serde_json::Value = data(body)
        .iter()
        .find_map(|d| serde_json::from_str(d).ok())
        .expect("a message on the call's stream");
    assert_eq!(asked["method"], "sampling/createMessage");
    assert_eq!(asked["params"]["messages"][0]["content"]["text"], "hi");
    let answer = format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{{"role":"assistant","content":{{"type":"text","text":"hello"}},"model":"m"}}}}"#,
        asked["id"]
    );
    let reply = h.post(Some(&sid), &answer);
    let mut events = Vec::new();
    for (http, w) in h.writes() {
        if http == reply {
            assert!(matches!(&w, Write::Whole { head, .. } if head.status == 202));
        } else {
            assert_eq!(http, call);
            events.extend(data(w.body()));
        }
    }
    let result = events
        .iter()
        .find(|e| e.contains(r#""id":2,"result""#))
        .expect("the call answered");
    assert!(result.contains("LLM response: hello"), "{result}");
    assert!(!h.driver.is_open(call));
    h.clean();
}
