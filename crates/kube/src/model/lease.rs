//! coordination.k8s.io/v1 `Lease`, read and written by leader election.
//! `acquireTime`/`renewTime` are MicroTime (6 fractional digits, `Z`); every
//! spec field is optional and omitted when unset, as upstream.
//!
//! Must never interpret the timestamps (leader election judges expiry by
//! local observation time, not by these values).

use super::pod::null_default;
use super::{impl_object, MicroTime, ObjectMeta};
use serde::{Deserialize, Serialize};

/// `coordination/v1.Lease`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// Always `coordination.k8s.io/v1`.
    #[serde(default = "Lease::api_version_default")]
    pub api_version: String,
    /// Always `Lease`.
    #[serde(default = "Lease::kind_default")]
    pub kind: String,
    /// Metadata.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ObjectMeta,
    /// `spec` (a struct upstream: always written).
    #[serde(default, deserialize_with = "null_default")]
    pub spec: LeaseSpec,
}

impl Lease {
    fn api_version_default() -> String {
        "coordination.k8s.io/v1".into()
    }
    fn kind_default() -> String {
        "Lease".into()
    }
}

impl Default for Lease {
    fn default() -> Lease {
        Lease {
            api_version: Lease::api_version_default(),
            kind: Lease::kind_default(),
            metadata: ObjectMeta::default(),
            spec: LeaseSpec::default(),
        }
    }
}

impl_object!(Lease);

/// `coordination/v1.LeaseSpec`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LeaseSpec {
    /// `holderIdentity`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder_identity: Option<String>,
    /// `leaseDurationSeconds`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_duration_seconds: Option<i32>,
    /// `acquireTime`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acquire_time: Option<MicroTime>,
    /// `renewTime`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renew_time: Option<MicroTime>,
    /// `leaseTransitions`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_transitions: Option<i32>,
    /// `strategy` (coordinated leader election; not set by endpointd).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// `preferredHolder` (coordinated leader election; not set by endpointd).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preferred_holder: Option<String>,
}
