//! Symmetry over interchangeable clients, and the state fingerprint.
//!
//! Clients that run the same script (under the one client policy of a model)
//! are interchangeable: swapping two of them, with everything that is theirs
//! (their core, exchanges, outcomes, monitor side, script position), gives a
//! state that behaves the same up to the swap, and the invariants, which
//! judge every client alike, agree on both. The fingerprint therefore hashes
//! what the clients share, then, per group of interchangeable clients, the
//! sorted hashes of their own parts ([`World::hash_client`] names nothing
//! that says which client a part belongs to). A model with `k` identical
//! clients visits up to `k!` times fewer states; shortest counterexamples
//! stay shortest, because swapped states are equally far from the start.
//!
//! [`World::hash_client`]: crate::sim::World::hash_client

use super::model::State;
use mcp_streamable::shared::fixed_keys;
use std::hash::{BuildHasher, Hash, Hasher};

/// Which clients are interchangeable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symmetry {
    /// Groups of client indices, each in increasing order, ordered by their
    /// first member; every client is in exactly one.
    groups: Vec<Vec<usize>>,
    /// Off: the fingerprint hashes the state as it is.
    on: bool,
}

impl Symmetry {
    /// Groups clients whose scripts are equal.
    pub fn of<T: PartialEq>(scripts: &[T]) -> Self {
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for (c, script) in scripts.iter().enumerate() {
            match groups.iter_mut().find(|g| scripts[g[0]] == *script) {
                Some(g) => g.push(c),
                None => groups.push(vec![c]),
            }
        }
        Symmetry { groups, on: true }
    }

    /// The same grouping, used or not.
    pub fn enabled(mut self, on: bool) -> Self {
        self.on = on;
        self
    }

    /// Whether the fingerprint uses it.
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// The groups of interchangeable clients (singletons included).
    pub fn groups(&self) -> &[Vec<usize>] {
        &self.groups
    }

    /// The state's 64-bit fingerprint: equal (or, with symmetry on, swapped)
    /// states get equal fingerprints.
    pub fn fingerprint(&self, s: &State) -> u64 {
        let build = fixed_keys();
        let mut h = build.build_hasher();
        if !self.on {
            s.hash(&mut h);
            return h.finish();
        }
        let State {
            world,
            client_pc,
            server_pc,
            drops,
            notices,
            drops_for,
            calls_for,
            covered: _, // how it was reached, not what it is
        } = s;
        world.hash_shared(&mut h);
        server_pc.hash(&mut h);
        drops.hash(&mut h);
        drops_for.is_some().hash(&mut h);
        calls_for.is_some().hash(&mut h);
        // A group's parts sorted on the stack (a slice hashes as the vector
        // it replaces: its length, then each part); a larger group than the
        // buffer holds spills to the heap.
        let mut buf = [0u64; 8];
        let mut spill = Vec::new();
        for group in &self.groups {
            let parts: &mut [u64] = match buf.get_mut(..group.len()) {
                Some(parts) => parts,
                None => {
                    spill.resize(group.len(), 0);
                    &mut spill
                }
            };
            for (part, &c) in parts.iter_mut().zip(group) {
                let mut ch = build.build_hasher();
                world.hash_client(c, &mut ch);
                client_pc[c].hash(&mut ch);
                notices.get(c).hash(&mut ch);
                (*drops_for == Some(c as u8)).hash(&mut ch);
                (*calls_for == Some(c as u8)).hash(&mut ch);
                *part = ch.finish();
            }
            parts.sort_unstable();
            parts.hash(&mut h);
        }
        h.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_clients_with_equal_scripts() {
        let s = Symmetry::of(&["a", "b", "a", "c", "b"]);
        assert_eq!(s.groups(), &[vec![0, 2], vec![1, 4], vec![3]]);
        assert!(s.is_on());
        assert!(!s.enabled(false).is_on());
    }
}
