//! The unrelated messages a session holds until a standalone stream
//! attaches, or until the handshake ends (R49): oldest first, each with
//! the instant it expires (`held_ttl_ms`), their bytes counted as they
//! come and go so the bounds (`held_max`, `held_bytes_max`,
//! `session_bytes_max`) are checked without a walk.
//!
//! The queue decides nothing: which message goes, when and why is the
//! session's (`routing.rs`), which also says so (`ServerEvent::Dropped`).

use crate::ids::MsgKey;
use crate::server::Outgoing;
use crate::time::Instant;
use std::collections::VecDeque;
use std::sync::Arc;

/// Held messages and their bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct Held {
    /// Oldest first, with the instant each expires.
    queue: VecDeque<(Instant, Arc<Outgoing>)>,
    /// The sum of the queued messages' `approx_len`.
    bytes: usize,
}

impl Held {
    /// Whether none is held.
    pub(super) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Bytes held: the figure `held_bytes_max` bounds.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether the queue is past either bound.
    pub(super) fn over(&self, count_max: usize, bytes_max: usize) -> bool {
        self.queue.len() > count_max || self.bytes > bytes_max
    }

    /// The keys held, oldest first.
    pub(super) fn keys(&self) -> impl Iterator<Item = MsgKey> + '_ {
        self.queue.iter().map(|(_, o)| o.key)
    }

    /// When the oldest expires.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.queue.front().map(|(deadline, _)| *deadline)
    }

    /// Holds `out` until `deadline`, newest.
    pub(super) fn push(&mut self, deadline: Instant, out: Arc<Outgoing>) {
        self.bytes += out.message.approx_len();
        self.queue.push_back((deadline, out));
    }

    /// Takes the oldest out.
    pub(super) fn pop_oldest(&mut self) -> Option<Arc<Outgoing>> {
        let (_, out) = self.queue.pop_front()?;
        self.bytes -= out.message.approx_len();
        Some(out)
    }

    /// Takes every message out, oldest first.
    pub(super) fn take_all(&mut self) -> Vec<Arc<Outgoing>> {
        self.bytes = 0;
        self.queue.drain(..).map(|(_, o)| o).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::SessionId;
    use crate::jsonrpc::Message;
    use crate::server::Cause;
    use std::time::Duration;

    fn out(key: u64, text: &str) -> Arc<Outgoing> {
        let params = serde_json::json!({ "text": text });
        Arc::new(Outgoing {
            session: SessionId::from_bits(1),
            key: MsgKey(key),
            cause: Cause::Unrelated,
            message: Message::notification("notifications/message", Some(params.into())),
        })
    }

    #[test]
    fn bytes_follow_every_message_in_and_out() {
        let t0 = Instant::ZERO;
        let mut h = Held::default();
        let (a, b) = (out(1, "a"), out(2, "a longer message"));
        let (la, lb) = (a.message.approx_len(), b.message.approx_len());
        h.push(t0 + Duration::from_millis(10), a);
        h.push(t0 + Duration::from_millis(20), b);
        assert_eq!((h.keys().count(), h.bytes()), (2, la + lb));
        assert!(h.over(1, usize::MAX) && h.over(2, la + lb - 1) && !h.over(2, la + lb));
        assert_eq!(h.keys().collect::<Vec<_>>(), [MsgKey(1), MsgKey(2)]);
        assert_eq!(h.pop_oldest().map(|o| o.key), Some(MsgKey(1)));
        assert_eq!(h.bytes(), lb);
        assert_eq!(h.take_all().len(), 1);
        assert!(h.is_empty() && h.bytes() == 0 && h.pop_oldest().is_none());
    }

    #[test]
    fn the_next_deadline_is_the_oldest_messages() {
        let t0 = Instant::ZERO;
        let mut h = Held::default();
        assert_eq!(h.next_deadline(), None);
        h.push(t0 + Duration::from_millis(10), out(1, "a"));
        h.push(t0 + Duration::from_millis(20), out(2, "b"));
        assert_eq!(h.next_deadline(), Some(t0 + Duration::from_millis(10)));
        h.pop_oldest();
        assert_eq!(h.next_deadline(), Some(t0 + Duration::from_millis(20)));
    }
}
