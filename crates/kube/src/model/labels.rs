//! A small, immutable-by-default string map for labels, selectors and the few
//! annotations we keep: sorted `(key, value)` pairs packed into one buffer.
//!
//! Owns the memory layout — one thin pointer (8 bytes) inline and, when not empty, a single
//! (shareable) allocation: the pair count, the end offset of every key and value, then
//! their bytes (a pod's five labels cost one ~115-byte block instead of a
//! 160-byte pair table plus ten string allocations) — and its serde mapping
//! (a JSON object; `null` → empty). The buffer is a shared
//! [`super::intern::ThinSlice`] (an `Arc` that keeps its length inside) so that equal
//! label sets can share it ([`Labels::shared`]: a cached pod's, since the
//! pods of one ReplicaSet carry the same labels) and a clone is a count.
//! Must never keep duplicate keys or lose the sort order (lookups are
//! binary searches, equality and hashing compare the bytes), and never
//! hold an offset that is not a char boundary of the text it was built
//! from (the accessors rely on it).

use super::intern::{shared_thin, ThinSet, ThinSlice};
use serde::de::{DeserializeSeed, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

/// Sorted `(key, value)` pairs with unique keys.
///
/// Layout of the buffer (empty for no pairs): `n` as a little-endian
/// `u32`, then `2n` little-endian `u32` end offsets (key 0, value 0, key 1,
/// …) into the text that follows, then the text: every key and value
/// concatenated, each a whole `&str`. `None` for no pairs (no allocation);
/// never `Some` of an empty buffer.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Labels(Option<ThinSlice<u8>>);

static SHARED: ThinSet<u8> = std::sync::OnceLock::new();

const W: usize = std::mem::size_of::<u32>();

impl Labels {
    /// No labels.
    pub fn new() -> Labels {
        Labels::default()
    }

    /// Pack pairs already sorted by key with unique keys.
    fn pack<'a>(pairs: impl ExactSizeIterator<Item = (&'a str, &'a str)> + Clone) -> Labels {
        let n = pairs.len();
        if n == 0 {
            return Labels::default();
        }
        let text: usize = pairs.clone().map(|(k, v)| k.len() + v.len()).sum();
        // The offsets are u32 and `part` trusts them (unchecked UTF-8):
        // never truncate one. Unreachable under any response body cap that
        // fits a decoded object in memory; a clear panic, not a bad slice.
        assert!(
            u32::try_from(text).is_ok() && u32::try_from(n).is_ok(),
            "labels over 4 GiB cannot be packed"
        );
        let mut buf = Vec::with_capacity(W + 2 * n * W + text);
        buf.extend_from_slice(&(n as u32).to_le_bytes());
        let mut end = 0usize;
        for (k, v) in pairs.clone() {
            end += k.len();
            buf.extend_from_slice(&(end as u32).to_le_bytes());
            end += v.len();
            buf.extend_from_slice(&(end as u32).to_le_bytes());
        }
        for (k, v) in pairs {
            buf.extend_from_slice(k.as_bytes());
            buf.extend_from_slice(v.as_bytes());
        }
        Labels(Some(ThinSlice::copied(&buf)))
    }

    /// The packed buffer (empty for no pairs).
    fn buf(&self) -> &[u8] {
        self.0.as_deref().unwrap_or(&[])
    }

    /// The shared value equal to this one (one hash and one lock; see
    /// `model::intern::shared_thin`): equal label sets of cached objects then
    /// hold one buffer.
    pub fn shared(self) -> Labels {
        match self.0 {
            None => self,
            Some(b) => Labels(Some(shared_thin(&SHARED, b, |b| b))),
        }
    }

    /// Whether `a` and `b` hold the same buffer (both empty counts).
    pub fn ptr_eq(a: &Labels, b: &Labels) -> bool {
        match (&a.0, &b.0) {
            (Some(a), Some(b)) => ThinSlice::ptr_eq(a, b),
            (a, b) => a.is_none() && b.is_none(),
        }
    }

    fn word(&self, i: usize) -> usize {
        let b = &self.buf()[i * W..(i + 1) * W];
        u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        if self.0.is_none() {
            0
        } else {
            self.word(0)
        }
    }

    /// Whether there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// String `j` (key of pair `j / 2`, or its value when `j` is odd).
    #[allow(unsafe_code)] // a libc call or a checked invariant: see SAFETY inside
    fn part(&self, j: usize) -> &str {
        let base = W + 2 * self.len() * W;
        let start = if j == 0 { 0 } else { self.word(j) };
        let end = self.word(j + 1);
        let bytes = &self.buf()[base + start..base + end];
        // SAFETY: `pack` is the only constructor of a non-empty buffer; it
        // copies whole `&str`s back to back and records where each ends, so
        // `start..end` spans exactly one of them: valid UTF-8.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }

    fn key(&self, i: usize) -> &str {
        self.part(2 * i)
    }

    fn value(&self, i: usize) -> &str {
        self.part(2 * i + 1)
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.key(mid).cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// The value for `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.find(key).ok().map(|i| self.value(i))
    }

    /// Whether `key` is present (with any value, including "").
    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// Pairs in key order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + Clone + '_ {
        (0..self.len()).map(|i| (self.key(i), self.value(i)))
    }

    /// Set `key` to `value` (repacks; label sets are small).
    pub fn insert(&mut self, key: &str, value: &str) {
        let mut v: Vec<(&str, &str)> = self.iter().collect();
        match self.find(key) {
            Ok(i) => v[i].1 = value,
            Err(i) => v.insert(i, (key, value)),
        }
        *self = Labels::pack(v.into_iter());
    }

    /// Remove `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Box<str>> {
        let i = self.find(key).ok()?;
        let val: Box<str> = self.value(i).into();
        let mut v: Vec<(&str, &str)> = self.iter().collect();
        v.remove(i);
        *self = Labels::pack(v.into_iter());
        Some(val)
    }

    /// Equality-based selector match: every pair of `self` (the selector)
    /// is present in `labels`. An empty selector matches everything
    /// (upstream `labels.SelectorFromSet`).
    pub fn matches(&self, labels: &Labels) -> bool {
        self.iter().all(|(k, v)| labels.get(k) == Some(v))
    }

    /// The pairs as an ordered map.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Heap bytes owned by this value (for memory accounting in benches):
    /// the buffer and its count and length (counted in full even if shared).
    pub fn heap_bytes(&self) -> usize {
        self.0
            .as_ref()
            .map_or(0, |b| 2 * std::mem::size_of::<usize>() + b.len())
    }
}

impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for Labels {
    /// Later duplicates win, as in a map literal.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Labels {
        let map: BTreeMap<Box<str>, Box<str>> = iter
            .into_iter()
            .map(|(k, v)| (k.as_ref().into(), v.as_ref().into()))
            .collect();
        Labels::pack(map.iter().map(|(k, v)| (&**k, &**v)))
    }
}

impl fmt::Debug for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for Labels {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.len()))?;
        for (k, v) in self.iter() {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// Appends one JSON string to a shared scratch buffer (no allocation per
/// key or value); yields where it landed.
struct Append<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for Append<'_> {
    type Value = Range<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Range<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for Append<'_> {
    type Value = Range<usize>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Range<usize>, E> {
        let start = self.0.len();
        self.0.push_str(v);
        Ok(start..self.0.len())
    }
}

struct LabelsVisitor;

impl<'de> Visitor<'de> for LabelsVisitor {
    type Value = Labels;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of strings to strings, or null")
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Labels, E> {
        Ok(Labels::default())
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<Labels, E> {
        Ok(Labels::default())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Labels, D::Error> {
        d.deserialize_map(LabelsVisitor)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Labels, A::Error> {
        // The keys and values are gathered in this thread's buffers (kept
        // between decodes, as every pod, Service and slice carries labels),
        // so a decode allocates only the packed result.
        let (mut text, mut v) = SCRATCH.take();
        let r = gather(&mut a, &mut text, &mut v).map(|()| {
            let s = |r: &Range<usize>| &text[r.clone()];
            // Stable: of equal keys the later entry stays last.
            v.sort_by(|a, b| s(&a.0).cmp(s(&b.0)));
            // JSON objects from the API server never repeat keys; if one
            // does, keep the last value like a Go map would.
            v.reverse();
            v.dedup_by(|a, b| s(&a.0) == s(&b.0));
            v.reverse();
            Labels::pack(v.iter().map(|(k, val)| (s(k), s(val))))
        });
        text.clear();
        v.clear();
        if text.capacity() <= SCRATCH_KEEP_BYTES && v.capacity() <= SCRATCH_KEEP_LABELS {
            SCRATCH.set((text, v));
        }
        r
    }
}

/// Key and value ranges into the text they were appended to.
type Ranges = Vec<(Range<usize>, Range<usize>)>;

thread_local! {
    /// This thread's buffers for [`LabelsVisitor`], empty between decodes.
    static SCRATCH: std::cell::Cell<(String, Ranges)> =
        const { std::cell::Cell::new((String::new(), Vec::new())) };
}

/// Larger buffers (a pod with thousands of labels) are freed after use.
const SCRATCH_KEEP_BYTES: usize = 16 * 1024;
const SCRATCH_KEEP_LABELS: usize = 256;

/// Append every key and value of `a` to `text`, their ranges to `v`.
fn gather<'de, A: MapAccess<'de>>(
    a: &mut A,
    text: &mut String,
    v: &mut Ranges,
) -> Result<(), A::Error> {
    while let Some(k) = a.next_key_seed(Append(text))? {
        let val = a.next_value_seed(Append(text))?;
        v.push((k, val));
    }
    Ok(())
}

impl<'de> Deserialize<'de> for Labels {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Labels, D::Error> {
        d.deserialize_option(LabelsVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deserialize_sorts_and_handles_null() {
        let l: Labels = serde_json::from_str(r#"{"b":"2","a":"1","c":""}"#).expect("labels");
        assert_eq!(
            l.iter().collect::<Vec<_>>(),
            vec![("a", "1"), ("b", "2"), ("c", "")]
        );
        assert_eq!(l.get("c"), Some(""));
        assert_eq!(l.get("d"), None);
        let n: Labels = serde_json::from_str("null").expect("null labels");
        assert!(n.is_empty());
        assert!(serde_json::from_str::<Labels>(r#"{"a":1}"#).is_err());
    }

    #[test]
    fn a_failed_decode_leaves_nothing_for_the_next() {
        assert!(serde_json::from_str::<Labels>(r#"{"x":"1","y":2}"#).is_err());
        let l: Labels = serde_json::from_str(r#"{"b":"2"}"#).expect("after an error");
        assert_eq!(l.iter().collect::<Vec<_>>(), vec![("b", "2")]);
        let big: String = (0..2000).map(|i| format!(r#""k{i}":"{i}","#)).collect();
        let l: Labels = serde_json::from_str(&format!("{{{}\"z\":\"\"}}", big)).expect("big");
        assert_eq!(l.len(), 2001);
        let l: Labels = serde_json::from_str(r#"{"a":"1"}"#).expect("after a big one");
        assert_eq!(l.iter().collect::<Vec<_>>(), vec![("a", "1")]);
    }

    #[test]
    fn packed_layout_round_trips_any_text() {
        let pairs = [("", ""), ("k", ""), ("z", "\u{0}x"), ("é", "ü✓")];
        let l: Labels = pairs.iter().rev().copied().collect();
        assert_eq!(l.iter().collect::<Vec<_>>(), pairs);
        assert_eq!(l.len(), 4);
        assert_eq!(l.get("é"), Some("ü✓"));
        assert_eq!(l.get(""), Some(""));
        let json = serde_json::to_string(&l).expect("json");
        let back: Labels = serde_json::from_str(&json).expect("back");
        assert_eq!(back, l);
        // Equal content, equal value, whatever the order it came in or the
        // edits that produced it.
        let mut edited: Labels = [("z", "old"), ("a", "1")].into_iter().collect();
        edited.insert("é", "ü✓");
        edited.insert("", "");
        edited.insert("k", "");
        edited.insert("z", "\u{0}x");
        assert_eq!(edited.remove("a").as_deref(), Some("1"));
        assert_eq!(edited, l);
        let many: Labels = (0..3000)
            .map(|i| (format!("k{i:04}"), format!("v{i}")))
            .collect();
        assert_eq!(many.len(), 3000);
        assert_eq!(many.get("k2999"), Some("v2999"));
        assert_eq!(many.get("k3000"), None);
        let empty: Labels = Vec::<(&str, &str)>::new().into_iter().collect();
        assert!(empty.is_empty() && empty.heap_bytes() == 0 && empty == Labels::new());
    }

    #[test]
    fn deserialize_keeps_the_last_of_repeated_keys() {
        let l: Labels = serde_json::from_str(r#"{"a":"1","b":"2","a":"3"}"#).expect("labels");
        assert_eq!(l.iter().collect::<Vec<_>>(), vec![("a", "3"), ("b", "2")]);
        let mut r = serde_json::Deserializer::from_reader(&br#"{"x":"\u00e9","y":"2"}"#[..]);
        let l = Labels::deserialize(&mut r).expect("from a reader");
        assert_eq!(l.get("x"), Some("é"));
    }

    #[test]
    fn shared_labels_are_one_interned_allocation() {
        let a: Labels = serde_json::from_str(r#"{"app":"shared-test","t":"x"}"#).expect("labels");
        let b: Labels = [("t", "x"), ("app", "shared-test")].into_iter().collect();
        let (a, b) = (a.shared(), b.shared());
        assert!(Labels::ptr_eq(&a, &b) && a == b);
        assert_eq!(a.get("app"), Some("shared-test"));
        assert!(Labels::new().shared().is_empty());
        assert_eq!(std::mem::size_of::<Labels>(), 8);
        assert_eq!(a.heap_bytes(), 16 + a.buf().len());
    }

    #[test]
    fn insert_remove_keep_order() {
        let mut l: Labels = [("m", "1")].into_iter().collect();
        l.insert("a", "0");
        l.insert("z", "9");
        l.insert("m", "x");
        assert_eq!(
            serde_json::to_string(&l).expect("json"),
            r#"{"a":"0","m":"x","z":"9"}"#
        );
        assert_eq!(l.remove("m").as_deref(), Some("x"));
        assert_eq!(l.remove("m"), None);
        assert_eq!(l.len(), 2);
    }

    #[test]
    fn selector_matching_table() {
        let pod: Labels = [("app", "web"), ("tier", "fe")].into_iter().collect();
        let cases: &[(&[(&str, &str)], bool)] = &[
            (&[], true),
            (&[("app", "web")], true),
            (&[("app", "web"), ("tier", "fe")], true),
            (&[("app", "db")], false),
            (&[("app", "web"), ("zone", "a")], false),
        ];
        for (sel, want) in cases {
            let s: Labels = sel.iter().copied().collect();
            assert_eq!(s.matches(&pod), *want, "selector {sel:?}");
        }
    }
}
