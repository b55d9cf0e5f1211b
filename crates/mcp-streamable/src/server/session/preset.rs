//! A preset's departures from FIXED: what only they keep
//! ([`PresetState`]), what they do to the session ([`Departures`], a view
//! the hub lends at each point where some SDK does otherwise), and the
//! scheduling points they expose ([`Scheduled`]).
//!
//! mcp-go v0.44.1 ([`SessionQueue::SharedCompeting`]) starts a listener
//! goroutine for every POST that `select`s on the session channel, its own
//! `done` and its context; Go picks uniformly among ready cases. Its
//! notification POSTs run a handler that writes the 202 head, then
//! returns. Which goroutine runs next is an input
//! ([`SchedulingPoint::ListenerWake`], [`SchedulingPoint::HandlerStep`]).
//! rmcp ([`StandaloneAttach::ReplaceCommon`],
//! [`StandaloneAttach::ShadowCommon`]) keeps one common stream for every
//! standalone GET: a new GET replaces the live one, or becomes a shadow
//! that is never written.
//! csharp-sdk before PR #1212 ([`GetRegistration::AfterHead`]) sends a
//! standalone GET's `200` before the stream takes messages; wiring it is a
//! scheduling point ([`SchedulingPoint::RegisterGet`]), and what the
//! application emits meanwhile is dropped.
//! The conformance suite's `sse-retry` mock ([`DetachedResponse::NextGet`])
//! keeps a detached response for whatever GET comes next.
//! The TypeScript SDK v1's example event store
//! ([`StandaloneResume::LostKey`]) answers a resumption of the standalone
//! stream with a stream that carries nothing. mcp-go before PR #933
//! ([`RelatedRequests::OnStandaloneGet`]) sends a call's requests to the
//! client on the standalone GET. python-sdk with PR #2934
//! ([`RequestWriter::Lazy`]) puts a POST's event stream on the wire only
//! once its writer task starts ([`SchedulingPoint::StartWriter`]); a close
//! for polling before then leaves the client a stream without an event.
//! java-sdk 2.0.x ([`StreamlessUnrelated::Drop`]) buffers nothing for a
//! standalone GET not open yet: what it sends meanwhile is dropped.
//! The TypeScript SDK's server ([`CancelledCall::LeftOpen`]) sends
//! nothing for a request the client cancelled, so the stream that waits for
//! its answer never ends.
//! The TypeScript SDK before 1.26.0 on one shared transport
//! ([`StatelessRequests::SharedTransport`]) keys its requests by id alone:
//! a second request under an id in flight takes the first one's place.
//!
//! [`SessionQueue::SharedCompeting`]: crate::policy::SessionQueue::SharedCompeting
//! [`DetachedResponse::NextGet`]: crate::policy::DetachedResponse::NextGet
//! [`GetRegistration::AfterHead`]: crate::policy::GetRegistration::AfterHead
//! [`StandaloneAttach::ReplaceCommon`]: crate::policy::StandaloneAttach::ReplaceCommon
//! [`StandaloneAttach::ShadowCommon`]: crate::policy::StandaloneAttach::ShadowCommon
//! [`StandaloneResume::LostKey`]: crate::policy::StandaloneResume::LostKey
//! [`RelatedRequests::OnStandaloneGet`]: crate::policy::RelatedRequests::OnStandaloneGet
//! [`RequestWriter::Lazy`]: crate::policy::RequestWriter::Lazy
//! [`StreamlessUnrelated::Drop`]: crate::policy::StreamlessUnrelated::Drop
//! [`StatelessRequests::SharedTransport`]: crate::policy::StatelessRequests::SharedTransport
//! [`CancelledCall::LeftOpen`]: crate::policy::CancelledCall::LeftOpen

use super::{Exchange, Phase, ResponseMode, Role, ServerSession};
use crate::error::RequestError;
use crate::ids::{EventId, HttpId, MsgKey, StreamId};
use crate::policy::{
    CancelledCall, DetachedResponse, GetRegistration, JsonAnswer, RequestWriter, ServerPolicy,
    SessionQueue, StandaloneAttach, StandaloneResume, StatelessRequests, StreamlessUnrelated,
};
use crate::preset::{Scheduled, SchedulingPoint};
use crate::server::event_ids::{EventIdCodec, Priming, COMMON};
use crate::server::stream::{Format, Origin};
use crate::server::{Content, DropReason, EndReason, Outgoing, ServerEvent, TransmitKind};
use crate::time::Instant;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// Progress of a notification POST's handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum HandlerStep {
    Running,
    HeadWritten,
    Finished,
}

/// The session's state that only presets use.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct PresetState {
    /// Whether the session's messages go through one competing queue.
    competing: bool,
    /// The competing queue's capacity.
    capacity: usize,
    /// The session channel (`competing`).
    queue: VecDeque<Arc<Outgoing>>,
    /// The exchanges whose listener task still runs (`competing`); a
    /// listener outlives its HTTP exchange until it sees its context end.
    listeners: BTreeSet<HttpId>,
    /// The notification POSTs whose handler still runs (`competing`).
    handlers: BTreeMap<HttpId, HandlerStep>,
    /// Responses kept for whatever GET comes next.
    next_get: VecDeque<Arc<Outgoing>>,
    /// Standalone GETs whose `200` went out and whose stream is not wired
    /// to the session yet ([`GetRegistration::AfterHead`]), with the stream.
    unwired: BTreeMap<HttpId, StreamId>,
    /// POSTs whose event stream's writer has not started
    /// ([`RequestWriter::Lazy`]): the stream, and its priming event, minted
    /// (it has its id in the stream) but not on the wire.
    unstarted: BTreeMap<HttpId, (StreamId, Option<TransmitKind>)>,
    /// Whether a request under an id in flight takes the earlier one's
    /// place instead of being refused ([`StatelessRequests::SharedTransport`]).
    overwrite_ids: bool,
}

impl PresetState {
    /// The state `policy` needs: `None` when it departs from FIXED in
    /// nothing kept here.
    pub(super) fn for_policy(policy: &ServerPolicy) -> Option<Box<PresetState>> {
        let capacity = match policy.session_queue {
            SessionQueue::SharedCompeting { capacity } => Some(usize::from(capacity)),
            SessionQueue::Causal => None,
        };
        let competing = capacity.is_some();
        let next_get = policy.detached_response != DetachedResponse::BufferForResume;
        let late_wiring = policy.get_registration == GetRegistration::AfterHead;
        let lazy_writer = policy.request_writer == RequestWriter::Lazy;
        let overwrite_ids = policy.stateless_requests == StatelessRequests::SharedTransport;
        (competing || next_get || late_wiring || lazy_writer || overwrite_ids).then(|| {
            Box::new(PresetState {
                competing,
                capacity: capacity.unwrap_or(0),
                overwrite_ids,
                ..PresetState::default()
            })
        })
    }

    /// The keys of the messages it keeps, in the order they would go.
    pub(super) fn queued_keys(&self) -> impl Iterator<Item = MsgKey> + '_ {
        self.queue.iter().chain(&self.next_get).map(|o| o.key)
    }

    /// Whether messages go through mcp-go's one competing queue.
    pub(super) fn competing(&self) -> bool {
        self.competing
    }

    /// Whether a request under an id already in flight takes the earlier
    /// one's place (the earlier exchange then waits for ever) instead of
    /// being refused with [`RequestError::DuplicateRequestId`].
    pub(super) fn overwrites_ids(&self) -> bool {
        self.overwrite_ids
    }

    /// Whether exchange `http` has a live listener task.
    pub(super) fn has_listener(&self, http: HttpId) -> bool {
        self.listeners.contains(&http)
    }

    /// A new exchange carrying a stream: under the competing queue it also
    /// gets a listener.
    pub(super) fn start_listener(&mut self, http: HttpId) {
        if self.competing {
            self.listeners.insert(http);
        }
    }

    /// The responses kept for the next GET, taken out.
    pub(super) fn take_for_next_get(&mut self) -> Vec<Arc<Outgoing>> {
        self.next_get.drain(..).collect()
    }

    /// Exchange `http` is forgotten, and its tasks with it.
    pub(super) fn forget_tasks(&mut self, http: HttpId) {
        self.listeners.remove(&http);
        self.handlers.remove(&http);
        self.unwired.remove(&http);
        self.unstarted.remove(&http);
    }

    /// The session ended: its queues and tasks go, its settings stay.
    pub(super) fn clear(&mut self) {
        *self = PresetState {
            competing: self.competing,
            capacity: self.capacity,
            overwrite_ids: self.overwrite_ids,
            ..PresetState::default()
        };
    }

    /// The steps the preset's tasks could take now, among `exchanges`.
    fn points<'a>(
        &'a self,
        exchanges: impl Iterator<Item = &'a HttpId> + 'a,
    ) -> impl Iterator<Item = (HttpId, SchedulingPoint)> + 'a {
        let tasks = exchanges.flat_map(move |http| {
            let handler = self
                .handlers
                .get(http)
                .is_some_and(|s| *s != HandlerStep::Finished)
                .then_some((*http, SchedulingPoint::HandlerStep));
            let listener = self
                .listeners
                .contains(http)
                .then_some((*http, SchedulingPoint::ListenerWake));
            handler.into_iter().chain(listener)
        });
        let unwired = self
            .unwired
            .keys()
            .map(|h| (*h, SchedulingPoint::RegisterGet));
        let unstarted = self
            .unstarted
            .keys()
            .map(|h| (*h, SchedulingPoint::StartWriter));
        tasks.chain(unwired).chain(unstarted)
    }
}

/// The session as a preset's departures from FIXED act on it (quinn-proto's
/// view types): the hub reaches each at the one point where some SDK does
/// otherwise, through [`ServerSession::departures`], and under FIXED each
/// gives its input back or does nothing. What they keep is [`PresetState`].
pub(super) struct Departures<'a> {
    pub(super) hub: &'a mut ServerSession,
}

impl Departures<'_> {
    /// A notification POST under the competing queue: not answered at
    /// once; its handler and its listener run.
    pub(super) fn accept_competing(&mut self, http: HttpId) {
        self.hub.exchanges.insert(
            http,
            Exchange {
                role: Role::Streamless { sse: false },
                head_sent: false,
                ended: false,
            },
        );
        if let Some(p) = self.hub.preset.as_mut() {
            p.handlers.insert(http, HandlerStep::Running);
            p.listeners.insert(http);
        }
    }

    /// An unrelated message into the competing queue: a non-blocking send,
    /// so a full channel drops it silently. Given back when there is no
    /// such queue.
    pub(super) fn route_competing(&mut self, out: Arc<Outgoing>) -> Option<Arc<Outgoing>> {
        let Some(p) = self.hub.preset.as_mut().filter(|p| p.competing) else {
            return Some(out);
        };
        if p.queue.len() < p.capacity {
            p.queue.push_back(out);
        }
        None
    }

    /// Before a response on `stream`, mcp-go's request handler drains the
    /// competing queue into it; nothing without such a queue.
    pub(super) fn drain_competing_into(&mut self, stream: StreamId) {
        let queued: Vec<Arc<Outgoing>> = match self.hub.preset.as_mut() {
            Some(p) => p.queue.drain(..).collect(),
            None => return,
        };
        for out in queued {
            self.hub.write_to_stream(stream, out);
        }
    }

    /// A response whose stream has no connection: written on the open
    /// standalone GET under [`DetachedResponse::OpenGet`], kept for whatever
    /// GET comes next under [`DetachedResponse::NextGet`] (and `OpenGet`
    /// with no GET open), else given back.
    pub(super) fn keep_for_next_get(&mut self, out: Arc<Outgoing>) -> Option<Arc<Outgoing>> {
        match self.hub.policy.detached_response {
            DetachedResponse::BufferForResume => return Some(out),
            DetachedResponse::OpenGet => {
                if let Some(sid) = self.hub.first_attached_standalone() {
                    self.hub.write_to_stream(sid, out);
                    return None;
                }
            }
            DetachedResponse::NextGet => {}
        }
        if let Some(p) = self.hub.preset.as_mut() {
            p.next_get.push_back(out);
        }
        None
    }

    /// A POST's event stream `sid` under [`RequestWriter::Lazy`], its head
    /// out: its priming event is minted and kept, the stream left without a
    /// connection (what is written for it is stored, not sent) until
    /// [`SchedulingPoint::StartWriter`]. Whether the preset took it.
    pub(super) fn open_unstarted(&mut self, http: HttpId, sid: StreamId) -> bool {
        if self.hub.policy.request_writer != RequestWriter::Lazy {
            return false;
        }
        let priming = self.hub.priming_event(sid, false);
        if let Some(s) = self.hub.streams.get_mut(&sid) {
            s.attached = None;
        }
        if let Some(p) = self.hub.preset.as_mut() {
            p.unstarted.insert(http, (sid, priming));
        }
        true
    }

    /// The POST whose stream `sid` waits for its writer, which a close for
    /// polling discards ([`RequestWriter::Lazy`]): its exchange.
    pub(super) fn discard_writer(&mut self, sid: StreamId) -> Option<HttpId> {
        let p = self.hub.preset.as_mut()?;
        let http = p.unstarted.iter().find(|(_, (s, _))| *s == sid)?.0;
        let http = *http;
        p.unstarted.remove(&http);
        Some(http)
    }

    /// The writer of POST `http` starts: the priming event, then what was
    /// stored for the stream in the order of its ids; the stream is the
    /// exchange's from then on, or ends with it if its requests are answered.
    fn handle_start_writer(&mut self, http: HttpId, now: Instant) -> bool {
        let Some((sid, priming)) = self
            .hub
            .preset
            .as_mut()
            .and_then(|p| p.unstarted.remove(&http))
        else {
            return false;
        };
        if self.hub.exchanges.get(&http).is_none_or(|e| e.ended) {
            return true;
        }
        if let Some(priming) = priming {
            self.hub.tx(http, priming);
        }
        let Some(s) = self.hub.streams.get_mut(&sid) else {
            return true;
        };
        s.attached = Some(http);
        self.hub.replay_onto(http, sid, 0, false);
        if self.hub.streams.get(&sid).is_some_and(|s| s.finished) {
            self.hub.end(http, EndReason::Complete);
            self.hub.forget_exchange(http);
            self.hub.streams.remove(&sid);
        }
        self.hub.update_timers(now);
        true
    }

    /// The first message for a POST whose framing is not decided yet:
    /// under [`JsonAnswer::FirstMessage`] it becomes the JSON body, the
    /// exchange ends and the requests it carried are cancelled (the
    /// handler is gone; its response will be dropped). Else given back.
    pub(super) fn answer_with_first(
        &mut self,
        sid: StreamId,
        http: HttpId,
        out: Arc<Outgoing>,
    ) -> Option<Arc<Outgoing>> {
        // A listen's stream is never a JSON answer: its acknowledgement
        // opens it (M2), whatever the framing of calls.
        if self.hub.policy.json_answer != JsonAnswer::FirstMessage
            || self.hub.config.response_mode != ResponseMode::JsonWhenAlone
            || self.hub.listen.is_some()
        {
            return Some(out);
        }
        let Some(s) = self.hub.streams.get_mut(&sid) else {
            return Some(out);
        };
        let Origin::Post { pending } = &s.origin else {
            return Some(out);
        };
        let carried = pending.clone();
        s.format = Format::Json;
        self.hub.head(http, 200, Content::Json);
        self.hub.tx(http, TransmitKind::Json(out.message.clone()));
        for id in carried {
            self.hub.drop_call(&id);
        }
        None
    }

    /// A plain standalone GET under [`GetRegistration::AfterHead`]: its
    /// `200` and priming go out now, its stream `sid` is wired at
    /// [`SchedulingPoint::RegisterGet`]. Whether the preset took the GET.
    pub(super) fn open_unwired(&mut self, http: HttpId, sid: StreamId) -> bool {
        if self.hub.policy.get_registration != GetRegistration::AfterHead {
            return false;
        }
        self.hub.add_exchange(http, Role::Get { stream: sid });
        if let Some(s) = self.hub.streams.get_mut(&sid) {
            s.format = Format::Sse;
        }
        self.hub.head(http, 200, Content::Sse);
        self.hub.prime(sid, http, true);
        if let Some(p) = self.hub.preset.as_mut() {
            p.unwired.insert(http, sid);
        }
        true
    }

    /// A GET resuming the standalone stream under
    /// [`StandaloneResume::LostKey`]: a `200` and an open event stream that
    /// carries none of the session's streams (nothing replayed, nothing
    /// written later). Whether the preset took the GET.
    pub(super) fn resume_under_lost_key(&mut self, http: HttpId) -> bool {
        if self.hub.policy.standalone_resume != StandaloneResume::LostKey {
            return false;
        }
        self.hub.add_exchange(http, Role::Streamless { sse: true });
        self.hub.head(http, 200, Content::Sse);
        true
    }

    /// An unrelated message finds no attached stream: while a GET's `200`
    /// is out but its stream not wired, it is dropped (the SDKs of
    /// [`GetRegistration::AfterHead`] see no GET and buffer nothing); else
    /// given back, to be held.
    pub(super) fn drop_if_unwired(&mut self, out: Arc<Outgoing>) -> Option<Arc<Outgoing>> {
        if self
            .hub
            .preset
            .as_ref()
            .is_none_or(|p| p.unwired.is_empty())
        {
            return Some(out);
        }
        self.hub.events.push_back(ServerEvent::Dropped {
            key: out.key,
            reason: DropReason::NoStream,
        });
        None
    }

    /// Request `id`, which the client cancelled: under
    /// [`CancelledCall::LeftOpen`] it is taken out of flight and its late
    /// answer dropped, as under FIXED, but nothing settles it on its
    /// stream, which stays open for as long as the client reads it (the
    /// TypeScript SDK's `Protocol` sends nothing for an aborted handler).
    /// Whether the preset took it; under FIXED the hub settles it.
    pub(super) fn leave_cancelled_open(&mut self, id: &crate::ids::RequestId) -> bool {
        if self.hub.policy.cancelled_call != CancelledCall::LeftOpen {
            return false;
        }
        self.hub.forget_call(id);
        true
    }

    /// An unrelated message finds no attached stream once the handshake is
    /// over: under [`StreamlessUnrelated::Drop`] it is dropped at once
    /// ([`DropReason::Unheld`]), and a request fails to the application
    /// with -32603 "Stream unavailable" (java-sdk #1114); else given back,
    /// to be held.
    pub(super) fn drop_if_streamless(&mut self, out: Arc<Outgoing>) -> Option<Arc<Outgoing>> {
        if self.hub.policy.streamless_unrelated != StreamlessUnrelated::Drop
            || self.hub.phase != Phase::Ready
        {
            return Some(out);
        }
        if let crate::jsonrpc::Message::Request { id, .. } = &out.message {
            if self.hub.outbound.answered(id) {
                let error = crate::jsonrpc::ErrorObject::new(
                    crate::jsonrpc::INTERNAL_ERROR,
                    "Stream unavailable",
                );
                self.hub.events.push_back(ServerEvent::Response {
                    id: id.clone(),
                    result: Err(error),
                });
            }
        }
        self.hub.events.push_back(ServerEvent::Dropped {
            key: out.key,
            reason: DropReason::Unheld,
        });
        None
    }

    /// The GET `http`'s stream is wired to the session: it takes what is
    /// held, and every unrelated message from now on.
    fn handle_register_get(&mut self, http: HttpId, now: Instant) -> bool {
        let Some(sid) = self
            .hub
            .preset
            .as_mut()
            .and_then(|p| p.unwired.remove(&http))
        else {
            return false;
        };
        if self.hub.exchanges.get(&http).is_some_and(|e| !e.ended) {
            if let Some(s) = self.hub.streams.get_mut(&sid) {
                s.attached = Some(http);
            }
            self.hub.flush_held_into(sid);
        }
        self.hub.update_timers(now);
        true
    }

    /// The listener of exchange `http` wakes and takes the head of the
    /// session queue, if any. Returns whether anything happened.
    fn handle_listener_wake(&mut self, http: HttpId, _now: Instant) -> bool {
        let Some(ex) = self.hub.exchanges.get(&http).copied() else {
            return false;
        };
        if !self
            .hub
            .preset
            .as_ref()
            .is_some_and(|p| p.has_listener(http))
        {
            return false;
        }
        let step = self.hub.preset.as_ref().and_then(|p| p.handlers.get(&http));
        let done = match (ex.role, step) {
            (Role::Post { stream }, _) => self.hub.streams.get(&stream).is_none_or(|s| s.finished),
            (Role::Get { .. }, _) => ex.ended,
            (Role::Streamless { .. }, Some(step)) => *step == HandlerStep::Finished,
            (Role::Streamless { .. }, None) => true,
        };
        let step = step.copied();
        let Some(out) = self.hub.preset.as_mut().and_then(|p| p.queue.pop_front()) else {
            // Nothing to take: a finished exchange's listener now exits.
            if done {
                self.retire_listener(http);
                return true;
            }
            return false;
        };
        if done {
            // Dequeued, then dropped: `done` was already closed (A5), or the
            // write fails after the handler returned (A4). Lost either way.
            return true;
        }
        match (ex.role, step) {
            (Role::Post { stream } | Role::Get { stream }, _) => {
                self.hub.write_to_stream(stream, out)
            }
            (Role::Streamless { .. }, Some(step)) => {
                if step == HandlerStep::Running {
                    // The listener commits SSE before the handler writes 202 (race A, 8a).
                    self.hub.head(http, 200, Content::Sse);
                }
                // 8b: after the 202 head, the bytes go into the 202's body.
                self.hub.tx(
                    http,
                    TransmitKind::Event {
                        id: None,
                        retry_ms: None,
                        message: Some(out),
                    },
                );
            }
            (Role::Streamless { .. }, None) => {}
        }
        true
    }

    /// The handler of notification POST `http` takes its next step: write the
    /// 202 head, then return (net/http ends the response). Returns whether
    /// anything happened.
    fn handle_handler_step(&mut self, http: HttpId, _now: Instant) -> bool {
        if !self.hub.exchanges.contains_key(&http) {
            return false;
        }
        let Some(step) = self
            .hub
            .preset
            .as_ref()
            .and_then(|p| p.handlers.get(&http).copied())
        else {
            return false;
        };
        let next = match step {
            HandlerStep::Running => {
                self.hub.head(http, 202, Content::None);
                HandlerStep::HeadWritten
            }
            HandlerStep::HeadWritten => {
                self.hub.end(http, EndReason::Complete);
                HandlerStep::Finished
            }
            HandlerStep::Finished => return false,
        };
        if let Some(p) = self.hub.preset.as_mut() {
            p.handlers.insert(http, next);
        }
        true
    }

    fn retire_listener(&mut self, http: HttpId) {
        if let Some(p) = self.hub.preset.as_mut() {
            p.listeners.remove(&http);
        }
        if self.hub.exchanges.get(&http).is_some_and(|e| e.ended) {
            self.hub.forget_exchange(http);
        }
    }

    /// The rmcp shapes: one common stream for every standalone GET.
    pub(super) fn get_common(
        &mut self,
        http: HttpId,
        cursor: Option<EventId>,
        text: Option<&str>,
    ) -> Result<(), RequestError> {
        let target = cursor.map(|c| c.stream).unwrap_or(COMMON);
        if target != COMMON {
            let unknown = || RequestError::UnknownEventId(text.unwrap_or("").to_owned());
            let cursor = cursor.ok_or_else(unknown)?;
            let Some(stream) = self.hub.streams.get(&target) else {
                // rmcp forgets a request-wise stream once its response is routed.
                return self.hub.resume_finished(http, cursor);
            };
            if stream.finished {
                return self.hub.resume_finished(http, cursor);
            }
            if let Some(old) = stream.attached {
                self.hub.end(old, EndReason::TakenOver);
                self.hub.forget_exchange(old);
                self.hub.detach(target, old);
            }
            self.hub.attach_get(http, target, Some(cursor));
            return Ok(());
        }
        // rmcp: a plain GET is `Resume { last: None, index: 0 }`: sync from index 0.
        let cursor = cursor.unwrap_or(EventId {
            stream: COMMON,
            seq: 1,
        });
        let live = self.hub.streams.get(&COMMON).and_then(|s| s.attached);
        if let Some(old) = live {
            match self.hub.policy.standalone_attach {
                StandaloneAttach::ShadowCommon => {
                    self.open_shadow(http);
                    return Ok(());
                }
                _ => {
                    self.hub.end(old, EndReason::Replaced);
                    self.hub.forget_exchange(old);
                    self.hub.detach(COMMON, old);
                }
            }
        }
        let stream = self
            .hub
            .streams
            .get(&COMMON)
            .ok_or(RequestError::ChannelClosed)?;
        if cursor.seq > stream.next_seq {
            return Err(RequestError::UnknownEventId(text.unwrap_or("").to_owned()));
        }
        self.hub.attach_get_from(http, COMMON, Some(cursor), true);
        Ok(())
    }

    pub(super) fn open_shadow(&mut self, http: HttpId) {
        self.hub.exchanges.insert(
            http,
            Exchange {
                role: Role::Streamless { sse: true },
                head_sent: false,
                ended: false,
            },
        );
        self.hub.head(http, 200, Content::Sse);
        if self.hub.codec.priming(true, self.hub.version.has_priming()) == Priming::LiteralZero {
            self.hub.tx(
                http,
                TransmitKind::Event {
                    id: Some(EventIdCodec::literal_zero().to_owned()),
                    retry_ms: Some(self.hub.config.retry_ms),
                    message: None,
                },
            );
        }
    }
}

impl Scheduled for ServerSession {
    fn scheduling_points(&self) -> Vec<(HttpId, SchedulingPoint)> {
        let mut points: Vec<_> = match self.preset.as_deref() {
            Some(p) => p.points(self.exchanges.keys()).collect(),
            None => Vec::new(),
        };
        if let Some(http) = self.listen_step_pending() {
            points.push((http, SchedulingPoint::ListenStep));
        }
        points
    }

    fn handle_scheduling_point(
        &mut self,
        http: HttpId,
        point: SchedulingPoint,
        now: Instant,
    ) -> bool {
        match point {
            SchedulingPoint::ListenerWake => self.departures().handle_listener_wake(http, now),
            SchedulingPoint::HandlerStep => self.departures().handle_handler_step(http, now),
            SchedulingPoint::ListenStep => self.handle_listen_step(http, now),
            SchedulingPoint::RegisterGet => self.departures().handle_register_get(http, now),
            SchedulingPoint::StartWriter => self.departures().handle_start_writer(http, now),
            SchedulingPoint::ForegroundStep => false,
        }
    }
}
