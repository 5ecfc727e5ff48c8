//! Slice metadata (upstream `setEndpointSliceLabels`, `newEndpointSlice`,
//! `getEndpointSlicePrefix`, `ownedBy` and the placeholder comparison in
//! `staging/src/k8s.io/endpointslice/utils.go` and `reconciler.go`;
//! docs/behaviour.md#up-b10, #up-b18, #up-b21, #up-b22).
//!
//! Pure; must never read a cache.

use crate::runtime::labels::{
    HEADLESS_LABEL, SLICE_MANAGED_BY, SLICE_MANAGED_BY_LABEL, SLICE_RESERVED_LABELS,
};
use endpointd_kube::informer::SERVICE_NAME_LABEL;
use endpointd_kube::model::{
    AddressType, EndpointSlice, EndpointSlicePort, Labels, ObjectMeta, OwnerReference, Service,
};

fn unreserved(l: &Labels) -> Labels {
    l.iter()
        .filter(|(k, _)| !SLICE_RESERVED_LABELS.contains(k))
        .collect()
}

/// Upstream `setEndpointSliceLabels`: the labels the slice should carry,
/// and whether its non-reserved labels differ from the Service's.
pub fn slice_labels(slice_labels: &Labels, svc: &Service) -> (Labels, bool) {
    let mut want = unreserved(&svc.metadata.labels);
    let changed = unreserved(slice_labels) != want;
    if svc.is_ip_set() {
        want.remove(HEADLESS_LABEL);
    } else {
        want.insert(HEADLESS_LABEL, "");
    }
    want.insert(SERVICE_NAME_LABEL, &svc.metadata.name);
    want.insert(SLICE_MANAGED_BY_LABEL, SLICE_MANAGED_BY);
    (want, changed)
}

/// Upstream `ownedBy` (docs/behaviour.md#up-b10): a `v1` `Service` ownerReference with the
/// Service's UID.
pub fn owned_by(slice: &EndpointSlice, svc: &Service) -> bool {
    slice
        .metadata
        .owner_references
        .iter()
        .any(|o| svc.metadata.uid == o.uid && o.kind == "Service" && o.api_version == "v1")
}

/// Upstream `getEndpointSlicePrefix`: `<svc>-` unless that is not a valid
/// DNS-subdomain prefix (too long), then `<svc>`.
pub fn generate_name(svc: &Service) -> String {
    let name = &*svc.metadata.name;
    match name.len() < 253 {
        true => format!("{name}-"),
        false => name.to_string(),
    }
}

/// Upstream `newEndpointSlice` (docs/behaviour.md#up-b21): generateName, namespace, the
/// controller ownerReference, labels, address type, ports and no endpoints.
pub fn new_slice(
    svc: &Service,
    ports: &[EndpointSlicePort],
    address_type: AddressType,
) -> EndpointSlice {
    let mut s = EndpointSlice::new(address_type);
    s.metadata = ObjectMeta {
        generate_name: generate_name(svc).into(),
        namespace: (&svc.metadata.namespace).into(),
        owner_references: Box::new([OwnerReference {
            api_version: "v1".into(),
            kind: "Service".into(),
            name: svc.metadata.name.clone(),
            uid: svc.metadata.uid.clone(),
            controller: true,
            block_owner_deletion: true,
        }]),
        ..ObjectMeta::default()
    };
    s.metadata.labels = slice_labels(&Labels::new(), svc).0;
    s.ports = ports.to_vec();
    s
}

/// Upstream `placeholderSliceCompare` (docs/behaviour.md#up-b18): namespace and labels of the
/// metadata (name, annotations, timestamps ignored), owner references,
/// and the address type, ports and endpoints. Labels compare as upstream's
/// map look-ups do: a label with an empty value equals no label (a Service
/// gaining or losing `flag: ""` does not rewrite its placeholder).
///
/// Beyond upstream: owner references are compared. Upstream's ObjectMeta
/// function never reaches them, so a Service deleted and created again
/// before the garbage collector removed its placeholder keeps the old
/// one, owned by the old uid; the collector then deletes it and the new
/// Service has no slice until its next event. Here the placeholder is
/// replaced (one create, one delete).
pub fn placeholder_equal(a: &EndpointSlice, b: &EndpointSlice) -> bool {
    let within = |x: &Labels, y: &Labels| x.iter().all(|(k, v)| y.get(k).unwrap_or("") == v);
    a.metadata.namespace == b.metadata.namespace
        && within(&a.metadata.labels, &b.metadata.labels)
        && within(&b.metadata.labels, &a.metadata.labels)
        && a.metadata.owner_references == b.metadata.owner_references
        && a.address_type == b.address_type
        && a.ports == b.ports
        && a.endpoints == b.endpoints
}
