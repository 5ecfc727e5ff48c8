//! The addresses and ports a Service's Endpoints should hold, before
//! repacking (upstream `syncService`'s pod loop,
//! `podToEndpointAddressForService` and `addEndpointSubset` in
//! `pkg/controller/endpoint/endpoints_controller.go`; upstream-spec
//! A10–A15): one single-address subset per (pod, port).
//!
//! Pure; must never read a cache or the clock.

use crate::controller::podutil::{hostname_for, pod_reference, should_pod_be_in_endpoints};
use crate::model::{EndpointAddress, EndpointPort, EndpointSubset, Pod, Service};
use std::net::IpAddr;
use std::sync::Arc;

fn is_v6(ip: &str) -> bool {
    matches!(ip.parse::<IpAddr>(), Ok(IpAddr::V6(_)))
}

/// A11: whether the Service's endpoints are IPv6 — `ipFamilies[0]`, else
/// the clusterIP's family, else (headless, no families) the pod's IP.
pub fn wants_v6(svc: &Service, pod: &Pod) -> bool {
    if let Some(first) = svc.ip_families.first() {
        return &**first == "IPv6";
    }
    if svc.is_ip_set() {
        return is_v6(&svc.cluster_ip);
    }
    pod.pod_ips.first().is_some_and(|ip| is_v6(ip))
}

/// A11, A12: the pod's address for this Service, if it has an IP of the
/// Service's family (the first such entry of `status.podIPs`).
pub fn pod_address(svc: &Service, pod: &Pod) -> Option<EndpointAddress> {
    let v6 = wants_v6(svc, pod);
    let ip = pod.pod_ips.iter().find(|ip| is_v6(ip) == v6)?;
    Some(EndpointAddress {
        ip: (**ip).into(),
        hostname: hostname_for(pod, svc).unwrap_or("").into(),
        node_name: Some((*pod.node_name).into()),
        target_ref: Some(pod_reference(pod)),
    })
}

/// Upstream `addEndpointSubset` (A15): ready (or published regardless of
/// readiness) addresses go to `addresses`, the rest to `notReadyAddresses`.
fn subset(addr: EndpointAddress, port: Option<EndpointPort>, ready: bool) -> EndpointSubset {
    let ports = port.into_iter().collect();
    match ready {
        true => EndpointSubset {
            addresses: vec![addr],
            not_ready_addresses: Vec::new(),
            ports,
        },
        false => EndpointSubset {
            addresses: Vec::new(),
            not_ready_addresses: vec![addr],
            ports,
        },
    }
}

/// The unpacked subsets: one per (included pod, resolvable service port),
/// or one port-less subset per pod for a headless Service without ports
/// (A13). A non-headless Service without ports yields nothing.
pub fn unpacked_subsets(svc: &Service, pods: &[Arc<Pod>]) -> Vec<EndpointSubset> {
    let publish = svc.publish_not_ready_addresses;
    let mut out = Vec::new();
    for pod in pods {
        if !should_pod_be_in_endpoints(pod, publish) {
            continue;
        }
        let Some(addr) = pod_address(svc, pod) else {
            log::debug!(
                "pod {}/{} has no IP of the family of service {}",
                pod.metadata.namespace,
                pod.metadata.name,
                svc.metadata.name
            );
            continue;
        };
        let ready = publish || pod.is_ready();
        if svc.ports.is_empty() {
            if svc.is_headless() {
                out.push(subset(addr, None, ready));
            }
            continue;
        }
        for sp in svc.ports.iter() {
            let Some(port) = pod.find_port(sp) else {
                continue;
            };
            let epp = EndpointPort {
                name: (*sp.name).into(),
                port,
                protocol: Some(sp.protocol.clone()),
                app_protocol: sp.app_protocol.as_deref().map(Into::into),
            };
            out.push(subset(addr.clone(), Some(epp), ready));
        }
    }
    out
}
