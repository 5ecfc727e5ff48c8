//! The rate-limiting queue (upstream `rate_limiting_queue.go`): a
//! [`DelayingQueue`] plus `add_rate_limited`, `forget` and `num_requeues`,
//! which delegate the policy to a [`RateLimiter`].
//!
//! Owns no thread of its own (the delaying layer's timer does the waiting)
//! and never decides retry budgets: controllers compare `num_requeues` with
//! [`super::MAX_RETRIES`] themselves.

use std::sync::Arc;
use std::time::Duration;

use super::config::QueueConfig;
use super::delaying::DelayingQueue;
use super::rate_limiter::RateLimiter;
use super::{delegate_queue, Key, WorkqueueError};

/// A work queue with per-key backoff. Cloning shares the queue.
pub struct RateLimitingQueue<K> {
    delaying: DelayingQueue<K>,
    limiter: Arc<dyn RateLimiter<K>>,
}

impl<K> Clone for RateLimitingQueue<K> {
    fn clone(&self) -> Self {
        RateLimitingQueue {
            delaying: self.delaying.clone(),
            limiter: Arc::clone(&self.limiter),
        }
    }
}

impl<K> std::fmt::Debug for RateLimitingQueue<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimitingQueue").finish_non_exhaustive()
    }
}

impl<K: Key> RateLimitingQueue<K> {
    /// A new queue (and its timer thread) retrying through `limiter`.
    pub fn new(
        config: &QueueConfig,
        limiter: impl RateLimiter<K> + 'static,
    ) -> Result<RateLimitingQueue<K>, WorkqueueError> {
        Self::with_shared_limiter(config, Arc::new(limiter))
    }

    /// Like [`RateLimitingQueue::new`] with a limiter shared elsewhere.
    pub fn with_shared_limiter(
        config: &QueueConfig,
        limiter: Arc<dyn RateLimiter<K>>,
    ) -> Result<RateLimitingQueue<K>, WorkqueueError> {
        Ok(RateLimitingQueue {
            delaying: DelayingQueue::new(config)?,
            limiter,
        })
    }

    delegate_queue!(delaying);

    /// Add `key` after `delay` (see [`DelayingQueue::add_after`]).
    pub fn add_after(&self, key: K, delay: Duration) {
        self.delaying.add_after(key, delay)
    }

    /// Add `key` when the limiter says it may be retried; records a failure.
    pub fn add_rate_limited(&self, key: K) {
        let delay = self.limiter.when(&key);
        self.delaying.add_after(key, delay)
    }

    /// Stop tracking `key`'s failures (it succeeded or was given up). It does
    /// not remove `key` from the queue.
    pub fn forget(&self, key: &K) {
        self.limiter.forget(key)
    }

    /// How many times `key` has been rate-limited since it was forgotten.
    pub fn num_requeues(&self, key: &K) -> u32 {
        self.limiter.num_requeues(key)
    }

    /// Bring keys waiting longer than `within` forward (see
    /// [`DelayingQueue::pull_in`]); their failure counts stay.
    pub fn pull_in(&self, within: Duration) -> usize {
        self.delaying.pull_in(within)
    }

    /// Keys waiting for their time (see [`DelayingQueue::waiting_len`]).
    pub fn waiting_len(&self) -> usize {
        self.delaying.waiting_len()
    }

    /// Shut down and stop the timer (see [`DelayingQueue::shut_down`]).
    pub fn shut_down(&self) {
        self.delaying.shut_down()
    }

    /// Shut down, draining in-flight keys for at most `timeout` (see
    /// [`DelayingQueue::shut_down_with_drain`]).
    pub fn shut_down_with_drain(&self, timeout: Duration) -> bool {
        self.delaying.shut_down_with_drain(timeout)
    }
}
