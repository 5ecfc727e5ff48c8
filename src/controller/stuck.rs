//! Conflicts that never end. A Service whose syncs keep finding a stale
//! cache or a 409 for [`STUCK_AFTER`] without one success is not racing
//! another writer (a real conflict heals at the informer's next event, and
//! the stale-write bookkeeping gives up after 10 s): the caches follow
//! another history than the server's — an API server restored from a
//! backup whose resourceVersions had already passed ours, so our watches
//! were accepted. It then moves the informers' shared
//! [`History`](crate::informer::History), and every informer lists again.
//!
//! Bookkeeping only: never blocks beyond its own mutex, never writes to
//! the API server.

use crate::informer::History;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a Service may stay stale before the caches are distrusted.
pub const STUCK_AFTER: Duration = Duration::from_secs(30);

/// Since when each Service has been stale, and the history to move.
#[derive(Debug, Default)]
pub struct StuckSyncs {
    since: Mutex<HashMap<String, Instant>>,
    history: OnceLock<Arc<History>>,
}

impl StuckSyncs {
    /// The history shared by the informers the controller reads.
    pub fn set_history(&self, h: Arc<History>) {
        let _ = self.history.set(h);
    }

    /// A sync of `key` succeeded or failed otherwise: not stuck.
    pub fn clear(&self, key: &str) {
        self.lock().remove(key);
    }

    /// A sync of `key` found a stale cache or a 409 at `now`. True when it
    /// has for [`STUCK_AFTER`]: the history is then moved (at most once per
    /// period per key).
    pub fn stale(&self, controller: &str, key: &str, now: Instant) -> bool {
        let mut m = self.lock();
        let since = *m.entry(key.to_string()).or_insert(now);
        if now.saturating_duration_since(since) < STUCK_AFTER {
            return false;
        }
        m.insert(key.to_string(), now);
        drop(m);
        if let Some(h) = self.history.get() {
            let epoch = h.went_back();
            log::warn!(
                "{controller}: {key} has met only conflicts and stale caches for {STUCK_AFTER:?}: the caches may follow another history than the API server's (restored from a backup?); every informer lists again (#{epoch})"
            );
        }
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.since.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_unbroken_stale_run_of_30s_moves_the_history() {
        let s = StuckSyncs::default();
        let h = Arc::new(History::default());
        s.set_history(Arc::clone(&h));
        let t0 = Instant::now();
        assert!(!s.stale("c", "ns/a", t0));
        assert!(!s.stale("c", "ns/a", t0 + Duration::from_secs(29)));
        s.clear("ns/a");
        assert!(!s.stale("c", "ns/a", t0 + Duration::from_secs(31)));
        assert_eq!(h.epoch(), 0, "a success restarts the count");
        assert!(s.stale("c", "ns/a", t0 + Duration::from_secs(62)));
        assert_eq!(h.epoch(), 1);
        assert!(!s.stale("c", "ns/a", t0 + Duration::from_secs(63)));
        assert!(s.stale("c", "ns/a", t0 + Duration::from_secs(93)));
        assert_eq!(h.epoch(), 2);
    }
}
