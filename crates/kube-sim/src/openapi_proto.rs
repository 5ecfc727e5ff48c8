//! Encodes an OpenAPI v2 document (JSON form) as the protobuf message
//! client-go reads from `/openapi/v2` (gnostic's `openapi.v2.Document`,
//! field numbers from google/gnostic openapiv2/OpenAPIv2.proto).
//!
//! Owns only that encoding, for the subset of Schema Object keywords
//! [`super::openapi`] produces ($ref, type, format, description, items,
//! properties, additionalProperties, allOf, required and `x-` vendor
//! extensions, whose values are carried as YAML text, of which JSON is a
//! subset). Never decodes and never invents content.

use super::protobuf::wire::put_bytes;
use serde_json::Value;

fn put_str(out: &mut Vec<u8>, field: u32, s: &str) {
    if !s.is_empty() {
        put_bytes(out, field, s.as_bytes());
    }
}

/// `NamedAny { name = 1; value = 2 (Any { yaml = 2 }) }`.
fn named_any(name: &str, v: &Value) -> Vec<u8> {
    let mut any = Vec::new();
    put_str(&mut any, 2, &v.to_string());
    let mut out = Vec::new();
    put_str(&mut out, 1, name);
    put_bytes(&mut out, 2, &any);
    out
}

/// `NamedSchema { name = 1; value = 2 }`.
fn named_schema(name: &str, v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    put_str(&mut out, 1, name);
    put_bytes(&mut out, 2, &schema(v));
    out
}

/// One Schema Object.
pub fn schema(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    let Some(o) = v.as_object() else {
        return out;
    };
    let s = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("");
    put_str(&mut out, 1, s("$ref"));
    put_str(&mut out, 2, s("format"));
    put_str(&mut out, 3, s("title"));
    put_str(&mut out, 4, s("description"));
    for r in o
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        put_str(&mut out, 19, r.as_str().unwrap_or(""));
    }
    match o.get("additionalProperties") {
        Some(Value::Bool(b)) => put_bytes(&mut out, 21, &[0x10, u8::from(*b)]),
        Some(sub @ Value::Object(_)) => {
            let mut item = Vec::new();
            put_bytes(&mut item, 1, &schema(sub));
            put_bytes(&mut out, 21, &item);
        }
        _ => {}
    }
    let types: Vec<&str> = match o.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !types.is_empty() {
        let mut item = Vec::new();
        for t in types {
            put_str(&mut item, 1, t);
        }
        put_bytes(&mut out, 22, &item);
    }
    if let Some(items) = o.get("items").filter(|i| i.is_object()) {
        let mut item = Vec::new();
        put_bytes(&mut item, 1, &schema(items));
        put_bytes(&mut out, 23, &item);
    }
    for a in o
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        put_bytes(&mut out, 24, &schema(a));
    }
    if let Some(props) = o.get("properties").and_then(Value::as_object) {
        let mut p = Vec::new();
        for (name, sub) in props {
            put_bytes(&mut p, 1, &named_schema(name, sub));
        }
        put_bytes(&mut out, 25, &p);
    }
    for (k, ext) in o.iter().filter(|(k, _)| k.starts_with("x-")) {
        put_bytes(&mut out, 31, &named_any(k, ext));
    }
    out
}

/// The whole Document: swagger = 1, info = 2 {title = 1, version = 2},
/// paths = 8, definitions = 9 {repeated NamedSchema = 1}.
pub fn document(doc: &Value) -> Vec<u8> {
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let mut out = Vec::new();
    put_str(&mut out, 1, &s(&doc["swagger"]));
    let mut info = Vec::new();
    put_str(&mut info, 1, &s(&doc["info"]["title"]));
    put_str(&mut info, 2, &s(&doc["info"]["version"]));
    put_bytes(&mut out, 2, &info);
    put_bytes(&mut out, 8, &[]);
    let mut defs = Vec::new();
    for (name, d) in doc["definitions"].as_object().into_iter().flatten() {
        put_bytes(&mut defs, 1, &named_schema(name, d));
    }
    put_bytes(&mut out, 9, &defs);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protobuf::wire::{Reader, WireValue};
    use serde_json::json;

    fn fields(b: &[u8]) -> Vec<(u32, WireValue<'_>)> {
        let mut r = Reader::new(b);
        let mut v = Vec::new();
        while let Some(f) = r.next_field().expect("valid protobuf") {
            v.push(f);
        }
        v
    }

    fn bytes<'a>(v: &WireValue<'a>) -> &'a [u8] {
        match v {
            WireValue::Bytes(b) => b,
            _ => panic!("not bytes"),
        }
    }

    #[test]
    fn encodes_definitions_with_refs_and_extensions() {
        let doc = json!({"swagger": "2.0", "info": {"title": "T", "version": "v"},
            "definitions": {"A": {"type": "object", "properties": {
                "b": {"$ref": "#/definitions/B"},
                "c": {"type": "array", "items": {"type": "string"}, "x-kubernetes-patch-strategy": "merge"}},
                "x-kubernetes-group-version-kind": [{"group": "", "kind": "A", "version": "v1"}]}}});
        let b = document(&doc);
        let top = fields(&b);
        assert_eq!(top[0], (1, WireValue::Bytes(b"2.0")));
        let defs = fields(bytes(&top[3].1));
        let named = fields(bytes(&defs[0].1));
        assert_eq!(named[0], (1, WireValue::Bytes(b"A")));
        let a = fields(bytes(&named[1].1));
        let nums: Vec<u32> = a.iter().map(|f| f.0).collect();
        assert_eq!(nums, [22, 25, 31]);
        let ext = fields(bytes(&a[2].1));
        assert_eq!(
            ext[0],
            (1, WireValue::Bytes(b"x-kubernetes-group-version-kind"))
        );
        let any = fields(bytes(&ext[1].1));
        let yaml = std::str::from_utf8(bytes(&any[0].1)).expect("utf8");
        assert_eq!(
            serde_json::from_str::<Value>(yaml).expect("json"),
            json!([{"group": "", "kind": "A", "version": "v1"}])
        );
    }
}
