//! SelfSubjectAccessReview over HTTP, as kube-apiserver answers it: under
//! `--authorization-mode RBAC` the requester's own rules decide (allowed
//! with the binding as reason, or not allowed with no reason and not
//! denied), every authenticated user may create one (system:basic-user),
//! anonymous requests get 401; without RBAC every review is allowed.
//! Also the `Date` header every answer carries.

use kube_sim::authn::parse_token_file;
use kube_sim::server::{SimOptions, SimServer};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

const SA: &str = "system:serviceaccount:kube-system:endpointd";

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../systemd/rbac.yaml")
}

fn sim(rbac: bool) -> SimServer {
    SimServer::start(SimOptions {
        token: Some("admin-token".into()),
        token_users: parse_token_file(&format!("sa-token,{SA},uid-1\nalice-token,alice,uid-2\n"))
            .expect("token file"),
        load: Some(manifest()),
        rbac,
        ..SimOptions::default()
    })
    .expect("kube-sim")
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}

/// POST a review; (status, body, Date header).
fn review(s: &SimServer, token: Option<&str>, spec: Value) -> (u16, Value, Option<String>) {
    let url = format!(
        "{}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        s.url()
    );
    let body = json!({"apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview", "spec": spec});
    let mut req = agent()
        .post(&url)
        .header("Content-Type", "application/json");
    if let Some(t) = token {
        req = req.header("Authorization", &format!("Bearer {t}"));
    }
    let mut r = req.send(body.to_string().as_bytes()).expect("request");
    let date = r
        .headers()
        .get("date")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let st = r.status().as_u16();
    let text = r.body_mut().read_to_string().expect("body");
    (
        st,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
        date,
    )
}

fn res(verb: &str, group: &str, resource: &str, ns: &str) -> Value {
    json!({"resourceAttributes": {"verb": verb, "group": group, "version": "v1",
        "resource": resource, "namespace": ns}})
}

#[test]
fn under_rbac_the_requesters_own_rules_decide() {
    let s = sim(true);
    // Allowed, with the binding as kube-apiserver words it.
    let (code, body, date) = review(
        &s,
        Some("sa-token"),
        res("list", "discovery.k8s.io", "endpointslices", ""),
    );
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["kind"], "SelfSubjectAccessReview");
    assert_eq!(
        body["spec"]["resourceAttributes"]["resource"],
        "endpointslices"
    );
    assert_eq!(body["status"]["allowed"], true, "{body}");
    assert_eq!(
        body["status"]["reason"],
        "RBAC: allowed by ClusterRoleBinding \"system:endpointd\" of ClusterRole \"system:endpointd\" to ServiceAccount \"endpointd/kube-system\""
    );
    assert!(body["status"].get("denied").is_none(), "{body}");
    let date = date.expect("a Date header");
    assert!(date.ends_with(" GMT") && date.len() == 29, "{date}");

    // A Role in kube-system: allowed there, not at the cluster scope.
    let (_, b, _) = review(
        &s,
        Some("sa-token"),
        res("update", "coordination.k8s.io", "leases", "kube-system"),
    );
    assert_eq!(b["status"]["allowed"], true, "{b}");
    assert!(
        b["status"]["reason"].as_str().unwrap_or("").starts_with(
            "RBAC: allowed by RoleBinding \"system:endpointd:leader-election/kube-system\""
        ),
        "{b}"
    );
    let (_, b, _) = review(
        &s,
        Some("sa-token"),
        res("update", "coordination.k8s.io", "leases", "default"),
    );
    assert_eq!(b["status"]["allowed"], false, "{b}");

    // Not granted: not allowed, not denied (RBAC has no opinion), no reason.
    let (code, b, _) = review(&s, Some("sa-token"), res("delete", "", "pods", ""));
    assert_eq!(code, 201);
    assert_eq!(b["status"], json!({"allowed": false}), "{b}");

    // A user with no binding at all may still ask (system:basic-user).
    let (code, b, _) = review(&s, Some("alice-token"), res("list", "", "pods", ""));
    assert_eq!((code, &b["status"]["allowed"]), (201, &json!(false)), "{b}");

    // Non-resource attributes: discovery for every authenticated user.
    let (_, b, _) = review(
        &s,
        Some("alice-token"),
        json!({"nonResourceAttributes": {"verb": "get", "path": "/version"}}),
    );
    assert_eq!(b["status"]["allowed"], true, "{b}");

    // Anonymous: 401 before any review.
    let (code, _, _) = review(&s, None, res("list", "", "pods", ""));
    assert_eq!(code, 401);

    // Malformed spec: 422.
    let (code, b, _) = review(&s, Some("sa-token"), json!({}));
    assert_eq!(code, 422, "{b}");
    assert!(
        b["message"]
            .as_str()
            .unwrap_or("")
            .contains("exactly one of nonResourceAttributes or resourceAttributes"),
        "{b}"
    );
}

#[test]
fn without_rbac_every_review_is_allowed() {
    let s = sim(false);
    for t in ["sa-token", "alice-token", "admin-token"] {
        let (code, b, _) = review(&s, Some(t), res("delete", "", "nodes", ""));
        assert_eq!(code, 201, "{b}");
        assert_eq!(b["status"], json!({"allowed": true}), "{t}: {b}");
    }
}
