//! The Endpoints controller (kube-controller-manager's `endpoint`
//! controller, `pkg/controller/endpoint/endpoints_controller.go`): keeps one
//! core/v1 Endpoints object per Service with a selector.
//!
//! - [`desired`], [`repack`], [`truncate`], [`reconcile`]: the pure plan.
//! - [`stale`]: the stale-cache guard's memory of replaced versions.
//! - `apply`: the only writer; `controller`: handlers, `sync_service`.

pub mod apply;
pub mod controller;
pub mod desired;
pub mod reconcile;
pub mod repack;
pub mod stale;
pub mod truncate;

pub use stale::StaleTracker;

#[cfg(test)]
mod tests;
