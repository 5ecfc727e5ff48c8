//! Object metadata in two shapes: [`TrimmedMeta`] for cached projections
//! (only what the controllers read, compact strings: short ones inline,
//! namespaces interned) and
//! [`ObjectMeta`] for objects we write (round-trips unknown fields; also
//! compact, as the Endpoints and EndpointSlices we write are cached too),
//! plus owner and object references, and zero-sized fixed `apiVersion`
//! and `kind` fields ([`fixed_str`]).
//!
//! Must never keep large, unread metadata (managedFields, last-applied
//! annotations) in a cached object, nor change a byte of the metadata
//! written back (field order, omission rules, unknown fields).

use super::intern::interned;
use super::{IStr, Labels, OptTime, Time, Uid, UidStr};
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

/// `metadata` of an object we write (and of the Endpoints and
/// EndpointSlices we cache: 1,000 of each at full size, so it is compact).
/// Fields we do not model (finalizers, …) are kept in `extra` and sent
/// back unchanged on PUT. `managedFields` is dropped while parsing: it is
/// the largest part of most objects, the controllers never read it, and
/// the API server keeps an object's managedFields when an update omits
/// them.
///
/// Memory: 192 bytes inline, and for a typical written object only the
/// labels, annotations and owner references on the heap (one allocation
/// each; decoded annotations are shared between equal sets, see
/// [`Labels::shared`]): names, generateName and resourceVersions of up to
/// 24 bytes and a UUID uid are inline, the namespace is interned,
/// timestamps are whole seconds (what `metav1.Time` carries on the wire)
/// in 8 bytes each, and `extra` costs 8 bytes when empty.
///
/// Serialized as a JSON object in Go's field order with `omitempty`
/// semantics, then the `extra` fields in key order; decoded by hand
/// (known keys straight into their fields, no intermediate buffering) with
/// `null` read as the zero value, as Go's decoder does.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObjectMeta {
    /// `name` (empty when `generate_name` is used).
    pub name: CompactString,
    /// `generateName`.
    pub generate_name: CompactString,
    /// `namespace` (interned).
    pub namespace: IStr,
    /// `uid` (server-set; a UUID inline, see [`UidText`]).
    pub uid: UidText,
    /// `resourceVersion` (optimistic concurrency on update).
    pub resource_version: CompactString,
    /// `generation` (server-set).
    pub generation: Option<i64>,
    /// `creationTimestamp` (server-set).
    pub creation_timestamp: OptTime,
    /// `deletionTimestamp` (server-set).
    pub deletion_timestamp: OptTime,
    /// `labels`.
    pub labels: Labels,
    /// `annotations`.
    pub annotations: Labels,
    /// `ownerReferences`.
    pub owner_references: Box<[OwnerReference]>,
    /// Every other metadata field, round-tripped verbatim (`None` when
    /// there is none; never `Some` of an empty map).
    pub extra: Option<Box<serde_json::Map<String, serde_json::Value>>>,
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
        UidStr::from(&*self.uid)
    }
    /// The unmodelled field `key`, if present.
    pub fn extra(&self, key: &str) -> Option<&serde_json::Value> {
        self.extra.as_ref().and_then(|m| m.get(key))
    }
    /// Set the unmodelled field `key` (kept and written back verbatim).
    pub fn set_extra(&mut self, key: &str, value: serde_json::Value) {
        self.extra
            .get_or_insert_with(Box::default)
            .insert(key.to_string(), value);
    }
}

impl Serialize for ObjectMeta {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        let strs = [
            ("name", &*self.name),
            ("generateName", &*self.generate_name),
            ("namespace", &*self.namespace),
            ("uid", &*self.uid),
            ("resourceVersion", &*self.resource_version),
        ];
        for (k, v) in strs {
            if !v.is_empty() {
                m.serialize_entry(k, v)?;
            }
        }
        if let Some(g) = self.generation {
            m.serialize_entry("generation", &g)?;
        }
        if let Some(t) = self.creation_timestamp.get() {
            m.serialize_entry("creationTimestamp", &t)?;
        }
        if let Some(t) = self.deletion_timestamp.get() {
            m.serialize_entry("deletionTimestamp", &t)?;
        }
        if !self.labels.is_empty() {
            m.serialize_entry("labels", &self.labels)?;
        }
        if !self.annotations.is_empty() {
            m.serialize_entry("annotations", &self.annotations)?;
        }
        if !self.owner_references.is_empty() {
            m.serialize_entry("ownerReferences", &self.owner_references)?;
        }
        for (k, v) in self.extra.iter().flat_map(|e| e.iter()) {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// A metadata key: one of the modelled fields, or any other (kept).
enum MetaKey {
    Name,
    GenerateName,
    Namespace,
    Uid,
    ResourceVersion,
    Generation,
    CreationTimestamp,
    DeletionTimestamp,
    Labels,
    Annotations,
    OwnerReferences,
    ManagedFields,
    Other(String),
}

impl MetaKey {
    fn of(s: &str) -> MetaKey {
        match s {
            "name" => MetaKey::Name,
            "generateName" => MetaKey::GenerateName,
            "namespace" => MetaKey::Namespace,
            "uid" => MetaKey::Uid,
            "resourceVersion" => MetaKey::ResourceVersion,
            "generation" => MetaKey::Generation,
            "creationTimestamp" => MetaKey::CreationTimestamp,
            "deletionTimestamp" => MetaKey::DeletionTimestamp,
            "labels" => MetaKey::Labels,
            "annotations" => MetaKey::Annotations,
            "ownerReferences" => MetaKey::OwnerReferences,
            "managedFields" => MetaKey::ManagedFields,
            other => MetaKey::Other(other.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for MetaKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<MetaKey, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MetaKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a metadata field name")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<MetaKey, E> {
                Ok(MetaKey::of(s))
            }
            fn visit_string<E: serde::de::Error>(self, s: String) -> Result<MetaKey, E> {
                Ok(match MetaKey::of(&s) {
                    MetaKey::Other(_) => MetaKey::Other(s),
                    k => k,
                })
            }
        }
        d.deserialize_identifier(V)
    }
}

/// A string or null (as "") into a [`CompactString`].
fn next_compact<'de, A: MapAccess<'de>>(a: &mut A) -> Result<CompactString, A::Error> {
    Ok(a.next_value::<Option<CompactString>>()?.unwrap_or_default())
}

struct MetaVisitor;

impl<'de> Visitor<'de> for MetaVisitor {
    type Value = ObjectMeta;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("object metadata")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<ObjectMeta, A::Error> {
        let mut m = ObjectMeta::default();
        while let Some(k) = a.next_key::<MetaKey>()? {
            match k {
                MetaKey::Name => m.name = next_compact(&mut a)?,
                MetaKey::GenerateName => m.generate_name = next_compact(&mut a)?,
                MetaKey::Namespace => m.namespace = a.next_value()?,
                MetaKey::Uid => m.uid = a.next_value()?,
                MetaKey::ResourceVersion => m.resource_version = next_compact(&mut a)?,
                MetaKey::Generation => m.generation = a.next_value()?,
                MetaKey::CreationTimestamp => m.creation_timestamp = a.next_value()?,
                MetaKey::DeletionTimestamp => m.deletion_timestamp = a.next_value()?,
                MetaKey::Labels => m.labels = a.next_value()?,
                // Shared: the Endpoints and the EndpointSlices of one
                // Service carry the same trigger-time annotation (and
                // Services changed together, the same time).
                MetaKey::Annotations => m.annotations = a.next_value::<Labels>()?.shared(),
                MetaKey::OwnerReferences => {
                    m.owner_references = a
                        .next_value::<Option<Vec<OwnerReference>>>()?
                        .unwrap_or_default()
                        .into_boxed_slice();
                }
                MetaKey::ManagedFields => {
                    a.next_value::<IgnoredAny>()?;
                }
                MetaKey::Other(k) => {
                    let v = a.next_value::<serde_json::Value>()?;
                    m.extra.get_or_insert_with(Box::default).insert(k, v);
                }
            }
        }
        Ok(m)
    }
}

impl<'de> Deserialize<'de> for ObjectMeta {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
        d.deserialize_map(MetaVisitor)
    }
}

/// An object's `metadata.uid` as its text, inline up to 38 bytes (a
/// canonical 36-byte UUID, what the API server assigns, needs no
/// allocation; a `String` would cost a 48-byte heap chunk), longer
/// texts boxed. Reads as a `&str`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct UidText(UidRepr);

/// Inline capacity of a [`UidText`].
const UID_INLINE: usize = 38;

#[derive(Clone, PartialEq, Eq, Hash)]
enum UidRepr {
    /// Up to [`UID_INLINE`] bytes of UTF-8 (`len` of them used).
    Inline { len: u8, buf: [u8; UID_INLINE] },
    /// Longer text (never of [`UID_INLINE`] bytes or fewer, so that equal
    /// texts have equal representations).
    Heap(Box<str>),
}

impl UidText {
    /// The UID with this text.
    pub fn new(s: &str) -> UidText {
        match u8::try_from(s.len()) {
            Ok(len) if s.len() <= UID_INLINE => {
                let mut buf = [0; UID_INLINE];
                buf[..s.len()].copy_from_slice(s.as_bytes());
                UidText(UidRepr::Inline { len, buf })
            }
            _ => UidText(UidRepr::Heap(s.into())),
        }
    }
    /// The text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            // Only ever filled from a whole `&str` (see `new`).
            UidRepr::Inline { len, buf } => {
                std::str::from_utf8(&buf[..usize::from(*len)]).unwrap_or_default()
            }
            UidRepr::Heap(s) => s,
        }
    }
    /// Make it empty.
    pub fn clear(&mut self) {
        *self = UidText::default();
    }
}

impl Default for UidText {
    fn default() -> UidText {
        UidText(UidRepr::Inline {
            len: 0,
            buf: [0; UID_INLINE],
        })
    }
}

impl std::ops::Deref for UidText {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for UidText {
    fn from(s: &str) -> UidText {
        UidText::new(s)
    }
}

impl From<String> for UidText {
    fn from(s: String) -> UidText {
        UidText::new(&s)
    }
}

impl From<&String> for UidText {
    fn from(s: &String) -> UidText {
        UidText::new(s)
    }
}

impl From<UidStr<'_>> for UidText {
    fn from(s: UidStr<'_>) -> UidText {
        UidText::new(&s)
    }
}

impl PartialEq<str> for UidText {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for UidText {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Display for UidText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl fmt::Debug for UidText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl Serialize for UidText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self)
    }
}

impl<'de> Deserialize<'de> for UidText {
    /// A string (read borrowed where the input allows); null as "".
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<UidText, D::Error> {
        d.deserialize_option(super::intern::StrOrNull(UidText::new))
    }
}

/// `metav1.OwnerReference`: apiVersion and kind interned, the uid a
/// [`Uid`] (16 bytes inline for a UUID), 72 bytes and no allocation of
/// its own (four `String`s were 98 bytes plus four heap chunks).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OwnerReference {
    /// `apiVersion` of the owner, e.g. `v1` (interned).
    pub api_version: IStr,
    /// `kind` of the owner, e.g. `Service` (interned).
    pub kind: IStr,
    /// Owner name.
    #[serde(deserialize_with = "compact")]
    pub name: CompactString,
    /// Owner UID.
    pub uid: Uid,
    /// Whether this reference points to the managing controller.
    #[serde(skip_serializing_if = "is_false")]
    pub controller: bool,
    /// Whether the owner cannot be deleted before this object.
    #[serde(skip_serializing_if = "is_false")]
    pub block_owner_deletion: bool,
}

/// A string field of a fixed value (an object's `apiVersion` or `kind`):
/// stored nowhere (zero bytes), written as its value, and read by
/// skipping whatever the input holds (a typed client only ever receives
/// its own type's value, or nothing at all in the items of a LIST).
macro_rules! fixed_str {
    ($(#[$m:meta])* $name:ident = $value:literal) => {
        $(#[$m])*
        #[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $name;

        impl $name {
            /// The value.
            pub const VALUE: &'static str = $value;
            /// The value.
            pub fn as_str(self) -> &'static str {
                $value
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                $value
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt($value, f)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($value)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                serde::de::IgnoredAny::deserialize(d).map(|_| $name)
            }
        }
    };
}
pub(crate) use fixed_str;

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
        assert!(with_mf.extra.is_none(), "managedFields are not kept");
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

/// The compact [`ObjectMeta`] against the derive-based definition it
/// replaced: same bytes out for the same bytes in.
#[cfg(test)]
mod compact_tests {
    use super::*;
    use crate::model::{EndpointSlice, Endpoints, SliceApiVersion, SliceKind};

    /// The `ObjectMeta` of before (all `String`s, `#[serde(flatten)]`).
    #[derive(Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", default)]
    struct LegacyMeta {
        #[serde(skip_serializing_if = "String::is_empty")]
        name: String,
        #[serde(skip_serializing_if = "String::is_empty")]
        generate_name: String,
        #[serde(skip_serializing_if = "String::is_empty")]
        namespace: String,
        #[serde(skip_serializing_if = "String::is_empty")]
        uid: String,
        #[serde(skip_serializing_if = "String::is_empty")]
        resource_version: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        generation: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        creation_timestamp: Option<Time>,
        #[serde(skip_serializing_if = "Option::is_none")]
        deletion_timestamp: Option<Time>,
        #[serde(skip_serializing_if = "Labels::is_empty")]
        labels: Labels,
        #[serde(skip_serializing_if = "Labels::is_empty")]
        annotations: Labels,
        #[serde(
            skip_serializing_if = "Vec::is_empty",
            deserialize_with = "crate::model::exact_vec::null_default_vec"
        )]
        owner_references: Vec<LegacyOwner>,
        #[serde(rename = "managedFields", skip_serializing)]
        managed_fields: Option<IgnoredAny>,
        #[serde(flatten)]
        extra: serde_json::Map<String, serde_json::Value>,
    }

    #[derive(Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", default)]
    struct LegacyOwner {
        api_version: String,
        kind: String,
        name: String,
        uid: String,
        #[serde(skip_serializing_if = "is_false")]
        controller: bool,
        #[serde(skip_serializing_if = "is_false")]
        block_owner_deletion: bool,
    }
    crate::model::exact_vec::scratch!(LegacyOwner);

    const UUID: &str = "6f1c2a7e-3b4d-4c5e-9f60-0123456789ab";

    #[test]
    fn writes_the_same_bytes_as_the_derived_meta() {
        let cases = [
            "{}",
            r#"{"name":"s"}"#,
            // Every modelled field, out of order, with unknown ones
            // before, between and after them.
            r#"{"zz":1,"finalizers":["a/b"],"uid":"6f1c2a7e-3b4d-4c5e-9f60-0123456789ab",
                "name":"web-abcde","generateName":"web-","namespace":"shop","resourceVersion":"123456",
                "generation":7,"creationTimestamp":"2026-01-01T00:00:00Z",
                "deletionTimestamp":"2026-01-02T03:04:05Z","deletionGracePeriodSeconds":30,
                "labels":{"kubernetes.io/service-name":"web","a":"b"},
                "annotations":{"endpoints.kubernetes.io/last-change-trigger-time":"2026-01-01T00:00:00Z"},
                "ownerReferences":[{"apiVersion":"v1","kind":"Service","name":"web",
                    "uid":"6f1c2a7e-3b4d-4c5e-9f60-0123456789ab","controller":true,"blockOwnerDeletion":true}],
                "managedFields":[{"manager":"kcm","operation":"Update","fieldsV1":{"f:x":{}}}],
                "aa":{"nested":[1,2,{"x":null}]}}"#,
            // Non-canonical UIDs, long names, several owners.
            r#"{"name":"a-very-long-object-name-that-does-not-fit-inline","uid":"UPPER-CASE-uid",
                "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"x"},
                                   {"kind":"Service","uid":"6F1C2A7E-3B4D-4C5E-9F60-0123456789AB","controller":false}]}"#,
            r#"{"uid":"0123456789012345678901234567890123456789-longer-than-inline"}"#,
            // Timestamps with offsets and fractions (written as whole UTC seconds).
            r#"{"creationTimestamp":"2026-01-01T01:00:00.75+01:00","deletionTimestamp":"1969-12-31T23:59:59.5Z"}"#,
            r#"{"labels":null,"annotations":null,"ownerReferences":null,"generation":null,
                "creationTimestamp":null,"managedFields":null,"other":null}"#,
            r#"{"name":"s","managedFields":[{"manager":"kcm","fieldsV1":{"f:x":{}}}]}"#,
            r#"{"ownerReferences":[]}"#,
            r#"{"selfLink":"/api/v1/x","name":"\u0077eb","labels":{}}"#,
        ];
        for json in cases {
            let legacy: LegacyMeta = serde_json::from_str(json).expect(json);
            let want = serde_json::to_string(&legacy).expect("legacy json");
            let m: ObjectMeta = serde_json::from_str(json).expect(json);
            let got = serde_json::to_string(&m).expect("json");
            assert_eq!(got, want, "{json}");
            // And through the object types that cache it.
            let back: ObjectMeta = serde_json::from_str(&got).expect("reparse");
            assert_eq!(back, m, "{json}");
            let slice = format!(r#"{{"metadata":{json},"addressType":"IPv4"}}"#);
            let s: EndpointSlice = serde_json::from_str(&slice).expect("slice");
            assert_eq!(s.metadata, m);
            let ep = format!(r#"{{"kind":"Endpoints","apiVersion":"v1","metadata":{json}}}"#);
            let e: Endpoints = serde_json::from_str(&ep).expect("endpoints");
            assert_eq!(
                serde_json::to_string(&e).expect("json"),
                format!(r#"{{"apiVersion":"v1","kind":"Endpoints","metadata":{want}}}"#)
            );
        }
    }

    #[test]
    fn unknown_fields_are_kept_in_extra_and_null_reads_as_zero() {
        let m: ObjectMeta = serde_json::from_str(
            r#"{"name":"s","finalizers":["x"],"deletionGracePeriodSeconds":30,"managedFields":[{}]}"#,
        )
        .expect("meta");
        assert_eq!(m.extra("finalizers"), Some(&serde_json::json!(["x"])));
        assert_eq!(m.extra.as_ref().map(|e| e.len()), Some(2));
        assert_eq!(m.extra("managedFields"), None);
        let mut m = ObjectMeta::default();
        assert_eq!(m.extra("finalizers"), None);
        m.set_extra("finalizers", serde_json::json!(["y"]));
        assert_eq!(
            serde_json::to_string(&m).expect("json"),
            r#"{"finalizers":["y"]}"#
        );
        // Go decodes null into a string as its zero value; the derived
        // meta refused it.
        let nulls: ObjectMeta = serde_json::from_str(
            r#"{"name":null,"generateName":null,"namespace":null,"uid":null,"resourceVersion":null}"#,
        )
        .expect("nulls");
        assert_eq!(nulls, ObjectMeta::default());
        for bad in [
            r#"{"name":1}"#,
            r#"{"labels":[]}"#,
            r#"{"creationTimestamp":"yesterday"}"#,
            r#"{"ownerReferences":{}}"#,
            r#"{"generation":"1"}"#,
            "[]",
        ] {
            assert!(serde_json::from_str::<ObjectMeta>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn equal_annotations_share_one_buffer() {
        let json = r#"{"annotations":{"endpoints.kubernetes.io/last-change-trigger-time":"2026-01-01T00:00:00Z"}}"#;
        let a: ObjectMeta = serde_json::from_str(json).expect("meta");
        let b: ObjectMeta = serde_json::from_str(json).expect("meta");
        assert!(Labels::ptr_eq(&a.annotations, &b.annotations));
        assert_eq!(a.annotations.len(), 1);
    }

    #[test]
    fn compact_sizes() {
        use std::mem::size_of;
        assert_eq!(size_of::<ObjectMeta>(), 192); // Labels are 8-byte thin pointers
        assert_eq!(size_of::<OwnerReference>(), 72);
        assert_eq!(size_of::<UidText>(), 40);
        assert_eq!(size_of::<SliceApiVersion>() + size_of::<SliceKind>(), 0);
        let m: ObjectMeta = serde_json::from_str(&format!(
            r#"{{"name":"web-abcde","generateName":"web-","namespace":"shop","uid":"{UUID}",
                "resourceVersion":"12345678901234567890"}}"#
        ))
        .expect("meta");
        assert!(!m.name.is_heap_allocated() && !m.resource_version.is_heap_allocated());
        assert!(matches!(m.uid.0, UidRepr::Inline { .. }));
    }

    #[test]
    fn uid_text_reads_back_its_text() {
        let long = "x".repeat(UID_INLINE + 1);
        let exact = "y".repeat(UID_INLINE);
        for s in ["", "u", UUID, "UPPER-CASE", "ü-non-ascii", &exact, &long] {
            let u = UidText::new(s);
            assert_eq!(&*u, s);
            assert_eq!(u, s);
            assert_eq!(u.to_string(), s);
            assert_eq!(format!("{u:?}"), format!("{s:?}"));
            assert_eq!(u.is_empty(), s.is_empty());
            assert_eq!(matches!(u.0, UidRepr::Heap(_)), s.len() > UID_INLINE, "{s}");
            assert_eq!(
                serde_json::to_string(&u).expect("json"),
                serde_json::to_string(s).expect("json")
            );
            let back: UidText =
                serde_json::from_str(&serde_json::to_string(s).expect("json")).expect("parse");
            assert_eq!(back, u);
            assert_eq!(UidText::from(String::from(s)), u);
            assert_eq!(
                &*ObjectMeta {
                    uid: u.clone(),
                    ..Default::default()
                }
                .uid(),
                s
            );
        }
        let mut u = UidText::new(&long);
        u.clear();
        assert_eq!(u, UidText::default());
        assert_eq!(
            serde_json::from_str::<UidText>("null").expect("null"),
            UidText::default()
        );
        assert!(serde_json::from_str::<UidText>("1").is_err());
    }

    #[test]
    fn fixed_api_version_and_kind_are_written_not_stored() {
        assert_eq!(&*SliceApiVersion, "discovery.k8s.io/v1");
        assert_eq!(SliceKind.as_str(), "EndpointSlice");
        assert_eq!(format!("{SliceKind:?}"), r#""EndpointSlice""#);
        // Absent (LIST items) or present, the value written is the type's.
        for json in [
            r#"{"addressType":"IPv4"}"#,
            r#"{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","addressType":"IPv4"}"#,
        ] {
            let s: EndpointSlice = serde_json::from_str(json).expect(json);
            assert_eq!(
                serde_json::to_string(&s).expect("json"),
                r#"{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{},"addressType":"IPv4","endpoints":[],"ports":[]}"#
            );
        }
        let e: Endpoints = serde_json::from_str("{}").expect("endpoints");
        assert_eq!(
            serde_json::to_string(&e).expect("json"),
            r#"{"apiVersion":"v1","kind":"Endpoints","metadata":{}}"#
        );
    }
}
