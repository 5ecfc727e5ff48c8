//! endpointd: the Endpoints and EndpointSlice controllers of
//! kube-controller-manager as a standalone, synchronous daemon for small
//! edge control planes. The client layer it stands on is the
//! `endpointd-kube` crate; kube-sim, the API-server simulator it is tested
//! against, is its own crate and reaches this one only through the `demo`
//! feature.
//!
//! Data flows one way:
//!
//! ```text
//! API server ─▶ informer (watcher thread per resource) ─▶ cache ─▶ handlers
//!            ─▶ workqueue ─▶ workers ─▶ plan (pure) ─▶ writer ─▶ API writes
//! ```
//!
//! [`runtime`] is what both controllers run on, [`wiring`] builds them
//! (and picks shadow mode's syncer instead of the writers); a lease thread
//! decides whether this process may write at all. See
//! `docs/architecture.md`.

pub mod buildinfo;
pub mod caches;
pub mod check_config;
pub mod cli;
pub mod config;
pub mod daemon;
#[cfg(feature = "demo")]
pub mod demo;
pub mod endpoints;
pub mod endpointslice;
pub mod explain;
pub mod health;
pub mod lease;
pub mod logging;
pub mod manual;
pub mod preflight;
pub mod runtime;
pub mod sdnotify;
pub mod shadow;
pub mod signals;
pub mod wiring;
