//! The stale-Endpoints tracker (upstream
//! `pkg/controller/endpoint/endpoints_tracker.go`; docs/behaviour.md#up-a17, #up-a22):
//! the resourceVersion this controller last replaced, per Endpoints, so a
//! sync that still sees that version in the informer cache knows the cache
//! is older than its own last write and fails as stale instead of writing
//! from it. Beyond upstream, which keeps an entry until the Service is
//! deleted, an entry is dropped once the cache has shown a newer version
//! of its Endpoints ([`StaleTracker::passed`]): a cache never goes back to
//! an older version, so the entry could no longer match.
//!
//! Owns that map; never reads a cache.

use std::collections::HashMap;
use std::sync::Mutex;

/// Replace an emptied `map` holding a table by an unallocated one.
fn release_if_empty(map: &mut HashMap<String, String>) {
    if map.is_empty() && map.capacity() > 0 {
        *map = HashMap::new();
    }
}

/// Thread-safe; keys are `ns/name`.
#[derive(Debug, Default)]
pub struct StaleTracker {
    stale: Mutex<HashMap<String, String>>,
}

impl StaleTracker {
    /// Record that our write replaced version `replaced_rv` of `key`.
    pub fn stale(&self, key: &str, replaced_rv: &str) {
        self.lock().insert(key.to_string(), replaced_rv.to_string());
    }

    /// Whether `rv` is the version of `key` we last replaced.
    pub fn is_stale(&self, key: &str, rv: &str) -> bool {
        self.lock().get(key).is_some_and(|s| s == rv)
    }

    /// The cache now shows `key`'s Endpoints at version `rv`: forget the
    /// version we replaced if `rv` is newer (both integers, as every API
    /// server we know uses; an opaque version proves nothing and keeps the
    /// entry).
    pub fn passed(&self, key: &str, rv: &str) {
        let mut stale = self.lock();
        let newer = stale.get(key).is_some_and(|replaced| {
            matches!((rv.parse::<u64>(), replaced.parse::<u64>()), (Ok(n), Ok(r)) if n > r)
        });
        if newer {
            stale.remove(key);
            release_if_empty(&mut stale);
        }
    }

    /// Whether no replaced version is remembered.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Forget `key` (its Service was deleted).
    pub fn delete(&self, key: &str) {
        let mut stale = self.lock();
        stale.remove(key);
        release_if_empty(&mut stale);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.stale.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upstream TestStaleEndpointsTracker, in our words.
    #[test]
    fn tracks_the_last_replaced_version() {
        let t = StaleTracker::default();
        assert!(!t.is_stale("ns/a", "1"), "untracked is never stale");
        t.stale("ns/a", "1");
        assert!(t.is_stale("ns/a", "1"));
        assert!(!t.is_stale("ns/a", "2"), "a newer version is fresh");
        assert!(!t.is_stale("ns/b", "1"), "per key");
        t.stale("ns/a", "2");
        assert!(
            !t.is_stale("ns/a", "1"),
            "only the last replaced version counts"
        );
        assert!(t.is_stale("ns/a", "2"));
        t.delete("ns/a");
        assert!(!t.is_stale("ns/a", "2"));
    }

    /// An entry goes once the cache shows a newer version, and only then.
    #[test]
    fn forgotten_once_the_cache_shows_a_newer_version() {
        let t = StaleTracker::default();
        t.stale("ns/a", "10");
        t.stale("ns/b", "x");
        t.passed("ns/a", "10");
        t.passed("ns/a", "9");
        t.passed("ns/a", "opaque");
        assert!(t.is_stale("ns/a", "10"), "not passed yet");
        t.passed("ns/b", "11");
        assert!(t.is_stale("ns/b", "x"), "an opaque version is kept");
        t.passed("ns/a", "11");
        assert!(!t.is_stale("ns/a", "10"));
        t.delete("ns/b");
        assert!(t.is_empty());
        assert_eq!(t.lock().capacity(), 0, "the table is released");
    }
}
