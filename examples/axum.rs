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
//! is printed the moment it is found.
//!
//! The core bounds what a request may make a session hold (bodies,
//! sessions, streams: `docs/limits.md`), and hyper bounds a head's size, but
//! the connections themselves are `axum::serve`'s: it has neither a timeout
//! for a client that never sends its head nor a cap on open connections (a
//! silent socket costs a task and a descriptor). Facing the internet, put a
//! proxy in front, or serve the router with `hyper_util`'s builder and its
//! `header_read_timeout`, as our own accept loop (`Server::bind`) does.

use axum::extract::{ConnectInfo, Request};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use mcp_streamable::app::{self, EverythingApp};
use mcp_streamable::http::{McpService, PeerAddr, Server, ServerOptions};
use std::net::SocketAddr;

#[tokio::main]
async fn main() {
    let (addr, monitor) = args();
    let tap = monitor.then(|| {
        app::watching(|v| println!("monitor violation {} {:?}: {}", v.id, v.http, v.detail))
    });
    // One application per session, each run by the session's own driver.
    let (mcp, handle): (McpService<EverythingApp>, _) =
        Server::start(ServerOptions::default(), EverythingApp::default, tap);
    let router = Router::new()
        .route("/", get(|| async { "an axum application; MCP at /mcp\n" }))
        .route("/healthz", get(|| async { "ok\n" }))
        .route_service("/mcp", mcp)
        .layer(middleware::from_fn(peer_addr));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .unwrap_or_else(|e| exit(&format!("{addr}: {e}")));
    println!(
        "axum example serving http://{}/mcp",
        listener.local_addr().unwrap_or(addr)
    );
    let served = axum::serve(
        listener,
        router.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async {
        let _ = tokio::signal::ctrl_c().await;
        // Ends every session's streams first: axum waits for open responses.
        handle.shutdown().await;
    })
    .await;
    if let Err(e) = served {
        exit(&e.to_string());
    }
}

/// Tells the endpoint who is asking: the core's per-client session quota
/// counts by address (axum knows it as `ConnectInfo`).
async fn peer_addr(
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut req: Request,
    next: Next,
) -> Response {
    req.extensions_mut().insert(PeerAddr(peer));
    next.run(req).await
}

fn args() -> (SocketAddr, bool) {
    let mut addr: SocketAddr = "127.0.0.1:3002".parse().expect("an address");
    let mut monitor = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => match args.next().map(|a| a.parse()) {
                Some(Ok(a)) => addr = a,
                _ => exit("--addr HOST:PORT"),
            },
            "--monitor" => monitor = true,
            _ => exit("usage: axum [--addr HOST:PORT] [--monitor]"),
        }
    }
    (addr, monitor)
}

fn exit(why: &str) -> ! {
    eprintln!("{why}");
    std::process::exit(2)
}
