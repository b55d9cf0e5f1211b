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

/// Serves `manager` on a loopback port until the returned guard drops.
fn serve<M: SessionManager>(manager: M) -> (u16, tokio::runtime::Runtime) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let svc = StreamableHttpService::new(
        || Ok(Notifier),
        Arc::new(manager),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", svc);
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
