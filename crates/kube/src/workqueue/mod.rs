//! client-go's workqueue (`staging/src/k8s.io/client-go/util/workqueue`),
//! ported to threads: the queue worker threads block on.
//!
//! Why not a channel: a key added many times while it waits is handed out
//! once (the dirty set); a key is never held by two workers at once (the
//! processing set; an add while it is processed queues it again at `done`);
//! and failures back off per key (the rate limiters).
//!
//! One layer a file, as upstream:
//! * [`Queue`] (`queue.rs`): FIFO + dirty + processing sets; `add`, `get`,
//!   `done`, `len`, `shut_down`, `shut_down_with_drain`.
//! * [`DelayHeap`] (`delay_heap.rs`): the pure min-heap of ready times.
//! * [`DelayingQueue`] (`delaying.rs`): adds only `add_after`, through one
//!   timer thread that owns a [`DelayHeap`].
//! * [`RateLimiter`] and its implementations (`rate_limiter.rs`,
//!   `crate::tokenbucket`), plus the controllers' presets.
//! * [`RateLimitingQueue`] (`rate_limiting.rs`): adds only
//!   `add_rate_limited`, `forget`, `num_requeues`.
//! * [`WorkqueueMetrics`] (`metrics.rs`): client-go's metric names.
//!
//! A controller's worker loop (upstream `processNextWorkItem` + `handleErr`):
//!
//! ```
//! use endpointd_base::clock::RealClock;
//! use endpointd_kube::workqueue::{
//!     endpoints_controller_rate_limiter, QueueConfig, RateLimitingQueue, MAX_RETRIES,
//! };
//! let clock = RealClock::shared();
//! let queue: RateLimitingQueue<String> = RateLimitingQueue::new(
//!     &QueueConfig::new("endpoint").clock(clock.clone()),
//!     endpoints_controller_rate_limiter(clock),
//! )?;
//! queue.add("default/web".to_string());
//! queue.add("default/web".to_string()); // deduplicated
//! while let Some(key) = queue.try_get() { // workers call the blocking get()
//!     let synced: Result<(), ()> = Ok(()); // sync_service(&key)
//!     match synced {
//!         Ok(()) => queue.forget(&key),
//!         Err(()) if queue.num_requeues(&key) < MAX_RETRIES => {
//!             queue.add_rate_limited(key.clone())
//!         }
//!         Err(()) => queue.forget(&key), // "Dropping service out of the queue"
//!     }
//!     queue.done(&key);
//! }
//! queue.shut_down();
//! assert_eq!(queue.get(), None);
//! # Ok::<(), endpointd_kube::workqueue::WorkqueueError>(())
//! ```
//!
//! This module never reads time except through [`endpointd_base::clock`], never talks
//! to the network and never logs keys.

mod config;
mod delay_heap;
mod delaying;
mod metrics;
mod queue;
mod rate_limiter;
mod rate_limiting;

pub use crate::tokenbucket::TokenBucket;
pub use config::{QueueConfig, MAX_WAIT};
pub use delay_heap::DelayHeap;
pub use delaying::DelayingQueue;
pub use metrics::WorkqueueMetrics;
pub use queue::Queue;
pub use rate_limiter::{
    default_controller_rate_limiter, endpoints_controller_rate_limiter,
    endpointslice_controller_rate_limiter, BucketRateLimiter, ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter, MaxOfRateLimiter, RateLimiter, ENDPOINTSLICE_BASE_DELAY,
    ENDPOINTS_BASE_DELAY, MAX_BACKOFF, MAX_RETRIES, RETRY_BUCKET_BURST, RETRY_BUCKET_QPS,
};
pub use rate_limiting::RateLimitingQueue;

use std::hash::Hash;

/// What a queue key must be: controllers use `String` "namespace/name".
pub trait Key: Clone + Eq + Hash + Send + 'static {}
impl<T: Clone + Eq + Hash + Send + 'static> Key for T {}

/// Errors of this module.
#[derive(Debug)]
pub enum WorkqueueError {
    /// The delaying queue's timer thread could not be started (not
    /// retryable in practice: the process is out of threads or memory).
    SpawnTimer {
        /// The queue's name.
        queue: String,
        /// What the OS said.
        source: std::io::Error,
    },
}

impl std::fmt::Display for WorkqueueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkqueueError::SpawnTimer { queue, source } => {
                write!(
                    f,
                    "starting the timer thread of work queue {queue:?}: {source}"
                )
            }
        }
    }
}

impl std::error::Error for WorkqueueError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WorkqueueError::SpawnTimer { source, .. } => Some(source),
        }
    }
}

/// Generates the methods every queue layer passes down to the layer below
/// (`$field`), so that each layer's file shows only what it adds.
macro_rules! delegate_queue {
    ($field:ident) => {
        /// Mark `key` as needing processing; `true` if it became dirty (see
        /// [`crate::workqueue::Queue::add`]).
        pub fn add(&self, key: K) -> bool {
            self.$field.add(key)
        }
        /// Block until a key is available (`Some`) or the queue is shut down
        /// and empty (`None`, "quit"). Call `done` with the key afterwards.
        pub fn get(&self) -> Option<K> {
            self.$field.get()
        }
        /// Like `get` but never blocks: `None` if nothing is queued now.
        pub fn try_get(&self) -> Option<K> {
            self.$field.try_get()
        }
        /// Finish processing `key`; re-queues it if it was added meanwhile.
        pub fn done(&self, key: &K) {
            self.$field.done(key)
        }
        /// Keys waiting in the FIFO (not those being processed).
        pub fn len(&self) -> usize {
            self.$field.len()
        }
        /// Whether the FIFO is empty.
        pub fn is_empty(&self) -> bool {
            self.$field.is_empty()
        }
        /// Keys currently held by workers.
        pub fn in_flight(&self) -> usize {
            self.$field.in_flight()
        }
        /// Whether a shutdown has started.
        pub fn shutting_down(&self) -> bool {
            self.$field.shutting_down()
        }
        /// Refresh the unfinished-work gauges of this queue.
        pub fn update_unfinished_work(&self) {
            self.$field.update_unfinished_work()
        }
    };
}
pub(crate) use delegate_queue;
