//! [`ServerSession`]: one MCP session's streams, routing and replay.
//!
//! ```text
//!  New ──initialize──▶ Initializing ──its answer──▶ AwaitingInitialized ──notifications/initialized──▶ Ready
//!   │                      │                              │                                              │
//!   └──────────────────────┴──────── DELETE, close, idle or init expiry ─────────────────────────────────┴──▶ Ended
//! ```
//!
//! Routing under FIXED is causal: what the application emits for request R
//! goes on R's stream (or its resumption), the response last, nothing for R
//! after it; unrelated messages go to exactly one attached standalone stream,
//! or wait (bounded in count and time) until one attaches. No GET ever ends
//! another stream. Every SSE event carries a stream-scoped id and is buffered
//! (bounded) so a `Last-Event-ID` resumption replays strictly after it.

mod attach;
mod listen;
mod outbound;
mod preset;
mod routing;

use super::admission::SessionState;
use super::event_ids::{EventIdCodec, COMMON};
use super::stream::{Format, Origin, Stream};
use super::{Cause, Content, DropReason, EndReason, Outgoing, ServerEvent, Transmit, TransmitKind};
use crate::error::{RequestError, UsageError};
use crate::ids::{EventId, HttpId, MsgKey, RequestId, SessionId, StreamId};
use crate::jsonrpc::{Body, ErrorObject, Message, RawJson, REQUEST_CANCELLED, REQUEST_TIMEOUT};
use crate::policy::{DetachedResponse, ServerPolicy, StandaloneAttach};
use crate::principal::Principal;
use crate::release::Release;
use crate::shared::Shared;
use crate::time::{Instant, Timers};
use crate::version::ProtocolVersion;
use outbound::Outbound;
use preset::PresetState;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// How a POST's answer is framed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseMode {
    /// Always `text/event-stream`, committed when the POST arrives (priming at once on 2025-11-25).
    #[default]
    Sse,
    /// `application/json` when the response is the first thing written, else SSE;
    /// committed at the first write.
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

/// Where the session is in its lifecycle (the diagram above); a phase
/// keeps what only it needs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// No `initialize` handled yet: the opener and the version may still
    /// be set.
    New,
    /// `initialize` (request `id`) is being served, its answer due on
    /// `stream`: that answer is stamped with the agreed version and ends
    /// the phase; a cancellation of `id` is ignored (R50).
    Initializing { id: RequestId, stream: StreamId },
    /// The `initialize` answer went out; `notifications/initialized` is
    /// awaited, and unrelated messages are held for it (R49).
    AwaitingInitialized,
    /// The handshake is over (or there is none: a 2026-07-28 request, a
    /// session adopted from another instance of a fleet).
    Ready,
    /// Deleted, closed or expired: every input is refused.
    Ended,
}

impl Phase {
    /// Before the `initialize` answer: the version may still be agreed.
    fn before_initialize_answer(&self) -> bool {
        matches!(self, Phase::New | Phase::Initializing { .. })
    }

    /// Whether `id` is the `initialize` being served.
    fn initializing(&self, id: &RequestId) -> bool {
        matches!(self, Phase::Initializing { id: i, .. } if i == id)
    }

    /// Whether `sid` is the stream the `initialize` being served answers on.
    fn initialize_stream(&self, sid: StreamId) -> bool {
        matches!(self, Phase::Initializing { stream, .. } if *stream == sid)
    }
}

/// What an open HTTP exchange of the session carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Role {
    /// A POST carrying requests, writing `stream`.
    Post { stream: StreamId },
    /// A GET carrying `stream` (standalone or a resumption).
    Get { stream: StreamId },
    /// An exchange that carries none of the session's streams, only what
    /// the preset that opened it writes (`sse`: its head committed an event
    /// stream, kept alive like one). FIXED opens none: a notification POST
    /// is answered 202 at once, and every GET gets a stream of its own.
    Streamless { sse: bool },
}

/// A client request in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Flight {
    /// The stream its answer goes on.
    stream: StreamId,
    /// Its size as received (`Message::approx_len`).
    bytes: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Exchange {
    role: Role,
    head_sent: bool,
    ended: bool,
}

/// One session. See the module doc for the state diagram and routing rules.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServerSession {
    id: SessionId,
    codec: EventIdCodec,
    version: ProtocolVersion,
    /// Shared with the endpoint's other sessions (`EndpointConfig::session`).
    config: Shared<SessionConfig>,
    policy: ServerPolicy,
    phase: Phase,
    streams: BTreeMap<StreamId, Stream>,
    next_stream: u32,
    exchanges: BTreeMap<HttpId, Exchange>,
    /// Client requests being served: the stream each answers on, and its
    /// size (`in_flight_bytes_max` bounds their sum).
    in_flight: BTreeMap<RequestId, Flight>,
    cancelled: VecDeque<RequestId>,
    /// The requests this session sent the client and awaits answers to.
    outbound: Outbound,
    held: VecDeque<(Instant, Arc<Outgoing>)>,
    held_bytes: usize,
    /// What only a preset's departures from FIXED keep (`None` under
    /// FIXED, and under every preset that departs in none of them).
    preset: Option<Box<PresetState>>,
    next_key: u64,
    transmits: VecDeque<Transmit>,
    events: VecDeque<ServerEvent>,
    timers: Timers<SessionTimer>,
    late_responses: u64,
    /// A modern (2026-07-28) request's method: the one request a stateless
    /// session exists for, whose result the core completes.
    modern_method: Option<Box<str>>,
    /// A modern `subscriptions/listen` (see `listen`).
    listen: Option<Box<listen::Listen>>,
    /// Who opened it (see [`crate::principal`]): the only caller the
    /// endpoint routes to it under [`SessionBinding::Principal`].
    ///
    /// [`SessionBinding::Principal`]: crate::policy::SessionBinding::Principal
    principal: Option<Principal>,
}

impl ServerSession {
    /// A session, before its `initialize` request is handled. `namespace`
    /// (from the endpoint's seeded generator) keeps event ids of different
    /// sessions apart.
    pub fn new(
        id: SessionId,
        namespace: u32,
        version: ProtocolVersion,
        config: impl Into<Shared<SessionConfig>>,
        policy: ServerPolicy,
    ) -> Self {
        let config = config.into();
        let base = config.stream_id_base;
        let first_request = request_id_base(base) + config.first_request_number;
        let codec = EventIdCodec::new(policy.event_ids, namespace);
        let mut streams = BTreeMap::new();
        if codec.single_common_stream() {
            streams.insert(COMMON, Stream::new(COMMON, Origin::Standalone));
        }
        ServerSession {
            id,
            codec,
            version,
            config,
            policy,
            phase: Phase::New,
            streams,
            next_stream: base.wrapping_add(1),
            exchanges: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            cancelled: VecDeque::new(),
            outbound: Outbound::new(first_request),
            held: VecDeque::new(),
            held_bytes: 0,
            preset: PresetState::for_policy(&policy),
            next_key: key_base(base) + 1,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            timers: Timers::default(),
            late_responses: 0,
            modern_method: None,
            listen: None,
            principal: None,
        }
    }

    /// The same session, opened by `principal` (the caller of its
    /// `initialize`, or of a modern request; a fleet's record of it).
    pub fn with_principal(mut self, principal: Option<Principal>) -> Self {
        self.principal = principal;
        self
    }

    /// A session for one modern (2026-07-28) request: ready at once, no
    /// handshake, no id on the wire, no event ids, no resumption, no
    /// requests to the client. It ends with its exchange (answered, or
    /// closed by the client: cancellation).
    pub fn stateless(id: SessionId, config: &SessionConfig, policy: ServerPolicy) -> Self {
        let policy = ServerPolicy {
            // Event ids mean nothing without resumption.
            event_ids: crate::policy::EventIdScheme::StreamScoped,
            ..policy
        };
        // JSON when the answer is all there is (an error then has its status:
        // 404 for -32601, 400 for -32020…-32022); SSE once anything precedes it.
        let config = SessionConfig {
            response_mode: ResponseMode::JsonWhenAlone,
            ..*config
        };
        let mut s = ServerSession::new(id, 0, ProtocolVersion::MODERN, config, policy);
        s.phase = Phase::Ready;
        s
    }

    /// A session that completed its handshake on another instance of a
    /// fleet, taken up here from its record (`fleet::SessionRecord`):
    /// ready at once, with the version and event-id namespace it was opened
    /// with. Its streams are numbered in this instance's range
    /// ([`SessionConfig::stream_id_base`]), from the slice of it its
    /// `adoption` (the store's count of the session's adoptions) names
    /// ([`ADOPTIONS_SPAN`]).
    pub fn adopted(
        id: SessionId,
        namespace: u32,
        version: ProtocolVersion,
        adoption: u32,
        config: impl Into<Shared<SessionConfig>>,
        policy: ServerPolicy,
    ) -> Self {
        let config = config.into();
        let base = config.stream_id_base;
        let mut s = ServerSession::new(id, namespace, version, config, policy);
        s.phase = Phase::Ready;
        // Slice `a` of each range: a copy taken up again here neither
        // appends to the logs of the streams an earlier copy opened nor
        // reuses the ids of the requests it sent (the client may still
        // answer them).
        let a = adoption % ADOPTIONS_SPAN;
        s.next_stream = base.wrapping_add(1 + a * (STREAM_ID_SPAN / ADOPTIONS_SPAN));
        s.outbound = Outbound::new(
            request_id_base(base) + s.config.first_request_number + (i64::from(a) << 24),
        );
        s.next_key = key_base(base) + 1 + (u64::from(a) << 44);
        s
    }

    // ---- getters -------------------------------------------------------

    /// The session id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The negotiated protocol version.
    pub fn version(&self) -> ProtocolVersion {
        self.version
    }

    /// Who opened it, if the transport authenticated its caller.
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_ref()
    }

    /// The policy in force.
    pub fn policy(&self) -> &ServerPolicy {
        &self.policy
    }

    /// The namespace of its event ids (drawn when it opened).
    pub fn namespace(&self) -> u32 {
        self.codec.namespace()
    }

    /// What a `Last-Event-ID` names in this session (`None`: malformed, or
    /// another session's).
    pub fn parse_event_id(&self, text: &str) -> Option<EventId> {
        self.codec.parse(text)
    }

    /// Whether a `Last-Event-ID` names an event of this session that a
    /// resumption can start from (its stream is kept, the event not
    /// evicted).
    pub fn can_resume_from(&self, text: &str) -> bool {
        self.codec.parse(text).is_some_and(|id| {
            self.streams
                .get(&id.stream)
                .is_some_and(|s| s.can_resume_from(id.seq))
        })
    }

    /// The wire form of one of this session's event ids.
    pub fn render_event_id(&self, id: EventId) -> String {
        self.codec.render(id)
    }

    /// The streams it keeps, in id order.
    pub fn streams(&self) -> impl Iterator<Item = &Stream> {
        self.streams.values()
    }

    /// Whether `notifications/initialized` has arrived.
    pub fn is_initialized(&self) -> bool {
        self.phase == Phase::Ready
    }

    /// Whether this session is a modern `subscriptions/listen`.
    pub fn is_listen(&self) -> bool {
        self.listen.is_some()
    }

    /// Whether the session has ended.
    pub fn is_ended(&self) -> bool {
        self.phase == Phase::Ended
    }

    /// Since when the session has had no open exchange (`None`: it has one),
    /// as far as its idle deadline tells: the key admission evicts by. When
    /// sessions never expire, every idle session counts as idle since
    /// [`Instant::ZERO`].
    pub fn idle_since(&self) -> Option<Instant> {
        if !self.exchanges.is_empty() || self.phase == Phase::Ended {
            return None;
        }
        match (
            self.timers.get(SessionTimer::Idle),
            self.config.idle_timeout_ms,
        ) {
            (Some(deadline), Some(ms)) => {
                Some(deadline.saturating_sub(std::time::Duration::from_millis(ms)))
            }
            _ => Some(Instant::ZERO),
        }
    }

    /// What admission needs to know of this session, reported by every
    /// driver after each change ([`Admission::handle_session`](super::Admission::handle_session)).
    pub fn admission_state(&self) -> SessionState {
        SessionState {
            initialized: self.is_initialized(),
            idle_since: self.idle_since(),
            retained: self.retained_bytes(),
        }
    }

    /// Client requests being served.
    pub fn in_flight(&self) -> impl Iterator<Item = &RequestId> {
        self.in_flight.keys()
    }

    /// HTTP exchanges open on this session.
    pub fn exchanges(&self) -> impl Iterator<Item = HttpId> + '_ {
        self.exchanges.keys().copied()
    }

    /// Messages accepted but not yet written anywhere (held, queued).
    pub fn queued_keys(&self) -> Vec<MsgKey> {
        let mut keys: Vec<MsgKey> = self.held.iter().map(|(_, o)| o.key).collect();
        if let Some(p) = &self.preset {
            keys.extend(p.queued_keys());
        }
        keys.sort();
        keys
    }

    /// Responses from the client that matched no outstanding server request.
    pub fn late_responses(&self) -> u64 {
        self.late_responses
    }

    /// Bytes of held messages (waiting for a standalone stream), the figure
    /// `held_bytes_max` bounds.
    pub fn held_bytes(&self) -> usize {
        self.held_bytes
    }

    /// Bytes of the client requests in flight, the figure
    /// `in_flight_bytes_max` bounds.
    pub fn in_flight_bytes(&self) -> usize {
        self.in_flight.values().map(|f| f.bytes).sum()
    }

    /// Bytes of messages this session keeps (replay buffers and held
    /// messages), the figure `session_bytes_max` bounds.
    pub fn retained_bytes(&self) -> usize {
        self.held_bytes + self.streams.values().map(|s| s.bytes).sum::<usize>()
    }

    /// Approximate bytes held by this session's state (for the idle-session figure).
    pub fn approx_bytes(&self) -> usize {
        let streams: usize = self
            .streams
            .values()
            .map(|s| std::mem::size_of::<Stream>() + s.buffer.len() * 64)
            .sum();
        std::mem::size_of::<Self>()
            + self.id.as_str().len()
            + streams
            + self.exchanges.len() * (std::mem::size_of::<Exchange>() + 16)
            + self.in_flight.len() * 48
    }

    // ---- inputs --------------------------------------------------------

    /// Records who opens it, for a transport that makes the session before
    /// it reads the `initialize` that opens it (rmcp's `SessionManager`
    /// creates it first): the caller of that `initialize`. Only before the
    /// `initialize` is handled; after it, the owner is settled.
    pub fn handle_opener(&mut self, principal: Option<Principal>) -> Result<(), UsageError> {
        match self.phase {
            Phase::New => {
                self.principal = principal;
                Ok(())
            }
            Phase::Ended => Err(UsageError::SessionEnded),
            _ => Err(UsageError::AlreadyInitialized),
        }
    }

    /// A POST for this session, already validated by the endpoint.
    pub fn handle_post(
        &mut self,
        http: HttpId,
        body: Body,
        now: Instant,
    ) -> Result<(), RequestError> {
        if self.phase == Phase::Ended {
            return Err(RequestError::UnknownSession {
                unauthorized: false,
            });
        }
        let messages = body.into_messages();
        let mut new_ids: Vec<(RequestId, usize)> = Vec::new();
        for m in &messages {
            if let Message::Request { id, method, .. } = m {
                if method == "initialize" && self.phase != Phase::New {
                    return Err(RequestError::BadInitialize);
                }
                let in_flight = self.in_flight.contains_key(id) && !self.overwrites_ids();
                if in_flight || new_ids.iter().any(|(n, _)| n == id) {
                    return Err(RequestError::DuplicateRequestId(id.clone()));
                }
                new_ids.push((id.clone(), m.approx_len()));
            }
        }
        if self.in_flight.len() + new_ids.len() > self.config.in_flight_max {
            return Err(RequestError::InFlightLimit {
                max: self.config.in_flight_max,
            });
        }
        let adding: usize = new_ids.iter().map(|(_, b)| b).sum();
        if !self.in_flight.is_empty()
            && self.in_flight_bytes() + adding > self.config.in_flight_bytes_max
        {
            return Err(RequestError::InFlightBytesLimit {
                max: self.config.in_flight_bytes_max,
            });
        }
        for m in &messages {
            if !m.is_request() {
                self.recv_non_request(m.clone(), now);
            }
        }
        if new_ids.is_empty() {
            self.accept_without_stream(http);
        } else {
            self.open_post_stream(http, &new_ids);
            for m in messages {
                if let Message::Request { id, method, params } = m {
                    if method == "initialize" {
                        if let Some(f) = self.in_flight.get(&id) {
                            self.phase = Phase::Initializing {
                                id: id.clone(),
                                stream: f.stream,
                            };
                        }
                    }
                    if self.version.is_modern() {
                        self.modern_method = Some(method.as_str().into());
                    }
                    self.events
                        .push_back(ServerEvent::Request { id, method, params });
                }
            }
        }
        self.update_timers(now);
        Ok(())
    }

    /// A GET for this session: a new standalone stream, or a resumption when
    /// `last_event_id` is given.
    pub fn handle_get(
        &mut self,
        http: HttpId,
        last_event_id: Option<&str>,
        now: Instant,
    ) -> Result<(), RequestError> {
        if self.phase == Phase::Ended {
            return Err(RequestError::UnknownSession {
                unauthorized: false,
            });
        }
        let last_event_id = match self.policy.detached_response {
            DetachedResponse::BufferForResume | DetachedResponse::OpenGet => last_event_id,
            DetachedResponse::NextGet => None,
        };
        let cursor = match last_event_id {
            None => None,
            Some(text) => Some(
                self.codec
                    .parse(text)
                    .ok_or_else(|| RequestError::UnknownEventId(text.to_owned()))?,
            ),
        };
        match self.policy.standalone_attach {
            StandaloneAttach::Coexist => self.get_coexist(http, cursor, last_event_id)?,
            StandaloneAttach::ReplaceCommon | StandaloneAttach::ShadowCommon => {
                self.get_common(http, cursor, last_event_id)?
            }
        }
        self.update_timers(now);
        Ok(())
    }

    /// A DELETE for this session: it ends (R26).
    pub fn handle_delete(&mut self, http: HttpId, now: Instant) {
        self.end_session(now);
        self.head(http, 200, Content::None);
        self.end(http, EndReason::Complete);
    }

    /// The exchange `http` is gone (client closed it, the connection dropped,
    /// or the shell found the body dropped). Not a cancellation (R11).
    pub fn handle_http_closed(&mut self, http: HttpId, now: Instant) {
        let Some(ex) = self.exchanges.get_mut(&http) else {
            return;
        };
        let ex = *ex;
        if self.has_listener(http) {
            // A preset's listener task outlives its exchange (see `preset`).
            if let Some(e) = self.exchanges.get_mut(&http) {
                e.ended = true;
            }
        } else {
            self.forget_exchange(http);
        }
        if let Role::Post { stream } | Role::Get { stream } = ex.role {
            self.detach(stream, http);
        }
        self.update_timers(now);
    }

    /// Fires the timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        for timer in self.timers.expire(now) {
            match timer {
                SessionTimer::Idle => {
                    if self.exchanges.is_empty() {
                        self.end_session(now);
                    }
                }
                SessionTimer::Init => {
                    if !self.is_initialized() {
                        self.end_session(now);
                    }
                }
                SessionTimer::HeldExpiry => self.expire_held(now),
                SessionTimer::Outbound => {
                    let due = self.outbound.expire(now);
                    let reason = "the client did not answer in time";
                    self.give_up_outbound(due, REQUEST_TIMEOUT, reason, now);
                }
                SessionTimer::KeepAlive => {
                    let sse: Vec<HttpId> = self
                        .exchanges
                        .iter()
                        .filter(|(_, e)| {
                            e.head_sent
                                && !e.ended
                                && !matches!(e.role, Role::Streamless { sse: false })
                        })
                        .map(|(h, _)| *h)
                        .collect();
                    for http in sse {
                        self.tx(http, TransmitKind::Comment);
                    }
                }
            }
        }
        self.update_timers(now);
    }

    // ---- commands ------------------------------------------------------

    /// Answers client request `id` with a result or an error. The response goes
    /// last on the request's stream, which then ends.
    pub fn respond(
        &mut self,
        id: &RequestId,
        result: Result<RawJson, ErrorObject>,
        now: Instant,
    ) -> Result<MsgKey, UsageError> {
        if self.phase == Phase::Ended {
            return Err(UsageError::SessionEnded);
        }
        let Some(Flight { stream, .. }) = self.in_flight.remove(id) else {
            if self.cancelled.contains(id) {
                let key = self.mint_key();
                self.events.push_back(ServerEvent::Dropped {
                    key,
                    reason: DropReason::Cancelled,
                });
                return Ok(key);
            }
            return Err(UsageError::RequestNotActive(id.clone()));
        };
        // Only the answer to the pending `initialize` is stamped: a later
        // request may reuse its id.
        let answers_initialize = self.phase.initializing(id);
        let message = match result {
            Ok(result) if answers_initialize => Message::Response {
                id: id.clone(),
                result: self.stamp_version(result),
            },
            Ok(result) if self.version.is_modern() => Message::Response {
                id: id.clone(),
                result: crate::server::modern_result::complete(
                    self.modern_method.as_deref().unwrap_or_default(),
                    result,
                ),
            },
            Ok(result) => Message::Response {
                id: id.clone(),
                result,
            },
            Err(error) => Message::Error {
                id: Some(id.clone()),
                error,
            },
        };
        let out = self.outgoing(Cause::Request(id.clone()), message);
        let key = out.key;
        self.drain_competing_into(stream);
        // Written while the phase still names the stream (some codecs leave
        // the `initialize` answer unnumbered).
        self.write_response(stream, id, out);
        if answers_initialize {
            self.phase = Phase::AwaitingInitialized;
        }
        self.update_timers(now);
        Ok(key)
    }

    /// Sends a notification, routed by `cause`.
    pub fn notify(
        &mut self,
        method: &str,
        params: Option<RawJson>,
        cause: Cause,
        now: Instant,
    ) -> Result<MsgKey, UsageError> {
        let message = Message::notification(method, params);
        self.send(message, cause, now)
    }

    /// Sends a server-to-client request, routed by `cause`; the answer arrives
    /// as [`ServerEvent::Response`]. A request sent for a client request
    /// (`Cause::Request`) is given up if the client cancels that request:
    /// its `Response` is then an error, [`REQUEST_CANCELLED`], and the client
    /// is sent `notifications/cancelled` for it.
    pub fn request(
        &mut self,
        method: &str,
        params: Option<RawJson>,
        cause: Cause,
        now: Instant,
    ) -> Result<(RequestId, MsgKey), UsageError> {
        if self.version.is_modern() {
            return Err(UsageError::ModernEra(
                "no requests to the client; answer with an InputRequiredResult (MRTR)",
            ));
        }
        if self.outbound.len() >= self.config.outbound_requests_max {
            return Err(UsageError::TooManyRequests);
        }
        let id = self.outbound.next_id();
        let message = Message::request(id.clone(), method, params);
        let call = match &cause {
            Cause::Request(r) => Some(r.clone()),
            Cause::Unrelated => None,
        };
        let key = self.send(message, cause, now)?;
        let deadline = self
            .config
            .outbound_timeout_ms
            .map(|ms| now + std::time::Duration::from_millis(ms));
        self.outbound.sent(call, deadline);
        self.update_timers(now);
        Ok((id, key))
    }

    /// The application withdraws its request `id` to the client: it no
    /// longer awaits the answer (an answer that comes is dropped as late),
    /// and the client is told with `notifications/cancelled`, on the stream
    /// of the call it was asked for while that call is served. The
    /// application hears nothing more of it ([`App::on_response`] is not
    /// called). Refused for a request that is not awaited.
    ///
    /// [`App::on_response`]: crate::app::App::on_response
    pub fn cancel_request(
        &mut self,
        id: &RequestId,
        reason: &str,
        now: Instant,
    ) -> Result<(), UsageError> {
        if self.phase == Phase::Ended {
            return Err(UsageError::SessionEnded);
        }
        let call = self
            .outbound
            .withdraw(id)
            .ok_or_else(|| UsageError::NotAwaited(id.clone()))?;
        self.tell_withdrawn(id, call, reason, now);
        self.update_timers(now);
        Ok(())
    }

    /// Closes the connection carrying request `id`'s stream without ending the
    /// stream (polling, R37): the client resumes with `Last-Event-ID` after
    /// `retry`. Only after an id-bearing event, so on a stream that was primed.
    pub fn close_connection(&mut self, id: &RequestId, now: Instant) -> Result<(), UsageError> {
        if self.version.is_modern() {
            return Err(UsageError::ModernEra(
                "no resumption: closing the stream would cancel the request",
            ));
        }
        let stream = self
            .in_flight
            .get(id)
            .ok_or_else(|| UsageError::RequestNotActive(id.clone()))?
            .stream;
        let Some(s) = self.streams.get(&stream) else {
            return Err(UsageError::RequestNotActive(id.clone()));
        };
        let primed = s.next_seq > 1 && s.format == Format::Sse;
        let attached = s.attached;
        if let Some(http) = self.discard_writer(stream) {
            self.end(http, EndReason::Polling);
        } else if let (Some(http), true) = (attached, primed) {
            self.end(http, EndReason::Polling);
            self.detach(stream, http);
        }
        self.update_timers(now);
        Ok(())
    }

    /// The version an application that negotiates by itself (rmcp's
    /// handler) agreed to, before the `initialize` answer is sent: the
    /// answer is stamped with it and the session follows its rules.
    /// Session-era versions only, and only until that answer.
    pub fn agree_version(&mut self, version: ProtocolVersion) -> Result<(), UsageError> {
        if version.is_modern() {
            return Err(UsageError::ModernEra("2026-07-28 has no sessions"));
        }
        if !self.phase.before_initialize_answer() {
            return Err(UsageError::AlreadyInitialized);
        }
        self.version = version;
        Ok(())
    }

    /// Ends the session from the server side (R24).
    pub fn close(&mut self, now: Instant) {
        self.end_session(now);
    }

    // ---- outputs -------------------------------------------------------

    /// The next thing to write.
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        let t = self.transmits.pop_front();
        if t.is_none() {
            self.release_if_idle();
        }
        t
    }

    /// The next thing the application must handle.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<ServerEvent> {
        let e = self.events.pop_front();
        if e.is_none() {
            self.release_if_idle();
        }
        e
    }

    /// The next deadline and its reason.
    pub fn poll_timeout(&self) -> Option<(Instant, SessionTimer)> {
        self.timers.next()
    }

    /// An idle session gives its queue buffers back, so 10,000 idle sessions
    /// cost what their state needs, not what their busiest moment needed.
    /// (An emptied `BTreeMap` keeps its root node; a fresh one allocates nothing.)
    fn release_if_idle(&mut self) {
        if !self.exchanges.is_empty() || !self.events.is_empty() || !self.transmits.is_empty() {
            return;
        }
        self.exchanges.release_if_empty();
        self.transmits.release_if_empty();
        self.events.release_if_empty();
        self.in_flight.release_if_empty();
        self.streams.release_if_empty();
    }

    /// The client's `notifications/initialized` went to another instance
    /// of a fleet, and a request past the handshake came here: ready, as if
    /// it had come here (without it, this copy would end at its
    /// `init_timeout_ms` while the client goes on).
    pub fn confirm_initialized(&mut self, now: Instant) {
        if self.phase == Phase::AwaitingInitialized {
            self.become_ready(now);
            self.update_timers(now);
        }
    }

    /// Whether requests this session sent the client still wait for their
    /// answer: in a fleet, the answer may be posted to another instance,
    /// which forwards it here.
    pub fn awaits_answers(&self) -> bool {
        self.outbound.len() > 0
    }

    /// A message of this session was dropped elsewhere (a fleet's mailbox
    /// trimmed it before any instance took it): the application hears it as
    /// it hears any drop ([`ServerEvent::Dropped`]).
    pub fn report_dropped(&mut self, key: MsgKey, reason: DropReason) {
        self.events.push_back(ServerEvent::Dropped { key, reason });
    }

    /// The requests this session sent the client whose answers it awaits.
    pub fn awaited_answers(&self) -> impl Iterator<Item = &RequestId> {
        self.outbound.ids()
    }

    /// Whether this session awaits the client's answer to a request it sent
    /// for client request `call` (an application that answers `call` only
    /// once what it asked for it is answered waits for that).
    pub fn awaits_answers_for(&self, call: &RequestId) -> bool {
        self.outbound.asked_for(call)
    }

    /// The client's answer to a request this session sent, posted to
    /// another instance of a fleet and forwarded here: as if posted here
    /// ([`ServerEvent::Response`]; an answer to nothing outstanding is
    /// counted late and dropped).
    pub fn deliver_answer(&mut self, id: RequestId, result: Result<RawJson, ErrorObject>) {
        self.recv_response(id, result);
        self.sync_outbound_timer();
    }

    /// The client's `notifications/cancelled`, posted to another instance
    /// of a fleet and forwarded here (`params` as posted): if the request
    /// it names is served here, or requests sent for it await answers here,
    /// as if posted here. The call stops being served, the requests sent
    /// for it fail, and the application hears the notification
    /// ([`ServerEvent::Notification`]). Whether it concerned this copy.
    pub fn deliver_cancelled(&mut self, params: Option<RawJson>, now: Instant) -> bool {
        let concerns = cancelled_id(params.as_ref())
            .is_some_and(|id| self.is_serving(&id) || self.outbound.asked_for(&id));
        if self.phase == Phase::Ended || !concerns {
            return false;
        }
        let notice = Message::notification("notifications/cancelled", params);
        self.recv_non_request(notice, now);
        self.sync_outbound_timer();
        self.update_timers(now);
        true
    }

    /// Whether the client's request `id` is being served here.
    pub fn is_serving(&self, id: &RequestId) -> bool {
        self.in_flight.contains_key(id)
    }

    /// The exchange now carrying the stream of client request `id`, if it
    /// is being served and its stream is attached: the exchange a harness
    /// names as the one its answer is for ([`crate::observe::Observation::Sent`]).
    pub fn request_exchange(&self, id: &RequestId) -> Option<HttpId> {
        let stream = self.in_flight.get(id)?.stream;
        self.streams.get(&stream)?.attached
    }

    /// Whether a standalone GET of this session is attached here: where an
    /// unrelated message goes at once.
    pub fn has_attached_get(&self) -> bool {
        self.first_attached_standalone().is_some()
    }

    /// The unrelated messages held for want of a GET, taken out for another
    /// instance of a fleet that may hold one (its mailbox). Those held
    /// before `notifications/initialized` go too: in a fleet a GET is only
    /// ever attached to a copy past the handshake (a GET shows the client
    /// completed it), so they still wait for it (R49), and the client may
    /// have sent it to another instance. Nothing is reported dropped: they
    /// are on their way.
    pub fn hand_off_held(&mut self) -> Vec<Arc<Outgoing>> {
        self.take_held()
    }

    /// An unrelated message another instance of a fleet handed off (taken
    /// from the mailbox): on this session's GET if one is attached, else
    /// held like one emitted here.
    pub fn deliver_handed(&mut self, out: Arc<Outgoing>, now: Instant) {
        if self.phase == Phase::Ended {
            return;
        }
        self.deliver_unrelated(out, now);
        self.update_timers(now);
    }

    /// Whether outputs are waiting to be polled.
    pub fn has_output(&self) -> bool {
        !self.transmits.is_empty() || !self.events.is_empty()
    }

    // ---- internals: receiving -----------------------------------------

    /// The handshake is over: what was held for it goes out.
    fn become_ready(&mut self, now: Instant) {
        self.phase = Phase::Ready;
        self.flush_held(now);
    }

    fn recv_non_request(&mut self, message: Message, now: Instant) {
        match message {
            Message::Notification { method, params } => {
                if method == "notifications/initialized" && self.phase != Phase::Ended {
                    self.become_ready(now);
                }
                if method == "notifications/cancelled" {
                    self.recv_cancel(params.as_ref(), now);
                }
                self.events
                    .push_back(ServerEvent::Notification { method, params });
            }
            Message::Response { id, result } => self.recv_response(id, Ok(result)),
            Message::Error {
                id: Some(id),
                error,
            } => self.recv_response(id, Err(error)),
            Message::Error { id: None, .. } => self.late_responses += 1,
            Message::Request { .. } => {}
        }
    }

    fn recv_response(&mut self, id: RequestId, result: Result<RawJson, ErrorObject>) {
        if self.outbound.answered(&id) {
            self.events.push_back(ServerEvent::Response { id, result });
        } else {
            self.late_responses += 1;
        }
    }

    fn recv_cancel(&mut self, params: Option<&RawJson>, now: Instant) {
        let Some(id) = cancelled_id(params) else {
            return;
        };
        if self.phase.initializing(&id) {
            return; // initialize is never cancelled (R50)
        }
        // Also when the call already finished here: its answer may never
        // have reached the client, which gave up on it and on everything
        // asked for it.
        self.cancel_outbound_of(&id, now);
        self.drop_call(&id);
    }

    /// Client request `id` is no longer served: out of flight, remembered
    /// (the last `cancelled_max`) so that its late response is dropped, its
    /// stream settled. Whether it was in flight.
    fn drop_call(&mut self, id: &RequestId) -> bool {
        let Some(Flight { stream, .. }) = self.in_flight.remove(id) else {
            return false;
        };
        self.cancelled.push_back(id.clone());
        while self.cancelled.len() > self.config.cancelled_max {
            self.cancelled.pop_front();
        }
        self.settle_request(stream, id);
        true
    }

    /// The client cancelled `call`: the requests this session sent for it
    /// will not be answered (the client stopped reading the call's stream,
    /// where they went, and may never have seen them). Each fails to the
    /// application at once ([`REQUEST_CANCELLED`]) and the client is told
    /// (`notifications/cancelled`, unrelated: the call's stream is over), so
    /// neither side waits for an answer that cannot come.
    fn cancel_outbound_of(&mut self, call: &RequestId, now: Instant) {
        let asked = self.outbound.give_up_for(call);
        let reason = "the request it was sent for was cancelled";
        let asked = asked.into_iter().map(|id| (id, None)).collect();
        self.give_up_outbound(asked, REQUEST_CANCELLED, reason, now);
    }

    /// Requests to the client no longer awaited, each with the client
    /// request it was sent for while that one is still served: each fails
    /// to the application (`code`, `reason`), and the client is told
    /// ([`Self::tell_withdrawn`]).
    fn give_up_outbound(
        &mut self,
        ids: Vec<(RequestId, Option<RequestId>)>,
        code: i64,
        reason: &str,
        now: Instant,
    ) {
        for (id, call) in ids {
            self.events.push_back(ServerEvent::Response {
                id: id.clone(),
                result: Err(ErrorObject::new(code, reason)),
            });
            self.tell_withdrawn(&id, call, reason, now);
        }
    }

    /// Tells the client that request `id` is no longer awaited
    /// (`notifications/cancelled`): on the stream of the call it was asked
    /// for while that call is still served, where the client reads and
    /// where the request itself went, else unrelated. A client that holds
    /// the request then drops it instead of answering (C6).
    fn tell_withdrawn(
        &mut self,
        id: &RequestId,
        call: Option<RequestId>,
        reason: &str,
        now: Instant,
    ) {
        let params = serde_json::json!({ "requestId": id, "reason": reason });
        let notice = Message::notification("notifications/cancelled", Some(RawJson::from(params)));
        let cause = match call {
            Some(call) if self.in_flight.contains_key(&call) => Cause::Request(call),
            _ => Cause::Unrelated,
        };
        // Refused only once the session ended, when nobody waits.
        let _ = self.send(notice, cause, now);
    }

    fn accept_without_stream(&mut self, http: HttpId) {
        if self.competing() {
            self.accept_competing(http);
            return;
        }
        self.head(http, 202, Content::None);
        self.end(http, EndReason::Complete);
    }

    /// Registers an exchange that carries a stream (and, under a competing
    /// queue, its listener).
    fn add_exchange(&mut self, http: HttpId, role: Role) {
        self.exchanges.insert(
            http,
            Exchange {
                role,
                head_sent: false,
                ended: false,
            },
        );
        self.start_listener(http);
    }

    /// Exchange `http` is forgotten, with whatever a preset ran for it.
    fn forget_exchange(&mut self, http: HttpId) {
        self.exchanges.remove(&http);
        self.forget_preset_tasks(http);
    }

    fn open_post_stream(&mut self, http: HttpId, requests: &[(RequestId, usize)]) {
        let sid = self.new_stream(Origin::Post {
            pending: requests.iter().map(|(id, _)| id.clone()).collect(),
        });
        for (id, bytes) in requests {
            let flight = Flight {
                stream: sid,
                bytes: *bytes,
            };
            self.in_flight.insert(id.clone(), flight);
        }
        self.add_exchange(http, Role::Post { stream: sid });
        if let Some(s) = self.streams.get_mut(&sid) {
            s.attached = Some(http);
        }
        let commit_sse_now = requests.len() > 1
            || (self.config.response_mode == ResponseMode::Sse && !self.competing());
        if commit_sse_now {
            self.commit_sse(sid, http);
            if !self.open_unstarted(http, sid) {
                self.prime(sid, http, false);
            }
        }
    }
}

/// The request a `notifications/cancelled` names (its `requestId`).
pub(crate) fn cancelled_id(params: Option<&RawJson>) -> Option<RequestId> {
    crate::jsonrpc::cancelled_request(params).map(|(id, _)| id)
}

#[cfg(test)]
mod adoption_tests {
    use super::*;

    /// The first stream, request id and message key of adoption `a` on
    /// the instance whose streams start at `base`.
    fn firsts(base: u32, a: u32) -> (u32, i64, u64) {
        let config = SessionConfig {
            stream_id_base: base,
            ..SessionConfig::default()
        };
        let s = ServerSession::adopted(
            SessionId::from_bits(1),
            0,
            ProtocolVersion::LATEST,
            a,
            config,
            ServerPolicy::FIXED,
        );
        (s.next_stream, s.outbound.next_number(), s.next_key)
    }

    #[test]
    fn each_adoption_starts_its_own_slice_of_the_instances_ranges() {
        let base = 3 * STREAM_ID_SPAN;
        let (r, k) = (request_id_base(base), key_base(base));
        assert_eq!(
            firsts(base, 0),
            (base + 1, r + 1, k + 1),
            "as a fresh session"
        );
        assert_eq!(
            firsts(base, 1),
            (base + 1 + 4096, r + 1 + (1 << 24), k + 1 + (1 << 44))
        );
        assert_eq!(
            firsts(base, 2),
            (base + 1 + 8192, r + 1 + (2 << 24), k + 1 + (2 << 44))
        );
        // The last slice still inside the instance's ranges (streams end at
        // base + STREAM_ID_SPAN − 2; requests and keys at the next
        // instance's bases), and the count comes round after it.
        let (stream, request, key) = firsts(base, ADOPTIONS_SPAN - 1);
        assert_eq!(stream, base + 1 + 255 * 4096);
        assert!(stream < base + STREAM_ID_SPAN - 2);
        assert!(request < request_id_base(base + STREAM_ID_SPAN));
        assert!(key < key_base(base + STREAM_ID_SPAN));
        assert_eq!(firsts(base, ADOPTIONS_SPAN), firsts(base, 0));
        assert_eq!(firsts(base, ADOPTIONS_SPAN + 1), firsts(base, 1));
    }
}

#[cfg(test)]
mod getter_tests {
    use super::*;
    use crate::policy::EventIdScheme;

    /// A FIXED session of the latest session-era version whose event ids
    /// live in `namespace`.
    fn fresh(namespace: u32) -> ServerSession {
        ServerSession::new(
            SessionId::from_bits(u128::from(namespace) + 1),
            namespace,
            ProtocolVersion::LATEST,
            SessionConfig::default(),
            ServerPolicy::FIXED,
        )
    }

    /// A modern request's session keeps the endpoint's preset but numbers
    /// its events its own way: rmcp's schemes would give it a common
    /// stream, which nothing in that era can resume.
    #[test]
    fn a_stateless_session_keeps_its_preset_but_not_its_event_ids() {
        let preset = ServerPolicy::RMCP_0_16;
        assert_eq!(preset.event_ids, EventIdScheme::Rmcp016);
        let s =
            ServerSession::stateless(SessionId::from_bits(1), &SessionConfig::default(), preset);
        let want = ServerPolicy {
            event_ids: EventIdScheme::StreamScoped,
            ..preset
        };
        assert_ne!(want, ServerPolicy::default());
        assert_eq!(*s.policy(), want);
        assert_eq!(s.streams().count(), 0, "no common stream");
    }

    /// The idle-session figure's estimate: the struct and its id, then per
    /// stream its struct and 64 bytes per buffered event, per open exchange
    /// its struct and 16, per request in flight 48.
    #[test]
    fn the_size_estimate_weighs_each_part_as_documented() {
        use std::mem::size_of;
        let mut s = fresh(0);
        let base = s.approx_bytes();
        assert_eq!(base, size_of::<ServerSession>() + s.id().as_str().len());
        let mut stream = Stream::new(StreamId(1), Origin::Standalone);
        s.streams.insert(StreamId(1), stream.clone());
        let one_stream = s.approx_bytes();
        assert_eq!(one_stream - base, size_of::<Stream>());
        let bound = super::super::stream::ReplayBound {
            events_max: 8,
            bytes_max: 1 << 20,
        };
        for key in 1..=2 {
            let out = Outgoing {
                session: s.id().clone(),
                key: MsgKey(key),
                cause: Cause::Unrelated,
                message: Message::notification("notifications/message", None),
            };
            stream.push(Some(Arc::new(out)), bound);
        }
        s.streams.insert(StreamId(1), stream);
        assert_eq!(s.approx_bytes() - one_stream, 2 * 64);
        let with_events = s.approx_bytes();
        for h in 1..=2 {
            let ex = Exchange {
                role: Role::Get {
                    stream: StreamId(1),
                },
                head_sent: true,
                ended: false,
            };
            s.exchanges.insert(HttpId(h), ex);
        }
        assert_eq!(
            s.approx_bytes() - with_events,
            2 * (size_of::<Exchange>() + 16)
        );
        let with_exchanges = s.approx_bytes();
        let flight = Flight {
            stream: StreamId(1),
            bytes: 10,
        };
        s.in_flight.insert(RequestId::Num(1), flight);
        s.in_flight.insert(RequestId::Num(2), flight);
        assert_eq!(s.approx_bytes() - with_exchanges, 2 * 48);
    }

    /// An application that negotiates by itself may set the version until
    /// the `initialize` answer, and only to a session-era one.
    #[test]
    fn a_version_is_agreed_before_the_answer_only() {
        let mut s = fresh(0);
        assert!(s.agree_version(ProtocolVersion::MODERN).is_err());
        assert_eq!(s.version(), ProtocolVersion::LATEST);
        assert_eq!(s.agree_version(ProtocolVersion::V2025_03_26), Ok(()));
        assert_eq!(s.version(), ProtocolVersion::V2025_03_26);
        s.phase = Phase::Ready;
        assert_eq!(
            s.agree_version(ProtocolVersion::V2025_06_18),
            Err(UsageError::AlreadyInitialized)
        );
        assert_eq!(s.version(), ProtocolVersion::V2025_03_26);
    }

    /// Drained and with nothing open, a session gives its queues' buffers
    /// back (what keeps an idle session small); with an exchange open it
    /// keeps them.
    #[test]
    fn an_idle_session_gives_its_buffers_back_once_drained() {
        let mut s = fresh(0);
        for _ in 0..4 {
            s.tx(HttpId(1), TransmitKind::Comment);
            s.events.push_back(ServerEvent::Dropped {
                key: MsgKey(1),
                reason: DropReason::NoStream,
            });
        }
        assert!(s.transmits.capacity() >= 4 && s.events.capacity() >= 4);
        while s.poll_transmit().is_some() {}
        while s.poll_event().is_some() {}
        assert_eq!((s.transmits.capacity(), s.events.capacity()), (0, 0));
        // With an exchange open, nothing is given back.
        let ex = Exchange {
            role: Role::Streamless { sse: true },
            head_sent: false,
            ended: false,
        };
        s.exchanges.insert(HttpId(2), ex);
        s.tx(HttpId(2), TransmitKind::Comment);
        while s.poll_transmit().is_some() {}
        assert!(s.transmits.capacity() > 0);
    }

    /// An event id renders in the session's namespace and parses back; the
    /// same text is nobody else's.
    #[test]
    fn event_ids_render_in_the_namespace_and_parse_back() {
        let s = fresh(0xab);
        let id = EventId {
            stream: StreamId(3),
            seq: 9,
        };
        let text = s.render_event_id(id);
        assert_eq!(text, "000000ab-3-9");
        assert_eq!(s.parse_event_id(&text), Some(id));
        let other = fresh(0xac);
        assert_eq!(other.parse_event_id(&text), None);
    }
}
