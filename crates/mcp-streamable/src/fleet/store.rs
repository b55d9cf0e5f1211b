//! [`MemoryStore`]: the store as a pure state machine.
//!
//! It executes one op at a time, atomically, as Redis does: an op's effects
//! (an appended entry, a publication to every subscriber, a reply) happen
//! together, and what it sends leaves in the order it was produced. Which
//! instance's op it executes next is not its decision: a shell feeds ops in
//! the order they arrive, the fleet checker in every order.

use super::{Conn, Entry, InstanceId, LogKey, Push, Record, Seq, StoreOp, StoreReply};
use crate::ids::{SessionId, StreamId};
use crate::shared::Shared;
use crate::time::Instant;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// What the store sends to an instance.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Output {
    /// On the command connection.
    Reply(StoreReply),
    /// On the subscriber connection.
    Push(Push),
}

impl Output {
    /// The connection it arrives on.
    pub fn conn(&self) -> Conn {
        match self {
            Output::Reply(_) => Conn::Command,
            Output::Push(_) => Conn::Subscriber,
        }
    }
}

/// One log: the entries still kept, and the number of the first of them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Log {
    /// The number of `entries[0]`.
    first: Seq,
    entries: VecDeque<Record>,
    /// Entries up to this number were taken by a `Claim`.
    claimed: Seq,
}

impl Log {
    fn next_seq(&self) -> Seq {
        self.first + self.entries.len() as Seq
    }

    /// The entries kept with a number past `after`, in order.
    fn after(&self, after: Seq) -> impl Iterator<Item = Entry> + '_ {
        self.entries
            .iter()
            .enumerate()
            .map(|(i, record)| Entry {
                seq: self.first + i as Seq,
                record: record.clone(),
            })
            .filter(move |e| e.seq > after)
    }
}

/// A session's record and when it expires.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct SessionEntry {
    record: Shared<String>,
    expires_at: Instant,
    /// Adoptions counted ([`StoreOp::TouchSession`]'s `adopt`).
    adoptions: u32,
    /// Broadcasts whose delivery to this session was claimed, and until
    /// when the claim is kept (oldest first; at most
    /// [`DELIVERY_CLAIMS_MAX`]).
    deliveries: VecDeque<(u64, Instant)>,
}

/// Delivery claims a session keeps at once ([`StoreOp::ClaimDelivery`]):
/// past it the oldest is forgotten, and a copy that asks about it only
/// after that many newer broadcasts could deliver it a second time.
pub const DELIVERY_CLAIMS_MAX: usize = 1024;

impl SessionEntry {
    /// Takes broadcast `id`'s delivery unless it is taken; whether it was
    /// taken now.
    fn claim_delivery(&mut self, id: u64, ttl_ms: u64, now: Instant) -> bool {
        self.deliveries.retain(|&(_, until)| until > now);
        if self.deliveries.iter().any(|&(d, _)| d == id) {
            return false;
        }
        if self.deliveries.len() >= DELIVERY_CLAIMS_MAX {
            self.deliveries.pop_front();
        }
        let until = Instant::from_millis(now.as_millis().saturating_add(ttl_ms));
        self.deliveries.push_back((id, until));
        true
    }
}

/// The store of one fleet, in memory (see the module docs).
///
/// Sessions expire as Redis keys do: a session whose time has come is gone
/// for every op from then on, whether or not anything removed it yet.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemoryStore {
    sessions: BTreeMap<SessionId, SessionEntry>,
    logs: BTreeMap<LogKey, Log>,
    subscribers: BTreeMap<LogKey, BTreeSet<InstanceId>>,
    /// Each instance's heartbeat: when it expires.
    beats: BTreeMap<InstanceId, Instant>,
    /// The most entries a log keeps; older ones are trimmed, as
    /// `XADD … MAXLEN` does, and a read from before them says so.
    entries_per_log_max: usize,
    outputs: VecDeque<(InstanceId, Output)>,
}

impl MemoryStore {
    /// An empty store keeping at most `entries_per_log_max` entries per log.
    pub fn new(entries_per_log_max: usize) -> Self {
        MemoryStore {
            sessions: BTreeMap::new(),
            logs: BTreeMap::new(),
            subscribers: BTreeMap::new(),
            beats: BTreeMap::new(),
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

    /// When `session` expires, if it exists at `now`.
    pub fn session_expires_at(&self, session: &SessionId, now: Instant) -> Option<Instant> {
        self.sessions
            .get(session)
            .map(|e| e.expires_at)
            .filter(|&at| at > now)
    }

    /// Sessions stored (expired ones included until [`Self::handle_timeout`]).
    pub fn sessions_len(&self) -> usize {
        self.sessions.len()
    }

    /// Forgets sessions expired at `now`, with their logs.
    pub fn handle_timeout(&mut self, now: Instant) {
        let expired: Vec<SessionId> = self
            .sessions
            .iter()
            .filter(|(_, e)| e.expires_at <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            self.remove_session(&id);
        }
    }

    /// Executes `op` from `from` at `now`, atomically.
    pub fn handle_op(&mut self, from: InstanceId, op: StoreOp, now: Instant) {
        match op {
            StoreOp::Append { log, record } => {
                let (seq, evicted) = self.append(&log, record);
                let reply = StoreReply::Appended { log, seq, evicted };
                self.outputs.push_back((from, Output::Reply(reply)));
            }
            StoreOp::Beat { instance, ttl_ms } => {
                let until = Instant::from_millis(now.as_millis().saturating_add(ttl_ms));
                self.beats.insert(instance, until);
            }
            StoreOp::Alive { instance } => {
                let alive = self.beats.get(&instance).is_some_and(|&t| t > now);
                self.reply(from, StoreReply::Alive { instance, alive });
            }
            StoreOp::Complete { log, records } => {
                let ended = self
                    .logs
                    .get(&log)
                    .and_then(|l| l.entries.back())
                    .is_some_and(Record::is_final);
                let mut appended = Vec::new();
                if !ended {
                    for record in records {
                        let (seq, _) = self.append(&log, record.clone());
                        appended.push(Entry { seq, record });
                    }
                }
                self.reply(from, StoreReply::Completed { log, appended });
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
            StoreOp::Claim { log, max } => {
                let (entries, more) = self.claim(&log, max.max(1));
                self.reply(from, StoreReply::Claimed { log, entries, more });
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
            StoreOp::PutSession {
                session,
                record,
                ttl_ms,
            } => {
                let expires_at = Instant::from_millis(now.as_millis().saturating_add(ttl_ms));
                // Overwritten, the count of adoptions stays (a field of
                // its own, as in Redis's hash).
                let (adoptions, deliveries) = self
                    .live_session(&session, now)
                    .map_or((0, VecDeque::new()), |e| {
                        (e.adoptions, std::mem::take(&mut e.deliveries))
                    });
                let entry = SessionEntry {
                    record,
                    expires_at,
                    adoptions,
                    deliveries,
                };
                self.sessions.insert(session.clone(), entry);
                self.reply(from, StoreReply::Stored { session });
            }
            StoreOp::TouchSession {
                session,
                ttl_ms,
                adopt,
            } => {
                let expires_at = Instant::from_millis(now.as_millis().saturating_add(ttl_ms));
                let reply = match self.live_session(&session, now) {
                    Some(e) => {
                        e.expires_at = expires_at;
                        Self::looked_up(session, e, adopt)
                    }
                    None => Self::gone(session),
                };
                self.reply(from, reply);
            }
            StoreOp::LoadSession { session, adopt } => {
                let reply = match self.live_session(&session, now) {
                    Some(e) => Self::looked_up(session, e, adopt),
                    None => Self::gone(session),
                };
                self.reply(from, reply);
            }
            StoreOp::ClaimDelivery {
                session,
                id,
                ttl_ms,
            } => {
                let won = self
                    .live_session(&session, now)
                    .is_some_and(|e| e.claim_delivery(id, ttl_ms, now));
                self.reply(from, StoreReply::Delivery { session, id, won });
            }
            StoreOp::DeleteSession { session } => {
                let existed = self.live_session(&session, now).is_some();
                self.remove_session(&session);
                self.reply(from, StoreReply::Deleted { session, existed });
            }
        }
    }

    /// A live session's reply, its adoption counted if asked.
    fn looked_up(session: SessionId, e: &mut SessionEntry, adopt: bool) -> StoreReply {
        let adoption = if adopt {
            e.adoptions = e.adoptions.wrapping_add(1);
            e.adoptions
        } else {
            0
        };
        StoreReply::Session {
            session,
            record: Some(e.record.clone()),
            adoption,
        }
    }

    fn gone(session: SessionId) -> StoreReply {
        StoreReply::Session {
            session,
            record: None,
            adoption: 0,
        }
    }

    /// Appends `record` to `log`, trimming past the bound; its number, and
    /// the entries of a claimed log trimmed before their claim.
    fn append(&mut self, log: &LogKey, record: Record) -> (Seq, Vec<Entry>) {
        let max = self.entries_per_log_max;
        let l = self.logs.entry(log.clone()).or_insert(Log {
            first: 1,
            entries: VecDeque::new(),
            claimed: 0,
        });
        let seq = l.next_seq();
        l.entries.push_back(record);
        let mut evicted = Vec::new();
        while l.entries.len() > max {
            let Some(record) = l.entries.pop_front() else {
                break;
            };
            if log.is_claimed() && l.first > l.claimed {
                evicted.push(Entry {
                    seq: l.first,
                    record,
                });
            }
            l.first += 1;
        }
        (seq, evicted)
    }

    fn reply(&mut self, to: InstanceId, reply: StoreReply) {
        self.outputs.push_back((to, Output::Reply(reply)));
    }

    /// The session if it has not expired at `now` (an expired one is removed).
    fn live_session(&mut self, session: &SessionId, now: Instant) -> Option<&mut SessionEntry> {
        if self.sessions.get(session)?.expires_at <= now {
            self.remove_session(session);
            return None;
        }
        self.sessions.get_mut(session)
    }

    /// A session and its logs (and subscriptions to them) are gone.
    fn remove_session(&mut self, session: &SessionId) {
        self.sessions.remove(session);
        let first = LogKey {
            session: session.clone(),
            stream: StreamId(0),
        };
        let logs: Vec<LogKey> = self
            .logs
            .range(first.clone()..)
            .take_while(|(k, _)| &k.session == session)
            .map(|(k, _)| k.clone())
            .collect();
        for k in logs {
            self.logs.remove(&k);
        }
        let subs: Vec<LogKey> = self
            .subscribers
            .range(first..)
            .take_while(|(k, _)| &k.session == session)
            .map(|(k, _)| k.clone())
            .collect();
        for k in subs {
            self.subscribers.remove(&k);
        }
    }

    /// The next thing the store sends, and to whom.
    pub fn poll_output(&mut self) -> Option<(InstanceId, Output)> {
        self.outputs.pop_front()
    }

    /// Entries of session mailboxes no instance has claimed yet: messages
    /// held for a session's next GET, wherever it attaches.
    pub fn unclaimed(&self) -> impl Iterator<Item = (&LogKey, Entry)> + '_ {
        self.logs
            .iter()
            .filter(|(k, _)| k.is_mailbox())
            .flat_map(|(k, l)| l.after(l.claimed).map(move |e| (k, e)))
    }

    /// Whether [`Self::poll_output`] has something (a caller holding the
    /// store shared asks before taking it mutably).
    pub fn has_output(&self) -> bool {
        !self.outputs.is_empty()
    }

    /// Takes at most `max` untaken entries of `log` (trimmed ones are gone
    /// untaken); whether more are left.
    fn claim(&mut self, log: &LogKey, max: usize) -> (Vec<Entry>, bool) {
        let Some(l) = self.logs.get_mut(log) else {
            return (Vec::new(), false);
        };
        let from = l.claimed.max(l.first - 1);
        let entries: Vec<Entry> = l.after(from).take(max).collect();
        l.claimed = entries.last().map_or(from, |e| e.seq);
        let more = l.claimed + 1 < l.next_seq();
        (entries, more)
    }

    fn read(&self, log: &LogKey, after: Seq) -> Vec<Entry> {
        self.logs
            .get(log)
            .map(|l| l.after(after).collect())
            .unwrap_or_default()
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
                Instant::ZERO,
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
            Instant::ZERO,
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
    fn a_claimed_log_reports_what_its_trim_takes_before_any_claim() {
        let mut s = MemoryStore::new(2);
        let mailbox = LogKey::mailbox(SessionId::from_bits(1));
        let append = |s: &mut MemoryStore, log: &LogKey, m: &str| {
            s.handle_op(
                InstanceId(0),
                StoreOp::Append {
                    log: log.clone(),
                    record: msg(m),
                },
                Instant::ZERO,
            );
            match drain(s).as_slice() {
                [(_, Output::Reply(StoreReply::Appended { evicted, .. }))] => {
                    evicted.iter().map(|e| e.seq).collect::<Vec<_>>()
                }
                other => panic!("{other:?}"),
            }
        };
        assert!(append(&mut s, &mailbox, "a").is_empty());
        assert!(append(&mut s, &mailbox, "b").is_empty());
        s.handle_op(
            InstanceId(1),
            StoreOp::Claim {
                log: mailbox.clone(),
                max: 1,
            },
            Instant::ZERO,
        );
        drain(&mut s);
        assert!(append(&mut s, &mailbox, "c").is_empty(), "1 was taken");
        assert_eq!(append(&mut s, &mailbox, "d"), [2], "2 was not");
        // A stream's log is read, not claimed: its trim loses nothing.
        for m in ["a", "b", "c"] {
            assert!(append(&mut s, &log(), m).is_empty());
        }
    }

    #[test]
    fn complete_appends_only_to_a_log_not_over_yet() {
        let mut s = MemoryStore::new(8);
        let complete = |s: &mut MemoryStore, record: Record| {
            s.handle_op(
                InstanceId(1),
                StoreOp::Complete {
                    log: log(),
                    records: vec![record],
                },
                Instant::ZERO,
            );
            drain(s)
        };
        s.handle_op(
            InstanceId(0),
            StoreOp::Append {
                log: log(),
                record: Record::Blank,
            },
            Instant::ZERO,
        );
        drain(&mut s);
        complete(&mut s, Record::Released);
        for last in [Record::Released, Record::End] {
            let out = complete(&mut s, last);
            assert!(
                matches!(
                    out.as_slice(),
                    [(_, Output::Reply(StoreReply::Completed { appended, .. }))] if appended.is_empty()
                ),
                "{out:?}"
            );
        }
        let records: Vec<Record> = s.entries(&log()).into_iter().map(|e| e.record).collect();
        assert_eq!(records, [Record::Blank, Record::Released], "released once");
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
            Instant::ZERO,
        );
        assert!(drain(&mut s).is_empty(), "nobody subscribed: nothing sent");
        s.handle_op(
            InstanceId(1),
            StoreOp::Subscribe { log: log() },
            Instant::ZERO,
        );
        s.handle_op(
            InstanceId(2),
            StoreOp::Subscribe { log: log() },
            Instant::ZERO,
        );
        s.handle_op(
            InstanceId(0),
            StoreOp::Publish {
                log: log(),
                entry: entry.clone(),
            },
            Instant::ZERO,
        );
        s.handle_op(
            InstanceId(2),
            StoreOp::Unsubscribe { log: log() },
            Instant::ZERO,
        );
        s.handle_op(
            InstanceId(0),
            StoreOp::Publish {
                log: log(),
                entry: entry.clone(),
            },
            Instant::ZERO,
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

    fn sid() -> SessionId {
        SessionId::from_bits(1)
    }

    fn session_reply(s: &mut MemoryStore) -> Option<Shared<String>> {
        match drain(s).pop() {
            Some((_, Output::Reply(StoreReply::Session { record, .. }))) => record,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn adoptions_are_counted_when_asked_kept_over_a_put_and_lost_with_the_session() {
        let mut s = MemoryStore::new(8);
        let counted = |s: &mut MemoryStore, op: StoreOp| {
            s.handle_op(InstanceId(0), op, Instant::ZERO);
            match drain(s).pop() {
                Some((_, Output::Reply(StoreReply::Session { adoption, .. }))) => adoption,
                other => panic!("{other:?}"),
            }
        };
        let put = StoreOp::PutSession {
            session: sid(),
            record: "r".to_string().into(),
            ttl_ms: 100,
        };
        let touch = |adopt| StoreOp::TouchSession {
            session: sid(),
            ttl_ms: 100,
            adopt,
        };
        let load = |adopt| StoreOp::LoadSession {
            session: sid(),
            adopt,
        };
        assert_eq!(
            counted(&mut s, touch(true)),
            0,
            "no session, nothing counted"
        );
        s.handle_op(InstanceId(0), put.clone(), Instant::ZERO);
        assert_eq!(counted(&mut s, touch(false)), 0);
        assert_eq!(counted(&mut s, touch(true)), 1);
        assert_eq!(counted(&mut s, load(true)), 2);
        assert_eq!(counted(&mut s, load(false)), 0);
        s.handle_op(InstanceId(0), put.clone(), Instant::ZERO);
        assert_eq!(counted(&mut s, touch(true)), 3, "kept over a put");
        let delete = StoreOp::DeleteSession { session: sid() };
        s.handle_op(InstanceId(0), delete, Instant::ZERO);
        s.handle_op(InstanceId(0), put, Instant::ZERO);
        assert_eq!(counted(&mut s, touch(true)), 1, "a new session counts anew");
    }

    #[test]
    fn a_session_expires_at_its_ttl_unless_a_touch_pushes_it() {
        let mut s = MemoryStore::new(8);
        let at = Instant::from_millis;
        let put = StoreOp::PutSession {
            session: sid(),
            record: "r".to_string().into(),
            ttl_ms: 100,
        };
        s.handle_op(InstanceId(0), put, at(0));
        assert_eq!(s.session_expires_at(&sid(), at(99)), Some(at(100)));
        assert_eq!(
            s.session_expires_at(&sid(), at(100)),
            None,
            "gone at its expiry, not after"
        );
        drain(&mut s);
        let touch = StoreOp::TouchSession {
            session: sid(),
            ttl_ms: 100,
            adopt: false,
        };
        s.handle_op(InstanceId(1), touch.clone(), at(99));
        assert!(session_reply(&mut s).is_some());
        assert_eq!(s.session_expires_at(&sid(), at(150)), Some(at(199)));
        s.handle_op(
            InstanceId(1),
            StoreOp::LoadSession {
                session: sid(),
                adopt: false,
            },
            at(198),
        );
        assert!(session_reply(&mut s).is_some());
        assert_eq!(
            s.session_expires_at(&sid(), at(150)),
            Some(at(199)),
            "a load refreshes nothing"
        );
        s.handle_op(InstanceId(1), touch, at(199));
        assert_eq!(session_reply(&mut s), None);
        assert_eq!(
            s.sessions_len(),
            0,
            "an expired session is removed when met"
        );
        // One nobody meets again is removed by the sweep, with its logs.
        let put = StoreOp::PutSession {
            session: sid(),
            record: "r".to_string().into(),
            ttl_ms: 100,
        };
        s.handle_op(InstanceId(0), put, at(200));
        let append = StoreOp::Append {
            log: log(),
            record: msg("a"),
        };
        s.handle_op(InstanceId(0), append, at(200));
        s.handle_timeout(at(299));
        assert_eq!(
            (s.sessions_len(), s.entries(&log()).len()),
            (1, 1),
            "not yet"
        );
        s.handle_timeout(at(300));
        assert_eq!((s.sessions_len(), s.entries(&log()).len()), (0, 0));
    }

    #[test]
    fn deleting_a_session_removes_its_logs_and_subscriptions_and_only_its_own() {
        let mut s = MemoryStore::new(8);
        let other = LogKey {
            session: SessionId::from_bits(2),
            stream: StreamId(1),
        };
        let put = StoreOp::PutSession {
            session: sid(),
            record: "r".to_string().into(),
            ttl_ms: 100,
        };
        s.handle_op(InstanceId(0), put, Instant::ZERO);
        for l in [log(), other.clone()] {
            s.handle_op(
                InstanceId(0),
                StoreOp::Append {
                    log: l.clone(),
                    record: msg("a"),
                },
                Instant::ZERO,
            );
            s.handle_op(InstanceId(1), StoreOp::Subscribe { log: l }, Instant::ZERO);
        }
        drain(&mut s);
        s.handle_op(
            InstanceId(0),
            StoreOp::DeleteSession { session: sid() },
            Instant::ZERO,
        );
        assert_eq!(
            drain(&mut s),
            [(
                InstanceId(0),
                Output::Reply(StoreReply::Deleted {
                    session: sid(),
                    existed: true
                })
            )]
        );
        assert!(s.entries(&log()).is_empty());
        assert!(!s.is_subscribed(&log(), InstanceId(1)));
        assert_eq!(s.entries(&other).len(), 1);
        assert!(s.is_subscribed(&other, InstanceId(1)));
        s.handle_op(
            InstanceId(0),
            StoreOp::DeleteSession { session: sid() },
            Instant::ZERO,
        );
        assert_eq!(
            drain(&mut s),
            [(
                InstanceId(0),
                Output::Reply(StoreReply::Deleted {
                    session: sid(),
                    existed: false
                })
            )]
        );
        s.handle_op(
            InstanceId(0),
            StoreOp::LoadSession {
                session: sid(),
                adopt: false,
            },
            Instant::ZERO,
        );
        assert_eq!(session_reply(&mut s), None);
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
                Instant::ZERO,
            );
        }
        drain(&mut s);
        assert_eq!(
            s.entries(&log()).iter().map(|e| e.seq).collect::<Vec<_>>(),
            [2, 3]
        );
        assert_eq!(s.next_seq(&log()), 4);
        for (after, want_trimmed) in [(0, true), (1, false), (2, false)] {
            s.handle_op(
                InstanceId(1),
                StoreOp::Read { log: log(), after },
                Instant::ZERO,
            );
            match drain(&mut s).pop() {
                Some((_, Output::Reply(StoreReply::Read { trimmed, .. }))) => {
                    assert_eq!(trimmed, want_trimmed, "after {after}")
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn each_entry_is_claimed_once_in_order_and_trimmed_ones_are_gone_untaken() {
        let mut s = MemoryStore::new(4);
        let append = |s: &mut MemoryStore, n: usize| {
            for _ in 0..n {
                let op = StoreOp::Append {
                    log: log(),
                    record: msg("m"),
                };
                s.handle_op(InstanceId(0), op, Instant::ZERO);
            }
            drain(s);
        };
        let claim = |s: &mut MemoryStore, from: u16, max: usize| {
            s.handle_op(
                InstanceId(from),
                StoreOp::Claim { log: log(), max },
                Instant::ZERO,
            );
            match drain(s).as_slice() {
                [(to, Output::Reply(StoreReply::Claimed { entries, more, .. }))] => {
                    assert_eq!(*to, InstanceId(from));
                    (entries.iter().map(|e| e.seq).collect::<Vec<_>>(), *more)
                }
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(claim(&mut s, 0, 2), (vec![], false), "no log yet");
        append(&mut s, 3);
        assert_eq!(claim(&mut s, 0, 2), (vec![1, 2], true));
        assert_eq!(claim(&mut s, 1, 2), (vec![3], false));
        assert_eq!(claim(&mut s, 0, 2), (vec![], false), "all taken");
        // Six more, four kept (4..=9 appended, 6..=9 kept): 4 and 5 are gone.
        append(&mut s, 6);
        assert_eq!(claim(&mut s, 1, 0), (vec![6], true), "max 0 takes one");
        assert_eq!(claim(&mut s, 0, 8), (vec![7, 8, 9], false));
        // A read still sees what is kept: claiming takes, it does not remove.
        s.handle_op(
            InstanceId(0),
            StoreOp::Read {
                log: log(),
                after: 0,
            },
            Instant::ZERO,
        );
        assert!(matches!(
            drain(&mut s).as_slice(),
            [(_, Output::Reply(StoreReply::Read { entries, .. }))] if entries.len() == 4
        ));
    }
}
