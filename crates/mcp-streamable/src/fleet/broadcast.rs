//! [`Broadcasts`]: a broadcast made on one instance reaches the sessions of
//! every instance, each session once.
//!
//! A broadcast (a list changed) is for every session, but a fleet's
//! sessions are spread over its instances, and one session may have copies
//! on several (each instance a request of it landed on). So a broadcast is
//! published on the fleet's channel ([`LogKey::broadcasts`]) to every other
//! instance, and each instance, the one that made it included, claims each
//! session-era session it holds a copy of in the store before it notifies
//! it ([`StoreOp::ClaimDelivery`]): whichever copy claims first delivers, on
//! its GET if the GET is there, through the session's mailbox to the
//! instance that holds it otherwise (as any unrelated message). A 2026-07-28
//! listen lives on one instance only, the one its `subscriptions/listen`
//! stream is open on, and gets the broadcast there unclaimed.
//!
//! ```text
//!   instance W: broadcast(m) ──Publish(broadcasts, id, m)──► every other instance
//!        │                                                        │
//!        ▼ here                                                   ▼ there, alike
//!   each target held here:
//!     2026-07-28 listen  ──► notified at once
//!     session era    ──► ClaimDelivery(S, id) ──won──► notified here
//!                                             └─lost─► another copy did it
//! ```
//!
//! A broadcast's id is 64 bits: this instance's id in the top 16 (so its
//! own publication, coming back, is known and skipped) and 48 random bits
//! from the instance's entropy, so an instance restarted under the same id
//! never meets a claim of its earlier life.
//!
//! What this does not give: a common order of broadcasts made on different
//! instances (each session gets each once, in the order its instances
//! handled them), and a session with no copy on any instance (every copy
//! ended, the store's record still alive) gets nothing; one process holds
//! a broadcast for such a session until its next GET.

use super::{Entry, InstanceId, LogKey, Record, StoreOp};
use crate::id_source::IdSource;
use crate::ids::SessionId;
use crate::jsonrpc::{Message, RawJson};
use crate::shared::Shared;
use std::collections::{BTreeMap, VecDeque};

/// A broadcast waiting for the store's word on its claims.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Pending {
    method: String,
    params: Option<RawJson>,
    /// Claims not answered yet.
    waiting: usize,
}

/// One instance's part in the fleet's broadcasts (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Broadcasts {
    me: InstanceId,
    /// Where broadcast ids come from; `None` until the instance joins.
    ids: Option<IdSource>,
    pending: BTreeMap<u64, Pending>,
    /// Pending broadcasts, oldest first (ids are random, so the map's
    /// order is not theirs).
    order: VecDeque<u64>,
    pending_max: usize,
    claim_ttl_ms: u64,
    dropped: u64,
}

impl Broadcasts {
    /// Instance `me`'s part: at most `pending_max` broadcasts wait for
    /// their claims at once; a claim is kept `claim_ttl_ms` in the store.
    pub fn new(me: InstanceId, pending_max: usize, claim_ttl_ms: u64) -> Self {
        Broadcasts {
            me,
            ids: None,
            pending: BTreeMap::new(),
            order: VecDeque::new(),
            pending_max: pending_max.max(1),
            claim_ttl_ms,
            dropped: 0,
        }
    }

    // ---- getters -------------------------------------------------------

    /// Whether this instance takes part in the fleet's broadcasts.
    pub fn is_joined(&self) -> bool {
        self.ids.is_some()
    }

    /// Broadcasts waiting for their claims.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Deliveries given up because more than `pending_max` broadcasts
    /// waited for their claims at once.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    // ---- commands ------------------------------------------------------

    /// Takes part from now on, broadcast ids drawn from `ids`.
    pub fn join(&mut self, ids: IdSource) {
        self.ids = Some(ids);
    }

    /// A broadcast made here: its id and its publication to the other
    /// instances; `None` if this instance has not joined.
    pub fn publish(&mut self, method: &str, params: Option<RawJson>) -> Option<(u64, StoreOp)> {
        let ids = self.ids.as_mut()?;
        let id = (u64::from(self.me.0) << 48) | (ids.next_u64() >> 16);
        let text = Message::notification(method, params).to_json();
        let entry = Entry {
            seq: id,
            record: Record::Message(Shared::new(text)),
        };
        let log = LogKey::broadcasts();
        Some((id, StoreOp::Publish { log, entry }))
    }

    // ---- handle_* ------------------------------------------------------

    /// A publication on the broadcast channel: the broadcast it carries,
    /// unless it is this instance's own or not a broadcast.
    pub fn handle_published(&self, entry: &Entry) -> Option<(u64, String, Option<RawJson>)> {
        if origin(entry.seq) == self.me {
            return None;
        }
        let Record::Message(text) = &entry.record else {
            return None;
        };
        match serde_json::from_str::<Message>(text.as_str()).ok()? {
            Message::Notification { method, params } => Some((entry.seq, method, params)),
            _ => None,
        }
    }

    /// Broadcast `id` is for `sessions` here (session-era copies): the
    /// claims to send, one per session, in order. Past `pending_max`, the
    /// oldest broadcast still waiting is given up.
    pub fn claim(
        &mut self,
        id: u64,
        method: &str,
        params: Option<RawJson>,
        sessions: &[SessionId],
    ) -> Vec<StoreOp> {
        if sessions.is_empty() {
            return Vec::new();
        }
        let waiting = match self.pending.get_mut(&id) {
            Some(p) => &mut p.waiting,
            None => {
                if self.pending.len() >= self.pending_max {
                    if let Some(old) = self.order.pop_front() {
                        if let Some(p) = self.pending.remove(&old) {
                            self.dropped += p.waiting as u64;
                        }
                    }
                }
                self.order.push_back(id);
                let p = self.pending.entry(id).or_insert(Pending {
                    method: method.to_owned(),
                    params,
                    waiting: 0,
                });
                &mut p.waiting
            }
        };
        *waiting += sessions.len();
        sessions
            .iter()
            .map(|s| StoreOp::ClaimDelivery {
                session: s.clone(),
                id,
                ttl_ms: self.claim_ttl_ms,
            })
            .collect()
    }

    /// The store's word on one claim: the broadcast to notify the session
    /// of if this instance took it.
    pub fn handle_delivery(&mut self, id: u64, won: bool) -> Option<(String, Option<RawJson>)> {
        let p = self.pending.get_mut(&id)?;
        p.waiting = p.waiting.saturating_sub(1);
        let got = won.then(|| (p.method.clone(), p.params.clone()));
        if p.waiting == 0 {
            self.pending.remove(&id);
            self.order.retain(|&o| o != id);
        }
        got
    }
}

/// The instance that made broadcast `id`.
pub fn origin(id: u64) -> InstanceId {
    InstanceId((id >> 48) as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sid(n: u128) -> SessionId {
        SessionId::from_bits(n)
    }

    #[test]
    fn ids_carry_their_instance_and_differ() {
        let mut b = Broadcasts::new(InstanceId(7), 4, 1000);
        assert!(b.publish("m", None).is_none(), "not joined: nothing");
        b.join(IdSource::reproducible(1));
        let (a, _) = b.publish("m", None).unwrap();
        let (c, op) = b.publish("m", None).unwrap();
        assert_ne!(a, c);
        assert_eq!((origin(a), origin(c)), (InstanceId(7), InstanceId(7)));
        let StoreOp::Publish { log, entry } = op else {
            panic!("a publication")
        };
        assert!(log.is_broadcasts());
        assert_eq!(entry.seq, c);
        // Its own publication back: skipped; another instance's: read.
        assert_eq!(b.handle_published(&entry), None);
        let other = Broadcasts::new(InstanceId(8), 4, 1000);
        let (id, method, params) = other.handle_published(&entry).unwrap();
        assert_eq!((id, method.as_str(), params), (c, "m", None));
    }

    #[test]
    fn each_claim_answered_once_and_only_won_ones_deliver() {
        let mut b = Broadcasts::new(InstanceId(0), 4, 1000);
        let ops = b.claim(5, "m", None, &[sid(1), sid(2)]);
        assert_eq!(ops.len(), 2);
        assert!(matches!(
            &ops[0],
            StoreOp::ClaimDelivery { session, id: 5, ttl_ms: 1000 } if *session == sid(1)
        ));
        assert_eq!(b.pending_len(), 1);
        assert_eq!(b.handle_delivery(5, false), None);
        assert_eq!(b.pending_len(), 1, "one claim still out");
        assert_eq!(b.handle_delivery(5, true), Some(("m".to_owned(), None)));
        assert_eq!(b.pending_len(), 0);
        assert_eq!(b.handle_delivery(5, true), None, "answered: forgotten");
        assert!(b.claim(6, "m", None, &[]).is_empty());
        assert_eq!(b.pending_len(), 0, "no session: nothing waits");
    }

    #[test]
    fn past_pending_max_the_oldest_broadcast_is_given_up_and_counted() {
        let mut b = Broadcasts::new(InstanceId(0), 2, 1000);
        b.claim(30, "a", None, &[sid(1), sid(2)]);
        b.claim(10, "b", None, &[sid(1)]);
        assert_eq!((b.pending_len(), b.dropped()), (2, 0), "at the bound");
        b.claim(20, "c", None, &[sid(1)]);
        assert_eq!((b.pending_len(), b.dropped()), (2, 2), "30's two claims");
        assert_eq!(b.handle_delivery(30, true), None);
        assert_eq!(b.handle_delivery(10, true), Some(("b".to_owned(), None)));
        assert_eq!(b.handle_delivery(20, true), Some(("c".to_owned(), None)));
        // Answered ones leave the order too: the bound counts only what waits.
        b.claim(40, "d", None, &[sid(1)]);
        b.claim(50, "e", None, &[sid(1)]);
        assert_eq!((b.pending_len(), b.dropped()), (2, 2));
        b.claim(60, "f", None, &[sid(1)]);
        assert_eq!((b.pending_len(), b.dropped()), (2, 3), "40 given up");
        assert_eq!(b.handle_delivery(40, true), None);
        // A broadcast answered alone leaves no trace in the order either.
        let mut b = Broadcasts::new(InstanceId(0), 2, 1000);
        b.claim(1, "a", None, &[sid(1)]);
        b.handle_delivery(1, true);
        for id in [2, 3, 4] {
            b.claim(id, "b", None, &[sid(1)]);
        }
        assert_eq!(
            (b.pending_len(), b.dropped()),
            (2, 1),
            "2 given up, not 1 again"
        );
    }
}
