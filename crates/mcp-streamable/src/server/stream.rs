//! One logical SSE stream and its bounded replay buffer.
//!
//! ```text
//!              attach(http)                 detach (client closed, polling)
//!   Detached ───────────────▶ Attached(http) ───────────────▶ Detached
//!      ▲                          │  response written (POST streams)
//!      └──── resume(L) ◀──────────┴──────────────▶ Finished (replayable until evicted)
//! ```
//! A stream outlives its HTTP connections: every event with an id is kept (up
//! to `events_max`) so a `Last-Event-ID` resumption can replay strictly after
//! it, and only from this stream (R35).

use super::Outgoing;
use crate::ids::{HttpId, RequestId, StreamId};
use std::collections::VecDeque;
use std::sync::Arc;

/// Why the stream exists.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    /// The response stream of a POST; the ids of its requests still unanswered.
    Post {
        /// Requests whose responses this stream still owes, in order.
        pending: Vec<RequestId>,
    },
    /// A standalone GET stream.
    Standalone,
}

/// Body format of a POST's answer, committed once (None → JSON or SSE).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Not yet decided: nothing written.
    Undecided,
    /// `application/json`: one message, no ids, not resumable.
    Json,
    /// `text/event-stream`.
    Sse,
}

/// One buffered event: its sequence number and the message (`None` for a
/// priming event, which replay skips).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Buffered {
    /// Sequence number in the stream.
    pub seq: u64,
    /// The message, or `None` for priming.
    pub message: Option<Arc<Outgoing>>,
}

/// How much one stream's replay buffer may keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReplayBound {
    /// Events (`events_max`).
    pub events_max: usize,
    /// Bytes of their messages (`events_bytes_max`).
    pub bytes_max: usize,
}

/// A stream's state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Stream {
    /// The stream's id.
    pub id: StreamId,
    /// Why it exists.
    pub origin: Origin,
    /// The HTTP exchange currently carrying it.
    pub attached: Option<HttpId>,
    /// JSON or SSE (POST streams).
    pub format: Format,
    /// Next sequence number to give out (starts at 1).
    pub next_seq: u64,
    /// Highest sequence number evicted from the buffer (0: none).
    pub floor: u64,
    /// Replay buffer, oldest first.
    pub buffer: VecDeque<Buffered>,
    /// Bytes of the messages in `buffer` ([`Message::approx_len`](crate::jsonrpc::Message::approx_len)).
    pub bytes: usize,
    /// The response has been written (POST streams): nothing more follows.
    pub finished: bool,
}

impl Stream {
    /// A new, detached stream.
    pub fn new(id: StreamId, origin: Origin) -> Self {
        Stream {
            id,
            origin,
            attached: None,
            format: Format::Undecided,
            next_seq: 1,
            floor: 0,
            buffer: VecDeque::new(),
            bytes: 0,
            finished: false,
        }
    }

    /// Whether this is a standalone GET stream.
    pub fn is_standalone(&self) -> bool {
        matches!(self.origin, Origin::Standalone)
    }

    /// Takes the next sequence number and buffers the event, evicting the
    /// oldest past `bound` (in events and in bytes). An evicted event raises
    /// the floor: a resumption from before it gets 400 (expired), never a gap.
    pub fn push(&mut self, message: Option<Arc<Outgoing>>, bound: ReplayBound) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        if let Some(m) = &message {
            self.bytes += m.message.approx_len();
            self.buffer.push_back(Buffered { seq, message });
            while self.buffer.len() > bound.events_max || self.bytes > bound.bytes_max {
                if !self.evict_oldest() {
                    break;
                }
            }
        }
        seq
    }

    /// Drops the oldest buffered event; whether there was one.
    pub fn evict_oldest(&mut self) -> bool {
        let Some(old) = self.buffer.pop_front() else {
            return false;
        };
        self.floor = old.seq;
        self.bytes -= old.message.as_ref().map_or(0, |m| m.message.approx_len());
        true
    }

    /// Whether a cursor at `seq` can be resumed: issued by this stream and not
    /// past the eviction floor.
    pub fn can_resume_from(&self, seq: u64) -> bool {
        seq >= 1 && seq < self.next_seq && seq >= self.floor
    }

    /// Buffered messages with `seq > after` (or `>= after` when `inclusive`).
    pub fn replay(&self, after: u64, inclusive: bool) -> Vec<(u64, Arc<Outgoing>)> {
        self.buffer
            .iter()
            .filter(|b| {
                if inclusive {
                    b.seq >= after
                } else {
                    b.seq > after
                }
            })
            .filter_map(|b| b.message.clone().map(|m| (b.seq, m)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::MsgKey;
    use crate::jsonrpc::{Message, RawJson};
    use crate::server::Cause;

    fn out(size: usize) -> Arc<Outgoing> {
        let params = RawJson::from(serde_json::json!({ "b": "x".repeat(size) }));
        Arc::new(Outgoing {
            session: crate::ids::SessionId::from_bits(1),
            key: MsgKey(1),
            cause: Cause::Unrelated,
            message: Message::notification("n", Some(params)),
        })
    }

    const ROOMY: usize = usize::MAX;

    #[test]
    fn events_max_keeps_exactly_that_many() {
        let bound = ReplayBound {
            events_max: 3,
            bytes_max: ROOMY,
        };
        let mut s = Stream::new(StreamId(1), Origin::Standalone);
        for _ in 0..3 {
            s.push(Some(out(1)), bound);
        }
        assert_eq!((s.buffer.len(), s.floor), (3, 0), "at the bound: all kept");
        s.push(Some(out(1)), bound);
        assert_eq!(
            (s.buffer.len(), s.floor),
            (3, 1),
            "past it: the oldest goes"
        );
        assert!(!s.can_resume_from(0) && s.can_resume_from(1) && s.can_resume_from(4));
        assert!(!s.can_resume_from(5), "a cursor not issued yet");
    }

    #[test]
    fn bytes_max_keeps_exactly_that_many_bytes_and_evicts_as_many_as_needed() {
        let one = out(10).message.approx_len();
        let bound = ReplayBound {
            events_max: 100,
            bytes_max: 3 * one,
        };
        let mut s = Stream::new(StreamId(1), Origin::Standalone);
        for _ in 0..3 {
            s.push(Some(out(10)), bound);
        }
        assert_eq!(
            (s.buffer.len(), s.bytes),
            (3, 3 * one),
            "exactly at the bound"
        );
        // One message as big as two and a half small ones: three must go.
        let big = out(10 + one + one / 2);
        let big_len = big.message.approx_len();
        assert!(big_len > 2 * one && big_len <= 3 * one);
        s.push(Some(big), bound);
        assert_eq!(s.buffer.len(), 1, "every small one evicted to fit");
        assert_eq!(s.bytes, big_len);
        assert_eq!(s.floor, 3);
    }
}
