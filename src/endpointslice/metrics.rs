//! kube-controller-manager's `endpoint_slice_controller_*` metrics, same
//! names, types, labels and buckets as upstream
//! `staging/src/k8s.io/endpointslice/metrics/metrics.go`, so existing
//! dashboards work; plus upstream's per-Service cache (`metrics/cache.go`)
//! behind the cluster-wide gauges. Unlike upstream, whose cache keeps only
//! the last address type synced per Service, both families of a dual-stack
//! Service are counted.
//!
//! Owns registration and the cache; never decides anything.

use super::plan::SlicePlan;
use super::writer::FinalizeOutcome;
use endpointd_kube::metrics::{exponential_buckets, Counter, Family, Gauge, Histogram, Registry};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The metric subsystem.
const P: &str = "endpoint_slice_controller_";

/// One Service's entry: 16 bytes (a table slot with its `Box<str>` key
/// is 32), where usizes and an owned trafficDistribution string took 48
/// (issue 13). Counts are saturated at `u32::MAX` (never reached: a
/// Service's endpoints are pods); the running sums add and subtract the
/// stored values, so they stay exact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct PerService {
    endpoints: u32,
    slices: u32,
    desired_slices: u32,
    /// 1 + the index of its trafficDistribution value in
    /// [`Cache::by_td`]; 0: none.
    td: u32,
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
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
    services: HashMap<Box<str>, PerService>,
    endpoints: usize,
    slices: usize,
    desired_slices: usize,
    /// Each trafficDistribution value seen, with the number of Services
    /// using it (counts may reach 0; values are never dropped). A handful
    /// of values in practice, so a list searched in order.
    by_td: Vec<(Box<str>, usize)>,
}

impl Cache {
    /// The [`PerService::td`] of `td`, added to [`Cache::by_td`] when new.
    fn td_slot(&mut self, td: Option<&str>) -> u32 {
        let Some(td) = td else { return 0 };
        let i = match self.by_td.iter().position(|(v, _)| &**v == td) {
            Some(i) => i,
            None => {
                self.by_td.push((td.into(), 0));
                self.by_td.len() - 1
            }
        };
        count(i + 1)
    }

    /// Replace (`new: Some`) or remove (`None`) the entry of `key`; the
    /// [`PerService::td`] slots whose count changed.
    fn set(&mut self, key: &str, new: Option<PerService>) -> Vec<u32> {
        let old = match new {
            // The key is copied only the first time a Service is seen.
            Some(n) => match self.services.get_mut(key) {
                Some(e) => Some(std::mem::replace(e, n)),
                None => self.services.insert(key.into(), n),
            },
            None => self.services.remove(key),
        };
        let mut touched = Vec::new();
        if let Some(o) = old {
            self.endpoints -= o.endpoints as usize;
            self.slices -= o.slices as usize;
            self.desired_slices -= o.desired_slices as usize;
            if o.td != 0 {
                if let Some((_, n)) = self.by_td.get_mut(o.td as usize - 1) {
                    *n = n.saturating_sub(1);
                }
                touched.push(o.td);
            }
        }
        if let Some(n) = new {
            self.endpoints += n.endpoints as usize;
            self.slices += n.slices as usize;
            self.desired_slices += n.desired_slices as usize;
            if n.td != 0 {
                if let Some((_, c)) = self.by_td.get_mut(n.td as usize - 1) {
                    *c += 1;
                }
                if !touched.contains(&n.td) {
                    touched.push(n.td);
                }
            }
        }
        touched
    }

    /// The trafficDistribution value of a [`PerService::td`] slot.
    fn td_value(&self, slot: u32) -> Option<&str> {
        let i = (slot as usize).checked_sub(1)?;
        self.by_td.get(i).map(|(v, _)| &**v)
    }

    /// The number of Services using `td`.
    fn td_count(&self, td: &str) -> usize {
        self.by_td
            .iter()
            .find(|(v, _)| &**v == td)
            .map_or(0, |(_, n)| *n)
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
        plan: &SlicePlan,
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
        let mut c = self.lock();
        let entry = PerService {
            endpoints: count(plan.metrics.desired_endpoints),
            slices: count(plan.metrics.slices),
            desired_slices: count(plan.metrics.desired_slices.max(1)),
            td: c.td_slot(traffic_distribution),
        };
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
    fn refresh(&self, c: &Cache, touched: &[u32]) {
        self.endpoints_desired.with(&[]).set(c.endpoints as f64);
        self.num_slices.with(&[]).set(c.slices as f64);
        self.desired_slices.with(&[]).set(c.desired_slices as f64);
        let known = ["PreferClose", "PreferSameZone", "PreferSameNode"];
        let extra = touched
            .iter()
            .filter_map(|&slot| c.td_value(slot))
            .filter(|t| !known.contains(t));
        for td in known.into_iter().chain(extra) {
            let n = c.td_count(td);
            self.by_traffic_distribution.with(&[td]).set(n as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(c: &mut Cache, endpoints: usize, slices: usize, td: Option<&str>) -> PerService {
        PerService {
            endpoints: count(endpoints),
            slices: count(slices),
            desired_slices: count(slices),
            td: c.td_slot(td),
        }
    }

    #[test]
    fn an_entry_is_16_bytes() {
        assert_eq!(std::mem::size_of::<PerService>(), 16);
        assert_eq!(count(usize::MAX), u32::MAX, "saturated, never wrapped");
    }

    /// The running sums and per-trafficDistribution counts follow inserts,
    /// replacements and removals; the touched values are the ones whose
    /// count changed.
    #[test]
    fn running_sums_and_traffic_distribution_counts() {
        let mut c = Cache::default();
        let a = entry(&mut c, 10, 1, Some("PreferClose"));
        let touched = c.set("ns/a", Some(a));
        assert_eq!(touched.len(), 1);
        assert_eq!(c.td_value(touched[0]), Some("PreferClose"));
        let b = entry(&mut c, 250, 3, None);
        assert!(c.set("ns/b", Some(b)).is_empty());
        assert_eq!((c.endpoints, c.slices, c.desired_slices), (260, 4, 4));
        assert_eq!(c.td_count("PreferClose"), 1);

        // a changes its trafficDistribution: both values touched.
        let a2 = entry(&mut c, 4, 1, Some("Custom"));
        let touched: Vec<_> = c
            .set("ns/a", Some(a2))
            .into_iter()
            .filter_map(|t| c.td_value(t).map(str::to_string))
            .collect();
        assert_eq!(touched, ["PreferClose", "Custom"]);
        assert_eq!((c.endpoints, c.slices), (254, 4));
        assert_eq!(c.td_count("PreferClose"), 0, "kept at zero");
        assert_eq!(c.td_count("Custom"), 1);
        assert_eq!(c.td_count("PreferSameNode"), 0, "never seen");

        // Same value again: one slot, counted once per Service.
        let b2 = entry(&mut c, 250, 3, Some("Custom"));
        assert_eq!(c.set("ns/b", Some(b2)).len(), 1);
        assert_eq!(c.td_count("Custom"), 2);
        assert_eq!(c.by_td.len(), 2);

        assert_eq!(c.set("ns/a", None).len(), 1);
        assert!(c.set("ns/gone", None).is_empty());
        assert_eq!((c.endpoints, c.slices, c.desired_slices), (250, 3, 3));
        assert_eq!(c.td_count("Custom"), 1);
        assert_eq!(c.services.len(), 1);
    }
}
