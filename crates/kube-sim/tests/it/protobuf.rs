//! Protobuf request bodies and OpenAPI (issue 11): decode table tests over
//! bodies captured from kubectl, and kubectl against kube-sim — `create
//! namespace`, `run`, `expose`, `create service clusterip` store what the
//! same object sent as JSON stores; `apply -f` of a v1 List validates
//! (against /openapi/v2) and applies; `explain` works; a malformed protobuf
//! body is a 400 Status and an unsupported Content-Type a 415.
//!
//! Fixtures (tests/fixtures/protobuf/) were captured from kubectl v1.33.1:
//! `*.pb` are raw request bodies, `*.expected.json` what
//! `kubectl … --dry-run=client -o json` prints for the same command (for
//! `kubectl debug node/…`, which has no dry run, written by hand). kubectl
//! sends `run` and `expose` as JSON (run-web.json, expose-pod-web.json).
//! drain-delete-options.pb is the DeleteOptions body of `kubectl drain`'s
//! pod deletions, copied from `kubectl drain -v=9`'s hex dump.

use crate::harness::kubectl as kubectl_support;

use kube_sim::protobuf::{decode_delete_options, decode_object, PROTOBUF};
use kube_sim::resources::lookup;
use kube_sim::server::{SimOptions, SimServer};
use kube_sim::store::Key;
use kubectl_support::{kubectl, kubectl_available, kubectl_ok};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/protobuf")
}

#[test]
fn decode_table_over_bodies_captured_from_kubectl() {
    let cases = [
        ("create-namespace-demo", "Namespace"),
        ("create-service-clusterip-x", "Service"),
        ("create-service-clusterip-headless", "Service"),
        ("create-service-nodeport-np", "Service"),
        ("create-service-loadbalancer-lb", "Service"),
        ("create-service-externalname-en", "Service"),
        ("debug-node-sysadmin", "Pod"),
        ("debug-node-general", "Pod"),
    ];
    for (name, kind) in cases {
        let body = std::fs::read(fixtures().join(format!("{name}.pb"))).expect("fixture");
        assert!(body.starts_with(b"k8s\0"), "{name} is protobuf");
        let want: Value = serde_json::from_slice(
            &std::fs::read(fixtures().join(format!("{name}.expected.json"))).expect("expected"),
        )
        .expect("expected json");
        let got = decode_object("", "v1", kind, &body).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got, want, "{name}");
    }
    let body = std::fs::read(fixtures().join("drain-delete-options.pb")).expect("fixture");
    let want: Value = serde_json::from_slice(
        &std::fs::read(fixtures().join("drain-delete-options.expected.json")).expect("expected"),
    )
    .expect("expected json");
    assert_eq!(
        decode_delete_options(Some(PROTOBUF), &body).expect("DeleteOptions"),
        want
    );
    for name in ["run-web.json", "expose-pod-web.json"] {
        let body = std::fs::read(fixtures().join(name)).expect("fixture");
        let v: Value = serde_json::from_slice(&body).expect("kubectl sends these as JSON");
        assert_eq!(v["apiVersion"], "v1", "{name}");
    }
}

fn stored(sim: &SimServer, resource: &str, ns: &str, name: &str) -> Value {
    let info = lookup("", "v1", resource).expect("resource");
    let k = Key::new(info, ns, name);
    sim.store()
        .txn(|t| t.get(&k).map(|o| o.value()))
        .unwrap_or_else(|| panic!("{resource} {ns}/{name} not stored"))
}

/// What differs between two creations of the same object: identity,
/// versions, time, and the allocated cluster IP.
fn normalized(mut v: Value, rename: (&str, &str)) -> Value {
    if let Some(m) = v["metadata"].as_object_mut() {
        for f in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "namespace",
            "managedFields",
        ] {
            m.remove(f);
        }
    }
    if let Some(s) = v["spec"].as_object_mut() {
        s.remove("clusterIP");
        s.remove("clusterIPs");
    }
    let text = v.to_string().replace(rename.0, rename.1);
    serde_json::from_str(&text).expect("json")
}

fn write(dir: &std::path::Path, name: &str, v: &Value) -> String {
    let p = dir.join(name);
    std::fs::write(&p, v.to_string()).expect("write");
    p.to_string_lossy().into_owned()
}

#[test]
fn kubectl_create_run_expose_store_what_json_requests_store() {
    if !kubectl_available() {
        eprintln!("kubectl not installed: skipping");
        return;
    }
    let (sim, kc) = kubectl_support::start(
        "protobuf-create",
        vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "json"}})],
    );
    let dir = kc.parent().expect("dir").to_path_buf();
    // As kubectl sends them (create namespace / create service: protobuf).
    kubectl_ok(&kc, &["create", "namespace", "demo"]);
    kubectl_ok(&kc, &["run", "web", "--image=nginx", "-l", "app=web"]);
    kubectl_ok(&kc, &["expose", "pod", "web", "--port", "80"]);
    kubectl_ok(
        &kc,
        &["create", "service", "clusterip", "x", "--tcp=80:8080"],
    );
    // The same objects as JSON requests (`create -f` sends JSON).
    let dry = |args: &[&str]| -> Value {
        let mut a = args.to_vec();
        a.extend(["--dry-run=client", "-o", "json"]);
        serde_json::from_str(&kubectl_ok(&kc, &a)).expect("dry-run json")
    };
    let mut ns = dry(&["create", "namespace", "demo"]);
    ns["metadata"]["name"] = json!("demo-json");
    let cases = [
        (ns, "namespaces", "", "demo"),
        (
            dry(&["run", "web", "--image=nginx", "-l", "app=web"]),
            "pods",
            "default",
            "web",
        ),
        (
            dry(&["expose", "pod", "web", "--port", "80"]),
            "services",
            "default",
            "web",
        ),
        (
            dry(&["create", "service", "clusterip", "x", "--tcp=80:8080"]),
            "services",
            "default",
            "x",
        ),
    ];
    for (i, (obj, resource, ns, name)) in cases.into_iter().enumerate() {
        let f = write(&dir, &format!("obj-{i}.json"), &obj);
        let json_ns = if ns.is_empty() {
            vec![]
        } else {
            vec!["-n", "json"]
        };
        let mut args = vec!["create", "-f", f.as_str()];
        args.extend(json_ns);
        kubectl_ok(&kc, &args);
        let (json_ns, json_name) = if ns.is_empty() {
            ("", "demo-json")
        } else {
            ("json", name)
        };
        let via_kubectl = normalized(stored(&sim, resource, ns, name), ("", ""));
        let via_json = normalized(
            stored(&sim, resource, json_ns, json_name),
            ("demo-json", "demo"),
        );
        assert_eq!(via_kubectl, via_json, "{resource} {name}");
    }
    // kubectl drain deletes pods with a protobuf DeleteOptions body.
    let objs = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "on-node", "namespace": "default"},
         "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]}}]});
    let f = write(&dir, "node.json", &objs);
    kubectl_ok(&kc, &["create", "-f", &f]);
    let out = kubectl_ok(&kc, &["drain", "node-1", "--force", "--grace-period=0"]);
    assert!(out.contains("node/node-1 drained"), "{out}");
    let k = Key::new(
        lookup("", "v1", "pods").expect("pods"),
        "default",
        "on-node",
    );
    let left = sim.store().txn(|t| t.get(&k).map(|o| o.value()));
    assert!(left.is_none(), "drained pod deleted: {left:?}\n{out}");
    sim.stop();
}

#[test]
fn kubectl_apply_of_a_v1_list_validates_and_applies() {
    if !kubectl_available() {
        eprintln!("kubectl not installed: skipping");
        return;
    }
    let items = vec![
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"},
               "spec": {"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24"]},
               "status": {"conditions": [{"type": "Ready", "status": "True",
                                          "lastHeartbeatTime": "2026-01-01T00:00:00Z"}],
                          "addresses": [{"type": "InternalIP", "address": "192.0.2.10"}],
                          "capacity": {"cpu": "4", "memory": "8Gi"},
                          "nodeInfo": {"kubeletVersion": "v1.33.0", "osImage": "Debian",
                                       "kernelVersion": "6.1", "containerRuntimeVersion": "containerd://1.7",
                                       "machineID": "", "systemUUID": "", "bootID": "",
                                       "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"}}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"}},
               "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx",
                        "ports": [{"name": "http", "containerPort": 8080}],
                        "readinessProbe": {"httpGet": {"path": "/", "port": "http"}},
                        "resources": {"requests": {"cpu": "100m"}}}]},
               "status": {"phase": "Running", "podIP": "10.244.0.5", "podIPs": [{"ip": "10.244.0.5"}],
                          "startTime": "2026-01-01T00:00:00Z",
                          "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": null}],
                          "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0, "image": "nginx",
                                                 "imageID": "", "started": true,
                                                 "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
               "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}),
        json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web", "namespace": "default"},
               "subsets": [{"addresses": [{"ip": "10.244.0.5", "nodeName": "node-1",
                                           "targetRef": {"kind": "Pod", "name": "web-0", "namespace": "default"}}],
                            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]}),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
               "metadata": {"name": "web-abcde", "namespace": "default", "labels": {"kubernetes.io/service-name": "web"}},
               "addressType": "IPv4",
               "endpoints": [{"addresses": ["10.244.0.5"], "nodeName": "node-1",
                              "conditions": {"ready": true, "serving": true, "terminating": false}}],
               "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}),
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": "endpointd", "namespace": "kube-system"},
               "spec": {"holderIdentity": "node-1_abc", "leaseDurationSeconds": 15,
                        "renewTime": "2026-01-01T00:00:00.123456Z"}}),
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "web.1", "namespace": "default"},
               "involvedObject": {"kind": "Service", "name": "web", "namespace": "default"},
               "reason": "Synced", "message": "ok", "type": "Normal", "count": 1,
               "source": {"component": "endpointd"},
               "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
               "reportingComponent": "", "reportingInstance": ""}),
    ];
    let (sim, kc) = kubectl_support::start("protobuf-apply", items);
    let dir = kc.parent().expect("dir").to_path_buf();
    let text = kubectl_ok(
        &kc,
        &[
            "get",
            "nodes,pods,services,endpoints,endpointslices,leases,events",
            "-A",
            "-o",
            "json",
        ],
    );
    let mut list: Value = serde_json::from_str(&text).expect("list");
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(7), "{text}");
    // A new object in the List, too: apply creates it.
    let mut fresh = list["items"][2].clone();
    fresh["metadata"] = json!({"name": "fresh", "namespace": "default"});
    fresh["spec"]["clusterIP"].take();
    fresh["spec"]["clusterIPs"].take();
    if let Some(items) = list["items"].as_array_mut() {
        items.push(fresh);
    }
    let f = write(&dir, "list.json", &list);
    let out = kubectl_ok(&kc, &["apply", "-f", &f]);
    assert!(
        out.contains("pod/web-0 configured") && out.contains("service/fresh created"),
        "{out}"
    );
    assert!(
        stored(&sim, "services", "default", "fresh")["metadata"]["annotations"]
            ["kubectl.kubernetes.io/last-applied-configuration"]
            .is_string()
    );
    // Validation ran against the served schema: an unknown field is refused
    // by kubectl itself, before any request.
    let mut bad = list.clone();
    bad["items"][1]["spec"]["containers"][0]["bogusField"] = json!(1);
    let f = write(&dir, "bad.json", &bad);
    let o = kubectl(&kc, &["apply", "-f", &f]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("unknown field \"bogusField\""), "{err}");
    sim.stop();
}

#[test]
fn kubectl_explain_reads_the_served_schemas() {
    if !kubectl_available() {
        eprintln!("kubectl not installed: skipping");
        return;
    }
    let (sim, kc) = kubectl_support::start("protobuf-explain", vec![]);
    // OpenAPI v3 (kubectl's default) and v2.
    let out = kubectl_ok(&kc, &["explain", "pods.spec"]);
    assert!(out.contains("containers\t<[]Container>"), "{out}");
    let out = kubectl_ok(&kc, &["explain", "endpointslices.endpoints.conditions"]);
    assert!(out.contains("ready\t<boolean>"), "{out}");
    let out = kubectl_ok(
        &kc,
        &["explain", "pods.spec", "--output=plaintext-openapiv2"],
    );
    assert!(out.contains("containers\t<[]Object>"), "{out}");
    sim.stop();
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}

fn post(url: &str, ctype: &str, body: &[u8]) -> (u16, Value) {
    let mut r = agent()
        .post(url)
        .header("content-type", ctype)
        .send(body)
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    let text = r.body_mut().read_to_string().unwrap_or_default();
    (
        r.status().as_u16(),
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

#[test]
fn protobuf_bodies_over_http_and_their_errors() {
    let sim = SimServer::start(SimOptions::default()).expect("kube-sim");
    let url = format!("{}/api/v1/namespaces", sim.url());
    let body = std::fs::read(fixtures().join("create-namespace-demo.pb")).expect("fixture");
    let (code, obj) = post(&url, PROTOBUF, &body);
    assert_eq!(code, 201, "{obj}");
    assert_eq!(obj["metadata"]["name"], "demo");
    // PUT takes protobuf too (an unconditional update of the same object).
    let mut r = agent()
        .put(format!("{url}/demo"))
        .header("content-type", PROTOBUF)
        .send(&body[..])
        .expect("PUT");
    let text = r.body_mut().read_to_string().unwrap_or_default();
    assert_eq!(r.status().as_u16(), 200, "{text}");
    let (code, st) = post(&url, PROTOBUF, b"k8s\0\x0a\x05\x0a");
    assert_eq!(code, 400, "{st}");
    assert_eq!(
        (st["kind"].as_str(), st["reason"].as_str()),
        (Some("Status"), Some("BadRequest"))
    );
    let msg = st["message"].as_str().unwrap_or("");
    assert!(
        msg.contains("cannot be handled as a Namespace") && msg.contains("envelope"),
        "{msg}"
    );
    let (code, st) = post(&url, PROTOBUF, b"{\"metadata\":{\"name\":\"x\"}}");
    assert_eq!(code, 400, "{st}");
    assert!(
        st["message"].as_str().unwrap_or("").contains("magic"),
        "{st}"
    );
    let (code, st) = post(&url, "text/plain", b"{}");
    assert_eq!(code, 415, "{st}");
    assert_eq!(st["reason"], "UnsupportedMediaType");
    let (code, _) = post(&url, "application/yaml", b"metadata:\n  name: from-yaml\n");
    assert_eq!(code, 201);

    // /openapi/v2: JSON by default, protobuf when asked.
    let mut r = agent()
        .get(format!("{}/openapi/v2", sim.url()))
        .call()
        .expect("v2");
    let doc: Value =
        serde_json::from_str(&r.body_mut().read_to_string().expect("body")).expect("json");
    assert_eq!(doc["swagger"], "2.0");
    assert!(doc["definitions"]["io.k8s.api.core.v1.Pod"].is_object());
    let r = agent()
        .get(format!("{}/openapi/v2", sim.url()))
        .header(
            "accept",
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        )
        .call()
        .expect("v2 pb");
    assert_eq!(
        r.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
    );
    sim.stop();
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    const KINDS: [(&str, &str); 9] = [
        ("", "Pod"),
        ("", "Service"),
        ("", "Endpoints"),
        ("", "Node"),
        ("", "Namespace"),
        ("", "Event"),
        ("discovery.k8s.io", "EndpointSlice"),
        ("coordination.k8s.io", "Lease"),
        ("events.k8s.io", "Event"),
    ];

    fn corpus() -> Vec<Vec<u8>> {
        [
            "create-namespace-demo",
            "create-service-clusterip-x",
            "debug-node-sysadmin",
        ]
        .iter()
        .map(|n| std::fs::read(fixtures().join(format!("{n}.pb"))).expect("fixture"))
        .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Arbitrary bytes after the magic, as every kind: decoded or refused.
        #[test]
        fn arbitrary_messages_never_panic(raw in prop::collection::vec(any::<u8>(), 0..256), k in 0..KINDS.len()) {
            let (group, kind) = KINDS[k];
            let mut body = b"k8s\0".to_vec();
            body.extend_from_slice(&raw);
            let _ = decode_object(group, "v1", kind, &body);
        }

        /// Captured kubectl bodies with bytes changed, cut or inserted.
        #[test]
        fn mutated_kubectl_bodies_never_panic(
            which in 0..3usize,
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0..3u8), 1..6),
        ) {
            let mut body = corpus()[which].clone();
            for (at, byte, op) in edits {
                if body.is_empty() {
                    break;
                }
                let i = at.index(body.len());
                match op {
                    0 => body[i] = byte,
                    1 => body.truncate(i),
                    _ => body.insert(i, byte),
                }
            }
            for (group, kind) in KINDS {
                let _ = decode_object(group, "v1", kind, &body);
            }
        }
    }
}
