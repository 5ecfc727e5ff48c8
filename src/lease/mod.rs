//! Leader election over a coordination.k8s.io/v1 Lease and this instance's
//! heartbeat (identity) Lease.

pub mod election;
pub mod identity;
pub mod sink;
pub mod thread;

pub use sink::{LeadershipSink, OnEvent};
pub use thread::{Election, LeaseConfig, LeaseState, LeaseThread};
