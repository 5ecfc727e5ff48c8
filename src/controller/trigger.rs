//! The trigger-time tracker (upstream
//! `staging/src/k8s.io/endpointslice/util/trigger_time_tracker.go`,
//! upstream-spec B30), shared by both controllers: the value of the
//! `endpoints.kubernetes.io/last-change-trigger-time` annotation.
//!
//! Per Service it remembers the Service's trigger time (its
//! creationTimestamp) and each pod's (its Ready condition's
//! lastTransitionTime). The first computation for a Service answers the
//! Service's creationTimestamp; later ones the earliest trigger time that
//! moved since the previous computation, or `None` (the zero time: the
//! annotation is removed). The state always advances, even when the sync
//! then writes nothing (A9).
//!
//! Owns that state; never reads the clock or a cache.

use crate::model::{Pod, Service, Time};
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex};

#[derive(Debug, Default)]
struct ServiceState {
    last_service_trigger: Option<Time>,
    /// Each pod's last trigger time, keyed by a 64-bit hash of its name
    /// (upstream keys by the name itself) and sorted by it: 16 bytes per
    /// pod in one exact-size block instead of a hash map of cloned name
    /// strings, and lookups compare integers, not strings. Two names of
    /// one Service's pods colliding (p ≈ n²/2⁶⁵: ~3·10⁻¹² for 10,000 pods,
    /// with a per-process random key) could at worst make one computation
    /// miss a pod's move and report an earlier or no trigger time.
    last_pod_triggers: PodTriggers,
}

/// The pods' last trigger times as whole seconds (16 bytes per pod): a
/// cached pod keeps its Ready lastTransitionTime at whole seconds
/// ([`crate::model::OptTime`]), which is what the API server serves.
#[derive(Debug, Default)]
struct PodTriggers(Box<[(u64, i64)]>);

impl PodTriggers {
    /// From `(hash, time)` pairs sorted by hash.
    fn new(v: Vec<(u64, Time)>) -> PodTriggers {
        PodTriggers(v.into_iter().map(|(h, t)| (h, t.0.as_second())).collect())
    }

    fn get(&self, h: u64) -> Option<Time> {
        let i = self.0.binary_search_by_key(&h, |e| e.0).ok()?;
        // Whole seconds of a valid timestamp: always in range.
        jiff::Timestamp::from_second(self.0[i].1).ok().map(Time)
    }
}

/// Thread-safe; two workers never compute for the same Service at once
/// (the work queue guarantees it), so one lock around the map suffices.
#[derive(Debug, Default)]
pub struct TriggerTimeTracker {
    states: Mutex<HashMap<Box<str>, ServiceState>>,
    /// Keys the pod-name hashes (random per process).
    hasher: RandomState,
}

fn min_time(a: Option<Time>, b: Time) -> Option<Time> {
    Some(a.map_or(b, |a| a.min(b)))
}

impl TriggerTimeTracker {
    /// A tracker with no state.
    pub fn new() -> TriggerTimeTracker {
        TriggerTimeTracker::default()
    }

    /// Upstream `ComputeEndpointLastChangeTriggerTime` for the Service
    /// `key` (`ns/name`) and the pods its selector matches.
    pub fn compute(&self, key: &str, svc: &Service, pods: &[Arc<Pod>]) -> Option<Time> {
        let mut states = self.states.lock().unwrap_or_else(|p| p.into_inner());
        let known = states.contains_key(key);
        if !known {
            states.insert(key.into(), ServiceState::default());
        }
        let Some(state) = states.get_mut(key) else {
            return svc.metadata.creation_timestamp;
        };
        let mut min_changed: Option<Time> = None;
        let mut pod_triggers: Vec<(u64, Time)> = Vec::with_capacity(pods.len());
        for pod in pods {
            let Some(t) = pod.ready.and_then(|r| r.last_transition_time.get()) else {
                continue;
            };
            let h = self.hasher.hash_one(pod.metadata.name.as_str());
            let last = state.last_pod_triggers.get(h);
            if last.is_none_or(|l| t > l) {
                min_changed = min_time(min_changed, t);
            }
            pod_triggers.push((h, t));
        }
        pod_triggers.sort_unstable_by_key(|e| e.0);
        let svc_trigger = svc.metadata.creation_timestamp;
        if let Some(t) = svc_trigger {
            if state.last_service_trigger.is_none_or(|l| t > l) {
                min_changed = min_time(min_changed, t);
            }
        }
        state.last_pod_triggers = PodTriggers::new(pod_triggers);
        state.last_service_trigger = svc_trigger;
        if !known {
            return svc.metadata.creation_timestamp;
        }
        min_changed
    }

    /// Forget a deleted Service (upstream `DeleteService`).
    pub fn delete_service(&self, key: &str) {
        self.states
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }

    /// Number of Services tracked (for tests and memory accounting).
    pub fn len(&self) -> usize {
        self.states.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether no Service is tracked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ReadyCondition;

    fn t(secs: i64) -> Time {
        Time(jiff::Timestamp::from_second(1_767_225_600 + secs).expect("time"))
    }

    fn svc(created: i64) -> Service {
        let mut s = Service::default();
        s.metadata.name = "svc".into();
        s.metadata.creation_timestamp = Some(t(created));
        s
    }

    fn pod(name: &str, ready_at: Option<i64>) -> Arc<Pod> {
        let mut p = Pod::default();
        p.metadata.name = name.into();
        p.ready = ready_at.map(|s| ReadyCondition {
            is_true: true,
            last_transition_time: Some(t(s)).into(),
        });
        Arc::new(p)
    }

    /// The scenario of upstream TestNewServiceNoPods … TestPodDeletedThenAdded,
    /// step by step on one tracker.
    #[test]
    fn upstream_scenarios() {
        let tr = TriggerTimeTracker::new();
        let k = "ns/svc";
        // New service, no pods → creationTimestamp.
        assert_eq!(tr.compute(k, &svc(0), &[]), Some(t(0)));
        // Two pods appear → the earlier of their times.
        assert_eq!(
            tr.compute(k, &svc(0), &[pod("a", Some(5)), pod("b", Some(3))]),
            Some(t(3))
        );
        // Nothing changed → zero.
        assert_eq!(
            tr.compute(k, &svc(0), &[pod("a", Some(5)), pod("b", Some(3))]),
            None
        );
        // One pod updated → its new time.
        assert_eq!(
            tr.compute(k, &svc(0), &[pod("a", Some(9)), pod("b", Some(3))]),
            Some(t(9))
        );
        // Pod deleted → zero (nothing moved).
        assert_eq!(tr.compute(k, &svc(0), &[pod("a", Some(9))]), None);
        // The deleted pod comes back with its old time → counts as changed.
        assert_eq!(
            tr.compute(k, &svc(0), &[pod("a", Some(9)), pod("b", Some(3))]),
            Some(t(3))
        );
        // A pod without a Ready condition contributes nothing.
        assert_eq!(
            tr.compute(
                k,
                &svc(0),
                &[pod("a", Some(9)), pod("b", Some(3)), pod("c", None)]
            ),
            None
        );
        // Service recreated (later creationTimestamp) and a pod moved → min.
        assert_eq!(
            tr.compute(k, &svc(20), &[pod("a", Some(25)), pod("b", Some(3))]),
            Some(t(20))
        );
        // Forgetting the Service starts over at its creationTimestamp.
        tr.delete_service(k);
        assert!(tr.is_empty());
        assert_eq!(tr.compute(k, &svc(20), &[pod("a", Some(25))]), Some(t(20)));
    }

    /// Many pods, in a different order each time: lookups are by name,
    /// not position.
    #[test]
    fn many_pods_any_order() {
        let tr = TriggerTimeTracker::new();
        let k = "ns/svc";
        let mut pods: Vec<Arc<Pod>> = (0..1000)
            .map(|i| pod(&format!("p{i}"), Some(100 + i)))
            .collect();
        assert_eq!(tr.compute(k, &svc(0), &pods), Some(t(0)));
        pods.reverse();
        assert_eq!(tr.compute(k, &svc(0), &pods), None);
        pods[10] = pod("p989", Some(5000));
        pods[20] = pod("p979", Some(4000));
        pods.swap(0, 999);
        assert_eq!(tr.compute(k, &svc(0), &pods), Some(t(4000)));
        pods.retain(|p| p.metadata.name != "p500");
        assert_eq!(tr.compute(k, &svc(0), &pods), None);
        pods.push(pod("p500", Some(600)));
        assert_eq!(tr.compute(k, &svc(0), &pods), Some(t(600)));
    }
}
