//! Pod and Service predicates both controllers apply, ported from
//! `staging/src/k8s.io/endpointslice/util/controller_utils.go`
//! (`ShouldPodBeInEndpoints`, `ShouldSetHostname`) and the skip rules of
//! both `syncService`s (docs/behaviour.md#up-a7, #up-a10, #up-a12, #up-b4, #up-b11).
//!
//! Pure functions; must never read a cache or the clock.

use endpointd_kube::model::{ObjectReference, Pod, Service};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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

/// An IP address as upstream reads pod and Service IPs (`ParseIPSloppy`):
/// IPv4 parts with leading zeros count as decimal (`010.1.2.3` is
/// `10.1.2.3`) and an IPv4-mapped IPv6 address is IPv4. With it, whether
/// `text` is already that address's canonical text (strict IPv4: the
/// strict parser rejects leading zeros).
pub fn parse_ip_sloppy(text: &str) -> Option<(IpAddr, bool)> {
    let v6 = |v6: Ipv6Addr| match v6.to_ipv4_mapped() {
        Some(v4) => (IpAddr::V4(v4), false),
        None => (IpAddr::V6(v6), false),
    };
    match text.parse::<IpAddr>() {
        Ok(ip @ IpAddr::V4(_)) => Some((ip, true)),
        Ok(IpAddr::V6(a)) => Some(v6(a)),
        Err(_) => match text.rsplit_once(':') {
            // IPv6 ending in IPv4 with leading zeros (`::ffff:010.1.2.3`).
            Some((head, tail)) => format!("{head}:{}", sloppy_v4(tail)?)
                .parse::<Ipv6Addr>()
                .ok()
                .map(v6),
            None => sloppy_v4(text).map(|v4| (IpAddr::V4(v4), false)),
        },
    }
}

/// Upstream `IsIPv6String`: the text parses (sloppily) as IPv6 that is not
/// IPv4-mapped.
pub fn is_v6_text(text: &str) -> bool {
    parse_ip_sloppy(text).is_some_and(|(ip, _)| ip.is_ipv6())
}

/// Dotted-quad IPv4 whose parts may have leading zeros, read as decimal
/// (what `ParseIPSloppy` accepts beyond the strict parser).
fn sloppy_v4(text: &str) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut parts = text.split('.');
    for o in &mut octets {
        let p = parts.next().filter(|p| !p.is_empty())?;
        if !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = p.parse().ok()?;
    }
    parts.next().is_none().then_some(octets.into())
}

/// Whether the controllers manage endpoints for this Service at all: it has
/// a selector (never empty: the model reads `{}` as none) and is not
/// `ExternalName` (docs/behaviour.md#up-a7, #up-b4).
pub fn service_is_managed(svc: &Service) -> bool {
    svc.selector.is_some() && &*svc.type_ != "ExternalName"
}

/// Upstream `ShouldPodBeInEndpoints` (docs/behaviour.md#up-a10, #up-b11): terminal pods and pods
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

/// Upstream `ShouldSetHostname` (docs/behaviour.md#up-a12, #up-b13): the pod's `spec.hostname`,
/// when
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
    use endpointd_kube::model::{PodPhase, Time};

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
        svc.selector = Some([("app", "web")].into_iter().collect());
        assert!(service_is_managed(&svc), "a selector");
        svc.type_ = "ExternalName".into();
        assert!(!service_is_managed(&svc));
    }

    /// Upstream `ParseIPSloppy` / `IsIPv6String` rows.
    #[test]
    fn ips_read_as_upstream_reads_them() {
        // (text, (address, text already canonical), IPv6)
        type Row = (&'static str, Option<(&'static str, bool)>, bool);
        let rows: [Row; 13] = [
            ("10.1.2.3", Some(("10.1.2.3", true)), false),
            ("010.001.002.0003", Some(("10.1.2.3", false)), false),
            ("::ffff:10.4.5.6", Some(("10.4.5.6", false)), false),
            ("::ffff:010.4.5.06", Some(("10.4.5.6", false)), false),
            ("::010.4.5.6", Some(("::a04:506", false)), true),
            (
                "::ffff:1:010.4.5.6",
                Some(("::ffff:1:a04:506", false)),
                true,
            ),
            ("::ffff:010.4.5", None, false),
            ("2001:DB8::1", Some(("2001:db8::1", false)), true),
            ("10.1.2", None, false),
            ("10.1.2.3.4", None, false),
            ("10.1.2.256", None, false),
            ("10.+1.2.3", None, false),
            ("", None, false),
        ];
        for (text, want, v6) in rows {
            let got = parse_ip_sloppy(text).map(|(ip, c)| (ip.to_string(), c));
            assert_eq!(got, want.map(|(ip, c)| (ip.to_string(), c)), "{text}");
            assert_eq!(is_v6_text(text), v6, "{text}");
        }
    }
}
