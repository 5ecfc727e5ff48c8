//! kube-sim `--authorization-mode RBAC` over real HTTP: `systemd/rbac.yaml`
//! loaded with `--load`, a ServiceAccount user from a static token file,
//! allowed and forbidden requests with kube-apiserver's 403 Status, the
//! admin token and discovery, and the access log.

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
        token_users: parse_token_file(&format!("sa-token,{SA},uid-1\nother,alice,uid-2\n"))
            .expect("token file"),
        load: Some(manifest()),
        rbac,
        ..SimOptions::default()
    })
    .expect("kube-sim")
}

fn call(s: &SimServer, method: &str, path: &str, token: &str, body: Option<Value>) -> (u16, Value) {
    let a: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let url = format!("{}{path}", s.url());
    let auth = format!("Bearer {token}");
    let r = match (method, body) {
        ("GET", _) => a.get(&url).header("Authorization", &auth).call(),
        ("DELETE", _) => a.delete(&url).header("Authorization", &auth).call(),
        (m, b) => {
            let b = b.unwrap_or(json!({})).to_string();
            let req = match m {
                "POST" => a.post(&url),
                _ => a.put(&url),
            };
            req.header("Authorization", &auth)
                .header("Content-Type", "application/json")
                .send(b.as_bytes())
        }
    };
    let mut r = r.expect("request");
    let st = r.status().as_u16();
    let text = r.body_mut().read_to_string().expect("body");
    (
        st,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[test]
fn rbac_allows_what_the_manifest_grants_and_forbids_the_rest() {
    let s = sim(true);
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "x", "namespace": "kube-system"}, "spec": {}});
    let cases: Vec<(&str, &str, Option<Value>, u16)> = vec![
        ("GET", "/api/v1/pods", None, 200),
        ("GET", "/api/v1/namespaces/default/services", None, 200),
        ("GET", "/api/v1/nodes", None, 200),
        ("GET", "/apis/discovery.k8s.io/v1/endpointslices", None, 200),
        ("GET", "/api", None, 200),
        (
            "POST",
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
            Some(lease.clone()),
            201,
        ),
        (
            "POST",
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            Some(lease),
            403,
        ),
        ("POST", "/api/v1/namespaces/default/pods", None, 403),
        ("DELETE", "/api/v1/nodes/n1", None, 403),
        ("GET", "/sim/requests", None, 403),
    ];
    for (m, path, body, want) in cases {
        let (st, v) = call(&s, m, path, "sa-token", body);
        assert_eq!(st, want, "{m} {path}: {v}");
        if want == 403 {
            assert_eq!(v["reason"], "Forbidden", "{v}");
        }
    }
    let (_, v) = call(
        &s,
        "POST",
        "/api/v1/namespaces/default/pods",
        "sa-token",
        None,
    );
    assert_eq!(
        v["message"],
        format!("pods is forbidden: User \"{SA}\" cannot create resource \"pods\" in API group \"\" in the namespace \"default\"")
    );
    let (_, v) = call(&s, "GET", "/api/v1/pods", "other", None);
    assert_eq!(
        v["message"],
        "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" at the cluster scope"
    );
    // The admin token is system:masters.
    assert_eq!(
        call(&s, "DELETE", "/api/v1/nodes/n1", "admin-token", None).0,
        404
    );
    let (st, v) = call(&s, "GET", "/sim/requests", "admin-token", None);
    assert_eq!(st, 200);
    assert!(
        v["access"]
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x["user"] == SA && x["denied"] == 1)),
        "{v}"
    );
    let log = s.access_log();
    let find = |verb: &str, resource: &str, ns: &str| {
        log.iter()
            .find(|a| a.user == SA && a.verb == verb && a.resource == resource && a.namespace == ns)
            .map(|a| (a.allowed, a.denied))
    };
    assert_eq!(find("list", "pods", ""), Some((1, 0)));
    assert_eq!(find("create", "leases", "kube-system"), Some((1, 0)));
    assert_eq!(find("create", "leases", "default"), Some((0, 1)));
    assert_eq!(find("create", "pods", "default"), Some((0, 2)));
}

#[test]
fn rbac_off_by_default_allows_every_authenticated_user() {
    let s = sim(false);
    assert_eq!(call(&s, "DELETE", "/api/v1/nodes/n1", "other", None).0, 404);
    assert_eq!(call(&s, "GET", "/api/v1/pods", "nope", None).0, 401);
    assert!(s.access_log().is_empty());
}
