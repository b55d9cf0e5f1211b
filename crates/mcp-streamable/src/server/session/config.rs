//! A session's bounds and timings ([`SessionConfig`]), how its answers are
//! framed ([`ResponseMode`]), the ranges its ids are numbered in, and its
//! deadlines ([`SessionTimer`]).

use serde::{Deserialize, Serialize};

/// How a POST's answer is framed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseMode {
    /// Always `text/event-stream`, committed when the POST arrives (priming at once on 2025-11-25).
    #[default]
    Sse,
    /// `application/json` when the response is the first thing written, else SSE;
    /// committed at the first write. A call cancelled before anything was
    /// written is answered `202` with no body.
    JsonWhenAlone,
}

/// Bounds and timings of one session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionConfig {
    /// SSE `retry` sent with priming events, in ms.
    pub retry_ms: u64,
    /// Events kept per stream for replay.
    pub events_max: usize,
    /// Bytes of messages kept per stream for replay; the oldest go first.
    pub events_bytes_max: usize,
    /// Streams kept for resumption once finished or detached.
    pub streams_max: usize,
    /// Unrelated messages waiting for a standalone stream.
    pub held_max: usize,
    /// Bytes of unrelated messages waiting for a standalone stream; past it
    /// the oldest is dropped, visibly (`ServerEvent::Dropped`).
    pub held_bytes_max: usize,
    /// Bytes one session keeps in all (replay buffers and held messages):
    /// past it the oldest events of detached streams go first, then of
    /// attached ones, then held messages.
    pub session_bytes_max: usize,
    /// How long an unrelated message may wait for a standalone stream, in ms.
    pub held_ttl_ms: u64,
    /// Client requests in flight at once.
    pub in_flight_max: usize,
    /// Bytes of the client requests in flight at once (their JSON, which
    /// the application holds while it serves them): a request that would
    /// pass it is refused (429) unless nothing else is in flight, so one
    /// request up to `body_max` is always served, and a client cannot pin
    /// more than this by requests it never lets finish.
    pub in_flight_bytes_max: usize,
    /// Server-to-client requests awaiting answers.
    pub outbound_requests_max: usize,
    /// How long a request to the client waits for its answer, in ms (None:
    /// for ever). Past it the application hears it failed
    /// ([`REQUEST_TIMEOUT`](crate::jsonrpc::REQUEST_TIMEOUT)) and the client
    /// is sent `notifications/cancelled`: an answer the network lost, or a
    /// client that never answers, leaves nobody waiting.
    pub outbound_timeout_ms: Option<u64>,
    /// Cancelled request ids remembered (to drop late responses).
    pub cancelled_max: usize,
    /// Session ends after this long with no open exchange, in ms (None: never).
    pub idle_timeout_ms: Option<u64>,
    /// Session ends this long after it opened unless `notifications/initialized`
    /// has arrived, in ms (None: never). Half-open sessions are what a flood
    /// is made of; a real client completes the handshake in milliseconds.
    pub init_timeout_ms: Option<u64>,
    /// SSE keep-alive comment interval on attached streams, in ms (None: off).
    pub keepalive_ms: Option<u64>,
    /// JSON or SSE answers.
    pub response_mode: ResponseMode,
    /// Streams are numbered from `stream_id_base + 1` (0 alone: one
    /// process). The instances of a fleet each take their own range, so a
    /// `Last-Event-ID` names its stream's log on any instance; a session
    /// numbers at most [`STREAM_ID_SPAN`] − 2 streams in its range, then
    /// starts over at its beginning (the range's base and its last id are
    /// the fleet's logs: a mailbox, a control channel, an instance's
    /// answers). Message keys (`MsgKey`) and the ids of requests to the
    /// client take the matching ranges ([`key_base`], [`request_id_base`]),
    /// so what two instances send for one session never shares a key or
    /// an id, and a client's answer names the instance that asked.
    pub stream_id_base: u32,
    /// The number of the session's first request to the client, within its
    /// range ([`request_id_base`]): 1 by default; 0 numbers them as most
    /// SDKs do, so that the first `elicitation/create` has id `0`, which a
    /// client that reads `0` as absent mishandles (typescript-sdk #2654).
    pub first_request_number: i64,
}

/// How many stream ids one session has in its range (see
/// [`SessionConfig::stream_id_base`]): far more than `streams_max` keeps, so
/// an id numbered again names a stream long forgotten.
pub const STREAM_ID_SPAN: u32 = 1 << 20;

/// How many copies of one session, taken up one after another on one
/// instance of a fleet, number their streams, keys and requests in ranges
/// of their own ([`ServerSession::adopted`]): the store counts a session's
/// adoptions, and adoption `a` starts at the `a mod ADOPTIONS_SPAN`-th
/// slice of the instance's ranges. A copy that ends (its idle timer, its
/// application) leaves logs and requests behind; the next copy there must
/// not append to those logs or reuse those request ids.
///
/// [`ServerSession::adopted`]: super::ServerSession::adopted
pub const ADOPTIONS_SPAN: u32 = 256;

/// The first of the message keys a session with streams from `stream_id_base`
/// mints (keys `base + 1 …`): the base shifted into the high bits, so each
/// instance of a fleet has 2^52 keys per session to itself; 0 in one process.
pub const fn key_base(stream_id_base: u32) -> u64 {
    (stream_id_base as u64) << 32
}

/// The ids of requests to the client a session with streams from
/// `stream_id_base` sends (`base + 1 …`): instance k's are k × 2^32 + 1 …,
/// below 2^44, so JavaScript clients echo them exactly; 0 in one process.
pub const fn request_id_base(stream_id_base: u32) -> i64 {
    (stream_id_base as i64) << 12
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            retry_ms: 1000,
            events_max: 64,
            events_bytes_max: 1 << 20,
            streams_max: 32,
            held_max: 256,
            held_bytes_max: 1 << 20,
            session_bytes_max: 4 << 20,
            held_ttl_ms: 60_000,
            in_flight_max: 256,
            in_flight_bytes_max: 8 << 20,
            outbound_requests_max: 64,
            outbound_timeout_ms: Some(60_000),
            cancelled_max: 64,
            idle_timeout_ms: Some(30 * 60 * 1000),
            init_timeout_ms: Some(10_000),
            keepalive_ms: Some(15_000),
            response_mode: ResponseMode::Sse,
            stream_id_base: 0,
            first_request_number: 1,
        }
    }
}

/// The session's deadlines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SessionTimer {
    /// Drop held unrelated messages past `held_ttl_ms`.
    HeldExpiry,
    /// Send SSE keep-alive comments.
    KeepAlive,
    /// End the idle session.
    Idle,
    /// End the session that has not completed its handshake.
    Init,
    /// Give up the requests to the client whose answer is overdue.
    Outbound,
}
