//! The visited set: every state's 64-bit fingerprint and where it came from.
//!
//! Each of a run's steps asks it once, so what a question costs is what a
//! step waits for: a fingerprint is random, the set is tens of megabytes,
//! and every question is a cache miss. A general hash table (hashbrown)
//! misses twice (its tag group, then the bucket) and, as it grows, moves
//! every entry to a random place of its new table. This one is built for
//! the one thing asked of it:
//!
//! - **Sharded** by the fingerprint's low bits, each shard behind its own
//!   lock, so workers rarely contend.
//! - **Open addressing with linear probing over the fingerprints alone**, 8
//!   bytes a slot: a question reads one run of slots, mostly one cache line.
//!   Where a state came from (16 bytes) sits in a parallel array, touched
//!   only when the state is new and when a counterexample is rebuilt.
//! - **Placed by the fingerprint's top bits**: slots hold fingerprints in
//!   nearly increasing order, so doubling a shard reads the old slots in
//!   order and writes the new ones in order, a stream instead of a random
//!   walk.
//!
//! The fingerprint 0 marks an empty slot, so a state whose fingerprint is 0
//! is kept beside the slots.

use std::sync::{Mutex, MutexGuard};

/// Where a visited state came from: its parent's fingerprint and the index
/// of the action, among the parent's enabled ones, that made it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) parent: u64,
    pub(super) action: u32,
}

const SHARDS: usize = 64;
/// A shard's first size, in slots (a power of two).
const SLOTS_MIN: usize = 64;

/// A value on cache lines of its own (128 bytes: two lines, as adjacent
/// lines are fetched in pairs): what one worker writes all the time does
/// not evict what the other workers read or write beside it.
#[repr(align(128))]
pub(super) struct Padded<T>(pub(super) T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// The visited set (see the module docs).
pub(super) struct Seen {
    shards: Vec<Padded<Mutex<Shard>>>,
}

impl Seen {
    pub(super) fn new() -> Self {
        Seen {
            shards: (0..SHARDS)
                .map(|_| Padded(Mutex::new(Shard::new())))
                .collect(),
        }
    }

    fn shard(&self, fp: u64) -> MutexGuard<'_, Shard> {
        self.shards[fp as usize % SHARDS]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Records `fp`, made as `entry` says; true when it is new (a state
    /// seen before keeps the entry it was first recorded with).
    pub(super) fn visit(&self, fp: u64, entry: Entry) -> bool {
        self.shard(fp).visit(fp, entry)
    }

    /// Where `fp` came from, if it was visited.
    pub(super) fn get(&self, fp: u64) -> Option<Entry> {
        self.shard(fp).get(fp)
    }

    /// How many fingerprints it holds.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).len)
            .sum()
    }
}

/// One slot: a fingerprint (0: empty) and its entry, on one cache line
/// mostly, so that recording a new state writes where its search read.
#[derive(Clone, Copy, Default)]
struct Slot {
    fp: u64,
    entry: Entry,
}

/// One shard.
struct Shard {
    slots: Vec<Slot>,
    /// Fingerprints in `slots`.
    len: usize,
    /// log2 of the number of slots.
    bits: u32,
    /// The state whose fingerprint is 0, if visited.
    zero: Option<Entry>,
}

impl Shard {
    fn new() -> Self {
        Shard {
            slots: vec![Slot::default(); SLOTS_MIN],
            len: 0,
            bits: SLOTS_MIN.trailing_zeros(),
            zero: None,
        }
    }

    /// The slot where the search for `fp` starts.
    fn home(&self, fp: u64) -> usize {
        (fp >> (64 - self.bits)) as usize
    }

    /// The slot holding `fp`, or the empty slot where it would go.
    fn find(&self, fp: u64) -> Result<usize, usize> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(fp);
        loop {
            match self.slots[i].fp {
                0 => return Err(i),
                f if f == fp => return Ok(i),
                _ => i = (i + 1) & mask,
            }
        }
    }

    fn visit(&mut self, fp: u64, entry: Entry) -> bool {
        if fp == 0 {
            let new = self.zero.is_none();
            self.zero.get_or_insert(entry);
            return new;
        }
        let Err(i) = self.find(fp) else {
            return false;
        };
        self.slots[i] = Slot { fp, entry };
        self.len += 1;
        // At most three quarters full: a search for a new fingerprint then
        // reads a few slots on average, within a line or two.
        if self.len * 4 > self.slots.len() * 3 {
            self.grow();
        }
        true
    }

    fn get(&self, fp: u64) -> Option<Entry> {
        if fp == 0 {
            return self.zero;
        }
        self.find(fp).ok().map(|i| self.slots[i].entry)
    }

    /// Twice the slots. Old slots are read in order; as homes are the top
    /// bits, each lands at or after twice its old home, so writes go
    /// mostly forward too.
    fn grow(&mut self) {
        let slots = self.slots.len() * 2;
        let old = std::mem::replace(&mut self.slots, vec![Slot::default(); slots]);
        self.bits += 1;
        for slot in old {
            if slot.fp != 0 {
                let Err(i) = self.find(slot.fp) else {
                    unreachable!("a fingerprint twice in one shard")
                };
                self.slots[i] = slot;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A fixed sequence of well-spread 64-bit numbers (SplitMix64).
    fn spread(n: usize, seed: u64) -> impl Iterator<Item = u64> {
        let mut x = seed;
        (0..n).map(move |_| {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        })
    }

    /// The set against a map of the same visits: the same answers to every
    /// visit and every question, across many doublings, with 0, fingerprints
    /// that share a shard and a home, and repeats.
    #[test]
    fn answers_as_a_map_does_across_growth() {
        let seen = Seen::new();
        let mut model: BTreeMap<u64, Entry> = BTreeMap::new();
        // Same shard (low bits) and same home (top bits) in any size:
        // they differ only in the middle, and probe past each other.
        let crowded = (1..40u64).map(|k| (0xabcd << 48) | (k << 20) | 7);
        let fps: Vec<u64> = spread(50_000, 1)
            .chain(crowded)
            .chain([0, u64::MAX, 1, 1 << 63])
            .collect();
        for (n, &fp) in fps.iter().chain(fps.iter().step_by(3)).enumerate() {
            let entry = Entry {
                parent: fp.rotate_left(7),
                action: n as u32,
            };
            let new = !model.contains_key(&fp);
            model.entry(fp).or_insert(entry);
            assert_eq!(seen.visit(fp, entry), new, "visit of {fp:#x}");
        }
        assert_eq!(seen.len() + 1, model.len(), "0 is kept beside the slots");
        for (&fp, &entry) in &model {
            assert_eq!(seen.get(fp), Some(entry), "entry of {fp:#x}");
        }
        for fp in spread(10_000, 2) {
            assert_eq!(
                seen.get(fp),
                model.get(&fp).copied(),
                "{fp:#x} never visited"
            );
        }
    }

    /// A shard doubles before it is more than three quarters full, and its
    /// slots stay a power of two (the mask and the homes rely on it).
    #[test]
    fn a_shard_grows_before_it_is_three_quarters_full() {
        let mut shard = Shard::new();
        for (n, fp) in spread(10_000, 3).enumerate() {
            shard.visit(fp, Entry::default());
            assert_eq!(shard.len, n + 1);
            assert!(
                shard.len * 4 <= shard.slots.len() * 3,
                "{} in {}",
                shard.len,
                shard.slots.len()
            );
            assert!(shard.slots.len().is_power_of_two());
            assert_eq!(shard.slots.len(), 1 << shard.bits);
        }
        assert_eq!(shard.slots.iter().filter(|s| s.fp != 0).count(), 10_000);
    }
}
