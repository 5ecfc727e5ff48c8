//! core/v1 `Endpoints`, written by the Endpoints controller and cached by its
//! informer. Field names and omission rules follow `k8s.io/api/core/v1`
//! (`omitempty` → skipped when empty).
//!
//! Must never drop metadata it does not model (see [`ObjectMeta::extra`]).

use super::exact_vec::{null_default_vec, scratch};
use super::pod::null_default;
use super::{impl_object, IStr, ObjectMeta, ObjectReference, Protocol};
use compact_str::CompactString;
use serde::{Deserialize, Serialize};

/// `v1.Endpoints`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoints {
    /// Always `v1` (not stored).
    #[serde(default)]
    pub api_version: EndpointsApiVersion,
    /// Always `Endpoints` (not stored).
    #[serde(default)]
    pub kind: EndpointsKind,
    /// Metadata.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ObjectMeta,
    /// `subsets`.
    #[serde(
        default,
        deserialize_with = "null_default_vec",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub subsets: Vec<EndpointSubset>,
}

super::meta::fixed_str!(
    /// An Endpoints' `apiVersion`, `v1`.
    EndpointsApiVersion = "v1"
);
super::meta::fixed_str!(
    /// An Endpoints' `kind`, `Endpoints`.
    EndpointsKind = "Endpoints"
);

impl Default for Endpoints {
    fn default() -> Endpoints {
        Endpoints {
            api_version: EndpointsApiVersion,
            kind: EndpointsKind,
            metadata: ObjectMeta::default(),
            subsets: Vec::new(),
        }
    }
}

impl_object!(Endpoints, {
    fn write_json(&self, out: &mut Vec<u8>) -> bool {
        super::json_out::endpoints(out, self);
        true
    }
});

scratch!(EndpointSubset, EndpointAddress, EndpointPort);

/// `v1.EndpointSubset`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EndpointSubset {
    /// Ready addresses.
    #[serde(
        deserialize_with = "null_default_vec",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub addresses: Vec<EndpointAddress>,
    /// Not-ready addresses.
    #[serde(
        deserialize_with = "null_default_vec",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub not_ready_addresses: Vec<EndpointAddress>,
    /// Ports.
    #[serde(
        deserialize_with = "null_default_vec",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub ports: Vec<EndpointPort>,
}

/// `v1.EndpointAddress`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EndpointAddress {
    /// The IP.
    pub ip: CompactString,
    /// `hostname` (omitted when empty; rare, interned: 8 bytes, not 24).
    #[serde(skip_serializing_if = "str::is_empty")]
    pub hostname: IStr,
    /// `nodeName` (a pointer upstream: `Some("")` is written as `""`;
    /// interned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_name: Option<IStr>,
    /// `targetRef`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_ref: Option<ObjectReference>,
}

/// `v1.EndpointPort` (core; discovery has its own [`super::EndpointSlicePort`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EndpointPort {
    /// `name` (omitted when empty).
    #[serde(skip_serializing_if = "CompactString::is_empty")]
    pub name: CompactString,
    /// `port`.
    pub port: i32,
    /// `protocol`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// `appProtocol`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_protocol: Option<CompactString>,
}
