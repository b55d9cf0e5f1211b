//! The client side: [`ClientSession`], one MCP client over Streamable HTTP.
//!
//! The pending map is the single source of truth: a response completes its
//! request exactly once, whichever stream brought it; when it does, every
//! exchange still working for that request is aborted and no retry for it is
//! scheduled.

mod session;
#[cfg(test)]
mod session_tests;
#[cfg(test)]
pub(crate) mod testing;

pub use session::{encode_value, ClientEra, ClientOutput, ClientSession, ACKNOWLEDGED};

use crate::head::RequestHead;
use crate::ids::{HttpId, RequestId, SessionId};
use crate::jsonrpc::{ErrorObject, RawJson};
use crate::version::ProtocolVersion;
use serde::{Deserialize, Serialize};

/// Bounds and timings of a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct ClientConfig {
    /// The version offered in `initialize`.
    pub protocol_version: ProtocolVersion,
    /// Reconnection delay when the server sent no `retry`, in ms.
    pub retry_default_ms: u64,
    /// Resumptions of one request's stream without a new message before it fails.
    pub resume_attempts_max: u32,
    /// Longest time a request may spend resuming, in ms.
    pub resume_window_ms: u64,
    /// Default request deadline, in ms.
    pub request_timeout_ms: u64,
    /// Consecutive failed background GETs before giving up.
    pub background_failures_max: u32,
    /// Requests in flight at once.
    pub pending_max: usize,
    /// Finished request ids remembered to tell duplicates from strangers (C4).
    pub finished_max: usize,
    /// Reconnections of one EventSource-style reader (`ReconnectStreams::EveryEnd`).
    pub reader_reconnects_max: u32,
    /// Who answers the server's requests (sampling, elicitation, roots).
    pub server_requests: ServerRequests,
    /// Which protocol era to speak: the session era (default), the 2026-07-28
    /// one (2026-07-28), or whichever the server answers the probe with.
    pub era: ClientEra,
    /// Longest whole (JSON) response body a transport reads, in bytes; past
    /// it the transport stops reading and closes the exchange, which the
    /// core then treats as cut off (a hostile server cannot make the client
    /// buffer without bound).
    pub body_max: usize,
    /// Listens (`subscriptions/listen`, 2026-07-28) one client keeps at once.
    pub listens_max: usize,
    /// Re-listens in a row that get no acknowledgement before a listen
    /// ends with `StreamLost` (a server that refuses nothing but never
    /// acknowledges cannot keep the client reconnecting forever).
    pub relisten_failures_max: u32,
    /// `InputRequiredResult`s one request may get before it fails with
    /// `TooManyInputRounds` (2026-07-28 MRTR: a server that keeps asking
    /// cannot keep the client retrying forever; the SDKs stop at 10).
    pub input_rounds_max: u32,
    /// Bytes of the custom headers (SEP-2243) the client remembers of the
    /// tools it listed in the 2026-07-28 era, to mirror their arguments on
    /// calls: past it the tool listed longest ago is forgotten, and its
    /// calls go out without them (a server refuses those with -32020 until
    /// the tools are listed again).
    pub tool_headers_bytes_max: usize,
    /// Server requests handed to the application and not yet answered, at
    /// most; one past it is answered at once with -32603 (internal error),
    /// so a server cannot grow the client's memory without bound.
    pub asked_max: usize,
    /// Connections the transport keeps to the server at once, its pool
    /// (`None`: as many as asked). An HTTP/1.1 client carries one exchange
    /// per connection, and one a pool has no room for waits for a free
    /// one, the pool granting them in the order they were opened: the core
    /// never lets its standalone GET or a listen, which a server holds
    /// open, take the last
    /// ([`BackgroundGet::On`](crate::policy::BackgroundGet::On),
    /// [`ListenPool::LeavesOne`](crate::policy::ListenPool::LeavesOne)),
    /// and an answer to the server's question never waits behind the
    /// streams that wait for it
    /// ([`AnswerRoom::YieldStream`](crate::policy::AnswerRoom::YieldStream)).
    /// Tell it what the transport's pool is (HttpClient's
    /// `MaxConnectionsPerServer`, reqwest's per-host limit).
    pub connections_max: Option<usize>,
}

/// Who answers the server's requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerRequests {
    /// The application: each arrives as [`ClientEvent::ServerRequest`] and is
    /// answered with `ClientSession::respond`.
    #[default]
    Application,
    /// Nobody here implements them: the core answers each at once with
    /// -32601 (method not found), as JSON-RPC asks of a peer without the method.
    Decline,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            protocol_version: ProtocolVersion::LATEST,
            retry_default_ms: 1000,
            resume_attempts_max: 3,
            resume_window_ms: 60_000,
            request_timeout_ms: 60_000,
            background_failures_max: 3,
            pending_max: 1024,
            finished_max: 256,
            reader_reconnects_max: 1000,
            server_requests: ServerRequests::Application,
            era: ClientEra::V2025,
            body_max: 4 << 20,
            listens_max: 16,
            relisten_failures_max: 3,
            input_rounds_max: 10,
            tool_headers_bytes_max: 256 << 10,
            asked_max: 256,
            connections_max: None,
        }
    }
}

/// The client's deadlines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ClientTimer {
    /// Request `n` times out.
    Deadline(i64),
    /// Resume request `n`'s stream with `Last-Event-ID`.
    Resume(i64),
    /// Reconnect the background GET.
    Background,
    /// Reconnect EventSource-style reader `n`.
    Reader(u32),
    /// Listen again for listen `n` after its stream broke.
    Relisten(u32),
}

/// One of the application's listens (`ClientSession::listen`): it outlives
/// the streams and request ids that carry it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ListenId(pub u32);

impl std::fmt::Display for ListenId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "listen#{}", self.0)
    }
}

/// What an exchange is for.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// The `initialize` POST.
    Initialize(RequestId),
    /// A request's POST, or a GET resuming its stream.
    Request(RequestId),
    /// A later round of a multi round-trip request (2026-07-28 MRTR): the
    /// retry `request`, which the application knows as `handle`.
    Round {
        /// The id `send_request` returned, which every round's outcome names.
        handle: RequestId,
        /// This round's own JSON-RPC id.
        request: RequestId,
    },
    /// A POST of a notification or of a response to a server request.
    Notify,
    /// The standalone background GET.
    Background,
    /// An EventSource-style reader reconnecting an ended stream.
    Reader,
    /// The DELETE ending the session.
    Delete,
    /// A `subscriptions/listen` stream of a listen, under this request id
    /// (each re-listen has its own).
    Listen {
        /// The application's listen.
        listen: ListenId,
        /// The `subscriptions/listen` request (the subscription id).
        request: RequestId,
    },
}

impl Purpose {
    /// The request this exchange works for, if any.
    pub fn request(&self) -> Option<&RequestId> {
        match self {
            Purpose::Initialize(id) | Purpose::Request(id) => Some(id),
            Purpose::Round { request, .. } => Some(request),
            _ => None,
        }
    }
}

/// What the client wants done on an exchange.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ClientTransmitKind {
    /// Start the exchange: send this request.
    Send {
        /// The head.
        head: RequestHead,
        /// The body (empty for GET and DELETE).
        body: Vec<u8>,
    },
    /// Stop the exchange: stop reading, close it.
    Abort,
}

/// One output of the client core.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientTransmit {
    /// The exchange, minted by the client core.
    pub http: HttpId,
    /// What it is for.
    pub purpose: Purpose,
    /// What to do.
    pub kind: ClientTransmitKind,
}

/// Why a request failed, typed by who is at fault.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered with an HTTP error.
    #[error("HTTP {status}")]
    Status {
        /// The status.
        status: u16,
        /// The JSON-RPC error in the body, if any.
        error: Option<ErrorObject>,
    },
    /// The session is gone (404, R25); call `initialize` again.
    #[error("session lost")]
    SessionLost,
    /// The deadline passed; `notifications/cancelled` was sent (R52).
    #[error("timed out")]
    Timeout,
    /// Cancelled by the caller; `notifications/cancelled` was sent.
    #[error("cancelled")]
    Cancelled,
    /// The stream ended without the response and without an event id to resume from.
    #[error("stream ended without a response and cannot be resumed")]
    StreamLost,
    /// Resumption attempts or time ran out.
    #[error("resumption exhausted")]
    ResumeExhausted,
    /// The client was closed.
    #[error("client closed")]
    Closed,
    /// The server chose a protocol version this client does not speak.
    #[error("unsupported protocol version {0:?}")]
    UnsupportedVersion(String),
    /// The answer held a body or an SSE event over the client's bound of
    /// `max` bytes, which was not read, and ended without the response.
    #[error("the server's answer held a message over {max} bytes, which was not read")]
    TooLarge {
        /// The bound, in bytes.
        max: usize,
    },
    /// The server's answer was not what the protocol allows.
    #[error("malformed answer: {0}")]
    Malformed(&'static str),
    /// The server answered `InputRequiredResult` more than
    /// `input_rounds_max` times.
    #[error("the server asked for input more than {0} times")]
    TooManyInputRounds(u32),
    /// The server asked for input and nobody here provides it
    /// (`ServerRequests::Decline`).
    #[error("the server asked for input this client does not provide")]
    InputDeclined,
}

/// A command the application should not have issued now.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientUsageError {
    /// No session: call `initialize` first (or again, after a loss).
    #[error("not initialized")]
    NotReady,
    /// `initialize` while a session is live or being set up.
    #[error("already initialized or initializing")]
    AlreadyInitialized,
    /// No such request in flight.
    #[error("request {0} is not pending")]
    UnknownRequest(RequestId),
    /// Too many requests in flight (`pending_max`).
    #[error("too many requests in flight")]
    TooManyRequests,
    /// The client was closed.
    #[error("client closed")]
    Closed,
    /// The 2026-07-28 era has no client notifications over HTTP
    /// and no requests from the server to answer.
    #[error("not in the 2026-07-28 era")]
    WrongEra,
    /// Only the 2026-07-28 era listens; the session era hears
    /// change notifications on its standalone GET.
    #[error("listen needs the 2026-07-28 era")]
    SessionEra,
    /// No such listen.
    #[error("{0} is not listening")]
    UnknownListen(ListenId),
    /// A listen would take the last connection of the transport's pool
    /// (`connections_max`) that its other listens leave to requests: a
    /// server holds a listen open, so requests would wait behind it for
    /// ever (`ListenPool::LeavesOne`).
    #[error("a listen would take the pool's last connection for requests")]
    NoSpareConnection,
    /// `provide_input` takes a map of answers keyed as the server keyed
    /// its `inputRequests`.
    #[error("input responses must be a JSON object keyed by input request")]
    InputNotAMap,
}

/// What the application must handle.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ClientEvent {
    /// The session is set up: id and version committed, `notifications/initialized` sent.
    Initialized {
        /// The `initialize` request's id.
        id: RequestId,
        /// The session id, if the server uses sessions.
        session_id: Option<SessionId>,
        /// The negotiated version.
        version: ProtocolVersion,
        /// The `InitializeResult`.
        result: RawJson,
    },
    /// A request's response.
    Response {
        /// The request.
        id: RequestId,
        /// Result or JSON-RPC error.
        result: Result<RawJson, ErrorObject>,
    },
    /// The `server/discover` probe was answered in a way that asks for
    /// another attempt, under a new id, whose outcome is the caller's: as a
    /// session-era server answers it (`ClientEra::Auto`: `initialize`
    /// follows), or with -32022 naming 2026-07-28 (the probe is sent
    /// once more).
    FellBack {
        /// The probe.
        id: RequestId,
        /// The answer that meant "session era".
        error: ClientError,
    },
    /// A request failed without a response.
    Failed {
        /// The request.
        id: RequestId,
        /// Why.
        error: ClientError,
    },
    /// The server needs input before it can answer request `id`
    /// (2026-07-28 MRTR, an `InputRequiredResult`): gather an answer to
    /// each of `requests` (a map of `{method, params}` by key: elicitation,
    /// sampling, roots) and pass them, keyed alike, to `provide_input`,
    /// which retries the request. Its answer still comes under `id`.
    InputRequired {
        /// The request, as `send_request` named it.
        id: RequestId,
        /// What the server asks, by its keys.
        requests: RawJson,
        /// Which round this is (1 for the first `InputRequiredResult`).
        round: u32,
    },
    /// A server-to-client request; answer with `respond`.
    ServerRequest {
        /// Its id.
        id: RequestId,
        /// Method.
        method: String,
        /// Parameters.
        params: Option<RawJson>,
    },
    /// The server withdrew its request `id` (`notifications/cancelled`)
    /// before the application answered: stop working on it; `respond`
    /// would refuse it now, since the server expects no answer.
    ServerRequestCancelled {
        /// The request.
        id: RequestId,
        /// The server's reason, if it gave one.
        reason: Option<String>,
    },
    /// A server notification.
    Notification {
        /// Method.
        method: String,
        /// Parameters.
        params: Option<RawJson>,
    },
    /// The session is gone; pending requests failed with `SessionLost`.
    SessionLost,
    /// The server does not offer a standalone GET stream (405).
    BackgroundDisabled,
    /// A listen's stream is acknowledged: list what is shown of these kinds
    /// now. Nothing sent before this moment is delivered on it, and when
    /// `resumed`, a change sent while the previous stream was broken is lost:
    /// only this list has it.
    Listening {
        /// The listen.
        listen: ListenId,
        /// What the server agreed to send.
        agreed: crate::v2026::ListenFilter,
        /// A re-listen after a broken stream.
        resumed: bool,
    },
    /// A listen is over: `None` when the server ended it (`complete`), else
    /// why (refused, broken `relisten_failures_max` times in a row, or
    /// `Cancelled` by the application's `unlisten`).
    ListenEnded {
        /// The listen.
        listen: ListenId,
        /// Why, unless it ended gracefully.
        error: Option<ClientError>,
    },
    /// A tool a 2026-07-28 `tools/list` answer offered has an invalid
    /// `x-mcp-header` annotation (SEP-2243): it is left out of that
    /// answer's result (the spec's "MUST exclude"), before the `Response`
    /// that carries the rest.
    ToolRejected {
        /// The tool's name.
        name: String,
        /// What is wrong with its annotation.
        reason: crate::tool_headers::InvalidAnnotation,
    },
}
