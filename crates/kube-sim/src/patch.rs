//! PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and the
//! subset of strategic merge patch that kubectl sends (maps merged, `null`
//! deletes, `$patch: delete|replace`, `$deleteFromPrimitiveList`, lists of
//! objects merged by their upstream `patchMergeKey`: containers/volumes/env
//! by `name`, container ports by `containerPort`, service ports by `port`,
//! conditions and node addresses by `type`, ownerReferences by `uid`;
//! finalizers merged as a set; every other list replaced).
//!
//! Pure: (patch type, current object, body) → patched object or error.
//!
//! It must never modify the current object in place or panic on a
//! malformed body: every bad patch is an `ApiError`.

use super::status::ApiError;
use serde_json::{Map, Value};

/// The patch formats kube-sim accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/json-patch+json`.
    Json,
    /// `application/strategic-merge-patch+json`.
    Strategic,
}

impl PatchType {
    /// From the request's Content-Type (415 for anything else, including
    /// server-side apply, which kube-sim does not implement).
    pub fn from_content_type(ct: &str) -> Result<PatchType, ApiError> {
        let media = super::media_type(ct);
        match media.as_str() {
            "application/merge-patch+json" => Ok(PatchType::Merge),
            "application/json-patch+json" => Ok(PatchType::Json),
            "application/strategic-merge-patch+json" => Ok(PatchType::Strategic),
            "application/apply-patch+yaml" => Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                "server-side apply (application/apply-patch+yaml) is not supported by kube-sim",
            )),
            _ => Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got {media:?})"),
            )),
        }
    }
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::new(400, "BadRequest", msg)
}

fn unprocessable(msg: impl Into<String>) -> ApiError {
    ApiError::new(422, "Invalid", msg)
}

/// Apply a patch body to `doc`.
pub fn apply(kind: PatchType, doc: &Value, body: &[u8]) -> Result<Value, ApiError> {
    let patch: Value =
        serde_json::from_slice(body).map_err(|e| bad(format!("error decoding patch: {e}")))?;
    match kind {
        PatchType::Merge => {
            if !patch.is_object() {
                return Err(bad("merge patch must be a JSON object"));
            }
            Ok(merge_patch(doc, &patch))
        }
        PatchType::Json => json_patch(doc, &patch),
        PatchType::Strategic => {
            if !patch.is_object() {
                return Err(bad("strategic merge patch must be a JSON object"));
            }
            Ok(strategic(doc, &patch, &mut Vec::new()))
        }
    }
}

/// RFC 7386 merge patch.
pub fn merge_patch(doc: &Value, patch: &Value) -> Value {
    let Value::Object(p) = patch else {
        return patch.clone();
    };
    let mut out = match doc {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    for (k, v) in p {
        if v.is_null() {
            out.remove(k);
        } else {
            let merged = merge_patch(out.get(k).unwrap_or(&Value::Null), v);
            out.insert(k.clone(), merged);
        }
    }
    Value::Object(out)
}

fn unescape(tok: &str) -> String {
    tok.replace("~1", "/").replace("~0", "~")
}

fn split_pointer(path: &str) -> Result<(String, String), ApiError> {
    if path.is_empty() || !path.starts_with('/') {
        return Err(unprocessable(format!("invalid JSON patch path {path:?}")));
    }
    let i = path.rfind('/').unwrap_or(0);
    Ok((path[..i].to_string(), unescape(&path[i + 1..])))
}

fn remove_at(doc: &mut Value, path: &str) -> Result<Value, ApiError> {
    let (parent, last) = split_pointer(path)?;
    let missing = || unprocessable(format!("JSON patch: path {path:?} does not exist"));
    match doc.pointer_mut(&parent).ok_or_else(missing)? {
        Value::Object(m) => m.remove(&last).ok_or_else(missing),
        Value::Array(a) => {
            let i: usize = last.parse().map_err(|_| missing())?;
            (i < a.len()).then(|| a.remove(i)).ok_or_else(missing)
        }
        _ => Err(missing()),
    }
}

fn add_at(doc: &mut Value, path: &str, v: Value, replace: bool) -> Result<(), ApiError> {
    if path.is_empty() {
        *doc = v;
        return Ok(());
    }
    let (parent, last) = split_pointer(path)?;
    let missing = || unprocessable(format!("JSON patch: path {path:?} does not exist"));
    match doc.pointer_mut(&parent).ok_or_else(missing)? {
        Value::Object(m) => {
            if replace && !m.contains_key(&last) {
                return Err(missing());
            }
            m.insert(last, v);
        }
        Value::Array(a) => {
            let i = if last == "-" {
                a.len()
            } else {
                last.parse().map_err(|_| missing())?
            };
            if replace {
                *a.get_mut(i).ok_or_else(missing)? = v;
            } else if i <= a.len() {
                a.insert(i, v);
            } else {
                return Err(missing());
            }
        }
        _ => return Err(missing()),
    }
    Ok(())
}

/// RFC 6902 JSON patch.
pub fn json_patch(doc: &Value, patch: &Value) -> Result<Value, ApiError> {
    let ops = patch
        .as_array()
        .ok_or_else(|| bad("JSON patch must be an array of operations"))?;
    let mut doc = doc.clone();
    for (i, op) in ops.iter().enumerate() {
        let s = |k: &str| op.get(k).and_then(Value::as_str);
        let path = s("path").ok_or_else(|| bad(format!("JSON patch operation {i} has no path")))?;
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| bad(format!("JSON patch operation {i} has no value")))
        };
        let from = || s("from").ok_or_else(|| bad(format!("JSON patch operation {i} has no from")));
        match s("op").unwrap_or("") {
            "add" => add_at(&mut doc, path, value()?, false)?,
            "replace" => add_at(&mut doc, path, value()?, true)?,
            "remove" => {
                remove_at(&mut doc, path)?;
            }
            "move" => {
                let v = remove_at(&mut doc, from()?)?;
                add_at(&mut doc, path, v, false)?;
            }
            "copy" => {
                let v = doc.pointer(from()?).cloned().ok_or_else(|| {
                    unprocessable(format!(
                        "JSON patch: from path of operation {i} does not exist"
                    ))
                })?;
                add_at(&mut doc, path, v, false)?;
            }
            "test" => {
                if doc.pointer(path) != Some(&value()?) {
                    return Err(unprocessable(format!(
                        "the server rejected our request due to an error in our request: testing value {path} failed"
                    )));
                }
            }
            other => return Err(bad(format!("JSON patch: unknown operation {other:?}"))),
        }
    }
    Ok(doc)
}

/// How a list at a field path merges under strategic merge patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStrategy {
    /// Replaced wholesale (the default, and `+listType=atomic`).
    Replace,
    /// Objects merged by this key.
    MergeKey(&'static str),
    /// Scalars merged as a set (`metadata.finalizers`).
    Set,
}

/// The strategy for the list at `path` (field names from the root).
pub fn list_strategy(path: &[String]) -> ListStrategy {
    let last = path.last().map(String::as_str).unwrap_or("");
    let parent = path
        .len()
        .checked_sub(2)
        .map(|i| path[i].as_str())
        .unwrap_or("");
    match (parent, last) {
        (_, "conditions") => ListStrategy::MergeKey("type"),
        ("metadata", "ownerReferences") => ListStrategy::MergeKey("uid"),
        ("metadata", "finalizers") => ListStrategy::Set,
        (
            _,
            "containers"
            | "initContainers"
            | "ephemeralContainers"
            | "volumes"
            | "env"
            | "imagePullSecrets",
        ) => ListStrategy::MergeKey("name"),
        (_, "volumeMounts") => ListStrategy::MergeKey("mountPath"),
        ("containers" | "initContainers" | "ephemeralContainers", "ports") => {
            ListStrategy::MergeKey("containerPort")
        }
        ("spec", "ports") => ListStrategy::MergeKey("port"),
        ("status", "addresses") => ListStrategy::MergeKey("type"),
        ("status", "podIPs" | "hostIPs") | ("spec", "podIPs") => ListStrategy::MergeKey("ip"),
        _ => ListStrategy::Replace,
    }
}

/// Strategic merge of `patch` into `doc` (`path`: field names so far).
pub fn strategic(doc: &Value, patch: &Value, path: &mut Vec<String>) -> Value {
    let Value::Object(p) = patch else {
        return patch.clone();
    };
    if p.get("$patch").and_then(Value::as_str) == Some("replace") {
        let mut m = p.clone();
        m.remove("$patch");
        return Value::Object(m);
    }
    let mut out = match doc {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    for (k, v) in p {
        if k == "$patch" || k.starts_with("$setElementOrder/") || k == "$retainKeys" {
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(cur)), Some(del)) = (out.get_mut(field), v.as_array()) {
                cur.retain(|x| !del.contains(x));
            }
            continue;
        }
        if v.is_null() || v.get("$patch").and_then(Value::as_str) == Some("delete") {
            out.remove(k);
            continue;
        }
        path.push(k.clone());
        let merged = match (out.get(k), v) {
            (Some(Value::Array(cur)), Value::Array(items)) => merge_list(cur, items, path),
            (_, Value::Array(items)) => merge_list(&[], items, path),
            (cur, v) => strategic(cur.unwrap_or(&Value::Null), v, path),
        };
        path.pop();
        out.insert(k.clone(), merged);
    }
    Value::Object(out)
}

fn merge_list(cur: &[Value], items: &[Value], path: &mut Vec<String>) -> Value {
    match list_strategy(path) {
        ListStrategy::Replace => Value::Array(
            items
                .iter()
                .map(|i| strategic(&Value::Null, i, path))
                .collect(),
        ),
        ListStrategy::Set => {
            let mut out = cur.to_vec();
            for i in items {
                if !out.contains(i) {
                    out.push(i.clone());
                }
            }
            Value::Array(out)
        }
        ListStrategy::MergeKey(key) => {
            let mut out = cur.to_vec();
            for item in items {
                let directive = item.get("$patch").and_then(Value::as_str);
                let pos = item
                    .get(key)
                    .and_then(|kv| out.iter().position(|o| o.get(key) == Some(kv)));
                match (directive, pos) {
                    (Some("delete"), Some(i)) => {
                        out.remove(i);
                    }
                    (Some("delete"), None) => {}
                    (_, Some(i)) => out[i] = strategic(&out[i], item, path),
                    (_, None) => out.push(strategic(&Value::Null, item, path)),
                }
            }
            Value::Array(out)
        }
    }
}

#[cfg(test)]
#[path = "patch_tests.rs"]
mod tests;
