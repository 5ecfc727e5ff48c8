//! `DynamicObject`: any API object as typed metadata plus raw JSON for the
//! rest, for tests, tools and resources without a model type (e.g. to
//! create full Pods in kube-sim through the client).
//!
//! Must never be used for cached objects: it keeps every field.

use super::pod::null_default;
use super::{impl_object, ObjectMeta};
use serde::{Deserialize, Serialize};

/// Any object: `metadata` typed, every other top-level field verbatim.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DynamicObject {
    /// Metadata.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ObjectMeta,
    /// `apiVersion`, `kind`, `spec`, `status`, … as sent or received.
    #[serde(flatten)]
    pub rest: serde_json::Map<String, serde_json::Value>,
}

impl_object!(DynamicObject);

impl DynamicObject {
    /// Parse from a JSON value (e.g. built with `serde_json::json!`).
    pub fn from_value(v: serde_json::Value) -> Result<DynamicObject, serde_json::Error> {
        serde_json::from_value(v)
    }
}
