//! The topology cache behind `service.kubernetes.io/topology-mode: Auto`
//! hints (upstream `staging/src/k8s.io/endpointslice/topologycache/`).
//!
//! INTERFACE STUB: the signatures below are the contract the reconciler
//! codes against; the implementation replaces the bodies.

use crate::controller::events::EventSpec;
use crate::model::{AddressType, EndpointSlice, Node};
use std::sync::Arc;

/// The slices of one Service and address type after packing, as the
/// reconciler hands them to hint assignment (upstream `SliceInfo`).
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
    /// Slices left as they are.
    pub unchanged: Vec<EndpointSlice>,
}

/// Zone CPU ratios from the nodes, and the hints allocated per Service.
#[derive(Debug, Default)]
pub struct TopologyCache {}

impl TopologyCache {
    /// An empty cache (insufficient node information until `set_nodes`).
    pub fn new() -> TopologyCache {
        TopologyCache::default()
    }

    /// Recompute the zone ratios from every node (upstream `SetNodes`).
    pub fn set_nodes(&mut self, _nodes: &[Arc<Node>]) {}

    /// Assign zone hints to the ready endpoints of `si` (upstream
    /// `AddHints`): the slices to create and to update (unchanged slices
    /// that need new hints move to updates), and the events to emit.
    pub fn add_hints(
        &mut self,
        si: &SliceInfo,
    ) -> (Vec<EndpointSlice>, Vec<EndpointSlice>, Vec<EventSpec>) {
        (si.to_create.clone(), si.to_update.clone(), Vec::new())
    }

    /// Forget the hints of one Service and address type (`RemoveHints`).
    pub fn remove_hints(&mut self, _service_key: &str, _address_type: AddressType) {}

    /// Whether hints are cached for this Service (`HasPopulatedHints`).
    pub fn has_populated_hints(&self, _service_key: &str) -> bool {
        false
    }

    /// Services whose hints leave some zone overloaded after a node change
    /// (`GetOverloadedServices`).
    pub fn get_overloaded_services(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Remove every hint from the slices to create and update, and move
/// unchanged slices that carry hints into updates (upstream
/// `RemoveHintsFromSlices`): returns (to_create, to_update).
pub fn remove_hints_from_slices(si: &SliceInfo) -> (Vec<EndpointSlice>, Vec<EndpointSlice>) {
    (si.to_create.clone(), si.to_update.clone())
}
