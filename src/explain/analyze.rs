//! The pure half of `endpointd explain`: from a Service, the pods and
//! nodes of its namespace and the stored Endpoints and EndpointSlices, the
//! report an operator reads — every selected pod with where it is listed or
//! the exact reason it is not, the pods that almost match, and whether the
//! stored objects are what endpointd computes now.
//!
//! It reuses the controllers' own decisions (`podutil`, `endpoints::desired`
//! and `reconcile::plan`, `endpointslice::desired` and `reconciler`) and
//! shadow mode's comparisons by meaning — never a second copy of the
//! rules. Pure: no client, no clock, no logging.

use crate::endpoints::plan::desired::unpacked_subsets;
use crate::endpoints::plan::desired::{pod_address, wants_v6};
use crate::endpoints::plan::repack::repack_subsets;
use crate::endpoints::plan::{self as ep_reconcile, EndpointsPlan};
use crate::endpointslice::plan::desired::address_types_for_service;
use crate::endpointslice::plan::topology::TopologyCache;
use crate::endpointslice::plan::trafficdist::hints_enabled;
use crate::endpointslice::plan::{reconcile, ReconcileInput};
use crate::runtime::membership::selects;
use crate::runtime::podutil::{parse_ip_sloppy, service_is_managed, should_pod_be_in_endpoints};
use crate::shadow::{compare_endpoints, compare_service_slices};
use endpointd_kube::model::{
    AddressType, EndpointSlice, Endpoints, IntOrString, Node, Pod, Service,
};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

/// What `explain` reads, all of one namespace.
#[derive(Debug)]
pub struct ExplainInputs<'a> {
    /// The Service.
    pub service: &'a Service,
    /// Every pod of its namespace.
    pub pods: &'a [Arc<Pod>],
    /// Every node.
    pub nodes: &'a [Arc<Node>],
    /// The stored Endpoints of the same name.
    pub endpoints: Option<&'a Endpoints>,
    /// The stored slices labelled with the Service's name.
    pub slices: &'a [Arc<EndpointSlice>],
    /// `endpointslices.max_endpoints_per_slice`.
    pub max_endpoints_per_slice: usize,
}

/// The report (`--output json` prints exactly this; field names are a
/// contract with scripts).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// `namespace/name`.
    pub service: String,
    /// Whether the controllers manage its endpoints at all.
    pub managed: bool,
    /// Why not, when not managed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unmanaged_reason: Option<String>,
    /// `clusterIP: None`.
    pub headless: bool,
    /// The slices' address types.
    pub address_types: Vec<String>,
    /// The Endpoints' address family.
    pub endpoints_family: String,
    /// `publishNotReadyAddresses`.
    pub publish_not_ready_addresses: bool,
    /// `trafficDistribution`, if set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traffic_distribution: Option<String>,
    /// Topology-aware hints requested by annotation (`Auto`).
    pub topology_auto: bool,
    /// Whether endpoints get hints, which, or why not.
    pub hints: String,
    /// The Service's ports.
    pub ports: Vec<PortFacts>,
    /// Every pod the selector matches.
    pub pods: Vec<PodReport>,
    /// Pods of the namespace the selector misses by exactly one label.
    pub near_misses: Vec<NearMiss>,
    /// Whether the stored Endpoints are what endpointd computes now.
    pub endpoints_in_sync: bool,
    /// Whether the stored slices are what endpointd computes now.
    pub slices_in_sync: bool,
    /// What differs, when out of sync (a sync is pending, or another
    /// writer is active).
    pub differences: Vec<String>,
    /// The Endpoints were truncated to 1000 addresses (over capacity).
    pub endpoints_truncated: bool,
}

/// One Service port.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PortFacts {
    /// `name`.
    pub name: String,
    /// `port`.
    pub port: i32,
    /// `protocol`.
    pub protocol: String,
    /// `targetPort` as written (a number or a container port name).
    pub target_port: String,
}

/// One selected pod.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodReport {
    /// Pod name.
    pub name: String,
    /// `status.podIPs`.
    pub ips: Vec<String>,
    /// `spec.nodeName`.
    pub node: String,
    /// `ready`, `notReady`, `terminating` or `excluded`.
    pub state: String,
    /// Why the pod is missing (or only partly listed); empty when fully in.
    pub reasons: Vec<Reason>,
    /// Where the stored Endpoints list it: `addresses`,
    /// `notReadyAddresses`, or absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_endpoints: Option<String>,
    /// The stored slices that hold it, with its conditions there.
    pub in_slices: Vec<SliceEntry>,
    /// Each Service port as it resolves on this pod (`None`: not declared).
    pub resolved_ports: Vec<ResolvedPort>,
}

/// A Service port resolved on a pod.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedPort {
    /// The Service port's name.
    pub name: String,
    /// The container port it reaches, if the pod declares it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_port: Option<i32>,
}

/// A pod's endpoint in one stored slice.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SliceEntry {
    /// Slice name.
    pub slice: String,
    /// The slice's address type.
    pub address_type: String,
    /// `conditions.ready`.
    pub ready: Option<bool>,
    /// `conditions.serving`.
    pub serving: Option<bool>,
    /// `conditions.terminating`.
    pub terminating: Option<bool>,
    /// `zone`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// Zones of the endpoint's hints.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hint_zones: Vec<String>,
    /// Nodes of the endpoint's hints (trafficDistribution PreferSameNode).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hint_nodes: Vec<String>,
}

/// Why a selected pod is not (fully) listed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "reason",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Reason {
    /// Succeeded or Failed: out of both objects.
    TerminalPhase {
        /// The phase.
        phase: String,
    },
    /// No IP yet (not scheduled or not started).
    NoPodIp,
    /// No IP of the Service's family.
    NoIpOfFamily {
        /// `IPv4` or `IPv6`.
        family: String,
    },
    /// No usable IP of the Service's family, and the pod lists IPs that
    /// are not IP addresses at all (an API server validates them; a
    /// broken one or a simulator may not).
    InvalidPodIp {
        /// The pod's IPs that do not parse.
        ips: Vec<String>,
    },
    /// Being deleted: out of the Endpoints (in with
    /// `publishNotReadyAddresses`), in the slices as terminating.
    Terminating,
    /// Not Ready: listed under `notReadyAddresses` and with `ready: false`.
    NotReady,
    /// A named target port the pod does not declare: that port is missing
    /// for this pod.
    NamedPortMissing {
        /// The Service port.
        service_port: String,
        /// The container port name looked for.
        target_port: String,
        /// Its protocol.
        protocol: String,
    },
    /// The pod's Node does not exist: skipped by the EndpointSlice
    /// controller until it does (unless `publishNotReadyAddresses`).
    NodeMissing {
        /// `spec.nodeName`.
        node: String,
    },
    /// Left out of the Endpoints by truncation: over 1000 addresses, the
    /// Endpoints keep 1000 (ready ones first); the slices list the pod.
    OverCapacity,
}

/// A pod the selector misses by one label.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NearMiss {
    /// Pod name.
    pub pod: String,
    /// The selector key that fails.
    pub label: String,
    /// The value the selector wants.
    pub want: String,
    /// The pod's value (`None`: label absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub have: Option<String>,
}

fn port_text(p: &IntOrString) -> String {
    match p {
        IntOrString::Int(i) => i.to_string(),
        IntOrString::String(s) => s.to_string(),
    }
}

fn family_name(v6: bool) -> &'static str {
    if v6 {
        "IPv6"
    } else {
        "IPv4"
    }
}

fn unmanaged_reason(svc: &Service) -> Option<String> {
    if &*svc.type_ == "ExternalName" {
        return Some("type ExternalName: no endpoints are managed".into());
    }
    if svc.selector.is_none() {
        return Some(
            "no selector: its Endpoints and EndpointSlices are managed by hand (or by another controller)"
                .into(),
        );
    }
    None
}

/// The reasons a selected pod is missing or only partly listed.
fn reasons(svc: &Service, pod: &Pod, nodes: &[Arc<Node>]) -> Vec<Reason> {
    let mut out = Vec::new();
    if !should_pod_be_in_endpoints(pod, true) {
        // The controllers' rule said no; name which of its two clauses.
        out.push(match pod.phase.is_terminal() {
            true => Reason::TerminalPhase {
                phase: format!("{:?}", pod.phase),
            },
            false => Reason::NoPodIp,
        });
        return out;
    }
    if pod_address(svc, pod).is_none() {
        let invalid: Vec<String> = pod
            .pod_ips
            .iter()
            .filter(|ip| parse_ip_sloppy(ip).is_none())
            .map(|ip| ip.to_string())
            .collect();
        out.push(match invalid.is_empty() {
            true => Reason::NoIpOfFamily {
                family: family_name(wants_v6(svc, pod)).into(),
            },
            false => Reason::InvalidPodIp { ips: invalid },
        });
    }
    if pod.metadata.deletion_timestamp.is_some() {
        out.push(Reason::Terminating);
    } else if !pod.is_ready() {
        out.push(Reason::NotReady);
    }
    for sp in svc.ports.iter() {
        if let IntOrString::String(name) = &sp.target_port {
            if pod.find_port(sp).is_none() {
                out.push(Reason::NamedPortMissing {
                    service_port: sp.name.to_string(),
                    target_port: name.to_string(),
                    protocol: sp.protocol.as_str().to_string(),
                });
            }
        }
    }
    if !svc.publish_not_ready_addresses && !nodes.iter().any(|n| *n.metadata.name == *pod.node_name)
    {
        out.push(Reason::NodeMissing {
            node: pod.node_name.to_string(),
        });
    }
    out
}

fn in_endpoints(ep: Option<&Endpoints>, pod: &Pod) -> Option<String> {
    let ep = ep?;
    let uid = &pod.metadata.uid;
    let is_pod = |a: &endpointd_kube::model::EndpointAddress| {
        a.target_ref.as_ref().is_some_and(|t| {
            t.name == *pod.metadata.name && (uid.is_empty() || t.uid.is_empty() || t.uid == *uid)
        })
    };
    for s in &ep.subsets {
        if s.addresses.iter().any(is_pod) {
            return Some("addresses".into());
        }
    }
    for s in &ep.subsets {
        if s.not_ready_addresses.iter().any(is_pod) {
            return Some("notReadyAddresses".into());
        }
    }
    None
}

fn in_slices(slices: &[Arc<EndpointSlice>], pod: &Pod) -> Vec<SliceEntry> {
    let mut out = Vec::new();
    for s in slices {
        for e in &s.endpoints {
            let ours = e
                .target_ref
                .as_ref()
                .is_some_and(|t| t.name == *pod.metadata.name && t.kind == "Pod");
            if !ours {
                continue;
            }
            out.push(SliceEntry {
                slice: s.metadata.name.to_string(),
                address_type: format!("{:?}", s.address_type),
                ready: e.conditions.ready,
                serving: e.conditions.serving,
                terminating: e.conditions.terminating,
                zone: e.zone.as_ref().map(ToString::to_string),
                hint_zones: e
                    .hints
                    .as_ref()
                    .map(|h| h.for_zones.iter().map(|z| z.name.to_string()).collect())
                    .unwrap_or_default(),
                hint_nodes: e
                    .hints
                    .as_ref()
                    .map(|h| h.for_nodes.iter().map(|n| n.name.to_string()).collect())
                    .unwrap_or_default(),
            });
        }
    }
    out
}

/// Which one selector label a pod misses, if exactly one.
fn near_miss(svc: &Service, pod: &Pod) -> Option<NearMiss> {
    let sel = svc.selector.as_ref()?;
    let mut misses = sel
        .iter()
        .filter(|(k, v)| pod.metadata.labels.get(k) != Some(*v));
    let (k, v) = misses.next()?;
    if misses.next().is_some() {
        return None;
    }
    Some(NearMiss {
        pod: pod.metadata.name.to_string(),
        label: k.to_string(),
        want: v.to_string(),
        have: pod.metadata.labels.get(k).map(str::to_string),
    })
}

fn state(pod: &Pod, reasons: &[Reason]) -> &'static str {
    if !should_pod_be_in_endpoints(pod, true)
        || reasons
            .iter()
            .any(|r| matches!(r, Reason::NoIpOfFamily { .. } | Reason::InvalidPodIp { .. }))
    {
        "excluded"
    } else if pod.metadata.deletion_timestamp.is_some() {
        "terminating"
    } else if pod.is_ready() {
        "ready"
    } else {
        "notReady"
    }
}

/// Which hints the plan gives endpoints, or why none (upstream: the
/// topology-mode annotation wins over trafficDistribution).
fn hints_text(svc: &Service, plan: &crate::endpointslice::plan::SlicePlan) -> String {
    use crate::endpointslice::plan::trafficdist::{heuristic, Heuristic};
    use crate::endpointslice::TopologyMode;
    let hinted = plan
        .by_type
        .iter()
        .flat_map(|(_, w)| w.creates.iter())
        .flat_map(|s| s.endpoints.iter())
        .any(|e| e.hints.is_some());
    if hints_enabled(svc) {
        if plan.topology == TopologyMode::Auto && hinted {
            return "topology-mode Auto: zone hints allocated by each zone's share of node CPU"
                .into();
        }
        let why: Vec<&str> = plan
            .events
            .iter()
            .filter(|e| e.reason == "TopologyAwareHintsDisabled")
            .map(|e| e.message.as_str())
            .collect();
        return format!(
            "topology-mode Auto requested but not applied: {}",
            match why.is_empty() {
                true => "no ready endpoints".to_string(),
                false => why.join("; "),
            }
        );
    }
    match heuristic(svc.traffic_distribution.as_deref()) {
        Heuristic::SameZone => "trafficDistribution: ready endpoints hint their own zone".into(),
        Heuristic::SameNode => {
            "trafficDistribution: ready endpoints hint their own node and zone".into()
        }
        Heuristic::Default => "none".into(),
    }
}

/// The slices' differences, and the hints endpointd gives.
///
/// By meaning first, as shadow mode compares (per address type: the
/// endpoint set, conditions, hints, ports, packing bounds; slices of a
/// dropped address type), so a kube-controller-manager's slices that
/// partition the same endpoints otherwise are in sync. When those agree,
/// the writes endpointd's own plan would still make (labels, layout) are
/// added as notes. Returns (in sync, lines, hints).
fn slice_differences(
    inputs: &ExplainInputs<'_>,
    selected: &[Arc<Pod>],
) -> (bool, Vec<String>, String) {
    let svc = inputs.service;
    let by_name: BTreeMap<&str, Arc<Node>> = inputs
        .nodes
        .iter()
        .map(|n| (&*n.metadata.name, Arc::clone(n)))
        .collect();
    let nodes = |n: &str| by_name.get(n).cloned();
    let topology = Mutex::new(TopologyCache::new());
    if let Ok(mut t) = topology.lock() {
        t.set_nodes(inputs.nodes);
    }
    let plan_with = |existing: &[Arc<EndpointSlice>]| {
        reconcile(&ReconcileInput {
            service: svc,
            pods: selected,
            existing,
            nodes: &nodes,
            trigger_time: None,
            max_endpoints_per_slice: inputs.max_endpoints_per_slice,
            topology: Some(&topology),
        })
    };
    let fresh = plan_with(&[]);
    // Labels carry no traffic: a slice to relabel is a note below.
    let meaning: Vec<_> =
        compare_service_slices(&fresh, inputs.slices, inputs.max_endpoints_per_slice)
            .into_iter()
            .filter(|d| d.kind != "slice_labels")
            .collect();
    let plan = plan_with(inputs.slices);
    let hints = hints_text(svc, &plan);
    if !meaning.is_empty() {
        let lines = meaning
            .into_iter()
            .map(|d| format!("EndpointSlices: {}", d.detail));
        return (false, lines.collect(), hints);
    }
    let mut notes = Vec::new();
    for (t, w) in &plan.by_type {
        let names = |v: &[EndpointSlice]| {
            v.iter()
                .map(|s| match s.metadata.name.is_empty() {
                    true => "(new)".to_string(),
                    false => s.metadata.name.to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let n = w.creates.len() + w.updates.len() + w.deletes.len();
        if n > 0 {
            notes.push(format!(
                "EndpointSlices: {t:?}: the same endpoints, but endpointd would still write {n} slice(s) (labels or packing differ): {}",
                names(&[&w.creates[..], &w.updates[..], &w.deletes[..]].concat())
            ));
        }
    }
    (true, notes, hints)
}

/// The Endpoints' differences by meaning (as shadow mode compares), or,
/// when there are none, whether endpointd would still rewrite the object.
/// Returns (in sync, lines).
fn endpoints_differences(inputs: &ExplainInputs<'_>, selected: &[Arc<Pod>]) -> (bool, Vec<String>) {
    let svc = inputs.service;
    let full = repack_subsets(&unpacked_subsets(svc, selected));
    let over = ep_reconcile::desired_subsets(svc, selected).1;
    // Labels carry no traffic: a difference there is a note below.
    let (labels, diffs): (Vec<_>, Vec<_>) =
        compare_endpoints(&full, over, inputs.endpoints, &svc.metadata.labels)
            .into_iter()
            .partition(|d| d.kind == "endpoints_labels");
    if !diffs.is_empty() {
        let lines = diffs
            .into_iter()
            .map(|d| format!("Endpoints: {}", d.detail));
        return (false, lines.collect());
    }
    if let Some(d) = labels.first() {
        return (
            true,
            vec![format!(
                "Endpoints: the same addresses and ports, but endpointd would still rewrite it ({})",
                d.detail
            )],
        );
    }
    let plan = ep_reconcile::plan(&ep_reconcile::EndpointsInput {
        service: svc,
        pods: selected,
        current: inputs.endpoints,
        trigger_time: None,
    });
    match plan {
        EndpointsPlan::Update(_) => (
            true,
            vec!["Endpoints: the same addresses and ports, but endpointd would still rewrite it (labels or subset order differ)".into()],
        ),
        _ => (true, Vec::new()),
    }
}

/// The pods the Endpoints leave out by truncation (over capacity).
fn truncated_out(svc: &Service, selected: &[Arc<Pod>]) -> BTreeSet<String> {
    let (kept, truncated) = ep_reconcile::desired_subsets(svc, selected);
    if !truncated {
        return BTreeSet::new();
    }
    let names = |subsets: &[endpointd_kube::model::EndpointSubset]| -> BTreeSet<String> {
        subsets
            .iter()
            .flat_map(|s| s.addresses.iter().chain(s.not_ready_addresses.iter()))
            .filter_map(|a| a.target_ref.as_ref().map(|t| t.name.to_string()))
            .collect()
    };
    let all = names(&repack_subsets(&unpacked_subsets(svc, selected)));
    all.difference(&names(&kept)).cloned().collect()
}

/// Build the report.
pub fn analyze(inputs: &ExplainInputs<'_>) -> Explanation {
    let svc = inputs.service;
    let managed = service_is_managed(svc);
    let selected: Vec<Arc<Pod>> = match managed {
        true => inputs
            .pods
            .iter()
            .filter(|p| *p.metadata.namespace == *svc.metadata.namespace && selects(svc, p))
            .cloned()
            .collect(),
        false => Vec::new(),
    };
    let left_out = truncated_out(svc, &selected);
    let pods = selected
        .iter()
        .map(|p| {
            let mut reasons = reasons(svc, p, inputs.nodes);
            if left_out.contains(&*p.metadata.name) {
                reasons.push(Reason::OverCapacity);
            }
            PodReport {
                name: p.metadata.name.to_string(),
                ips: p.pod_ips.iter().map(|s| s.to_string()).collect(),
                node: p.node_name.to_string(),
                state: state(p, &reasons).into(),
                in_endpoints: in_endpoints(inputs.endpoints, p),
                in_slices: in_slices(inputs.slices, p),
                resolved_ports: svc
                    .ports
                    .iter()
                    .map(|sp| ResolvedPort {
                        name: sp.name.to_string(),
                        container_port: p.find_port(sp),
                    })
                    .collect(),
                reasons,
            }
        })
        .collect();
    let near_misses = match managed {
        true => inputs
            .pods
            .iter()
            .filter(|p| *p.metadata.namespace == *svc.metadata.namespace && !selects(svc, p))
            .filter_map(|p| near_miss(svc, p))
            .collect(),
        false => Vec::new(),
    };
    let mut differences = Vec::new();
    let mut hints = "none".to_string();
    let (mut endpoints_in_sync, mut slices_in_sync, mut truncated) = (true, true, false);
    if managed {
        truncated = ep_reconcile::desired_subsets(svc, &selected).1;
        let (in_sync, lines) = endpoints_differences(inputs, &selected);
        endpoints_in_sync = in_sync;
        differences.extend(lines);
        let (in_sync, lines, h) = slice_differences(inputs, &selected);
        slices_in_sync = in_sync;
        differences.extend(lines);
        hints = h;
    }
    Explanation {
        service: format!("{}/{}", svc.metadata.namespace, svc.metadata.name),
        managed,
        unmanaged_reason: unmanaged_reason(svc),
        headless: svc.is_headless(),
        address_types: address_types_for_service(svc)
            .into_iter()
            .map(|t: AddressType| format!("{t:?}"))
            .collect(),
        endpoints_family: family_name(
            svc.ip_families.first().is_some_and(|f| &**f == "IPv6")
                || (svc.is_ip_set() && svc.cluster_ip.contains(':')),
        )
        .into(),
        publish_not_ready_addresses: svc.publish_not_ready_addresses,
        traffic_distribution: svc.traffic_distribution.as_deref().map(str::to_string),
        topology_auto: hints_enabled(svc),
        hints,
        ports: svc
            .ports
            .iter()
            .map(|p| PortFacts {
                name: p.name.to_string(),
                port: p.port,
                protocol: p.protocol.as_str().to_string(),
                target_port: port_text(&p.target_port),
            })
            .collect(),
        pods,
        near_misses,
        endpoints_in_sync,
        slices_in_sync,
        differences,
        endpoints_truncated: truncated,
    }
}

#[cfg(test)]
#[path = "analyze_tests.rs"]
mod tests;
