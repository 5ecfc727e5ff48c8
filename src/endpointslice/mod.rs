//! The EndpointSlice controller (kube-controller-manager's `endpointslice`
//! controller, `pkg/controller/endpointslice/` and
//! `staging/src/k8s.io/endpointslice/`): keeps the discovery.k8s.io/v1
//! EndpointSlices of every Service with a selector.
//!
//! - [`plan`]: the pure plan (creates, updates, deletes as data;
//!   `desired`, `packing`, `trafficdist` and the `topology-mode: Auto`
//!   hint allocations in `topology` inside); [`meta`]: slice metadata;
//! - [`tracker`]: generations of our own writes (stale-cache guard);
//! - [`writer`]: the only writer; [`controller`]: handlers and sync;
//! - [`metrics`]: KCM's `endpoint_slice_controller_*` families.

pub mod controller;
pub mod meta;
pub mod metrics;
pub mod plan;
pub mod tracker;
pub mod writer;

#[cfg(test)]
mod tests;

pub use metrics::SliceMetrics;
pub use plan::{reconcile, ReconcileInput, SlicePlan};
pub use tracker::EndpointSliceTracker;
pub use writer::{finalize, FinalizeOutcome, SliceWriter};

use crate::runtime::labels::{SLICE_MANAGED_BY, SLICE_MANAGED_BY_LABEL};
use endpointd_kube::informer::SERVICE_NAME_LABEL;
use endpointd_kube::model::EndpointSlice;

/// Upstream `ManagedByController`.
pub fn managed_by_us(s: &EndpointSlice) -> bool {
    s.metadata.labels.get(SLICE_MANAGED_BY_LABEL) == Some(SLICE_MANAGED_BY)
}

/// Upstream `ServiceControllerKey`: `ns/<service-name label>`, or `None`
/// when the label is missing or empty.
pub fn service_key(s: &EndpointSlice) -> Option<String> {
    let svc = s
        .metadata
        .labels
        .get(SERVICE_NAME_LABEL)
        .filter(|v| !v.is_empty())?;
    Some(format!("{}/{svc}", s.metadata.namespace))
}

/// Which hint mechanism a sync used (the `topology` metric label).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TopologyMode {
    /// No topology-mode hints.
    #[default]
    Disabled,
    /// `service.kubernetes.io/topology-mode: Auto`.
    Auto,
}

impl TopologyMode {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            TopologyMode::Disabled => "Disabled",
            TopologyMode::Auto => "Auto",
        }
    }
}
