//! Work-queue metrics with client-go's names, all labelled `name`:
//! `workqueue_depth`, `workqueue_adds_total`,
//! `workqueue_queue_duration_seconds`, `workqueue_work_duration_seconds`,
//! `workqueue_unfinished_work_seconds`,
//! `workqueue_longest_running_processor_seconds`, `workqueue_retries_total`
//! (upstream: `client-go/util/workqueue/metrics.go` and
//! `component-base/metrics/prometheus/workqueue`).
//!
//! [`WorkqueueMetrics`] registers the families once per registry; every
//! queue takes its children by name. [`QueueMetrics`] is one queue's
//! bookkeeping and is only touched under that queue's lock. Time comes from
//! the queue's clock; this module never reads time itself and never renders.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use super::Key;
use crate::metrics::{exponential_buckets, Counter, Family, Gauge, Histogram, Registry};
use endpointd_base::clock::SharedClock;

/// Something whose unfinished-work gauges can be refreshed (a queue).
pub(crate) trait UnfinishedWork: Send + Sync {
    fn update_unfinished_work(&self);
}

/// The seven work-queue metric families of one registry.
#[derive(Debug)]
pub struct WorkqueueMetrics {
    depth: Arc<Family<Gauge>>,
    adds: Arc<Family<Counter>>,
    latency: Arc<Family<Histogram>>,
    work_duration: Arc<Family<Histogram>>,
    unfinished: Arc<Family<Gauge>>,
    longest: Arc<Family<Gauge>>,
    retries: Arc<Family<Counter>>,
    queues: Mutex<Vec<Weak<dyn UnfinishedWork>>>,
}

impl WorkqueueMetrics {
    /// Register the families in `registry`. Call once per registry and share
    /// the result between queues (registering twice would render every
    /// family twice).
    pub fn register(registry: &Registry) -> Arc<WorkqueueMetrics> {
        // Upstream: prometheus.ExponentialBuckets(10e-9, 10, 10).
        let buckets = exponential_buckets(1e-8, 10.0, 10);
        let n = &["name"];
        Arc::new(WorkqueueMetrics {
            depth: registry.gauge("workqueue_depth", "Current depth of workqueue", n),
            adds: registry.counter(
                "workqueue_adds_total",
                "Total number of adds handled by workqueue",
                n,
            ),
            latency: registry.histogram(
                "workqueue_queue_duration_seconds",
                "How long in seconds an item stays in workqueue before being requested.",
                n,
                Arc::clone(&buckets),
            ),
            work_duration: registry.histogram(
                "workqueue_work_duration_seconds",
                "How long in seconds processing an item from workqueue takes.",
                n,
                buckets,
            ),
            unfinished: registry.gauge(
                "workqueue_unfinished_work_seconds",
                "How many seconds of work has done that is in progress and hasn't been observed \
                 by work_duration. Large values indicate stuck threads. One can deduce the number \
                 of stuck threads by observing the rate at which this increases.",
                n,
            ),
            longest: registry.gauge(
                "workqueue_longest_running_processor_seconds",
                "How many seconds has the longest running processor for workqueue been running.",
                n,
            ),
            retries: registry.counter(
                "workqueue_retries_total",
                "Total number of retries handled by workqueue",
                n,
            ),
            queues: Mutex::new(Vec::new()),
        })
    }

    /// Refresh `workqueue_unfinished_work_seconds` and
    /// `workqueue_longest_running_processor_seconds` of every live queue.
    /// The metrics endpoint calls this before rendering.
    pub fn update_unfinished_work(&self) {
        let live: Vec<Arc<dyn UnfinishedWork>> = {
            let mut qs = self.queues.lock().unwrap_or_else(|p| p.into_inner());
            qs.retain(|w| w.strong_count() > 0);
            qs.iter().filter_map(Weak::upgrade).collect()
        };
        for q in live {
            q.update_unfinished_work();
        }
    }

    pub(crate) fn track(&self, queue: Weak<dyn UnfinishedWork>) {
        self.queues
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(queue);
    }

    pub(crate) fn retries(&self, name: &str) -> Arc<Counter> {
        self.retries.with(&[name])
    }

    pub(crate) fn for_queue<K: Key>(&self, name: &str, clock: SharedClock) -> QueueMetrics<K> {
        QueueMetrics {
            clock,
            depth: self.depth.with(&[name]),
            adds: self.adds.with(&[name]),
            latency: self.latency.with(&[name]),
            work_duration: self.work_duration.with(&[name]),
            unfinished: self.unfinished.with(&[name]),
            longest: self.longest.with(&[name]),
            add_times: HashMap::new(),
            processing_start: HashMap::new(),
        }
    }
}

/// One queue's metric children and timing bookkeeping (upstream
/// `defaultQueueMetrics`). The caller holds the queue's lock.
#[derive(Debug)]
pub(crate) struct QueueMetrics<K> {
    clock: SharedClock,
    depth: Arc<Gauge>,
    adds: Arc<Counter>,
    latency: Arc<Histogram>,
    work_duration: Arc<Histogram>,
    unfinished: Arc<Gauge>,
    longest: Arc<Gauge>,
    /// When each dirty key was first added (for queue latency).
    add_times: HashMap<K, Instant>,
    /// When each processing key was handed out (for work duration).
    processing_start: HashMap<K, Instant>,
}

impl<K: Key> QueueMetrics<K> {
    fn since(&self, start: Instant) -> f64 {
        self.clock
            .now()
            .saturating_duration_since(start)
            .as_secs_f64()
    }

    /// A key became dirty.
    pub(crate) fn add(&mut self, key: &K) {
        self.adds.inc();
        self.depth.inc();
        if !self.add_times.contains_key(key) {
            self.add_times.insert(key.clone(), self.clock.now());
        }
    }

    /// A key was handed to a worker.
    pub(crate) fn get(&mut self, key: &K) {
        self.depth.dec();
        self.processing_start.insert(key.clone(), self.clock.now());
        if let Some(start) = self.add_times.remove(key) {
            self.latency.observe(self.since(start));
        }
    }

    /// A worker finished a key.
    pub(crate) fn done(&mut self, key: &K) {
        if let Some(start) = self.processing_start.remove(key) {
            self.work_duration.observe(self.since(start));
        }
    }

    /// Release the spare capacity of the timing maps that are empty (the
    /// queue drained).
    pub(crate) fn release_spare(&mut self) {
        super::queue::release_if_spare(&mut self.add_times);
        super::queue::release_if_spare(&mut self.processing_start);
    }

    /// Slots of the timing maps (for tests).
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.add_times.capacity() + self.processing_start.capacity()
    }

    /// Set the unfinished-work and longest-running gauges from the keys
    /// being processed now.
    pub(crate) fn update_unfinished_work(&self) {
        let mut total = 0.0;
        let mut oldest: f64 = 0.0;
        for start in self.processing_start.values() {
            let age = self.since(*start);
            total += age;
            oldest = oldest.max(age);
        }
        self.unfinished.set(total);
        self.longest.set(oldest);
    }
}
