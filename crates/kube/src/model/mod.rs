//! The Kubernetes object model endpointd uses: trimmed projections of what it
//! caches (Pod, Service, Node, Namespace) and full-enough types for what it
//! writes (Endpoints, EndpointSlice, Lease, events.k8s.io Event).
//!
//! Owns: serde mapping of API JSON to these types, the [`Object`] trait
//! (name, namespace, resourceVersion, uid, labels, cache key) and the small
//! value types they share ([`Labels`], [`Time`], [`MicroTime`], [`Uid`]).
//!
//! Must never: do I/O, read the clock, or reject unknown fields. Cached types
//! drop every field the controllers do not read while deserialising (so a
//! cached Pod stays well under 1 KiB); written types keep unknown fields in
//! `extra` maps so that a read-modify-PUT round trip loses nothing.
//!
//! Memory (measured by `tests/kube_client_memory.rs` with a counting
//! allocator): a typical pod (5 labels, 2 ports, full JSON with
//! managedFields) costs ~510 bytes as a [`Pod`] (264 inline + heap in three
//! allocations: labels, IPs, ports; short strings and canonical UIDs are
//! inline and namespaces and node names interned) versus ~28 KB as a
//! `serde_json::Value`. [`DynamicObject`] keeps everything and
//! is for tests and tools only.

mod dynamic;
mod endpoints;
mod endpointslice;
mod event;
mod exact_vec;
mod intern;
mod json_out;
mod labels;
mod lease;
mod meta;
mod namespace;
mod node;
mod pod;
mod service;
mod time;
mod uid;

pub use dynamic::DynamicObject;
pub use endpoints::{
    EndpointAddress, EndpointPort, EndpointSubset, Endpoints, EndpointsApiVersion, EndpointsKind,
};
pub use endpointslice::{
    AddressType, Addresses, Endpoint, EndpointConditions, EndpointHints, EndpointSlice,
    EndpointSlicePort, ForNode, ForZone, SliceApiVersion, SliceKind,
};
pub use event::{Event, EventSeries};
pub use intern::ThinSlice;
pub use intern::{intern, IStr};
pub use labels::Labels;
pub use lease::{Lease, LeaseSpec};
pub use meta::{
    MetaOnly, ObjectMeta, ObjectReference, OwnerReference, RefMore, TrimmedMeta, UidText,
    KEPT_ANNOTATIONS,
};
pub use namespace::Namespace;
pub use node::{Node, ZONE_LABEL};
pub use pod::{ContainerPort, Pod, PodHost, PodIps, PodMeta, PodPhase, ReadyCondition};
pub use service::{IntOrString, Protocol, Service, ServicePort};
pub use time::{MicroTime, OptTime, Time};
pub use uid::{Uid, UidStr};

/// What every API object we handle exposes, for caches, indexes and keys.
pub trait Object:
    serde::de::DeserializeOwned + Clone + Send + Sync + std::fmt::Debug + 'static
{
    /// `metadata.name` ("" if unset, e.g. before a generateName create).
    fn name(&self) -> &str;
    /// `metadata.namespace`; `None` for cluster-scoped objects (or unset).
    fn namespace(&self) -> Option<&str>;
    /// `metadata.resourceVersion` ("" if unset).
    fn resource_version(&self) -> &str;
    /// `metadata.uid` ("" if unset; formatted on the stack when the
    /// object keeps it as a [`Uid`]).
    fn uid(&self) -> UidStr<'_>;
    /// `metadata.labels`.
    fn labels(&self) -> &Labels;
    /// An equality label selector the object carries (a Service's
    /// `spec.selector`); `None` for kinds without one.
    fn selector(&self) -> Option<&Labels> {
        None
    }
    /// Append this object as compact JSON to `out` (exactly serde_json's
    /// bytes) when the kind has a hand-written writer, and say so; `false`
    /// (the default): nothing written, serialise with serde. Only the kinds
    /// written on every change have one (see `json_out`).
    fn write_json(&self, _out: &mut Vec<u8>) -> bool {
        false
    }
    /// The cache key: `"ns/name"`, or `"name"` for cluster-scoped objects
    /// (client-go `MetaNamespaceKeyFunc`).
    fn key(&self) -> String {
        match self.namespace() {
            Some(ns) if !ns.is_empty() => format!("{ns}/{}", self.name()),
            _ => self.name().to_string(),
        }
    }
}

/// Implement [`Object`] for a type whose metadata lives in `self.metadata`
/// (a [`TrimmedMeta`], [`PodMeta`] or [`ObjectMeta`]; all have the same
/// accessors).
macro_rules! impl_object {
    ($t:ty) => {
        $crate::model::impl_object!($t, {});
    };
    ($t:ty, { $($extra:tt)* }) => {
        impl $crate::model::Object for $t {
            fn name(&self) -> &str {
                self.metadata.name()
            }
            fn namespace(&self) -> Option<&str> {
                self.metadata.namespace()
            }
            fn resource_version(&self) -> &str {
                self.metadata.resource_version()
            }
            fn uid(&self) -> $crate::model::UidStr<'_> {
                self.metadata.uid()
            }
            fn labels(&self) -> &$crate::model::Labels {
                &self.metadata.labels
            }
            $($extra)*
        }
    };
}
pub(crate) use impl_object;

#[cfg(test)]
mod tests;
