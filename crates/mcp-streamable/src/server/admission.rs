//! [`Admission`]: who may open a session, and who makes room when the table
//! is full, so that no client can lock the others out.
//!
//! ```text
//!   initialize from peer P
//!        │
//!        ├─ P holds sessions_per_peer_max? ── evict P's oldest uninitialized ── none? 429
//!        │
//!        ├─ table at sessions_max? ── evict the oldest uninitialized (anyone's)
//!        │                             └─ none? the longest idle one
//!        │                                 └─ none? 503 (everyone is busy)
//!        ▼
//!   admitted: uninitialized ──notifications/initialized──▶ initialized
//!                 │                                           │
//!                 └── idle (no open exchange) ◀──────────────▶ busy
//! ```
//! A session that never completes the handshake is the cheapest thing for an
//! attacker to make and the first to go; a session in use is never evicted.
//! (It also expires by itself after `init_timeout_ms`: see
//! [`SessionConfig`](super::SessionConfig).)
//!
//! The table holds only indexes, keyed by times the driver already knows,
//! so lookups and evictions are `O(log n)` however full it is. It is shared
//! code: [`ServerEndpoint`](super::ServerEndpoint) keeps one for its own
//! sessions, and a shell that runs one endpoint per session keeps one for
//! all of them and hands it to each endpoint that may open a session.

use crate::error::RequestError;
use crate::ids::SessionId;
use crate::time::Instant;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::IpAddr;

/// The bounds admission enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AdmissionLimits {
    /// Live sessions at once.
    pub sessions_max: usize,
    /// Live sessions one peer address may hold (`None`: no quota; behind a
    /// proxy every client shares one address, so it is opt-in).
    pub sessions_per_peer_max: Option<usize>,
    /// Bytes all sessions together may keep (replay buffers, held
    /// messages): past it a newcomer evicts half-open and idle sessions
    /// until it fits, or is refused (503).
    pub retained_bytes_max: usize,
}

/// What admission needs to know of a session, as its core sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SessionState {
    /// It completed the handshake.
    pub initialized: bool,
    /// Since when it has had no open exchange (`None`: it has one).
    pub idle_since: Option<Instant>,
    /// Bytes it keeps (replay buffers, held messages).
    pub retained: usize,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Entry {
    peer: Option<IpAddr>,
    /// When it opened, while it has not completed the handshake.
    uninitialized: Option<Instant>,
    /// Since when it has had no open exchange.
    idle: Option<Instant>,
    /// Bytes it keeps, as last reported.
    retained: usize,
}

/// The admission table; see the module docs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Admission {
    entries: BTreeMap<SessionId, Entry>,
    uninitialized: BTreeSet<(Instant, SessionId)>,
    idle: BTreeSet<(Instant, SessionId)>,
    per_peer: BTreeMap<IpAddr, PeerSessions>,
    retained: usize,
    evicted: VecDeque<SessionId>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct PeerSessions {
    count: usize,
    uninitialized: BTreeSet<(Instant, SessionId)>,
}

impl Admission {
    // ---- getters -------------------------------------------------------

    /// Sessions admitted and not yet removed.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no session is admitted.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes all admitted sessions keep, as last reported.
    pub fn retained_bytes(&self) -> usize {
        self.retained
    }

    /// Whether `id` is admitted.
    pub fn contains(&self, id: &SessionId) -> bool {
        self.entries.contains_key(id)
    }

    /// Whether reporting `state` of `id` would change anything (so a driver
    /// that shares the table copy-on-write copies it only then).
    pub fn differs(&self, id: &SessionId, state: SessionState) -> bool {
        self.entries.get(id).is_some_and(|e| {
            (state.initialized && e.uninitialized.is_some())
                || e.idle != state.idle_since
                || e.retained != state.retained
        })
    }

    /// Whether evicted sessions wait to be drained.
    pub fn has_evicted(&self) -> bool {
        !self.evicted.is_empty()
    }

    /// Sessions `peer` holds.
    pub fn peer_sessions(&self, peer: IpAddr) -> usize {
        self.per_peer.get(&peer).map_or(0, |p| p.count)
    }

    // ---- inputs --------------------------------------------------------

    /// Admits the new session `id` from `peer`, evicting whom the bounds
    /// require (drain them with [`Admission::poll_evicted`] and end each), or
    /// refuses it: 429 when `peer` is over its quota, 503 when every session
    /// is initialized and busy.
    pub fn admit(
        &mut self,
        id: &SessionId,
        peer: Option<IpAddr>,
        limits: AdmissionLimits,
        now: Instant,
    ) -> Result<(), RequestError> {
        if let (Some(p), Some(max)) = (peer, limits.sessions_per_peer_max) {
            if self.peer_sessions(p) >= max {
                let victim = self
                    .per_peer
                    .get(&p)
                    .and_then(|ps| ps.uninitialized.first())
                    .map(|(_, v)| v.clone())
                    .ok_or(RequestError::PeerSessionLimit { max })?;
                self.evict(&victim);
            }
        }
        if self.entries.len() >= limits.sessions_max {
            let victim = self.next_victim().ok_or(RequestError::SessionLimit)?;
            self.evict(&victim);
        }
        while self.retained > limits.retained_bytes_max {
            let victim = self.next_victim().ok_or(RequestError::OverBudget)?;
            self.evict(&victim);
        }
        self.remove(id);
        self.entries.insert(
            id.clone(),
            Entry {
                peer,
                uninitialized: Some(now),
                idle: None,
                retained: 0,
            },
        );
        self.uninitialized.insert((now, id.clone()));
        if let Some(p) = peer {
            let ps = self.per_peer.entry(p).or_default();
            ps.count += 1;
            ps.uninitialized.insert((now, id.clone()));
        }
        Ok(())
    }

    /// What `id` is now ([`ServerSession::admission_state`](super::ServerSession::admission_state)):
    /// the one report every driver makes after each change.
    pub fn handle_session(&mut self, id: &SessionId, state: SessionState) {
        if state.initialized {
            self.handle_initialized(id);
        }
        self.handle_idle(id, state.idle_since);
        self.handle_retained(id, state.retained);
    }

    /// `id` completed the handshake (`notifications/initialized`).
    pub fn handle_initialized(&mut self, id: &SessionId) {
        let Some(e) = self.entries.get_mut(id) else {
            return;
        };
        if let Some(at) = e.uninitialized.take() {
            self.uninitialized.remove(&(at, id.clone()));
            if let Some(ps) = e.peer.and_then(|p| self.per_peer.get_mut(&p)) {
                ps.uninitialized.remove(&(at, id.clone()));
            }
        }
    }

    /// `id` has had no open exchange since `since` (`None`: it has one now).
    /// Idle since longest is evicted first among initialized sessions.
    pub fn handle_idle(&mut self, id: &SessionId, since: Option<Instant>) {
        let Some(e) = self.entries.get_mut(id) else {
            return;
        };
        if e.idle == since {
            return;
        }
        if let Some(at) = e.idle.take() {
            self.idle.remove(&(at, id.clone()));
        }
        if let Some(at) = since {
            e.idle = Some(at);
            self.idle.insert((at, id.clone()));
        }
    }

    /// `id` keeps `bytes` now (its `retained_bytes`).
    pub fn handle_retained(&mut self, id: &SessionId, bytes: usize) {
        if let Some(e) = self.entries.get_mut(id) {
            self.retained = self.retained - e.retained + bytes;
            e.retained = bytes;
        }
    }

    /// `id` has ended (or was never opened): forget it.
    pub fn remove(&mut self, id: &SessionId) {
        let Some(e) = self.entries.remove(id) else {
            return;
        };
        self.retained -= e.retained;
        if let Some(at) = e.uninitialized {
            self.uninitialized.remove(&(at, id.clone()));
        }
        if let Some(at) = e.idle {
            self.idle.remove(&(at, id.clone()));
        }
        if let Some(p) = e.peer {
            if let Some(ps) = self.per_peer.get_mut(&p) {
                ps.count -= 1;
                if let Some(at) = e.uninitialized {
                    ps.uninitialized.remove(&(at, id.clone()));
                }
                if ps.count == 0 {
                    self.per_peer.remove(&p);
                }
            }
        }
    }

    // ---- outputs -------------------------------------------------------

    /// The next session evicted to make room: its owner must end it.
    #[must_use]
    pub fn poll_evicted(&mut self) -> Option<SessionId> {
        self.evicted.pop_front()
    }

    /// Who goes first: the oldest half-open session, then the longest idle.
    fn next_victim(&self) -> Option<SessionId> {
        self.uninitialized
            .first()
            .or_else(|| self.idle.first())
            .map(|(_, v)| v.clone())
    }

    fn evict(&mut self, victim: &SessionId) {
        self.remove(victim);
        self.evicted.push_back(victim.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sid(n: u128) -> SessionId {
        SessionId::from_bits(n)
    }

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    const TWO: AdmissionLimits = AdmissionLimits {
        sessions_max: 2,
        sessions_per_peer_max: None,
        retained_bytes_max: usize::MAX,
    };

    fn drained(a: &mut Admission) -> Vec<SessionId> {
        std::iter::from_fn(|| a.poll_evicted()).collect()
    }

    #[test]
    fn below_the_bound_nobody_is_evicted() {
        let mut a = Admission::default();
        assert!(a.is_empty());
        a.admit(&sid(1), None, TWO, at(0)).unwrap();
        assert!(!a.is_empty() && a.contains(&sid(1)) && !a.contains(&sid(2)));
        a.admit(&sid(2), None, TWO, at(1)).unwrap();
        assert_eq!(a.len(), 2);
        assert!(drained(&mut a).is_empty());
    }

    #[test]
    fn full_evicts_the_oldest_uninitialized_first() {
        let mut a = Admission::default();
        a.admit(&sid(1), None, TWO, at(0)).unwrap();
        a.admit(&sid(2), None, TWO, at(1)).unwrap();
        a.handle_initialized(&sid(1));
        a.handle_idle(&sid(1), Some(at(1)));
        a.admit(&sid(3), None, TWO, at(2)).unwrap();
        assert_eq!(drained(&mut a), vec![sid(2)], "uninitialized before idle");
        a.handle_initialized(&sid(3));
        a.handle_idle(&sid(3), Some(at(0)));
        a.admit(&sid(4), None, TWO, at(5)).unwrap();
        assert_eq!(drained(&mut a), vec![sid(3)], "then the longest idle");
        assert_eq!(a.len(), 2);
    }

    #[test]
    fn full_of_busy_initialized_sessions_refuses_with_503() {
        let mut a = Admission::default();
        for n in 1..=2 {
            a.admit(&sid(n), None, TWO, at(0)).unwrap();
            a.handle_initialized(&sid(n));
        }
        let e = a.admit(&sid(3), None, TWO, at(1)).unwrap_err();
        assert_eq!((e.clone(), e.status()), (RequestError::SessionLimit, 503));
        assert!(drained(&mut a).is_empty());
        a.handle_idle(&sid(2), Some(at(1)));
        a.admit(&sid(3), None, TWO, at(2)).unwrap();
        assert_eq!(drained(&mut a), vec![sid(2)]);
        a.handle_idle(&sid(1), Some(at(3)));
        a.handle_idle(&sid(1), None);
        a.handle_initialized(&sid(3));
        assert!(a.admit(&sid(4), None, TWO, at(4)).is_err(), "busy again");
    }

    #[test]
    fn the_peer_quota_evicts_only_that_peers_uninitialized_then_429() {
        let limits = AdmissionLimits {
            sessions_max: 100,
            sessions_per_peer_max: Some(2),
            retained_bytes_max: usize::MAX,
        };
        let (p, q): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let mut a = Admission::default();
        a.admit(&sid(1), Some(q), limits, at(0)).unwrap();
        a.admit(&sid(2), Some(p), limits, at(1)).unwrap();
        a.admit(&sid(3), Some(p), limits, at(2)).unwrap();
        a.admit(&sid(4), Some(p), limits, at(3)).unwrap();
        assert_eq!(
            drained(&mut a),
            vec![sid(2)],
            "p's own oldest, not q's older one"
        );
        assert_eq!((a.peer_sessions(p), a.peer_sessions(q)), (2, 1));
        a.handle_initialized(&sid(3));
        a.handle_initialized(&sid(4));
        let e = a.admit(&sid(5), Some(p), limits, at(4)).unwrap_err();
        assert_eq!(e.status(), 429);
        a.admit(&sid(6), Some(q), limits, at(5)).unwrap();
        a.remove(&sid(3));
        a.admit(&sid(5), Some(p), limits, at(6)).unwrap();
        assert_eq!(a.peer_sessions(p), 2);
    }

    #[test]
    fn a_flood_of_uninitialized_sessions_never_locks_out_a_newcomer() {
        let limits = AdmissionLimits {
            sessions_max: 64,
            sessions_per_peer_max: None,
            retained_bytes_max: usize::MAX,
        };
        let mut a = Admission::default();
        for n in 0..10_000u128 {
            a.admit(&sid(n), None, limits, at(n as u64)).unwrap();
            assert!(a.len() <= 64);
        }
        a.admit(&sid(1 << 100), None, limits, at(20_000)).unwrap();
        a.handle_initialized(&sid(1 << 100));
        for n in 20_000..30_000u128 {
            a.admit(&sid(n), None, limits, at(n as u64)).unwrap();
        }
        assert!(
            a.entries.contains_key(&sid(1 << 100)),
            "the initialized newcomer survives the flood"
        );
        assert_eq!(a.uninitialized.len(), 63);
    }

    #[test]
    fn the_server_wide_byte_budget_evicts_idle_sessions_then_refuses() {
        let limits = AdmissionLimits {
            sessions_max: 100,
            sessions_per_peer_max: None,
            retained_bytes_max: 1_000,
        };
        let mut a = Admission::default();
        for n in 1..=3 {
            a.admit(&sid(n), None, limits, at(n as u64)).unwrap();
            a.handle_initialized(&sid(n));
            a.handle_retained(&sid(n), 400);
        }
        assert_eq!(a.retained_bytes(), 1_200);
        a.handle_idle(&sid(2), Some(at(5)));
        a.admit(&sid(4), None, limits, at(6)).unwrap();
        assert_eq!(drained(&mut a), vec![sid(2)], "the idle one made room");
        assert_eq!(a.retained_bytes(), 800);
        a.handle_initialized(&sid(4));
        a.handle_retained(&sid(4), 400);
        let e = a.admit(&sid(5), None, limits, at(7)).unwrap_err();
        assert_eq!((e.clone(), e.status()), (RequestError::OverBudget, 503));
        a.handle_retained(&sid(1), 0);
        a.admit(&sid(5), None, limits, at(8)).unwrap();
        // Exactly at the budget: nobody is evicted.
        a.handle_initialized(&sid(5));
        a.handle_retained(&sid(5), 200);
        assert_eq!(a.retained_bytes(), 1_000);
        a.handle_idle(&sid(3), Some(at(9)));
        a.admit(&sid(6), None, limits, at(10)).unwrap();
        assert!(drained(&mut a).is_empty(), "at the bound, not past it");
    }

    #[test]
    fn remove_forgets_every_index() {
        let p: IpAddr = "::1".parse().unwrap();
        let limits = AdmissionLimits {
            sessions_max: 4,
            sessions_per_peer_max: Some(4),
            retained_bytes_max: usize::MAX,
        };
        let mut a = Admission::default();
        a.admit(&sid(1), Some(p), limits, at(0)).unwrap();
        a.handle_idle(&sid(1), Some(at(0)));
        a.handle_retained(&sid(1), 77);
        a.remove(&sid(1));
        assert_eq!(a, Admission::default());
    }
}
