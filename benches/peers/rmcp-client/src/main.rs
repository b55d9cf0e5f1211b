//! `rmcp-interop-client URL MODE`: connects with rmcp 3.9's client in MODE
//! (`initialize`, `discover` or `auto`), lists the tools, calls `echo`, and
//! prints the negotiated protocol version. Exit status 1 on any failure.
//!
//! `rmcp-interop-client probe MODE URL`: `probe-client`'s command. Connects
//! in MODE with the transport's defaults, calls `MCP_PROBE_TOOL` with
//! `MCP_PROBE_ARGUMENTS` (JSON; elicitations get rmcp's default answer, a
//! decline, `MCP_PROBE_ANSWER_DELAY_MS` after they came) `MCP_PROBE_CALLS` times at once (default 1; every call settled
//! before it judges, so one that hangs keeps it waiting), prints the
//! results; exit 1 on any failure, and no deadline of its own unless
//! `MCP_PROBE_GIVE_UP_MS` asks: then each call is given up that long after
//! it was sent (rmcp's own request timeout, `PeerRequestOptions`), and the
//! client stays connected `MCP_PROBE_LINGER_MS`, closes and exits 0;
//! otherwise the prober bounds the run. With `MCP_PROBE_LISTEN=tools` (and a MODE other than
//! `initialize`) it first listens for tool-list changes and ends only once it
//! has learned of one: the notification, or a `tools/list` after a new
//! listen's acknowledgement. rmcp ends a lost listen's `Subscription`
//! (`next` gives `None`, `end` says `Abrupt`) and never listens again by
//! itself: this program, the application, does.

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ProtocolVersion,
    ServerNotification, ServerResult, SubscriptionFilter,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, Peer, PeerRequestOptions, RoleClient, ServiceError,
};
use rmcp::transport::StreamableHttpClientTransport;

/// A call of the tool, given up `give_up_ms` after it was sent when that is
/// not 0 (rmcp's own request timeout, which tells the server): none then.
async fn call_or_give_up(
    peer: Peer<RoleClient>,
    params: CallToolRequestParams,
    give_up_ms: u64,
) -> Result<Option<CallToolResult>, ServiceError> {
    if give_up_ms == 0 {
        return peer.call_tool(params).await.map(Some);
    }
    let handle = peer
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::with_timeout(std::time::Duration::from_millis(give_up_ms)),
        )
        .await?;
    match handle.await_response().await {
        Ok(ServerResult::CallToolResult(r)) => Ok(Some(r)),
        Ok(_) => Err(ServiceError::UnexpectedResponse),
        Err(ServiceError::Timeout { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The prober's application: rmcp's default answers, an elicitation's
/// after `delay_ms` (the time an application takes to ask its user).
struct Prober {
    delay_ms: u64,
}

impl rmcp::ClientHandler for Prober {
    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        tokio::time::sleep(std::time::Duration::from_millis(self.delay_ms)).await;
        Ok(rmcp::model::ElicitResult::new(
            rmcp::model::ElicitationAction::Decline,
        ))
    }
}

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
        let calls: usize = std::env::var("MCP_PROBE_CALLS")
            .ok()
            .and_then(|n| n.parse().ok())
            .filter(|n| *n >= 1)
            .unwrap_or(1);
        let listen =
            mode != "initialize" && std::env::var("MCP_PROBE_LISTEN").is_ok_and(|l| l == "tools");
        let ms = |name: &str| {
            std::env::var(name)
                .ok()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0)
        };
        let delay_ms = ms("MCP_PROBE_ANSWER_DELAY_MS");
        let give_up_ms = ms("MCP_PROBE_GIVE_UP_MS");
        let linger_ms = ms("MCP_PROBE_LINGER_MS");
        let run = async {
            let transport = StreamableHttpClientTransport::from_uri(url);
            let client = Prober { delay_ms }
                .serve_with_lifecycle(transport, lifecycle)
                .await
                .map_err(|e| format!("connect: {e}"))?;
            let filter = SubscriptionFilter::builder().tools_list_changed().build();
            let learning = match listen {
                true => {
                    let sub = client
                        .listen(filter.clone())
                        .await
                        .map_err(|e| format!("subscriptions/listen: {e}"))?;
                    let peer = client.peer().clone();
                    Some(tokio::spawn(learn_of_a_change(peer, sub, filter)))
                }
                false => None,
            };
            let mut params = CallToolRequestParams::new(tool);
            params.arguments = serde_json::from_str(&arguments).map_err(|e| e.to_string())?;
            let mut at_once = tokio::task::JoinSet::new();
            for _ in 0..calls {
                let peer = client.peer().clone();
                let params = params.clone();
                at_once.spawn(call_or_give_up(peer, params, give_up_ms));
            }
            let mut results = Vec::new();
            let mut given_up = false;
            while let Some(settled) = at_once.join_next().await {
                results.push(match settled {
                    Ok(Ok(None)) => {
                        given_up = true;
                        continue;
                    }
                    Ok(Ok(Some(r))) if r.is_error != Some(true) => Ok(r),
                    Ok(Ok(Some(r))) => Err(format!("tool error {r:?}")),
                    Ok(Err(e)) => Err(format!("tools/call: {e}")),
                    Err(e) => Err(format!("tools/call task: {e}")),
                });
            }
            if given_up && results.iter().all(Result::is_ok) {
                // The application lives on, connected, as a long-lived one does.
                eprintln!("rmcp-client probe {mode}: gave the call up; staying {linger_ms} ms");
                tokio::time::sleep(std::time::Duration::from_millis(linger_ms)).await;
            }
            // A failed call ends the run; the change is awaited after the
            // calls that made it.
            let learned = match learning {
                Some(learning) if results.iter().all(Result::is_ok) => Some(
                    learning
                        .await
                        .unwrap_or_else(|e| Err(format!("listen task: {e}"))),
                ),
                _ => None,
            };
            let _ = client.cancel().await;
            Ok::<_, String>((results, learned))
        };
        let mut failed = false;
        match run.await {
            Ok((results, learned)) => {
                for r in results {
                    match r {
                        Ok(r) => println!("{r:?}"),
                        Err(e) => {
                            eprintln!("rmcp-client probe {mode}: {e}");
                            failed = true;
                        }
                    }
                }
                match learned {
                    Some(Ok(how)) => println!("{how}"),
                    Some(Err(e)) => {
                        eprintln!("rmcp-client probe {mode}: {e}");
                        failed = true;
                    }
                    None => {}
                }
            }
            Err(e) => {
                eprintln!("rmcp-client probe {mode}: {e}");
                failed = true;
            }
        }
        if failed {
            std::process::exit(1);
        }
        return;
    }
    let run = async {
        let transport = StreamableHttpClientTransport::from_uri(url);
        let client =
            ().serve_with_lifecycle(transport, lifecycle)
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
        params.arguments = Some([("text".to_owned(), "rmcp".into())].into_iter().collect());
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

/// Waits on `sub` until a tool-list change is learned: its notification, or,
/// once the listen has ended (rmcp's `Abrupt` for a lost stream), a new
/// listen followed by a fresh `tools/list` (nothing is replayed: the change
/// may have gone with the lost stream, and only a list has it).
async fn learn_of_a_change(
    peer: Peer<RoleClient>,
    mut sub: rmcp::service::Subscription,
    filter: SubscriptionFilter,
) -> Result<String, String> {
    loop {
        match sub.next().await {
            Ok(Some(ServerNotification::ToolListChangedNotification(_))) => {
                return Ok("heard the tool-list change".into())
            }
            Ok(Some(_)) => continue,
            ended => {
                eprintln!("listen ended ({ended:?}, {:?}); listening again", sub.end());
                let _again = peer
                    .listen(filter)
                    .await
                    .map_err(|e| format!("subscriptions/listen again: {e}"))?;
                // The response cache would answer from before the change.
                peer.clear_response_cache().await;
                let tools = peer
                    .list_all_tools()
                    .await
                    .map_err(|e| format!("tools/list: {e}"))?;
                return Ok(format!(
                    "listening again; tools/list: {} tools",
                    tools.len()
                ));
            }
        }
    }
}
