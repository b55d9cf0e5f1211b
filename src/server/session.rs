//! [`ServerSession`]: one MCP session's streams, routing and replay.
//!
//! ```text
//!  New ──initialize response──▶ AwaitingInitialized ──notifications/initialized──▶ Ready
//!   │                                  │                                             │
//!   └──────────────── DELETE, close, idle expiry ──────────────────────────────────────┴──▶ Ended
//! ```
//!
//! Routing under FIXED is causal: what the application emits for request R
//! goes on R's stream (or its resumption), the response last, nothing for R
//! after it; unrelated messages go to exactly one attached standalone stream,
//! or wait (bounded in count and time) until one attaches. No GET ever ends
//! another stream. Every SSE event carries a stream-scoped id and is buffered
//! (bounded) so a `Last-Event-ID` resumption replays strictly after it.

use super::event_ids::{EventIdCodec, Priming, COMMON};
use super::stream::{Format, Origin, Stream};
use super::{
    Cause, Content, DropReason, EndReason, Outgoing, ResponseHead, ServerEvent, Transmit,
    TransmitKind,
};
use crate::error::{RequestError, UsageError};
use crate::ids::{EventId, HttpId, MsgKey, RequestId, SessionId, StreamId};
use crate::jsonrpc::{Body, ErrorObject, Message, RawJson};
use crate::policy::{
    DetachedResponse, FinishedStreamResume, PreInitNotifications, ReplayStart, ServerPolicy,
    SessionQueue, StandaloneAttach,
};
use crate::time::{Instant, Timers};
use crate::version::ProtocolVersion;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

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
    /// Streams kept for resumption once finished or detached.
    pub streams_max: usize,
    /// Unrelated messages waiting for a standalone stream.
    pub held_max: usize,
    /// How long an unrelated message may wait for a standalone stream, in ms.
    pub held_ttl_ms: u64,
    /// Client requests in flight at once.
    pub in_flight_max: usize,
    /// Server-to-client requests awaiting answers.
    pub outbound_requests_max: usize,
    /// Cancelled request ids remembered (to drop late responses).
    pub cancelled_max: usize,
    /// Session ends after this long with no open exchange, in ms (None: never).
    pub idle_timeout_ms: Option<u64>,
    /// SSE keep-alive comment interval on attached streams, in ms (None: off).
    pub keepalive_ms: Option<u64>,
    /// JSON or SSE answers.
    pub response_mode: ResponseMode,
    /// mcp-go's session channel capacity (`SessionQueue::SharedCompeting`).
    pub shared_queue_max: usize,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            retry_ms: 1000,
            events_max: 64,
            streams_max: 32,
            held_max: 256,
            held_ttl_ms: 60_000,
            in_flight_max: 256,
            outbound_requests_max: 64,
            cancelled_max: 64,
            idle_timeout_ms: Some(30 * 60 * 1000),
            keepalive_ms: Some(15_000),
            response_mode: ResponseMode::Sse,
            shared_queue_max: 100,
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Phase {
    New,
    AwaitingInitialized,
    Ready,
    Ended,
}

/// A listener task that competes for the session queue (mcp-go only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Listener {
    None,
    Live,
}

/// Progress of a notification POST's handler (mcp-go only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum HandlerStep {
    Running,
    HeadWritten,
    Finished,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Role {
    /// A POST carrying requests, writing `stream`.
    Post { stream: StreamId },
    /// A GET carrying `stream` (standalone or a resumption).
    Get { stream: StreamId },
    /// rmcp 3.9's idle shadow stream.
    Shadow,
    /// A notification/response POST still running (mcp-go only).
    Accepted { step: HandlerStep },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Exchange {
    pub(super) role: Role,
    pub(super) head_sent: bool,
    pub(super) ended: bool,
    pub(super) listener: Listener,
}

/// One session. See the module doc for the state diagram and routing rules.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServerSession {
    id: SessionId,
    codec: EventIdCodec,
    version: ProtocolVersion,
    pub(super) config: SessionConfig,
    pub(super) policy: ServerPolicy,
    phase: Phase,
    pub(super) streams: BTreeMap<StreamId, Stream>,
    next_stream: u32,
    pub(super) exchanges: BTreeMap<HttpId, Exchange>,
    in_flight: BTreeMap<RequestId, StreamId>,
    initialize_id: Option<RequestId>,
    cancelled: VecDeque<RequestId>,
    outbound: BTreeSet<RequestId>,
    next_outbound: i64,
    held: VecDeque<(Instant, Arc<Outgoing>)>,
    pub(super) shared: VecDeque<Arc<Outgoing>>,
    next_get: VecDeque<Arc<Outgoing>>,
    next_key: u64,
    transmits: VecDeque<Transmit>,
    events: VecDeque<ServerEvent>,
    timers: Timers<SessionTimer>,
    late_responses: u64,
}

impl ServerSession {
    /// A session, before its `initialize` request is handled. `namespace`
    /// (from the endpoint's seeded generator) keeps event ids of different
    /// sessions apart.
    pub fn new(
        id: SessionId,
        namespace: u32,
        version: ProtocolVersion,
        config: SessionConfig,
        policy: ServerPolicy,
    ) -> Self {
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
            next_stream: 1,
            exchanges: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            initialize_id: None,
            cancelled: VecDeque::new(),
            outbound: BTreeSet::new(),
            next_outbound: 1,
            held: VecDeque::new(),
            shared: VecDeque::new(),
            next_get: VecDeque::new(),
            next_key: 1,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            timers: Timers::default(),
            late_responses: 0,
        }
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

    /// The policy in force.
    pub fn policy(&self) -> &ServerPolicy {
        &self.policy
    }

    /// Whether `notifications/initialized` has arrived.
    pub fn is_initialized(&self) -> bool {
        self.phase == Phase::Ready
    }

    /// Whether the session has ended.
    pub fn is_ended(&self) -> bool {
        self.phase == Phase::Ended
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
        keys.extend(self.shared.iter().map(|o| o.key));
        keys.extend(self.next_get.iter().map(|o| o.key));
        keys.sort();
        keys
    }

    /// Responses from the client that matched no outstanding server request.
    pub fn late_responses(&self) -> u64 {
        self.late_responses
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
        let mut new_ids: Vec<RequestId> = Vec::new();
        for m in &messages {
            if let Message::Request { id, method, .. } = m {
                if method == "initialize" && self.phase != Phase::New {
                    return Err(RequestError::BadInitialize);
                }
                if self.in_flight.contains_key(id) || new_ids.contains(id) {
                    return Err(RequestError::DuplicateRequestId(id.clone()));
                }
                new_ids.push(id.clone());
            }
        }
        if self.in_flight.len() + new_ids.len() > self.config.in_flight_max {
            return Err(RequestError::SessionLimit);
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
                        self.initialize_id = Some(id.clone());
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
            DetachedResponse::BufferForResume => last_event_id,
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
        let Some(mut ex) = self.exchanges.remove(&http) else {
            return;
        };
        if ex.listener == Listener::Live {
            // mcp-go: the listener goroutine outlives the HTTP exchange until it
            // selects its context; whatever it dequeues now is lost.
            ex.ended = true;
            self.exchanges.insert(http, ex);
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
                SessionTimer::HeldExpiry => self.expire_held(now),
                SessionTimer::KeepAlive => {
                    let sse: Vec<HttpId> = self
                        .exchanges
                        .iter()
                        .filter(|(_, e)| {
                            e.head_sent && !e.ended && !matches!(e.role, Role::Accepted { .. })
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
        let Some(stream) = self.in_flight.remove(id) else {
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
        let message = match result {
            Ok(result) if self.initialize_id.as_ref() == Some(id) => Message::Response {
                id: id.clone(),
                result: self.stamp_version(result),
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
        if self.initialize_id.as_ref() == Some(id) && self.phase == Phase::New {
            self.phase = Phase::AwaitingInitialized;
        }
        let out = self.outgoing(Cause::Request(id.clone()), message);
        let key = out.key;
        if self.policy.session_queue == SessionQueue::SharedCompeting {
            self.drain_shared_into(stream);
        }
        self.write_response(stream, id, out);
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
    /// as [`ServerEvent::Response`].
    pub fn request(
        &mut self,
        method: &str,
        params: Option<RawJson>,
        cause: Cause,
        now: Instant,
    ) -> Result<(RequestId, MsgKey), UsageError> {
        if self.outbound.len() >= self.config.outbound_requests_max {
            return Err(UsageError::TooManyRequests);
        }
        let id = RequestId::Num(self.next_outbound);
        let message = Message::request(id.clone(), method, params);
        let key = self.send(message, cause, now)?;
        self.next_outbound += 1;
        self.outbound.insert(id.clone());
        Ok((id, key))
    }

    /// Closes the connection carrying request `id`'s stream without ending the
    /// stream (polling, R37): the client resumes with `Last-Event-ID` after
    /// `retry`. Only after an id-bearing event, so on a stream that was primed.
    pub fn close_connection(&mut self, id: &RequestId, now: Instant) -> Result<(), UsageError> {
        let stream = *self
            .in_flight
            .get(id)
            .ok_or_else(|| UsageError::RequestNotActive(id.clone()))?;
        let Some(s) = self.streams.get(&stream) else {
            return Err(UsageError::RequestNotActive(id.clone()));
        };
        let primed = s.next_seq > 1 && s.format == Format::Sse;
        if let (Some(http), true) = (s.attached, primed) {
            self.end(http, EndReason::Polling);
            self.detach(stream, http);
        }
        self.update_timers(now);
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
        self.exchanges = BTreeMap::new();
        self.transmits = VecDeque::new();
        self.events = VecDeque::new();
        if self.in_flight.is_empty() {
            self.in_flight = BTreeMap::new();
        }
        if self.streams.is_empty() {
            self.streams = BTreeMap::new();
        }
    }

    /// Whether outputs are waiting to be polled.
    pub fn has_output(&self) -> bool {
        !self.transmits.is_empty() || !self.events.is_empty()
    }

    // ---- internals: receiving -----------------------------------------

    fn recv_non_request(&mut self, message: Message, now: Instant) {
        match message {
            Message::Notification { method, params } => {
                if method == "notifications/initialized" && self.phase != Phase::Ended {
                    self.phase = Phase::Ready;
                    self.flush_held(now);
                }
                if method == "notifications/cancelled" {
                    self.recv_cancel(params.as_ref());
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
        if self.outbound.remove(&id) {
            self.events.push_back(ServerEvent::Response { id, result });
        } else {
            self.late_responses += 1;
        }
    }

    fn recv_cancel(&mut self, params: Option<&RawJson>) {
        let Some(params) = params else { return };
        let Some(raw) = params.to_value().get("requestId").cloned() else {
            return;
        };
        let Ok(id) = serde_json::from_value::<RequestId>(raw) else {
            return;
        };
        if self.initialize_id.as_ref() == Some(&id) {
            return; // initialize is never cancelled (R50)
        }
        let Some(stream) = self.in_flight.remove(&id) else {
            return;
        };
        self.cancelled.push_back(id.clone());
        while self.cancelled.len() > self.config.cancelled_max {
            self.cancelled.pop_front();
        }
        self.settle_request(stream, &id);
    }

    fn accept_without_stream(&mut self, http: HttpId) {
        match self.policy.session_queue {
            SessionQueue::Causal => {
                self.head(http, 202, Content::None);
                self.end(http, EndReason::Complete);
            }
            SessionQueue::SharedCompeting => {
                self.exchanges.insert(
                    http,
                    Exchange {
                        role: Role::Accepted {
                            step: HandlerStep::Running,
                        },
                        head_sent: false,
                        ended: false,
                        listener: Listener::Live,
                    },
                );
            }
        }
    }

    fn open_post_stream(&mut self, http: HttpId, ids: &[RequestId]) {
        let sid = self.new_stream(Origin::Post {
            pending: ids.to_vec(),
        });
        for id in ids {
            self.in_flight.insert(id.clone(), sid);
        }
        let listener = match self.policy.session_queue {
            SessionQueue::Causal => Listener::None,
            SessionQueue::SharedCompeting => Listener::Live,
        };
        self.exchanges.insert(
            http,
            Exchange {
                role: Role::Post { stream: sid },
                head_sent: false,
                ended: false,
                listener,
            },
        );
        if let Some(s) = self.streams.get_mut(&sid) {
            s.attached = Some(http);
        }
        let commit_sse_now = ids.len() > 1
            || (self.config.response_mode == ResponseMode::Sse
                && self.policy.session_queue == SessionQueue::Causal);
        if commit_sse_now {
            self.commit_sse(sid, http);
            self.prime(sid, http, false);
        }
    }

    fn get_coexist(
        &mut self,
        http: HttpId,
        cursor: Option<EventId>,
        text: Option<&str>,
    ) -> Result<(), RequestError> {
        let Some(cursor) = cursor else {
            let sid = self.new_stream(Origin::Standalone);
            self.attach_get(http, sid, None);
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
        if let Some(old) = stream.attached {
            self.end(old, EndReason::TakenOver);
            self.exchanges.remove(&old);
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

    /// The rmcp shapes: one common stream for every standalone GET.
    fn get_common(
        &mut self,
        http: HttpId,
        cursor: Option<EventId>,
        text: Option<&str>,
    ) -> Result<(), RequestError> {
        let target = cursor.map(|c| c.stream).unwrap_or(COMMON);
        if target != COMMON {
            let unknown = || RequestError::UnknownEventId(text.unwrap_or("").to_owned());
            let stream = self
                .streams
                .get(&target)
                .ok_or(RequestError::ChannelClosed)?;
            let cursor = cursor.ok_or_else(unknown)?;
            if stream.finished {
                return self.resume_finished(http, cursor);
            }
            if let Some(old) = stream.attached {
                self.end(old, EndReason::TakenOver);
                self.exchanges.remove(&old);
                self.detach(target, old);
            }
            self.attach_get(http, target, Some(cursor));
            return Ok(());
        }
        // rmcp: a plain GET is `Resume { last: None, index: 0 }`: sync from index 0.
        let cursor = cursor.unwrap_or(EventId {
            stream: COMMON,
            seq: 1,
        });
        let live = self.streams.get(&COMMON).and_then(|s| s.attached);
        if let Some(old) = live {
            match self.policy.standalone_attach {
                StandaloneAttach::ShadowCommon => {
                    self.open_shadow(http);
                    return Ok(());
                }
                _ => {
                    self.end(old, EndReason::Replaced);
                    self.exchanges.remove(&old);
                    self.detach(COMMON, old);
                }
            }
        }
        let stream = self
            .streams
            .get(&COMMON)
            .ok_or(RequestError::ChannelClosed)?;
        if cursor.seq > stream.next_seq {
            return Err(RequestError::UnknownEventId(text.unwrap_or("").to_owned()));
        }
        self.attach_get_from(http, COMMON, Some(cursor), true);
        Ok(())
    }

    fn open_shadow(&mut self, http: HttpId) {
        self.exchanges.insert(
            http,
            Exchange {
                role: Role::Shadow,
                head_sent: false,
                ended: false,
                listener: Listener::None,
            },
        );
        self.head(http, 200, Content::Sse);
        if self.codec.priming(true, self.version.has_priming()) == Priming::LiteralZero {
            self.tx(
                http,
                TransmitKind::Event {
                    id: Some(EventIdCodec::literal_zero().to_owned()),
                    retry_ms: Some(self.config.retry_ms),
                    message: None,
                },
            );
        }
    }

    fn attach_get(&mut self, http: HttpId, sid: StreamId, cursor: Option<EventId>) {
        self.attach_get_from(http, sid, cursor, false)
    }

    /// Attaches a GET to stream `sid`, primes it, replays after `cursor`,
    /// then flushes what waits for a standalone stream.
    fn attach_get_from(
        &mut self,
        http: HttpId,
        sid: StreamId,
        cursor: Option<EventId>,
        sync: bool,
    ) {
        let listener = match self.policy.session_queue {
            SessionQueue::Causal => Listener::None,
            SessionQueue::SharedCompeting => Listener::Live,
        };
        self.exchanges.insert(
            http,
            Exchange {
                role: Role::Get { stream: sid },
                head_sent: false,
                ended: false,
                listener,
            },
        );
        let Some(s) = self.streams.get_mut(&sid) else {
            return;
        };
        s.attached = Some(http);
        s.format = Format::Sse;
        self.head(http, 200, Content::Sse);
        self.prime(sid, http, true);
        if let Some(cursor) = cursor {
            let inclusive = sync || self.policy.replay_start == ReplayStart::AtNamed;
            let replay = self
                .streams
                .get(&sid)
                .map(|s| s.replay(cursor.seq, inclusive))
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
        let standalone = self.streams.get(&sid).is_some_and(|s| s.is_standalone());
        if standalone && !self.codec.single_common_stream() {
            self.flush_held_into(sid);
        }
        let pending: Vec<Arc<Outgoing>> = self.next_get.drain(..).collect();
        for out in pending {
            self.write_to_stream(sid, out);
        }
        let finished = self.streams.get(&sid).is_some_and(|s| s.finished);
        if finished {
            self.end(http, EndReason::Complete);
            self.exchanges.remove(&http);
            self.detach(sid, http);
        }
    }

    // ---- internals: sending -------------------------------------------

    fn send(&mut self, message: Message, cause: Cause, now: Instant) -> Result<MsgKey, UsageError> {
        if self.phase == Phase::Ended {
            return Err(UsageError::SessionEnded);
        }
        let out = match &cause {
            Cause::Request(r) => {
                let stream = *self
                    .in_flight
                    .get(r)
                    .ok_or_else(|| UsageError::RequestNotActive(r.clone()))?;
                let out = self.outgoing(cause, message);
                let key = out.key;
                self.write_to_stream(stream, out);
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
        if self.policy.session_queue == SessionQueue::SharedCompeting {
            // mcp-go: a non-blocking send; a full channel drops silently.
            if self.shared.len() < self.config.shared_queue_max {
                self.shared.push_back(out);
            }
            return;
        }
        if self.codec.single_common_stream() {
            // rmcp `cache_and_send`: cached, and sent if a receiver exists.
            self.write_to_stream(COMMON, out);
            return;
        }
        match self.first_attached_standalone() {
            Some(sid) => self.write_to_stream(sid, out),
            None => self.hold(out, now),
        }
    }

    fn first_attached_standalone(&self) -> Option<StreamId> {
        self.streams
            .values()
            .find(|s| s.is_standalone() && s.attached.is_some())
            .map(|s| s.id)
    }

    fn hold(&mut self, out: Arc<Outgoing>, now: Instant) {
        let deadline = now + Duration::from_millis(self.config.held_ttl_ms);
        self.held.push_back((deadline, out));
        while self.held.len() > self.config.held_max {
            if let Some((_, old)) = self.held.pop_front() {
                self.events.push_back(ServerEvent::Dropped {
                    key: old.key,
                    reason: DropReason::NoStream,
                });
            }
        }
    }

    fn flush_held(&mut self, now: Instant) {
        if self.phase != Phase::Ready {
            return;
        }
        let held: Vec<Arc<Outgoing>> = self.held.drain(..).map(|(_, o)| o).collect();
        for out in held {
            self.deliver_unrelated(out, now);
        }
    }

    fn flush_held_into(&mut self, sid: StreamId) {
        if self.phase != Phase::Ready {
            return;
        }
        let held: Vec<Arc<Outgoing>> = self.held.drain(..).map(|(_, o)| o).collect();
        for out in held {
            self.write_to_stream(sid, out);
        }
    }

    fn expire_held(&mut self, now: Instant) {
        while let Some((deadline, _)) = self.held.front() {
            if *deadline > now {
                break;
            }
            if let Some((_, out)) = self.held.pop_front() {
                self.events.push_back(ServerEvent::Dropped {
                    key: out.key,
                    reason: DropReason::NoStream,
                });
            }
        }
    }

    /// Writes a non-final message on a stream: buffered with an id, and sent if
    /// a connection is attached. Commits SSE if nothing was committed.
    pub(super) fn write_to_stream(&mut self, sid: StreamId, out: Arc<Outgoing>) {
        let Some(s) = self.streams.get(&sid) else {
            return;
        };
        let attached = s.attached;
        if s.format == Format::Undecided {
            if let Some(http) = attached {
                self.commit_sse(sid, http);
            } else if let Some(s) = self.streams.get_mut(&sid) {
                s.format = Format::Sse;
            }
        }
        let events_max = self.config.events_max;
        let Some(s) = self.streams.get_mut(&sid) else {
            return;
        };
        let seq = s.push(Some(out.clone()), events_max);
        if let Some(http) = attached {
            let id = self.codec.render(EventId { stream: sid, seq });
            self.tx(
                http,
                TransmitKind::Event {
                    id: Some(id),
                    retry_ms: None,
                    message: Some(out),
                },
            );
        }
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
                self.head(http, 200, Content::Json);
                self.tx(http, TransmitKind::Json(out.message.clone()));
            }
            (_, None) if self.policy.detached_response == DetachedResponse::NextGet => {
                self.next_get.push_back(out);
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
        let attached = s.attached.take();
        if let Some(http) = attached {
            self.end(http, EndReason::Complete);
            let keep = self
                .exchanges
                .get(&http)
                .is_some_and(|e| e.listener == Listener::Live);
            if !keep {
                self.exchanges.remove(&http);
            }
            // Everything went out on a live connection, the response last:
            // nothing is left to resume, so the stream is forgotten at once.
            // (A stream that finished while detached stays for its resumption.)
            if sid != COMMON {
                self.streams.remove(&sid);
            }
        }
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
        let idle: Vec<StreamId> = self
            .streams
            .values()
            .filter(|s| s.id != COMMON && s.attached.is_none())
            .filter(|s| s.finished || s.is_standalone())
            .map(|s| s.id)
            .collect();
        if idle.len() > self.config.streams_max {
            for sid in &idle[..idle.len() - self.config.streams_max] {
                self.streams.remove(sid);
            }
        }
    }

    fn commit_sse(&mut self, sid: StreamId, http: HttpId) {
        if let Some(s) = self.streams.get_mut(&sid) {
            s.format = Format::Sse;
        }
        self.head(http, 200, Content::Sse);
    }

    fn prime(&mut self, sid: StreamId, http: HttpId, standalone: bool) {
        let retry_ms = Some(self.config.retry_ms);
        let id = match self.codec.priming(standalone, self.version.has_priming()) {
            Priming::None => return,
            Priming::LiteralZero => EventIdCodec::literal_zero().to_owned(),
            Priming::NextSeq => {
                let events_max = self.config.events_max;
                let Some(s) = self.streams.get_mut(&sid) else {
                    return;
                };
                let seq = s.push(None, events_max);
                self.codec.render(EventId { stream: sid, seq })
            }
        };
        self.tx(
            http,
            TransmitKind::Event {
                id: Some(id),
                retry_ms,
                message: None,
            },
        );
    }

    fn new_stream(&mut self, origin: Origin) -> StreamId {
        let sid = StreamId(self.next_stream);
        self.next_stream += 1;
        self.streams.insert(sid, Stream::new(sid, origin));
        sid
    }

    fn outgoing(&mut self, cause: Cause, message: Message) -> Arc<Outgoing> {
        let key = self.mint_key();
        Arc::new(Outgoing {
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

    fn end_session(&mut self, _now: Instant) {
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
        self.held.clear();
        self.shared.clear();
        self.next_get.clear();
        for key in undelivered {
            self.events.push_back(ServerEvent::Dropped {
                key,
                reason: DropReason::SessionEnded,
            });
        }
        self.in_flight.clear();
        self.timers = Timers::default();
        self.events.push_back(ServerEvent::SessionEnded);
    }

    // ---- internals: transmit helpers ----------------------------------

    pub(super) fn head(&mut self, http: HttpId, status: u16, content: Content) {
        if let Some(e) = self.exchanges.get_mut(&http) {
            if e.head_sent {
                return; // net/http: "superfluous WriteHeader"
            }
            e.head_sent = true;
        }
        let mut head = ResponseHead::new(status, content);
        head.session_id = Some(self.id.clone());
        self.tx(http, TransmitKind::Head(head));
    }

    pub(super) fn end(&mut self, http: HttpId, reason: EndReason) {
        if let Some(e) = self.exchanges.get_mut(&http) {
            if e.ended {
                return;
            }
            e.ended = true;
        }
        self.tx(http, TransmitKind::End(reason));
    }

    pub(super) fn tx(&mut self, http: HttpId, kind: TransmitKind) {
        self.transmits.push_back(Transmit { http, kind });
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
        match self.held.front() {
            Some((deadline, _)) => self.timers.set(SessionTimer::HeldExpiry, *deadline),
            None => self.timers.stop(SessionTimer::HeldExpiry),
        }
        let streaming = self.exchanges.values().any(|e| {
            !e.ended && matches!(e.role, Role::Get { .. } | Role::Shadow | Role::Post { .. })
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

    /// Drains everything queued into `sid` (mcp-go's drain before a response).
    fn drain_shared_into(&mut self, sid: StreamId) {
        let items: Vec<Arc<Outgoing>> = self.shared.drain(..).collect();
        for out in items {
            self.write_to_stream(sid, out);
        }
    }
}
