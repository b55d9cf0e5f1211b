//! The server side: [`ServerEndpoint`] (all sessions, status codes) and
//! [`ServerSession`] (one session: streams, routing, replay).

pub mod admission;
mod drain;
pub mod driver;
mod endpoint;
pub mod event_ids;
pub mod request;
pub(crate) mod scheduler;
mod session;
pub mod stream;
pub mod uploads;
pub mod v2026;
pub(crate) mod v2026_result;
pub mod wire;

pub use crate::head::{Content, Method, RequestHead, ResponseHead};
pub use crate::principal::{Caller, Principal};
pub use admission::{Admission, AdmissionLimits, SessionState};
pub use drain::observe_own;
pub use drain::{BroadcastOrigin, ServerOutput};
pub use driver::{AppTimer, ServerDriver};
pub use endpoint::session_version;
pub use endpoint::{Dispatched, EndpointConfig, ServerEndpoint};
pub use request::{body_limit, AllowList, UnreadBody};
pub(crate) use session::cancelled_id;
pub use session::{
    key_base, request_id_base, ResponseMode, ServerSession, SessionConfig, SessionTimer,
    ADOPTIONS_SPAN, STREAM_ID_SPAN,
};
pub use uploads::{upload_len, Upload, Uploads};

use crate::ids::{HttpId, MsgKey, RequestId, SessionId};
use crate::jsonrpc::{ErrorObject, Message, RawJson};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Why the application emits a message: the request it serves, or none.
/// This is the whole input of causal routing.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Emitted while serving client request R: goes on R's stream, before R's response.
    Request(RequestId),
    /// Unrelated to any running request: goes on one standalone GET stream.
    Unrelated,
}

/// A message the application emitted, with its serial number and cause.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Outgoing {
    /// The session the message belongs to (what isolation, I1, is judged by).
    pub session: SessionId,
    /// Serial number of the message in its session.
    pub key: MsgKey,
    /// Why it was emitted.
    pub cause: Cause,
    /// The message.
    pub message: Message,
}

/// Why the server ends an HTTP response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// The exchange is complete: a response written, a 202, an error, a DELETE.
    Complete,
    /// Connection closed after an id-bearing event; the stream goes on and the
    /// client resumes with `Last-Event-ID` (polling, R37).
    Polling,
    /// A resumption of the same stream arrived on another connection.
    TakenOver,
    /// Another GET replaced this stream, which ends (rmcp v0.16: breaks B1).
    Replaced,
    /// The session ended (DELETE, expiry, termination).
    SessionEnded,
}

/// One output for one HTTP exchange.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TransmitKind {
    /// The response head; always first, exactly once.
    Head(ResponseHead),
    /// A whole `application/json` body: one message.
    Json(Message),
    /// One SSE event. `message: None` is a priming event (id, empty data).
    Event {
        /// The SSE `id`.
        id: Option<String>,
        /// The SSE `retry`, in ms.
        retry_ms: Option<u64>,
        /// The message.
        message: Option<Arc<Outgoing>>,
    },
    /// An SSE comment (keep-alive).
    Comment,
    /// The response is complete; close the body.
    End(EndReason),
}

/// What to write on which exchange.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Transmit {
    /// The exchange.
    pub http: HttpId,
    /// What to write.
    pub kind: TransmitKind,
}

/// Why a message was dropped on purpose (never silently).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// No standalone stream attached within `held_ttl` (or, under a preset,
    /// none wired when it was sent).
    NoStream,
    /// Held for a standalone stream, it was the oldest when the held
    /// messages outgrew `held_max`, `held_bytes_max` or the session's
    /// `session_bytes_max`.
    HeldFull,
    /// Emitted before `notifications/initialized` under
    /// `PreInitNotifications::Suppress`, or held for the handshake past
    /// `held_ttl` (R49: nothing unrelated goes out before it).
    BeforeInitialized,
    /// The client cancelled the request (R50: no response after cancellation).
    Cancelled,
    /// The session ended with the message undelivered.
    SessionEnded,
    /// Sent while no standalone stream was attached, and not held for one
    /// (`StreamlessUnrelated::Drop`: the SDKs that buffer nothing).
    Unheld,
    /// In a fleet: held for a GET on another instance, it was trimmed from
    /// the session's mailbox in the store (its `entries_per_log_max`)
    /// before any instance took it.
    MailboxFull,
}

/// What the application must handle.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ServerEvent {
    /// A client request to serve; answer with `respond`.
    Request {
        /// Its id.
        id: RequestId,
        /// Method.
        method: String,
        /// Parameters.
        params: Option<RawJson>,
    },
    /// A client notification (`notifications/initialized`, `notifications/cancelled`, …).
    Notification {
        /// Method.
        method: String,
        /// Parameters.
        params: Option<RawJson>,
    },
    /// The client's answer to a server request.
    Response {
        /// The server request's id.
        id: RequestId,
        /// Result or error.
        result: Result<RawJson, ErrorObject>,
    },
    /// A message was dropped by explicit policy.
    Dropped {
        /// Its serial number.
        key: MsgKey,
        /// Why.
        reason: DropReason,
    },
    /// The core told the client that the server's request `id` is no
    /// longer awaited (`notifications/cancelled`, message `key`, routed by
    /// `cause`): a request the application withdrew, or one given up at its
    /// deadline or with the call it was asked for (then also a
    /// [`ServerEvent::Response`] with the error). Nothing for the
    /// application to do; shown to the observer as the message's `Sent`,
    /// so that what was sent before a call's cancellation is told from what
    /// was sent after it (A3).
    Withdrawn {
        /// The server's request.
        id: RequestId,
        /// The notice's serial number.
        key: MsgKey,
        /// What the notice was sent for.
        cause: Cause,
    },
    /// The session ended; its id answers 404 from now on.
    SessionEnded {
        /// The DELETE that ended it (the exchange it arrived on); `None`
        /// when the server ended it itself (its application, an expiry, an
        /// eviction). Whose DELETE it was decides whether the session was
        /// changed on another principal's behalf (I2).
        deleted_by: Option<HttpId>,
    },
}
