//! Conflicts that never end. A Service whose syncs keep finding a stale
//! cache or a 409 for [`STUCK_AFTER`] without one success (nor a break of
//! more than [`GAP`]) is not racing
//! another writer (a real conflict heals at the informer's next event, and
//! the stale-write bookkeeping gives up after 10 s): the caches follow
//! another history than the server's — an API server restored from a
//! backup whose resourceVersions had already passed ours, so our watches
//! were accepted. It then moves the informers' shared
//! [`History`](endpointd_kube::informer::History), and every informer lists again.
//!
//! Bookkeeping only: never blocks beyond its own mutex, never writes to
//! the API server.

use endpointd_kube::informer::History;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a Service may stay stale before the caches are distrusted.
pub const STUCK_AFTER: Duration = Duration::from_secs(30);

/// A stale result more than this after the key's previous one starts a new
/// run: the run must be unbroken (stale syncs are retried every 200 ms).
pub const GAP: Duration = Duration::from_secs(5);

#[derive(Debug, Default)]
struct State {
    /// Per key: (first, last) stale result of its current run.
    runs: HashMap<String, (Instant, Instant)>,
    /// When the history was last moved from here: many keys stuck by one
    /// restore move it once per [`STUCK_AFTER`], not once each.
    moved: Option<Instant>,
}

/// Since when each Service has been stale, and the history to move.
#[derive(Debug, Default)]
pub struct StuckSyncs {
    state: Mutex<State>,
    history: OnceLock<Arc<History>>,
}

impl StuckSyncs {
    /// The history shared by the informers the controller reads.
    pub fn set_history(&self, h: Arc<History>) {
        let _ = self.history.set(h);
    }

    /// A sync of `key` succeeded or failed otherwise: not stuck.
    pub fn clear(&self, key: &str) {
        self.lock().runs.remove(key);
    }

    /// A sync of `key` found a stale cache or a 409 at `now`. True when it
    /// has, without a break of more than [`GAP`], for [`STUCK_AFTER`]: the
    /// history is then moved (at most once per period, whichever keys are
    /// stuck).
    pub fn stale(&self, controller: &str, key: &str, now: Instant) -> bool {
        let mut st = self.lock();
        let run = st.runs.entry(key.to_string()).or_insert((now, now));
        if now.saturating_duration_since(run.1) > GAP {
            *run = (now, now);
        }
        run.1 = now;
        if now.saturating_duration_since(run.0) < STUCK_AFTER {
            return false;
        }
        *run = (now, now);
        if st
            .moved
            .is_some_and(|t| now.saturating_duration_since(t) < STUCK_AFTER)
        {
            return false;
        }
        st.moved = Some(now);
        drop(st);
        if let Some(h) = self.history.get() {
            let epoch = h.went_back();
            log::warn!(
                "{controller}: {key} has met only conflicts and stale caches for {STUCK_AFTER:?}: the caches may follow another history than the API server's (restored from a backup?); every informer lists again (#{epoch})"
            );
        }
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
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
        let at = |secs: u64| t0 + Duration::from_secs(secs);
        // Stale every 2 s (retries) for 29 s, then a success: no move.
        for t in (0..=28).step_by(2) {
            assert!(!s.stale("c", "ns/a", at(t)));
        }
        s.clear("ns/a");
        assert_eq!(h.epoch(), 0, "a success restarts the count");
        // Stale once, then again 40 s later: a broken run, no move.
        assert!(!s.stale("c", "ns/a", at(30)));
        assert!(!s.stale("c", "ns/a", at(70)));
        assert_eq!(h.epoch(), 0, "a gap restarts the run");
        // An unbroken run of 30 s moves it.
        for t in (72..100).step_by(2) {
            assert!(!s.stale("c", "ns/a", at(t)), "{t}");
        }
        assert!(s.stale("c", "ns/a", at(100)));
        assert_eq!(h.epoch(), 1);
        // Another key stuck by the same restore: not moved again within
        // the period.
        for t in (70..=100).step_by(2) {
            assert!(!s.stale("c", "ns/b", at(t)), "{t}");
        }
        assert_eq!(h.epoch(), 1, "once per period");
        for t in (102..=130).step_by(2) {
            s.stale("c", "ns/a", at(t));
        }
        assert_eq!(h.epoch(), 2, "still stuck a period later: moved again");
    }
}
