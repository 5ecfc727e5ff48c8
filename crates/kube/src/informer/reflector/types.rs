//! The reflector's vocabulary: its tuning ([`ReflectorConfig`]), its
//! states, and the actions, inputs and outputs of its step function.
//! Plain data only; the transitions live in the parent module.

use std::time::{Duration, Instant};

use crate::informer::backoff::BackoffConfig;
use crate::informer::source::{ListRequest, Page, SourceError, SourceEvent, WatchRequest};
use crate::kube::paging::{Paging, DEFAULT_MAX_LIST_PAGES};

/// Reflector tuning; [`Default`] is client-go's.
#[derive(Debug, Clone, PartialEq)]
pub struct ReflectorConfig {
    /// LIST page size (client-go pager: 500).
    pub page_size: u32,
    /// Smallest `timeoutSeconds` of a watch (client-go: 300 s).
    pub watch_timeout_min: Duration,
    /// The watch timeout is drawn from [min, max) (client-go: 600 s).
    pub watch_timeout_max: Duration,
    /// A watch that ends sooner without any event is "very short" (1 s).
    pub min_watch_duration: Duration,
    /// Backoff between failed attempts.
    pub backoff: BackoffConfig,
    /// Seed for jitter and watch timeouts; `None` seeds from the OS.
    pub seed: Option<u64>,
    /// Use watch-list (streaming initial events) instead of LIST.
    pub watch_list: bool,
    /// Most objects one LIST (all pages) or watch-list initial phase may
    /// deliver (`kubernetes.max_list_items`); more ends it with an error.
    pub max_list_items: usize,
    /// Most pages one LIST may take.
    pub max_list_pages: u32,
    /// A watch-list whose initial-events-end bookmark has not come this
    /// long after the watch opened is taken for a server that ignores
    /// `sendInitialEvents`: the reflector falls back to LIST for good.
    pub watch_list_bound: Duration,
}

impl Default for ReflectorConfig {
    fn default() -> ReflectorConfig {
        ReflectorConfig {
            page_size: 500,
            watch_timeout_min: Duration::from_secs(300),
            watch_timeout_max: Duration::from_secs(600),
            min_watch_duration: Duration::from_secs(1),
            backoff: BackoffConfig::default(),
            seed: None,
            watch_list: false,
            max_list_items: 200_000,
            max_list_pages: DEFAULT_MAX_LIST_PAGES,
            watch_list_bound: Duration::from_secs(120),
        }
    }
}

/// Where a backoff leads once it has elapsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// Start a fresh list.
    List,
    /// Re-open the watch from this RV.
    Watch(String),
}

impl Resume {
    /// The state a backoff leaves to.
    pub(super) fn resumed<T>(&self) -> State<T> {
        match self {
            Resume::List => State::NeedList,
            Resume::Watch(rv) => State::NeedWatch { rv: rv.clone() },
        }
    }
}

/// The reflector's state.
#[derive(Debug, Clone, PartialEq)]
pub enum State<T> {
    /// Entered at start, after 410, and after the backoff that follows a
    /// list failure or an `Other` watch error. Left by requesting page 1.
    NeedList,
    /// Watch-list mode: entered instead of a LIST request; a watch with
    /// `sendInitialEvents` must be opened. Left when the open succeeds
    /// (→ `WatchListing`) or fails (→ `Backoff`).
    NeedWatchList,
    /// Watch-list mode: collecting the initial events. Left by the
    /// `initial_events_end` bookmark (→ `Watching`, store replaced) or a
    /// failure or early end (→ `Backoff`, then a fresh list).
    WatchListing {
        /// Objects of the initial events so far.
        items: Vec<T>,
        /// When the first of the consecutive watch-list attempts without
        /// an initial-events-end bookmark was opened (this one, usually).
        opened: Instant,
    },
    /// Entered when a page with a `continue` token arrives; holds the pages
    /// so far (the store is swapped only once the list is complete). Left by
    /// the last page (→ `NeedWatch`) or a failure (→ `Backoff`).
    Listing {
        /// Token for the next page.
        continue_token: String,
        /// Items of the pages so far.
        items: Vec<T>,
        /// The LIST's bounds: objects, pages, no continue token twice.
        paging: Paging,
    },
    /// Entered after a complete list or a healthy watch end: a watch from
    /// `rv` must be opened. Left when the open succeeds or fails.
    NeedWatch {
        /// Resume point.
        rv: String,
    },
    /// A watch is open; every event advances `rv`. Left when it ends.
    Watching {
        /// Last RV seen.
        rv: String,
        /// When the watch was opened.
        opened: Instant,
        /// Events (bookmarks included) received on it.
        events: u64,
    },
    /// Waiting out a backoff until `until`, then `then`.
    Backoff {
        /// End of the wait.
        until: Instant,
        /// What follows.
        then: Resume,
        /// The failure did not reach the server: the wait ends early once
        /// the server answers another request ([`Reflector::retry_now`]).
        ///
        /// [`Reflector::retry_now`]: super::Reflector::retry_now
        unreachable: bool,
    },
}

/// What the watcher thread must do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Fetch a page and feed [`Input::Listed`].
    List(ListRequest),
    /// Open a watch and feed [`Input::WatchOpened`], then its events.
    Watch(WatchRequest),
    /// Before watching again after a watch that did not end by its own
    /// timeout: a consistent one-object LIST, whose resourceVersion is fed
    /// as [`Input::Probed`] (is the server's history behind ours?).
    Probe(ListRequest),
    /// Sleep this long, then ask again.
    Wait(Duration),
}

/// A result fed into the machine.
#[derive(Debug)]
pub enum Input<T> {
    /// A LIST page or its failure.
    Listed(Result<Page<T>, SourceError>),
    /// A WATCH was opened, or failed to open.
    WatchOpened(Result<(), SourceError>),
    /// One item of the open watch.
    Event(Result<SourceEvent<T>, SourceError>),
    /// The open watch ended cleanly (the stream ran out).
    WatchEnded,
    /// The resourceVersion of a [`Action::Probe`] LIST, or its failure.
    Probed(Result<String, SourceError>),
}

/// What the watcher thread must do with the cache.
#[derive(Debug, PartialEq)]
pub enum Output<T> {
    /// Nothing to change.
    None,
    /// A complete list: replace the store's content (synthetic events).
    Replace {
        /// All items of all pages.
        items: Vec<T>,
        /// The list's resourceVersion.
        rv: String,
    },
    /// Apply one watch event (bookmarks only move the RV).
    Apply(SourceEvent<T>),
    /// A probe found the server's history behind the resourceVersion we
    /// watch from (an etcd restore, a fresh server): this informer lists
    /// again; the thread tells the others.
    WentBack {
        /// The server's current resourceVersion (the probe's).
        server: String,
        /// Ours.
        ours: String,
    },
    /// The reflector itself ended a list or watch (a bound was exceeded, a
    /// watch-list was cut short or ignored): report it (log, count); the
    /// state already says what comes next.
    Failed(SourceError),
}
