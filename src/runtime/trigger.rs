//! The trigger-time tracker (upstream
//! `staging/src/k8s.io/endpointslice/util/trigger_time_tracker.go`,
//! docs/behaviour.md#up-b30), shared by both controllers: the value of the
//! `endpoints.kubernetes.io/last-change-trigger-time` annotation.
//!
//! Per Service it remembers the Service's trigger time (its
//! creationTimestamp) and each pod's (its Ready condition's
//! lastTransitionTime). The first computation for a Service answers the
//! Service's creationTimestamp; later ones the earliest trigger time that
//! moved since the previous computation, or `None` (the zero time: the
//! annotation is removed). The state always advances, even when the sync
//! then writes nothing (docs/behaviour.md#up-a9).
//!
//! Owns that state; never reads the clock or a cache.

use endpointd_kube::model::{Pod, Service, Time};
use std::borrow::Borrow;
use std::collections::HashSet;
use std::hash::{BuildHasher, Hash, Hasher, RandomState};

/// The table of Services hashes with foldhash, seeded per process (a
/// collision there costs a comparison). The pod-name hashes stand for the
/// names, so they keep std's keyed SipHash: a crafted colliding name
/// cannot be prepared without the key.
type Fast = foldhash::fast::RandomState;
use std::sync::{Arc, Mutex};

/// One Service's state, its key included, in one exact-size block under
/// a 16-byte table slot: 148 bytes for a 10-pod Service, where a 56-byte
/// slot, the key's own allocation and a block of 16-byte pod entries took
/// ~250 (issue 13):
///
/// ```text
/// key length (u32 LE) | key | flags (u8) | [Service trigger: seconds i64, nanoseconds i32]
/// | pods, sorted by name hash: (hash u64, seconds u32 or i64)…
/// ```
///
/// The Service trigger is there when [`HAS_SERVICE`] is set; a pod's
/// seconds are an i64 when [`WIDE`] is set (some pod time outside
/// 1970–2106), a u32 otherwise. All little-endian.
///
/// Pods are keyed by a 64-bit hash of their name (upstream keys by the
/// name itself): lookups compare integers, not strings. Two names of one
/// Service's pods colliding (p ≈ n²/2⁶⁵: ~3·10⁻¹² for 10,000 pods, with a
/// per-process random key) could at worst make one computation miss a
/// pod's move and report an earlier or no trigger time. Pod times are
/// whole seconds: a cached pod keeps its Ready lastTransitionTime at whole
/// seconds ([`endpointd_kube::model::OptTime`]), which is what the API server
/// serves.
#[derive(Debug)]
struct Entry(Box<[u8]>);

/// [`Entry`] flag: the Service trigger is stored.
const HAS_SERVICE: u8 = 1;
/// [`Entry`] flag: pod seconds are i64, not u32.
const WIDE: u8 = 2;

fn read<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut out = [0; N];
    if let Some(s) = b.get(at..at + N) {
        out.copy_from_slice(s);
    }
    out
}

impl Entry {
    /// The state after a computation: `pods` are (name hash, seconds)
    /// sorted by hash.
    fn new(key: &str, service: Option<Time>, pods: &[(u64, i64)]) -> Entry {
        let wide = pods.iter().any(|p| u32::try_from(p.1).is_err());
        let stride = if wide { 16 } else { 12 };
        let len = 4 + key.len() + 1 + if service.is_some() { 12 } else { 0 } + stride * pods.len();
        let mut b = Vec::with_capacity(len);
        // Keys are `ns/name` (at most 317 bytes).
        b.extend_from_slice(&u32::try_from(key.len()).unwrap_or(u32::MAX).to_le_bytes());
        b.extend_from_slice(key.as_bytes());
        let flags = if service.is_some() { HAS_SERVICE } else { 0 } | if wide { WIDE } else { 0 };
        b.push(flags);
        if let Some(t) = service {
            b.extend_from_slice(&t.0.as_second().to_le_bytes());
            b.extend_from_slice(&t.0.subsec_nanosecond().to_le_bytes());
        }
        for &(h, secs) in pods {
            b.extend_from_slice(&h.to_le_bytes());
            match u32::try_from(secs) {
                Ok(narrow) if !wide => b.extend_from_slice(&narrow.to_le_bytes()),
                _ => b.extend_from_slice(&secs.to_le_bytes()),
            }
        }
        Entry(b.into_boxed_slice())
    }

    fn key_len(&self) -> usize {
        u32::from_le_bytes(read(&self.0, 0)) as usize
    }

    fn key(&self) -> &[u8] {
        self.0.get(4..4 + self.key_len()).unwrap_or_default()
    }

    fn flags(&self) -> u8 {
        self.0.get(4 + self.key_len()).copied().unwrap_or(0)
    }

    /// Where the pods start, and each one's size.
    fn pods_at(&self) -> (usize, usize) {
        let f = self.flags();
        let service = if f & HAS_SERVICE != 0 { 12 } else { 0 };
        let stride = if f & WIDE != 0 { 16 } else { 12 };
        (4 + self.key_len() + 1 + service, stride)
    }

    /// The Service trigger of the last computation.
    fn service(&self) -> Option<Time> {
        if self.flags() & HAS_SERVICE == 0 {
            return None;
        }
        let at = 4 + self.key_len() + 1;
        let secs = i64::from_le_bytes(read(&self.0, at));
        let nanos = i32::from_le_bytes(read(&self.0, at + 8));
        // Stored from a valid timestamp: always in range.
        jiff::Timestamp::new(secs, nanos).ok().map(Time)
    }

    /// The last trigger time of the pod whose name hashes to `h`.
    fn pod(&self, h: u64) -> Option<Time> {
        let (at, stride) = self.pods_at();
        let n = self.0.len().saturating_sub(at) / stride;
        let hash = |i: usize| u64::from_le_bytes(read(&self.0, at + i * stride));
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match hash(mid).cmp(&h) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let t = at + mid * stride + 8;
                    let secs = if stride == 16 {
                        i64::from_le_bytes(read(&self.0, t))
                    } else {
                        i64::from(u32::from_le_bytes(read(&self.0, t)))
                    };
                    // Whole seconds of a valid timestamp: always in range.
                    return jiff::Timestamp::from_second(secs).ok().map(Time);
                }
            }
        }
        None
    }
}

impl Borrow<[u8]> for Entry {
    fn borrow(&self) -> &[u8] {
        self.key()
    }
}

impl Hash for Entry {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Entry {}

/// Thread-safe; two workers never compute for the same Service at once
/// (the work queue guarantees it), so one lock around the table suffices.
#[derive(Debug, Default)]
pub struct TriggerTimeTracker {
    /// Per Service, keyed by its `ns/name` (see [`Entry`]).
    states: Mutex<HashSet<Entry, Fast>>,
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
        let last = states.get(key.as_bytes());
        let mut min_changed: Option<Time> = None;
        let mut pod_triggers: Vec<(u64, i64)> = Vec::with_capacity(pods.len());
        for pod in pods {
            let Some(t) = pod.ready.and_then(|r| r.last_transition_time.get()) else {
                continue;
            };
            let h = self.hasher.hash_one(pod.metadata.name.as_str());
            let was = last.and_then(|e| e.pod(h));
            if was.is_none_or(|l| t > l) {
                min_changed = min_time(min_changed, t);
            }
            pod_triggers.push((h, t.0.as_second()));
        }
        pod_triggers.sort_unstable_by_key(|e| e.0);
        let svc_trigger = svc.metadata.creation_timestamp;
        if let Some(t) = svc_trigger {
            if last.and_then(Entry::service).is_none_or(|l| t > l) {
                min_changed = min_time(min_changed, t);
            }
        }
        let known = last.is_some();
        states.replace(Entry::new(key, svc_trigger, &pod_triggers));
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
            .remove(key.as_bytes());
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
    use endpointd_kube::model::ReadyCondition;

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

    /// An entry reads back what it was built from: narrow and wide pod
    /// times, with and without a Service trigger (sub-second included),
    /// pods found by hash only.
    #[test]
    fn entry_round_trip() {
        assert_eq!(std::mem::size_of::<Entry>(), 16, "one table slot");
        let svc_t = Time(jiff::Timestamp::new(1_767_225_600, 123_456_789).expect("time"));
        let before_1970 = -86_400;
        let after_2106 = i64::from(u32::MAX) + 1;
        for (service, pods, len) in [
            (None, vec![], 4 + 8 + 1),
            (Some(svc_t), vec![], 4 + 8 + 1 + 12),
            (
                Some(svc_t),
                vec![(3, 0), (7, i64::from(u32::MAX))],
                4 + 8 + 1 + 12 + 2 * 12,
            ),
            (None, vec![(1, before_1970), (2, 5)], 4 + 8 + 1 + 2 * 16),
            (
                Some(svc_t),
                vec![(1, 5), (u64::MAX, after_2106)],
                4 + 8 + 1 + 12 + 2 * 16,
            ),
        ] {
            let e = Entry::new("ns/svc-a", service, &pods);
            assert_eq!(e.0.len(), len, "{pods:?}");
            let b: &[u8] = e.borrow();
            assert_eq!(b, b"ns/svc-a");
            assert_eq!(e.service(), service);
            for &(h, secs) in &pods {
                assert_eq!(
                    e.pod(h),
                    Some(Time(jiff::Timestamp::from_second(secs).expect("t")))
                );
            }
            for absent in [0, 4, 6, 8, u64::MAX - 1] {
                assert_eq!(e.pod(absent), None, "{absent} in {pods:?}");
            }
        }
        let bench = Entry::new(
            "bench/s-123",
            Some(t(0)),
            &(0..10).map(|i| (i, 1_767_225_600)).collect::<Vec<_>>(),
        );
        assert_eq!(bench.0.len(), 148, "a 10-pod Service of the benchmark");
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
