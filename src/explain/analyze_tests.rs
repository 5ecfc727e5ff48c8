use super::*;
use endpointd_kube::model::{EndpointSlice, Endpoints, Node};
use serde_json::{json, Value};

fn svc(extra: Value) -> Service {
    let mut v = json!({
        "metadata": {"name": "web", "namespace": "ns", "uid": "s1"},
        "spec": {"selector": {"app": "web", "tier": "fe"}, "clusterIP": "10.96.0.10",
                 "ipFamilies": ["IPv4"],
                 "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]}
    });
    merge(&mut v, extra);
    serde_json::from_value(v).expect("service")
}

fn merge(a: &mut Value, b: Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match v {
                    // A null removes the key (so a pod can lose a label).
                    Value::Null => {
                        a.remove(&k);
                    }
                    v => merge(a.entry(k).or_insert(Value::Null), v),
                }
            }
        }
        (a, b) => *a = b,
    }
}

fn pod(name: &str, extra: Value) -> Arc<Pod> {
    let mut v = json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("u-{name}"),
                     "labels": {"app": "web", "tier": "fe"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c",
                 "ports": [{"name": "http", "containerPort": 8080}]}]},
        "status": {"phase": "Running", "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}],
                   "conditions": [{"type": "Ready", "status": "True"}]}
    });
    merge(&mut v, extra);
    Arc::new(serde_json::from_value(v).expect("pod"))
}

fn node(name: &str) -> Arc<Node> {
    Arc::new(
        serde_json::from_value(
            json!({"metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": "z1"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "allocatable": {"cpu": "2"}}}),
        )
        .expect("node"),
    )
}

fn report(svc: &Service, pods: &[Arc<Pod>], nodes: &[Arc<Node>]) -> Explanation {
    analyze(&ExplainInputs {
        service: svc,
        pods,
        nodes,
        endpoints: None,
        slices: &[],
        max_endpoints_per_slice: 100,
    })
}

#[test]
fn every_reason_a_selected_pod_is_missing() {
    let nodes = [node("n1")];
    // (pod changes, service changes, expected state, expected reasons)
    type Case = (Value, Value, &'static str, Vec<Reason>);
    let cases: Vec<Case> = vec![
        (json!({}), json!({}), "ready", vec![]),
        (
            json!({"status": {"phase": "Succeeded"}}),
            json!({}),
            "excluded",
            vec![Reason::TerminalPhase {
                phase: "Succeeded".into(),
            }],
        ),
        (
            json!({"status": {"podIP": null, "podIPs": null}}),
            json!({}),
            "excluded",
            vec![Reason::NoPodIp],
        ),
        (
            json!({}),
            json!({"spec": {"ipFamilies": ["IPv6"], "clusterIP": "fd00::10"}}),
            "excluded",
            vec![Reason::NoIpOfFamily {
                family: "IPv6".into(),
            }],
        ),
        (
            json!({"status": {"podIP": "999.1.1.1", "podIPs": [{"ip": "999.1.1.1"}, {"ip": "fe80::1%eth0"}]}}),
            json!({}),
            "excluded",
            vec![Reason::InvalidPodIp {
                ips: vec!["999.1.1.1".into(), "fe80::1%eth0".into()],
            }],
        ),
        (
            // A valid address of the other family beside one that is no
            // address: the broken one is what to fix.
            json!({"status": {"podIP": "fd00::7", "podIPs": [{"ip": "fd00::7"}, {"ip": "not-an-ip"}]}}),
            json!({}),
            "excluded",
            vec![Reason::InvalidPodIp {
                ips: vec!["not-an-ip".into()],
            }],
        ),
        (
            json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}),
            json!({}),
            "terminating",
            vec![Reason::Terminating],
        ),
        (
            json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
            json!({}),
            "notReady",
            vec![Reason::NotReady],
        ),
        (
            json!({"spec": {"containers": [{"name": "c", "ports": [{"name": "web", "containerPort": 8080}]}]}}),
            json!({}),
            "ready",
            vec![Reason::NamedPortMissing {
                service_port: "http".into(),
                target_port: "http".into(),
                protocol: "TCP".into(),
            }],
        ),
        (
            json!({"spec": {"nodeName": "gone"}}),
            json!({}),
            "ready",
            vec![Reason::NodeMissing {
                node: "gone".into(),
            }],
        ),
        // publishNotReadyAddresses: a missing node does not matter.
        (
            json!({"spec": {"nodeName": "gone"}}),
            json!({"spec": {"publishNotReadyAddresses": true}}),
            "ready",
            vec![],
        ),
    ];
    for (i, (p, s, state, reasons)) in cases.into_iter().enumerate() {
        let svc = svc(s);
        let pods = [pod("a", p)];
        let r = report(&svc, &pods, &nodes);
        assert_eq!(r.pods.len(), 1, "case {i}");
        assert_eq!(r.pods[0].state, state, "case {i}");
        assert_eq!(r.pods[0].reasons, reasons, "case {i}");
    }
}

#[test]
fn near_misses_name_the_one_failing_label() {
    let svc = svc(json!({}));
    let pods = [
        pod(
            "typo",
            json!({"metadata": {"labels": {"app": "wbe", "tier": "fe"}}}),
        ),
        pod(
            "unlabelled",
            json!({"metadata": {"labels": {"app": "web", "tier": null}}}),
        ),
        pod(
            "far",
            json!({"metadata": {"labels": {"app": "db", "tier": "be"}}}),
        ),
        pod("in", json!({})),
    ];
    let r = report(&svc, &pods, &[node("n1")]);
    assert_eq!(
        r.pods.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["in"]
    );
    assert_eq!(
        r.near_misses,
        vec![
            NearMiss {
                pod: "typo".into(),
                label: "app".into(),
                want: "web".into(),
                have: Some("wbe".into())
            },
            NearMiss {
                pod: "unlabelled".into(),
                label: "tier".into(),
                want: "fe".into(),
                have: None
            },
        ]
    );
}

#[test]
fn unmanaged_services_say_why() {
    let none: Service = serde_json::from_value(json!({
        "metadata": {"name": "manual", "namespace": "ns"},
        "spec": {"ports": [{"port": 80}]}
    }))
    .expect("svc");
    let r = report(&none, &[pod("a", json!({}))], &[]);
    assert!(!r.managed);
    assert!(r
        .unmanaged_reason
        .as_deref()
        .is_some_and(|w| w.contains("no selector")));
    assert!(r.pods.is_empty());
    let ext = svc(json!({"spec": {"type": "ExternalName", "externalName": "example.com"}}));
    let r = report(&ext, &[pod("a", json!({}))], &[]);
    assert!(r
        .unmanaged_reason
        .as_deref()
        .is_some_and(|w| w.contains("ExternalName")));
}

#[test]
fn in_sync_compares_with_what_the_controllers_compute() {
    let svc = svc(
        json!({"spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}}),
    );
    let pods = [pod("a", json!({}))];
    let nodes = [node("n1")];
    // Nothing stored: both out of sync.
    let r = report(&svc, &pods, &nodes);
    assert!(!r.endpoints_in_sync && !r.slices_in_sync);
    assert_eq!(
        r.differences,
        [
            "Endpoints: no Endpoints object; endpointd would create it",
            "EndpointSlices: IPv4: no EndpointSlice; endpointd would create 1"
        ]
    );
    // Stored as endpointd would write them: in sync, and the pod is found
    // in both.
    let crate::endpoints::plan::EndpointsPlan::Create(ep) =
        crate::endpoints::plan::plan(&crate::endpoints::plan::EndpointsInput {
            service: &svc,
            pods: &pods,
            current: None,
            trigger_time: None,
        })
    else {
        panic!("a create");
    };
    let mut ep: Endpoints = ep;
    ep.metadata.resource_version = "5".into();
    let by_name = |n: &str| nodes.iter().find(|x| *x.metadata.name == *n).cloned();
    let plan = reconcile(&ReconcileInput {
        service: &svc,
        pods: &pods,
        existing: &[],
        nodes: &by_name,
        trigger_time: None,
        max_endpoints_per_slice: 100,
        topology: None,
    });
    let mut slice = plan.by_type[0].1.creates[0].clone();
    slice.metadata.name = "web-abcde".into();
    slice.metadata.resource_version = "6".into();
    let slices = [Arc::new(slice)];
    let r = analyze(&ExplainInputs {
        service: &svc,
        pods: &pods,
        nodes: &nodes,
        endpoints: Some(&ep),
        slices: &slices,
        max_endpoints_per_slice: 100,
    });
    assert!(
        r.endpoints_in_sync && r.slices_in_sync,
        "{:?}",
        r.differences
    );
    assert_eq!(r.pods[0].in_endpoints.as_deref(), Some("addresses"));
    assert_eq!(r.pods[0].in_slices.len(), 1);
    assert_eq!(r.pods[0].in_slices[0].slice, "web-abcde");
    assert_eq!(r.pods[0].in_slices[0].ready, Some(true));
    // The pod turns NotReady: both out of sync until the next sync.
    let not_ready = [pod(
        "a",
        json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
    )];
    let r = analyze(&ExplainInputs {
        service: &svc,
        pods: &not_ready,
        nodes: &nodes,
        endpoints: Some(&ep),
        slices: &slices,
        max_endpoints_per_slice: 100,
    });
    assert!(
        !r.endpoints_in_sync && !r.slices_in_sync,
        "{:?}",
        r.differences
    );
    assert!(
        r.differences
            .iter()
            .any(|d| d.starts_with("EndpointSlices: IPv4: 10.0.0.1 (a): ready=true")),
        "{:?}",
        r.differences
    );

    // Another writer's objects: the same meaning, other labels and another
    // slice name — in sync, with notes.
    let mut kcm_ep = ep.clone();
    kcm_ep.metadata.labels.insert("written-by", "kcm");
    let mut kcm_slice = (*slices[0]).clone();
    kcm_slice.metadata.name = "web-kcm12".into();
    kcm_slice.metadata.labels.insert("extra", "1");
    let kcm_slices = [Arc::new(kcm_slice)];
    let r = analyze(&ExplainInputs {
        service: &svc,
        pods: &pods,
        nodes: &nodes,
        endpoints: Some(&kcm_ep),
        slices: &kcm_slices,
        max_endpoints_per_slice: 100,
    });
    assert!(
        r.endpoints_in_sync && r.slices_in_sync,
        "{:?}",
        r.differences
    );
    assert!(
        r.differences
            .iter()
            .any(|d| d.contains("would still rewrite it (labels: unexpected written-by=kcm)"))
            && r.differences
                .iter()
                .any(|d| d.contains("would still write 1 slice(s)")),
        "{:?}",
        r.differences
    );
    let text = super::super::render::text(&r);
    assert!(
        text.contains("In sync") && text.contains("note: "),
        "{text}"
    );
}

#[test]
fn over_capacity_names_the_pods_the_endpoints_leave_out() {
    let svc = svc(
        json!({"spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}}),
    );
    let ip = |i: usize| format!("10.1.{}.{}", i / 250, i % 250);
    // 1000 ready pods and 5 not ready ones: the not-ready ones are cut.
    let pods: Vec<Arc<Pod>> = (0..1005)
        .map(|i| {
            let ready = if i < 1000 { "True" } else { "False" };
            pod(
                &format!("p{i}"),
                json!({"status": {"podIP": ip(i), "podIPs": [{"ip": ip(i)}],
                       "conditions": [{"type": "Ready", "status": ready}]}}),
            )
        })
        .collect();
    let r = report(&svc, &pods, &[node("n1")]);
    assert!(r.endpoints_truncated);
    let cut: Vec<&str> = r
        .pods
        .iter()
        .filter(|p| p.reasons.contains(&Reason::OverCapacity))
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(cut, ["p1000", "p1001", "p1002", "p1003", "p1004"]);
    let text = super::super::render::text(&r);
    assert!(
        text.contains("over capacity: the Endpoints hold 1000"),
        "{text}"
    );
    assert!(text.contains("leave this one out"), "{text}");
}

#[test]
fn headless_hints_and_terminating_with_publish_not_ready_are_reported() {
    let headless = svc(json!({"spec": {"clusterIP": "None"}}));
    let r = report(&headless, &[pod("a", json!({}))], &[node("n1")]);
    assert!(r.headless);
    assert!(super::super::render::text(&r).contains("headless, "));

    // A pod's slice entry shows its zone and node hints.
    let svc = svc(json!({"spec": {"trafficDistribution": "PreferSameNode"}}));
    let pods = [pod("a", json!({}))];
    let slice: EndpointSlice = serde_json::from_value(json!({
        "metadata": {"name": "web-x", "namespace": "ns"},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true},
                       "zone": "z1", "nodeName": "n1",
                       "hints": {"forZones": [{"name": "z1"}], "forNodes": [{"name": "n1"}]},
                       "targetRef": {"kind": "Pod", "namespace": "ns", "name": "a", "uid": "u-a"}}],
        "ports": []}))
    .expect("slice");
    let slices = [Arc::new(slice)];
    let r = analyze(&ExplainInputs {
        service: &svc,
        pods: &pods,
        nodes: &[node("n1")],
        endpoints: None,
        slices: &slices,
        max_endpoints_per_slice: 100,
    });
    assert_eq!(r.pods[0].in_slices[0].hint_zones, ["z1"]);
    assert_eq!(r.pods[0].in_slices[0].hint_nodes, ["n1"]);
    let text = super::super::render::text(&r);
    assert!(text.contains("hints z1, node hints n1"), "{text}");
    assert!(text.contains("ports: http → 8080"), "{text}");

    // Terminating: what publishNotReadyAddresses changes.
    let gone = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}});
    for (publish, want) in [
        (false, "publishNotReadyAddresses: true would keep it"),
        (true, "kept in the Endpoints (publishNotReadyAddresses)"),
    ] {
        let svc = svc_publish(publish);
        let r = report(&svc, &[pod("a", gone.clone())], &[node("n1")]);
        assert_eq!(r.pods[0].reasons, [Reason::Terminating]);
        let text = super::super::render::text(&r);
        assert!(text.contains(want), "{text}");
    }
}

fn svc_publish(publish: bool) -> Service {
    svc(json!({"spec": {"publishNotReadyAddresses": publish}}))
}

#[test]
fn json_field_names_are_stable() {
    let svc = svc(json!({}));
    let r = report(
        &svc,
        &[pod(
            "a",
            json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
        )],
        &[node("n1")],
    );
    let v = serde_json::to_value(&r).expect("json");
    for k in [
        "service",
        "managed",
        "headless",
        "addressTypes",
        "endpointsFamily",
        "publishNotReadyAddresses",
        "topologyAuto",
        "ports",
        "pods",
        "nearMisses",
        "endpointsInSync",
        "slicesInSync",
        "differences",
        "endpointsTruncated",
    ] {
        assert!(v.get(k).is_some(), "missing {k}: {v}");
    }
    let p = &v["pods"][0];
    for k in [
        "name",
        "ips",
        "node",
        "state",
        "reasons",
        "inSlices",
        "resolvedPorts",
    ] {
        assert!(p.get(k).is_some(), "missing pods[].{k}: {p}");
    }
    assert_eq!(p["reasons"][0], json!({"reason": "notReady"}));
    assert_eq!(
        p["resolvedPorts"][0],
        json!({"name": "http", "containerPort": 8080})
    );
    // The optional fields, when present.
    let unmanaged =
        self::svc(json!({"spec": {"trafficDistribution": "PreferClose", "selector": null}}));
    let v = serde_json::to_value(report(&unmanaged, &[], &[])).expect("json");
    for k in ["unmanagedReason", "trafficDistribution", "hints"] {
        assert!(v.get(k).is_some(), "missing {k}: {v}");
    }
    let entry = SliceEntry {
        slice: "s".into(),
        address_type: "IPv4".into(),
        ready: Some(true),
        serving: Some(true),
        terminating: Some(false),
        zone: Some("z1".into()),
        hint_zones: vec!["z1".into()],
        hint_nodes: vec!["n1".into()],
    };
    assert_eq!(
        serde_json::to_value(&entry).expect("json"),
        json!({"slice": "s", "addressType": "IPv4", "ready": true, "serving": true,
               "terminating": false, "zone": "z1", "hintZones": ["z1"], "hintNodes": ["n1"]})
    );
    let cut = serde_json::to_value(Reason::OverCapacity).expect("json");
    assert_eq!(cut, json!({"reason": "overCapacity"}));
    assert_eq!(
        v["ports"][0],
        json!({"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http"})
    );
}

#[test]
fn hints_say_which_apply_or_why_not() {
    let pods = [pod("a", json!({}))];
    let one_zone = [node("n1")];
    let zoned = |name: &str, zone: &str| -> Arc<Node> {
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
                "status": {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"cpu": "2"}}}))
            .expect("node"),
        )
    };
    let two_zones = [zoned("n1", "z1"), zoned("n2", "z2")];
    let auto =
        json!({"metadata": {"annotations": {"service.kubernetes.io/topology-mode": "Auto"}}});
    let cases: Vec<(Value, &[Arc<Node>], &str)> = vec![
        (json!({}), &one_zone, "none"),
        (
            json!({"spec": {"trafficDistribution": "PreferClose"}}),
            &one_zone,
            "ready endpoints hint their own zone",
        ),
        (
            json!({"spec": {"trafficDistribution": "PreferSameNode"}}),
            &one_zone,
            "own node and zone",
        ),
        (
            auto.clone(),
            &one_zone,
            "topology-mode Auto requested but not applied",
        ),
        (
            auto,
            &two_zones,
            "topology-mode Auto requested but not applied",
        ),
    ];
    for (i, (extra, nodes, want)) in cases.into_iter().enumerate() {
        let r = report(&svc(extra), &pods, nodes);
        assert!(r.hints.contains(want), "case {i}: {}", r.hints);
    }
    // Enough endpoints in both zones: Auto hints apply.
    let spread: Vec<Arc<Pod>> = (0..4)
        .map(|i| {
            pod(
                &format!("p{i}"),
                json!({"spec": {"nodeName": if i % 2 == 0 {"n1"} else {"n2"}},
                       "status": {"podIP": format!("10.0.0.{i}"), "podIPs": [{"ip": format!("10.0.0.{i}")}]}}),
            )
        })
        .collect();
    let auto =
        json!({"metadata": {"annotations": {"service.kubernetes.io/topology-mode": "Auto"}}});
    let r = report(&svc(auto), &spread, &two_zones);
    assert!(
        r.hints.starts_with("topology-mode Auto: zone hints"),
        "{}",
        r.hints
    );
}
