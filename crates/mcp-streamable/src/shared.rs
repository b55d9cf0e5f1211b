//! [`Shared`]: a value that clones share until one of them changes it, with
//! its hash computed once.
//!
//! The model checker copies whole worlds for every step it tries, and one
//! step changes one or two parts of a world (a client, a session, an
//! exchange). Parts kept in a `Shared` are copied only when changed
//! (`Arc::make_mut` on mutable access), freed only when the last state that
//! holds them goes, and hashed only once: hashing a `Shared` feeds its value's
//! cached 64-bit hash. Equal values have equal cached hashes (fixed keys), so
//! equality and fingerprints mean what they meant for the bare value. Outside
//! the checker the cost is a reference count and, on mutable access, a check
//! that no one else holds the value.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

struct Inner<T> {
    value: T,
    /// The value's hash, [`UNKNOWN`] until first asked for. An atomic, not a
    /// `OnceLock`: two threads that both compute it store the same number,
    /// so a plain load and store suffice.
    hash: AtomicU64,
}

/// No hash computed yet. A value whose hash is this number is stored as
/// [`UNKNOWN_STAND_IN`], so equal values still cache equal hashes.
const UNKNOWN: u64 = 0;
const UNKNOWN_STAND_IN: u64 = 1;

impl<T: Clone> Clone for Inner<T> {
    /// A copy is about to be changed: its hash is not carried over.
    fn clone(&self) -> Self {
        Inner {
            value: self.value.clone(),
            hash: AtomicU64::new(UNKNOWN),
        }
    }
}

/// A copy-on-write value with a cached hash (see the module docs).
pub struct Shared<T>(Arc<Inner<T>>);

impl<T> Shared<T> {
    /// Wraps a value.
    pub fn new(value: T) -> Self {
        Shared(Arc::new(Inner {
            value,
            hash: AtomicU64::new(UNKNOWN),
        }))
    }
}

/// The hasher of every hash that must be the same from run to run: cached
/// hashes here, the model checker's fingerprints. aHash where the checker is
/// built (it hashes millions of states); std's SipHash with zero keys in the
/// cores alone, where a cached hash is rarely asked for.
#[cfg(feature = "fast-hash")]
pub fn fixed_keys() -> ahash::RandomState {
    ahash::RandomState::with_seeds(
        0x6d63_702d_7374_7265,
        0x616d_6162_6c65_2d63,
        0x6865_636b_6572_2d66,
        0x696e_6765_7270_7269,
    )
}

/// See the `check` version.
#[cfg(not(feature = "fast-hash"))]
pub fn fixed_keys() -> std::hash::BuildHasherDefault<std::hash::DefaultHasher> {
    std::hash::BuildHasherDefault::default()
}

impl<T: Hash> Shared<T> {
    /// The value's hash ([`fixed_keys`]), computed on first use.
    fn cached_hash(&self) -> u64 {
        let known = self.0.hash.load(Ordering::Relaxed);
        if known != UNKNOWN {
            return known;
        }
        let h = match std::hash::BuildHasher::hash_one(&fixed_keys(), &self.0.value) {
            UNKNOWN => UNKNOWN_STAND_IN,
            h => h,
        };
        self.0.hash.store(h, Ordering::Relaxed);
        h
    }
}

impl<T: Clone> Shared<T> {
    /// Makes this clone the only holder of a copy of its own (hash kept),
    /// unless it already is. A reference count that two threads both change
    /// moves its cache line between their CPUs at every clone and drop; a
    /// worker that takes a state from another gives it copies of its own,
    /// and every state it makes from there counts on those.
    pub fn localize(&mut self) {
        self.localize_with(|_| {});
    }

    /// [`Shared::localize`], then `parts` localizes what the value itself
    /// shares. `parts` must not change what the value means: its hash is
    /// kept.
    pub fn localize_with(&mut self, parts: impl FnOnce(&mut T)) {
        if Arc::strong_count(&self.0) > 1 || Arc::weak_count(&self.0) > 0 {
            let hash = self.0.hash.load(Ordering::Relaxed);
            *self = Shared(Arc::new(Inner {
                value: self.0.value.clone(),
                hash: AtomicU64::new(hash),
            }));
        }
        if let Some(inner) = Arc::get_mut(&mut self.0) {
            parts(&mut inner.value);
        }
    }
}

impl<K: Ord + Clone, V: Clone> Shared<BTreeMap<K, Shared<V>>> {
    /// [`Shared::localize`] for the map and every value in it (hashes kept:
    /// the values are equal).
    pub fn localize_deep(&mut self) {
        self.localize_with(|map| map.values_mut().for_each(Shared::localize));
    }
}

impl<K: Ord + Clone, V: Clone> Shared<BTreeMap<K, V>> {
    /// Keeps the entries `keep` accepts. A shared map is not copied whole to
    /// be cut down: nothing happens when every entry is kept, and otherwise
    /// only the kept entries are copied (a finished client's records leave
    /// every map of a checker's state this way, once per state).
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &V) -> bool) {
        if self.iter().all(|(k, v)| keep(k, v)) {
            return;
        }
        match Arc::get_mut(&mut self.0) {
            Some(inner) => {
                *inner.hash.get_mut() = UNKNOWN;
                inner.value.retain(|k, v| keep(k, v));
            }
            None => {
                let kept = self.iter().filter(|(k, v)| keep(k, v));
                *self = Shared::new(kept.map(|(k, v)| (k.clone(), v.clone())).collect());
            }
        }
    }
}

impl<T: Ord + Clone> Shared<BTreeSet<T>> {
    /// Keeps the members `keep` accepts, copying only those (see the map's).
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        if self.iter().all(&mut keep) {
            return;
        }
        match Arc::get_mut(&mut self.0) {
            Some(inner) => {
                *inner.hash.get_mut() = UNKNOWN;
                inner.value.retain(|t| keep(t));
            }
            None => *self = Shared::new(self.iter().filter(|t| keep(t)).cloned().collect()),
        }
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(Arc::clone(&self.0))
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0.value
    }
}

impl<T: Clone> DerefMut for Shared<T> {
    /// Copies the value first if another clone still holds it; the cached
    /// hash is forgotten, as the caller may change the value.
    fn deref_mut(&mut self) -> &mut T {
        let inner = Arc::make_mut(&mut self.0);
        *inner.hash.get_mut() = UNKNOWN;
        &mut inner.value
    }
}

impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.value == other.0.value
    }
}

impl<T: Eq> Eq for Shared<T> {}

impl<T: Hash> Hash for Shared<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.cached_hash());
    }
}

impl<T: fmt::Debug> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.value.fmt(f)
    }
}

impl<T: Default> Default for Shared<T> {
    fn default() -> Self {
        Shared::new(T::default())
    }
}

/// Serialized as the value itself.
impl<T: serde::Serialize> serde::Serialize for Shared<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.value.serialize(s)
    }
}

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Shared<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(Shared::new)
    }
}

/// A hasher for keys that are already hashes (fingerprints, cached hashes):
/// it uses them as they are.
#[derive(Default)]
pub struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Iterates the value (a shared map or vector reads like the bare one).
impl<'a, T> IntoIterator for &'a Shared<T>
where
    &'a T: IntoIterator,
{
    type Item = <&'a T as IntoIterator>::Item;
    type IntoIter = <&'a T as IntoIterator>::IntoIter;
    fn into_iter(self) -> Self::IntoIter {
        (&self.0.value).into_iter()
    }
}

impl<T> From<T> for Shared<T> {
    fn from(value: T) -> Self {
        Shared::new(value)
    }
}

#[cfg(test)]
mod tests {
    use super::Shared;
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

    fn h<T: std::hash::Hash>(v: &T) -> u64 {
        BuildHasherDefault::<DefaultHasher>::default().hash_one(v)
    }

    #[test]
    fn clones_share_until_changed() {
        let a = Shared::new(vec![1, 2]);
        let mut b = a.clone();
        assert!(std::ptr::eq(&*a, &*b));
        b.push(3);
        assert!(!std::ptr::eq(&*a, &*b));
        assert_eq!(*a, vec![1, 2]);
        assert_eq!(*b, vec![1, 2, 3]);
    }

    #[test]
    fn a_shared_map_or_set_cut_down_keeps_what_it_should_and_rehashes() {
        use std::collections::{BTreeMap, BTreeSet};
        let a: Shared<BTreeMap<u8, u8>> = Shared::new((0..6).map(|i| (i, i)).collect());
        let mut b = a.clone();
        b.retain(|_, _| true);
        assert!(std::ptr::eq(&*a, &*b), "nothing dropped: still shared");
        b.retain(|k, _| k % 2 == 0);
        assert_eq!(b.keys().copied().collect::<Vec<_>>(), vec![0, 2, 4]);
        assert_eq!(a.len(), 6, "the other copy is untouched");
        assert_eq!(
            h(&b),
            h(&Shared::new(BTreeMap::<u8, u8>::from([
                (0, 0),
                (2, 2),
                (4, 4)
            ])))
        );
        b.retain(|k, _| *k > 0); // held alone now: cut in place
        assert_eq!(
            h(&b),
            h(&Shared::new(BTreeMap::<u8, u8>::from([(2, 2), (4, 4)])))
        );
        let s: Shared<BTreeSet<u8>> = Shared::new((0..4).collect());
        let mut t = s.clone();
        t.retain(|x| *x != 1);
        assert_eq!(*t, BTreeSet::<u8>::from([0, 2, 3]));
        assert_eq!(s.len(), 4);
        t.retain(|x| *x != 3);
        assert_eq!(h(&t), h(&Shared::new(BTreeSet::<u8>::from([0, 2]))));
    }

    #[test]
    fn a_localized_clone_holds_an_equal_copy_of_its_own_with_the_hash_kept() {
        use std::collections::BTreeMap;
        use std::sync::atomic::Ordering;
        let a: Shared<BTreeMap<u8, Shared<Vec<u8>>>> =
            Shared::new((0..3).map(|i| (i, Shared::new(vec![i]))).collect());
        let hash = h(&a);
        let mut b = a.clone();
        b.localize_deep();
        assert!(!std::ptr::eq(&*a, &*b), "the map is copied");
        for (x, y) in a.values().zip(b.values()) {
            assert!(!std::ptr::eq(&**x, &**y), "and every value in it");
        }
        assert_eq!(a, b);
        assert_ne!(b.0.hash.load(Ordering::Relaxed), 0, "the hash is kept");
        assert_eq!(h(&b), hash);
        // Held alone already: nothing is copied.
        let (map, value) = (&*b as *const _, &*b[&0] as *const _);
        b.localize_deep();
        assert!(std::ptr::eq(map, &*b) && std::ptr::eq(value, &*b[&0]));
        // A copy being changed rehashes as before.
        b.get_mut(&0).expect("entry").push(9);
        assert_ne!(h(&b), hash);
    }

    #[test]
    fn prints_as_its_value() {
        assert_eq!(format!("{:?}", Shared::new(vec![1, 2])), "[1, 2]");
    }

    #[test]
    fn equal_values_hash_alike_and_a_change_rehashes() {
        let a = Shared::new(vec![1, 2]);
        let mut b = Shared::new(vec![1]);
        assert_ne!(h(&a), h(&b));
        assert_ne!(a, b);
        let before = h(&b);
        b.push(2);
        assert_ne!(h(&b), before, "the cached hash was forgotten");
        assert_eq!(h(&a), h(&b));
        assert_eq!(a, b);
    }
}
