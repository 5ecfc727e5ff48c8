//! The delaying queue (upstream `delaying_queue.go`): a [`Queue`] plus
//! `add_after(key, d)`, served by one timer thread per queue.
//!
//! A [`DelayHeap`] behind a mutex is shared by `add_after` and the timer
//! thread. The thread reads the injected clock, adds every key whose time
//! has come, then waits on a condition variable until the earliest ready
//! time; `add_after` inserts into the heap itself and wakes the thread only
//! when the new key is due before everything already waiting (with a
//! channel, every `add_after` woke the thread, and its blocking receive
//! spun with `sched_yield` first). Waits for a key are capped at the
//! config's `max_wait` (upstream's 10 s heartbeat; a few ms in tests with a
//! fake clock, which real waits cannot observe); with nothing waiting the
//! thread sleeps until woken, so an idle queue costs no wake-ups. The timer never holds the
//! queue's lock while it waits, never holds the heap's lock while it adds to
//! the queue, and exits on shutdown or when the last handle is dropped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use super::config::QueueConfig;
use super::delay_heap::DelayHeap;
use super::queue::Queue;
use super::{delegate_queue, Key, WorkqueueError};
use crate::metrics::Counter;
use endpointd_base::clock::SharedClock;

/// Delays beyond this are treated as this (about 100 years), so that
/// `now + delay` cannot overflow.
const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// What `add_after` and the timer thread share.
struct Shared<K> {
    state: Mutex<TimerState<K>>,
    wake: Condvar,
}

struct TimerState<K> {
    heap: DelayHeap<K>,
    /// Set when the timer must exit.
    stop: bool,
}

impl<K> Shared<K> {
    fn lock(&self) -> MutexGuard<'_, TimerState<K>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn stop(&self) {
        self.lock().stop = true;
        self.wake.notify_all();
    }
}

struct Timer<K> {
    shared: Arc<Shared<K>>,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl<K> Timer<K> {
    fn stop(&self) {
        self.shared.stop();
        let handle = self.handle.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = handle {
            if h.join().is_err() {
                log::error!("work queue timer thread panicked");
            }
        }
    }
}

impl<K> Drop for Timer<K> {
    /// The last handle is gone: let the thread exit (not joined here).
    fn drop(&mut self) {
        self.shared.stop();
    }
}

impl<K> std::fmt::Debug for Timer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Timer")
    }
}

/// A work queue that can add keys later. Cloning shares the queue.
#[derive(Debug)]
pub struct DelayingQueue<K> {
    queue: Queue<K>,
    timer: Arc<Timer<K>>,
    /// `add_after` entries sent to the timer and not yet added or merged.
    pending: Arc<AtomicUsize>,
    retries: Option<Arc<Counter>>,
}

impl<K> Clone for DelayingQueue<K> {
    fn clone(&self) -> Self {
        DelayingQueue {
            queue: self.queue.clone(),
            timer: Arc::clone(&self.timer),
            pending: Arc::clone(&self.pending),
            retries: self.retries.clone(),
        }
    }
}

impl<K: Key> DelayingQueue<K> {
    /// A new queue and its timer thread.
    pub fn new(config: &QueueConfig) -> Result<DelayingQueue<K>, WorkqueueError> {
        let queue = Queue::new(config);
        let shared = Arc::new(Shared {
            state: Mutex::new(TimerState {
                heap: DelayHeap::new(),
                stop: false,
            }),
            wake: Condvar::new(),
        });
        let pending = Arc::new(AtomicUsize::new(0));
        let timer_loop = TimerLoop {
            queue: queue.clone(),
            shared: Arc::clone(&shared),
            pending: Arc::clone(&pending),
        };
        let handle = std::thread::Builder::new()
            .name(format!("wq-{}", config.name))
            .spawn(move || timer_loop.run())
            .map_err(|source| WorkqueueError::SpawnTimer {
                queue: config.name.clone(),
                source,
            })?;
        let retries = match &config.metrics {
            Some(m) if !config.name.is_empty() => Some(m.retries(&config.name)),
            _ => None,
        };
        Ok(DelayingQueue {
            queue,
            timer: Arc::new(Timer {
                shared,
                handle: Mutex::new(Some(handle)),
            }),
            pending,
            retries,
        })
    }

    delegate_queue!(queue);

    /// Add `key` once `delay` has passed on the queue's clock; `delay == 0`
    /// adds it now. If `key` already waits, the earlier time wins. Ignored
    /// while shutting down. Counts one retry in the metrics, as upstream.
    pub fn add_after(&self, key: K, delay: Duration) {
        if self.queue.shutting_down() {
            return;
        }
        if let Some(r) = &self.retries {
            r.inc();
        }
        if delay.is_zero() {
            self.queue.add(key);
            return;
        }
        let now = self.queue.clock().now();
        let ready_at = now
            .checked_add(delay.min(FAR_FUTURE))
            .unwrap_or(now + Duration::from_secs(3600));
        let shared = &self.timer.shared;
        let mut st = shared.lock();
        if st.stop {
            // The timer has exited: the queue is shutting down.
            return;
        }
        let head = st.heap.next_ready();
        // Even a key whose time has already come goes through the heap, so
        // that one batch is added in ready-time order.
        if st.heap.insert(key, ready_at) {
            self.pending.fetch_add(1, Ordering::SeqCst);
        }
        drop(st);
        // The thread waits for `head`: wake it only for an earlier time.
        if head.is_none_or(|h| ready_at < h) {
            shared.wake.notify_one();
        }
    }

    /// Every key waiting for longer than `within` from now (a backoff, a
    /// dropped key's later retry) is added `within` from now instead; how
    /// many. Keys due sooner keep their time.
    pub fn pull_in(&self, within: Duration) -> usize {
        let by = self.queue.clock().now() + within.min(FAR_FUTURE);
        let shared = &self.timer.shared;
        let moved = shared.lock().heap.pull_in(by);
        if moved > 0 {
            shared.wake.notify_one();
        }
        moved
    }

    /// Keys given to `add_after` that have not reached the queue yet
    /// (waiting in the timer's heap), not counting merged ones.
    pub fn waiting_len(&self) -> usize {
        self.pending.load(Ordering::SeqCst)
    }

    /// Shut down (see [`Queue::shut_down`]) and stop the timer thread;
    /// keys still waiting for their time are dropped.
    pub fn shut_down(&self) {
        self.queue.shut_down();
        self.timer.stop();
    }

    /// Shut down, wait up to `timeout` for keys in flight to be done (see
    /// [`Queue::shut_down_with_drain`]), then stop the timer thread.
    pub fn shut_down_with_drain(&self, timeout: Duration) -> bool {
        let drained = self.queue.shut_down_with_drain(timeout);
        self.timer.stop();
        drained
    }
}

/// The timer thread's state.
struct TimerLoop<K> {
    queue: Queue<K>,
    shared: Arc<Shared<K>>,
    pending: Arc<AtomicUsize>,
}

impl<K: Key> TimerLoop<K> {
    fn run(self) {
        let clock: SharedClock = Arc::clone(self.queue.clock());
        let max_wait = self.queue.max_wait();
        let mut st = self.shared.lock();
        loop {
            if st.stop {
                return;
            }
            if self.queue.shutting_down() {
                return;
            }
            let now = clock.now();
            let ready = st.heap.pop_ready(now);
            if !ready.is_empty() {
                // Add every key whose time has come, without the heap's
                // lock (`add_after` may run meanwhile).
                drop(st);
                let n = ready.len();
                for key in ready {
                    self.queue.add(key);
                }
                self.pending.fetch_sub(n, Ordering::SeqCst);
                st = self.shared.lock();
                continue;
            }
            st = match st.heap.next_ready() {
                Some(at) => {
                    let wait = at.saturating_duration_since(now).min(max_wait);
                    self.shared
                        .wake
                        .wait_timeout(st, wait)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
                // Nothing waits: only `add_after`, `pull_in` or a stop can
                // change that, and each of them wakes the thread.
                None => self.shared.wake.wait(st).unwrap_or_else(|p| p.into_inner()),
            };
        }
    }
}
