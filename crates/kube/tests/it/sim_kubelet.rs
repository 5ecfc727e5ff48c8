//! kube-sim's simulated kubelet as this crate's client sees it: binding, pod
//! IPs from the node's podCIDR, Ready after a delay, the readiness
//! annotation, and graceful deletion observed through a watch (MODIFIED with
//! deletionTimestamp, then DELETED). kubectl's view is in kube-sim's tests.

use endpointd_base::clock::RealClock;
use endpointd_kube::kube::{Client, ClientConfig, WatchEvent, WatchParams, PODS};
use endpointd_kube::model::Pod;
use kube_sim::kubelet::KubeletOptions;
use kube_sim::resources::lookup;
use kube_sim::server::{SimOptions, SimServer};
use kube_sim::store::Key;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn pod_value(sim: &SimServer, name: &str) -> Option<Value> {
    let k = Key::new(lookup("", "v1", "pods").expect("pods"), "default", name);
    sim.store().txn(|t| t.get(&k).map(|o| o.value()))
}

fn wait(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn pods_live_like_pods_under_the_simulated_kubelet() {
    let sim = SimServer::start(SimOptions {
        kubelet: Some(KubeletOptions {
            ready_after: Duration::from_secs(2),
            grace_cap: Duration::from_millis(800),
            every: Duration::from_millis(20),
            ..KubeletOptions::default()
        }),
        ..SimOptions::default()
    })
    .expect("kube-sim");
    sim.store()
        .load_list(&json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"}},
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "b"}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
             "spec": {"containers": [{"name": "c", "image": "nginx"}], "terminationGracePeriodSeconds": 30}}]}))
        .expect("load");
    wait("bound, started", || {
        pod_value(&sim, "web").is_some_and(|p| p["status"]["phase"] == "Running")
    });
    let p = pod_value(&sim, "web").expect("pod");
    let node = p["spec"]["nodeName"].as_str().expect("bound").to_string();
    let ip = p["status"]["podIP"].as_str().expect("ip").to_string();
    let idx = if node == "a" { 0 } else { 1 };
    assert!(ip.starts_with(&format!("10.244.{idx}.")), "{ip} on {node}");
    assert_eq!(
        p["status"]["conditions"][0]["status"], "False",
        "not Ready before the delay"
    );
    let ready = |v: &Value| {
        v["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
    };
    wait("Ready after the delay", || {
        pod_value(&sim, "web").is_some_and(|p| ready(&p))
    });
    let k = Key::new(lookup("", "v1", "pods").expect("pods"), "default", "web");
    sim.store().txn(|t| {
        let mut v = t.get(&k).expect("pod").value();
        v["metadata"]["annotations"] = json!({"sim.endpointd.io/ready": "false"});
        t.put(&k, "update", v);
    });
    wait("NotReady by annotation", || {
        pod_value(&sim, "web").is_some_and(|p| !ready(&p))
    });

    let client =
        Client::new(ClientConfig::new(sim.url()), RealClock::shared(), None).expect("client");
    let mut w = client
        .watch::<Pod>(
            &PODS,
            Some("default"),
            &WatchParams {
                resource_version: Some(
                    p["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap_or("0")
                        .to_string(),
                ),
                ..WatchParams::default()
            },
        )
        .expect("watch");
    client
        .delete(&PODS, Some("default"), "web", None)
        .expect("delete");
    let t0 = Instant::now();
    let mut saw_terminating = false;
    loop {
        match w.next() {
            Some(Ok(WatchEvent::Modified(p))) => {
                saw_terminating |= p.metadata.deletion_timestamp.is_some()
            }
            Some(Ok(WatchEvent::Deleted(_))) => break,
            Some(Ok(_)) => {}
            other => panic!("watch ended: {other:?}"),
        }
    }
    assert!(
        saw_terminating,
        "MODIFIED with deletionTimestamp before DELETED"
    );
    assert!(
        t0.elapsed() >= Duration::from_millis(700),
        "stayed terminating for the (capped) grace period"
    );
    sim.stop();
}

#[test]
fn a_dual_stack_kubelet_gives_nodes_two_pod_cidrs_and_pods_two_ips() {
    let sim = SimServer::start(SimOptions {
        kubelet: Some(KubeletOptions {
            every: Duration::from_millis(20),
            dual_stack: true,
            ..KubeletOptions::default()
        }),
        ..SimOptions::default()
    })
    .expect("kube-sim");
    sim.store()
        .load_list(&json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
             "spec": {"containers": [{"name": "c", "image": "nginx"}]}}]}))
        .expect("load");
    wait("started", || {
        pod_value(&sim, "web").is_some_and(|p| p["status"]["phase"] == "Running")
    });
    let node_key = Key::new(lookup("", "v1", "nodes").expect("nodes"), "", "a");
    let node = sim
        .store()
        .txn(|t| t.get(&node_key).map(|o| o.value()))
        .expect("node");
    assert_eq!(
        node["spec"]["podCIDRs"],
        json!(["10.244.0.0/24", "fd00:10:244:0::/64"])
    );
    let p = pod_value(&sim, "web").expect("pod");
    let ips: Vec<&str> = p["status"]["podIPs"]
        .as_array()
        .expect("podIPs")
        .iter()
        .filter_map(|i| i["ip"].as_str())
        .collect();
    assert_eq!(ips.len(), 2, "{ips:?}");
    assert!(ips[0].starts_with("10.244.0."), "{ips:?}");
    let v6: std::net::Ipv6Addr = ips[1].parse().expect("IPv6");
    let net: std::net::Ipv6Addr = "fd00:10:244:0::".parse().expect("net");
    assert_eq!(
        u128::from(v6) >> 64,
        u128::from(net) >> 64,
        "{v6} in the node's /64"
    );
    assert_eq!(
        u128::from(v6) & 0xff,
        u128::from(ips[0].parse::<std::net::Ipv4Addr>().expect("v4").octets()[3]),
        "the same host part"
    );
    assert_eq!(p["status"]["podIP"], ips[0]);
    sim.stop();
}

#[test]
fn pod_ips_come_from_the_node_s_stored_pod_cidr() {
    // Node "b" already has a podCIDR of its own; "a", added without one,
    // sorts first but must not take b's range.
    let sim = SimServer::start(SimOptions {
        kubelet: Some(KubeletOptions {
            every: Duration::from_millis(20),
            ..KubeletOptions::default()
        }),
        ..SimOptions::default()
    })
    .expect("kube-sim");
    sim.store()
        .load_list(&json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "b"},
             "spec": {"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24"]}},
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "on-b", "namespace": "default"},
             "spec": {"nodeName": "b", "containers": [{"name": "c", "image": "nginx"}]}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "on-a", "namespace": "default"},
             "spec": {"nodeName": "a", "containers": [{"name": "c", "image": "nginx"}]}}]}))
        .expect("load");
    wait("both started", || {
        ["on-a", "on-b"]
            .iter()
            .all(|n| pod_value(&sim, n).is_some_and(|p| p["status"]["phase"] == "Running"))
    });
    let ip = |n: &str| {
        pod_value(&sim, n).expect("pod")["status"]["podIP"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    assert!(ip("on-b").starts_with("10.244.0."), "{}", ip("on-b"));
    assert!(ip("on-a").starts_with("10.244.1."), "{}", ip("on-a"));
    sim.stop();
}
