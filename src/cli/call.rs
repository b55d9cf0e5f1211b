//! `mcp-streamable call URL [TOOL [JSON-ARGS]]`: initialize, call one tool,
//! print its result, DELETE. Also the conformance suite's client command: the
//! suite appends the URL last and names the scenario in
//! `MCP_CONFORMANCE_SCENARIO`, which picks the tool when none is given.
//!
//! A one-shot call opens no background GET: it has nothing to listen for, and
//! a GET racing the call would only invite a response on the wrong stream.

use mcp_streamable::client::{ClientEra, ClientEvent};
use mcp_streamable::http::client::{split_url, Client, ClientOptions};
use mcp_streamable::http::TcpConnect;
use mcp_streamable::monitor::Monitor;
use mcp_streamable::policy::BackgroundGet;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

/// Arguments of `call`.
#[derive(clap::Args)]
pub struct CallArgs {
    /// The server URL (http://host:port/path), the tool and its JSON arguments, in any order of URL.
    args: Vec<String>,
    /// Print server notifications and requests to stderr as they arrive
    /// (and ask for progress).
    #[arg(long)]
    verbose: bool,
    /// Judge the run with the invariant monitor; exit 1 if it finds anything.
    #[arg(long)]
    monitor: bool,
    /// Which protocol era to speak: legacy (initialize, a session), modern
    /// (2026-07-28: server/discover, no session) or auto (probe, fall back).
    #[arg(long, value_enum, default_value = "legacy")]
    era: Era,
}

/// `--era`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Era {
    Legacy,
    Modern,
    Auto,
}

pub fn run(args: CallArgs) -> Result<ExitCode, String> {
    let url = args
        .args
        .iter()
        .find(|a| a.starts_with("http://"))
        .cloned()
        .ok_or("call needs a URL (http://host:port/path)")?;
    let mut rest = args.args.iter().filter(|a| **a != url);
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let (tool, arguments) = match rest.next() {
        Some(tool) => {
            let arguments = match rest.next() {
                Some(json) => serde_json::from_str(json).map_err(|e| format!("JSON-ARGS: {e}"))?,
                None => serde_json::json!({}),
            };
            (Some(tool.clone()), arguments)
        }
        None => match scenario.as_str() {
            "tools_call" => (
                Some("add_numbers".to_owned()),
                serde_json::json!({"a": 1, "b": 2}),
            ),
            "sse-retry" => (Some("test_reconnection".to_owned()), serde_json::json!({})),
            _ => (None, serde_json::json!({})),
        },
    };
    let (authority, path) = split_url(&url).map_err(|e| e.to_string())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let verbose = args.verbose;
    let use_monitor = args.monitor;
    let era = args.era;
    rt.block_on(async move {
        let addr = tokio::net::lookup_host(&authority)
            .await
            .map_err(|e| format!("{authority}: {e}"))?
            .next()
            .ok_or_else(|| format!("{authority}: no address"))?;
        let mut options = ClientOptions::default();
        options.policy.background_get = BackgroundGet::Off;
        options.config.era = match era {
            Era::Legacy => ClientEra::Legacy,
            Era::Modern => ClientEra::Modern,
            Era::Auto => ClientEra::Auto,
        };
        let monitor = Arc::new(Mutex::new(Monitor::new()));
        if use_monitor {
            let m = monitor.clone();
            options.tap = Some(Box::new(move |o| {
                if let Ok(mut m) = m.lock() {
                    m.observe(o);
                }
            }));
        }
        let (client, init) = Client::connect(TcpConnect(addr), &authority, &path, options)
            .await
            .map_err(|e| format!("initialize: {e}"))?;
        eprintln!("initialized: {}", init.as_str());
        let watcher = verbose.then(|| {
            let mut events = client.subscribe();
            tokio::spawn(async move {
                while let Ok(e) = events.recv().await {
                    match e {
                        ClientEvent::Notification { method, .. } => {
                            eprintln!("notification {method}")
                        }
                        ClientEvent::ServerRequest { method, .. } => {
                            eprintln!("server request {method}")
                        }
                        _ => {}
                    }
                }
            })
        });
        let outcome = match &tool {
            Some(tool) if verbose => {
                client
                    .call_tool_with_progress(tool, arguments, serde_json::json!("call"))
                    .await
            }
            Some(tool) => client.call_tool(tool, arguments).await,
            None => client.request("tools/list", None).await,
        };
        client.close().await;
        if let Some(w) = watcher {
            w.abort();
        }
        if use_monitor {
            let mut m = monitor.lock().map_err(|_| "monitor poisoned")?;
            m.finish(&[]);
            eprintln!(
                "monitor: {} observations, {} violations",
                m.steps(),
                m.violations().len()
            );
            for v in m.violations() {
                eprintln!("  {} {:?}: {}", v.id, v.http, v.detail);
            }
            if !m.violations().is_empty() {
                return Ok(ExitCode::from(1));
            }
        }
        match outcome {
            Ok(Ok(result)) => {
                println!("{}", result.as_str());
                Ok(ExitCode::SUCCESS)
            }
            Ok(Err(e)) => Err(format!("JSON-RPC error {}: {}", e.code, e.message)),
            Err(e) => Err(e.to_string()),
        }
    })
}
