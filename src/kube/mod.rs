//! Blocking Kubernetes API client on ureq 3 + rustls (ring): configuration
//! (kubeconfig, in-cluster), authentication, TLS, typed `Status` errors,
//! client-side rate limiting, bounded retries, streaming list/watch
//! decoding and request metrics.
//!
//! Owns every byte endpointd sends to or receives from the API server. Must
//! never log a secret (tokens and keys are redacted in `Debug`), never
//! disable TLS verification unless the kubeconfig says so, never read time
//! except through `crate::clock`, and never buffer a whole LIST body.

mod auth;
mod client;
mod config;
mod error;
mod kubeconfig;
mod ratelimit;
pub mod request;
mod retry;
mod tls;
mod transport;
pub mod watch;

pub use auth::Auth;
pub use client::{Client, ObjectList};
pub use config::{ClientConfig, TlsMaterial};
pub use error::{Cause, Error, Status};
pub use ratelimit::TokenBucket;
pub use request::{
    ListParams, PatchType, Preconditions, Resource, WatchParams, ENDPOINTS, ENDPOINTSLICES,
    EVENTS_V1, LEASES, NAMESPACES, NODES, PODS, SERVICES,
};
pub use watch::{WatchEvent, WatchStream};
