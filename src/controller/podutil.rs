//! Pod and Service predicates both controllers apply, ported from
//! `staging/src/k8s.io/endpointslice/util/controller_utils.go`
//! (`ShouldPodBeInEndpoints`, `ShouldSetHostname`) and the skip rules of
//! both `syncService`s (upstream-spec A7, A10, A12, B4, B11).
//!
//! Pure functions; must never read a cache or the clock.

use crate::model::{ObjectReference, Pod, Service};

/// The `targetRef` of a pod's endpoint: kind, namespace, name and uid,
/// without resourceVersion (current upstream; comparisons ignore it).
pub fn pod_reference(pod: &Pod) -> ObjectReference {
    ObjectReference {
        kind: "Pod".into(),
        namespace: pod.metadata.namespace.clone(),
        name: (*pod.metadata.name).into(),
        uid: pod.metadata.uid.clone(),
        ..ObjectReference::default()
    }
}

/// Whether the controllers manage endpoints for this Service at all: it has
/// a selector (possibly empty: `{}` selects every pod of the namespace) and
/// is not `ExternalName` (A7, B4).
pub fn service_is_managed(svc: &Service) -> bool {
    svc.selector.is_some() && &*svc.type_ != "ExternalName"
}

/// Upstream `ShouldPodBeInEndpoints` (A10, B11): terminal pods and pods
/// without any IP are out; terminating pods only with
/// `include_terminating`; `Pending` and `Unknown` phases are in.
pub fn should_pod_be_in_endpoints(pod: &Pod, include_terminating: bool) -> bool {
    if pod.phase.is_terminal() {
        return false;
    }
    if pod.pod_ips.is_empty() {
        return false;
    }
    if !include_terminating && pod.metadata.deletion_timestamp.is_some() {
        return false;
    }
    true
}

/// Upstream `ShouldSetHostname` (A12, B13): the pod's `spec.hostname`, when
/// it is set and its `spec.subdomain` names this Service in the same
/// namespace.
pub fn hostname_for<'a>(pod: &'a Pod, svc: &Service) -> Option<&'a str> {
    let same_ns = *pod.metadata.namespace == *svc.metadata.namespace;
    (!pod.hostname().is_empty() && pod.subdomain() == svc.metadata.name && same_ns)
        .then_some(pod.hostname())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Labels, PodPhase, Time};

    fn pod(phase: PodPhase, ips: &[&str], terminating: bool) -> Pod {
        let mut p = Pod {
            phase,
            pod_ips: ips.iter().map(|s| (*s).into()).collect(),
            ..Pod::default()
        };
        p.metadata.namespace = "ns".into();
        if terminating {
            p.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH)).into();
        }
        p
    }

    #[test]
    fn should_pod_be_in_endpoints_table() {
        use PodPhase::*;
        // (phase, ips, terminating, include_terminating, expected) — the
        // cases of upstream TestShouldPodBeInEndpoints.
        let cases: &[(PodPhase, &[&str], bool, bool, bool)] = &[
            (Failed, &["1.2.3.4"], false, false, false),
            (Succeeded, &["1.2.3.4"], false, false, false),
            (Failed, &["1.2.3.4"], false, true, false),
            (Running, &[], false, false, false),
            (Pending, &[], false, false, false),
            (Running, &["1.2.3.4"], false, false, true),
            (Pending, &["1.2.3.4"], false, false, true),
            (Unknown, &["1.2.3.4"], false, false, true),
            (Running, &["1.2.3.4", "::1"], false, false, true),
            (Running, &["1.2.3.4"], true, false, false),
            (Running, &["1.2.3.4"], true, true, true),
            (Succeeded, &["1.2.3.4"], true, true, false),
        ];
        for (i, (phase, ips, term, incl, want)) in cases.iter().enumerate() {
            let p = pod(*phase, ips, *term);
            assert_eq!(should_pod_be_in_endpoints(&p, *incl), *want, "case {i}");
        }
    }

    #[test]
    fn hostname_rule() {
        let mut svc = Service::default();
        svc.metadata.name = "web".into();
        svc.metadata.namespace = "ns".into();
        let mut p = pod(PodPhase::Running, &["1.2.3.4"], false);
        p.set_hostname("web-0");
        p.set_subdomain("web");
        assert_eq!(hostname_for(&p, &svc), Some("web-0"));
        p.set_subdomain("other");
        assert_eq!(hostname_for(&p, &svc), None);
        p.set_subdomain("web");
        p.metadata.namespace = "elsewhere".into();
        assert_eq!(hostname_for(&p, &svc), None);
        p.metadata.namespace = "ns".into();
        p.set_hostname("");
        assert_eq!(hostname_for(&p, &svc), None);
    }

    #[test]
    fn managed_services() {
        let mut svc = Service::default();
        assert!(!service_is_managed(&svc), "no selector");
        svc.selector = Some(Labels::new());
        assert!(service_is_managed(&svc), "an empty selector selects all");
        svc.type_ = "ExternalName".into();
        assert!(!service_is_managed(&svc));
    }
}
