//! endpointd's own controller metrics (kube-controller-manager has no
//! `endpoint_controller_*` family): sync durations and results per
//! controller, and recovered panics.
//!
//! Owns registration and recording; registers once per registry.

use endpointd_kube::metrics::{exponential_buckets, Counter, Family, Histogram, Registry};
use std::sync::Arc;
use std::time::Duration;

/// How a sync ended, as the `result` label says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncResult {
    /// Synced; the key is forgotten.
    Success,
    /// Failed; retried with backoff.
    Error,
    /// Failed because the cache was older than our own last write; retried.
    Stale,
    /// Failed for the 15th time; given up.
    Dropped,
}

impl SyncResult {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            SyncResult::Success => "success",
            SyncResult::Error => "error",
            SyncResult::Stale => "stale",
            SyncResult::Dropped => "dropped",
        }
    }
}

/// The families, shared by both controllers (label `controller`).
#[derive(Debug)]
pub struct ControllerMetrics {
    duration: Arc<Family<Histogram>>,
    syncs: Arc<Family<Counter>>,
    panics: Arc<Family<Counter>>,
}

impl ControllerMetrics {
    /// Register the families in `registry` (once per registry).
    pub fn register(registry: &Registry) -> Arc<ControllerMetrics> {
        Arc::new(ControllerMetrics {
            duration: registry.histogram(
                "endpointd_sync_duration_seconds",
                "Time one sync of one Service took, by controller.",
                &["controller"],
                exponential_buckets(0.0001, 2.0, 18),
            ),
            syncs: registry.counter(
                "endpointd_syncs_total",
                "Syncs by controller and result (success, error, stale, dropped).",
                &["controller", "result"],
            ),
            panics: registry.counter(
                "endpointd_sync_panics_total",
                "Syncs that panicked (caught; the key was retried), by controller.",
                &["controller"],
            ),
        })
    }

    /// One sync took `d`.
    pub fn observe(&self, controller: &str, d: Duration) {
        self.duration.with(&[controller]).observe(d.as_secs_f64());
    }

    /// One sync ended with `r`.
    pub fn result(&self, controller: &str, r: SyncResult) {
        self.syncs.with(&[controller, r.as_str()]).inc();
    }

    /// One sync panicked.
    pub fn panicked(&self, controller: &str) {
        self.panics.with(&[controller]).inc();
    }

    /// Syncs of `controller` that ended with `r` (tests, STATUS).
    pub fn count(&self, controller: &str, r: SyncResult) -> u64 {
        self.syncs.with(&[controller, r.as_str()]).get()
    }
}
