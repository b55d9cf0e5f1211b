//! `rmcp-interop-client URL MODE`: connects with rmcp 3.9's client in MODE
//! (`initialize`, `discover` or `auto`), lists the tools, calls `echo`, and
//! prints the negotiated protocol version. Exit status 1 on any failure.
//!
//! `rmcp-interop-client probe MODE URL`: `probe-client`'s command. Connects
//! in MODE with the transport's defaults, calls `MCP_PROBE_TOOL` with
//! `MCP_PROBE_ARGUMENTS` (JSON; elicitations get rmcp's default answer, a
//! decline), prints the result; exit 1 on any failure, and no deadline of
//! its own: the prober bounds the run.

use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::StreamableHttpClientTransport;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1).collect::<Vec<_>>().into_iter();
    let probe = args.as_slice().first().map(String::as_str) == Some("probe");
    if probe {
        let _ = args.next();
    }
    let (mode, url) = if probe {
        let mode = args.next();
        (mode, args.next())
    } else {
        let url = args.next();
        (args.next(), url)
    };
    let (Some(url), Some(mode)) = (url, mode) else {
        eprintln!("usage: rmcp-interop-client URL initialize|discover|auto");
        std::process::exit(2);
    };
    let modern = vec![ProtocolVersion::V_2026_07_28];
    let lifecycle = match mode.as_str() {
        "initialize" => ClientLifecycleMode::Initialize,
        "discover" => ClientLifecycleMode::Discover {
            preferred_versions: modern,
        },
        "auto" => ClientLifecycleMode::Auto {
            preferred_versions: modern,
            legacy_version: Some(ProtocolVersion::V_2025_11_25),
        },
        other => {
            eprintln!("unknown mode {other}");
            std::process::exit(2);
        }
    };
    if probe {
        let tool = std::env::var("MCP_PROBE_TOOL").unwrap_or_else(|_| "test_simple_text".into());
        let arguments = std::env::var("MCP_PROBE_ARGUMENTS").unwrap_or_else(|_| "{}".into());
        let run = async {
            let transport = StreamableHttpClientTransport::from_uri(url);
            let client = ()
                .serve_with_lifecycle(transport, lifecycle)
                .await
                .map_err(|e| format!("connect: {e}"))?;
            let mut params = CallToolRequestParams::new(tool);
            params.arguments = serde_json::from_str(&arguments).map_err(|e| e.to_string())?;
            let result = client
                .call_tool(params)
                .await
                .map_err(|e| format!("tools/call: {e}"))?;
            let _ = client.cancel().await;
            Ok::<_, String>(result)
        };
        match run.await {
            Ok(r) if r.is_error != Some(true) => println!("{r:?}"),
            Ok(r) => {
                eprintln!("rmcp-client probe {mode}: tool error {r:?}");
                std::process::exit(1);
            }
            Err(e) => {
                eprintln!("rmcp-client probe {mode}: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    let run = async {
        let transport = StreamableHttpClientTransport::from_uri(url);
        let client = ()
            .serve_with_lifecycle(transport, lifecycle)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let version = client
            .peer_info()
            .map(|i| i.protocol_version.to_string())
            .unwrap_or_default();
        let tools = client
            .list_all_tools()
            .await
            .map_err(|e| format!("tools/list: {e}"))?;
        let mut params = CallToolRequestParams::new("echo");
        params.arguments = Some(
            [("text".to_owned(), "rmcp".into())]
                .into_iter()
                .collect(),
        );
        let result = client
            .call_tool(params)
            .await
            .map_err(|e| format!("tools/call: {e}"))?;
        let _ = client.cancel().await;
        Ok::<_, String>(format!(
            "rmcp-client {mode} ok: version={version} tools={} echo={}",
            tools.len(),
            result.content.len()
        ))
    };
    match tokio::time::timeout(std::time::Duration::from_secs(30), run).await {
        Ok(Ok(line)) => println!("{line}"),
        Ok(Err(e)) => {
            eprintln!("rmcp-client {mode}: {e}");
            std::process::exit(1);
        }
        Err(_) => {
            eprintln!("rmcp-client {mode}: timed out");
            std::process::exit(1);
        }
    }
}
