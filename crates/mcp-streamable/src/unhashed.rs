//! [`Unhashed`]: a field that takes no part in equality or hashing.
//!
//! The model checker fingerprints whole states; a field that cannot change
//! what happens next (a count of observations) or that follows from the rest
//! of the state (an index over it) must not split one situation into many.

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

#[cfg(test)]
mod tests {
    use super::Unhashed;
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

    #[test]
    fn equal_and_same_hash_whatever_it_holds() {
        assert_eq!(Unhashed(1), Unhashed(2));
        let h = BuildHasherDefault::<DefaultHasher>::default();
        assert_eq!(h.hash_one(Unhashed(1)), h.hash_one(Unhashed(2)));
        assert_eq!(h.hash_one(Unhashed(1)), h.hash_one(()));
    }
}
