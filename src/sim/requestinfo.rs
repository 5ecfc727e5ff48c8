//! Request classification: an API path, method and query → verb, group,
//! version, resource, subresource, namespace and name (kube-apiserver's
//! RequestInfo). Pure; never touches the store.
//!
//! The parser (`parse`) is written by the sim transport layer; the struct is
//! the contract between the transport (faults, counters) and `rest`.

/// The Kubernetes verb of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verb {
    /// GET of one object.
    Get,
    /// GET of a collection.
    List,
    /// GET of a collection (or one object by fieldSelector) with `watch=true`.
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH.
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
}

impl Verb {
    /// The verb as Kubernetes spells it ("get", "deletecollection", …).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }
}

/// A classified resource request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestInfo {
    /// The verb.
    pub verb: Verb,
    /// API group, "" for core.
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource name.
    pub resource: String,
    /// Subresource ("status"), if any.
    pub subresource: Option<String>,
    /// Namespace from the path, if any.
    pub namespace: Option<String>,
    /// Object name from the path, if any.
    pub name: Option<String>,
}
