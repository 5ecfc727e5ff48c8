//! Table tests for [`super`] (objects).

use super::*;
use crate::resources::lookup;

#[test]
fn generation_rules_table() {
    let es = lookup("discovery.k8s.io", "v1", "endpointslices").unwrap_or(namespace_info());
    let pod = lookup("", "v1", "pods").unwrap_or(namespace_info());
    let svc = lookup("", "v1", "services").unwrap_or(namespace_info());
    let base = json!({"metadata": {"name": "a", "labels": {"x": "1"}, "annotations": {}},
                      "addressType": "IPv4", "endpoints": [], "spec": {"a": 1}});
    let cases: &[(&ResourceInfo, &str, Value, bool)] = &[
        (
            es,
            "annotation only",
            json!({"metadata": {"name": "a", "labels": {"x": "1"}, "annotations": {"k": "v"}}, "addressType": "IPv4", "endpoints": [], "spec": {"a": 1}}),
            false,
        ),
        (
            es,
            "label change",
            json!({"metadata": {"name": "a", "labels": {"x": "2"}, "annotations": {}}, "addressType": "IPv4", "endpoints": [], "spec": {"a": 1}}),
            true,
        ),
        (
            es,
            "endpoints change",
            json!({"metadata": {"name": "a", "labels": {"x": "1"}, "annotations": {}}, "addressType": "IPv4", "endpoints": [{"addresses": ["1.1.1.1"]}], "spec": {"a": 1}}),
            true,
        ),
        (
            pod,
            "spec change",
            json!({"metadata": {"name": "a"}, "addressType": "IPv4", "endpoints": [], "spec": {"a": 2}}),
            true,
        ),
        (
            pod,
            "label change",
            json!({"metadata": {"name": "a", "labels": {"x": "2"}}, "addressType": "IPv4", "endpoints": [], "spec": {"a": 1}}),
            false,
        ),
        (
            svc,
            "spec change",
            json!({"metadata": {"name": "a"}, "spec": {"a": 2}}),
            false,
        ),
    ];
    for (info, what, new, want) in cases {
        assert_eq!(
            generation_changes(info, &base, new),
            *want,
            "{} {what}",
            info.resource
        );
    }
}

#[test]
fn qos_class_table() {
    let c = |res: Value| json!({"containers": [{"name": "c", "resources": res}]});
    let cases = [
        (json!({"containers": [{"name": "c"}]}), "BestEffort"),
        (c(json!({"requests": {"cpu": "100m"}})), "Burstable"),
        (
            c(json!({"limits": {"cpu": "1", "memory": "1Gi"}})),
            "Guaranteed",
        ),
        (
            c(
                json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}),
            ),
            "Guaranteed",
        ),
        (
            c(json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}})),
            "Burstable",
        ),
        (c(json!({"limits": {"cpu": "1"}})), "Burstable"),
    ];
    for (spec, want) in cases {
        assert_eq!(qos_class(&spec), want, "{spec}");
    }
}

#[test]
fn semantic_equality_table() {
    let cases = [
        (json!({"a": 1}), json!({"a": 1}), true),
        (json!({"a": 1, "l": []}), json!({"a": 1}), true),
        (json!({"a": 1, "m": {}}), json!({"a": 1, "m": null}), true),
        (json!({"m": {"x": null}}), json!({}), true),
        (json!({"a": [1, 2]}), json!({"a": [2, 1]}), false),
        (json!({"a": ""}), json!({}), false),
        (json!({"a": false}), json!({}), false),
        (json!({"a": [{}]}), json!({"a": []}), false),
        (json!({"a": {"b": 1}}), json!({"a": {"b": 2}}), false),
    ];
    for (a, b, want) in cases {
        assert_eq!(semantic_eq(&a, &b), want, "{a} vs {b}");
        assert_eq!(semantic_eq(&b, &a), want, "{b} vs {a}");
    }
}

#[test]
fn type_meta_and_uid_shapes() {
    let pod = lookup("", "v1", "pods").unwrap_or(namespace_info());
    let o = Obj::new(pod, json!({"metadata": {"name": "p"}}));
    let full: Value = serde_json::from_slice(&o.full_json()).unwrap_or(Value::Null);
    assert_eq!(
        full,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
    );
    let uid = new_uid();
    assert_eq!(uid.len(), 36);
    assert_eq!(&uid[14..15], "4");
    assert_eq!(name_suffix().len(), 5);
    assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00Z");
}

#[test]
fn objects_are_written_in_the_api_servers_member_order() {
    // kube-apiserver: kind, apiVersion, metadata, then the type's fields
    // (for an EndpointSlice addressType, endpoints, ports). serde_json's
    // alphabetical order put metadata after the endpoints.
    let es = lookup("discovery.k8s.io", "v1", "endpointslices").unwrap_or(namespace_info());
    let o = Obj::new(
        es,
        json!({"ports": [], "endpoints": [{"addresses": ["10.0.0.1"]}], "addressType": "IPv4",
               "metadata": {"name": "s", "namespace": "d"}}),
    );
    assert_eq!(
        String::from_utf8_lossy(&o.full_json()),
        r#"{"kind":"EndpointSlice","apiVersion":"discovery.k8s.io/v1","metadata":{"name":"s","namespace":"d"},"addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"]}],"ports":[]}"#
    );
    assert_eq!(
        String::from_utf8_lossy(&o.item),
        r#"{"metadata":{"name":"s","namespace":"d"},"addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"]}],"ports":[]}"#
    );
    // The stored bytes still parse back to the same tree.
    assert_eq!(o.value()["endpoints"][0]["addresses"][0], "10.0.0.1");
    // Without metadata (never stored, but not an error) and with a key that
    // needs escaping.
    let pod = lookup("", "v1", "pods").unwrap_or(namespace_info());
    let o = Obj::new(pod, json!({"b\"": 1, "a": 2}));
    assert_eq!(String::from_utf8_lossy(&o.item), r#"{"a":2,"b\"":1}"#);
    let o = Obj::new(pod, json!({"metadata": {}, "b\"": 1}));
    assert_eq!(
        String::from_utf8_lossy(&o.item),
        r#"{"metadata":{},"b\"":1}"#
    );
}
