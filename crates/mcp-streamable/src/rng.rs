//! A tiny seeded generator, for what must be reproducible from a seed: the
//! checkers' session ids ([`crate::id_source::IdSource::reproducible`]) and the
//! shells' seeded scheduling of preset races.
//!
//! SplitMix64 (Steele, Lea, Flood 2014): one `u64` of state, every output a bijective
//! mix of a Weyl sequence. It is **not** a CSPRNG: one output gives back the state
//! (`tests/cores/session_ids.rs` does exactly that), so it never mints a secret that faces a
//! network; [`crate::id_source::IdSource`] defaults to ChaCha20 keyed by the OS.

/// The generator state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SeededRng {
    state: u64,
}

impl SeededRng {
    /// A generator whose whole output is determined by `seed`.
    pub const fn new(seed: u64) -> Self {
        SeededRng { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence_other_seed_differs() {
        let mut a = SeededRng::new(7);
        let mut b = SeededRng::new(7);
        let mut c = SeededRng::new(8);
        let xs: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        let zs: Vec<u64> = (0..4).map(|_| c.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
    }
}
