//! Model tests: projections ignore unknown fields and keep exactly what the
//! controllers read; written types serialise as the API expects.

use super::*;
use serde_json::json;

const FULL_POD: &str = r#"{
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {
    "name": "web-0", "namespace": "shop", "uid": "u-1", "resourceVersion": "42",
    "generateName": "web-", "creationTimestamp": "2026-01-01T00:00:00Z",
    "deletionTimestamp": "2026-01-01T00:05:00Z",
    "labels": {"app": "web", "tier": "fe"},
    "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "s"}],
    "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}]
  },
  "spec": {
    "nodeName": "n1", "hostname": "web-0", "subdomain": "web", "restartPolicy": "Always",
    "volumes": [{"name": "v", "emptyDir": {}}],
    "initContainers": [
      {"name": "init", "image": "busybox", "ports": [{"name": "init-p", "containerPort": 1}]},
      {"name": "sidecar", "restartPolicy": "Always", "ports": [{"name": "metrics", "containerPort": 9090}]}
    ],
    "containers": [
      {"name": "c", "image": "nginx", "env": [{"name": "A", "value": "b"}],
       "ports": [{"name": "http", "containerPort": 8080}, {"name": "dns", "containerPort": 53, "protocol": "UDP"}]},
      {"name": "d", "ports": null}
    ]
  },
  "status": {
    "phase": "Running", "podIP": "10.0.0.1",
    "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}],
    "hostIP": "192.168.0.1",
    "conditions": [
      {"type": "PodScheduled", "status": "True"},
      {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:01:00Z", "reason": "x"}
    ],
    "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0}]
  }
}"#;

#[test]
fn pod_projection_keeps_exactly_what_controllers_read() {
    let p: Pod = serde_json::from_str(FULL_POD).expect("pod");
    assert_eq!(p.key(), "shop/web-0");
    assert_eq!((&*p.uid(), p.resource_version()), ("u-1", "42"));
    assert_eq!(p.labels().get("app"), Some("web"));
    assert!(p.metadata.deletion_timestamp.is_some());
    assert_eq!(&*p.node_name, "n1");
    assert_eq!((p.hostname(), p.subdomain()), ("web-0", "web"));
    assert_eq!(p.phase, PodPhase::Running);
    let ips: Vec<&str> = p.pod_ips.iter().map(|s| &**s).collect();
    assert_eq!(ips, ["10.0.0.1", "fd00::1"]);
    assert!(p.is_ready());
    assert!(p.ready.and_then(|r| r.last_transition_time.get()).is_some());
    let ports: Vec<(&str, i32, &str)> = p
        .ports
        .iter()
        .map(|c| (&*c.name, c.container_port, c.protocol.as_str()))
        .collect();
    // Containers first, then sidecars; plain init containers are ignored.
    assert_eq!(
        ports,
        [
            ("http", 8080, "TCP"),
            ("dns", 53, "UDP"),
            ("metrics", 9090, "TCP")
        ]
    );
}

#[test]
fn pods_share_labels_and_ports_and_keep_one_ip_inline() {
    // Issue 13: the Arc<Pod> fits a 192-byte glibc chunk (168 bytes + 16
    // of counts + 8 of chunk header); the pods of one ReplicaSet share
    // their labels and ports buffers, and every pod of a namespace or node
    // its interned name.
    assert_eq!(std::mem::size_of::<Pod>(), 168);
    assert_eq!(std::mem::size_of::<crate::model::PodMeta>(), 96);
    let a: Pod = serde_json::from_str(FULL_POD).expect("pod");
    let b: Pod = serde_json::from_str(FULL_POD).expect("pod");
    assert!(Labels::ptr_eq(&a.metadata.labels, &b.metadata.labels));
    assert!(crate::model::intern::ThinSlice::ptr_eq(&a.ports, &b.ports));
    assert!(std::ptr::eq(
        a.metadata.namespace.as_str(),
        b.metadata.namespace.as_str()
    ));
    assert!(std::ptr::eq(a.node_name.as_str(), b.node_name.as_str()));
    let one: Pod =
        serde_json::from_value(json!({"status": {"podIPs": [{"ip": "10.0.0.9"}]}})).expect("pod");
    assert!(matches!(one.pod_ips, PodIps::One(_)) && one.pod_ips[..] == ["10.0.0.9"]);
    assert_eq!(one.heap_bytes(), 0);
    assert_eq!(
        a.pod_ips,
        PodIps::from(vec!["10.0.0.1".into(), "fd00::1".into()])
    );
    assert_eq!(
        a.ready
            .and_then(|r| r.last_transition_time.get())
            .map(|t| t.to_string()),
        serde_json::from_str::<serde_json::Value>(FULL_POD).expect("json")["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
            .and_then(|c| c["lastTransitionTime"].as_str())
            .map(str::to_string)
    );
}

#[test]
fn pod_edge_cases_table() {
    // (json, phase, ips, ready)
    let cases: &[(serde_json::Value, PodPhase, &[&str], Option<bool>)] = &[
        (json!({}), PodPhase::Unknown, &[], None),
        (
            json!({"metadata": null, "spec": null, "status": null}),
            PodPhase::Unknown,
            &[],
            None,
        ),
        (
            json!({"status": {"phase": "Succeeded", "podIP": "10.1.1.1"}}),
            PodPhase::Succeeded,
            &["10.1.1.1"],
            None,
        ),
        (
            json!({"status": {"phase": "Pending", "podIP": "", "podIPs": null,
                   "conditions": [{"type": "Ready", "status": "False"}]}}),
            PodPhase::Pending,
            &[],
            Some(false),
        ),
        (
            json!({"status": {"phase": "Weird", "conditions": [{"type": "Ready", "status": "Unknown"}]}}),
            PodPhase::Unknown,
            &[],
            Some(false),
        ),
    ];
    for (v, phase, ips, ready) in cases {
        let p: Pod = serde_json::from_value(v.clone()).expect("pod");
        assert_eq!(p.phase, *phase, "{v}");
        let got: Vec<&str> = p.pod_ips.iter().map(|s| &**s).collect();
        assert_eq!(got, *ips, "{v}");
        assert_eq!(p.ready.map(|r| r.is_true), *ready, "{v}");
    }
}

#[test]
fn service_selector_none_vs_empty_and_ports() {
    let cases: &[(serde_json::Value, Option<usize>)] = &[
        (json!({"spec": {}}), None),
        (json!({"spec": {"selector": null}}), None),
        // Empty is none: never "every pod of the namespace".
        (json!({"spec": {"selector": {}}}), None),
        (json!({"spec": {"selector": {"app": "web"}}}), Some(1)),
    ];
    for (v, want) in cases {
        let s: Service = serde_json::from_value(v.clone()).expect("svc");
        assert_eq!(s.selector.as_ref().map(Labels::len), *want, "{v}");
    }
    let s: Service = serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "shop",
                     "annotations": {"service.kubernetes.io/topology-mode": "Auto", "other": "x"}},
        "spec": {"clusterIP": "None", "clusterIPs": ["None"], "type": "ClusterIP",
                 "ipFamilies": ["IPv4"], "publishNotReadyAddresses": true,
                 "trafficDistribution": "PreferClose", "sessionAffinity": "None",
                 "ports": [{"name": "http", "port": 80, "targetPort": "http", "appProtocol": "h2c"},
                           {"port": 53, "protocol": "UDP", "targetPort": 5353},
                           {"port": 9}]}
    }))
    .expect("svc");
    assert!(s.is_headless() && !s.is_ip_set());
    assert!(s.publish_not_ready_addresses);
    assert_eq!(s.traffic_distribution.as_deref(), Some("PreferClose"));
    assert_eq!(s.metadata.annotations.len(), 1);
    assert_eq!(&*s.ip_families[0], "IPv4");
    assert_eq!(s.ports[0].target_port, IntOrString::String("http".into()));
    assert_eq!(s.ports[0].app_protocol.as_deref(), Some("h2c"));
    assert_eq!(s.ports[1].protocol, Protocol::Udp);
    assert_eq!(s.ports[1].target_port, IntOrString::Int(5353));
    assert_eq!(s.ports[2].target_port, IntOrString::Int(0));
    assert_eq!(s.ports[2].protocol, Protocol::Tcp);
}

#[test]
fn node_and_namespace_projections() {
    let n: Node = serde_json::from_value(json!({
        "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z1"}},
        "status": {"allocatable": {"cpu": "3500m", "memory": "1Gi"},
                   "conditions": [{"type": "Ready", "status": "True"}],
                   "images": [{"names": ["x"], "sizeBytes": 1}]}
    }))
    .expect("node");
    assert_eq!(n.key(), "n1");
    assert_eq!(n.zone(), Some("z1"));
    assert_eq!(n.ready, Some(true));
    assert_eq!(n.allocatable_cpu.as_deref(), Some("3500m"));
    let ns: Namespace = serde_json::from_value(
        json!({"metadata": {"name": "a"}, "status": {"phase": "Terminating"}}),
    )
    .expect("ns");
    assert!(ns.is_terminating());
    assert_eq!(ns.namespace(), None);
}

#[test]
fn endpointslice_serialises_like_the_api() {
    let mut s = EndpointSlice::new(AddressType::IPv4);
    s.metadata.generate_name = "web-".into();
    s.metadata.namespace = "shop".into();
    s.metadata
        .labels
        .insert("kubernetes.io/service-name", "web");
    s.endpoints.push(Endpoint {
        addresses: vec!["10.0.0.1".into()].into(),
        conditions: EndpointConditions {
            ready: Some(true),
            serving: Some(true),
            terminating: Some(false),
        },
        target_ref: Some(ObjectReference {
            kind: "Pod".into(),
            namespace: "shop".into(),
            name: "web-0".into(),
            uid: "u-1".into(),
            ..Default::default()
        }),
        node_name: Some("n1".into()),
        zone: Some("z1".into()),
        hints: Some(Box::new(EndpointHints {
            for_zones: vec![ForZone { name: "z1".into() }],
            for_nodes: vec![],
        })),
        hostname: None,
    });
    s.ports.push(EndpointSlicePort {
        name: Some("http".into()),
        protocol: Some(Protocol::Tcp),
        port: Some(8080),
        app_protocol: None,
    });
    let got = serde_json::to_value(&s).expect("json");
    let want = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"generateName": "web-", "namespace": "shop",
                     "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"],
                       "conditions": {"ready": true, "serving": true, "terminating": false},
                       "targetRef": {"kind": "Pod", "namespace": "shop", "name": "web-0", "uid": "u-1"},
                       "nodeName": "n1", "zone": "z1", "hints": {"forZones": [{"name": "z1"}]}}],
        "ports": [{"name": "http", "protocol": "TCP", "port": 8080}]
    });
    assert_eq!(got, want);
    let empty = serde_json::to_value(EndpointSlice::new(AddressType::IPv6)).expect("json");
    assert_eq!(empty["endpoints"], json!([]));
    assert_eq!(empty["ports"], json!([]));
    let back: EndpointSlice = serde_json::from_value(want).expect("parse back");
    assert_eq!(back, s);
}

#[test]
fn endpoints_lease_and_event_serialise_like_the_api() {
    let mut e = Endpoints::default();
    e.metadata.name = "web".into();
    e.subsets.push(EndpointSubset {
        addresses: vec![EndpointAddress {
            ip: "10.0.0.1".into(),
            node_name: Some(Default::default()),
            ..Default::default()
        }],
        not_ready_addresses: vec![],
        ports: vec![EndpointPort {
            port: 80,
            protocol: Some(Protocol::Tcp),
            ..Default::default()
        }],
    });
    assert_eq!(
        serde_json::to_value(&e).expect("json"),
        json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
               "subsets": [{"addresses": [{"ip": "10.0.0.1", "nodeName": ""}],
                            "ports": [{"port": 80, "protocol": "TCP"}]}]})
    );

    let t = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_767_225_600);
    let mut l = Lease::default();
    l.metadata.name = "endpointd".into();
    l.spec.holder_identity = Some("me".into());
    l.spec.lease_duration_seconds = Some(15);
    l.spec.renew_time = Some(MicroTime::from_system(t));
    assert_eq!(
        serde_json::to_value(&l).expect("json"),
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": "endpointd"},
               "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
                        "renewTime": "2026-01-01T00:00:00.000000Z"}})
    );

    let ev = Event {
        event_time: Some(MicroTime::from_system(t)),
        reason: "FailedToUpdateEndpointSlices".into(),
        type_: "Warning".into(),
        ..Default::default()
    };
    let v = serde_json::to_value(&ev).expect("json");
    assert_eq!(v["eventTime"], "2026-01-01T00:00:00.000000Z");
    assert_eq!(v["regarding"], json!({}));
    assert_eq!(v["type"], "Warning");
    assert!(v.get("note").is_none());
}

#[test]
fn find_port_matches_upstream_table() {
    let p: Pod = serde_json::from_str(FULL_POD).expect("pod");
    let port = |target: serde_json::Value, proto: &str| -> ServicePort {
        serde_json::from_value(json!({"port": 80, "targetPort": target, "protocol": proto}))
            .expect("port")
    };
    let cases = [
        (port(json!(9999), "TCP"), Some(9999)), // numbers need no container port
        (port(json!("http"), "TCP"), Some(8080)),
        (port(json!("http"), "UDP"), None), // protocol must match too
        (port(json!("dns"), "UDP"), Some(53)),
        (port(json!("metrics"), "TCP"), Some(9090)), // sidecar (restartPolicy Always)
        (port(json!("init-p"), "TCP"), None),        // plain init containers never count
        (port(json!("nope"), "TCP"), None),
    ];
    for (sp, want) in cases {
        assert_eq!(p.find_port(&sp), want, "{sp:?}");
    }
}

/// Cached by the ten thousand (issue 13): one Endpoints address and one
/// slice endpoint per pod. The sizes are pinned so that a new field is a
/// deliberate choice.
#[test]
fn cached_endpoint_types_stay_small() {
    use super::{Addresses, Endpoint, EndpointAddress};
    use std::mem::size_of;
    assert_eq!(size_of::<Addresses>(), 24);
    assert_eq!(size_of::<Endpoint>(), 136);
    assert_eq!(size_of::<EndpointAddress>(), 112);
    let one: Addresses = vec!["10.0.0.1".into()].into();
    assert_eq!(one, vec!["10.0.0.1"]);
    let two: Addresses = vec!["10.0.0.1".into(), "10.0.0.2".into()].into();
    assert_eq!(
        (one.len(), two.len(), Addresses::default().len()),
        (1, 2, 0)
    );
    for json in [r#"[]"#, r#"["10.0.0.1"]"#, r#"["10.0.0.1","10.0.0.2"]"#] {
        let a: Addresses = serde_json::from_str(json).expect("addresses");
        assert_eq!(serde_json::to_string(&a).expect("json"), json);
    }
    let a: Addresses = serde_json::from_str("null").expect("null");
    assert!(a.is_empty());
}
