//! Shadow mode (`endpointd run --shadow`, `[mode] shadow = true`): the
//! daemon runs everything but writes no Endpoints, EndpointSlices or
//! Events; each sync compares what it would write with what exists
//! (kube-controller-manager's objects) and keeps the differences here.
//!
//! A difference must persist for [`GRACE`] before it counts: both
//! controllers react to the same pod change, and a sync that runs before
//! kube-controller-manager's write would otherwise report every change.
//! A confirmed difference is logged once, counted in
//! `endpointd_shadow_differences_total{kind}` and listed at `/shadow`; it
//! leaves the list when the objects agree again.
//!
//! This module owns the register; `compare` owns the comparisons. It must
//! never write to the API server.

pub mod compare;
pub mod syncer;

pub use compare::{
    compare_endpoints, compare_service_slices, compare_slices, extra_slices, Difference,
};

use endpointd_base::clock::SharedClock;
use endpointd_kube::metrics::{Counter, Family, Registry};
use endpointd_kube::workqueue::RateLimitingQueue;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a difference must persist before it is reported.
pub const GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
struct Tracked {
    diff: Difference,
    first_seen: Instant,
    confirmed: bool,
}

/// One confirmed difference, as `/shadow` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listed {
    /// `namespace/name` of the Service.
    pub service: String,
    /// `endpoints` or `endpointslices`.
    pub object: String,
    /// The difference's kind.
    pub kind: String,
    /// The address type of a slice difference; empty for the Endpoints.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub scope: String,
    /// What differs.
    pub detail: String,
    /// Seconds it has persisted.
    pub age_seconds: u64,
}

/// The shadow register shared by both controllers.
pub struct Shadow {
    clock: SharedClock,
    grace: Duration,
    state: Mutex<BTreeMap<(String, &'static str), Vec<Tracked>>>,
    queues: Mutex<BTreeMap<&'static str, RateLimitingQueue<String>>>,
    counter: Arc<Family<Counter>>,
}

impl std::fmt::Debug for Shadow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shadow").finish_non_exhaustive()
    }
}

/// The object group of the Endpoints controller.
pub const ENDPOINTS: &str = "endpoints";
/// The object group of the EndpointSlice controller.
pub const ENDPOINTSLICES: &str = "endpointslices";

impl Shadow {
    /// A register counting into `registry`.
    pub fn new(clock: SharedClock, registry: &Registry, grace: Duration) -> Arc<Shadow> {
        Arc::new(Shadow {
            clock,
            grace,
            state: Mutex::new(BTreeMap::new()),
            queues: Mutex::new(BTreeMap::new()),
            counter: registry.counter(
                "endpointd_shadow_differences_total",
                "Shadow mode: differences between what endpointd would write and what exists, counted once each when confirmed.",
                &["kind"],
            ),
        })
    }

    /// The queue to re-check `object`'s differences on after the grace.
    pub fn set_queue(&self, object: &'static str, q: RateLimitingQueue<String>) {
        self.queues
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(object, q);
    }

    /// The differences one sync of `service` found for `object`.
    pub fn observe(&self, service: &str, object: &'static str, diffs: Vec<Difference>) {
        let now = self.clock.now();
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let key = (service.to_string(), object);
        let before = state.remove(&key).unwrap_or_default();
        let mut after = Vec::new();
        let mut recheck: Option<Duration> = None;
        for d in diffs {
            // The same difference keeps its age and confirmation when only
            // its description changed (one more pod missing): logged and
            // counted once while it lasts.
            let mut t = match before.iter().find(|t| t.diff.same_as(&d)) {
                Some(t) => Tracked {
                    diff: d,
                    ..t.clone()
                },
                None => Tracked {
                    diff: d,
                    first_seen: now,
                    confirmed: false,
                },
            };
            let age = now.saturating_duration_since(t.first_seen);
            if !t.confirmed {
                if age >= self.grace {
                    t.confirmed = true;
                    log::warn!(
                        "shadow: {object} of service {service} differ from what endpointd would write ({}): {}",
                        t.diff.kind,
                        t.diff.detail
                    );
                    self.counter.with(&[&t.diff.kind]).inc();
                } else {
                    let left = self.grace - age;
                    recheck = Some(recheck.map_or(left, |r| r.min(left)));
                }
            }
            after.push(t);
        }
        if !after.is_empty() {
            state.insert(key, after);
        }
        drop(state);
        if let Some(d) = recheck {
            let queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(q) = queues.get(object) {
                q.add_after(service.to_string(), d + Duration::from_millis(10));
            }
        }
    }

    /// `service` is gone or no longer managed: forget its differences.
    pub fn forget(&self, service: &str, object: &'static str) {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(service.to_string(), object));
    }

    /// Every confirmed difference.
    pub fn list(&self) -> Vec<Listed> {
        let now = self.clock.now();
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state
            .iter()
            .flat_map(|((svc, object), v)| {
                v.iter().filter(|t| t.confirmed).map(move |t| Listed {
                    service: svc.clone(),
                    object: object.to_string(),
                    kind: t.diff.kind.clone(),
                    scope: t.diff.scope.clone(),
                    detail: t.diff.detail.clone(),
                    age_seconds: now.saturating_duration_since(t.first_seen).as_secs(),
                })
            })
            .collect()
    }

    /// `/shadow`'s body.
    pub fn json(&self) -> String {
        let body = serde_json::json!({"differences": self.list()});
        format!("{body}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use endpointd_base::clock::FakeClock;

    fn d(kind: &str, detail: &str) -> Difference {
        Difference {
            kind: kind.into(),
            scope: String::new(),
            detail: detail.into(),
        }
    }

    #[test]
    fn a_difference_counts_once_after_the_grace_and_leaves_when_fixed() {
        let clock = FakeClock::new();
        let reg = Registry::new();
        let s = Shadow::new(clock.clone(), &reg, GRACE);
        let count = |k: &str| s.counter.with(&[k]).get();
        s.observe("ns/web", ENDPOINTS, vec![d("endpoints_ports", "p")]);
        assert!(s.list().is_empty(), "pending during the grace");
        assert_eq!(count("endpoints_ports"), 0);
        // Transient: fixed before the grace ran out.
        s.observe("ns/web", ENDPOINTS, vec![]);
        clock.step(GRACE);
        s.observe("ns/web", ENDPOINTS, vec![d("endpoints_ports", "p")]);
        assert!(s.list().is_empty(), "a fresh sighting starts a fresh grace");
        clock.step(GRACE);
        s.observe("ns/web", ENDPOINTS, vec![d("endpoints_ports", "p")]);
        assert_eq!(s.list().len(), 1);
        assert_eq!(count("endpoints_ports"), 1);
        for _ in 0..3 {
            clock.step(Duration::from_secs(1));
            s.observe("ns/web", ENDPOINTS, vec![d("endpoints_ports", "p")]);
        }
        assert_eq!(count("endpoints_ports"), 1, "counted once");
        // Described differently now (another port): the same difference.
        s.observe("ns/web", ENDPOINTS, vec![d("endpoints_ports", "p, q")]);
        assert_eq!(count("endpoints_ports"), 1, "still counted once");
        assert_eq!(s.list()[0].detail, "p, q", "the latest description");
        assert!(
            s.json().contains("\"kind\":\"endpoints_ports\""),
            "{}",
            s.json()
        );
        s.observe("ns/web", ENDPOINTS, vec![]);
        assert!(s.list().is_empty(), "fixed: gone from /shadow");
        assert_eq!(count("endpoints_ports"), 1);
    }
}
