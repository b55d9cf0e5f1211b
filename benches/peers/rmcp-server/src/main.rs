//! rmcp 3.9 with one `echo` tool, TCP_NODELAY on, for the HTTP benchmark.
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::{session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{tool, tool_handler, tool_router, ServerHandler};
use std::sync::Arc;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoReq {
    text: String,
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
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
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
