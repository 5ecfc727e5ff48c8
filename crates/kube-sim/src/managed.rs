//! `metadata.managedFields` as kube-apiserver keeps them for create, update
//! (PUT) and patch requests: one entry per (manager, operation, apiVersion,
//! subresource), replaced on each write by that manager, sorted by time
//! (then manager). The manager is `?fieldManager=` (at most 128 bytes,
//! printable, else 422 as upstream's `ValidateFieldManager`), else the
//! `User-Agent` up to its first `/` (upstream's default manager). The
//! operation is always `Update` (a create counts as one, as upstream; no
//! server-side apply). `time` is RFC 3339 in whole seconds.
//!
//! `fieldsV1` is coarse: the top-level fields the write set (create) or
//! changed (update) — and within `metadata` only `labels`, `annotations`,
//! `ownerReferences` and `finalizers` — as `{"f:subsets": {}}`, merged with
//! what that manager's entry held before. Upstream tracks every leaf and
//! moves a field's ownership to its latest writer; kube-sim never takes a
//! field from another manager's set.
//!
//! Like upstream: a write that changes nothing leaves the entries as they
//! were (no new time); a client that omits `managedFields` (or sends `[]`)
//! keeps the stored ones; a list the client sends replaces them (entries
//! that are not objects with a `manager` are dropped); `[{}]` strips them
//! and this write adds none (the documented way to reset them).
//!
//! Pure: the request's manager comes in as a [`Writer`].

use super::objects::{rfc3339, semantic_eq};
use super::resources::ResourceInfo;
use super::status::ApiError;
use endpointd_base::httpd::Request;
use serde_json::{json, Map, Value};
use std::time::SystemTime;

/// Most bytes of a manager name (upstream `FieldManagerMaxLength`).
pub const MAX_MANAGER: usize = 128;

/// Who writes, as managedFields record it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writer {
    /// The manager name.
    pub manager: String,
    /// `apiVersion` of the request ("v1", "discovery.k8s.io/v1").
    pub api_version: String,
    /// "status" for a write of the status subresource, "" otherwise.
    pub subresource: String,
    /// When (the entry's `time`).
    pub now: SystemTime,
}

/// Upstream's default manager: the user agent up to its first `/`
/// (`kubectl/v1.33.0 (linux/amd64)` → `kubectl`), cut to
/// [`MAX_MANAGER`] bytes.
pub fn manager_from_user_agent(ua: &str) -> String {
    let first = ua.split('/').next().unwrap_or("");
    let mut end = first.len().min(MAX_MANAGER);
    while !first.is_char_boundary(end) {
        end -= 1;
    }
    first[..end].to_string()
}

/// Go's `unicode.IsPrint`, near enough: no control or format characters,
/// and of the spaces only U+0020.
fn printable(c: char) -> bool {
    c == ' '
        || !(c.is_control()
            || c.is_whitespace()
            || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}'))
}

/// Check `?fieldManager=` as upstream's `ValidateFieldManager`; `options`
/// is the kind named in the 422 (`CreateOptions`, `UpdateOptions`,
/// `PatchOptions`).
pub fn validate_field_manager(m: &str, options: &str) -> Result<(), ApiError> {
    let mut causes = Vec::new();
    if m.len() > MAX_MANAGER {
        causes.push(json!({"reason": "FieldValueTooLong",
            "message": format!("Too long: may not be more than {MAX_MANAGER} bytes"),
            "field": "fieldManager"}));
    }
    for (i, c) in m.char_indices() {
        if !printable(c) {
            causes.push(json!({"reason": "FieldValueInvalid",
                "message": format!("Invalid value: {m:?}: invalid character U+{:04X} (at position {i})", c as u32),
                "field": "fieldManager"}));
        }
    }
    if causes.is_empty() {
        return Ok(());
    }
    let errs: Vec<String> = causes
        .iter()
        .map(|c| {
            format!(
                "fieldManager: {}",
                c["message"].as_str().unwrap_or_default()
            )
        })
        .collect();
    let agg = match errs.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    Err(ApiError::new(
        422,
        "Invalid",
        format!("{options}.meta.k8s.io \"\" is invalid: {agg}"),
    )
    .with_details(json!({"group": "meta.k8s.io", "kind": options, "causes": causes})))
}

/// The writer of request `req` on `info` (`subresource` "status" or "").
pub fn writer(
    info: &ResourceInfo,
    req: &Request,
    user_agent: &str,
    subresource: &str,
    now: SystemTime,
) -> Result<Writer, ApiError> {
    let options = match req.method.as_str() {
        "POST" => "CreateOptions",
        "PATCH" => "PatchOptions",
        _ => "UpdateOptions",
    };
    let manager = match req.query("fieldManager") {
        Some(m) if !m.is_empty() => {
            validate_field_manager(m, options)?;
            m.to_string()
        }
        _ => manager_from_user_agent(user_agent),
    };
    Ok(Writer {
        manager,
        api_version: info.api_version(),
        subresource: subresource.to_string(),
        now,
    })
}

/// `metadata` keys whose changes are recorded.
const META_FIELDS: &[&str] = &["labels", "annotations", "ownerReferences", "finalizers"];

/// Top-level fields never recorded.
fn skipped(key: &str, info: &ResourceInfo, w: &Writer) -> bool {
    match key {
        "apiVersion" | "kind" | "metadata" => true,
        // The main resource cannot write status where a status
        // subresource exists (and the status subresource writes only it).
        "status" => w.subresource.is_empty() && super::objects::has_status(info),
        _ => w.subresource == "status",
    }
}

/// The coarse field set `new` holds differently from `old` (all of its
/// non-blank fields when `old` is `None`).
fn changed_fields(info: &ResourceInfo, w: &Writer, old: Option<&Value>, new: &Value) -> Value {
    let mut set = Map::new();
    let empty = Map::new();
    let new_map = new.as_object().unwrap_or(&empty);
    let old_map = old.and_then(Value::as_object).unwrap_or(&empty);
    let differs = |a: Option<&Value>, b: Option<&Value>| match (a, b) {
        (Some(a), Some(b)) => !semantic_eq(a, b),
        (Some(a), None) | (None, Some(a)) => !semantic_eq(a, &Value::Null),
        (None, None) => false,
    };
    let mut keys: Vec<&String> = new_map.keys().chain(old_map.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        if skipped(k, info, w) {
            continue;
        }
        // A field the write removed is not one it owns (upstream drops
        // it from every set); a field it set or changed is.
        if new_map.get(k).is_some() && differs(new_map.get(k), old_map.get(k)) {
            set.insert(format!("f:{k}"), json!({}));
        }
    }
    if w.subresource.is_empty() {
        let nm = new_map.get("metadata").and_then(Value::as_object);
        let om = old_map.get("metadata").and_then(Value::as_object);
        let mut meta = Map::new();
        for f in META_FIELDS {
            let n = nm.and_then(|m| m.get(*f));
            if n.is_some() && differs(n, om.and_then(|m| m.get(*f))) {
                meta.insert(format!("f:{f}"), json!({}));
            }
        }
        if !meta.is_empty() {
            set.insert("f:metadata".into(), Value::Object(meta));
        }
    }
    Value::Object(set)
}

/// Union of two coarse field sets.
fn merge(into: &mut Value, more: &Value) {
    let (Some(a), Some(b)) = (into.as_object_mut(), more.as_object()) else {
        return;
    };
    for (k, v) in b {
        match a.get_mut(k) {
            Some(have) => merge(have, v),
            None => {
                a.insert(k.clone(), v.clone());
            }
        }
    }
}

/// What the client's `metadata.managedFields` asks for.
enum Sent {
    /// Absent, null or `[]`: keep the stored entries.
    Keep,
    /// `[{}]`: strip them, record nothing.
    Reset,
    /// These entries instead.
    Replace(Vec<Value>),
}

fn sent(v: &Value) -> Sent {
    match v
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
    {
        None => Sent::Keep,
        Some(a) if a.is_empty() => Sent::Keep,
        Some(a) if a.len() == 1 && a[0].as_object().is_some_and(Map::is_empty) => Sent::Reset,
        Some(a) => Sent::Replace(
            a.iter()
                .filter(|e| e.get("manager").is_some_and(Value::is_string))
                .cloned()
                .collect(),
        ),
    }
}

fn same_slot(e: &Value, w: &Writer) -> bool {
    let s = |f: &str| e.get(f).and_then(Value::as_str).unwrap_or("");
    s("manager") == w.manager
        && s("operation") == "Update"
        && s("apiVersion") == w.api_version
        && s("subresource") == w.subresource
}

/// `entries` with this writer's entry (re)recorded over `fields`.
fn record(mut entries: Vec<Value>, w: &Writer, fields: Value) -> Vec<Value> {
    let mut fields = fields;
    if let Some(i) = entries.iter().position(|e| same_slot(e, w)) {
        let old = entries.remove(i);
        if let Some(f) = old.get("fieldsV1") {
            merge(&mut fields, f);
        }
    }
    let mut e = json!({
        "manager": w.manager,
        "operation": "Update",
        "apiVersion": w.api_version,
        "time": rfc3339(w.now),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    });
    if !w.subresource.is_empty() {
        e["subresource"] = json!(w.subresource);
    }
    entries.push(e);
    // Upstream's order: by time, then manager (Apply would come first).
    entries.sort_by(|a, b| {
        let k = |e: &Value| {
            (
                e.get("time")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                e.get("manager")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            )
        };
        k(a).cmp(&k(b))
    });
    entries
}

fn set(v: &mut Value, entries: Vec<Value>) {
    let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    match entries.is_empty() {
        true => m.remove("managedFields"),
        false => m.insert("managedFields".into(), Value::Array(entries)),
    };
}

/// A create of `v` (after defaulting and validation) by `w`.
pub fn on_create(info: &ResourceInfo, w: &Writer, v: &mut Value) {
    let basis = match sent(v) {
        Sent::Reset => {
            set(v, Vec::new());
            return;
        }
        Sent::Keep => Vec::new(),
        Sent::Replace(e) => e,
    };
    let fields = changed_fields(info, w, None, v);
    set(v, record(basis, w, fields));
}

/// An update of `old` to `new` (after the update strategy) by `w`. A
/// write that changes nothing gets the stored entries back, so that the
/// caller's no-op check sees no change.
pub fn on_update(info: &ResourceInfo, w: &Writer, old: &Value, new: &mut Value) {
    let stored: Vec<Value> = old
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let basis = match sent(new) {
        Sent::Reset => {
            set(new, Vec::new());
            return;
        }
        Sent::Keep => stored,
        Sent::Replace(e) => e,
    };
    let fields = changed_fields(info, w, Some(old), new);
    let any = fields.as_object().is_some_and(|m| !m.is_empty());
    match any {
        true => set(new, record(basis, w, fields)),
        false => set(new, basis),
    }
}

#[cfg(test)]
#[path = "managed_tests.rs"]
mod tests;
