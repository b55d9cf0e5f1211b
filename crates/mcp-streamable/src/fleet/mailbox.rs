//! [`Claimer`]: an instance's hold on a session's mailbox while a GET of the
//! session is attached there; the same for the instance's answers log of a
//! session while the session awaits answers to requests sent from there
//! ([`LogKey::answers`]: the client may post them to any instance).
//!
//! An unrelated message (no request it answers) goes on one of the session's
//! GETs. In one process the session holds it until a GET attaches. In a
//! fleet the GET may be held by another instance, so an instance with no GET
//! of the session appends what it holds to the session's **mailbox**, a log
//! in the store ([`LogKey::mailbox`]), and every instance with a GET of the
//! session takes from it. Each entry must reach one GET, once: a read would
//! give it to every taker, so entries are *claimed* ([`StoreOp::Claim`]),
//! which the store does atomically, as a Redis script does.
//!
//! ```text
//!          open                    Subscribed
//!   Closed ─────▶ Subscribing ───────────────▶ Live ◀─┐ Published, or
//!     ▲                │                        │     │ Claimed (more)
//!     └────────────────┴──────── close ─────────┘ ────┘ : Claim
//! ```
//!
//! A claim goes out when the subscription is in effect (so nothing appended
//! before it is missed) and after every publication; one at a time, and a
//! publication that comes while one is out asks for one more after it. A
//! claim still out when the GET goes is still delivered: its entries are
//! this instance's now, and the session holds them (and hands them back to
//! the mailbox) if no GET can take them.

use super::{Entry, LogKey, Push, StoreOp, StoreReply};
use std::collections::VecDeque;

/// Where a claimer is (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Not taking (no GET here).
    Closed,
    /// Subscribed, waiting for the store's confirmation.
    Subscribing,
    /// Claiming on every publication.
    Live,
}

/// One session's mailbox, taken from on this instance (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Claimer {
    log: LogKey,
    phase: Phase,
    /// Entries taken per claim.
    claim_max: usize,
    /// A claim is out.
    claiming: bool,
    /// Claim again once the claim out is answered.
    again: bool,
    ops: VecDeque<StoreOp>,
    claimed: VecDeque<Entry>,
}

impl Claimer {
    /// A claimer of `log` (a session's mailbox, an instance's answers),
    /// closed; `claim_max` entries per claim (at least 1).
    pub fn new(log: LogKey, claim_max: usize) -> Self {
        Claimer {
            log,
            phase: Phase::Closed,
            claim_max: claim_max.max(1),
            claiming: false,
            again: false,
            ops: VecDeque::new(),
            claimed: VecDeque::new(),
        }
    }

    // ---- getters ----

    /// The mailbox.
    pub fn log(&self) -> &LogKey {
        &self.log
    }

    /// Where it is.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Whether a claim is out.
    pub fn is_claiming(&self) -> bool {
        self.claiming
    }

    /// Whether it can be forgotten: closed, nothing out, nothing to hand on.
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Closed
            && !self.claiming
            && self.claimed.is_empty()
            && self.ops.is_empty()
    }

    // ---- commands ----

    /// A GET of the session is attached here: subscribe, then claim.
    pub fn open(&mut self) {
        if self.phase == Phase::Closed {
            self.phase = Phase::Subscribing;
            self.again = false;
            self.ops.push_back(StoreOp::Subscribe {
                log: self.log.clone(),
            });
        }
    }

    /// No GET of the session is attached here any more.
    pub fn close(&mut self) {
        if self.phase != Phase::Closed {
            self.phase = Phase::Closed;
            self.again = false;
            self.ops.push_back(StoreOp::Unsubscribe {
                log: self.log.clone(),
            });
        }
    }

    // ---- inputs ----

    /// Something on the subscriber connection about the mailbox.
    pub fn handle_push(&mut self, push: &Push) {
        match push {
            Push::Subscribed { .. } if self.phase == Phase::Subscribing => {
                self.phase = Phase::Live;
                self.claim();
            }
            Push::Published { .. } if self.phase == Phase::Live => self.claim(),
            _ => {}
        }
    }

    /// The answer to this claimer's claim.
    pub fn handle_reply(&mut self, reply: StoreReply) {
        let StoreReply::Claimed { entries, more, .. } = reply else {
            return;
        };
        self.claiming = false;
        self.claimed.extend(entries);
        if self.phase == Phase::Live && (more || std::mem::take(&mut self.again)) {
            self.claim();
        }
    }

    // ---- outputs ----

    /// The next op: subscriptions for the subscriber connection, claims for
    /// the command connection ([`StoreOp::conn`]).
    pub fn poll_op(&mut self) -> Option<StoreOp> {
        self.ops.pop_front()
    }

    /// The next entry taken, in mailbox order.
    pub fn poll_entry(&mut self) -> Option<Entry> {
        self.claimed.pop_front()
    }

    fn claim(&mut self) {
        if self.claiming {
            self.again = true;
            return;
        }
        self.claiming = true;
        self.ops.push_back(StoreOp::Claim {
            log: self.log.clone(),
            max: self.claim_max,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::Record;
    use crate::ids::SessionId;

    fn sid() -> SessionId {
        SessionId::from_bits(1)
    }

    fn ops(c: &mut Claimer) -> Vec<StoreOp> {
        std::iter::from_fn(|| c.poll_op()).collect()
    }

    fn claim() -> StoreOp {
        StoreOp::Claim {
            log: LogKey::mailbox(sid()),
            max: 2,
        }
    }

    fn claimed(seqs: &[u64], more: bool) -> StoreReply {
        StoreReply::Claimed {
            log: LogKey::mailbox(sid()),
            entries: seqs
                .iter()
                .map(|&seq| Entry {
                    seq,
                    record: Record::Blank,
                })
                .collect(),
            more,
        }
    }

    fn published() -> Push {
        Push::Published {
            log: LogKey::mailbox(sid()),
            entry: Entry {
                seq: 9,
                record: Record::Blank,
            },
        }
    }

    #[test]
    fn claims_once_subscribed_then_on_publications_one_at_a_time() {
        let mut c = Claimer::new(LogKey::mailbox(sid()), 2);
        c.handle_push(&published());
        assert!(ops(&mut c).is_empty(), "closed: publications ask nothing");
        c.open();
        assert_eq!(
            ops(&mut c),
            vec![StoreOp::Subscribe {
                log: LogKey::mailbox(sid())
            }]
        );
        c.handle_push(&published());
        assert!(ops(&mut c).is_empty(), "not in effect yet: no claim");
        c.handle_push(&Push::Subscribed {
            log: LogKey::mailbox(sid()),
        });
        assert_eq!(ops(&mut c), vec![claim()]);
        c.handle_push(&published());
        c.handle_push(&published());
        assert!(ops(&mut c).is_empty(), "one claim out at a time");
        c.handle_reply(claimed(&[1], false));
        assert_eq!(ops(&mut c), vec![claim()], "publications came meanwhile");
        c.handle_reply(claimed(&[2, 3], true));
        assert_eq!(ops(&mut c), vec![claim()], "more left");
        c.handle_reply(claimed(&[4], false));
        assert!(ops(&mut c).is_empty());
        let seqs: Vec<u64> = std::iter::from_fn(|| c.poll_entry())
            .map(|e| e.seq)
            .collect();
        assert_eq!(seqs, [1, 2, 3, 4]);
    }

    /// `is_claiming` says whether a claim is out: from the claim made on
    /// subscribing until its answer.
    #[test]
    fn is_claiming_from_the_claim_until_its_answer() {
        let mut c = Claimer::new(LogKey::mailbox(sid()), 2);
        assert!(!c.is_claiming());
        c.open();
        assert!(!c.is_claiming(), "subscribing: nothing claimed yet");
        c.handle_push(&Push::Subscribed {
            log: LogKey::mailbox(sid()),
        });
        assert!(c.is_claiming());
        c.handle_reply(claimed(&[1], false));
        assert!(!c.is_claiming());
    }

    /// A subscription confirmed after the claimer closed (its GET left
    /// before the store answered) claims nothing: a closed claimer stays
    /// closed until it is opened again.
    #[test]
    fn a_subscription_confirmed_after_close_claims_nothing() {
        let mut c = Claimer::new(LogKey::mailbox(sid()), 2);
        c.open();
        c.close();
        ops(&mut c);
        c.handle_push(&Push::Subscribed {
            log: LogKey::mailbox(sid()),
        });
        assert!(ops(&mut c).is_empty(), "no claim for a closed claimer");
        assert_eq!(c.phase(), Phase::Closed);
        assert!(c.is_done());
    }

    #[test]
    fn a_claim_out_at_close_is_still_delivered_and_nothing_more_is_claimed() {
        let mut c = Claimer::new(LogKey::mailbox(sid()), 2);
        c.open();
        c.handle_push(&Push::Subscribed {
            log: LogKey::mailbox(sid()),
        });
        ops(&mut c);
        c.handle_push(&published());
        c.close();
        assert_eq!(
            ops(&mut c),
            vec![StoreOp::Unsubscribe {
                log: LogKey::mailbox(sid())
            }]
        );
        assert!(!c.is_done(), "a claim is out");
        c.handle_reply(claimed(&[1, 2], true));
        assert!(ops(&mut c).is_empty(), "closed: no claim for what is left");
        assert_eq!(c.poll_entry().map(|e| e.seq), Some(1));
        assert_eq!(c.poll_entry().map(|e| e.seq), Some(2));
        assert!(c.is_done());
        c.open();
        assert_eq!(ops(&mut c).len(), 1, "opened again: subscribes again");
    }
}
