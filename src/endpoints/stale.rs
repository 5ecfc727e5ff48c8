//! The stale-Endpoints tracker (upstream
//! `pkg/controller/endpoint/endpoints_tracker.go`; upstream-spec A17, A22):
//! the resourceVersion this controller last replaced, per Endpoints, so a
//! sync that still sees that version in the informer cache knows the cache
//! is older than its own last write and fails as stale instead of writing
//! from it.
//!
//! Owns that map; never reads a cache.

use std::collections::HashMap;
use std::sync::Mutex;

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

    /// Forget `key` (its Service was deleted).
    pub fn delete(&self, key: &str) {
        self.lock().remove(key);
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
}
