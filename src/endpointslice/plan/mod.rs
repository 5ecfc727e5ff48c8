//! Upstream `Reconcile` and `reconcileByAddressType`
//! (`staging/src/k8s.io/endpointslice/reconciler.go`; docs/behaviour.md#up-b8–#up-b25)
//! as a pure plan: from the Service, its pods, the nodes and the cached
//! slices, the creates, updates and deletes per address type, with
//! finalize's create→update recycling already applied (docs/behaviour.md#up-b19a), the hints,
//! the events to emit and the pods skipped for a missing Node.
//!
//! Better than upstream, which mixes the plan with its API writes: the
//! plan is data, and [`super::writer`] is the only writer. The topology
//! cache is the one piece of state a plan updates (hint allocations).
//!
//! Never mutates its inputs (docs/behaviour.md#up-b28).

pub mod desired;
pub mod packing;
pub mod topology;
pub mod trafficdist;

use super::meta::{new_slice, owned_by, placeholder_equal};
use super::{managed_by_us, TopologyMode};
use crate::runtime::events::EventSpec;
use crate::runtime::podutil::should_pod_be_in_endpoints;
use desired::{
    address_types_for_service, endpoint_key, endpoint_ports_into, pod_to_endpoint, port_map_key,
    EndpointKey, PortMapKey,
};
use endpointd_kube::model::{AddressType, Endpoint, EndpointSlice, Node, Pod, Service, Time};
use packing::reconcile_by_port_mapping;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use topology::{SliceInfo, TopologyCache};
use trafficdist::{heuristic, hints_enabled, is_valid, reconcile_hints, Heuristic};

/// What a sync reads.
pub struct ReconcileInput<'a> {
    /// A managed Service (selector set, not ExternalName).
    pub service: &'a Service,
    /// The pods of its namespace its selector matches.
    pub pods: &'a [Arc<Pod>],
    /// The cached slices labelled with its name, whatever their manager or
    /// deletion state (the docs/behaviour.md#up-b5 filters are applied here).
    pub existing: &'a [Arc<EndpointSlice>],
    /// Node lookup by name.
    pub nodes: &'a dyn Fn(&str) -> Option<Arc<Node>>,
    /// From the trigger-time tracker; `None` is the zero time.
    pub trigger_time: Option<Time>,
    /// KCM `--max-endpoints-per-slice`.
    pub max_endpoints_per_slice: usize,
    /// The topology cache, when topology hints are enabled (the default).
    pub topology: Option<&'a Mutex<TopologyCache>>,
}

/// The writes of one address type, in finalize's order.
#[derive(Clone, Debug, Default)]
pub struct SliceWrites {
    /// POST (generateName).
    pub creates: Vec<EndpointSlice>,
    /// PUT.
    pub updates: Vec<EndpointSlice>,
    /// DELETE.
    pub deletes: Vec<EndpointSlice>,
}

impl SliceWrites {
    /// Number of writes.
    pub fn len(&self) -> usize {
        self.creates.len() + self.updates.len() + self.deletes.len()
    }
    /// Whether nothing is to be written.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Numbers for the `endpoint_slice_controller_*` metrics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlanMetrics {
    /// Endpoints added to slices.
    pub added: usize,
    /// Endpoints removed from slices.
    pub removed: usize,
    /// Desired endpoints over all port maps and address types.
    pub desired_endpoints: usize,
    /// Slices there will be after the writes.
    pub slices: usize,
    /// The fewest slices the desired endpoints fit in.
    pub desired_slices: usize,
}

/// The plan of one sync.
#[derive(Clone, Debug, Default)]
pub struct SlicePlan {
    /// Per supported address type, in order.
    pub by_type: Vec<(AddressType, SliceWrites)>,
    /// Slices of address types the Service no longer supports (docs/behaviour.md#up-b9), deleted
    /// after the per-type writes.
    pub unsupported: Vec<EndpointSlice>,
    /// Events to emit on the Service.
    pub events: Vec<EventSpec>,
    /// docs/behaviour.md#up-b12: pods skipped because their Node is not cached.
    pub node_errors: Vec<String>,
    /// Metric figures.
    pub metrics: PlanMetrics,
    /// Which hints the plan applied (the `topology` metric label).
    pub topology: TopologyMode,
}

impl SlicePlan {
    /// Every write of the plan.
    pub fn write_count(&self) -> usize {
        self.by_type.iter().map(|(_, w)| w.len()).sum::<usize>() + self.unsupported.len()
    }
}

/// Upstream `Reconcile`.
pub fn reconcile(input: &ReconcileInput<'_>) -> SlicePlan {
    let svc = input.service;
    let key = format!("{}/{}", svc.metadata.namespace, svc.metadata.name);
    let types = address_types_for_service(svc);
    let mut plan = SlicePlan::default();
    let mut by_type: BTreeMap<AddressType, Vec<Arc<EndpointSlice>>> = BTreeMap::new();
    for s in input.existing {
        if !managed_by_us(s) || s.metadata.deletion_timestamp.is_some() {
            continue;
        }
        if types.contains(&s.address_type) {
            by_type
                .entry(s.address_type)
                .or_default()
                .push(Arc::clone(s));
        } else {
            if let Some(t) = input.topology {
                lock(t).remove_hints(&key, s.address_type);
            }
            plan.unsupported.push((**s).clone());
        }
    }
    for t in types {
        let existing = by_type.remove(&t).unwrap_or_default();
        let w = reconcile_by_address_type(input, &existing, t, &mut plan);
        plan.by_type.push((t, w));
    }
    plan
}

fn lock(t: &Mutex<TopologyCache>) -> std::sync::MutexGuard<'_, TopologyCache> {
    t.lock().unwrap_or_else(|p| p.into_inner())
}

type Desired = BTreeMap<PortMapKey, BTreeMap<EndpointKey, Endpoint>>;

/// The desired endpoints of one address type, grouped by port map (docs/behaviour.md#up-b11,
/// docs/behaviour.md#up-b12): pods whose Node is missing are skipped (errors) unless the Service
/// publishes not-ready addresses; their port map still counts as desired.
fn desired_endpoints(
    input: &ReconcileInput<'_>,
    t: AddressType,
    errors: &mut Vec<String>,
) -> Desired {
    let svc = input.service;
    let mut out: Desired = BTreeMap::new();
    // The pod's ports, already in port-map order; reused across pods so
    // that only a port map not seen yet allocates its key.
    let mut ports = Vec::new();
    for pod in input.pods {
        if !should_pod_be_in_endpoints(pod, true) {
            continue;
        }
        endpoint_ports_into(svc, pod, &mut ports);
        if !out.contains_key(ports.as_slice()) {
            out.insert(ports.clone(), BTreeMap::new());
        }
        let Some(group) = out.get_mut(ports.as_slice()) else {
            continue;
        };
        let node = (input.nodes)(&pod.node_name);
        if node.is_none() && !svc.publish_not_ready_addresses {
            let msg = format!(
                "skipping Pod {} for Service {}/{}: Node {} Not Found",
                pod.metadata.name, svc.metadata.namespace, svc.metadata.name, pod.node_name
            );
            if !errors.contains(&msg) {
                errors.push(msg);
            }
            continue;
        }
        let e = pod_to_endpoint(pod, node.as_deref(), svc, t);
        if !e.addresses.is_empty() {
            group.insert(endpoint_key(&e), e);
        }
    }
    out
}

/// Upstream `reconcileByAddressType`, up to and including finalize's
/// recycling.
fn reconcile_by_address_type(
    input: &ReconcileInput<'_>,
    existing: &[Arc<EndpointSlice>],
    t: AddressType,
    plan: &mut SlicePlan,
) -> SliceWrites {
    let svc = input.service;
    let max = input.max_endpoints_per_slice.max(1);
    let mut w = SliceWrites::default();
    let mut by_ports: BTreeMap<PortMapKey, Vec<Arc<EndpointSlice>>> = BTreeMap::new();
    for s in existing {
        match owned_by(s, svc) {
            true => by_ports
                .entry(port_map_key(&s.ports))
                .or_default()
                .push(Arc::clone(s)),
            false => w.deletes.push((**s).clone()),
        }
    }
    let desired = desired_endpoints(input, t, &mut plan.node_errors);
    let mut unchanged = Vec::new();
    for (ports, eps) in desired {
        plan.metrics.desired_endpoints += eps.len();
        plan.metrics.desired_slices += eps.len().div_ceil(max).max(1);
        let old = by_ports.remove(&ports).unwrap_or_default();
        let pm = reconcile_by_port_mapping(svc, &old, eps, &ports, t, max);
        plan.metrics.added += pm.added;
        plan.metrics.removed += pm.removed;
        plan.metrics.slices += old.len() + pm.creates.len() - pm.deletes.len();
        w.creates.extend(pm.creates);
        w.updates.extend(pm.updates);
        w.deletes.extend(pm.deletes);
        unchanged.extend(pm.unchanged);
    }
    // Port maps no longer desired (docs/behaviour.md#up-b17).
    for (_, old) in by_ports {
        w.deletes.extend(old.iter().map(|s| (**s).clone()));
    }
    placeholder(svc, existing.len(), t, &mut w, plan);
    let (c, u) = apply_hints(input, t, w.creates, w.updates, unchanged, plan);
    w.creates = c;
    w.updates = u;
    recycle(svc, &mut w);
    w
}

/// docs/behaviour.md#up-b18: a selector Service always keeps one slice per address type.
fn placeholder(
    svc: &Service,
    existing: usize,
    t: AddressType,
    w: &mut SliceWrites,
    plan: &mut SlicePlan,
) {
    if existing != w.deletes.len() || !w.creates.is_empty() {
        return;
    }
    let p = new_slice(svc, &[], t);
    plan.metrics.slices += 1;
    plan.metrics.desired_slices += 1;
    if w.deletes.len() == 1 && placeholder_equal(&w.deletes[0], &p) {
        w.deletes.clear();
    } else {
        w.creates.push(p);
    }
}

/// docs/behaviour.md#up-b23–#up-b25: topology-mode hints through the cache, or trafficDistribution
/// hints, or no hints (removed from every slice, unchanged ones included).
/// Returns (creates, updates).
fn apply_hints(
    input: &ReconcileInput<'_>,
    t: AddressType,
    creates: Vec<EndpointSlice>,
    updates: Vec<EndpointSlice>,
    unchanged: Vec<Arc<EndpointSlice>>,
    plan: &mut SlicePlan,
) -> (Vec<EndpointSlice>, Vec<EndpointSlice>) {
    let svc = input.service;
    let key = format!("{}/{}", svc.metadata.namespace, svc.metadata.name);
    let td = svc.traffic_distribution.as_deref();
    let auto = hints_enabled(svc);
    let si = SliceInfo {
        service_key: key.clone(),
        address_type: Some(t),
        to_create: creates,
        to_update: updates,
        unchanged,
    };
    if let (true, Some(cache)) = (auto, input.topology) {
        plan.topology = TopologyMode::Auto;
        let (c, u, ev) = lock(cache).add_hints(&si);
        plan.events.extend(ev);
        return (c, u);
    }
    if let Some(cache) = input.topology {
        let mut c = lock(cache);
        if c.has_populated_hints(&key) {
            c.note_disabled(&key);
            plan.events.push(EventSpec::warning(
                "TopologyAwareHintsDisabled",
                format!("Topology Aware Hints has been disabled, addressType: {t:?}"),
            ));
        }
        c.remove_hints(&key, t);
    }
    let h = match is_valid(td) && !auto {
        true => heuristic(td),
        false => Heuristic::Default,
    };
    let (c, u, _) = reconcile_hints(h, si.to_create, si.to_update, si.unchanged);
    (c, u)
}

/// docs/behaviour.md#up-b19a: while there are creates and deletes, the last create takes over
/// the name of a deleted slice of the same address type owned by this
/// Service (an update instead of a create plus a delete).
fn recycle(svc: &Service, w: &mut SliceWrites) {
    let mut i = 0;
    while i < w.deletes.len() && !w.creates.is_empty() {
        let d = &w.deletes[i];
        let last = w.creates.len() - 1;
        if d.address_type == w.creates[last].address_type && owned_by(d, svc) {
            let d = w.deletes.remove(i);
            if let Some(mut c) = w.creates.pop() {
                c.metadata.name = d.metadata.name.clone();
                c.metadata.resource_version = d.metadata.resource_version.clone();
                c.metadata.uid = d.metadata.uid.clone();
                w.updates.push(c);
            }
        } else {
            i += 1;
        }
    }
}
