//! The trimmed Node projection: name, labels (zone and control-plane role),
//! the Ready condition and allocatable CPU, which is all the EndpointSlice
//! controller and its topology cache read (docs/behaviour.md#up-b12, #up-b13, #up-b24).
//!
//! Must never keep node status beyond those fields (images and volumes in
//! node status are large).

use super::meta::{opt_boxed, TrimmedMeta};
use super::pod::null_default;
use super::{impl_object, Labels};
use serde::Deserialize;

/// The zone label (`topology.kubernetes.io/zone`).
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// A cached Node.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(from = "NodeWire")]
pub struct Node {
    /// Trimmed metadata.
    pub metadata: TrimmedMeta,
    /// The `Ready` condition's status is `True` (`None`: no Ready condition).
    pub ready: Option<bool>,
    /// `status.allocatable.cpu` as the API quantity string (e.g. `"4"`,
    /// `"3500m"`).
    pub allocatable_cpu: Option<Box<str>>,
}

impl_object!(Node);

impl Node {
    /// The zone label, if set and non-empty.
    pub fn zone(&self) -> Option<&str> {
        self.metadata
            .labels
            .get(ZONE_LABEL)
            .filter(|z| !z.is_empty())
    }
    /// Node labels.
    pub fn node_labels(&self) -> &Labels {
        &self.metadata.labels
    }
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct NodeWire {
    #[serde(deserialize_with = "null_default")]
    metadata: TrimmedMeta,
    #[serde(deserialize_with = "null_default")]
    status: StatusWire,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct StatusWire {
    #[serde(deserialize_with = "null_default")]
    allocatable: AllocatableWire,
    #[serde(deserialize_with = "null_default")]
    conditions: Vec<ConditionWire>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct AllocatableWire {
    #[serde(deserialize_with = "opt_boxed")]
    cpu: Option<Box<str>>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct ConditionWire {
    #[serde(rename = "type")]
    type_: String,
    status: String,
}

impl From<NodeWire> for Node {
    fn from(w: NodeWire) -> Node {
        Node {
            metadata: w.metadata,
            ready: w
                .status
                .conditions
                .iter()
                .find(|c| c.type_ == "Ready")
                .map(|c| c.status == "True"),
            allocatable_cpu: w.status.allocatable.cpu,
        }
    }
}
