//! Table tests: every validation rule with the field cause it produces.

use super::super::resources::lookup;
use super::super::validate::validate;
use serde_json::{json, Value};

type Case3<'a> = (&'a str, Value, Option<(&'a str, &'a str, &'a str)>);
type Case2<'a> = (&'a str, Value, Option<(&'a str, &'a str)>);

fn causes(
    group: &str,
    resource: &str,
    old: Option<Value>,
    new: Value,
) -> Vec<(String, String, String)> {
    let Some(info) = lookup(group, "v1", resource) else {
        panic!("{resource} not served")
    };
    match validate(info, old.as_ref(), &new) {
        Ok(()) => Vec::new(),
        Err(e) => {
            assert_eq!(e.code, 422, "{e:?}");
            let d = e.details.unwrap_or(Value::Null);
            d["causes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
                    (s("reason"), s("field"), s("message"))
                })
                .collect()
        }
    }
}

fn slice(at: &str, endpoints: Value, ports: Value) -> Value {
    json!({"metadata": {"name": "s"}, "addressType": at, "endpoints": endpoints, "ports": ports})
}

#[test]
fn endpoint_slice_rules() {
    let ep = |a: &str| json!([{"addresses": [a]}]);
    let many_eps: Vec<Value> = (0..1001)
        .map(|_| json!({"addresses": ["10.0.0.1"]}))
        .collect();
    let many_ports: Vec<Value> = (0..101)
        .map(|i| json!({"name": format!("p{i}"), "port": 80}))
        .collect();
    let many_addrs: Vec<String> = (0..101).map(|i| format!("10.0.0.{i}")).collect();
    let cases: Vec<Case3> = vec![
        (
            "valid IPv4",
            slice(
                "IPv4",
                ep("10.0.0.1"),
                json!([{"name": "http", "port": 80, "protocol": "TCP"}]),
            ),
            None,
        ),
        ("valid IPv6", slice("IPv6", ep("fd00::1"), json!([])), None),
        (
            "valid FQDN",
            slice("FQDN", ep("a.example.com"), json!([])),
            None,
        ),
        (
            "missing addressType",
            json!({"metadata": {"name": "s"}}),
            Some(("FieldValueRequired", "addressType", "Required value")),
        ),
        (
            "bad addressType",
            slice("IPv5", json!([]), json!([])),
            Some((
                "FieldValueNotSupported",
                "addressType",
                "Unsupported value: \"IPv5\": supported values: \"FQDN\", \"IPv4\", \"IPv6\"",
            )),
        ),
        (
            "bad IPv4",
            slice("IPv4", ep("10.0.0.300"), json!([])),
            Some((
                "FieldValueInvalid",
                "endpoints[0].addresses[0]",
                "Invalid value: \"10.0.0.300\": must be a valid IPv4 address",
            )),
        ),
        (
            "IPv6 in IPv4 slice",
            slice("IPv4", ep("fd00::1"), json!([])),
            Some((
                "FieldValueInvalid",
                "endpoints[0].addresses[0]",
                "Invalid value: \"fd00::1\": must be a valid IPv4 address",
            )),
        ),
        (
            "IPv4 in IPv6 slice",
            slice("IPv6", ep("10.0.0.1"), json!([])),
            Some((
                "FieldValueInvalid",
                "endpoints[0].addresses[0]",
                "Invalid value: \"10.0.0.1\": must be a valid IPv6 address",
            )),
        ),
        (
            "bad FQDN",
            slice("FQDN", ep("Not_A_Name"), json!([])),
            Some((
                "FieldValueInvalid",
                "endpoints[0].addresses[0]",
                "Invalid value: \"Not_A_Name\": must be a valid FQDN",
            )),
        ),
        (
            "no addresses",
            slice("IPv4", json!([{"addresses": []}]), json!([])),
            Some((
                "FieldValueRequired",
                "endpoints[0].addresses",
                "Required value: must contain at least 1 address",
            )),
        ),
        (
            "too many addresses",
            slice("IPv4", json!([{"addresses": many_addrs}]), json!([])),
            Some((
                "FieldValueTooMany",
                "endpoints[0].addresses",
                "Too many: 101: must have at most 100 items",
            )),
        ),
        (
            "too many endpoints",
            slice("IPv4", json!(many_eps), json!([])),
            Some((
                "FieldValueTooMany",
                "endpoints",
                "Too many: 1001: must have at most 1000 items",
            )),
        ),
        (
            "too many ports",
            slice("IPv4", json!([]), json!(many_ports)),
            Some((
                "FieldValueTooMany",
                "ports",
                "Too many: 101: must have at most 100 items",
            )),
        ),
        (
            "bad protocol",
            slice(
                "IPv4",
                json!([]),
                json!([{"name": "a", "port": 80, "protocol": "ICMP"}]),
            ),
            Some((
                "FieldValueNotSupported",
                "ports[0].protocol",
                "Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            )),
        ),
        (
            "port out of range",
            slice("IPv4", json!([]), json!([{"name": "a", "port": 70000}])),
            Some((
                "FieldValueInvalid",
                "ports[0].port",
                "Invalid value: 70000: must be between 1 and 65535, inclusive",
            )),
        ),
        (
            "duplicate port name",
            slice(
                "IPv4",
                json!([]),
                json!([{"name": "a", "port": 80}, {"name": "a", "port": 81}]),
            ),
            Some((
                "FieldValueDuplicate",
                "ports[1].name",
                "Duplicate value: \"a\"",
            )),
        ),
        (
            "bad port name",
            slice("IPv4", json!([]), json!([{"name": "Bad_Name", "port": 80}])),
            Some((
                "FieldValueInvalid",
                "ports[0].name",
                "Invalid value: \"Bad_Name\": must be a valid DNS label",
            )),
        ),
        (
            "bad nodeName",
            slice(
                "IPv4",
                json!([{"addresses": ["10.0.0.1"], "nodeName": "N_1"}]),
                json!([]),
            ),
            Some((
                "FieldValueInvalid",
                "endpoints[0].nodeName",
                "Invalid value: \"N_1\": must be a valid node name",
            )),
        ),
        (
            "bad name",
            json!({"metadata": {"name": "UPPER"}, "addressType": "IPv4"}),
            Some(("FieldValueInvalid", "metadata.name", "")),
        ),
    ];
    for (what, obj, want) in cases {
        let got = causes("discovery.k8s.io", "endpointslices", None, obj);
        match want {
            None => assert!(got.is_empty(), "{what}: {got:?}"),
            Some((reason, field, msg)) => {
                assert_eq!(got.len(), 1, "{what}: {got:?}");
                assert_eq!(
                    (got[0].0.as_str(), got[0].1.as_str()),
                    (reason, field),
                    "{what}"
                );
                if !msg.is_empty() {
                    assert_eq!(got[0].2, msg, "{what}");
                }
            }
        }
    }
    let old = slice("IPv4", json!([]), json!([]));
    let got = causes(
        "discovery.k8s.io",
        "endpointslices",
        Some(old.clone()),
        slice("IPv6", json!([]), json!([])),
    );
    assert_eq!(
        got,
        vec![(
            "FieldValueInvalid".into(),
            "addressType".into(),
            "Invalid value: \"IPv6\": field is immutable".into()
        )]
    );
    assert!(causes("discovery.k8s.io", "endpointslices", Some(old.clone()), old).is_empty());
}

#[test]
fn endpoints_rules() {
    let eps = |subsets: Value| json!({"metadata": {"name": "e"}, "subsets": subsets});
    let port = json!({"port": 80, "protocol": "TCP"});
    let cases: Vec<Case2> = vec![
        (
            "valid",
            eps(json!([{"addresses": [{"ip": "10.0.0.1"}], "ports": [port]}])),
            None,
        ),
        (
            "not-ready only",
            eps(json!([{"notReadyAddresses": [{"ip": "fd00::1"}], "ports": [port]}])),
            None,
        ),
        ("no subsets", eps(json!([])), None),
        (
            "no addresses",
            eps(json!([{"ports": [port]}])),
            Some(("FieldValueRequired", "subsets[0]")),
        ),
        (
            "bad ip",
            eps(json!([{"addresses": [{"ip": "nope"}], "ports": [port]}])),
            Some(("FieldValueInvalid", "subsets[0].addresses[0].ip")),
        ),
        (
            "missing ip",
            eps(json!([{"notReadyAddresses": [{}], "ports": [port]}])),
            Some(("FieldValueRequired", "subsets[0].notReadyAddresses[0].ip")),
        ),
        (
            // A headless Service without ports (upstream allows it).
            "no ports",
            eps(json!([{"addresses": [{"ip": "10.0.0.1"}]}])),
            None,
        ),
        (
            "port zero",
            eps(
                json!([{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 0, "protocol": "TCP"}]}]),
            ),
            Some(("FieldValueInvalid", "subsets[0].ports[0].port")),
        ),
        (
            "missing protocol",
            eps(json!([{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 1}]}])),
            Some(("FieldValueRequired", "subsets[0].ports[0].protocol")),
        ),
        (
            "unnamed among many",
            eps(
                json!([{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"name": "a", "port": 1, "protocol": "TCP"}, {"port": 2, "protocol": "TCP"}]}]),
            ),
            Some(("FieldValueRequired", "subsets[0].ports[1].name")),
        ),
    ];
    for (what, obj, want) in cases {
        let got = causes("", "endpoints", None, obj);
        let got: Vec<(&str, &str)> = got
            .iter()
            .map(|(r, f, _)| (r.as_str(), f.as_str()))
            .collect();
        assert_eq!(got, want.into_iter().collect::<Vec<_>>(), "{what}");
    }
}

#[test]
fn lease_rules() {
    let lease = |spec: Value| json!({"metadata": {"name": "l"}, "spec": spec});
    assert!(causes("coordination.k8s.io", "leases", None, lease(json!({"holderIdentity": "a", "leaseDurationSeconds": 15, "renewTime": "2024-01-01T00:00:00.000000Z", "leaseTransitions": 0}))).is_empty());
    let got = causes(
        "coordination.k8s.io",
        "leases",
        None,
        lease(json!({"leaseDurationSeconds": 0})),
    );
    assert_eq!(got[0].1, "spec.leaseDurationSeconds");
    let got = causes(
        "coordination.k8s.io",
        "leases",
        None,
        lease(json!({"leaseTransitions": -1})),
    );
    assert_eq!(got[0].1, "spec.leaseTransitions");
    let Some(info) = lookup("coordination.k8s.io", "v1", "leases") else {
        panic!("leases not served")
    };
    for bad in [
        json!({"holderIdentity": 5}),
        json!({"leaseDurationSeconds": "15"}),
        json!({"renewTime": "yesterday"}),
        json!({"leaseDurationSeconds": 1.5}),
    ] {
        let e = validate(info, None, &lease(bad.clone()))
            .err()
            .map(|e| (e.code, e.reason));
        assert_eq!(e, Some((400, "BadRequest".to_string())), "{bad}");
    }
}

#[test]
fn object_name_rules() {
    let cases = [
        ("", "namespaces", "ok-name", true),
        ("", "namespaces", "dotted.name", false),
        ("", "services", "1svc", false),
        ("", "services", "svc-1", true),
        ("", "pods", "dotted.name-1", true),
        ("", "pods", "-bad", false),
        ("", "pods", &"a".repeat(254), false),
    ];
    for (g, r, name, ok) in cases {
        let got: Vec<_> = causes(g, r, None, json!({"metadata": {"name": name}}))
            .into_iter()
            .filter(|c| c.1 == "metadata.name")
            .collect();
        assert_eq!(got.is_empty(), ok, "{r} {name}: {got:?}");
    }
}

#[test]
fn event_rules() {
    let core = |v: Value| causes("", "events", None, v);
    let strict = |v: Value| {
        causes(
            "events.k8s.io",
            "events",
            None,
            crate::eventsapi::to_core(&v),
        )
    };
    let fields =
        |c: Vec<(String, String, String)>| c.into_iter().map(|(_, f, _)| f).collect::<Vec<_>>();
    let legacy = json!({"metadata": {"name": "e.1", "namespace": "default"},
        "involvedObject": {"kind": "Service", "namespace": "default", "name": "s"}, "reason": "X", "type": "Normal"});
    assert!(core(legacy.clone()).is_empty());
    let mut other_ns = legacy.clone();
    other_ns["involvedObject"]["namespace"] = json!("shop");
    assert_eq!(fields(core(other_ns)), ["involvedObject.namespace"]);
    let good = json!({"metadata": {"name": "e.2", "namespace": "default"},
        "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "endpointd", "reportingInstance": "endpointd-1",
        "action": "Sync", "reason": "FailedToUpdateEndpointSlices", "type": "Warning", "note": "boom",
        "regarding": {"kind": "Service", "namespace": "default", "name": "s"}});
    assert!(
        strict(good.clone()).is_empty(),
        "{:?}",
        strict(good.clone())
    );
    let mut bad = good.clone();
    for f in ["eventTime", "reportingController", "action"] {
        bad.as_object_mut().map(|m| m.remove(f));
    }
    bad["type"] = json!("Info");
    bad["deprecatedCount"] = json!(3);
    bad["note"] = json!("x".repeat(1025));
    assert_eq!(fields(strict(bad)), ["eventTime", "type", "count"]);
    let mut long_note = good;
    long_note["note"] = json!("x".repeat(1025));
    assert_eq!(fields(strict(long_note)), ["message"]);
}

#[test]
fn service_rules() {
    let svc = |spec: Value| json!({"metadata": {"name": "s"}, "spec": spec});
    let fields = |c: Vec<(String, String, String)>| {
        c.into_iter().map(|(r, f, _)| (r, f)).collect::<Vec<_>>()
    };
    let f = |r: &str, p: &str| (r.to_string(), p.to_string());
    let cases = [
        (
            svc(json!({"ports": [{"port": 80, "protocol": "TCP"}]})),
            vec![],
        ),
        (svc(json!({"clusterIP": "None"})), vec![]),
        (
            svc(json!({"type": "ExternalName", "externalName": "a.b"})),
            vec![],
        ),
        (svc(json!({})), vec![f("FieldValueRequired", "spec.ports")]),
        (
            svc(json!({"ports": [{"port": 70000, "protocol": "TCP"}]})),
            vec![f("FieldValueInvalid", "spec.ports[0].port")],
        ),
        (
            svc(json!({"ports": [{"port": 80, "protocol": "TCP", "targetPort": 0}]})),
            vec![f("FieldValueInvalid", "spec.ports[0].targetPort")],
        ),
        (
            svc(json!({"ports": [{"port": 80, "protocol": "TCP", "targetPort": "http"}]})),
            vec![],
        ),
        (
            svc(json!({"ports": [{"port": 80, "protocol": "TCP", "targetPort": "Not_Valid"}]})),
            vec![f("FieldValueInvalid", "spec.ports[0].targetPort")],
        ),
        (
            svc(
                json!({"ports": [{"port": 80, "protocol": "TCP"}, {"port": 81, "protocol": "TCP"}]}),
            ),
            vec![
                f("FieldValueRequired", "spec.ports[0].name"),
                f("FieldValueRequired", "spec.ports[1].name"),
            ],
        ),
        (
            svc(
                json!({"ports": [{"name": "a", "port": 80, "protocol": "TCP"}, {"name": "a", "port": 81, "protocol": "TCP"}]}),
            ),
            vec![f("FieldValueDuplicate", "spec.ports[1].name")],
        ),
        (
            svc(json!({"type": "Magic", "ports": [{"port": 80, "protocol": "TCP"}]})),
            vec![f("FieldValueNotSupported", "spec.type")],
        ),
        (
            svc(json!({"trafficDistribution": "Foo", "ports": [{"port": 80, "protocol": "TCP"}]})),
            vec![f("FieldValueNotSupported", "spec.trafficDistribution")],
        ),
        (
            svc(
                json!({"trafficDistribution": "PreferSameNode", "ports": [{"port": 80, "protocol": "TCP"}]}),
            ),
            vec![],
        ),
        (
            svc(json!({"clusterIP": "10.0.0.300", "ports": [{"port": 80, "protocol": "TCP"}]})),
            vec![f("FieldValueInvalid", "spec.clusterIP")],
        ),
    ];
    for (obj, want) in cases {
        assert_eq!(
            fields(causes("", "services", None, obj.clone())),
            want,
            "{obj}"
        );
    }
}

#[test]
fn label_and_annotation_rules() {
    let obj = |labels: Value, annotations: Value| json!({"metadata": {"name": "p", "labels": labels, "annotations": annotations}});
    let cases = [
        (
            obj(
                json!({"app": "web", "endpointslice.kubernetes.io/managed-by": "endpointd", "empty": ""}),
                json!({"a.b/c": "any value at all!"}),
            ),
            vec![],
        ),
        (
            obj(json!({"bad key!": "x"}), json!({})),
            vec!["metadata.labels"],
        ),
        (
            obj(json!({"app": "bad value!"}), json!({})),
            vec!["metadata.labels"],
        ),
        (
            obj(json!({"app": "x".repeat(64)}), json!({})),
            vec!["metadata.labels"],
        ),
        (
            obj(json!({"Bad_Prefix/app": "x"}), json!({})),
            vec!["metadata.labels"],
        ),
        (
            obj(json!({}), json!({"bad key!": "x"})),
            vec!["metadata.annotations"],
        ),
    ];
    for (o, want) in cases {
        let got: Vec<String> = causes("", "pods", None, o.clone())
            .into_iter()
            .map(|c| c.1)
            .collect();
        assert_eq!(got, want, "{o}");
    }
    let Some(info) = lookup("", "v1", "pods") else {
        panic!("pods not served")
    };
    let e = validate(info, None, &obj(json!({"app": 5}), json!({})))
        .err()
        .map(|e| e.code);
    assert_eq!(e, Some(400), "a non-string label value is a decode error");
}
