//! Robustness: arbitrary JSON bodies and patches against every resource
//! never panic kube-sim and always answer with a well-formed object or
//! `Status` (2xx or 4xx), and the store stays consistent (every stored
//! object has metadata with a name and a resourceVersion).

use crate::harness::semantics as sim_semantics_support;

use endpointd_base::httpd::Body;
use kube_sim::requestinfo::Verb;
use kube_sim::resources::RESOURCES;
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use sim_semantics_support::*;

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..70000).prop_map(|n| json!(n)),
        prop_oneof![
            Just("".to_string()),
            Just("TCP".to_string()),
            Just("10.0.0.1".to_string()),
            Just("IPv4".to_string()),
            Just("x".to_string()),
            Just("Bad_Name!".to_string()),
        ]
        .prop_map(Value::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let keys = prop_oneof![
        Just("metadata"),
        Just("spec"),
        Just("status"),
        Just("ports"),
        Just("port"),
        Just("endpoints"),
        Just("addresses"),
        Just("subsets"),
        Just("labels"),
        Just("finalizers"),
        Just("name"),
        Just("addressType"),
        Just("protocol"),
        Just("targetPort"),
        Just("ownerReferences"),
        Just("uid"),
        Just("conditions"),
        Just("type"),
        Just("eventTime"),
        Just("involvedObject"),
        Just("leaseDurationSeconds"),
    ];
    leaf().prop_recursive(4, 40, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((keys.clone(), inner), 0..5).prop_map(|kv| {
                Value::Object(
                    kv.into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect::<Map<_, _>>(),
                )
            }),
        ]
    })
}

fn target(i: usize) -> (String, Option<&'static str>) {
    let r = &RESOURCES[i % RESOURCES.len()];
    let res = if r.group.is_empty() {
        r.resource.to_string()
    } else {
        format!("{}/{}", r.group, r.resource)
    };
    (res, r.namespaced.then_some("default"))
}

fn check(r: endpointd_base::httpd::Response, what: &str) {
    assert!(
        r.status < 300 || (400..500).contains(&r.status),
        "{what}: status {}",
        r.status
    );
    if let Body::Full(b) = r.body {
        let v: Value = serde_json::from_slice(&b).unwrap_or(Value::Null);
        assert!(v.is_object(), "{what}: body is not a JSON object");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn arbitrary_bodies_never_break_kube_sim(i in 0usize..64, body in json_value(), patch in json_value()) {
        let sim = Sim::new();
        let (res, ns) = target(i);
        let mut b = body.clone();
        if let Some(m) = b.as_object_mut() {
            let meta = m.entry("metadata").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert("name".into(), json!("x"));
            }
        }
        let text = b.to_string();
        check(sim.raw(Verb::Create, &res, ns, None, &[], &text, "application/json"), "create");
        check(sim.raw(Verb::Update, &res, ns, Some("x"), &[], &text, "application/json"), "update");
        for ct in ["application/merge-patch+json", "application/json-patch+json", "application/strategic-merge-patch+json"] {
            check(sim.raw(Verb::Patch, &res, ns, Some("x"), &[], &patch.to_string(), ct), ct);
        }
        check(sim.raw(Verb::Delete, &res, ns, Some("x"), &[], &patch.to_string(), "application/json"), "delete");
        let list = sim.list(&res, ns, &[]);
        prop_assert_eq!(list.status, 200);
        for item in list.body["items"].as_array().into_iter().flatten() {
            prop_assert!(item["metadata"]["name"].is_string(), "{}", item);
            prop_assert!(item["metadata"]["resourceVersion"].is_string(), "{}", item);
        }
    }
}

#[test]
fn known_nasty_bodies() {
    let nasty = [
        json!({"metadata": {"name": "x"}, "spec": {"ports": [1, "a", null, {"port": "80"}]}}),
        json!({"metadata": {"name": "x"}, "spec": 5}),
        json!({"metadata": {"name": "x"}, "status": "Running"}),
        json!({"metadata": {"name": "x", "labels": [1]}}),
        json!({"metadata": {"name": "x", "ownerReferences": [5, {"uid": 7}]}}),
        json!({"metadata": {"name": "x", "finalizers": "a"}}),
        json!({"metadata": {"name": "x"}, "subsets": [5, {"addresses": [5], "ports": [5]}]}),
        json!({"metadata": {"name": "x"}, "addressType": "IPv4", "endpoints": [5, {"addresses": [5]}], "ports": [5]}),
        json!({"metadata": {"name": "x"}, "spec": {"leaseDurationSeconds": 1e300}}),
        json!({"metadata": {"name": "x"}, "involvedObject": 5, "eventTime": 5}),
        json!([1, 2]),
        json!("string"),
    ];
    let patches = [
        (
            json!([{"op": "replace", "path": "", "value": 5}]),
            "application/json-patch+json",
        ),
        (
            json!([{"op": "add", "path": "/metadata", "value": 5}]),
            "application/json-patch+json",
        ),
        (json!({"metadata": 5}), "application/merge-patch+json"),
        (
            json!({"status": [1]}),
            "application/strategic-merge-patch+json",
        ),
        (
            json!({"spec": {"ports": [{"$patch": "delete"}, 5]}}),
            "application/strategic-merge-patch+json",
        ),
    ];
    for i in 0..RESOURCES.len() {
        let sim = Sim::new();
        let (res, ns) = target(i);
        for b in &nasty {
            let text = b.to_string();
            check(
                sim.raw(Verb::Create, &res, ns, None, &[], &text, "application/json"),
                &format!("{res} create {b}"),
            );
            check(
                sim.raw(
                    Verb::Update,
                    &res,
                    ns,
                    Some("x"),
                    &[],
                    &text,
                    "application/json",
                ),
                &format!("{res} update {b}"),
            );
        }
        // A valid-ish object to patch.
        let base = json!({"metadata": {"name": "p"}, "spec": {"ports": [{"port": 80}]}, "addressType": "IPv4",
            "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "c", "reportingInstance": "i",
            "action": "a", "reason": "r", "type": "Normal", "regarding": {"namespace": "default"},
            "involvedObject": {"namespace": "default"}});
        sim.raw(
            Verb::Create,
            &res,
            ns,
            None,
            &[],
            &base.to_string(),
            "application/json",
        );
        for (p, ct) in &patches {
            check(
                sim.raw(Verb::Patch, &res, ns, Some("p"), &[], &p.to_string(), ct),
                &format!("{res} patch {p}"),
            );
            check(
                sim.raw(Verb::Patch, &res, ns, Some("p"), &[], "{not json", ct),
                &format!("{res} bad patch"),
            );
        }
        for item in sim.list(&res, ns, &[]).body["items"]
            .as_array()
            .into_iter()
            .flatten()
        {
            assert!(item["metadata"].is_object(), "{res}: stored {item}");
        }
    }
}
