//! The trimmed Namespace projection: metadata and `status.phase`
//! (`Active` / `Terminating`). The namespaces informer (issue 4) feeds only
//! the daemon's status line today: the writers learn that a namespace is
//! being deleted from the API's 403 `NamespaceTerminating` cause, as
//! upstream's controllers (which watch no namespaces) do.
//!
//! Must never keep spec.finalizers or conditions: nothing reads them.

use super::impl_object;
use super::meta::{boxed, TrimmedMeta};
use super::pod::null_default;
use serde::Deserialize;

/// A cached Namespace.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(from = "NamespaceWire")]
pub struct Namespace {
    /// Trimmed metadata.
    pub metadata: TrimmedMeta,
    /// `status.phase` ("" if unset).
    pub phase: Box<str>,
}

impl_object!(Namespace);

impl Namespace {
    /// `status.phase == "Terminating"`.
    pub fn is_terminating(&self) -> bool {
        &*self.phase == "Terminating"
    }
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct NamespaceWire {
    #[serde(deserialize_with = "null_default")]
    metadata: TrimmedMeta,
    #[serde(deserialize_with = "null_default")]
    status: StatusWire,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct StatusWire {
    #[serde(deserialize_with = "boxed")]
    phase: Box<str>,
}

impl From<NamespaceWire> for Namespace {
    fn from(w: NamespaceWire) -> Namespace {
        Namespace {
            metadata: w.metadata,
            phase: w.status.phase,
        }
    }
}
