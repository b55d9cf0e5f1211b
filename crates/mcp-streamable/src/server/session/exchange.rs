//! The session's lifecycle ([`Phase`]) and what each of its open HTTP
//! exchanges carries ([`Exchange`], [`Role`]), with the client requests in
//! flight ([`Flight`]) and those cancelled lately ([`Cancelled`]).

use crate::ids::{RequestId, StreamId};
use std::collections::VecDeque;

/// Where the session is in its lifecycle; a phase keeps what only it needs.
///
/// ```text
///  New ──initialize──▶ Initializing ──its answer──▶ AwaitingInitialized ──notifications/initialized──▶ Ready
///   │                      │                              │                                              │
///   └──────────────────────┴──────── DELETE, close, idle or init expiry ─────────────────────────────────┴──▶ Ended
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Phase {
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
    pub(super) fn before_initialize_answer(&self) -> bool {
        matches!(self, Phase::New | Phase::Initializing { .. })
    }

    /// Whether `id` is the `initialize` being served.
    pub(super) fn initializing(&self, id: &RequestId) -> bool {
        matches!(self, Phase::Initializing { id: i, .. } if i == id)
    }

    /// Whether `sid` is the stream the `initialize` being served answers on.
    pub(super) fn initialize_stream(&self, sid: StreamId) -> bool {
        matches!(self, Phase::Initializing { stream, .. } if *stream == sid)
    }
}

/// What an open HTTP exchange of the session carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Role {
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
pub(super) struct Flight {
    /// The stream its answer goes on.
    pub(super) stream: StreamId,
    /// Its size as received (`Message::approx_len`).
    pub(super) bytes: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Exchange {
    pub(super) role: Role,
    pub(super) head_sent: bool,
    pub(super) ended: bool,
}

/// The client requests cancelled lately, newest last: a response the
/// application still gives one of them is dropped, visibly, not refused as
/// a request never seen.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct Cancelled {
    ids: VecDeque<RequestId>,
}

impl Cancelled {
    /// Remembers `id`, forgetting the oldest past `max` (`cancelled_max`).
    pub(super) fn remember(&mut self, id: RequestId, max: usize) {
        self.ids.push_back(id);
        while self.ids.len() > max {
            self.ids.pop_front();
        }
    }

    /// Whether `id` was cancelled lately.
    pub(super) fn contains(&self, id: &RequestId) -> bool {
        self.ids.contains(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_latest_cancellations_are_remembered() {
        let mut c = Cancelled::default();
        for n in 1..=3 {
            c.remember(RequestId::Num(n), 2);
        }
        assert!(!c.contains(&RequestId::Num(1)));
        assert!(c.contains(&RequestId::Num(2)) && c.contains(&RequestId::Num(3)));
    }
}
