//! [`SessionGate`]: on each request of a session, an instance asks the
//! shared store whether the session still exists, and keeps it alive.
//!
//! Any instance can get any request of a session, so none of them can know
//! from memory that a session was deleted on another one, or has expired.
//! The store's record is the truth; the gate asks it per request, and the
//! request waits for the answer (one round trip: `GETEX` on Redis). How the
//! gate refreshes the record is the [`SessionRefresh`] knob.

use super::{SessionRefresh, StoreOp, StoreReply};
use crate::ids::SessionId;
use crate::shared::Shared;
use std::collections::VecDeque;

/// What the gate decided about a request.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The session exists: serve the request with its record.
    Admitted {
        /// The session's record.
        record: Shared<String>,
        /// Its adoptions counted so far, when the check took a copy up
        /// (0 otherwise).
        adoption: u32,
    },
    /// Unknown, deleted or expired: `404` (R24).
    Unknown,
}

/// What a reply on the command connection answers, in op order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Awaiting {
    /// The check of request `tag`.
    Check { tag: u64, session: SessionId },
    /// A creation asked by request `tag` (reported by
    /// [`SessionGate::poll_created`]), or a write-back
    /// ([`SessionRefresh::LoadThenStore`], `tag` none).
    Stored { tag: Option<u64> },
    /// A deletion, asked by request `tag`.
    Delete { tag: u64 },
}

/// The requests of one instance waiting for the store (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SessionGate {
    refresh: SessionRefresh,
    ttl_ms: u64,
    awaiting: VecDeque<Awaiting>,
    ops: VecDeque<StoreOp>,
    verdicts: VecDeque<(u64, Verdict)>,
    deleted: VecDeque<(u64, bool)>,
    created: VecDeque<u64>,
}

impl SessionGate {
    /// A gate keeping sessions alive `ttl_ms` past each request.
    pub fn new(refresh: SessionRefresh, ttl_ms: u64) -> Self {
        SessionGate {
            refresh,
            ttl_ms,
            awaiting: VecDeque::new(),
            ops: VecDeque::new(),
            verdicts: VecDeque::new(),
            deleted: VecDeque::new(),
            created: VecDeque::new(),
        }
    }

    /// Requests waiting for the store.
    pub fn waiting(&self) -> usize {
        self.awaiting
            .iter()
            .filter(|a| !matches!(a, Awaiting::Stored { tag: None }))
            .count()
    }

    /// Request `tag` (an `initialize`) opened a session: store its record.
    /// [`Self::poll_created`] tells when it is stored; only then may the
    /// session's id reach the client, whose next request may land anywhere.
    pub fn create(&mut self, tag: u64, session: SessionId, record: Shared<String>) {
        self.store(Some(tag), session, record);
    }

    fn store(&mut self, tag: Option<u64>, session: SessionId, record: Shared<String>) {
        self.awaiting.push_back(Awaiting::Stored { tag });
        self.ops.push_back(StoreOp::PutSession {
            session,
            record,
            ttl_ms: self.ttl_ms,
        });
    }

    /// Request `tag` names `session`: ask the store; `adopt` when no copy
    /// of it is held here (the store counts the adoption).
    pub fn check(&mut self, tag: u64, session: SessionId, adopt: bool) {
        let op = match self.refresh {
            SessionRefresh::Atomic => StoreOp::TouchSession {
                session: session.clone(),
                ttl_ms: self.ttl_ms,
                adopt,
            },
            SessionRefresh::LoadThenStore => StoreOp::LoadSession {
                session: session.clone(),
                adopt,
            },
        };
        self.awaiting.push_back(Awaiting::Check { tag, session });
        self.ops.push_back(op);
    }

    /// Request `tag` is a DELETE of `session`.
    pub fn delete(&mut self, tag: u64, session: SessionId) {
        self.awaiting.push_back(Awaiting::Delete { tag });
        self.ops.push_back(StoreOp::DeleteSession { session });
    }

    /// A reply on the command connection about sessions.
    pub fn handle_reply(&mut self, reply: StoreReply) {
        let Some(awaiting) = self.awaiting.pop_front() else {
            return;
        };
        match (awaiting, reply) {
            (
                Awaiting::Check { tag, session },
                StoreReply::Session {
                    record, adoption, ..
                },
            ) => {
                let verdict = match record {
                    Some(record) => {
                        if self.refresh == SessionRefresh::LoadThenStore {
                            self.store(None, session, record.clone());
                        }
                        Verdict::Admitted { record, adoption }
                    }
                    None => Verdict::Unknown,
                };
                self.verdicts.push_back((tag, verdict));
            }
            (Awaiting::Delete { tag }, StoreReply::Deleted { existed, .. }) => {
                self.deleted.push_back((tag, existed));
            }
            (Awaiting::Stored { tag }, StoreReply::Stored { .. }) => {
                self.created.extend(tag);
            }
            (awaiting, _) => {
                // A reply out of step with the ops: the store connection is
                // broken; put it back so the shell can fail what waits.
                self.awaiting.push_front(awaiting);
            }
        }
    }

    /// The next op for the store.
    pub fn poll_op(&mut self) -> Option<StoreOp> {
        self.ops.pop_front()
    }

    /// The next request decided, with its verdict.
    pub fn poll_verdict(&mut self) -> Option<(u64, Verdict)> {
        self.verdicts.pop_front()
    }

    /// The next request whose session's record is stored ([`Self::create`]).
    pub fn poll_created(&mut self) -> Option<u64> {
        self.created.pop_front()
    }

    /// The next DELETE done (`true`: the session was there).
    pub fn poll_deleted(&mut self) -> Option<(u64, bool)> {
        self.deleted.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::store::{MemoryStore, Output};
    use crate::fleet::InstanceId;
    use crate::time::Instant;

    fn sid() -> SessionId {
        SessionId::from_bits(9)
    }

    /// Runs every op of `gate` on `store` at `now` and feeds the replies back.
    fn round_trip(gate: &mut SessionGate, store: &mut MemoryStore, now: Instant) {
        while let Some(op) = gate.poll_op() {
            store.handle_op(InstanceId(0), op, now);
            while let Some((_, out)) = store.poll_output() {
                if let Output::Reply(r) = out {
                    gate.handle_reply(r);
                }
            }
        }
    }

    #[test]
    fn atomic_checks_touch_and_a_deleted_session_is_unknown() {
        let mut store = MemoryStore::new(4);
        let mut g = SessionGate::new(SessionRefresh::Atomic, 100);
        g.create(0, sid(), "r".to_string().into());
        g.check(1, sid(), false);
        assert_eq!(g.waiting(), 2, "the creation waits as well");
        round_trip(&mut g, &mut store, Instant::from_millis(50));
        assert_eq!(g.poll_created(), Some(0));
        assert_eq!(g.poll_created(), None);
        assert_eq!(
            g.poll_verdict(),
            Some((
                1,
                Verdict::Admitted {
                    record: "r".to_string().into(),
                    adoption: 0
                }
            ))
        );
        assert_eq!(g.waiting(), 0);
        assert_eq!(
            store.session_expires_at(&sid(), Instant::from_millis(120)),
            Some(Instant::from_millis(150)),
            "the check pushed the expiry"
        );
        g.delete(2, sid());
        g.check(3, sid(), true);
        round_trip(&mut g, &mut store, Instant::from_millis(60));
        assert_eq!(g.poll_deleted(), Some((2, true)));
        assert_eq!(g.poll_verdict(), Some((3, Verdict::Unknown)));
    }

    #[test]
    fn load_then_store_writes_the_record_back_after_admitting() {
        let mut store = MemoryStore::new(4);
        let mut g = SessionGate::new(SessionRefresh::LoadThenStore, 100);
        g.create(0, sid(), "r".to_string().into());
        round_trip(&mut g, &mut store, Instant::ZERO);
        assert_eq!(g.poll_created(), Some(0));
        g.check(1, sid(), true);
        assert_eq!(
            g.poll_op(),
            Some(StoreOp::LoadSession {
                session: sid(),
                adopt: true
            })
        );
        g.handle_reply(StoreReply::Session {
            session: sid(),
            record: Some("r".to_string().into()),
            adoption: 3,
        });
        assert!(matches!(
            g.poll_verdict(),
            Some((1, Verdict::Admitted { adoption: 3, .. }))
        ));
        assert_eq!(
            g.poll_op(),
            Some(StoreOp::PutSession {
                session: sid(),
                record: "r".to_string().into(),
                ttl_ms: 100
            })
        );
        // A reply that answers nothing waiting is ignored; one out of step
        // leaves what waits in place.
        g.handle_reply(StoreReply::Stored { session: sid() });
        g.handle_reply(StoreReply::Stored { session: sid() });
        g.check(2, sid(), false);
        g.handle_reply(StoreReply::Deleted {
            session: sid(),
            existed: true,
        });
        assert_eq!(g.waiting(), 1);
        assert_eq!(g.poll_verdict(), None);
    }
}
