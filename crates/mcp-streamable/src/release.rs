//! Giving an emptied container's memory back.
//!
//! An emptied `BTreeMap` or `BTreeSet` keeps its root node (eleven slots of
//! its entries, over a kilobyte for a map of large values) and a drained
//! `VecDeque` or `Vec` its capacity; a fresh one allocates nothing. A server
//! holds thousands of idle sessions, each with queues sized by its busiest
//! moment unless it lets them go: the cores call this where a session or an
//! endpoint goes idle. For a session that is when its output queues drain,
//! which is once per request: the next request allocates the node again
//! (about 0.3% of `serve`'s samples at c=1, docs/performance.md, "C=1 measured round by round"),
//! the price of a core that releases without being told; a shell's parked
//! owner and the session mailbox release on their own idle edges.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A container that can give its memory back once empty.
pub trait Release {
    /// Replaces the container by a fresh, allocation-free one if it is empty.
    fn release_if_empty(&mut self);
}

impl<K, V> Release for BTreeMap<K, V> {
    fn release_if_empty(&mut self) {
        if self.is_empty() {
            *self = BTreeMap::new();
        }
    }
}

impl<T> Release for BTreeSet<T> {
    fn release_if_empty(&mut self) {
        if self.is_empty() {
            *self = BTreeSet::new();
        }
    }
}

impl<T> Release for VecDeque<T> {
    fn release_if_empty(&mut self) {
        if self.is_empty() && self.capacity() > 0 {
            *self = VecDeque::new();
        }
    }
}

impl<T> Release for Vec<T> {
    fn release_if_empty(&mut self) {
        if self.is_empty() && self.capacity() > 0 {
            *self = Vec::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Release;
    use std::collections::{BTreeMap, BTreeSet, VecDeque};

    #[test]
    fn only_an_empty_container_is_replaced() {
        let mut q: VecDeque<u8> = VecDeque::with_capacity(16);
        q.push_back(1);
        q.release_if_empty();
        assert!(q.capacity() >= 16, "a queue with an item keeps its buffer");
        q.clear();
        q.release_if_empty();
        assert_eq!(q.capacity(), 0, "an empty one gives it back");
        let mut v: Vec<u8> = Vec::with_capacity(8);
        v.push(7);
        v.release_if_empty();
        assert_eq!(v, [7], "a vector with an item keeps it");
        assert!(v.capacity() >= 8, "and its buffer");
        v.clear();
        v.release_if_empty();
        assert_eq!(v.capacity(), 0);
        let mut set = BTreeSet::from([3]);
        set.release_if_empty();
        assert_eq!(set.len(), 1, "a set with an entry is left alone");
        let mut m = BTreeMap::from([(1, 2)]);
        m.release_if_empty();
        assert_eq!(m.len(), 1, "a map with an entry is left alone");
        m.remove(&1);
        m.release_if_empty();
        assert!(m.is_empty());
        // Whether an emptied map or set lets its node go shows only in the
        // heap: tests/idle_memory.rs counts it (in the mutants' fast set).
    }
}
