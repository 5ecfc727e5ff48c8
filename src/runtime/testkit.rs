//! Unit-test helpers for the runtime's and controllers' tests (compiled
//! only under `cfg(test)`): a real-clock queue with fast back-off, and a
//! drain that takes every ready key.

use endpointd_base::clock::RealClock;
use endpointd_kube::workqueue::{
    ItemExponentialFailureRateLimiter, Key, QueueConfig, RateLimitingQueue,
};
use std::time::Duration;

/// A queue on the real clock, per-item back-off 1 ms to 1 s.
pub fn queue<K: Key>() -> RateLimitingQueue<K> {
    RateLimitingQueue::new(
        &QueueConfig::new("test").clock(RealClock::shared()),
        ItemExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1)),
    )
    .expect("queue")
}

/// Every key ready now, taken and marked done, in the order taken.
pub fn drain<K: Key>(queue: &RateLimitingQueue<K>) -> Vec<K> {
    let mut got = Vec::new();
    while let Some(k) = queue.try_get() {
        queue.done(&k);
        got.push(k);
    }
    got
}
