//! The background collector: ownerReference garbage collection (objects
//! whose owners are all gone are deleted; references to gone owners are
//! dropped when another owner remains), foreground deletion (dependents
//! first, then the owner; every dependent blocks, not only those with
//! `blockOwnerDeletion`), and namespace finalization (delete the contents
//! of a Terminating namespace, then the namespace).
//!
//! Runs on its own thread, fed by the store through a channel; each unit
//! of work is one store transaction. Never answers requests.

use super::deletion::{delete_in, remove_owner_refs, DeleteOptions, FOREGROUND};
use super::objects::namespace_info;
use super::store::{GcWork, Key, Store, Txn};
use crossbeam_channel::Receiver;
use serde_json::{json, Value};
use std::sync::Weak;
use std::time::SystemTime;

/// The collector loop; ends when the store is dropped or shut down.
pub fn run(store: Weak<Store>, rx: Receiver<GcWork>) {
    while let Ok(work) = rx.recv() {
        let Some(store) = store.upgrade() else { return };
        if store.is_stopped() {
            return;
        }
        let now = store.clock().wall();
        store.txn(|t| match work {
            GcWork::OwnerGone(uid) => collect_dependents(t, &uid, now),
            GcWork::Namespace(ns) => finalize_namespace(t, &ns, now),
            GcWork::Foreground(uid) => {
                for key in t.dependents(&uid) {
                    let _ = delete_in(t, &key, &DeleteOptions::default(), now);
                }
                finish_foreground(t, &uid);
            }
            GcWork::DependentGone(uid) => finish_foreground(t, &uid),
        });
    }
}

/// Delete (or un-own) the dependents of a deleted owner.
pub fn collect_dependents(t: &mut Txn<'_>, owner_uid: &str, now: SystemTime) {
    for key in t.dependents(owner_uid) {
        let Some(obj) = t.get(&key) else { continue };
        let owners = obj.owner_uids();
        if owners.iter().any(|u| t.uid_alive(u)) {
            let alive: Vec<String> = owners.iter().filter(|u| t.uid_alive(u)).cloned().collect();
            remove_owner_refs(t, &key, &|u| !alive.iter().any(|a| a == u));
        } else if !obj.deleting() {
            let _ = delete_in(t, &key, &DeleteOptions::default(), now);
        }
    }
}

/// Remove the `foregroundDeletion` finalizer of an owner being deleted once
/// no dependents are left (deleting it when that was the last finalizer).
pub fn finish_foreground(t: &mut Txn<'_>, owner_uid: &str) {
    let Some(key) = t.key_of_uid(owner_uid) else {
        return;
    };
    let Some(obj) = t.get(&key) else { return };
    let value = obj.value();
    let waiting = obj.deleting()
        && value
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| f.iter().any(|x| x == FOREGROUND));
    if !waiting || !t.dependents(owner_uid).is_empty() {
        return;
    }
    let mut v = value;
    let mut left = 0;
    if let Some(f) = v
        .pointer_mut("/metadata/finalizers")
        .and_then(Value::as_array_mut)
    {
        f.retain(|x| x != FOREGROUND);
        left = f.len();
    }
    t.put(&key, "update", v);
    if left == 0 {
        t.delete(&key, "delete");
    }
}

/// Empty a Terminating namespace; remove it once nothing is left in it.
pub fn finalize_namespace(t: &mut Txn<'_>, ns: &str, now: SystemTime) {
    let nskey = Key::new(namespace_info(), "", ns);
    let Some(nsobj) = t.get(&nskey) else { return };
    if nsobj.field("status.phase") != Some("Terminating") {
        return;
    }
    for key in t.keys_in_namespace(ns) {
        let pending = t.get(&key).is_some_and(|o| o.deleting());
        if !pending {
            let _ = delete_in(t, &key, &DeleteOptions::default(), now);
        }
    }
    if !t.keys_in_namespace(ns).is_empty() {
        return;
    }
    let metadata_finalizers = nsobj
        .value()
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty());
    if metadata_finalizers {
        let mut v = nsobj.value();
        if v.pointer("/spec/finalizers").is_some() {
            v["spec"]["finalizers"] = json!([]);
            t.put(&nskey, "update", v);
        }
        return;
    }
    t.delete(&nskey, "delete");
}
