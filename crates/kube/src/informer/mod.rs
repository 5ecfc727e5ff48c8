//! Informers: one reflector per resource on its own watcher thread keeping
//! a small, always-correct local cache, and telling handlers what changed.
//!
//! ```text
//! ListerWatcher ─▶ reflector (pure state machine) ─▶ watcher thread
//!                      backoff (pure)                  │ store.apply/replace
//!                                                      ▼
//!                                   Store (RwLock, indexes) ─▶ handlers (same thread)
//! ```
//!
//! - [`source`]: the [`ListerWatcher`] seam and error classification;
//!   [`kube_source`] adapts it onto `kube::Client`.
//! - [`reflector`]: what to request next and what results mean (pure).
//! - [`backoff`]: client-go's reflector backoff (pure).
//! - [`store`]: the cache and its indexes; relist swap with synthetic events.
//! - [`handlers`]: notifications, tombstones, ordered delivery.
//!
//! This module owns the [`Informer`] handle (start, store reader,
//! `has_synced`), [`wait_for_sync`] and the [`SyncBell`] an informer rings
//! when it has synced. Informers never write to the API
//! server and never call `Instant::now()` (time comes from the clock).
//!
//! Operational notes (defaults and why):
//! - LIST pages of 500 (client-go's pager): a page is parsed straight into
//!   trimmed objects, so a LIST never holds more than one page of JSON.
//! - Watches ask for `timeoutSeconds` in [300, 600) so that many daemons do
//!   not reconnect in lockstep; bookmarks keep the resume point fresh so a
//!   reconnect after a quiet period does not need a relist.
//! - Backoff 800 ms doubling to 30 s (jittered up to ×2), reset after 2
//!   minutes without failures; `Retry-After` is honoured as a minimum. A
//!   backoff after a failure to reach the server ends as soon as any
//!   request of the process reaches it again (`kube::Link`).
//! - Memory: one `Arc<T>` per object plus its key (shared with the index
//!   buckets). A relist holds the old and the new content until the swap,
//!   so the peak is about twice the steady cache.
//! - Handlers run on the watcher thread: keep them to "enqueue a key".
//! - A relist notifies only what changed: adds, updates for objects whose
//!   resourceVersion differs, deletes. client-go's `Replace` also sends an
//!   update for every unchanged object; we deliberately do not, because
//!   the controllers are level-triggered and their handlers only enqueue
//!   keys, so those updates would re-reconcile state already reconciled
//!   (there is no resync here; see [`store::Store::replace`]).
//! - Shutdown: trigger the [`Shutdown`] and wake blocked watch reads (for
//!   the HTTP client, `Client::shutdown_watches()`), then [`Informer::join`].

pub mod backoff;
pub mod handlers;
pub mod history;
pub mod kube_source;
pub mod metrics;
pub mod reflector;
mod run;
pub mod source;
pub mod store;

#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub use handlers::{DeletedObject, EventHandler, Handlers, Notification, Recorder};
pub use history::History;
pub use kube_source::KubeSource;
pub use metrics::InformerMetrics;
pub use reflector::{Reflector, ReflectorConfig};
pub use source::{
    Cacheable, ErrorKind, ListRequest, ListerWatcher, Page, SourceError, SourceEvent, SourceEvents,
    WatchRequest,
};
pub use store::{IndexKey, Store, SERVICE_NAME_LABEL};

use crate::shutdown::Shutdown;
use endpointd_base::clock::{RealClock, SharedClock};

/// Something that reports whether its cache has synced.
pub trait Synced {
    /// Name for logs (the resource).
    fn name(&self) -> &str;
    /// Whether the first list has been delivered to the handlers.
    fn has_synced(&self) -> bool;
}

/// Wait until every informer has synced (true) or shutdown is triggered
/// (false). Polls every 100 ms like client-go's `WaitForCacheSync`.
pub fn wait_for_sync(informers: &[&dyn Synced], shutdown: &Shutdown) -> bool {
    loop {
        if informers.iter().all(|i| i.has_synced()) {
            let names: Vec<&str> = informers.iter().map(|i| i.name()).collect();
            log::info!("caches synced: {}", names.join(", "));
            return true;
        }
        if shutdown.wait_timeout(Duration::from_millis(100)) {
            return false;
        }
    }
}

/// Rung by each informer once its first list has been delivered, so that
/// whoever waits for the caches (the daemon's supervisor) goes on at once
/// instead of at its next poll.
#[derive(Debug, Default)]
pub struct SyncBell {
    rung: std::sync::Mutex<u64>,
    cv: std::sync::Condvar,
}

impl SyncBell {
    /// How often it has rung so far (pass to [`SyncBell::wait_timeout`]).
    pub fn count(&self) -> u64 {
        *self.rung.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ring: wake every waiter.
    pub fn ring(&self) {
        *self.rung.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.cv.notify_all();
    }

    /// Block until it has rung more than `seen` times, or for `d` (real
    /// time). Returns whether it rang.
    pub fn wait_timeout(&self, seen: u64, d: Duration) -> bool {
        let g = self.rung.lock().unwrap_or_else(|p| p.into_inner());
        let (g, _) = self
            .cv
            .wait_timeout_while(g, d, |n| *n == seen)
            .unwrap_or_else(|p| p.into_inner());
        *g != seen
    }
}

/// Configures and starts an [`Informer`].
pub struct InformerBuilder<T> {
    source: Arc<dyn ListerWatcher<T>>,
    config: ReflectorConfig,
    indexes: Vec<IndexKey>,
    handlers: Handlers<T>,
    clock: SharedClock,
    metrics: Option<Arc<InformerMetrics>>,
    history: Arc<History>,
    bell: Option<Arc<SyncBell>>,
}

impl<T: Cacheable> InformerBuilder<T> {
    /// Ring this bell once the first list has been delivered.
    pub fn bell(mut self, b: Arc<SyncBell>) -> Self {
        self.bell = Some(b);
        self
    }
    /// Share this history with the other informers of the same API server
    /// (default: its own, i.e. nothing shared).
    pub fn history(mut self, h: Arc<History>) -> Self {
        self.history = h;
        self
    }
    /// Reflector tuning (default: client-go's).
    pub fn config(mut self, config: ReflectorConfig) -> Self {
        self.config = config;
        self
    }
    /// Maintain this secondary index (the namespace index is always kept).
    pub fn index(mut self, by: IndexKey) -> Self {
        if !self.indexes.contains(&by) {
            self.indexes.push(by);
        }
        self
    }
    /// Register a handler; handlers are called in registration order.
    pub fn handler(mut self, h: Arc<dyn EventHandler<T>>) -> Self {
        self.handlers.push(h);
        self
    }
    /// Clock for backoff and timestamps (default: the real clock).
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }
    /// Record metrics in these (shared) families.
    pub fn metrics(mut self, m: Arc<InformerMetrics>) -> Self {
        self.metrics = Some(m);
        self
    }

    /// Spawn the watcher thread. Fails only if the OS refuses a thread.
    pub fn start(self, shutdown: &Shutdown) -> std::io::Result<Informer<T>> {
        let name = self.source.resource().to_string();
        let store = Store::new(&self.indexes);
        let synced = Arc::new(AtomicBool::new(false));
        let worker = run::Worker {
            source: self.source,
            store: store.clone(),
            handlers: self.handlers,
            reflector: Reflector::new(self.config),
            clock: self.clock,
            shutdown: shutdown.clone(),
            synced: Arc::clone(&synced),
            metrics: self.metrics,
            history: self.history,
            bell: self.bell,
            listed_epoch: 0,
            behind_from: None,
            link_seen: 0,
        };
        let thread = std::thread::Builder::new()
            .name(format!("informer-{name}"))
            .spawn(move || worker.run())?;
        Ok(Informer {
            name,
            store,
            synced,
            thread: Some(thread),
        })
    }
}

/// A running informer: a watcher thread filling a [`Store`].
#[derive(Debug)]
pub struct Informer<T> {
    name: String,
    store: Store<T>,
    synced: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl<T: Cacheable> Informer<T> {
    /// Start configuring an informer over `source`.
    pub fn builder(source: Arc<dyn ListerWatcher<T>>) -> InformerBuilder<T> {
        InformerBuilder {
            source,
            config: ReflectorConfig::default(),
            indexes: vec![IndexKey::Namespace],
            handlers: Handlers::default(),
            clock: RealClock::shared(),
            metrics: None,
            history: Arc::default(),
            bell: None,
        }
    }

    /// A reader handle on the cache (cheap to clone, share with workers).
    pub fn store(&self) -> Store<T> {
        self.store.clone()
    }

    /// Whether the first list has been delivered to the handlers.
    pub fn has_synced(&self) -> bool {
        self.synced.load(Ordering::SeqCst)
    }

    /// Whether the watcher thread is still running (false after shutdown,
    /// or if a handler panicked — the cache is then frozen, so a supervisor
    /// should treat it as fatal).
    pub fn is_alive(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Wait for the watcher thread to end (after shutdown was triggered and
    /// any blocked watch was woken). Returns false if the thread panicked.
    pub fn join(mut self) -> bool {
        self.thread.take().is_none_or(|t| t.join().is_ok())
    }

    /// Like [`Informer::join`], but gives up after `within` (the thread is
    /// left to end on its own, e.g. at process exit).
    pub fn join_within(mut self, within: std::time::Duration) -> bool {
        self.thread
            .take()
            .is_none_or(|t| crate::shutdown::join_within(t, within))
    }
}

impl<T: Cacheable> Synced for Informer<T> {
    fn name(&self) -> &str {
        &self.name
    }
    fn has_synced(&self) -> bool {
        Informer::has_synced(self)
    }
}
