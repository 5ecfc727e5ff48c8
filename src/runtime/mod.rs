//! The controller runtime both controllers share: the worker pool over the
//! rate-limited work queue, pod → service membership, pod-update relevance,
//! the trigger-time tracker, the event recorder, controller metrics, the
//! write fence that leader election closes, and the count of other writers'
//! updates to the objects both controllers manage.
//!
//! Owns the machinery around a sync, never a sync itself: the Endpoints and
//! EndpointSlice controllers (`crate::endpoints`, `crate::endpointslice`)
//! differ only in their `sync_service`. Nothing here writes an Endpoints or
//! EndpointSlice object.

pub mod correlator;
pub mod events;
pub mod fence;
pub mod foreign;
pub mod handlers;
pub mod labels;
pub mod membership;
pub mod metrics;
pub mod outage;
pub mod podutil;
pub mod recorder;
pub mod relevance;
pub mod stale;
pub mod stuck;
#[cfg(test)]
pub(crate) mod testkit;
pub mod trigger;
pub mod worker;
