//! [`Follower`]: one client connection on this instance reading a stream's
//! log, wherever it is written.
//!
//! Under [`Relay::Ordered`] (FIXED):
//!
//! ```text
//!            start                 Subscribed                Read
//!   Idle ────────────▶ Subscribing ──────────▶ Reading ───────────▶ Live
//!                      (publications           (publications        │ a publication that skips a
//!                       wait in `pending`)      wait in `pending`)  │ number: Read again; End
//!                                                                   ▼ delivered
//!                                                                  Ended
//! ```
//!
//! The other [`Relay`] values are the designs the SDKs shipped or were
//! reviewed into; the fleet checker (`check::fleet`) shows what each loses
//! or sends twice.
//!
//! Entries leave through [`Follower::poll_entry`] in the order the client is
//! to get them; ops for the store through [`Follower::poll_op`].

use super::{Entry, LogKey, Push, Record, Relay, Seq, StoreOp, StoreReply};
use std::collections::{BTreeMap, VecDeque};

/// Where a follower is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Not started.
    Idle,
    /// Waiting for the store to confirm the subscription.
    Subscribing,
    /// Waiting for the read of what is stored.
    Reading,
    /// Following publications.
    Live,
    /// The log's end was delivered (or the client went away).
    Ended,
    /// Entries after the cursor were trimmed from the store: the client
    /// cannot get them; the shell ends the connection and the client falls
    /// back as for an unknown `Last-Event-ID`.
    Lost,
}

/// A reader of one log from a cursor (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Follower {
    log: LogKey,
    relay: Relay,
    /// The number of the last entry delivered (or the client's own cursor).
    cursor: Seq,
    phase: Phase,
    /// Entries that arrived ahead of the cursor ([`Relay::Ordered`],
    /// [`Relay::ConcurrentDeduplicated`]), at most `pending_max`.
    pending: BTreeMap<Seq, Record>,
    pending_max: usize,
    /// A read is in flight.
    reading: bool,
    /// Entries were dropped from `pending` while a read was in flight: that
    /// read may have run before they were appended, so read once more after
    /// it (the fleet checker found the lost tail without this).
    read_again: bool,
    ops: VecDeque<StoreOp>,
    out: VecDeque<Entry>,
}

impl Follower {
    /// A follower of `log` for a client that has everything up to `cursor`;
    /// at most `pending_max` entries wait ahead of the cursor (past that they
    /// are dropped and read again from the store, where they all are).
    pub fn new(log: LogKey, cursor: Seq, relay: Relay, pending_max: usize) -> Self {
        Follower {
            log,
            relay,
            cursor,
            phase: Phase::Idle,
            pending: BTreeMap::new(),
            pending_max: pending_max.max(1),
            reading: false,
            read_again: false,
            ops: VecDeque::new(),
            out: VecDeque::new(),
        }
    }

    // ---- getters ----

    /// The log followed.
    pub fn log(&self) -> &LogKey {
        &self.log
    }

    /// The number of the last entry delivered.
    pub fn cursor(&self) -> Seq {
        self.cursor
    }

    /// Where the follower is.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Entries waiting ahead of the cursor.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    // ---- commands ----

    /// Starts following.
    pub fn start(&mut self) {
        if self.phase != Phase::Idle {
            return;
        }
        match self.relay {
            Relay::Ordered | Relay::SubscribeThenReplay => {
                self.phase = Phase::Subscribing;
                self.subscribe();
            }
            Relay::ReplayThenSubscribe => {
                self.phase = Phase::Reading;
                self.read();
            }
            Relay::ConcurrentDeduplicated => {
                self.phase = Phase::Reading;
                self.subscribe();
                self.read();
            }
        }
    }

    /// The client's connection is gone: stop following.
    pub fn close(&mut self) {
        if !matches!(self.phase, Phase::Ended | Phase::Lost) {
            self.finish(Phase::Ended);
        }
    }

    // ---- inputs ----

    /// A reply on the command connection about this follower's log.
    pub fn handle_reply(&mut self, reply: StoreReply) {
        let StoreReply::Read {
            entries, trimmed, ..
        } = reply
        else {
            return;
        };
        if !self.reading || self.is_over() {
            return;
        }
        self.reading = false;
        if trimmed {
            self.finish(Phase::Lost);
            return;
        }
        match self.relay {
            Relay::ReplayThenSubscribe => {
                for e in entries {
                    self.deliver(e);
                }
                if !self.is_over() {
                    self.subscribe();
                    self.phase = Phase::Subscribing;
                }
            }
            Relay::SubscribeThenReplay => {
                for e in entries {
                    self.deliver(e);
                }
                if !self.is_over() {
                    self.phase = Phase::Live;
                }
            }
            Relay::Ordered | Relay::ConcurrentDeduplicated => {
                for e in entries {
                    self.accept(e);
                }
                if !self.is_over() {
                    self.phase = Phase::Live;
                    if std::mem::take(&mut self.read_again) {
                        self.read();
                    }
                    self.fill_holes();
                }
            }
        }
    }

    /// Something on the subscriber connection about this follower's log.
    pub fn handle_push(&mut self, push: Push) {
        if self.is_over() {
            return;
        }
        match push {
            Push::Subscribed { .. } => match self.relay {
                Relay::Ordered | Relay::SubscribeThenReplay => {
                    if self.phase == Phase::Subscribing {
                        self.phase = Phase::Reading;
                        self.read();
                    }
                }
                Relay::ReplayThenSubscribe => {
                    if self.phase == Phase::Subscribing {
                        self.phase = Phase::Live;
                    }
                }
                Relay::ConcurrentDeduplicated => {}
            },
            Push::Published { entry, .. } => match self.relay {
                Relay::ReplayThenSubscribe | Relay::SubscribeThenReplay => self.deliver(entry),
                Relay::Ordered | Relay::ConcurrentDeduplicated => {
                    self.accept(entry);
                    if self.phase == Phase::Live {
                        self.fill_holes();
                    }
                }
            },
        }
    }

    // ---- outputs ----

    /// The next op for the store.
    pub fn poll_op(&mut self) -> Option<StoreOp> {
        self.ops.pop_front()
    }

    /// The next entry for the client, in the order it is to get them.
    pub fn poll_entry(&mut self) -> Option<Entry> {
        self.out.pop_front()
    }

    // ---- internals ----

    fn is_over(&self) -> bool {
        matches!(self.phase, Phase::Ended | Phase::Lost)
    }

    fn subscribe(&mut self) {
        self.ops.push_back(StoreOp::Subscribe {
            log: self.log.clone(),
        });
    }

    fn read(&mut self) {
        self.reading = true;
        self.ops.push_back(StoreOp::Read {
            log: self.log.clone(),
            after: self.cursor,
        });
    }

    fn finish(&mut self, phase: Phase) {
        self.phase = phase;
        self.pending.clear();
        self.ops.push_back(StoreOp::Unsubscribe {
            log: self.log.clone(),
        });
    }

    /// In number order, once: an entry at or before the cursor was
    /// delivered already; one past the next waits for what is missing.
    fn accept(&mut self, e: Entry) {
        if e.seq <= self.cursor || self.is_over() {
            return;
        }
        if e.seq > self.cursor + 1 {
            if self.pending.len() >= self.pending_max && !self.pending.contains_key(&e.seq) {
                // Everything is in the store: drop what waits and read again.
                self.pending.clear();
                if self.reading {
                    self.read_again = true;
                } else {
                    self.read();
                }
                return;
            }
            self.pending.insert(e.seq, e.record);
            return;
        }
        self.deliver(e);
        while let Some(record) = self.pending.remove(&(self.cursor + 1)) {
            let seq = self.cursor + 1;
            self.deliver(Entry { seq, record });
            if self.is_over() {
                return;
            }
        }
    }

    /// To the client. The ordered designs deliver only `cursor + 1`; the
    /// naive ones deliver whatever arrives, so the cursor never goes back.
    fn deliver(&mut self, e: Entry) {
        self.cursor = self.cursor.max(e.seq);
        let end = e.record.is_final();
        self.out.push_back(e);
        if end {
            self.finish(Phase::Ended);
        }
    }

    /// Entries wait ahead of a missing one: it was appended (numbers are
    /// given at append) but its publication has not come, or came before the
    /// subscription. Read it from the store ([`Relay::Ordered`] only: the
    /// concurrent design has no hole filling, which is its flaw only when the
    /// missing entry is the last).
    fn fill_holes(&mut self) {
        if self.relay == Relay::Ordered && !self.pending.is_empty() && !self.reading {
            self.read();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{SessionId, StreamId};

    fn log() -> LogKey {
        LogKey {
            session: SessionId::from_bits(7),
            stream: StreamId(3),
        }
    }

    fn entry(seq: Seq) -> Entry {
        Entry {
            seq,
            record: Record::Message(format!("m{seq}").into()),
        }
    }

    fn ops(f: &mut Follower) -> Vec<StoreOp> {
        std::iter::from_fn(|| f.poll_op()).collect()
    }

    fn delivered(f: &mut Follower) -> Vec<Seq> {
        std::iter::from_fn(|| f.poll_entry())
            .map(|e| e.seq)
            .collect()
    }

    fn read(after: Seq, entries: Vec<Entry>) -> StoreReply {
        StoreReply::Read {
            log: log(),
            after,
            entries,
            trimmed: false,
        }
    }

    /// Started, subscribed, and its read of nothing new answered: live.
    fn live(cursor: Seq, pending_max: usize) -> Follower {
        let mut f = Follower::new(log(), cursor, Relay::Ordered, pending_max);
        f.start();
        assert_eq!(ops(&mut f), [StoreOp::Subscribe { log: log() }]);
        f.handle_push(Push::Subscribed { log: log() });
        assert_eq!(
            ops(&mut f),
            [StoreOp::Read {
                log: log(),
                after: cursor
            }]
        );
        f.handle_reply(read(cursor, vec![]));
        assert_eq!(f.phase(), Phase::Live);
        f
    }

    #[test]
    fn publications_before_the_read_wait_for_it_and_duplicates_are_dropped() {
        let mut f = Follower::new(log(), 1, Relay::Ordered, 8);
        f.start();
        f.handle_push(Push::Subscribed { log: log() });
        ops(&mut f);
        f.handle_push(Push::Published {
            log: log(),
            entry: entry(3),
        });
        f.handle_push(Push::Published {
            log: log(),
            entry: entry(1),
        });
        assert_eq!(delivered(&mut f), Vec::<Seq>::new());
        assert_eq!(f.pending_len(), 1);
        f.handle_reply(read(1, vec![entry(2), entry(3)]));
        assert_eq!(delivered(&mut f), [2, 3]);
        assert_eq!(f.cursor(), 3);
        assert_eq!(f.pending_len(), 0);
        assert!(ops(&mut f).is_empty(), "no hole: no read");
    }

    #[test]
    fn a_publication_that_skips_a_number_makes_it_read_the_store() {
        let mut f = live(4, 8);
        f.handle_push(Push::Published {
            log: log(),
            entry: entry(6),
        });
        assert_eq!(delivered(&mut f), Vec::<Seq>::new());
        assert_eq!(
            ops(&mut f),
            [StoreOp::Read {
                log: log(),
                after: 4
            }]
        );
        // One read at a time.
        f.handle_push(Push::Published {
            log: log(),
            entry: entry(7),
        });
        assert!(ops(&mut f).is_empty());
        f.handle_reply(read(4, vec![entry(5), entry(6)]));
        assert_eq!(delivered(&mut f), [5, 6, 7]);
        f.handle_push(Push::Published {
            log: log(),
            entry: entry(8),
        });
        assert_eq!(delivered(&mut f), [8]);
        assert!(ops(&mut f).is_empty());
    }

    #[test]
    fn past_pending_max_what_waits_is_dropped_and_read_again() {
        let mut f = live(0, 2);
        f.handle_push(Push::Published {
            log: log(),
            entry: entry(2),
        });
        assert_eq!(
            ops(&mut f),
            [StoreOp::Read {
                log: log(),
                after: 0
            }]
        );
        f.handle_push(Push::Published {
            log: log(),
            entry: entry(3),
        });
        assert_eq!(f.pending_len(), 2, "exactly its max waits");
        f.handle_push(Push::Published {
            log: log(),
            entry: entry(4),
        });
        assert_eq!(f.pending_len(), 0, "one more: all dropped");
        assert!(ops(&mut f).is_empty(), "one read at a time");
        // The read in flight ran before 3 and 4 were appended: it must be
        // followed by another.
        f.handle_reply(read(0, vec![entry(1), entry(2)]));
        assert_eq!(delivered(&mut f), [1, 2]);
        assert_eq!(
            ops(&mut f),
            [StoreOp::Read {
                log: log(),
                after: 2
            }]
        );
        f.handle_reply(read(2, vec![entry(3), entry(4)]));
        assert_eq!(delivered(&mut f), [3, 4]);
        assert!(ops(&mut f).is_empty());
    }

    #[test]
    fn the_end_ends_it_and_unsubscribes() {
        let mut f = live(0, 8);
        f.handle_push(Push::Published {
            log: log(),
            entry: Entry {
                seq: 2,
                record: Record::End,
            },
        });
        f.handle_reply(read(
            0,
            vec![
                entry(1),
                Entry {
                    seq: 2,
                    record: Record::End,
                },
            ],
        ));
        assert_eq!(delivered(&mut f), [1, 2]);
        assert_eq!(f.phase(), Phase::Ended);
        assert_eq!(
            ops(&mut f),
            [
                StoreOp::Read {
                    log: log(),
                    after: 0
                }, // the hole before the end
                StoreOp::Unsubscribe { log: log() }
            ]
        );
        f.handle_push(Push::Published {
            log: log(),
            entry: entry(3),
        });
        assert!(delivered(&mut f).is_empty(), "nothing after the end");
    }

    #[test]
    fn a_trimmed_read_is_lost_and_a_close_unsubscribes_once() {
        let mut f = Follower::new(log(), 1, Relay::Ordered, 8);
        f.start();
        f.handle_push(Push::Subscribed { log: log() });
        ops(&mut f);
        f.handle_reply(StoreReply::Read {
            log: log(),
            after: 1,
            entries: vec![entry(5)],
            trimmed: true,
        });
        assert_eq!(f.phase(), Phase::Lost);
        assert!(delivered(&mut f).is_empty(), "never a stream with a hole");
        assert_eq!(ops(&mut f), [StoreOp::Unsubscribe { log: log() }]);
        f.close();
        assert!(ops(&mut f).is_empty());
        let mut g = live(0, 8);
        g.close();
        assert_eq!(g.phase(), Phase::Ended);
        assert_eq!(ops(&mut g), [StoreOp::Unsubscribe { log: log() }]);
    }
}
