//! The faults an edge control plane sees (issue 14), each injected into
//! kube-sim on loopback while pods churn, each ending with full
//! convergence: every Service's Endpoints and EndpointSlices hold exactly
//! its pods, readiness right, no duplicate, no stale slice. Each prints the
//! time to converge after the fault and the requests made during it.

use crate::harness::controller as controller_support;

use controller_support::churn::*;
use controller_support::*;
use kube_sim::requestinfo::Verb;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(30);
/// An outage the leader of [`LONG_LEASE`] keeps its lease through.
const OUTAGE: Duration = Duration::from_secs(30);
/// Leader election whose renew deadline outlasts [`OUTAGE`], and whose
/// lease thread tries every second.
const LONG_LEASE: &str = "[leader_election]\nlease_duration = \"60s\"\nrenew_deadline = \"40s\"\nretry_period = \"1s\"\n";
/// Both controllers, no leader election (a 30 s outage would otherwise
/// cost the lease, and the daemon exits to be restarted by systemd — the
/// leader-election tests cover that path).
const CFG: &str = "[leader_election]\nenabled = false\n";
/// The churn cluster, converged under a running endpointd.
fn setup(name: &str) -> (Cluster, Daemon, Churn) {
    let c = Cluster::start(name);
    c.load(workload());
    let d = Daemon::start(&c, name, CFG);
    c.wait_converged(LIMIT);
    (c, d, Churn::default())
}

#[test]
fn every_watch_dropped_every_2s_for_30s_while_pods_churn() {
    let (c, d, churn) = setup("f-drop");
    let before = requests(&c);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| churn_until(&c, &churn, 20, &stop, 1));
        for _ in 0..15 {
            std::thread::sleep(Duration::from_secs(2));
            c.sim.faults().close_all_watches();
        }
        stop.store(true, Ordering::SeqCst);
    });
    let t = c.wait_converged(LIMIT);
    report("watches dropped", &c, &churn, before, t);
    // Each drop is followed by a history probe (a LIST of one object), not
    // by a relist.
    let relists = d.metric(r#"endpointd_informer_lists_total{resource="pods",kind="relist"}"#);
    let probes =
        d.metric(r#"endpointd_informer_history_probes_total{resource="pods",result="current"}"#);
    eprintln!("pods: {relists:?} relists, {probes:?} history probes");
    assert!(
        relists.unwrap_or(0.0) <= 2.0,
        "watches resume from their resourceVersion, no relist storm"
    );
    assert!(probes.unwrap_or(0.0) >= 1.0, "an early end is probed");
    assert!(
        c.sim.requests().full_lists("pods") <= 3,
        "no relist storm (kube-sim's count)"
    );
    assert_eq!(d.stop(), Some(0));
}

#[test]
fn history_compacted_again_and_again_and_a_delete_in_a_gap() {
    let (c, d, churn) = setup("f-compact");
    let before = requests(&c);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| churn_until(&c, &churn, 20, &stop, 2));
        for _ in 0..10 {
            std::thread::sleep(Duration::from_millis(700));
            c.sim.faults().compact();
            c.sim.faults().close_all_watches();
        }
        stop.store(true, Ordering::SeqCst);
    });
    // A pod deleted while the watches are down, its event compacted away:
    // only a relist can show the deletion.
    c.sim.faults().stall_watches(true);
    c.sim.faults().close_all_watches();
    std::thread::sleep(Duration::from_millis(300));
    let victim = c
        .all("pods")
        .iter()
        .find_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .expect("a pod");
    c.delete("pods", "default", &[victim]);
    c.sim.faults().compact();
    c.sim.faults().stall_watches(false);
    // An informer that met 410 right after each relist is backing off (up
    // to client-go's 30 s cap) when the compaction stops.
    let t = c.wait_converged(Duration::from_secs(60));
    report("compaction", &c, &churn, before, t);
    assert!(
        c.sim.requests().full_lists("pods") >= 2,
        "relisted after 410"
    );
    assert_eq!(d.stop(), Some(0));
}

#[test]
fn one_request_in_ten_fails_then_a_429_burst_is_honoured() {
    let (c, d, churn) = setup("f-errors");
    let before = requests(&c);
    c.sim.faults().fail_every(Some((10, 503)));
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| churn_until(&c, &churn, 20, &stop, 3));
        std::thread::sleep(Duration::from_secs(10));
        stop.store(true, Ordering::SeqCst);
    });
    c.sim.faults().fail_every(None);
    let t = c.wait_converged(LIMIT);
    report("10% 503", &c, &churn, before, t);
    // A burst of 429s asking for 1 s: clients wait instead of storming.
    let burst_start = requests(&c);
    c.sim.faults().fail_next(30, None, None, 429, Some(1));
    let stop = AtomicBool::new(false);
    let t0 = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| churn_until(&c, &churn, 10, &stop, 4));
        std::thread::sleep(Duration::from_secs(3));
        stop.store(true, Ordering::SeqCst);
    });
    let during = requests(&c) - burst_start;
    let t = c.wait_converged(LIMIT);
    eprintln!(
        "fault 429 burst: {during} requests in {:?} (30 answered 429 with Retry-After 1 s); converged {t:?} after",
        t0.elapsed()
    );
    assert!(during < 200, "no retry storm: {during} requests in 3 s");
    assert_eq!(d.stop(), Some(0));
}

#[test]
fn a_slow_api_server_is_followed_and_writes_stay_bounded() {
    let (c, d, churn) = setup("f-slow");
    let writes_before = c.write_count("endpoints") + c.write_count("endpointslices");
    c.sim.faults().set_latency(Duration::from_millis(200));
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| churn_until(&c, &churn, 20, &stop, 5));
        std::thread::sleep(Duration::from_secs(8));
        stop.store(true, Ordering::SeqCst);
    });
    let t = c.wait_converged(LIMIT);
    c.sim.faults().set_latency(Duration::ZERO);
    let writes = c.write_count("endpoints") + c.write_count("endpointslices") - writes_before;
    let ops = churn.ops.load(Ordering::SeqCst);
    eprintln!("fault slow API (200 ms): {ops} changes, {writes} writes; converged {t:?} after");
    assert!(
        writes <= 2 * ops,
        "the queue dedups: {writes} writes for {ops} changes"
    );
    assert_eq!(d.stop(), Some(0));
}

/// A 30 s outage begun by `start`, 40 changes made meanwhile (as by another
/// API server replica); endpointd must converge soon after the server is
/// back, log the return, and keep running. Returns its log.
fn outage_with_changes(
    name: &str,
    what: &str,
    seed: u64,
    start: impl FnOnce(&kube_sim::faults::Faults) -> bool,
) -> String {
    let (c, d, churn) = setup(name);
    let before = requests(&c);
    assert!(start(c.sim.faults()));
    let mut rng = fastrand::Rng::with_seed(seed);
    for _ in 0..40 {
        churn_once(&c, &churn, &mut rng);
    }
    std::thread::sleep(Duration::from_secs(30));
    // After 30 s of failures an informer waits up to 60 s (client-go's 30 s
    // cap with jitter 1.0) before it tries again on its own; the first
    // request of the process that gets through (the heartbeat tries at
    // least every 7 s, an informer when its backoff ends) ends every
    // informer's backoff.
    let t = c.wait_converged(Duration::from_secs(90));
    report(what, &c, &churn, before, t);
    let log = d.log_text();
    for l in log.lines().filter(|l| l.contains("answers again")) {
        eprintln!("  {l}");
    }
    assert!(
        log.contains("answers again (no request got through for"),
        "the return is logged:\n{log}"
    );
    assert!(
        t < Duration::from_secs(12),
        "converged {t:?} after the outage: the caches waited out their own backoffs"
    );
    assert_eq!(d.stop(), Some(0), "kept running through the outage");
    log
}

#[test]
fn the_api_server_unreachable_for_30s_then_back_with_changes() {
    outage_with_changes("f-outage", "30 s outage", 6, |f| {
        f.outage(Duration::from_secs(30))
    });
}

/// The same outage behind a load balancer that proxies HTTP (nginx,
/// haproxy in HTTP mode): the connections are accepted and every request
/// is answered 502 with the proxy's HTML page while no API server is behind
/// it. Such an answer did not come from an API server (no `Status` body),
/// so it counts as the server being unreachable, as a refused connection
/// does: the first answer of the API server ends every backoff. client-go
/// takes it for a 5xx of the API server and each reflector waits out its
/// own backoff (endpointd did too: converged 21 s after).
#[test]
fn the_api_server_behind_a_proxy_gone_for_30s_then_back_with_changes() {
    let log = outage_with_changes("f-gateway", "30 s behind a proxy answering 502", 7, |f| {
        f.gateway_outage(Duration::from_secs(30), 502)
    });
    assert!(
        !log.contains("<html"),
        "the proxy's page is not logged:\n{log}"
    );
}

/// A Service whose writes fail through an outage waits, in upstream, for
/// its backoff to end or for its next pod change: each try (the client's
/// own three retries, ~2 s) is followed by a doubling wait (EndpointSlice
/// from 1 s, Endpoints from 5 ms), so after 30 s the next try is some 10 s
/// after the server is back. endpointd retries it once the server answers
/// again.
#[test]
fn writes_cut_off_by_an_outage_are_retried_once_the_server_answers() {
    // The leader keeps its lease through an outage shorter than its renew
    // deadline; its lease thread tries every second, so it is the first to
    // get through once the server is back.
    let c = Cluster::start("f-cutoff");
    c.load(workload());
    let d = Daemon::start(&c, "f-cutoff", LONG_LEASE);
    c.wait_converged(LIMIT);
    let writes = |c: &Cluster| c.write_count("endpoints") + c.write_count("endpointslices");
    let before = writes(&c);
    // Every request is answered after 1 s: the writes for this flip are in
    // flight when the outage cuts their connections.
    c.sim.faults().set_latency(Duration::from_secs(1));
    c.set_ready("default", &["svc-0-0".to_string()], true);
    std::thread::sleep(Duration::from_millis(500));
    assert!(c.sim.faults().outage(OUTAGE));
    c.sim.faults().set_latency(Duration::ZERO);
    std::thread::sleep(OUTAGE);
    assert_eq!(writes(&c), before, "nothing written during the outage");
    let t = c.wait_converged(Duration::from_secs(40));
    eprintln!("fault writes cut off by a {OUTAGE:?} outage: converged {t:?} after it");
    let log = d.log_text();
    for l in log.lines().filter(|l| l.contains("answers again")) {
        eprintln!("  {l}");
    }
    assert!(
        t < Duration::from_secs(6),
        "converged {t:?} after the outage: the Service waited out its backoff"
    );
    assert_eq!(d.stop(), Some(0));
}

#[test]
fn a_foreign_writer_is_corrected_and_unmanaged_slices_left_alone() {
    let (c, d, _churn) = setup("f-foreign");
    // Someone deletes a managed slice, empties an Endpoints, and adds a
    // slice of their own for the same Service.
    let managed = c
        .all("endpointslices")
        .iter()
        .find(|s| s["metadata"]["labels"]["kubernetes.io/service-name"] == "svc-0")
        .and_then(|s| s["metadata"]["name"].as_str().map(str::to_string))
        .expect("a managed slice");
    c.delete("endpointslices", "default", &[managed]);
    c.modify("endpoints", "default", &["svc-1".to_string()], |v| {
        v["subsets"] = json!([]);
    });
    c.load(vec![json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "svc-0-custom", "namespace": "default",
                     "labels": {"kubernetes.io/service-name": "svc-0", "endpointslice.kubernetes.io/managed-by": "someone-else"}},
        "addressType": "IPv4", "endpoints": [{"addresses": ["192.0.2.99"]}], "ports": []})]);
    let t = c.wait_converged(LIMIT);
    eprintln!("fault foreign writer: restored in {t:?}");
    let custom = c
        .get("endpointslices", "default", "svc-0-custom")
        .expect("unmanaged slice kept");
    assert_eq!(
        custom["endpoints"][0]["addresses"][0], "192.0.2.99",
        "untouched"
    );
    assert_eq!(d.stop(), Some(0));
}

#[test]
fn an_etcd_restore_behind_the_same_address_is_relisted_and_converged() {
    let (mut c, d, churn) = setup("f-restore");
    // A Service whose Endpoints and slices endpointd creates now; the
    // backup below is as if taken just before those writes.
    c.load(vec![
        service("default", "late", "app-late", json!("http")),
        pod("default", "late-0", "app-late", &ip(9000), true),
    ]);
    c.wait_converged(LIMIT);
    // The backup: every object as it is now.
    let mut backup = Vec::new();
    for (api, kind, res) in [
        ("v1", "Node", "nodes"),
        ("v1", "Service", "services"),
        ("v1", "Pod", "pods"),
        ("v1", "Endpoints", "endpoints"),
        ("discovery.k8s.io/v1", "EndpointSlice", "endpointslices"),
    ] {
        for mut o in c.all(res) {
            o["apiVersion"] = json!(api);
            o["kind"] = json!(kind);
            if let Some(m) = o["metadata"].as_object_mut() {
                m.remove("resourceVersion");
                m.remove("creationTimestamp");
            }
            let late = o["metadata"]["name"] == "late"
                || o["metadata"]["labels"]["kubernetes.io/service-name"] == "late";
            if !(late && matches!(res, "endpoints" | "endpointslices")) {
                backup.push(o);
            }
        }
    }
    // Life goes on for a while (more writes: resourceVersions grow well
    // past what the restored server will start from).
    let mut rng = fastrand::Rng::with_seed(7);
    for _ in 0..60 {
        churn_once(&c, &churn, &mut rng);
        std::thread::sleep(Duration::from_millis(20));
    }
    c.wait_converged(LIMIT);
    // The control plane is restored from the backup: a fresh API server on
    // the same address whose resourceVersions start again from 1.
    let addr: std::net::SocketAddr = c
        .sim
        .url()
        .trim_start_matches("http://")
        .parse()
        .expect("address");
    let old = std::mem::replace(
        &mut c.sim,
        kube_sim::server::SimServer::start(kube_sim::server::SimOptions {
            listen: "127.0.0.1:0".parse().expect("addr"),
            ..Default::default()
        })
        .expect("placeholder"),
    );
    old.stop();
    let fresh = kube_sim::server::SimServer::start(kube_sim::server::SimOptions {
        listen: addr,
        ..Default::default()
    })
    .expect("restored kube-sim on the same address");
    let placeholder = std::mem::replace(&mut c.sim, fresh);
    placeholder.stop();
    c.load(backup);
    // And changes after the restore.
    let mut rng = fastrand::Rng::with_seed(8);
    for _ in 0..20 {
        churn_once(&c, &churn, &mut rng);
    }
    let t = c.wait_converged(Duration::from_secs(60));
    eprintln!("fault etcd restore: converged {t:?} after the restored server came up");
    // Found by a probe: the restored server accepted the watches from our
    // (newer) resourceVersions without a word, as kube-apiserver does.
    let (_, metrics) = d.http_get("/metrics").expect("metrics");
    let behind: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("endpointd_informer_history_probes_total{"))
        .filter(|l| l.contains(r#"result="behind""#))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert!(
        behind >= 1.0,
        "a probe found the history behind:\n{metrics}"
    );
    assert_eq!(d.stop(), Some(0));
}

#[test]
fn update_races_answered_409_are_retried_from_a_fresh_cache() {
    let (c, d, churn) = setup("f-conflict");
    let before = requests(&c);
    for res in ["endpoints", "endpointslices"] {
        c.sim
            .faults()
            .fail_next(15, Some(Verb::Update), Some(res.to_string()), 409, None);
    }
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| churn_until(&c, &churn, 20, &stop, 9));
        std::thread::sleep(Duration::from_secs(5));
        stop.store(true, Ordering::SeqCst);
    });
    let t = c.wait_converged(LIMIT);
    report("409 conflicts", &c, &churn, before, t);
    let left = c.sim.faults().snapshot();
    assert_eq!(left["failNext"], json!([]), "every 409 was served: {left}");
    assert_eq!(d.stop(), Some(0));
}
