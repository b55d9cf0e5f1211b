//! An MCP server inside an axum 0.8 application: the endpoint is mounted at
//! `/mcp` as a tower `Service`, beside routes of the application's own. It
//! serves the reference tool set (the conformance suite's) with the FIXED
//! policy; every MCP decision is the core's (through [`McpService`]), axum
//! only routes.
//!
//! ```sh
//! cargo run --release --example axum -- --addr 127.0.0.1:3002 [--monitor]
//! ```
//!
//! With `--monitor` the monitor watches every observation and each violation
//! is printed the moment it is found. With `--auth-token TOKEN=PRINCIPAL`
//! (repeatable) the endpoint requires one of those bearer tokens: the
//! mounted service refuses a request without one (401, naming the resource's
//! metadata, which the accept loop serves at its well-known path) and binds
//! each session to the principal that opened it; the application's own
//! routes stay open.
//!
//! The router is served by our own accept loop (`Server::serve_service`),
//! not by `axum::serve`: the core bounds what a request may make a session
//! hold (bodies, sessions, streams: `docs/limits.md`), and the loop bounds
//! the connections themselves, as it does for `Server::bind`: at most
//! `connections_max` open (newcomers wait in the kernel's backlog), and a
//! connection that sends no request head within `header_read_timeout` is
//! closed. `axum::serve` has neither, so there every silent socket would
//! cost a task and a descriptor for as long as its client likes. Each
//! request carries the peer's address (`PeerAddr`), which the core's
//! per-client session quota counts by.

use axum::routing::get;
use axum::Router;
use mcp_streamable_check::monitor;
use mcp_streamable_hyper::auth::{Auth, ResourceMetadata, StaticTokens};
use mcp_streamable_hyper::EverythingApp;
use mcp_streamable_hyper::{McpService, Server, ServerOptions};
use std::net::SocketAddr;

#[tokio::main]
async fn main() {
    let (addr, monitor, tokens) = args();
    let tap = monitor.then(|| {
        monitor::watching(|v| println!("monitor violation {} {:?}: {}", v.id, v.http, v.detail))
    });
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .unwrap_or_else(|e| exit(&format!("{addr}: {e}")));
    let local = listener.local_addr().unwrap_or(addr);
    // One application per session, each run by the session's own driver.
    let mut options = ServerOptions::default();
    // The tools whose arguments a 2026-07-28 call mirrors as Mcp-Param-*
    // headers (SEP-2243), as the application lists them: checked at the door.
    options.endpoint.tool_headers = mcp_streamable_hyper::everything::tool_headers();
    if !tokens.is_empty() {
        let resource = format!("http://{local}/mcp");
        options.auth = Auth::with(tokens).metadata(ResourceMetadata::new(resource, Vec::new()));
    }
    let (mcp, handle): (McpService<EverythingApp>, _) =
        Server::start(options.clone(), EverythingApp::default, tap);
    let router = Router::new()
        .route("/", get(|| async { "an axum application; MCP at /mcp\n" }))
        .route("/healthz", get(|| async { "ok\n" }))
        .route_service("/mcp", mcp);
    println!("axum example serving http://{local}/mcp");
    let accepting = Server::serve_service(listener, &options, router);
    let _ = tokio::signal::ctrl_c().await;
    // Stop accepting, then end every session's streams: open responses end
    // with them, and each connection closes once its requests are answered.
    accepting.shutdown().await;
    handle.shutdown().await;
}

fn args() -> (SocketAddr, bool, StaticTokens) {
    let mut addr: SocketAddr = "127.0.0.1:3002".parse().expect("an address");
    let mut monitor = false;
    let mut tokens = StaticTokens::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => match args.next().map(|a| a.parse()) {
                Some(Ok(a)) => addr = a,
                _ => exit("--addr HOST:PORT"),
            },
            "--monitor" => monitor = true,
            "--auth-token" => match args.next().map(|e| StaticTokens::parse_entry(&e)) {
                Some(Ok((token, principal))) => tokens = tokens.with(&token, principal),
                _ => exit("--auth-token TOKEN=PRINCIPAL"),
            },
            _ => {
                exit("usage: axum [--addr HOST:PORT] [--monitor] [--auth-token TOKEN=PRINCIPAL]...")
            }
        }
    }
    (addr, monitor, tokens)
}

fn exit(why: &str) -> ! {
    eprintln!("{why}");
    std::process::exit(2)
}
