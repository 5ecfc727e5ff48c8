//! The addresses and ports a Service's Endpoints should hold, before
//! repacking (upstream `syncService`'s pod loop,
//! `podToEndpointAddressForService` and `addEndpointSubset` in
//! `pkg/controller/endpoint/endpoints_controller.go`;
//! docs/behaviour.md#up-a10 to #up-a15): one single-address subset per (pod, port).
//!
//! Pure; must never read a cache or the clock.

use crate::runtime::podutil::{
    hostname_for, is_v6_text, parse_ip_sloppy, pod_reference, should_pod_be_in_endpoints,
};
use compact_str::CompactString;
use endpointd_kube::model::{EndpointAddress, EndpointPort, EndpointSubset, Pod, Service};
use std::sync::Arc;

/// docs/behaviour.md#up-a11: whether the Service's endpoints are IPv6 — `ipFamilies[0]`, else
/// the clusterIP's family, else (headless, no families) the pod's IP.
pub fn wants_v6(svc: &Service, pod: &Pod) -> bool {
    if let Some(first) = svc.ip_families.first() {
        return &**first == "IPv6";
    }
    if svc.is_ip_set() {
        return is_v6_text(&svc.cluster_ip);
    }
    pod.pod_ips.first().is_some_and(|ip| is_v6_text(ip))
}

/// docs/behaviour.md#up-a11, #up-a12: the pod's address for this Service, if it has an IP of the
/// Service's family (the first such entry of `status.podIPs`), in
/// canonical text (upstream since 1.33, KEP-4858: `ParseIPSloppy`, then
/// the IP's text — `010.1.2.3` is written `10.1.2.3`, `::ffff:10.1.2.3`
/// is IPv4 `10.1.2.3`, `2001:DB8::1` is `2001:db8::1`). Text that is not
/// an IP is skipped (upstream can pick it and write text the API server
/// refuses, so that Service's Endpoints are never written again).
pub fn pod_address(svc: &Service, pod: &Pod) -> Option<EndpointAddress> {
    let v6 = wants_v6(svc, pod);
    let ip = pod.pod_ips.iter().find_map(|text| {
        let (ip, canonical) = parse_ip_sloppy(text)?;
        (ip.is_ipv6() == v6).then(|| match canonical {
            true => CompactString::from(&**text),
            false => compact_str::format_compact!("{ip}"),
        })
    })?;
    Some(EndpointAddress {
        ip,
        hostname: hostname_for(pod, svc).unwrap_or("").into(),
        node_name: Some(pod.node_name.clone()),
        target_ref: Some(pod_reference(pod)),
    })
}

/// The unpacked form without its one-address subsets: each included pod's
/// address once, with whether it is ready (docs/behaviour.md#up-a15: ready or published
/// regardless of readiness), and the (address index, port) pairs, one per
/// (pod, resolvable service port) — or one port-less pair per pod for a
/// headless Service without ports (docs/behaviour.md#up-a13). A non-headless Service without
/// ports yields no pairs.
#[derive(Debug, Default)]
pub struct Unpacked {
    /// (address, ready) per included pod.
    pub addresses: Vec<(EndpointAddress, bool)>,
    /// (index into `addresses`, port) in the order of the unpacked subsets.
    pub pairs: Vec<(usize, Option<EndpointPort>)>,
}

impl Unpacked {
    /// The (address, port, ready) triples, as [`super::repack::repack`]
    /// reads them.
    pub fn triples(&self) -> impl Iterator<Item = super::repack::Triple<'_>> {
        self.pairs.iter().filter_map(|(i, p)| {
            let (a, ready) = self.addresses.get(*i)?;
            Some((a, p.as_ref(), *ready))
        })
    }
}

/// See [`Unpacked`].
pub fn unpack(svc: &Service, pods: &[Arc<Pod>]) -> Unpacked {
    let publish = svc.publish_not_ready_addresses;
    let mut out = Unpacked {
        addresses: Vec::with_capacity(pods.len()),
        pairs: Vec::with_capacity(pods.len() * svc.ports.len().max(1)),
    };
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
        let i = out.addresses.len();
        let before = out.pairs.len();
        if svc.ports.is_empty() {
            if svc.is_headless() {
                out.pairs.push((i, None));
            }
        } else {
            for sp in svc.ports.iter() {
                let Some(port) = pod.find_port(sp) else {
                    continue;
                };
                out.pairs.push((
                    i,
                    Some(EndpointPort {
                        name: (*sp.name).into(),
                        port,
                        protocol: Some(sp.protocol.clone()),
                        app_protocol: sp.app_protocol.as_deref().map(Into::into),
                    }),
                ));
            }
        }
        if out.pairs.len() > before {
            out.addresses.push((addr, ready));
        }
    }
    out
}

/// The unpacked subsets: one per (included pod, resolvable service port),
/// or one port-less subset per pod for a headless Service without ports
/// (docs/behaviour.md#up-a13). A non-headless Service without ports yields nothing. Upstream
/// `addEndpointSubset` (docs/behaviour.md#up-a15): ready (or published regardless of readiness)
/// addresses go to `addresses`, the rest to `notReadyAddresses`.
pub fn unpacked_subsets(svc: &Service, pods: &[Arc<Pod>]) -> Vec<EndpointSubset> {
    let u = unpack(svc, pods);
    u.triples()
        .map(|(addr, port, ready)| {
            let (ready, not_ready) = match ready {
                true => (vec![addr.clone()], Vec::new()),
                false => (Vec::new(), vec![addr.clone()]),
            };
            EndpointSubset {
                addresses: ready,
                not_ready_addresses: not_ready,
                ports: port.cloned().into_iter().collect(),
            }
        })
        .collect()
}
