//! Transactions: every read and write of the store happens inside one
//! [`Txn`], under the store lock. A write takes the next resourceVersion,
//! stamps it, records the event (history, write log, watcher fan-out) and
//! keeps the uid/owner indexes current.
//!
//! Decides nothing about request semantics (callers validate first).

use super::event::{Event, EventType, Key, WriteRecord};
use super::mvcc::{Inner, Page, Version};
use super::objects::Obj;
use super::resources::RESOURCES;
use super::status::ApiError;
use super::store::{GcWork, Store};
use super::watch::Watcher;
use serde_json::Value;
use std::sync::{Arc, OnceLock};

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

/// A transaction: reads and writes under the store lock.
pub struct Txn<'a> {
    pub(crate) store: &'a Store,
    pub(crate) inner: &'a mut Inner,
    /// `dryRun=All`: writes compute their result but change nothing.
    pub(crate) dry_run: bool,
}

impl Txn<'_> {
    /// Queue background work for the collector (not in a dry run).
    pub fn gc(&self, work: GcWork) {
        if !self.dry_run {
            self.store.gc(work);
        }
    }

    /// Make every following write of this transaction a dry run (nothing is
    /// stored, no resourceVersion is taken, no event or log entry is made).
    pub fn set_dry_run(&mut self, on: bool) {
        self.dry_run = on;
    }

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

    /// The key of the live object with this uid.
    pub fn key_of_uid(&self, uid: &str) -> Option<Key> {
        self.inner.uids.get(uid).cloned()
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
        if self.dry_run {
            return Arc::new(Obj::new(key.info(), value));
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
        // An owner already gone when its dependent was written (a
        // controller acting on a stale cache): the collector deletes the
        // dependent, or drops that reference, as it would have had the
        // owner gone afterwards.
        for owner in obj.owner_uids() {
            if !self.uid_alive(owner) {
                self.store.gc(GcWork::OwnerGone(owner.clone()));
            }
        }
        obj
    }

    /// Delete the object at `key` (if any), taking the next resourceVersion.
    /// Returns its last state (stamped with the delete's resourceVersion).
    pub fn delete(&mut self, key: &Key, verb: &str) -> Option<Arc<Obj>> {
        let prev = self.get(key)?;
        if self.dry_run {
            return Some(prev);
        }
        let rv = self.inner.rv + 1;
        let mut value = prev.value();
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let last = Arc::new(Obj::new(key.info(), value));
        self.unindex(key, &prev);
        self.record(key, verb, EventType::Deleted, last.clone(), Some(prev));
        if let Some(uid) = last.uid() {
            self.store.gc(GcWork::OwnerGone(uid.to_string()));
        }
        for owner in last.owner_uids() {
            self.store.gc(GcWork::DependentGone(owner.clone()));
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
                .entry(owner.clone())
                .or_default()
                .insert(key.clone());
        }
    }

    fn unindex(&mut self, key: &Key, obj: &Obj) {
        if let Some(uid) = obj.uid() {
            self.inner.uids.remove(uid);
        }
        for owner in obj.owner_uids() {
            if let Some(set) = self.inner.dependents.get_mut(owner) {
                set.remove(key);
                if set.is_empty() {
                    self.inner.dependents.remove(owner);
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
        let (user, user_agent) = super::requester::current();
        inner.log.push(WriteRecord {
            verb: verb.to_string(),
            resource: key.info().resource.to_string(),
            namespace: key.info().namespaced.then(|| key.namespace.clone()),
            name: key.name.clone(),
            resource_version: rv,
            time: self.store.clock().wall(),
            user,
            user_agent,
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
        while inner.history.len() > self.store.config().history.max(1) {
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
