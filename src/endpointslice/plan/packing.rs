//! Upstream `reconcileByPortMapping` (`staging/src/k8s.io/endpointslice/
//! reconciler.go`; docs/behaviour.md#up-b16) — the packing algorithm for the
//! slices of one port map:
//!
//! 1. Keep, in each existing slice, the endpoints still desired (in their
//!    desired form). A slice that lost or changed endpoints is updated, or
//!    deleted when none is left; a slice whose only change is its labels
//!    is updated; every other slice is unchanged.
//! 2. Desired endpoints not placed yet first fill the slices already being
//!    updated, fullest first.
//! 3. What is left goes, when fewer than a full slice, into the unchanged
//!    slice that would end closest to full (only if all fit); otherwise
//!    into new slices.
//!
//! Deterministic where upstream is not: desired endpoints are placed in
//! identity order and ties between slices are broken by name.
//!
//! Pure; never mutates its inputs.

use super::desired::{endpoint_key, equal_beyond_hash, EndpointKey};
use crate::endpointslice::meta::{new_slice, slice_labels};
use endpointd_kube::model::{AddressType, Endpoint, EndpointSlice, EndpointSlicePort, Service};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What one port map needs.
#[derive(Debug, Default)]
pub struct PortMapPlan {
    /// New slices (no name yet).
    pub creates: Vec<EndpointSlice>,
    /// Changed copies of existing slices.
    pub updates: Vec<EndpointSlice>,
    /// Existing slices to delete.
    pub deletes: Vec<EndpointSlice>,
    /// Existing slices left as they are (shared with the cache, not
    /// copied).
    pub unchanged: Vec<Arc<EndpointSlice>>,
    /// Endpoints placed that no existing slice held (metrics).
    pub added: usize,
    /// Endpoints dropped from existing slices (metrics).
    pub removed: usize,
}

/// Upstream `getSliceToFill`: the slice (name, endpoint count) that would
/// be closest to full after taking `n` more endpoints, if any can take them
/// all.
fn slice_to_fill<'a>(
    slices: impl IntoIterator<Item = (&'a str, usize)>,
    n: usize,
    max: usize,
) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for (s_name, len) in slices {
        let Some(diff) = max.checked_sub(n + len) else {
            continue;
        };
        if best.is_none_or(|(d, name)| diff < d || (diff == d && s_name < name)) {
            best = Some((diff, s_name));
        }
    }
    best.map(|(_, name)| name)
}

/// The slices of one port map.
pub fn reconcile_by_port_mapping(
    svc: &Service,
    existing: &[Arc<EndpointSlice>],
    mut desired: BTreeMap<EndpointKey, Endpoint>,
    ports: &[EndpointSlicePort],
    address_type: AddressType,
    max: usize,
) -> PortMapPlan {
    let max = max.max(1);
    let mut plan = PortMapPlan::default();
    let mut to_update: BTreeMap<String, EndpointSlice> = BTreeMap::new();
    let mut unchanged: BTreeMap<&str, Arc<EndpointSlice>> = BTreeMap::new();
    for old in existing {
        let mut kept = Vec::with_capacity(old.endpoints.len());
        let mut changed = false;
        for e in &old.endpoints {
            if let Some(want) = desired.remove(&endpoint_key(e)) {
                changed |= !equal_beyond_hash(&want, e);
                kept.push(want);
            }
        }
        let (labels, labels_changed) = slice_labels(&old.metadata.labels, svc);
        if changed || kept.len() != old.endpoints.len() {
            plan.removed += old.endpoints.len() - kept.len();
            if kept.is_empty() {
                plan.deletes.push((**old).clone());
                continue;
            }
            let mut s = clone_without_endpoints(old);
            s.endpoints = kept;
            s.metadata.labels = labels;
            to_update.insert(s.metadata.name.to_string(), s);
        } else if labels_changed {
            let mut s = (**old).clone();
            s.metadata.labels = labels;
            to_update.insert(s.metadata.name.to_string(), s);
        } else {
            unchanged.insert(&old.metadata.name, Arc::clone(old));
        }
    }
    plan.added = desired.len();
    // 2. Fill the slices being updated, fullest first.
    if !desired.is_empty() && !to_update.is_empty() {
        let mut names: Vec<(usize, String)> = to_update
            .iter()
            .map(|(n, s)| (s.endpoints.len(), n.clone()))
            .collect();
        names.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        for (_, name) in names {
            if let Some(s) = to_update.get_mut(&name) {
                fill(s, &mut desired, max);
            }
        }
    }
    // 3. The rest: an unchanged slice that takes it all, or new slices.
    while !desired.is_empty() {
        let target = match desired.len() < max && !unchanged.is_empty() {
            true => slice_to_fill(
                unchanged.iter().map(|(n, s)| (*n, s.endpoints.len())),
                desired.len(),
                max,
            ),
            false => None,
        };
        match target.and_then(|n| unchanged.remove(n)) {
            Some(s) => {
                let mut s = Arc::unwrap_or_clone(s);
                fill(&mut s, &mut desired, max);
                to_update.insert(s.metadata.name.to_string(), s);
            }
            None => {
                let mut s = new_slice(svc, ports, address_type);
                fill(&mut s, &mut desired, max);
                plan.creates.push(s);
            }
        }
    }
    plan.updates = to_update.into_values().collect();
    plan.unchanged = unchanged.into_values().collect();
    plan
}

/// A copy of `s` with no endpoints (an update replaces them anyway;
/// cloning them first would only allocate what is dropped at once).
fn clone_without_endpoints(s: &EndpointSlice) -> EndpointSlice {
    EndpointSlice {
        api_version: s.api_version,
        kind: s.kind,
        metadata: s.metadata.clone(),
        address_type: s.address_type,
        endpoints: Vec::new(),
        ports: s.ports.clone(),
    }
}

fn fill(s: &mut EndpointSlice, desired: &mut BTreeMap<EndpointKey, Endpoint>, max: usize) {
    while s.endpoints.len() < max {
        let Some((_, e)) = desired.pop_first() else {
            return;
        };
        s.endpoints.push(e);
    }
}
