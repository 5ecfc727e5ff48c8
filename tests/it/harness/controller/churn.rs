//! Pod churn for the fault tests: a cluster of SERVICES Services of
//! PODS_PER_SERVICE pods, random changes (readiness flips, pods deleted
//! and added), the request count of a fault and its one-line report.

use super::{ip, pod, service, Cluster};
use kube_sim::requestinfo::Verb;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

pub const SERVICES: usize = 4;
pub const PODS_PER_SERVICE: usize = 12;

/// Changes made so far and the next free pod IP.
pub struct Churn {
    pub next_ip: AtomicUsize,
    pub ops: AtomicUsize,
}

impl Default for Churn {
    fn default() -> Self {
        Churn {
            next_ip: AtomicUsize::new(SERVICES * PODS_PER_SERVICE),
            ops: AtomicUsize::new(0),
        }
    }
}

/// The objects of the churn cluster: a node, the Services, their pods
/// (one in three not ready).
pub fn workload() -> Vec<Value> {
    let mut items = vec![super::node("node-a", "z1")];
    for s in 0..SERVICES {
        items.push(service(
            "default",
            &format!("svc-{s}"),
            &format!("app-{s}"),
            json!("http"),
        ));
        for p in 0..PODS_PER_SERVICE {
            let i = s * PODS_PER_SERVICE + p;
            items.push(pod(
                "default",
                &format!("svc-{s}-{p}"),
                &format!("app-{s}"),
                &ip(i),
                p % 3 != 0,
            ));
        }
    }
    items
}

/// One random change: a readiness flip (70 %), a pod deleted (15 %) or
/// added (15 %).
pub fn churn_once(c: &Cluster, churn: &Churn, rng: &mut fastrand::Rng) {
    let pods: Vec<String> = c
        .all("pods")
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    let roll = rng.u32(..100);
    if roll < 70 && !pods.is_empty() {
        let p = pods[rng.usize(..pods.len())].clone();
        c.set_ready("default", &[p], rng.bool());
    } else if roll < 85 && pods.len() > SERVICES {
        let p = pods[rng.usize(..pods.len())].clone();
        c.delete("pods", "default", &[p]);
    } else {
        let i = churn.next_ip.fetch_add(1, Ordering::SeqCst);
        let s = rng.usize(..SERVICES);
        c.load(vec![pod(
            "default",
            &format!("svc-{s}-x{i}"),
            &format!("app-{s}"),
            &ip(i),
            rng.bool(),
        )]);
    }
    churn.ops.fetch_add(1, Ordering::SeqCst);
}

/// Churn at about `per_sec` changes per second until `stop`.
pub fn churn_until(c: &Cluster, churn: &Churn, per_sec: u64, stop: &AtomicBool, seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let pause = Duration::from_millis(1000 / per_sec.max(1));
    while !stop.load(Ordering::SeqCst) {
        churn_once(c, churn, &mut rng);
        std::thread::sleep(pause);
    }
}

/// The requests endpointd's controllers make (lists, watches, writes).
pub fn requests(c: &Cluster) -> u64 {
    let r = c.sim.requests();
    [
        (Verb::List, "pods"),
        (Verb::Watch, "pods"),
        (Verb::List, "services"),
        (Verb::Watch, "services"),
        (Verb::List, "endpoints"),
        (Verb::List, "endpointslices"),
        (Verb::Update, "endpoints"),
        (Verb::Update, "endpointslices"),
        (Verb::Create, "endpointslices"),
    ]
    .iter()
    .map(|(v, res)| r.get(*v, res))
    .sum()
}

pub fn report(name: &str, c: &Cluster, churn: &Churn, before: u64, converge: Duration) {
    eprintln!(
        "fault {name}: {} changes; {} requests during the fault; converged {converge:?} after it",
        churn.ops.load(Ordering::SeqCst),
        requests(c) - before
    );
}

/// Every object endpointd reads or writes, as a List item (apiVersion and
/// kind set, resourceVersion dropped): what a fresh server is loaded with.
pub fn snapshot(c: &Cluster) -> Vec<Value> {
    let mut out = Vec::new();
    for (api, kind, res) in [
        ("v1", "Node", "nodes"),
        ("v1", "Service", "services"),
        ("v1", "Pod", "pods"),
        ("v1", "Endpoints", "endpoints"),
        ("discovery.k8s.io/v1", "EndpointSlice", "endpointslices"),
        ("coordination.k8s.io/v1", "Lease", "leases"),
    ] {
        for mut o in c.all(res) {
            o["apiVersion"] = json!(api);
            o["kind"] = json!(kind);
            if let Some(m) = o["metadata"].as_object_mut() {
                m.remove("resourceVersion");
            }
            out.push(o);
        }
    }
    out
}

/// Stop `c`'s kube-sim, keep its address refusing connections for `down`,
/// then start a fresh one (empty history, resourceVersions from 1) on the
/// same address, loaded with `items`; `bump` > 0 then does what
/// `etcdutl snapshot restore --bump-revision BUMP --mark-compacted` does.
pub fn replace_sim(c: &mut Cluster, down: Duration, items: Vec<Value>, bump: u64) {
    use kube_sim::server::{SimOptions, SimServer};
    let addr: std::net::SocketAddr = c
        .sim
        .url()
        .trim_start_matches("http://")
        .parse()
        .expect("address");
    let placeholder = SimServer::start(SimOptions::default()).expect("placeholder");
    std::mem::replace(&mut c.sim, placeholder).stop();
    std::thread::sleep(down);
    // Loaded (and bumped) before it listens, as a restored API server is:
    // loading after it is up let endpointd's lease thread create its Lease
    // first, and the load then failed on "already exists".
    let load = c.dir.join("restore.json");
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    std::fs::write(&load, list.to_string()).expect("write the restore file");
    let fresh = SimServer::start(SimOptions {
        listen: addr,
        load: Some(load),
        bump_revision: bump,
        ..SimOptions::default()
    })
    .expect("a fresh kube-sim on the same address, loaded");
    std::mem::replace(&mut c.sim, fresh).stop();
}
