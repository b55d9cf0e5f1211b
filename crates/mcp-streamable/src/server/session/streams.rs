//! A session's streams and the ids they are numbered by.
//!
//! Ids count up through the session's range, `base + 1 … base +
//! STREAM_ID_SPAN − 2` (the range's base and its last id are a fleet's:
//! a mailbox, a control channel, an instance's answers), then start over
//! at its beginning. An id numbered again names a stream long forgotten,
//! unless that stream still lives (a GET kept open across a million
//! requests): such ids are skipped, never overwritten. So id order is age
//! order only until the range first wraps; [`Streams::oldest_first`] is the
//! age order at any time, and what every "the oldest goes first" rule of
//! the session reads.

use super::STREAM_ID_SPAN;
use crate::ids::StreamId;
use crate::release::Release;
use crate::server::event_ids::COMMON;
use crate::server::stream::{Origin, Stream};
use std::collections::BTreeMap;

/// The streams of one session, by id, and the next id to number one by.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Streams {
    by_id: BTreeMap<StreamId, Stream>,
    /// The first id of the session's range.
    base: u32,
    /// The id the next stream takes, unless a live stream has it.
    next: u32,
}

impl Streams {
    /// No stream yet (but the common one, if `common`: the rmcp shapes
    /// keep one stream for every standalone GET); the first is numbered
    /// `base + 1`.
    pub(super) fn new(base: u32, common: bool) -> Self {
        let mut by_id = BTreeMap::new();
        if common {
            by_id.insert(COMMON, Stream::new(COMMON, Origin::Standalone));
        }
        Streams {
            by_id,
            base,
            next: base.wrapping_add(1),
        }
    }

    /// The id the next stream takes (unless a live stream has it).
    #[cfg(test)]
    pub(super) fn next_id(&self) -> u32 {
        self.next
    }

    /// Numbers the next stream `next` (a copy of the session adopted on an
    /// instance of a fleet starts in a slice of its own: `ADOPTIONS_SPAN`).
    pub(super) fn number_from(&mut self, next: u32) {
        self.next = next;
    }

    /// A new stream of `origin`, under the next free id of the range.
    pub(super) fn open(&mut self, origin: Origin) -> StreamId {
        // The live streams are far fewer than the range, so this ends.
        let mut sid = self.advance();
        for _ in 0..STREAM_ID_SPAN {
            if !self.by_id.contains_key(&sid) {
                break;
            }
            sid = self.advance();
        }
        self.by_id.insert(sid, Stream::new(sid, origin));
        sid
    }

    /// The next id of the range, taken.
    fn advance(&mut self) -> StreamId {
        let sid = StreamId(self.next);
        self.next = if self.next.wrapping_sub(self.base) >= STREAM_ID_SPAN - 2 {
            self.base.wrapping_add(1)
        } else {
            self.next + 1
        };
        sid
    }

    /// The streams, oldest first; the common stream comes first.
    pub(super) fn oldest_first(&self) -> impl Iterator<Item = &Stream> {
        let next = StreamId(self.next);
        let after = StreamId(COMMON.0 + 1);
        let common = self.by_id.get(&COMMON);
        let older = self.by_id.range(next..).map(|(_, s)| s);
        let newer = self.by_id.range(after..next.max(after)).map(|(_, s)| s);
        common.into_iter().chain(older).chain(newer)
    }

    /// Stream `sid`.
    pub(super) fn get(&self, sid: &StreamId) -> Option<&Stream> {
        self.by_id.get(sid)
    }

    /// Stream `sid`, to change.
    pub(super) fn get_mut(&mut self, sid: &StreamId) -> Option<&mut Stream> {
        self.by_id.get_mut(sid)
    }

    /// Whether stream `sid` lives.
    #[cfg(test)]
    pub(super) fn contains_key(&self, sid: &StreamId) -> bool {
        self.by_id.contains_key(sid)
    }

    /// Forgets stream `sid`.
    pub(super) fn remove(&mut self, sid: &StreamId) -> Option<Stream> {
        self.by_id.remove(sid)
    }

    /// Every stream, in id order (not age order: [`Self::oldest_first`]).
    pub(super) fn values(&self) -> impl Iterator<Item = &Stream> {
        self.by_id.values()
    }

    /// How many streams live.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Bytes of the messages their replay buffers keep.
    pub(super) fn bytes(&self) -> usize {
        self.by_id.values().map(|s| s.bytes).sum()
    }
}

impl Release for Streams {
    fn release_if_empty(&mut self) {
        self.by_id.release_if_empty();
    }
}

/// Numbering in the range and the age order after it wraps are pinned
/// through the session (`tests::routing`).
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_stream_is_the_oldest() {
        let mut s = Streams::new(0, true);
        let sid = s.open(Origin::Standalone);
        let ids: Vec<StreamId> = s.oldest_first().map(|x| x.id).collect();
        assert_eq!(ids, [COMMON, sid]);
    }
}
