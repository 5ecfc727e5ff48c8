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
pub(crate) fn interned<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Arc<str>, D::Error> {
    use serde::Deserialize;
    let s = Option::<std::borrow::Cow<'de, str>>::deserialize(d)?;
    Ok(intern(s.as_deref().unwrap_or("")))
}

#[cfg(test)]
mod tests {
    use super::*;

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
