//! The store's state under its one lock: per-key version chains (MVCC),
//! the bounded event history, watchers, the write log and the uid/owner
//! indexes, with the operations that keep them consistent (history
//! compaction with version pruning, fan-out, snapshot pages).
//!
//! Invariants: `history` holds the events `compacted+1 ..= rv`, contiguous;
//! `objects` keeps, per key, exactly the versions visible at some
//! resourceVersion ≥ `compacted` (a deleted key keeps a tombstone until
//! compaction passes it). Never locks, never blocks.

use super::event::{Event, Key, WriteRecord};
use super::objects::Obj;
use super::watch::Watcher;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;

#[derive(Debug, Clone)]
pub(crate) struct Version {
    pub(crate) rv: u64,
    pub(crate) obj: Option<Arc<Obj>>,
}

#[derive(Debug, Default)]
pub(crate) struct Inner {
    pub(crate) rv: u64,
    pub(crate) objects: BTreeMap<Key, Vec<Version>>,
    pub(crate) history: VecDeque<Arc<Event>>,
    pub(crate) compacted: u64,
    pub(crate) watchers: Vec<Watcher>,
    pub(crate) log: Vec<WriteRecord>,
    /// uid → key of every live object.
    pub(crate) uids: HashMap<String, Key>,
    /// owner uid → keys of objects naming it in ownerReferences.
    pub(crate) dependents: HashMap<String, HashSet<Key>>,
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

impl Inner {
    /// Drop the oldest history event; prune the versions it made obsolete.
    pub(crate) fn pop_history(&mut self) -> bool {
        let Some(ev) = self.history.pop_front() else {
            return false;
        };
        self.compacted = self.compacted.max(ev.rv);
        self.prune(&ev.key);
        true
    }

    /// Keep only versions visible at some resourceVersion ≥ `compacted`.
    pub(crate) fn prune(&mut self, key: &Key) {
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

    pub(crate) fn fan_out(&mut self, ev: &Arc<Event>) {
        // A watcher whose client left or fell too far behind is dropped;
        // its stream ends with its only sender.
        self.watchers.retain_mut(|w| w.deliver(ev));
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn page(
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
