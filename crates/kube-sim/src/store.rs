//! The in-memory object store: objects, the global resourceVersion, event
//! history, watch fan-out, and the background threads (bookmark ticker,
//! garbage collector).
//!
//! All state sits in one [`super::mvcc::Inner`] behind one mutex, touched
//! only through [`Txn`]s:
//! - every write takes `rv + 1`; per-key version chains (MVCC) make
//!   paginated lists consistent snapshots;
//! - a bounded history serves watch replay; older resourceVersions get 410;
//! - each event is serialized once (`Event::line`); every matching watcher
//!   gets a copy of the frame on its stream channel without blocking: a
//!   watcher whose client left or fell too far behind is dropped, so a
//!   slow client never blocks writers.
//!
//! This module never interprets request semantics (validation, generation,
//! preconditions): callers decide inside a [`Txn`]; the store only records.

use super::mvcc::Inner;
use crossbeam_channel::Sender;
use endpointd_base::clock::SharedClock;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

pub use super::event::{res_index, Event, EventType, Key, WriteRecord};
pub use super::mvcc::Page;
pub use super::txn::{Backlog, Txn, WatchFrom};

/// Store settings.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Events kept for watch replay; older resourceVersions get 410 Expired.
    pub history: usize,
    /// Interval of BOOKMARK events on watches that asked for them.
    pub bookmark_interval: Duration,
    /// Pods are deleted gracefully (a simulated kubelet finishes them):
    /// DELETE sets deletionTimestamp and keeps the pod terminating.
    pub graceful_pods: bool,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            history: 10_000,
            bookmark_interval: Duration::from_secs(1),
            graceful_pods: false,
        }
    }
}

/// Background work for the garbage collector thread.
#[derive(Debug, Clone)]
pub enum GcWork {
    /// An object with this uid was deleted: collect its dependents.
    OwnerGone(String),
    /// This namespace is terminating (or something in it was deleted).
    Namespace(String),
    /// This owner is being deleted in the foreground: delete its dependents.
    Foreground(String),
    /// A dependent of this owner went away: finish the owner's foreground
    /// deletion once it has no dependents left.
    DependentGone(String),
}

/// The store.
#[derive(Debug)]
pub struct Store {
    cfg: StoreConfig,
    clock: SharedClock,
    inner: Mutex<Inner>,
    gc_tx: Sender<GcWork>,
    stopped: AtomicBool,
    /// Fault mode: `sendInitialEvents` is ignored, as by API servers older
    /// than 1.27 (a watch from "" then replays the state as ADDED events and
    /// never sends the initial-events-end bookmark).
    ignore_initial_events: AtomicBool,
}

impl Store {
    /// Whether watches ignore `sendInitialEvents` (see
    /// [`Store::set_ignore_initial_events`]).
    pub fn ignores_initial_events(&self) -> bool {
        self.ignore_initial_events.load(Ordering::SeqCst)
    }

    /// Make watches ignore `sendInitialEvents`, like an API server older
    /// than 1.27 (fault mode; off by default).
    pub fn set_ignore_initial_events(&self, on: bool) {
        self.ignore_initial_events.store(on, Ordering::SeqCst);
    }

    /// A new, empty store (the namespaces `default`, `kube-system`,
    /// `kube-public` and `kube-node-lease` exist from the start).
    pub fn new(cfg: StoreConfig, clock: SharedClock) -> Arc<Store> {
        let (gc_tx, gc_rx) = crossbeam_channel::unbounded();
        let store = Arc::new(Store {
            cfg,
            clock,
            inner: Mutex::new(Inner::default()),
            gc_tx,
            stopped: AtomicBool::new(false),
            ignore_initial_events: AtomicBool::new(false),
        });
        super::load::create_default_namespaces(&store);
        let weak = Arc::downgrade(&store);
        std::thread::Builder::new()
            .name("sim-gc".into())
            .spawn(move || super::gc::run(weak, gc_rx))
            .ok();
        let weak = Arc::downgrade(&store);
        let tick = store
            .cfg
            .bookmark_interval
            .clamp(Duration::from_millis(10), Duration::from_secs(1));
        let clock = store.clock.clone();
        std::thread::Builder::new()
            .name("sim-ticker".into())
            .spawn(move || ticker(weak, clock, tick))
            .ok();
        store
    }

    /// The store's settings.
    pub fn config(&self) -> &StoreConfig {
        &self.cfg
    }

    /// The store's clock.
    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Run `f` as one atomic transaction over the store.
    pub fn txn<R>(&self, f: impl FnOnce(&mut Txn<'_>) -> R) -> R {
        let mut inner = self.lock();
        let mut t = Txn {
            store: self,
            inner: &mut inner,
            dry_run: false,
        };
        f(&mut t)
    }

    /// Fault: end every open watch stream now.
    pub fn close_all_watches(&self) {
        self.lock().watchers.clear();
    }

    /// Fault: drop the event history; every resourceVersion older than the
    /// current one now gets 410 Expired on watch.
    pub fn compact(&self) {
        let mut inner = self.lock();
        while inner.pop_history() {}
        inner.compacted = inner.rv;
    }

    /// Fault: what `etcdutl snapshot restore --bump-revision BY
    /// --mark-compacted` does to a restored store: the resourceVersion
    /// jumps by `by` and everything older is compacted, so a client that
    /// watched at an older one gets 410 and lists again.
    pub fn bump_revision(&self, by: u64) {
        let mut inner = self.lock();
        while inner.pop_history() {}
        inner.rv = inner.rv.saturating_add(by);
        inner.compacted = inner.rv;
    }

    /// Fault: consume one resourceVersion that no object gets (as a
    /// write that was answered but lost); returns it. History is kept.
    pub fn skip_revision(&self) -> u64 {
        let mut inner = self.lock();
        inner.rv = inner.rv.saturating_add(1);
        inner.rv
    }

    /// The newest resourceVersion.
    pub fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    /// Every write so far, oldest first.
    pub fn write_log(&self) -> Vec<WriteRecord> {
        self.write_log_since(0).0
    }

    /// The write log from entry `since` on (empty when `since` is past its
    /// end), and the log's length.
    pub fn write_log_since(&self, since: usize) -> (Vec<WriteRecord>, usize) {
        let inner = self.lock();
        let tail = inner.log.get(since..).unwrap_or_default().to_vec();
        (tail, inner.log.len())
    }

    /// Create the objects of a `v1 List` (items with apiVersion/kind).
    /// Returns how many were created.
    pub fn load_list(&self, list: &Value) -> Result<usize, super::load::LoadError> {
        super::load::load_list(self, list)
    }

    /// Stop background threads and close all watches.
    pub fn shutdown(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.close_all_watches();
    }

    /// Whether `shutdown` was called.
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Number of open watches (for tests and metrics).
    pub fn watch_count(&self) -> usize {
        self.lock().watchers.len()
    }

    /// Queue work for the garbage collector.
    pub(crate) fn gc(&self, work: GcWork) {
        let _ = self.gc_tx.send(work);
    }

    fn tick_all(&self) {
        let now = self.clock.now();
        let mut inner = self.lock();
        let rv = inner.rv;
        inner.watchers.retain_mut(|w| w.tick(now, rv));
    }
}

fn ticker(store: Weak<Store>, clock: SharedClock, tick: Duration) {
    loop {
        clock.sleep(tick);
        match store.upgrade() {
            Some(s) if !s.is_stopped() => s.tick_all(),
            _ => return,
        }
    }
}
