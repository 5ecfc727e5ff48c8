//! Shared helpers of the informer integration tests: kube-sim fixtures
//! (pods written straight into the sim's store), a client and a running
//! pod informer with a recorder, polling and request counters.
#![allow(dead_code)] // each test binary uses a different subset

use std::sync::Arc;
use std::time::Duration;

use endpointd_base::clock::{Clock, FakeClock, RealClock, SharedClock};
use endpointd_kube::informer::backoff::BackoffConfig;
use endpointd_kube::informer::kube_source::KubeSource;
use endpointd_kube::informer::{Informer, ListerWatcher, Recorder, ReflectorConfig};
use endpointd_kube::kube::{Client, ClientConfig, PODS};
use endpointd_kube::model::Pod;
use endpointd_kube::shutdown::Shutdown;
use kube_sim::requestinfo::Verb;
use kube_sim::resources::lookup;
use kube_sim::server::SimServer;
use kube_sim::store::Key;
use serde_json::{json, Value};

pub fn pod_json(ns: &str, name: &str) -> Value {
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
pub fn load_pods(sim: &SimServer, namespaces: usize, per_ns: usize) {
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

pub fn pod_key(ns: &str, name: &str) -> Key {
    Key::new(lookup("", "v1", "pods").expect("pods served"), ns, name)
}

/// Set label `gen` of an existing pod (an update with a new RV).
pub fn set_gen(sim: &SimServer, ns: &str, name: &str, gen: u32) {
    let key = pod_key(ns, name);
    sim.store().txn(|t| {
        let mut v = t.get(&key).expect("pod exists").value();
        v["metadata"]["labels"]["gen"] = json!(gen.to_string());
        t.put(&key, "update", v);
    });
}

pub fn create_pod(sim: &SimServer, ns: &str, name: &str) {
    let key = pod_key(ns, name);
    let v = pod_json(ns, name);
    sim.store().txn(|t| {
        t.put(&key, "create", v);
    });
}

pub fn delete_pod(sim: &SimServer, ns: &str, name: &str) {
    let key = pod_key(ns, name);
    sim.store().txn(|t| {
        t.delete(&key, "delete").expect("pod exists");
    });
}

pub fn client(sim: &SimServer, retries: u32) -> Client {
    let mut cfg = ClientConfig::new(sim.url());
    cfg.qps = 0.0;
    cfg.max_retries = retries;
    Client::new(cfg, RealClock::shared(), None).expect("client for kube-sim")
}

pub fn fast_backoff() -> ReflectorConfig {
    ReflectorConfig {
        backoff: BackoffConfig {
            initial: Duration::from_millis(20),
            cap: Duration::from_millis(200),
            ..BackoffConfig::default()
        },
        ..ReflectorConfig::default()
    }
}

pub struct Running {
    pub inf: Informer<Pod>,
    pub rec: Arc<Recorder<Pod>>,
    pub client: Client,
    pub shutdown: Shutdown,
}

pub fn start(client: Client, cfg: ReflectorConfig, clock: SharedClock) -> Running {
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
    pub fn stop(self, clock: Option<&FakeClock>) {
        self.shutdown.trigger();
        self.client.shutdown_watches();
        if let Some(c) = clock {
            c.step(Duration::from_secs(600));
        }
        assert!(self.inf.join(), "informer thread panicked");
    }
}

/// Poll `cond` every 5 ms (real time) for up to `secs` seconds.
pub fn eventually(what: &str, secs: u64, mut cond: impl FnMut() -> bool) {
    let clock = RealClock;
    let deadline = clock.now() + Duration::from_secs(secs);
    while !cond() {
        assert!(clock.now() < deadline, "timed out waiting for: {what}");
        clock.sleep(Duration::from_millis(5));
    }
}

/// Wait for the first list to be delivered and the watch to be open, so
/// that faults injected next hit an open watch.
pub fn synced_and_watching(sim: &SimServer, r: &Running) {
    eventually("sync", 10, || r.inf.has_synced());
    eventually("watch open", 10, || sim.store().watch_count() == 1);
}

/// LISTs that fill the cache (not the one-object LISTs that probe the
/// server's resourceVersion after a watch ended early).
pub fn lists(sim: &SimServer) -> u64 {
    sim.requests().full_lists("pods")
}

pub fn watches(sim: &SimServer) -> u64 {
    sim.requests().get(Verb::Watch, "pods")
}

/// One backoff on the frozen fake clock: the informer sleeps and sends
/// nothing however long we wait in real time; once time is stepped past
/// the delay, it makes exactly the next attempt.
pub fn backoff_round(clock: &FakeClock, count: impl Fn() -> u64) {
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
