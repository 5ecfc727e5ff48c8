use super::*;
use crate::runtime::labels::OVER_CAPACITY_ANNOTATION;
use serde_json::json;

/// The Endpoints comparison for a Service without labels.
fn unlabelled(d: &[EndpointSubset], over: bool, cur: Option<&Endpoints>) -> Vec<Difference> {
    compare_endpoints(d, over, cur, &Labels::new())
}

fn subsets(v: serde_json::Value) -> Vec<EndpointSubset> {
    serde_json::from_value(v).expect("subsets")
}

/// A stored Endpoints holding `subsets`, annotated over capacity or not.
fn stored(subsets: &[EndpointSubset], truncated: bool) -> Endpoints {
    let mut e: Endpoints = serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "ns"}}))
    .expect("endpoints");
    e.subsets = subsets.to_vec();
    if truncated {
        e.metadata
            .annotations
            .insert(OVER_CAPACITY_ANNOTATION, "truncated");
    }
    e
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
    assert_eq!(unlabelled(&ours, false, Some(&stored(&kcm, false))), vec![]);
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
        // The same pod name and IP, but another pod (a new uid).
        (
            json!([{"addresses": [addr("10.0.0.1", "a"), {"ip": "10.0.0.2", "nodeName": "n1",
                      "targetRef": {"kind": "Pod", "namespace": "ns", "name": "b", "uid": "u-b-2"}}],
                    "notReadyAddresses": [addr("10.0.0.3", "c")],
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
    let stored_eps = |v| stored(&subsets(v), false);
    for (i, (stored, kinds)) in cases.into_iter().enumerate() {
        let got = unlabelled(&ours, false, Some(&stored_eps(stored)));
        let got: Vec<&str> = got.iter().map(|d| d.kind.as_str()).collect();
        assert_eq!(got, kinds, "case {i}");
    }
    let missing = unlabelled(&ours, false, None);
    assert_eq!(missing[0].kind, "endpoints_missing");
    // An empty side reads "(none)", never a blank.
    let empty = unlabelled(&ours, false, Some(&stored_eps(json!([]))));
    let ports = empty
        .iter()
        .find(|d| d.kind == "endpoints_ports")
        .expect("a ports difference");
    assert_eq!(
        ports.detail,
        "ports (none) stored, want http:8080/TCP, m:9090/TCP"
    );
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
    let kept = subsets(json!([{"addresses": kept, "ports": [{"port": 80, "protocol": "TCP"}]}]));
    let kinds = |got: Vec<Difference>| got.into_iter().map(|d| d.kind).collect::<Vec<_>>();
    assert_eq!(
        kinds(unlabelled(&ours, true, Some(&stored(&kept, true)))),
        Vec::<String>::new()
    );
    // Not annotated over-capacity.
    assert_eq!(
        kinds(unlabelled(&ours, true, Some(&stored(&kept, false)))),
        ["endpoints_annotation"]
    );
    let few = subsets(
        json!([{"addresses": [addr("10.1.0.1", "p1")], "ports": [{"port": 80, "protocol": "TCP"}]}]),
    );
    assert_eq!(
        kinds(unlabelled(&ours, true, Some(&stored(&few, true)))),
        ["endpoints_addresses"]
    );
}

#[test]
fn over_capacity_keeps_ready_addresses_first() {
    let a = |i: usize| addr(&format!("10.2.{}.{}", i / 250, i % 250), &format!("q{i}"));
    // 900 ready, 300 not ready: all 900 ready and 100 not ready are kept.
    let ours = subsets(json!([{
        "addresses": (0..900).map(a).collect::<Vec<_>>(),
        "notReadyAddresses": (900..1200).map(a).collect::<Vec<_>>(),
        "ports": [{"port": 80, "protocol": "TCP"}]}]));
    let right = subsets(json!([{
        "addresses": (0..900).map(a).collect::<Vec<_>>(),
        "notReadyAddresses": (1100..1200).map(a).collect::<Vec<_>>(),
        "ports": [{"port": 80, "protocol": "TCP"}]}]));
    assert_eq!(unlabelled(&ours, true, Some(&stored(&right, true))), vec![]);
    // 1000 addresses, all ours, but 50 ready ones dropped for not-ready ones.
    let wrong = subsets(json!([{
        "addresses": (50..900).map(a).collect::<Vec<_>>(),
        "notReadyAddresses": (900..1050).map(a).collect::<Vec<_>>(),
        "ports": [{"port": 80, "protocol": "TCP"}]}]));
    let got = unlabelled(&ours, true, Some(&stored(&wrong, true)));
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].kind, "endpoints_addresses");
    assert!(
        got[0].detail.contains("850 ready (want 1000, 900 ready)"),
        "{got:?}"
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
    ep_with(ip, pod, ready, zone_hint, None)
}

fn ep_with(
    ip: &str,
    pod: &str,
    ready: bool,
    zone_hint: Option<&str>,
    node_hint: Option<&str>,
) -> serde_json::Value {
    let mut e = json!({"addresses": [ip], "nodeName": "n1", "zone": "z1",
        "conditions": {"ready": ready, "serving": ready, "terminating": false},
        "targetRef": {"kind": "Pod", "namespace": "ns", "name": pod, "uid": format!("u-{pod}")}});
    if let Some(z) = zone_hint {
        e["hints"] = json!({"forZones": [{"name": z}]});
    }
    if let Some(n) = node_hint {
        e["hints"]["forNodes"] = json!([{"name": n}]);
    }
    e
}

fn new_uid(mut e: serde_json::Value) -> serde_json::Value {
    e["targetRef"]["uid"] = json!("u-c-2");
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
        // A node hint ours does not give (PreferSameNode elsewhere).
        (
            slice(
                "web-1",
                json!([
                    ep_with("10.0.0.1", "a", true, Some("z1"), Some("n1")),
                    ep("10.0.0.2", "b", true, Some("z1")),
                    ep("10.0.0.3", "c", false, None)
                ]),
                8080,
            ),
            vec!["slice_hints"],
        ),
        // Another pod of the same name and IP (a new uid).
        (
            slice(
                "web-1",
                json!([
                    ep("10.0.0.1", "a", true, Some("z1")),
                    ep("10.0.0.2", "b", true, Some("z1")),
                    new_uid(ep("10.0.0.3", "c", false, None))
                ]),
                8080,
            ),
            vec!["slice_endpoints"],
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
    assert_eq!(got[0].scope, "IPv4");
}

#[test]
fn slices_of_a_dropped_address_type_are_a_difference() {
    let s = slice("web-v6", json!([]), 8080);
    let got = extra_slices(AddressType::IPv6, &[&s]);
    assert_eq!(got.len(), 1);
    assert_eq!(
        (got[0].kind.as_str(), got[0].scope.as_str()),
        ("slices_extra", "IPv6")
    );
    assert!(got[0].detail.contains("web-v6"), "{got:?}");
    assert!(extra_slices(AddressType::IPv6, &[]).is_empty());
}

#[test]
fn a_difference_is_the_same_while_kind_and_scope_are() {
    let ours = [slice(
        "",
        json!([
            ep("10.0.0.1", "a", true, None),
            ep("10.0.0.2", "b", true, None),
            ep("10.0.0.3", "c", true, None)
        ]),
        80,
    )];
    let one = slice("s", json!([ep("10.0.0.1", "a", true, None)]), 80);
    let two = slice(
        "s",
        json!([
            ep("10.0.0.1", "a", true, None),
            ep("10.0.0.2", "b", true, None)
        ]),
        80,
    );
    let a = compare_slices(AddressType::IPv4, &ours, &[&one], 100);
    let b = compare_slices(AddressType::IPv4, &ours, &[&two], 100);
    let c = compare_slices(AddressType::IPv6, &ours, &[&two], 100);
    assert_ne!(a[0].detail, b[0].detail);
    assert!(a[0].same_as(&b[0]));
    assert!(!b[0].same_as(&c[0]));
}

fn labels(v: serde_json::Value) -> Labels {
    serde_json::from_value(v).expect("labels")
}

#[test]
fn endpoints_labels_compare_as_the_reconciler_decides_a_rewrite() {
    let svc = labels(json!({"team": "edge", "tier": "web"}));
    let with = |l: serde_json::Value| {
        let mut e = stored(&[], false);
        e.metadata.labels = labels(l);
        e
    };
    // (stored labels, detail expected; None: no difference)
    let cases: Vec<(serde_json::Value, Option<&str>)> = vec![
        (
            json!({"team": "edge", "tier": "web",
                   "endpoints.kubernetes.io/managed-by": "endpoint-controller",
                   "service.kubernetes.io/headless": ""}),
            None,
        ),
        // kube-controller-manager before 1.33 writes no managed-by label.
        (json!({"team": "edge", "tier": "web"}), None),
        (
            json!({"team": "core", "tier": "web"}),
            Some("labels: team=core stored, want team=edge"),
        ),
        (json!({"tier": "web"}), Some("labels: missing team=edge")),
        // Another manager's Endpoints: endpointd would take it over.
        (
            json!({"team": "edge", "tier": "web",
                   "endpoints.kubernetes.io/managed-by": "someone-else"}),
            Some(
                "endpoints.kubernetes.io/managed-by=someone-else stored, want endpoint-controller",
            ),
        ),
        (
            json!({"team": "edge", "tier": "web", "x": "y"}),
            Some("labels: unexpected x=y"),
        ),
    ];
    for (l, want) in cases {
        let got = compare_endpoints(&[], false, Some(&with(l.clone())), &svc);
        let got: Vec<(&str, &str)> = got
            .iter()
            .map(|d| (d.kind.as_str(), d.detail.as_str()))
            .collect();
        let want: Vec<(&str, &str)> = want.map(|d| ("endpoints_labels", d)).into_iter().collect();
        assert_eq!(got, want, "{l}");
    }
}

#[test]
fn slice_labels_compare_but_for_the_reserved_ones() {
    let mut ours = slice("", json!([ep("10.0.0.1", "a", true, None)]), 8080);
    ours.metadata.labels = labels(json!({"team": "edge",
        "kubernetes.io/service-name": "web",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
        "service.kubernetes.io/headless": ""}));
    let stored_with = |l: serde_json::Value| {
        let mut s = slice("web-abc", json!([ep("10.0.0.1", "a", true, None)]), 8080);
        s.metadata.labels = labels(l);
        s
    };
    let same = stored_with(json!({"team": "edge",
        "kubernetes.io/service-name": "web",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}));
    assert_eq!(
        compare_slices(
            AddressType::IPv4,
            std::slice::from_ref(&ours),
            &[&same],
            100
        ),
        vec![],
        "the headless label alone is no rewrite (upstream's setEndpointSliceLabels)"
    );
    let other = stored_with(json!({"team": "core",
        "kubernetes.io/service-name": "web",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}));
    let got = compare_slices(AddressType::IPv4, &[ours], &[&other], 100);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].kind, "slice_labels");
    assert_eq!(
        got[0].detail,
        "IPv4: web-abc: labels: team=core stored, want team=edge"
    );
}
