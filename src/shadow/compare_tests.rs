use super::*;
use serde_json::json;

fn subsets(v: serde_json::Value) -> Vec<EndpointSubset> {
    serde_json::from_value(v).expect("subsets")
}

fn addr(ip: &str, pod: &str) -> serde_json::Value {
    json!({"ip": ip, "nodeName": "n1",
           "targetRef": {"kind": "Pod", "namespace": "ns", "name": pod, "uid": format!("u-{pod}"), "resourceVersion": "7"}})
}

#[test]
fn endpoints_compare_as_sets() {
    // What endpointd computes: two ports, three pods, one not ready.
    let ours = subsets(json!([
        {"addresses": [addr("10.0.0.1", "a"), addr("10.0.0.2", "b")],
         "notReadyAddresses": [addr("10.0.0.3", "c")],
         "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}, {"name": "m", "port": 9090, "protocol": "TCP"}]}
    ]));
    // kube-controller-manager's order (ports and addresses shuffled, other
    // targetRef resourceVersions): the same.
    let mut kcm_addr_b = addr("10.0.0.2", "b");
    kcm_addr_b["targetRef"]["resourceVersion"] = json!("99");
    let kcm = subsets(json!([
        {"addresses": [kcm_addr_b, addr("10.0.0.1", "a")],
         "notReadyAddresses": [addr("10.0.0.3", "c")],
         "ports": [{"name": "m", "port": 9090, "protocol": "TCP"}, {"name": "http", "port": 8080, "protocol": "TCP"}]}
    ]));
    assert_eq!(compare_endpoints(&ours, false, Some(&kcm)), vec![]);
    // (stored subsets, kinds expected)
    let cases: Vec<(serde_json::Value, Vec<&str>)> = vec![
        // A missing pod.
        (
            json!([{"addresses": [addr("10.0.0.1", "a")], "notReadyAddresses": [addr("10.0.0.3", "c")],
                    "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}, {"name": "m", "port": 9090, "protocol": "TCP"}]}]),
            vec!["endpoints_addresses"],
        ),
        // A wrong readiness.
        (
            json!([{"addresses": [addr("10.0.0.1", "a"), addr("10.0.0.2", "b"), addr("10.0.0.3", "c")],
                    "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}, {"name": "m", "port": 9090, "protocol": "TCP"}]}]),
            vec!["endpoints_addresses"],
        ),
        // A stale port.
        (
            json!([{"addresses": [addr("10.0.0.1", "a"), addr("10.0.0.2", "b")], "notReadyAddresses": [addr("10.0.0.3", "c")],
                    "ports": [{"name": "http", "port": 8081, "protocol": "TCP"}, {"name": "m", "port": 9090, "protocol": "TCP"}]}]),
            vec!["endpoints_ports"],
        ),
    ];
    for (i, (stored, kinds)) in cases.into_iter().enumerate() {
        let got = compare_endpoints(&ours, false, Some(&subsets(stored)));
        let got: Vec<&str> = got.iter().map(|d| d.kind.as_str()).collect();
        assert_eq!(got, kinds, "case {i}");
    }
    let missing = compare_endpoints(&ours, false, None);
    assert_eq!(missing[0].kind, "endpoints_missing");
}

#[test]
fn over_capacity_accepts_any_thousand_of_ours() {
    let many: Vec<serde_json::Value> = (0..1200)
        .map(|i| addr(&format!("10.1.{}.{}", i / 250, i % 250), &format!("p{i}")))
        .collect();
    let ours = subsets(json!([{"addresses": many, "ports": [{"port": 80, "protocol": "TCP"}]}]));
    let kept: Vec<serde_json::Value> = (200..1200)
        .map(|i| addr(&format!("10.1.{}.{}", i / 250, i % 250), &format!("p{i}")))
        .collect();
    let stored = subsets(json!([{"addresses": kept, "ports": [{"port": 80, "protocol": "TCP"}]}]));
    assert_eq!(compare_endpoints(&ours, true, Some(&stored)), vec![]);
    let few = subsets(
        json!([{"addresses": [addr("10.1.0.1", "p1")], "ports": [{"port": 80, "protocol": "TCP"}]}]),
    );
    assert_eq!(
        compare_endpoints(&ours, true, Some(&few))[0].kind,
        "endpoints_addresses"
    );
}

fn slice(name: &str, endpoints: serde_json::Value, port: i32) -> EndpointSlice {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns"},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "http", "port": port, "protocol": "TCP"}]
    }))
    .expect("slice")
}

fn ep(ip: &str, pod: &str, ready: bool, zone_hint: Option<&str>) -> serde_json::Value {
    let mut e = json!({"addresses": [ip], "nodeName": "n1", "zone": "z1",
        "conditions": {"ready": ready, "serving": ready, "terminating": false},
        "targetRef": {"kind": "Pod", "namespace": "ns", "name": pod, "uid": format!("u-{pod}")}});
    if let Some(z) = zone_hint {
        e["hints"] = json!({"forZones": [{"name": z}]});
    }
    e
}

#[test]
fn slices_compare_by_endpoint_set_not_partitioning() {
    let ours = vec![slice(
        "",
        json!([
            ep("10.0.0.1", "a", true, Some("z1")),
            ep("10.0.0.2", "b", true, Some("z1")),
            ep("10.0.0.3", "c", false, None)
        ]),
        8080,
    )];
    // The same endpoints split over two slices: fine (max 2 per slice).
    let s1 = slice(
        "web-1",
        json!([
            ep("10.0.0.3", "c", false, None),
            ep("10.0.0.1", "a", true, Some("z1"))
        ]),
        8080,
    );
    let s2 = slice(
        "web-2",
        json!([ep("10.0.0.2", "b", true, Some("z1"))]),
        8080,
    );
    assert_eq!(
        compare_slices(AddressType::IPv4, &ours, &[&s1, &s2], 2),
        vec![]
    );
    // Four slices for three endpoints is beyond upstream's packing.
    let empty = slice("web-3", json!([]), 8080);
    let e4 = slice("web-4", json!([]), 8080);
    let got = compare_slices(AddressType::IPv4, &ours, &[&s1, &s2, &empty, &e4], 2);
    assert_eq!(
        got.iter().map(|d| d.kind.as_str()).collect::<Vec<_>>(),
        ["slice_count"]
    );
    // (stored slice, kinds expected)
    let cases: Vec<(EndpointSlice, Vec<&str>)> = vec![
        (
            slice(
                "web-1",
                json!([
                    ep("10.0.0.1", "a", true, Some("z1")),
                    ep("10.0.0.2", "b", true, Some("z1"))
                ]),
                8080,
            ),
            vec!["slice_endpoints"],
        ),
        (
            slice(
                "web-1",
                json!([
                    ep("10.0.0.1", "a", true, Some("z1")),
                    ep("10.0.0.2", "b", true, Some("z1")),
                    ep("10.0.0.3", "c", true, None)
                ]),
                8080,
            ),
            vec!["slice_conditions"],
        ),
        (
            slice(
                "web-1",
                json!([
                    ep("10.0.0.1", "a", true, None),
                    ep("10.0.0.2", "b", true, Some("z1")),
                    ep("10.0.0.3", "c", false, None)
                ]),
                8080,
            ),
            vec!["slice_hints"],
        ),
        (
            slice(
                "web-1",
                json!([
                    ep("10.0.0.1", "a", true, Some("z1")),
                    ep("10.0.0.2", "b", true, Some("z1")),
                    ep("10.0.0.3", "c", false, None)
                ]),
                8081,
            ),
            vec!["slice_ports"],
        ),
    ];
    for (i, (stored, kinds)) in cases.into_iter().enumerate() {
        let got = compare_slices(AddressType::IPv4, &ours, &[&stored], 100);
        assert_eq!(
            got.iter().map(|d| d.kind.as_str()).collect::<Vec<_>>(),
            kinds,
            "case {i}: {got:?}"
        );
    }
    let got = compare_slices(AddressType::IPv4, &ours, &[], 100);
    assert_eq!(got[0].kind, "slices_missing");
}
