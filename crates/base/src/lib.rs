//! What both kube-sim and endpointd's client stand on, and nothing else:
//!
//! - [`clock`]: the only reader of time (a real and a fake clock);
//! - [`names`]: the API's rules for object names and labels;
//! - [`httpd`]: a small thread-per-connection HTTP/1.1 server with TLS,
//!   serving kube-sim and endpointd's `/metrics` and health endpoints.
//!
//! It knows no Kubernetes object and depends on no other crate of the
//! workspace.

pub mod clock;
pub mod httpd;
pub mod names;
