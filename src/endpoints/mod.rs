//! The Endpoints controller (kube-controller-manager's `endpoint`
//! controller, `pkg/controller/endpoint/endpoints_controller.go`): keeps one
//! core/v1 Endpoints object per Service with a selector.
//!
//! - [`plan`]: the pure plan (`desired`, `repack`, `truncate` inside);
//! - [`tracker`]: the stale-cache guard's memory of replaced versions;
//! - [`writer`]: the only writer; [`controller`]: handlers, `sync_service`.

pub mod controller;
pub mod plan;
pub mod tracker;
pub mod writer;

pub use tracker::StaleTracker;

#[cfg(test)]
mod tests;
