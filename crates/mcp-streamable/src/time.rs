//! Time as an input: the cores never read a clock.
//!
//! [`Instant`] is milliseconds since an epoch the driver chooses (a test's zero, a
//! shell's start). Plain integers keep traces readable ("at_ms": 1500), hashing
//! cheap for the model checker, and replays exact.

use serde::{Deserialize, Serialize};
use std::ops::{Add, Sub};
use std::time::Duration;

/// A point in time, in milliseconds since the driver's epoch.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Instant(u64);

impl Instant {
    /// The driver's epoch.
    pub const ZERO: Instant = Instant(0);

    /// The instant `ms` milliseconds after the epoch.
    pub const fn from_millis(ms: u64) -> Self {
        Instant(ms)
    }

    /// Milliseconds since the epoch.
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// The instant `d` before `self`, or the epoch if that is earlier.
    pub fn saturating_sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(d.as_millis() as u64))
    }

    /// Time from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        Instant(self.0.saturating_add(ms))
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

/// Deadlines of one core, each with the reason it exists; the earliest is what
/// `poll_timeout` reports. A few kinds at most, so a small vector beats a map
/// (and an idle core with one timer holds 64 bytes, not a tree node).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Timers<K: Ord + Copy> {
    entries: Vec<(K, Instant)>,
}

impl<K: Ord + Copy> Default for Timers<K> {
    fn default() -> Self {
        Timers {
            entries: Vec::new(),
        }
    }
}

impl<K: Ord + Copy> Timers<K> {
    /// Sets (or moves) the deadline of `kind`.
    pub fn set(&mut self, kind: K, at: Instant) {
        match self.entries.iter_mut().find(|(k, _)| *k == kind) {
            Some(entry) => entry.1 = at,
            None => {
                self.entries.push((kind, at));
                self.entries.sort_by_key(|e| e.0);
            }
        }
    }

    /// Removes the deadline of `kind`.
    pub fn stop(&mut self, kind: K) {
        self.entries.retain(|(k, _)| *k != kind);
        if self.entries.is_empty() {
            self.entries = Vec::new();
        }
    }

    /// The deadline of `kind`, if set.
    pub fn get(&self, kind: K) -> Option<Instant> {
        self.entries
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, at)| *at)
    }

    /// The earliest deadline and its reason; ties go to the smallest kind.
    pub fn next(&self) -> Option<(Instant, K)> {
        self.entries
            .iter()
            .map(|(k, at)| (*at, *k))
            .min_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)))
    }

    /// Every armed timer, `(deadline, kind)`, in kind order.
    pub fn iter(&self) -> impl Iterator<Item = (Instant, K)> + '_ {
        self.entries.iter().map(|(k, at)| (*at, *k))
    }

    /// Removes and returns every kind due at `now`, in deadline order.
    pub fn expire(&mut self, now: Instant) -> Vec<K> {
        let mut due: Vec<(Instant, K)> = self
            .entries
            .iter()
            .filter(|(_, at)| *at <= now)
            .map(|(k, at)| (*at, *k))
            .collect();
        due.sort();
        self.entries.retain(|(_, at)| *at > now);
        due.into_iter().map(|(_, k)| k).collect()
    }

    /// Number of armed timers.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no timer is armed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
