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
    cache: Mutex<HashMap<String, PerService>>,
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
        c.insert(key.to_string(), entry);
        self.refresh(&c);
    }

    /// One sync ended with `result` ("success", "stale" or "error").
    pub fn sync_result(&self, result: &str) {
        self.syncs.with(&[result]).inc();
    }

    /// The Service is gone.
    pub fn delete_service(&self, key: &str) {
        let mut c = self.lock();
        if c.remove(key).is_some() {
            self.refresh(&c);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, PerService>> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn refresh(&self, c: &HashMap<String, PerService>) {
        let sum = |f: fn(&PerService) -> usize| c.values().map(f).sum::<usize>() as f64;
        self.endpoints_desired.with(&[]).set(sum(|p| p.endpoints));
        self.num_slices.with(&[]).set(sum(|p| p.slices));
        self.desired_slices.with(&[]).set(sum(|p| p.desired_slices));
        let mut by_td: HashMap<&str, usize> = HashMap::new();
        for p in c.values() {
            if let Some(td) = &p.traffic_distribution {
                *by_td.entry(td).or_default() += 1;
            }
        }
        for td in ["PreferClose", "PreferSameZone", "PreferSameNode"] {
            let n = by_td.remove(td).unwrap_or(0);
            self.by_traffic_distribution.with(&[td]).set(n as f64);
        }
        for (td, n) in by_td {
            self.by_traffic_distribution.with(&[td]).set(n as f64);
        }
    }
}
