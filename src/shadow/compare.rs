//! Shadow mode's comparisons (pure): what endpointd would write against
//! what exists (written by kube-controller-manager), by meaning rather than
//! by bytes.
//!
//! - Endpoints: subsets as sets — every (address, ready, port) triple,
//!   whatever the subset and list order; targetRef resourceVersion ignored;
//!   over capacity, the stored addresses must be 1000 of the desired ones.
//! - EndpointSlices, per address type: the set of endpoints (addresses,
//!   conditions, hostname, nodeName, zone, hints) and the ports each one is
//!   served with; how endpoints are partitioned into slices may differ, but
//!   the number of slices must be within upstream's packing bounds.
//!
//! Must never read a cache, a clock, or write anything.

use crate::endpointslice::desired::{endpoint_key, port_map_key, EndpointKey, PortMapKey};
use crate::model::{
    AddressType, Endpoint, EndpointAddress, EndpointPort, EndpointSlice, EndpointSubset,
};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Most addresses an Endpoints object holds (upstream `maxCapacity`).
pub const MAX_ENDPOINTS_ADDRESSES: usize = 1000;

/// One difference between what endpointd would write and what exists.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Difference {
    /// `endpoints_missing`, `endpoints_addresses`, `endpoints_ports`,
    /// `slices_missing`, `slice_endpoints`, `slice_conditions`,
    /// `slice_hints`, `slice_ports`, `slice_count`.
    pub kind: String,
    /// A compact description (what is missing, extra or different).
    pub detail: String,
}

fn diff(kind: &str, detail: String) -> Difference {
    Difference {
        kind: kind.to_string(),
        detail,
    }
}

/// An address as compared: IP, hostname, node, target (kind, namespace,
/// name, uid) — not the target's resourceVersion.
type AddrKey = (String, String, String, String);
type PortKey = (String, i32, String, String);

fn addr_key(a: &EndpointAddress) -> AddrKey {
    let target = a
        .target_ref
        .as_ref()
        .map(|t| format!("{}/{}/{}", t.kind, t.namespace, t.name))
        .unwrap_or_default();
    (
        a.ip.clone(),
        a.hostname.clone(),
        a.node_name.clone().unwrap_or_default(),
        target,
    )
}

fn port_key(p: &EndpointPort) -> PortKey {
    (
        p.name.clone(),
        p.port,
        p.protocol
            .as_ref()
            .map(|x| x.as_str().to_string())
            .unwrap_or_else(|| "TCP".into()),
        p.app_protocol.clone().unwrap_or_default(),
    )
}

/// (address, ready, port) triples; a port-less subset (headless without
/// ports) gives a `None` port.
fn triples(subsets: &[EndpointSubset]) -> BTreeSet<(AddrKey, bool, Option<PortKey>)> {
    let mut out = BTreeSet::new();
    for s in subsets {
        let ports: Vec<Option<PortKey>> = match s.ports.is_empty() {
            true => vec![None],
            false => s.ports.iter().map(|p| Some(port_key(p))).collect(),
        };
        for (list, ready) in [(&s.addresses, true), (&s.not_ready_addresses, false)] {
            for a in list {
                for p in &ports {
                    out.insert((addr_key(a), ready, p.clone()));
                }
            }
        }
    }
    out
}

fn show_addr(a: &(AddrKey, bool)) -> String {
    let ((ip, _, _, target), ready) = a;
    let who = target.rsplit('/').next().unwrap_or("");
    format!(
        "{ip}{}{}",
        if who.is_empty() {
            String::new()
        } else {
            format!(" ({who})")
        },
        if *ready { "" } else { " not ready" }
    )
}

fn list<T>(v: impl IntoIterator<Item = T>, show: impl Fn(&T) -> String) -> String {
    let items: Vec<String> = v.into_iter().map(|x| show(&x)).collect();
    match items.len() {
        0..=5 => items.join(", "),
        n => format!("{} and {} more", items[..5].join(", "), n - 5),
    }
}

/// Compare the Endpoints endpointd computes (`desired`, before truncation,
/// and whether it is over capacity) with the stored one.
pub fn compare_endpoints(
    desired: &[EndpointSubset],
    over_capacity: bool,
    current: Option<&[EndpointSubset]>,
) -> Vec<Difference> {
    let Some(current) = current else {
        return vec![diff(
            "endpoints_missing",
            "no Endpoints object; endpointd would create it".into(),
        )];
    };
    let want = triples(desired);
    let have = triples(current);
    let addrs = |t: &BTreeSet<(AddrKey, bool, Option<PortKey>)>| -> BTreeSet<(AddrKey, bool)> {
        t.iter().map(|(a, r, _)| (a.clone(), *r)).collect()
    };
    let ports = |t: &BTreeSet<(AddrKey, bool, Option<PortKey>)>| -> BTreeSet<Option<PortKey>> {
        t.iter().map(|(_, _, p)| p.clone()).collect()
    };
    let mut out = Vec::new();
    let (wa, ha) = (addrs(&want), addrs(&have));
    if over_capacity {
        // Upstream keeps 1000 of the addresses, chosen per subset: any 1000
        // of ours are right.
        let extra: Vec<_> = ha.difference(&wa).cloned().collect();
        if ha.len() != MAX_ENDPOINTS_ADDRESSES.min(wa.len()) || !extra.is_empty() {
            out.push(diff(
                "endpoints_addresses",
                format!(
                    "over capacity: {} stored addresses (want {}), not ours: {}",
                    ha.len(),
                    MAX_ENDPOINTS_ADDRESSES,
                    list(extra, show_addr)
                ),
            ));
        }
        return out;
    }
    let missing: Vec<_> = wa.difference(&ha).cloned().collect();
    let extra: Vec<_> = ha.difference(&wa).cloned().collect();
    if !missing.is_empty() || !extra.is_empty() {
        let mut d = Vec::new();
        if !missing.is_empty() {
            d.push(format!("missing {}", list(missing, show_addr)));
        }
        if !extra.is_empty() {
            d.push(format!("unexpected {}", list(extra, show_addr)));
        }
        out.push(diff("endpoints_addresses", d.join("; ")));
    }
    let (wp, hp) = (ports(&want), ports(&have));
    if wp != hp {
        let show = |p: &Option<PortKey>| match p {
            Some((n, port, proto, _)) => format!("{n}:{port}/{proto}"),
            None => "(no port)".into(),
        };
        out.push(diff(
            "endpoints_ports",
            format!(
                "ports {} stored, want {}",
                list(hp.iter().cloned(), show),
                list(wp.iter().cloned(), show)
            ),
        ));
    } else if out.is_empty() && want != have {
        out.push(diff(
            "endpoints_addresses",
            "the same addresses and ports, but paired differently (a named port resolves differently)"
                .into(),
        ));
    }
    out
}

/// Endpoints of slices, by identity, with the ports they are served with.
fn endpoints_of<'a>(
    slices: impl IntoIterator<Item = &'a EndpointSlice>,
) -> BTreeMap<EndpointKey, (Endpoint, PortMapKey)> {
    let mut out = BTreeMap::new();
    for s in slices {
        let ports = port_map_key(&s.ports);
        for e in &s.endpoints {
            out.insert(endpoint_key(e), (e.clone(), ports.clone()));
        }
    }
    out
}

fn show_key(_k: &EndpointKey, e: &Endpoint) -> String {
    let who = e
        .target_ref
        .as_ref()
        .map(|t| format!(" ({})", t.name))
        .unwrap_or_default();
    format!("{}{who}", e.addresses.join(","))
}

fn hint_zones(e: &Endpoint) -> Vec<String> {
    e.hints
        .as_ref()
        .map(|h| h.for_zones.iter().map(|z| z.name.clone()).collect())
        .unwrap_or_default()
}

/// Compare, for one address type, the slices endpointd would create from
/// scratch (`desired`) with the stored ones (`existing`, managed by the
/// EndpointSlice controller and not being deleted). `max` is
/// `max_endpoints_per_slice`.
pub fn compare_slices(
    t: AddressType,
    desired: &[EndpointSlice],
    existing: &[&EndpointSlice],
    max: usize,
) -> Vec<Difference> {
    let mut out = Vec::new();
    if existing.is_empty() && !desired.is_empty() {
        return vec![diff(
            "slices_missing",
            format!(
                "{t:?}: no EndpointSlice; endpointd would create {}",
                desired.len()
            ),
        )];
    }
    let want = endpoints_of(desired.iter());
    let have = endpoints_of(existing.iter().copied());
    let missing: Vec<_> = want
        .iter()
        .filter(|(k, _)| !have.contains_key(*k))
        .collect();
    let extra: Vec<_> = have
        .iter()
        .filter(|(k, _)| !want.contains_key(*k))
        .collect();
    if !missing.is_empty() || !extra.is_empty() {
        let mut d = Vec::new();
        if !missing.is_empty() {
            d.push(format!(
                "missing {}",
                list(missing, |(k, (e, _))| show_key(k, e))
            ));
        }
        if !extra.is_empty() {
            d.push(format!(
                "unexpected {}",
                list(extra, |(k, (e, _))| show_key(k, e))
            ));
        }
        out.push(diff("slice_endpoints", format!("{t:?}: {}", d.join("; "))));
    }
    let mut conditions = Vec::new();
    let mut hints = Vec::new();
    let mut fields = Vec::new();
    let mut ports = Vec::new();
    for (k, (w, wp)) in &want {
        let Some((h, hp)) = have.get(k) else { continue };
        if w.conditions != h.conditions {
            let c = |e: &Endpoint| {
                let b = |v: Option<bool>| v.map_or("-".into(), |x: bool| x.to_string());
                format!(
                    "ready={} serving={} terminating={}",
                    b(e.conditions.ready),
                    b(e.conditions.serving),
                    b(e.conditions.terminating)
                )
            };
            conditions.push(format!(
                "{}: {} stored, want {}",
                show_key(k, w),
                c(h),
                c(w)
            ));
        }
        if hint_zones(w) != hint_zones(h) || w.hints.is_some() != h.hints.is_some() {
            hints.push(format!(
                "{}: zones [{}] stored, want [{}]",
                show_key(k, w),
                hint_zones(h).join(","),
                hint_zones(w).join(",")
            ));
        }
        if w.hostname != h.hostname || w.node_name != h.node_name || w.zone != h.zone {
            fields.push(format!(
                "{}: hostname/node/zone {:?}/{:?}/{:?} stored, want {:?}/{:?}/{:?}",
                show_key(k, w),
                h.hostname,
                h.node_name,
                h.zone,
                w.hostname,
                w.node_name,
                w.zone
            ));
        }
        if wp != hp {
            let show = |p: &PortMapKey| {
                p.iter()
                    .map(|x| {
                        format!(
                            "{}:{}",
                            x.name.as_deref().unwrap_or(""),
                            x.port.map_or("-".into(), |n| n.to_string())
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            };
            ports.push(format!(
                "{}: [{}] stored, want [{}]",
                show_key(k, w),
                show(hp),
                show(wp)
            ));
        }
    }
    for (kind, v) in [
        ("slice_conditions", conditions),
        ("slice_hints", hints),
        ("slice_endpoints", fields),
        ("slice_ports", ports),
    ] {
        if !v.is_empty() {
            out.push(diff(kind, format!("{t:?}: {}", list(v, String::clone))));
        }
    }
    // Packing bounds: at least the fewest slices the endpoints fit in (one
    // per port map at least), at most one per endpoint (a placeholder when
    // there is none).
    let mut per_ports: BTreeMap<PortMapKey, usize> = BTreeMap::new();
    for (_, p) in want.values() {
        *per_ports.entry(p.clone()).or_default() += 1;
    }
    let max = max.max(1);
    let min: usize = per_ports
        .values()
        .map(|n| n.div_ceil(max))
        .sum::<usize>()
        .max(1);
    let most = want.len().max(1).max(min);
    if existing.len() < min || existing.len() > most {
        out.push(diff(
            "slice_count",
            format!(
                "{t:?}: {} slices stored, upstream packs these {} endpoints into {min}..={most}",
                existing.len(),
                want.len()
            ),
        ));
    }
    out
}

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;
