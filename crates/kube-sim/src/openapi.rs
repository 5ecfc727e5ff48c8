//! OpenAPI schemas of the kinds kube-sim serves, built from the protobuf
//! message schema ([`super::protobuf::schema`]): `/openapi/v2` (JSON, or
//! protobuf when asked, which is all client-go accepts) and the component
//! schemas of the `/openapi/v3/{group-version}` documents.
//!
//! Every definition of a kind carries `x-kubernetes-group-version-kind` and
//! list fields carry the patch merge keys and strategies, which is what
//! kubectl needs for client-side validation (`apply -f` of a `kind: List`
//! is validated against `/openapi/v2`), `kubectl explain`, and strategic
//! merge patches. Descriptions are not served, nor `required` lists (so
//! validation is more lenient than kube-apiserver's). Pure: documents are
//! functions of the schema; this module never touches the store.

use super::protobuf::schema::{self, Field, Message, Schema, Ty};
use endpointd_base::httpd::Response;
use serde_json::{json, Map, Value};
use std::sync::OnceLock;

/// The media type client-go asks `/openapi/v2` for.
pub const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// The Content-Type kube-apiserver answers it with (`@` is not valid in a
/// media type, and client-go's mime parsing rejects it).
pub const V2_PROTOBUF_RESPONSE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// Reference prefix of OpenAPI v2 definitions.
pub const V2_REF: &str = "#/definitions/";

/// Reference prefix of OpenAPI v3 component schemas.
pub const V3_REF: &str = "#/components/schemas/";

const TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";
const MICRO_TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime";
const DURATION: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Duration";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const RAW: &str = "io.k8s.apimachinery.pkg.runtime.RawExtension";

/// The definitions of the special types, which are not messages in JSON.
fn builtins() -> [(&'static str, Value); 6] {
    [
        (TIME, json!({"type": "string", "format": "date-time"})),
        (MICRO_TIME, json!({"type": "string", "format": "date-time"})),
        (DURATION, json!({"type": "string"})),
        (
            INT_OR_STRING,
            json!({"type": "string", "format": "int-or-string"}),
        ),
        (QUANTITY, json!({"type": "string"})),
        (RAW, json!({"type": "object"})),
    ]
}

fn element(ty: &Ty, refs: &str) -> Value {
    let r = |n: &str| json!({ "$ref": format!("{refs}{n}") });
    match ty {
        Ty::String => json!({"type": "string"}),
        Ty::Bool => json!({"type": "boolean"}),
        Ty::Int32 => json!({"type": "integer", "format": "int32"}),
        Ty::Int64 => json!({"type": "integer", "format": "int64"}),
        Ty::Double => json!({"type": "number", "format": "double"}),
        Ty::Bytes => json!({"type": "string", "format": "byte"}),
        Ty::Time => r(TIME),
        Ty::MicroTime => r(MICRO_TIME),
        Ty::Duration => r(DURATION),
        Ty::IntOrString => r(INT_OR_STRING),
        Ty::Quantity => r(QUANTITY),
        Ty::Raw => r(RAW),
        Ty::Message(m) => r(m),
    }
}

fn property(f: &Field, refs: &str) -> Value {
    let e = element(&f.ty, refs);
    if f.map {
        return json!({"type": "object", "additionalProperties": e});
    }
    if !f.repeated {
        return e;
    }
    let mut p = json!({"type": "array", "items": e});
    if let Some(k) = &f.merge_key {
        p["x-kubernetes-patch-merge-key"] = json!(k);
    }
    if let Some(s) = &f.strategy {
        p["x-kubernetes-patch-strategy"] = json!(s);
    }
    p
}

fn properties(s: &Schema, m: &Message, refs: &str, out: &mut Map<String, Value>) {
    for f in &m.fields {
        match (&f.ty, f.inline) {
            (Ty::Message(inner), true) => {
                if let Some(im) = s.message(inner) {
                    properties(s, im, refs, out);
                }
            }
            _ => {
                out.insert(f.name.clone(), property(f, refs));
            }
        }
    }
}

/// The definition of one message.
pub fn definition(s: &Schema, m: &Message, refs: &str) -> Value {
    let mut props = Map::new();
    if m.gvk.is_some() {
        props.insert("apiVersion".into(), json!({"type": "string"}));
        props.insert("kind".into(), json!({"type": "string"}));
    }
    properties(s, m, refs, &mut props);
    let mut d = json!({"type": "object", "properties": props});
    if let Some((g, v, k)) = &m.gvk {
        d["description"] = json!(format!("{k} ({}), as kube-sim serves it.", gv(g, v)));
        d["x-kubernetes-group-version-kind"] = json!([{"group": g, "kind": k, "version": v}]);
    }
    d
}

fn gv(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// Definitions of the kinds matching `keep` (by group and version) and of
/// everything they reference, with references under `refs`.
pub fn definitions(refs: &str, keep: impl Fn(&str, &str) -> bool) -> Map<String, Value> {
    let mut out = Map::new();
    let Ok(s) = schema::schema() else {
        return out;
    };
    let roots: Vec<&str> = s
        .messages
        .values()
        .filter(|m| m.gvk.as_ref().is_some_and(|(g, v, _)| keep(g, v)))
        .map(|m| m.name.as_str())
        .collect();
    for name in schema::reachable(s, &roots) {
        if let Some(m) = s.message(&name) {
            out.insert(name.clone(), definition(s, m, refs));
        }
    }
    for (n, d) in builtins() {
        out.insert(n.to_string(), d);
    }
    out
}

/// The `/openapi/v2` document (JSON form).
pub fn v2_document() -> Value {
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": super::discovery::GIT_VERSION},
        "paths": {},
        "definitions": definitions(V2_REF, |_, _| true),
    })
}

/// Component schemas for the OpenAPI v3 document of one group version.
pub fn v3_schemas(group: &str, version: &str) -> Map<String, Value> {
    definitions(V3_REF, |g, v| g == group && v == version)
}

/// Answer `GET /openapi/v2`: protobuf when the Accept header asks for it
/// (client-go asks for nothing else), JSON otherwise.
pub fn serve_v2(accept: Option<&str>) -> Response {
    static JSON: OnceLock<Vec<u8>> = OnceLock::new();
    static PROTO: OnceLock<Vec<u8>> = OnceLock::new();
    let json = JSON.get_or_init(|| serde_json::to_vec(&v2_document()).unwrap_or_default());
    if accept.is_some_and(|a| a.contains("protobuf")) {
        let body = PROTO.get_or_init(|| super::openapi_proto::document(&v2_document()));
        return Response {
            status: 200,
            headers: vec![
                ("Content-Type".into(), V2_PROTOBUF_RESPONSE.into()),
                ("Vary".into(), "Accept".into()),
            ],
            body: endpointd_base::httpd::Body::Full(body.clone()),
        };
    }
    let mut r = Response::json(200, json.clone());
    r.headers.push(("Vary".into(), "Accept".into()));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_describes_every_kind_with_its_gvk_and_merge_keys() {
        let doc = v2_document();
        let defs = &doc["definitions"];
        let pod = &defs["io.k8s.api.core.v1.Pod"];
        assert_eq!(
            pod["x-kubernetes-group-version-kind"],
            json!([{"group": "", "kind": "Pod", "version": "v1"}])
        );
        assert_eq!(
            pod["properties"]["spec"]["$ref"],
            "#/definitions/io.k8s.api.core.v1.PodSpec"
        );
        let containers = &defs["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(
            containers["items"]["$ref"],
            "#/definitions/io.k8s.api.core.v1.Container"
        );
        // Inlined embedded structs: a probe's handler fields are its own.
        assert!(defs["io.k8s.api.core.v1.Probe"]["properties"]["httpGet"].is_object());
        assert!(defs["io.k8s.api.core.v1.Volume"]["properties"]["configMap"].is_object());
        for k in [
            "io.k8s.api.discovery.v1.EndpointSlice",
            "io.k8s.api.coordination.v1.Lease",
            "io.k8s.api.events.v1.Event",
            "io.k8s.api.core.v1.Event",
            "io.k8s.api.core.v1.Endpoints",
            "io.k8s.api.core.v1.Node",
            "io.k8s.api.core.v1.Namespace",
            "io.k8s.api.core.v1.Service",
        ] {
            assert!(defs[k]["x-kubernetes-group-version-kind"].is_array(), "{k}");
        }
        // Every reference resolves.
        let text = doc.to_string();
        for r in text.split("\"$ref\":\"#/definitions/").skip(1) {
            let name = r.split('"').next().unwrap_or("");
            assert!(defs.get(name).is_some(), "dangling {name}");
        }
    }

    #[test]
    fn v3_schemas_hold_one_group_version() {
        let s = v3_schemas("discovery.k8s.io", "v1");
        assert!(s.contains_key("io.k8s.api.discovery.v1.EndpointSlice"));
        assert!(s.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        assert!(!s.contains_key("io.k8s.api.core.v1.Pod"));
    }
}
