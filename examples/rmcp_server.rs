//! An rmcp 3.9 server on our core: rmcp's `StreamableHttpService` and its
//! handler, with [`CoreSessionManager`] in place of rmcp's
//! `LocalSessionManager` — the one line that changes.
//!
//! ```text
//! cargo run --release --features rmcp --example rmcp_server -- \
//!     --addr 127.0.0.1:3003 [--session-manager core|local] [--monitor] \
//!     [--auth-token TOKEN=PRINCIPAL]...
//! ```
//!
//! The endpoint is `/mcp`. The handler serves the reference fixtures the
//! conformance suite calls (`mcp_streamable_hyper::everything`'s tools,
//! resources and prompts) in rmcp's own terms: logging, progress, sampling
//! and elicitation through rmcp's `Peer`, and `notify` (sends
//! `notifications/tools/list_changed` after `delay_ms`), what `probe` uses
//! to make a server notify. `--session-manager local` runs the same handler
//! on rmcp's own manager, for side-by-side comparisons (`scripts/compat.sh`,
//! `benches/http`). With `--monitor` (core only) the monitor watches every
//! observation and prints each violation as it finds it.
//!
//! With `--auth-token` (repeatable, core only) a request needs
//! `Authorization: Bearer TOKEN` (401 without), and each session is kept to
//! the principal that opened it: a bearer check puts the caller's
//! `Principal` in the request's extensions, and the manager's
//! [`layer`](CoreSessionManager::layer) answers any other principal's
//! request naming the session as rmcp answers an unknown session.

use mcp_streamable::app::tool_call::Arguments;
use mcp_streamable::auth::{ResourceMetadata, StaticTokens};
use mcp_streamable::jsonrpc::{ErrorObject, RawJson};
use mcp_streamable_check::monitor;
use mcp_streamable_hyper::everything;
use mcp_streamable_rmcp::CoreSessionManager;
#[allow(deprecated)] // logging/setLevel: deprecated by SEP-2577, still in 2025-11-25
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientResult, CompleteRequestParams,
    CompleteResult, GetPromptRequestParams, GetPromptResponse, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerConfig,
    ServerNotification, ServerRequest, SetLevelRequestParams, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The tools this handler serves: all of the reference set but the
/// 2026-07-28 MRTR fixtures (rmcp serves that era without a session
/// manager). `test_reconnection` only on our core: rmcp's own manager has
/// no way for a handler to close its stream (polling, SEP-1699).
const INTERACTIVE: [&str; 9] = [
    "notify",
    "slow_progress",
    "test_reconnection",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
];

#[derive(Clone)]
struct Reference {
    /// Our manager, when the server runs on it (for `test_reconnection`).
    core: Option<Arc<CoreSessionManager>>,
}

fn from_json<T: DeserializeOwned>(v: Value) -> Result<T, McpError> {
    serde_json::from_value(v).map_err(|e| McpError::internal_error(e.to_string(), None))
}

/// A final result (`resultType: "complete"`, which 2026-07-28 requires;
/// rmcp strips it for session-era peers), as rmcp's constructors make it.
fn complete<T: DeserializeOwned>(mut v: Value) -> Result<T, McpError> {
    if let Some(o) = v.as_object_mut() {
        o.insert("resultType".into(), json!("complete"));
    }
    from_json(v)
}

impl Reference {
    fn serves(&self, name: &str) -> bool {
        (INTERACTIVE.contains(&name) && (name != "test_reconnection" || self.core.is_some()))
            || everything::static_tool(name, Arguments::NONE).is_some()
    }
}

fn text_result(text: impl Into<String>) -> Result<CallToolResponse, McpError> {
    let result: CallToolResult =
        complete(json!({"content": [{"type": "text", "text": text.into()}]}))?;
    Ok(result.into())
}

async fn notify(peer: &Peer<RoleServer>, method: &str, params: Value) {
    let n = from_json::<ServerNotification>(json!({"method": method, "params": params}));
    if let Ok(n) = n {
        let _ = peer.send_notification(n).await;
    }
}

/// A request to the client, sent while serving the call (rmcp marks it with
/// the call's id: it goes on the call's own stream).
async fn ask(peer: &Peer<RoleServer>, method: &str, params: Value) -> Result<Value, ErrorObject> {
    let failed = |e: String| ErrorObject::new(-32603, e);
    let request =
        serde_json::from_value::<ServerRequest>(json!({"method": method, "params": params}))
            .map_err(|e| failed(e.to_string()))?;
    let result = peer
        .send_request(request)
        .await
        .map_err(|e| failed(e.to_string()))?;
    serde_json::to_value::<&ClientResult>(&result).map_err(|e| failed(e.to_string()))
}

impl Reference {
    async fn interactive(
        &self,
        name: &str,
        args: Value,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let peer = cx.peer.clone();
        match name {
            "notify" => {
                let delay = everything::notify_delay(&args);
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                    let _ = peer.notify_tool_list_changed().await;
                });
                text_result(format!("notifying in {delay} ms"))
            }
            "test_tool_with_logging" => {
                for (i, data) in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ]
                .iter()
                .enumerate()
                {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    let params = json!({"level": "info", "logger": "rmcp-reference", "data": data});
                    notify(&peer, "notifications/message", params).await;
                }
                text_result("Tool with logging executed successfully")
            }
            "test_tool_with_progress" => {
                let token = serde_json::to_value(&cx.meta)
                    .ok()
                    .and_then(|m| m.get("progressToken").cloned())
                    .unwrap_or(json!(0));
                for step in 0..3u32 {
                    if step > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    let progress = step * 50;
                    let params = json!({"progressToken": token, "progress": progress, "total": 100,
                        "message": format!("Completed step {progress} of 100")});
                    notify(&peer, "notifications/progress", params).await;
                }
                text_result(match &token {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
            }
            "slow_progress" => {
                // `steps` progress notifications `step_ms` apart: the call
                // `probe` cancels halfway (A4 after a cancellation).
                let counting = everything::Counting::slow(&args);
                let token = serde_json::to_value(&cx.meta)
                    .ok()
                    .and_then(|m| m.get("progressToken").cloned());
                for step in 1..=counting.steps {
                    tokio::time::sleep(Duration::from_millis(counting.step_ms)).await;
                    if let Some(token) = &token {
                        let params = json!({"progressToken": token, "progress": step, "total": counting.steps});
                        notify(&peer, "notifications/progress", params).await;
                    }
                }
                text_result(format!("{} steps", counting.steps))
            }
            "test_reconnection" => {
                // Close the connection now; the answer comes after the
                // client resumed with Last-Event-ID.
                let session = cx
                    .extensions
                    .get::<hyper::http::request::Parts>()
                    .and_then(|p| p.headers.get("mcp-session-id"))
                    .and_then(|v| v.to_str().ok());
                if let (Some(core), Some(session)) = (&self.core, session) {
                    core.close_connection(session, &cx.id)
                        .map_err(|e| McpError::internal_error(e.to_string(), None))?;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                text_result("Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.")
            }
            "test_sampling" => {
                let params = everything::sampling(&args);
                let answer = ask(&peer, "sampling/createMessage", params).await;
                text_result(everything::sampling_answer(answer))
            }
            _ => {
                let Some((params, prefix)) = everything::elicitation(name, &args) else {
                    return Err(McpError::invalid_params(
                        format!("Unknown tool: {name}"),
                        None,
                    ));
                };
                let answer = ask(&peer, "elicitation/create", params).await;
                text_result(everything::elicitation_answer(prefix, answer))
            }
        }
    }
}

impl ServerHandler for Reference {
    fn get_info(&self) -> ServerConfig {
        from_json(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": everything::capabilities(),
            "serverInfo": everything::server_info()
        }))
        .expect("the reference server's self-description is an InitializeResult")
    }

    /// The tool as listed: rmcp checks a 2026-07-28 call's `Mcp-Param-*`
    /// headers (SEP-2243) against the schema this returns, and checks none
    /// for a tool it does not know (`#[tool_handler]` writes this method;
    /// a handler that lists its tools by hand must too).
    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        if !self.serves(name) {
            return None;
        }
        let tools = everything::tools();
        let tool = tools["tools"]
            .as_array()?
            .iter()
            .find(|t| t["name"] == name)?;
        serde_json::from_value(tool.clone()).ok()
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut tools = everything::tools();
        if let Some(list) = tools["tools"].as_array_mut() {
            list.retain(|t| t["name"].as_str().is_some_and(|n| self.serves(n)));
        }
        complete(tools)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let raw = RawJson::new(&args);
        if let Some(answer) = everything::static_tool(&request.name, Arguments::of(&raw)) {
            let answer = answer.map_err(|e| McpError::invalid_params(e.message, None))?;
            return Ok(complete::<CallToolResult>(answer.to_value())?.into());
        }
        if !self.serves(&request.name) {
            let unknown = format!("Unknown tool: {}", request.name);
            return Err(McpError::invalid_params(unknown, None));
        }
        self.interactive(&request.name, args, cx).await
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        complete(everything::resources())
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        complete(everything::resource_templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let read = everything::read(&request.uri)
            .map_err(|e| McpError::resource_not_found(e.message, None))?;
        Ok(complete::<ReadResourceResult>(read.to_value())?.into())
    }

    async fn subscribe(
        &self,
        _: SubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Ok(())
    }

    async fn unsubscribe(
        &self,
        _: UnsubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Ok(())
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        complete(everything::prompts())
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let prompt = everything::prompt(&request.name, &args)
            .map_err(|e| McpError::invalid_params(e.message, None))?;
        Ok(complete::<GetPromptResult>(prompt.to_value())?.into())
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        _: SetLevelRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Ok(())
    }

    async fn complete(
        &self,
        _: CompleteRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        complete(json!({"completion": {"values": [], "total": 0, "hasMore": false}}))
    }
}

#[tokio::main]
async fn main() {
    let mut args = Args::parse();
    let config = StreamableHttpServerConfig::default();
    let router = if args.local {
        let manager = Arc::new(LocalSessionManager::default());
        let svc = StreamableHttpService::new(|| Ok(Reference { core: None }), manager, config);
        axum::Router::new().nest_service("/mcp", svc)
    } else {
        let tap = args.monitor.then(|| {
            monitor::watching(|v| println!("monitor violation {} {:?}: {}", v.id, v.http, v.detail))
        });
        let manager = Arc::new(CoreSessionManager::default().with_tap(tap));
        let core = Some(manager.clone());
        let bind = manager.layer();
        let svc = StreamableHttpService::new(
            move || Ok(Reference { core: core.clone() }),
            manager,
            config,
        );
        let router = axum::Router::new().nest_service("/mcp", svc);
        if args.tokens.is_empty() {
            router
        } else {
            let tokens = Arc::new(std::mem::take(&mut args.tokens));
            let metadata = Arc::new(ResourceMetadata::new(
                format!("http://{}/mcp", args.addr),
                vec![format!("http://{}/", args.addr)],
            ));
            let challenge = metadata.clone();
            let document = metadata.document();
            router
                .layer(bind)
                .layer(axum::middleware::from_fn(move |request, next| {
                    bearer(tokens.clone(), challenge.clone(), request, next)
                }))
                // RFC 9728's document, where the challenge names it.
                .route(
                    &metadata.path(),
                    axum::routing::get(move || async move {
                        ([("content-type", "application/json")], document)
                    }),
                )
        }
    };
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .unwrap_or_else(|e| exit(&format!("{}: {e}", args.addr)));
    let listener = axum::serve::ListenerExt::tap_io(listener, |t| {
        let _ = t.set_nodelay(true);
    });
    let manager = if args.local { "local" } else { "core" };
    println!(
        "rmcp on the {manager} session manager, http://{}/mcp",
        args.addr
    );
    if let Err(e) = axum::serve(listener, router).await {
        exit(&e.to_string());
    }
}

/// The bearer check: the token's principal into the request's extensions,
/// or the core's challenge (401, naming the resource's metadata).
async fn bearer(
    tokens: Arc<StaticTokens>,
    metadata: Arc<ResourceMetadata>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let authorization = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok());
    match tokens.authenticate(authorization) {
        Ok(principal) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(refusal) => {
            let challenge = metadata.challenge(refusal);
            axum::response::Response::builder()
                .status(challenge.status())
                .header("www-authenticate", challenge.header_value())
                .body(axum::body::Body::empty())
                .expect("a valid response")
        }
    }
}

struct Args {
    addr: SocketAddr,
    local: bool,
    monitor: bool,
    tokens: StaticTokens,
}

impl Args {
    fn parse() -> Args {
        let usage =
            "usage: rmcp_server [--addr HOST:PORT] [--session-manager core|local] [--monitor] [--auth-token TOKEN=PRINCIPAL]...";
        let mut parsed = Args {
            addr: "127.0.0.1:3003".parse().expect("an address"),
            local: false,
            monitor: false,
            tokens: StaticTokens::new(),
        };
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--addr" => match args.next().map(|a| a.parse()) {
                    Some(Ok(a)) => parsed.addr = a,
                    _ => exit(usage),
                },
                "--session-manager" => match args.next().as_deref() {
                    Some("core") => parsed.local = false,
                    Some("local") => parsed.local = true,
                    _ => exit(usage),
                },
                "--monitor" => parsed.monitor = true,
                "--auth-token" => match args.next().map(|e| StaticTokens::parse_entry(&e)) {
                    Some(Ok((token, principal))) => {
                        parsed.tokens = std::mem::take(&mut parsed.tokens).with(&token, principal)
                    }
                    _ => exit(usage),
                },
                _ => exit(usage),
            }
        }
        if parsed.local && !parsed.tokens.is_empty() {
            exit("--auth-token binds sessions on the core manager only");
        }
        parsed
    }
}

fn exit(why: &str) -> ! {
    eprintln!("{why}");
    std::process::exit(2)
}
