//! Test doubles for the informer's unit tests: a tiny cacheable object and
//! a scripted in-memory [`ListerWatcher`] that records every request.
//! Test-only; it must never be compiled into the daemon.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use super::source::{
    Cacheable, ListRequest, ListerWatcher, Page, SourceError, SourceEvent, SourceEvents,
    WatchRequest,
};
use endpointd_base::clock::{Clock, RealClock};

/// A minimal namespaced object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Obj {
    pub ns: String,
    pub name: String,
    pub rv: String,
    pub labels: Vec<(String, String)>,
}

/// `Obj` in `ns` named `name` at `rv`, without labels.
pub(crate) fn obj(ns: &str, name: &str, rv: &str) -> Obj {
    Obj {
        ns: ns.into(),
        name: name.into(),
        rv: rv.into(),
        labels: Vec::new(),
    }
}

impl Obj {
    /// The same object with one more label.
    pub(crate) fn label(mut self, k: &str, v: &str) -> Obj {
        self.labels.push((k.into(), v.into()));
        self
    }
}

impl Cacheable for Obj {
    fn key(&self) -> String {
        if self.ns.is_empty() {
            self.name.clone()
        } else {
            format!("{}/{}", self.ns, self.name)
        }
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn namespace(&self) -> &str {
        &self.ns
    }
    fn resource_version(&self) -> &str {
        &self.rv
    }
    fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A page of `items` at `rv`, with an optional continue token.
pub(crate) fn page(items: Vec<Obj>, rv: &str, cont: Option<&str>) -> Page<Obj> {
    Page {
        items,
        resource_version: rv.into(),
        continue_token: cont.map(str::to_string),
    }
}

type Item = Result<SourceEvent<Obj>, SourceError>;

/// What one watch request gets.
pub(crate) enum WatchScript {
    /// These items, then a clean end.
    Items(Vec<Item>),
    /// Whatever arrives on the channel until the sender is dropped.
    Channel(Receiver<Item>),
    /// The open fails.
    Fail(SourceError),
}

#[derive(Default)]
struct Script {
    lists: VecDeque<Result<Page<Obj>, SourceError>>,
    watches: VecDeque<WatchScript>,
    probes: VecDeque<Result<String, SourceError>>,
    list_reqs: Vec<ListRequest>,
    watch_reqs: Vec<WatchRequest>,
    probe_reqs: usize,
}

/// A scripted source. When a script runs out, requests fail as transient
/// errors (so the reflector backs off instead of spinning).
#[derive(Default)]
pub(crate) struct FakeSource {
    script: Mutex<Script>,
    returns: AtomicU64,
}

impl FakeSource {
    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(|p| p.into_inner())
    }
    pub(crate) fn push_list(&self, r: Result<Page<Obj>, SourceError>) {
        self.lock().lists.push_back(r);
    }
    /// The answer to the next probe (a consistent LIST of one object); when
    /// none is scripted, probes answer "" (an opaque resourceVersion, never
    /// behind ours).
    pub(crate) fn push_probe(&self, r: Result<String, SourceError>) {
        self.lock().probes.push_back(r);
    }
    pub(crate) fn probes(&self) -> usize {
        self.lock().probe_reqs
    }
    pub(crate) fn push_watch(&self, w: WatchScript) {
        self.lock().watches.push_back(w);
    }
    pub(crate) fn list_reqs(&self) -> Vec<ListRequest> {
        self.lock().list_reqs.clone()
    }
    pub(crate) fn watch_reqs(&self) -> Vec<WatchRequest> {
        self.lock().watch_reqs.clone()
    }
    /// Some other request got through after an outage (`link_returns`).
    pub(crate) fn server_back(&self) {
        self.returns.fetch_add(1, Ordering::SeqCst);
    }
    /// Total requests so far.
    pub(crate) fn requests(&self) -> usize {
        let s = self.lock();
        s.list_reqs.len() + s.watch_reqs.len() + s.probe_reqs
    }
}

impl ListerWatcher<Obj> for FakeSource {
    fn resource(&self) -> &str {
        "objs"
    }
    fn list(&self, req: &ListRequest) -> Result<Page<Obj>, SourceError> {
        let mut s = self.lock();
        if req.limit == Some(1) && req.continue_token.is_none() {
            s.probe_reqs += 1;
            let rv = s.probes.pop_front().unwrap_or_else(|| Ok(String::new()));
            return rv.map(|rv| page(Vec::new(), &rv, None));
        }
        s.list_reqs.push(req.clone());
        s.lists
            .pop_front()
            .unwrap_or_else(|| Err(SourceError::transient("list script exhausted")))
    }
    fn watch(&self, req: &WatchRequest) -> Result<SourceEvents<Obj>, SourceError> {
        let mut s = self.lock();
        s.watch_reqs.push(req.clone());
        match s.watches.pop_front() {
            Some(WatchScript::Items(v)) => Ok(Box::new(v.into_iter())),
            Some(WatchScript::Channel(rx)) => Ok(Box::new(rx.into_iter())),
            Some(WatchScript::Fail(e)) => Err(e),
            None => Err(SourceError::transient("watch script exhausted")),
        }
    }
    fn link_returns(&self) -> u64 {
        self.returns.load(Ordering::SeqCst)
    }
}

/// Poll `cond` (real time, 2 ms steps) for up to 5 s.
pub(crate) fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let clock = RealClock;
    let deadline = clock.now() + Duration::from_secs(5);
    while !cond() {
        assert!(clock.now() < deadline, "timed out waiting for: {what}");
        clock.sleep(Duration::from_millis(2));
    }
}

/// An arbitrary base instant for pure tests.
pub(crate) fn t0() -> Instant {
    RealClock.now()
}
