//! Which Services a pod update concerns (upstream
//! `GetServicesToUpdateOnPodChange` and `podEndpointsChanged` in
//! `staging/src/k8s.io/endpointslice/util/controller_utils.go`;
//! docs/behaviour.md#up-c3).
//!
//! Pure functions of the old and new pod (and a membership lookup); must
//! never read a cache themselves.

use endpointd_kube::model::{Object, Pod};
use std::collections::BTreeSet;

/// What changed between two versions of a pod, as far as endpoints care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodChange {
    /// Something an endpoint is built from changed: deletionTimestamp,
    /// readiness, the pod IPs, or (beyond upstream) whether the pod is
    /// terminal.
    pub pod_changed: bool,
    /// Labels, `spec.hostname` or `spec.subdomain` changed (membership or
    /// hostnames may differ).
    pub labels_changed: bool,
}

/// Upstream `podEndpointsChanged`. Upstream compares the deletionTimestamp
/// pointers (every update of a terminating pod counts); we compare values,
/// which is what the pointer test approximates. Beyond upstream, a pod that
/// turns `Succeeded`/`Failed` counts as changed: a terminal pod leaves the
/// endpoints (docs/behaviour.md#up-a10), and upstream would keep a not-ready-but-published pod
/// that finished until something else triggered a sync.
pub fn pod_endpoints_changed(old: &Pod, new: &Pod) -> PodChange {
    let labels_changed = old.metadata.labels != new.metadata.labels || old.host != new.host;
    let pod_changed = old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
        || old.is_ready() != new.is_ready()
        || old.pod_ips != new.pod_ips
        || old.phase.is_terminal() != new.phase.is_terminal();
    PodChange {
        pod_changed,
        labels_changed,
    }
}

/// Upstream `GetServicesToUpdateOnPodChange`: nothing for a resync (same
/// resourceVersion) or an irrelevant change; the new pod's services when
/// only the pod changed; with a label change, the union of old and new
/// services if the pod also changed, else their symmetric difference.
pub fn services_to_update_on_pod_change(
    old: &Pod,
    new: &Pod,
    services_for: impl Fn(&Pod) -> BTreeSet<String>,
) -> BTreeSet<String> {
    if old.resource_version() == new.resource_version() {
        return BTreeSet::new();
    }
    let change = pod_endpoints_changed(old, new);
    if !change.pod_changed && !change.labels_changed {
        return BTreeSet::new();
    }
    let new_services = services_for(new);
    if !change.labels_changed {
        return new_services;
    }
    let old_services = services_for(old);
    if change.pod_changed {
        new_services.union(&old_services).cloned().collect()
    } else {
        new_services
            .symmetric_difference(&old_services)
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use endpointd_kube::model::{Labels, PodPhase, ReadyCondition, Time};

    fn base() -> Pod {
        let mut p = Pod {
            phase: PodPhase::Running,
            pod_ips: vec!["1.2.3.4".into()].into(),
            ready: Some(ReadyCondition {
                is_true: true,
                last_transition_time: None.into(),
            }),
            ..Pod::default()
        };
        p.metadata.name = "p".into();
        p.metadata.namespace = "ns".into();
        p.metadata.resource_version = "1".into();
        p.metadata.labels = [("app", "a")].into_iter().collect();
        p
    }

    fn bumped(f: impl FnOnce(&mut Pod)) -> Pod {
        let mut p = base();
        p.metadata.resource_version = "2".into();
        f(&mut p);
        p
    }

    #[test]
    fn pod_endpoints_changed_table() {
        let t = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        // (what, new pod, pod_changed, labels_changed) — upstream
        // TestPodChanged / TestPodEndpointsChanged cases.
        let cases: Vec<(&str, Pod, bool, bool)> = vec![
            ("no change", bumped(|_| {}), false, false),
            (
                "nodeName ignored",
                bumped(|p| p.node_name = "n".into()),
                false,
                false,
            ),
            (
                "deletionTimestamp set",
                bumped(|p| p.metadata.deletion_timestamp = t.into()),
                true,
                false,
            ),
            ("not ready", bumped(|p| p.ready = None), true, false),
            (
                "ready false",
                bumped(|p| p.ready.as_mut().expect("ready").is_true = false),
                true,
                false,
            ),
            (
                "ip changed",
                bumped(|p| p.pod_ips = vec!["1.2.3.5".into()].into()),
                true,
                false,
            ),
            (
                "ip added",
                bumped(|p| p.pod_ips = vec!["1.2.3.4".into(), "::1".into()].into()),
                true,
                false,
            ),
            (
                "ips removed",
                bumped(|p| p.pod_ips = Default::default()),
                true,
                false,
            ),
            (
                "labels",
                bumped(|p| p.metadata.labels = Labels::new()),
                false,
                true,
            ),
            ("hostname", bumped(|p| p.set_hostname("h")), false, true),
            ("subdomain", bumped(|p| p.set_subdomain("s")), false, true),
            (
                "labels and ready",
                bumped(|p| {
                    p.metadata.labels = Labels::new();
                    p.ready = None;
                }),
                true,
                true,
            ),
            (
                "terminal (beyond upstream)",
                bumped(|p| p.phase = PodPhase::Succeeded),
                true,
                false,
            ),
            (
                "pending to running",
                bumped(|p| p.phase = PodPhase::Pending),
                false,
                false,
            ),
        ];
        let old = base();
        for (what, new, pod_changed, labels_changed) in cases {
            let c = pod_endpoints_changed(&old, &new);
            assert_eq!(c.pod_changed, pod_changed, "{what}: pod_changed");
            assert_eq!(c.labels_changed, labels_changed, "{what}: labels_changed");
        }
    }

    fn set(keys: &[&str]) -> BTreeSet<String> {
        keys.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn services_to_update_table() {
        // Membership by label `app`: a → {s1, s2}, b → {s2, s3}.
        let services_for = |p: &Pod| match p.metadata.labels.get("app") {
            Some("a") => set(&["ns/s1", "ns/s2"]),
            Some("b") => set(&["ns/s2", "ns/s3"]),
            _ => BTreeSet::new(),
        };
        let relabel = |p: &mut Pod| p.metadata.labels = [("app", "b")].into_iter().collect();
        let cases: Vec<(&str, Pod, Pod, BTreeSet<String>)> = vec![
            (
                "resync: same RV",
                base(),
                {
                    let mut p = base();
                    p.ready = None;
                    p
                },
                set(&[]),
            ),
            (
                "irrelevant update",
                base(),
                bumped(|p| p.node_name = "x".into()),
                set(&[]),
            ),
            (
                "pod changed only",
                base(),
                bumped(|p| p.ready = None),
                set(&["ns/s1", "ns/s2"]),
            ),
            (
                "labels only: symmetric difference",
                base(),
                bumped(relabel),
                set(&["ns/s1", "ns/s3"]),
            ),
            (
                "labels and pod: union",
                base(),
                bumped(|p| {
                    relabel(p);
                    p.ready = None;
                }),
                set(&["ns/s1", "ns/s2", "ns/s3"]),
            ),
            (
                "hostname only: same services → none",
                base(),
                bumped(|p| p.set_hostname("h")),
                set(&[]),
            ),
        ];
        for (what, old, new, want) in cases {
            assert_eq!(
                services_to_update_on_pod_change(&old, &new, services_for),
                want,
                "{what}"
            );
        }
    }
}
