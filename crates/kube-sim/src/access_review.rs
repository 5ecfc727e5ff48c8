//! `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`: may the
//! requester do this? As kube-apiserver answers it: the spec's
//! `resourceAttributes` (namespace, verb, group, resource, subresource,
//! name; `version` is ignored, as RBAC ignores it) or
//! `nonResourceAttributes` (path, verb), evaluated against the requester's
//! own RBAC rules, answered `201 Created` with the review and its
//! `status` (`allowed`, `denied` — RBAC never denies, it only has no
//! opinion — and `reason`, which names the binding that allowed it).
//!
//! Creating the review is itself authorized first (the bootstrap
//! `system:basic-user` ClusterRole grants it to every authenticated user);
//! nothing is stored. Not served: SubjectAccessReview for other users,
//! SelfSubjectRulesReview, `fieldSelector`/`labelSelector` attributes, and
//! the `authorization.k8s.io` group in discovery.

use super::authz::Authorizer;
use super::rbac::{Attributes, UserInfo};
use super::resources::ResourceInfo;
use super::status::ApiError;
use super::validate::{invalid, Cause};
use endpointd_base::httpd::{Request, Response};
use serde_json::{json, Map, Value};

/// The path of the review collection.
pub const PATH: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

/// The kind, for error messages (not in the served resource table).
static SSAR: ResourceInfo = ResourceInfo {
    group: "authorization.k8s.io",
    version: "v1",
    resource: "selfsubjectaccessreviews",
    singular: "selfsubjectaccessreview",
    kind: "SelfSubjectAccessReview",
    namespaced: false,
    short_names: &[],
    subresources: &[],
};

fn text(v: &Value, f: &str) -> String {
    v.get(f).and_then(Value::as_str).unwrap_or("").to_string()
}

/// The attributes a review asks about, or kube-apiserver's 400/422.
pub fn attributes(body: &Value) -> Result<Attributes, ApiError> {
    let bad = |m: &str| ApiError::new(400, "BadRequest", m.to_string());
    if !body.is_object() {
        return Err(bad("the body is not a JSON object"));
    }
    let api_version = body.get("apiVersion").and_then(Value::as_str);
    let kind = body.get("kind").and_then(Value::as_str);
    if api_version.is_some_and(|a| a != "authorization.k8s.io/v1")
        || kind.is_some_and(|k| k != SSAR.kind)
    {
        return Err(bad(&format!(
            "the API version in the data ({}) does not match the expected API version (authorization.k8s.io/v1)",
            api_version.unwrap_or("")
        )));
    }
    let spec = body.get("spec").cloned().unwrap_or(Value::Null);
    let ra = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let nra = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    match (ra, nra) {
        (Some(r), None) => Ok(Attributes::Resource {
            verb: text(r, "verb"),
            group: text(r, "group"),
            resource: text(r, "resource"),
            subresource: text(r, "subresource"),
            namespace: text(r, "namespace"),
            name: text(r, "name"),
        }),
        (None, Some(n)) => Ok(Attributes::NonResource {
            verb: text(n, "verb"),
            path: text(n, "path"),
        }),
        (None, None) => Err(invalid(
            &SSAR,
            "",
            vec![Cause::invalid(
                "spec.resourceAttributes",
                &Value::Null,
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )],
        )),
        (Some(_), Some(n)) => Err(invalid(
            &SSAR,
            "",
            vec![Cause::invalid(
                "spec.nonResourceAttributes",
                n,
                "cannot be specified in combination with resourceAttributes",
            )],
        )),
    }
}

/// Serve one review (already authorized to be created).
pub fn serve(authz: &Authorizer, user: &UserInfo, req: &Request) -> Response {
    if req.method != "POST" {
        return ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
        .to_response();
    }
    let body: Value = match serde_json::from_slice(&req.body) {
        Ok(v) => v,
        Err(e) => {
            return ApiError::new(
                400,
                "BadRequest",
                format!("the body of the request was in an unknown format: {e}"),
            )
            .to_response()
        }
    };
    let a = match attributes(&body) {
        Ok(a) => a,
        Err(e) => return e.to_response(),
    };
    let (allowed, reason) = authz.review(user, &a);
    let mut status = Map::new();
    status.insert("allowed".into(), json!(allowed));
    if !reason.is_empty() {
        status.insert("reason".into(), json!(reason));
    }
    let out = json!({
        "kind": SSAR.kind,
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": null},
        "spec": body.get("spec").cloned().unwrap_or_else(|| json!({})),
        "status": status,
    });
    Response::json(201, out.to_string().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_table() {
        let ok = attributes(&json!({"apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "list", "group": "discovery.k8s.io",
                     "version": "v1", "resource": "endpointslices", "namespace": "x"}}}));
        assert_eq!(
            ok.ok(),
            Some(Attributes::Resource {
                verb: "list".into(),
                group: "discovery.k8s.io".into(),
                resource: "endpointslices".into(),
                subresource: String::new(),
                namespace: "x".into(),
                name: String::new(),
            })
        );
        let nr = attributes(
            &json!({"spec": {"nonResourceAttributes": {"verb": "get", "path": "/version"}}}),
        );
        assert_eq!(
            nr.ok(),
            Some(Attributes::NonResource {
                verb: "get".into(),
                path: "/version".into()
            })
        );
        for (body, code, needle) in [
            (json!({"spec": {}}), 422, "exactly one of"),
            (
                json!({"spec": {"resourceAttributes": {}, "nonResourceAttributes": {}}}),
                422,
                "cannot be specified in combination",
            ),
            (
                json!({"apiVersion": "v1", "spec": {}}),
                400,
                "does not match",
            ),
            (json!([]), 400, "not a JSON object"),
        ] {
            let e = attributes(&body).expect_err("refused");
            let s = e.to_status();
            assert_eq!(s["code"], code, "{body}: {s}");
            assert!(s["message"].as_str().unwrap_or("").contains(needle), "{s}");
        }
    }
}
