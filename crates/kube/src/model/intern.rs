//! Interned strings for values that thousands of cached objects repeat: a
//! namespace or a node name is one shared string instead of a copy (and an
//! allocation) per object; [`IStr`] holds it in a thin pointer (8 bytes).
//!
//! [`shared_thin`] does the same for slices that pods of one ReplicaSet
//! repeat, behind one thin pointer, [`ThinSlice`] (a labels buffer, a
//! pod's container ports).
//!
//! Owns process-wide sets of the distinct values seen (one per
//! representation or type). Must never grow without bound under churn of distinct
//! values: entries nobody else holds any more are pruned whenever a set has
//! doubled since its last prune.

use std::borrow::Borrow;
use std::collections::HashSet;

/// The sets' hasher: foldhash (per-process random seed), several times
/// faster than std's SipHash on short strings; interning is on every
/// decoded namespace, node name, kind and zone.
type Fast = foldhash::fast::RandomState;
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, Mutex, OnceLock};

/// An interned string in one thin pointer (8 bytes, no allocation of its
/// own; `Option<IStr>` is 8 bytes too): for the kinds, namespaces, node
/// names and zones that every cached Endpoints address and slice endpoint
/// repeats. Compares, hashes, orders, prints and serializes as its text.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IStr(Arc<Box<str>>);

/// An [`IStr`] in its interner's set (looked up by `&str`).
#[derive(Clone, PartialEq, Eq, Hash)]
struct Thin(Arc<Box<str>>);

impl Borrow<str> for Thin {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// What an interner's set holds: one shared allocation per value.
trait Shared: Borrow<str> + Hash + Eq + Clone {
    fn make(s: &str) -> Self;
    /// Whether anyone but the set holds it.
    fn held(&self) -> bool;
}

impl Shared for Arc<str> {
    fn make(s: &str) -> Arc<str> {
        Arc::from(s)
    }
    fn held(&self) -> bool {
        Arc::strong_count(self) > 1
    }
}

impl Shared for Thin {
    fn make(s: &str) -> Thin {
        Thin(Arc::new(s.into()))
    }
    fn held(&self) -> bool {
        Arc::strong_count(&self.0) > 1
    }
}

impl IStr {
    /// The interned value equal to `s` (the empty string, every Endpoints
    /// address's hostname, without a lookup).
    pub fn new(s: &str) -> IStr {
        static I: OnceLock<Mutex<Interner<Thin>>> = OnceLock::new();
        static EMPTY: OnceLock<IStr> = OnceLock::new();
        let set = I.get_or_init(Interner::new);
        if s.is_empty() {
            return EMPTY.get_or_init(|| IStr(lookup(set, "").0)).clone();
        }
        IStr(lookup(set, s).0)
    }
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for IStr {
    fn default() -> IStr {
        IStr::new("")
    }
}

impl std::ops::Deref for IStr {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for IStr {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for IStr {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for IStr {
    fn from(s: &str) -> IStr {
        IStr::new(s)
    }
}

impl From<&String> for IStr {
    fn from(s: &String) -> IStr {
        IStr::new(s)
    }
}

impl From<String> for IStr {
    fn from(s: String) -> IStr {
        IStr::new(&s)
    }
}

impl From<compact_str::CompactString> for IStr {
    fn from(s: compact_str::CompactString) -> IStr {
        IStr::new(&s)
    }
}

impl From<&compact_str::CompactString> for IStr {
    fn from(s: &compact_str::CompactString) -> IStr {
        IStr::new(s)
    }
}

impl From<&Arc<str>> for IStr {
    fn from(s: &Arc<str>) -> IStr {
        IStr::new(s)
    }
}

impl PartialEq<str> for IStr {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for IStr {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<IStr> for str {
    fn eq(&self, other: &IStr) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<IStr> for &str {
    fn eq(&self, other: &IStr) -> bool {
        *self == other.as_str()
    }
}

impl fmt::Display for IStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for IStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl serde::Serialize for IStr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for IStr {
    /// A string (read borrowed where the input allows); null as "".
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<IStr, D::Error> {
        d.deserialize_option(StrOrNull(IStr::new))
    }
}

pub(crate) struct Interner<T> {
    set: HashSet<T, Fast>,
    /// Set size after the last prune; the next prune runs at twice that.
    pruned_at: usize,
}

impl<T> Interner<T> {
    fn new() -> Mutex<Interner<T>> {
        Mutex::new(Interner {
            set: HashSet::default(),
            pruned_at: 0,
        })
    }
}

fn interner() -> &'static Mutex<Interner<Arc<str>>> {
    static I: OnceLock<Mutex<Interner<Arc<str>>>> = OnceLock::new();
    I.get_or_init(Interner::new)
}

/// The value of `set` equal to `s`, added if new.
fn lookup<T: Shared>(set: &Mutex<Interner<T>>, s: &str) -> T {
    let mut i = set.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(a) = i.set.get(s) {
        return a.clone();
    }
    if i.set.len() >= 2 * i.pruned_at.max(64) {
        i.set.retain(T::held);
        i.pruned_at = i.set.len();
    }
    let a = T::make(s);
    i.set.insert(a.clone());
    a
}

/// The shared `Arc<str>` equal to `s` (the empty string too, so a default
/// value costs no allocation per object either).
pub fn intern(s: &str) -> Arc<str> {
    lookup(interner(), s)
}

/// A shared immutable slice behind one thin pointer (8 bytes;
/// `Option<ThinSlice<T>>` too): the length sits in the allocation, next to the
/// count, so a cached object pays 8 bytes, not a 16-byte fat `Arc<[T]>`,
/// for its shared labels buffer or container ports. The
/// allocation is the same as an `Arc<[T]>`'s (a 16-byte count and length,
/// then the items). Compares, hashes and prints as its slice.
pub struct ThinSlice<T>(triomphe::ThinArc<(), T>);

impl<T> ThinSlice<T> {
    /// A new (unshared) slice holding `items`.
    pub fn new(items: Vec<T>) -> ThinSlice<T> {
        ThinSlice(triomphe::ThinArc::from_header_and_iter(
            (),
            items.into_iter(),
        ))
    }
    /// A new (unshared) slice of the items `it` yields (one allocation).
    pub fn from_exact<I: ExactSizeIterator<Item = T>>(it: I) -> ThinSlice<T> {
        ThinSlice(triomphe::ThinArc::from_header_and_iter((), it))
    }
    /// A new (unshared) slice holding a copy of `items`.
    pub fn copied(items: &[T]) -> ThinSlice<T>
    where
        T: Copy,
    {
        ThinSlice(triomphe::ThinArc::from_header_and_slice((), items))
    }
    /// Whether anyone but an interning set holds it.
    fn held(&self) -> bool {
        triomphe::ThinArc::strong_count(&self.0) > 1
    }
    /// Whether `a` and `b` are the same allocation.
    pub fn ptr_eq(a: &ThinSlice<T>, b: &ThinSlice<T>) -> bool {
        std::ptr::eq(a.0.ptr(), b.0.ptr())
    }
}

impl<T> Clone for ThinSlice<T> {
    fn clone(&self) -> ThinSlice<T> {
        ThinSlice(self.0.clone())
    }
}

impl<T> Default for ThinSlice<T> {
    /// Empty (its own allocation: shared values come from [`shared_thin`]).
    fn default() -> ThinSlice<T> {
        ThinSlice::new(Vec::new())
    }
}

impl<T> From<Vec<T>> for ThinSlice<T> {
    fn from(v: Vec<T>) -> ThinSlice<T> {
        ThinSlice::new(v)
    }
}

impl<T> std::ops::Deref for ThinSlice<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0.slice
    }
}

impl<T> Borrow<[T]> for ThinSlice<T> {
    fn borrow(&self) -> &[T] {
        self
    }
}

impl<T: PartialEq> PartialEq for ThinSlice<T> {
    fn eq(&self, other: &ThinSlice<T>) -> bool {
        **self == **other
    }
}

impl<T: Eq> Eq for ThinSlice<T> {}

impl<T: Hash> Hash for ThinSlice<T> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (**self).hash(h)
    }
}

impl<T: fmt::Debug> fmt::Debug for ThinSlice<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// A process-wide set of shared [`ThinSlice`] slices of one item type.
pub(crate) type ThinSet<T> = OnceLock<Mutex<Interner<ThinSlice<T>>>>;

/// The shared [`ThinSlice`] in `set` equal to `v`, added if new; pruned like
/// the other sets. One hash and one uncontended lock.
pub(crate) fn shared_thin<T: Hash + Eq, V: Borrow<[T]>>(
    set: &ThinSet<T>,
    v: V,
    make: impl FnOnce(V) -> ThinSlice<T>,
) -> ThinSlice<T> {
    let mut i = set
        .get_or_init(Interner::new)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(a) = i.set.get(v.borrow()) {
        return a.clone();
    }
    if i.set.len() >= 2 * i.pruned_at.max(64) {
        i.set.retain(ThinSlice::held);
        i.pruned_at = i.set.len();
    }
    let a = make(v);
    i.set.insert(a.clone());
    a
}

/// Deserialize a string (or null, as "") into an interned `Arc<str>`.
/// Reads the text borrowed where the input allows (serde's `Cow<str>` is
/// always owned: a temporary String per pod).
pub(crate) fn interned<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Arc<str>, D::Error> {
    d.deserialize_option(StrOrNull(intern))
}

/// Decodes a string (read borrowed where the input allows; null as "")
/// through a constructor: the interners here, and the compact text types
/// (`Uid`, `UidText`).
pub(crate) struct StrOrNull<T>(pub(crate) fn(&str) -> T);

impl<'de, T> serde::de::Visitor<'de> for StrOrNull<T> {
    type Value = T;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string or null")
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<T, E> {
        Ok(self.0(s))
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<T, E> {
        Ok(self.0(""))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<T, E> {
        Ok(self.0(""))
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        d.deserialize_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_strings_and_null_and_refuses_other_types() {
        #[derive(serde::Deserialize)]
        struct W {
            #[serde(deserialize_with = "interned", default)]
            ns: Arc<str>,
        }
        let w = |j: &str| serde_json::from_str::<W>(j).map(|w| w.ns);
        assert_eq!(&*w(r#"{"ns":"team-a"}"#).expect("str"), "team-a");
        assert_eq!(&*w(r#"{"ns":"te\u0061m"}"#).expect("escaped"), "team");
        assert_eq!(&*w(r#"{"ns":null}"#).expect("null"), "");
        assert_eq!(&*w("{}").expect("absent"), "");
        assert!(w(r#"{"ns":3}"#).is_err(), "a number is refused");
        assert!(Arc::ptr_eq(
            &w(r#"{"ns":"team-a"}"#).expect("str"),
            &intern("team-a")
        ));
    }

    #[test]
    fn equal_values_share_one_allocation_and_unused_ones_are_pruned() {
        let a = intern("intern-test-ns");
        let b = intern(&String::from("intern-test-ns"));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(&*a, "intern-test-ns");
        let held: Vec<Arc<str>> = (0..300).map(|i| intern(&format!("held-{i}"))).collect();
        for i in 0..2000 {
            drop(intern(&format!("dropped-{i}")));
        }
        let len = interner().lock().map(|i| i.set.len()).unwrap_or(0);
        assert!(len < 2000, "unused values are pruned ({len} kept)");
        assert!(held
            .iter()
            .enumerate()
            .all(|(i, h)| Arc::ptr_eq(h, &intern(&format!("held-{i}")))));
        assert!(Arc::ptr_eq(&a, &intern("intern-test-ns")));
    }

    #[test]
    fn istr_is_one_thin_shared_pointer_and_reads_as_its_text() {
        assert_eq!(std::mem::size_of::<IStr>(), 8);
        assert_eq!(std::mem::size_of::<Option<IStr>>(), 8);
        let a = IStr::new("istr-test-node");
        let b: IStr = serde_json::from_str(r#""istr-test-node""#).expect("str");
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert!(a == "istr-test-node" && a.as_str() == "istr-test-node");
        assert_eq!(format!("{a} {a:?}"), r#"istr-test-node "istr-test-node""#);
        assert_eq!(
            serde_json::to_string(&a).expect("json"),
            r#""istr-test-node""#
        );
        let n: Option<IStr> = serde_json::from_str("null").expect("null");
        assert!(n.is_none());
        assert_eq!(
            serde_json::from_str::<IStr>(r#""""#).expect("empty"),
            IStr::default()
        );
        assert!(IStr::new("a") < IStr::new("b"));
        for i in 0..2000 {
            drop(IStr::new(&format!("istr-dropped-{i}")));
        }
        assert!(Arc::ptr_eq(&a.0, &IStr::new("istr-test-node").0));
    }

    #[test]
    fn thin_is_one_pointer_shared_by_equal_slices_and_pruned() {
        assert_eq!(std::mem::size_of::<ThinSlice<u8>>(), 8);
        assert_eq!(std::mem::size_of::<Option<ThinSlice<u8>>>(), 8);
        static SET: ThinSet<u32> = OnceLock::new();
        let a = shared_thin(&SET, vec![1, 2, 3], ThinSlice::new);
        let b = shared_thin(&SET, vec![1, 2, 3], ThinSlice::new);
        assert!(ThinSlice::ptr_eq(&a, &b));
        assert_eq!(&*a, &[1, 2, 3]);
        assert_eq!(a, ThinSlice::new(vec![1, 2, 3]));
        assert_eq!(a, ThinSlice::copied(&[1, 2, 3]));
        assert_eq!(a, ThinSlice::from_exact(1..4));
        assert_ne!(a, shared_thin(&SET, vec![1, 2], ThinSlice::new));
        assert_eq!(format!("{a:?}"), "[1, 2, 3]");
        assert!(ThinSlice::<u32>::new(Vec::new()).is_empty());
        for i in 0..2000 {
            drop(shared_thin(&SET, vec![i + 10], ThinSlice::new));
        }
        let len = SET
            .get()
            .map_or(0, |s| s.lock().map(|i| i.set.len()).unwrap_or(0));
        assert!(len < 2000, "unused slices are pruned ({len} kept)");
        assert!(ThinSlice::ptr_eq(
            &a,
            &shared_thin(&SET, vec![1, 2, 3], ThinSlice::new)
        ));
    }
}
