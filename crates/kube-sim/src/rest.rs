//! Resource semantics: one classified request → store operation → response
//! (objects, lists, watch streams, Status errors).
//!
//! Owns request decoding (body, query options), the create/update/patch
//! paths with their preconditions, and the mapping of results to HTTP codes.
//! Never touches sockets; lists live in [`super::list`], watches in
//! [`super::watch`], deletion in [`super::deletion`].

use super::managed::{self, Writer};
use super::objects::{
    self, already_exists, bad_request, conflict, not_found, prepare_create, prepare_update, Obj,
};
use super::requestinfo::{RequestInfo, Verb};
use super::resources::{lookup, ResourceInfo};
use super::status::ApiError;
use super::store::{GcWork, Key, Store, Txn};
use super::{defaults, deletion, eventsapi, list, patch, validate, watch};
use endpointd_base::httpd::{Request, Response};
use serde_json::{json, Value};
use std::sync::Arc;

/// Serve one resource request.
pub fn handle(store: &Arc<Store>, info: &RequestInfo, req: &Request) -> Response {
    match serve(store, info, req) {
        Ok(r) => r,
        Err(e) => e.to_response(),
    }
}

fn serve(store: &Arc<Store>, ri: &RequestInfo, req: &Request) -> Result<Response, ApiError> {
    let info = lookup(&ri.group, &ri.version, &ri.resource).ok_or_else(|| {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    })?;
    let status_only = match ri.subresource.as_deref() {
        None => false,
        Some("status") if objects::has_status(info) => true,
        Some(_) => {
            return Err(ApiError::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            ))
        }
    };
    if status_only && !matches!(ri.verb, Verb::Get | Verb::Update | Verb::Patch) {
        return Err(ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        ));
    }
    let ns = if info.namespaced {
        ri.namespace.clone().unwrap_or_default()
    } else {
        String::new()
    };
    let name = ri.name.clone().unwrap_or_default();
    // Collections: one namespace, or all (always all when cluster-scoped).
    let scope = ri.namespace.as_deref().filter(|_| info.namespaced);
    if let Some(version) = super::table::wanted(req.header("accept")) {
        if matches!(ri.verb, Verb::Get | Verb::List | Verb::Watch) && !status_only {
            use super::table::{convert_response, convert_watch, Include};
            let include = Include::parse(req.query("includeObject"))
                .map_err(|e| super::apierrors::bad_request(e.to_string()))?;
            let now = store.clock().wall();
            return Ok(match ri.verb {
                Verb::Get => convert_response(
                    get(store, info, &ns, &name)?,
                    info.resource,
                    version,
                    include,
                    now,
                ),
                Verb::List => convert_response(
                    list::list(store, info, scope, req)?,
                    info.resource,
                    version,
                    include,
                    now,
                ),
                _ => convert_watch(
                    watch::watch(store, info, scope, ri.name.as_deref(), req)?,
                    info.resource,
                    version,
                    include,
                    store.clock().clone(),
                ),
            });
        }
    }
    match ri.verb {
        Verb::Get => get(store, info, &ns, &name),
        Verb::List => list::list(store, info, scope, req),
        Verb::Watch => watch::watch(store, info, scope, ri.name.as_deref(), req),
        Verb::Create => create(store, info, &ns, req),
        Verb::Update => update(store, info, &ns, &name, status_only, req),
        Verb::Patch => patch_object(store, info, &ns, &name, status_only, req),
        Verb::Delete => deletion::delete(store, info, &ns, &name, req),
        Verb::DeleteCollection => deletion::delete_collection(store, info, scope, req),
    }
}

/// A JSON response with an object's full form, as the API `view` shows it.
pub fn object_response(view: &ResourceInfo, code: u16, obj: &Obj) -> Response {
    Response::json(code, obj.json_as(view))
}

fn get(
    store: &Store,
    info: &'static ResourceInfo,
    ns: &str,
    name: &str,
) -> Result<Response, ApiError> {
    let key = Key::new(info, ns, name);
    let obj = store
        .txn(|t| t.get(&key))
        .ok_or_else(|| not_found(info, name))?;
    Ok(object_response(info, 200, &obj))
}

/// Decode a request body (JSON, YAML or protobuf by its Content-Type) as a
/// JSON object of this resource's kind.
pub fn decode_body(info: &ResourceInfo, req: &Request) -> Result<Value, ApiError> {
    let v = super::protobuf::decode_body(info, req.header("content-type"), &req.body)?;
    let v = check_shape(info, v)?;
    Ok(if eventsapi::is_events_api(info) {
        eventsapi::to_core(&v)
    } else {
        v
    })
}

/// A body (or a patch result) must be an object of this kind whose
/// `metadata`, `spec` and `status` (when present) are objects.
pub fn check_shape(info: &ResourceInfo, mut v: Value) -> Result<Value, ApiError> {
    let undecodable = |why: &str| {
        bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {why}",
            info.kind, info.version, info.kind
        ))
    };
    if !v.is_object() {
        return Err(undecodable("the body is not a JSON object"));
    }
    let kind = v.get("kind").and_then(Value::as_str);
    let api_version = v.get("apiVersion").and_then(Value::as_str);
    if kind.is_some_and(|k| k != info.kind) || api_version.is_some_and(|a| a != info.api_version())
    {
        return Err(bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({})",
            api_version.unwrap_or(""),
            info.api_version()
        )));
    }
    if v.get("metadata").is_none_or(Value::is_null) {
        v["metadata"] = json!({});
    }
    for f in ["metadata", "spec", "status"] {
        if v.get(f).is_some_and(|x| !x.is_null() && !x.is_object()) {
            return Err(undecodable(&format!("{f} must be an object")));
        }
    }
    Ok(v)
}

/// Whether the request is a dry run (`dryRun=All`; other values are 400).
pub fn dry_run(req: &Request) -> Result<bool, ApiError> {
    match req.query("dryRun") {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(v) => Err(bad_request(format!(
            "dryRun: Unsupported value: \"{v}\": supported values: \"All\""
        ))),
    }
}

fn meta_str<'a>(v: &'a Value, f: &str) -> Option<&'a str> {
    v.get("metadata")?.get(f)?.as_str()
}

/// 404 for a missing namespace, 403 for a terminating one.
pub fn check_namespace(
    t: &Txn<'_>,
    info: &ResourceInfo,
    ns: &str,
    name: &str,
) -> Result<(), ApiError> {
    if !info.namespaced {
        return Ok(());
    }
    let nsi = objects::namespace_info();
    let obj = t
        .get(&Key::new(nsi, "", ns))
        .ok_or_else(|| not_found(nsi, ns))?;
    if obj.field("status.phase") == Some("Terminating") {
        let mut d = objects::details(info, name);
        d["causes"] = json!([{
            "reason": "NamespaceTerminating",
            "message": format!("namespace {ns} is being terminated"),
            "field": "metadata.namespace",
        }]);
        return Err(ApiError::new(
            403,
            "Forbidden",
            format!(
                "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                objects::qualified_resource(info)
            ),
        )
        .with_details(d));
    }
    Ok(())
}

fn check_body_namespace(info: &ResourceInfo, v: &Value, ns: &str) -> Result<(), ApiError> {
    match meta_str(v, "namespace") {
        Some(b) if info.namespaced && !b.is_empty() && b != ns => Err(bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        _ => Ok(()),
    }
}

fn create(
    store: &Store,
    info: &'static ResourceInfo,
    ns: &str,
    req: &Request,
) -> Result<Response, ApiError> {
    let v = decode_body(info, req)?;
    check_body_namespace(info, &v, ns)?;
    if meta_str(&v, "resourceVersion").is_some_and(|rv| !rv.is_empty()) {
        return Err(bad_request(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    let now = store.clock().wall();
    let dry = dry_run(req)?;
    let w = writer(info, req, "", now)?;
    let obj = store.txn(|t| {
        t.set_dry_run(dry);
        create_in(t, info, ns, v, now, "create", Some(&w))
    })?;
    Ok(object_response(info, 201, &obj))
}

/// The request's writer for managedFields (its `fieldManager` checked).
fn writer(
    info: &ResourceInfo,
    req: &Request,
    subresource: &str,
    now: std::time::SystemTime,
) -> Result<Writer, ApiError> {
    let (_, agent) = super::requester::current();
    managed::writer(info, req, &agent, subresource, now)
}

/// Create `v` in `ns` (namespace checks, generateName, validation), its
/// managedFields recorded for `by` when given.
pub fn create_in(
    t: &mut Txn<'_>,
    info: &'static ResourceInfo,
    ns: &str,
    mut v: Value,
    now: std::time::SystemTime,
    verb: &str,
    by: Option<&Writer>,
) -> Result<Arc<Obj>, ApiError> {
    let given = meta_str(&v, "name").unwrap_or("").to_string();
    // Upstream's SimpleNameGenerator: a prefix longer than 58 characters
    // is cut, so that the name with its 5-character suffix fits 63.
    let prefix: String = meta_str(&v, "generateName")
        .unwrap_or("")
        .chars()
        .take(objects::MAX_GENERATED_PREFIX)
        .collect();
    if given.is_empty() && prefix.is_empty() {
        return Err(validate::invalid(
            info,
            "",
            vec![validate::Cause::required(
                "metadata.name",
                "name or generateName is required",
            )],
        ));
    }
    check_namespace(t, info, ns, &given)?;
    let name = if given.is_empty() {
        let mut tries = 0;
        loop {
            let candidate = format!("{prefix}{}", objects::name_suffix());
            if t.get(&Key::new(info, ns, &candidate)).is_none() || tries >= 8 {
                break candidate;
            }
            tries += 1;
        }
    } else {
        given
    };
    let key = Key::new(info, ns, &name);
    if t.get(&key).is_some() {
        return Err(already_exists(info, &name));
    }
    prepare_create(info, &mut v, &name, ns, now);
    defaults::apply(t, info, &mut v, None);
    validate::validate(info, None, &v)?;
    if let Some(w) = by {
        managed::on_create(info, w, &mut v);
    }
    Ok(t.put(&key, verb, v))
}

fn update(
    store: &Store,
    info: &'static ResourceInfo,
    ns: &str,
    name: &str,
    status_only: bool,
    req: &Request,
) -> Result<Response, ApiError> {
    let v = decode_body(info, req)?;
    check_body_namespace(info, &v, ns)?;
    match meta_str(&v, "name") {
        Some(n) if n == name => {}
        Some(n) => {
            return Err(bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )))
        }
        None => {
            return Err(validate::invalid(
                info,
                name,
                vec![validate::Cause::required(
                    "metadata.name",
                    "name or generateName is required",
                )],
            ))
        }
    }
    let now = store.clock().wall();
    let key = Key::new(info, ns, name);
    let dry = dry_run(req)?;
    let w = writer(info, req, if status_only { "status" } else { "" }, now)?;
    let (code, obj) = store.txn(|t| {
        t.set_dry_run(dry);
        if t.get(&key).is_none() && objects::allow_create_on_update(info) && !status_only {
            let mut v = v;
            if let Some(m) = v["metadata"].as_object_mut() {
                m.remove("resourceVersion");
            }
            return create_in(t, info, ns, v, now, "update", Some(&w)).map(|o| (201, o));
        }
        apply_update(t, info, &key, v, status_only, "update", Some(&w)).map(|o| (200, o))
    })?;
    Ok(object_response(info, code, &obj))
}

/// The update path shared by PUT and PATCH: optimistic concurrency, update
/// strategy, validation, managedFields (for `by`), no-op detection,
/// finalizer-driven deletion.
pub fn apply_update(
    t: &mut Txn<'_>,
    info: &'static ResourceInfo,
    key: &Key,
    mut new: Value,
    status_only: bool,
    verb: &str,
    by: Option<&Writer>,
) -> Result<Arc<Obj>, ApiError> {
    let cur = t.get(key).ok_or_else(|| not_found(info, &key.name))?;
    let want_rv = meta_str(&new, "resourceVersion").unwrap_or("");
    if !want_rv.is_empty() && want_rv != cur.rv() {
        return Err(conflict(info, &key.name));
    }
    let want_uid = meta_str(&new, "uid").unwrap_or("");
    let have_uid = cur.uid().unwrap_or("");
    if !want_uid.is_empty() && want_uid != have_uid {
        return Err(objects::conflict_msg(
            info,
            &key.name,
            &format!("Precondition failed: UID in precondition: {want_uid}, UID in object meta: {have_uid}"),
        ));
    }
    if let Some(m) = new.as_object_mut() {
        m.remove("kind");
        m.remove("apiVersion");
    }
    let old = cur.value();
    prepare_update(info, &old, &mut new, status_only);
    defaults::apply(t, info, &mut new, Some(&old));
    validate::validate(info, Some(&old), &new)?;
    if let Some(m) = new["metadata"].as_object_mut() {
        m.insert("resourceVersion".into(), json!(cur.rv()));
    }
    if let Some(w) = by {
        managed::on_update(info, w, &old, &mut new);
    }
    if objects::semantic_eq(&new, &old) {
        return Ok(cur);
    }
    let finalized = new.pointer("/metadata/deletionTimestamp").is_some()
        && new
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
    if info.resource == "namespaces" && new.pointer("/metadata/deletionTimestamp").is_some() {
        let obj = t.put(key, verb, new);
        t.gc(GcWork::Namespace(key.name.clone()));
        return Ok(obj);
    }
    if finalized {
        t.put(key, verb, new);
        return t
            .delete(key, "delete")
            .ok_or_else(|| not_found(info, &key.name));
    }
    Ok(t.put(key, verb, new))
}

fn patch_object(
    store: &Store,
    info: &'static ResourceInfo,
    ns: &str,
    name: &str,
    status_only: bool,
    req: &Request,
) -> Result<Response, ApiError> {
    let ctype = req.header("content-type").unwrap_or("");
    let kind = patch::PatchType::from_content_type(ctype)?;
    let key = Key::new(info, ns, name);
    let dry = dry_run(req)?;
    let now = store.clock().wall();
    let w = writer(info, req, if status_only { "status" } else { "" }, now)?;
    let obj = store.txn(|t| {
        t.set_dry_run(dry);
        let cur = t.get(&key).ok_or_else(|| not_found(info, name))?;
        let mut view = cur.value_as(info);
        objects::set_type_meta(info, &mut view);
        let mut patched = check_shape(info, patch::apply(kind, &view, &req.body)?)?;
        if eventsapi::is_events_api(info) {
            patched = eventsapi::to_core(&patched);
        }
        if meta_str(&patched, "name").is_some_and(|n| n != name) {
            return Err(bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({name})",
                meta_str(&patched, "name").unwrap_or("")
            )));
        }
        apply_update(t, info, &key, patched, status_only, "patch", Some(&w))
    })?;
    Ok(object_response(info, 200, &obj))
}
