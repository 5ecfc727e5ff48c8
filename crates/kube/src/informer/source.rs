//! The informer's view of the API server: the [`ListerWatcher`] trait, the
//! list/watch request and event types, the [`Cacheable`] object contract,
//! and the error classification the reflector acts on.
//!
//! This module owns the seam between informers and the HTTP client, so that
//! reflectors and stores can be tested against in-memory fakes. It must
//! never decide *what* to do about an error (that is the reflector's job);
//! it only says which kind of error it is.

use std::fmt;
use std::time::Duration;

/// What an informer needs to know about a cached object.
///
/// Implemented for the trimmed `model` projections; test types implement it
/// directly. Objects are immutable once cached (shared as `Arc<T>`).
pub trait Cacheable: Clone + Send + Sync + 'static {
    /// Store key: `"namespace/name"`, or `"name"` for cluster-scoped objects
    /// (client-go `MetaNamespaceKeyFunc`).
    fn key(&self) -> String;
    /// `metadata.name` (the store hashes and compares objects on their
    /// namespace and name instead of keeping a key string per object).
    fn name(&self) -> &str;
    /// Namespace, empty for cluster-scoped objects.
    fn namespace(&self) -> &str;
    /// `metadata.resourceVersion` (opaque; only compared for equality).
    fn resource_version(&self) -> &str;
    /// The value of label `name`, if set.
    fn label(&self, name: &str) -> Option<&str>;
    /// Every label, for indexes over all of them (none by default).
    fn label_pairs(&self) -> Vec<(&str, &str)> {
        Vec::new()
    }
    /// The first pair (in key order) of the equality selector the object
    /// carries (a Service's): `None` without a selector, `Some(None)` for
    /// the empty selector `{}`.
    fn selector_first_pair(&self) -> Option<Option<(&str, &str)>> {
        None
    }
}

/// Every API object of the model is cacheable.
impl<T: crate::model::Object> Cacheable for T {
    fn key(&self) -> String {
        crate::model::Object::key(self)
    }
    fn name(&self) -> &str {
        crate::model::Object::name(self)
    }
    fn namespace(&self) -> &str {
        crate::model::Object::namespace(self).unwrap_or("")
    }
    fn resource_version(&self) -> &str {
        crate::model::Object::resource_version(self)
    }
    fn label(&self, name: &str) -> Option<&str> {
        self.labels().get(name)
    }
    fn label_pairs(&self) -> Vec<(&str, &str)> {
        self.labels().iter().collect()
    }
    fn selector_first_pair(&self) -> Option<Option<(&str, &str)>> {
        crate::model::Object::selector(self).map(|s| s.iter().next())
    }
}

/// One LIST request (one page).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListRequest {
    /// Page size (`limit`); `None` asks for everything at once.
    pub limit: Option<u32>,
    /// `continue` token from the previous page.
    pub continue_token: Option<String>,
    /// `resourceVersion`; `None` means a consistent (quorum) read.
    pub resource_version: Option<String>,
}

/// One page of a LIST answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// The objects of this page.
    pub items: Vec<T>,
    /// `metadata.resourceVersion` of the list.
    pub resource_version: String,
    /// `metadata.continue`; `None` or empty on the last page.
    pub continue_token: Option<String>,
}

/// One WATCH request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchRequest {
    /// Resume point: events strictly after this resourceVersion.
    pub resource_version: String,
    /// Server-side end of the watch (`timeoutSeconds`).
    pub timeout_seconds: u32,
    /// `allowWatchBookmarks`.
    pub allow_bookmarks: bool,
    /// Watch-list (`sendInitialEvents=true`,
    /// `resourceVersionMatch=NotOlderThan`): the stream starts with an
    /// `ADDED` event per existing object, ended by a bookmark with
    /// `initial_events_end`.
    pub send_initial_events: bool,
}

/// One event read from a watch stream. Server `ERROR` events are not
/// events: the source turns them into a [`SourceError`] item.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceEvent<T> {
    /// `ADDED`.
    Added(T),
    /// `MODIFIED`.
    Modified(T),
    /// `DELETED` (the object's last state).
    Deleted(T),
    /// `BOOKMARK`: only moves the resourceVersion forward.
    Bookmark {
        /// The bookmark's resourceVersion.
        resource_version: String,
        /// Annotated `k8s.io/initial-events-end: "true"`: the initial
        /// events of a watch-list are complete.
        initial_events_end: bool,
    },
}

/// The events of one open watch, ending when the watch ends. An `Err` item
/// ends the watch with that error.
pub type SourceEvents<T> = Box<dyn Iterator<Item = Result<SourceEvent<T>, SourceError>> + Send>;

/// How the reflector must react to a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// 410 Gone / reason `Expired`: the resourceVersion is too old.
    /// Not retryable as is: relist with a consistent read.
    Expired,
    /// Transport failure, timeout, 429 or 5xx: retryable after backoff
    /// with the same request (a watch resumes from the same RV).
    Transient,
    /// Anything else (undecodable event, 4xx such as 403): retryable only
    /// after backoff and a fresh list, because events may have been lost.
    Other,
}

/// A list or watch failure, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError {
    /// What to do about it.
    pub kind: ErrorKind,
    /// Human-readable cause (never contains credentials).
    pub message: String,
    /// Server's `Retry-After` hint; the reflector waits at least this long.
    pub retry_after: Option<Duration>,
    /// A LIST page was over the client's body limits: a smaller page may
    /// fit (objects with large annotations, e.g.).
    pub too_large: bool,
    /// The server's history is behind the requested resourceVersion
    /// ("too large resource version"): it was restored or replaced.
    pub history_behind: bool,
    /// The request did not reach the server (connect, TLS, I/O, timeout):
    /// a backoff for it ends as soon as any request of this process gets
    /// through again ([`ListerWatcher::link_returns`]).
    pub unreachable: bool,
}

impl SourceError {
    /// An [`ErrorKind::Expired`] error.
    pub fn expired(message: impl Into<String>) -> SourceError {
        SourceError::new(ErrorKind::Expired, message)
    }
    /// An [`ErrorKind::Transient`] error.
    pub fn transient(message: impl Into<String>) -> SourceError {
        SourceError::new(ErrorKind::Transient, message)
    }
    /// An [`ErrorKind::Other`] error.
    pub fn other(message: impl Into<String>) -> SourceError {
        SourceError::new(ErrorKind::Other, message)
    }
    fn new(kind: ErrorKind, message: impl Into<String>) -> SourceError {
        SourceError {
            kind,
            message: message.into(),
            retry_after: None,
            too_large: false,
            history_behind: false,
            unreachable: false,
        }
    }
    /// The same error marked as a request that did not reach the server.
    pub fn unreachable(mut self) -> SourceError {
        self.unreachable = true;
        self
    }
    /// The same error marked as a server whose history is behind ours.
    pub fn history_behind(mut self) -> SourceError {
        self.history_behind = true;
        self
    }
    /// The same error marked as a page over the body limits.
    pub fn page_too_large(mut self) -> SourceError {
        self.too_large = true;
        self
    }
    /// The same error with a `Retry-After` hint.
    pub fn with_retry_after(mut self, d: Option<Duration>) -> SourceError {
        self.retry_after = d;
        self
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.message)
    }
}

impl std::error::Error for SourceError {}

/// Lists and watches one resource (optionally in one namespace, with
/// selectors fixed at construction).
pub trait ListerWatcher<T>: Send + Sync {
    /// Short name for logs and metrics, e.g. `"pods"`.
    fn resource(&self) -> &str;
    /// Fetch one page.
    fn list(&self, req: &ListRequest) -> Result<Page<T>, SourceError>;
    /// Open a watch. Blocking reads happen in the returned iterator.
    fn watch(&self, req: &WatchRequest) -> Result<SourceEvents<T>, SourceError>;
    /// How many times the server came back after no request of this
    /// process got through for a while (`kube::Link::returns`); a source
    /// that cannot tell says 0 forever.
    fn link_returns(&self) -> u64 {
        0
    }
}
