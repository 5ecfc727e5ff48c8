//! The informer cache: a thread-safe map from key (`ns/name`) to the latest
//! object, with secondary indexes (by namespace; by a label such as
//! `kubernetes.io/service-name` for EndpointSlices).
//!
//! Memory (issue 13): the map and the index buckets are hashbrown
//! `HashTable`s of `Arc<T>` hashed and compared on the object's own
//! namespace and name, so no `ns/name` String is kept per object and an
//! entry is one pointer (8 bytes) instead of a key and a value; a bucket
//! holding a single object keeps it inline, one of up to 16 objects is
//! one exact-size array, and only a bigger one is a table. The map is one
//! table per namespace, which is the namespace index too: a pod costs one
//! table slot, not two (for 10,000 pods in one namespace a second
//! 16,384-slot table, ~147 KB).
//!
//! CPU (issue 13): an object's index values are composed in one reused
//! buffer to find its buckets, so a write allocates only for a bucket it
//! creates; an update files the new object first and then removes the old
//! one only from the buckets the new one is not in, so an update that
//! leaves its labels alone neither empties nor recreates a bucket (an
//! array bucket is copied with the new object in place: a few `Arc`
//! clones).
//!
//! Invariants:
//! - every index entry is the very `Arc` held in `items` for that key, and
//!   every item is in exactly the index buckets its current state computes
//!   to;
//! - readers see either the whole state before a write or the whole state
//!   after it: a relist builds the complete new map and indexes *outside*
//!   the lock and swaps them in with one pointer-sized move, so readers never
//!   observe a half-empty cache;
//! - objects are immutable `Arc<T>`: readers get cheap clones and may keep
//!   them after the store moves on.
//!
//! Only the informer's watcher thread writes (`apply`, `replace`); the store
//! never talks to the network and never calls handlers itself — it returns
//! the [`Notification`]s the caller must deliver (on relist only for
//! objects whose resourceVersion changed, unlike client-go; see
//! [`Store::replace`] for why). One `RwLock` guards the
//! whole map; the cache-memory bench compares it against a sharded map
//! (see the informer report): reads are short (clone an `Arc`) and writes
//! are rare, so a single lock is not the bottleneck, and sharding would
//! break the atomic relist swap.

use std::hash::{BuildHasher, Hasher};

/// Tables and maps hash with foldhash (per-process random seed): std's
/// SipHash was the store's largest cost on every lookup and write.
type RandomState = foldhash::fast::RandomState;
type HashMap<K, V> = std::collections::HashMap<K, V, RandomState>;
use std::sync::{Arc, RwLock, RwLockReadGuard};

use hashbrown::hash_table::Entry;
use hashbrown::HashTable;

use super::handlers::{DeletedObject, Notification};
use super::source::{Cacheable, SourceEvent};
use crate::model::ThinSlice;

/// The label that ties an EndpointSlice to its Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// A secondary index: which value of an object it files the object under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexKey {
    /// `metadata.namespace` (cluster-scoped objects are not indexed).
    Namespace,
    /// The value of the named label (objects without it are not indexed).
    Label(&'static str),
    /// `namespace/value` of the named label, e.g. `NamespacedLabel(SERVICE_NAME_LABEL)`
    /// files EndpointSlices under their Service's key `"ns/svc"`.
    NamespacedLabel(&'static str),
    /// `namespace/key=value` for every label: an equality selector's pods
    /// are then found without scanning their namespace.
    NamespacedLabelPairs,
    /// For objects carrying an equality selector (Services): the
    /// [`label_pair_value`] of the selector's first pair in key order, or
    /// [`empty_selector_value`] for `{}`; objects without a selector are
    /// not indexed. Every object matching a pod's labels is then in the
    /// bucket of one of the pod's label pairs or in the empty-selector
    /// bucket, so memberships need not test every Service of a namespace.
    NamespacedSelectorFirstPair,
}

impl IndexKey {
    /// Call `f` with each value `obj` is filed under (none, one, or — for
    /// [`IndexKey::NamespacedLabelPairs`] — one per label), composed in `buf` where a value is not a
    /// field of `obj`: finding an object's buckets allocates nothing.
    fn each_value<T: Cacheable>(&self, obj: &T, buf: &mut String, mut f: impl FnMut(&str)) {
        let ns = obj.namespace();
        let pair = |buf: &mut String, k: &str, v: &str| {
            buf.clear();
            buf.push_str(ns);
            buf.push('/');
            buf.push_str(k);
            buf.push('=');
            buf.push_str(v);
        };
        match self {
            IndexKey::Namespace => {
                if !ns.is_empty() {
                    f(ns)
                }
            }
            IndexKey::Label(l) => {
                if let Some(v) = obj.label(l) {
                    f(v)
                }
            }
            IndexKey::NamespacedLabel(l) => {
                if let Some(v) = obj.label(l) {
                    buf.clear();
                    buf.push_str(ns);
                    buf.push('/');
                    buf.push_str(v);
                    f(buf)
                }
            }
            IndexKey::NamespacedLabelPairs => {
                for (k, v) in obj.label_pairs() {
                    pair(buf, k, v);
                    f(buf)
                }
            }
            IndexKey::NamespacedSelectorFirstPair => match obj.selector_first_pair() {
                None => {}
                Some(None) => {
                    buf.clear();
                    buf.push_str(ns);
                    buf.push('/');
                    f(buf)
                }
                Some(Some((k, v))) => {
                    pair(buf, k, v);
                    f(buf)
                }
            },
        }
    }
}

/// The [`IndexKey::NamespacedLabelPairs`] value of label `key=value` in
/// namespace `ns`.
pub fn label_pair_value(ns: &str, key: &str, value: &str) -> String {
    format!("{ns}/{key}={value}")
}

/// The [`IndexKey::NamespacedSelectorFirstPair`] value of an empty
/// selector in namespace `ns` (`"ns/"`: a label pair value always has a
/// `=` after the slash, so the two never collide).
pub fn empty_selector_value(ns: &str) -> String {
    format!("{ns}/")
}

/// Objects keyed by their own namespace and name (see [`Keyed`]).
type Table<T> = HashTable<Arc<T>>;

/// How a [`Table`] hashes and compares its objects: on `(namespace, name)`,
/// the parts of the `ns/name` key, so no key string is stored.
#[derive(Debug, Clone, Default)]
struct Keyed(RandomState);

/// `(namespace, name)` of a store key (`"ns/name"`, or `"name"` for a
/// cluster-scoped object; Kubernetes names and namespaces have no `/`).
fn split_key(key: &str) -> (&str, &str) {
    key.split_once('/').unwrap_or(("", key))
}

impl Keyed {
    fn hash(&self, ns: &str, name: &str) -> u64 {
        let mut h = self.0.build_hasher();
        h.write(ns.as_bytes());
        h.write_u8(0xff);
        h.write(name.as_bytes());
        h.finish()
    }
    fn hash_of<T: Cacheable>(&self, obj: &T) -> u64 {
        self.hash(obj.namespace(), obj.name())
    }
    fn find<'t, T: Cacheable>(&self, t: &'t Table<T>, ns: &str, name: &str) -> Option<&'t Arc<T>> {
        t.find(self.hash(ns, name), |o| {
            o.name() == name && o.namespace() == ns
        })
    }
    /// Insert `obj`, returning the object it replaced (same key), if any.
    fn insert<T: Cacheable>(&self, t: &mut Table<T>, obj: Arc<T>) -> Option<Arc<T>> {
        let (ns, name) = (obj.namespace(), obj.name());
        let eq = |o: &Arc<T>| o.name() == name && o.namespace() == ns;
        match t.entry(self.hash(ns, name), eq, |o| self.hash_of(&**o)) {
            Entry::Occupied(mut e) => Some(std::mem::replace(e.get_mut(), obj)),
            Entry::Vacant(e) => {
                e.insert(obj);
                None
            }
        }
    }
    /// Remove the object with `obj`'s key.
    fn remove<T: Cacheable>(&self, t: &mut Table<T>, obj: &T) -> Option<Arc<T>> {
        let (ns, name) = (obj.namespace(), obj.name());
        let eq = |o: &Arc<T>| o.name() == name && o.namespace() == ns;
        let e = t.find_entry(self.hash(ns, name), eq).ok()?;
        Some(e.remove().0)
    }
}

/// An index bucket: a lone object inline (a Service's selector bucket,
/// a Service's slices: usually one object each), up to [`FEW`] objects in
/// one exact-size array searched linearly (the pods of one label pair:
/// 10 pods in 96 bytes instead of a 48-byte box and a 160-byte table), a
/// table beyond. 16 bytes in the index map instead of a 32-byte table
/// (issue 13).
#[derive(Debug)]
enum Bucket<T> {
    One(Arc<T>),
    /// 2..=[`FEW`] objects; rebuilt (a few `Arc` clones) on every change.
    Few(ThinSlice<Arc<T>>),
    Many(Box<Table<T>>),
}

/// The most objects a bucket keeps in an array rather than a table.
const FEW: usize = 16;

impl<T: Cacheable> Bucket<T> {
    fn same_key(a: &T, b: &T) -> bool {
        a.name() == b.name() && a.namespace() == b.namespace()
    }
    /// File `obj`, replacing the object with its key, if any.
    fn insert(&mut self, keyed: &Keyed, obj: Arc<T>) {
        match self {
            Bucket::One(o) if Self::same_key(o, &obj) => *o = obj,
            Bucket::One(o) => *self = Bucket::Few(few(&[Arc::clone(o)], None, Some(&obj))),
            Bucket::Few(s) => match s.iter().position(|o| Self::same_key(o, &obj)) {
                Some(i) => *s = few(s, Some(i), Some(&obj)),
                None if s.len() < FEW => *s = few(s, None, Some(&obj)),
                None => {
                    let mut t = Table::with_capacity(s.len() + 1);
                    for o in s.iter() {
                        keyed.insert(&mut t, Arc::clone(o));
                    }
                    keyed.insert(&mut t, obj);
                    *self = Bucket::Many(Box::new(t));
                }
            },
            Bucket::Many(t) => {
                keyed.insert(t, obj);
            }
        }
    }
    fn find(&self, keyed: &Keyed, obj: &T) -> Option<&Arc<T>> {
        match self {
            Bucket::One(o) => Some(o).filter(|o| Self::same_key(o, obj)),
            Bucket::Few(s) => s.iter().find(|o| Self::same_key(o, obj)),
            Bucket::Many(t) => keyed.find(t, obj.namespace(), obj.name()),
        }
    }
    /// Take out the object with `obj`'s key; whether the bucket is empty.
    fn remove(&mut self, keyed: &Keyed, obj: &T) -> bool {
        match self {
            Bucket::One(o) => Self::same_key(o, obj),
            Bucket::Few(s) => {
                if let Some(i) = s.iter().position(|o| Self::same_key(o, obj)) {
                    *self = match s.len() {
                        2 => Bucket::One(Arc::clone(&s[1 - i])),
                        _ => Bucket::Few(few(s, Some(i), None)),
                    };
                }
                false
            }
            Bucket::Many(t) => {
                keyed.remove(t, obj);
                t.is_empty()
            }
        }
    }
    fn len(&self) -> usize {
        match self {
            Bucket::One(_) => 1,
            Bucket::Few(s) => s.len(),
            Bucket::Many(t) => t.len(),
        }
    }
    /// Append clones of the bucket's objects to `out`.
    fn extend_into(&self, out: &mut Vec<Arc<T>>) {
        match self {
            Bucket::One(o) => out.push(Arc::clone(o)),
            Bucket::Few(s) => out.extend(s.iter().cloned()),
            Bucket::Many(t) => out.extend(t.iter().cloned()),
        }
    }
}

/// `objs` with the object at `at` (if any) taken out and `add` (if any)
/// put in its place, or appended when `at` is `None`, in a new array.
fn few<T>(objs: &[Arc<T>], at: Option<usize>, add: Option<&Arc<T>>) -> ThinSlice<Arc<T>> {
    let n = match (at, add) {
        (None, Some(_)) => objs.len() + 1,
        (Some(_), None) => objs.len() - 1,
        _ => objs.len(),
    };
    ThinSlice::from_exact((0..n).map(|i| {
        let o = match (at, add) {
            (Some(a), Some(new)) if i == a => new,
            (Some(a), None) if i >= a => &objs[i + 1],
            (None, Some(new)) if i == objs.len() => new,
            _ => &objs[i],
        };
        Arc::clone(o)
    }))
}

#[derive(Debug)]
struct Index<T> {
    by: IndexKey,
    buckets: HashMap<Box<str>, Bucket<T>>,
}

#[derive(Debug)]
struct Inner<T> {
    keyed: Keyed,
    /// The objects, one table per namespace ("" for cluster-scoped
    /// objects); a namespace's table is dropped with its last object.
    /// Doubles as the [`IndexKey::Namespace`] index.
    spaces: HashMap<Box<str>, Table<T>>,
    /// Number of objects (over every namespace).
    len: usize,
    /// The indexes other than [`IndexKey::Namespace`].
    indexes: Vec<Index<T>>,
    /// resourceVersion of the last list, event or bookmark applied.
    resource_version: String,
    /// Where index values are composed for lookups (kept between writes).
    scratch: String,
}

impl<T: Cacheable> Inner<T> {
    /// An empty store; `sizes`: how many objects each namespace will get
    /// (its table is made at that capacity, so a relist does not rehash).
    fn empty<'a>(
        keys: &[IndexKey],
        keyed: Keyed,
        sizes: impl IntoIterator<Item = (&'a str, usize)>,
    ) -> Inner<T> {
        Inner {
            keyed,
            spaces: sizes
                .into_iter()
                .map(|(ns, n)| (Box::from(ns), HashTable::with_capacity(n)))
                .collect(),
            len: 0,
            indexes: keys
                .iter()
                .filter(|&&by| by != IndexKey::Namespace)
                .map(|&by| Index {
                    by,
                    buckets: HashMap::default(),
                })
                .collect(),
            resource_version: String::new(),
            scratch: String::new(),
        }
    }

    fn index_add(&mut self, obj: &Arc<T>) {
        let keyed = &self.keyed;
        let mut buf = std::mem::take(&mut self.scratch);
        for ix in &mut self.indexes {
            ix.by
                .each_value(&**obj, &mut buf, |v| match ix.buckets.get_mut(v) {
                    Some(b) => b.insert(keyed, Arc::clone(obj)),
                    None => {
                        ix.buckets
                            .insert(Box::from(v), Bucket::One(Arc::clone(obj)));
                    }
                });
        }
        self.scratch = buf;
    }

    /// Take `obj` out of its buckets, except where the entry for its key is
    /// already `keep` (the object replacing it, added first: an update that
    /// leaves a value alone neither removes nor recreates its bucket).
    fn index_remove(&mut self, obj: &T, keep: Option<&Arc<T>>) {
        let keyed = &self.keyed;
        let mut buf = std::mem::take(&mut self.scratch);
        for ix in &mut self.indexes {
            ix.by.each_value(obj, &mut buf, |v| {
                if let Some(b) = ix.buckets.get_mut(v) {
                    let kept =
                        keep.is_some_and(|k| b.find(keyed, obj).is_some_and(|e| Arc::ptr_eq(e, k)));
                    if !kept && b.remove(keyed, obj) {
                        ix.buckets.remove(v);
                    }
                }
            });
        }
        self.scratch = buf;
    }

    /// Put `obj` in its namespace's table, returning the object it
    /// replaced (same key), if any.
    fn insert(&mut self, obj: Arc<T>) -> Option<Arc<T>> {
        let table = match self.spaces.get_mut(obj.namespace()) {
            Some(t) => t,
            None => self.spaces.entry(Box::from(obj.namespace())).or_default(),
        };
        let old = self.keyed.insert(table, obj);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    /// Take the object with `obj`'s key out of its namespace's table.
    fn remove(&mut self, obj: &T) -> Option<Arc<T>> {
        let table = self.spaces.get_mut(obj.namespace())?;
        let old = self.keyed.remove(table, obj)?;
        if table.is_empty() {
            self.spaces.remove(obj.namespace());
        }
        self.len -= 1;
        Some(old)
    }

    /// Every object (namespace by namespace, in no particular order).
    fn iter(&self) -> impl Iterator<Item = &Arc<T>> {
        self.spaces.values().flat_map(|t| t.iter())
    }

    fn upsert(&mut self, obj: T) -> Notification<T> {
        let new = Arc::new(obj);
        match self.insert(Arc::clone(&new)) {
            Some(old) => {
                self.index_add(&new);
                self.index_remove(&old, Some(&new));
                Notification::Update { old, new }
            }
            None => {
                self.index_add(&new);
                Notification::Add {
                    obj: new,
                    initial: false,
                }
            }
        }
    }

    fn delete(&mut self, obj: T) -> Option<Notification<T>> {
        let old = self.remove(&obj)?;
        self.index_remove(&old, None);
        Some(Notification::Delete(DeletedObject::Known(Arc::new(obj))))
    }

    fn get(&self, ns: &str, name: &str) -> Option<&Arc<T>> {
        self.keyed.find(self.spaces.get(ns)?, ns, name)
    }
}

#[derive(Debug)]
struct Shared<T> {
    index_keys: Vec<IndexKey>,
    inner: RwLock<Inner<T>>,
    /// How many times the content was replaced by a LIST.
    lists: std::sync::atomic::AtomicU64,
}

/// Handle to one informer's cache. Cloning shares the cache.
#[derive(Debug)]
pub struct Store<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for Store<T> {
    fn clone(&self) -> Self {
        Store {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T: Cacheable> Store<T> {
    /// An empty store maintaining the given indexes.
    pub fn new(index_keys: &[IndexKey]) -> Store<T> {
        Store {
            shared: Arc::new(Shared {
                index_keys: index_keys.to_vec(),
                inner: RwLock::new(Inner::empty(index_keys, Keyed::default(), [])),
                lists: Default::default(),
            }),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner<T>> {
        self.shared.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The object stored under `key` (`"ns/name"` or `"name"`).
    pub fn get(&self, key: &str) -> Option<Arc<T>> {
        let (ns, name) = split_key(key);
        self.read().get(ns, name).cloned()
    }

    /// The object `name` in namespace `ns` (empty `ns`: cluster-scoped).
    pub fn get_namespaced(&self, ns: &str, name: &str) -> Option<Arc<T>> {
        self.read().get(ns, name).cloned()
    }

    /// Every cached object (in no particular order).
    pub fn list(&self) -> Vec<Arc<T>> {
        self.read().iter().cloned().collect()
    }

    /// Every cached key, sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut k: Vec<String> = self.read().iter().map(|o| o.key()).collect();
        k.sort();
        k
    }

    /// Number of cached objects.
    pub fn len(&self) -> usize {
        self.read().len
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// resourceVersion of the last list, event or bookmark applied.
    pub fn resource_version(&self) -> String {
        self.read().resource_version.clone()
    }

    /// Objects filed under `value` in index `by`. Falls back to a full scan
    /// when the store was built without that index (still correct).
    pub fn by_index(&self, by: IndexKey, value: &str) -> Vec<Arc<T>> {
        let inner = self.read();
        if by == IndexKey::Namespace {
            // Cluster-scoped objects are not indexed.
            return match inner.spaces.get(value).filter(|_| !value.is_empty()) {
                Some(t) => t.iter().cloned().collect(),
                None => Vec::new(),
            };
        }
        match inner.indexes.iter().find(|ix| ix.by == by) {
            Some(ix) => ix
                .buckets
                .get(value)
                .map(|b| {
                    let mut out = Vec::with_capacity(b.len());
                    b.extend_into(&mut out);
                    out
                })
                .unwrap_or_default(),
            None => {
                let mut buf = String::new();
                inner
                    .iter()
                    .filter(|o| {
                        let mut hit = false;
                        by.each_value(o.as_ref(), &mut buf, |v| hit |= v == value);
                        hit
                    })
                    .cloned()
                    .collect()
            }
        }
    }

    /// Objects filed under any of `values` in index `by`, read under one
    /// lock (an object filed under several of them appears once per
    /// value); `None` when the store was built without that index.
    pub fn by_index_any(&self, by: IndexKey, values: &[String]) -> Option<Vec<Arc<T>>> {
        let inner = self.read();
        if by == IndexKey::Namespace {
            self.namespace_indexed()?;
            let tables = values.iter().filter(|v| !v.is_empty());
            let tables = tables.filter_map(|v| inner.spaces.get(v.as_str()));
            return Some(tables.flat_map(|t| t.iter().cloned()).collect());
        }
        let ix = inner.indexes.iter().find(|ix| ix.by == by)?;
        let mut out = Vec::new();
        for b in values.iter().filter_map(|v| ix.buckets.get(v.as_str())) {
            b.extend_into(&mut out);
        }
        Some(out)
    }

    /// How many objects are filed under `value` in index `by` (`None`
    /// without that index).
    pub fn index_count(&self, by: IndexKey, value: &str) -> Option<usize> {
        let inner = self.read();
        if by == IndexKey::Namespace {
            self.namespace_indexed()?;
            let t = inner.spaces.get(value).filter(|_| !value.is_empty());
            return Some(t.map_or(0, |t| t.len()));
        }
        let ix = inner.indexes.iter().find(|ix| ix.by == by)?;
        Some(ix.buckets.get(value).map_or(0, |b| b.len()))
    }

    /// `Some` when the store was built with [`IndexKey::Namespace`] (its
    /// tables answer for it either way; this keeps the `Option` answers of
    /// a store built without it as they were).
    fn namespace_indexed(&self) -> Option<()> {
        self.shared
            .index_keys
            .contains(&IndexKey::Namespace)
            .then_some(())
    }

    /// Objects in namespace `ns`.
    pub fn list_namespace(&self, ns: &str) -> Vec<Arc<T>> {
        self.by_index(IndexKey::Namespace, ns)
    }

    /// Apply one watch event; returns the notification to deliver, if the
    /// event changed the store. `ADDED` for a known key is an update and
    /// `MODIFIED` for an unknown key an add (client-go's indexer does the
    /// same); `DELETED` for an unknown key is ignored. Only the informer's
    /// watcher thread (or a test/bench filling a store) may call this.
    pub fn apply(&self, event: SourceEvent<T>) -> Option<Notification<T>> {
        let mut inner = self.shared.inner.write().unwrap_or_else(|p| p.into_inner());
        match event {
            SourceEvent::Added(o) | SourceEvent::Modified(o) => {
                inner.resource_version = o.resource_version().to_string();
                Some(inner.upsert(o))
            }
            SourceEvent::Deleted(o) => {
                inner.resource_version = o.resource_version().to_string();
                inner.delete(o)
            }
            SourceEvent::Bookmark {
                resource_version, ..
            } => {
                inner.resource_version = resource_version;
                None
            }
        }
    }

    /// Replace the whole content with a fresh list taken at `rv` and return
    /// the synthetic notifications that turn the old content into the new
    /// (client-go `DeltaFIFO.Replace` + `HandleDeltas`): an add for each new
    /// key (`initial` as given), an update for each key whose
    /// resourceVersion changed, then — sorted by key — a
    /// [`DeletedObject::FinalStateUnknown`] delete for each key that
    /// vanished, carrying its last known state.
    ///
    /// Deliberate difference from client-go: client-go's `Replace` notifies
    /// an update for *every* listed object, unchanged ones included (which
    /// doubles as a resync). Here an unchanged object (same
    /// resourceVersion) gets no notification. The controllers this serves
    /// are level-triggered and their handlers only enqueue keys, so a
    /// notification for an object whose state did not change would only
    /// re-run a reconcile that already saw that state; skipping them keeps
    /// a relist of a large cluster from flooding the work queue. Periodic
    /// resync, where wanted, belongs in the controller, not the store.
    ///
    /// The new map and indexes are built before the write lock is taken;
    /// the old content is dropped after it is released.
    pub fn replace(&self, items: Vec<T>, rv: &str, initial: bool) -> Vec<Notification<T>> {
        let (next, out) = {
            let current = self.read();
            rebuild(&current, &self.shared.index_keys, items, rv, initial)
        };
        let old = {
            let mut guard = self.shared.inner.write().unwrap_or_else(|p| p.into_inner());
            std::mem::replace(&mut *guard, next)
        };
        drop(old);
        self.shared
            .lists
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        out
    }

    /// How many times a LIST has replaced the content so far (0 before the
    /// first): a change means the cache was read afresh, consistently,
    /// after any write answered before the change was seen.
    pub fn list_count(&self) -> u64 {
        self.shared.lists.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Build the store content for a fresh list and the notifications that
/// lead from `current` to it (see [`Store::replace`]).
fn rebuild<T: Cacheable>(
    current: &Inner<T>,
    index_keys: &[IndexKey],
    items: Vec<T>,
    rv: &str,
    initial: bool,
) -> (Inner<T>, Vec<Notification<T>>) {
    let mut sizes: HashMap<&str, usize> = HashMap::default();
    for o in &items {
        *sizes.entry(o.namespace()).or_default() += 1;
    }
    let mut next: Inner<T> = Inner::empty(index_keys, current.keyed.clone(), sizes);
    next.resource_version = rv.to_string();
    let mut out = Vec::new();
    for obj in items {
        let new = Arc::new(obj);
        match current.get(new.namespace(), new.name()) {
            None => out.push(Notification::Add {
                obj: Arc::clone(&new),
                initial,
            }),
            Some(old) if old.resource_version() != new.resource_version() => {
                out.push(Notification::Update {
                    old: Arc::clone(old),
                    new: Arc::clone(&new),
                })
            }
            Some(_) => {}
        }
        // A list never repeats a key; if one does, the last copy wins.
        if let Some(dup) = next.insert(Arc::clone(&new)) {
            next.index_remove(&dup, None);
        }
        next.index_add(&new);
    }
    let mut gone: Vec<(String, &Arc<T>)> = current
        .iter()
        .filter(|o| next.get(o.namespace(), o.name()).is_none())
        .map(|o| (o.key(), o))
        .collect();
    gone.sort_by(|a, b| a.0.cmp(&b.0));
    out.extend(gone.into_iter().map(|(key, o)| {
        Notification::Delete(DeletedObject::FinalStateUnknown {
            key,
            last: Arc::clone(o),
        })
    }));
    (next, out)
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
