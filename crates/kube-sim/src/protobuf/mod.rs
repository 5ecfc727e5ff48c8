//! Request bodies by Content-Type: JSON, YAML and Kubernetes protobuf
//! (`application/vnd.kubernetes.protobuf`) all become the JSON object kube-sim
//! stores; anything else is 415 UnsupportedMediaType.
//!
//! A protobuf body is the `k8s\0` magic, a `runtime.Unknown` envelope
//! (typeMeta{apiVersion=1, kind=2}=1, raw=2, contentEncoding=3,
//! contentType=4) and the object's message in `raw`, decoded by a small
//! generic proto2 reader ([`wire`]) driven by a compact schema of the
//! published `generated.proto` field numbers ([`schema`], `schema.txt`).
//! That was chosen over a crate with generated Kubernetes types: none is in
//! the dependency tree, generated code for every API group would dwarf the
//! simulator, and the same schema also describes the kinds for OpenAPI.
//! Fields the schema does not know are skipped (as Kubernetes' generated
//! decoders skip unknown fields); bodies that are not valid protobuf, or do
//! not match the schema's wire types, are 400 with the reason.
//!
//! DELETE bodies (`DeleteOptions`, which `kubectl drain` sends as protobuf)
//! go through [`decode_delete_options`].
//!
//! Owns body decoding only; never validates objects (that is
//! [`super::validate`]) and never encodes responses: kube-sim answers JSON.

pub mod decode;
pub mod error;
pub mod schema;
pub mod wire;

use super::apierrors::bad_request;
use super::resources::ResourceInfo;
use super::status::ApiError;
use serde_json::{Map, Value};
use wire::{Reader, WireValue};

pub use error::{ProtobufError, SchemaError};

/// The protobuf media type.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The prefix of every Kubernetes protobuf object.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// Decode a create/update body sent with `content_type` into JSON (before
/// the shape checks every body gets). No Content-Type means JSON, as
/// kube-apiserver assumes.
pub fn decode_body(
    info: &ResourceInfo,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Value, ApiError> {
    let undecodable = |e: &dyn std::fmt::Display| {
        bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {e}",
            info.kind, info.version, info.kind
        ))
    };
    let media = super::media_type(content_type.unwrap_or(""));
    match media.as_str() {
        "" | "application/json" => serde_json::from_slice(body).map_err(|e| undecodable(&e)),
        "application/yaml" => {
            let text = std::str::from_utf8(body).map_err(|e| undecodable(&e))?;
            serde_saphyr::from_str::<Value>(text).map_err(|e| undecodable(&e))
        }
        PROTOBUF => decode_object(info.group, info.version, info.kind, body)
            .map_err(|e| undecodable(&e)),
        _ => Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, {PROTOBUF} (got {media:?})"
            ),
        )),
    }
}

/// The parts of a `runtime.Unknown` envelope.
#[derive(Debug, Default, PartialEq)]
pub struct Unknown<'a> {
    /// `typeMeta.apiVersion`.
    pub api_version: String,
    /// `typeMeta.kind`.
    pub kind: String,
    /// The encoded object.
    pub raw: &'a [u8],
    /// `contentEncoding` (empty: none).
    pub content_encoding: String,
}

fn text(b: &[u8]) -> Result<String, ProtobufError> {
    String::from_utf8(b.to_vec()).map_err(|_| ProtobufError::EnvelopeUtf8)
}

/// Split a protobuf body into its envelope parts.
pub fn envelope(body: &[u8]) -> Result<Unknown<'_>, ProtobufError> {
    let rest = body
        .strip_prefix(MAGIC.as_slice())
        .ok_or(ProtobufError::NoMagic)?;
    let mut u = Unknown::default();
    let mut r = Reader::new(rest);
    let env = |e: ProtobufError| ProtobufError::Envelope(Box::new(e));
    while let Some((n, v)) = r.next_field().map_err(env)? {
        let WireValue::Bytes(b) = v else {
            return Err(ProtobufError::EnvelopeField {
                field: n,
                got: v.kind(),
            });
        };
        match n {
            1 => {
                let mut t = Reader::new(b);
                while let Some((tn, tv)) = t.next_field().map_err(env)? {
                    if let (1 | 2, WireValue::Bytes(s)) = (tn, tv) {
                        let s = text(s)?;
                        if tn == 1 {
                            u.api_version = s;
                        } else {
                            u.kind = s;
                        }
                    }
                }
            }
            2 => u.raw = b,
            3 => u.content_encoding = text(b)?,
            _ => {}
        }
    }
    Ok(u)
}

/// Decode a protobuf body for the kind `group`/`version`/`kind` into the
/// JSON object a JSON request for it would carry.
pub fn decode_object(
    group: &str,
    version: &str,
    kind: &str,
    body: &[u8],
) -> Result<Value, ProtobufError> {
    let u = envelope(body)?;
    if !u.content_encoding.is_empty() {
        return Err(ProtobufError::ContentEncoding(u.content_encoding));
    }
    // Decode by the envelope's type, as kube-apiserver does; a type other
    // than the endpoint's is then refused by the usual kind check.
    let (group, version, kind) = if u.kind.is_empty() {
        (group, version, kind)
    } else {
        match u.api_version.split_once('/') {
            Some((g, v)) => (g, v, u.kind.as_str()),
            None => ("", u.api_version.as_str(), u.kind.as_str()),
        }
    };
    let schema = schema::schema()?;
    let msg = schema
        .kind(group, version, kind)
        .ok_or_else(|| ProtobufError::NoKindSchema {
            kind: kind.to_string(),
            version: version.to_string(),
        })?;
    Ok(with_type(&u, decode::message(schema, msg, u.raw, 0)?))
}

/// Decode a DELETE body: `DeleteOptions` in protobuf when `content_type`
/// says so, else JSON (kubectl drain deletes pods with a protobuf body).
pub fn decode_delete_options(
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Value, ProtobufError> {
    let protobuf = content_type.is_some_and(|c| super::media_type(c) == PROTOBUF);
    if !protobuf {
        return serde_json::from_slice(body).map_err(ProtobufError::Json);
    }
    let u = envelope(body)?;
    if !u.kind.is_empty() && u.kind != "DeleteOptions" {
        return Err(ProtobufError::NotDeleteOptions(u.kind));
    }
    let schema = schema::schema()?;
    let msg = schema
        .message(&format!("{}.DeleteOptions", schema::META))
        .ok_or(ProtobufError::NoDeleteOptionsSchema)?;
    Ok(with_type(&u, decode::message(schema, msg, u.raw, 0)?))
}

/// The envelope's apiVersion and kind, then the object's fields.
fn with_type(u: &Unknown<'_>, obj: Map<String, Value>) -> Value {
    let mut out = Map::new();
    if !u.api_version.is_empty() {
        out.insert("apiVersion".into(), Value::String(u.api_version.clone()));
    }
    if !u.kind.is_empty() {
        out.insert("kind".into(), Value::String(u.kind.clone()));
    }
    out.extend(obj);
    Value::Object(out)
}

#[cfg(test)]
mod tests;
