//! The basic work queue (upstream `queue.go`): a FIFO with a dirty set and a
//! processing set behind one mutex, so that a key added many times is
//! processed once and one key is never held by two workers at once.
//!
//! Upstream's two sets are one map here, `keys`, from key to its flags
//! (`dirty`: needs processing; `processing`: held by a worker), so that a
//! cycle costs four hash lookups and one key clone. Invariants (under the
//! lock): a key is in `keys` iff one of its flags is set; every key in
//! `queue` is dirty and not processing, and appears in `queue` once; a
//! processing key may also be dirty (added again meanwhile) and then goes
//! back into `queue` at `done`. Condvars are only signalled when someone
//! waits on them. Once every key is done, spare capacity a burst grew is
//! released (above [`SPARE`] slots). The queue never sleeps on time except in
//! [`Queue::shut_down_with_drain`], which reads the injected clock.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use super::config::QueueConfig;
use super::metrics::{QueueMetrics, UnfinishedWork};
use super::Key;
use endpointd_base::clock::SharedClock;

/// Capacity an idle queue keeps (slots); above it, the memory a burst of
/// keys grew is released once the queue drains (issue 13: after a cold
/// start's 1,000 Services an empty queue otherwise holds ~175 KB).
pub(crate) const SPARE: usize = 64;

/// Replace an empty `map` that has more than [`SPARE`] slots by a new one.
pub(crate) fn release_if_spare<K, V>(map: &mut HashMap<K, V>) {
    if map.is_empty() && map.capacity() > SPARE {
        *map = HashMap::new();
    }
}

#[derive(Debug)]
struct State<K> {
    /// Processing order. Every key here is dirty and not processing.
    queue: VecDeque<K>,
    /// Every key that is dirty or processing, with its flags.
    keys: HashMap<K, Flags>,
    /// Number of keys whose `processing` flag is set.
    processing: usize,
    /// Threads blocked in `get`.
    getters: usize,
    shutting_down: bool,
    /// A `shut_down_with_drain` is waiting; a plain `shut_down` clears it.
    drain: bool,
    metrics: Option<QueueMetrics<K>>,
}

/// Where a key stands; at least one flag is set while it is in the map.
#[derive(Debug, Clone, Copy)]
struct Flags {
    /// Needs processing: queued, or added again while processing.
    dirty: bool,
    /// Held by a worker between `get` and `done`.
    processing: bool,
}

#[derive(Debug)]
struct Shared<K> {
    state: Mutex<State<K>>,
    /// Signalled when a key is pushed onto `queue` or on shutdown.
    ready: Condvar,
    /// Signalled when `processing` becomes empty or drain is cancelled.
    drained: Condvar,
    clock: SharedClock,
    max_wait: Duration,
}

/// A FIFO work queue with client-go's guarantees. Cloning shares the queue.
#[derive(Debug)]
pub struct Queue<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Clone for Queue<K> {
    fn clone(&self) -> Self {
        Queue {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<K: Key> UnfinishedWork for Shared<K> {
    fn update_unfinished_work(&self) {
        let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = &st.metrics {
            m.update_unfinished_work();
        }
    }
}

impl<K: Key> Queue<K> {
    /// A new, empty queue.
    pub fn new(config: &QueueConfig) -> Queue<K> {
        let metrics = match &config.metrics {
            Some(m) if !config.name.is_empty() => {
                Some(m.for_queue(&config.name, Arc::clone(&config.clock)))
            }
            _ => None,
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                keys: HashMap::new(),
                processing: 0,
                getters: 0,
                shutting_down: false,
                drain: false,
                metrics,
            }),
            ready: Condvar::new(),
            drained: Condvar::new(),
            clock: Arc::clone(&config.clock),
            max_wait: config.max_wait,
        });
        if let (Some(m), false) = (&config.metrics, config.name.is_empty()) {
            let weak: Weak<dyn UnfinishedWork> = Arc::downgrade(&shared) as Weak<Shared<K>>;
            m.track(weak);
        }
        Queue { shared }
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.shared.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Mark `key` as needing processing. Ignored while shutting down; a no-op
    /// if `key` is already dirty; if `key` is being processed it is queued
    /// again when `done(key)` is called. Returns whether `key` became dirty
    /// (`false`: it already was, or the queue is shutting down); upstream's
    /// `Add` returns nothing and callers may ignore this.
    pub fn add(&self, key: K) -> bool {
        let mut guard = self.lock();
        let st = &mut *guard;
        if st.shutting_down {
            return false;
        }
        match st.keys.entry(key) {
            Entry::Occupied(mut e) => {
                let f = e.get_mut();
                if f.dirty {
                    return false;
                }
                // Not dirty, so being processed: queue it again at `done`.
                f.dirty = true;
                if let Some(m) = st.metrics.as_mut() {
                    m.add(e.key());
                }
            }
            Entry::Vacant(e) => {
                if let Some(m) = st.metrics.as_mut() {
                    m.add(e.key());
                }
                st.queue.push_back(e.key().clone());
                e.insert(Flags {
                    dirty: true,
                    processing: false,
                });
                if st.getters > 0 {
                    drop(guard);
                    self.shared.ready.notify_one();
                }
            }
        }
        true
    }

    /// Number of keys waiting in the FIFO. Keys added while being processed
    /// are not counted until they are done. Informational only.
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    /// Whether the FIFO is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of keys held by workers (between `get` and `done`).
    pub fn in_flight(&self) -> usize {
        self.lock().processing
    }

    fn take(st: &mut State<K>) -> Option<K> {
        let key = st.queue.pop_front()?;
        if let Some(f) = st.keys.get_mut(&key) {
            f.dirty = false;
            f.processing = true;
        }
        st.processing += 1;
        if let Some(m) = st.metrics.as_mut() {
            m.get(&key);
        }
        Some(key)
    }

    /// Block until a key can be processed and return it, or return `None`
    /// ("quit") once the queue is shutting down and empty. The caller must
    /// call [`Queue::done`] with the key when finished.
    pub fn get(&self) -> Option<K> {
        let mut st = self.lock();
        loop {
            if let Some(key) = Self::take(&mut st) {
                return Some(key);
            }
            if st.shutting_down {
                return None;
            }
            st.getters += 1;
            st = self
                .shared
                .ready
                .wait(st)
                .unwrap_or_else(|p| p.into_inner());
            st.getters -= 1;
        }
    }

    /// Like [`Queue::get`] but never blocks: `None` if nothing is queued.
    pub fn try_get(&self) -> Option<K> {
        Self::take(&mut self.lock())
    }

    /// Mark `key` as done. If it was added again while being processed, it
    /// goes back into the FIFO. A key that is not being processed is ignored
    /// (upstream would push a second copy of a queued key here).
    pub fn done(&self, key: &K) {
        let mut guard = self.lock();
        let st = &mut *guard;
        let requeue = match st.keys.get_mut(key) {
            Some(f) if f.processing => {
                f.processing = false;
                f.dirty
            }
            _ => return,
        };
        st.processing -= 1;
        if let Some(m) = st.metrics.as_mut() {
            m.done(key);
        }
        if requeue {
            st.queue.push_back(key.clone());
        } else {
            st.keys.remove(key);
            if st.keys.is_empty() {
                // Drained: give back what a burst grew (neither map nor
                // deque ever shrinks by itself).
                release_if_spare(&mut st.keys);
                if st.queue.capacity() > SPARE {
                    st.queue = VecDeque::new();
                }
                if let Some(m) = st.metrics.as_mut() {
                    m.release_spare();
                }
            }
        }
        let wake_getter = requeue && st.getters > 0;
        let wake_drain = st.drain && st.processing == 0;
        drop(guard);
        if wake_getter {
            self.shared.ready.notify_one();
        }
        if wake_drain {
            self.shared.drained.notify_all();
        }
    }

    /// Start shutting down: later adds are ignored, keys still queued are
    /// handed out, and every blocked `get` returns `None` once the FIFO is
    /// empty. Also ends a waiting `shut_down_with_drain` at once.
    pub fn shut_down(&self) {
        let mut st = self.lock();
        st.drain = false;
        st.shutting_down = true;
        drop(st);
        self.shared.ready.notify_all();
        self.shared.drained.notify_all();
    }

    /// Shut down like [`Queue::shut_down`], then wait until every key handed
    /// to a worker is done, for at most `timeout` of the queue's clock.
    /// Returns whether the processing set drained; `false` on timeout or if
    /// a `shut_down` cut the wait short while keys were still in flight.
    pub fn shut_down_with_drain(&self, timeout: Duration) -> bool {
        let clock = &self.shared.clock;
        let start = clock.now();
        let deadline = start.checked_add(timeout);
        let mut st = self.lock();
        st.drain = true;
        st.shutting_down = true;
        self.shared.ready.notify_all();
        while st.processing > 0 && st.drain {
            let Some(wait) = remaining(clock.now(), deadline) else {
                return false;
            };
            st = self
                .shared
                .drained
                .wait_timeout(st, wait.min(self.shared.max_wait))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        st.processing == 0
    }

    /// Whether a shutdown has started.
    pub fn shutting_down(&self) -> bool {
        self.lock().shutting_down
    }

    /// Refresh this queue's unfinished-work gauges (no-op without metrics).
    pub fn update_unfinished_work(&self) {
        self.shared.update_unfinished_work()
    }

    pub(crate) fn clock(&self) -> &SharedClock {
        &self.shared.clock
    }

    pub(crate) fn max_wait(&self) -> Duration {
        self.shared.max_wait
    }
}

/// Time left until `deadline` (`None` = no deadline: wait in `MAX_WAIT`
/// slices forever), or `None` once it has passed.
fn remaining(now: Instant, deadline: Option<Instant>) -> Option<Duration> {
    match deadline {
        None => Some(super::MAX_WAIT),
        Some(d) if d > now => Some(d - now),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Registry;
    use crate::workqueue::WorkqueueMetrics;

    /// A burst's capacity is given back once every key is done, not
    /// while keys are still held; a small queue keeps its capacity.
    #[test]
    fn a_drained_queue_releases_spare_capacity() {
        let m = WorkqueueMetrics::register(&Registry::new());
        let q: Queue<u32> = Queue::new(&QueueConfig::new("q").metrics(&m));
        let caps = |q: &Queue<u32>| {
            let st = q.lock();
            let m = st.metrics.as_ref().map_or(0, QueueMetrics::capacity);
            (st.keys.capacity(), st.queue.capacity(), m)
        };
        for k in 0..1000 {
            q.add(k);
        }
        let mut got = Vec::new();
        while let Some(k) = q.try_get() {
            got.push(k);
        }
        for k in &got[1..] {
            q.done(k);
        }
        assert!(caps(&q).0 >= 1000, "a key is still held");
        q.done(&got[0]);
        assert_eq!(caps(&q), (0, 0, 0), "drained: released");
        q.add(1);
        let small = caps(&q);
        assert!(small.0 > 0 && small.0 <= SPARE);
        let k = q.try_get();
        assert_eq!(k, Some(1));
        q.done(&1);
        assert_eq!(caps(&q).0, small.0, "small capacity kept");
        assert!(q.is_empty());
    }
}
