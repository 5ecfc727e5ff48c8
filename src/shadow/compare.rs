//! Shadow mode's comparisons (pure): what endpointd would write against
//! what exists (written by kube-controller-manager), by meaning rather than
//! by bytes.
//!
//! - Endpoints: subsets as sets — every (address, ready, port) triple,
//!   whatever the subset and list order; targetRef resourceVersion ignored
//!   (its uid is not); over capacity, the stored addresses must be 1000 of
//!   the desired ones, ready ones first, and the over-capacity annotation
//!   must say so.
//! - EndpointSlices, per address type: the set of endpoints (addresses,
//!   conditions, hostname, nodeName, zone, hints for zones and nodes,
//!   targetRef uid) and the ports each one is
//!   served with; how endpoints are partitioned into slices may differ, but
//!   the number of slices must be within upstream's packing bounds.
//! - Labels, as the reconcilers decide a rewrite: an Endpoints' labels but
//!   the headless one against the Service's, a slice's labels but the
//!   reserved ones (service name, managed-by, headless) against the
//!   Service's. The Endpoints' `endpoints.kubernetes.io/managed-by` label
//!   may be absent (a kube-controller-manager older than 1.33 does not
//!   write it; the takeover adds it to every Endpoints once, documented)
//!   but not name another manager.
//!
//! Must never read a cache, a clock, or write anything.

use crate::endpointslice::managed_by_us;
use crate::endpointslice::plan::desired::{endpoint_key, port_map_key, EndpointKey, PortMapKey};
use crate::endpointslice::plan::SlicePlan;
use crate::runtime::labels::{
    ENDPOINTS_MANAGED_BY, ENDPOINTS_MANAGED_BY_LABEL, HEADLESS_LABEL, OVER_CAPACITY_ANNOTATION,
    SLICE_RESERVED_LABELS,
};
use endpointd_kube::model::{
    AddressType, Endpoint, EndpointAddress, EndpointPort, EndpointSlice, EndpointSubset, Endpoints,
    Labels,
};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Most addresses an Endpoints object holds (upstream `maxCapacity`).
pub const MAX_ENDPOINTS_ADDRESSES: usize = 1000;

/// One difference between what endpointd would write and what exists.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Difference {
    /// `endpoints_missing`, `endpoints_addresses`, `endpoints_ports`,
    /// `endpoints_annotation`, `endpoints_labels`, `slices_missing`,
    /// `slices_extra`, `slice_endpoints`, `slice_conditions`, `slice_hints`,
    /// `slice_ports`, `slice_count`, `slice_labels`.
    pub kind: String,
    /// The address type of a slice difference (`IPv4`, `IPv6`); empty for
    /// the Endpoints. A difference is the same one while its kind and
    /// scope are, whatever its detail says now.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub scope: String,
    /// A compact description (what is missing, extra or different).
    pub detail: String,
}

impl Difference {
    /// Whether `self` and `other` are the same difference (perhaps
    /// described differently now).
    pub fn same_as(&self, other: &Difference) -> bool {
        self.kind == other.kind && self.scope == other.scope
    }
}

fn diff(kind: &str, detail: String) -> Difference {
    Difference {
        kind: kind.to_string(),
        scope: String::new(),
        detail,
    }
}

/// Compare a Service's stored slices (`existing`: those the EndpointSlice
/// controller manages and that are not being deleted count) with `fresh`,
/// endpointd's plan from scratch (no existing slices): per address type the
/// plan has, [`compare_slices`]; for one it no longer has, [`extra_slices`].
pub fn compare_service_slices(
    fresh: &SlicePlan,
    existing: &[Arc<EndpointSlice>],
    max: usize,
) -> Vec<Difference> {
    let stored = |t: AddressType| -> Vec<&EndpointSlice> {
        existing
            .iter()
            .filter(|s| {
                managed_by_us(s) && s.metadata.deletion_timestamp.is_none() && s.address_type == t
            })
            .map(|s| &**s)
            .collect()
    };
    let mut diffs = Vec::new();
    for (t, w) in &fresh.by_type {
        diffs.extend(compare_slices(*t, &w.creates, &stored(*t), max));
    }
    for t in [AddressType::IPv4, AddressType::IPv6] {
        if !fresh.by_type.iter().any(|(p, _)| *p == t) {
            diffs.extend(extra_slices(t, &stored(t)));
        }
    }
    diffs
}

/// Slices of an address type the Service no longer has (upstream deletes
/// them).
pub fn extra_slices(t: AddressType, existing: &[&EndpointSlice]) -> Vec<Difference> {
    if existing.is_empty() {
        return Vec::new();
    }
    let names: Vec<&str> = existing.iter().map(|s| &*s.metadata.name).collect();
    vec![Difference {
        scope: format!("{t:?}"),
        ..diff(
            "slices_extra",
            format!(
                "{t:?}: {} slice(s) of an address type the Service no longer has: {}",
                names.len(),
                list(names, |n| n.to_string())
            ),
        )
    }]
}

/// An address as compared: IP, hostname, node, target (kind/namespace/name)
/// and the target's uid — not its resourceVersion.
type AddrKey = (String, String, String, String, String);
type PortKey = (String, i32, String, String);

fn addr_key(a: &EndpointAddress) -> AddrKey {
    let (target, uid) = a
        .target_ref
        .as_ref()
        .map(|t| {
            (
                format!("{}/{}/{}", t.kind, t.namespace, t.name),
                t.uid.clone(),
            )
        })
        .unwrap_or_default();
    (
        a.ip.to_string(),
        a.hostname.to_string(),
        a.node_name.as_deref().unwrap_or_default().to_string(),
        target,
        uid.to_string(),
    )
}

fn port_key(p: &EndpointPort) -> PortKey {
    (
        p.name.to_string(),
        p.port,
        p.protocol
            .as_ref()
            .map(|x| x.as_str().to_string())
            .unwrap_or_else(|| "TCP".into()),
        p.app_protocol.as_deref().unwrap_or_default().to_string(),
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
    let ((ip, _, _, target, _), ready) = a;
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
        0 => "(none)".into(),
        1..=5 => items.join(", "),
        n => format!("{} and {} more", items[..5].join(", "), n - 5),
    }
}

/// Upstream's truncation (`truncateEndpoints`) keeps 1000 addresses, ready
/// ones first: every ready address while there are at most 1000 (the rest
/// of the room goes to not-ready ones), else 1000 ready ones and no
/// not-ready one. Which of them it keeps is per subset, so any choice of
/// ours that follows that rule is right.
fn truncation_difference(
    want: &BTreeSet<(AddrKey, bool)>,
    have: &BTreeSet<(AddrKey, bool)>,
) -> Option<String> {
    let extra: Vec<_> = have.difference(want).cloned().collect();
    let want_ready = want.iter().filter(|(_, r)| *r).count();
    let have_ready = have.iter().filter(|(_, r)| *r).count();
    let keep = MAX_ENDPOINTS_ADDRESSES.min(want.len());
    let ready_first = have_ready == want_ready.min(MAX_ENDPOINTS_ADDRESSES);
    if have.len() == keep && extra.is_empty() && ready_first {
        return None;
    }
    Some(format!(
        "over capacity: {} stored addresses, {have_ready} ready (want {keep}, {} ready){}",
        have.len(),
        want_ready.min(MAX_ENDPOINTS_ADDRESSES),
        match extra.is_empty() {
            true => String::new(),
            false => format!("; not ours: {}", list(extra, show_addr)),
        }
    ))
}

/// What differs between the labels `stored` and `want`, the keys in `skip`
/// aside: `missing k=v`, `unexpected k=v`, `k=v stored, want k=w`.
fn label_difference(want: &Labels, stored: &Labels, skip: &[&str]) -> Option<String> {
    let kept = |l: &Labels| -> BTreeMap<String, String> {
        l.iter()
            .filter(|(k, _)| !skip.contains(k))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let (want, have) = (kept(want), kept(stored));
    if want == have {
        return None;
    }
    let mut d = Vec::new();
    for (k, v) in &want {
        match have.get(k) {
            None => d.push(format!("missing {k}={v}")),
            Some(h) if h != v => d.push(format!("{k}={h} stored, want {k}={v}")),
            Some(_) => {}
        }
    }
    for (k, v) in have.iter().filter(|(k, _)| !want.contains_key(*k)) {
        d.push(format!("unexpected {k}={v}"));
    }
    Some(format!("labels: {}", list(d, String::clone)))
}

/// Compare the Endpoints endpointd computes (`desired`, before truncation,
/// and whether it is over capacity) with the stored one; `svc_labels` are
/// the Service's labels, which the Endpoints carries.
pub fn compare_endpoints(
    desired: &[EndpointSubset],
    over_capacity: bool,
    current: Option<&Endpoints>,
    svc_labels: &Labels,
) -> Vec<Difference> {
    let Some(current) = current else {
        return vec![diff(
            "endpoints_missing",
            "no Endpoints object; endpointd would create it".into(),
        )];
    };
    let want = triples(desired);
    let have = triples(&current.subsets);
    let addrs = |t: &BTreeSet<(AddrKey, bool, Option<PortKey>)>| -> BTreeSet<(AddrKey, bool)> {
        t.iter().map(|(a, r, _)| (a.clone(), *r)).collect()
    };
    let ports = |t: &BTreeSet<(AddrKey, bool, Option<PortKey>)>| -> BTreeSet<Option<PortKey>> {
        t.iter().map(|(_, _, p)| p.clone()).collect()
    };
    let mut out = Vec::new();
    let (wa, ha) = (addrs(&want), addrs(&have));
    let marked = current
        .metadata
        .annotations
        .contains_key(OVER_CAPACITY_ANNOTATION);
    if marked != over_capacity {
        out.push(diff(
            "endpoints_annotation",
            match over_capacity {
                true => format!("over capacity but not annotated {OVER_CAPACITY_ANNOTATION}"),
                false => format!("annotated {OVER_CAPACITY_ANNOTATION} but not over capacity"),
            },
        ));
    }
    if over_capacity {
        if let Some(d) = truncation_difference(&wa, &ha) {
            out.push(diff("endpoints_addresses", d));
        }
    } else {
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
    }
    let (wp, hp) = (ports(&want), ports(&have));
    // Truncation can leave a subset without addresses, so over capacity
    // the stored ports need only be among ours.
    let ports_differ = match over_capacity {
        true => !hp.is_subset(&wp),
        false => wp != hp,
    };
    if ports_differ {
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
    } else if out.is_empty() && !over_capacity && want != have {
        out.push(diff(
            "endpoints_addresses",
            "the same addresses and ports, but paired differently (a named port resolves differently)"
                .into(),
        ));
    }
    let skip = [HEADLESS_LABEL, ENDPOINTS_MANAGED_BY_LABEL];
    let mut labels: Vec<String> = label_difference(svc_labels, &current.metadata.labels, &skip)
        .into_iter()
        .collect();
    // Absent is kube-controller-manager before 1.33; another value is
    // another manager's, which endpointd would overwrite.
    match current.metadata.labels.get(ENDPOINTS_MANAGED_BY_LABEL) {
        Some(v) if v != ENDPOINTS_MANAGED_BY => labels.push(format!(
            "{ENDPOINTS_MANAGED_BY_LABEL}={v} stored, want {ENDPOINTS_MANAGED_BY}"
        )),
        _ => {}
    }
    if !labels.is_empty() {
        out.push(diff("endpoints_labels", labels.join("; ")));
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

/// An endpoint's hints as text: `zones [..] nodes [..]`, or `none`.
fn hints_text(e: &Endpoint) -> String {
    let Some(h) = &e.hints else {
        return "none".into();
    };
    let zones: Vec<&str> = h.for_zones.iter().map(|z| z.name.as_str()).collect();
    let nodes: Vec<&str> = h.for_nodes.iter().map(|n| n.name.as_str()).collect();
    match nodes.is_empty() {
        true => format!("zones [{}]", zones.join(",")),
        false => format!("zones [{}] nodes [{}]", zones.join(","), nodes.join(",")),
    }
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
    let scoped = |mut v: Vec<Difference>| {
        for d in &mut v {
            d.scope = format!("{t:?}");
        }
        v
    };
    if existing.is_empty() && !desired.is_empty() {
        return scoped(vec![diff(
            "slices_missing",
            format!(
                "{t:?}: no EndpointSlice; endpointd would create {}",
                desired.len()
            ),
        )]);
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
        if hints_text(w) != hints_text(h) {
            hints.push(format!(
                "{}: {} stored, want {}",
                show_key(k, w),
                hints_text(h),
                hints_text(w)
            ));
        }
        let uid = |e: &Endpoint| e.target_ref.as_ref().map(|t| t.uid.clone());
        if uid(w) != uid(h) {
            fields.push(format!(
                "{}: targetRef uid {:?} stored, want {:?}",
                show_key(k, w),
                uid(h).unwrap_or_default(),
                uid(w).unwrap_or_default()
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
    // Every slice carries the Service's labels; the reserved ones are the
    // controller's (and select the slices compared here).
    let mut labels = Vec::new();
    if let Some(w) = desired.first() {
        for s in existing {
            if let Some(d) = label_difference(
                &w.metadata.labels,
                &s.metadata.labels,
                SLICE_RESERVED_LABELS,
            ) {
                labels.push(format!("{}: {d}", s.metadata.name));
            }
        }
    }
    for (kind, v) in [
        ("slice_labels", labels),
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
    scoped(out)
}

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;
