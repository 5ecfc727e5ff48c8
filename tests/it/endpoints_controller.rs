//! The Endpoints controller end to end: the real `endpointd` binary against
//! kube-sim over HTTP, writes counted in kube-sim's write log.

use crate::harness::controller as controller_support;

use controller_support::*;
use kube_sim::requestinfo::Verb;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);
/// Controllers only (leader election is covered by the daemon tests);
/// pod changes batched for 500 ms so that one fixture transaction is one
/// sync and the write counts below are exact.
const CFG: &str = "[leader_election]\nenabled = false\n[endpointslices]\nenabled = false\n[endpoints]\nbatch_period = \"500ms\"\n";

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i:04}")).collect()
}

/// (ready IPs, not-ready IPs) of an Endpoints object.
fn addresses(ep: &Value) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut ready = BTreeSet::new();
    let mut not_ready = BTreeSet::new();
    for s in ep["subsets"].as_array().into_iter().flatten() {
        for a in s["addresses"].as_array().into_iter().flatten() {
            ready.insert(a["ip"].as_str().unwrap_or("").to_string());
        }
        for a in s["notReadyAddresses"].as_array().into_iter().flatten() {
            not_ready.insert(a["ip"].as_str().unwrap_or("").to_string());
        }
    }
    (ready, not_ready)
}

fn counts(c: &Cluster, ns: &str, name: &str) -> Option<(usize, usize)> {
    let ep = c.get("endpoints", ns, name)?;
    let (r, n) = addresses(&ep);
    Some((r.len(), n.len()))
}

#[test]
fn scale_up_flip_and_down_writes_once_per_step() {
    let c = Cluster::start("ep-scale");
    c.load(vec![service("default", "web", "web", json!(8080))]);
    let d = Daemon::start(&c, "a", CFG);
    wait_until("the empty Endpoints", LIMIT, || {
        counts(&c, "default", "web") == Some((0, 0))
    });
    let ep = c.get("endpoints", "default", "web").expect("endpoints");
    assert_eq!(
        ep["metadata"]["labels"]["team"], "edge",
        "service labels copied"
    );
    assert!(ep["metadata"].get("ownerReferences").is_none());
    assert_eq!(c.write_count("endpoints"), 1);

    let pods = names("web", 50);
    c.load(
        pods.iter()
            .enumerate()
            .map(|(i, n)| pod("default", n, "web", &ip(i), false))
            .collect(),
    );
    wait_until("50 not-ready addresses", LIMIT, || {
        counts(&c, "default", "web") == Some((0, 50))
    });
    c.set_ready("default", &pods, true);
    wait_until("50 ready addresses", LIMIT, || {
        counts(&c, "default", "web") == Some((50, 0))
    });
    c.set_ready("default", &pods[..10], false);
    wait_until("40 ready, 10 not", LIMIT, || {
        counts(&c, "default", "web") == Some((40, 10))
    });
    c.delete("pods", "default", &pods);
    wait_until("no addresses", LIMIT, || {
        counts(&c, "default", "web") == Some((0, 0))
    });
    d.wait_idle("endpoint", 5.0, LIMIT);
    let writes = c.writes("endpoints");
    let verbs: Vec<&str> = writes.iter().map(|w| w.verb.as_str()).collect();
    assert_eq!(
        verbs,
        ["create", "update", "update", "update", "update"],
        "one write per step, none redundant"
    );
    let ep = c.get("endpoints", "default", "web").expect("endpoints");
    assert!(
        ep.get("subsets").is_none() || ep["subsets"] == json!([]),
        "{ep}"
    );
    // kube-sim, as kube-apiserver 1.33+, warns with every answer about v1
    // Endpoints (the list, the watch, five writes): shown once.
    let log = d.log_text();
    let shown = log
        .lines()
        .filter(|l| l.contains("v1 Endpoints is deprecated in v1.33+"))
        .count();
    assert_eq!(shown, 1, "the server's warning shown once:\n{log}");
    assert_eq!(d.stop(), Some(0));
}

#[test]
fn restart_on_a_converged_cluster_writes_nothing_and_cleans_leftovers() {
    let c = Cluster::start("ep-restart");
    let mut items = vec![
        service("default", "a", "a", json!("http")),
        service("default", "b", "b", json!(8080)),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "manual", "namespace": "default"},
               "spec": {"ports": [{"port": 80}]}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext", "namespace": "default"},
               "spec": {"type": "ExternalName", "externalName": "example.com", "selector": {"app": "a"}}}),
        json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "manual", "namespace": "default"},
               "subsets": [{"addresses": [{"ip": "192.0.2.1"}], "ports": [{"port": 80}]}]}),
    ];
    items.extend((0..6).map(|i| {
        pod(
            "default",
            &format!("a-{i}"),
            if i % 2 == 0 { "a" } else { "b" },
            &ip(i),
            i != 3,
        )
    }));
    c.load(items);
    let fixture = c.write_count("endpoints");
    let d = Daemon::start(&c, "first", CFG);
    wait_until("a and b converged", LIMIT, || {
        counts(&c, "default", "a") == Some((3, 0)) && counts(&c, "default", "b") == Some((2, 1))
    });
    d.wait_idle("endpoint", 2.0, LIMIT);
    assert!(
        c.get("endpoints", "default", "ext").is_none(),
        "ExternalName untouched"
    );
    let manual = c
        .get("endpoints", "default", "manual")
        .expect("manual endpoints kept");
    assert_eq!(manual["subsets"][0]["addresses"][0]["ip"], "192.0.2.1");
    assert_eq!(d.stop(), Some(0));
    let before = c.write_count("endpoints");
    assert_eq!(before - fixture, 2, "{:?}", c.writes("endpoints"));

    // While endpointd is down, service b goes away: its Endpoints is a leftover.
    c.delete("services", "default", &["b".to_string()]);
    let d = Daemon::start(&c, "second", CFG);
    wait_until("leftover Endpoints of b deleted", LIMIT, || {
        c.get("endpoints", "default", "b").is_none()
    });
    d.wait_idle("endpoint", 2.0, LIMIT);
    let after: Vec<String> = c.writes("endpoints")[before..]
        .iter()
        .map(|w| format!("{} {}", w.verb, w.name))
        .collect();
    assert_eq!(after, ["delete b"], "only the leftover was written");
    assert!(
        c.get("endpoints", "default", "manual").is_some(),
        "selector-less Endpoints never deleted"
    );
    // Beyond upstream: the delete's own echo does not sync the Service
    // again into a second DELETE (a 404, which the write log omits).
    let deletes = || c.sim.requests().get(Verb::Delete, "endpoints");
    assert_eq!(deletes(), 1);
    // A Service deleted while endpointd runs: one DELETE too.
    c.delete("services", "default", &["a".to_string()]);
    wait_until("Endpoints of a deleted", LIMIT, || {
        c.get("endpoints", "default", "a").is_none()
    });
    d.wait_idle("endpoint", 4.0, LIMIT);
    assert_eq!(deletes(), 2);
    assert_eq!(d.stop(), Some(0));
}

#[test]
fn over_capacity_truncates_to_1000_and_is_not_rewritten() {
    let c = Cluster::start("ep-capacity");
    let mut items = vec![service("default", "big", "big", json!(8080))];
    items.extend((0..1200).map(|i| pod("default", &format!("big-{i:04}"), "big", &ip(i), true)));
    c.load(items);
    let d = Daemon::start(&c, "a", CFG);
    wait_until("1000 addresses", LIMIT, || {
        counts(&c, "default", "big") == Some((1000, 0))
    });
    let ep = c.get("endpoints", "default", "big").expect("endpoints");
    assert_eq!(
        ep["metadata"]["annotations"]["endpoints.kubernetes.io/over-capacity"],
        "truncated"
    );
    d.wait_idle("endpoint", 1.0, LIMIT);
    let before = c.write_count("endpoints");
    // Touch the Service (an annotation: not copied, not compared) to force a sync.
    c.modify("services", "default", &["big".to_string()], |v| {
        v["metadata"]["annotations"] = json!({"touched": "1"});
    });
    d.wait_idle("endpoint", 2.0, LIMIT);
    assert_eq!(
        c.write_count("endpoints"),
        before,
        "an unchanged truncated Endpoints is not rewritten"
    );
    assert_eq!(d.stop(), Some(0));
}

#[test]
fn readiness_flap_storm_ends_in_every_pods_last_state() {
    let c = Cluster::start("ep-flap");
    let pods = names("flap", 40);
    let mut items = vec![service("default", "flap", "flap", json!(8080))];
    items.extend(
        pods.iter()
            .enumerate()
            .map(|(i, n)| pod("default", n, "flap", &ip(i), true)),
    );
    c.load(items);
    // No batching: every flip is its own event.
    let d = Daemon::start(
        &c,
        "a",
        "[leader_election]\nenabled = false\n[endpointslices]\nenabled = false\n",
    );
    wait_until("40 ready", LIMIT, || {
        counts(&c, "default", "flap") == Some((40, 0))
    });
    c.flap_storm("default", &pods, 0);
    let want_ready = c.ready_ips("default");
    wait_until("the final readiness of every pod", LIMIT, || {
        c.get("endpoints", "default", "flap")
            .is_some_and(|ep| addresses(&ep).0 == want_ready)
    });
    d.wait_idle("endpoint", 1.0, LIMIT);
    let ep = c.get("endpoints", "default", "flap").expect("endpoints");
    let (ready, not_ready) = addresses(&ep);
    assert_eq!(ready, want_ready);
    assert_eq!(ready.len() + not_ready.len(), 40);
    assert_eq!(d.stop(), Some(0));
}

/// The Endpoints watch stalls (a lossy link stops that one stream; new
/// requests and the other watches work) right before endpointd creates a
/// Service's Endpoints, and a pod of that Service changes: the cache lacks
/// our create for longer than the 10 s stale bound. endpointd used to give
/// up on time and POST again, into a 409 and a `FailedToCreateEndpoint`
/// warning on every retry; it now waits for the cache and converges with
/// one update once the stream is back.
#[test]
fn a_stalled_endpoints_watch_never_gets_a_created_endpoints_posted_again() {
    let c = Cluster::start("ep-stalled-watch");
    c.load(vec![
        service("default", "a", "a", json!("http")),
        pod("default", "a-0", "a", &ip(1), true),
    ]);
    let d = Daemon::start(&c, "d", CFG);
    wait_until("a's Endpoints", LIMIT, || {
        c.get("endpoints", "default", "a").is_some()
    });
    c.stall_watches_of("endpoints", LIMIT);
    c.load(vec![
        service("default", "b", "b", json!("http")),
        pod("default", "b-0", "b", &ip(2), true),
    ]);
    wait_until("b's Endpoints created", LIMIT, || {
        c.get("endpoints", "default", "b").is_some()
    });
    c.set_ready("default", &["b-0".to_string()], false);
    // Longer than STALE_GIVE_UP (10 s), shorter than the stuck-sync bound
    // (30 s) after which every informer lists again.
    std::thread::sleep(Duration::from_secs(13));
    let creates_of_b = || {
        c.writes("endpoints")
            .iter()
            .filter(|w| w.verb == "create" && w.name == "b")
            .count()
    };
    let warnings = || {
        c.all("events")
            .iter()
            .filter(|e| e["reason"] == "FailedToCreateEndpoint")
            .count()
    };
    assert_eq!(
        (creates_of_b(), warnings()),
        (1, 0),
        "no POST again while the cache lacks our create"
    );
    c.sim.faults().stall_watches(false);
    wait_until("b-0 not ready in b's Endpoints", LIMIT, || {
        c.get("endpoints", "default", "b")
            .is_some_and(|ep| addresses(&ep) == (BTreeSet::new(), BTreeSet::from([ip(2)])))
    });
    assert_eq!((creates_of_b(), warnings()), (1, 0));
    assert_eq!(d.stop(), Some(0));
}

/// A Service with an empty selector (`{}`) is a Service without one, as
/// the API defines it ("if empty or not present … Kubernetes will not
/// modify" its endpoints; kube-apiserver stores `{}` as none): its
/// hand-made Endpoints are left alone and no slice is made for it, though
/// pods run in its namespace. (kube-sim drops `{}` on create as the API
/// server does; the test stores it afterwards, so that endpointd's own
/// reading of a `{}` it is served is what is tested.)
#[test]
fn an_empty_selector_is_no_selector() {
    let c = Cluster::start("ep-empty-selector");
    let mut db = service("default", "db", "db", json!(5432));
    db["spec"]["selector"] = json!({});
    let manual = json!({"apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "db", "namespace": "default"},
        "subsets": [{"addresses": [{"ip": "192.0.2.10"}], "ports": [{"port": 5432, "protocol": "TCP"}]}]});
    c.load(vec![
        node("node-a", "z1"),
        db,
        manual.clone(),
        pod("default", "other", "other", "10.0.9.1", true),
        service("default", "web", "web", json!(8080)),
        pod("default", "w1", "web", "10.0.9.2", true),
    ]);
    assert!(c.get("services", "default", "db").expect("db")["spec"]["selector"].is_null());
    c.modify("services", "default", &["db".to_string()], |s| {
        s["spec"]["selector"] = json!({})
    });
    let d = Daemon::start(&c, "a", "[leader_election]\nenabled = false\n");
    let slices_of = |svc: &str| {
        c.all("endpointslices")
            .iter()
            .filter(|s| s["metadata"]["labels"]["kubernetes.io/service-name"] == svc)
            .count()
    };
    wait_until("web served", LIMIT, || {
        counts(&c, "default", "web") == Some((1, 0)) && slices_of("web") == 1
    });
    d.wait_idle("endpoint", 1.0, LIMIT);
    d.wait_idle("endpoint_slice", 1.0, LIMIT);
    let ep = c.get("endpoints", "default", "db").expect("db's Endpoints");
    assert_eq!(ep["subsets"], manual["subsets"], "hand-made subsets kept");
    assert!(ep["metadata"]["labels"].is_null(), "no managed-by label");
    let ours = c
        .writes("endpoints")
        .iter()
        .filter(|w| w.name == "db" && w.user_agent.starts_with("endpointd"))
        .count();
    assert_eq!(ours, 0, "endpointd wrote db's Endpoints");
    assert_eq!(slices_of("db"), 0, "a slice for db");
    assert_eq!(d.stop(), Some(0));
}
