//! The hyper/tokio shells: they move bytes and time between sockets and the
//! cores, and take no decision about MCP themselves.
//!
//! Both shells are generic over their IO ([`Listen`], [`Connect`]), so the
//! same code runs on tokio TCP and on turmoil's simulated TCP.

mod body;
pub mod client;
pub(crate) mod clock;
mod exchanges;
pub mod fleet;
mod head_watch;
mod io;
mod owner;
#[cfg(feature = "redis")]
pub mod redis;
pub mod server;

pub use crate::app::{everything, App, Cx, EchoApp, EverythingApp, Tap};
pub use io::{Connect, Listen, TcpConnect};
pub use server::{
    BoxError, McpFuture, McpService, PeerAddr, RequestBody, Routes, Served, Server, ServerHandle,
    ServerOptions, DEFAULT_PATH,
};
