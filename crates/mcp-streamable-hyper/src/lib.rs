//! The hyper/tokio shells around the `mcp-streamable` cores: they move
//! bytes and time between sockets and the cores, and take no decision about
//! MCP themselves. [`Server`] (and [`McpService`], a tower `Service`) serves
//! sessions; [`client`] calls a server through the client core; [`fleet`]
//! runs one instance of a fleet on a shared store; [`EverythingApp`] is the
//! reference application (every tool, prompt and resource the conformance
//! suite calls); [`sync`] holds the shared handles the loom models check.
//!
//! Both shells are generic over their IO ([`Listen`], [`Connect`]), so the
//! same code runs on tokio TCP and on turmoil's simulated TCP.

pub mod auth;
mod body;
pub mod client;
pub mod clock;
pub mod everything;
mod everything_mrtr;
mod exchanges;
pub mod fleet;
mod head_watch;
mod io;
mod owner;
pub mod server;
mod shared;
pub mod sync;

pub use everything::EverythingApp;
pub use io::{Connect, Listen, TcpConnect};
pub use mcp_streamable::app::{App, Cx, EchoApp, Tap};
pub use server::{
    BoxError, McpFuture, McpService, PeerAddr, RequestBody, Routes, Served, Server, ServerHandle,
    ServerOptions, DEFAULT_PATH,
};
