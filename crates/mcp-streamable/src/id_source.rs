//! [`IdSource`]: where a server's secrets (session ids, event-id namespaces)
//! come from.
//!
//! A session id is a bearer token: whoever knows it can read the session's
//! notifications, resume its streams and post into it (R20, R28). So the
//! default source is a CSPRNG, ChaCha20 (`rand_chacha`'s `ChaCha20Rng`) keyed
//! with 256 bits from the OS (`getrandom`): seeing any number of its outputs
//! tells nothing about the others. Without the `os-rng` feature the driver brings the key
//! ([`IdSource::from_key`]).
//!
//! The cores stay deterministic because the source is an *input*: the driver
//! hands it to the endpoint, and the core only draws from it. Checkers,
//! simulations and tests hand it [`IdSource::reproducible`] instead, a
//! seeded SplitMix64 whose whole output follows from its seed (same seed,
//! same trace). That one is predictable by design: one observed id gives
//! back the generator, so it must never face a network.

use crate::rng::SeededRng;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use std::fmt;
use std::hash::{Hash, Hasher};

/// The generator behind a server's ids; see the module docs.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct IdSource(Kind);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Kind {
    Secure(Secure),
    Reproducible(SeededRng),
}

/// ChaCha20 as a key and a position in its keystream, boxed so the
/// reproducible kind that checkers fingerprint stays small. The generator
/// itself (`ChaCha20Rng`, with its 256-byte block buffer) is made for each
/// draw and dropped: ids are drawn a few times in a session's life, and a
/// shell keeps one source per idle session (`tests/idle_memory.rs`).
/// Equality compares the whole state; hashing writes nothing (the state is
/// secret, and a fingerprint never needs it: checkers use the reproducible
/// source).
#[derive(Clone, PartialEq, Eq)]
struct Secure(Box<Keystream>);

#[derive(Clone, PartialEq, Eq)]
struct Keystream {
    key: [u8; 32],
    /// The next 32-bit word of the keystream to read.
    word_pos: u128,
}

impl Keystream {
    /// Runs `draw` on the generator at this position, and moves past what
    /// it read.
    fn draw<T>(&mut self, draw: impl FnOnce(&mut ChaCha20Rng) -> T) -> T {
        let mut rng = ChaCha20Rng::from_seed(self.key);
        rng.set_word_pos(self.word_pos);
        let out = draw(&mut rng);
        self.word_pos = rng.get_word_pos();
        out
    }
}

impl Hash for Secure {
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

/// The OS could not provide entropy.
#[cfg(feature = "os-rng")]
#[derive(Debug, thiserror::Error)]
#[error("the OS random source failed: {0}")]
pub struct EntropyError(String);

impl IdSource {
    /// A CSPRNG keyed with 256 bits from the OS: the default of every
    /// endpoint and shell.
    ///
    /// # Panics
    /// If the OS has no working random source (see [`IdSource::try_from_os`]).
    #[cfg(feature = "os-rng")]
    pub fn from_os() -> Self {
        Self::try_from_os().expect("the OS random source is needed for session ids")
    }

    /// A CSPRNG keyed with 256 bits from the OS, or why the OS could not help.
    #[cfg(feature = "os-rng")]
    pub fn try_from_os() -> Result<Self, EntropyError> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| EntropyError(e.to_string()))?;
        Ok(Self::from_key(key))
    }

    /// A CSPRNG keyed by the driver, for embeddings that bring their own
    /// entropy (an HSM, a platform API). The key must be secret and random.
    pub fn from_key(key: [u8; 32]) -> Self {
        IdSource(Kind::Secure(Secure(Box::new(Keystream {
            key,
            word_pos: 0,
        }))))
    }

    /// A seeded, predictable source for checkers, simulations and tests:
    /// the whole output follows from `seed`. Never for a server that faces a
    /// network.
    pub const fn reproducible(seed: u64) -> Self {
        IdSource(Kind::Reproducible(SeededRng::new(seed)))
    }

    /// Whether this source is safe to face a network (not [`reproducible`]).
    ///
    /// [`reproducible`]: IdSource::reproducible
    pub fn is_secure(&self) -> bool {
        matches!(self.0, Kind::Secure(_))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        match &mut self.0 {
            Kind::Secure(Secure(r)) => r.draw(RngCore::next_u64),
            Kind::Reproducible(r) => r.next_u64(),
        }
    }

    /// The next 128 random bits.
    pub fn next_u128(&mut self) -> u128 {
        (u128::from(self.next_u64()) << 64) | u128::from(self.next_u64())
    }

    /// A session id from this source (128 bits) that `taken` does not name.
    pub fn session_id(
        &mut self,
        taken: impl Fn(&crate::ids::SessionId) -> bool,
    ) -> crate::ids::SessionId {
        loop {
            let candidate = crate::ids::SessionId::from_bits(self.next_u128());
            if !taken(&candidate) {
                return candidate;
            }
        }
    }

    /// A session's event-id namespace (32 bits), which keeps the event ids
    /// of different sessions apart.
    pub fn namespace(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// 256 bits from the source: a key (the application secret of
    /// [`crate::server::ServerEndpoint::app_secret`], say).
    pub fn secret(&mut self) -> [u8; 32] {
        let mut key = [0u8; 32];
        for chunk in key.chunks_mut(8) {
            chunk.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        key
    }

    /// An independent source of the same kind, keyed from this one's output:
    /// a shell that runs one endpoint per session gives each its own fork.
    /// A secure source's fork is keyed with 256 fresh bits of its stream,
    /// which reveal nothing of the parent's later output.
    pub fn fork(&mut self) -> IdSource {
        match &mut self.0 {
            Kind::Secure(Secure(r)) => {
                let mut key = [0u8; 32];
                r.draw(|rng| rng.fill_bytes(&mut key));
                Self::from_key(key)
            }
            Kind::Reproducible(r) => Self::reproducible(r.next_u64()),
        }
    }
}

#[cfg(feature = "os-rng")]
impl Default for IdSource {
    /// [`IdSource::from_os`].
    fn default() -> Self {
        Self::from_os()
    }
}

impl fmt::Debug for IdSource {
    /// Never prints the state: it is the key to every session id.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Kind::Secure(_) => f.write_str("IdSource::Secure(..)"),
            Kind::Reproducible(_) => f.write_str("IdSource::Reproducible(..)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(feature = "os-rng")]
    fn reproducible_is_reproducible_and_secure_is_not() {
        let a: Vec<u128> = {
            let mut s = IdSource::reproducible(9);
            (0..3).map(|_| s.next_u128()).collect()
        };
        let b: Vec<u128> = {
            let mut s = IdSource::reproducible(9);
            (0..3).map(|_| s.next_u128()).collect()
        };
        assert_eq!(a, b);
        let mut x = IdSource::from_os();
        let mut y = IdSource::from_os();
        assert_ne!(x.next_u128(), y.next_u128());
        assert!(x.is_secure() && !IdSource::reproducible(1).is_secure());
    }

    #[test]
    fn same_key_same_stream_and_forks_differ_from_parent() {
        let mut a = IdSource::from_key([7; 32]);
        let mut b = IdSource::from_key([7; 32]);
        assert_eq!(a, b);
        let mut fa = a.fork();
        let mut fb = b.fork();
        let (x, y) = (fa.next_u128(), fb.next_u128());
        assert_eq!(x, y, "a fork is a function of the parent's key");
        assert_ne!(x, a.next_u128());
        assert!(fa.is_secure());
        assert!(!IdSource::reproducible(3).fork().is_secure());
    }

    #[test]
    fn debug_hides_the_state() {
        let s = IdSource::from_key([42; 32]);
        assert_eq!(format!("{s:?}"), "IdSource::Secure(..)");
    }

    /// Drawing from a fresh generator at the kept position is the same
    /// stream as one generator drawn from throughout.
    #[test]
    fn the_kept_position_reads_one_continuous_keystream() {
        let mut kept = IdSource::from_key([3; 32]);
        let mut whole = ChaCha20Rng::from_seed([3; 32]);
        for _ in 0..40 {
            assert_eq!(kept.next_u64(), whole.next_u64());
        }
        let mut forked = [0u8; 32];
        whole.fill_bytes(&mut forked);
        let mut fork = kept.fork();
        assert_eq!(fork, IdSource::from_key(forked));
        assert_eq!(kept.next_u64(), whole.next_u64());
        assert_ne!(fork.next_u64(), kept.next_u64());
    }
}
