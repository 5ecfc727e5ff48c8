//! The EndpointSlice controller end to end: the real `endpointd` binary
//! against kube-sim over HTTP, writes counted in kube-sim's write log.

use crate::harness::controller as controller_support;

use controller_support::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);
/// Slices only; pod changes batched for 500 ms so that one fixture
/// transaction is one sync and the write counts below are exact.
const CFG: &str = "[leader_election]\nenabled = false\n[endpoints]\nenabled = false\n[endpointslices]\nbatch_period = \"500ms\"\n";

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i:04}")).collect()
}

/// The managed slices of a Service.
fn slices(c: &Cluster, ns: &str, svc: &str) -> Vec<Value> {
    c.all("endpointslices")
        .into_iter()
        .filter(|s| {
            s["metadata"]["namespace"] == ns
                && s["metadata"]["labels"]["kubernetes.io/service-name"] == svc
                && s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"]
                    == "endpointslice-controller.k8s.io"
        })
        .collect()
}

/// Slice sizes (sorted, largest first) and the ready addresses of all.
fn shape(c: &Cluster, ns: &str, svc: &str) -> (Vec<usize>, BTreeSet<String>) {
    let mut sizes = Vec::new();
    let mut ready = BTreeSet::new();
    for s in slices(c, ns, svc) {
        let eps = s["endpoints"].as_array().cloned().unwrap_or_default();
        sizes.push(eps.len());
        for e in eps {
            if e["conditions"]["ready"] == true {
                ready.insert(e["addresses"][0].as_str().unwrap_or("").to_string());
            }
        }
    }
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    (sizes, ready)
}

fn verbs_since(c: &Cluster, from: usize) -> Vec<String> {
    c.writes("endpointslices")[from..]
        .iter()
        .map(|w| w.verb.clone())
        .collect()
}

#[test]
fn scale_0_250_120_0_packs_updates_in_place_and_keeps_a_placeholder() {
    let c = Cluster::start("es-scale");
    c.load(vec![
        node("node-a", "z1"),
        service("default", "web", "web", json!("http")),
    ]);
    let d = Daemon::start(&c, "a", CFG);
    wait_until("the placeholder", LIMIT, || {
        shape(&c, "default", "web").0 == vec![0]
    });
    let placeholder = slices(&c, "default", "web").remove(0);
    assert_eq!(placeholder["ports"], json!([]));
    assert_eq!(placeholder["addressType"], "IPv4");
    assert_eq!(
        placeholder["metadata"]["ownerReferences"][0]["kind"],
        "Service"
    );
    assert_eq!(
        placeholder["metadata"]["ownerReferences"][0]["controller"],
        true
    );
    assert_eq!(verbs_since(&c, 0), ["create"]);

    let pods = names("web", 250);
    c.load(
        pods.iter()
            .enumerate()
            .map(|(i, n)| pod("default", n, "web", &ip(i), true))
            .collect(),
    );
    wait_until("250 endpoints in 3 slices", LIMIT, || {
        shape(&c, "default", "web").0 == vec![100, 100, 50]
    });
    let mut v = verbs_since(&c, 1);
    v.sort();
    assert_eq!(
        v,
        ["create", "create", "update"],
        "the placeholder is recycled, not deleted"
    );
    let ports = &slices(&c, "default", "web")[0]["ports"];
    assert_eq!(
        ports,
        &json!([{"name": "http", "port": 8080, "protocol": "TCP"}])
    );

    let before = c.write_count("endpointslices");
    let removed: BTreeSet<&str> = pods[120..].iter().map(String::as_str).collect();
    let touched = slices(&c, "default", "web")
        .iter()
        .filter(|sl| {
            sl["endpoints"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|e| removed.contains(e["targetRef"]["name"].as_str().unwrap_or("")))
        })
        .count();
    c.delete("pods", "default", &pods[120..]);
    wait_until("120 endpoints", LIMIT, || {
        shape(&c, "default", "web").1.len() == 120
    });
    d.wait_idle("endpoint_slice", 3.0, LIMIT);
    let v = verbs_since(&c, before);
    assert!(
        !v.contains(&"create".to_string()),
        "no create while scaling down: {v:?}"
    );
    assert_eq!(
        v.len(),
        touched,
        "one write per slice that held a removed pod: {v:?}"
    );
    assert_eq!(shape(&c, "default", "web").0.iter().sum::<usize>(), 120);

    let before = c.write_count("endpointslices");
    c.delete("pods", "default", &pods[..120]);
    wait_until("only the placeholder", LIMIT, || {
        shape(&c, "default", "web").0 == vec![0]
    });
    d.wait_idle("endpoint_slice", 4.0, LIMIT);
    let v = verbs_since(&c, before);
    assert!(
        !v.contains(&"create".to_string()),
        "the last slice becomes the placeholder: {v:?}"
    );
    assert_eq!(v.iter().filter(|v| *v == "update").count(), 1, "{v:?}");
    assert_eq!(slices(&c, "default", "web")[0]["ports"], json!([]));
    assert_eq!(d.stop(), Some(0));
}

#[test]
fn restart_writes_nothing_and_foreign_edits_are_corrected() {
    let c = Cluster::start("es-restart");
    let mut items = vec![
        node("node-a", "z1"),
        service("default", "web", "web", json!(8080)),
    ];
    items.extend((0..5).map(|i| pod("default", &format!("web-{i}"), "web", &ip(i), i != 2)));
    // A slice of another manager with the same service-name label.
    items.push(json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-custom", "namespace": "default",
                     "labels": {"kubernetes.io/service-name": "web", "endpointslice.kubernetes.io/managed-by": "someone-else"}},
        "addressType": "IPv4", "endpoints": [{"addresses": ["192.0.2.9"]}], "ports": []}));
    c.load(items);
    let d = Daemon::start(&c, "first", CFG);
    wait_until("4 ready of 5", LIMIT, || {
        let (sizes, ready) = shape(&c, "default", "web");
        sizes == vec![5] && ready.len() == 4
    });
    d.wait_idle("endpoint_slice", 1.0, LIMIT);
    assert_eq!(d.stop(), Some(0));
    let before = c.write_count("endpointslices");

    let d = Daemon::start(&c, "second", CFG);
    d.wait_idle("endpoint_slice", 1.0, LIMIT);
    assert_eq!(
        c.write_count("endpointslices"),
        before,
        "restart on a converged cluster writes nothing"
    );

    // A foreign writer edits our slice: corrected in place.
    let name = slices(&c, "default", "web")[0]["metadata"]["name"]
        .as_str()
        .expect("name")
        .to_string();
    c.modify(
        "endpointslices",
        "default",
        std::slice::from_ref(&name),
        |v| {
            v["endpoints"] = json!([]);
            let g = v["metadata"]["generation"].as_i64().unwrap_or(1);
            v["metadata"]["generation"] = json!(g + 1);
        },
    );
    wait_until("the edit corrected", LIMIT, || {
        shape(&c, "default", "web").0 == vec![5]
    });
    assert!(
        c.get("endpointslices", "default", &name).is_some(),
        "corrected in place, same name"
    );
    // … and deletes it: recreated.
    c.delete("endpointslices", "default", std::slice::from_ref(&name));
    wait_until("the slice recreated", LIMIT, || {
        shape(&c, "default", "web").0 == vec![5]
    });
    let custom = c
        .get("endpointslices", "default", "web-custom")
        .expect("unmanaged slice kept");
    assert_eq!(custom["endpoints"][0]["addresses"][0], "192.0.2.9");
    assert!(c
        .writes("endpointslices")
        .iter()
        .all(|w| w.name != "web-custom" || w.verb == "create"));
    assert_eq!(d.stop(), Some(0));
}

#[test]
fn dual_stack_service_gets_a_slice_per_family() {
    let c = Cluster::start("es-dual");
    let mut svc = service("default", "dual", "dual", json!(8080));
    svc["spec"]["ipFamilies"] = json!(["IPv4", "IPv6"]);
    svc["spec"]["ipFamilyPolicy"] = json!("RequireDualStack");
    let mut items = vec![node("node-a", "z1"), svc];
    for i in 0..3 {
        let mut p = pod("default", &format!("dual-{i}"), "dual", &ip(i), true);
        p["status"]["podIPs"] = json!([{"ip": ip(i)}, {"ip": format!("fd00::{}", i + 1)}]);
        items.push(p);
    }
    c.load(items);
    let d = Daemon::start(&c, "a", CFG);
    wait_until("an IPv4 and an IPv6 slice", LIMIT, || {
        let types: BTreeSet<String> = slices(&c, "default", "dual")
            .iter()
            .filter(|s| s["endpoints"].as_array().is_some_and(|e| e.len() == 3))
            .map(|s| s["addressType"].as_str().unwrap_or("").to_string())
            .collect();
        types == BTreeSet::from(["IPv4".to_string(), "IPv6".to_string()])
    });
    let v6 = slices(&c, "default", "dual")
        .into_iter()
        .find(|s| s["addressType"] == "IPv6")
        .expect("v6");
    let addrs: BTreeSet<&str> = v6["endpoints"]
        .as_array()
        .expect("eps")
        .iter()
        .filter_map(|e| e["addresses"][0].as_str())
        .collect();
    assert_eq!(addrs, BTreeSet::from(["fd00::1", "fd00::2", "fd00::3"]));
    assert_eq!(v6["endpoints"][0]["zone"], "z1");
    assert_eq!(d.stop(), Some(0));
}

#[test]
fn topology_mode_auto_assigns_zone_hints_and_an_event() {
    let c = Cluster::start("es-auto");
    let mut svc = service("default", "near", "near", json!(8080));
    svc["metadata"]["annotations"] = json!({"service.kubernetes.io/topology-mode": "Auto"});
    let mut items = vec![node("node-a", "z1"), node("node-b", "z2"), svc];
    for i in 0..4 {
        let mut p = pod("default", &format!("near-{i}"), "near", &ip(i), true);
        p["spec"]["nodeName"] = json!(if i % 2 == 0 { "node-a" } else { "node-b" });
        items.push(p);
    }
    c.load(items);
    let d = Daemon::start(&c, "a", CFG);
    wait_until("a zone hint on every endpoint", LIMIT, || {
        let s = slices(&c, "default", "near");
        s.len() == 1
            && s[0]["endpoints"].as_array().is_some_and(|eps| {
                eps.len() == 4
                    && eps
                        .iter()
                        .all(|e| e["hints"]["forZones"][0]["name"] == e["zone"])
            })
    });
    wait_until("TopologyAwareHintsEnabled", LIMIT, || {
        c.all("events")
            .iter()
            .any(|e| e["reason"] == "TopologyAwareHintsEnabled")
    });
    d.wait_idle("endpoint_slice", 1.0, LIMIT);
    // Beyond upstream: the zones are known before the first sync, so the
    // slice is created with its hints in one write and no "Insufficient
    // Node information" warning is raised at start.
    assert_eq!(verbs_since(&c, 0), ["create"]);
    let reasons: Vec<Value> = c
        .all("events")
        .iter()
        .map(|e| e["reason"].clone())
        .collect();
    assert_eq!(reasons, [json!("TopologyAwareHintsEnabled")]);
    assert_eq!(d.stop(), Some(0));
}

#[test]
fn readiness_flap_storm_ends_in_every_pods_last_state() {
    let c = Cluster::start("es-flap");
    let pods = names("flap", 40);
    let mut items = vec![
        node("node-a", "z1"),
        service("default", "flap", "flap", json!(8080)),
    ];
    items.extend(
        pods.iter()
            .enumerate()
            .map(|(i, n)| pod("default", n, "flap", &ip(i), true)),
    );
    c.load(items);
    let d = Daemon::start(
        &c,
        "a",
        "[leader_election]\nenabled = false\n[endpoints]\nenabled = false\n",
    );
    wait_until("40 ready", LIMIT, || {
        shape(&c, "default", "flap").1.len() == 40
    });
    c.flap_storm("default", &pods, 100);
    let want = c.ready_ips("default");
    wait_until("every pod's last readiness", LIMIT, || {
        shape(&c, "default", "flap").1 == want
    });
    d.wait_idle("endpoint_slice", 1.0, LIMIT);
    assert_eq!(shape(&c, "default", "flap").1, want);
    assert_eq!(shape(&c, "default", "flap").0.iter().sum::<usize>(), 40);
    assert_eq!(d.stop(), Some(0));
}

/// The slice watch stalls (a lossy link stops that one stream; new
/// requests and the other watches work) right before endpointd creates a
/// Service's slice, and a pod of that Service changes: the cache lacks our
/// create for longer than the 10 s stale bound. Upstream keeps backing off
/// and writes nothing; endpointd used to give up on time and create the
/// same endpoints again in a second slice. It now waits for the cache,
/// and converges with one slice once the stream is back.
#[test]
fn a_stalled_slice_watch_never_gets_a_created_slice_duplicated() {
    let c = Cluster::start("es-stalled-watch");
    c.load(vec![
        node("node-a", "z1"),
        service("default", "a", "a", json!("http")),
        pod("default", "a-0", "a", &ip(1), true),
    ]);
    let d = Daemon::start(&c, "d", CFG);
    wait_until("a's slice", LIMIT, || slices(&c, "default", "a").len() == 1);
    c.stall_watches_of("endpointslices", LIMIT);
    c.load(vec![
        service("default", "b", "b", json!("http")),
        pod("default", "b-0", "b", &ip(2), true),
    ]);
    wait_until("b's slice created", LIMIT, || {
        slices(&c, "default", "b").len() == 1
    });
    c.set_ready("default", &["b-0".to_string()], false);
    // Longer than STALE_GIVE_UP (10 s), shorter than the stuck-sync bound
    // (30 s) after which every informer lists again.
    std::thread::sleep(Duration::from_secs(13));
    let creates_of_b = || {
        c.writes("endpointslices")
            .iter()
            .filter(|w| w.verb == "create" && w.name.starts_with("b-"))
            .count()
    };
    assert_eq!(
        (slices(&c, "default", "b").len(), creates_of_b()),
        (1, 1),
        "no second slice while the cache lacks our create"
    );
    c.sim.faults().stall_watches(false);
    wait_until("b-0 not ready in its slice", LIMIT, || {
        let v = slices(&c, "default", "b");
        v.len() == 1 && v[0]["endpoints"][0]["conditions"]["ready"] == false
    });
    assert_eq!(creates_of_b(), 1);
    assert_eq!(slices(&c, "default", "a").len(), 1);
    assert_eq!(d.stop(), Some(0));
}
