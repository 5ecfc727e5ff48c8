//! kube-sim: an in-memory Kubernetes API server speaking the real REST and
//! watch wire protocol, for tests, the demo and benchmarks.
//!
//! Layers (request flow): `httpd` (sockets, TLS) → [`server`] (auth, faults,
//! counters, discovery, admin endpoints) → [`requestinfo`] (path → verb,
//! resource, namespace, name) → [`rest`] (resource semantics) → [`store`]
//! (objects, resourceVersions, history, watch fan-out).
//!
//! It depends on no crate of the workspace but `endpointd-base`: never on
//! the client layer or the daemon (only the daemon's `demo` feature, tests
//! and benches import it), and it never talks to a real cluster.

#![forbid(unsafe_code)]

pub mod access_review;
pub mod apierrors;
pub mod authn;
pub mod authz;
pub mod cli;
pub mod defaults;
pub mod deletion;
pub mod discovery;
pub mod event;
pub mod eventsapi;
pub mod faults;
pub mod gc;
pub mod kubelet;
pub mod list;
pub mod load;
pub mod managed;
pub mod mvcc;
pub mod obj;
pub mod objects;
pub mod openapi;
pub mod openapi_proto;
pub mod patch;
pub mod protobuf;
pub mod rbac;
pub mod requester;
pub mod requestinfo;
pub mod resources;
pub mod rest;
pub mod selector;
pub mod server;
pub mod silent_proxy;
pub mod status;
pub mod store;
pub mod table;
pub mod tls;
pub mod txn;
pub mod validate;
pub mod validate_rules;
pub mod watch;

/// The media type of a `Content-Type` value: before any `;` parameter,
/// trimmed, lower-case (`"Application/JSON; charset=utf-8"` → `"application/json"`).
pub fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}
