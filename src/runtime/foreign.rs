//! Writes by someone else to the objects endpointd manages, and the warning
//! when they keep coming (another controller writing the same objects).
//! The controllers report each foreign update they recognise; each is
//! counted (`endpointd_foreign_writes_total{resource}`) and synced at once.
//! When [`THRESHOLD`] of them fall within [`WINDOW`], one warning says so,
//! at most once per [`QUIET`]. Nothing is recorded while this instance may
//! not write, or in shadow mode. Why: `docs/history.md#foreign-writes`.
//!
//! Owns the count and the decision to warn; never reads a cache or writes
//! to the API server.

use crate::runtime::fence::Fence;
use endpointd_base::clock::SharedClock;
use endpointd_kube::metrics::{Counter, Family, Registry};
use std::collections::VecDeque;
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

/// Shared by both controllers: their event handlers, and the slice
/// controller for its writes overtaken in flight.
pub struct ForeignWrites {
    detector: Mutex<Detector>,
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

#[cfg(test)]
mod tests {
    use super::*;

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
