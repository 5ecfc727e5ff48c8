//! (stub: contract only — the sim semantics helper replaces the bodies)
//!
//! The in-memory object store: objects, the global resourceVersion, event
//! history, watch fan-out, garbage collection.

use crate::clock::SharedClock;
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Store settings.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Events kept for watch replay; older resourceVersions get 410 Expired.
    pub history: usize,
    /// Interval of BOOKMARK events on watches that asked for them.
    pub bookmark_interval: Duration,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            history: 10_000,
            bookmark_interval: Duration::from_secs(1),
        }
    }
}

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

/// The store.
#[derive(Debug)]
pub struct Store {
    #[allow(dead_code)]
    cfg: StoreConfig,
    #[allow(dead_code)]
    clock: SharedClock,
}

impl Store {
    /// A new, empty store (the namespaces `default`, `kube-system`,
    /// `kube-public` and `kube-node-lease` exist from the start).
    pub fn new(cfg: StoreConfig, clock: SharedClock) -> Arc<Store> {
        Arc::new(Store { cfg, clock })
    }
    /// Fault: end every open watch stream now.
    pub fn close_all_watches(&self) {}
    /// Fault: drop the event history; every resourceVersion older than the
    /// current one now gets 410 Expired on watch.
    pub fn compact(&self) {}
    /// The newest resourceVersion.
    pub fn current_rv(&self) -> u64 {
        0
    }
    /// Every write so far, oldest first.
    pub fn write_log(&self) -> Vec<WriteRecord> {
        Vec::new()
    }
    /// Create the objects of a `v1 List` (items with apiVersion/kind).
    /// Returns how many were created.
    pub fn load_list(&self, _list: &serde_json::Value) -> Result<usize, String> {
        Err("not implemented".into())
    }
    /// Stop background threads and close all watches.
    pub fn shutdown(&self) {}
}
