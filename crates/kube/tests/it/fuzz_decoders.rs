//! Fuzzing (issue 14, bounded for CI): the watch-event decoder, the LIST
//! body decoder and the cached projections of every kind take arbitrary
//! bytes and arbitrary JSON — objects with fields of the wrong type, nulls,
//! huge numbers, deep nesting — and never panic: bad input is an error.

use endpointd_kube::kube::body::{decode_list, BodyLimits};
use endpointd_kube::kube::watch::decode_event;
use endpointd_kube::model::{EndpointSlice, Endpoints, Lease, Namespace, Node, Pod, Service};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::sync::atomic::AtomicU64;

/// Any JSON value, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[a-zA-Z0-9:./_-]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z]{1,10}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A valid object of each kind, to be mutated.
fn seeds() -> Vec<(&'static str, Value)> {
    vec![
        (
            "Pod",
            json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "n", "uid": "u", "resourceVersion": "1",
                         "labels": {"app": "web"}, "annotations": {"a": "b"}, "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"nodeName": "n1", "hostname": "h", "subdomain": "s",
                     "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}]}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}],
                       "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}),
        ),
        (
            "Service",
            json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s", "namespace": "n", "annotations": {"service.kubernetes.io/topology-mode": "Auto"}},
            "spec": {"selector": {"app": "web"}, "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
                     "ipFamilies": ["IPv4"], "type": "ClusterIP", "trafficDistribution": "PreferClose",
                     "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]}}),
        ),
        (
            "Node",
            json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z1"}},
            "status": {"allocatable": {"cpu": "2"}, "conditions": [{"type": "Ready", "status": "True"}]}}),
        ),
        (
            "Endpoints",
            json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "s", "namespace": "n"},
            "subsets": [{"addresses": [{"ip": "10.0.0.1", "targetRef": {"kind": "Pod", "name": "p"}}],
                         "ports": [{"name": "http", "port": 80}]}]}),
        ),
        (
            "EndpointSlice",
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "s-1", "namespace": "n", "generation": 3, "labels": {"kubernetes.io/service-name": "s"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}, "zone": "z1",
                           "hints": {"forZones": [{"name": "z1"}]}}],
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}),
        ),
        (
            "Namespace",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}, "status": {"phase": "Active"}}),
        ),
        (
            "Lease",
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l", "namespace": "n"},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "renewTime": "2026-01-01T00:00:00.000000Z"}}),
        ),
    ]
}

/// Every JSON pointer to an object member in `v`.
fn paths(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{at}/{k}");
                out.push(p.clone());
                paths(x, p, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                paths(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

fn decode_all(v: &Value) {
    let bytes = v.to_string();
    let _ = serde_json::from_str::<Pod>(&bytes);
    let _ = serde_json::from_str::<Service>(&bytes);
    let _ = serde_json::from_str::<Node>(&bytes);
    let _ = serde_json::from_str::<Endpoints>(&bytes);
    let _ = serde_json::from_str::<EndpointSlice>(&bytes);
    let _ = serde_json::from_str::<Namespace>(&bytes);
    let _ = serde_json::from_str::<Lease>(&bytes);
    for ty in ["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR", "WEIRD"] {
        let line = json!({"type": ty, "object": v}).to_string();
        let _ = decode_event::<Pod>(line.as_bytes());
        let _ = decode_event::<EndpointSlice>(line.as_bytes());
        let _ = decode_event::<Service>(line.as_bytes());
    }
    let list =
        json!({"kind": "List", "metadata": {"resourceVersion": "1"}, "items": [v, v]}).to_string();
    let limits = BodyLimits::default();
    let pool = AtomicU64::new(0);
    let _ = decode_list::<Pod, _>(list.as_bytes(), "list pods", "s", &limits, &pool);
    let _ = decode_list::<Node, _>(list.as_bytes(), "list nodes", "s", &limits, &pool);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_are_errors_not_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_event::<Pod>(&bytes);
        let _ = decode_event::<EndpointSlice>(&bytes);
        let limits = BodyLimits::default();
        let pool = AtomicU64::new(0);
        let _ = decode_list::<Pod, _>(&bytes[..], "list pods", "s", &limits, &pool);
    }

    #[test]
    fn arbitrary_json_is_decoded_or_refused(v in any_json()) {
        decode_all(&v);
    }

    #[test]
    fn valid_objects_with_one_field_replaced_never_panic(
        seed in 0usize..7,
        pick in any::<prop::sample::Index>(),
        replacement in any_json(),
    ) {
        let (_, mut obj) = seeds().swap_remove(seed);
        let mut ps = Vec::new();
        paths(&obj, String::new(), &mut ps);
        let p = pick.get(&ps).clone();
        if let Some(slot) = obj.pointer_mut(&p) {
            *slot = replacement;
        }
        decode_all(&obj);
    }
}
