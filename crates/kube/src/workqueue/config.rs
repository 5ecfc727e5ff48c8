//! How a work queue is built: its name, clock, metrics and the longest real
//! wait between two readings of the clock.
//!
//! Owns configuration values only; it never starts threads.

use std::sync::Arc;
use std::time::Duration;

use super::metrics::WorkqueueMetrics;
use endpointd_base::clock::{RealClock, SharedClock};

/// Upper bound on any real-time wait inside the queue before the clock is
/// read again: upstream's `maxWait` heartbeat of the delaying queue ("just
/// insurance against weird things happening").
pub const MAX_WAIT: Duration = Duration::from_secs(10);

/// Options shared by every queue layer.
#[derive(Debug, Clone)]
pub struct QueueConfig {
    pub(crate) name: String,
    pub(crate) clock: SharedClock,
    pub(crate) metrics: Option<Arc<WorkqueueMetrics>>,
    pub(crate) max_wait: Duration,
}

impl QueueConfig {
    /// A queue called `name` on the real clock, without metrics. As
    /// upstream, an empty name means no metrics even if some are attached.
    pub fn new(name: &str) -> QueueConfig {
        QueueConfig {
            name: name.to_string(),
            clock: RealClock::shared(),
            metrics: None,
            max_wait: MAX_WAIT,
        }
    }

    /// Use this clock for delays, deadlines and metrics.
    pub fn clock(mut self, clock: SharedClock) -> QueueConfig {
        self.clock = clock;
        self
    }

    /// Export this queue's metrics through `metrics` (label `name`).
    pub fn metrics(mut self, metrics: &Arc<WorkqueueMetrics>) -> QueueConfig {
        self.metrics = Some(Arc::clone(metrics));
        self
    }

    /// Longest real-time wait before the timer thread (and a draining
    /// shutdown) read the clock again. With the real clock the default
    /// ([`MAX_WAIT`]) is right, because real waits end when the clock says.
    /// A fake clock only moves when a test steps it, which no real-time wait
    /// can see: tests with a `FakeClock` set a few milliseconds here.
    pub fn max_wait(mut self, d: Duration) -> QueueConfig {
        self.max_wait = d.clamp(Duration::from_micros(100), MAX_WAIT);
        self
    }

    /// The clock the queue will use (to hand the same one to a limiter).
    pub fn shared_clock(&self) -> SharedClock {
        Arc::clone(&self.clock)
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}
