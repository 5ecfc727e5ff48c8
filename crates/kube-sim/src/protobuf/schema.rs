//! The message schema behind protobuf decoding and the OpenAPI documents:
//! parses `schema.txt` (field number → JSON name, type, flags) once.
//!
//! Owns the schema's data model and its consistency (every referenced
//! message exists, field numbers are unique). Never decodes bytes and never
//! builds documents: [`super::decode`] and [`crate::openapi`] read it.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use super::error::SchemaError;

/// The meta/v1 package, searched after a message's own package.
pub const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";

/// A field's value type.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    /// UTF-8 string.
    String,
    /// Boolean.
    Bool,
    /// 32-bit signed integer (varint).
    Int32,
    /// 64-bit signed integer (varint).
    Int64,
    /// 64-bit float.
    Double,
    /// Bytes, base64 in JSON.
    Bytes,
    /// meta/v1 Time: RFC 3339 seconds.
    Time,
    /// meta/v1 MicroTime: RFC 3339 with microseconds.
    MicroTime,
    /// meta/v1 Duration: a Go duration string.
    Duration,
    /// intstr.IntOrString: a number or a string.
    IntOrString,
    /// resource.Quantity: a string.
    Quantity,
    /// runtime.RawExtension / meta/v1 FieldsV1: embedded JSON.
    Raw,
    /// Another message, by full definition name.
    Message(String),
}

/// One field of a message.
#[derive(Debug, Clone)]
pub struct Field {
    /// Field number on the wire.
    pub number: u32,
    /// JSON name.
    pub name: String,
    /// Element type (of the list or map values when repeated or a map).
    pub ty: Ty,
    /// A list.
    pub repeated: bool,
    /// A map with string keys.
    pub map: bool,
    /// Keep zero values (pointer, or no `omitempty`).
    pub keep: bool,
    /// An embedded struct whose fields are the parent's in JSON.
    pub inline: bool,
    /// `x-kubernetes-patch-merge-key`.
    pub merge_key: Option<String>,
    /// `x-kubernetes-patch-strategy`.
    pub strategy: Option<String>,
}

/// One message.
#[derive(Debug, Clone)]
pub struct Message {
    /// Full definition name (`io.k8s.api.core.v1.Pod`).
    pub name: String,
    /// Group, version and kind of a top-level kind.
    pub gvk: Option<(String, String, String)>,
    /// Fields in schema order.
    pub fields: Vec<Field>,
}

impl Message {
    /// The field with this number.
    pub fn field(&self, number: u32) -> Option<&Field> {
        self.fields.iter().find(|f| f.number == number)
    }
}

/// All messages, by full name.
#[derive(Debug, Default)]
pub struct Schema {
    /// Messages by full definition name.
    pub messages: BTreeMap<String, Message>,
}

impl Schema {
    /// A message by full name.
    pub fn message(&self, name: &str) -> Option<&Message> {
        self.messages.get(name)
    }

    /// The top-level message for a kind (`group` empty for core).
    pub fn kind(&self, group: &str, version: &str, kind: &str) -> Option<&Message> {
        self.messages.values().find(|m| {
            m.gvk
                .as_ref()
                .is_some_and(|(g, v, k)| g == group && v == version && k == kind)
        })
    }
}

/// The schema compiled into kube-sim.
pub fn schema() -> Result<&'static Schema, SchemaError> {
    static S: OnceLock<Result<Schema, SchemaError>> = OnceLock::new();
    S.get_or_init(|| parse(include_str!("schema.txt")))
        .as_ref()
        .map_err(Clone::clone)
}

fn scalar(t: &str) -> Option<Ty> {
    Some(match t {
        "string" => Ty::String,
        "bool" => Ty::Bool,
        "int32" => Ty::Int32,
        "int64" => Ty::Int64,
        "double" => Ty::Double,
        "bytes" => Ty::Bytes,
        "Time" => Ty::Time,
        "MicroTime" => Ty::MicroTime,
        "Duration" => Ty::Duration,
        "IntOrString" => Ty::IntOrString,
        "Quantity" => Ty::Quantity,
        "RawExtension" | "FieldsV1" => Ty::Raw,
        _ => return None,
    })
}

/// Parse the schema text (see the header of `schema.txt`).
pub fn parse(text: &str) -> Result<Schema, SchemaError> {
    let mut schema = Schema::default();
    let mut package = String::new();
    let mut current: Option<String> = None;
    // Unresolved references: (message, field index, name as written, package).
    let mut refs: Vec<(String, usize, String, String)> = Vec::new();
    let mut aliases: Vec<(String, String, String)> = Vec::new();
    for (no, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        let err = |reason: &'static str| SchemaError::Line {
            line: no + 1,
            reason,
            text: raw.to_string(),
        };
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [] => continue,
            ["package", p] => {
                package = p.to_string();
                current = None;
            }
            ["alias", name, other] => {
                aliases.push((
                    format!("{package}.{name}"),
                    other.to_string(),
                    package.clone(),
                ));
                current = None;
            }
            ["message", name, rest @ ..] => {
                let full = format!("{package}.{name}");
                let mut gvk = None;
                for r in rest {
                    let v = r
                        .strip_prefix("gvk=")
                        .ok_or_else(|| err("unknown option"))?;
                    let p: Vec<&str> = v.split('/').collect();
                    let [g, ver, k] = p.as_slice() else {
                        return Err(err("gvk is GROUP/VERSION/KIND"));
                    };
                    gvk = Some((g.to_string(), ver.to_string(), k.to_string()));
                }
                let m = Message {
                    name: full.clone(),
                    gvk,
                    fields: Vec::new(),
                };
                if schema.messages.insert(full.clone(), m).is_some() {
                    return Err(err("duplicate message"));
                }
                current = Some(full);
            }
            [num, name, ty, flags @ ..] => {
                let msg = current
                    .clone()
                    .ok_or_else(|| err("field outside a message"))?;
                let number: u32 = num.parse().map_err(|_| err("bad field number"))?;
                let (repeated, map, elem) = if let Some(e) = ty.strip_prefix("[]") {
                    (true, false, e)
                } else if let Some(e) = ty.strip_prefix("map[").and_then(|e| e.strip_suffix(']')) {
                    (false, true, e)
                } else {
                    (false, false, *ty)
                };
                let mut f = Field {
                    number,
                    name: name.to_string(),
                    ty: scalar(elem).unwrap_or(Ty::Message(String::new())),
                    repeated,
                    map,
                    keep: false,
                    inline: false,
                    merge_key: None,
                    strategy: None,
                };
                for fl in flags {
                    match *fl {
                        "!" => f.keep = true,
                        "inline" => f.inline = true,
                        _ => {
                            if let Some(k) = fl.strip_prefix("merge=") {
                                f.merge_key = Some(k.to_string());
                                f.strategy.get_or_insert_with(|| "merge".into());
                            } else if let Some(s) = fl.strip_prefix("strategy=") {
                                f.strategy = Some(s.to_string());
                            } else {
                                return Err(err("unknown flag"));
                            }
                        }
                    }
                }
                let m = schema
                    .messages
                    .get_mut(&msg)
                    .ok_or_else(|| err("no message"))?;
                if m.field(number).is_some() || m.fields.iter().any(|x| x.name == f.name) {
                    return Err(err("duplicate field"));
                }
                if f.ty == Ty::Message(String::new()) {
                    refs.push((
                        msg.clone(),
                        m.fields.len(),
                        elem.to_string(),
                        package.clone(),
                    ));
                }
                m.fields.push(f);
            }
            _ => return Err(err("unrecognised line")),
        }
    }
    let resolve = |schema: &Schema, name: &str, pkg: &str| -> Option<String> {
        if name.contains('.') {
            return schema.messages.contains_key(name).then(|| name.to_string());
        }
        [pkg, META]
            .iter()
            .map(|p| format!("{p}.{name}"))
            .find(|n| schema.messages.contains_key(n))
    };
    // Aliases exist (empty) while references resolve, then take their
    // target's resolved fields.
    for (alias, _, _) in &aliases {
        let m = Message {
            name: alias.clone(),
            gvk: None,
            fields: Vec::new(),
        };
        schema.messages.insert(alias.clone(), m);
    }
    for (msg, idx, name, pkg) in refs {
        let full = resolve(&schema, &name, &pkg).ok_or_else(|| SchemaError::UnknownReference {
            message: msg.clone(),
            name: name.clone(),
        })?;
        if let Some(f) = schema
            .messages
            .get_mut(&msg)
            .and_then(|m| m.fields.get_mut(idx))
        {
            f.ty = Ty::Message(full);
        }
    }
    for (alias, other, pkg) in aliases {
        let fields = resolve(&schema, &other, &pkg)
            .filter(|t| *t != alias)
            .map(|t| schema.messages[&t].fields.clone())
            .ok_or_else(|| SchemaError::UnknownAlias {
                alias: alias.clone(),
                other: other.clone(),
            })?;
        if let Some(m) = schema.messages.get_mut(&alias) {
            m.fields = fields;
        }
    }
    Ok(schema)
}

/// Full names of the messages reachable from `roots` (for per-group documents).
pub fn reachable(schema: &Schema, roots: &[&str]) -> Vec<String> {
    let mut out: HashMap<String, ()> = HashMap::new();
    let mut stack: Vec<String> = roots.iter().map(|s| s.to_string()).collect();
    while let Some(n) = stack.pop() {
        if out.insert(n.clone(), ()).is_some() {
            continue;
        }
        if let Some(m) = schema.message(&n) {
            for f in &m.fields {
                if let Ty::Message(t) = &f.ty {
                    stack.push(t.clone());
                }
            }
        }
    }
    let mut v: Vec<String> = out.into_keys().collect();
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compiled_schema_parses_and_resolves() {
        let s = schema().expect("schema");
        for (g, v, k) in [
            ("", "v1", "Pod"),
            ("", "v1", "Service"),
            ("", "v1", "Endpoints"),
            ("", "v1", "Node"),
            ("", "v1", "Namespace"),
            ("", "v1", "Event"),
            ("discovery.k8s.io", "v1", "EndpointSlice"),
            ("coordination.k8s.io", "v1", "Lease"),
            ("events.k8s.io", "v1", "Event"),
        ] {
            assert!(s.kind(g, v, k).is_some(), "{g}/{v}/{k}");
        }
        let ec = s
            .message("io.k8s.api.core.v1.EphemeralContainerCommon")
            .expect("alias");
        assert!(
            matches!(&ec.field(10).expect("probe").ty, Ty::Message(m) if m == "io.k8s.api.core.v1.Probe")
        );
        let pod = reachable(s, &["io.k8s.api.core.v1.Pod"]);
        assert!(pod.contains(&"io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference".to_string()));
    }

    #[test]
    fn errors_name_the_line() {
        for bad in [
            "message A\n  1 x Nope\n",
            "  1 x string\n",
            "message A\n 1 x string\n 1 y string\n",
            "message A\n 1 x string bogus\n",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
