//! Several server instances behind a load balancer, sharing one store.
//!
//! A stream's connection lives on one instance, but what is written to it may
//! come from another: a resumption lands on instance R while the request's
//! handler still runs on W; a notification for a session's GET is emitted on
//! whichever instance the application runs on. What instances share goes
//! through a **store**, and the store is a seam of the sans-IO cores, not a
//! dependency of them: a core emits [`StoreOp`]s and is fed
//! [`StoreReply`]s and [`Push`]es, so the model checker can explore every
//! order in which a real store (Redis) could execute them
//! (`docs/fleets.md`).
//!
//! Each stream is an append-only **log** in the store ([`LogKey`]); its
//! entries are numbered 1, 2, … by the store in the order they are appended
//! ([`Seq`]). A writer appends, then publishes the numbered entry to the
//! instances subscribed to that log ([`publish::Publisher`]). A reader on any
//! instance follows the log from a cursor ([`follow::Follower`]): it
//! subscribes, reads what is stored after its cursor, and delivers every
//! entry once, in order; how it orders those steps is the [`Relay`] knob,
//! where the known cross-instance races live.
//!
//! [`store::MemoryStore`] is the store as a pure state machine: the default
//! for one process, and the store of the fleet checker.

pub mod broadcast;
pub mod cancellations;
pub mod driver;
pub mod follow;
pub mod gate;
pub mod instance;
pub mod liveness;
pub mod mailbox;
pub mod publish;
pub mod record;
pub mod store;
pub mod subscriptions;
pub mod writer;

use crate::ids::{SessionId, StreamId};
pub use crate::policy::{
    Answers, BroadcastDelivery, Cancellations, Handover, Relay, ResumedGet, SessionRefresh,
    Unrelated,
};
use crate::shared::Shared;

/// One server instance of a fleet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InstanceId(pub u16);

/// The log of one stream of one session.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LogKey {
    /// The session.
    pub session: SessionId,
    /// The stream (unique in the session across the fleet).
    pub stream: StreamId,
}

impl LogKey {
    /// The session's mailbox ([`mailbox`]): unrelated messages emitted on an
    /// instance that holds no GET of the session, for whichever instance
    /// does. Stream 0 is no stream: instance 0's range starts at 1.
    pub fn mailbox(session: SessionId) -> Self {
        LogKey {
            session,
            stream: MAILBOX,
        }
    }

    /// Whether this is a session's mailbox.
    pub fn is_mailbox(&self) -> bool {
        self.stream == MAILBOX
    }

    /// The session's control channel: publications only, never appended.
    /// The instance that answered `initialize` listens on it until the
    /// client's `notifications/initialized`, which may land anywhere, is
    /// announced there.
    pub fn control(session: SessionId) -> Self {
        LogKey {
            session,
            stream: CONTROL,
        }
    }
}

impl LogKey {
    /// The fleet's cancellations channel: publications only, never
    /// appended, each a client's `notifications/cancelled` posted to an
    /// instance not serving the request it names, for whichever instance
    /// does ([`cancellations`], [`Cancellations::ToTheCall`]). It names the
    /// reserved session [`BROADCASTS_SESSION`], which no instance mints.
    pub fn cancellations() -> Self {
        LogKey {
            session: BROADCASTS_SESSION
                .parse()
                .expect("a well-formed session id"),
            stream: CANCELLATIONS,
        }
    }
}

impl LogKey {
    /// Instance `instance`'s answers for `session`: the client's answers to
    /// requests that instance sent, posted to another instance and
    /// forwarded here. The last id of the instance's range, which no
    /// session numbers.
    pub fn answers(session: SessionId, instance: InstanceId) -> Self {
        LogKey {
            session,
            stream: StreamId(
                u32::from(instance.0) * crate::server::STREAM_ID_SPAN
                    + (crate::server::STREAM_ID_SPAN - 1),
            ),
        }
    }

    /// Whether this is an instance's answers log.
    pub fn is_answers(&self) -> bool {
        self.stream.0 % crate::server::STREAM_ID_SPAN == crate::server::STREAM_ID_SPAN - 1
    }

    /// Whether entries of this log are claimed, each by one instance (a
    /// mailbox, an instance's answers), rather than read by followers: an
    /// entry trimmed before its claim is lost.
    pub fn is_claimed(&self) -> bool {
        self.is_mailbox() || self.is_answers()
    }

    /// Whether this names one of the fleet's logs rather than a stream (a
    /// mailbox, a control channel, an instance's answers): no client may
    /// name it in a `Last-Event-ID`.
    pub fn is_reserved(stream: StreamId) -> bool {
        let offset = stream.0 % crate::server::STREAM_ID_SPAN;
        offset == 0 || offset == crate::server::STREAM_ID_SPAN - 1
    }
}

impl LogKey {
    /// The fleet's broadcast channel: publications only, never appended,
    /// each a broadcast made on one instance for the sessions of every
    /// other ([`broadcast`]). It names the reserved session
    /// [`BROADCASTS_SESSION`], which no instance mints.
    pub fn broadcasts() -> Self {
        LogKey {
            session: BROADCASTS_SESSION
                .parse()
                .expect("a well-formed session id"),
            stream: CONTROL,
        }
    }

    /// Whether this is the fleet's broadcast channel.
    pub fn is_broadcasts(&self) -> bool {
        self.stream == CONTROL && self.session.as_str() == BROADCASTS_SESSION
    }
}

/// The session id of the fleet's channels ([`LogKey::broadcasts`],
/// [`LogKey::cancellations`]): not hexadecimal, so never minted, and never
/// stored, so a client naming it gets the 404 of any unknown session.
pub const BROADCASTS_SESSION: &str = "-";

/// The stream id of a session's mailbox log ([`LogKey::mailbox`]).
pub const MAILBOX: StreamId = StreamId(0);

/// The stream id of a session's control channel ([`LogKey::control`]):
/// instance 1's base, which no instance numbers.
pub const CONTROL: StreamId = StreamId(crate::server::STREAM_ID_SPAN);

/// The stream id of the fleet's cancellations channel
/// ([`LogKey::cancellations`]): instance 2's base, which no instance
/// numbers.
pub const CANCELLATIONS: StreamId = StreamId(2 * crate::server::STREAM_ID_SPAN);

/// An entry's number in its log: 1 for the first, contiguous, assigned by
/// the store in append order.
pub type Seq = u64;

/// What one log entry holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Record {
    /// A message for the stream (`record::encode_message`).
    Message(Shared<String>),
    /// An event with an id and no message (a priming event): logged so
    /// that a log's numbers stay its stream's own sequence numbers.
    Blank,
    /// A POST stream's priming event: blank to clients, and for the fleet
    /// the JSON array of the ids of the requests the stream answers, so an
    /// instance that finds the writer dead knows which calls to complete.
    Opened(Shared<String>),
    /// The stream is over (its request was answered): a follower ends the
    /// connection once it has delivered everything before this.
    End,
    /// A standalone stream's writer let go of it (its GET is gone there, or
    /// the writer was found dead) and never writes to it again: a follower
    /// that delivered everything before this goes on as the session's GET
    /// where it runs ([`ResumedGet::ContinueWhereResumed`]). Not an event:
    /// a client's cursor never names it, so a resumption reaches it again.
    Released,
}

impl Record {
    /// Whether nothing can follow this in its log ([`Record::End`],
    /// [`Record::Released`]).
    pub fn is_final(&self) -> bool {
        matches!(self, Record::End | Record::Released)
    }
}

/// One numbered entry of a log.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    /// Its number.
    pub seq: Seq,
    /// Its record.
    pub record: Record,
}

/// Which of an instance's two connections to the store carries an op: the
/// command connection (appends, reads, publishes: replies in order) or the
/// subscriber connection (subscriptions; publications arrive on it). The two
/// are not ordered with respect to each other, as with Redis, where a
/// subscribed connection can run nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Conn {
    /// Appends, reads, publishes.
    Command,
    /// Subscribe, unsubscribe.
    Subscriber,
}

/// What a core asks of the store.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StoreOp {
    /// Append `record` to `log`; the store numbers it and replies
    /// [`StoreReply::Appended`].
    Append {
        /// The log.
        log: LogKey,
        /// The record.
        record: Record,
    },
    /// Send `entry` to every instance subscribed to `log` (no reply).
    Publish {
        /// The log.
        log: LogKey,
        /// The entry, with the number the store gave it.
        entry: Entry,
    },
    /// The entries of `log` after `after`; the store replies
    /// [`StoreReply::Read`].
    Read {
        /// The log.
        log: LogKey,
        /// The cursor: entries with a greater number.
        after: Seq,
    },
    /// Take the entries of `log` no one has taken yet, at most `max`, in
    /// order: each entry is taken once in the fleet, by whichever instance
    /// asks first (a mailbox's consumers). Replies [`StoreReply::Claimed`].
    Claim {
        /// The log.
        log: LogKey,
        /// At most this many (at least 1).
        max: usize,
    },
    /// From now on, publications on `log` reach this instance; the store
    /// confirms with [`Push::Subscribed`] on the subscriber connection.
    Subscribe {
        /// The log.
        log: LogKey,
    },
    /// No more publications on `log` for this instance.
    Unsubscribe {
        /// The log.
        log: LogKey,
    },
    /// This instance is alive for `ttl_ms` more (its heartbeat, `SET … PX`;
    /// no reply).
    Beat {
        /// This instance.
        instance: InstanceId,
        /// How long the beat lasts.
        ttl_ms: u64,
    },
    /// Whether `instance`'s heartbeat is current; replies
    /// [`StoreReply::Alive`].
    Alive {
        /// The instance asked about.
        instance: InstanceId,
    },
    /// Appends `records` to `log` unless its last entry is final
    /// ([`Record::is_final`]), atomically (a stream of a dead writer
    /// completed by whichever instance finds it first, once); replies
    /// [`StoreReply::Completed`].
    Complete {
        /// The log.
        log: LogKey,
        /// What completes it (error responses, then the end; or a
        /// standalone stream's release).
        records: Vec<Record>,
    },
    /// Store `record` as the session's, expiring `ttl_ms` from now, whether
    /// or not it exists (`SET … PX`); replies [`StoreReply::Stored`].
    PutSession {
        /// The session.
        session: SessionId,
        /// What an instance needs to serve it (opaque to the store).
        record: Shared<String>,
        /// Its time to live.
        ttl_ms: u64,
    },
    /// The session's record, and its expiry pushed `ttl_ms` from now, in one
    /// step; nothing if it is gone; replies [`StoreReply::Session`].
    TouchSession {
        /// The session.
        session: SessionId,
        /// Its time to live from now.
        ttl_ms: u64,
        /// The instance asking holds no copy and takes one up: count the
        /// adoption, in the same step.
        adopt: bool,
    },
    /// The session's record, its expiry untouched; replies
    /// [`StoreReply::Session`].
    LoadSession {
        /// The session.
        session: SessionId,
        /// Count an adoption, as for [`StoreOp::TouchSession`].
        adopt: bool,
    },
    /// Takes the delivery of broadcast `id` to `session` for the instance
    /// asking, unless one took it already: every instance holding a copy
    /// of the session asks, and one delivers ([`broadcast`]). The claim is
    /// kept `ttl_ms` (longer than a broadcast takes to reach every
    /// instance); a session gone is never won. Replies
    /// [`StoreReply::Delivery`].
    ClaimDelivery {
        /// The session.
        session: SessionId,
        /// The broadcast.
        id: u64,
        /// How long the claim is kept.
        ttl_ms: u64,
    },
    /// The session and every log of it are gone; replies
    /// [`StoreReply::Deleted`].
    DeleteSession {
        /// The session.
        session: SessionId,
    },
}

impl StoreOp {
    /// The connection that carries this op.
    pub fn conn(&self) -> Conn {
        match self {
            StoreOp::Subscribe { .. } | StoreOp::Unsubscribe { .. } => Conn::Subscriber,
            _ => Conn::Command,
        }
    }
}

/// A reply on the command connection, in the order of the ops.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StoreReply {
    /// The record was appended as number `seq`.
    Appended {
        /// The log.
        log: LogKey,
        /// Its number.
        seq: Seq,
        /// Entries of a claimed log ([`LogKey::is_claimed`]) that this
        /// append trimmed (past `entries_per_log_max`) before anyone
        /// claimed them: lost, so reported (oldest first).
        evicted: Vec<Entry>,
    },
    /// The entries after `after`, in order.
    Read {
        /// The log.
        log: LogKey,
        /// The cursor read from.
        after: Seq,
        /// What was stored after it.
        entries: Vec<Entry>,
        /// Entries after the cursor were trimmed before this read (the log
        /// keeps a bounded number): they are gone.
        trimmed: bool,
    },
    /// The entries taken by a [`StoreOp::Claim`], now no one else's.
    Claimed {
        /// The log.
        log: LogKey,
        /// What was taken, in order.
        entries: Vec<Entry>,
        /// More were left untaken (past `max`).
        more: bool,
    },
    /// The session's record was stored.
    Stored {
        /// The session.
        session: SessionId,
    },
    /// The session's record, or `None`: unknown, expired or deleted.
    Session {
        /// The session.
        session: SessionId,
        /// Its record.
        record: Option<Shared<String>>,
        /// The session's adoptions counted so far, this one included, when
        /// the op counted one (0 otherwise): the copy taken up numbers in
        /// ranges of its own ([`crate::server::ADOPTIONS_SPAN`]).
        adoption: u32,
    },
    /// Whether an instance's heartbeat is current.
    Alive {
        /// The instance.
        instance: InstanceId,
        /// Its heartbeat has not expired.
        alive: bool,
    },
    /// What a [`StoreOp::Complete`] appended, numbered (nothing if the log
    /// had ended).
    Completed {
        /// The log.
        log: LogKey,
        /// The entries appended, to publish.
        appended: Vec<Entry>,
    },
    /// Whether the asking instance took a broadcast's delivery to a
    /// session ([`StoreOp::ClaimDelivery`]).
    Delivery {
        /// The session.
        session: SessionId,
        /// The broadcast.
        id: u64,
        /// Taken by the asking instance: it delivers.
        won: bool,
    },
    /// The session was deleted (`existed`: it was there to delete).
    Deleted {
        /// The session.
        session: SessionId,
        /// Whether it existed.
        existed: bool,
    },
}

/// What arrives on the subscriber connection, in order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Push {
    /// The subscription to `log` is in effect: every publication on it from
    /// now on arrives after this.
    Subscribed {
        /// The log.
        log: LogKey,
    },
    /// An entry published on `log`.
    Published {
        /// The log.
        log: LogKey,
        /// The entry.
        entry: Entry,
    },
}
