//! The 2026-07-28 era beside the session era, on one endpoint, as a
//! transport sees it ([`ServerDriver`] with the reference application, the
//! monitor judging every observation): each rule of
//! `basic/transports/streamable-http.mdx` a server must keep, with the
//! status and JSON-RPC error the spec names.

use mcp_streamable::head::{Method, RequestHead};
use mcp_streamable::ids::{HttpId, SessionId};
use mcp_streamable::jsonrpc::RawJson;
use mcp_streamable::server::wire::Write;
use mcp_streamable::server::EndpointConfig;
use mcp_streamable::sse::{SseDecoder, SseItem};
use serde_json::{json, Value};

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// What came back on one exchange.
#[derive(Debug, Default)]
struct Answer {
    status: u16,
    headers: Vec<(&'static str, std::borrow::Cow<'static, str>)>,
    body: Vec<u8>,
    ended: bool,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_ref())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    fn error_code(&self) -> Option<i64> {
        self.json()["error"]["code"].as_i64()
    }

    /// SSE events: (id, data).
    fn events(&self) -> Vec<(Option<String>, String)> {
        sse_events(&self.body)
    }
}

use crate::common;

use crate::common::driver::{sse_events, DriverHarness as Harness};

impl Harness {
    /// A 2026-07-28 POST with the standard headers (`name`: `Mcp-Name`).
    fn v2026(&mut self, method: &str, name: Option<&str>, body: &str) -> HttpId {
        let mut head = RequestHead::post(None, None)
            .with("mcp-protocol-version", "2026-07-28")
            .with("mcp-method", method);
        if let Some(n) = name {
            head = head.with("mcp-name", n);
        }
        self.send(head, body)
    }

    /// A 2026-07-28 call of the progress tool (three progress notifications on
    /// application timers, then the answer), request id `id`.
    fn progress_call(&mut self, id: u64) -> HttpId {
        let meta = r#""_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"test_tool_with_progress","arguments":{{}},{meta}}}}}"#
        );
        self.v2026("tools/call", Some("test_tool_with_progress"), &body)
    }

    /// Everything written so far on `http`.
    fn answer(&mut self, http: HttpId, answer: &mut Answer) {
        while let Some((h, w)) = self.driver.poll_write() {
            assert_eq!(h, http, "a write for another exchange: {w:?}");
            answer.ended |= w.ends();
            match w {
                Write::Whole { head, body } | Write::Open { head, body } => {
                    answer.status = head.status;
                    answer.headers = head.headers;
                    answer.body.extend(body);
                }
                Write::More(b) | Write::Last(b) => answer.body.extend(b),
            }
        }
    }

    /// The whole answer to `http`, running the application's timers.
    fn finish(&mut self, http: HttpId) -> Answer {
        let mut a = Answer::default();
        self.answer(http, &mut a);
        for _ in 0..100 {
            if a.ended {
                break;
            }
            let Some(at) = self.driver.poll_timeout() else {
                break;
            };
            self.now = at.as_millis().max(self.now);
            let now = self.now();
            self.driver.handle_timeout(now);
            self.answer(http, &mut a);
        }
        a
    }

    fn call(&mut self, http: HttpId) -> Answer {
        self.finish(http)
    }
}

fn request(id: u64, method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params}}}}}"#)
}

#[test]
fn discover_is_a_whole_json_answer_naming_both_eras_and_no_session() {
    let mut h = Harness::new();
    let http = h.v2026(
        "server/discover",
        None,
        &request(1, "server/discover", META),
    );
    let a = h.call(http);
    assert_eq!(a.status, 200);
    assert_eq!(a.header("content-type"), Some("application/json"));
    assert_eq!(a.header("mcp-session-id"), None);
    let r = &a.json()["result"];
    assert_eq!(r["resultType"], "complete");
    let versions = r["supportedVersions"].as_array().unwrap();
    assert!(versions.contains(&json!("2026-07-28")) && versions.contains(&json!("2025-11-25")));
    assert_eq!(
        (r["ttlMs"].clone(), r["cacheScope"].clone()),
        (json!(0), json!("private"))
    );
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mcp-streamable-everything"
    );
    assert!(r["capabilities"]["tools"].is_object());
    assert_eq!(h.driver.endpoint().session_ids().count(), 0, "nothing kept");
    h.clean();
}

#[test]
fn every_disagreement_is_400_header_mismatch_with_the_request_id() {
    let call = |name: &str, meta: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"{name}","arguments":{{"text":"hi"}},{meta}}}}}"#
        )
    };
    let other_version = META.replace("2026-07-28", "2025-11-25");
    // (what, MCP-Protocol-Version, Mcp-Method, Mcp-Name, body)
    let cases = [
        (
            "Mcp-Method names another method",
            Some("2026-07-28"),
            Some("tools/list"),
            Some("echo"),
            call("echo", META),
        ),
        (
            "Mcp-Method missing",
            Some("2026-07-28"),
            None,
            Some("echo"),
            call("echo", META),
        ),
        (
            "Mcp-Method in another case",
            Some("2026-07-28"),
            Some("TOOLS/CALL"),
            Some("echo"),
            call("echo", META),
        ),
        (
            "Mcp-Name names another tool",
            Some("2026-07-28"),
            Some("tools/call"),
            Some("other"),
            call("echo", META),
        ),
        (
            "Mcp-Name missing",
            Some("2026-07-28"),
            Some("tools/call"),
            None,
            call("echo", META),
        ),
        (
            "Mcp-Name with invalid Base64",
            Some("2026-07-28"),
            Some("tools/call"),
            Some("=?base64?ZW*o?="),
            call("echo", META),
        ),
        (
            "a control character in a header",
            Some("2026-07-28"),
            Some("tools/call"),
            Some("ec\u{1}ho"),
            call("echo", META),
        ),
        (
            "_meta names another version than the header",
            Some("2026-07-28"),
            Some("tools/call"),
            Some("echo"),
            call("echo", &other_version),
        ),
        (
            "the header names a session-era version, _meta the 2026-07-28 one",
            Some("2025-11-25"),
            Some("tools/call"),
            Some("echo"),
            call("echo", META),
        ),
        (
            "no version header",
            None,
            Some("tools/call"),
            Some("echo"),
            call("echo", META),
        ),
    ];
    for (what, version, method, name, body) in cases {
        let mut head = RequestHead::post(None, None);
        for (header, value) in [
            ("mcp-protocol-version", version),
            ("mcp-method", method),
            ("mcp-name", name),
        ] {
            if let Some(v) = value {
                head = head.with(header, v);
            }
        }
        let mut h = Harness::new();
        let http = h.send(head, &body);
        let a = h.call(http);
        assert_eq!(
            (a.status, a.error_code()),
            (400, Some(-32020)),
            "{what}: {}",
            String::from_utf8_lossy(&a.body)
        );
        assert_eq!(a.json()["id"], 7, "{what}: the request's id is echoed");
        assert_eq!(a.header("mcp-session-id"), None, "{what}");
        assert_eq!(h.driver.endpoint().session_ids().count(), 0, "{what}");
        h.clean();
    }
}

#[test]
fn mcp_name_is_compared_after_trimming_and_base64_decoding() {
    for name in ["echo", "  echo\t", "=?base64?ZWNobw==?="] {
        let mut h = Harness::new();
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi"}},{META}}}}}"#
        );
        let http = h.v2026("tools/call", Some(name), &body);
        let a = h.call(http);
        assert_eq!(
            a.status,
            200,
            "{name:?}: {}",
            String::from_utf8_lossy(&a.body)
        );
        assert_eq!(a.json()["result"]["content"][0]["text"], "hi", "{name:?}");
        assert_eq!(a.json()["result"]["resultType"], "complete");
        h.clean();
    }
}

#[test]
fn a_resource_read_names_its_uri() {
    let mut h = Harness::new();
    let uri = "test://static-text";
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{{"uri":"{uri}",{META}}}}}"#
    );
    let http = h.v2026("resources/read", Some("test://other"), &body);
    assert_eq!(h.call(http).error_code(), Some(-32020));
    let http = h.v2026("resources/read", Some(uri), &body);
    let a = h.call(http);
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    let r = &a.json()["result"];
    assert!(r["contents"].is_array());
    assert_eq!(
        r["cacheScope"], "private",
        "resources/read is cacheable: hints added"
    );
    h.clean();
}

#[test]
fn missing_client_capabilities_is_400_invalid_params() {
    let mut h = Harness::new();
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#;
    let http = h.v2026("tools/list", None, &request(5, "tools/list", meta));
    let a = h.call(http);
    assert_eq!((a.status, a.error_code()), (400, Some(-32602)));
    assert!(a.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("clientCapabilities"));
    h.clean();
}

/// A required `_meta` field missing is invalid params (`basic/index.mdx`),
/// not a header mismatch: no `_meta` at all, or one without the version.
#[test]
fn a_missing_meta_version_is_400_invalid_params() {
    let no_version = r#""_meta":{"io.modelcontextprotocol/clientCapabilities":{}}"#;
    let no_meta = r#""x":1"#;
    for meta in [no_version, no_meta] {
        let mut h = Harness::new();
        let http = h.v2026("tools/list", None, &request(101, "tools/list", meta));
        let a = h.call(http);
        assert_eq!((a.status, a.error_code()), (400, Some(-32602)), "{meta}");
        assert_eq!(a.json()["id"], 101);
        assert!(a.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("protocolVersion"));
        h.clean();
    }
}

/// `initialize` with the 2026-07-28 `_meta` is a 2026-07-28 request for a method
/// this era does not have; offering 2026-07-28 with the header alone (rmcp
/// 3.9's `Initialize` mode) stays the session era.
#[test]
fn initialize_with_the_v2026_meta_is_404_method_not_found() {
    let mut h = Harness::new();
    let http = h.v2026("initialize", None, &request(500, "initialize", META));
    let a = h.call(http);
    assert_eq!((a.status, a.error_code()), (404, Some(-32601)));
    assert_eq!(a.json()["id"], 500);
    h.clean();
}

#[test]
fn an_unsupported_version_is_400_listing_what_is_supported() {
    let mut h = Harness::new();
    let head = RequestHead::post(None, None)
        .with("mcp-protocol-version", "2099-01-01")
        .with("mcp-method", "tools/list");
    let http = h.send(head, &request(6, "tools/list", META));
    let a = h.call(http);
    assert_eq!((a.status, a.error_code()), (400, Some(-32022)));
    assert_eq!(
        a.json()["id"],
        6,
        "the request's id, though the header is read first"
    );
    let data = &a.json()["error"]["data"];
    assert_eq!(data["requested"], "2099-01-01");
    let supported = data["supported"].as_array().unwrap();
    assert!(supported.contains(&json!("2026-07-28")) && supported.contains(&json!("2025-03-26")));
    h.clean();
}

#[test]
fn methods_this_era_does_not_have_are_404_method_not_found() {
    for method in ["ping", "logging/setLevel", "resources/subscribe", "no/such"] {
        let mut h = Harness::new();
        let http = h.v2026(method, None, &request(8, method, META));
        let a = h.call(http);
        assert_eq!((a.status, a.error_code()), (404, Some(-32601)), "{method}");
        assert_eq!(a.json()["id"], 8);
        h.clean();
    }
}

#[test]
fn get_and_delete_are_405_and_notifications_202_and_responses_refused() {
    let mut h = Harness::new();
    for method in [Method::Get, Method::Delete] {
        let head = RequestHead::new(method.clone())
            .with("host", "localhost")
            .with("accept", "text/event-stream")
            .with("mcp-protocol-version", "2026-07-28");
        let http = h.send(head, "");
        assert_eq!(h.call(http).status, 405, "{method:?}");
    }
    let note =
        format!(r#"{{"jsonrpc":"2.0","method":"notifications/whatever","params":{{{META}}}}}"#);
    let http = h.v2026("notifications/whatever", None, &note);
    let a = h.call(http);
    assert_eq!((a.status, a.body.len()), (202, 0));
    let response = r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    let head = RequestHead::post(None, None).with("mcp-protocol-version", "2026-07-28");
    let http = h.send(head, response);
    let a = h.call(http);
    assert_eq!((a.status, a.error_code()), (400, Some(-32600)));
    h.clean();
}

#[test]
fn progress_streams_without_event_ids_then_the_request_is_forgotten() {
    let mut h = Harness::new();
    let http = h.progress_call(9);
    let a = h.call(http);
    assert!(a.ended);
    assert_eq!(a.status, 200);
    assert_eq!(a.header("content-type"), Some("text/event-stream"));
    assert_eq!(a.header("mcp-session-id"), None);
    let events = a.events();
    assert!(
        events.iter().all(|(id, _)| id.is_none()),
        "no event ids: {events:?}"
    );
    assert!(
        events.iter().all(|(_, d)| !d.is_empty()),
        "no priming: {events:?}"
    );
    let progress = events
        .iter()
        .filter(|(_, d)| d.contains("notifications/progress"))
        .count();
    assert_eq!(progress, 3);
    let last: Value = serde_json::from_str(&events.last().unwrap().1).unwrap();
    assert_eq!(
        (last["id"].clone(), last["result"]["resultType"].clone()),
        (json!(9), json!("complete"))
    );
    assert_eq!(h.driver.endpoint().session_ids().count(), 0);
    h.clean();
}

#[test]
fn closing_the_stream_cancels_the_request() {
    let mut h = Harness::new();
    let http = h.progress_call(10);
    let mut a = Answer::default();
    h.answer(http, &mut a);
    assert!(!a.ended && a.status == 200, "streaming");
    let now = h.now();
    h.driver.handle_http_closed(http, now);
    assert_eq!(
        h.driver.endpoint().session_ids().count(),
        0,
        "the request is gone"
    );
    // The application's later steps find nothing to write to.
    for _ in 0..10 {
        let Some(at) = h.driver.poll_timeout() else {
            break;
        };
        h.now = at.as_millis().max(h.now);
        let now = h.now();
        h.driver.handle_timeout(now);
        assert!(
            h.driver.poll_write().is_none(),
            "nothing after cancellation"
        );
    }
    h.clean();
}

#[test]
fn the_eras_share_one_endpoint_without_touching_each_other() {
    let mut h = Harness::with(EndpointConfig {
        sessions_max: 1,
        ..EndpointConfig::default()
    });
    // A session-era client.
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}"#;
    let http = h.send(RequestHead::post(None, None), init);
    let a = h.call(http);
    let sid: SessionId = a.header("mcp-session-id").unwrap().parse().unwrap();
    let http = h.send(
        RequestHead::post(
            Some(&sid),
            Some(mcp_streamable::version::ProtocolVersion::LATEST),
        ),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(h.call(http).status, 202);
    // 2026-07-28 requests, one carrying a stale session id (ignored): none of
    // them counts as a session, so the full table is no obstacle.
    for i in 0..5u64 {
        let head = RequestHead::post(None, None)
            .with("mcp-protocol-version", "2026-07-28")
            .with("mcp-method", "tools/list")
            .with("mcp-session-id", "not-a-session");
        let http = h.send(head, &request(100 + i, "tools/list", META));
        let a = h.call(http);
        assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
        assert!(a.json()["result"]["tools"].is_array());
    }
    // The session is still there and still served.
    let http = h.send(
        RequestHead::post(
            Some(&sid),
            Some(mcp_streamable::version::ProtocolVersion::LATEST),
        ),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    );
    let a = h.call(http);
    assert_eq!(a.status, 200);
    assert_eq!(
        h.driver.endpoint().session_ids().collect::<Vec<_>>(),
        vec![&sid]
    );
    // An `initialize` with a 2026-07-28 header is still the session era.
    let head = RequestHead::post(None, None).with("mcp-protocol-version", "2026-07-28");
    let http = h.send(head, &init.replace("\"id\":1", "\"id\":3"));
    let a = h.call(http);
    assert!(
        a.header("mcp-session-id").is_some(),
        "a new session (evicting the idle one)"
    );
    h.clean();
}

#[test]
fn v2026_requests_in_progress_are_bounded() {
    let mut h = Harness::with(EndpointConfig {
        stateless_requests_max: 1,
        ..EndpointConfig::default()
    });
    let first = h.progress_call(1);
    let mut a = Answer::default();
    h.answer(first, &mut a);
    assert!(!a.ended);
    let second = h.progress_call(2);
    let mut b = Answer::default();
    h.answer(second, &mut b);
    assert_eq!(b.status, 503, "{}", String::from_utf8_lossy(&b.body));
    // Once the first is over there is room again.
    let a = h.finish(first);
    assert!(a.ended);
    let third = h.progress_call(3);
    assert_eq!(h.finish(third).status, 200);
    h.clean();
}

/// A listen for `notifications` (the param's JSON), and what its stream
/// showed at once.
fn listen(h: &mut Harness, id: u64, notifications: &str) -> (HttpId, Answer) {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"subscriptions/listen","params":{{"notifications":{notifications},{META}}}}}"#
    );
    let http = h.v2026("subscriptions/listen", None, &body);
    let mut a = Answer::default();
    h.answer(http, &mut a);
    (http, a)
}

/// Data of every event on `http` since the last look.
fn more(h: &mut Harness, http: HttpId) -> (Vec<Value>, bool) {
    let mut a = Answer::default();
    h.answer(http, &mut a);
    let events = a
        .events()
        .into_iter()
        .map(|(_, d)| serde_json::from_str(&d).unwrap())
        .collect();
    (events, a.ended)
}

#[test]
fn a_listen_is_acknowledged_first_then_gets_exactly_what_it_subscribed_to() {
    let mut h = Harness::new();
    let (tools, a) = listen(
        &mut h,
        20,
        r#"{"toolsListChanged":true,"resourceSubscriptions":["test://static-text"]}"#,
    );
    assert_eq!((a.status, a.ended), (200, false));
    assert_eq!(a.header("content-type"), Some("text/event-stream"));
    let events = a.events();
    assert_eq!(events.len(), 1, "the acknowledgement alone: {events:?}");
    let ack: Value = serde_json::from_str(&events[0].1).unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        20
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://static-text"]})
    );
    let (prompts, _) = listen(&mut h, 21, r#"{"promptsListChanged":true}"#);
    let _ = more(&mut h, prompts);
    // A 2026-07-28 tool call that changes the tool list.
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{{"name":"notify","arguments":{{}},{META}}}}}"#
    );
    let call = h.v2026("tools/call", Some("notify"), &body);
    let mut c = Answer::default();
    let mut got = Vec::new();
    while let Some((http, w)) = h.driver.poll_write() {
        if http == call {
            c.ended |= w.ends();
            c.body.extend(w.body());
        } else {
            got.push((http, w));
        }
    }
    assert!(c.ended, "the call is answered");
    assert_eq!(got.len(), 1, "only the tools listen hears it: {got:?}");
    assert_eq!(got[0].0, tools);
    let mut decoder = SseDecoder::new();
    let mut items = Vec::new();
    let _ = decoder.feed(got[0].1.body(), &mut items);
    let SseItem::Message { id, data, .. } = &items[0] else {
        panic!("{items:?}")
    };
    assert_eq!(*id, None);
    let n: Value = serde_json::from_str(data).unwrap();
    assert_eq!(n["method"], "notifications/tools/list_changed");
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        20
    );
    // A resource update for a sub-resource of what it subscribed to; one for
    // another resource reaches nobody.
    let now = h.now();
    let updated = |uri: &str| Some(RawJson::from(json!({"uri": uri})));
    assert_eq!(
        h.driver.broadcast(
            "notifications/resources/updated",
            updated("test://static-text/part"),
            now
        ),
        1
    );
    assert_eq!(
        h.driver.broadcast(
            "notifications/resources/updated",
            updated("test://other"),
            now
        ),
        0
    );
    let (events, _) = more(&mut h, tools);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["params"]["uri"], "test://static-text/part");
    // Request-scoped notifications never go to a listen.
    assert_eq!(h.driver.broadcast("notifications/message", None, now), 0);
    assert_eq!(
        h.driver
            .broadcast("notifications/prompts/list_changed", None, now),
        1
    );
    let (events, _) = more(&mut h, prompts);
    assert_eq!(
        events[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        21
    );
    h.clean();
}

#[test]
fn a_broadcast_reaches_both_eras_once_each() {
    let mut h = Harness::new();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}"#;
    let http = h.send(RequestHead::post(None, None), init);
    let sid: SessionId = h
        .call(http)
        .header("mcp-session-id")
        .unwrap()
        .parse()
        .unwrap();
    let version = mcp_streamable::version::ProtocolVersion::LATEST;
    let http = h.send(
        RequestHead::post(Some(&sid), Some(version)),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(h.call(http).status, 202);
    let get = h.send(RequestHead::get(&sid, version, None), "");
    let mut g = Answer::default();
    h.answer(get, &mut g);
    assert_eq!((g.status, g.ended), (200, false));
    let (listen, _) = listen(&mut h, 30, r#"{"toolsListChanged":true}"#);
    let now = h.now();
    assert_eq!(
        h.driver
            .broadcast("notifications/tools/list_changed", None, now),
        2
    );
    let mut heard = std::collections::BTreeMap::new();
    while let Some((http, w)) = h.driver.poll_write() {
        let mut a = Answer {
            body: w.body().to_vec(),
            ..Answer::default()
        };
        a.ended = w.ends();
        let n = a
            .events()
            .into_iter()
            .filter(|(_, d)| d.contains("list_changed"))
            .count();
        *heard.entry(http).or_insert(0) += n;
    }
    assert_eq!(heard.get(&get), Some(&1), "the session's GET: {heard:?}");
    assert_eq!(heard.get(&listen), Some(&1), "the listen: {heard:?}");
    h.clean();
}

#[test]
fn listens_end_gracefully_or_by_the_client_and_then_hear_nothing() {
    let mut h = Harness::new();
    let (a, _) = listen(&mut h, 40, r#"{"toolsListChanged":true}"#);
    let (b, _) = listen(&mut h, 41, r#"{"toolsListChanged":true}"#);
    // The client closes b: that listen is over.
    let now = h.now();
    h.driver.handle_http_closed(b, now);
    assert_eq!(
        h.driver
            .broadcast("notifications/tools/list_changed", None, now),
        1
    );
    let (events, _) = more(&mut h, a);
    assert_eq!(events.len(), 1);
    // The server ends a gracefully: the complete result naming it, then the end.
    h.driver.end_listens(now);
    let (events, ended) = more(&mut h, a);
    assert!(ended);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["id"], 40);
    assert_eq!(events[0]["result"]["resultType"], "complete");
    assert_eq!(
        events[0]["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        40
    );
    assert_eq!(
        h.driver
            .broadcast("notifications/tools/list_changed", None, now),
        0
    );
    assert_eq!(h.driver.endpoint().session_ids().count(), 0);
    h.clean();
}

#[test]
fn a_listen_without_its_filter_is_400_invalid_params() {
    let mut h = Harness::new();
    let http = h.v2026(
        "subscriptions/listen",
        None,
        &request(50, "subscriptions/listen", META),
    );
    let a = h.call(http);
    assert_eq!((a.status, a.error_code()), (400, Some(-32602)));
    assert_eq!(a.json()["id"], 50);
    h.clean();
}

mod monitor_breaches {
    //! M1 and M2 fed their breaches directly, each beside the same run
    //! without it.
    use super::META;
    use mcp_streamable::head::{Content, RequestHead, ResponseHead};
    use mcp_streamable::ids::{HttpId, MsgKey, SessionId};
    use mcp_streamable::jsonrpc::{Message, RawJson};
    use mcp_streamable::server::{Cause, Outgoing, Transmit, TransmitKind};
    use mcp_streamable_check::monitor::{Monitor, Observation};
    use serde_json::json;
    use std::sync::Arc;

    const LISTEN: HttpId = HttpId(1);

    fn sid() -> SessionId {
        SessionId::from_bits(7)
    }

    /// A monitor that saw a 2026-07-28 listen (id 5, tools only) arrive and its head.
    fn listening() -> Monitor {
        let mut m = Monitor::new();
        let head = RequestHead::post(None, None)
            .with("mcp-protocol-version", "2026-07-28")
            .with("mcp-method", "subscriptions/listen");
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{{"notifications":{{"toolsListChanged":true}},{META}}}}}"#
        );
        m.observe(&Observation::request(LISTEN, &head, body.as_bytes()));
        m.observe(&Observation::Transmit(Transmit {
            http: LISTEN,
            kind: TransmitKind::Head(ResponseHead::new(200, Content::Sse)),
        }));
        m
    }

    fn event(m: &mut Monitor, key: u64, id: Option<&str>, method: &str, params: serde_json::Value) {
        m.observe(&Observation::Transmit(Transmit {
            http: LISTEN,
            kind: TransmitKind::Event {
                id: id.map(str::to_owned),
                retry_ms: None,
                message: Some(Arc::new(Outgoing {
                    session: sid(),
                    key: MsgKey(key),
                    cause: Cause::Request(5.into()),
                    message: Message::notification(method, Some(RawJson::from(params))),
                })),
            },
        }));
    }

    fn ack(m: &mut Monitor) {
        let params = json!({"_meta": {"io.modelcontextprotocol/subscriptionId": 5},
            "notifications": {"toolsListChanged": true}});
        event(
            m,
            1,
            None,
            "notifications/subscriptions/acknowledged",
            params,
        );
    }

    fn tagged() -> serde_json::Value {
        json!({"_meta": {"io.modelcontextprotocol/subscriptionId": 5}})
    }

    fn ids(m: &Monitor) -> Vec<&'static str> {
        m.violations().iter().map(|v| v.id).collect()
    }

    #[test]
    fn the_clean_run() {
        let mut m = listening();
        ack(&mut m);
        event(
            &mut m,
            2,
            None,
            "notifications/tools/list_changed",
            tagged(),
        );
        assert!(ids(&m).is_empty(), "{:#?}", m.violations());
    }

    fn broadcast(m: &mut Monitor) {
        m.observe(&Observation::Broadcast {
            method: "notifications/tools/list_changed".into(),
            params: None,
        });
    }

    /// M3: a change broadcast after the acknowledgement and never written
    /// on the listen (a server that registers its listener only after
    /// acknowledging) is caught at the end of the run, or when the server
    /// ends the listen owing it; one written, or one the client closed the
    /// stream before, is owed nothing; one broadcast before the
    /// acknowledgement is not owed (the client lists after it).
    #[test]
    fn a_broadcast_lost_after_the_acknowledgement_is_m3() {
        let mut m = listening();
        ack(&mut m);
        broadcast(&mut m);
        m.finish(&[]);
        assert_eq!(ids(&m), ["M3"]);

        let mut m = listening();
        ack(&mut m);
        broadcast(&mut m);
        m.observe(&Observation::Transmit(Transmit {
            http: LISTEN,
            kind: TransmitKind::Json(Message::Response {
                id: 5.into(),
                result: RawJson::from(tagged()),
            }),
        }));
        assert_eq!(ids(&m), ["M3"], "ended owing it");

        let mut m = listening();
        ack(&mut m);
        broadcast(&mut m);
        event(
            &mut m,
            2,
            None,
            "notifications/tools/list_changed",
            tagged(),
        );
        m.finish(&[]);
        assert!(ids(&m).is_empty(), "{:#?}", m.violations());

        let mut m = listening();
        ack(&mut m);
        broadcast(&mut m);
        m.observe(&Observation::Closed { http: LISTEN });
        m.finish(&[]);
        assert!(ids(&m).is_empty(), "{:#?}", m.violations());

        let mut m = listening();
        broadcast(&mut m);
        ack(&mut m);
        m.finish(&[]);
        assert!(ids(&m).is_empty(), "{:#?}", m.violations());
    }

    #[test]
    fn a_notification_before_the_acknowledgement_is_m2() {
        let mut m = listening();
        event(
            &mut m,
            2,
            None,
            "notifications/tools/list_changed",
            tagged(),
        );
        assert_eq!(ids(&m), ["M2"]);
    }

    #[test]
    fn an_unsubscribed_kind_or_an_untagged_notification_is_m2() {
        let mut m = listening();
        ack(&mut m);
        event(
            &mut m,
            2,
            None,
            "notifications/prompts/list_changed",
            tagged(),
        );
        assert_eq!(ids(&m), ["M2"]);
        let mut m = listening();
        ack(&mut m);
        event(
            &mut m,
            2,
            None,
            "notifications/tools/list_changed",
            json!({}),
        );
        assert_eq!(ids(&m), ["M2"]);
        let mut m = listening();
        ack(&mut m);
        event(&mut m, 2, None, "notifications/progress", tagged());
        assert_eq!(
            ids(&m),
            ["M2"],
            "request-scoped notifications never go to a listen"
        );
    }

    #[test]
    fn a_session_id_or_an_event_id_on_a_v2026_answer_is_m1() {
        let mut m = Monitor::new();
        let head = RequestHead::post(None, None)
            .with("mcp-protocol-version", "2026-07-28")
            .with("mcp-method", "tools/list");
        let body =
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}"#);
        m.observe(&Observation::request(LISTEN, &head, body.as_bytes()));
        let mut h = ResponseHead::new(200, Content::Sse);
        h.session_id = Some(sid());
        m.observe(&Observation::Transmit(Transmit {
            http: LISTEN,
            kind: TransmitKind::Head(h),
        }));
        assert_eq!(ids(&m), ["M1"]);
        let mut m = listening();
        ack(&mut m);
        event(
            &mut m,
            2,
            Some("1"),
            "notifications/tools/list_changed",
            tagged(),
        );
        assert_eq!(ids(&m), ["M1"]);
    }
}

#[test]
fn initialize_offering_the_v2026_version_gets_the_newest_session_era_one() {
    let mut h = Harness::new();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"new","version":"1"}}}"#;
    let http = h.send(RequestHead::post(None, None), init);
    let a = h.call(http);
    assert_eq!(a.status, 200);
    assert!(
        a.header("mcp-session-id").is_some(),
        "a session: initialize is the session era"
    );
    let body = a
        .events()
        .pop()
        .map(|(_, d)| d)
        .unwrap_or_else(|| String::from_utf8_lossy(&a.body).into_owned());
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["result"]["protocolVersion"], "2025-11-25");
    h.clean();
}

mod client_through_the_driver {
    //! Our client core against the reference application through the
    //! driver, bytes moved as a transport moves them ([`Link`]): the MRTR
    //! loop under one handle, a listen, a capability the server needs.
    use super::common::driver::{DriverHarness as Harness, Link};
    use mcp_streamable::client::{
        ClientConfig, ClientEra, ClientError, ClientEvent, ClientSession, ListenId,
    };
    use mcp_streamable::ids::RequestId;
    use mcp_streamable::jsonrpc::RawJson;
    use mcp_streamable::policy::ClientPolicy;
    use mcp_streamable::server::v2026::ListenFilter;
    use serde_json::{json, Value};

    /// A 2026-07-28 client declaring `capabilities`, past its probe.
    fn ready(h: &mut Harness, link: &mut Link, capabilities: Value) -> ClientSession {
        let config = ClientConfig {
            era: ClientEra::V2026,
            ..ClientConfig::default()
        };
        let mut c = ClientSession::new(config, ClientPolicy::FIXED);
        let params =
            json!({"capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}});
        c.initialize(RawJson::from(params), h.now()).unwrap();
        h.link(&mut c, link, 1_000, |_, _, _| {});
        assert!(c.is_ready() && c.is_v2026());
        c
    }

    /// What a user and a model would answer, for each input request.
    fn answers(requests: &RawJson) -> RawJson {
        let asked = requests.to_value();
        let answers: serde_json::Map<String, Value> = asked
            .as_object()
            .unwrap()
            .iter()
            .map(|(key, r)| {
                let answer = match r["method"].as_str().unwrap() {
                    "elicitation/create" => {
                        json!({"action": "accept", "content": {"name": "Ada", "color": "green", "ok": true}})
                    }
                    "sampling/createMessage" => json!({
                        "role": "assistant", "content": {"type": "text", "text": "Paris"},
                        "model": "m", "stopReason": "endTurn"
                    }),
                    "roots/list" => json!({"roots": [{"uri": "file:///w", "name": "w"}]}),
                    other => panic!("asked {other}"),
                };
                (key.clone(), answer)
            })
            .collect();
        RawJson::from(Value::Object(answers))
    }

    /// Calls `tool`, answering every round; the events the call produced.
    fn call(
        h: &mut Harness,
        link: &mut Link,
        c: &mut ClientSession,
        tool: &str,
    ) -> (RequestId, Vec<ClientEvent>) {
        let params = json!({"name": tool, "arguments": {}});
        let id = c
            .send_request("tools/call", Some(RawJson::from(params)), h.now())
            .unwrap();
        let mut events = Vec::new();
        h.link(c, link, 10_000, |c, e, now| {
            if let ClientEvent::InputRequired { id, requests, .. } = &e {
                c.provide_input(id, answers(requests), now).unwrap();
            }
            events.push(e);
        });
        (id, events)
    }

    fn text(events: &[ClientEvent], id: &RequestId) -> String {
        let done: Vec<_> = events
            .iter()
            .filter(|e| matches!(e, ClientEvent::Response { .. } | ClientEvent::Failed { .. }))
            .collect();
        match &done[..] {
            [ClientEvent::Response {
                id: r,
                result: Ok(v),
            }] if r == id => v.to_value()["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned(),
            other => panic!("one answer for {id}: {other:?}"),
        }
    }

    fn rounds(events: &[ClientEvent], id: &RequestId) -> Vec<u32> {
        events
            .iter()
            .filter_map(|e| match e {
                ClientEvent::InputRequired { id: r, round, .. } if r == id => Some(*round),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_multi_round_tool_answers_the_one_handle_after_two_rounds() {
        let mut h = Harness::new();
        let mut link = Link::default();
        let mut c = ready(&mut h, &mut link, json!({"elicitation": {}}));
        let (id, events) = call(
            &mut h,
            &mut link,
            &mut c,
            "test_input_required_result_multi_round",
        );
        assert_eq!(text(&events, &id), "Ada likes green");
        assert_eq!(rounds(&events, &id), [1, 2]);
        assert_eq!(c.pending().count() + c.awaiting_input().count(), 0);
        // Each round carried the state the server sealed in the round before.
        let (id, events) = call(
            &mut h,
            &mut link,
            &mut c,
            "test_input_required_result_request_state",
        );
        assert_eq!(text(&events, &id), "state-ok");
        h.clean();
    }

    #[test]
    fn input_of_every_kind_in_one_round() {
        let mut h = Harness::new();
        let mut link = Link::default();
        let caps = json!({"elicitation": {}, "sampling": {}, "roots": {}});
        let mut c = ready(&mut h, &mut link, caps);
        let (id, events) = call(
            &mut h,
            &mut link,
            &mut c,
            "test_input_required_result_multiple_inputs",
        );
        assert_eq!(text(&events, &id), r#"Ada said "Paris" with 1 roots"#);
        assert_eq!(rounds(&events, &id), [1]);
        h.clean();
    }

    #[test]
    fn a_capability_the_server_needs_and_the_client_lacks_fails_with_32021() {
        let mut h = Harness::new();
        let mut link = Link::default();
        let mut c = ready(&mut h, &mut link, json!({"elicitation": {}}));
        let (id, events) = call(&mut h, &mut link, &mut c, "test_missing_capability");
        let failed = events.iter().find_map(|e| match e {
            ClientEvent::Failed { id: r, error } if *r == id => Some(error.clone()),
            _ => None,
        });
        assert!(
            matches!(&failed, Some(ClientError::Status { status: 400, error: Some(e) }) if e.code == -32021),
            "{failed:?}"
        );
        h.clean();
    }

    #[test]
    fn a_listen_hears_each_change_once_and_the_graceful_end() {
        let mut h = Harness::new();
        let mut link = Link::default();
        let mut c = ready(&mut h, &mut link, json!({}));
        let filter = ListenFilter {
            tools: true,
            ..ListenFilter::default()
        };
        let l = c.listen(filter, h.now()).unwrap();
        let mut events = Vec::new();
        h.link(&mut c, &mut link, 1_000, |_, e, _| events.push(e));
        assert!(
            matches!(&events[..], [ClientEvent::Listening { listen, resumed: false, .. }] if *listen == l),
            "{events:?}"
        );
        assert!(c.is_listening(l));
        let now = h.now();
        assert_eq!(
            h.driver
                .broadcast("notifications/tools/list_changed", None, now),
            1
        );
        assert_eq!(
            h.driver
                .broadcast("notifications/prompts/list_changed", None, now),
            0
        );
        h.driver.end_listens(now);
        let mut events = Vec::new();
        h.link(&mut c, &mut link, 1_000, |_, e, _| events.push(e));
        let heard: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                ClientEvent::Notification { method, .. } => Some(method.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(heard, ["notifications/tools/list_changed"]);
        assert!(
            matches!(events.last(), Some(ClientEvent::ListenEnded { listen, error: None }) if *listen == l),
            "{events:?}"
        );
        assert_eq!(c.listens().collect::<Vec<ListenId>>(), []);
        h.clean();
    }
}

/// The listen presets' step between acknowledging and registering, on the
/// endpoint itself: offered as a scheduling point until taken, taken once;
/// before it, the acknowledgement (RegisterThenAck, go-sdk 1.7) or the
/// registration (AckThenRegister, rmcp 3.9) has not happened; FIXED offers
/// no step at all.
#[test]
fn listen_presets_offer_their_one_step_until_it_is_taken() {
    use mcp_streamable::id_source::IdSource;
    use mcp_streamable::policy::ServerPolicy;
    use mcp_streamable::preset::{Scheduled, SchedulingPoint};
    use mcp_streamable::server::{EndpointConfig, ServerEndpoint, TransmitKind};
    use mcp_streamable::time::Instant;
    let acks = |ep: &mut ServerEndpoint| {
        std::iter::from_fn(|| ep.poll_transmit())
            .filter(|t| {
                matches!(&t.kind, TransmitKind::Event { message: Some(o), .. }
                    if o.message.method() == Some("notifications/subscriptions/acknowledged"))
            })
            .count()
    };
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{{"notifications":{{"toolsListChanged":true}},{META}}}}}"#
    );
    let head = RequestHead::post(None, None)
        .with("mcp-protocol-version", "2026-07-28")
        .with("mcp-method", "subscriptions/listen");
    for (policy, ack_first) in [
        (ServerPolicy::GO_SDK_1_7, false),
        (ServerPolicy::RMCP_3_9, true),
        (ServerPolicy::FIXED, true),
    ] {
        let now = Instant::ZERO;
        let mut ep =
            ServerEndpoint::with_ids(EndpointConfig::default(), policy, IdSource::reproducible(3));
        let d = ep.handle_request(&head, body.as_bytes(), now);
        assert!(d.outcome.is_ok(), "{:?}", d.outcome);
        let http = d.http;
        assert_eq!(acks(&mut ep), usize::from(ack_first), "{policy:?}");
        // A broadcast before the step reaches the listen only if it is registered.
        let registered_first =
            policy.listen_ack != mcp_streamable::policy::ListenAck::AckThenRegister;
        assert_eq!(
            ep.broadcast("notifications/tools/list_changed", None, now)
                .len(),
            usize::from(registered_first),
            "{policy:?}"
        );
        if policy == ServerPolicy::FIXED {
            assert!(ep.scheduling_points().is_empty());
            assert!(!ep.handle_scheduling_point(http, SchedulingPoint::ListenStep, now));
            continue;
        }
        assert_eq!(
            ep.scheduling_points(),
            [(http, SchedulingPoint::ListenStep)],
            "{policy:?}"
        );
        let other = mcp_streamable::ids::HttpId(http.0 + 100);
        assert!(!ep.handle_scheduling_point(other, SchedulingPoint::ListenStep, now));
        assert!(ep.handle_scheduling_point(http, SchedulingPoint::ListenStep, now));
        assert_eq!(
            acks(&mut ep),
            usize::from(!ack_first),
            "{policy:?}: the step's ack"
        );
        assert!(ep.scheduling_points().is_empty(), "{policy:?}: taken once");
        assert!(!ep.handle_scheduling_point(http, SchedulingPoint::ListenStep, now));
        let sid = ep.route(http).cloned().expect("the listen's session");
        let s = ep.session_mut(&sid).unwrap();
        assert!(
            !s.handle_scheduling_point(http, SchedulingPoint::ListenStep, now),
            "{policy:?}: no step left"
        );
        assert_eq!(
            ep.broadcast("notifications/tools/list_changed", None, now)
                .len(),
            1,
            "{policy:?}: registered"
        );
    }
}

#[test]
fn an_open_listen_is_not_a_session_the_table_counts() {
    // With `sessions_max: 1` and a listen open for as long as it likes, a
    // session-era client still gets its session, and the listen is neither
    // refused nor evicted for it (nor evicts it): the admission table
    // counts sessions, and a 2026-07-28 listen is a request, bounded by
    // `stateless_requests_max`.
    let mut h = Harness::with(EndpointConfig {
        sessions_max: 1,
        ..EndpointConfig::default()
    });
    let (first, opened) = listen(&mut h, 60, r#"{"toolsListChanged":true}"#);
    assert_eq!((opened.status, opened.ended), (200, false));
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}"#;
    let http = h.send(RequestHead::post(None, None), init);
    let a = h.call(http);
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    assert!(a.header("mcp-session-id").is_some());
    let (again, opened) = listen(&mut h, 61, r#"{"toolsListChanged":true}"#);
    assert_eq!((opened.status, opened.ended), (200, false), "no eviction");
    let now = h.now();
    assert_eq!(
        h.driver
            .broadcast("notifications/tools/list_changed", None, now),
        2,
        "both listens still open (the session is not initialized yet)"
    );
    let mut heard = std::collections::BTreeMap::new();
    while let Some((http, w)) = h.driver.poll_write() {
        assert!(!w.ends(), "nothing ends");
        let a = Answer {
            body: w.body().to_vec(),
            ..Answer::default()
        };
        *heard.entry(http).or_insert(0) += a.events().len();
    }
    assert_eq!(heard, [(first, 1), (again, 1)].into_iter().collect());
    h.clean();
}

/// SEP-2243 at the server's door: a 2026-07-28 call of a tool whose listing
/// declares custom headers (`test_param_headers`, the fixtures' table in
/// `EndpointConfig::tool_headers`) is served when its `Mcp-Param-*`
/// headers agree with its arguments (decoded, numbers by value, a null
/// argument's header omitted) and refused otherwise, 400 with -32020 and
/// the id echoed (a repeated header: 400 before the body is read). A
/// server whose table is empty checks none.
#[test]
fn a_tools_custom_headers_are_checked_against_its_arguments() {
    let config = EndpointConfig {
        tool_headers: mcp_streamable_hyper::everything::tool_headers(),
        ..EndpointConfig::default()
    };
    let body = |args: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"test_param_headers","arguments":{args},{META}}}}}"#
        )
    };
    let eu = r#"{"region":"eu","priority":42}"#;
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)], Option<i64>);
    let cases: [Case; 9] = [
        (
            "agreeing",
            eu,
            &[("Mcp-Param-Region", "eu"), ("Mcp-Param-Priority", "42")],
            None,
        ),
        (
            "Base64, a number written otherwise, blanks around",
            eu,
            &[
                ("Mcp-Param-Region", " =?base64?ZXU=?= "),
                ("MCP-PARAM-PRIORITY", "42.0"),
            ],
            None,
        ),
        (
            "a null argument, no header",
            r#"{"region":"eu","verbose":null}"#,
            &[("Mcp-Param-Region", "eu")],
            None,
        ),
        (
            "a header missing",
            eu,
            &[("Mcp-Param-Region", "eu")],
            Some(-32020),
        ),
        (
            "a value that disagrees",
            eu,
            &[("Mcp-Param-Region", "us"), ("Mcp-Param-Priority", "42")],
            Some(-32020),
        ),
        (
            "Base64 without its padding",
            eu,
            &[
                ("Mcp-Param-Region", "=?base64?ZXU?="),
                ("Mcp-Param-Priority", "42"),
            ],
            Some(-32020),
        ),
        (
            "a header for an argument that is not there",
            r#"{"region":"eu"}"#,
            &[("Mcp-Param-Region", "eu"), ("Mcp-Param-Verbose", "true")],
            Some(-32020),
        ),
        (
            "a control character",
            eu,
            &[
                ("Mcp-Param-Region", "e\u{1}u"),
                ("Mcp-Param-Priority", "42"),
            ],
            Some(-32020),
        ),
        (
            "a header repeated",
            eu,
            &[
                ("Mcp-Param-Region", "eu"),
                ("Mcp-Param-Priority", "42"),
                ("mcp-param-region", "eu"),
            ],
            Some(0),
        ),
    ];
    for (what, args, params, refused) in cases {
        let mut head = RequestHead::post(
            None,
            Some(mcp_streamable::version::ProtocolVersion::LATEST_V2026),
        )
        .with("mcp-method", "tools/call")
        .with("mcp-name", "test_param_headers");
        for (n, v) in params {
            head = head.with(n, v);
        }
        let mut h = Harness::with(config.clone());
        let http = h.send(head.clone(), &body(args));
        let a = h.call(http);
        let text = String::from_utf8_lossy(&a.body).into_owned();
        match refused {
            None => {
                assert_eq!(a.status, 200, "{what}: {text}");
                assert!(a.json()["result"]["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("headers agreed with")));
            }
            Some(0) => assert_eq!(a.status, 400, "{what}: {text}"),
            Some(code) => {
                assert_eq!(
                    (a.status, a.error_code()),
                    (400, Some(code)),
                    "{what}: {text}"
                );
                assert_eq!(a.json()["id"], 7, "{what}: the request's id is echoed");
            }
        }
        h.clean();
        // No table: nothing but the standard headers is checked.
        if refused != Some(0) {
            let mut h = Harness::new();
            let http = h.send(head, &body(args));
            assert_eq!(h.call(http).status, 200, "{what}, no table");
            h.clean();
        }
    }
}
