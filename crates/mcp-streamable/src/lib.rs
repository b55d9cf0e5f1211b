//! Sans-IO cores for the MCP Streamable HTTP transport (2025-03-26 to
//! 2025-11-25 sessions, and the 2026-07-28 stateless era), with the real
//! SDKs' transport bugs as policy presets and checkers that prove the fixed
//! design free of them.
//!
//! # Entry points
//! - [`ServerEndpoint`]: the server core. It takes a request (head and body
//!   bytes), an exchange the peer closed, the time, and answers with
//!   [`server::Transmit`]s and [`server::ServerEvent`]s; it keeps the session
//!   table, each session a [`ServerSession`].
//! - [`ServerDriver`]: the loop every server embedding runs around an
//!   endpoint and an [`app::App`]: events to the application, transmits as
//!   bytes ready to write ([`server::wire::Write`]), timers. A transport moves
//!   bytes and time; [`manual::embedding`] says what it must report and
//!   how soon, for async and thread-per-request transports.
//! - [`ClientSession`]: the client core: `initialize`, requests, the
//!   standalone GET, resumption, both eras.
//! - [`ServerPolicy`] and [`ClientPolicy`]: every decision where
//!   implementations differ; `FIXED` is this crate's design, the other
//!   presets reproduce real SDKs.
//! - [`IdSource`] and [`Instant`]: entropy and time, the cores' only outside
//!   inputs besides bytes.
//!
//! Beside the cores, the [`observe`] vocabulary: what every loop around a
//! core can report. Above them, each a crate of its own: the checker
//! (`mcp-streamable-check`: the monitor that judges observations, the
//! simulated world, the model checker), the hyper/tokio shells and the
//! reference application (`mcp-streamable-hyper`), the rmcp adapter
//! (`mcp-streamable-rmcp`), the fleet's Redis store (`mcp-streamable-redis`)
//! and the command line (`mcp-streamable-cli`).
//!
//! # The contract, for every core
//!
//! **Every mutation (`handle_*(…, now)` or a command) must be followed by a
//! complete drain of `poll_transmit` and `poll_event` until they return `None`,
//! then a look at `poll_timeout`.** The cores never read a clock, never draw from
//! a global random generator, never block and never spawn: time and entropy
//! (an [`IdSource`]) are inputs, and where a real implementation's behaviour depends on scheduling,
//! that scheduling point is an input too.
//!
//! # The bare server loop
//!
//! The endpoint alone, no driver and no application (a request that needs
//! one, like `tools/call`, shows up as a [`server::ServerEvent`] instead):
//!
//! ```
//! use mcp_streamable::server::{EndpointConfig, RequestHead, TransmitKind};
//! use mcp_streamable::{IdSource, Instant, ServerEndpoint, ServerPolicy};
//!
//! let mut endpoint = ServerEndpoint::with_ids(
//!     EndpointConfig::default(),
//!     ServerPolicy::FIXED,
//!     IdSource::reproducible(7),
//! );
//! let body = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"doc","version":"1"}}}"#;
//! let now = Instant::ZERO;
//! let dispatched = endpoint.handle_request(&RequestHead::post(None, None), body, now);
//! assert!(dispatched.outcome.is_ok() && dispatched.session.is_some());
//! // Drain: every output of this input, until the core is quiet.
//! let mut heads = 0;
//! loop {
//!     let mut progressed = false;
//!     while let Some((_session, _event)) = endpoint.poll_event() {
//!         progressed = true; // an application would answer here
//!     }
//!     while let Some(t) = endpoint.poll_transmit() {
//!         progressed = true; // a transport would write `t.kind` on `t.http`
//!         assert_eq!(t.http, dispatched.http);
//!         heads += usize::from(matches!(t.kind, TransmitKind::Head(_)));
//!     }
//!     if !progressed {
//!         break;
//!     }
//! }
//! assert_eq!(heads, 1, "the initialize answered");
//! let _next_deadline = endpoint.poll_timeout();
//! ```
//!
//! The repository's `examples/` holds an embedding of each kind:
//! `blocking.rs` (the server core on `std::net`, a thread per connection),
//! `blocking_client.rs`, `axum.rs`, `auth_jwt.rs` (sessions bound to a JWT's
//! subject), `rmcp_server.rs`.

#![forbid(unsafe_code)]

pub mod app;
pub mod auth;
pub mod error;
pub mod fleet;
pub mod head;
pub mod headers;
pub mod id_source;
pub mod ids;
pub mod jsonrpc;
pub mod manual;
pub mod mrtr;
pub mod observe;
pub mod policy;
pub mod preset;
pub mod principal;
pub mod release;
pub mod rng;
pub mod server;
pub mod shared;
pub mod sse;
pub mod time;
pub mod tool_headers;
pub mod unhashed;
pub mod v2026;
pub mod version;

pub use client::{ClientConfig, ClientSession};
pub use id_source::IdSource;
pub use policy::{ClientPolicy, ServerPolicy};
pub use server::{ServerDriver, ServerEndpoint, ServerSession};
pub use time::Instant;

// The loom support module of `tests/` is shared with the unit tests' loom
// models, and names the crate as the integration tests do.
#[cfg(test)]
extern crate self as mcp_streamable;

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
pub mod client;
