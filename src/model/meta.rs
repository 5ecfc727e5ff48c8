//! Object metadata in two shapes: [`TrimmedMeta`] for cached projections
//! (only what the controllers read, compact strings: short ones inline,
//! namespaces interned) and
//! [`ObjectMeta`] for objects we write (round-trips unknown fields), plus
//! owner and object references.
//!
//! Must never keep large, unread metadata (managedFields, last-applied
//! annotations) in a cached object.

use super::intern::interned;
use super::{IStr, Labels, Time, Uid, UidStr};
use compact_str::CompactString;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;
use std::sync::Arc;

/// Annotations a cached object keeps; every other annotation is skipped
/// while parsing (their values are never even allocated).
pub const KEPT_ANNOTATIONS: &[&str] = &[
    "service.kubernetes.io/topology-aware-hints",
    "service.kubernetes.io/topology-mode",
];

/// Metadata of a cached projection (Service, Node, Namespace; a Pod has
/// the smaller [`super::PodMeta`]).
///
/// Memory: a name of up to 24 bytes, the resourceVersion and a canonical
/// UID are stored inline (no allocation), the namespace is one shared
/// interned `Arc<str>` per namespace (see `model::intern`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TrimmedMeta {
    /// `metadata.name`.
    #[serde(deserialize_with = "compact")]
    pub name: CompactString,
    /// `metadata.namespace` ("" for cluster-scoped objects); interned.
    #[serde(deserialize_with = "interned")]
    pub namespace: Arc<str>,
    /// `metadata.uid` (a canonical UUID as 16 bytes inline).
    pub uid: Uid,
    /// `metadata.resourceVersion`.
    #[serde(deserialize_with = "compact")]
    pub resource_version: CompactString,
    /// `metadata.labels`.
    pub labels: Labels,
    /// The subset of `metadata.annotations` named in [`KEPT_ANNOTATIONS`].
    #[serde(deserialize_with = "kept_annotations")]
    pub annotations: Labels,
    /// `metadata.creationTimestamp`.
    pub creation_timestamp: Option<Time>,
    /// `metadata.deletionTimestamp`.
    pub deletion_timestamp: Option<Time>,
}

/// Deserialize a string (or null) straight into a `Box<str>`.
pub(crate) fn boxed<'de, D: Deserializer<'de>>(d: D) -> Result<Box<str>, D::Error> {
    Ok(Option::<String>::deserialize(d)?
        .unwrap_or_default()
        .into_boxed_str())
}

/// Deserialize a string (or null) into a [`CompactString`] (inline up to
/// 24 bytes: no allocation for most names, resourceVersions and IPs).
pub(crate) fn compact<'de, D: Deserializer<'de>>(d: D) -> Result<CompactString, D::Error> {
    Ok(Option::<CompactString>::deserialize(d)?.unwrap_or_default())
}

/// Heap bytes a [`CompactString`] owns (0 when stored inline).
pub(crate) fn compact_heap(s: &CompactString) -> usize {
    if s.is_heap_allocated() {
        s.capacity()
    } else {
        0
    }
}

/// Deserialize an optional string into an optional `Box<str>`.
pub(crate) fn opt_boxed<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Box<str>>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.map(String::into_boxed_str))
}

struct KeptVisitor;

impl<'de> Visitor<'de> for KeptVisitor {
    type Value = Labels;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an annotations map or null")
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Labels, E> {
        Ok(Labels::default())
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<Labels, E> {
        Ok(Labels::default())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Labels, D::Error> {
        d.deserialize_map(KeptVisitor)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Labels, A::Error> {
        let mut kept: Vec<(String, String)> = Vec::new();
        while let Some(k) = a.next_key::<std::borrow::Cow<'de, str>>()? {
            if KEPT_ANNOTATIONS.contains(&&*k) {
                kept.push((k.into_owned(), a.next_value::<String>()?));
            } else {
                a.next_value::<IgnoredAny>()?;
            }
        }
        Ok(kept.into_iter().collect())
    }
}

fn kept_annotations<'de, D: Deserializer<'de>>(d: D) -> Result<Labels, D::Error> {
    d.deserialize_option(KeptVisitor)
}

impl TrimmedMeta {
    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// `metadata.namespace`, `None` if empty.
    pub fn namespace(&self) -> Option<&str> {
        (!self.namespace.is_empty()).then_some(&*self.namespace)
    }
    /// `metadata.resourceVersion`.
    pub fn resource_version(&self) -> &str {
        &self.resource_version
    }
    /// `metadata.uid`.
    pub fn uid(&self) -> UidStr<'_> {
        self.uid.as_str()
    }
    /// Heap bytes owned (for memory accounting).
    /// (The interned namespace is shared, so not counted per object.)
    pub fn heap_bytes(&self) -> usize {
        compact_heap(&self.name)
            + self.uid.heap_bytes()
            + compact_heap(&self.resource_version)
            + self.labels.heap_bytes()
            + self.annotations.heap_bytes()
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// `metadata` of an object we write. Fields we do not model (finalizers,
/// …) are kept in `extra` and sent back unchanged on PUT. `managedFields`
/// is dropped while parsing: it is the largest part of most objects, the
/// controllers never read it, and the API server keeps an object's
/// managedFields when an update omits them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectMeta {
    /// `name` (empty when `generate_name` is used).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// `generateName`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub generate_name: String,
    /// `namespace`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// `uid` (server-set).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// `resourceVersion` (optimistic concurrency on update).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// `generation` (server-set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// `creationTimestamp` (server-set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<Time>,
    /// `deletionTimestamp` (server-set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<Time>,
    /// `labels`.
    #[serde(skip_serializing_if = "Labels::is_empty")]
    pub labels: Labels,
    /// `annotations`.
    #[serde(skip_serializing_if = "Labels::is_empty")]
    pub annotations: Labels,
    /// `ownerReferences`.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "super::pod::null_default_vec"
    )]
    pub owner_references: Vec<OwnerReference>,
    /// `managedFields`: never kept (see the type's doc).
    #[serde(rename = "managedFields", skip_serializing)]
    pub managed_fields: Dropped,
    /// Every other metadata field, round-tripped verbatim.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// A field parsed and thrown away.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dropped;

impl<'de> Deserialize<'de> for Dropped {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dropped, D::Error> {
        IgnoredAny::deserialize(d).map(|_| Dropped)
    }
}

impl ObjectMeta {
    /// `name`.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// `namespace`, `None` if empty.
    pub fn namespace(&self) -> Option<&str> {
        (!self.namespace.is_empty()).then_some(self.namespace.as_str())
    }
    /// `resourceVersion`.
    pub fn resource_version(&self) -> &str {
        &self.resource_version
    }
    /// `uid`.
    pub fn uid(&self) -> UidStr<'_> {
        UidStr::from(self.uid.as_str())
    }
}

/// `metav1.OwnerReference`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OwnerReference {
    /// `apiVersion` of the owner, e.g. `v1`.
    pub api_version: String,
    /// `kind` of the owner, e.g. `Service`.
    pub kind: String,
    /// Owner name.
    pub name: String,
    /// Owner UID.
    pub uid: String,
    /// Whether this reference points to the managing controller.
    #[serde(skip_serializing_if = "is_false")]
    pub controller: bool,
    /// Whether the owner cannot be deleted before this object.
    #[serde(skip_serializing_if = "is_false")]
    pub block_owner_deletion: bool,
}

/// `v1.ObjectReference` (targetRef, event `regarding`). Empty fields are
/// omitted, as Go's `omitempty` does.
///
/// Cached by the thousand (one per Endpoints address and per slice
/// endpoint), so the three fields a pod's targetRef never has
/// (`apiVersion`, `resourceVersion`, `fieldPath`) are kept out of line in
/// [`RefMore`], `None` when all are empty; kind and namespace are interned
/// and the uid is a [`Uid`] (no heap allocation for a canonical UUID): 72
/// bytes instead of 168.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(from = "RefWire<CompactString, Uid>")]
pub struct ObjectReference {
    /// `kind` (interned).
    pub kind: IStr,
    /// `namespace` (interned).
    pub namespace: IStr,
    /// `name`.
    pub name: CompactString,
    /// `uid` (a canonical UUID as 16 bytes inline: see [`Uid`]).
    pub uid: Uid,
    /// `apiVersion`, `resourceVersion` and `fieldPath`; `None` when all
    /// are empty (never `Some` of all-empty: see [`ObjectReference::set_more`]).
    pub more: Option<Box<RefMore>>,
}

/// The rarely set fields of an [`ObjectReference`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RefMore {
    /// `apiVersion`.
    pub api_version: CompactString,
    /// `resourceVersion`.
    pub resource_version: CompactString,
    /// `fieldPath`.
    pub field_path: CompactString,
}

/// The wire form of an [`ObjectReference`] (all seven fields, flat).
#[derive(Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
struct RefWire<S: AsRef<str>, U: UidField> {
    #[serde(skip_serializing_if = "is_empty_str")]
    kind: S,
    #[serde(skip_serializing_if = "is_empty_str")]
    namespace: S,
    #[serde(skip_serializing_if = "is_empty_str")]
    name: S,
    #[serde(skip_serializing_if = "UidField::is_empty_uid")]
    uid: U,
    #[serde(skip_serializing_if = "is_empty_str")]
    api_version: S,
    #[serde(skip_serializing_if = "is_empty_str")]
    resource_version: S,
    #[serde(skip_serializing_if = "is_empty_str")]
    field_path: S,
}

fn is_empty_str<S: AsRef<str>>(s: &S) -> bool {
    s.as_ref().is_empty()
}

/// What [`RefWire`]'s uid can be: a [`Uid`] or a reference to one.
trait UidField {
    fn is_empty_uid(&self) -> bool;
}

impl UidField for Uid {
    fn is_empty_uid(&self) -> bool {
        self.is_empty()
    }
}

impl UidField for &Uid {
    fn is_empty_uid(&self) -> bool {
        self.is_empty()
    }
}

impl From<RefWire<CompactString, Uid>> for ObjectReference {
    fn from(w: RefWire<CompactString, Uid>) -> ObjectReference {
        let mut r = ObjectReference {
            kind: w.kind.into(),
            namespace: w.namespace.into(),
            name: w.name,
            uid: w.uid,
            more: None,
        };
        r.set_more(RefMore {
            api_version: w.api_version,
            resource_version: w.resource_version,
            field_path: w.field_path,
        });
        r
    }
}

impl Serialize for ObjectReference {
    fn serialize<Ser: serde::Serializer>(&self, s: Ser) -> Result<Ser::Ok, Ser::Error> {
        RefWire::<&str, &Uid> {
            kind: &self.kind,
            namespace: &self.namespace,
            name: &self.name,
            uid: &self.uid,
            api_version: self.api_version(),
            resource_version: self.resource_version(),
            field_path: self.field_path(),
        }
        .serialize(s)
    }
}

/// What a write answered, decoded for its metadata only: the rest of the
/// returned object (an Endpoints' subsets, a slice's endpoints) is skipped
/// without being built. For writers that need only the new
/// resourceVersion, UID and generation.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct MetaOnly {
    /// The returned object's `metadata`.
    #[serde(default, deserialize_with = "super::pod::null_default")]
    pub metadata: ObjectMeta,
}

super::impl_object!(MetaOnly);

impl ObjectReference {
    /// `apiVersion` ("" if unset).
    pub fn api_version(&self) -> &str {
        self.more.as_ref().map_or("", |m| &m.api_version)
    }
    /// `resourceVersion` ("" if unset).
    pub fn resource_version(&self) -> &str {
        self.more.as_ref().map_or("", |m| &m.resource_version)
    }
    /// `fieldPath` ("" if unset).
    pub fn field_path(&self) -> &str {
        self.more.as_ref().map_or("", |m| &m.field_path)
    }
    /// Set the out-of-line fields (`None` when all are empty).
    pub fn set_more(&mut self, more: RefMore) {
        let empty = more.api_version.is_empty()
            && more.resource_version.is_empty()
            && more.field_path.is_empty();
        self.more = (!empty).then(|| Box::new(more));
    }
    /// This reference with `apiVersion` set.
    pub fn with_api_version(mut self, api_version: &str) -> ObjectReference {
        let mut more = self.more.take().map(|m| *m).unwrap_or_default();
        more.api_version = api_version.into();
        self.set_more(more);
        self
    }

    /// Equal in every field but `resourceVersion` (which changes with
    /// every pod update that does not concern endpoints); no clone.
    pub fn eq_ignoring_resource_version(&self, other: &ObjectReference) -> bool {
        self.kind == other.kind
            && self.namespace == other.namespace
            && self.name == other.name
            && self.uid == other.uid
            && self.api_version() == other.api_version()
            && self.field_path() == other.field_path()
    }

    /// [`Self::eq_ignoring_resource_version`] over optional references.
    pub fn opt_eq_ignoring_resource_version(
        a: Option<&ObjectReference>,
        b: Option<&ObjectReference>,
    ) -> bool {
        match (a, b) {
            (None, None) => true,
            (Some(a), Some(b)) => a.eq_ignoring_resource_version(b),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimmed_meta_keeps_only_listed_annotations() {
        let m: TrimmedMeta = serde_json::from_str(
            r#"{"name":"a","namespace":null,"uid":"u","resourceVersion":"7",
                "annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{huge}",
                               "service.kubernetes.io/topology-mode":"Auto"},
                "managedFields":[{"manager":"x"}],
                "creationTimestamp":"2026-01-01T00:00:00Z"}"#,
        )
        .expect("meta");
        assert_eq!(m.namespace(), None);
        assert_eq!(m.annotations.len(), 1);
        assert_eq!(
            m.annotations.get("service.kubernetes.io/topology-mode"),
            Some("Auto")
        );
        assert!(m.creation_timestamp.is_some());
        assert!(m.deletion_timestamp.is_none());
    }

    #[test]
    fn object_meta_round_trips_unknown_fields_and_omits_empty() {
        let json = r#"{"name":"s","namespace":"ns","finalizers":["x"],"generation":3,
                       "labels":{"a":"b"},"ownerReferences":[{"apiVersion":"v1","kind":"Service",
                       "name":"s","uid":"u","controller":true,"blockOwnerDeletion":true}]}"#;
        let m: ObjectMeta = serde_json::from_str(json).expect("meta");
        let back: serde_json::Value = serde_json::to_value(&m).expect("json");
        let orig: serde_json::Value = serde_json::from_str(json).expect("orig");
        assert_eq!(back, orig);
        let with_mf: ObjectMeta = serde_json::from_str(
            r#"{"name":"s","managedFields":[{"manager":"kcm","fieldsV1":{"f:x":{}}}]}"#,
        )
        .expect("meta");
        assert!(with_mf.extra.is_empty(), "managedFields are not kept");
        assert_eq!(
            serde_json::to_string(&with_mf).expect("json"),
            r#"{"name":"s"}"#
        );
        let nulls: ObjectMeta =
            serde_json::from_str(r#"{"labels":null,"annotations":null,"ownerReferences":null}"#)
                .expect("nulls");
        assert_eq!(nulls, ObjectMeta::default());
        let empty = serde_json::to_string(&ObjectMeta::default()).expect("json");
        assert_eq!(empty, "{}");
        let r = ObjectReference {
            kind: "Pod".into(),
            name: "p".into(),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_string(&r).expect("json"),
            r#"{"kind":"Pod","name":"p"}"#
        );
        // All seven fields, in Go's order, byte for byte; the rare three
        // kept out of line only when one is set.
        let full = r#"{"kind":"Pod","namespace":"ns","name":"p","uid":"u","apiVersion":"v1","resourceVersion":"7","fieldPath":"spec.containers{c}"}"#;
        let r: ObjectReference = serde_json::from_str(full).expect("ref");
        assert_eq!(r.api_version(), "v1");
        assert_eq!(serde_json::to_string(&r).expect("json"), full);
        let r: ObjectReference =
            serde_json::from_str(r#"{"kind":"Pod","apiVersion":"","uid":"u"}"#).expect("ref");
        assert!(
            r.more.is_none(),
            "no out-of-line part when all three are empty"
        );
        assert_eq!(
            serde_json::to_string(&r).expect("json"),
            r#"{"kind":"Pod","uid":"u"}"#
        );
        let r: ObjectReference = serde_json::from_str(r#"{"resourceVersion":"9"}"#).expect("ref");
        assert_eq!(
            (r.resource_version(), r.api_version(), r.field_path()),
            ("9", "", "")
        );
        assert_eq!(std::mem::size_of::<ObjectReference>(), 72);
    }
}
