//! Event handlers: what the store's changes look like to controllers
//! ([`Notification`], [`DeletedObject`] tombstones) and the ordered
//! delivery of those notifications to registered [`EventHandler`]s.
//!
//! Delivery happens on the informer's own watcher thread, right after the
//! store has been updated, so every handler sees the events of one object
//! (indeed of all objects) in the order the store applied them, and the
//! store already reflects an event when its handler runs (client-go's
//! indexer-then-notify order). Handlers must therefore be quick (enqueue a
//! key, as endpointd's controllers do) and must never block on the
//! informer that calls them.

use std::fmt;
use std::sync::Arc;

/// The object of a delete notification.
#[derive(Debug, Clone, PartialEq)]
pub enum DeletedObject<T> {
    /// A watch `DELETED` event: the object's final state.
    Known(Arc<T>),
    /// The object vanished while the watch was down and was noticed by a
    /// relist (client-go `DeletedFinalStateUnknown`): `last` is the last
    /// state this informer saw, which may be stale.
    FinalStateUnknown {
        /// Store key of the vanished object.
        key: String,
        /// Last known state.
        last: Arc<T>,
    },
}

impl<T> DeletedObject<T> {
    /// The (possibly stale) object, tombstone or not.
    pub fn object(&self) -> &Arc<T> {
        match self {
            DeletedObject::Known(o) => o,
            DeletedObject::FinalStateUnknown { last, .. } => last,
        }
    }

    /// Whether this came from a relist rather than a watch event.
    pub fn is_tombstone(&self) -> bool {
        matches!(self, DeletedObject::FinalStateUnknown { .. })
    }
}

/// One change of the store, as handlers see it.
#[derive(Debug, Clone, PartialEq)]
pub enum Notification<T> {
    /// A new key. `initial` is true for objects of the first list
    /// (client-go `isInInitialList`).
    Add {
        /// The new object.
        obj: Arc<T>,
        /// Part of the initial list.
        initial: bool,
    },
    /// An existing key changed.
    Update {
        /// State before.
        old: Arc<T>,
        /// State after.
        new: Arc<T>,
    },
    /// A key disappeared.
    Delete(DeletedObject<T>),
}

/// Callbacks for store changes. Each is called on the informer's thread.
pub trait EventHandler<T>: Send + Sync {
    /// A new object (`initial`: part of the first list).
    fn on_add(&self, obj: &Arc<T>, initial: bool);
    /// An object changed from `old` to `new`.
    fn on_update(&self, old: &Arc<T>, new: &Arc<T>);
    /// An object was deleted; may be a tombstone after a relist.
    fn on_delete(&self, obj: &DeletedObject<T>);
}

/// The handlers of one informer, called in registration order.
pub struct Handlers<T> {
    list: Vec<Arc<dyn EventHandler<T>>>,
}

impl<T> Default for Handlers<T> {
    fn default() -> Self {
        Handlers { list: Vec::new() }
    }
}

impl<T> fmt::Debug for Handlers<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Handlers({})", self.list.len())
    }
}

impl<T> Handlers<T> {
    /// Register one more handler.
    pub fn push(&mut self, h: Arc<dyn EventHandler<T>>) {
        self.list.push(h);
    }

    /// Number of handlers.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether no handler is registered.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Deliver one notification to every handler, in registration order.
    pub fn dispatch(&self, n: &Notification<T>) {
        for h in &self.list {
            match n {
                Notification::Add { obj, initial } => h.on_add(obj, *initial),
                Notification::Update { old, new } => h.on_update(old, new),
                Notification::Delete(d) => h.on_delete(d),
            }
        }
    }

    /// Deliver a batch in order.
    pub fn dispatch_all(&self, ns: &[Notification<T>]) {
        for n in ns {
            self.dispatch(n);
        }
    }
}

/// A handler that records every notification; for tests (here and in
/// other modules' tests).
#[derive(Debug)]
pub struct Recorder<T> {
    seen: std::sync::Mutex<Vec<Notification<T>>>,
}

impl<T> Default for Recorder<T> {
    fn default() -> Self {
        Recorder {
            seen: std::sync::Mutex::new(Vec::new()),
        }
    }
}

impl<T: Clone> Recorder<T> {
    /// Everything recorded so far, in delivery order.
    pub fn take(&self) -> Vec<Notification<T>> {
        std::mem::take(&mut *self.seen.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Number recorded so far.
    pub fn len(&self) -> usize {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn push(&self, n: Notification<T>) {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).push(n);
    }
}

impl<T: Clone + Send + Sync> EventHandler<T> for Recorder<T> {
    fn on_add(&self, obj: &Arc<T>, initial: bool) {
        self.push(Notification::Add {
            obj: Arc::clone(obj),
            initial,
        });
    }
    fn on_update(&self, old: &Arc<T>, new: &Arc<T>) {
        self.push(Notification::Update {
            old: Arc::clone(old),
            new: Arc::clone(new),
        });
    }
    fn on_delete(&self, obj: &DeletedObject<T>) {
        self.push(Notification::Delete(obj.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_calls_handlers_in_registration_order() {
        let a = Arc::new(Recorder::<u32>::default());
        let b = Arc::new(Recorder::<u32>::default());
        let mut hs = Handlers::default();
        hs.push(a.clone());
        hs.push(b.clone());
        let batch = vec![
            Notification::Add {
                obj: Arc::new(1),
                initial: true,
            },
            Notification::Update {
                old: Arc::new(1),
                new: Arc::new(2),
            },
            Notification::Delete(DeletedObject::FinalStateUnknown {
                key: "ns/x".into(),
                last: Arc::new(2),
            }),
        ];
        hs.dispatch_all(&batch);
        assert_eq!(a.take(), batch);
        assert_eq!(b.take(), batch);
    }

    #[test]
    fn tombstone_exposes_last_state() {
        let d = DeletedObject::FinalStateUnknown {
            key: "k".into(),
            last: Arc::new(7u32),
        };
        assert!(d.is_tombstone());
        assert_eq!(**d.object(), 7);
        assert!(!DeletedObject::Known(Arc::new(1u32)).is_tombstone());
    }
}
