//! rmcp 3.9 with an `echo` tool, TCP_NODELAY on, for the HTTP benchmark; and a
//! `notify` tool (tools/list_changed after `delay_ms`) for `probe`.
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::{session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{tool, tool_handler, tool_router, Peer, RoleServer, ServerHandler};
use std::sync::Arc;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoReq {
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NotifyReq {
    delay_ms: Option<u64>,
}

#[derive(Clone)]
struct Echo {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Echo {
    #[tool(description = "echo")]
    fn echo(&self, Parameters(EchoReq { text }): Parameters<EchoReq>) -> String {
        text
    }

    #[tool(description = "sends notifications/tools/list_changed after delay_ms")]
    fn notify(&self, peer: Peer<RoleServer>, Parameters(NotifyReq { delay_ms }): Parameters<NotifyReq>) -> String {
        let delay = delay_ms.unwrap_or(0).min(10_000);
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
            let _ = peer.notify_tool_list_changed().await;
        });
        format!("notifying in {delay} ms")
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args().nth(1).and_then(|p| p.parse().ok()).unwrap_or(3004);
    let svc = StreamableHttpService::new(
        || Ok(Echo { tool_router: Echo::tool_router() }),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let listener = axum::serve::ListenerExt::tap_io(listener, |t| {
        let _ = t.set_nodelay(true);
    });
    println!("rmcp ready");
    axum::serve(listener, axum::Router::new().nest_service("/mcp", svc)).await
}
