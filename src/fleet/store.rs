//! [`MemoryStore`]: the store as a pure state machine.
//!
//! It executes one op at a time, atomically, as Redis does: an op's effects
//! (an appended entry, a publication to every subscriber, a reply) happen
//! together, and what it sends leaves in the order it was produced. Which
//! instance's op it executes next is not its decision: a shell feeds ops in
//! the order they arrive, the fleet checker in every order.

use super::{Entry, InstanceId, LogKey, Push, Record, Seq, StoreOp, StoreReply};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// What the store sends to an instance.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Output {
    /// On the command connection.
    Reply(StoreReply),
    /// On the subscriber connection.
    Push(Push),
}

/// One log: the entries still kept, and the number of the first of them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Log {
    /// The number of `entries[0]`.
    first: Seq,
    entries: VecDeque<Record>,
}

impl Log {
    fn next_seq(&self) -> Seq {
        self.first + self.entries.len() as Seq
    }
}

/// The store of one fleet, in memory (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemoryStore {
    logs: BTreeMap<LogKey, Log>,
    subscribers: BTreeMap<LogKey, BTreeSet<InstanceId>>,
    /// The most entries a log keeps; older ones are trimmed, as
    /// `XADD … MAXLEN` does, and a read from before them says so.
    entries_per_log_max: usize,
    outputs: VecDeque<(InstanceId, Output)>,
}

impl MemoryStore {
    /// An empty store keeping at most `entries_per_log_max` entries per log.
    pub fn new(entries_per_log_max: usize) -> Self {
        MemoryStore {
            logs: BTreeMap::new(),
            subscribers: BTreeMap::new(),
            entries_per_log_max: entries_per_log_max.max(1),
            outputs: VecDeque::new(),
        }
    }

    /// The number the next entry of `log` will get.
    pub fn next_seq(&self, log: &LogKey) -> Seq {
        self.logs.get(log).map_or(1, Log::next_seq)
    }

    /// The entries of `log` still kept, in order.
    pub fn entries(&self, log: &LogKey) -> Vec<Entry> {
        self.read(log, 0)
    }

    /// Whether `instance` is subscribed to `log`.
    pub fn is_subscribed(&self, log: &LogKey, instance: InstanceId) -> bool {
        self.subscribers
            .get(log)
            .is_some_and(|s| s.contains(&instance))
    }

    /// Executes `op` from `from`, atomically.
    pub fn handle_op(&mut self, from: InstanceId, op: StoreOp) {
        match op {
            StoreOp::Append { log, record } => {
                let max = self.entries_per_log_max;
                let l = self.logs.entry(log.clone()).or_insert(Log {
                    first: 1,
                    entries: VecDeque::new(),
                });
                let seq = l.next_seq();
                l.entries.push_back(record);
                while l.entries.len() > max {
                    l.entries.pop_front();
                    l.first += 1;
                }
                self.outputs
                    .push_back((from, Output::Reply(StoreReply::Appended { log, seq })));
            }
            StoreOp::Publish { log, entry } => {
                if let Some(subs) = self.subscribers.get(&log) {
                    for &to in subs {
                        let push = Push::Published {
                            log: log.clone(),
                            entry: entry.clone(),
                        };
                        self.outputs.push_back((to, Output::Push(push)));
                    }
                }
            }
            StoreOp::Read { log, after } => {
                let trimmed = self
                    .logs
                    .get(&log)
                    .is_some_and(|l| after.saturating_add(1) < l.first);
                let entries = self.read(&log, after);
                let reply = StoreReply::Read {
                    log,
                    after,
                    entries,
                    trimmed,
                };
                self.outputs.push_back((from, Output::Reply(reply)));
            }
            StoreOp::Subscribe { log } => {
                self.subscribers
                    .entry(log.clone())
                    .or_default()
                    .insert(from);
                self.outputs
                    .push_back((from, Output::Push(Push::Subscribed { log })));
            }
            StoreOp::Unsubscribe { log } => {
                if let Some(subs) = self.subscribers.get_mut(&log) {
                    subs.remove(&from);
                    if subs.is_empty() {
                        self.subscribers.remove(&log);
                    }
                }
            }
        }
    }

    /// The next thing the store sends, and to whom.
    pub fn poll_output(&mut self) -> Option<(InstanceId, Output)> {
        self.outputs.pop_front()
    }

    fn read(&self, log: &LogKey, after: Seq) -> Vec<Entry> {
        let Some(l) = self.logs.get(log) else {
            return Vec::new();
        };
        l.entries
            .iter()
            .enumerate()
            .map(|(i, record)| Entry {
                seq: l.first + i as Seq,
                record: record.clone(),
            })
            .filter(|e| e.seq > after)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{SessionId, StreamId};

    fn log() -> LogKey {
        LogKey {
            session: SessionId::from_bits(1),
            stream: StreamId(1),
        }
    }

    fn msg(s: &str) -> Record {
        Record::Message(s.to_string().into())
    }

    fn drain(store: &mut MemoryStore) -> Vec<(InstanceId, Output)> {
        std::iter::from_fn(|| store.poll_output()).collect()
    }

    #[test]
    fn appends_are_numbered_from_one_and_reads_start_after_the_cursor() {
        let mut s = MemoryStore::new(8);
        for m in ["a", "b", "c"] {
            s.handle_op(
                InstanceId(0),
                StoreOp::Append {
                    log: log(),
                    record: msg(m),
                },
            );
        }
        let seqs: Vec<Seq> = drain(&mut s)
            .into_iter()
            .map(|(_, o)| match o {
                Output::Reply(StoreReply::Appended { seq, .. }) => seq,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(seqs, [1, 2, 3]);
        s.handle_op(
            InstanceId(1),
            StoreOp::Read {
                log: log(),
                after: 1,
            },
        );
        let out = drain(&mut s);
        let [(
            InstanceId(1),
            Output::Reply(StoreReply::Read {
                entries, trimmed, ..
            }),
        )] = out.as_slice()
        else {
            panic!("{out:?}")
        };
        assert!(!trimmed);
        assert_eq!(entries.iter().map(|e| e.seq).collect::<Vec<_>>(), [2, 3]);
    }

    #[test]
    fn a_publication_reaches_subscribers_only_after_their_confirmation() {
        let mut s = MemoryStore::new(8);
        let entry = Entry {
            seq: 1,
            record: msg("a"),
        };
        s.handle_op(
            InstanceId(0),
            StoreOp::Publish {
                log: log(),
                entry: entry.clone(),
            },
        );
        assert!(drain(&mut s).is_empty(), "nobody subscribed: nothing sent");
        s.handle_op(InstanceId(1), StoreOp::Subscribe { log: log() });
        s.handle_op(InstanceId(2), StoreOp::Subscribe { log: log() });
        s.handle_op(
            InstanceId(0),
            StoreOp::Publish {
                log: log(),
                entry: entry.clone(),
            },
        );
        s.handle_op(InstanceId(2), StoreOp::Unsubscribe { log: log() });
        s.handle_op(
            InstanceId(0),
            StoreOp::Publish {
                log: log(),
                entry: entry.clone(),
            },
        );
        let published = |to| {
            (
                to,
                Output::Push(Push::Published {
                    log: log(),
                    entry: entry.clone(),
                }),
            )
        };
        let subscribed = |to| (to, Output::Push(Push::Subscribed { log: log() }));
        assert_eq!(
            drain(&mut s),
            [
                subscribed(InstanceId(1)),
                subscribed(InstanceId(2)),
                published(InstanceId(1)),
                published(InstanceId(2)),
                published(InstanceId(1)),
            ]
        );
        assert!(s.is_subscribed(&log(), InstanceId(1)));
        assert!(!s.is_subscribed(&log(), InstanceId(2)));
    }

    #[test]
    fn a_log_keeps_exactly_its_max_and_a_read_from_before_it_is_marked_trimmed() {
        let mut s = MemoryStore::new(2);
        for m in ["a", "b", "c"] {
            s.handle_op(
                InstanceId(0),
                StoreOp::Append {
                    log: log(),
                    record: msg(m),
                },
            );
        }
        drain(&mut s);
        assert_eq!(
            s.entries(&log()).iter().map(|e| e.seq).collect::<Vec<_>>(),
            [2, 3]
        );
        assert_eq!(s.next_seq(&log()), 4);
        for (after, want_trimmed) in [(0, true), (1, false), (2, false)] {
            s.handle_op(InstanceId(1), StoreOp::Read { log: log(), after });
            match drain(&mut s).pop() {
                Some((_, Output::Reply(StoreReply::Read { trimmed, .. }))) => {
                    assert_eq!(trimmed, want_trimmed, "after {after}")
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
