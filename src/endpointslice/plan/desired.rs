//! What a Service's EndpointSlices should hold, per address type
//! (upstream `getAddressTypesForService`, `getEndpointPorts`,
//! `podToEndpoint`, `getEndpointAddresses` in
//! `staging/src/k8s.io/endpointslice/utils.go`; endpoint identity and
//! comparison from `util/endpointset.go`; docs/behaviour.md#up-b8, #up-b11, #up-b13–#up-b15).
//!
//! Pure; must never read a cache.

use crate::runtime::podutil::{hostname_for, is_v6_text, parse_ip_sloppy, pod_reference};
use compact_str::CompactString;
use endpointd_kube::model::{
    AddressType, Endpoint, EndpointConditions, EndpointSlicePort, IStr, Node, ObjectReference, Pod,
    Service, ZONE_LABEL,
};

/// docs/behaviour.md#up-b8: the address types of a Service's slices. `ipFamilies` when set;
/// else the clusterIP's family; else (headless or no clusterIP) both.
pub fn address_types_for_service(svc: &Service) -> Vec<AddressType> {
    let mut v: Vec<AddressType> = svc
        .ip_families
        .iter()
        .filter_map(|f| match &**f {
            "IPv4" => Some(AddressType::IPv4),
            "IPv6" => Some(AddressType::IPv6),
            _ => None,
        })
        .collect();
    if v.is_empty() {
        if svc.is_ip_set() {
            v.push(if is_v6_text(&svc.cluster_ip) {
                AddressType::IPv6
            } else {
                AddressType::IPv4
            });
        } else {
            v = vec![AddressType::IPv4, AddressType::IPv6];
        }
    }
    v.sort();
    v.dedup();
    v
}

/// docs/behaviour.md#up-b11: the pod's ports for this Service; named target ports resolved per
/// pod, unresolvable ports skipped. A Service without ports (headless or
/// not) gives none.
pub fn endpoint_ports(svc: &Service, pod: &Pod) -> Vec<EndpointSlicePort> {
    let mut v = Vec::new();
    endpoint_ports_into(svc, pod, &mut v);
    v
}

/// [`endpoint_ports`] into `out` (cleared first), to reuse its buffer.
pub fn endpoint_ports_into(svc: &Service, pod: &Pod, out: &mut Vec<EndpointSlicePort>) {
    out.clear();
    out.extend(svc.ports.iter().filter_map(|sp| {
        let port = pod.find_port(sp)?;
        Some(EndpointSlicePort {
            name: Some((*sp.name).into()),
            protocol: Some(sp.protocol.clone()),
            port: Some(port),
            app_protocol: sp.app_protocol.as_deref().map(Into::into),
        })
    }));
    sort_ports(out);
}

/// Our canonical port order (upstream sorts by each port's hash, an order
/// nothing depends on): by port, protocol, name, appProtocol.
pub fn sort_ports(v: &mut [EndpointSlicePort]) {
    v.sort_by(|a, b| port_sort_key(a).cmp(&port_sort_key(b)));
}

fn port_sort_key(p: &EndpointSlicePort) -> (Option<i32>, Option<&str>, Option<&str>, Option<&str>) {
    (
        p.port,
        p.protocol.as_ref().map(|x| x.as_str()),
        p.name.as_deref(),
        p.app_protocol.as_deref(),
    )
}

/// The port-map key (upstream `PortMapKey`): the ports as a set.
pub type PortMapKey = Vec<EndpointSlicePort>;

/// Upstream `NewPortMapKey`: the same set of ports in any order maps to
/// the same key.
pub fn port_map_key(ports: &[EndpointSlicePort]) -> PortMapKey {
    let mut v = ports.to_vec();
    sort_ports(&mut v);
    v
}

/// docs/behaviour.md#up-b13: the addresses of the pod's IPs of `family`, in canonical text, as
/// upstream's `getEndpointAddresses` (`ParseIPSloppy`, then the IP's
/// text; see [`parse_ip_sloppy`]): text already canonical is copied rather
/// than formatted again. Unparsable text is left out (upstream writes
/// `<nil>`, which the API server refuses).
fn addresses(pod: &Pod, family: AddressType) -> Vec<CompactString> {
    let want_v4 = family != AddressType::IPv6;
    let mut out = Vec::new();
    for text in pod.pod_ips.iter() {
        let Some((ip, canonical)) = parse_ip_sloppy(text) else {
            continue;
        };
        if ip.is_ipv4() != want_v4 {
            continue;
        }
        let ip = if canonical {
            CompactString::from(&**text)
        } else {
            compact_str::format_compact!("{ip}")
        };
        out.reserve_exact(1);
        out.push(ip);
    }
    out
}

/// Upstream `podToEndpoint` (docs/behaviour.md#up-b13); `node` is `None` when the pod's Node is
/// not in the cache (then there is no zone).
pub fn pod_to_endpoint(
    pod: &Pod,
    node: Option<&Node>,
    svc: &Service,
    family: AddressType,
) -> Endpoint {
    let serving = pod.is_ready();
    let terminating = pod.metadata.deletion_timestamp.is_some();
    let ready = svc.publish_not_ready_addresses || (serving && !terminating);
    Endpoint {
        addresses: addresses(pod, family).into(),
        conditions: EndpointConditions {
            ready: Some(ready),
            serving: Some(serving),
            terminating: Some(terminating),
        },
        hostname: hostname_for(pod, svc).map(Into::into),
        target_ref: Some(pod_reference(pod)),
        node_name: (!pod.node_name.is_empty()).then(|| pod.node_name.clone()),
        zone: node
            .and_then(|n| n.metadata.labels.get(ZONE_LABEL))
            .filter(|z| !z.is_empty())
            .map(Into::into),
        hints: None,
    }
}

/// Endpoint identity (upstream `hashEndpoint`, #up-b14): sorted addresses,
/// hostname, targetRef namespace and name. Conditions, zone, node and UID
/// changes are in-place updates of the same endpoint.
///
/// The sorted addresses are kept as the first one and the rest, so that
/// the usual one-address endpoint's key allocates nothing (its strings are
/// inline [`CompactString`]s); `(None | Some(first), rest)` orders exactly
/// as the sorted address list would.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EndpointKey {
    first_address: Option<CompactString>,
    other_addresses: Vec<CompactString>,
    hostname: IStr,
    namespace: IStr,
    name: CompactString,
}

/// The identity of `e`.
pub fn endpoint_key(e: &Endpoint) -> EndpointKey {
    let (first_address, other_addresses) = match e.addresses.as_slice() {
        [] => (None, Vec::new()),
        [one] => (Some(one.clone()), Vec::new()),
        many => {
            let mut v = many.to_vec();
            v.sort();
            let rest = v.split_off(1);
            (v.pop(), rest)
        }
    };
    let (namespace, name) = e
        .target_ref
        .as_ref()
        .map(|t| (t.namespace.clone(), t.name.clone()))
        .unwrap_or_default();
    EndpointKey {
        first_address,
        other_addresses,
        hostname: e.hostname.clone().unwrap_or_default(),
        namespace,
        name,
    }
}

/// Upstream `EndpointsEqualBeyondHash` (docs/behaviour.md#up-b15): nodeName, zone, the three
/// conditions (presence counts) and targetRef without resourceVersion.
/// Hints are not compared here.
pub fn equal_beyond_hash(a: &Endpoint, b: &Endpoint) -> bool {
    a.node_name == b.node_name
        && a.zone == b.zone
        && a.conditions == b.conditions
        && ObjectReference::opt_eq_ignoring_resource_version(
            a.target_ref.as_ref(),
            b.target_ref.as_ref(),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ips(v: &[&str], family: AddressType) -> Vec<String> {
        let pod = Pod {
            pod_ips: v.iter().map(|s| (*s).into()).collect(),
            ..Pod::default()
        };
        addresses(&pod, family)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// As upstream's `ParseIPSloppy` and `String()`: canonical text;
    /// leading zeros are decimal; IPv4-mapped IPv6 is IPv4; unparsable
    /// entries and the other family are left out.
    #[test]
    fn addresses_per_family_in_canonical_text() {
        let all = [
            "10.1.2.3",
            "010.001.002.0003",
            "2001:DB8:0::0001",
            "::ffff:10.4.5.6",
            "bogus",
            "10.1.2",
            "10.1.2.3.4",
            "10.1.2.256",
            "10.+1.2.3",
            "10..2.3",
            "10.9.8.7",
        ];
        assert_eq!(
            ips(&all, AddressType::IPv4),
            vec!["10.1.2.3", "10.1.2.3", "10.4.5.6", "10.9.8.7"]
        );
        assert_eq!(ips(&all, AddressType::IPv6), vec!["2001:db8::1"]);
        assert!(ips(&[], AddressType::IPv4).is_empty());
    }

    /// docs/behaviour.md#up-b8, as upstream `getAddressTypesForService`: `ipFamilies` when
    /// any; else the clusterIP's family; else (headless, or no clusterIP:
    /// the legacy path) both.
    #[test]
    fn address_types_for_service_rows() {
        use AddressType::{IPv4, IPv6};
        let rows: &[(&[&str], &str, &[AddressType])] = &[
            (&["IPv4"], "10.96.0.1", &[IPv4]),
            (&["IPv6"], "fd00::1", &[IPv6]),
            (&["IPv6", "IPv4"], "fd00::1", &[IPv4, IPv6]),
            (&["IPv4"], "None", &[IPv4]),
            (&["IPv6"], "None", &[IPv6]),
            (&[], "10.96.0.1", &[IPv4]),
            (&[], "fd00::1", &[IPv6]),
            (&[], "not-an-ip", &[IPv4]),
            (&[], "None", &[IPv4, IPv6]),
            (&[], "", &[IPv4, IPv6]),
            (&["SCTP?"], "None", &[IPv4, IPv6]),
        ];
        for (families, cluster_ip, want) in rows {
            let svc = Service {
                ip_families: families.iter().map(|f| (*f).into()).collect(),
                cluster_ip: (*cluster_ip).into(),
                ..Service::default()
            };
            assert_eq!(
                address_types_for_service(&svc),
                want.to_vec(),
                "ipFamilies {families:?}, clusterIP {cluster_ip:?}"
            );
        }
    }

    /// docs/behaviour.md#up-b15, as upstream `EndpointsEqualBeyondHash`: nodeName, zone, each
    /// condition (nil and false differ) and targetRef but its
    /// resourceVersion. Hints are not compared (the topology and
    /// trafficDistribution code owns them), nor what the identity (docs/behaviour.md#up-b14)
    /// already holds.
    #[test]
    fn equal_beyond_hash_rows() {
        let base = serde_json::json!({
            "addresses": ["10.0.0.1"],
            "conditions": {"ready": false, "serving": false, "terminating": false},
            "nodeName": "node-1", "zone": "z1",
            "hints": {"forZones": [{"name": "z1"}]},
            "targetRef": {"kind": "Pod", "namespace": "ns", "name": "p", "uid": "u1",
                          "resourceVersion": "5"}});
        let rows: &[(&str, &str, serde_json::Value, bool)] = &[
            ("", "", serde_json::json!(null), true),
            ("the same", "/zone", serde_json::json!("z1"), true),
            (
                "hints only",
                "/hints",
                serde_json::json!({"forZones": [{"name": "z2"}]}),
                true,
            ),
            ("hints removed", "/hints", serde_json::json!(null), true),
            (
                "node hints",
                "/hints",
                serde_json::json!({"forNodes": [{"name": "node-1"}]}),
                true,
            ),
            (
                "targetRef resourceVersion",
                "/targetRef/resourceVersion",
                serde_json::json!("6"),
                true,
            ),
            (
                "ready nil vs false",
                "/conditions/ready",
                serde_json::json!(null),
                false,
            ),
            (
                "serving nil vs false",
                "/conditions/serving",
                serde_json::json!(null),
                false,
            ),
            (
                "terminating nil vs false",
                "/conditions/terminating",
                serde_json::json!(null),
                false,
            ),
            (
                "ready true",
                "/conditions/ready",
                serde_json::json!(true),
                false,
            ),
            ("nodeName", "/nodeName", serde_json::json!("node-2"), false),
            ("nodeName nil", "/nodeName", serde_json::json!(null), false),
            ("zone", "/zone", serde_json::json!("z2"), false),
            (
                "targetRef uid (a re-created pod)",
                "/targetRef/uid",
                serde_json::json!("u2"),
                false,
            ),
            ("no targetRef", "/targetRef", serde_json::json!(null), false),
        ];
        let endpoint = |v: &serde_json::Value| -> Endpoint {
            serde_json::from_value(v.clone()).expect("an endpoint")
        };
        let a = endpoint(&base);
        for (what, at, value, want) in rows {
            let mut v = base.clone();
            if !at.is_empty() {
                *v.pointer_mut(at).expect("a field of the base") = value.clone();
            }
            let b = endpoint(&v);
            assert_eq!(equal_beyond_hash(&a, &b), *want, "{what}: {v}");
            assert_eq!(equal_beyond_hash(&b, &a), *want, "{what} (reversed)");
        }
    }
}
