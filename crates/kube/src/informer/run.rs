//! The watcher thread: drives one [`Reflector`] against a
//! [`ListerWatcher`], applies its outputs to the [`Store`] and delivers the
//! resulting notifications to the handlers, in order, on this same thread.
//!
//! It decides nothing itself (the reflector does); it only moves data and
//! sleeps through the clock. It stops between requests and between watch
//! events once shutdown is triggered; a watch blocked in a read is woken by
//! the source (for the HTTP client: `Client::shutdown_watches()`) or by the
//! server's timeout. It must never hold the store lock while calling
//! handlers (the store returns notifications, this thread delivers them).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::handlers::Handlers;
use super::metrics::InformerMetrics;
use super::reflector::{Action, Input, Output, Reflector, State};
use super::source::{
    Cacheable, ErrorKind, ListRequest, ListerWatcher, SourceError, SourceEvent, WatchRequest,
};
use super::store::Store;
use crate::shutdown::Shutdown;
use endpointd_base::clock::SharedClock;

/// Longest single clock sleep, so that shutdown is noticed during backoff.
const SLEEP_SLICE: Duration = Duration::from_millis(100);

/// Everything the watcher thread owns.
pub(crate) struct Worker<T> {
    pub(crate) source: Arc<dyn ListerWatcher<T>>,
    pub(crate) store: Store<T>,
    pub(crate) handlers: Handlers<T>,
    pub(crate) reflector: Reflector<T>,
    pub(crate) clock: SharedClock,
    pub(crate) shutdown: Shutdown,
    pub(crate) synced: Arc<AtomicBool>,
    pub(crate) metrics: Option<Arc<InformerMetrics>>,
    /// Shared with the other informers of the API server.
    pub(crate) history: Arc<super::history::History>,
    /// Rung once the first list has been delivered.
    pub(crate) bell: Option<Arc<super::SyncBell>>,
    /// The history epoch when the last list (or watch-list) started.
    pub(crate) listed_epoch: u64,
    /// Our resourceVersion when the server last said it is too large, until
    /// the list that follows completes: only if that list's resourceVersion
    /// is lower did the history go back (a restore, a fresh server). An HA
    /// server whose watch cache lags says the same, but a consistent list
    /// from it is not behind us: then only this informer lists again, as
    /// client-go's reflector does.
    pub(crate) behind_from: Option<String>,
    /// The source's [`ListerWatcher::link_returns`] when the last request
    /// started (or a watch stream failed): a later value means the server
    /// answered some request since, and a backoff for a failure that did
    /// not reach it ends at once.
    pub(crate) link_seen: u64,
}

/// Why a backoff's sleep ended.
#[derive(Debug, PartialEq, Eq)]
enum Woken {
    /// It ran its course (or shutdown).
    Elapsed,
    /// Another informer found the server's history behind ours.
    HistoryMoved,
    /// Some request of this process got through after an outage.
    ServerBack,
}

impl<T: Cacheable> Worker<T> {
    /// Run until shutdown.
    pub(crate) fn run(mut self) {
        let resource = self.source.resource().to_string();
        log::debug!("informer {resource}: started");
        while !self.shutdown.is_triggered() {
            let now = self.clock.now();
            match self.reflector.next_action(now) {
                Action::List(req) => {
                    if req.continue_token.is_none() {
                        self.listed_epoch = self.history.epoch();
                    }
                    self.link_seen = self.source.link_returns();
                    let res = self.source.list(&req);
                    if let Err(e) = &res {
                        self.report_error("list", e);
                    }
                    let out = self.reflector.step(Input::Listed(res), self.clock.now());
                    self.apply(out);
                }
                Action::Watch(req) if req.send_initial_events => {
                    self.listed_epoch = self.history.epoch();
                    self.watch(&req)
                }
                Action::Watch(_) | Action::Probe(_) if self.history_moved() => {
                    self.reflector.relist()
                }
                Action::Probe(req) => self.probe(&req),
                Action::Watch(req) => self.watch(&req),
                // A backoff (up to a minute after a long outage) is cut
                // short when another informer finds the server's history
                // behind: caches of two histories side by side make the
                // controllers write from both (409s, or writes undone); and
                // when the server answers again after an outage, so that
                // every cache resumes within a slice of the first request
                // that gets through (the lease thread tries every 2 s)
                // instead of each at the end of its own backoff.
                Action::Wait(d) => match self.sleep(d) {
                    Woken::HistoryMoved if self.history_moved() => self.reflector.relist(),
                    Woken::ServerBack => self.server_back(),
                    _ => {}
                },
            }
        }
        log::debug!("informer {resource}: stopped");
    }

    /// The history probe: a consistent LIST of one object, whose
    /// resourceVersion the reflector compares with ours.
    fn probe(&mut self, req: &ListRequest) {
        self.link_seen = self.source.link_returns();
        let res = self.source.list(req).map(|p| p.resource_version);
        if let Err(e) = &res {
            self.report_error("probe (list of one)", e);
        }
        let failed = res.is_err();
        let out = self.reflector.step(Input::Probed(res), self.clock.now());
        if let Some(m) = &self.metrics {
            let result = match (&out, failed) {
                (_, true) => "failed",
                (Output::WentBack { .. }, _) => "behind",
                _ => "current",
            };
            m.probe(self.source.resource(), result);
        }
        self.apply(out);
    }

    fn watch(&mut self, req: &WatchRequest) {
        let watch_list = self.reflector.uses_watch_list();
        self.watch_stream(req);
        if watch_list && !self.reflector.uses_watch_list() {
            log::warn!(
                "informer {}: watch-list refused or ignored by the server; using LIST from now on",
                self.source.resource()
            );
            if let Some(m) = &self.metrics {
                m.watch_list_fallback(self.source.resource());
            }
        }
    }

    fn watch_stream(&mut self, req: &WatchRequest) {
        self.link_seen = self.source.link_returns();
        let stream = match self.source.watch(req) {
            Ok(s) => s,
            Err(e) => {
                self.report_error("watch", &e);
                let out = self
                    .reflector
                    .step(Input::WatchOpened(Err(e)), self.clock.now());
                self.apply(out);
                return;
            }
        };
        let _ = self
            .reflector
            .step(Input::WatchOpened(Ok(())), self.clock.now());
        if let Some(m) = &self.metrics {
            m.watch_opened(self.source.resource(), self.clock.now());
        }
        for item in stream {
            if self.shutdown.is_triggered() {
                return;
            }
            if let Err(e) = &item {
                // Not from the watch's start: the watch may have lasted
                // through another client's outage and return.
                self.link_seen = self.source.link_returns();
                self.report_error("watch", e);
            }
            let out = self.reflector.step(Input::Event(item), self.clock.now());
            self.apply(out);
            if !self.reflector.is_watching() {
                return;
            }
            // A watch-list's stream is an ordinary watch once its initial
            // events are in; only while collecting them is it a list.
            let listing = matches!(self.reflector.state(), State::WatchListing { .. });
            if !listing && self.history_moved() {
                self.reflector.relist();
                return;
            }
        }
        let out = self.reflector.step(Input::WatchEnded, self.clock.now());
        self.apply(out);
    }

    fn apply(&mut self, out: Output<T>) {
        match out {
            Output::None => {}
            Output::Failed(e) => self.report_error("list or watch", &e),
            Output::WentBack { server, ours } => {
                self.went_back(&format!("it is at rv {server}, we watched from {ours}"));
            }
            Output::Replace { items, rv } => {
                self.confirm_history_behind(&rv);
                let initial = !self.synced.load(Ordering::SeqCst);
                let notes = self.store.replace(items, &rv, initial);
                log::info!(
                    "informer {}: {} of {} objects at rv {rv} ({} changes)",
                    self.source.resource(),
                    if initial { "listed" } else { "relisted" },
                    self.store.len(),
                    notes.len()
                );
                let t = self.clock.now();
                self.handlers.dispatch_all(&notes);
                log::debug!(
                    "informer {}: handlers took {:?}",
                    self.source.resource(),
                    self.clock.now().saturating_duration_since(t)
                );
                self.synced.store(true, Ordering::SeqCst);
                if let (true, Some(b)) = (initial, &self.bell) {
                    b.ring();
                }
                if let Some(m) = &self.metrics {
                    m.list_done(
                        self.source.resource(),
                        initial,
                        self.store.len(),
                        self.clock.wall(),
                    );
                }
            }
            Output::Apply(ev) => {
                let kind = event_kind(&ev);
                if let Some(n) = self.store.apply(ev) {
                    self.handlers.dispatch(&n);
                }
                if let Some(m) = &self.metrics {
                    m.event(
                        self.source.resource(),
                        kind,
                        self.store.len(),
                        self.clock.wall(),
                    );
                    m.watch_active(self.source.resource(), self.clock.now());
                }
            }
        }
    }

    /// Whether another informer found the server's history behind its own
    /// since this one last listed (logged here, once per informer).
    fn history_moved(&self) -> bool {
        let moved = self.history.epoch() != self.listed_epoch;
        if moved {
            match self.history.relist_reason() {
                Some(why) => log::info!("informer {}: listing again: {why}", self.source.resource()),
                None => log::info!(
                    "informer {}: the API server's history went back since our last list; listing again",
                    self.source.resource()
                ),
            }
        }
        moved
    }

    /// A list after "too large resource version" completed at `rv`: if it
    /// is behind the resourceVersion we had, the server's history went
    /// back; move the shared epoch so that every informer lists again (only
    /// the first informer to notice, per epoch).
    fn confirm_history_behind(&mut self, rv: &str) {
        let Some(old) = self.behind_from.take() else {
            return;
        };
        if !super::History::is_behind(rv, &old) {
            return;
        }
        if let Some(epoch) = self.went_back(&format!("listed at rv {rv}, we had {old}")) {
            // This list already follows the new history.
            self.listed_epoch = epoch;
        }
    }

    /// This informer found the server behind the resourceVersion it had
    /// (`detail` says how): move the shared epoch, unless another informer
    /// did so since our last list, so that every informer lists again; the
    /// new epoch if this call moved it.
    fn went_back(&mut self, detail: &str) -> Option<u64> {
        let epoch = self.history.went_back_from(self.listed_epoch)?;
        log::warn!(
            "informer {}: the API server's history went back ({detail}: restored from a backup, or a new server?): every informer lists again (#{epoch})",
            self.source.resource()
        );
        Some(epoch)
    }

    fn report_error(&mut self, what: &str, e: &SourceError) {
        if e.history_behind && self.behind_from.is_none() {
            self.behind_from = Some(self.store.resource_version());
        }
        let kind = match e.kind {
            ErrorKind::Expired => "expired",
            ErrorKind::Transient => "transient",
            ErrorKind::Other => "other",
        };
        log::warn!("informer {}: {what} failed: {e}", self.source.resource());
        if let Some(m) = &self.metrics {
            m.error(self.source.resource(), kind);
        }
    }

    /// Sleep `d`, in slices, unless the shared history epoch moved since
    /// our last list or the server came back after an outage since our
    /// last request.
    fn sleep(&self, d: Duration) -> Woken {
        let deadline = self.clock.now() + d;
        while !self.shutdown.is_triggered() {
            let left = deadline.saturating_duration_since(self.clock.now());
            if left.is_zero() {
                return Woken::Elapsed;
            }
            if self.history.epoch() != self.listed_epoch {
                return Woken::HistoryMoved;
            }
            if self.source.link_returns() != self.link_seen {
                return Woken::ServerBack;
            }
            self.clock.sleep(left.min(SLEEP_SLICE));
        }
        Woken::Elapsed
    }

    /// The server answered some request after an outage: end a backoff for
    /// a failure that did not reach it (any other backoff runs on, until
    /// the next return).
    fn server_back(&mut self) {
        self.link_seen = self.source.link_returns();
        if self.reflector.retry_now() {
            log::info!(
                "informer {}: the API server answers again; retrying now instead of at the end of the backoff",
                self.source.resource()
            );
        }
    }
}

fn event_kind<T>(ev: &SourceEvent<T>) -> &'static str {
    match ev {
        SourceEvent::Added(_) => "ADDED",
        SourceEvent::Modified(_) => "MODIFIED",
        SourceEvent::Deleted(_) => "DELETED",
        SourceEvent::Bookmark { .. } => "BOOKMARK",
    }
}
