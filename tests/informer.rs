//! Informers against kube-sim over loopback HTTP: paginated initial sync,
//! ordered events, watch drops, 410 relists, 5xx backoff, bookmarks and
//! watch-list mode. Writes go straight into the sim's store (in-process);
//! reads go through `kube::Client` and the informer like in production.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use endpointd::clock::{Clock, FakeClock, RealClock, SharedClock};
use endpointd::informer::backoff::BackoffConfig;
use endpointd::informer::kube_source::KubeSource;
use endpointd::informer::{
    wait_for_sync, DeletedObject, Informer, ListerWatcher, Notification, Recorder, ReflectorConfig,
    Synced,
};
use endpointd::kube::{Client, ClientConfig, PODS};
use endpointd::model::{Object, Pod};
use endpointd::shutdown::Shutdown;
use endpointd::sim::requestinfo::Verb;
use endpointd::sim::resources::lookup;
use endpointd::sim::server::{SimOptions, SimServer};
use endpointd::sim::store::Key;
use serde_json::{json, Value};

fn pod_json(ns: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": "web", "gen": "0"}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "img",
                 "ports": [{"name": "http", "containerPort": 8080}]}]},
        "status": {"phase": "Running", "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}],
                   "conditions": [{"type": "Ready", "status": "True"}]}
    })
}

/// Create namespaces `ns-0..` and `per_ns` pods in each, in one write.
fn load_pods(sim: &SimServer, namespaces: usize, per_ns: usize) {
    let mut items: Vec<Value> = (0..namespaces)
        .map(|n| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("ns-{n}")}}))
        .collect();
    for n in 0..namespaces {
        for p in 0..per_ns {
            items.push(pod_json(&format!("ns-{n}"), &format!("pod-{p:05}")));
        }
    }
    let created = sim
        .store()
        .load_list(&json!({"apiVersion": "v1", "kind": "List", "items": items}))
        .expect("load pods into kube-sim");
    assert_eq!(created, namespaces * (per_ns + 1));
}

fn pod_key(ns: &str, name: &str) -> Key {
    Key::new(lookup("", "v1", "pods").expect("pods served"), ns, name)
}

/// Set label `gen` of an existing pod (an update with a new RV).
fn set_gen(sim: &SimServer, ns: &str, name: &str, gen: u32) {
    let key = pod_key(ns, name);
    sim.store().txn(|t| {
        let mut v = t.get(&key).expect("pod exists").value.clone();
        v["metadata"]["labels"]["gen"] = json!(gen.to_string());
        t.put(&key, "update", v);
    });
}

fn create_pod(sim: &SimServer, ns: &str, name: &str) {
    let key = pod_key(ns, name);
    let v = pod_json(ns, name);
    sim.store().txn(|t| {
        t.put(&key, "create", v);
    });
}

fn delete_pod(sim: &SimServer, ns: &str, name: &str) {
    let key = pod_key(ns, name);
    sim.store().txn(|t| {
        t.delete(&key, "delete").expect("pod exists");
    });
}

fn client(sim: &SimServer, retries: u32) -> Client {
    let mut cfg = ClientConfig::new(sim.url());
    cfg.qps = 0.0;
    cfg.max_retries = retries;
    Client::new(cfg, RealClock::shared(), None).expect("client for kube-sim")
}

fn fast_backoff() -> ReflectorConfig {
    ReflectorConfig {
        backoff: BackoffConfig {
            initial: Duration::from_millis(20),
            cap: Duration::from_millis(200),
            ..BackoffConfig::default()
        },
        ..ReflectorConfig::default()
    }
}

struct Running {
    inf: Informer<Pod>,
    rec: Arc<Recorder<Pod>>,
    client: Client,
    shutdown: Shutdown,
}

fn start(client: Client, cfg: ReflectorConfig, clock: SharedClock) -> Running {
    let rec = Arc::new(Recorder::default());
    let shutdown = Shutdown::new();
    let source: Arc<dyn ListerWatcher<Pod>> =
        Arc::new(KubeSource::<Pod>::new(client.clone(), PODS));
    let inf = Informer::builder(source)
        .config(cfg)
        .clock(clock)
        .handler(rec.clone())
        .start(&shutdown)
        .expect("start informer");
    Running {
        inf,
        rec,
        client,
        shutdown,
    }
}

impl Running {
    fn stop(self, clock: Option<&FakeClock>) {
        self.shutdown.trigger();
        self.client.shutdown_watches();
        if let Some(c) = clock {
            c.step(Duration::from_secs(600));
        }
        assert!(self.inf.join(), "informer thread panicked");
    }
}

/// Poll `cond` every 5 ms (real time) for up to `secs` seconds.
fn eventually(what: &str, secs: u64, mut cond: impl FnMut() -> bool) {
    let clock = RealClock;
    let deadline = clock.now() + Duration::from_secs(secs);
    while !cond() {
        assert!(clock.now() < deadline, "timed out waiting for: {what}");
        clock.sleep(Duration::from_millis(5));
    }
}

/// Wait for the first list to be delivered and the watch to be open, so
/// that faults injected next hit an open watch.
fn synced_and_watching(sim: &SimServer, r: &Running) {
    eventually("sync", 10, || r.inf.has_synced());
    eventually("watch open", 10, || sim.store().watch_count() == 1);
}

fn lists(sim: &SimServer) -> u64 {
    sim.requests().get(Verb::List, "pods")
}

fn watches(sim: &SimServer) -> u64 {
    sim.requests().get(Verb::Watch, "pods")
}

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
fn expired_watch_relists_with_synthetic_deletes() {
    let sim = SimServer::start(SimOptions::default()).expect("kube-sim");
    load_pods(&sim, 1, 3);
    let r = start(client(&sim, 3), fast_backoff(), RealClock::shared());
    synced_and_watching(&sim, &r);
    r.rec.take();
    // Hide the next changes from the informer, then compact them away.
    sim.faults().stall_watches(true);
    sim.faults().close_all_watches();
    eventually("a stalled re-watch", 10, || watches(&sim) >= 2);
    delete_pod(&sim, "ns-0", "pod-00001");
    set_gen(&sim, "ns-0", "pod-00002", 7);
    create_pod(&sim, "ns-0", "pod-00009");
    sim.store().compact();
    sim.faults().stall_watches(false);
    eventually("relist", 10, || lists(&sim) == 2 && r.rec.len() >= 3);
    RealClock.sleep(Duration::from_millis(50));
    let notes = r.rec.take();
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(matches!(&notes[0], Notification::Update { old, new }
        if new.name() == "pod-00002" && old.labels().get("gen") == Some("0") && new.labels().get("gen") == Some("7")));
    assert!(
        matches!(&notes[1], Notification::Add { obj, initial: false } if obj.name() == "pod-00009")
    );
    match &notes[2] {
        Notification::Delete(DeletedObject::FinalStateUnknown { key, last }) => {
            assert_eq!(key, "ns-0/pod-00001");
            assert_eq!(last.labels().get("gen"), Some("0"), "last known state");
        }
        other => panic!("expected a DeletedFinalStateUnknown, got {other:?}"),
    }
    assert_eq!(
        r.inf.store().keys(),
        ["ns-0/pod-00000", "ns-0/pod-00002", "ns-0/pod-00009"]
    );
    r.stop(None);
    sim.stop();
}

/// One backoff on the frozen fake clock: the informer sleeps and sends
/// nothing however long we wait in real time; once time is stepped past
/// the delay, it makes exactly the next attempt.
fn backoff_round(clock: &FakeClock, count: impl Fn() -> u64) {
    assert!(
        clock.wait_for_sleepers(1, Duration::from_secs(10)),
        "backs off"
    );
    let before = count();
    RealClock.sleep(Duration::from_millis(100));
    assert_eq!(count(), before, "no request while backing off");
    clock.step(Duration::from_secs(60));
    eventually("the next attempt", 10, || count() > before);
}

#[test]
fn server_error_bursts_back_off_without_hot_loop() {
    let opts = SimOptions {
        bookmark_interval: Duration::from_secs(3600),
        ..SimOptions::default()
    };
    let sim = SimServer::start(opts).expect("kube-sim");
    load_pods(&sim, 1, 1);
    // The client must not retry on its own: one failure = one request.
    sim.faults()
        .fail_next(2, Some(Verb::List), Some("pods".into()), 500, None);
    let clock = FakeClock::new();
    let r = start(client(&sim, 0), ReflectorConfig::default(), clock.clone());
    for _ in 0..2 {
        backoff_round(&clock, || lists(&sim));
    }
    eventually("sync after two failed lists", 10, || r.inf.has_synced());
    assert_eq!(lists(&sim), 3);
    eventually("watch open", 10, || sim.store().watch_count() == 1);
    let w0 = watches(&sim);
    sim.faults()
        .fail_next(5, Some(Verb::Watch), Some("pods".into()), 503, None);
    sim.faults().close_all_watches();
    // A very short (empty) watch, then five 503s: six backoffs, each
    // followed by exactly one attempt.
    for _ in 0..6 {
        backoff_round(&clock, || watches(&sim));
    }
    eventually("watch re-established", 10, || {
        sim.store().watch_count() == 1
    });
    assert_eq!(watches(&sim), w0 + 6);
    create_pod(&sim, "ns-0", "late");
    eventually("event after recovery", 10, || {
        r.inf.store().get("ns-0/late").is_some()
    });
    assert_eq!(lists(&sim), 3, "503s on watch do not relist");
    r.stop(Some(&clock));
    sim.stop();
}

#[test]
fn bookmarks_advance_rv_so_reconnect_after_idle_needs_no_relist() {
    let opts = SimOptions {
        bookmark_interval: Duration::from_millis(100),
        ..SimOptions::default()
    };
    let sim = SimServer::start(opts).expect("kube-sim");
    load_pods(&sim, 2, 2);
    let r = start(client(&sim, 3), fast_backoff(), RealClock::shared());
    synced_and_watching(&sim, &r);
    // Other resources move the global resourceVersion; pods stay idle.
    let ns_info = lookup("", "v1", "namespaces").expect("namespaces served");
    for i in 0..5 {
        let key = Key::new(ns_info, "", &format!("extra-{i}"));
        sim.store().txn(|t| {
            t.put(
                &key,
                "create",
                json!({"metadata": {"name": format!("extra-{i}")}}),
            );
        });
    }
    let now = sim.store().current_rv().to_string();
    eventually("a bookmark at the newest RV", 10, || {
        r.inf.store().resource_version() == now
    });
    sim.store().compact();
    sim.faults().close_all_watches();
    create_pod(&sim, "ns-1", "after-idle");
    eventually("event after reconnect", 10, || {
        r.inf.store().get("ns-1/after-idle").is_some()
    });
    assert_eq!(lists(&sim), 1, "no relist: the bookmark RV was still valid");
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
    use endpointd::informer::{IndexKey, KubeSource, SERVICE_NAME_LABEL};
    use endpointd::kube::ENDPOINTSLICES;
    use endpointd::model::EndpointSlice;

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
