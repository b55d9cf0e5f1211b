//! [`StreamLogs`]: the logs an instance writes, one per SSE stream it
//! numbers, so any instance can replay or follow the stream.
//!
//! After every change to a session the instance calls [`StreamLogs::sync`]:
//! each event its streams numbered since the last call is appended, in
//! number order, with nothing else writing to those logs, so the store's
//! numbers are the stream's own and a `Last-Event-ID` is a cursor in the
//! log as it is in the stream. A priming event (an id, no message) is
//! appended as [`Record::Blank`] to keep the numbers equal (a POST stream's
//! first, as [`Record::Opened`] with the ids it answers, for whoever must
//! complete it if this instance dies); a POST stream whose response is
//! written gets [`Record::End`], so a follower on another instance ends the
//! client's connection as the writer would. A standalone stream whose GET is
//! gone gets [`Record::Released`] under
//! [`ResumedGet::ContinueWhereResumed`]: nothing is written to it again, and
//! its resumption, wherever it lands, goes on as a new GET of the session.
//!
//! Events are read from the stream's replay buffer, which keeps at least
//! `events_max` of them; sync runs after each input, and one input numbers
//! far fewer.

use super::publish::Publisher;
use super::record::encode_message;
use super::{LogKey, Record, ResumedGet, Seq, StoreOp, StoreReply};
use crate::ids::{SessionId, StreamId};
use crate::server::event_ids::COMMON;
use crate::server::stream::{Format, Origin, Stream};
use crate::server::{Outgoing, ServerSession};
use crate::shared::Shared;
use std::collections::{BTreeMap, VecDeque};

/// What this instance has appended of one stream.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Written {
    /// The last number appended.
    appended: Seq,
    /// A final record ([`Record::End`], [`Record::Released`]) appended:
    /// nothing more is.
    ended: bool,
    publisher: Publisher,
    /// The stream is gone from its session: forget the log once every
    /// append has its number (and went out as a publication).
    gone: bool,
}

/// The logs of the streams this instance numbers (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct StreamLogs {
    logs: BTreeMap<LogKey, Written>,
    ops: VecDeque<(LogKey, StoreOp)>,
}

impl StreamLogs {
    /// Logs written (or still waiting for numbers).
    pub fn len(&self) -> usize {
        self.logs.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.logs.is_empty()
    }

    /// The last number appended to `log`.
    pub fn appended(&self, log: &LogKey) -> Option<Seq> {
        self.logs.get(log).map(|w| w.appended)
    }

    /// Appends what `session`'s SSE streams accepted by `owned` numbered
    /// since the last call, and the end of those that are over (a release,
    /// under `resumed`, for a standalone stream whose GET is gone); forgets
    /// the logs of streams it no longer keeps.
    pub fn sync(
        &mut self,
        session: &ServerSession,
        owned: impl Fn(StreamId) -> bool,
        resumed: ResumedGet,
    ) {
        let sid = session.id();
        for stream in session.streams() {
            if !owned(stream.id) || stream.format != Format::Sse {
                continue;
            }
            let log = LogKey {
                session: sid.clone(),
                stream: stream.id,
            };
            let w = self.written(&log);
            if w.ended {
                continue;
            }
            for seq in w.appended + 1..stream.next_seq {
                w.publisher.append(record_of(stream, seq));
            }
            w.appended = w.appended.max(stream.next_seq - 1);
            if let Some(last) = final_record(stream, resumed) {
                w.ended = true;
                w.publisher.append(last);
            }
        }
        let kept: Vec<StreamId> = session.streams().map(|s| s.id).collect();
        for (log, w) in self.logs.range_mut(session_range(sid)) {
            w.gone = !kept.contains(&log.stream);
        }
        self.drain(sid);
    }

    /// Event `seq` of `log`'s stream went out on a connection: appended if
    /// not yet. A stream answered on its own connection is forgotten by its
    /// session at once, before [`Self::sync`] could see it; this is how its
    /// last events still reach the log (a client may be resuming it on
    /// another instance, its first connection dead without this one
    /// knowing).
    /// `stream` is the event's stream if its session still keeps it.
    pub fn record_event(
        &mut self,
        log: &LogKey,
        seq: Seq,
        message: Option<&Outgoing>,
        stream: Option<&Stream>,
    ) {
        let w = self.written(log);
        if seq <= w.appended || w.ended {
            return;
        }
        // Numbers never seen (none: every input is synced or tapped) stay
        // numbered, as blanks.
        for _ in w.appended + 1..seq {
            w.publisher.append(Record::Blank);
        }
        w.publisher.append(match (message, stream) {
            (Some(out), _) => Record::Message(encode_message(out.key, &out.message)),
            (None, Some(stream)) => blank(stream, seq),
            (None, None) => Record::Blank,
        });
        w.appended = seq;
        self.drain(&log.session);
    }

    /// `log`'s POST stream ended, answered, on its connection.
    pub fn record_end(&mut self, log: &LogKey) {
        let w = self.written(log);
        if !w.ended {
            w.ended = true;
            w.publisher.append(Record::End);
        }
        self.drain(&log.session);
    }

    fn written(&mut self, log: &LogKey) -> &mut Written {
        self.logs.entry(log.clone()).or_insert_with(|| Written {
            appended: 0,
            ended: false,
            publisher: Publisher::new(log.clone()),
            gone: false,
        })
    }

    /// `session` is gone here: forget its logs (once their appends have
    /// their numbers).
    pub fn forget(&mut self, session: &SessionId) {
        for (_, w) in self.logs.range_mut(session_range(session)) {
            w.gone = true;
        }
        self.drain(session);
    }

    /// The store's reply to an append to `log`.
    pub fn handle_reply(&mut self, log: &LogKey, reply: StoreReply) {
        if let Some(w) = self.logs.get_mut(log) {
            w.publisher.handle_reply(reply);
        }
        let session = log.session.clone();
        self.drain(&session);
    }

    /// The next op for the command connection, with the log it writes.
    pub fn poll_op(&mut self) -> Option<(LogKey, StoreOp)> {
        self.ops.pop_front()
    }

    /// Moves the publishers' ops out; drops the logs that are done.
    fn drain(&mut self, session: &SessionId) {
        let mut done = Vec::new();
        for (log, w) in self.logs.range_mut(session_range(session)) {
            while let Some(op) = w.publisher.poll_op() {
                self.ops.push_back((log.clone(), op));
            }
            if w.gone && w.publisher.awaiting_len() == 0 {
                done.push(log.clone());
            }
        }
        for log in done {
            self.logs.remove(&log);
        }
    }
}

/// Every log key of `session`.
fn session_range(session: &SessionId) -> std::ops::RangeInclusive<LogKey> {
    LogKey {
        session: session.clone(),
        stream: StreamId(0),
    }..=LogKey {
        session: session.clone(),
        stream: StreamId(u32::MAX),
    }
}

/// What ends `stream`'s log now, if anything: a POST stream answered, its
/// end; a standalone stream with no GET (it had one when it was made),
/// its release.
fn final_record(stream: &Stream, resumed: ResumedGet) -> Option<Record> {
    if !stream.is_standalone() {
        return stream.finished.then_some(Record::End);
    }
    let released = resumed == ResumedGet::ContinueWhereResumed
        && stream.id != COMMON
        && stream.attached.is_none();
    released.then_some(Record::Released)
}

/// Event `seq` of `stream`: its message, or a blank (a priming event, which
/// the replay buffer does not keep).
fn record_of(stream: &Stream, seq: Seq) -> Record {
    let found = stream
        .buffer
        .binary_search_by_key(&seq, |b| b.seq)
        .ok()
        .and_then(|i| stream.buffer[i].message.as_ref());
    match found {
        Some(out) => Record::Message(encode_message(out.key, &out.message)),
        None => blank(stream, seq),
    }
}

/// Event `seq` of `stream` with no message: a POST stream's first says what
/// the stream answers ([`Record::Opened`]).
fn blank(stream: &Stream, seq: Seq) -> Record {
    match &stream.origin {
        Origin::Post { pending } if seq == 1 => {
            let ids = serde_json::to_string(pending).unwrap_or_else(|_| "[]".into());
            Record::Opened(Shared::new(ids))
        }
        _ => Record::Blank,
    }
}
