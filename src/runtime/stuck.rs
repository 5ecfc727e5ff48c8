//! Conflicts that never end. A Service whose syncs keep finding a stale
//! cache or a 409 for [`STUCK_AFTER`] without one success (nor a break of
//! more than [`GAP`] beyond the retry delay) is not racing another writer
//! (a real conflict heals at the informer's next event, and the
//! stale-write bookkeeping gives up after 10 s): the caches may follow
//! another history than the server's — an API server restored from a
//! backup whose resourceVersions had already passed ours, so our watches
//! were accepted. It then has every informer list again
//! ([`History::relist`], saying why), once per run of the key.
//!
//! Retries of a stale key back off ([`StuckSyncs::stale`] answers the
//! delay): [`STALE_RETRY`] doubling up to [`BEFORE_RELIST_MAX`] while a
//! relist may still help (short enough to keep the run unbroken), then,
//! once the relist was tried and the key still conflicts (one object the
//! server always answers 409), doubling on up to [`RELISTED_MAX`]. Such an
//! object costs a write a minute, not five a second forever.
//!
//! Bookkeeping only: never blocks beyond its own mutex, never writes to
//! the API server.

use super::worker::STALE_RETRY;
use endpointd_kube::informer::History;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a Service may stay stale before the caches are distrusted.
pub const STUCK_AFTER: Duration = Duration::from_secs(30);

/// A stale result more than this (beyond the retry delay) after the key's
/// previous one starts a new run: the run must be unbroken.
pub const GAP: Duration = Duration::from_secs(5);

/// The longest retry delay of a stale key before the relist.
pub const BEFORE_RELIST_MAX: Duration = Duration::from_secs(2);

/// The longest retry delay of a key still stale after the relist.
pub const RELISTED_MAX: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy)]
struct Run {
    first: Instant,
    last: Instant,
    /// The delay answered last.
    delay: Duration,
    /// The informers listed again during this run (by this key or another).
    relisted: bool,
}

#[derive(Debug, Default)]
struct State {
    runs: HashMap<String, Run>,
    /// When the informers were last made to list from here: many keys
    /// stuck at once relist once per [`STUCK_AFTER`], not once each.
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

    /// A sync of `key` found a stale cache or a 409 at `now`: how long to
    /// wait before retrying it. When it has, without a break, for
    /// [`STUCK_AFTER`], every informer lists again (at most once per
    /// period, whichever keys are stuck; once per run of a key).
    pub fn stale(&self, controller: &str, key: &str, now: Instant) -> Duration {
        let mut st = self.lock();
        let fresh = Run {
            first: now,
            last: now,
            delay: Duration::ZERO,
            relisted: false,
        };
        let run = st.runs.entry(key.to_string()).or_insert(fresh);
        if now.saturating_duration_since(run.last) > run.delay + GAP {
            *run = fresh;
        }
        run.last = now;
        let cap = match run.relisted {
            true => RELISTED_MAX,
            false => BEFORE_RELIST_MAX,
        };
        run.delay = match run.delay.is_zero() {
            true => STALE_RETRY,
            false => run.delay.saturating_mul(2).min(cap),
        };
        let delay = run.delay;
        let stuck_for = now.saturating_duration_since(run.first);
        if run.relisted || stuck_for < STUCK_AFTER {
            return delay;
        }
        run.relisted = true;
        if st
            .moved
            .is_some_and(|t| now.saturating_duration_since(t) < STUCK_AFTER)
        {
            return delay;
        }
        st.moved = Some(now);
        drop(st);
        if let Some(h) = self.history.get() {
            let why = format!(
                "{controller}: every sync of {key} has met a conflict or a stale cache for {}s",
                stuck_for.as_secs()
            );
            let epoch = h.relist(why.clone());
            log::warn!(
                "{why}; every informer lists again, in case the caches follow another history than the API server's (restored from a backup?); if that does not help, its retries back off up to {RELISTED_MAX:?} (#{epoch})"
            );
        }
        delay
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(d: Duration) -> u64 {
        d.as_millis() as u64
    }

    /// Retries at the answered delays from `from` until `until`: the
    /// times (ms after t0) and delays.
    fn retries(s: &StuckSyncs, key: &str, t0: Instant, from: u64, until: u64) -> Vec<(u64, u64)> {
        let mut at = from;
        let mut out = Vec::new();
        while at <= until {
            let d = ms(s.stale("c", key, t0 + Duration::from_millis(at)));
            out.push((at, d));
            at += d;
        }
        out
    }

    #[test]
    fn an_unbroken_stale_run_relists_once_then_backs_off() {
        let s = StuckSyncs::default();
        let h = Arc::new(History::default());
        s.set_history(Arc::clone(&h));
        let t0 = Instant::now();
        // The retries back off to 2 s before the relist.
        let before = retries(&s, "ns/a", t0, 0, 29_999);
        assert_eq!(
            before[..6],
            [
                (0, 200),
                (200, 400),
                (600, 800),
                (1400, 1600),
                (3000, 2000),
                (5000, 2000)
            ]
        );
        assert_eq!(h.epoch(), 0, "not yet");
        assert_eq!(before.len(), 18, "{before:?}");
        // At 30 s the informers list again, once, saying why.
        let after = retries(&s, "ns/a", t0, 31_000, 200_000);
        assert_eq!(h.epoch(), 1);
        let why = h.relist_reason().unwrap_or_default();
        assert!(why.contains("ns/a") && why.contains("31s"), "{why}");
        // Then doubling to a minute.
        let delays: Vec<u64> = after.iter().map(|&(_, d)| d).collect();
        assert_eq!(
            delays[..6],
            [2000, 4000, 8000, 16000, 32000, 60000],
            "{after:?}"
        );
        assert!(
            after.len() <= 8,
            "{} retries in the 170 s after the relist",
            after.len()
        );
        // A success ends the run: fast retries again.
        s.clear("ns/a");
        assert_eq!(ms(s.stale("c", "ns/a", t0 + Duration::from_secs(300))), 200);
    }

    #[test]
    fn a_broken_run_starts_again_and_relists_are_shared() {
        let s = StuckSyncs::default();
        let h = Arc::new(History::default());
        s.set_history(Arc::clone(&h));
        let t0 = Instant::now();
        let at = |secs: u64| t0 + Duration::from_secs(secs);
        // Stale once, then again 40 s later: a broken run.
        s.stale("c", "ns/a", at(0));
        assert_eq!(ms(s.stale("c", "ns/a", at(40))), 200, "a new run");
        // Two keys stuck by the same restore: one relist.
        retries(&s, "ns/a", t0, 41_000, 80_000);
        retries(&s, "ns/b", t0, 41_000, 80_000);
        assert_eq!(h.epoch(), 1, "once per period");
        // ns/b counts the relist as tried: it backs off too.
        let d = ms(s.stale("c", "ns/b", at(81)));
        assert!(d > 2000, "{d}");
    }
}
