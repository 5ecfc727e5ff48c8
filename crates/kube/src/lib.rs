//! The Kubernetes client layer endpointd is built on.
//!
//! ```text
//! API server ─▶ kube (client: transport, auth, requests, watch decoding)
//!            ─▶ informer (reflector state machine + store per resource)
//!            ─▶ model (the trimmed objects cached)
//! workqueue + tokenbucket: what workers pull keys from; metrics: the registry
//! ```
//!
//! It knows nothing of the controllers built on it and never writes an
//! object on its own: every request is a caller's.

pub mod informer;
pub mod kube;
pub mod memory;
pub mod metrics;
pub mod model;
pub mod shutdown;
pub mod text;
pub mod tokenbucket;
pub mod workqueue;
