//! One stored object version, kept compact: its serialized JSON (list-item
//! form, without `kind`/`apiVersion`) plus a small index of what the store
//! reads on every request (name, namespace, uid, resourceVersion, owners,
//! labels, the selectable fields, whether it is being deleted). The full
//! JSON tree is parsed back only when a write needs it, so 50,000 stored
//! pods cost about a kilobyte each instead of a serde_json tree each.
//!
//! Immutable once built; never touches the store.

use super::resources::ResourceInfo;
use super::selector::{field_string, selectable_fields};
use super::store::Key;
use serde_json::Value;

/// The per-object index.
#[derive(Debug, Default)]
struct Index {
    name: String,
    namespace: String,
    uid: Option<String>,
    rv: String,
    owners: Vec<String>,
    labels: Vec<(String, String)>,
    fields: Vec<(&'static str, String)>,
    deleting: bool,
}

/// One stored object version.
#[derive(Debug)]
pub struct Obj {
    /// Resource of the object.
    pub info: &'static ResourceInfo,
    /// The object serialized without `kind`/`apiVersion` (list item form).
    pub item: Vec<u8>,
    index: Index,
}

/// `value` serialized as kube-apiserver writes an object: `metadata`
/// first, then the other members (Go writes a struct's fields in
/// declaration order: `TypeMeta`, `ObjectMeta`, then `spec`/`status`, or
/// `addressType`/`endpoints`/`ports`, `subsets`, … — for every top-level
/// type served here that is alphabetical after `metadata`). serde_json's
/// own order (alphabetical) put an EndpointSlice's `metadata` after its
/// `endpoints`, so a client reading only the metadata of an answer had to
/// skip every endpoint first, which the real API server never makes it do.
fn api_order_json(value: &Value) -> Vec<u8> {
    let fallback = || serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec());
    let Some(map) = value.as_object() else {
        return fallback();
    };
    let Some(meta) = map.get("metadata") else {
        return fallback();
    };
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(b"{\"metadata\":");
    if serde_json::to_writer(&mut out, meta).is_err() {
        return fallback();
    }
    for (k, v) in map.iter().filter(|(k, _)| k.as_str() != "metadata") {
        out.push(b',');
        if serde_json::to_writer(&mut out, k).is_err() {
            return fallback();
        }
        out.push(b':');
        if serde_json::to_writer(&mut out, v).is_err() {
            return fallback();
        }
    }
    out.push(b'}');
    out
}

fn meta_str(v: &Value, field: &str) -> Option<String> {
    v.get("metadata")?.get(field)?.as_str().map(str::to_string)
}

impl Obj {
    /// Serialize and index a value (the tree itself is not kept).
    pub fn new(info: &'static ResourceInfo, value: Value) -> Obj {
        let item = api_order_json(&value);
        let labels = value
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let fields = selectable_fields(info.resource)
            .map(|f| (f, field_string(&value, f)))
            .collect();
        let index = Index {
            name: meta_str(&value, "name").unwrap_or_default(),
            namespace: meta_str(&value, "namespace").unwrap_or_default(),
            uid: meta_str(&value, "uid"),
            rv: meta_str(&value, "resourceVersion").unwrap_or_default(),
            owners: super::objects::owner_uids(&value),
            labels,
            fields,
            deleting: value.pointer("/metadata/deletionTimestamp").is_some(),
        };
        Obj { info, item, index }
    }

    /// The object as a JSON tree (parsed from the stored bytes).
    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.item).unwrap_or_else(|_| Value::Object(Default::default()))
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.index.name
    }

    /// `metadata.namespace` ("" when cluster-scoped).
    pub fn namespace(&self) -> &str {
        &self.index.namespace
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> Option<&str> {
        self.index.uid.as_deref()
    }

    /// `metadata.resourceVersion`.
    pub fn rv(&self) -> &str {
        &self.index.rv
    }

    /// Whether `metadata.deletionTimestamp` is set.
    pub fn deleting(&self) -> bool {
        self.index.deleting
    }

    /// The store key.
    pub fn key(&self) -> Key {
        Key::new(self.info, self.namespace(), self.name())
    }

    /// uids named in `metadata.ownerReferences`.
    pub fn owner_uids(&self) -> &[String] {
        &self.index.owners
    }

    /// A label's value.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.index
            .labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A selectable field's value as field selectors compare it.
    pub fn field(&self, field: &str) -> Option<&str> {
        self.index
            .fields
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, v)| v.as_str())
    }
}
