//! The hyper/tokio shells: they move bytes and time between sockets and the
//! cores, and take no decision about MCP themselves.
//!
//! Both shells are generic over their IO ([`Listen`], [`Connect`]), so the
//! same code runs on tokio TCP and on turmoil's simulated TCP.

mod app;
mod body;
pub mod client;
mod clock;
pub mod everything;
mod io;
pub mod server;

pub use app::{App, Cx, EchoApp};
pub use everything::EverythingApp;
pub use io::{Connect, Listen, TcpConnect};
pub use server::{McpService, PeerAddr, Server, ServerHandle, ServerOptions};

/// An observer of everything a shell sees and writes (feeds the monitor).
pub type Tap = Box<dyn FnMut(&crate::monitor::Observation) + Send>;
