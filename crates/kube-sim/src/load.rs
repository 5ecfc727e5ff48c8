//! Store population outside the REST path: the four namespaces every
//! cluster starts with, and `load_list` (kube-sim `--load`), which creates
//! the items of a v1 List through the same create strategy, defaulting and
//! validation as POST.
//!
//! `read_file` reads a `--load` file: a v1 List or a stream of YAML
//! documents (an RBAC manifest such as `systemd/rbac.yaml`), its RBAC
//! items split off into the authorizer's policy.
//!
//! It must never bypass the shape check, defaulting or validation a POST
//! gets, and never overwrite an object that already exists.

use super::objects::{namespace_info, prepare_create};
use super::rbac::PolicyError;
use super::resources::lookup_kind;
use super::status::ApiError;
use super::store::{Key, Store};
use serde_json::{json, Value};

/// Why a `--load` file could not be read, parsed or created.
#[derive(Debug)]
pub enum LoadError {
    /// The file could not be read.
    Read(std::io::Error),
    /// The file is neither JSON nor YAML.
    Syntax {
        /// Why it is not JSON.
        json: serde_json::Error,
        /// Why it is not YAML.
        yaml: serde_saphyr::Error,
    },
    /// The List has no `items` array.
    NoItems,
    /// An RBAC item that cannot be added to the policy.
    Policy {
        /// Index of the item.
        index: usize,
        /// Why.
        source: PolicyError,
    },
    /// An item of a kind kube-sim does not serve.
    NotServed {
        /// Index of the item.
        index: usize,
        /// Its kind.
        kind: String,
        /// Its apiVersion.
        api_version: String,
    },
    /// An item without `metadata.name`.
    NoName {
        /// Index of the item.
        index: usize,
    },
    /// An item that fails the shape check a POST body gets.
    Shape {
        /// Index of the item.
        index: usize,
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
        /// The error a POST would answer.
        error: Box<ApiError>,
    },
    /// An object of that name already exists.
    Exists {
        /// The resource.
        resource: &'static str,
        /// The name.
        name: String,
    },
    /// A namespaced item whose namespace does not exist.
    NoNamespace {
        /// The namespace.
        namespace: String,
        /// The item's resource.
        resource: &'static str,
        /// The item's name.
        name: String,
    },
    /// An item that fails validation.
    Invalid {
        /// The item's resource.
        resource: &'static str,
        /// The item's name.
        name: String,
        /// The error a POST would answer.
        error: Box<ApiError>,
    },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Read(e) => write!(f, "{e}"),
            LoadError::Syntax { json, yaml } => {
                write!(f, "neither JSON ({json}) nor YAML ({yaml})")
            }
            LoadError::NoItems => f.write_str("the List has no items array"),
            LoadError::Policy { index, source } => write!(f, "items[{index}]: {source}"),
            LoadError::NotServed {
                index,
                kind,
                api_version,
            } => write!(
                f,
                "items[{index}]: kind {kind:?} of {api_version:?} is not served"
            ),
            LoadError::NoName { index } => write!(f, "items[{index}]: metadata.name is missing"),
            LoadError::Shape {
                index,
                kind,
                name,
                error,
            } => write!(f, "items[{index}] ({kind} {name:?}): {}", error.message),
            LoadError::Exists { resource, name } => write!(f, "{resource} {name:?} already exists"),
            LoadError::NoNamespace {
                namespace,
                resource,
                name,
            } => write!(
                f,
                "namespaces {namespace:?} not found (for {resource} {name:?})"
            ),
            LoadError::Invalid {
                resource,
                name,
                error,
            } => write!(f, "{resource} {name:?}: {}", error.message),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Read(e) => Some(e),
            LoadError::Syntax { json, .. } => Some(json),
            LoadError::Policy { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Kinds an RBAC manifest carries that kube-sim does not serve: skipped
/// with a warning (kube-sim's users come from `--token-auth-file`).
const SKIPPED_KINDS: &[&str] = &["ServiceAccount", "Secret"];

/// Read a `--load` file: JSON, or YAML with one or more documents (one
/// `List`, or objects). Returns the List to create and the RBAC policy of
/// its Role, ClusterRole, RoleBinding and ClusterRoleBinding items.
pub fn read_file(path: &std::path::Path) -> Result<(Value, super::rbac::Policy), LoadError> {
    let text = std::fs::read_to_string(path).map_err(LoadError::Read)?;
    let docs: Vec<Value> = match serde_json::from_str::<Value>(&text) {
        Ok(v) => vec![v],
        Err(json_err) => {
            serde_saphyr::from_str_multiple::<Value, Vec<Value>>(&text).map_err(|yaml| {
                LoadError::Syntax {
                    json: json_err,
                    yaml,
                }
            })?
        }
    };
    let docs: Vec<Value> = docs.into_iter().filter(|d| !d.is_null()).collect();
    let items: Vec<Value> = match docs.as_slice() {
        [one] if one["kind"] == "List" => {
            one["items"].as_array().cloned().ok_or(LoadError::NoItems)?
        }
        _ => docs,
    };
    let mut policy = super::rbac::Policy::default();
    let mut kept = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let kind = item["kind"].as_str().unwrap_or("");
        if super::rbac::is_rbac(&item) {
            policy
                .add(&item)
                .map_err(|source| LoadError::Policy { index: i, source })?;
        } else if item["apiVersion"] == "v1" && SKIPPED_KINDS.contains(&kind) {
            log::warn!("--load: items[{i}]: kube-sim does not serve {kind}; skipped");
        } else {
            kept.push(item);
        }
    }
    Ok((
        json!({"apiVersion": "v1", "kind": "List", "items": kept}),
        policy,
    ))
}

/// Create the four namespaces every cluster starts with.
pub fn create_default_namespaces(store: &Store) {
    let Some(info) = lookup_kind("v1", "Namespace") else {
        return;
    };
    let now = store.clock().wall();
    store.txn(|t| {
        for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let mut v = json!({"metadata": {}});
            prepare_create(info, &mut v, name, "", now);
            t.put(&Key::new(info, "", name), "create", v);
        }
    });
}

/// Create the items of a `v1 List` as given (status, uid and
/// creationTimestamp kept, so ownerReferences inside the file resolve),
/// namespaces first, with defaulting and validation. Stops at the first bad
/// item; the items before it stay created. Items get the same shape check
/// as POST bodies (`rest::check_shape`).
pub fn load_list(store: &Store, list: &Value) -> Result<usize, LoadError> {
    let items = list
        .get("items")
        .and_then(Value::as_array)
        .ok_or(LoadError::NoItems)?;
    let mut parsed = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let api_version = item.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = item.get("kind").and_then(Value::as_str).unwrap_or("");
        let info = lookup_kind(api_version, kind).ok_or_else(|| LoadError::NotServed {
            index: i,
            kind: kind.to_string(),
            api_version: api_version.to_string(),
        })?;
        let name = item
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .ok_or(LoadError::NoName { index: i })?;
        let ns = item
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default");
        // The same shape check as a POST body (metadata, spec and status
        // must be objects) before the create strategy touches it.
        let item =
            super::rest::check_shape(info, item.clone()).map_err(|error| LoadError::Shape {
                index: i,
                kind: kind.to_string(),
                name: name.to_string(),
                error: Box::new(error),
            })?;
        let body = if super::eventsapi::is_events_api(info) {
            super::eventsapi::to_core(&item)
        } else {
            item
        };
        parsed.push((info, ns.to_string(), name.to_string(), body));
    }
    parsed.sort_by_key(|(info, ..)| info.resource != "namespaces");
    let now = store.clock().wall();
    store.txn(|t| {
        for (info, ns, name, mut v) in parsed {
            let key = Key::new(info, &ns, &name);
            if t.get(&key).is_some() {
                return Err(LoadError::Exists {
                    resource: info.resource,
                    name,
                });
            }
            if info.namespaced && t.get(&Key::new(namespace_info(), "", &ns)).is_none() {
                return Err(LoadError::NoNamespace {
                    namespace: ns,
                    resource: info.resource,
                    name,
                });
            }
            let status = v.get("status").cloned();
            let kept: Vec<(&str, Value)> = ["uid", "creationTimestamp"]
                .into_iter()
                .filter_map(|f| v.pointer(&format!("/metadata/{f}")).map(|x| (f, x.clone())))
                .collect();
            prepare_create(info, &mut v, &name, &ns, now);
            for (f, x) in kept {
                v["metadata"][f] = x;
            }
            if let (Some(s), false) = (status, info.resource == "namespaces") {
                v["status"] = s;
            }
            super::defaults::apply(t, info, &mut v, None);
            super::validate::validate(info, None, &v).map_err(|error| LoadError::Invalid {
                resource: info.resource,
                name: name.clone(),
                error: Box::new(error),
            })?;
            t.put(&key, "create", v);
        }
        Ok(items.len())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreConfig;
    use endpointd_base::clock::FakeClock;

    #[test]
    fn load_item_with_a_string_spec_is_rejected_naming_the_item() {
        let store = Store::new(StoreConfig::default(), FakeClock::new());
        create_default_namespaces(&store);
        let list = json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ok"},
             "spec": {"containers": [{"name": "c", "image": "i"}]}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad"}, "spec": "oops"},
        ]});
        let err = load_list(&store, &list)
            .expect_err("string spec accepted")
            .to_string();
        assert!(err.contains("items[1]"), "{err}");
        assert!(err.contains("\"bad\""), "{err}");
        assert!(err.contains("spec must be an object"), "{err}");
    }
}
