//! endpointd: the Endpoints and EndpointSlice controllers of
//! kube-controller-manager as a standalone, synchronous daemon for small
//! edge control planes, plus kube-sim, the API-server simulator it is
//! tested against.
//!
//! Data flows one way:
//!
//! ```text
//! API server ─▶ informer (watcher thread per resource) ─▶ cache ─▶ handlers
//!            ─▶ workqueue ─▶ workers ─▶ reconcilers (pure plans) ─▶ API writes
//! ```
//!
//! A lease thread decides whether this process may write at all.

pub mod caches;
pub mod cli;
pub mod clock;
pub mod config;
pub mod controller;
pub mod controllers;
pub mod daemon;
pub mod demo;
pub mod endpoints;
pub mod endpointslice;
pub mod explain;
pub mod health;
pub mod httpd;
pub mod informer;
pub mod kube;
pub mod lease;
pub mod logging;
pub mod memory;
pub mod metrics;
pub mod model;
pub mod names;
pub mod sdnotify;
pub mod shadow;
pub mod shutdown;
pub mod signals;
pub mod sim;
pub mod text;
pub mod tokenbucket;
pub mod workqueue;
