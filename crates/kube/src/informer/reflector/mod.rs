//! The reflector as a pure state machine (client-go `reflector.go`,
//! kube-runtime `watcher.rs`): which request to make next, and what a
//! result means for the cache. It owns no thread, no socket and no clock:
//! the watcher thread (`run.rs`) feeds it results with the current time and
//! carries out its [`Action`]s and [`Output`]s.
//!
//! Decisions (and where they differ from client-go, and why):
//! - Every LIST — the first one too — is a consistent read (`resourceVersion`
//!   unset) paginated with `limit` = 500 (client-go's first list uses RV "0"
//!   from the watch cache; the issue asks for a paginated list, and a
//!   consistent read never goes back in time after a 410).
//! - WATCH from the list's RV with `allowWatchBookmarks`, `timeoutSeconds`
//!   random in [300, 600) like client-go.
//! - Every event and bookmark advances the RV; a watch that ends cleanly
//!   resumes from it without a relist, provided it was healthy (lasted 1 s
//!   or carried an event); a "very short watch" backs off first.
//! - 410 Expired (on open or as an ERROR event) relists at once — unless the
//!   last list completed less than 1 s ago, then it backs off (no hot loop
//!   against a server that compacts constantly).
//! - Transient errors (transport, 429, 5xx) back off and re-open the watch
//!   from the same RV: cheaper than client-go's relist on a flaky edge link
//!   and still correct, since a too-old RV is answered with 410.
//! - Other errors (undecodable events, 403, …) and every LIST failure back
//!   off and relist. The delay is at least the server's `Retry-After`.
//! - Beyond client-go: a backoff for a failure that did not reach the server
//!   (DNS, connect, I/O, a connect or send timeout) ends at [`Reflector::retry_now`], which the
//!   thread calls once another request of the process got through after an
//!   outage; client-go's reflectors each wait out their own (up to a minute
//!   after 30 s of failures). Backoffs the server asked for are kept.
//! - Beyond client-go: a watch that did not end by its own `timeoutSeconds`
//!   (a transport error, the server gone, an early or idle end) is followed
//!   by a probe before the next watch: a consistent LIST of one object. If
//!   its resourceVersion is behind ours, the server's history went back (an
//!   etcd restore, a fresh server behind the same address) and we list
//!   again. kube-apiserver accepts a watch from a resourceVersion newer than
//!   its own and stays silent until its counter passes it, so without the
//!   probe the caches would follow the old history (client-go's do, until
//!   the controllers are restarted).
//! - Optional watch-list mode (`watch_list`, client-go's WatchListClient):
//!   instead of a LIST, a watch with `sendInitialEvents=true` from RV ""
//!   whose `ADDED` events are collected until the bookmark marked
//!   `initial_events_end`, which replaces the store; the same stream then
//!   goes on as an ordinary watch. An `Other` failure (e.g. a server that
//!   forbids `sendInitialEvents`) switches this reflector back to LIST for
//!   good, and so does an initial phase without its end bookmark after
//!   `watch_list_bound` (a server that ignores the parameter); other
//!   failures back off and try the watch-list again.
//! - Bounds against a broken or hostile server: at most `max_list_items`
//!   objects and `max_list_pages` pages per LIST, and a continue token that
//!   comes again ends the LIST; each ends it with an error and a relist
//!   after a backoff (reported as [`Output::Failed`]).

mod types;

use std::time::{Duration, Instant};

pub use types::{Action, Input, Output, ReflectorConfig, Resume, State};

use super::backoff::Backoff;
use super::source::{ErrorKind, ListRequest, Page, SourceError, SourceEvent, WatchRequest};
use crate::kube::paging::Paging;

/// Longest backoff the reflector waits, whatever a source's `retry_after`
/// hint says (the hint comes from the server and may be huge).
pub const MAX_BACKOFF_WAIT: Duration = Duration::from_secs(10 * 60);

/// The reflector state machine for one resource.
#[derive(Debug)]
pub struct Reflector<T> {
    state: State<T>,
    config: ReflectorConfig,
    backoff: Backoff,
    rng: fastrand::Rng,
    last_list_done: Option<Instant>,
    lists_started: u64,
    watch_list: bool,
    /// When the first of the watch-list attempts that reached the server
    /// without delivering the initial-events-end bookmark was opened. The
    /// fallback bound counts from here, across attempts: a server that
    /// ignores `sendInitialEvents` may end every attempt (timeoutSeconds,
    /// the idle bound) before one alone lasts `watch_list_bound`. Cleared
    /// by the end bookmark and by an attempt that could not be opened (an
    /// unreachable server is not one that ignores the parameter).
    watch_list_since: Option<Instant>,
    /// The LIST page size now: `config.page_size`, halved (down to
    /// [`MIN_PAGE_SIZE`]) each time a page is over the client's body limits.
    page_size: u32,
    /// The next LIST asks for everything at once: a continue token expired
    /// (410) in the middle of a paged one — client-go's pager falls back the
    /// same way, at once. Paging again from the first page, after a
    /// backoff, would expire again on a link slow enough to outlast the
    /// server's compaction, and the informer would never sync.
    unpaged: bool,
    /// Probe the server's resourceVersion before the next watch (the last
    /// one did not end by its own timeout). Cleared by a probe that finds
    /// the history not behind, and by a complete list.
    verify: bool,
    /// `timeoutSeconds` of the last watch requested: a watch that ends
    /// sooner (less [`TIMEOUT_SLACK`]) ended for another reason.
    watch_timeout: Duration,
    /// When the open watch's stream was opened (a watch-list's `Watching`
    /// counts from its end bookmark instead; the server's timeout does not).
    stream_opened: Option<Instant>,
}

/// How much sooner than its `timeoutSeconds` a watch may end and still
/// count as ended by it (the server counts from before its answer).
pub const TIMEOUT_SLACK: Duration = Duration::from_secs(5);

/// The smallest page a too-large LIST shrinks to; below it the failure is
/// treated like any other (backoff), so a hostile endless body cannot make
/// the reflector loop.
pub const MIN_PAGE_SIZE: u32 = 10;

impl<T: super::source::Cacheable> Reflector<T> {
    /// A reflector in [`State::NeedList`].
    pub fn new(config: ReflectorConfig) -> Reflector<T> {
        let rng = match config.seed {
            Some(s) => fastrand::Rng::with_seed(s),
            None => fastrand::Rng::new(),
        };
        Reflector {
            state: State::NeedList,
            backoff: Backoff::new(config.backoff),
            watch_list: config.watch_list,
            watch_list_since: None,
            page_size: config.page_size.max(1),
            unpaged: false,
            verify: false,
            watch_timeout: Duration::ZERO,
            stream_opened: None,
            config,
            rng,
            last_list_done: None,
            lists_started: 0,
        }
    }

    /// Current state.
    pub fn state(&self) -> &State<T> {
        &self.state
    }

    /// Whether a watch is open (the thread keeps reading events while so).
    pub fn is_watching(&self) -> bool {
        matches!(
            self.state,
            State::Watching { .. } | State::WatchListing { .. }
        )
    }

    /// Whether initial lists use watch-list (false once it was refused).
    pub fn uses_watch_list(&self) -> bool {
        self.watch_list
    }

    /// Number of complete-or-not lists started (page 1 requests); the
    /// first is the initial list, every later one a relist.
    pub fn lists_started(&self) -> u64 {
        self.lists_started
    }

    /// Forget the watch position: the next action lists (used when another
    /// informer found the server's history behind ours).
    pub fn relist(&mut self) {
        self.verify = false;
        self.state = State::NeedList;
    }

    /// End a backoff for a failure that did not reach the server now (the
    /// server answered another request since); whether one was ended. A
    /// backoff the server asked for (429, 5xx, Retry-After) or one after an
    /// answer we cannot use (403, undecodable) is kept: the server being
    /// reachable changes nothing about those.
    pub fn retry_now(&mut self) -> bool {
        match &self.state {
            State::Backoff {
                then,
                unreachable: true,
                ..
            } => {
                self.state = then.resumed();
                true
            }
            _ => false,
        }
    }

    /// The next thing to do at `now`. Ends an elapsed backoff.
    pub fn next_action(&mut self, now: Instant) -> Action {
        if let State::Backoff { until, then, .. } = &self.state {
            if now < *until {
                return Action::Wait(*until - now);
            }
            self.state = then.resumed();
        }
        match &self.state {
            State::NeedList if self.watch_list => {
                self.lists_started += 1;
                self.state = State::NeedWatchList;
                let mut req = self.watch_request(String::new());
                req.send_initial_events = true;
                Action::Watch(req)
            }
            State::NeedList => {
                self.lists_started += 1;
                Action::List(self.list_request(None))
            }
            State::NeedWatchList | State::WatchListing { .. } => {
                let mut req = self.watch_request(String::new());
                req.send_initial_events = true;
                Action::Watch(req)
            }
            State::Listing { continue_token, .. } => {
                Action::List(self.list_request(Some(continue_token.clone())))
            }
            State::NeedWatch { .. } if self.verify => Action::Probe(ListRequest {
                limit: Some(1),
                continue_token: None,
                resource_version: None,
            }),
            State::NeedWatch { rv } | State::Watching { rv, .. } => {
                let rv = rv.clone();
                Action::Watch(self.watch_request(rv))
            }
            State::Backoff { .. } => Action::Wait(Duration::ZERO),
        }
    }

    fn list_request(&self, continue_token: Option<String>) -> ListRequest {
        ListRequest {
            limit: (!self.unpaged).then_some(self.page_size),
            continue_token,
            resource_version: None,
        }
    }

    fn watch_request(&mut self, rv: String) -> WatchRequest {
        let lo = self.config.watch_timeout_min.as_secs();
        let hi = self.config.watch_timeout_max.as_secs().max(lo + 1);
        let secs = self.rng.u64(lo..hi);
        self.watch_timeout = Duration::from_secs(secs);
        WatchRequest {
            resource_version: rv,
            timeout_seconds: u32::try_from(secs).unwrap_or(u32::MAX),
            allow_bookmarks: true,
            send_initial_events: false,
        }
    }

    /// Feed one result observed at `now`.
    pub fn step(&mut self, input: Input<T>, now: Instant) -> Output<T> {
        match input {
            Input::Listed(Ok(page)) => self.on_page(page, now),
            Input::Listed(Err(e)) if e.too_large && self.unpaged => {
                // Everything at once was over the limits: page again.
                self.unpaged = false;
                self.state = State::NeedList;
                Output::None
            }
            Input::Listed(Err(e))
                if e.kind == ErrorKind::Expired
                    && !self.unpaged
                    && matches!(self.state, State::Listing { .. }) =>
            {
                self.unpaged = true;
                self.state = State::NeedList;
                Output::None
            }
            Input::Listed(Err(e)) if e.too_large && self.page_size > MIN_PAGE_SIZE => {
                // Not the server's fault: list again at once, in smaller
                // pages (objects with large annotations exist; the body cap
                // must not make a cluster unlistable).
                self.page_size = (self.page_size / 2).max(MIN_PAGE_SIZE);
                self.state = State::NeedList;
                Output::None
            }
            Input::Listed(Err(e)) => {
                self.unpaged = false;
                self.back_off(now, &e, Resume::List);
                Output::None
            }
            Input::WatchOpened(Ok(())) => {
                self.stream_opened = Some(now);
                match &mut self.state {
                    State::NeedWatch { rv } => {
                        let rv = std::mem::take(rv);
                        self.state = State::Watching {
                            rv,
                            opened: now,
                            events: 0,
                        };
                    }
                    State::NeedWatchList => {
                        let since = *self.watch_list_since.get_or_insert(now);
                        self.state = State::WatchListing {
                            items: Vec::new(),
                            opened: since,
                        }
                    }
                    _ => {}
                }
                Output::None
            }
            Input::WatchOpened(Err(e)) => {
                if matches!(self.state, State::NeedWatchList) {
                    self.watch_list_since = None;
                }
                self.on_watch_error(e, now)
            }
            Input::Event(Err(e)) => self.on_watch_error(e, now),
            Input::Event(Ok(ev)) => match self.state {
                State::WatchListing { .. } => self.on_initial_event(ev, now),
                _ => self.on_event(ev),
            },
            Input::WatchEnded => self.on_watch_end(now),
            Input::Probed(res) => self.on_probe(res, now),
        }
    }

    /// The probe's answer: list again if the server is behind us, else
    /// watch from where we are.
    fn on_probe(&mut self, res: Result<String, SourceError>, now: Instant) -> Output<T> {
        let State::NeedWatch { rv } = &self.state else {
            return Output::None;
        };
        let ours = rv.clone();
        match res {
            Err(e) if e.kind == ErrorKind::Transient => {
                // Still unverified: probe again after the backoff.
                self.back_off(now, &e, Resume::Watch(ours));
                Output::None
            }
            Err(e) => {
                // A probe that cannot succeed (403, an undecodable object)
                // must not hold the informer: list again after the backoff,
                // as after any other failed LIST.
                self.back_off(now, &e, Resume::List);
                Output::None
            }
            Ok(server) => {
                self.verify = false;
                if !crate::informer::History::is_behind(&server, &ours) {
                    return Output::None;
                }
                self.state = State::NeedList;
                Output::WentBack { server, ours }
            }
        }
    }

    fn on_page(&mut self, page: Page<T>, now: Instant) -> Output<T> {
        self.unpaged = false;
        let (mut items, mut paging) = match std::mem::replace(&mut self.state, State::NeedList) {
            State::Listing { items, paging, .. } => (items, paging),
            _ => (
                Vec::new(),
                Paging::new(self.config.max_list_items, self.config.max_list_pages),
            ),
        };
        let n = page.items.len();
        items.extend(page.items);
        match paging.page(n, page.continue_token) {
            Err(e) => {
                let e = SourceError::other(format!("{e}; relisting after a backoff"));
                self.fail_list(e, now)
            }
            Ok(Some(continue_token)) => {
                self.state = State::Listing {
                    continue_token,
                    items,
                    paging,
                };
                Output::None
            }
            Ok(None) => {
                self.last_list_done = Some(now);
                self.verify = false;
                self.state = State::NeedWatch {
                    rv: page.resource_version.clone(),
                };
                Output::Replace {
                    items,
                    rv: page.resource_version,
                }
            }
        }
    }

    /// End a LIST the reflector refuses to finish: back off, relist.
    fn fail_list(&mut self, e: SourceError, now: Instant) -> Output<T> {
        self.back_off(now, &e, Resume::List);
        Output::Failed(e)
    }

    fn on_event(&mut self, ev: SourceEvent<T>) -> Output<T> {
        let State::Watching { rv, events, .. } = &mut self.state else {
            // Not watching (the thread stops reading once a watch failed).
            return Output::None;
        };
        *events += 1;
        let new_rv = match &ev {
            SourceEvent::Added(o) | SourceEvent::Modified(o) | SourceEvent::Deleted(o) => {
                o.resource_version()
            }
            SourceEvent::Bookmark {
                resource_version, ..
            } => resource_version.as_str(),
        };
        if !new_rv.is_empty() {
            *rv = new_rv.to_string();
        }
        Output::Apply(ev)
    }

    /// An event of a watch-list's initial phase: collect it; the end
    /// bookmark replaces the store and turns the stream into a watch.
    fn on_initial_event(&mut self, ev: SourceEvent<T>, now: Instant) -> Output<T> {
        let State::WatchListing { items, opened } = &mut self.state else {
            return Output::None;
        };
        let ended = matches!(
            ev,
            SourceEvent::Bookmark {
                initial_events_end: true,
                ..
            }
        );
        if !ended && now.saturating_duration_since(*opened) >= self.config.watch_list_bound {
            return self.watch_list_ignored(now);
        }
        if items.len() >= self.config.max_list_items {
            self.watch_list = false;
            let e = SourceError::other(format!(
                "watch-list delivered more than {} objects (kubernetes.max_list_items); using LIST from now on",
                self.config.max_list_items
            ));
            self.back_off(now, &e, Resume::List);
            return Output::Failed(e);
        }
        match ev {
            SourceEvent::Added(o) | SourceEvent::Modified(o) => items.push(o),
            SourceEvent::Deleted(o) => {
                let key = o.key();
                items.retain(|i| i.key() != key);
            }
            SourceEvent::Bookmark {
                resource_version,
                initial_events_end: true,
            } => {
                let items = std::mem::take(items);
                self.watch_list_since = None;
                self.verify = false;
                self.state = State::Watching {
                    rv: resource_version.clone(),
                    opened: now,
                    events: 1,
                };
                self.last_list_done = Some(now);
                return Output::Replace {
                    items,
                    rv: resource_version,
                };
            }
            SourceEvent::Bookmark { .. } => {}
        }
        Output::None
    }

    /// No initial-events-end bookmark within the bound: the server ignores
    /// `sendInitialEvents` (older API servers); LIST from now on.
    fn watch_list_ignored(&mut self, now: Instant) -> Output<T> {
        self.watch_list = false;
        let e = SourceError::other(format!(
            "watch-list: no initial-events-end bookmark within {}s of opening (the server ignores sendInitialEvents); using LIST from now on",
            self.config.watch_list_bound.as_secs()
        ));
        self.back_off(now, &e, Resume::List);
        Output::Failed(e)
    }

    fn on_watch_list_error(&mut self, e: SourceError, now: Instant) -> Output<T> {
        if let State::WatchListing { opened, .. } = self.state {
            if now.saturating_duration_since(opened) >= self.config.watch_list_bound {
                return self.watch_list_ignored(now);
            }
        }
        if e.kind == ErrorKind::Other {
            self.watch_list = false;
        }
        self.back_off(now, &e, Resume::List);
        Output::None
    }

    fn current_rv(&self) -> Option<String> {
        match &self.state {
            State::NeedWatch { rv } | State::Watching { rv, .. } => Some(rv.clone()),
            _ => None,
        }
    }

    fn on_watch_error(&mut self, e: SourceError, now: Instant) -> Output<T> {
        if matches!(
            self.state,
            State::NeedWatchList | State::WatchListing { .. }
        ) {
            return self.on_watch_list_error(e, now);
        }
        let Some(rv) = self.current_rv() else {
            return Output::None;
        };
        match e.kind {
            ErrorKind::Expired => {
                let fresh = self.last_list_done.is_some_and(|t| {
                    now.saturating_duration_since(t) < self.config.min_watch_duration
                });
                if fresh {
                    self.back_off(now, &e, Resume::List);
                } else {
                    self.state = State::NeedList;
                }
            }
            ErrorKind::Transient => {
                self.verify = true;
                self.back_off(now, &e, Resume::Watch(rv))
            }
            ErrorKind::Other => self.back_off(now, &e, Resume::List),
        }
        Output::None
    }

    fn on_watch_end(&mut self, now: Instant) -> Output<T> {
        if let State::WatchListing { .. } = self.state {
            let e = SourceError::transient("watch-list ended before its initial events did");
            return match self.on_watch_list_error(e.clone(), now) {
                Output::None => Output::Failed(e),
                other => other,
            };
        }
        let State::Watching { rv, opened, events } = &self.state else {
            return Output::None;
        };
        let lasted = now.saturating_duration_since(*opened);
        let healthy = *events > 0 || lasted >= self.config.min_watch_duration;
        let streamed = now.saturating_duration_since(self.stream_opened.unwrap_or(*opened));
        if streamed + TIMEOUT_SLACK < self.watch_timeout {
            self.verify = true;
        }
        let rv = rv.clone();
        if healthy {
            self.state = State::NeedWatch { rv };
        } else {
            let e = SourceError::transient("very short watch: ended at once without events");
            self.back_off(now, &e, Resume::Watch(rv));
        }
        Output::None
    }

    fn back_off(&mut self, now: Instant, e: &SourceError, then: Resume) {
        let r = self.rng.f64();
        let d = self.backoff.next_delay(now, r);
        let d = e
            .retry_after
            .map_or(d, |ra| d.max(ra))
            .min(MAX_BACKOFF_WAIT);
        // checked: `now + d` panics on overflow, which would kill the
        // informer thread; an unrepresentable deadline retries at once.
        let until = now.checked_add(d).unwrap_or(now);
        self.state = State::Backoff {
            until,
            then,
            unreachable: e.unreachable,
        };
    }
}

#[cfg(test)]
mod tests;
