//! What a Service's EndpointSlices should hold, per address type
//! (upstream `getAddressTypesForService`, `getEndpointPorts`,
//! `podToEndpoint`, `getEndpointAddresses` in
//! `staging/src/k8s.io/endpointslice/utils.go`; endpoint identity and
//! comparison from `util/endpointset.go`; upstream-spec B8, B11, B13–B15).
//!
//! Pure; must never read a cache.

use crate::controller::podutil::{hostname_for, pod_reference};
use crate::model::{
    AddressType, Endpoint, EndpointConditions, EndpointSlicePort, Node, ObjectReference, Pod,
    Service, ZONE_LABEL,
};
use compact_str::CompactString;
use std::net::IpAddr;

/// B8: the address types of a Service's slices. `ipFamilies` when set;
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
            v.push(match svc.cluster_ip.parse::<IpAddr>() {
                Ok(IpAddr::V6(_)) => AddressType::IPv6,
                _ => AddressType::IPv4,
            });
        } else {
            v = vec![AddressType::IPv4, AddressType::IPv6];
        }
    }
    v.sort();
    v.dedup();
    v
}

/// B11: the pod's ports for this Service; named target ports resolved per
/// pod, unresolvable ports skipped. A Service without ports (headless or
/// not) gives none.
pub fn endpoint_ports(svc: &Service, pod: &Pod) -> Vec<EndpointSlicePort> {
    let mut v: Vec<EndpointSlicePort> = svc
        .ports
        .iter()
        .filter_map(|sp| {
            let port = pod.find_port(sp)?;
            Some(EndpointSlicePort {
                name: Some((*sp.name).into()),
                protocol: Some(sp.protocol.clone()),
                port: Some(port),
                app_protocol: sp.app_protocol.as_deref().map(Into::into),
            })
        })
        .collect();
    sort_ports(&mut v);
    v
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

/// B13: the addresses of the pod's IPs of `family`, in canonical text.
fn addresses(pod: &Pod, family: AddressType) -> Vec<CompactString> {
    pod.pod_ips
        .iter()
        .filter_map(|ip| ip.parse::<IpAddr>().ok())
        .filter(|ip| match family {
            AddressType::IPv6 => ip.is_ipv6(),
            _ => ip.is_ipv4(),
        })
        .map(|ip| compact_str::format_compact!("{ip}"))
        .collect()
}

/// Upstream `podToEndpoint` (B13); `node` is `None` when the pod's Node is
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
        addresses: addresses(pod, family),
        conditions: EndpointConditions {
            ready: Some(ready),
            serving: Some(serving),
            terminating: Some(terminating),
        },
        hostname: hostname_for(pod, svc).map(Into::into),
        target_ref: Some(pod_reference(pod)),
        node_name: (!pod.node_name.is_empty()).then(|| (*pod.node_name).into()),
        zone: node
            .and_then(|n| n.metadata.labels.get(ZONE_LABEL))
            .filter(|z| !z.is_empty())
            .map(Into::into),
        hints: None,
    }
}

/// Endpoint identity (upstream `hashEndpoint`, B14): sorted addresses,
/// hostname, targetRef namespace and name. Conditions, zone, node and UID
/// changes are in-place updates of the same endpoint.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EndpointKey {
    addresses: Vec<CompactString>,
    hostname: CompactString,
    namespace: CompactString,
    name: CompactString,
}

/// The identity of `e`.
pub fn endpoint_key(e: &Endpoint) -> EndpointKey {
    let mut addresses = e.addresses.clone();
    addresses.sort();
    let (namespace, name) = e
        .target_ref
        .as_ref()
        .map(|t| (t.namespace.clone(), t.name.clone()))
        .unwrap_or_default();
    EndpointKey {
        addresses,
        hostname: e.hostname.clone().unwrap_or_default(),
        namespace,
        name,
    }
}

/// Upstream `EndpointsEqualBeyondHash` (B15): nodeName, zone, the three
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
