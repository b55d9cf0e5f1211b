//! The relay model: writers on some instances, one reader on
//! another, one store between them, explored in every order the store could
//! execute their ops and deliver its answers.
//!
//! It runs the cores a fleet runs: [`Publisher`] on each writing instance,
//! [`Follower`] on the reading one, [`MemoryStore`] between. Each instance
//! has two connections to the store (commands; subscriptions), each a FIFO
//! each way, and nothing orders one connection against another: the store
//! executes the head op of any connection next, and any instance takes the
//! head of any of its incoming queues next. The client has seen the log up
//! to its cursor on a connection that is gone, and resumes on the reader at
//! any point of the writers' progress.
//!
//! Properties (`docs/properties.md`):
//! - **F1, nothing lost**: when nothing more can happen, the client has every
//!   entry of the log after its cursor (through the end, when the stream
//!   ends); and the end never reaches it with an entry missing before it.
//! - **F2, nothing twice**: no entry reaches the client twice.
//! - **F3, in order**: entries reach the client in number order.

use crate::engine::Explorable;
use crate::sim::StoreLinks;
use mcp_streamable::fleet::follow::{Follower, Phase};
use mcp_streamable::fleet::publish::Publisher;
use mcp_streamable::fleet::store::{MemoryStore, Output};
use mcp_streamable::fleet::{Conn, InstanceId, LogKey, Record, Relay, Seq, StoreOp, StoreReply};
use mcp_streamable::ids::{SessionId, StreamId};
use mcp_streamable::shared::fixed_keys;
use mcp_streamable::time::Instant;

/// One relay scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelayScenario {
    /// How the reader follows the log.
    pub relay: Relay,
    /// How many messages each writer (one per instance) appends.
    pub writers: Vec<usize>,
    /// Whether writer 0 ends the stream after its messages (a request's
    /// stream ends with its response; a GET's stream does not end).
    pub end: bool,
    /// Entries already in the log when the model starts.
    pub stored: usize,
    /// The client's cursor (its `Last-Event-ID`), at most `stored`.
    pub cursor: Seq,
    /// Entries the follower keeps ahead of its cursor.
    pub pending_max: usize,
    /// Entries the store keeps per log.
    pub entries_per_log_max: usize,
    /// The deepest path explored.
    pub depth: usize,
}

impl RelayScenario {
    /// One writer still writing `messages` then the end, `stored` entries
    /// already there, the client resuming from `cursor`.
    pub fn resume_while_writing(relay: Relay, stored: usize, cursor: Seq, messages: usize) -> Self {
        RelayScenario {
            relay,
            writers: vec![messages],
            end: true,
            stored,
            cursor,
            pending_max: 8,
            entries_per_log_max: 64,
            depth: 128,
        }
    }

    /// Several writers (notifications emitted on several instances) on a
    /// log that does not end (a session's GET stream).
    pub fn notifications_from(
        relay: Relay,
        writers: Vec<usize>,
        stored: usize,
        cursor: Seq,
    ) -> Self {
        RelayScenario {
            relay,
            writers,
            end: false,
            stored,
            cursor,
            pending_max: 8,
            entries_per_log_max: 64,
            depth: 128,
        }
    }
}

/// What a relay run can break.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RelayViolation {
    /// F1: entries of the log after the cursor the client never got.
    Lost {
        /// Their numbers.
        missing: Vec<Seq>,
    },
    /// F2: an entry reached the client twice.
    Twice {
        /// Its number.
        seq: Seq,
    },
    /// F3: an entry reached the client after a later one.
    OutOfOrder {
        /// Its number.
        seq: Seq,
        /// The number before it.
        after: Seq,
    },
}

impl RelayViolation {
    /// The property's id.
    pub fn id(&self) -> &'static str {
        match self {
            RelayViolation::Lost { .. } => "F1",
            RelayViolation::Twice { .. } => "F2",
            RelayViolation::OutOfOrder { .. } => "F3",
        }
    }
}

/// A step of the relay model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RelayAction {
    /// Writer `w` appends its next record.
    Write {
        /// The writer.
        w: usize,
    },
    /// The client's resumption reaches the reader: it starts following.
    Resume,
    /// The store executes the next op `instance` sent on `conn`.
    Execute {
        /// The sender.
        instance: u16,
        /// The connection.
        conn: Conn,
    },
    /// `instance` takes the next thing the store sent it on `conn`.
    Receive {
        /// The receiver.
        instance: u16,
        /// The connection.
        conn: Conn,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Writer {
    left: usize,
    end_left: bool,
    publisher: Publisher,
}

/// A whole state of the relay model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RelayState {
    store: MemoryStore,
    writers: Vec<Writer>,
    follower: Option<Follower>,
    links: StoreLinks,
    /// The numbers the client got, in order.
    got: Vec<Seq>,
}

impl RelayState {
    /// The numbers the client got, in order.
    pub fn got(&self) -> &[Seq] {
        &self.got
    }
}

/// The relay model of one scenario.
#[derive(Clone, Debug)]
pub struct RelayModel {
    /// The scenario.
    pub scenario: RelayScenario,
    log: LogKey,
}

impl RelayModel {
    /// The model of `scenario`.
    pub fn new(scenario: RelayScenario) -> Self {
        let log = LogKey {
            session: SessionId::from_bits(0xf1ee7),
            stream: StreamId(1),
        };
        RelayModel { scenario, log }
    }

    fn reader(&self) -> u16 {
        self.scenario.writers.len() as u16
    }

    /// Moves what the cores produced: ops to the store's queues, the store's
    /// outputs to the instances' queues, entries to the client.
    fn settle(&self, s: &mut RelayState) {
        for (i, w) in s.writers.iter_mut().enumerate() {
            while let Some(op) = w.publisher.poll_op() {
                s.links.send(i as u16, op);
            }
        }
        if let Some(f) = s.follower.as_mut() {
            while let Some(op) = f.poll_op() {
                s.links.send(self.reader(), op);
            }
            while let Some(e) = f.poll_entry() {
                s.got.push(e.seq);
            }
        }
    }

    /// The log's numbers after the cursor the client must get: up to the
    /// end when the stream ended, else every one stored.
    fn owed(&self, s: &RelayState) -> Vec<Seq> {
        let mut owed = Vec::new();
        for e in s.store.entries(&self.log) {
            if e.seq > self.scenario.cursor {
                owed.push(e.seq);
            }
            if e.record == Record::End {
                break;
            }
        }
        owed
    }
}

impl Explorable for RelayModel {
    type State = RelayState;
    type Action = RelayAction;
    type Violation = RelayViolation;

    fn initial(&self) -> RelayState {
        let sc = &self.scenario;
        let mut store = MemoryStore::new(sc.entries_per_log_max);
        for i in 0..sc.stored {
            let record = Record::Message(format!("stored {}", i + 1).into());
            store.handle_op(
                InstanceId(0),
                StoreOp::Append {
                    log: self.log.clone(),
                    record,
                },
                Instant::ZERO,
            );
        }
        while store.poll_output().is_some() {}
        let writers = sc
            .writers
            .iter()
            .enumerate()
            .map(|(i, &left)| Writer {
                left,
                end_left: sc.end && i == 0,
                publisher: Publisher::new(self.log.clone()),
            })
            .collect();
        RelayState {
            store,
            writers,
            follower: None,
            links: StoreLinks::default(),
            got: Vec::new(),
        }
    }

    fn enabled(&self, s: &RelayState, out: &mut Vec<RelayAction>) {
        for (w, wr) in s.writers.iter().enumerate() {
            if wr.left > 0 || wr.end_left {
                out.push(RelayAction::Write { w });
            }
        }
        if s.follower.is_none() {
            out.push(RelayAction::Resume);
        }
        for (instance, conn) in s.links.executable() {
            out.push(RelayAction::Execute { instance, conn });
        }
        for (instance, conn) in s.links.receivable() {
            out.push(RelayAction::Receive { instance, conn });
        }
    }

    fn step(&self, s: &RelayState, a: &RelayAction) -> Option<RelayState> {
        let mut n = s.clone();
        match a {
            RelayAction::Write { w } => {
                let wr = n.writers.get_mut(*w)?;
                if wr.left > 0 {
                    wr.left -= 1;
                    let text = format!("from {w}, {} left", wr.left);
                    wr.publisher.append(Record::Message(text.into()));
                } else if wr.end_left {
                    wr.end_left = false;
                    wr.publisher.append(Record::End);
                } else {
                    return None;
                }
            }
            RelayAction::Resume => {
                if n.follower.is_some() {
                    return None;
                }
                let sc = &self.scenario;
                let mut f = Follower::new(self.log.clone(), sc.cursor, sc.relay, sc.pending_max);
                f.start();
                n.follower = Some(f);
            }
            RelayAction::Execute { instance, conn } => {
                if !n
                    .links
                    .execute(&mut n.store, (*instance, *conn), Instant::ZERO, |_| true)
                {
                    return None;
                }
            }
            RelayAction::Receive { instance, conn } => {
                let out = n.links.take((*instance, *conn))?;
                if *instance == self.reader() {
                    let f = n.follower.as_mut()?;
                    match out {
                        Output::Reply(r) => f.handle_reply(r),
                        Output::Push(p) => f.handle_push(p),
                    }
                } else {
                    let wr = n.writers.get_mut(*instance as usize)?;
                    if let Output::Reply(r @ StoreReply::Appended { .. }) = out {
                        wr.publisher.handle_reply(r);
                    }
                }
            }
        }
        self.settle(&mut n);
        Some(n)
    }

    fn fingerprint(&self, s: &RelayState) -> u64 {
        fixed_keys().hash_one(s)
    }

    fn violation(&self, s: &RelayState) -> Option<RelayViolation> {
        let mut last = self.scenario.cursor;
        for (i, &seq) in s.got.iter().enumerate() {
            if s.got[..i].contains(&seq) || seq <= self.scenario.cursor {
                return Some(RelayViolation::Twice { seq });
            }
            if seq < last {
                return Some(RelayViolation::OutOfOrder { seq, after: last });
            }
            last = seq;
        }
        let ended = s
            .follower
            .as_ref()
            .is_some_and(|f| f.phase() == Phase::Ended);
        let lost = s
            .follower
            .as_ref()
            .is_some_and(|f| f.phase() == Phase::Lost);
        let mut quiet = Vec::new();
        self.enabled(s, &mut quiet);
        if lost || !(ended || quiet.is_empty()) {
            return None;
        }
        let missing: Vec<Seq> = self
            .owed(s)
            .into_iter()
            .filter(|seq| !s.got.contains(seq))
            .filter(|&seq| quiet.is_empty() || seq < last)
            .collect();
        (!missing.is_empty()).then_some(RelayViolation::Lost { missing })
    }

    fn depth_bound(&self) -> usize {
        self.scenario.depth
    }

    fn time_of(&self, _: &RelayState) -> u64 {
        0
    }
}
