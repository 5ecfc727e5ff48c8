//! kube-sim LIST semantics: selectors, pagination over a consistent
//! snapshot (exactly once despite concurrent writes), expired continue
//! tokens, resourceVersion / resourceVersionMatch rules, validation bodies.

use crate::harness::semantics as sim_semantics_support;

use kube_sim::store::StoreConfig;
use serde_json::{json, Value};
use sim_semantics_support::*;
use std::collections::BTreeSet;

fn names(v: &Value) -> Vec<String> {
    v["items"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn selectors_on_lists() {
    let sim = Sim::new();
    for (name, app, node, phase) in [
        ("a", "web", "n1", "Running"),
        ("b", "web", "n2", "Pending"),
        ("c", "db", "n1", "Running"),
    ] {
        let mut p = pod(name);
        p["metadata"]["labels"]["app"] = json!(app);
        p["spec"]["nodeName"] = json!(node);
        p["status"] = json!({"phase": phase});
        assert_eq!(sim.create(PODS, NS, p).status, 201);
    }
    let cases: &[(&str, &str, &[&str])] = &[
        ("app=web", "", &["a", "b"]),
        ("app!=web", "", &["c"]),
        ("app in (db,web)", "spec.nodeName=n1", &["a", "c"]),
        ("", "status.phase=Running", &["a", "c"]),
        ("", "metadata.name=b", &["b"]),
        ("!app", "", &[]),
        ("app notin (web)", "spec.nodeName!=n2", &["c"]),
    ];
    for (ls, fs, want) in cases {
        let l = sim.list(PODS, NS, &[("labelSelector", ls), ("fieldSelector", fs)]);
        assert_eq!(names(&l.body), *want, "{ls} / {fs}");
    }
    let bad = sim.list(PODS, NS, &[("fieldSelector", "spec.bogus=1")]);
    assert_eq!(bad.status, 400);
    assert_eq!(bad.body["message"], "field label not supported: spec.bogus");
    assert_eq!(
        sim.list(PODS, NS, &[("labelSelector", "a in b")]).status,
        400
    );
}

#[test]
fn pagination_is_a_consistent_snapshot_exactly_once() {
    let sim = Sim::new();
    for i in 0..100 {
        sim.create(PODS, NS, pod(&format!("p{i:03}")));
    }
    let snapshot: BTreeSet<String> = names(&sim.list(PODS, NS, &[]).body).into_iter().collect();
    let first = sim.list(PODS, NS, &[("limit", "7")]);
    let list_rv = first.body["metadata"]["resourceVersion"].clone();
    assert_eq!(first.body["metadata"]["remainingItemCount"], 93);
    let mut seen = names(&first.body);
    let mut token = first.body["metadata"]["continue"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let mut round = 0;
    while !token.is_empty() {
        // Concurrent churn between pages must not show up.
        sim.delete(PODS, NS, &format!("p{:03}", 99 - round), json!(null));
        sim.create(PODS, NS, pod(&format!("new{round}")));
        let mut upd = sim.get(PODS, NS, &format!("p{:03}", 50 + round)).body;
        upd["metadata"]["labels"]["round"] = json!(round.to_string());
        sim.update(PODS, NS, &format!("p{:03}", 50 + round), upd);
        round += 1;
        let page = sim.list(PODS, NS, &[("limit", "7"), ("continue", &token)]);
        assert_eq!(page.status, 200, "{}", page.body);
        assert_eq!(page.body["metadata"]["resourceVersion"], list_rv);
        for item in page.body["items"].as_array().into_iter().flatten() {
            assert!(
                item["metadata"]["labels"].get("round").is_none(),
                "item from after the snapshot: {item}"
            );
        }
        seen.extend(names(&page.body));
        token = page.body["metadata"]["continue"]
            .as_str()
            .unwrap_or("")
            .to_string();
    }
    let unique: BTreeSet<String> = seen.iter().cloned().collect();
    assert_eq!(unique.len(), seen.len(), "no duplicates");
    assert_eq!(unique, snapshot, "exactly the snapshot");
}

#[test]
fn expired_continue_and_resource_version_rules() {
    let sim = Sim::with(StoreConfig {
        history: 10,
        ..StoreConfig::default()
    });
    for i in 0..5 {
        sim.create(PODS, NS, pod(&format!("p{i}")));
    }
    let first = sim.list(PODS, NS, &[("limit", "2")]);
    let token = first.body["metadata"]["continue"]
        .as_str()
        .unwrap_or("")
        .to_string();
    for i in 0..20 {
        sim.create(PODS, NS, pod(&format!("q{i}")));
    }
    let expired = sim.list(PODS, NS, &[("limit", "2"), ("continue", &token)]);
    assert_eq!(expired.status, 410);
    assert_eq!(expired.body["reason"], "Expired");
    assert!(expired.body["message"].as_str().unwrap_or("").starts_with(
        "The provided continue parameter is too old to display a consistent list result."
    ));
    assert!(
        expired.body["metadata"]["continue"].is_string(),
        "a fresh token to continue inconsistently"
    );
    assert_eq!(sim.list(PODS, NS, &[("continue", "garbage")]).status, 400);
    // resourceVersion=0: served from the "cache", limit ignored.
    let zero = sim.list(PODS, NS, &[("resourceVersion", "0"), ("limit", "2")]);
    assert_eq!(names(&zero.body).len(), 25);
    assert!(zero.body["metadata"].get("continue").is_none());
    let now = sim.store.current_rv();
    let exact_old = sim.list(
        PODS,
        NS,
        &[("resourceVersion", "6"), ("resourceVersionMatch", "Exact")],
    );
    assert_eq!(exact_old.status, 410);
    assert_eq!(
        exact_old.body["message"],
        format!("too old resource version: 6 ({})", now - 10 + 1)
    );
    let exact = sim.list(
        PODS,
        NS,
        &[
            ("resourceVersion", &(now - 3).to_string()),
            ("resourceVersionMatch", "Exact"),
        ],
    );
    assert_eq!(exact.status, 200);
    assert_eq!(names(&exact.body).len(), 22, "the state three writes ago");
    assert_eq!(
        exact.body["metadata"]["resourceVersion"],
        (now - 3).to_string()
    );
    let not_older = sim.list(
        PODS,
        NS,
        &[
            ("resourceVersion", "6"),
            ("resourceVersionMatch", "NotOlderThan"),
        ],
    );
    assert_eq!(
        not_older.body["metadata"]["resourceVersion"],
        now.to_string()
    );
    let future = sim.list(PODS, NS, &[("resourceVersion", &(now + 100).to_string())]);
    assert_eq!(future.status, 504);
    assert_eq!(
        sim.list(PODS, NS, &[("resourceVersion", "abc")]).status,
        400
    );
}

#[test]
fn validation_bodies() {
    let sim = Sim::new();
    let mut s = slice("bad", &["10.0.0.1"]);
    s["addressType"] = json!("IPv5");
    let r = sim.create(SLICES, NS, s);
    assert_eq!(r.status, 422);
    assert_eq!(r.body["reason"], "Invalid");
    assert_eq!(r.body["message"], "EndpointSlice.discovery.k8s.io \"bad\" is invalid: addressType: Unsupported value: \"IPv5\": supported values: \"FQDN\", \"IPv4\", \"IPv6\"");
    assert_eq!(
        r.body["details"]["causes"],
        json!([{"reason": "FieldValueNotSupported", "message": "Unsupported value: \"IPv5\": supported values: \"FQDN\", \"IPv4\", \"IPv6\"", "field": "addressType"}])
    );
    assert_eq!(r.body["details"]["kind"], "EndpointSlice");
    assert_eq!(r.body["details"]["group"], "discovery.k8s.io");
    let ok = sim.create(SLICES, NS, slice("s", &["10.0.0.1"])).body;
    let mut imm = ok.clone();
    imm["addressType"] = json!("IPv6");
    imm["endpoints"] = json!([{"addresses": ["fd00::1"]}]);
    let r = sim.update(SLICES, NS, "s", imm);
    assert_eq!(r.status, 422);
    assert_eq!(
        r.body["details"]["causes"][0]["message"],
        "Invalid value: \"IPv6\": field is immutable"
    );
    let too_many: Vec<Value> = (0..1001)
        .map(|i| json!({"addresses": [format!("10.0.{}.{}", i / 256, i % 256)]}))
        .collect();
    let mut big = slice("big", &[]);
    big["endpoints"] = json!(too_many);
    let r = sim.create(SLICES, NS, big);
    assert_eq!(r.status, 422);
    assert_eq!(
        r.body["details"]["causes"][0],
        json!({"reason": "FieldValueTooMany", "message": "Too many: 1001: must have at most 1000 items", "field": "endpoints"})
    );
    let lease = json!({"metadata": {"name": "l"}, "spec": {"leaseDurationSeconds": "fifteen"}});
    let r = sim.create("coordination.k8s.io/leases", NS, lease);
    assert_eq!(r.status, 400, "{}", r.body);
    let bad_name = sim.create(PODS, NS, pod("Bad_Name"));
    assert_eq!(bad_name.status, 422);
    assert_eq!(
        bad_name.body["details"]["causes"][0]["field"],
        "metadata.name"
    );
}

#[test]
fn continue_token_from_the_future_or_another_namespace_is_rejected() {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let sim = Sim::new();
    for i in 0..3 {
        sim.create(PODS, NS, pod(&format!("p{i}")));
    }
    let now = sim.store.current_rv();
    let tok = |rv: u64, start: &str| {
        b64.encode(json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start}).to_string())
    };
    for (what, ns, token) in [
        ("future rv", NS, tok(now + 100, "default/p0\u{0}")),
        ("other namespace", NS, tok(now, "kube-system/p0\u{0}")),
    ] {
        let r = sim.list(PODS, ns, &[("limit", "1"), ("continue", &token)]);
        assert_eq!(r.status, 400, "{what}: {}", r.body);
        assert_eq!(r.body["reason"], "BadRequest", "{what}");
        assert!(
            r.body["message"]
                .as_str()
                .unwrap_or("")
                .starts_with("continue key is not valid"),
            "{what}: {}",
            r.body
        );
    }
    let ok = sim.list(PODS, NS, &[("continue", &tok(now, "default/p0\u{0}"))]);
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(names(&ok.body), ["p1", "p2"]);
    let all = sim.list(PODS, None, &[("continue", &tok(now, "a-ns/x\u{0}"))]);
    assert_eq!(all.status, 200, "any namespace fits a cluster-wide list");
}
