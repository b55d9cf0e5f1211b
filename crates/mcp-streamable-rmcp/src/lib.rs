//! rmcp 3.9 on our core (feature `rmcp`): [`CoreSessionManager`], a
//! `SessionManager` for rmcp's `StreamableHttpService` whose sessions are
//! [`ServerSession`](mcp_streamable::server::ServerSession)s. rmcp keeps its HTTP
//! checks, its handler and its SSE framing; the core takes every decision
//! its `LocalSessionManager` took: which stream a message goes on, event
//! ids, replay after `Last-Event-ID`, takeover of a resumed stream, and the
//! bounds. That ends the holes our prober finds in rmcp's own manager (B2,
//! B4, R18; `docs/compatibility.md`). What rmcp still decides outside the
//! trait is listed in `docs/rmcp.md`. [`CoreSessionManager::layer`] keeps
//! each session to the principal that opened it (see [`BindLayer`]).
//!
//! ```text
//!   rmcp StreamableHttpService ──SessionManager──► CoreSessionManager
//!        (HTTP checks, SSE)                          │ one LiveSession each
//!                                                    ▼
//!   rmcp service ◄──CoreTransport──► Bridge (sans-IO) ──► ServerSession
//! ```

mod bind;
pub mod bridge;
mod convert;
mod live;
#[cfg(test)]
mod loom_model;
mod manager;
mod stream;
mod transport;

pub use bind::{BindLayer, Bound};
pub use bridge::{Bridge, Output, SendError};
pub use manager::CoreSessionManager;
pub use stream::CoreStream;
pub use transport::CoreTransport;

use mcp_streamable::error::RequestError;
use mcp_streamable::policy::ServerPolicy;
use mcp_streamable::server::{AdmissionLimits, EndpointConfig, ResponseMode, SessionConfig};

/// What a [`CoreSessionManager`] is configured with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreConfig {
    /// Each session's bounds and timings (its `response_mode` is always
    /// SSE and its keep-alive off: rmcp frames and keeps alive).
    pub session: SessionConfig,
    /// The decisions where implementations differ (FIXED by default).
    pub policy: ServerPolicy,
    /// Who may open a session, and who makes room.
    pub admission: AdmissionLimits,
    /// Events queued on one stream that rmcp has not yet written, beyond
    /// the replay a resumption starts with: past it the reader is too slow
    /// and its stream is dropped (it stays resumable from its last event,
    /// and the replay of a resumption always fits, so it can catch up).
    pub stream_queued_max: usize,
    /// Client messages waiting for the session's handler: past it a new
    /// one is refused (rmcp answers 500) until the handler catches up.
    pub inbox_max: usize,
}

impl Default for CoreConfig {
    fn default() -> Self {
        CoreConfig {
            session: SessionConfig::default(),
            policy: ServerPolicy::FIXED,
            admission: EndpointConfig::default().admission_limits(),
            stream_queued_max: 256,
            inbox_max: 1024,
        }
    }
}

impl CoreConfig {
    pub(crate) fn session_config(&self) -> SessionConfig {
        SessionConfig {
            response_mode: ResponseMode::Sse,
            keepalive_ms: None,
            ..self.session
        }
    }
}

/// Why a [`CoreSessionManager`] call failed (rmcp answers each with a
/// plain-text 500, except where noted).
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// No such session (rmcp asked `has_session` first; it ended between).
    #[error("session not found")]
    UnknownSession,
    /// The core refused the request: admission (no room), an unknown
    /// `Last-Event-ID` (rmcp then answers an empty 200 stream), a request
    /// id in use, too many in flight (those two are answered on the stream,
    /// as JSON-RPC errors).
    #[error(transparent)]
    Refused(RequestError),
    /// The session's handler has `max` client messages it has not read.
    #[error("the session's handler has {max} messages it has not read")]
    HandlerBehind {
        /// `inbox_max`.
        max: usize,
    },
    /// The handler's message could not be sent.
    #[error(transparent)]
    Send(SendError),
    /// A message that rmcp's types and JSON-RPC disagree on.
    #[error("message conversion: {0}")]
    Convert(String),
    /// The handler ended the session without answering `initialize`.
    #[error("no answer to initialize")]
    NoAnswer,
}
