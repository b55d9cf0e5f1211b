//! rmcp 2.2.0's Streamable HTTP server, stateless with JSON responses, as a
//! peer for the black-box prober.
//!
//! ```text
//! rmcp22-interop-server --addr 127.0.0.1:PORT
//! ```
//!
//! The endpoint is `/mcp`. In this mode 2.2.0 answers a POST with the first
//! message the handler sends for the request as the `application/json` body
//! (rust-sdk #980), so `test_tool_with_progress` — which notifies before it
//! answers — is the call that shows it: the body is a progress notification,
//! not the result. `echo` and `notify` are the plain cases beside it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ProgressNotificationParam, ServerCapabilities, ServerInfo};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{tool, tool_handler, tool_router, RoleServer, ServerHandler};
use serde::Deserialize;

/// The handler: stateless, so one is made per request and holds nothing.
#[derive(Clone)]
struct Probe;

#[derive(Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to answer with.
    text: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct NotifyArgs {
    /// How long to wait before `notifications/tools/list_changed` (default 0).
    delay_ms: Option<u64>,
}

#[tool_router]
impl Probe {
    /// Progress 0, 50 and 100 of 100 through the request's peer, then the
    /// token as the result: what the prober compares the body against.
    #[tool(description = "Sends three progress notifications, then answers with the token")]
    async fn test_tool_with_progress(&self, cx: RequestContext<RoleServer>) -> String {
        let Some(token) = cx.meta.get_progress_token() else {
            return "done".to_string();
        };
        for (i, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let param = ProgressNotificationParam::new(token.clone(), progress).with_total(100.0);
            // Once 2.2.0 has taken the first message as the body, the rest
            // have nowhere to go: their errors are expected, not failures.
            let _ = cx.peer.notify_progress(param).await;
        }
        token.0.to_string()
    }

    #[tool(description = "Answers with the text it was given")]
    async fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> String {
        args.text
    }

    /// Answers at once; the later `list_changed` has no stream to go to in
    /// stateless mode, so it is attempted and its error ignored.
    #[tool(description = "Sends notifications/tools/list_changed after delay_ms")]
    async fn notify(
        &self,
        Parameters(args): Parameters<NotifyArgs>,
        cx: RequestContext<RoleServer>,
    ) -> String {
        let delay = args.delay_ms.unwrap_or(0);
        let peer = cx.peer.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(delay)).await;
            let _ = peer.notify_tool_list_changed().await;
        });
        format!("notifying in {delay} ms")
    }
}

#[tool_handler]
impl ServerHandler for Probe {
    fn get_info(&self) -> ServerInfo {
        let name = Implementation::new("rmcp22-interop-server", env!("CARGO_PKG_VERSION"));
        ServerInfo::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(name)
    }
}

#[tokio::main]
async fn main() {
    let addr = parse_addr();
    // Stateless: no session, so the never-manager; JSON: one body per POST.
    let config = StreamableHttpServerConfig::default()
        .with_stateful_mode(false)
        .with_json_response(true);
    let service = StreamableHttpService::new(
        || Ok(Probe),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .unwrap_or_else(|e| exit(&format!("{addr}: {e}")));
    println!("rmcp 2.2.0 stateless JSON, http://{addr}/mcp");
    if let Err(e) = axum::serve(listener, router).await {
        exit(&e.to_string());
    }
}

/// `--addr HOST:PORT`, required: the prober picks the port, and the server
/// binds that address only.
fn parse_addr() -> SocketAddr {
    let usage = "usage: rmcp22-interop-server --addr 127.0.0.1:PORT";
    let mut args = std::env::args().skip(1);
    match (
        args.next().as_deref(),
        args.next().map(|a| a.parse::<SocketAddr>()),
        args.next(),
    ) {
        (Some("--addr"), Some(Ok(addr)), None) => addr,
        _ => exit(usage),
    }
}

fn exit(why: &str) -> ! {
    eprintln!("{why}");
    std::process::exit(2)
}
