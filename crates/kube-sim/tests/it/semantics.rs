//! kube-sim semantics through `sim::rest::handle`: CRUD, resourceVersions,
//! error Status bodies, generation rules, lists and pagination.

use crate::harness::semantics as sim_semantics_support;

use kube_sim::requestinfo::Verb;
use serde_json::{json, Value};
use sim_semantics_support::*;

fn rv(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

#[test]
fn create_get_list_and_rv_monotonic() {
    let sim = Sim::new();
    let start = sim.store.current_rv();
    assert_eq!(start, 4, "four default namespaces, one write each");
    let mut last = start;
    for i in 0..5 {
        let r = sim.create(PODS, NS, pod(&format!("p{i}")));
        assert_eq!(r.status, 201, "{}", r.body);
        assert_eq!(r.body["kind"], "Pod");
        assert_eq!(r.body["apiVersion"], "v1");
        assert_eq!(r.body["metadata"]["namespace"], "default");
        assert_eq!(r.body["metadata"]["generation"], 1);
        assert_eq!(r.body["metadata"]["uid"].as_str().map(str::len), Some(36));
        let ts = r.body["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap_or("");
        assert!(ts.ends_with('Z') && ts.len() == 20, "{ts}");
        assert_eq!(rv(&r.body), last + 1);
        last = rv(&r.body);
    }
    assert_eq!(sim.store.current_rv(), last);
    let g = sim.get(PODS, NS, "p3");
    assert_eq!(g.status, 200);
    assert_eq!(g.body["metadata"]["name"], "p3");
    let l = sim.list(PODS, NS, &[]);
    assert_eq!(l.body["kind"], "PodList");
    assert_eq!(l.body["apiVersion"], "v1");
    assert_eq!(l.body["metadata"]["resourceVersion"], last.to_string());
    let items = l.body["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 5);
    assert!(
        items[0].get("kind").is_none(),
        "list items carry no kind, like the real server"
    );
    let all = sim.list(PODS, None, &[]);
    assert_eq!(all.body["items"].as_array().map(Vec::len), Some(5));
    let log = sim.store.write_log();
    assert_eq!(log.len() as u64, last);
    assert_eq!(
        log.last().map(|w| (w.verb.as_str(), w.name.as_str())),
        Some(("create", "p4"))
    );
    let ns = sim.list("namespaces", None, &[]);
    let names: Vec<&str> = ns.body["items"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|n| n["metadata"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        names,
        ["default", "kube-node-lease", "kube-public", "kube-system"]
    );
    assert_eq!(ns.body["items"][0]["status"]["phase"], "Active");
}

#[test]
fn error_bodies_match_the_real_server() {
    let sim = Sim::new();
    assert_eq!(sim.create(PODS, NS, pod("a")).status, 201);
    let dup = sim.create(PODS, NS, pod("a"));
    assert_eq!(dup.status, 409);
    assert_eq!(dup.body["kind"], "Status");
    assert_eq!(dup.body["status"], "Failure");
    assert_eq!(dup.body["reason"], "AlreadyExists");
    assert_eq!(dup.body["message"], "pods \"a\" already exists");
    assert_eq!(dup.body["details"], json!({"name": "a", "kind": "pods"}));
    let nf = sim.get(SLICES, NS, "nope");
    assert_eq!(nf.status, 404);
    assert_eq!(
        nf.body["message"],
        "endpointslices.discovery.k8s.io \"nope\" not found"
    );
    assert_eq!(
        nf.body["details"],
        json!({"name": "nope", "group": "discovery.k8s.io", "kind": "endpointslices"})
    );
    let no_ns = sim.create(PODS, Some("missing"), pod("a"));
    assert_eq!(no_ns.status, 404);
    assert_eq!(no_ns.body["message"], "namespaces \"missing\" not found");
    let mut stale = sim.get(PODS, NS, "a").body;
    stale["metadata"]["resourceVersion"] = json!("1");
    let c = sim.update(PODS, NS, "a", stale);
    assert_eq!(c.status, 409);
    assert_eq!(c.body["reason"], "Conflict");
    assert_eq!(c.body["message"], "Operation cannot be fulfilled on pods \"a\": the object has been modified; please apply your changes to the latest version and try again");
    let mut s = slice("s", &["10.0.0.1"]);
    assert_eq!(sim.create(SLICES, NS, s.clone()).status, 201);
    s["metadata"]["resourceVersion"] = json!("2");
    let c = sim.update(SLICES, NS, "s", s);
    assert_eq!(c.body["message"], "Operation cannot be fulfilled on endpointslices.discovery.k8s.io \"s\": the object has been modified; please apply your changes to the latest version and try again");
    let wrong = sim.raw(Verb::Get, "apps/deployments", NS, Some("x"), &[], "", "");
    assert_eq!(wrong.status, 404);
}

#[test]
fn update_semantics() {
    let sim = Sim::new();
    let created = sim.create(PODS, NS, pod("a")).body;
    // Unconditional update (no resourceVersion) is allowed.
    let mut u = pod("a");
    u["metadata"]["labels"] = json!({"app": "db"});
    u["status"] = json!({"phase": "Running"});
    let r = sim.update(PODS, NS, "a", u);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["labels"]["app"], "db");
    assert_eq!(r.body["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(
        r.body["metadata"]["creationTimestamp"],
        created["metadata"]["creationTimestamp"]
    );
    assert!(
        r.body.get("status").is_none() || r.body["status"] != json!({"phase": "Running"}),
        "main resource PUT ignores status"
    );
    // /status changes only status.
    let mut st = r.body.clone();
    st["status"] = json!({"phase": "Running", "podIP": "10.0.0.9"});
    st["metadata"]["labels"] = json!({"app": "ignored"});
    let s = sim.update("pods:status", NS, "a", st);
    assert_eq!(s.status, 200, "{}", s.body);
    assert_eq!(s.body["status"]["podIP"], "10.0.0.9");
    assert_eq!(s.body["metadata"]["labels"]["app"], "db");
    // A no-op update writes nothing.
    let before = sim.store.current_rv();
    let same = sim.update(PODS, NS, "a", s.body.clone());
    assert_eq!(same.status, 200);
    assert_eq!(sim.store.current_rv(), before);
    // Update of a missing pod: 404; of a missing lease: created.
    assert_eq!(sim.update(PODS, NS, "zz", pod("zz")).status, 404);
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}});
    assert_eq!(
        sim.update(
            "coordination.k8s.io/leases",
            Some("kube-system"),
            "l",
            lease
        )
        .status,
        201
    );
    // Name mismatch.
    assert_eq!(sim.update(PODS, NS, "other", pod("a")).status, 400);
}

#[test]
fn generation_rules() {
    let sim = Sim::new();
    let s = sim.create(SLICES, NS, slice("s", &["10.0.0.1"])).body;
    assert_eq!(s["metadata"]["generation"], 1);
    let mut a = s.clone();
    a["metadata"]["annotations"] = json!({"x": "y"});
    let a = sim.update(SLICES, NS, "s", a).body;
    assert_eq!(
        a["metadata"]["generation"], 1,
        "annotations alone keep the generation"
    );
    let mut l = a.clone();
    l["metadata"]["labels"]["extra"] = json!("1");
    let l = sim.update(SLICES, NS, "s", l).body;
    assert_eq!(l["metadata"]["generation"], 2, "labels bump it");
    let mut e = l.clone();
    e["endpoints"][0]["addresses"] = json!(["10.0.0.2"]);
    let e = sim.update(SLICES, NS, "s", e).body;
    assert_eq!(e["metadata"]["generation"], 3, "endpoints bump it");
    let mut forged = e.clone();
    forged["metadata"]["generation"] = json!(99);
    let f = sim.update(SLICES, NS, "s", forged).body;
    assert_eq!(f["metadata"]["generation"], 3, "clients cannot set it");
    let ep = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "e"}});
    let ep = sim.create("endpoints", NS, ep).body;
    assert!(ep["metadata"].get("generation").is_none());
}

#[test]
fn generate_name() {
    let sim = Sim::new();
    let body =
        json!({"metadata": {"generateName": "svc-"}, "addressType": "IPv4", "endpoints": []});
    let a = sim.create(SLICES, NS, body.clone()).body;
    let b = sim.create(SLICES, NS, body).body;
    let (an, bn) = (
        a["metadata"]["name"].as_str().unwrap_or(""),
        b["metadata"]["name"].as_str().unwrap_or(""),
    );
    assert!(an.starts_with("svc-") && an.len() == 9, "{an}");
    assert_ne!(an, bn);
    let none = sim.create(SLICES, NS, json!({"metadata": {}, "addressType": "IPv4"}));
    assert_eq!(none.status, 422);
    assert_eq!(none.body["details"]["causes"][0]["field"], "metadata.name");
}

#[test]
fn defaulting_before_validation() {
    let sim = Sim::new();
    let svc = sim.create("services", NS, json!({"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}));
    assert_eq!(svc.status, 201, "{}", svc.body);
    let spec = &svc.body["spec"];
    assert_eq!(
        spec["ports"][0]["targetPort"], 80,
        "targetPort defaults to port"
    );
    assert_eq!(spec["ports"][0]["protocol"], "TCP");
    assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
    let ip = spec["clusterIP"].as_str().unwrap_or("");
    assert!(ip.starts_with("10.9"), "{ip}");
    let other = sim.create(
        "services",
        NS,
        json!({"metadata": {"name": "web2"}, "spec": {"ports": [{"port": 81}]}}),
    );
    assert_ne!(
        other.body["spec"]["clusterIP"], spec["clusterIP"],
        "distinct ClusterIPs"
    );
    let mut upd = svc.body.clone();
    upd["spec"].as_object_mut().map(|m| m.remove("clusterIP"));
    let upd = sim.update("services", NS, "web", upd);
    assert_eq!(
        upd.body["spec"]["clusterIP"], spec["clusterIP"],
        "kept across an update"
    );
    let ep = json!({"metadata": {"name": "web"}, "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 8080}]}]});
    let ep = sim.create("endpoints", NS, ep);
    assert_eq!(ep.status, 201, "{}", ep.body);
    assert_eq!(ep.body["subsets"][0]["ports"][0]["protocol"], "TCP");
    let mut with_rv = pod("rv");
    with_rv["metadata"]["resourceVersion"] = json!("7");
    let r = sim.create(PODS, NS, with_rv);
    assert_eq!(r.status, 400);
    assert_eq!(
        r.body["message"],
        "resourceVersion should not be set on objects to be created"
    );
}

#[test]
fn load_list_keeps_identity_and_applies_defaults() {
    let sim = Sim::new();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": "web-1", "namespace": "shop",
                      "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "web", "uid": "11111111-2222-4333-8444-555555555555"}]},
         "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]},
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "web", "namespace": "shop", "uid": "11111111-2222-4333-8444-555555555555"},
         "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "shop", "labels": {"app": "web"}},
         "spec": {"containers": [{"name": "c", "image": "i"}]}, "status": {"phase": "Running", "podIP": "10.0.0.1"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
    ]});
    assert_eq!(sim.store.load_list(&list).ok(), Some(4));
    let svc = sim.get("services", Some("shop"), "web").body;
    assert_eq!(
        svc["metadata"]["uid"],
        "11111111-2222-4333-8444-555555555555"
    );
    assert!(svc["spec"]["clusterIP"].is_string());
    assert_eq!(
        sim.get(PODS, Some("shop"), "p").body["status"]["podIP"],
        "10.0.0.1"
    );
    assert_eq!(
        sim.get(SLICES, Some("shop"), "web-1").body["ports"][0]["protocol"],
        "TCP"
    );
    // The owner resolves: deleting the Service collects the slice.
    sim.delete("services", Some("shop"), "web", json!(null));
    sim.eventually("slice collected", || {
        sim.get(SLICES, Some("shop"), "web-1").status == 404
    });
    let bad = json!({"items": [{"apiVersion": "v1", "kind": "Gadget", "metadata": {"name": "g"}}]});
    assert!(sim
        .store
        .load_list(&bad)
        .is_err_and(|e| e.to_string().contains("Gadget")));
    let invalid = json!({"items": [{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "x"}, "addressType": "IPv7"}]});
    assert!(sim
        .store
        .load_list(&invalid)
        .is_err_and(|e| e.to_string().contains("addressType")));
    // A created pod without status starts Pending; a foreign uid on update conflicts.
    let p = sim
        .create(PODS, NS, json!({"metadata": {"name": "q"}, "spec": {}}))
        .body;
    assert_eq!(p["status"]["phase"], "Pending");
    let mut forged = p.clone();
    forged["metadata"]["uid"] = json!("someone-else");
    assert_eq!(sim.update(PODS, NS, "q", forged).status, 409);
}

#[test]
fn dry_run_changes_nothing() {
    let sim = Sim::new();
    let before = sim.store.current_rv();
    let dry = [("dryRun", "All")];
    let r = sim.call(Verb::Create, PODS, NS, None, &dry, &pod("d"));
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["name"], "d");
    assert_eq!(sim.get(PODS, NS, "d").status, 404);
    assert_eq!(sim.store.current_rv(), before);
    sim.create(PODS, NS, pod("d"));
    let rv = sim.store.current_rv();
    let mut u = sim.get(PODS, NS, "d").body;
    u["metadata"]["labels"]["x"] = json!("1");
    let r = sim.call(Verb::Update, PODS, NS, Some("d"), &dry, &u);
    assert_eq!(
        (r.status, r.body["metadata"]["labels"]["x"].clone()),
        (200, json!("1"))
    );
    let r = sim.call(Verb::Delete, PODS, NS, Some("d"), &dry, &Value::Null);
    assert_eq!(r.status, 200);
    assert_eq!(sim.store.current_rv(), rv, "no write happened");
    assert!(sim.get(PODS, NS, "d").body["metadata"]["labels"]
        .get("x")
        .is_none());
    let bad = sim.call(
        Verb::Create,
        PODS,
        NS,
        None,
        &[("dryRun", "Some")],
        &pod("e"),
    );
    assert_eq!(bad.status, 400);
}

#[test]
fn status_subresource_verbs() {
    let sim = Sim::new();
    sim.create(PODS, NS, pod("s"));
    assert_eq!(sim.get("pods:status", NS, "s").status, 200);
    assert_eq!(sim.delete("pods:status", NS, "s", json!(null)).status, 405);
    assert_eq!(sim.get(PODS, NS, "s").status, 200, "still there");
    assert_eq!(
        sim.get("discovery.k8s.io/endpointslices:status", NS, "s")
            .status,
        404,
        "no status subresource"
    );
}

#[test]
fn events_are_one_storage_with_two_api_views() {
    let sim = Sim::new();
    const NEW: &str = "events.k8s.io/events";
    let w = sim.watch(
        NEW,
        NS,
        &[("resourceVersion", &sim.store.current_rv().to_string())],
    );
    let new_style = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "svc.1"}, "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "endpointd", "reportingInstance": "endpointd-a", "action": "Sync",
        "reason": "FailedToUpdateEndpointSlices", "type": "Warning", "note": "boom",
        "regarding": {"kind": "Service", "namespace": "default", "name": "svc"}});
    let r = sim.create(NEW, NS, new_style);
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["apiVersion"], "events.k8s.io/v1");
    assert_eq!(r.body["note"], "boom");
    let core = sim.get("events", NS, "svc.1");
    assert_eq!(core.status, 200);
    assert_eq!(core.body["apiVersion"], "v1");
    assert_eq!(core.body["message"], "boom");
    assert_eq!(core.body["involvedObject"]["name"], "svc");
    assert_eq!(core.body["reportingComponent"], "endpointd");
    let legacy = json!({"metadata": {"name": "svc.2"}, "involvedObject": {"kind": "Service", "namespace": "default", "name": "svc"},
        "reason": "Created", "message": "made it", "type": "Normal", "count": 1});
    assert_eq!(sim.create("events", NS, legacy).status, 201);
    let listed = sim.list(NEW, NS, &[]);
    assert_eq!(listed.body["kind"], "EventList");
    assert_eq!(listed.body["apiVersion"], "events.k8s.io/v1");
    let notes: Vec<&str> = listed.body["items"]
        .as_array()
        .map(|a| a.iter().filter_map(|e| e["note"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(notes, ["boom", "made it"]);
    assert_eq!(listed.body["items"][1]["deprecatedCount"], 1);
    let (t, o) = w.next().expect("first event");
    assert_eq!(
        (t.as_str(), o["apiVersion"].as_str(), o["note"].as_str()),
        ("ADDED", Some("events.k8s.io/v1"), Some("boom"))
    );
    let (_, o) = w.next().expect("second event, created through core/v1");
    assert_eq!(o["regarding"]["name"], "svc");
    let nf = sim.get(NEW, NS, "missing");
    assert_eq!(
        nf.body["message"],
        "events.events.k8s.io \"missing\" not found"
    );
    let p = sim.patch(
        NEW,
        NS,
        "svc.2",
        "application/merge-patch+json",
        json!({"note": "patched"}),
    );
    assert_eq!(p.status, 200, "{}", p.body);
    assert_eq!(sim.get("events", NS, "svc.2").body["message"], "patched");
}
