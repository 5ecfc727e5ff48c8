//! The store's record types: object keys, watch events and the write log.
//! Plain data; no locking and no I/O.

use super::objects::Obj;
use super::resources::{ResourceInfo, RESOURCES};
use serde::Serialize;
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

/// One write, for inspection by tests and benchmarks.
#[derive(Debug, Clone, Serialize)]
pub struct WriteRecord {
    /// "create", "update", "patch", "delete".
    pub verb: String,
    /// Plural resource ("endpointslices").
    pub resource: String,
    /// Namespace, if namespaced.
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
    /// resourceVersion the write produced.
    pub resource_version: u64,
    /// Wall time of the write.
    #[serde(with = "system_time_secs")]
    pub time: SystemTime,
    /// Who wrote: a client certificate's CN, `token-user`,
    /// `system:anonymous`, or `system:kube-sim` for kube-sim's own writes.
    pub user: String,
    /// The request's `User-Agent` (`kube-sim` for its own writes).
    #[serde(rename = "userAgent")]
    pub user_agent: String,
}

mod system_time_secs {
    use serde::Serializer;
    use std::time::SystemTime;
    pub fn serialize<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        let secs = t
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        s.serialize_f64(secs)
    }
}

/// Where an object lives: resource (index into [`RESOURCES`]), namespace
/// ("" for cluster-scoped), name. Ordered so one resource is one range.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    /// Index into [`RESOURCES`].
    pub res: usize,
    /// Namespace, "" when cluster-scoped.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl Key {
    /// The key of `name` in `namespace` of resource `info`.
    pub fn new(info: &ResourceInfo, namespace: &str, name: &str) -> Key {
        Key {
            res: res_index(info),
            namespace: if info.namespaced {
                namespace.to_string()
            } else {
                String::new()
            },
            name: name.to_string(),
        }
    }
    /// The resource.
    pub fn info(&self) -> &'static ResourceInfo {
        &RESOURCES[self.res]
    }
}

/// Index of a resource's storage in [`RESOURCES`]: its own, except that
/// events.k8s.io Events live with the core Events (one storage, two views).
pub fn res_index(info: &ResourceInfo) -> usize {
    let storage = if super::eventsapi::is_events_api(info) {
        RESOURCES
            .iter()
            .position(|r| r.group.is_empty() && r.resource == "events")
    } else {
        None
    };
    storage
        .or_else(|| RESOURCES.iter().position(|r| r == info))
        .unwrap_or(0)
}

/// Watch event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Created.
    Added,
    /// Updated.
    Modified,
    /// Deleted (`obj` is the last state, stamped with the delete's RV).
    Deleted,
}

impl EventType {
    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One write as watchers see it.
#[derive(Debug)]
pub struct Event {
    /// The write's resourceVersion.
    pub rv: u64,
    /// Which object.
    pub key: Key,
    /// What happened.
    pub kind: EventType,
    /// The object after the write (for DELETED: its last state).
    pub obj: Arc<Obj>,
    /// The object before the write, if any.
    pub prev: Option<Arc<Obj>>,
    /// The wire frame, made once on first use and shared by all watchers.
    pub(crate) line: OnceLock<Vec<u8>>,
}

impl Event {
    /// `{"type":…,"object":…}` + "\n" for this event, serialized once.
    pub fn line(&self) -> &[u8] {
        self.line
            .get_or_init(|| super::watch::frame(self.kind.as_str(), &self.obj.full_json()))
    }
}
