//! What the demo reads back from kube-sim: the Endpoints and managed
//! EndpointSlices of a Service, whether the cluster matches the
//! expectations, and the writes in kube-sim's write log since a mark.
//!
//! Reads only (the store and its write log); must never write.

use super::cluster::{Expect, NS, SERVICES};
use kube_sim::resources::lookup;
use kube_sim::store::{Key, Store, WriteRecord};
use serde_json::Value;
use std::time::{Duration, SystemTime};

fn key(group: &str, resource: &str, name: &str) -> Option<Key> {
    Some(Key::new(lookup(group, "v1", resource)?, NS, name))
}

/// The stored Endpoints of Service `name`.
pub fn endpoints(store: &Store, name: &str) -> Option<Value> {
    let k = key("", "endpoints", name)?;
    store.txn(|t| t.get(&k).map(|o| o.value()))
}

/// The slices of Service `name` managed by the EndpointSlice controller,
/// sorted by address type then name.
pub fn slices(store: &Store, name: &str) -> Vec<Value> {
    let mut v: Vec<Value> = store.txn(|t| {
        t.all_of("endpointslices")
            .iter()
            .map(|o| o.value())
            .filter(|s| {
                let l = &s["metadata"]["labels"];
                s["metadata"]["namespace"] == NS
                    && l["kubernetes.io/service-name"] == name
                    && l["endpointslice.kubernetes.io/managed-by"]
                        == "endpointslice-controller.k8s.io"
            })
            .collect()
    });
    v.sort_by_key(|s| {
        (
            s["addressType"].as_str().unwrap_or("").to_string(),
            s["metadata"]["name"].as_str().unwrap_or("").to_string(),
        )
    });
    v
}

/// (ready, not ready) addresses of an Endpoints object.
pub fn endpoint_counts(ep: &Value) -> (usize, usize) {
    let list = |s: &Value, f: &str| s[f].as_array().map_or(0, Vec::len);
    ep["subsets"]
        .as_array()
        .into_iter()
        .flatten()
        .fold((0, 0), |(r, n), s| {
            (r + list(s, "addresses"), n + list(s, "notReadyAddresses"))
        })
}

/// The endpoints of one slice.
pub fn slice_endpoints(s: &Value) -> &[Value] {
    s["endpoints"].as_array().map_or(&[], Vec::as_slice)
}

/// Why Service `e` does not look as expected yet, if it does not.
pub fn mismatch(store: &Store, e: &Expect) -> Option<String> {
    let got = endpoints(store, e.name).map(|ep| endpoint_counts(&ep));
    if got != Some(e.endpoints) {
        return Some(format!(
            "{}: Endpoints {got:?}, want {:?}",
            e.name, e.endpoints
        ));
    }
    let ss = slices(store, e.name);
    for (family, want) in e.slices {
        let n: usize = ss
            .iter()
            .filter(|s| s["addressType"] == *family)
            .map(|s| slice_endpoints(s).len())
            .sum();
        if n != *want {
            return Some(format!(
                "{}: {n} {family} slice endpoints, want {want}",
                e.name
            ));
        }
    }
    None
}

/// A Service that does not look as expected yet: what [`mismatch`] says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotConverged(pub String);

impl std::fmt::Display for NotConverged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotConverged {}

/// The first Service that does not look as expected.
pub fn converged(store: &Store) -> Result<(), NotConverged> {
    match SERVICES.iter().find_map(|e| mismatch(store, e)) {
        None => Ok(()),
        Some(m) => Err(NotConverged(m)),
    }
}

/// Writes to Endpoints and EndpointSlices after a mark in the write log.
#[derive(Clone, Debug, Default)]
pub struct Writes {
    /// Endpoints writes (create, update, delete).
    pub endpoints: Vec<WriteRecord>,
    /// EndpointSlice writes.
    pub slices: Vec<WriteRecord>,
}

impl Writes {
    /// Slice writes with this verb.
    pub fn slice_verbs(&self, verb: &str) -> usize {
        self.slices.iter().filter(|w| w.verb == verb).count()
    }

    /// How long after `since` the last write of each kind landed.
    pub fn delays(&self, since: SystemTime) -> (Option<Duration>, Option<Duration>) {
        let last = |ws: &[WriteRecord]| {
            ws.iter()
                .map(|w| w.time.duration_since(since).unwrap_or_default())
                .max()
        };
        (last(&self.slices), last(&self.endpoints))
    }
}

/// The write log's length now (a mark for [`writes_since`]).
pub fn mark(store: &Store) -> usize {
    store.write_log_since(usize::MAX).1
}

/// Endpoints and EndpointSlice writes after `mark`.
pub fn writes_since(store: &Store, mark: usize) -> Writes {
    let (log, _) = store.write_log_since(mark);
    let mut w = Writes::default();
    for r in log {
        match r.resource.as_str() {
            "endpoints" => w.endpoints.push(r),
            "endpointslices" => w.slices.push(r),
            _ => {}
        }
    }
    w
}
