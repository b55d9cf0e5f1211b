//! rmcp 3.9 on our core, over real HTTP: the same rmcp handler behind
//! rmcp's own `LocalSessionManager` and behind our `CoreSessionManager`,
//! judged by the prober (`mcp-streamable probe`) from outside and, on our
//! core, by the monitor from inside. The holes the prober finds in rmcp's
//! manager (B2, B4, R18) must be there with it, and gone with ours.
#![cfg(feature = "rmcp")]

use mcp_streamable::app;
use mcp_streamable_check::monitor;
use mcp_streamable_rmcp::CoreSessionManager;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ListToolsResult,
    PaginatedRequestParams, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `echo`, and `notify`: `notifications/tools/list_changed` after
/// `delay_ms`, unrelated to the call (what the prober needs).
#[derive(Clone)]
struct Notifier;

fn from_json<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("a well-formed rmcp value")
}

impl ServerHandler for Notifier {
    fn get_info(&self) -> ServerConfig {
        from_json(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "notifier", "version": "0"}
        }))
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let schema = json!({"type": "object"});
        Ok(from_json(json!({"tools": [
            {"name": "echo", "inputSchema": schema},
            {"name": "notify", "inputSchema": schema}
        ]})))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        if request.name == "notify" {
            let delay = args.get("delay_ms").and_then(Value::as_u64).unwrap_or(0);
            let peer = cx.peer.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(delay.min(5_000))).await;
                let _ = peer.notify_tool_list_changed().await;
            });
        }
        let text = args.get("text").and_then(Value::as_str).unwrap_or("ok");
        let result: CallToolResult = from_json(json!({
            "content": [{"type": "text", "text": text}], "resultType": "complete"
        }));
        Ok(result.into())
    }
}

/// Serves `manager` on a loopback port until the returned runtime drops.
fn serve<M: SessionManager>(manager: M) -> (u16, tokio::runtime::Runtime) {
    let svc = StreamableHttpService::new(
        || Ok(Notifier),
        Arc::new(manager),
        StreamableHttpServerConfig::default(),
    );
    serve_router(axum::Router::new().nest_service("/mcp", svc))
}

/// Serves `router` on a loopback port until the returned runtime drops.
fn serve_router(router: axum::Router) -> (u16, tokio::runtime::Runtime) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    rt.spawn(async move { axum::serve(listener, router).await });
    (port, rt)
}

/// The prober's verdicts, by rule (a rule's worst verdict when it has several lines).
fn probe(port: u16) -> BTreeMap<String, String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-streamable"))
        .args(["probe", "--json", "--notify-tool", "notify"])
        .args(["--notify-args", r#"{"delay_ms":100}"#])
        .arg(format!("http://127.0.0.1:{port}/mcp"))
        .output()
        .expect("the prober runs");
    let findings: Vec<Value> = serde_json::from_slice(&out.stdout).expect("the prober's JSON");
    let mut verdicts = BTreeMap::new();
    for f in findings {
        let rule = f["rule"].as_str().unwrap().to_owned();
        let verdict = f["verdict"].as_str().unwrap().to_owned();
        let worst = verdicts.entry(rule).or_insert_with(|| verdict.clone());
        if verdict == "violates" {
            *worst = verdict;
        }
    }
    verdicts
}

#[test]
fn rmcp_on_its_own_manager_has_the_holes_the_prober_knows() {
    let (port, rt) = serve(LocalSessionManager::default());
    let v = probe(port);
    for rule in ["B2", "B4", "R18"] {
        assert_eq!(
            v.get(rule).map(String::as_str),
            Some("violates"),
            "{rule}: {v:?}"
        );
    }
    rt.shutdown_background();
}

#[test]
fn rmcp_on_our_core_has_none_of_them_and_the_monitor_agrees() {
    let violations = Arc::new(Mutex::new(Vec::new()));
    let observations = Arc::new(AtomicUsize::new(0));
    let (seen, counted) = (violations.clone(), observations.clone());
    let mut monitor = monitor::watching(move |v| seen.lock().unwrap().push(format!("{v:?}")));
    let tap: app::Tap = Box::new(move |o| {
        counted.fetch_add(1, Ordering::Relaxed);
        monitor(o)
    });
    let (port, rt) = serve(CoreSessionManager::default().with_tap(Some(tap)));
    let v = probe(port);
    for rule in ["B1", "B2", "B3", "B4", "R18", "R36", "C1", "A3", "R24"] {
        assert_eq!(
            v.get(rule).map(String::as_str),
            Some("holds"),
            "{rule}: {v:?}"
        );
    }
    // What rmcp still decides outside the trait (docs/rmcp.md): Origin.
    assert_eq!(v.get("R42").map(String::as_str), Some("violates"), "{v:?}");
    rt.shutdown_background();
    assert!(
        violations.lock().unwrap().is_empty(),
        "{:?}",
        violations.lock().unwrap()
    );
    // The monitor saw the whole probe, not a corner of it.
    assert!(
        observations.load(Ordering::Relaxed) > 100,
        "{observations:?}"
    );
}

/// rmcp on our core behind [`CoreSessionManager::layer`], with a bearer
/// check in front that puts the caller's `Principal` in the request's
/// extensions (as any authentication layer would).
fn serve_bound() -> (u16, tokio::runtime::Runtime) {
    use mcp_streamable::auth::StaticTokens;
    use mcp_streamable::principal::Principal;
    let manager = Arc::new(CoreSessionManager::default());
    let bind = manager.layer();
    let svc = StreamableHttpService::new(
        || Ok(Notifier),
        manager,
        StreamableHttpServerConfig::default(),
    );
    let tokens = Arc::new(
        StaticTokens::new()
            .with("alice-1", Principal::new("alice"))
            .with("alice-2", Principal::new("alice"))
            .with("bob-1", Principal::new("bob")),
    );
    let authenticate = move |mut request: axum::extract::Request, next: axum::middleware::Next| {
        let tokens = tokens.clone();
        async move {
            let authorization = request
                .headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok());
            if let Ok(principal) = tokens.authenticate(authorization) {
                request.extensions_mut().insert(principal);
            }
            next.run(request).await
        }
    };
    let router = axum::Router::new()
        .nest_service("/mcp", svc)
        .layer(bind)
        .layer(axum::middleware::from_fn(authenticate));
    serve_router(router)
}

/// One raw HTTP/1.1 exchange (`Connection: close`): status, headers (lower
/// case) and body, as far as they came within `wait`.
fn raw(
    port: u16,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
    wait: Duration,
) -> (u16, BTreeMap<String, String>, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(wait)).unwrap();
    let mut head = format!(
        "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut bytes = Vec::new();
    let _ = s.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers, body.to_owned())
}

/// rmcp on our core behind the manager's layer: a second authenticated
/// client holding the first one's session id and event id gets, for every
/// verb (POST, GET, resumption, DELETE), exactly the answer of an unknown
/// session, and the session is untouched; so does a request with no
/// credentials; the first client, with a refreshed token of the same
/// subject, is served on.
#[test]
fn rmcp_on_our_core_keeps_a_session_to_who_opened_it() {
    let (port, rt) = serve_bound();
    let wait = Duration::from_secs(3);
    let version = ("MCP-Protocol-Version", "2025-11-25");
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"mine"}}}"#;
    let alice = ("Authorization", "Bearer alice-1");
    let bob = ("Authorization", "Bearer bob-1");

    let (status, headers, body) = raw(port, "POST", &[alice], init, wait);
    assert_eq!(status, 200, "{body}");
    let sid = headers["mcp-session-id"].clone();
    let event = body
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("id: "))
        .expect("an event id on the initialize stream")
        .to_owned();
    fn with<'a>(
        who: (&'a str, &'a str),
        sid: &'a str,
        extra: Option<(&'a str, &'a str)>,
    ) -> Vec<(&'a str, &'a str)> {
        let mut v = vec![
            who,
            ("MCP-Protocol-Version", "2025-11-25"),
            ("Mcp-Session-Id", sid),
        ];
        v.extend(extra);
        v
    }
    let h = |who, extra| with(who, &sid, extra);
    assert_eq!(raw(port, "POST", &h(alice, None), initialized, wait).0, 202);

    // What an unknown session gets, verb by verb.
    let nobody = "0000000000000000000000000000dead";
    let unknown = |who: (&'static str, &'static str), method: &str, body: &str, resume: bool| {
        let mut v = vec![who, version, ("Mcp-Session-Id", nobody)];
        if resume {
            v.push(("Last-Event-ID", event.as_str()));
        }
        raw(port, method, &v, body, wait)
    };
    for who in [bob, ("X-Nobody", "none")] {
        let cases = [
            ("POST", call, false),
            ("GET", "", false),
            ("GET", "", true),
            ("DELETE", "", false),
        ];
        for (method, body, resume) in cases {
            let expected = unknown(who, method, body, resume);
            let resume_header = resume.then_some(("Last-Event-ID", event.as_str()));
            let got = raw(port, method, &h(who, resume_header), body, wait);
            let what = format!("{who:?} {method} resume={resume}");
            assert_eq!(got.0, expected.0, "{what}: {got:?}");
            assert_eq!(got.2, expected.2, "{what}: the unknown session's very body");
            assert_eq!(got.1.get("mcp-session-id"), None, "{what}");
            assert_ne!(got.0, 200, "{what}: served: {got:?}");
        }
    }

    // Alice, her token refreshed: her session, alive and hers.
    let refreshed = ("Authorization", "Bearer alice-2");
    let (status, _, body) = raw(port, "POST", &h(refreshed, None), call, wait);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("mine"), "{body}");
    rt.shutdown_background();
}
