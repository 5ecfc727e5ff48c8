//! DELETE and DELETECOLLECTION: `DeleteOptions` preconditions (uid,
//! resourceVersion), finalizers (`deletionTimestamp` set, object kept until
//! they are gone), namespace termination (phase Terminating; the garbage
//! collector empties and removes it), and `propagationPolicy=Orphan`.
//!
//! Decides synchronously under the store lock; background cleanup is
//! [`super::gc`]'s job. Pods are deleted at once unless the simulated
//! kubelet runs ([`super::kubelet`]): then a DELETE marks the pod
//! terminating (deletionTimestamp, deletionGracePeriodSeconds) and the
//! kubelet removes it when its grace period is over; a grace period of 0,
//! or a second DELETE, removes it at once.
//!
//! It must never wait or sleep while holding the store lock, and never
//! remove an object whose finalizers are not all gone.

use super::list::list_response;
use super::objects::Obj;
use super::objects::{self, bad_request, conflict_msg, not_found, rfc3339};
use super::resources::ResourceInfo;
use super::rest::object_response;
use super::selector::Selectors;
use super::status::ApiError;
use super::store::{res_index, GcWork, Key, Store, Txn};
use endpointd_base::httpd::{Request, Response};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::SystemTime;

/// Parsed `DeleteOptions` (body and query).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// `propagationPolicy` is Orphan (or `orphanDependents: true`).
    pub orphan: bool,
    /// `propagationPolicy` is Foreground.
    pub foreground: bool,
    /// `gracePeriodSeconds` (body or query).
    pub grace_period_seconds: Option<i64>,
}

impl DeleteOptions {
    /// Parse the optional body (JSON, or protobuf) and the `propagationPolicy` query.
    pub fn parse(req: &Request) -> Result<DeleteOptions, ApiError> {
        let mut o = DeleteOptions::default();
        let mut policy = req.query("propagationPolicy").map(str::to_string);
        if !req.body.iter().all(u8::is_ascii_whitespace) {
            let v = super::protobuf::decode_delete_options(req.header("content-type"), &req.body)
                .map_err(|e| bad_request(format!("invalid DeleteOptions body: {e}")))?;
            let s = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
            o.uid = s("/preconditions/uid");
            o.resource_version = s("/preconditions/resourceVersion");
            policy = s("/propagationPolicy").or(policy);
            o.orphan = v.get("orphanDependents").and_then(Value::as_bool) == Some(true);
            o.grace_period_seconds = v.get("gracePeriodSeconds").and_then(Value::as_i64);
        }
        if let Some(g) = req.query("gracePeriodSeconds").and_then(|g| g.parse().ok()) {
            o.grace_period_seconds = Some(g);
        }
        match policy.as_deref() {
            None | Some("Background") => {}
            Some("Foreground") => o.foreground = true,
            Some("Orphan") => o.orphan = true,
            Some(p) => {
                return Err(bad_request(format!(
                    "propagationPolicy: Unsupported value: \"{p}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
                )))
            }
        }
        Ok(o)
    }
}

/// What a delete did.
#[derive(Debug)]
pub enum Outcome {
    /// Gone; the last state.
    Deleted(Arc<Obj>),
    /// Kept with `deletionTimestamp` (finalizers, or a terminating namespace).
    Pending(Arc<Obj>),
}

impl Outcome {
    fn obj(&self) -> &Arc<Obj> {
        match self {
            Outcome::Deleted(o) | Outcome::Pending(o) => o,
        }
    }
}

/// Whether the resource's registry returns the deleted object (upstream
/// `ReturnDeletedObject`) rather than a Success `Status`.
fn returns_object(info: &ResourceInfo) -> bool {
    matches!(info.resource, "pods" | "services" | "namespaces")
}

fn success_status(info: &ResourceInfo, obj: &Obj) -> Response {
    let mut d = objects::details(info, obj.name());
    d["uid"] = json!(obj.uid().unwrap_or(""));
    let s = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                   "status": "Success", "details": d});
    Response::json(200, s.to_string().into_bytes())
}

/// Serve DELETE of one object.
pub fn delete(
    store: &Store,
    info: &'static ResourceInfo,
    ns: &str,
    name: &str,
    req: &Request,
) -> Result<Response, ApiError> {
    let opts = DeleteOptions::parse(req)?;
    let now = store.clock().wall();
    let key = Key::new(info, ns, name);
    let dry = super::rest::dry_run(req)?;
    let outcome = store.txn(|t| {
        t.set_dry_run(dry);
        delete_in(t, &key, &opts, now)
    })?;
    if returns_object(info) {
        Ok(object_response(info, 200, outcome.obj()))
    } else {
        Ok(success_status(info, outcome.obj()))
    }
}

/// Delete one object inside a transaction (shared with the collector).
pub fn delete_in(
    t: &mut Txn<'_>,
    key: &Key,
    opts: &DeleteOptions,
    now: SystemTime,
) -> Result<Outcome, ApiError> {
    let info = key.info();
    let cur = t.get(key).ok_or_else(|| not_found(info, &key.name))?;
    check_preconditions(info, &cur, opts)?;
    if opts.orphan {
        orphan_dependents(t, &cur);
    }
    let pending = cur.deleting();
    let cur_value = cur.value();
    if info.resource == "namespaces" {
        if pending {
            return Err(conflict_msg(info, &key.name, "The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system."));
        }
        let mut v = cur_value.clone();
        mark_deleted(&mut v, now);
        if !v.get("status").is_some_and(Value::is_object) {
            v["status"] = json!({});
        }
        v["status"]["phase"] = json!("Terminating");
        let obj = t.put(key, "delete", v);
        t.gc(GcWork::Namespace(key.name.clone()));
        return Ok(Outcome::Pending(obj));
    }
    let uid = cur.uid().unwrap_or("").to_string();
    if opts.foreground && !t.dependents(&uid).is_empty() {
        let mut v = cur_value.clone();
        if !pending {
            mark_deleted(&mut v, now);
        }
        add_finalizer(&mut v, FOREGROUND);
        let obj = t.put(key, "delete", v);
        t.gc(GcWork::Foreground(uid));
        return Ok(Outcome::Pending(obj));
    }
    if info.resource == "pods" && t.store().config().graceful_pods && !pending {
        let grace = opts.grace_period_seconds.unwrap_or_else(|| {
            cur_value
                .pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
                .unwrap_or(30)
        });
        if grace > 0 {
            let mut v = cur_value.clone();
            if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                // As upstream: the time at which the pod will be gone.
                let at = now + std::time::Duration::from_secs(grace as u64);
                m.insert("deletionTimestamp".into(), json!(rfc3339(at)));
                m.insert("deletionGracePeriodSeconds".into(), json!(grace));
            }
            return Ok(Outcome::Pending(t.put(key, "delete", v)));
        }
    }
    let has_finalizers = cur_value
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty());
    if has_finalizers {
        if pending {
            return Ok(Outcome::Pending(cur));
        }
        let mut v = cur_value.clone();
        mark_deleted(&mut v, now);
        return Ok(Outcome::Pending(t.put(key, "delete", v)));
    }
    t.delete(key, "delete")
        .map(Outcome::Deleted)
        .ok_or_else(|| not_found(info, &key.name))
}

/// The finalizer that holds an owner until its dependents are gone.
pub const FOREGROUND: &str = "foregroundDeletion";

fn add_finalizer(v: &mut Value, f: &str) {
    let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let list = m.entry("finalizers").or_insert_with(|| json!([]));
    if let Some(a) = list.as_array_mut() {
        if !a.iter().any(|x| x == f) {
            a.push(json!(f));
        }
    }
}

fn mark_deleted(v: &mut Value, now: SystemTime) {
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.insert("deletionTimestamp".into(), json!(rfc3339(now)));
        m.insert("deletionGracePeriodSeconds".into(), json!(0));
    }
}

fn check_preconditions(
    info: &ResourceInfo,
    cur: &Obj,
    opts: &DeleteOptions,
) -> Result<(), ApiError> {
    if let Some(uid) = &opts.uid {
        let have = cur.uid().unwrap_or("");
        if uid != have {
            return Err(conflict_msg(
                info,
                cur.name(),
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {have}"
                ),
            ));
        }
    }
    if let Some(rv) = &opts.resource_version {
        if rv != cur.rv() {
            return Err(conflict_msg(
                info,
                cur.name(),
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    cur.rv()
                ),
            ));
        }
    }
    Ok(())
}

/// Remove the ownerReferences naming `owner` from its dependents.
pub fn orphan_dependents(t: &mut Txn<'_>, owner: &Obj) {
    let Some(uid) = owner.uid().map(str::to_string) else {
        return;
    };
    for key in t.dependents(&uid) {
        remove_owner_refs(t, &key, &|u| u == uid);
    }
}

/// Drop the ownerReferences whose uid satisfies `gone` (one write).
pub fn remove_owner_refs(t: &mut Txn<'_>, key: &Key, gone: &dyn Fn(&str) -> bool) {
    let Some(obj) = t.get(key) else { return };
    let mut v = obj.value();
    if let Some(refs) = v
        .pointer_mut("/metadata/ownerReferences")
        .and_then(Value::as_array_mut)
    {
        refs.retain(|r| !r.get("uid").and_then(Value::as_str).is_some_and(gone));
        if refs.is_empty() {
            if let Some(m) = v["metadata"].as_object_mut() {
                m.remove("ownerReferences");
            }
        }
        t.put(key, "update", v);
    }
}

/// Serve DELETECOLLECTION: delete every object matching the selectors;
/// answers with the list of deleted objects.
pub fn delete_collection(
    store: &Store,
    info: &'static ResourceInfo,
    namespace: Option<&str>,
    req: &Request,
) -> Result<Response, ApiError> {
    let sel = Selectors::from_request(info.resource, req)?;
    let opts = DeleteOptions::parse(req)?;
    let now = store.clock().wall();
    let (rv, done) = store.txn(|t| {
        let keep = |o: &Obj| sel.matches_obj(o);
        let page = t.page(
            res_index(info),
            namespace,
            t.rv(),
            None,
            usize::MAX,
            &keep,
            false,
        );
        let mut done = Vec::new();
        for obj in page.items {
            if let Ok(out) = delete_in(t, &obj.key(), &opts, now) {
                done.push(out.obj().clone());
            }
        }
        (t.rv(), done)
    });
    let meta = json!({"resourceVersion": rv.to_string()});
    Ok(list_response(
        info,
        &meta,
        done.iter().map(|o| o.item_as(info)),
    ))
}
