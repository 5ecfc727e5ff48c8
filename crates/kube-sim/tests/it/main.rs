//! kube-sim's integration tests, one binary: REST and watch semantics
//! through `rest::handle`, the HTTP server, faults, RBAC, discovery,
//! protobuf and table output, kubectl and the Python client
//! (`transport_conformance`). The shared harness is in [`harness`].

mod harness;

mod access_review;
mod auth_discovery;
mod faults;
mod kubectl_table;
mod kubelet;
mod managed_fields;
mod protobuf;
mod rbac;
mod semantics;
mod semantics_delete;
mod semantics_http;
mod semantics_list;
mod semantics_mvcc;
mod semantics_robust;
mod semantics_watch;
mod transport;
mod transport_conformance;
