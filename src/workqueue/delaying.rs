//! The delaying queue (upstream `delaying_queue.go`): a [`Queue`] plus
//! `add_after(key, d)`, served by one timer thread per queue.
//!
//! The timer thread owns a [`DelayHeap`]. It reads the injected clock, adds
//! every key whose time has come, then waits on its channel until the
//! earliest ready time, so that an earlier `add_after` wakes it at once. Real
//! waits are capped at the config's `max_wait` (upstream's 10 s heartbeat;
//! a few ms in tests with a fake clock, which real waits cannot observe).
//! The timer never holds the queue's lock while it waits and exits on
//! shutdown or when the last handle is dropped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::config::QueueConfig;
use super::delay_heap::DelayHeap;
use super::queue::Queue;
use super::{delegate_queue, Key, WorkqueueError};
use crate::clock::SharedClock;
use crate::metrics::Counter;

/// Delays beyond this are treated as this (about 100 years), so that
/// `now + delay` cannot overflow.
const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

enum Msg<K> {
    /// Add the key at this time.
    Wait(K, Instant),
    /// Exit now.
    Stop,
}

#[derive(Debug)]
struct Timer<K> {
    tx: Sender<Msg<K>>,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl<K> Timer<K> {
    fn stop(&self) {
        let _ = self.tx.send(Msg::Stop);
        let handle = self.handle.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = handle {
            if h.join().is_err() {
                log::error!("work queue timer thread panicked");
            }
        }
    }
}

impl<K> std::fmt::Debug for Msg<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Msg::Wait(_, at) => write!(f, "Wait({at:?})"),
            Msg::Stop => f.write_str("Stop"),
        }
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
        let (tx, rx) = crossbeam_channel::unbounded();
        let pending = Arc::new(AtomicUsize::new(0));
        let timer_loop = TimerLoop {
            queue: queue.clone(),
            rx,
            pending: Arc::clone(&pending),
            heap: DelayHeap::new(),
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
                tx,
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
        self.pending.fetch_add(1, Ordering::SeqCst);
        if self.timer.tx.send(Msg::Wait(key, ready_at)).is_err() {
            // The timer has exited: the queue is shutting down.
            self.pending.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Keys given to `add_after` that have not reached the queue yet (sent
    /// to the timer, or waiting in its heap), not counting merged ones.
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
    rx: Receiver<Msg<K>>,
    pending: Arc<AtomicUsize>,
    heap: DelayHeap<K>,
}

impl<K: Key> TimerLoop<K> {
    fn run(mut self) {
        let clock: SharedClock = Arc::clone(self.queue.clock());
        let max_wait = self.queue.max_wait();
        loop {
            if self.queue.shutting_down() {
                return;
            }
            let now = clock.now();
            self.fire(now);
            let wait = match self.heap.next_ready() {
                Some(at) => at.saturating_duration_since(now).min(max_wait),
                None => max_wait,
            };
            let msg = match self.rx.recv_timeout(wait) {
                Ok(msg) => msg,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return,
            };
            if !self.accept(msg) {
                return;
            }
            while let Ok(msg) = self.rx.try_recv() {
                if !self.accept(msg) {
                    return;
                }
            }
        }
    }

    /// Add every key whose time has come.
    fn fire(&mut self, now: Instant) {
        let ready = self.heap.pop_ready(now);
        let n = ready.len();
        for key in ready {
            self.queue.add(key);
        }
        if n > 0 {
            self.pending.fetch_sub(n, Ordering::SeqCst);
        }
    }

    /// Take one message; `false` means exit.
    fn accept(&mut self, msg: Msg<K>) -> bool {
        match msg {
            Msg::Stop => false,
            Msg::Wait(key, at) => {
                // Even a key whose time has already come goes through the
                // heap, so that one batch is added in ready-time order.
                if !self.heap.insert(key, at) {
                    // Merged with an entry already waiting.
                    self.pending.fetch_sub(1, Ordering::SeqCst);
                }
                true
            }
        }
    }
}
