//! Table tests of the Endpoints plan, carrying over the cases of upstream
//! `endpoints_controller_test.go` (TestSyncEndpoints*) in our own words.

use super::plan::{plan, EndpointsInput, EndpointsPlan};
use crate::runtime::labels::{
    ENDPOINTS_MANAGED_BY, ENDPOINTS_MANAGED_BY_LABEL, HEADLESS_LABEL, OVER_CAPACITY_ANNOTATION,
    TRIGGER_TIME_ANNOTATION,
};
use endpointd_kube::model::*;
use std::sync::Arc;

fn svc(ports: &[(&str, IntOrString)]) -> Service {
    let mut s = Service::default();
    s.metadata.name = "foo".into();
    s.metadata.namespace = "ns".into();
    s.metadata.labels = [("app", "foo")].into_iter().collect();
    s.selector = Some([("app", "foo")].into_iter().collect());
    s.cluster_ip = "10.96.0.10".into();
    s.ports = ports
        .iter()
        .map(|(n, t)| ServicePort {
            name: (*n).into(),
            port: 80,
            target_port: t.clone(),
            ..Default::default()
        })
        .collect();
    s
}

fn http() -> Service {
    svc(&[("http", IntOrString::Int(8080))])
}

fn pod(i: usize, ready: bool) -> Pod {
    let mut p = Pod {
        phase: PodPhase::Running,
        node_name: "node-1".into(),
        pod_ips: vec![format!("1.2.3.{i}").into()].into(),
        ready: Some(ReadyCondition {
            is_true: ready,
            last_transition_time: None.into(),
        }),
        ports: vec![ContainerPort {
            name: "http".into(),
            container_port: 8080,
            protocol: Protocol::Tcp,
        }]
        .into(),
        ..Pod::default()
    };
    p.metadata.name = format!("pod{i}").into();
    p.metadata.namespace = "ns".into();
    p.metadata.uid = format!("uid{i}").into();
    p
}

fn pods(v: Vec<Pod>) -> Vec<Arc<Pod>> {
    v.into_iter().map(Arc::new).collect()
}

fn run(s: &Service, ps: &[Arc<Pod>], cur: Option<&Endpoints>) -> EndpointsPlan {
    plan(&EndpointsInput {
        service: s,
        pods: ps,
        current: cur,
        trigger_time: None,
    })
}

fn obj(p: EndpointsPlan) -> Endpoints {
    match p {
        EndpointsPlan::Create(e) | EndpointsPlan::Update(e) => e,
        EndpointsPlan::Unchanged => panic!("expected a write"),
    }
}

/// (ready IPs, not-ready IPs, ports) per subset.
fn shape(e: &Endpoints) -> Vec<(Vec<String>, Vec<String>, Vec<i32>)> {
    e.subsets
        .iter()
        .map(|s| {
            (
                s.addresses.iter().map(|a| a.ip.to_string()).collect(),
                s.not_ready_addresses
                    .iter()
                    .map(|a| a.ip.to_string())
                    .collect(),
                s.ports.iter().map(|p| p.port).collect(),
            )
        })
        .collect()
}

fn ips(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// An existing object, as written by a previous sync.
fn stored(p: EndpointsPlan) -> Endpoints {
    let mut e = obj(p);
    e.metadata.resource_version = "7".into();
    e
}

#[test]
fn creates_with_addresses_ports_labels_and_target_refs() {
    let s = http();
    let ps = pods(vec![pod(1, true)]);
    let e = match plan(&EndpointsInput {
        service: &s,
        pods: &ps,
        current: None,
        trigger_time: Some(Time(jiff::Timestamp::UNIX_EPOCH)),
    }) {
        EndpointsPlan::Create(e) => e,
        other => panic!("{other:?}"),
    };
    assert_eq!(e.metadata.name, "foo");
    assert_eq!(e.metadata.labels.get("app"), Some("foo"));
    assert_eq!(
        e.metadata.labels.get(ENDPOINTS_MANAGED_BY_LABEL),
        Some("endpoint-controller"),
        "upstream 1.33+ labels what its controller writes"
    );
    assert_eq!(e.metadata.labels.len(), 2);
    assert!(!e.metadata.labels.contains_key(HEADLESS_LABEL));
    assert!(e.metadata.owner_references.is_empty());
    assert_eq!(
        e.metadata.annotations.get(TRIGGER_TIME_ANNOTATION),
        Some("1970-01-01T00:00:00Z")
    );
    let a = &e.subsets[0].addresses[0];
    assert_eq!(a.node_name.as_deref(), Some("node-1"));
    let t = a.target_ref.as_ref().expect("targetRef");
    assert_eq!(
        (
            t.kind.as_str(),
            t.name.as_str(),
            &*t.uid.as_str(),
            t.resource_version()
        ),
        ("Pod", "pod1", "uid1", "")
    );
    let port = &e.subsets[0].ports[0];
    assert_eq!(
        (port.name.as_str(), port.port, port.protocol.clone()),
        ("http", 8080, Some(Protocol::Tcp))
    );
}

#[test]
fn readiness_and_inclusion_table() {
    let t = Some(Time(jiff::Timestamp::UNIX_EPOCH));
    let terminating = |mut p: Pod| {
        p.metadata.deletion_timestamp = t.into();
        p
    };
    let phase = |mut p: Pod, ph| {
        p.phase = ph;
        p
    };
    let no_ip = |mut p: Pod| {
        p.pod_ips = Default::default();
        p
    };
    let published = {
        let mut s = http();
        s.publish_not_ready_addresses = true;
        s
    };
    #[allow(clippy::type_complexity)]
    let cases: Vec<(
        &str,
        Service,
        Vec<Pod>,
        Vec<(Vec<String>, Vec<String>, Vec<i32>)>,
    )> = vec![
        (
            "ready and not ready",
            http(),
            vec![pod(1, true), pod(2, false)],
            vec![(ips(&["1.2.3.1"]), ips(&["1.2.3.2"]), vec![8080])],
        ),
        (
            "publishNotReadyAddresses: all ready",
            published.clone(),
            vec![pod(1, true), pod(2, false)],
            vec![(ips(&["1.2.3.1", "1.2.3.2"]), vec![], vec![8080])],
        ),
        (
            "terminating excluded",
            http(),
            vec![pod(1, true), terminating(pod(2, true))],
            vec![(ips(&["1.2.3.1"]), vec![], vec![8080])],
        ),
        (
            "terminating kept when published",
            published,
            vec![terminating(pod(2, false))],
            vec![(ips(&["1.2.3.2"]), vec![], vec![8080])],
        ),
        (
            "failed and succeeded excluded",
            http(),
            vec![
                phase(pod(1, true), PodPhase::Failed),
                phase(pod(2, true), PodPhase::Succeeded),
            ],
            vec![],
        ),
        (
            "pending included",
            http(),
            vec![phase(pod(1, false), PodPhase::Pending)],
            vec![(vec![], ips(&["1.2.3.1"]), vec![8080])],
        ),
        ("no IP excluded", http(), vec![no_ip(pod(1, true))], vec![]),
    ];
    for (what, s, ps, want) in cases {
        assert_eq!(shape(&obj(run(&s, &pods(ps), None))), want, "{what}");
    }
}

#[test]
fn ports_table() {
    let named = svc(&[("http", IntOrString::String("http".into()))]);
    let two = svc(&[
        ("a", IntOrString::Int(8080)),
        ("b", IntOrString::String("metrics".into())),
    ]);
    let mut headless = svc(&[]);
    headless.cluster_ip = "None".into();
    let portless = svc(&[]);
    let mut sidecar = pod(3, true);
    sidecar.ports = vec![ContainerPort {
        name: "metrics".into(),
        container_port: 9100,
        protocol: Protocol::Tcp,
    }]
    .into();
    let mut udp_named = svc(&[("dns", IntOrString::String("http".into()))]);
    udp_named.ports[0].protocol = Protocol::Udp;
    #[allow(clippy::type_complexity)]
    let cases: Vec<(
        &str,
        Service,
        Vec<Pod>,
        Vec<(Vec<String>, Vec<String>, Vec<i32>)>,
    )> = vec![
        (
            "named port resolved",
            named,
            vec![pod(1, true)],
            vec![(ips(&["1.2.3.1"]), vec![], vec![8080])],
        ),
        (
            "named port missing on one pod: that port skipped",
            two,
            vec![pod(1, true), sidecar],
            vec![
                (ips(&["1.2.3.1", "1.2.3.3"]), vec![], vec![8080]),
                (ips(&["1.2.3.3"]), vec![], vec![9100]),
            ],
        ),
        (
            "named port of another protocol: skipped",
            udp_named,
            vec![pod(1, true)],
            vec![],
        ),
        (
            "headless without ports: port-less subset",
            headless,
            vec![pod(1, true)],
            vec![(ips(&["1.2.3.1"]), vec![], vec![])],
        ),
        (
            "not headless without ports: nothing",
            portless,
            vec![pod(1, true)],
            vec![],
        ),
        (
            "integer targetPort used as is",
            svc(&[("x", IntOrString::Int(1234))]),
            vec![pod(1, true)],
            vec![(ips(&["1.2.3.1"]), vec![], vec![1234])],
        ),
    ];
    for (what, s, ps, want) in cases {
        assert_eq!(shape(&obj(run(&s, &pods(ps), None))), want, "{what}");
    }
}

#[test]
fn ip_family_table() {
    let dual = |i: usize| {
        let mut p = pod(i, true);
        p.pod_ips = vec![format!("1.2.3.{i}").into(), format!("fd00::{i}").into()].into();
        p
    };
    let v6_only = |i: usize| {
        let mut p = pod(i, true);
        p.pod_ips = vec![format!("fd00::{i}").into()].into();
        p
    };
    let with_families = |f: &[&str]| {
        let mut s = http();
        s.ip_families = f.iter().map(|x| (*x).into()).collect();
        s
    };
    let v6_cluster_ip = {
        let mut s = http();
        s.cluster_ip = "fd00::10".into();
        s
    };
    let with_ips = |i: usize, v: &[&str]| {
        let mut p = pod(i, true);
        p.pod_ips = v.iter().map(|x| (*x).into()).collect::<Vec<_>>().into();
        p
    };
    let headless_no_families = {
        let mut s = http();
        s.cluster_ip = "None".into();
        s
    };
    let cases: Vec<(&str, Service, Vec<Pod>, Vec<String>)> = vec![
        (
            "ipFamilies [IPv6] picks the v6 address",
            with_families(&["IPv6", "IPv4"]),
            vec![dual(1)],
            ips(&["fd00::1"]),
        ),
        (
            "ipFamilies [IPv4] picks the v4 address",
            with_families(&["IPv4"]),
            vec![dual(1)],
            ips(&["1.2.3.1"]),
        ),
        (
            "IPv4 service, IPv6-only pod: skipped",
            with_families(&["IPv4"]),
            vec![v6_only(1)],
            vec![],
        ),
        (
            "no families: the clusterIP's family",
            v6_cluster_ip,
            vec![dual(2)],
            ips(&["fd00::2"]),
        ),
        (
            "headless, no families: the pod IP's family",
            headless_no_families,
            vec![v6_only(3)],
            ips(&["fd00::3"]),
        ),
        // Upstream 1.33+ (KEP-4858, TestPodToEndpointAddressForService's
        // addBadIPPod): the address is written in canonical text.
        (
            "IPv4 with leading zeros: canonical text",
            with_families(&["IPv4"]),
            vec![with_ips(4, &["010.001.002.003"])],
            ips(&["10.1.2.3"]),
        ),
        (
            "IPv4-mapped IPv6 is IPv4",
            with_families(&["IPv4"]),
            vec![with_ips(5, &["::ffff:10.1.2.5"])],
            ips(&["10.1.2.5"]),
        ),
        (
            "IPv4-mapped IPv6 is not IPv6: the next, real IPv6 one is taken",
            with_families(&["IPv6"]),
            vec![with_ips(6, &["::ffff:10.1.2.6", "fd00::6"])],
            ips(&["fd00::6"]),
        ),
        (
            "IPv6 upper case and uncompressed: canonical text",
            with_families(&["IPv6"]),
            vec![with_ips(7, &["1.2.3.7", "2001:DB8:0:0:0:0:0:7"])],
            ips(&["2001:db8::7"]),
        ),
        (
            "text that is no IP is skipped, the next one of the family taken",
            with_families(&["IPv4"]),
            vec![with_ips(8, &["not-an-ip", "1.2.3.8"])],
            ips(&["1.2.3.8"]),
        ),
        (
            "ordered by canonical text",
            with_families(&["IPv4"]),
            vec![with_ips(9, &["1.2.3.09"]), with_ips(10, &["1.2.3.10"])],
            ips(&["1.2.3.10", "1.2.3.9"]),
        ),
    ];
    for (what, s, ps, want) in cases {
        let e = obj(run(&s, &pods(ps), None));
        let got: Vec<String> = e
            .subsets
            .iter()
            .flat_map(|x| x.addresses.iter().map(|a| a.ip.to_string()))
            .collect();
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn hostname_and_headless_label() {
    let mut s = http();
    s.cluster_ip = "None".into();
    let mut p = pod(1, true);
    p.set_hostname("pod1");
    p.set_subdomain("foo");
    let e = obj(run(&s, &pods(vec![p]), None));
    assert_eq!(e.subsets[0].addresses[0].hostname, "pod1");
    assert_eq!(e.metadata.labels.get(HEADLESS_LABEL), Some(""));
    let mut no_ip = http();
    no_ip.cluster_ip = "".into();
    assert_eq!(
        obj(run(&no_ip, &[], None))
            .metadata
            .labels
            .get(HEADLESS_LABEL),
        Some("")
    );
}

#[test]
fn no_op_detection_table() {
    let s = http();
    let ps = pods(vec![pod(1, true), pod(2, false)]);
    let base = stored(run(&s, &ps, None));
    assert_eq!(
        run(&s, &ps, Some(&base)),
        EndpointsPlan::Unchanged,
        "same content"
    );

    let mut with_rv = base.clone();
    with_rv.subsets[0].addresses[0]
        .target_ref
        .as_mut()
        .expect("ref")
        .set_more(endpointd_kube::model::RefMore {
            resource_version: "99".into(),
            ..Default::default()
        });
    assert_eq!(
        run(&s, &ps, Some(&with_rv)),
        EndpointsPlan::Unchanged,
        "targetRef resourceVersion ignored"
    );

    let mut headless_label = base.clone();
    headless_label.metadata.labels.insert(HEADLESS_LABEL, "");
    assert_eq!(
        run(&s, &ps, Some(&headless_label)),
        EndpointsPlan::Unchanged,
        "the headless label alone is not compared"
    );

    // A Service labelled with the headless label itself (beyond
    // upstream, which never finds such an Endpoints equal and rewrites it
    // on every sync): what we wrote is not rewritten, whatever clusterIP.
    for cluster_ip in ["10.96.0.10", "None"] {
        let mut labelled = http();
        labelled.cluster_ip = cluster_ip.into();
        labelled.metadata.labels.insert(HEADLESS_LABEL, "yes");
        let written = stored(run(&labelled, &ps, None));
        assert_eq!(
            run(&labelled, &ps, Some(&written)),
            EndpointsPlan::Unchanged,
            "{cluster_ip}: a Service labelled headless itself"
        );
        let mut relabelled = written.clone();
        relabelled.metadata.labels.insert("app", "other");
        assert!(
            matches!(
                run(&labelled, &ps, Some(&relabelled)),
                EndpointsPlan::Update(_)
            ),
            "{cluster_ip}: its other labels still compared"
        );
    }

    // endpoints.kubernetes.io/managed-by (upstream 1.33+): what
    // kube-controller-manager wrote is taken over without a write; an
    // object without the label, or labelled for another manager, gets it.
    let mut unlabelled = base.clone();
    unlabelled
        .metadata
        .labels
        .remove(ENDPOINTS_MANAGED_BY_LABEL);
    match run(&s, &ps, Some(&unlabelled)) {
        EndpointsPlan::Update(e) => assert_eq!(
            e.metadata.labels.get(ENDPOINTS_MANAGED_BY_LABEL),
            Some(ENDPOINTS_MANAGED_BY)
        ),
        other => panic!("no managed-by label: {other:?}"),
    }
    let mut foreign = base.clone();
    foreign
        .metadata
        .labels
        .insert(ENDPOINTS_MANAGED_BY_LABEL, "someone-else");
    assert!(
        matches!(run(&s, &ps, Some(&foreign)), EndpointsPlan::Update(_)),
        "managed by someone else"
    );
    let mut extra = base.clone();
    extra.metadata.labels.insert("extra", "1");
    assert!(
        matches!(run(&s, &ps, Some(&extra)), EndpointsPlan::Update(_)),
        "a label the Service lacks"
    );
    let mut missing = base.clone();
    missing.metadata.labels.remove("app");
    assert!(
        matches!(run(&s, &ps, Some(&missing)), EndpointsPlan::Update(_)),
        "a label of the Service missing"
    );
    // A Service labelled managed-by itself: the controller's value is
    // written and then left alone (no rewrite on every sync).
    let mut claims = http();
    claims
        .metadata
        .labels
        .insert(ENDPOINTS_MANAGED_BY_LABEL, "helm");
    let written = stored(run(&claims, &ps, None));
    assert_eq!(
        written.metadata.labels.get(ENDPOINTS_MANAGED_BY_LABEL),
        Some(ENDPOINTS_MANAGED_BY)
    );
    assert_eq!(run(&claims, &ps, Some(&written)), EndpointsPlan::Unchanged);

    let mut other_annotation = base.clone();
    other_annotation
        .metadata
        .annotations
        .insert(TRIGGER_TIME_ANNOTATION, "2020-01-01T00:00:00Z");
    assert_eq!(
        run(&s, &ps, Some(&other_annotation)),
        EndpointsPlan::Unchanged,
        "annotations are not compared"
    );

    let mut marked = base.clone();
    marked
        .metadata
        .annotations
        .insert(OVER_CAPACITY_ANNOTATION, "truncated");
    let upd = obj(run(&s, &ps, Some(&marked)));
    assert!(
        !upd.metadata
            .annotations
            .contains_key(OVER_CAPACITY_ANNOTATION),
        "a wrong capacity annotation is removed"
    );
    assert_eq!(
        upd.metadata.resource_version, "7",
        "an update carries the cached resourceVersion"
    );

    let mut relabelled = s.clone();
    relabelled.metadata.labels.insert("tier", "fe");
    assert!(
        matches!(run(&relabelled, &ps, Some(&base)), EndpointsPlan::Update(_)),
        "service labels changed"
    );

    let flipped = pods(vec![pod(1, true), pod(2, true)]);
    assert!(
        matches!(run(&s, &flipped, Some(&base)), EndpointsPlan::Update(_)),
        "readiness changed"
    );
}

#[test]
fn over_capacity_is_truncated_and_then_left_alone() {
    let s = http();
    let ps = pods(
        (0..1200)
            .map(|i| {
                let mut p = pod(i, i % 2 == 0);
                p.pod_ips = vec![format!("10.0.{}.{}", i / 250, i % 250).into()].into();
                p
            })
            .collect(),
    );
    let created = obj(run(&s, &ps, None));
    let total: usize = created
        .subsets
        .iter()
        .map(|x| x.addresses.len() + x.not_ready_addresses.len())
        .sum();
    assert_eq!(total, 1000);
    assert_eq!(
        created
            .subsets
            .iter()
            .map(|x| x.addresses.len())
            .sum::<usize>(),
        600,
        "every ready address kept"
    );
    assert_eq!(
        created.metadata.annotations.get(OVER_CAPACITY_ANNOTATION),
        Some("truncated")
    );
    let mut cur = created;
    cur.metadata.resource_version = "7".into();
    assert_eq!(
        run(&s, &ps, Some(&cur)),
        EndpointsPlan::Unchanged,
        "better than upstream: no rewrite of an unchanged truncation"
    );
}
