//! GET handling: new standalone streams and resumption by `Last-Event-ID`.
//! (The shapes of presets with one common stream are in `preset`.)

use super::{Role, ServerSession};
use crate::error::RequestError;
use crate::ids::{EventId, HttpId, StreamId};
use crate::policy::{FinishedStreamResume, ReplayStart};
use crate::server::stream::{Format, Origin};
use crate::server::{Content, EndReason, TransmitKind};

impl ServerSession {
    pub(super) fn get_coexist(
        &mut self,
        http: HttpId,
        cursor: Option<EventId>,
        text: Option<&str>,
    ) -> Result<(), RequestError> {
        let Some(cursor) = cursor else {
            let sid = self.new_stream(Origin::Standalone);
            if !self.open_unwired(http, sid) {
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
        if standalone && self.resume_under_lost_key(http) {
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

    pub(super) fn attach_get(&mut self, http: HttpId, sid: StreamId, cursor: Option<EventId>) {
        self.attach_get_from(http, sid, cursor, false)
    }

    /// Writes on `http` the messages stream `sid` keeps after `after` (from
    /// it when `inclusive`), each with its event id, in the order of their ids.
    pub(super) fn replay_onto(&mut self, http: HttpId, sid: StreamId, after: u64, inclusive: bool) {
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
        if let Some(cursor) = cursor {
            let inclusive = sync || self.policy.replay_start == ReplayStart::AtNamed;
            self.replay_onto(http, sid, cursor.seq, inclusive);
        }
        self.prime(sid, http, true);
        let standalone = self.streams.get(&sid).is_some_and(|s| s.is_standalone());
        if standalone && !self.codec.single_common_stream() {
            self.flush_held_into(sid);
        }
        for out in self.take_for_next_get() {
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
