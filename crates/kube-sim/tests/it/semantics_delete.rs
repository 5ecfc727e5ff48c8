//! kube-sim deletion semantics through `sim::rest::handle`: preconditions,
//! finalizers, namespace termination, ownerReference garbage collection,
//! deletecollection, patches end to end.

use crate::harness::semantics as sim_semantics_support;

use kube_sim::requestinfo::Verb;
use serde_json::{json, Value};
use sim_semantics_support::*;

#[test]
fn delete_preconditions_and_response_shapes() {
    let sim = Sim::new();
    let p = sim.create(PODS, NS, pod("a")).body;
    let bad_uid = sim.delete(PODS, NS, "a", json!({"preconditions": {"uid": "nope"}}));
    assert_eq!(bad_uid.status, 409);
    assert_eq!(
        bad_uid.body["message"],
        format!("Operation cannot be fulfilled on pods \"a\": Precondition failed: UID in precondition: nope, UID in object meta: {}", p["metadata"]["uid"].as_str().unwrap_or(""))
    );
    let bad_rv = sim.delete(
        PODS,
        NS,
        "a",
        json!({"preconditions": {"resourceVersion": "1"}}),
    );
    assert_eq!(bad_rv.status, 409);
    let ok = sim.delete(PODS, NS, "a", json!({"preconditions": {"uid": p["metadata"]["uid"], "resourceVersion": p["metadata"]["resourceVersion"]}}));
    assert_eq!(ok.status, 200);
    assert_eq!(ok.body["kind"], "Pod", "pods return the deleted object");
    assert_eq!(sim.get(PODS, NS, "a").status, 404);
    assert_eq!(sim.delete(PODS, NS, "a", json!(null)).status, 404);
    sim.create(SLICES, NS, slice("s", &["10.0.0.1"]));
    let s = sim.delete(SLICES, NS, "s", json!(null));
    assert_eq!(s.status, 200);
    assert_eq!(s.body["kind"], "Status");
    assert_eq!(s.body["status"], "Success");
    assert_eq!(s.body["details"]["name"], "s");
    assert_eq!(s.body["details"]["group"], "discovery.k8s.io");
}

#[test]
fn finalizers_keep_the_object_until_removed() {
    let sim = Sim::new();
    let mut p = pod("f");
    p["metadata"]["finalizers"] = json!(["example.com/hold"]);
    sim.create(PODS, NS, p);
    let w = sim.watch(
        PODS,
        NS,
        &[("resourceVersion", &sim.store.current_rv().to_string())],
    );
    let d = sim.delete(PODS, NS, "f", json!(null));
    assert_eq!(d.status, 200);
    assert!(
        d.body["metadata"]["deletionTimestamp"].is_string(),
        "{}",
        d.body
    );
    assert_eq!(d.body["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(w.next_name(), Some(("MODIFIED".into(), "f".into())));
    let kept = sim.get(PODS, NS, "f");
    assert_eq!(kept.status, 200);
    let again = sim.delete(PODS, NS, "f", json!(null));
    assert_eq!(
        again.status, 200,
        "deleting again is accepted and changes nothing"
    );
    let mut more = sim.get(PODS, NS, "f").body;
    more["metadata"]["finalizers"] = json!(["example.com/hold", "example.com/new"]);
    let r = sim.update(PODS, NS, "f", more);
    assert_eq!(r.status, 422, "no new finalizers while deleting");
    assert_eq!(
        r.body["details"]["causes"][0]["field"],
        "metadata.finalizers"
    );
    let mut unfin = kept.body.clone();
    unfin["metadata"]["finalizers"] = json!([]);
    let r = sim.update(PODS, NS, "f", unfin);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(sim.get(PODS, NS, "f").status, 404);
    assert_eq!(w.next_name(), Some(("MODIFIED".into(), "f".into())));
    assert_eq!(w.next_name(), Some(("DELETED".into(), "f".into())));
    // Finalizer removal through a JSON patch works too.
    let mut p = pod("g");
    p["metadata"]["finalizers"] = json!(["a/b"]);
    sim.create(PODS, NS, p);
    sim.delete(PODS, NS, "g", json!(null));
    let r = sim.patch(
        PODS,
        NS,
        "g",
        "application/json-patch+json",
        json!([{"op": "remove", "path": "/metadata/finalizers"}]),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(sim.get(PODS, NS, "g").status, 404);
}

#[test]
fn namespace_termination() {
    let sim = Sim::new();
    sim.create("namespaces", None, json!({"metadata": {"name": "t"}}));
    sim.create(PODS, Some("t"), pod("a"));
    let mut held = slice("held", &["10.0.0.1"]);
    held["metadata"]["finalizers"] = json!(["x/y"]);
    sim.create(SLICES, Some("t"), held);
    let d = sim.delete("namespaces", None, "t", json!(null));
    assert_eq!(d.status, 200);
    assert_eq!(d.body["status"]["phase"], "Terminating");
    let f = sim.create(PODS, Some("t"), pod("b"));
    assert_eq!(f.status, 403);
    assert_eq!(f.body["reason"], "Forbidden");
    assert_eq!(f.body["message"], "pods \"b\" is forbidden: unable to create new content in namespace t because it is being terminated");
    assert_eq!(
        f.body["details"]["causes"][0]["reason"],
        "NamespaceTerminating"
    );
    sim.eventually("pod deleted", || {
        sim.get(PODS, Some("t"), "a").status == 404
    });
    sim.eventually("slice marked", || {
        sim.get(SLICES, Some("t"), "held").body["metadata"]["deletionTimestamp"].is_string()
    });
    assert_eq!(
        sim.get("namespaces", None, "t").status,
        200,
        "held by the finalized slice"
    );
    let mut s = sim.get(SLICES, Some("t"), "held").body;
    s["metadata"]["finalizers"] = json!([]);
    assert_eq!(sim.update(SLICES, Some("t"), "held", s).status, 200);
    sim.eventually("namespace gone", || {
        sim.get("namespaces", None, "t").status == 404
    });
    assert_eq!(
        sim.delete("namespaces", None, "default", json!(null))
            .status,
        200
    );
    let again = sim.delete("namespaces", None, "default", json!(null));
    assert!(again.status == 409 || again.status == 404, "{}", again.body);
}

/// A Service `name` with one port, as created.
fn service(sim: &Sim, name: &str) -> Value {
    sim.create(
        "services",
        NS,
        json!({"metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}}),
    )
    .body
}

fn owned_slice(name: &str, owner: &Value) -> Value {
    let mut s = slice(name, &["10.0.0.1"]);
    s["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Service", "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true}]);
    s
}

#[test]
fn garbage_collection_of_owned_slices() {
    let sim = Sim::new();
    let svc = service(&sim, "svc");
    let keep = service(&sim, "keep");
    sim.create(SLICES, NS, owned_slice("svc-1", &svc));
    sim.create(SLICES, NS, owned_slice("svc-2", &svc));
    sim.create(SLICES, NS, owned_slice("keep-1", &keep));
    let mut two = owned_slice("both", &svc);
    let keep_ref = json!({"apiVersion": "v1", "kind": "Service", "name": "keep",
                          "uid": keep["metadata"]["uid"]});
    if let Some(a) = two["metadata"]["ownerReferences"].as_array_mut() {
        a.push(keep_ref);
    }
    sim.create(SLICES, NS, two);
    assert_eq!(sim.delete("services", NS, "svc", json!(null)).status, 200);
    sim.eventually("owned slices collected", || {
        sim.get(SLICES, NS, "svc-1").status == 404 && sim.get(SLICES, NS, "svc-2").status == 404
    });
    assert_eq!(sim.get(SLICES, NS, "keep-1").status, 200);
    sim.eventually("dangling reference dropped", || {
        sim.get(SLICES, NS, "both").body["metadata"]["ownerReferences"]
            .as_array()
            .map(Vec::len)
            == Some(1)
    });
    // Orphan propagation keeps dependents and strips the reference.
    sim.create(SLICES, NS, owned_slice("keep-2", &keep));
    let r = sim.call(
        Verb::Delete,
        "services",
        NS,
        Some("keep"),
        &[("propagationPolicy", "Orphan")],
        &Value::Null,
    );
    assert_eq!(r.status, 200);
    let k2 = sim.get(SLICES, NS, "keep-2");
    assert_eq!(k2.status, 200);
    assert!(
        k2.body["metadata"].get("ownerReferences").is_none(),
        "{}",
        k2.body
    );
}

/// A dependent created after its owner was deleted (a controller that read
/// a stale cache) is collected, as kube-controller-manager's collector
/// deletes an object whose owners are all absent; an absent owner among
/// live ones is only dropped from the references.
#[test]
fn a_dependent_created_after_its_owner_is_gone_is_collected() {
    let sim = Sim::new();
    let gone = service(&sim, "gone");
    let keep = service(&sim, "keep");
    sim.create(SLICES, NS, owned_slice("early", &gone));
    assert_eq!(sim.delete("services", NS, "gone", json!(null)).status, 200);
    // The collector has handled the owner's deletion before the late
    // dependents are created.
    sim.eventually("the early dependent collected", || {
        sim.get(SLICES, NS, "early").status == 404
    });
    assert_eq!(
        sim.create(SLICES, NS, owned_slice("late", &gone)).status,
        201
    );
    let mut both = owned_slice("late-both", &gone);
    if let Some(a) = both["metadata"]["ownerReferences"].as_array_mut() {
        a.push(
            json!({"apiVersion": "v1", "kind": "Service", "name": "keep",
                      "uid": keep["metadata"]["uid"]}),
        );
    }
    assert_eq!(sim.create(SLICES, NS, both).status, 201);
    sim.eventually("the orphan collected", || {
        sim.get(SLICES, NS, "late").status == 404
    });
    sim.eventually("the absent owner's reference dropped", || {
        sim.get(SLICES, NS, "late-both").body["metadata"]["ownerReferences"]
            .as_array()
            .map(Vec::len)
            == Some(1)
    });
}

#[test]
fn delete_collection_by_selector() {
    let sim = Sim::new();
    for i in 0..4 {
        let mut p = pod(&format!("p{i}"));
        p["metadata"]["labels"]["i"] = json!(if i % 2 == 0 { "even" } else { "odd" });
        sim.create(PODS, NS, p);
    }
    let r = sim.call(
        Verb::DeleteCollection,
        PODS,
        NS,
        None,
        &[("labelSelector", "i=even")],
        &Value::Null,
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.body["kind"], "PodList");
    assert_eq!(r.body["items"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        sim.list(PODS, NS, &[]).body["items"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

#[test]
fn patches_end_to_end() {
    let sim = Sim::new();
    sim.create(PODS, NS, pod("a"));
    let r = sim.patch(
        PODS,
        NS,
        "a",
        "application/strategic-merge-patch+json",
        json!({"metadata": {"labels": {"tier": "fe"}}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["metadata"]["labels"],
        json!({"app": "web", "tier": "fe"})
    );
    let r = sim.patch(
        PODS,
        NS,
        "a",
        "application/merge-patch+json",
        json!({"metadata": {"annotations": {"k": "v"}, "labels": {"app": null}}}),
    );
    assert_eq!(r.body["metadata"]["labels"], json!({"tier": "fe"}));
    assert_eq!(r.body["metadata"]["annotations"]["k"], "v");
    let r = sim.patch("pods:status", NS, "a", "application/strategic-merge-patch+json", json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}, "metadata": {"labels": {"x": "ignored"}}}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["status"]["conditions"][0]["type"], "Ready");
    assert!(r.body["metadata"]["labels"].get("x").is_none());
    let stale = sim.patch(
        PODS,
        NS,
        "a",
        "application/merge-patch+json",
        json!({"metadata": {"resourceVersion": "1", "labels": {"y": "1"}}}),
    );
    assert_eq!(stale.status, 409);
    assert_eq!(
        sim.patch(PODS, NS, "zz", "application/merge-patch+json", json!({}))
            .status,
        404
    );
    assert_eq!(
        sim.patch(PODS, NS, "a", "application/apply-patch+yaml", json!({}))
            .status,
        415
    );
    let bad = sim.patch(SLICES, NS, "a", "application/merge-patch+json", json!({}));
    assert_eq!(bad.status, 404);
}

#[test]
fn foreground_deletion_waits_for_dependents() {
    let sim = Sim::new();
    let svc = sim
        .create(
            "services",
            NS,
            json!({"metadata": {"name": "fg"}, "spec": {"ports": [{"port": 80}]}}),
        )
        .body;
    let mut held = owned_slice("fg-1", &svc);
    held["metadata"]["finalizers"] = json!(["x/hold"]);
    sim.create(SLICES, NS, held);
    sim.create(SLICES, NS, owned_slice("fg-2", &svc));
    let r = sim.call(
        Verb::Delete,
        "services",
        NS,
        Some("fg"),
        &[],
        &json!({"propagationPolicy": "Foreground"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(
        r.body["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    sim.eventually("plain dependent gone", || {
        sim.get(SLICES, NS, "fg-2").status == 404
    });
    assert_eq!(
        sim.get("services", NS, "fg").status,
        200,
        "held by the finalized dependent"
    );
    let mut h = sim.get(SLICES, NS, "fg-1").body;
    assert!(h["metadata"]["deletionTimestamp"].is_string());
    h["metadata"]["finalizers"] = json!([]);
    assert_eq!(sim.update(SLICES, NS, "fg-1", h).status, 200);
    sim.eventually("owner gone after its dependents", || {
        sim.get("services", NS, "fg").status == 404
    });
}
