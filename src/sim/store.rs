//! The in-memory object store: objects, the global resourceVersion, event
//! history, watch fan-out, and the background threads (bookmark ticker,
//! garbage collector).
//!
//! Invariants (all under the one `inner` mutex):
//! - every write takes `rv + 1`; `objects` keeps, per key, the versions still
//!   needed to serve a list at any resourceVersion ≥ `compacted` (MVCC, so
//!   paginated lists are consistent snapshots); a deleted key keeps a
//!   tombstone version until compaction passes it;
//! - `history` holds the events with resourceVersions `compacted+1 ..= rv`,
//!   contiguous; watches from an older resourceVersion get 410;
//! - each event is serialized once (`Event::line`); every matching watcher
//!   gets a copy of the frame on its stream channel without blocking: a
//!   watcher whose client left or fell too far behind is dropped, so a
//!   slow client never blocks writers.
//!
//! This module never interprets request semantics (validation, generation,
//! preconditions): callers decide inside a [`Txn`]; the store only records.

use super::resources::{ResourceInfo, RESOURCES};
use super::status::ApiError;
use super::watch::Watcher;
use crate::clock::SharedClock;
use crossbeam_channel::Sender;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, SystemTime};

pub use super::objects::Obj;

/// Store settings.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Events kept for watch replay; older resourceVersions get 410 Expired.
    pub history: usize,
    /// Interval of BOOKMARK events on watches that asked for them.
    pub bookmark_interval: Duration,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            history: 10_000,
            bookmark_interval: Duration::from_secs(1),
        }
    }
}

/// One write, for inspection by tests and benchmarks.
#[derive(Debug, Clone, Serialize)]
pub struct WriteRecord {
    /// "create", "update", "patch", "delete".
    pub verb: String,
    /// Plural resource ("endpointslices").
    pub resource: String,
    /// Namespace, if namespaced.
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
    /// resourceVersion the write produced.
    pub resource_version: u64,
    /// Wall time of the write.
    #[serde(with = "system_time_secs")]
    pub time: SystemTime,
}

mod system_time_secs {
    use serde::Serializer;
    use std::time::SystemTime;
    pub fn serialize<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        let secs = t
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        s.serialize_f64(secs)
    }
}

/// Where an object lives: resource (index into [`RESOURCES`]), namespace
/// ("" for cluster-scoped), name. Ordered so one resource is one range.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    /// Index into [`RESOURCES`].
    pub res: usize,
    /// Namespace, "" when cluster-scoped.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl Key {
    /// The key of `name` in `namespace` of resource `info`.
    pub fn new(info: &ResourceInfo, namespace: &str, name: &str) -> Key {
        Key {
            res: res_index(info),
            namespace: if info.namespaced {
                namespace.to_string()
            } else {
                String::new()
            },
            name: name.to_string(),
        }
    }
    /// The resource.
    pub fn info(&self) -> &'static ResourceInfo {
        &RESOURCES[self.res]
    }
}

/// Index of a resource in [`RESOURCES`].
pub fn res_index(info: &ResourceInfo) -> usize {
    RESOURCES.iter().position(|r| r == info).unwrap_or(0)
}

/// Watch event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Created.
    Added,
    /// Updated.
    Modified,
    /// Deleted (`obj` is the last state, stamped with the delete's RV).
    Deleted,
}

impl EventType {
    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One write as watchers see it.
#[derive(Debug)]
pub struct Event {
    /// The write's resourceVersion.
    pub rv: u64,
    /// Which object.
    pub key: Key,
    /// What happened.
    pub kind: EventType,
    /// The object after the write (for DELETED: its last state).
    pub obj: Arc<Obj>,
    /// The object before the write, if any.
    pub prev: Option<Arc<Obj>>,
    /// The wire frame, made once on first use and shared by all watchers.
    line: OnceLock<Vec<u8>>,
}

impl Event {
    /// `{"type":…,"object":…}` + "\n" for this event, serialized once.
    pub fn line(&self) -> &[u8] {
        self.line
            .get_or_init(|| super::watch::frame(self.kind.as_str(), &self.obj.full_json()))
    }
}

#[derive(Debug, Clone)]
struct Version {
    rv: u64,
    obj: Option<Arc<Obj>>,
}

/// Background work for the garbage collector thread.
#[derive(Debug, Clone)]
pub enum GcWork {
    /// An object with this uid was deleted: collect its dependents.
    OwnerGone(String),
    /// This namespace is terminating (or something in it was deleted).
    Namespace(String),
}

#[derive(Debug, Default)]
pub(crate) struct Inner {
    rv: u64,
    objects: BTreeMap<Key, Vec<Version>>,
    history: VecDeque<Arc<Event>>,
    compacted: u64,
    watchers: Vec<Watcher>,
    log: Vec<WriteRecord>,
    /// uid → key of every live object.
    uids: HashMap<String, Key>,
    /// owner uid → keys of objects naming it in ownerReferences.
    dependents: HashMap<String, HashSet<Key>>,
}

/// The store.
#[derive(Debug)]
pub struct Store {
    cfg: StoreConfig,
    clock: SharedClock,
    inner: Mutex<Inner>,
    gc_tx: Sender<GcWork>,
    stopped: AtomicBool,
}

impl Store {
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
        });
        super::objects::create_default_namespaces(&store);
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

    /// The newest resourceVersion.
    pub fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    /// Every write so far, oldest first.
    pub fn write_log(&self) -> Vec<WriteRecord> {
        self.lock().log.clone()
    }

    /// Create the objects of a `v1 List` (items with apiVersion/kind).
    /// Returns how many were created.
    pub fn load_list(&self, list: &Value) -> Result<usize, String> {
        super::objects::load_list(self, list)
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

/// What a new watch sends before live events.
#[derive(Debug)]
pub enum Backlog {
    /// Current objects, as synthetic ADDED events.
    Objects(Vec<Arc<Obj>>),
    /// History events after the start resourceVersion.
    Events(Vec<Arc<Event>>),
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFrom {
    /// Synthetic ADDED events for the current state, then live events.
    CurrentState,
    /// Events after this resourceVersion (replayed from history).
    Rv(u64),
}

/// One page of a list.
#[derive(Debug)]
pub struct Page {
    /// Matching objects in key order.
    pub items: Vec<Arc<Obj>>,
    /// Key of the last returned item when more remain.
    pub next: Option<Key>,
    /// Count of objects after this page (only when `count_rest`).
    pub remaining: Option<usize>,
}

/// A transaction: reads and writes under the store lock.
pub struct Txn<'a> {
    store: &'a Store,
    inner: &'a mut Inner,
}

impl Txn<'_> {
    /// The store.
    pub fn store(&self) -> &Store {
        self.store
    }

    /// Current resourceVersion.
    pub fn rv(&self) -> u64 {
        self.inner.rv
    }

    /// Oldest resourceVersion still served consistently.
    pub fn compacted(&self) -> u64 {
        self.inner.compacted
    }

    /// The live object at `key`.
    pub fn get(&self, key: &Key) -> Option<Arc<Obj>> {
        self.inner
            .objects
            .get(key)
            .and_then(|v| v.last())
            .and_then(|v| v.obj.clone())
    }

    /// Whether an object with this uid is alive.
    pub fn uid_alive(&self, uid: &str) -> bool {
        self.inner.uids.contains_key(uid)
    }

    /// Keys of live objects that name `owner_uid` in their ownerReferences.
    pub fn dependents(&self, owner_uid: &str) -> Vec<Key> {
        let mut v: Vec<Key> = self
            .inner
            .dependents
            .get(owner_uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Every live object of a resource (by plural name, first match).
    pub fn all_of(&self, resource: &str) -> Vec<Arc<Obj>> {
        match RESOURCES.iter().position(|r| r.resource == resource) {
            Some(res) => {
                self.inner
                    .page(res, None, self.inner.rv, None, usize::MAX, &|_| true, false)
                    .items
            }
            None => Vec::new(),
        }
    }

    /// Keys of live objects in a namespace, across all namespaced resources.
    pub fn keys_in_namespace(&self, ns: &str) -> Vec<Key> {
        let mut out = Vec::new();
        for (i, r) in RESOURCES.iter().enumerate() {
            if !r.namespaced {
                continue;
            }
            let lo = Key {
                res: i,
                namespace: ns.to_string(),
                name: String::new(),
            };
            for (k, v) in self.inner.objects.range(lo..) {
                if k.res != i || k.namespace != ns {
                    break;
                }
                if v.last().is_some_and(|v| v.obj.is_some()) {
                    out.push(k.clone());
                }
            }
        }
        out
    }

    /// Store `value` at `key` (create or replace), taking the next
    /// resourceVersion. Strips `kind`/`apiVersion` and stamps
    /// `metadata.resourceVersion`.
    pub fn put(&mut self, key: &Key, verb: &str, mut value: Value) -> Arc<Obj> {
        let rv = self.inner.rv + 1;
        if let Some(m) = value.as_object_mut() {
            m.remove("kind");
            m.remove("apiVersion");
        }
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let obj = Arc::new(Obj::new(key.info(), value));
        let prev = self.get(key);
        let kind = if prev.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        if let Some(p) = &prev {
            self.unindex(key, p);
        }
        self.index(key, &obj);
        self.record(key, verb, kind, obj.clone(), prev);
        obj
    }

    /// Delete the object at `key` (if any), taking the next resourceVersion.
    /// Returns its last state (stamped with the delete's resourceVersion).
    pub fn delete(&mut self, key: &Key, verb: &str) -> Option<Arc<Obj>> {
        let prev = self.get(key)?;
        let rv = self.inner.rv + 1;
        let mut value = prev.value.clone();
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let last = Arc::new(Obj::new(key.info(), value));
        self.unindex(key, &prev);
        self.record(key, verb, EventType::Deleted, last.clone(), Some(prev));
        if let Some(uid) = last.uid() {
            self.store.gc(GcWork::OwnerGone(uid.to_string()));
        }
        if key.info().namespaced {
            self.store.gc(GcWork::Namespace(key.namespace.clone()));
        }
        Some(last)
    }

    fn index(&mut self, key: &Key, obj: &Obj) {
        if let Some(uid) = obj.uid() {
            self.inner.uids.insert(uid.to_string(), key.clone());
        }
        for owner in obj.owner_uids() {
            self.inner
                .dependents
                .entry(owner)
                .or_default()
                .insert(key.clone());
        }
    }

    fn unindex(&mut self, key: &Key, obj: &Obj) {
        if let Some(uid) = obj.uid() {
            self.inner.uids.remove(uid);
        }
        for owner in obj.owner_uids() {
            if let Some(set) = self.inner.dependents.get_mut(&owner) {
                set.remove(key);
                if set.is_empty() {
                    self.inner.dependents.remove(&owner);
                }
            }
        }
    }

    fn record(
        &mut self,
        key: &Key,
        verb: &str,
        kind: EventType,
        obj: Arc<Obj>,
        prev: Option<Arc<Obj>>,
    ) {
        let inner = &mut *self.inner;
        inner.rv += 1;
        let rv = inner.rv;
        let stored = (kind != EventType::Deleted).then(|| obj.clone());
        inner
            .objects
            .entry(key.clone())
            .or_default()
            .push(Version { rv, obj: stored });
        inner.prune(key);
        inner.log.push(WriteRecord {
            verb: verb.to_string(),
            resource: key.info().resource.to_string(),
            namespace: key.info().namespaced.then(|| key.namespace.clone()),
            name: key.name.clone(),
            resource_version: rv,
            time: self.store.clock.wall(),
        });
        let ev = Arc::new(Event {
            rv,
            key: key.clone(),
            kind,
            obj,
            prev,
            line: OnceLock::new(),
        });
        inner.history.push_back(ev.clone());
        while inner.history.len() > self.store.cfg.history.max(1) {
            inner.pop_history();
        }
        inner.fan_out(&ev);
    }

    /// What a new watch on `res` (optionally one namespace) must send
    /// before live events: the current objects (`CurrentState`) or the
    /// history after a resourceVersion (410 when it is compacted away).
    pub fn watch_backlog(
        &self,
        res: usize,
        namespace: Option<&str>,
        from: WatchFrom,
    ) -> Result<Backlog, ApiError> {
        let inner = &*self.inner;
        match from {
            WatchFrom::CurrentState => {
                let page = inner.page(res, namespace, inner.rv, None, usize::MAX, &|_| true, false);
                Ok(Backlog::Objects(page.items))
            }
            WatchFrom::Rv(rv) if rv < inner.compacted => Err(ApiError::new(
                410,
                "Expired",
                format!("too old resource version: {rv} ({})", inner.compacted + 1),
            )),
            WatchFrom::Rv(rv) => Ok(Backlog::Events(
                inner
                    .history
                    .iter()
                    .filter(|e| e.rv > rv && e.key.res == res)
                    .filter(|e| namespace.is_none_or(|ns| e.key.namespace == ns))
                    .cloned()
                    .collect(),
            )),
        }
    }

    /// Start delivering live events to `w` (after everything so far).
    pub fn add_watcher(&mut self, w: Watcher) {
        self.inner.watchers.push(w);
    }

    /// One page of `res` objects as of resourceVersion `at` (which must be
    /// ≥ [`Txn::compacted`]), starting after `after`, at most `limit` items
    /// passing `keep`.
    #[allow(clippy::too_many_arguments)]
    pub fn page(
        &self,
        res: usize,
        namespace: Option<&str>,
        at: u64,
        after: Option<&Key>,
        limit: usize,
        keep: &dyn Fn(&Obj) -> bool,
        count_rest: bool,
    ) -> Page {
        self.inner
            .page(res, namespace, at, after, limit, keep, count_rest)
    }
}

impl Inner {
    /// Drop the oldest history event; prune the versions it made obsolete.
    fn pop_history(&mut self) -> bool {
        let Some(ev) = self.history.pop_front() else {
            return false;
        };
        self.compacted = self.compacted.max(ev.rv);
        self.prune(&ev.key);
        true
    }

    /// Keep only versions visible at some resourceVersion ≥ `compacted`.
    fn prune(&mut self, key: &Key) {
        let compacted = self.compacted;
        let Some(versions) = self.objects.get_mut(key) else {
            return;
        };
        let keep_from = versions
            .iter()
            .rposition(|v| v.rv <= compacted)
            .unwrap_or(0);
        if keep_from > 0 {
            versions.drain(..keep_from);
        }
        if versions.len() == 1 && versions[0].obj.is_none() && versions[0].rv <= compacted {
            self.objects.remove(key);
        }
    }

    fn fan_out(&mut self, ev: &Arc<Event>) {
        // A watcher whose client left or fell too far behind is dropped;
        // its stream ends with its only sender.
        self.watchers.retain_mut(|w| w.deliver(ev));
    }

    #[allow(clippy::too_many_arguments)]
    fn page(
        &self,
        res: usize,
        namespace: Option<&str>,
        at: u64,
        after: Option<&Key>,
        limit: usize,
        keep: &dyn Fn(&Obj) -> bool,
        count_rest: bool,
    ) -> Page {
        use std::ops::Bound;
        let lo = match after {
            Some(k) => Bound::Excluded(k.clone()),
            None => Bound::Included(Key {
                res,
                namespace: namespace.unwrap_or("").to_string(),
                name: String::new(),
            }),
        };
        let mut items = Vec::new();
        let mut next = None;
        let mut remaining = 0usize;
        for (k, versions) in self.objects.range((lo, Bound::Unbounded)) {
            if k.res != res || namespace.is_some_and(|ns| ns != k.namespace) {
                break;
            }
            let Some(obj) = versions
                .iter()
                .rev()
                .find(|v| v.rv <= at)
                .and_then(|v| v.obj.as_ref())
            else {
                continue;
            };
            if !keep(obj) {
                continue;
            }
            if items.len() < limit {
                items.push(obj.clone());
                continue;
            }
            if next.is_none() {
                next = items.last().map(|_| ());
                if !count_rest {
                    break;
                }
            }
            remaining += 1;
        }
        let more = next.is_some();
        Page {
            next: if more {
                items.last().map(|o| o.key())
            } else {
                None
            },
            items,
            remaining: (more && count_rest).then_some(remaining),
        }
    }
}
