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
//!            ─▶ workqueue ─▶ workers ─▶ reconcilers (pure plans) ─▶ API writes
//! ```
//!
//! A lease thread decides whether this process may write at all.

pub mod buildinfo;
pub mod caches;
pub mod cli;
pub mod config;
pub mod controller;
pub mod controllers;
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
pub mod sdnotify;
pub mod shadow;
pub mod signals;
