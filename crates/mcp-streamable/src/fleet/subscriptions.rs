//! [`Subscriptions`]: an instance's one subscription per log, shared by
//! every follower of that log on the instance.
//!
//! A store subscribes a *connection*, not a follower: two `SUBSCRIBE`s of
//! one channel on one Redis connection are one subscription, and one
//! `UNSUBSCRIBE` ends it for both. So the instance subscribes a log when
//! its first follower asks, unsubscribes when its last one leaves, and hands
//! each follower the confirmation it waits for.
//!
//! A confirmation may still be on its way for a subscription already ended
//! (subscribe, unsubscribe, subscribe again): it confirms nothing of the
//! new one. Confirmations are counted per log, so only the last one sent
//! confirms.

use super::{LogKey, Push, StoreOp};
use crate::ids::HttpId;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// One log's followers here, and whether the store confirmed it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Subscription<W> {
    followers: BTreeSet<W>,
    confirmed: bool,
}

/// The instance's subscriptions (see the module docs); `W` names a
/// follower (a relayed GET's exchange, a session's mailbox).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Subscriptions<W = HttpId> {
    live: BTreeMap<LogKey, Subscription<W>>,
    /// `Subscribe` ops sent per log whose confirmation has not come back.
    unconfirmed: BTreeMap<LogKey, usize>,
    ops: VecDeque<StoreOp>,
    /// Confirmations for followers: (follower, push).
    confirmations: VecDeque<(W, Push)>,
}

impl<W> Default for Subscriptions<W> {
    fn default() -> Self {
        Subscriptions {
            live: BTreeMap::new(),
            unconfirmed: BTreeMap::new(),
            ops: VecDeque::new(),
            confirmations: VecDeque::new(),
        }
    }
}

impl<W: Clone + Ord> Subscriptions<W> {
    /// Logs subscribed (or being subscribed) here.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Whether no log is subscribed.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// The followers of `log` here, in order.
    pub fn followers(&self, log: &LogKey) -> impl Iterator<Item = &W> + '_ {
        self.live
            .get(log)
            .into_iter()
            .flat_map(|s| s.followers.iter())
    }

    /// Whether the store has confirmed the subscription to `log` (its
    /// followers hear everything published from then on).
    pub fn is_confirmed(&self, log: &LogKey) -> bool {
        self.live.get(log).is_some_and(|s| s.confirmed)
    }

    /// Follower `who` asks to subscribe to `log`.
    pub fn subscribe(&mut self, who: W, log: LogKey) {
        let sub = self
            .live
            .entry(log.clone())
            .or_insert_with(|| Subscription {
                followers: BTreeSet::new(),
                confirmed: false,
            });
        let first = sub.followers.is_empty();
        sub.followers.insert(who.clone());
        if first {
            *self.unconfirmed.entry(log.clone()).or_default() += 1;
            self.ops.push_back(StoreOp::Subscribe { log });
        } else if sub.confirmed {
            self.confirmations
                .push_back((who, Push::Subscribed { log }));
        }
    }

    /// Follower `who` leaves `log`.
    pub fn unsubscribe(&mut self, who: &W, log: &LogKey) {
        let Some(sub) = self.live.get_mut(log) else {
            return;
        };
        sub.followers.remove(who);
        if sub.followers.is_empty() {
            self.live.remove(log);
            self.ops
                .push_back(StoreOp::Unsubscribe { log: log.clone() });
        }
    }

    /// The store confirmed a subscription to `log`.
    pub fn handle_subscribed(&mut self, log: &LogKey) {
        let Some(n) = self.unconfirmed.get_mut(log) else {
            return;
        };
        *n -= 1;
        if *n > 0 {
            return; // a later Subscribe of this log is still unconfirmed
        }
        self.unconfirmed.remove(log);
        if let Some(sub) = self.live.get_mut(log) {
            sub.confirmed = true;
            for who in &sub.followers {
                self.confirmations
                    .push_back((who.clone(), Push::Subscribed { log: log.clone() }));
            }
        }
    }

    /// The next op for the subscriber connection.
    pub fn poll_op(&mut self) -> Option<StoreOp> {
        self.ops.pop_front()
    }

    /// Whether confirmations wait for their followers.
    pub fn has_confirmations(&self) -> bool {
        !self.confirmations.is_empty()
    }

    /// The next confirmation for a follower.
    pub fn poll_confirmation(&mut self) -> Option<(W, Push)> {
        self.confirmations.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{SessionId, StreamId};

    fn log() -> LogKey {
        LogKey {
            session: SessionId::from_bits(1),
            stream: StreamId(2),
        }
    }

    fn ops(s: &mut Subscriptions) -> Vec<StoreOp> {
        std::iter::from_fn(|| s.poll_op()).collect()
    }

    fn confirmed(s: &mut Subscriptions) -> Vec<HttpId> {
        std::iter::from_fn(|| s.poll_confirmation())
            .map(|(h, _)| h)
            .collect()
    }

    #[test]
    fn one_subscription_for_two_followers_ended_by_the_last() {
        let mut s = Subscriptions::default();
        s.subscribe(HttpId(1), log());
        s.subscribe(HttpId(2), log());
        assert_eq!(ops(&mut s), vec![StoreOp::Subscribe { log: log() }]);
        assert!(confirmed(&mut s).is_empty(), "nothing confirmed yet");
        s.handle_subscribed(&log());
        assert_eq!(confirmed(&mut s), vec![HttpId(1), HttpId(2)]);
        s.subscribe(HttpId(3), log());
        assert_eq!(confirmed(&mut s), vec![HttpId(3)], "confirmed at once");
        assert!(ops(&mut s).is_empty());
        s.unsubscribe(&HttpId(1), &log());
        s.unsubscribe(&HttpId(2), &log());
        assert!(ops(&mut s).is_empty(), "one follower is left");
        assert_eq!(s.followers(&log()).collect::<Vec<_>>(), vec![&HttpId(3)]);
        s.unsubscribe(&HttpId(3), &log());
        assert_eq!(ops(&mut s), vec![StoreOp::Unsubscribe { log: log() }]);
        assert!(s.is_empty());
    }

    #[test]
    fn a_late_confirmation_of_an_ended_subscription_confirms_nothing_new() {
        let mut s = Subscriptions::default();
        s.subscribe(HttpId(1), log());
        s.unsubscribe(&HttpId(1), &log());
        s.subscribe(HttpId(2), log());
        assert_eq!(ops(&mut s).len(), 3);
        s.handle_subscribed(&log());
        assert!(
            confirmed(&mut s).is_empty(),
            "the first Subscribe's confirmation: the second is not in effect yet"
        );
        s.handle_subscribed(&log());
        assert_eq!(confirmed(&mut s), vec![HttpId(2)]);
        s.handle_subscribed(&log());
        assert!(confirmed(&mut s).is_empty(), "one too many: ignored");
        assert_eq!(s.len(), 1);
    }
}
