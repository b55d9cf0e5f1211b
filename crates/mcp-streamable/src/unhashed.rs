//! [`Unhashed`]: a field that takes no part in equality or hashing;
//! [`Compared`]: one that takes part in equality but not in hashing.
//!
//! The model checker fingerprints whole states; a field that cannot change
//! what happens next (a count of observations) or that follows from the rest
//! of the state (an index over it) must not split one situation into many.
//! A field fixed for a value's whole life (a server's policy) tells no two
//! states of one run apart: hashing it again at every change is waste.

/// Wraps a value that every comparison treats as equal and hashing skips.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unhashed<T>(pub T);

impl<T> PartialEq for Unhashed<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> Eq for Unhashed<T> {}

impl<T> std::hash::Hash for Unhashed<T> {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

/// Wraps a value that equality compares and hashing skips: hashing less
/// than equality compares keeps equal values' hashes equal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Compared<T>(pub T);

impl<T> std::hash::Hash for Compared<T> {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl<T> std::ops::Deref for Compared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::{Compared, Unhashed};
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

    #[test]
    fn equal_and_same_hash_whatever_it_holds() {
        assert_eq!(Unhashed(1), Unhashed(2));
        let h = BuildHasherDefault::<DefaultHasher>::default();
        assert_eq!(h.hash_one(Unhashed(1)), h.hash_one(Unhashed(2)));
        assert_eq!(h.hash_one(Unhashed(1)), h.hash_one(()));
    }

    #[test]
    fn compared_but_not_hashed() {
        assert_ne!(Compared(1), Compared(2));
        assert_eq!(Compared(1), Compared(1));
        let h = BuildHasherDefault::<DefaultHasher>::default();
        assert_eq!(h.hash_one(Compared(1)), h.hash_one(Compared(2)));
        assert_eq!(*Compared(3), 3);
    }
}
