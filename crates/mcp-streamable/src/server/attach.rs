//! GET handling: new standalone streams, resumption by `Last-Event-ID`, and
//! the rmcp shapes (one common stream, replaced or shadowed).

use super::event_ids::{EventIdCodec, Priming, COMMON};
use super::session::{Exchange, Listener, Role, ServerSession};
use super::stream::{Format, Origin};
use super::{Content, EndReason, Outgoing, TransmitKind};
use crate::error::RequestError;
use crate::ids::{EventId, HttpId, StreamId};
use crate::policy::{FinishedStreamResume, ReplayStart, StandaloneAttach};
use std::sync::Arc;

impl ServerSession {
    pub(super) fn get_coexist(
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

    pub(super) fn resume_finished(
        &mut self,
        http: HttpId,
        cursor: EventId,
    ) -> Result<(), RequestError> {
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
            let Some(stream) = self.streams.get(&target) else {
                // rmcp forgets a request-wise stream once its response is routed.
                return self.resume_finished(http, cursor);
            };
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

    pub(super) fn open_shadow(&mut self, http: HttpId) {
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

    pub(super) fn attach_get(&mut self, http: HttpId, sid: StreamId, cursor: Option<EventId>) {
        self.attach_get_from(http, sid, cursor, false)
    }

    /// Attaches a GET to stream `sid`, primes it, replays after `cursor`,
    /// then flushes what waits for a standalone stream.
    pub(super) fn attach_get_from(
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
}
