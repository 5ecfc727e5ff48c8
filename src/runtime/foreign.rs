//! Writes by someone else to the objects endpointd manages, and the warning
//! when they keep coming (another controller writing the same objects).
//! The controllers report each foreign update they recognise; each is
//! counted (`endpointd_foreign_writes_total{resource}`) and synced at once.
//! When [`THRESHOLD`] of them fall within [`WINDOW`], one warning says so,
//! at most once per [`QUIET`]. Nothing is recorded while this instance may
//! not write, or in shadow mode. Why: `docs/history.md#foreign-writes`.
//!
//! Corrections of one object back off ([`CorrectionLimiter`]): the first
//! [`FREE_CORRECTIONS`] after a quiet spell are made at once; while the
//! other writer keeps going, each later one waits twice as long as the
//! one before, from [`FIRST_DELAY`] up to [`MAX_DELAY`]; an object left
//! alone for [`IDLE`] starts again. A writer rewriting an object every
//! 50 ms is then answered a few times, then about once a minute, instead of
//! write for write.
//!
//! Owns the count, the decision to warn and the corrections' delays; never
//! reads a cache or writes to the API server.

use crate::runtime::fence::Fence;
use endpointd_base::clock::SharedClock;
use endpointd_kube::metrics::{Counter, Family, Registry};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Foreign writes within [`WINDOW`] that make a warning.
pub const THRESHOLD: usize = 5;
/// The window the foreign writes are counted in.
pub const WINDOW: Duration = Duration::from_secs(60);
/// At most one warning per this long.
pub const QUIET: Duration = Duration::from_secs(600);

/// The pure part: foreign writes seen at these times → warn now or not.
#[derive(Debug, Default)]
pub struct Detector {
    recent: VecDeque<Instant>,
    warned: Option<Instant>,
}

impl Detector {
    /// A foreign write seen at `now`; `Some(n)` when a warning is due, with
    /// the number of foreign writes within [`WINDOW`].
    pub fn record(&mut self, now: Instant) -> Option<usize> {
        self.recent
            .retain(|&t| now.saturating_duration_since(t) < WINDOW);
        self.recent.push_back(now);
        if self.recent.len() > THRESHOLD {
            self.recent.pop_front();
        }
        let n = self.recent.len();
        let quiet = self
            .warned
            .is_some_and(|w| now.saturating_duration_since(w) < QUIET);
        if n < THRESHOLD || quiet {
            return None;
        }
        self.warned = Some(now);
        Some(n)
    }
}

/// Corrections of one object made at once after a quiet spell.
pub const FREE_CORRECTIONS: u32 = 3;
/// The delay of the first correction past [`FREE_CORRECTIONS`]; each later
/// one doubles it.
pub const FIRST_DELAY: Duration = Duration::from_secs(1);
/// The longest a correction waits.
pub const MAX_DELAY: Duration = Duration::from_secs(60);
/// An object with no foreign update for this long is forgotten: its next
/// correction is free again.
pub const IDLE: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy)]
struct Strikes {
    /// Corrections granted since the object was last idle.
    granted: u32,
    /// When the last granted correction runs.
    next: Instant,
    /// The last foreign update seen.
    last: Instant,
}

/// The pure part of the correction backoff: per object (a controller's
/// key), foreign updates seen at these times → how long until the
/// correction. Memory holds only the objects with a foreign update within
/// [`IDLE`] (swept at most every [`IDLE`]).
#[derive(Debug, Default)]
pub struct CorrectionLimiter {
    keys: HashMap<String, Strikes>,
    swept: Option<Instant>,
}

impl CorrectionLimiter {
    /// A foreign update of `key` seen at `now`: the delay of its
    /// correction, and whether this is the first correction that waits
    /// (for a log line). A correction already scheduled later answers the
    /// time left to it: the queue keeps the earlier time, so the updates
    /// that follow within a delay cost nothing.
    pub fn correction(&mut self, key: &str, now: Instant) -> (Duration, bool) {
        if self
            .swept
            .is_none_or(|t| now.saturating_duration_since(t) >= IDLE)
        {
            self.keys
                .retain(|_, s| now.saturating_duration_since(s.last) < IDLE);
            self.swept = Some(now);
        }
        let s = self.keys.entry(key.to_string()).or_insert(Strikes {
            granted: 0,
            next: now,
            last: now,
        });
        if now.saturating_duration_since(s.last) >= IDLE {
            s.granted = 0;
        }
        s.last = now;
        if s.next > now {
            return (s.next.saturating_duration_since(now), false);
        }
        s.granted = s.granted.saturating_add(1);
        let Some(over) = s.granted.checked_sub(FREE_CORRECTIONS + 1) else {
            s.next = now;
            return (Duration::ZERO, false);
        };
        let delay = FIRST_DELAY
            .saturating_mul(1u32 << over.min(16))
            .min(MAX_DELAY);
        s.next = now + delay;
        (delay, over == 0)
    }

    /// Forget `key` (its Service is gone).
    pub fn forget(&mut self, key: &str) {
        self.keys.remove(key);
    }

    /// Objects remembered.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no object is remembered.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// Shared by both controllers: their event handlers, and the slice
/// controller for its writes overtaken in flight.
pub struct ForeignWrites {
    detector: Mutex<Detector>,
    limiter: Mutex<CorrectionLimiter>,
    clock: SharedClock,
    fence: Fence,
    enabled: bool,
    count: Arc<Family<Counter>>,
}

impl std::fmt::Debug for ForeignWrites {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForeignWrites")
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

impl ForeignWrites {
    /// Counting into `registry`; `enabled` is false in shadow mode.
    pub fn new(
        registry: &Registry,
        clock: SharedClock,
        fence: Fence,
        enabled: bool,
    ) -> Arc<ForeignWrites> {
        let count = registry.counter(
            "endpointd_foreign_writes_total",
            "Updates by another writer to objects endpointd manages (each is synced at once), by resource; a steady rate means another controller writes them too.",
            &["resource"],
        );
        // Both series from the start, at 0: a dashboard can tell "none"
        // from "not reported".
        for r in ["endpoints", "endpointslices"] {
            count.with(&[r]);
        }
        Arc::new(ForeignWrites {
            detector: Mutex::new(Detector::default()),
            limiter: Mutex::new(CorrectionLimiter::default()),
            clock,
            fence,
            enabled,
            count,
        })
    }

    /// Someone else updated `what` (`EndpointSlice ns/name`), an object of
    /// `resource` (`endpointslices`, `endpoints`) that endpointd manages.
    pub fn seen(&self, resource: &str, what: &dyn std::fmt::Display) {
        if !self.enabled || self.fence.check().is_err() {
            return;
        }
        self.count.with(&[resource]).inc();
        let due = self
            .detector
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(self.clock.now());
        if let Some(n) = due {
            log::warn!(
                "another writer is changing the Endpoints and EndpointSlices endpointd manages: \
                 {n} or more updates by someone else within {}s, the last to {what}; each is synced, \
                 but two controllers of the same objects fight over them. If kube-controller-manager \
                 still runs its endpoint and endpointslice controllers, disable them \
                 (--controllers=*,-endpoint,-endpointslice); see endpointd_foreign_writes_total",
                WINDOW.as_secs()
            );
        }
    }
}

impl ForeignWrites {
    /// Someone else updated an object of `resource` that the sync of
    /// Service `key` writes: how long to wait before correcting it
    /// ([`CorrectionLimiter`]; zero in shadow mode, which writes nothing).
    /// Called for every foreign update, counted by [`ForeignWrites::seen`]
    /// or not (an echo of an earlier write of ours, as a server that keeps
    /// old content while claiming the new one sends).
    pub fn correction_delay(&self, resource: &str, key: &str) -> Duration {
        if !self.enabled {
            return Duration::ZERO;
        }
        let (delay, first) = self
            .limiter
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .correction(&format!("{resource} {key}"), self.clock.now());
        if first {
            log::warn!(
                "the {resource} of Service {key} keep being changed by another writer: corrected {FREE_CORRECTIONS} times at once; \
                 further corrections wait from {FIRST_DELAY:?} doubling up to {MAX_DELAY:?} while it goes on"
            );
        }
        delay
    }

    /// The Service `key` is gone: forget its corrections.
    pub fn forget(&self, key: &str) {
        let mut l = self.limiter.lock().unwrap_or_else(|p| p.into_inner());
        for r in ["endpoints", "endpointslices"] {
            l.forget(&format!("{r} {key}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrections_of_one_object_back_off_and_reset_when_it_is_left_alone() {
        let t0 = Instant::now();
        let ms = |m: u64| t0 + Duration::from_millis(m);
        // (ms after t0, key, delay in ms, first to wait)
        let table: &[(u64, &str, u64, bool)] = &[
            // Three free corrections.
            (0, "a", 0, false),
            (50, "a", 0, false),
            (100, "a", 0, false),
            // Then 1 s, and the updates within it wait for the same time.
            (150, "a", 1000, true),
            (200, "a", 950, false),
            (1100, "a", 50, false),
            // Another object is not affected.
            (1120, "b", 0, false),
            // Past the scheduled correction: 2 s, then 4 s.
            (1150, "a", 2000, false),
            (3150, "a", 4000, false),
            (7150, "a", 8000, false),
            (15150, "a", 16000, false),
            (31150, "a", 32000, false),
            // The ceiling.
            (63150, "a", 60000, false),
            (93150, "a", 30000, false),
            (123150, "a", 60000, false),
            (183149, "a", 1, false),
            // The writer stopped for a minute: free again.
            (250000, "a", 0, false),
            (250050, "a", 0, false),
            (250100, "a", 0, false),
            (250150, "a", 1000, true),
        ];
        let mut l = CorrectionLimiter::default();
        for &(at, key, want, first) in table {
            assert_eq!(
                l.correction(key, ms(at)),
                (Duration::from_millis(want), first),
                "at {at} ms, {key}"
            );
        }
        // Only the objects updated within the last minute are kept.
        assert_eq!(l.len(), 1, "b was swept");
        l.forget("a");
        assert!(l.is_empty());
    }

    #[test]
    fn warns_at_the_threshold_within_the_window_then_stays_quiet() {
        let t0 = Instant::now();
        let s = |secs: u64| t0 + Duration::from_secs(secs);
        // (seconds after t0, warning due with this count)
        let table: &[(u64, Option<usize>)] = &[
            (0, None),
            (10, None),
            (20, None),
            (30, None),
            // Five within 60 s: a warning.
            (40, Some(5)),
            // More within the quiet period: none.
            (41, None),
            (300, None),
            (301, None),
            (302, None),
            (303, None),
            (304, None),
            // Past the quiet period, the window full again: one more.
            (640, None),
            (641, None),
            (642, None),
            (643, None),
            (644, Some(5)),
        ];
        let mut d = Detector::default();
        for &(at, want) in table {
            assert_eq!(d.record(s(at)), want, "at {at} s");
        }
    }

    #[test]
    fn writes_spread_wider_than_the_window_never_warn() {
        let t0 = Instant::now();
        let mut d = Detector::default();
        // One every 15 s: at most four within any 60 s.
        for i in 0..100u64 {
            assert_eq!(d.record(t0 + Duration::from_secs(15 * i)), None, "{i}");
        }
        // Then five in a burst: a warning.
        let t = t0 + Duration::from_secs(15 * 100 + 100);
        let got: Vec<_> = (0..5)
            .map(|i| d.record(t + Duration::from_millis(i)))
            .collect();
        assert_eq!(got, [None, None, None, None, Some(5)]);
    }

    #[test]
    fn nothing_counts_while_this_instance_may_not_write_or_in_shadow_mode() {
        use endpointd_base::clock::{Clock, FakeClock};
        let clock = FakeClock::new();
        let registry = Registry::new();
        let fence = Fence::leased(clock.clone(), Duration::from_secs(10));
        let f = ForeignWrites::new(&registry, clock.clone(), fence.clone(), true);
        let count = |f: &ForeignWrites| f.count.with(&["endpoints"]).get();
        f.seen("endpoints", &"Endpoints ns/a");
        assert_eq!(count(&f), 0, "a standby: the leader's writes");
        fence.renewed(clock.now());
        f.seen("endpoints", &"Endpoints ns/a");
        assert_eq!(count(&f), 1, "the leader counts");
        let shadow = ForeignWrites::new(&Registry::new(), clock.clone(), Fence::open(), false);
        shadow.seen("endpoints", &"Endpoints ns/a");
        assert_eq!(count(&shadow), 0, "shadow mode");
    }
}
