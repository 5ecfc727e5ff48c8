//! Table tests of the EndpointSlice plan and finalize, carrying over the
//! cases of upstream `reconciler_test.go` and `utils_test.go` in our words.

use super::plan::{reconcile, ReconcileInput, SlicePlan};
use super::tracker::EndpointSliceTracker;
use super::writer::{finalize, SliceWriter};
use crate::runtime::labels::{SLICE_MANAGED_BY, SLICE_MANAGED_BY_LABEL};
use endpointd_kube::kube;
use endpointd_kube::model::*;
use std::cell::RefCell;
use std::sync::Arc;

const NS: &str = "ns";

fn svc() -> Service {
    let mut s = Service::default();
    s.metadata.name = "foo".into();
    s.metadata.namespace = NS.into();
    s.metadata.uid = "svc-uid".into();
    s.metadata.labels = [("team", "a")].into_iter().collect();
    s.selector = Some([("app", "foo")].into_iter().collect());
    s.cluster_ip = "10.96.0.10".into();
    s.ip_families = vec!["IPv4".into()].into_boxed_slice();
    s.ports = vec![ServicePort {
        name: "http".into(),
        port: 80,
        target_port: IntOrString::String("http".into()),
        ..Default::default()
    }]
    .into_boxed_slice();
    s
}

fn pod(i: usize) -> Pod {
    let mut p = Pod {
        phase: PodPhase::Running,
        node_name: "node-1".into(),
        pod_ips: vec![format!("10.0.{}.{}", i / 250, i % 250 + 1).into()].into(),
        ready: Some(ReadyCondition {
            is_true: true,
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
    p.metadata.name = format!("pod{i:04}").into();
    p.metadata.namespace = NS.into();
    p.metadata.uid = format!("uid{i}").into();
    p
}

fn pods(n: std::ops::Range<usize>) -> Vec<Arc<Pod>> {
    n.map(|i| Arc::new(pod(i))).collect()
}

fn node(name: &str) -> Option<Arc<Node>> {
    (name == "node-1").then(|| {
        let mut n = Node::default();
        n.metadata.name = name.into();
        n.metadata.labels = [(ZONE_LABEL, "z1")].into_iter().collect();
        Arc::new(n)
    })
}

fn plan(s: &Service, ps: &[Arc<Pod>], existing: &[Arc<EndpointSlice>]) -> SlicePlan {
    let nodes = |n: &str| node(n);
    reconcile(&ReconcileInput {
        service: s,
        pods: ps,
        existing,
        nodes: &nodes,
        trigger_time: None,
        max_endpoints_per_slice: 100,
        topology: None,
    })
}

fn namespace_terminating() -> kube::Error {
    kube::Error::Api(kube::Status::from_value(serde_json::json!({
        "kind": "Status", "code": 403, "reason": "Forbidden",
        "details": {"causes": [{"reason": "NamespaceTerminating"}]}})))
}

/// A recording API: names created slices `foo-<n>`, bumps generations.
#[derive(Default)]
struct Fake {
    log: RefCell<Vec<String>>,
    fail_create: bool,
    /// Creates and updates of this address type fail with a 500.
    fail_type: Option<AddressType>,
    /// Deletes find the slice gone (404).
    delete_gone: bool,
    n: RefCell<usize>,
}

fn internal_error() -> kube::Error {
    kube::Error::Api(kube::Status::from_value(serde_json::json!({
        "kind": "Status", "code": 500, "reason": "InternalError", "message": "boom"})))
}

impl SliceWriter for Fake {
    fn create(&self, s: &EndpointSlice) -> Result<EndpointSlice, kube::Error> {
        if self.fail_create {
            return Err(namespace_terminating());
        }
        if self.fail_type == Some(s.address_type) {
            return Err(internal_error());
        }
        let mut s = s.clone();
        *self.n.borrow_mut() += 1;
        s.metadata.name = format!("foo-{}", self.n.borrow()).into();
        s.metadata.uid = s.metadata.name.as_str().into();
        s.metadata.generation = Some(1);
        self.log
            .borrow_mut()
            .push(format!("create {}", s.metadata.name));
        Ok(s)
    }
    fn update(&self, s: &EndpointSlice) -> Result<EndpointSlice, kube::Error> {
        if self.fail_type == Some(s.address_type) {
            return Err(internal_error());
        }
        let mut s = s.clone();
        s.metadata.generation = Some(s.metadata.generation.unwrap_or(1) + 1);
        self.log
            .borrow_mut()
            .push(format!("update {}", s.metadata.name));
        Ok(s)
    }
    fn delete(&self, _ns: &str, name: &str) -> Result<(), kube::Error> {
        self.log.borrow_mut().push(format!("delete {name}"));
        if self.delete_gone {
            return Err(kube::Error::Api(kube::Status::from_value(
                serde_json::json!({"kind": "Status", "code": 404, "reason": "NotFound"}),
            )));
        }
        Ok(())
    }
}

/// Apply a plan as the API would and return the slices that then exist.
fn apply(s: &Service, existing: &[Arc<EndpointSlice>], p: &SlicePlan) -> Vec<Arc<EndpointSlice>> {
    let fake = Fake::default();
    *fake.n.borrow_mut() = existing.len() + 100;
    let mut out: Vec<EndpointSlice> = existing.iter().map(|x| (**x).clone()).collect();
    for (_, w) in &p.by_type {
        out.retain(|x| !w.deletes.iter().any(|d| d.metadata.name == x.metadata.name));
        for u in &w.updates {
            out.retain(|x| x.metadata.name != u.metadata.name);
            out.push(u.clone());
        }
        for c in &w.creates {
            out.push(fake.create(c).expect("create"));
        }
    }
    out.retain(|x| {
        !p.unsupported
            .iter()
            .any(|d| d.metadata.name == x.metadata.name)
    });
    let _ = s;
    out.into_iter().map(Arc::new).collect()
}

fn counts(p: &SlicePlan) -> (usize, usize, usize) {
    let c = p.by_type.iter().map(|(_, w)| w.creates.len()).sum();
    let u = p.by_type.iter().map(|(_, w)| w.updates.len()).sum();
    let d = p
        .by_type
        .iter()
        .map(|(_, w)| w.deletes.len())
        .sum::<usize>()
        + p.unsupported.len();
    (c, u, d)
}

fn sizes(slices: &[Arc<EndpointSlice>]) -> Vec<usize> {
    let mut v: Vec<usize> = slices.iter().map(|s| s.endpoints.len()).collect();
    v.sort_unstable_by(|a, b| b.cmp(a));
    v
}

#[test]
fn no_pods_gives_a_placeholder_that_is_then_kept() {
    let s = svc();
    let p = plan(&s, &[], &[]);
    assert_eq!(counts(&p), (1, 0, 0));
    let ph = &p.by_type[0].1.creates[0];
    assert!(ph.endpoints.is_empty() && ph.ports.is_empty());
    assert_eq!(ph.address_type, AddressType::IPv4);
    assert_eq!(ph.metadata.generate_name, "foo-");
    assert_eq!(
        ph.metadata.labels.get(SLICE_MANAGED_BY_LABEL),
        Some(SLICE_MANAGED_BY)
    );
    assert_eq!(
        ph.metadata.labels.get("kubernetes.io/service-name"),
        Some("foo")
    );
    assert_eq!(ph.metadata.labels.get("team"), Some("a"));
    let owner = &ph.metadata.owner_references[0];
    assert!(owner.controller && owner.block_owner_deletion && owner.uid == "svc-uid");
    let now = apply(&s, &[], &p);
    assert_eq!(
        counts(&plan(&s, &[], &now)),
        (0, 0, 0),
        "the placeholder is not rewritten"
    );
}

/// Upstream `placeholderSliceCompare` (docs/behaviour.md#up-b18) on a kept placeholder: label
/// look-ups read a missing key as "" (an empty-valued label equals none);
/// a changed label recycles it (one update); beyond upstream, a new owner
/// uid replaces it (one create, one delete).
#[test]
fn placeholder_comparison_table() {
    let base = svc();
    let kept = apply(&base, &[], &plan(&base, &[], &[]));
    let relabel = |f: &dyn Fn(&mut Labels)| {
        let mut s = svc();
        f(&mut s.metadata.labels);
        s
    };
    let with_flag = relabel(&|l| l.insert("flag", ""));
    let kept_flag = apply(&with_flag, &[], &plan(&with_flag, &[], &[]));
    let mut new_uid = svc();
    new_uid.metadata.uid = "svc-uid-2".into();
    type Row<'a> = (
        &'a str,
        Service,
        &'a [Arc<EndpointSlice>],
        (usize, usize, usize),
    );
    let cases: Vec<Row> = vec![
        ("same labels", svc(), &kept, (0, 0, 0)),
        (
            "the Service gains an empty-valued label",
            with_flag.clone(),
            &kept,
            (0, 0, 0),
        ),
        (
            "the Service loses an empty-valued label",
            svc(),
            &kept_flag,
            (0, 0, 0),
        ),
        (
            "a label's value changes",
            relabel(&|l| l.insert("team", "b")),
            &kept,
            (0, 1, 0),
        ),
        (
            "a label with a value is added",
            relabel(&|l| l.insert("flag", "x")),
            &kept,
            (0, 1, 0),
        ),
        (
            "a new Service uid (beyond upstream)",
            new_uid,
            &kept,
            (1, 0, 1),
        ),
    ];
    for (what, s, existing, want) in cases {
        assert_eq!(counts(&plan(&s, &[], existing)), want, "{what}");
    }
}

#[test]
fn one_pod_one_slice_with_upstream_fields() {
    let s = svc();
    let mut terminating = pod(2);
    terminating.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH)).into();
    let ps = vec![Arc::new(pod(1)), Arc::new(terminating)];
    let p = plan(&s, &ps, &[]);
    assert_eq!(counts(&p), (1, 0, 0));
    let sl = &p.by_type[0].1.creates[0];
    assert_eq!(
        sl.ports,
        vec![EndpointSlicePort {
            name: Some("http".into()),
            protocol: Some(Protocol::Tcp),
            port: Some(8080),
            app_protocol: None
        }]
    );
    let e = &sl.endpoints[0];
    assert_eq!(e.addresses, vec!["10.0.0.2".to_string()]);
    assert_eq!(
        e.conditions,
        EndpointConditions {
            ready: Some(true),
            serving: Some(true),
            terminating: Some(false)
        }
    );
    assert_eq!(
        (e.node_name.as_deref(), e.zone.as_deref()),
        (Some("node-1"), Some("z1"))
    );
    assert_eq!(
        e.target_ref.as_ref().map(|t| t.name.as_str()),
        Some("pod0001")
    );
    assert_eq!(
        sl.endpoints[1].conditions,
        EndpointConditions {
            ready: Some(false),
            serving: Some(true),
            terminating: Some(true)
        },
        "terminating pods are included"
    );
}

#[test]
fn scale_up_packs_and_recycles_the_placeholder_then_scale_down_updates_in_place() {
    let s = svc();
    let ph = apply(&s, &[], &plan(&s, &[], &[]));
    let p = plan(&s, &pods(0..250), &ph);
    assert_eq!(
        counts(&p),
        (2, 1, 0),
        "the placeholder is recycled by an update"
    );
    let now = apply(&s, &ph, &p);
    assert_eq!(sizes(&now), vec![100, 100, 50]);
    assert_eq!(
        counts(&plan(&s, &pods(0..250), &now)),
        (0, 0, 0),
        "converged"
    );
    let p = plan(&s, &pods(0..120), &now);
    let (c, _, _) = counts(&p);
    assert_eq!(c, 0, "no create while scaling down");
    let now = apply(&s, &now, &p);
    assert_eq!(sizes(&now).iter().sum::<usize>(), 120);
    let p = plan(&s, &[], &now);
    assert_eq!(counts(&p).0, 0, "the last slice becomes the placeholder");
    let now = apply(&s, &now, &p);
    assert_eq!(sizes(&now), vec![0]);
    assert!(now[0].ports.is_empty());
}

#[test]
fn new_endpoints_fill_updated_slices_then_the_closest_unchanged_one() {
    let s = svc();
    let now = apply(&s, &[], &plan(&s, &pods(0..195), &[]));
    assert_eq!(sizes(&now), vec![100, 95]);
    // Five more fit exactly into the 95-slice (getSliceToFill).
    let p = plan(&s, &pods(0..200), &now);
    assert_eq!(counts(&p), (0, 1, 0));
    assert_eq!(sizes(&apply(&s, &now, &p)), vec![100, 100]);
    // Seven more do not fit anywhere: a new slice.
    let p = plan(&s, &pods(0..202), &now);
    assert_eq!(counts(&p), (1, 0, 0));
}

#[test]
fn different_port_sets_get_different_slices() {
    let s = svc();
    let mut other = pod(7);
    other.ports = vec![ContainerPort {
        name: "http".into(),
        container_port: 9090,
        protocol: Protocol::Tcp,
    }]
    .into();
    let mut ps = pods(0..3);
    ps.push(Arc::new(other));
    let now = apply(&s, &[], &plan(&s, &ps, &[]));
    assert_eq!(sizes(&now), vec![3, 1]);
    let mut ports: Vec<i32> = now
        .iter()
        .filter_map(|x| x.ports.first().and_then(|p| p.port))
        .collect();
    ports.sort();
    assert_eq!(ports, vec![8080, 9090]);
}

#[test]
fn address_type_change_deletes_the_old_type_after_creating_the_new() {
    let s = svc();
    let v4 = apply(&s, &[], &plan(&s, &pods(0..2), &[]));
    let mut v6 = svc();
    v6.ip_families = vec!["IPv6".into()].into_boxed_slice();
    v6.cluster_ip = "fd00::10".into();
    let p = plan(&v6, &pods(0..2), &v4);
    assert_eq!(p.unsupported.len(), 1);
    assert_eq!(p.by_type[0].0, AddressType::IPv6);
    assert_eq!(
        p.by_type[0].1.creates.len(),
        1,
        "a placeholder: the pods have no IPv6 address"
    );
    let dual = {
        let mut d = svc();
        d.ip_families = vec!["IPv4".into(), "IPv6".into()].into_boxed_slice();
        d
    };
    let p = plan(&dual, &pods(0..2), &v4);
    assert!(p.unsupported.is_empty());
    assert_eq!(p.by_type.len(), 2);
}

#[test]
fn labels_ownership_and_foreign_slices() {
    let s = svc();
    let now = apply(&s, &[], &plan(&s, &pods(0..3), &[]));
    // Label mirroring: a changed label is an update; reserved labels never pass.
    let mut relabelled = svc();
    relabelled.metadata.labels = [
        ("team", "b"),
        ("kubernetes.io/service-name", "evil"),
        (SLICE_MANAGED_BY_LABEL, "evil"),
    ]
    .into_iter()
    .collect();
    let p = plan(&relabelled, &pods(0..3), &now);
    assert_eq!(counts(&p), (0, 1, 0));
    let l = &p.by_type[0].1.updates[0].metadata.labels;
    assert_eq!(
        (
            l.get("team"),
            l.get("kubernetes.io/service-name"),
            l.get(SLICE_MANAGED_BY_LABEL)
        ),
        (Some("b"), Some("foo"), Some(SLICE_MANAGED_BY))
    );
    // Changing only a reserved label on the Service changes nothing.
    let mut reserved_only = svc();
    reserved_only
        .metadata
        .labels
        .insert(SLICE_MANAGED_BY_LABEL, "evil");
    assert_eq!(counts(&plan(&reserved_only, &pods(0..3), &now)), (0, 0, 0));
    // Not owned (a recreated Service): replaced, not recycled.
    let mut recreated = svc();
    recreated.metadata.uid = "new-uid".into();
    let p = plan(&recreated, &pods(0..3), &now);
    assert_eq!(counts(&p), (1, 0, 1));
    // Another manager's slice, or one being deleted: invisible.
    let mut foreign = (*now[0]).clone();
    foreign
        .metadata
        .labels
        .insert(SLICE_MANAGED_BY_LABEL, "someone-else");
    foreign.metadata.name = "custom".into();
    let mut dying = (*now[0]).clone();
    dying.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH)).into();
    let p = plan(&s, &pods(0..3), &[Arc::new(foreign), Arc::new(dying)]);
    assert_eq!(counts(&p), (1, 0, 0));
}

#[test]
fn node_missing_skips_the_pod_unless_published() {
    let s = svc();
    let mut lost = pod(9);
    lost.node_name = "gone".into();
    let ps = vec![Arc::new(pod(1)), Arc::new(lost)];
    let p = plan(&s, &ps, &[]);
    assert_eq!(
        p.node_errors,
        vec!["skipping Pod pod0009 for Service ns/foo: Node gone Not Found".to_string()]
    );
    assert_eq!(
        p.by_type[0].1.creates[0].endpoints.len(),
        1,
        "the rest is still written"
    );
    let mut published = svc();
    published.publish_not_ready_addresses = true;
    let p = plan(&published, &ps, &[]);
    assert!(p.node_errors.is_empty());
    let eps = &p.by_type[0].1.creates[0].endpoints;
    assert_eq!(eps.len(), 2);
    assert_eq!(
        eps.iter()
            .find(|e| e.node_name.as_deref() == Some("gone"))
            .and_then(|e| e.zone.clone()),
        None
    );
}

#[test]
fn traffic_distribution_hints_added_and_removed() {
    let mut s = svc();
    s.traffic_distribution = Some("PreferClose".into());
    let now = apply(&s, &[], &plan(&s, &pods(0..2), &[]));
    let zone = |x: &EndpointSlice| {
        x.endpoints[0]
            .hints
            .as_ref()
            .map(|h| h.for_zones[0].name.clone())
    };
    assert_eq!(zone(&now[0]), Some("z1".into()));
    assert_eq!(
        counts(&plan(&s, &pods(0..2), &now)),
        (0, 0, 0),
        "hints stable"
    );
    let p = plan(&svc(), &pods(0..2), &now);
    assert_eq!(
        counts(&p),
        (0, 1, 0),
        "hints removed from an otherwise unchanged slice"
    );
    assert_eq!(p.by_type[0].1.updates[0].endpoints[0].hints, None);
}

#[test]
fn finalize_order_tracker_and_namespace_terminating() {
    let s = svc();
    let ph = apply(&s, &[], &plan(&s, &[], &[]));
    let p = plan(&s, &pods(0..250), &ph);
    let fake = Fake::default();
    let tracker = EndpointSliceTracker::default();
    let (out, errors) = finalize(&s, &p, None, &fake, &tracker);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!((out.created, out.updated, out.deleted), (2, 1, 0));
    let log = fake.log.borrow().clone();
    assert!(
        log[0].starts_with("create")
            && log[1].starts_with("create")
            && log[2].starts_with("update"),
        "{log:?}"
    );
    let mut created = EndpointSlice::new(AddressType::IPv4);
    created.metadata.namespace = NS.into();
    created.metadata.uid = "foo-1".into();
    created.metadata.generation = Some(1);
    created.metadata.labels = [("kubernetes.io/service-name", "foo")]
        .into_iter()
        .collect();
    assert!(
        tracker.has(&created) && !tracker.should_sync(&created),
        "our create is tracked"
    );
    // A Service being deleted: no creates, the rest still written.
    let mut deleting = svc();
    deleting.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
    let fake = Fake::default();
    let (out, errors) = finalize(
        &deleting,
        &plan(&deleting, &pods(0..250), &[]),
        None,
        &fake,
        &tracker,
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(out.created, 0);
    // NamespaceTerminating on create: quietly done.
    let fake = Fake {
        fail_create: true,
        ..Fake::default()
    };
    let (out, errors) = finalize(&s, &plan(&s, &pods(0..3), &[]), None, &fake, &tracker);
    assert!(errors.is_empty(), "quietly: {errors:?}");
    assert_eq!(out.created, 0);
}

/// Upstream `Reconcile` goes on after an address type's write failed: the
/// other type's writes and the deletes of unsupported slices are still
/// made, and the errors come back together.
#[test]
fn a_failed_write_stops_its_address_type_only() {
    let mut s = svc();
    s.ip_families = vec!["IPv4".into(), "IPv6".into()].into_boxed_slice();
    let dual: Vec<Arc<Pod>> = (0..2)
        .map(|i| {
            let mut p = pod(i);
            p.pod_ips = vec![
                format!("10.0.0.{}", i + 1).into(),
                format!("fd00::{}", i + 1).into(),
            ]
            .into();
            Arc::new(p)
        })
        .collect();
    let legacy: EndpointSlice = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "foo-legacy", "namespace": NS, "uid": "l1",
                     "labels": {"kubernetes.io/service-name": "foo", SLICE_MANAGED_BY_LABEL: SLICE_MANAGED_BY},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "foo", "uid": "svc-uid", "controller": true}]},
        "addressType": "IP", "endpoints": [], "ports": []}))
    .expect("an IP slice");
    let p = plan(&s, &dual, &[Arc::new(legacy)]);
    let fake = Fake {
        fail_type: Some(AddressType::IPv4),
        ..Fake::default()
    };
    let (out, errors) = finalize(&s, &p, None, &fake, &EndpointSliceTracker::default());
    assert_eq!(
        fake.log.borrow().clone(),
        ["create foo-1", "delete foo-legacy"],
        "the IPv6 slice and the IP slice's delete"
    );
    assert_eq!((out.created, out.deleted), (1, 1));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0]
            .to_string()
            .contains("failed to create EndpointSlice for Service ns/foo"),
        "{}",
        errors[0]
    );
}

#[test]
fn a_service_port_change_moves_endpoints_to_a_new_port_map_by_recycling() {
    let s = svc();
    let now = apply(&s, &[], &plan(&s, &pods(0..3), &[]));
    let mut changed = svc();
    changed.ports[0].target_port = IntOrString::Int(9000);
    let p = plan(&changed, &pods(0..3), &now);
    assert_eq!(
        counts(&p),
        (0, 1, 0),
        "the old port map's slice is reused by name"
    );
    let u = &p.by_type[0].1.updates[0];
    assert_eq!(u.ports[0].port, Some(9000));
    assert_eq!(u.metadata.name, now[0].metadata.name);
    assert_eq!(u.endpoints.len(), 3);
}

#[test]
fn legacy_ip_and_unknown_address_types_decode_and_are_deleted() {
    let s = svc();
    let mut legacy: EndpointSlice = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "foo-legacy", "namespace": NS, "uid": "l1",
                     "labels": {"kubernetes.io/service-name": "foo", SLICE_MANAGED_BY_LABEL: SLICE_MANAGED_BY},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "foo", "uid": "svc-uid", "controller": true}]},
        "addressType": "IP", "endpoints": [], "ports": []}))
    .expect("an IP slice decodes");
    assert_eq!(legacy.address_type, AddressType::IP);
    let odd: EndpointSlice =
        serde_json::from_value(serde_json::json!({"addressType": "Bogus"})).expect("decodes");
    assert_eq!(odd.address_type, AddressType::Unknown);
    legacy.metadata.generation = Some(1);
    let p = plan(&s, &pods(0..2), &[Arc::new(legacy)]);
    assert_eq!(
        p.unsupported.len(),
        1,
        "the IP slice is deleted after the per-type writes"
    );
    assert_eq!(
        p.by_type[0].1.creates.len(),
        1,
        "an IPv4 slice is created, not recycled from the IP one"
    );
}

/// docs/behaviour.md#up-b14: an endpoint is its addresses, hostname and pod namespace/name.
/// Two pods sharing an IP (hostNetwork pods of one node) are two
/// endpoints, neither dropped as a duplicate; a pod re-created under the
/// same name (a new UID) is the same endpoint, updated in place in its
/// slice.
#[test]
fn pods_sharing_an_ip_are_two_endpoints_and_a_recreated_pod_is_updated_in_place() {
    let s = svc();
    let mut twin = pod(1);
    twin.metadata.name = "twin".into();
    twin.metadata.uid = "uid-twin".into();
    let ps = vec![Arc::new(pod(1)), Arc::new(twin)];
    let p = plan(&s, &ps, &[]);
    assert_eq!(counts(&p), (1, 0, 0));
    let eps = &p.by_type[0].1.creates[0].endpoints;
    let mut seen: Vec<(String, String)> = eps
        .iter()
        .map(|e| {
            (
                e.addresses.join(","),
                e.target_ref
                    .as_ref()
                    .map(|t| t.name.to_string())
                    .unwrap_or_default(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("10.0.0.2".to_string(), "pod0001".to_string()),
            ("10.0.0.2".to_string(), "twin".to_string())
        ]
    );
    let now = apply(&s, &[], &p);
    assert_eq!(counts(&plan(&s, &ps, &now)), (0, 0, 0), "converged");

    // pod0001 deleted and created again under its name, with its
    // address: another UID.
    let mut again = pod(1);
    again.metadata.uid = "uid1-again".into();
    let ps = vec![Arc::new(again), ps[1].clone()];
    let p = plan(&s, &ps, &now);
    assert_eq!(counts(&p), (0, 1, 0), "an update, no create or delete");
    let u = &p.by_type[0].1.updates[0];
    assert_eq!(u.metadata.name, now[0].metadata.name, "the same slice");
    assert_eq!(u.endpoints.len(), 2, "still two endpoints");
    let uid_of = |name: &str| {
        u.endpoints
            .iter()
            .filter_map(|e| e.target_ref.as_ref())
            .find(|t| t.name == name)
            .map(|t| t.uid.to_string())
    };
    assert_eq!(uid_of("pod0001").as_deref(), Some("uid1-again"));
    assert_eq!(uid_of("twin").as_deref(), Some("uid-twin"));
    // In place: where it was, not removed and appended as a new one.
    let names = |v: &[Endpoint]| -> Vec<String> {
        v.iter()
            .filter_map(|e| e.target_ref.as_ref().map(|t| t.name.to_string()))
            .collect()
    };
    let before = names(&now[0].endpoints);
    assert_eq!(before[0], "pod0001", "{before:?}");
    assert_eq!(names(&u.endpoints), before, "the same position");
}

/// docs/behaviour.md#up-b19, #up-b29: a DELETE answered 404 (someone else deleted the slice first)
/// is no error, and is not recorded as our deletion: a slice we had
/// tracked stays tracked, so its delete event counts as someone else's and
/// syncs the Service; one we had not leaves nothing behind. A DELETE that
/// succeeds is expected.
#[test]
fn a_delete_answered_not_found_is_not_expected_as_ours() {
    let s = svc();
    let now = apply(&s, &[], &plan(&s, &pods(0..3), &[]));
    let old = &now[0];
    // A re-created Service: the old slice is not its own, so deleted.
    let mut recreated = svc();
    recreated.metadata.uid = "new-uid".into();
    let p = plan(&recreated, &pods(0..3), &now);
    assert_eq!(counts(&p), (1, 0, 1));
    let run = |tracked: bool, delete_gone: bool| {
        let tracker = EndpointSliceTracker::default();
        if tracked {
            tracker.update(old);
        }
        let fake = Fake {
            delete_gone,
            ..Fake::default()
        };
        let (out, errors) = finalize(&recreated, &p, None, &fake, &tracker);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            fake.log.borrow().last().cloned(),
            Some(format!("delete {}", old.metadata.name))
        );
        (out, tracker)
    };

    let (out, tracker) = run(true, true);
    assert_eq!((out.created, out.deleted), (1, 0), "a 404 deletes nothing");
    assert!(tracker.has(old));
    assert!(!tracker.should_sync(old), "its generation as before");
    assert!(
        !tracker.handle_deletion(old),
        "its delete event is someone else's"
    );

    let (_, tracker) = run(false, true);
    assert!(!tracker.has(old), "nothing left behind");

    let (out, tracker) = run(true, false);
    assert_eq!(out.deleted, 1);
    assert!(tracker.handle_deletion(old), "our own delete's event");
}

/// A writer whose DELETE's watch event is handled before its answer
/// returns (what the watch often does), or whose DELETE fails.
struct EventFirst<'a> {
    tracker: &'a EndpointSliceTracker,
    slice: EndpointSlice,
    fail: bool,
}

impl SliceWriter for EventFirst<'_> {
    fn create(&self, _: &EndpointSlice) -> Result<EndpointSlice, kube::Error> {
        Err(internal_error())
    }
    fn update(&self, _: &EndpointSlice) -> Result<EndpointSlice, kube::Error> {
        Err(internal_error())
    }
    fn delete(&self, _: &str, _: &str) -> Result<(), kube::Error> {
        if self.fail {
            return Err(internal_error());
        }
        assert!(
            self.tracker.handle_deletion(&self.slice),
            "the event of our own DELETE must not sync the Service"
        );
        Ok(())
    }
}

#[test]
fn the_event_of_our_delete_before_its_answer_leaves_nothing_behind() {
    let s = svc();
    let mut old = EndpointSlice::new(AddressType::IPv6);
    old.metadata.namespace = (*s.metadata.namespace).into();
    old.metadata.name = "svc-old".into();
    old.metadata.uid = "old".into();
    old.metadata.generation = Some(3);
    old.metadata.labels = [("kubernetes.io/service-name", s.metadata.name.to_string())]
        .into_iter()
        .collect();
    let plan = SlicePlan {
        unsupported: vec![old.clone()],
        ..SlicePlan::default()
    };
    for fail in [false, true] {
        let tracker = EndpointSliceTracker::default();
        tracker.update(&old);
        let w = EventFirst {
            tracker: &tracker,
            slice: old.clone(),
            fail,
        };
        let (out, errors) = finalize(&s, &plan, None, &w, &tracker);
        if fail {
            assert_eq!(errors.len(), 1);
            assert!(!tracker.should_sync(&old), "tracked as before: {out:?}");
        } else {
            assert!(errors.is_empty(), "{errors:?}");
            assert_eq!(out.deleted, 1);
            assert!(!tracker.has(&old), "no deletion mark left behind");
        }
    }
}
