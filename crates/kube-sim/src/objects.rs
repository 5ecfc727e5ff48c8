//! Stored objects and the per-resource write strategies of kube-apiserver's
//! registries: what create sets (uid, creationTimestamp, generation,
//! generateName), what update keeps (status vs. spec, immutable metadata),
//! and when `metadata.generation` moves.
//!
//! Pure functions of (resource, old, new, now); never locks the store.

pub use super::apierrors::{
    already_exists, bad_request, conflict, conflict_msg, details, not_found, qualified_resource,
};
use super::resources::ResourceInfo;
use serde_json::{json, Map, Value};
use std::time::SystemTime;

pub use super::obj::Obj;

impl Obj {
    /// The full JSON (with `kind` and `apiVersion`), as GET returns it.
    pub fn full_json(&self) -> Vec<u8> {
        with_type_meta(self.info, &self.item)
    }

    /// The full object as a value.
    pub fn full_value(&self) -> Value {
        let mut v = self.value();
        set_type_meta(self.info, &mut v);
        v
    }

    /// The object (without type meta) as the API `view` shows it: itself,
    /// or converted when `view` is the events.k8s.io view of core Events.
    pub fn value_as(&self, view: &ResourceInfo) -> Value {
        if is_converted(self.info, view) {
            super::eventsapi::from_core(&self.value())
        } else {
            self.value()
        }
    }

    /// The full JSON as `view` returns it (GET, watch events).
    pub fn json_as(&self, view: &ResourceInfo) -> Vec<u8> {
        if is_converted(self.info, view) {
            let item = serde_json::to_vec(&self.value_as(view)).unwrap_or_else(|_| b"{}".to_vec());
            with_type_meta(view, &item)
        } else {
            self.full_json()
        }
    }

    /// The list-item JSON as `view` returns it.
    pub fn item_as(&self, view: &ResourceInfo) -> std::borrow::Cow<'_, [u8]> {
        if is_converted(self.info, view) {
            let item = serde_json::to_vec(&self.value_as(view)).unwrap_or_else(|_| b"{}".to_vec());
            std::borrow::Cow::Owned(item)
        } else {
            std::borrow::Cow::Borrowed(&self.item)
        }
    }
}

/// Whether objects stored as `stored` must be converted for `view`.
pub fn is_converted(stored: &ResourceInfo, view: &ResourceInfo) -> bool {
    stored != view && super::eventsapi::is_events_api(view)
}

/// Prefix `kind`/`apiVersion` to a serialized object (`{...}`), in
/// kube-apiserver's order.
pub fn with_type_meta(info: &ResourceInfo, item: &[u8]) -> Vec<u8> {
    let head = format!(
        "{{\"kind\":\"{}\",\"apiVersion\":\"{}\"",
        info.kind,
        info.api_version()
    );
    let mut out = Vec::with_capacity(item.len() + head.len() + 1);
    out.extend_from_slice(head.as_bytes());
    if item.len() > 2 {
        out.push(b',');
    }
    out.extend_from_slice(item.get(1..).unwrap_or(b"}"));
    out
}

/// Set `apiVersion`/`kind` on a value.
pub fn set_type_meta(info: &ResourceInfo, v: &mut Value) {
    if let Some(m) = v.as_object_mut() {
        m.insert("apiVersion".into(), Value::String(info.api_version()));
        m.insert("kind".into(), Value::String(info.kind.into()));
    }
}

/// uids named in a value's `metadata.ownerReferences`.
pub fn owner_uids(v: &Value) -> Vec<String> {
    v.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// RFC 3339, second precision, `Z` (as `metav1.Time`).
pub fn rfc3339(t: SystemTime) -> String {
    match jiff::Timestamp::try_from(t) {
        Ok(ts) => ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        Err(_) => "1970-01-01T00:00:00Z".to_string(),
    }
}

/// A random RFC 4122 version 4 uid.
pub fn new_uid() -> String {
    let a = fastrand::u128(..);
    let b = (a & !(0xf << 76) | (0x4 << 76)) & !(0x3 << 62) | (0x2 << 62);
    let h = format!("{b:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Longest generateName prefix kept (upstream `maxGeneratedNameLength`:
/// 63 − 5).
pub const MAX_GENERATED_PREFIX: usize = 58;

/// A 5-character generateName suffix (upstream's alphabet: no vowels,
/// no confusable characters).
pub fn name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|_| ALPHABET[fastrand::usize(..ALPHABET.len())] as char)
        .collect()
}

/// A pod's QoS class (upstream `GetPodQOS`, cpu and memory only):
/// BestEffort without any request or limit; Guaranteed when every
/// container limits cpu and memory and requests (if given) equal limits;
/// Burstable otherwise.
pub fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .filter_map(|k| spec.get(*k).and_then(Value::as_array))
        .flatten()
        .collect();
    let get =
        |c: &Value, kind: &str, r: &str| c.pointer(&format!("/resources/{kind}/{r}")).cloned();
    let any = containers.iter().any(|c| {
        ["requests", "limits"]
            .iter()
            .any(|k| ["cpu", "memory"].iter().any(|r| get(c, k, r).is_some()))
    });
    if !any {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        ["cpu", "memory"]
            .iter()
            .all(|r| match (get(c, "limits", r), get(c, "requests", r)) {
                (Some(l), Some(q)) => l == q,
                (Some(_), None) => true,
                _ => false,
            })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// Whether the resource's strategy tracks `metadata.generation`.
pub fn tracks_generation(info: &ResourceInfo) -> bool {
    matches!(info.resource, "endpointslices" | "pods")
}

/// Whether the resource has a `status` subresource (main-resource writes
/// keep the stored status).
pub fn has_status(info: &ResourceInfo) -> bool {
    info.subresources.contains(&"status")
}

/// Whether PUT of a missing object creates it (upstream
/// `AllowCreateOnUpdate`).
pub fn allow_create_on_update(info: &ResourceInfo) -> bool {
    matches!(info.resource, "endpoints" | "events" | "leases")
}

fn meta_mut(v: &mut Value) -> Option<&mut Map<String, Value>> {
    v.get_mut("metadata").and_then(Value::as_object_mut)
}

/// Create-time defaults: uid, creationTimestamp, generation, cleared
/// server-owned fields, namespace phase/finalizer, pod phase Pending.
/// `name` is final. Deliberate deviation: a pod's given status is kept on
/// create (upstream resets it), so fixtures can create ready pods in one
/// request; the `/status` path behaves as upstream.
pub fn prepare_create(info: &ResourceInfo, v: &mut Value, name: &str, ns: &str, now: SystemTime) {
    if let Some(m) = meta_mut(v) {
        m.insert("name".into(), json!(name));
        if info.namespaced {
            m.insert("namespace".into(), json!(ns));
        } else {
            m.remove("namespace");
        }
        m.insert("uid".into(), json!(new_uid()));
        m.insert("creationTimestamp".into(), json!(rfc3339(now)));
        for f in [
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ] {
            m.remove(f);
        }
        if tracks_generation(info) {
            m.insert("generation".into(), json!(1));
        } else {
            m.remove("generation");
        }
    }
    if info.resource == "namespaces" {
        v["spec"] = json!({"finalizers": ["kubernetes"]});
        v["status"] = json!({"phase": "Active"});
    }
    if info.resource == "pods" {
        if !v.get("status").is_some_and(Value::is_object) {
            v["status"] = json!({});
        }
        if v.pointer("/status/phase").is_none() {
            v["status"]["phase"] = json!("Pending");
        }
        let qos = qos_class(v.get("spec").unwrap_or(&Value::Null));
        v["status"]["qosClass"] = json!(qos);
    }
}

/// Update strategy for the main resource or `/status`: carries over
/// immutable metadata and (per subresource) spec or status from `old`,
/// and bumps `generation` as upstream's PrepareForUpdate does.
pub fn prepare_update(info: &ResourceInfo, old: &Value, new: &mut Value, status_only: bool) {
    if status_only {
        let status = new.get("status").cloned();
        let mut merged = old.clone();
        match status {
            Some(s) => merged["status"] = s,
            None => {
                if let Some(m) = merged.as_object_mut() {
                    m.remove("status");
                }
            }
        }
        *new = merged;
        return;
    }
    if has_status(info) {
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        }
    }
    if info.resource == "namespaces" {
        if let Some(spec) = old.get("spec") {
            new["spec"] = spec.clone();
        }
    }
    let keep = [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "namespace",
    ];
    let old_meta = old.get("metadata").cloned().unwrap_or_else(|| json!({}));
    if let Some(m) = meta_mut(new) {
        for f in keep {
            match old_meta.get(f) {
                Some(x) => m.insert(f.into(), x.clone()),
                None => m.remove(f),
            };
        }
    }
    if tracks_generation(info) && generation_changes(info, old, new) {
        let g = old_meta
            .get("generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if let Some(m) = meta_mut(new) {
            m.insert("generation".into(), json!(g + 1));
        }
    }
}

/// Whether `v` holds nothing but nulls, empty lists and empty maps.
fn blank(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.values().all(blank),
        _ => false,
    }
}

/// Equality that, like `apiequality.Semantic.DeepEqual` after a Go struct
/// round trip, does not tell null, absent, empty lists and empty maps
/// apart. Allocation-free.
pub fn semantic_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.iter().all(|(k, xv)| match y.get(k) {
                Some(yv) => semantic_eq(xv, yv),
                None => blank(xv),
            }) && y.iter().all(|(k, yv)| x.contains_key(k) || blank(yv))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| semantic_eq(p, q))
        }
        _ => a == b || (blank(a) && blank(b)),
    }
}

/// Upstream PrepareForUpdate rules: EndpointSlice — anything outside
/// metadata, or the labels; Pod — the spec.
pub fn generation_changes(info: &ResourceInfo, old: &Value, new: &Value) -> bool {
    let without_meta = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            for f in ["metadata", "kind", "apiVersion"] {
                m.remove(f);
            }
        }
        v
    };
    match info.resource {
        "endpointslices" => {
            let labels = |v: &Value| {
                v.pointer("/metadata/labels")
                    .cloned()
                    .unwrap_or(Value::Null)
            };
            !semantic_eq(&without_meta(old), &without_meta(new))
                || !semantic_eq(&labels(old), &labels(new))
        }
        "pods" => !semantic_eq(
            old.get("spec").unwrap_or(&Value::Null),
            new.get("spec").unwrap_or(&Value::Null),
        ),
        _ => false,
    }
}

/// The namespaces resource.
pub fn namespace_info() -> &'static ResourceInfo {
    static NS: std::sync::OnceLock<&'static ResourceInfo> = std::sync::OnceLock::new();
    NS.get_or_init(|| {
        super::resources::RESOURCES
            .iter()
            .find(|r| r.resource == "namespaces")
            .unwrap_or(&super::resources::RESOURCES[0])
    })
}

#[cfg(test)]
#[path = "objects_tests.rs"]
mod tests;
