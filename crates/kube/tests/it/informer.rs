//! Informers against kube-sim over loopback HTTP, the normal paths:
//! paginated initial sync, ordered events across watch drops, watch-list
//! mode and the EndpointSlice service index. Writes go straight into the
//! sim's store (in-process); reads go through `kube::Client` and the
//! informer like in production. Failure paths: `informer_faults.rs`.

use crate::harness::informer as informer_support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use endpointd_base::clock::{Clock, RealClock};
use endpointd_kube::informer::{
    wait_for_sync, DeletedObject, Informer, ListerWatcher, Notification, ReflectorConfig, Synced,
};
use endpointd_kube::model::{Object, Pod};
use endpointd_kube::shutdown::Shutdown;
use informer_support::*;
use kube_sim::server::{SimOptions, SimServer};
use serde_json::json;

#[test]
fn initial_sync_of_10000_pods_across_pages() {
    let sim = SimServer::start(SimOptions::default()).expect("kube-sim");
    load_pods(&sim, 20, 500);
    let r = start(
        client(&sim, 3),
        ReflectorConfig::default(),
        RealClock::shared(),
    );
    let sd = r.shutdown.clone();
    let guard = std::thread::spawn(move || sd.wait_timeout(Duration::from_secs(60)));
    assert!(
        wait_for_sync(&[&r.inf as &dyn Synced], &r.shutdown),
        "synced"
    );
    let store = r.inf.store();
    assert_eq!(store.len(), 10_000);
    assert_eq!(lists(&sim), 20, "10,000 pods in pages of 500");
    assert_eq!(store.list_namespace("ns-7").len(), 500);
    let notes = r.rec.take();
    assert_eq!(notes.len(), 10_000);
    assert!(notes
        .iter()
        .all(|n| matches!(n, Notification::Add { initial: true, .. })));
    let p = store.get("ns-3/pod-00042").expect("cached pod");
    assert_eq!(p.node_name.as_ref(), "node-1");
    assert!(p.is_ready());
    r.stop(None);
    let _ = guard.join();
    sim.stop();
}

/// Label `gen` of every update, per pod, in delivery order.
fn gens_per_pod(notes: &[Notification<Pod>]) -> BTreeMap<String, Vec<u32>> {
    let mut out: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for n in notes {
        if let Notification::Update { new, .. } = n {
            let g = new
                .labels()
                .get("gen")
                .and_then(|g| g.parse().ok())
                .expect("gen label");
            out.entry(new.key()).or_default().push(g);
        }
    }
    out
}

#[test]
fn events_in_order_and_dropped_watch_resumes_without_relist() {
    let sim = SimServer::start(SimOptions::default()).expect("kube-sim");
    load_pods(&sim, 1, 3);
    let r = start(client(&sim, 3), fast_backoff(), RealClock::shared());
    synced_and_watching(&sim, &r);
    r.rec.take();
    for g in 1..=150u32 {
        set_gen(&sim, "ns-0", &format!("pod-{:05}", g % 3), g);
        if g % 50 == 0 {
            let before = watches(&sim);
            sim.faults().close_all_watches();
            eventually("re-watch", 10, || watches(&sim) > before);
        }
    }
    delete_pod(&sim, "ns-0", "pod-00000");
    eventually("150 updates and a delete", 10, || r.rec.len() >= 151);
    RealClock.sleep(Duration::from_millis(50));
    let notes = r.rec.take();
    assert_eq!(notes.len(), 151, "no duplicates");
    let gens = gens_per_pod(&notes);
    for (key, seq) in &gens {
        let want: Vec<u32> = seq.first().map_or(vec![], |&f| {
            (0..seq.len() as u32).map(|i| f + 3 * i).collect()
        });
        assert_eq!(seq, &want, "{key}: every update once, in order");
    }
    assert_eq!(gens.values().map(Vec::len).sum::<usize>(), 150);
    assert!(
        matches!(notes.last(), Some(Notification::Delete(DeletedObject::Known(p))) if p.name() == "pod-00000")
    );
    assert_eq!(lists(&sim), 1, "resumed without relisting");
    assert_eq!(watches(&sim), 4, "one re-watch per drop");
    assert_eq!(
        r.inf.store().resource_version(),
        sim.store().current_rv().to_string()
    );
    r.stop(None);
    sim.stop();
}

#[test]
fn watch_list_mode_syncs_without_list_requests() {
    let sim = SimServer::start(SimOptions::default()).expect("kube-sim");
    load_pods(&sim, 3, 400);
    let cfg = ReflectorConfig {
        watch_list: true,
        ..fast_backoff()
    };
    let r = start(client(&sim, 3), cfg, RealClock::shared());
    eventually("sync", 20, || r.inf.has_synced());
    assert_eq!(r.inf.store().len(), 1200);
    assert_eq!(lists(&sim), 0, "initial state streamed over the watch");
    create_pod(&sim, "ns-2", "streamed");
    eventually("event on the same stream", 10, || {
        r.inf.store().get("ns-2/streamed").is_some()
    });
    assert_eq!(watches(&sim), 1);
    r.stop(None);
    sim.stop();
}

#[test]
fn endpointslices_are_indexed_by_service_name() {
    use endpointd_kube::informer::{IndexKey, KubeSource, SERVICE_NAME_LABEL};
    use endpointd_kube::kube::ENDPOINTSLICES;
    use endpointd_kube::model::EndpointSlice;

    let sim = SimServer::start(SimOptions::default()).expect("kube-sim");
    let slice = |ns: &str, name: &str, svc: &str| {
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
               "metadata": {"name": name, "namespace": ns,
                            "labels": {SERVICE_NAME_LABEL: svc, "endpointslice.kubernetes.io/managed-by": "endpointd"}},
               "addressType": "IPv4", "endpoints": [], "ports": []})
    };
    let items = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}}),
        slice("a", "web-1", "web"),
        slice("a", "web-2", "web"),
        slice("a", "db-1", "db"),
        slice("b", "web-1", "web"),
    ];
    sim.store()
        .load_list(&json!({"apiVersion": "v1", "kind": "List", "items": items}))
        .expect("load slices");
    let shutdown = Shutdown::new();
    let c = client(&sim, 3);
    let source: Arc<dyn ListerWatcher<EndpointSlice>> =
        Arc::new(KubeSource::new(c.clone(), ENDPOINTSLICES));
    let inf = Informer::builder(source)
        .index(IndexKey::Label(SERVICE_NAME_LABEL))
        .index(IndexKey::NamespacedLabel(SERVICE_NAME_LABEL))
        .start(&shutdown)
        .expect("start informer");
    eventually("sync", 10, || inf.has_synced());
    let store = inf.store();
    let mut web: Vec<String> = store
        .by_index(IndexKey::Label(SERVICE_NAME_LABEL), "web")
        .iter()
        .map(|s| s.key())
        .collect();
    web.sort();
    assert_eq!(web, ["a/web-1", "a/web-2", "b/web-1"]);
    assert_eq!(store.list_namespace("a").len(), 3);
    let svc_key = IndexKey::NamespacedLabel(SERVICE_NAME_LABEL);
    assert_eq!(store.by_index(svc_key, "a/web").len(), 2);
    assert_eq!(store.by_index(svc_key, "b/web").len(), 1);
    assert_eq!(store.by_index(svc_key, "a/db").len(), 1);
    shutdown.trigger();
    c.shutdown_watches();
    assert!(inf.join());
    sim.stop();
}
