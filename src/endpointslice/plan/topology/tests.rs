//! Upstream `topologycache_test.go` cases (TestSetNodes, TestGetAllocations,
//! TestAddHints, TestGetOverloadedServices), in our words.

use super::*;
use endpointd_kube::model::{Endpoint, EndpointConditions, EndpointHints, ForZone};

fn node(
    name: &str,
    zone: Option<&str>,
    cpu: Option<&str>,
    ready: bool,
    control_plane: bool,
) -> Arc<Node> {
    let mut n = Node::default();
    n.metadata.name = name.into();
    let mut labels: Vec<(&str, &str)> = Vec::new();
    if let Some(z) = zone {
        labels.push((ZONE_LABEL, z));
    }
    if control_plane {
        labels.push(("node-role.kubernetes.io/control-plane", ""));
    }
    n.metadata.labels = labels.into_iter().collect();
    n.ready = Some(ready);
    n.allocatable_cpu = cpu.map(Into::into);
    Arc::new(n)
}

fn two_zones(a_cpu: &str, b_cpu: &str) -> TopologyCache {
    let mut c = TopologyCache::new();
    c.set_nodes(&[
        node("n1", Some("zone-a"), Some(a_cpu), true, false),
        node("n2", Some("zone-b"), Some(b_cpu), true, false),
    ]);
    c
}

fn ep(zone: Option<&str>, ready: bool) -> Endpoint {
    Endpoint {
        addresses: vec!["10.0.0.1".into()].into(),
        conditions: EndpointConditions {
            ready: Some(ready),
            serving: Some(ready),
            terminating: Some(false),
        },
        zone: zone.map(Into::into),
        ..Default::default()
    }
}

fn slice(name: &str, eps: Vec<Endpoint>) -> EndpointSlice {
    let mut s = EndpointSlice::new(AddressType::IPv4);
    s.metadata.name = name.into();
    s.endpoints = eps;
    s
}

fn si(create: Vec<EndpointSlice>, unchanged: Vec<EndpointSlice>) -> SliceInfo {
    SliceInfo {
        service_key: "ns/svc".into(),
        address_type: Some(AddressType::IPv4),
        to_create: create,
        to_update: vec![],
        unchanged: unchanged.into_iter().map(Arc::new).collect(),
    }
}

fn hint_zones(slices: &[EndpointSlice]) -> Vec<Option<String>> {
    slices
        .iter()
        .flat_map(|s| s.endpoints.iter())
        .map(|e| e.hints.as_ref().map(|h| h.for_zones[0].name.to_string()))
        .collect()
}

type NodesRow = (
    &'static str,
    Vec<Arc<Node>>,
    Option<Vec<(&'static str, f64)>>,
);

#[test]
fn set_nodes_table() {
    let cases: Vec<NodesRow> = vec![
        (
            "two equal zones",
            vec![
                node("a", Some("z1"), Some("2"), true, false),
                node("b", Some("z2"), Some("2000m"), true, false),
            ],
            Some(vec![("z1", 0.5), ("z2", 0.5)]),
        ),
        (
            "uneven",
            vec![
                node("a", Some("z1"), Some("1"), true, false),
                node("b", Some("z2"), Some("3"), true, false),
            ],
            Some(vec![("z1", 0.25), ("z2", 0.75)]),
        ),
        (
            "one zone only",
            vec![
                node("a", Some("z1"), Some("2"), true, false),
                node("b", Some("z1"), Some("2"), true, false),
            ],
            None,
        ),
        (
            "a node without zone",
            vec![
                node("a", Some("z1"), Some("2"), true, false),
                node("b", None, Some("2"), true, false),
                node("c", Some("z2"), Some("2"), true, false),
            ],
            None,
        ),
        (
            "a node without cpu",
            vec![
                node("a", Some("z1"), Some("2"), true, false),
                node("b", Some("z2"), None, true, false),
            ],
            None,
        ),
        (
            "control plane and not-ready nodes ignored",
            vec![
                node("a", Some("z1"), Some("2"), true, false),
                node("b", Some("z2"), Some("2"), true, false),
                node("cp", None, None, true, true),
                node("down", None, None, false, false),
            ],
            Some(vec![("z1", 0.5), ("z2", 0.5)]),
        ),
        (
            // Upstream adds the quantities and rounds the sums: z1 is
            // 1500u + 1500u = 3m (not 2m + 2m), z2 3m, the total 6m.
            "sub-milli CPU (u, n) summed before rounding",
            vec![
                node("a", Some("z1"), Some("1500u"), true, false),
                node("b", Some("z1"), Some("1500000n"), true, false),
                node("c", Some("z2"), Some("3m"), true, false),
            ],
            Some(vec![("z1", 0.5), ("z2", 0.5)]),
        ),
    ];
    for (what, nodes, want) in cases {
        let mut c = TopologyCache::new();
        c.set_nodes(&nodes);
        let want = want.map(|v| {
            v.into_iter()
                .map(|(z, r)| (z.to_string(), r))
                .collect::<BTreeMap<_, _>>()
        });
        assert_eq!(c.ratios, want, "{what}");
    }
}

#[test]
fn allocations_table() {
    let c = two_zones("1", "3");
    let a = c.allocations(8).expect("allocations");
    // desired 2 / 6; minimum ceil(2/1.2)=2, ceil(6/1.2)=5; maximum min + 8 - 7.
    assert_eq!(
        a["zone-a"],
        Allocation {
            minimum: 2,
            maximum: 3,
            desired: 2.0
        }
    );
    assert_eq!(
        a["zone-b"],
        Allocation {
            minimum: 5,
            maximum: 6,
            desired: 6.0
        }
    );
    assert!(c
        .allocations(1)
        .unwrap_err()
        .to_string()
        .starts_with(messages::INSUFFICIENT_ENDPOINTS));
    let skew = two_zones("1", "9");
    // 3 endpoints: desired .3 / 2.7 → minimum 1 + 3 = 4 > 3.
    assert!(skew
        .allocations(3)
        .unwrap_err()
        .to_string()
        .starts_with(messages::MIN_EXCEEDS_THRESHOLD));
    assert_eq!(
        TopologyCache::new()
            .allocations(10)
            .unwrap_err()
            .to_string(),
        messages::INSUFFICIENT_NODE_INFO
    );
}

#[test]
fn add_hints_own_zone_then_redistribution_and_events() {
    let mut c = two_zones("2", "2");
    // 2 + 2 ready endpoints: each gets its own zone; hints enabled once.
    let (created, _, ev) = c.add_hints(&si(
        vec![slice(
            "",
            vec![
                ep(Some("zone-a"), true),
                ep(Some("zone-a"), true),
                ep(Some("zone-b"), true),
                ep(Some("zone-b"), true),
                ep(Some("zone-b"), false),
            ],
        )],
        vec![],
    ));
    assert_eq!(
        hint_zones(&created),
        vec![
            Some("zone-a".into()),
            Some("zone-a".into()),
            Some("zone-b".into()),
            Some("zone-b".into()),
            None
        ]
    );
    assert_eq!(
        ev,
        vec![EventSpec::normal(
            "TopologyAwareHintsEnabled",
            "Topology Aware Hints has been enabled, addressType: IPv4"
        )]
    );
    assert!(c.has_populated_hints("ns/svc"));
    // 3 in zone-a, 1 in zone-b: one zone-a endpoint is hinted to zone-b; no new event.
    let (created, _, ev) = c.add_hints(&si(
        vec![slice(
            "",
            vec![
                ep(Some("zone-a"), true),
                ep(Some("zone-a"), true),
                ep(Some("zone-a"), true),
                ep(Some("zone-b"), true),
            ],
        )],
        vec![],
    ));
    let zones = hint_zones(&created);
    assert_eq!(
        zones
            .iter()
            .filter(|z| z.as_deref() == Some("zone-b"))
            .count(),
        2,
        "{zones:?}"
    );
    assert!(ev.is_empty());
    assert!(c.get_overloaded_services().is_empty());
}

#[test]
fn add_hints_gives_up_with_upstream_reasons() {
    let mut c = two_zones("2", "2");
    let (created, _, ev) = c.add_hints(&si(
        vec![slice("", vec![ep(Some("zone-a"), true), ep(None, true)])],
        vec![],
    ));
    assert!(hint_zones(&created).iter().all(Option::is_none));
    assert_eq!(
        ev,
        vec![EventSpec::warning(
            "TopologyAwareHintsDisabled",
            "One or more endpoints do not have a zone specified, addressType: IPv4"
        )]
    );
    assert!(!c.has_populated_hints("ns/svc"));
    let mut none = TopologyCache::new();
    let (_, _, ev) = none.add_hints(&si(vec![slice("", vec![ep(Some("zone-a"), true)])], vec![]));
    assert_eq!(
        ev[0].message,
        format!("{}, addressType: IPv4", messages::INSUFFICIENT_NODE_INFO)
    );
}

#[test]
fn unchanged_slices_keep_valid_hints_and_lose_invalid_ones() {
    let mut c = two_zones("2", "2");
    let hinted = |z: &str| {
        let mut e = ep(Some(z), true);
        e.hints = Some(Box::new(EndpointHints {
            for_zones: vec![ForZone { name: z.into() }],
            for_nodes: vec![],
        }));
        e
    };
    let good = slice("good", vec![hinted("zone-a"), hinted("zone-b")]);
    let missing = slice("missing", vec![ep(Some("zone-a"), true), hinted("zone-b")]);
    let (_, updated, _) = c.add_hints(&si(vec![], vec![good, missing]));
    assert_eq!(
        updated
            .iter()
            .map(|s| s.metadata.name.as_str())
            .collect::<Vec<_>>(),
        vec!["missing"]
    );
    assert_eq!(
        hint_zones(&updated),
        vec![Some("zone-a".into()), Some("zone-b".into())]
    );
}

#[test]
fn hints_already_in_the_api_with_nothing_to_write_are_not_announced() {
    let hinted = |z: &str| {
        let mut e = ep(Some(z), true);
        e.hints = Some(Box::new(EndpointHints {
            for_zones: vec![ForZone { name: z.into() }],
            for_nodes: vec![],
        }));
        e
    };
    let good = || slice("good", vec![hinted("zone-a"), hinted("zone-b")]);
    let bare = || {
        slice(
            "bare",
            vec![ep(Some("zone-a"), true), ep(Some("zone-b"), true)],
        )
    };
    let enabled = || {
        vec![EventSpec::normal(
            "TopologyAwareHintsEnabled",
            "Topology Aware Hints has been enabled, addressType: IPv4",
        )]
    };
    // (what was said before: nothing since the start, "disabled" as Auto
    // was turned off, or "disabled" when hints could not be allocated;
    // unchanged slices, to create, whether "enabled" is announced)
    #[derive(Clone, Copy, Debug)]
    enum Before {
        Nothing,
        AutoOff,
        GaveUp,
    }
    let table: Vec<(Before, Vec<EndpointSlice>, Vec<EndpointSlice>, bool)> = vec![
        // A restart: the hints are in the API, nothing is written.
        (Before::Nothing, vec![good()], vec![], false),
        // Hints newly added to unhinted slices: announced (as upstream).
        (Before::Nothing, vec![bare()], vec![], true),
        // Hinted slices, but a slice is written too: announced (as upstream).
        (Before::Nothing, vec![good()], vec![bare()], true),
        // A first sync with nothing but creates: announced.
        (Before::Nothing, vec![], vec![bare()], true),
        // Auto turned off (trafficDistribution kept the same hints) and
        // on again: the last word was "disabled", so announced.
        (Before::AutoOff, vec![good()], vec![], true),
        (Before::GaveUp, vec![good()], vec![], true),
    ];
    for (before, unchanged, create, announced) in table {
        let mut c = two_zones("2", "2");
        match before {
            Before::Nothing => {}
            Before::AutoOff => c.note_disabled("ns/svc"),
            Before::GaveUp => {
                let (_, _, ev) = c.add_hints(&si(vec![slice("one", vec![ep(None, true)])], vec![]));
                assert_eq!(ev.len(), 1, "{ev:?}");
            }
        }
        let (_, _, ev) = c.add_hints(&si(create, unchanged));
        assert_eq!(ev, if announced { enabled() } else { vec![] }, "{before:?}");
        assert_eq!(ev, if announced { enabled() } else { vec![] });
        assert!(c.has_populated_hints("ns/svc"));
        // Once populated, never announced again.
        let (_, _, ev) = c.add_hints(&si(vec![bare()], vec![]));
        assert!(ev.is_empty());
    }
}

/// A dual-stack Service whose IPv6 endpoints cannot get hints (none of its
/// pods has an IPv6 address): IPv6 gives up on every sync (as upstream),
/// but IPv4's hints stay enabled and are announced once, not again on
/// every sync as upstream's per-Service flag makes it.
#[test]
fn one_family_giving_up_does_not_re_announce_the_other() {
    let mut c = two_zones("2", "2");
    let v4 = || {
        si(
            vec![slice(
                "v4",
                vec![ep(Some("zone-a"), true), ep(Some("zone-b"), true)],
            )],
            vec![],
        )
    };
    let v6 = || SliceInfo {
        address_type: Some(AddressType::IPv6),
        ..si(vec![slice("v6", vec![])], vec![])
    };
    let reasons = |ev: Vec<EventSpec>| ev.into_iter().map(|e| e.reason).collect::<Vec<_>>();
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.extend(reasons(c.add_hints(&v4()).2));
        seen.extend(reasons(c.add_hints(&v6()).2));
    }
    assert_eq!(
        seen,
        [
            "TopologyAwareHintsEnabled",
            "TopologyAwareHintsDisabled",
            "TopologyAwareHintsDisabled",
            "TopologyAwareHintsDisabled"
        ]
    );
    assert!(c.has_populated_hints("ns/svc"));
    // A single-stack give-up clears the flag, as upstream.
    let mut c = two_zones("2", "2");
    c.add_hints(&v4());
    c.add_hints(&si(vec![slice("one", vec![ep(None, true)])], vec![]));
    assert!(!c.has_populated_hints("ns/svc"));
}

#[test]
fn overloaded_services_after_node_changes() {
    let mut c = two_zones("2", "2");
    c.set_hints(
        "ns/svc",
        AddressType::IPv4,
        [("zone-a".to_string(), 2), ("zone-b".to_string(), 2)]
            .into_iter()
            .collect(),
    );
    assert!(c.get_overloaded_services().is_empty());
    // zone-b now has 3× the CPU: 2 of 4 endpoints is below ceil(4 × .75 / 1.2) = 3.
    c.set_nodes(&[
        node("n1", Some("zone-a"), Some("2"), true, false),
        node("n2", Some("zone-b"), Some("6"), true, false),
    ]);
    assert_eq!(c.get_overloaded_services(), vec!["ns/svc".to_string()]);
    c.remove_hints("ns/svc", AddressType::IPv4);
    assert!(c.get_overloaded_services().is_empty());
}

#[test]
fn remove_hints_from_slices_moves_hinted_unchanged_slices() {
    let mut hinted = ep(Some("zone-a"), true);
    hinted.hints = Some(Box::new(EndpointHints {
        for_zones: vec![ForZone {
            name: "zone-a".into(),
        }],
        for_nodes: vec![],
    }));
    let info = si(
        vec![slice("", vec![hinted.clone()])],
        vec![
            slice("h", vec![hinted]),
            slice("plain", vec![ep(Some("zone-a"), true)]),
        ],
    );
    let (c, u) = remove_hints_from_slices(&info);
    assert!(hint_zones(&c).iter().all(Option::is_none));
    assert_eq!(u.len(), 1);
    assert_eq!(u[0].metadata.name, "h");
    assert!(hint_zones(&u).iter().all(Option::is_none));
}

/// Upstream `Test_getGivingAndReceivingZones`, less its three cases with
/// negative allocated counts (ours are unsigned: a slice cannot hold fewer
/// than no hints).
#[test]
fn giving_and_receiving_table() {
    let alloc = |d: &[(&str, f64)]| -> BTreeMap<String, Allocation> {
        d.iter()
            .map(|(z, desired)| {
                let a = Allocation {
                    minimum: 0,
                    maximum: 0,
                    desired: *desired,
                };
                (z.to_string(), a)
            })
            .collect()
    };
    type Row = (
        &'static str,
        Vec<(&'static str, f64)>,
        Vec<(&'static str, usize)>,
        Vec<(&'static str, usize)>,
        Vec<(&'static str, usize)>,
    );
    let rows: Vec<Row> = vec![
        ("empty", vec![], vec![], vec![], vec![]),
        (
            "no need for rebalancing",
            vec![("zone-a", 1.2), ("zone-b", 1.1), ("zone-c", 1.0)],
            vec![("zone-a", 1), ("zone-b", 1), ("zone-c", 1)],
            vec![],
            vec![],
        ),
        (
            "same zone preferred even when one more would distribute slightly better",
            vec![("zone-a", 5.1), ("zone-b", 5.1), ("zone-c", 5.8)],
            vec![("zone-a", 16)],
            vec![("zone-a", 10)],
            vec![("zone-b", 5), ("zone-c", 5)],
        ),
        (
            "two zones need < 1: the one that needs it most gets it",
            vec![("zone-a", 5.0), ("zone-b", 5.6), ("zone-c", 5.4)],
            vec![("zone-a", 16)],
            vec![("zone-a", 11)],
            vec![("zone-b", 6), ("zone-c", 5)],
        ),
        (
            "two zones with extra: the one with most extra gives",
            vec![("zone-a", 5.0), ("zone-b", 5.6), ("zone-c", 5.4)],
            vec![("zone-b", 8), ("zone-c", 8)],
            vec![("zone-b", 2), ("zone-c", 3)],
            vec![("zone-a", 5)],
        ),
        (
            "more allocated than allocations",
            vec![("zone-a", 5.0), ("zone-b", 5.0), ("zone-c", 5.0)],
            vec![("zone-a", 6), ("zone-b", 6), ("zone-c", 6)],
            vec![],
            vec![],
        ),
        (
            "negative allocations",
            vec![("zone-a", -5.0), ("zone-b", -5.0), ("zone-c", -5.0)],
            vec![("zone-a", 6), ("zone-b", 6), ("zone-c", 6)],
            vec![],
            vec![],
        ),
    ];
    for (name, desired, allocated, giving, receiving) in rows {
        let (g, r) = giving_and_receiving(&alloc(&desired), &zones(&allocated));
        assert_eq!(g, zones(&giving), "{name}: giving");
        assert_eq!(r, zones(&receiving), "{name}: receiving");
    }
}

fn zones(c: &[(&str, usize)]) -> ZoneCounts {
    c.iter().map(|(z, n)| (z.to_string(), *n)).collect()
}

fn hints_per_zone(slices: &[EndpointSlice]) -> ZoneCounts {
    let mut m = BTreeMap::new();
    for z in hint_zones(slices).into_iter().flatten() {
        *m.entry(z).or_default() += 1;
    }
    m
}

#[test]
fn a_zone_without_endpoints_gets_its_minimum() {
    // Three zones of equal CPU, 5 + 5 ready endpoints in two of them:
    // desired 3.33 each, minimum 3, maximum 4. Upstream gives zone-c three
    // (2 from zone-a, 1 from zone-b); stopping when either side is short
    // of a whole endpoint gave it two, below its minimum, and left the
    // Service overloaded.
    let mut c = TopologyCache::new();
    c.set_nodes(&[
        node("n1", Some("zone-a"), Some("4"), true, false),
        node("n2", Some("zone-b"), Some("4"), true, false),
        node("n3", Some("zone-c"), Some("4"), true, false),
    ]);
    let mut eps: Vec<Endpoint> = (0..5).map(|_| ep(Some("zone-a"), true)).collect();
    eps.extend((0..5).map(|_| ep(Some("zone-b"), true)));
    let (created, _, _) = c.add_hints(&si(vec![slice("", eps)], vec![]));
    assert_eq!(
        hints_per_zone(&created),
        zones(&[("zone-a", 3), ("zone-b", 4), ("zone-c", 3)])
    );
    assert!(c.get_overloaded_services().is_empty());
}

#[test]
fn hints_within_every_maximum_are_kept_on_the_next_sync() {
    // 7 : 1 CPU, 12 ready endpoints all in zone-a: desired 10.5 / 2,
    // maximum 10 / 3. Upstream hints 10 + 2, which the next sync keeps;
    // 11 + 1 was over zone-a's maximum, so every sync rewrote the slice.
    let mut c = two_zones("7", "1");
    let eps: Vec<Endpoint> = (0..12).map(|_| ep(Some("zone-a"), true)).collect();
    let (created, _, _) = c.add_hints(&si(vec![slice("", eps)], vec![]));
    assert_eq!(
        hints_per_zone(&created),
        zones(&[("zone-a", 10), ("zone-b", 2)])
    );
    let mut written = created[0].clone();
    written.metadata.name = "svc-1".into();
    let (creates, updates, _) = c.add_hints(&si(vec![], vec![written]));
    assert!(creates.is_empty() && updates.is_empty(), "{updates:?}");
    assert!(c.get_overloaded_services().is_empty());
}

/// The helper review's case: CPU quantities that floating point turned
/// into one millicore too many (1900m → 1901) tipped equal zones to
/// 0.4999/0.5001, so no endpoint was re-hinted where upstream moves one.
#[test]
fn exact_cpu_ratios_decide_the_hints() {
    let mut c = TopologyCache::new();
    c.set_nodes(&[
        node("a1", Some("zone-a"), Some("1900m"), true, false),
        node("a2", Some("zone-a"), Some("1900m"), true, false),
        node("b1", Some("zone-b"), Some("3800m"), true, false),
    ]);
    let mut eps = vec![ep(Some("zone-a"), true); 7];
    eps.extend(vec![ep(Some("zone-b"), true); 5]);
    let (created, _, _) = c.add_hints(&si(vec![slice("", eps)], vec![]));
    let zones = hint_zones(&created);
    let to = |z: &str| zones.iter().filter(|h| h.as_deref() == Some(z)).count();
    assert_eq!((to("zone-a"), to("zone-b")), (6, 6), "{zones:?}");
    assert_eq!(
        zones[..7]
            .iter()
            .filter(|h| h.as_deref() == Some("zone-b"))
            .count(),
        1,
        "exactly one zone-a endpoint hinted to zone-b: {zones:?}"
    );
}
