//! Sans-IO cores for the MCP Streamable HTTP transport.
//!
//! See `docs/architecture.md`. The contract, for every core:
//!
//! **Every mutation (`handle_*(…, now)` or a command) must be followed by a
//! complete drain of `poll_transmit` and `poll_event` until they return `None`,
//! then a look at `poll_timeout`.** The cores never read a clock, never draw from
//! a global random generator, never block and never spawn: time and entropy
//! (an [`id_source::IdSource`]) are inputs, and where a real implementation's behaviour depends on scheduling,
//! that scheduling point is an input too.

#![forbid(unsafe_code)]

pub mod aead;
pub mod app;
pub mod base64;
pub mod chacha;
pub mod error;
pub mod fleet;
pub mod head;
pub mod headers;
pub mod id_source;
pub mod ids;
pub mod jsonrpc;
pub mod monitor;
pub mod mrtr;
pub mod policy;
pub mod poly1305;
mod release;
pub mod rng;
pub mod server;
pub mod shared;
pub mod sse;
pub mod sync;
pub mod time;
pub mod unhashed;
pub mod version;

// The loom support module of `tests/` is shared with the unit tests' loom
// models, and names the crate as the integration tests do.
#[cfg(test)]
extern crate self as mcp_streamable;

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
#[cfg(feature = "check")]
pub mod check;
pub mod client;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "rmcp")]
pub mod rmcp;
#[cfg(feature = "check")]
pub mod sim;
