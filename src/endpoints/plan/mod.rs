//! The Endpoints plan (upstream `syncService` after the pod loop;
//! docs/behaviour.md#up-a16–#up-a20): from the Service, its pods, the cached
//! Endpoints and the trigger time, the object to create, the object to
//! update, or nothing.
//!
//! Beyond upstream: an over-capacity Endpoints whose truncated content is
//! already what is stored is left alone. Upstream compares the
//! *untruncated* subsets with the stored (truncated) ones, so it rewrites
//! every over-capacity Endpoints on every sync of its Service. And a
//! Service that carries the `service.kubernetes.io/headless` label itself
//! is compared without it too: upstream compares the stored labels without
//! it to the Service's labels with it, never equal, so it rewrites that
//! Endpoints (with the same content) on every sync. The same holds for a
//! Service labelled `endpoints.kubernetes.io/managed-by`: the controller's
//! value is written over it and the Service's value is not compared.
//!
//! Every object written carries `endpoints.kubernetes.io/managed-by:
//! endpoint-controller`, as kube-controller-manager's since 1.33 (its
//! PR 130564): a stored object without it is rewritten once, and objects
//! kube-controller-manager wrote are taken over without a write.
//!
//! Pure; must never read a cache, the clock or the network.

pub mod desired;
pub mod repack;
pub mod truncate;

use crate::runtime::labels::{
    ENDPOINTS_MANAGED_BY, ENDPOINTS_MANAGED_BY_LABEL, HEADLESS_LABEL, OVER_CAPACITY_ANNOTATION,
    TRIGGER_TIME_ANNOTATION,
};
use desired::unpack;
use endpointd_kube::model::{
    EndpointAddress, EndpointSubset, Endpoints, Labels, ObjectMeta, ObjectReference, Pod, Service,
    Time,
};
use repack::repack;
use std::sync::Arc;
use truncate::truncate;

/// What a sync needs to decide.
#[derive(Clone, Copy, Debug)]
pub struct EndpointsInput<'a> {
    /// A managed Service (selector set, not ExternalName).
    pub service: &'a Service,
    /// The pods of its namespace its selector matches.
    pub pods: &'a [Arc<Pod>],
    /// The cached Endpoints of the same name, if any.
    pub current: Option<&'a Endpoints>,
    /// From the trigger-time tracker; `None` is the zero time.
    pub trigger_time: Option<Time>,
}

/// What to write.
#[derive(Clone, Debug, PartialEq)]
pub enum EndpointsPlan {
    /// The stored object is already right.
    Unchanged,
    /// POST this object.
    Create(Endpoints),
    /// PUT this object (it carries the cached resourceVersion).
    Update(Endpoints),
}

/// The subsets the Service should have: unpacked, repacked and truncated;
/// true if truncated.
pub fn desired_subsets(svc: &Service, pods: &[Arc<Pod>]) -> (Vec<EndpointSubset>, bool) {
    let mut subsets = repack(unpack(svc, pods).triples());
    let truncated = truncate(&mut subsets);
    (subsets, truncated)
}

/// Upstream `endpointSubsetsEqualIgnoreResourceVersion`.
pub fn subsets_equal_ignoring_rv(a: &[EndpointSubset], b: &[EndpointSubset]) -> bool {
    fn addrs_eq(a: &[EndpointAddress], b: &[EndpointAddress]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| {
                x.ip == y.ip
                    && x.hostname == y.hostname
                    && x.node_name == y.node_name
                    && ObjectReference::opt_eq_ignoring_resource_version(
                        x.target_ref.as_ref(),
                        y.target_ref.as_ref(),
                    )
            })
    }
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.ports == y.ports
                && addrs_eq(&x.addresses, &y.addresses)
                && addrs_eq(&x.not_ready_addresses, &y.not_ready_addresses)
        })
}

/// Whether the stored labels are what a write would set, but for the
/// headless label (docs/behaviour.md#up-a18): ours says `managed-by: endpoint-controller`, and
/// every other label is the Service's, none missing. The headless and
/// managed-by labels are set by the controller, so the Service's own
/// values of those two keys are not compared. Allocates nothing.
fn labels_right(stored: &Labels, svc: &Labels) -> bool {
    let ours = |k: &str| k == HEADLESS_LABEL || k == ENDPOINTS_MANAGED_BY_LABEL;
    let mut others = 0;
    stored.get(ENDPOINTS_MANAGED_BY_LABEL) == Some(ENDPOINTS_MANAGED_BY)
        && stored.iter().filter(|(k, _)| !ours(k)).all(|(k, v)| {
            others += 1;
            svc.get(k) == Some(v)
        })
        && svc.iter().filter(|(k, _)| !ours(k)).count() == others
}

/// docs/behaviour.md#up-a18 with our over-capacity and label improvements: the stored object
/// needs no write.
fn unchanged(cur: &Endpoints, svc: &Service, subsets: &[EndpointSubset], truncated: bool) -> bool {
    let marked = cur
        .metadata
        .annotations
        .contains_key(OVER_CAPACITY_ANNOTATION);
    labels_right(&cur.metadata.labels, &svc.metadata.labels)
        && marked == truncated
        && subsets_equal_ignoring_rv(&cur.subsets, subsets)
}

/// The plan for one sync (docs/behaviour.md#up-a18, #up-a19).
pub fn plan(input: &EndpointsInput<'_>) -> EndpointsPlan {
    let svc = input.service;
    let (subsets, truncated) = desired_subsets(svc, input.pods);
    let creating = input
        .current
        .is_none_or(|c| c.metadata.resource_version.is_empty());
    if let Some(cur) = input.current.filter(|_| !creating) {
        if unchanged(cur, svc, &subsets, truncated) {
            return EndpointsPlan::Unchanged;
        }
    }
    let mut obj = match input.current {
        // Everything but the subsets, which are replaced below.
        Some(cur) => Endpoints {
            api_version: cur.api_version,
            kind: cur.kind,
            metadata: cur.metadata.clone(),
            subsets: Vec::new(),
        },
        None => Endpoints {
            metadata: ObjectMeta {
                name: svc.metadata.name.clone(),
                namespace: (&svc.metadata.namespace).into(),
                ..ObjectMeta::default()
            },
            ..Endpoints::default()
        },
    };
    obj.subsets = subsets;
    obj.metadata.labels = svc.metadata.labels.clone();
    let ann = &mut obj.metadata.annotations;
    match input.trigger_time {
        Some(t) => ann.insert(TRIGGER_TIME_ANNOTATION, &t.to_string()),
        None => drop(ann.remove(TRIGGER_TIME_ANNOTATION)),
    }
    match truncated {
        true => ann.insert(OVER_CAPACITY_ANNOTATION, "truncated"),
        false => drop(ann.remove(OVER_CAPACITY_ANNOTATION)),
    }
    if svc.is_ip_set() {
        obj.metadata.labels.remove(HEADLESS_LABEL);
    } else {
        obj.metadata.labels.insert(HEADLESS_LABEL, "");
    }
    obj.metadata
        .labels
        .insert(ENDPOINTS_MANAGED_BY_LABEL, ENDPOINTS_MANAGED_BY);
    match creating {
        true => EndpointsPlan::Create(obj),
        false => EndpointsPlan::Update(obj),
    }
}
