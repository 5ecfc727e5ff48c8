//! What the lease thread tells the rest of the daemon, as a small
//! interface: the lease thread depends on it, never on the controller
//! runtime. The daemon passes in the implementations (the runtime's write
//! fence implements [`LeadershipSink`]; an event recorder stands behind
//! [`OnEvent`]).

use endpointd_kube::model::ObjectReference;
use std::time::Instant;

/// Where leadership goes: opened by each successful renewal, closed when
/// it is lost or given up.
pub trait LeadershipSink: Send + Sync {
    /// An acquisition or renewal sent at `sent` succeeded: this instance
    /// may write until `renew_deadline` after `sent`.
    fn renewed(&self, sent: Instant);
    /// This instance no longer leads (lost, or released at stop): refuse
    /// every write from now on.
    fn stopped_leading(&self);
}

/// Emits a Normal event about the election Lease: the Lease, the reason
/// (`LeaderElection`) and the message.
pub type OnEvent = Box<dyn Fn(&ObjectReference, &str, &str) + Send>;
