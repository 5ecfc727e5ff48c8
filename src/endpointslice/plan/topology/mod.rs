//! The topology cache behind `service.kubernetes.io/topology-mode: Auto`
//! hints (upstream `staging/src/k8s.io/endpointslice/topologycache/`;
//! docs/behaviour.md#up-b24, #up-c6): CPU ratios per zone from the nodes, the hint
//! allocations per Service, and the assignment of zone hints to the ready
//! endpoints of the slices a sync writes.
//!
//! Owns that state (behind the controller's mutex); never talks to the
//! API server. Deterministic where upstream iterates Go maps.

mod alloc;
mod quantity;
#[cfg(test)]
mod tests;

pub use alloc::{Allocation, ZoneCounts, OVERLOAD_THRESHOLD};
use quantity::{milli_of_nanos, nano_cpu};

use crate::runtime::events::EventSpec;
use alloc::{giving_and_receiving, hints_by_zone, ready, ready_endpoints, redistribute, zone_hint};
use endpointd_kube::model::{AddressType, EndpointSlice, Node, ZONE_LABEL};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Upstream's event messages (`topologycache/event.go`).
pub mod messages {
    /// An endpoint without a zone.
    pub const NO_ZONE_SPECIFIED: &str = "One or more endpoints do not have a zone specified";
    /// Nothing allocated.
    pub const NO_ALLOCATED_HINTS_FOR_ZONES: &str = "No hints allocated for zones";
    /// Enabled.
    pub const ENABLED: &str = "Topology Aware Hints has been enabled";
    /// Disabled.
    pub const DISABLED: &str = "Topology Aware Hints has been disabled";
    /// Nodes without CPU or zone.
    pub const INSUFFICIENT_NODE_INFO: &str =
        "Insufficient Node information: allocatable CPU or zone not specified on one or more nodes";
    /// One zone only.
    pub const ONE_ZONE_ONLY: &str = "Nodes only ready in one zone";
    /// Fewer endpoints than zones.
    pub const INSUFFICIENT_ENDPOINTS: &str = "Insufficient number of endpoints";
    /// Minimums over the endpoints.
    pub const MIN_EXCEEDS_THRESHOLD: &str = "Unable to allocate minimum required endpoints to each zone without exceeding overload threshold";
}

/// Why no zone allocation exists for a Service's endpoints; displayed as
/// upstream's event message (the [`messages`] text, with the counts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoAllocation {
    /// A ready node lacks a zone or CPU, or the nodes' CPU totals zero.
    InsufficientNodeInfo,
    /// Ready nodes in fewer than 2 zones.
    OneZoneOnly,
    /// Fewer ready endpoints than zones.
    InsufficientEndpoints {
        /// Ready endpoints.
        endpoints: usize,
        /// Zones.
        zones: usize,
    },
    /// The zones' minimums add up to more than the ready endpoints.
    MinExceedsThreshold {
        /// Ready endpoints.
        endpoints: usize,
        /// Zones.
        zones: usize,
    },
}

impl std::fmt::Display for NoAllocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoAllocation::InsufficientNodeInfo => f.write_str(messages::INSUFFICIENT_NODE_INFO),
            NoAllocation::OneZoneOnly => f.write_str(messages::ONE_ZONE_ONLY),
            NoAllocation::InsufficientEndpoints { endpoints, zones } => write!(
                f,
                "{} ({endpoints} endpoints, {zones} zones)",
                messages::INSUFFICIENT_ENDPOINTS
            ),
            NoAllocation::MinExceedsThreshold { endpoints, zones } => write!(
                f,
                "{} ({endpoints} endpoints, {zones} zones)",
                messages::MIN_EXCEEDS_THRESHOLD
            ),
        }
    }
}

impl std::error::Error for NoAllocation {}

/// Upstream `FormatWithAddressType`.
pub fn with_address_type(s: &str, t: AddressType) -> String {
    format!("{s}, addressType: {t:?}")
}

/// The slices of one Service and address type after packing (upstream
/// `SliceInfo`).
#[derive(Clone, Debug, Default)]
pub struct SliceInfo {
    /// `namespace/name` of the Service.
    pub service_key: String,
    /// The address type of every slice here.
    pub address_type: Option<AddressType>,
    /// Slices to be created.
    pub to_create: Vec<EndpointSlice>,
    /// Slices to be updated.
    pub to_update: Vec<EndpointSlice>,
    /// Slices left as they are (shared with the cache).
    pub unchanged: Vec<Arc<EndpointSlice>>,
}

/// Zone CPU ratios from the nodes, and the hints allocated per Service.
#[derive(Debug, Default)]
pub struct TopologyCache {
    ratios: Option<BTreeMap<String, f64>>,
    by_service: BTreeMap<String, BTreeMap<AddressType, ZoneCounts>>,
    populated: BTreeSet<String>,
    /// Services told "hints disabled" since their hints were last set:
    /// hints that are still in the API (trafficDistribution kept them)
    /// are then no reason not to announce "enabled" again.
    disabled: BTreeSet<String>,
}

fn excluded(n: &Node) -> bool {
    let l = &n.metadata.labels;
    l.contains_key("node-role.kubernetes.io/control-plane")
        || l.contains_key("node-role.kubernetes.io/master")
}

fn disabled(msg: String) -> EventSpec {
    EventSpec::warning("TopologyAwareHintsDisabled", msg)
}

impl TopologyCache {
    /// An empty cache (insufficient node information until `set_nodes`).
    pub fn new() -> TopologyCache {
        TopologyCache::default()
    }

    /// Whether the nodes give zone ratios (hints can be allocated).
    pub fn has_node_info(&self) -> bool {
        self.ratios.is_some()
    }

    /// Upstream `SetNodes`: ratios of allocatable CPU per zone over Ready,
    /// non-control-plane nodes; insufficient (no ratios) when one of them
    /// lacks a zone or CPU, the total is zero, or there are fewer than 2
    /// zones.
    pub fn set_nodes(&mut self, nodes: &[Arc<Node>]) {
        // Nanocores, summed exactly; upstream rounds the sums (its
        // Quantity.Add, then MilliValue), not each node.
        let mut by_zone: BTreeMap<String, u128> = BTreeMap::new();
        for n in nodes
            .iter()
            .filter(|n| !excluded(n) && n.ready == Some(true))
        {
            let zone = n.metadata.labels.get(ZONE_LABEL).filter(|z| !z.is_empty());
            let cpu = n
                .allocatable_cpu
                .as_deref()
                .and_then(nano_cpu)
                .filter(|c| *c > 0);
            let (Some(zone), Some(cpu)) = (zone, cpu) else {
                log::info!(
                    "topology hints: node {} has no zone or allocatable CPU",
                    n.metadata.name
                );
                self.ratios = None;
                return;
            };
            let sum = by_zone.entry(zone.to_string()).or_default();
            *sum = sum.saturating_add(cpu);
        }
        let total = milli_of_nanos(by_zone.values().fold(0u128, |t, c| t.saturating_add(*c)));
        if total == 0 || by_zone.len() < 2 {
            self.ratios = None;
            return;
        }
        self.ratios = Some(
            by_zone
                .into_iter()
                .map(|(z, c)| (z, milli_of_nanos(c) as f64 / total as f64))
                .collect(),
        );
    }

    /// Upstream `getAllocations` for `n` ready endpoints, or the reason
    /// there are none.
    pub fn allocations(&self, n: usize) -> Result<BTreeMap<String, Allocation>, NoAllocation> {
        let Some(ratios) = &self.ratios else {
            return Err(NoAllocation::InsufficientNodeInfo);
        };
        if ratios.len() < 2 {
            return Err(NoAllocation::OneZoneOnly);
        }
        if ratios.len() > n {
            return Err(NoAllocation::InsufficientEndpoints {
                endpoints: n,
                zones: ratios.len(),
            });
        }
        let mut out = BTreeMap::new();
        let mut min_total = 0;
        for (zone, ratio) in ratios {
            let desired = ratio * n as f64;
            let minimum = (desired / (1.0 + OVERLOAD_THRESHOLD)).ceil() as usize;
            min_total += minimum;
            if min_total > n {
                return Err(NoAllocation::MinExceedsThreshold {
                    endpoints: n,
                    zones: ratios.len(),
                });
            }
            out.insert(
                zone.clone(),
                Allocation {
                    minimum,
                    maximum: 0,
                    desired: desired.max(minimum as f64),
                },
            );
        }
        for a in out.values_mut() {
            a.maximum = a.minimum + n - min_total;
        }
        Ok(out)
    }

    /// Upstream `AddHints`: own-zone hints on every ready endpoint of the
    /// slices to write, unchanged slices whose hints no longer fit moved to
    /// the updates, then the redistribution towards the CPU shares.
    pub fn add_hints(
        &mut self,
        si: &SliceInfo,
    ) -> (Vec<EndpointSlice>, Vec<EndpointSlice>, Vec<EventSpec>) {
        let t = si.address_type.unwrap_or(AddressType::IPv4);
        let total = ready_endpoints(
            si.to_create
                .iter()
                .chain(&si.to_update)
                .chain(si.unchanged.iter().map(|s| &**s)),
        );
        let allocations = match self.allocations(total) {
            Ok(a) => a,
            Err(why) => return self.give_up(si, t, &why.to_string()),
        };
        let mut creates = si.to_create.clone();
        let mut updates = si.to_update.clone();
        let mut allocated = ZoneCounts::new();
        for s in &si.unchanged {
            match hints_by_zone(s, &allocated, &allocations) {
                None => updates.push((**s).clone()),
                Some(h) => h
                    .into_iter()
                    .for_each(|(z, n)| *allocated.entry(z).or_default() += n),
            }
        }
        for s in creates.iter_mut().chain(updates.iter_mut()) {
            for e in &mut s.endpoints {
                if !ready(e) {
                    e.hints = None;
                    continue;
                }
                let Some(zone) = e.zone.clone().filter(|z| !z.is_empty()) else {
                    return self.give_up(si, t, messages::NO_ZONE_SPECIFIED);
                };
                *allocated.entry(zone.to_string()).or_default() += 1;
                e.hints = zone_hint(&zone);
            }
        }
        let (giving, receiving) = giving_and_receiving(&allocations, &allocated);
        let mut writable: Vec<&mut EndpointSlice> =
            creates.iter_mut().chain(updates.iter_mut()).collect();
        for (zone, d) in redistribute(&mut writable, giving, receiving) {
            let n = allocated.entry(zone).or_default();
            *n = (*n as i64 + d).max(0) as usize;
        }
        if allocated.is_empty() {
            return self.give_up(si, t, messages::NO_ALLOCATED_HINTS_FOR_ZONES);
        }
        let was = self.has_populated_hints(&si.service_key);
        let told_disabled = self.disabled.contains(&si.service_key);
        self.set_hints(&si.service_key, t, allocated);
        // Beyond upstream: hints already in the API and nothing to write
        // is not news. Upstream's populated set starts empty, so it
        // announces "enabled" again for every such Service on every start.
        // It is news when we last said "disabled" (topology-mode Auto
        // turned off, the hints kept by trafficDistribution, then on
        // again).
        let shown = creates.is_empty()
            && updates.is_empty()
            && si
                .unchanged
                .iter()
                .any(|s| s.endpoints.iter().any(|e| e.hints.is_some()));
        let mut events = Vec::new();
        if !was && (!shown || told_disabled) {
            events.push(EventSpec::normal(
                "TopologyAwareHintsEnabled",
                with_address_type(messages::ENABLED, t),
            ));
        }
        (creates, updates, events)
    }

    fn give_up(
        &mut self,
        si: &SliceInfo,
        t: AddressType,
        msg: &str,
    ) -> (Vec<EndpointSlice>, Vec<EndpointSlice>, Vec<EventSpec>) {
        // Beyond upstream: hints still allocated for the Service's other
        // address type keep it "populated". Upstream's RemoveHints clears
        // the Service's flag whatever the type, so a dual-stack Service
        // whose IPv6 endpoints cannot get hints announced "enabled" for
        // IPv4 again on every sync.
        let other = self
            .by_service
            .get(&si.service_key)
            .is_some_and(|m| m.keys().any(|k| *k != t));
        self.remove_hints(&si.service_key, t);
        if other {
            self.populated.insert(si.service_key.clone());
        }
        self.disabled.insert(si.service_key.clone());
        let (c, u) = remove_hints_from_slices(si);
        (c, u, vec![disabled(with_address_type(msg, t))])
    }

    /// A "hints disabled" event is being emitted for this Service (its
    /// topology mode is no longer Auto).
    pub fn note_disabled(&mut self, service_key: &str) {
        self.disabled.insert(service_key.to_string());
    }

    /// Forget a deleted Service.
    pub fn delete_service(&mut self, service_key: &str) {
        self.by_service.remove(service_key);
        self.populated.remove(service_key);
        self.disabled.remove(service_key);
    }

    /// Upstream `SetHints`.
    pub fn set_hints(&mut self, service_key: &str, t: AddressType, hints: ZoneCounts) {
        self.by_service
            .entry(service_key.to_string())
            .or_default()
            .insert(t, hints);
        self.populated.insert(service_key.to_string());
        self.disabled.remove(service_key);
    }

    /// Forget the hints of one Service and address type (`RemoveHints`).
    pub fn remove_hints(&mut self, service_key: &str, t: AddressType) {
        if let Some(m) = self.by_service.get_mut(service_key) {
            m.remove(&t);
            if m.is_empty() {
                self.by_service.remove(service_key);
            }
        }
        self.populated.remove(service_key);
    }

    /// Whether hints are cached for this Service (`HasPopulatedHints`).
    pub fn has_populated_hints(&self, service_key: &str) -> bool {
        self.populated.contains(service_key)
    }

    /// Services whose hints leave some zone overloaded after a node change
    /// (`GetOverloadedServices`).
    pub fn get_overloaded_services(&self) -> Vec<String> {
        let empty = BTreeMap::new();
        let ratios = self.ratios.as_ref().unwrap_or(&empty);
        self.by_service
            .iter()
            .filter(|(_, by_type)| by_type.values().any(|h| alloc::overloaded(h, ratios)))
            .map(|(k, _)| k.clone())
            .collect()
    }
}

/// Upstream `RemoveHintsFromSlices`: no hint on the slices to create and
/// update, and unchanged slices that carry hints move to the updates
/// without them. Returns (to_create, to_update).
pub fn remove_hints_from_slices(si: &SliceInfo) -> (Vec<EndpointSlice>, Vec<EndpointSlice>) {
    let clear = |s: &mut EndpointSlice| s.endpoints.iter_mut().for_each(|e| e.hints = None);
    let mut creates = si.to_create.clone();
    let mut updates = si.to_update.clone();
    creates.iter_mut().chain(updates.iter_mut()).for_each(clear);
    for s in si
        .unchanged
        .iter()
        .filter(|s| s.endpoints.iter().any(|e| e.hints.is_some()))
    {
        let mut s = (**s).clone();
        clear(&mut s);
        updates.push(s);
    }
    (creates, updates)
}
