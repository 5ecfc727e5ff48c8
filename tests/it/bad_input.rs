//! Bad or awkward API objects (issue 14): never a panic, never a stuck key,
//! every other Service keeps being served — among them a selector matching
//! 2500 pods and a port name that is not a valid IANA_SVC_NAME. Pods with large annotations make
//! a LIST page exceed the body cap: the informers list again in smaller
//! pages instead of never syncing.

use crate::harness::controller as controller_support;
use crate::harness::process as process_support;

use controller_support::*;
use process_support::SpawnReaped;
use serde_json::json;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

#[test]
fn awkward_objects_are_served_and_large_pages_shrink_under_the_body_cap() {
    let c = Cluster::start("bad-input");
    let mut items = vec![node("node-a", "z1")];
    // 30 pods with 100 KiB of annotations each: 3 MiB in one LIST page,
    // over the 2 MiB cap configured below.
    items.push(service("default", "fat", "fat", json!("http")));
    let blob = "x".repeat(100 * 1024);
    for i in 0..30 {
        let mut p = pod("default", &format!("fat-{i}"), "fat", &ip(i), i % 2 == 0);
        p["metadata"]["annotations"] = json!({"example.com/blob": blob});
        items.push(p);
    }
    // Thousands of labels on one pod.
    items.push(service("default", "labelled", "labelled", json!(8080)));
    let mut many = pod("default", "labelled-0", "labelled", &ip(100), true);
    for i in 0..3000 {
        many["metadata"]["labels"][format!("l{i}")] = json!(format!("v{i}"));
    }
    items.push(many);
    // Duplicate container port names (the first wins, as upstream), and a
    // Service port without targetPort (defaults to the port).
    items.push(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "dup", "namespace": "default"},
        "spec": {"selector": {"app": "dup"}, "ports": [{"name": "http", "port": 8080}]}}));
    let mut dup = pod("default", "dup-0", "dup", &ip(101), true);
    dup["spec"]["containers"][0]["ports"] = json!([
        {"name": "http", "containerPort": 8080}, {"name": "http", "containerPort": 9090}]);
    items.push(dup);
    // A pod without an IP yet, and an IPv6-only pod of an IPv6 Service.
    let mut noip = pod("default", "dup-1", "dup", "", false);
    noip["status"] = json!({"phase": "Pending"});
    items.push(noip);
    items.push(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "six", "namespace": "default"},
        "spec": {"selector": {"app": "six"}, "ipFamilies": ["IPv6"], "clusterIP": "fd00::10",
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}));
    items.push(pod("default", "six-0", "six", "fd00::1", true));
    // A selector matching thousands of pods: the Endpoints are truncated
    // to 1000 (ready first), the slices hold all 2500.
    items.push(service("default", "big", "big", json!("http")));
    for i in 0..2500 {
        items.push(pod(
            "default",
            &format!("big-{i}"),
            "big",
            &ip(1000 + i),
            i % 10 != 0,
        ));
    }
    // Objects with null fields.
    items.push(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "nulls", "namespace": "default", "labels": null},
        "spec": {"selector": {"app": "nulls"}, "ports": [{"name": "http", "port": 80, "targetPort": 80}], "ipFamilies": null}}));
    let mut nulls = pod("default", "nulls-0", "nulls", &ip(102), true);
    nulls["spec"]["containers"][0]["ports"] = json!(null);
    nulls["status"]["conditions"] = json!(null);
    items.push(nulls);
    c.load(items);
    // A container port name that is not a valid IANA_SVC_NAME, targeted by
    // name — what validation refuses, so written past it into the store (as
    // an older or non-validating server could serve it): matched by string
    // equality, as upstream's FindPort does.
    let mut odd_svc = service("default", "oddname", "oddname", json!("Not_Valid"));
    odd_svc["metadata"]["uid"] = json!("uid-oddname");
    let mut odd = pod("default", "oddname-0", "oddname", &ip(103), true);
    odd["metadata"]["uid"] = json!("uid-oddname-0");
    odd["spec"]["containers"][0]["ports"] = json!([{"name": "Not_Valid", "containerPort": 7070}]);
    c.sim.store().txn(|t| {
        t.put(&key("services", "default", "oddname"), "create", odd_svc);
        t.put(&key("pods", "default", "oddname-0"), "create", odd);
    });
    // The harness's config with a 2 MiB body cap in its [kubernetes] table.
    let cfg = config(
        &c,
        "bad2",
        &format!("127.0.0.1:{}", free_port()),
        "[leader_election]\nenabled = false\n",
    );
    let text = std::fs::read_to_string(&cfg).expect("config");
    std::fs::write(
        &cfg,
        text.replace(
            "[kubernetes]\n",
            "[kubernetes]\nmax_response_bytes = 2097152\n",
        ),
    )
    .expect("config");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_endpointd"))
        .args(["run", "--config"])
        .arg(&cfg)
        .env_remove("NOTIFY_SOCKET")
        .stderr(std::process::Stdio::null())
        .spawn_reaped()
        .expect("endpointd");
    let t = c.wait_converged(LIMIT);
    eprintln!("bad input: converged in {t:?} with a 2 MiB body cap");
    let ep = c.get("endpoints", "default", "dup").expect("endpoints");
    assert_eq!(
        ep["subsets"][0]["ports"][0]["port"], 8080,
        "the first port named http"
    );
    let odd = c.get("endpoints", "default", "oddname").expect("endpoints");
    assert_eq!(odd["subsets"][0]["ports"][0]["port"], 7070);
    let big: Vec<_> = c
        .all("endpointslices")
        .into_iter()
        .filter(|s| s["metadata"]["labels"]["kubernetes.io/service-name"] == "big")
        .collect();
    assert_eq!(big.len(), 25, "2500 endpoints in slices of 100");
    let six = c.get("endpoints", "default", "six").expect("endpoints");
    assert_eq!(six["subsets"][0]["addresses"][0]["ip"], "fd00::1");
    let _ = child.kill();
    let _ = child.wait();
}
