//! Errors typed by who is at fault.
//!
//! [`RequestError`]: the remote peer sent something the server must refuse; it
//! carries the HTTP status and, where the spec allows one, a JSON-RPC error body.
//! [`UsageError`]: the local application called a command it should not have.

use crate::head::{Content, ResponseHead};
use crate::ids::RequestId;
use crate::jsonrpc::{
    ErrorObject, Message, ParseError, RawJson, HEADER_MISMATCH, INVALID_PARAMS, INVALID_REQUEST,
    METHOD_NOT_FOUND, TRANSPORT_ERROR, UNSUPPORTED_PROTOCOL_VERSION,
};
use crate::version::{ProtocolVersion, UnsupportedVersion};

/// A request the server refuses, with its HTTP status.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// Not GET, POST or DELETE (405, with `Allow`).
    #[error("method not allowed")]
    MethodNotAllowed,
    /// `Origin` present and not allowed (403, R41–R42).
    #[error("origin {0:?} is not allowed")]
    ForbiddenOrigin(String),
    /// `Host` not allowed (403; DNS rebinding).
    #[error("host {0:?} is not allowed")]
    ForbiddenHost(String),
    /// `Accept` does not list what the method needs (406, R2, R12).
    #[error("Accept must list {0}")]
    NotAcceptable(&'static str),
    /// POST body is not `application/json` (415).
    #[error("Content-Type must be application/json")]
    UnsupportedMediaType,
    /// Body over the bound (413).
    #[error("body larger than {max} bytes")]
    PayloadTooLarge {
        /// The bound, `body_max`.
        max: usize,
    },
    /// `MCP-Protocol-Version` invalid or unsupported (400, R31), answered
    /// as 2026-07-28 asks of every server: -32022 with the versions it
    /// supports and the one requested (a 2025 client reads the 400).
    #[error("{version}")]
    BadProtocolVersion {
        /// What was asked for.
        version: UnsupportedVersion,
        /// The request's id, when the body named one.
        id: Option<RequestId>,
    },
    /// 2026-07-28: a standard header missing, malformed, or disagreeing
    /// with the body (400, -32020 `HeaderMismatch`).
    #[error("header mismatch: {what}")]
    HeaderMismatch {
        /// What disagrees with what.
        what: String,
        /// The request's id.
        id: Option<RequestId>,
    },
    /// 2026-07-28: a required per-request `_meta` field is missing (400,
    /// -32602).
    #[error("missing required _meta field {field}")]
    MissingMeta {
        /// The field's key.
        field: &'static str,
        /// The request's id.
        id: Option<RequestId>,
    },
    /// 2026-07-28: params the method cannot do without (400, -32602).
    #[error("invalid params: {what}")]
    InvalidParams {
        /// What is wrong.
        what: String,
        /// The request's id.
        id: Option<RequestId>,
    },
    /// 2026-07-28: a method this era does not have (404, -32601).
    #[error("method not found: {method}")]
    UnknownMethod {
        /// The method.
        method: String,
        /// The request's id.
        id: Option<RequestId>,
    },
    /// Body is not a JSON-RPC message this version accepts (400).
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// No `Mcp-Session-Id` on a request other than `initialize` (400, R23; 401 under a preset).
    #[error("missing Mcp-Session-Id")]
    MissingSessionId {
        /// Answer 401 instead of 400 (rmcp v0.16).
        unauthorized: bool,
    },
    /// A request for a path that is not the MCP endpoint (404): our own
    /// accept loop serves one path (`ServerOptions::path`); no session or
    /// core sees the request.
    #[error("no MCP endpoint at {path:?}; it is at {endpoint:?}")]
    UnknownPath {
        /// The path asked for.
        path: String,
        /// The endpoint's path.
        endpoint: String,
    },
    /// `Mcp-Session-Id` unknown, malformed or terminated (404, R24; 401 under a preset).
    #[error("unknown or terminated session")]
    UnknownSession {
        /// Answer 401 instead of 404 (rmcp v0.16).
        unauthorized: bool,
    },
    /// `initialize` in a batch, or on a session that is already initialized (400).
    #[error("initialize must be alone and without a session id")]
    BadInitialize,
    /// A request id already in flight on this session (400, R45).
    #[error("request id {0} is already in use")]
    DuplicateRequestId(RequestId),
    /// `Last-Event-ID` names no event this session can replay from (400).
    /// Documented answer for unknown, expired, foreign and malformed ids.
    #[error("Last-Event-ID {0:?} is unknown or expired; open a new stream")]
    UnknownEventId(String),
    /// Resuming a finished POST stream under rmcp v0.16 (500 `ChannelClosed`).
    #[error("stream closed")]
    ChannelClosed,
    /// Too many live sessions (503), `sessions_max`, and none could be
    /// evicted (every session is initialized and busy).
    #[error("too many sessions")]
    SessionLimit,
    /// This peer already holds `sessions_per_peer_max` sessions (429).
    #[error("too many sessions for this client (at most {max})")]
    PeerSessionLimit {
        /// The quota.
        max: usize,
    },
    /// The client requests in flight on this session would hold more than
    /// `in_flight_bytes_max` bytes (429); nothing of this request was kept.
    #[error("requests in flight on this session would hold more than {max} bytes")]
    InFlightBytesLimit {
        /// The bound.
        max: usize,
    },
    /// Too many client requests in flight on this session (429), `in_flight_max`.
    #[error("too many requests in flight on this session (at most {max})")]
    InFlightLimit {
        /// The bound.
        max: usize,
    },
    /// A request head HTTP/1.1 forbids: no `Host`, or a repeated `Host` or
    /// `Origin` (400; RFC 9112 §3.2: with two values, which one was checked?).
    #[error("bad request head: {0}")]
    BadHead(&'static str),
    /// The body could not be read: malformed chunked framing, or shorter than
    /// its `Content-Length` (400).
    #[error("the request body could not be read")]
    UnreadableBody,
    /// The body did not arrive within `body_read_timeout` (408).
    #[error("the request body did not arrive in time")]
    BodyTimeout,
    /// The server is over its memory budget for buffered messages (503);
    /// nothing of this request was kept.
    #[error("server busy: buffered bytes over budget")]
    OverBudget,
    /// The driver's queue of requests waiting for this session is full (503);
    /// the request was not read by any endpoint (`requests_queued_max`).
    #[error("server busy: too many requests queued")]
    Overloaded,
    /// The application's authentication refused the request (401, or 403
    /// for a missing scope), with its `WWW-Authenticate` challenge
    /// ([`crate::auth`]). No core sees the request.
    #[error("authentication failed: {}", .0.refusal)]
    Unauthenticated(Box<crate::auth::Challenge>),
}

impl RequestError {
    /// The HTTP status to answer with.
    pub fn status(&self) -> u16 {
        match self {
            RequestError::MethodNotAllowed => 405,
            RequestError::ForbiddenOrigin(_) | RequestError::ForbiddenHost(_) => 403,
            RequestError::NotAcceptable(_) => 406,
            RequestError::UnsupportedMediaType => 415,
            RequestError::PayloadTooLarge { .. } => 413,
            RequestError::MissingSessionId { unauthorized: true }
            | RequestError::UnknownSession { unauthorized: true } => 401,
            RequestError::UnknownSession { .. }
            | RequestError::UnknownMethod { .. }
            | RequestError::UnknownPath { .. } => 404,
            RequestError::BadProtocolVersion { .. }
            | RequestError::HeaderMismatch { .. }
            | RequestError::MissingMeta { .. }
            | RequestError::InvalidParams { .. }
            | RequestError::Parse(_)
            | RequestError::MissingSessionId { .. }
            | RequestError::BadInitialize
            | RequestError::DuplicateRequestId(_)
            | RequestError::UnknownEventId(_)
            | RequestError::BadHead(_)
            | RequestError::UnreadableBody => 400,
            RequestError::BodyTimeout => 408,
            RequestError::PeerSessionLimit { .. }
            | RequestError::InFlightLimit { .. }
            | RequestError::InFlightBytesLimit { .. } => 429,
            RequestError::ChannelClosed => 500,
            RequestError::SessionLimit | RequestError::OverBudget | RequestError::Overloaded => 503,
            RequestError::Unauthenticated(c) => c.status(),
        }
    }

    /// The JSON-RPC error body (R5, R42: an error with no id, unless the
    /// request's id is known).
    pub fn error_object(&self) -> ErrorObject {
        let code = match self {
            RequestError::Parse(p) => p.code(),
            RequestError::BadInitialize | RequestError::DuplicateRequestId(_) => INVALID_REQUEST,
            RequestError::MethodNotAllowed | RequestError::UnknownMethod { .. } => METHOD_NOT_FOUND,
            RequestError::BadProtocolVersion { .. } => UNSUPPORTED_PROTOCOL_VERSION,
            RequestError::HeaderMismatch { .. } => HEADER_MISMATCH,
            RequestError::MissingMeta { .. } | RequestError::InvalidParams { .. } => INVALID_PARAMS,
            _ => TRANSPORT_ERROR,
        };
        let mut error = ErrorObject::new(code, self.to_string());
        if let RequestError::BadProtocolVersion {
            version: UnsupportedVersion(requested),
            ..
        } = self
        {
            let supported: Vec<&str> = ProtocolVersion::ALL.iter().map(|v| v.as_str()).collect();
            error.data = Some(RawJson::from(serde_json::json!({
                "supported": supported,
                "requested": requested,
            })));
        }
        error
    }

    /// The response head of the refusal: the status, a JSON body, and
    /// `Allow` on a 405.
    pub fn response_head(&self) -> ResponseHead {
        let mut head = ResponseHead::new(self.status(), Content::Json);
        head.allow = matches!(self, RequestError::MethodNotAllowed);
        head
    }

    /// The body of the refusal: the JSON-RPC error, with the request's id
    /// when known.
    pub fn message(&self) -> Message {
        Message::Error {
            id: self.request_id().cloned(),
            error: self.error_object(),
        }
    }

    /// The request id the error answers, when known.
    pub fn request_id(&self) -> Option<&RequestId> {
        match self {
            RequestError::DuplicateRequestId(id) => Some(id),
            RequestError::HeaderMismatch { id, .. }
            | RequestError::BadProtocolVersion { id, .. }
            | RequestError::MissingMeta { id, .. }
            | RequestError::InvalidParams { id, .. }
            | RequestError::UnknownMethod { id, .. } => id.as_ref(),
            _ => None,
        }
    }
}

/// A command the application should not have issued.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UsageError {
    /// The request is not in flight: never received, already answered, or cancelled.
    /// Nothing for a request may follow its response (R9, R51).
    #[error("request {0} is not active")]
    RequestNotActive(RequestId),
    /// The session has ended.
    #[error("session has ended")]
    SessionEnded,
    /// Too many server-to-client requests awaiting answers (`outbound_requests_max`).
    #[error("too many outstanding server requests")]
    TooManyRequests,
    /// No such HTTP exchange.
    #[error("unknown http exchange")]
    UnknownExchange,
    /// Not in the 2026-07-28 era, and why.
    #[error("not in the 2026-07-28 era: {0}")]
    WrongEra(&'static str),
    /// The `initialize` answer was already sent: the version is settled.
    #[error("the initialize answer was already sent")]
    AlreadyInitialized,
    /// No request to the client with this id is awaited: never sent,
    /// answered, or given up already.
    #[error("request {0} to the client is not awaited")]
    NotAwaited(RequestId),
}
