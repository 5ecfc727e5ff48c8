//! discovery.k8s.io/v1 `EndpointSlice`, written by the EndpointSlice
//! controller and cached by its informer. Field names and omission rules
//! follow `k8s.io/api/discovery/v1`: `endpoints` and `ports` have no
//! `omitempty` upstream and are always written (as `[]` when empty); the
//! three conditions are pointers and omitted only when `None`.
//!
//! Must never drop metadata it does not model (see [`ObjectMeta::extra`]).

use super::exact_vec::{null_default_seq, null_default_vec, scratch, take_exact};
use super::pod::null_default;
use super::{impl_object, IStr, ObjectMeta, ObjectReference, Protocol};
use compact_str::CompactString;
use serde::{Deserialize, Serialize};

/// `discovery/v1.EndpointSlice`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSlice {
    /// Always `discovery.k8s.io/v1` (not stored).
    #[serde(default)]
    pub api_version: SliceApiVersion,
    /// Always `EndpointSlice` (not stored).
    #[serde(default)]
    pub kind: SliceKind,
    /// Metadata.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ObjectMeta,
    /// `addressType`.
    pub address_type: AddressType,
    /// `endpoints` (always written).
    #[serde(default, deserialize_with = "null_default_vec")]
    pub endpoints: Vec<Endpoint>,
    /// `ports` (always written).
    #[serde(default, deserialize_with = "null_default_vec")]
    pub ports: Vec<EndpointSlicePort>,
}

super::meta::fixed_str!(
    /// An EndpointSlice's `apiVersion`, `discovery.k8s.io/v1`.
    SliceApiVersion = "discovery.k8s.io/v1"
);
super::meta::fixed_str!(
    /// An EndpointSlice's `kind`, `EndpointSlice`.
    SliceKind = "EndpointSlice"
);

impl EndpointSlice {
    /// An empty slice of the given address type.
    pub fn new(address_type: AddressType) -> EndpointSlice {
        EndpointSlice {
            api_version: SliceApiVersion,
            kind: SliceKind,
            metadata: ObjectMeta::default(),
            address_type,
            endpoints: Vec::new(),
            ports: Vec::new(),
        }
    }
}

impl_object!(EndpointSlice, {
    fn write_json(&self, out: &mut Vec<u8>) -> bool {
        super::json_out::endpoint_slice(out, self);
        true
    }
});

/// `addressType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum AddressType {
    /// `IPv4`.
    IPv4,
    /// `IPv6`.
    IPv6,
    /// `FQDN` (never written by the controller).
    FQDN,
    /// The deprecated `IP` type of early v1beta1 slices: only ever
    /// deleted (docs/behaviour.md#up-b9).
    IP,
    /// Any other value, so that one odd slice cannot break a LIST; such
    /// slices are never written, only deleted when they are ours.
    #[serde(other)]
    Unknown,
}

/// `discovery/v1.Endpoint`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Endpoint {
    /// `addresses` (the usual single address inline).
    pub addresses: Addresses,
    /// `conditions` (a struct upstream: always written, possibly `{}`).
    #[serde(deserialize_with = "null_default")]
    pub conditions: EndpointConditions,
    /// `hostname` (rare; interned, so that `None` costs 8 bytes, not 24).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<IStr>,
    /// `targetRef`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_ref: Option<ObjectReference>,
    /// `nodeName` (interned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_name: Option<IStr>,
    /// `zone` (interned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<IStr>,
    /// `hints` (boxed: off by default, so usually `None`, and 8 bytes
    /// instead of 48 in every cached endpoint).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hints: Option<Box<EndpointHints>>,
}

/// An endpoint's `addresses`: almost always exactly one, kept inline (24
/// bytes, no allocation); none or several in one boxed slice. Reads as a
/// `[CompactString]`; serializes as the JSON array it came from.
#[derive(Clone, PartialEq, Eq)]
pub struct Addresses(AddrRepr);

#[derive(Clone, PartialEq, Eq)]
enum AddrRepr {
    One(CompactString),
    /// None or at least two (never exactly one, so that equal lists have
    /// equal representations).
    Many(Box<[CompactString]>),
}

impl Addresses {
    /// The addresses as a slice.
    pub fn as_slice(&self) -> &[CompactString] {
        match &self.0 {
            AddrRepr::One(a) => std::slice::from_ref(a),
            AddrRepr::Many(m) => m,
        }
    }
}

impl Default for Addresses {
    fn default() -> Addresses {
        Addresses(AddrRepr::Many(Box::default()))
    }
}

impl std::ops::Deref for Addresses {
    type Target = [CompactString];
    fn deref(&self) -> &[CompactString] {
        self.as_slice()
    }
}

impl Addresses {
    /// The addresses taken out of `buf` (left empty): the usual single one
    /// inline, without an allocation; none or several in one of their
    /// exact size.
    fn take_from(buf: &mut Vec<CompactString>) -> Addresses {
        match buf.len() {
            1 => Addresses(AddrRepr::One(buf.pop().unwrap_or_default())),
            _ => Addresses(AddrRepr::Many(take_exact(buf).into_boxed_slice())),
        }
    }
}

impl From<Vec<CompactString>> for Addresses {
    fn from(mut v: Vec<CompactString>) -> Addresses {
        Addresses::take_from(&mut v)
    }
}

impl<T> PartialEq<Vec<T>> for Addresses
where
    CompactString: PartialEq<T>,
{
    fn eq(&self, other: &Vec<T>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl std::fmt::Debug for Addresses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl Serialize for Addresses {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Addresses {
    /// An array of strings; null as empty.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Addresses, D::Error> {
        null_default_seq(d, Addresses::take_from)
    }
}

scratch!(Endpoint, EndpointSlicePort, CompactString);

/// `discovery/v1.EndpointConditions` (pointers upstream).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct EndpointConditions {
    /// `ready`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    /// `serving`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serving: Option<bool>,
    /// `terminating`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminating: Option<bool>,
}

/// `discovery/v1.EndpointHints`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EndpointHints {
    /// `forZones`.
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub for_zones: Vec<ForZone>,
    /// `forNodes`.
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub for_nodes: Vec<ForNode>,
}

/// `discovery/v1.ForZone`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ForZone {
    /// Zone name.
    pub name: CompactString,
}

/// `discovery/v1.ForNode`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ForNode {
    /// Node name.
    pub name: CompactString,
}

/// `discovery/v1.EndpointPort` (all pointers upstream).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EndpointSlicePort {
    /// `name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<CompactString>,
    /// `protocol`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// `port`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    /// `appProtocol`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_protocol: Option<CompactString>,
}
