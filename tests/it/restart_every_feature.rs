//! Over a cluster that uses every feature both controllers handle, a cold
//! start writes the minimum and a restart writes nothing: not one
//! Endpoints, EndpointSlice or Event. (A restart that rewrites what it
//! already wrote is the first thing an operator sees in the API server's
//! audit log; the topology hints once did, on every start.)

use crate::harness::controller as controller_support;

use controller_support::*;
use serde_json::{json, Value};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);
const CFG: &str = "[leader_election]\nenabled = false\n";

/// Pod `<app>-<i>` of `app` on `node`, Ready or not, with `ips` (the
/// first is `podIP`).
fn pod_on(ns: &str, app: &str, i: usize, node: &str, ips: &[&str], ready: bool) -> Value {
    let mut p = pod(ns, &format!("{app}-{i}"), app, ips[0], ready);
    p["spec"]["nodeName"] = json!(node);
    p["status"]["podIPs"] = json!(ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>());
    p
}

fn with(mut v: Value, path: &[&str], x: Value) -> Value {
    let mut at = &mut v;
    for p in path {
        at = &mut at[*p];
    }
    *at = x;
    v
}

fn cluster() -> Vec<Value> {
    let mut items = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}),
        node("node-a", "z1"),
        node("node-b", "z2"),
    ];
    let svc = |name: &str| service("default", name, name, json!("http"));
    // Topology-aware hints.
    items.push(with(
        svc("auto"),
        &["metadata", "annotations"],
        json!({"service.kubernetes.io/topology-mode": "Auto"}),
    ));
    // trafficDistribution: PreferClose.
    items.push(with(
        svc("close"),
        &["spec", "trafficDistribution"],
        json!("PreferClose"),
    ));
    // Dual stack: a slice per family, Endpoints with the primary family.
    let mut dual = svc("dual");
    dual["spec"]["ipFamilies"] = json!(["IPv4", "IPv6"]);
    dual["spec"]["ipFamilyPolicy"] = json!("RequireDualStack");
    items.push(dual);
    // Headless, publishing not-ready addresses, pods with hostnames.
    let mut headless = svc("headless");
    headless["spec"]["clusterIP"] = json!("None");
    headless["spec"]["publishNotReadyAddresses"] = json!(true);
    items.push(headless);
    // Two ports: one by name, one by number, one UDP.
    items.push(with(
        svc("multi"),
        &["spec", "ports"],
        json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http"},
               {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 5353}]),
    ));
    // 250 pods: three slices; 1,050 pods: Endpoints over capacity.
    items.push(svc("big"));
    items.push(svc("huge"));
    // No pods: a placeholder slice and an empty Endpoints.
    items.push(svc("empty"));
    // Selector-less and ExternalName: never written.
    items.push(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "manual", "namespace": "default"}, "spec": {"ports": [{"port": 80}]}}));
    items.push(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "ext", "namespace": "default"},
        "spec": {"type": "ExternalName", "externalName": "example.com", "selector": {"app": "auto"}}}));
    // Another namespace.
    items.push(service("other", "web", "web", json!(8080)));

    let mut n = 0;
    let mut next_ip = || {
        n += 1;
        ip(n)
    };
    for i in 0..6 {
        let node = if i % 2 == 0 { "node-a" } else { "node-b" };
        items.push(pod_on("default", "auto", i, node, &[&next_ip()], true));
        items.push(pod_on("default", "close", i, node, &[&next_ip()], i != 1));
        let v6 = format!("fd00::{i:x}");
        let mut d = pod_on("default", "dual", i, node, &[&next_ip(), &v6], true);
        if i == 5 {
            d["status"]["phase"] = json!("Succeeded");
        }
        items.push(d);
        let mut h = pod_on("default", "headless", i, node, &[&next_ip()], i % 3 != 0);
        h["spec"]["hostname"] = json!(format!("h{i}"));
        h["spec"]["subdomain"] = json!("headless");
        items.push(h);
        let mut m = pod_on("default", "multi", i, node, &[&next_ip()], true);
        if i == 4 {
            // Terminating: a terminating endpoint in the slice.
            m["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        items.push(m);
        items.push(pod_on("other", "web", i, node, &[&next_ip()], true));
    }
    for i in 0..250 {
        items.push(pod_on(
            "default",
            "big",
            i,
            "node-a",
            &[&next_ip()],
            i % 7 != 0,
        ));
    }
    for i in 0..1050 {
        items.push(pod_on("default", "huge", i, "node-b", &[&next_ip()], true));
    }
    items
}

#[test]
fn over_every_feature_a_cold_start_writes_the_minimum_and_a_restart_nothing() {
    let c = Cluster::start("restart-all");
    c.load(cluster());
    let resources = ["endpoints", "endpointslices", "events"];
    let counts = || resources.map(|r| c.write_count(r));
    let fixture = counts();
    let d = Daemon::start(&c, "first", CFG);
    wait_until("every Service converged", LIMIT, || {
        let ep = |name: &str| c.get("endpoints", "default", name);
        let huge = ep("huge");
        ep("empty").is_some()
            && huge.as_ref().is_some_and(|h| {
                h["metadata"]["annotations"]["endpoints.kubernetes.io/over-capacity"] == "truncated"
            })
            && c.get("endpoints", "other", "web").is_some()
            && c.all("endpointslices").iter().any(|s| {
                s["metadata"]["labels"]["kubernetes.io/service-name"] == "auto"
                    && s["endpoints"][0]["hints"]["forZones"][0]["name"].is_string()
            })
    });
    d.wait_idle("endpoint", 9.0, LIMIT);
    d.wait_idle("endpoint_slice", 9.0, LIMIT);
    assert_eq!(d.stop(), Some(0));
    let before = counts();
    // The cold start wrote the minimum: one Endpoints per selecting
    // Service (9); slices: auto 1, close 1, dual 2 (a family each),
    // headless 1, multi 1, big 3, huge 11, empty 1 (placeholder), other 1;
    // one event (hints enabled for auto).
    let wrote: Vec<usize> = before.iter().zip(fixture).map(|(b, f)| b - f).collect();
    assert_eq!(wrote, [9, 22, 1]);
    assert!(
        c.get("endpoints", "default", "manual").is_none()
            && c.get("endpoints", "default", "ext").is_none(),
        "selector-less and ExternalName Services are not written"
    );

    let d = Daemon::start(&c, "second", CFG);
    d.wait_idle("endpoint", 9.0, LIMIT);
    d.wait_idle("endpoint_slice", 9.0, LIMIT);
    let after = counts();
    let new: Vec<String> = resources
        .iter()
        .zip(before)
        .flat_map(|(r, n)| c.writes(r).into_iter().skip(n))
        .map(|w| format!("{} {} {:?}/{}", w.verb, w.resource, w.namespace, w.name))
        .collect();
    assert_eq!(after, before, "the restart wrote: {new:?}");
    assert_eq!(d.stop(), Some(0));
}
