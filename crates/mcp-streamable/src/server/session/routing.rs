//! Sending: causal routing of what the application emits, held messages,
//! stream writes, and the transmit and timer helpers.

use super::{Phase, Role, ServerSession, SessionTimer, STREAM_ID_SPAN};
use crate::error::UsageError;
use crate::ids::{EventId, HttpId, MsgKey, RequestId, StreamId};
use crate::jsonrpc::{Message, RawJson};
use crate::policy::PreInitNotifications;
use crate::server::event_ids::{EventIdCodec, Priming, COMMON};
use crate::server::stream::{Format, Origin, ReplayBound, Stream};
use crate::server::{
    Cause, Content, DropReason, EndReason, Outgoing, ResponseHead, ServerEvent, Transmit,
    TransmitKind,
};
use crate::time::{Instant, Timers};
use std::sync::Arc;
use std::time::Duration;

impl ServerSession {
    pub(super) fn send(
        &mut self,
        message: Message,
        cause: Cause,
        now: Instant,
    ) -> Result<MsgKey, UsageError> {
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
                if request && self.related_requests_on_get() {
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

    pub(super) fn deliver_unrelated(&mut self, out: Arc<Outgoing>, now: Instant) {
        let Some(out) = self.route_competing(out) else {
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
                    .drop_if_unwired(out)
                    .and_then(|out| self.drop_if_streamless(out));
                if let Some(out) = out {
                    self.hold(out, now);
                }
            }
        }
    }

    pub(super) fn first_attached_standalone(&self) -> Option<StreamId> {
        self.streams_oldest_first()
            .find(|s| s.is_standalone() && s.attached.is_some())
            .map(|s| s.id)
    }

    /// The streams, oldest first. Ids count up through the session's range
    /// and start over at its end ([`Self::new_stream`]), so once the range
    /// has wrapped, the ids at or past the counter are the older ones; id
    /// order is age order only until then. The common stream comes first.
    pub(super) fn streams_oldest_first(&self) -> impl Iterator<Item = &Stream> {
        let next = StreamId(self.next_stream);
        let after = StreamId(COMMON.0 + 1);
        let common = self.streams.get(&COMMON);
        let older = self.streams.range(next..).map(|(_, s)| s);
        let newer = self.streams.range(after..next.max(after)).map(|(_, s)| s);
        common.into_iter().chain(older).chain(newer)
    }

    pub(super) fn hold(&mut self, out: Arc<Outgoing>, now: Instant) {
        let deadline = now + Duration::from_millis(self.config.held_ttl_ms);
        self.held_bytes += out.message.approx_len();
        self.held.push_back((deadline, out));
        while self.held.len() > self.config.held_max || self.held_bytes > self.config.held_bytes_max
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
        let Some((_, old)) = self.held.pop_front() else {
            return false;
        };
        self.held_bytes -= old.message.approx_len();
        self.events.push_back(ServerEvent::Dropped {
            key: old.key,
            reason,
        });
        true
    }

    pub(super) fn take_held(&mut self) -> Vec<Arc<Outgoing>> {
        self.held_bytes = 0;
        self.held.drain(..).map(|(_, o)| o).collect()
    }

    pub(super) fn flush_held(&mut self, now: Instant) {
        if self.phase != Phase::Ready {
            return;
        }
        for out in self.take_held() {
            self.deliver_unrelated(out, now);
        }
    }

    pub(super) fn flush_held_into(&mut self, sid: StreamId) {
        if self.phase != Phase::Ready {
            return;
        }
        for out in self.take_held() {
            self.write_to_stream(sid, out);
        }
    }

    pub(super) fn expire_held(&mut self, now: Instant) {
        while let Some((deadline, _)) = self.held.front() {
            if *deadline > now {
                break;
            }
            // Held for the handshake (R49) or for a stream.
            let reason = if self.phase == Phase::Ready {
                DropReason::NoStream
            } else {
                DropReason::BeforeInitialized
            };
            self.drop_oldest_held(reason);
        }
    }

    /// How much one stream's replay buffer may keep.
    pub(super) fn replay_bound(&self) -> ReplayBound {
        ReplayBound {
            events_max: self.config.events_max,
            bytes_max: self.config.events_bytes_max,
        }
    }

    /// Keeps the session's retained bytes within `session_bytes_max`: the
    /// oldest events of detached streams go first (their clients may never
    /// come back), then of attached ones (sent already; only replay is
    /// lost), then held messages (dropped visibly).
    pub(super) fn enforce_session_budget(&mut self) {
        let max = self.config.session_bytes_max;
        let mut retained = self.retained_bytes();
        if retained <= max {
            return;
        }
        for attached in [false, true] {
            let ids: Vec<StreamId> = self
                .streams_oldest_first()
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
            let before = self.held_bytes;
            self.drop_oldest_held(DropReason::HeldFull);
            retained -= before - self.held_bytes;
        }
    }

    /// Writes a non-final message on a stream: buffered with an id, and sent if
    /// a connection is attached. Commits SSE if nothing was committed.
    pub(super) fn write_to_stream(&mut self, sid: StreamId, out: Arc<Outgoing>) {
        let Some(s) = self.streams.get(&sid) else {
            return;
        };
        let attached = s.attached;
        let out = match (s.format, attached) {
            (Format::Undecided, Some(http)) => {
                let Some(out) = self.answer_with_first(sid, http, out) else {
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
            let numbered = !unnumbered && !self.version.is_modern();
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

    pub(super) fn write_response(&mut self, sid: StreamId, id: &RequestId, out: Arc<Outgoing>) {
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
                let status = if self.version.is_modern() {
                    crate::server::modern_result::status(&out.message)
                } else {
                    200
                };
                self.head(http, status, Content::Json);
                self.tx(http, TransmitKind::Json(out.message.clone()));
            }
            (_, None) => {
                if let Some(out) = self.keep_for_next_get(out) {
                    self.write_to_stream(sid, out);
                }
            }
            _ => self.write_to_stream(sid, out),
        }
        self.settle_request(sid, id);
    }

    /// Request `id` is answered or cancelled: its stream may be finished.
    pub(super) fn settle_request(&mut self, sid: StreamId, id: &RequestId) {
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
            && !self.version.is_modern()
            && !self.phase.initialize_stream(sid);
        let attached = s.attached.take();
        if let Some(http) = attached {
            self.end(http, EndReason::Complete);
            if !self.has_listener(http) {
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

    pub(super) fn detach(&mut self, sid: StreamId, http: HttpId) {
        if let Some(s) = self.streams.get_mut(&sid) {
            if s.attached == Some(http) {
                s.attached = None;
            }
        }
        self.trim_streams();
    }

    /// Forgets the oldest finished or detached standalone streams past `streams_max`.
    pub(super) fn trim_streams(&mut self) {
        let idle = |s: &&Stream| {
            s.id != COMMON && s.attached.is_none() && (s.finished || s.is_standalone())
        };
        // Counted first: most calls find nothing to trim, and allocate nothing.
        let count = self.streams.values().filter(idle).count();
        if count <= self.config.streams_max {
            return;
        }
        let past: Vec<StreamId> = self
            .streams_oldest_first()
            .filter(idle)
            .map(|s| s.id)
            .take(count - self.config.streams_max)
            .collect();
        for sid in &past {
            self.streams.remove(sid);
        }
    }

    pub(super) fn commit_sse(&mut self, sid: StreamId, http: HttpId) {
        if let Some(s) = self.streams.get_mut(&sid) {
            s.format = Format::Sse;
        }
        self.head(http, 200, Content::Sse);
    }

    pub(super) fn prime(&mut self, sid: StreamId, http: HttpId, standalone: bool) {
        if let Some(priming) = self.priming_event(sid, standalone) {
            self.tx(http, priming);
        }
    }

    /// Stream `sid`'s priming event (its id taken from the stream when the
    /// scheme numbers it), or none where the version or scheme has none.
    pub(super) fn priming_event(
        &mut self,
        sid: StreamId,
        standalone: bool,
    ) -> Option<TransmitKind> {
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

    pub(super) fn new_stream(&mut self, origin: Origin) -> StreamId {
        // Numbered again after the range wraps, an id names a stream long
        // forgotten, unless that stream still lives (a GET kept open across
        // a million requests): those ids are skipped, never overwritten. The
        // live streams are far fewer than the range, so this ends.
        let mut sid = self.next_stream_id();
        for _ in 0..STREAM_ID_SPAN {
            if !self.streams.contains_key(&sid) {
                break;
            }
            sid = self.next_stream_id();
        }
        self.streams.insert(sid, Stream::new(sid, origin));
        sid
    }

    /// The next id of the session's range: base + 1 … base + STREAM_ID_SPAN
    /// − 2 (the last id is the fleet's: the instance's answers log), then
    /// base + 1 again.
    fn next_stream_id(&mut self) -> StreamId {
        let sid = StreamId(self.next_stream);
        let base = self.config.stream_id_base;
        self.next_stream = if self.next_stream.wrapping_sub(base) >= STREAM_ID_SPAN - 2 {
            base.wrapping_add(1)
        } else {
            self.next_stream + 1
        };
        sid
    }

    pub(super) fn outgoing(&mut self, cause: Cause, message: Message) -> Arc<Outgoing> {
        let key = self.mint_key();
        Arc::new(Outgoing {
            session: self.id.clone(),
            key,
            cause,
            message,
        })
    }

    pub(super) fn mint_key(&mut self) -> MsgKey {
        let key = MsgKey(self.next_key);
        self.next_key += 1;
        key
    }

    /// The core decides the version; the application's result carries it.
    pub(super) fn stamp_version(&self, result: RawJson) -> RawJson {
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

    pub(super) fn end_session(&mut self, _now: Instant) {
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
        self.held_bytes = 0;
        self.clear_preset();
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
        // The modern era has no session ids on the wire.
        if !self.version.is_modern() {
            head.session_id = Some(self.id.clone());
        }
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

    /// The deadline of the earliest request to the client still awaited.
    pub(super) fn sync_outbound_timer(&mut self) {
        match self.outbound.next_deadline() {
            Some(deadline) if self.phase != Phase::Ended => {
                self.timers.set(SessionTimer::Outbound, deadline)
            }
            _ => self.timers.stop(SessionTimer::Outbound),
        }
    }

    pub(super) fn update_timers(&mut self, now: Instant) {
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
        match self.held.front() {
            Some((deadline, _)) => self.timers.set(SessionTimer::HeldExpiry, *deadline),
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::SessionId;
    use crate::policy::ServerPolicy;
    use crate::server::SessionConfig;
    use crate::version::ProtocolVersion;

    fn session(base: u32) -> ServerSession {
        let config = SessionConfig {
            stream_id_base: base,
            ..SessionConfig::default()
        };
        let id = SessionId::from_bits(1);
        ServerSession::new(id, 1, ProtocolVersion::LATEST, config, ServerPolicy::FIXED)
    }

    #[test]
    fn streams_are_numbered_in_the_session_range_and_start_over_at_its_end() {
        for base in [0, STREAM_ID_SPAN, u32::MAX - (STREAM_ID_SPAN - 1)] {
            let mut s = session(base);
            // `base + (SPAN − k)`, not `base + SPAN − k`: the last range
            // ends at u32::MAX, and the sum must not overflow on the way
            // (a debug build, as cargo-mutants runs, panics).
            assert_eq!(s.new_stream(Origin::Standalone), StreamId(base + 1));
            assert_eq!(s.new_stream(Origin::Standalone), StreamId(base + 2));
            s.next_stream = base + (STREAM_ID_SPAN - 3);
            assert_eq!(
                s.new_stream(Origin::Standalone),
                StreamId(base + (STREAM_ID_SPAN - 3))
            );
            assert_eq!(
                s.new_stream(Origin::Standalone),
                StreamId(base + (STREAM_ID_SPAN - 2)),
                "the range's last (its very last id is the fleet's)"
            );
            // base + 1 and base + 2 still live: skipped, not overwritten.
            assert_eq!(
                s.new_stream(Origin::Standalone),
                StreamId(base + 3),
                "then its first free id again"
            );
            assert_eq!(s.streams.len(), 5, "no live stream was replaced");
            s.streams.remove(&StreamId(base + 1));
            s.next_stream = base + (STREAM_ID_SPAN - 2);
            assert_eq!(s.new_stream(Origin::Standalone), StreamId(base + 1));
        }
    }

    #[test]
    fn after_the_range_wraps_the_oldest_stream_is_the_one_numbered_before_the_wrap() {
        for base in [0, STREAM_ID_SPAN] {
            let mut s = session(base);
            s.config.streams_max = 1;
            s.next_stream = base + (STREAM_ID_SPAN - 2);
            let old = s.new_stream(Origin::Standalone);
            let new = s.new_stream(Origin::Standalone);
            assert_eq!(
                (old, new),
                (StreamId(base + (STREAM_ID_SPAN - 2)), StreamId(base + 1))
            );
            let order: Vec<StreamId> = s
                .streams_oldest_first()
                .map(|st| st.id)
                .filter(|id| *id != COMMON)
                .collect();
            assert_eq!(order, [old, new]);
            // Both attached: unrelated messages go to the older one.
            for (sid, http) in [(old, 7), (new, 8)] {
                s.streams.get_mut(&sid).unwrap().attached = Some(HttpId(http));
            }
            assert_eq!(s.first_attached_standalone(), Some(old));
            // Both idle past `streams_max` 1: the older is forgotten.
            for sid in [old, new] {
                s.streams.get_mut(&sid).unwrap().attached = None;
            }
            s.trim_streams();
            assert!(s.streams.contains_key(&new) && !s.streams.contains_key(&old));
        }
    }
}
