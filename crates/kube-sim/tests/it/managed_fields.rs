//! `metadata.managedFields` over HTTP: the manager from `?fieldManager=`
//! or the User-Agent's first part, one `Update` entry per manager with its
//! apiVersion and time, replaced on each write by that manager; a no-op
//! write records nothing; `fieldManager` validated (422).

use endpointd_base::clock::{FakeClock, SharedClock};
use kube_sim::server::{SimOptions, SimServer};
use serde_json::{json, Value};
use std::time::Duration;

fn call(s: &SimServer, method: &str, path: &str, agent_name: &str, body: &Value) -> (u16, Value) {
    let a: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let url = format!("{}{path}", s.url());
    let b = body.to_string();
    let r = match method {
        "POST" => a.post(&url),
        "PATCH" => a.patch(&url),
        _ => a.put(&url),
    };
    let ctype = match method {
        "PATCH" => "application/merge-patch+json",
        _ => "application/json",
    };
    let mut r = r
        .header("User-Agent", agent_name)
        .header("Content-Type", ctype)
        .send(b.as_bytes())
        .expect("request");
    let st = r.status().as_u16();
    let text = r.body_mut().read_to_string().expect("body");
    (st, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn entries(v: &Value) -> Vec<(String, String, String, String)> {
    v.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            let s = |f: &str| e[f].as_str().unwrap_or("").to_string();
            (s("manager"), s("operation"), s("apiVersion"), s("time"))
        })
        .collect()
}

const KCM: &str = "kube-controller-manager/v1.33.0 (linux/amd64) kubernetes/abc/system:serviceaccount:kube-system:endpointslice-controller";

#[test]
fn two_managers_each_one_entry_with_its_time() {
    let clock = FakeClock::new();
    let shared: SharedClock = clock.clone();
    let s = SimServer::start(SimOptions {
        clock: shared,
        ..SimOptions::default()
    })
    .expect("kube-sim");
    let base = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
    let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-abc", "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": []});
    // KCM creates it (manager from its User-Agent).
    let (code, created) = call(&s, "POST", base, KCM, &slice);
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        entries(&created),
        [(
            "kube-controller-manager".to_string(),
            "Update".to_string(),
            "discovery.k8s.io/v1".to_string(),
            "2026-01-01T00:00:00Z".to_string()
        )]
    );
    let mf = &created["metadata"]["managedFields"][0];
    assert_eq!(mf["fieldsType"], "FieldsV1");
    assert!(mf["fieldsV1"]["f:endpoints"].is_object(), "{mf}");

    // endpointd updates it 7 s later with ?fieldManager= (its User-Agent
    // says something else): a second entry.
    clock.step(Duration::from_secs(7));
    let mut upd = created.clone();
    upd["endpoints"] = json!([{"addresses": ["10.0.0.2"]}]);
    upd["metadata"]
        .as_object_mut()
        .map(|m| m.remove("managedFields"));
    let (code, updated) = call(
        &s,
        "PUT",
        &format!("{base}/web-abc?fieldManager=endpointd"),
        "some-client/1.0",
        &upd,
    );
    assert_eq!(code, 200, "{updated}");
    let e = entries(&updated);
    assert_eq!(e.len(), 2, "{updated}");
    assert_eq!(e[0].0, "kube-controller-manager");
    assert_eq!(e[0].3, "2026-01-01T00:00:00Z");
    assert_eq!(e[1].0, "endpointd");
    assert_eq!(e[1].3, "2026-01-01T00:00:07Z");

    // KCM writes again (a patch): its one entry moves to the new time.
    clock.step(Duration::from_secs(5));
    let (code, patched) = call(
        &s,
        "PATCH",
        &format!("{base}/web-abc"),
        KCM,
        &json!({"metadata": {"labels": {"extra": "x"}}}),
    );
    assert_eq!(code, 200, "{patched}");
    let e = entries(&patched);
    assert_eq!(
        e.iter()
            .map(|x| (x.0.as_str(), x.3.as_str()))
            .collect::<Vec<_>>(),
        [
            ("endpointd", "2026-01-01T00:00:07Z"),
            ("kube-controller-manager", "2026-01-01T00:00:12Z")
        ]
    );

    // A write that changes nothing leaves them (and the resourceVersion).
    clock.step(Duration::from_secs(5));
    let (code, same) = call(
        &s,
        "PUT",
        &format!("{base}/web-abc"),
        "kubectl/v1.33.0",
        &patched,
    );
    assert_eq!(code, 200);
    assert_eq!(entries(&same), e);
    assert_eq!(
        same["metadata"]["resourceVersion"],
        patched["metadata"]["resourceVersion"]
    );

    // fieldManager validated as kube-apiserver does.
    let long = "m".repeat(129);
    let (code, st) = call(
        &s,
        "PUT",
        &format!("{base}/web-abc?fieldManager={long}"),
        "x",
        &patched,
    );
    assert_eq!(code, 422, "{st}");
    assert!(
        st["message"]
            .as_str()
            .unwrap_or("")
            .contains("fieldManager: Too long"),
        "{st}"
    );
    let (code, _) = call(
        &s,
        "POST",
        "/api/v1/namespaces/default/endpoints?fieldManager=a%07b",
        "x",
        &json!({"metadata": {"name": "web"}}),
    );
    assert_eq!(code, 422);
}
