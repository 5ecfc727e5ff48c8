//! The write gate a [`Client`](super::Client) may carry: asked before every
//! attempt of a create, update, patch or delete — after any rate-limiter
//! wait and before each retry — whether it may be sent, and how long that
//! attempt may take at most.
//!
//! Owns only the question; never decides it (the controllers' write fence
//! answers it) and never gates reads or watches.

use std::time::Duration;

/// Why a gate refuses a write: the gate's own error type, boxed (the
/// client reports its message as [`Error::Refused`](super::Error::Refused)).
pub type Refusal = Box<dyn std::error::Error + Send + Sync>;

/// Whether a write may be sent now.
pub trait WriteGate: Send + Sync + std::fmt::Debug {
    /// `Ok(None)`: yes, without limit. `Ok(Some(d))`: yes, and the attempt
    /// must end within `d`. `Err(why)`: send nothing.
    fn time_left(&self) -> Result<Option<Duration>, Refusal>;
}
