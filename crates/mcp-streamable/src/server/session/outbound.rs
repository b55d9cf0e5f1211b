//! What a session asked its client: the requests awaiting an answer, each
//! with the client request it was sent for, and the ids it hands out.
//!
//! A question belongs to the call it was asked for: when the client cancels
//! that call it stops reading the call's stream, where the question went,
//! so the question is given up with it ([`Outbound::give_up_for`]); nothing
//! then waits for an answer that cannot come (L1, F6). A question whose
//! answer the network lost, or that the client never answers, ends at its
//! deadline ([`Outbound::expire`]).

use crate::ids::RequestId;
use crate::time::Instant;
use std::collections::BTreeMap;

/// One awaited request.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Awaited {
    /// The client request it was sent for (`None`: unrelated to any).
    call: Option<RequestId>,
    /// When the session stops waiting (`None`: never).
    deadline: Option<Instant>,
}

/// The requests one session sent its client and still awaits answers to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Outbound {
    /// Each awaited request.
    awaited: BTreeMap<RequestId, Awaited>,
    /// The number of the next request.
    next: i64,
}

impl Outbound {
    /// Nothing asked yet; the first request is numbered `first`.
    pub(super) fn new(first: i64) -> Self {
        Outbound {
            awaited: BTreeMap::new(),
            next: first,
        }
    }

    /// How many requests await their answer.
    pub(super) fn len(&self) -> usize {
        self.awaited.len()
    }

    /// The awaited requests, in id order.
    pub(super) fn ids(&self) -> impl Iterator<Item = &RequestId> {
        self.awaited.keys()
    }

    /// The number the next request will carry.
    #[cfg(test)]
    pub(super) fn next_number(&self) -> i64 {
        self.next
    }

    /// The id the next request will carry ([`Self::sent`] takes it).
    pub(super) fn next_id(&self) -> RequestId {
        RequestId::Num(self.next)
    }

    /// The request [`Self::next_id`] named went out, for `call` (or for
    /// none): it awaits its answer until `deadline`, and the next one gets
    /// the next number.
    pub(super) fn sent(&mut self, call: Option<RequestId>, deadline: Option<Instant>) {
        self.awaited
            .insert(RequestId::Num(self.next), Awaited { call, deadline });
        self.next += 1;
    }

    /// The earliest deadline of an awaited request.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.awaited.values().filter_map(|a| a.deadline).min()
    }

    /// The requests whose deadline is at or before `now`, no longer
    /// awaited, in id order, each with the client request it was sent for.
    pub(super) fn expire(&mut self, now: Instant) -> Vec<(RequestId, Option<RequestId>)> {
        let due: Vec<RequestId> = self
            .awaited
            .iter()
            .filter(|(_, a)| a.deadline.is_some_and(|d| d <= now))
            .map(|(id, _)| id.clone())
            .collect();
        due.into_iter()
            .filter_map(|id| self.awaited.remove(&id).map(|a| (id, a.call)))
            .collect()
    }

    /// The application withdrew `id`: whether it was awaited, and the
    /// client request it was sent for.
    pub(super) fn withdraw(&mut self, id: &RequestId) -> Option<Option<RequestId>> {
        self.awaited.remove(id).map(|a| a.call)
    }

    /// The client answered `id`: whether it was awaited (an answer to
    /// anything else is late, or never asked for).
    pub(super) fn answered(&mut self, id: &RequestId) -> bool {
        self.awaited.remove(id).is_some()
    }

    /// Whether a request sent for client request `call` is awaited.
    pub(super) fn asked_for(&self, call: &RequestId) -> bool {
        self.awaited.values().any(|a| a.call.as_ref() == Some(call))
    }

    /// The client cancelled `call`: the requests sent for it, no longer
    /// awaited, in id order.
    pub(super) fn give_up_for(&mut self, call: &RequestId) -> Vec<RequestId> {
        let asked: Vec<RequestId> = self
            .awaited
            .iter()
            .filter(|(_, a)| a.call.as_ref() == Some(call))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &asked {
            self.awaited.remove(id);
        }
        asked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids follow one another from the first; an answer ends one awaited
    /// request, once; a cancelled call takes its own requests along and no
    /// other's, nor the unrelated ones.
    #[test]
    fn requests_are_numbered_answered_once_and_given_up_with_their_call() {
        let mut o = Outbound::new(10);
        let (a, b) = (RequestId::Num(1), RequestId::Num(2));
        assert_eq!(o.next_id(), RequestId::Num(10));
        o.sent(Some(a.clone()), None);
        o.sent(Some(b.clone()), None);
        o.sent(None, None);
        o.sent(Some(a.clone()), None);
        assert_eq!(o.next_number(), 14);
        assert_eq!(o.len(), 4);
        assert!(o.answered(&RequestId::Num(11)));
        assert!(!o.answered(&RequestId::Num(11)), "once");
        assert!(!o.answered(&RequestId::Num(99)), "never asked");
        assert_eq!(o.give_up_for(&a), [RequestId::Num(10), RequestId::Num(13)]);
        assert!(o.give_up_for(&a).is_empty());
        assert!(o.give_up_for(&b).is_empty(), "answered already");
        let left: Vec<&RequestId> = o.ids().collect();
        assert_eq!(left, [&RequestId::Num(12)], "the unrelated one");
    }

    /// Each request waits until its own deadline; an expired one is no
    /// longer awaited, and a late answer to it is not taken.
    #[test]
    fn a_request_past_its_deadline_is_no_longer_awaited() {
        let mut o = Outbound::new(1);
        let at = |ms| Some(Instant::from_millis(ms));
        o.sent(None, at(300));
        o.sent(Some(RequestId::Num(7)), at(100));
        o.sent(None, None);
        assert_eq!(o.next_deadline(), Instant::from_millis(100).into());
        assert!(o.expire(Instant::from_millis(99)).is_empty());
        assert_eq!(
            o.expire(Instant::from_millis(100)),
            [(RequestId::Num(2), Some(RequestId::Num(7)))],
            "with the call it was sent for"
        );
        assert_eq!(o.next_deadline(), at(300));
        assert_eq!(
            o.expire(Instant::from_millis(1_000)),
            [(RequestId::Num(1), None)]
        );
        assert_eq!(o.next_deadline(), None, "one without a deadline waits");
        assert!(
            !o.answered(&RequestId::Num(1)),
            "a late answer is not taken"
        );
        assert!(o.answered(&RequestId::Num(3)));
    }
}
