//! kube-controller-manager's `endpoint_slice_controller_*` metrics, same
//! names, types, labels and buckets as upstream
//! `staging/src/k8s.io/endpointslice/metrics/metrics.go`, so existing
//! dashboards work; plus upstream's per-Service cache (`metrics/cache.go`)
//! behind the cluster-wide gauges. Unlike upstream, whose cache keeps only
//! the last address type synced per Service, both families of a dual-stack
//! Service are counted.
//!
//! Owns registration and the cache; never decides anything.

use super::finalize::FinalizeOutcome;
use super::reconciler::Plan;
use crate::metrics::{exponential_buckets, Counter, Family, Gauge, Histogram, Registry};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The metric subsystem.
const P: &str = "endpoint_slice_controller_";

#[derive(Clone, Debug, Default)]
struct PerService {
    endpoints: usize,
    slices: usize,
    desired_slices: usize,
    traffic_distribution: Option<String>,
}

/// The families and the per-Service cache.
#[derive(Debug)]
pub struct SliceMetrics {
    added: Arc<Family<Histogram>>,
    removed: Arc<Family<Histogram>>,
    endpoints_desired: Arc<Family<Gauge>>,
    num_slices: Arc<Family<Gauge>>,
    desired_slices: Arc<Family<Gauge>>,
    changes: Arc<Family<Counter>>,
    changes_total: Arc<Family<Counter>>,
    changed_per_sync: Arc<Family<Histogram>>,
    syncs: Arc<Family<Counter>>,
    by_traffic_distribution: Arc<Family<Gauge>>,
    cache: Mutex<Cache>,
}

/// The per-Service entries and their running sums (kept in step on every
/// insert and removal, so a sync costs O(1) here, not a pass over every
/// Service).
#[derive(Debug, Default)]
struct Cache {
    services: HashMap<String, PerService>,
    endpoints: usize,
    slices: usize,
    desired_slices: usize,
    /// Services per trafficDistribution value (entries may reach 0).
    by_td: HashMap<String, usize>,
}

impl Cache {
    /// Replace (`new: Some`) or remove (`None`) the entry of `key`; the
    /// trafficDistribution values whose count changed.
    fn set(&mut self, key: &str, new: Option<PerService>) -> Vec<String> {
        let old = match &new {
            // The key is cloned only the first time a Service is seen.
            Some(n) => match self.services.get_mut(key) {
                Some(e) => Some(std::mem::replace(e, n.clone())),
                None => self.services.insert(key.to_string(), n.clone()),
            },
            None => self.services.remove(key),
        };
        let mut touched = Vec::new();
        if let Some(o) = old {
            self.endpoints -= o.endpoints;
            self.slices -= o.slices;
            self.desired_slices -= o.desired_slices;
            if let Some(td) = o.traffic_distribution {
                if let Some(n) = self.by_td.get_mut(&td) {
                    *n = n.saturating_sub(1);
                }
                touched.push(td);
            }
        }
        if let Some(n) = new {
            self.endpoints += n.endpoints;
            self.slices += n.slices;
            self.desired_slices += n.desired_slices;
            if let Some(td) = n.traffic_distribution {
                *self.by_td.entry(td.clone()).or_default() += 1;
                if !touched.contains(&td) {
                    touched.push(td);
                }
            }
        }
        touched
    }
}

fn name(n: &str) -> String {
    format!("{P}{n}")
}

impl SliceMetrics {
    /// Register the families (once per registry).
    pub fn register(r: &Registry) -> Arc<SliceMetrics> {
        let per_sync = exponential_buckets(2.0, 2.0, 15);
        let default_buckets: Arc<[f64]> = Arc::from(
            &[
                0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ][..],
        );
        Arc::new(SliceMetrics {
            added: r.histogram(
                &name("endpoints_added_per_sync"),
                "Number of endpoints added on each Service sync",
                &[],
                Arc::clone(&per_sync),
            ),
            removed: r.histogram(
                &name("endpoints_removed_per_sync"),
                "Number of endpoints removed on each Service sync",
                &[],
                per_sync,
            ),
            endpoints_desired: r.gauge(
                &name("endpoints_desired"),
                "Number of endpoints desired",
                &[],
            ),
            num_slices: r.gauge(
                &name("num_endpoint_slices"),
                "Number of EndpointSlices",
                &[],
            ),
            desired_slices: r.gauge(
                &name("desired_endpoint_slices"),
                "Number of EndpointSlices that would exist with perfect endpoint allocation",
                &[],
            ),
            changes: r.counter(
                &name("changes"),
                "Number of EndpointSlice changes",
                &["operation"],
            ),
            changes_total: r.counter(
                &name("changes_total"),
                "Number of EndpointSlice changes",
                &["operation"],
            ),
            changed_per_sync: r.histogram(
                &name("endpointslices_changed_per_sync"),
                "Number of EndpointSlices changed on each Service sync",
                &["topology", "traffic_distribution"],
                default_buckets,
            ),
            syncs: r.counter(&name("syncs"), "Number of EndpointSlice syncs", &["result"]),
            by_traffic_distribution: r.gauge(
                &name("services_count_by_traffic_distribution"),
                "Number of Services using some specific trafficDistribution",
                &["traffic_distribution"],
            ),
            cache: Mutex::default(),
        })
    }

    /// After a sync of Service `key` applied `plan`.
    pub fn record_plan(
        &self,
        key: &str,
        plan: &Plan,
        traffic_distribution: Option<&str>,
        done: &FinalizeOutcome,
    ) {
        self.added.with(&[]).observe(plan.metrics.added as f64);
        self.removed.with(&[]).observe(plan.metrics.removed as f64);
        for (op, n) in [
            ("create", done.created),
            ("update", done.updated),
            ("delete", done.deleted),
        ] {
            self.changes.with(&[op]).add(n as u64);
            self.changes_total.with(&[op]).add(n as u64);
        }
        let changed = (done.created + done.updated + done.deleted) as f64;
        self.changed_per_sync
            .with(&[plan.topology.as_str(), traffic_distribution.unwrap_or("")])
            .observe(changed);
        let entry = PerService {
            endpoints: plan.metrics.desired_endpoints,
            slices: plan.metrics.slices,
            desired_slices: plan.metrics.desired_slices.max(1),
            traffic_distribution: traffic_distribution.map(str::to_string),
        };
        let mut c = self.lock();
        let touched = c.set(key, Some(entry));
        self.refresh(&c, &touched);
    }

    /// One sync ended with `result` ("success", "stale" or "error").
    pub fn sync_result(&self, result: &str) {
        self.syncs.with(&[result]).inc();
    }

    /// The Service is gone.
    pub fn delete_service(&self, key: &str) {
        let mut c = self.lock();
        if c.services.contains_key(key) {
            let touched = c.set(key, None);
            self.refresh(&c, &touched);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Set the gauges from the running sums; of the per-trafficDistribution
    /// gauge, the three known values (always present) and `touched`.
    fn refresh(&self, c: &Cache, touched: &[String]) {
        self.endpoints_desired.with(&[]).set(c.endpoints as f64);
        self.num_slices.with(&[]).set(c.slices as f64);
        self.desired_slices.with(&[]).set(c.desired_slices as f64);
        let known = ["PreferClose", "PreferSameZone", "PreferSameNode"];
        let extra = touched
            .iter()
            .map(String::as_str)
            .filter(|t| !known.contains(t));
        for td in known.into_iter().chain(extra) {
            let n = c.by_td.get(td).copied().unwrap_or(0);
            self.by_traffic_distribution.with(&[td]).set(n as f64);
        }
    }
}
