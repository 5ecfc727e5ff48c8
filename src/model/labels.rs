//! A small, immutable-by-default string map for labels, selectors and the few
//! annotations we keep: a sorted boxed slice of `(key, value)` pairs.
//!
//! Owns the memory layout (16 bytes inline, one allocation for the pairs plus
//! one per string) and its serde mapping (a JSON object; `null` → empty).
//! Must never keep duplicate keys or lose the sort order, since lookups are
//! binary searches.

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;

/// Sorted `(key, value)` pairs with unique keys.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Labels(Box<[(Box<str>, Box<str>)]>);

impl Labels {
    /// No labels.
    pub fn new() -> Labels {
        Labels::default()
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| (**k).cmp(key))
    }

    /// The value for `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.find(key).ok().map(|i| &*self.0[i].1)
    }

    /// Whether `key` is present (with any value, including "").
    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// Pairs in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }

    /// Set `key` to `value` (rebuilds the slice; label sets are small).
    pub fn insert(&mut self, key: &str, value: &str) {
        match self.find(key) {
            Ok(i) => self.0[i].1 = value.into(),
            Err(i) => {
                let mut v = std::mem::take(&mut self.0).into_vec();
                v.insert(i, (key.into(), value.into()));
                self.0 = v.into_boxed_slice();
            }
        }
    }

    /// Remove `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Box<str>> {
        let i = self.find(key).ok()?;
        let mut v = std::mem::take(&mut self.0).into_vec();
        let (_, val) = v.remove(i);
        self.0 = v.into_boxed_slice();
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

    /// Heap bytes owned by this value (for memory accounting in benches).
    pub fn heap_bytes(&self) -> usize {
        self.0.len() * std::mem::size_of::<(Box<str>, Box<str>)>()
            + self.0.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>()
    }
}

impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for Labels {
    /// Later duplicates win, as in a map literal.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Labels {
        let map: BTreeMap<Box<str>, Box<str>> = iter
            .into_iter()
            .map(|(k, v)| (k.as_ref().into(), v.as_ref().into()))
            .collect();
        Labels(map.into_iter().collect())
    }
}

impl fmt::Debug for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for Labels {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.iter() {
            m.serialize_entry(k, v)?;
        }
        m.end()
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
        let mut v: Vec<(Box<str>, Box<str>)> = Vec::with_capacity(a.size_hint().unwrap_or(0));
        while let Some((k, val)) = a.next_entry::<String, String>()? {
            v.push((k.into_boxed_str(), val.into_boxed_str()));
        }
        v.sort_by(|a, b| a.0.cmp(&b.0));
        // JSON objects from the API server never repeat keys; if one does,
        // keep the last value like a Go map would.
        v.reverse();
        v.dedup_by(|a, b| a.0 == b.0);
        v.reverse();
        Ok(Labels(v.into_boxed_slice()))
    }
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
