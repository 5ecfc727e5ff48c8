//! Interned strings for values that thousands of cached objects repeat: a
//! namespace or a node name is one shared `Arc<str>` instead of a copy (and
//! an allocation) per pod.
//!
//! Owns one process-wide set of the distinct values seen. Must never grow
//! without bound under churn of distinct values: entries nobody else holds
//! any more are pruned whenever the set has doubled since the last prune.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

struct Interner {
    set: HashSet<Arc<str>>,
    /// Set size after the last prune; the next prune runs at twice that.
    pruned_at: usize,
}

fn interner() -> &'static Mutex<Interner> {
    static I: OnceLock<Mutex<Interner>> = OnceLock::new();
    I.get_or_init(|| {
        Mutex::new(Interner {
            set: HashSet::new(),
            pruned_at: 0,
        })
    })
}

/// The shared `Arc<str>` equal to `s` (the empty string too, so a default
/// value costs no allocation per object either).
pub fn intern(s: &str) -> Arc<str> {
    let mut i = interner().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(a) = i.set.get(s) {
        return Arc::clone(a);
    }
    if i.set.len() >= 2 * i.pruned_at.max(64) {
        i.set.retain(|a| Arc::strong_count(a) > 1);
        i.pruned_at = i.set.len();
    }
    let a: Arc<str> = Arc::from(s);
    i.set.insert(Arc::clone(&a));
    a
}

/// Deserialize a string (or null, as "") into an interned `Arc<str>`.
/// Reads the text borrowed where the input allows (serde's `Cow<str>` is
/// always owned: a temporary String per pod).
pub(crate) fn interned<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Arc<str>, D::Error> {
    d.deserialize_option(Interned)
}

struct Interned;

impl<'de> serde::de::Visitor<'de> for Interned {
    type Value = Arc<str>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string or null")
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Arc<str>, E> {
        Ok(intern(s))
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<Arc<str>, E> {
        Ok(intern(""))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Arc<str>, E> {
        Ok(intern(""))
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Arc<str>, D::Error> {
        d.deserialize_str(Interned)
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
}
