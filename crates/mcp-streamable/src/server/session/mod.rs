//! [`ServerSession`]: one MCP session's streams, routing and replay, in one
//! hub whose fields only this file touches; the groups of state it keeps
//! are types of their own (`streams` and their ids, `held` messages and
//! their bytes, `outbound` requests, `listen`, the preset's `preset`), the
//! lifecycle an enum whose phases carry their data (`exchange`: `Phase`,
//! with the diagram).
//!
//! Routing under FIXED is causal: what the application emits for request R
//! goes on R's stream (or its resumption), the response last, nothing for R
//! after it; unrelated messages go to exactly one attached standalone stream,
//! or wait (bounded in count and time) until one attaches. No GET ever ends
//! another stream. Every SSE event carries a stream-scoped id and is buffered
//! (bounded) so a `Last-Event-ID` resumption replays strictly after it.

mod config;
mod exchange;
mod held;
mod listen;
mod outbound;
mod preset;
mod streams;
#[cfg(test)]
mod tests;

use super::admission::SessionState;
use super::event_ids::{EventIdCodec, Priming, COMMON};
use super::stream::{Format, Origin, ReplayBound, Stream};
use super::{
    Cause, Content, DropReason, EndReason, Outgoing, ResponseHead, ServerEvent, Transmit,
    TransmitKind,
};
use crate::error::{RequestError, UsageError};
use crate::ids::{EventId, HttpId, MsgKey, RequestId, SessionId, StreamId};
use crate::jsonrpc::{Body, ErrorObject, Message, RawJson, REQUEST_CANCELLED, REQUEST_TIMEOUT};
use crate::policy::{
    DetachedResponse, FinishedStreamResume, ListenAck, PreInitNotifications, RelatedRequests,
    ReplayStart, ServerPolicy, StandaloneAttach,
};
use crate::principal::Principal;
use crate::release::Release;
use crate::server::v2026::ListenFilter;
use crate::shared::Shared;
use crate::time::{Instant, Timers};
use crate::unhashed::Compared;
use crate::version::ProtocolVersion;
pub use config::{
    key_base, request_id_base, ResponseMode, SessionConfig, SessionTimer, ADOPTIONS_SPAN,
    STREAM_ID_SPAN,
};
use exchange::{Cancelled, Exchange, Flight, Phase, Role};
use held::Held;
use listen::{Listen, Step};
use outbound::Outbound;
use preset::{Departures, PresetState};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;
use streams::Streams;

/// One session. See the module doc for the state diagram and routing rules.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServerSession {
    id: SessionId,
    codec: EventIdCodec,
    version: ProtocolVersion,
    /// Shared with the endpoint's other sessions (`EndpointConfig::session`).
    config: Shared<SessionConfig>,
    /// The endpoint's, fixed for the session's life: compared, never hashed.
    policy: Compared<ServerPolicy>,
    phase: Phase,
    /// Its streams, and the ids they are numbered by.
    streams: Streams,
    exchanges: BTreeMap<HttpId, Exchange>,
    /// Client requests being served: the stream each answers on, and its
    /// size (`in_flight_bytes_max` bounds their sum).
    in_flight: BTreeMap<RequestId, Flight>,
    /// Client requests cancelled lately (their late answers are dropped).
    cancelled: Cancelled,
    /// The requests this session sent the client and awaits answers to.
    outbound: Outbound,
    /// Unrelated messages waiting for a standalone stream, or for the
    /// handshake to end.
    held: Held,
    /// What only a preset's departures from FIXED keep (`None` under
    /// FIXED, and under every preset that departs in none of them).
    preset: Option<Box<PresetState>>,
    next_key: u64,
    transmits: VecDeque<Transmit>,
    events: VecDeque<ServerEvent>,
    timers: Timers<SessionTimer>,
    late_responses: u64,
    /// A 2026-07-28 request's method: the one request a stateless
    /// session exists for, whose result the core completes.
    v2026_method: Option<Box<str>>,
    /// A 2026-07-28 `subscriptions/listen` (see `listen`).
    listen: Option<Box<Listen>>,
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
        let streams = Streams::new(base, codec.single_common_stream());
        ServerSession {
            id,
            codec,
            version,
            config,
            policy: Compared(policy),
            phase: Phase::New,
            streams,
            exchanges: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            cancelled: Cancelled::default(),
            outbound: Outbound::new(first_request),
            held: Held::default(),
            preset: PresetState::for_policy(&policy),
            next_key: key_base(base) + 1,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            timers: Timers::default(),
            late_responses: 0,
            v2026_method: None,
            listen: None,
            principal: None,
        }
    }

    /// The same session, opened by `principal` (the caller of its
    /// `initialize`, or of a 2026-07-28 request; a fleet's record of it).
    pub fn with_principal(mut self, principal: Option<Principal>) -> Self {
        self.principal = principal;
        self
    }

    /// A session for one 2026-07-28 request: ready at once, no
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
        let mut s = ServerSession::new(id, 0, ProtocolVersion::LATEST_V2026, config, policy);
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
        s.streams
            .number_from(base.wrapping_add(1 + a * (STREAM_ID_SPAN / ADOPTIONS_SPAN)));
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

    /// Whether this session is a 2026-07-28 `subscriptions/listen`.
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
        let mut keys: Vec<MsgKey> = self.held.keys().collect();
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
        self.held.bytes()
    }

    /// Bytes of the client requests in flight, the figure
    /// `in_flight_bytes_max` bounds.
    pub fn in_flight_bytes(&self) -> usize {
        self.in_flight.values().map(|f| f.bytes).sum()
    }

    /// Bytes of messages this session keeps (replay buffers and held
    /// messages), the figure `session_bytes_max` bounds.
    pub fn retained_bytes(&self) -> usize {
        self.held.bytes() + self.streams.bytes()
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
                let in_flight =
                    self.in_flight.contains_key(id) && !self.preset_says(|p| p.overwrites_ids());
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
                    if self.version.is_v2026() {
                        self.v2026_method = Some(method.as_str().into());
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
                self.departures().get_common(http, cursor, last_event_id)?
            }
        }
        self.update_timers(now);
        Ok(())
    }

    /// A DELETE for this session: it ends (R26).
    pub fn handle_delete(&mut self, http: HttpId, now: Instant) {
        self.end_session(now, Some(http));
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
        if self.preset_says(|p| p.has_listener(http)) {
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
                        self.end_session(now, None);
                    }
                }
                SessionTimer::Init => {
                    if !self.is_initialized() {
                        self.end_session(now, None);
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
            Ok(result) if self.version.is_v2026() => Message::Response {
                id: id.clone(),
                result: crate::server::v2026_result::complete(
                    self.v2026_method.as_deref().unwrap_or_default(),
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
        self.departures().drain_competing_into(stream);
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
        if self.version.is_v2026() {
            return Err(UsageError::WrongEra(
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
        if self.version.is_v2026() {
            return Err(UsageError::WrongEra(
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
        if let Some(http) = self.departures().discard_writer(stream) {
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
        if version.is_v2026() {
            return Err(UsageError::WrongEra("2026-07-28 has no sessions"));
        }
        if !self.phase.before_initialize_answer() {
            return Err(UsageError::AlreadyInitialized);
        }
        self.version = version;
        Ok(())
    }

    /// Ends the session from the server side (R24).
    pub fn close(&mut self, now: Instant) {
        self.end_session(now, None);
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
        if !self.departures().leave_cancelled_open(&id) {
            self.drop_call(&id);
        }
    }

    /// Client request `id` is no longer served: out of flight, remembered
    /// (the last `cancelled_max`) so that its late response is dropped, its
    /// stream settled. Whether it was in flight.
    fn drop_call(&mut self, id: &RequestId) -> bool {
        let Some(stream) = self.forget_call(id) else {
            return false;
        };
        self.settle_request(stream, id);
        true
    }

    /// Client request `id` out of flight and remembered (the last
    /// `cancelled_max`) so that its late response is dropped; its stream,
    /// if it was in flight, for the caller to settle or not.
    fn forget_call(&mut self, id: &RequestId) -> Option<StreamId> {
        let Flight { stream, .. } = self.in_flight.remove(id)?;
        self.cancelled
            .remember(id.clone(), self.config.cancelled_max);
        Some(stream)
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
        if let Ok(key) = self.send(notice, cause.clone(), now) {
            self.events.push_back(ServerEvent::Withdrawn {
                id: id.clone(),
                key,
                cause,
            });
        }
    }

    fn accept_without_stream(&mut self, http: HttpId) {
        if self.preset_says(|p| p.competing()) {
            self.departures().accept_competing(http);
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
        if let Some(p) = self.preset.as_mut() {
            p.start_listener(http);
        }
    }

    /// Exchange `http` is forgotten, with whatever a preset ran for it.
    fn forget_exchange(&mut self, http: HttpId) {
        self.exchanges.remove(&http);
        if let Some(p) = self.preset.as_mut() {
            p.forget_tasks(http);
        }
    }

    fn open_post_stream(&mut self, http: HttpId, requests: &[(RequestId, usize)]) {
        let sid = self.streams.open(Origin::Post {
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
            || (self.config.response_mode == ResponseMode::Sse
                && !self.preset_says(|p| p.competing()));
        if commit_sse_now {
            self.commit_sse(sid, http);
            if !self.departures().open_unstarted(http, sid) {
                self.prime(sid, http, false);
            }
        }
    }

    /// The session as a preset's departures act on it (`preset`).
    fn departures(&mut self) -> Departures<'_> {
        Departures { hub: self }
    }

    /// Whether the preset's state answers `q` yes (never under FIXED,
    /// which keeps none).
    fn preset_says(&self, q: impl FnOnce(&PresetState) -> bool) -> bool {
        self.preset.as_deref().is_some_and(q)
    }

    // Sending: causal routing of what the application emits, held
    // messages, stream writes, and the transmit and timer helpers.

    fn send(&mut self, message: Message, cause: Cause, now: Instant) -> Result<MsgKey, UsageError> {
        if self.phase == Phase::Ended {
            return Err(UsageError::SessionEnded);
        }
        let out = match &cause {
            Cause::Request(r) => {
                let stream = self
                    .in_flight
                    .get(r)
                    .ok_or_else(|| UsageError::RequestNotActive(r.clone()))?
                    .stream;
                let request = message.is_request();
                let out = self.outgoing(cause, message);
                let key = out.key;
                if request && self.policy.related_requests == RelatedRequests::OnStandaloneGet {
                    self.deliver_unrelated(out, now);
                } else {
                    self.write_to_stream(stream, out);
                }
                self.update_timers(now);
                return Ok(key);
            }
            Cause::Unrelated => self.outgoing(cause, message),
        };
        let key = out.key;
        if self.phase != Phase::Ready {
            match self.policy.pre_init_notifications {
                PreInitNotifications::Hold => self.hold(out, now),
                PreInitNotifications::Send => self.deliver_unrelated(out, now),
                PreInitNotifications::Suppress => self.events.push_back(ServerEvent::Dropped {
                    key,
                    reason: DropReason::BeforeInitialized,
                }),
            }
        } else {
            self.deliver_unrelated(out, now);
        }
        self.update_timers(now);
        Ok(key)
    }

    fn deliver_unrelated(&mut self, out: Arc<Outgoing>, now: Instant) {
        let Some(out) = self.departures().route_competing(out) else {
            return;
        };
        if self.codec.single_common_stream() {
            // rmcp `cache_and_send`: cached, and sent if a receiver exists.
            self.write_to_stream(COMMON, out);
            return;
        }
        match self.first_attached_standalone() {
            Some(sid) => self.write_to_stream(sid, out),
            None => {
                let out = self
                    .departures()
                    .drop_if_unwired(out)
                    .and_then(|out| self.departures().drop_if_streamless(out));
                if let Some(out) = out {
                    self.hold(out, now);
                }
            }
        }
    }

    fn first_attached_standalone(&self) -> Option<StreamId> {
        self.streams
            .oldest_first()
            .find(|s| s.is_standalone() && s.attached.is_some())
            .map(|s| s.id)
    }

    fn hold(&mut self, out: Arc<Outgoing>, now: Instant) {
        let deadline = now + Duration::from_millis(self.config.held_ttl_ms);
        self.held.push(deadline, out);
        while self
            .held
            .over(self.config.held_max, self.config.held_bytes_max)
        {
            if !self.drop_oldest_held(DropReason::HeldFull) {
                break;
            }
        }
        self.enforce_session_budget();
    }

    /// Drops the oldest held message, visibly, for `reason`; whether there
    /// was one.
    fn drop_oldest_held(&mut self, reason: DropReason) -> bool {
        let Some(old) = self.held.pop_oldest() else {
            return false;
        };
        self.events.push_back(ServerEvent::Dropped {
            key: old.key,
            reason,
        });
        true
    }

    fn take_held(&mut self) -> Vec<Arc<Outgoing>> {
        self.held.take_all()
    }

    fn flush_held(&mut self, now: Instant) {
        if self.phase != Phase::Ready {
            return;
        }
        for out in self.take_held() {
            self.deliver_unrelated(out, now);
        }
    }

    fn flush_held_into(&mut self, sid: StreamId) {
        if self.phase != Phase::Ready {
            return;
        }
        for out in self.take_held() {
            self.write_to_stream(sid, out);
        }
    }

    fn expire_held(&mut self, now: Instant) {
        // Held for the handshake (R49) or for a stream.
        let reason = if self.phase == Phase::Ready {
            DropReason::NoStream
        } else {
            DropReason::BeforeInitialized
        };
        while self.held.next_deadline().is_some_and(|d| d <= now) {
            self.drop_oldest_held(reason);
        }
    }

    /// How much one stream's replay buffer may keep.
    fn replay_bound(&self) -> ReplayBound {
        ReplayBound {
            events_max: self.config.events_max,
            bytes_max: self.config.events_bytes_max,
        }
    }

    /// Keeps the session's retained bytes within `session_bytes_max`: the
    /// oldest events of detached streams go first (their clients may never
    /// come back), then of attached ones (sent already; only replay is
    /// lost), then held messages (dropped visibly).
    fn enforce_session_budget(&mut self) {
        let max = self.config.session_bytes_max;
        let mut retained = self.retained_bytes();
        if retained <= max {
            return;
        }
        for attached in [false, true] {
            let ids: Vec<StreamId> = self
                .streams
                .oldest_first()
                .filter(|s| s.attached.is_some() == attached)
                .map(|s| s.id)
                .collect();
            for sid in ids {
                let Some(s) = self.streams.get_mut(&sid) else {
                    continue;
                };
                while retained > max {
                    let before = s.bytes;
                    if !s.evict_oldest() {
                        break;
                    }
                    retained -= before - s.bytes;
                }
                if retained <= max {
                    return;
                }
            }
        }
        while retained > max && !self.held.is_empty() {
            let before = self.held.bytes();
            self.drop_oldest_held(DropReason::HeldFull);
            retained -= before - self.held.bytes();
        }
    }

    /// Writes a non-final message on a stream: buffered with an id, and sent if
    /// a connection is attached. Commits SSE if nothing was committed.
    fn write_to_stream(&mut self, sid: StreamId, out: Arc<Outgoing>) {
        let Some(s) = self.streams.get(&sid) else {
            return;
        };
        let attached = s.attached;
        let out = match (s.format, attached) {
            (Format::Undecided, Some(http)) => {
                let Some(out) = self.departures().answer_with_first(sid, http, out) else {
                    return;
                };
                self.commit_sse(sid, http);
                out
            }
            (Format::Undecided, None) => {
                if let Some(s) = self.streams.get_mut(&sid) {
                    s.format = Format::Sse;
                }
                out
            }
            _ => out,
        };
        let bound = self.replay_bound();
        let Some(s) = self.streams.get_mut(&sid) else {
            return;
        };
        let seq = s.push(Some(out.clone()), bound);
        if let Some(http) = attached {
            let unnumbered =
                self.codec.initialize_unnumbered() && self.phase.initialize_stream(sid);
            let numbered = !unnumbered && !self.version.is_v2026();
            let id = numbered.then(|| self.codec.render(EventId { stream: sid, seq }));
            self.tx(
                http,
                TransmitKind::Event {
                    id,
                    retry_ms: None,
                    message: Some(out),
                },
            );
        }
        self.enforce_session_budget();
    }

    fn write_response(&mut self, sid: StreamId, id: &RequestId, out: Arc<Outgoing>) {
        let Some(s) = self.streams.get(&sid) else {
            return;
        };
        let attached = s.attached;
        let last = matches!(&s.origin, Origin::Post { pending } if pending.len() == 1);
        match (s.format, attached) {
            (Format::Undecided, Some(http)) if last => {
                // The response is the first and only thing: plain JSON.
                if let Some(s) = self.streams.get_mut(&sid) {
                    s.format = Format::Json;
                }
                let status = if self.version.is_v2026() {
                    crate::server::v2026_result::status(&out.message)
                } else {
                    200
                };
                self.head(http, status, Content::Json);
                self.tx(http, TransmitKind::Json(out.message.clone()));
            }
            (_, None) => {
                if let Some(out) = self.departures().keep_for_next_get(out) {
                    self.write_to_stream(sid, out);
                }
            }
            _ => self.write_to_stream(sid, out),
        }
        self.settle_request(sid, id);
    }

    /// Request `id` is answered or cancelled: its stream may be finished.
    fn settle_request(&mut self, sid: StreamId, id: &RequestId) {
        let Some(s) = self.streams.get_mut(&sid) else {
            return;
        };
        if let Origin::Post { pending } = &mut s.origin {
            pending.retain(|p| p != id);
            if !pending.is_empty() {
                return;
            }
        }
        s.finished = true;
        // Kept for a resumption: an event stream whose events carry ids,
        // but the `initialize` answer's (a client that lost it has no
        // session to resume in: it initializes again).
        let keep = s.format == Format::Sse
            && !self.version.is_v2026()
            && !self.phase.initialize_stream(sid);
        let attached = s.attached.take();
        if let Some(http) = attached {
            self.end(http, EndReason::Complete);
            if !self.preset_says(|p| p.has_listener(http)) {
                self.forget_exchange(http);
            }
            if !keep && sid != COMMON {
                self.streams.remove(&sid);
            }
        }
        // A resumable finished stream stays for its resumption (the oldest
        // past `streams_max` go first), also when its response went out on
        // a connection the server took for live: one that died unnoticed
        // lost it, and the client resumes from the last id it read.
        self.trim_streams();
    }

    fn detach(&mut self, sid: StreamId, http: HttpId) {
        if let Some(s) = self.streams.get_mut(&sid) {
            if s.attached == Some(http) {
                s.attached = None;
            }
        }
        self.trim_streams();
    }

    /// Forgets the oldest finished or detached standalone streams past `streams_max`.
    fn trim_streams(&mut self) {
        let idle = |s: &&Stream| {
            s.id != COMMON && s.attached.is_none() && (s.finished || s.is_standalone())
        };
        // Counted first: most calls find nothing to trim, and allocate nothing.
        let count = self.streams.values().filter(idle).count();
        if count <= self.config.streams_max {
            return;
        }
        let past: Vec<StreamId> = self
            .streams
            .oldest_first()
            .filter(idle)
            .map(|s| s.id)
            .take(count - self.config.streams_max)
            .collect();
        for sid in &past {
            self.streams.remove(sid);
        }
    }

    fn commit_sse(&mut self, sid: StreamId, http: HttpId) {
        if let Some(s) = self.streams.get_mut(&sid) {
            s.format = Format::Sse;
        }
        self.head(http, 200, Content::Sse);
    }

    fn prime(&mut self, sid: StreamId, http: HttpId, standalone: bool) {
        if let Some(priming) = self.priming_event(sid, standalone) {
            self.tx(http, priming);
        }
    }

    /// Stream `sid`'s priming event (its id taken from the stream when the
    /// scheme numbers it), or none where the version or scheme has none.
    fn priming_event(&mut self, sid: StreamId, standalone: bool) -> Option<TransmitKind> {
        let id = match self.codec.priming(standalone, self.version.has_priming()) {
            Priming::None => return None,
            Priming::LiteralZero => EventIdCodec::literal_zero().to_owned(),
            Priming::NextSeq => {
                let bound = self.replay_bound();
                let s = self.streams.get_mut(&sid)?;
                let seq = s.push(None, bound);
                self.codec.render(EventId { stream: sid, seq })
            }
        };
        Some(TransmitKind::Event {
            id: Some(id),
            retry_ms: Some(self.config.retry_ms),
            message: None,
        })
    }
    fn outgoing(&mut self, cause: Cause, message: Message) -> Arc<Outgoing> {
        let key = self.mint_key();
        Arc::new(Outgoing {
            session: self.id.clone(),
            key,
            cause,
            message,
        })
    }

    fn mint_key(&mut self) -> MsgKey {
        let key = MsgKey(self.next_key);
        self.next_key += 1;
        key
    }

    /// The core decides the version; the application's result carries it.
    fn stamp_version(&self, result: RawJson) -> RawJson {
        let mut v = result.to_value();
        if let Some(obj) = v.as_object_mut() {
            obj.insert(
                "protocolVersion".to_owned(),
                serde_json::Value::String(self.version.as_str().to_owned()),
            );
            return RawJson::from(v);
        }
        result
    }

    fn end_session(&mut self, _now: Instant, deleted_by: Option<HttpId>) {
        if self.phase == Phase::Ended {
            return;
        }
        self.phase = Phase::Ended;
        let open: Vec<HttpId> = self
            .exchanges
            .iter()
            .filter(|(_, e)| !e.ended)
            .map(|(h, _)| *h)
            .collect();
        for http in open {
            if !self.exchanges.get(&http).is_some_and(|e| e.head_sent) {
                self.head(http, 404, Content::None);
            }
            self.end(http, EndReason::SessionEnded);
        }
        self.exchanges.clear();
        let undelivered: Vec<MsgKey> = self.queued_keys();
        self.held = Held::default();
        if let Some(p) = self.preset.as_mut() {
            p.clear();
        }
        for key in undelivered {
            self.events.push_back(ServerEvent::Dropped {
                key,
                reason: DropReason::SessionEnded,
            });
        }
        self.in_flight.clear();
        self.timers = Timers::default();
        self.events
            .push_back(ServerEvent::SessionEnded { deleted_by });
    }

    // ---- internals: transmit helpers ----------------------------------

    fn head(&mut self, http: HttpId, status: u16, content: Content) {
        if let Some(e) = self.exchanges.get_mut(&http) {
            if e.head_sent {
                return; // net/http: "superfluous WriteHeader"
            }
            e.head_sent = true;
        }
        let mut head = ResponseHead::new(status, content);
        // The 2026-07-28 era has no session ids on the wire.
        if !self.version.is_v2026() {
            head.session_id = Some(self.id.clone());
        }
        self.tx(http, TransmitKind::Head(head));
    }

    fn end(&mut self, http: HttpId, reason: EndReason) {
        if let Some(e) = self.exchanges.get(&http) {
            if e.ended {
                return;
            }
            // A head first, exactly once, on every exchange (the wire's
            // contract, A4): one that ends before any was written (a call
            // to be answered in JSON, cancelled by the client before its
            // answer) is accepted with nothing to say, as a POST that
            // carries no request is: 202, no body.
            if !e.head_sent {
                self.head(http, 202, Content::None);
            }
            if let Some(e) = self.exchanges.get_mut(&http) {
                e.ended = true;
            }
        }
        self.tx(http, TransmitKind::End(reason));
    }

    fn tx(&mut self, http: HttpId, kind: TransmitKind) {
        self.transmits.push_back(Transmit { http, kind });
    }

    /// The deadline of the earliest request to the client still awaited.
    fn sync_outbound_timer(&mut self) {
        match self.outbound.next_deadline() {
            Some(deadline) if self.phase != Phase::Ended => {
                self.timers.set(SessionTimer::Outbound, deadline)
            }
            _ => self.timers.stop(SessionTimer::Outbound),
        }
    }

    fn update_timers(&mut self, now: Instant) {
        if self.phase == Phase::Ended {
            self.timers = Timers::default();
            return;
        }
        match (self.exchanges.is_empty(), self.config.idle_timeout_ms) {
            (true, Some(ms)) => {
                if self.timers.get(SessionTimer::Idle).is_none() {
                    self.timers
                        .set(SessionTimer::Idle, now + Duration::from_millis(ms));
                }
            }
            _ => self.timers.stop(SessionTimer::Idle),
        }
        match (&self.phase, self.config.init_timeout_ms) {
            (Phase::New | Phase::Initializing { .. } | Phase::AwaitingInitialized, Some(ms)) => {
                if self.timers.get(SessionTimer::Init).is_none() {
                    self.timers
                        .set(SessionTimer::Init, now + Duration::from_millis(ms));
                }
            }
            _ => self.timers.stop(SessionTimer::Init),
        }
        match self.held.next_deadline() {
            Some(deadline) => self.timers.set(SessionTimer::HeldExpiry, deadline),
            None => self.timers.stop(SessionTimer::HeldExpiry),
        }
        self.sync_outbound_timer();
        let streaming = self.exchanges.values().any(|e| {
            !e.ended
                && matches!(
                    e.role,
                    Role::Get { .. } | Role::Post { .. } | Role::Streamless { sse: true }
                )
        });
        match (streaming, self.config.keepalive_ms) {
            (true, Some(ms)) => {
                if self.timers.get(SessionTimer::KeepAlive).is_none() {
                    self.timers
                        .set(SessionTimer::KeepAlive, now + Duration::from_millis(ms));
                }
            }
            _ => self.timers.stop(SessionTimer::KeepAlive),
        }
    }

    // A session that is a 2026-07-28 `subscriptions/listen` (`listen`).

    /// A 2026-07-28 `subscriptions/listen` (request `id`), already agreed to
    /// `filter`. The request is the core's own: the stream opens and the
    /// application never hears of it. Under [`ListenAck::WithRegistration`]
    /// the acknowledgement is written in the same step as the listen starts
    /// receiving broadcasts; the other orders leave one step for later.
    ///
    /// [`ListenAck::WithRegistration`]: crate::policy::ListenAck::WithRegistration
    pub fn handle_listen(
        &mut self,
        http: HttpId,
        id: RequestId,
        filter: ListenFilter,
        now: Instant,
    ) {
        self.open_post_stream(http, &[(id.clone(), 0)]);
        self.v2026_method = Some("subscriptions/listen".into());
        let order = self.policy.listen_ack;
        self.listen = Some(Box::new(Listen::new(id, filter, http, order)));
        if order != ListenAck::RegisterThenAck {
            self.acknowledge(now);
        }
        self.update_timers(now);
    }

    /// The listen's pending step (the acknowledgement or the registration,
    /// by [`ListenAck`]) runs; whether there was one.
    fn handle_listen_step(&mut self, http: HttpId, now: Instant) -> bool {
        let Some(l) = self.listen.as_deref_mut().filter(|l| l.http() == http) else {
            return false;
        };
        match l.take_step() {
            Some(Step::Registered) => true,
            Some(Step::Acknowledge) => {
                self.acknowledge(now);
                true
            }
            None => false,
        }
    }

    /// The listen's stream, while a step of it is pending.
    fn listen_step_pending(&self) -> Option<HttpId> {
        let l = self.listen.as_deref()?;
        (!l.started() && !self.is_ended()).then_some(l.http())
    }

    fn acknowledge(&mut self, now: Instant) {
        let Some(l) = self.listen.as_deref_mut() else {
            return;
        };
        let (ack, cause) = l.acknowledgement();
        let _ = self.send(ack, cause, now);
    }

    /// Whether this session is a listen that receives broadcasts of
    /// `method` (with `params`) now.
    pub fn listens_to(&self, method: &str, params: Option<&serde_json::Value>) -> bool {
        self.listen
            .as_ref()
            .is_some_and(|l| !self.is_ended() && l.receives(method, params))
    }

    /// Writes notification `method` on this listen's stream, tagged with its
    /// subscription id; `None` unless the listen receives it now.
    pub fn notify_listener(
        &mut self,
        method: &str,
        params: Option<&serde_json::Value>,
        now: Instant,
    ) -> Option<(MsgKey, Cause)> {
        if !self.listens_to(method, params) {
            return None;
        }
        let (message, cause) = self.listen.as_ref()?.tagged(method, params);
        let key = self.send(message, cause.clone(), now).ok()?;
        Some((key, cause))
    }

    /// Ends this listen gracefully: the `complete` result naming the
    /// subscription, then the end of the stream.
    pub fn end_listen(&mut self, now: Instant) -> Option<MsgKey> {
        let (id, result) = self.listen.as_ref()?.completion();
        self.respond(&id, Ok(result), now).ok()
    }

    // GET handling: new standalone streams and resumption by
    // `Last-Event-ID` (the shapes of presets with one common stream
    // are in `preset`).

    fn get_coexist(
        &mut self,
        http: HttpId,
        cursor: Option<EventId>,
        text: Option<&str>,
    ) -> Result<(), RequestError> {
        let Some(cursor) = cursor else {
            let sid = self.streams.open(Origin::Standalone);
            if !self.departures().open_unwired(http, sid) {
                self.attach_get(http, sid, None);
            }
            return Ok(());
        };
        let unknown = || RequestError::UnknownEventId(text.unwrap_or("").to_owned());
        let stream = self.streams.get(&cursor.stream).ok_or_else(unknown)?;
        if !stream.can_resume_from(cursor.seq) {
            return Err(unknown());
        }
        if stream.finished {
            return self.resume_finished(http, cursor);
        }
        let standalone = stream.is_standalone();
        let attached = stream.attached;
        if standalone && self.departures().resume_under_lost_key(http) {
            return Ok(());
        }
        if let Some(old) = attached {
            self.end(old, EndReason::TakenOver);
            self.forget_exchange(old);
            self.detach(cursor.stream, old);
        }
        self.attach_get(http, cursor.stream, Some(cursor));
        Ok(())
    }

    fn resume_finished(&mut self, http: HttpId, cursor: EventId) -> Result<(), RequestError> {
        match self.policy.finished_stream_resume {
            FinishedStreamResume::ReplayThenEnd => {
                let inclusive = self.policy.replay_start == ReplayStart::AtNamed;
                let rest = self
                    .streams
                    .get(&cursor.stream)
                    .map(|s| s.replay(cursor.seq, inclusive))
                    .unwrap_or_default();
                if rest.is_empty() {
                    self.head(http, 204, Content::None);
                    self.end(http, EndReason::Complete);
                    return Ok(());
                }
                self.attach_get(http, cursor.stream, Some(cursor));
                Ok(())
            }
            FinishedStreamResume::ServerError => Err(RequestError::ChannelClosed),
            FinishedStreamResume::EmptyStream => {
                self.head(http, 200, Content::Sse);
                self.end(http, EndReason::Complete);
                Ok(())
            }
        }
    }

    fn attach_get(&mut self, http: HttpId, sid: StreamId, cursor: Option<EventId>) {
        self.attach_get_from(http, sid, cursor, false)
    }

    /// Writes on `http` the messages stream `sid` keeps after `after` (from
    /// it when `inclusive`), each with its event id, in the order of their ids.
    fn replay_onto(&mut self, http: HttpId, sid: StreamId, after: u64, inclusive: bool) {
        let replay = self
            .streams
            .get(&sid)
            .map(|s| s.replay(after, inclusive))
            .unwrap_or_default();
        for (seq, message) in replay {
            let id = self.codec.render(EventId { stream: sid, seq });
            self.tx(
                http,
                TransmitKind::Event {
                    id: Some(id),
                    retry_ms: None,
                    message: Some(message),
                },
            );
        }
    }

    /// Attaches a GET to stream `sid`, replays after `cursor`, primes it,
    /// then flushes what waits for a standalone stream.
    ///
    /// The priming event takes the stream's next sequence number, so it
    /// goes after the replay: events leave in the order of their ids, and a
    /// client that reads part of a resumption and loses the connection
    /// again resumes from the last id it read without skipping what was
    /// replayed after it (a priming id ahead of the replay would name a
    /// point past events the client has not read).
    fn attach_get_from(
        &mut self,
        http: HttpId,
        sid: StreamId,
        cursor: Option<EventId>,
        sync: bool,
    ) {
        self.add_exchange(http, Role::Get { stream: sid });
        let Some(s) = self.streams.get_mut(&sid) else {
            return;
        };
        s.attached = Some(http);
        s.format = Format::Sse;
        self.head(http, 200, Content::Sse);
        if let Some(cursor) = cursor {
            let inclusive = sync || self.policy.replay_start == ReplayStart::AtNamed;
            self.replay_onto(http, sid, cursor.seq, inclusive);
        }
        self.prime(sid, http, true);
        let standalone = self.streams.get(&sid).is_some_and(|s| s.is_standalone());
        if standalone && !self.codec.single_common_stream() {
            self.flush_held_into(sid);
        }
        let kept = self.preset.as_mut().map(|p| p.take_for_next_get());
        for out in kept.into_iter().flatten() {
            self.write_to_stream(sid, out);
        }
        let finished = self.streams.get(&sid).is_some_and(|s| s.finished);
        if finished {
            self.end(http, EndReason::Complete);
            self.forget_exchange(http);
            self.detach(sid, http);
        }
    }
}

/// The request a `notifications/cancelled` names (its `requestId`).
pub(crate) fn cancelled_id(params: Option<&RawJson>) -> Option<RequestId> {
    crate::jsonrpc::cancelled_request(params).map(|(id, _)| id)
}
