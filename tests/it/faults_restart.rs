//! Faults of processes and of the API server's life (issue 14): the leader
//! SIGKILLed mid-churn, SIGTERM during a large sync, the API server gone
//! for 30 s and back with the same state or as a fresh server (resource
//! versions from 1) loaded with the current objects. Each ends with full
//! convergence and prints its figures.

use crate::harness::controller as controller_support;

use controller_support::churn::*;
use controller_support::*;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(30);
/// Longest wait after a 30 s outage: backoff up to 60 s, then 10 s before
/// stale write bookkeeping is dropped, plus margin.
const AFTER_OUTAGE: Duration = Duration::from_secs(90);
const NO_ELECTION: &str = "[leader_election]\nenabled = false\n";

fn elected(identity: &str) -> String {
    format!("[leader_election]\nidentity = \"{identity}\"\nlease_duration = \"3s\"\nrenew_deadline = \"2s\"\nretry_period = \"500ms\"\n")
}

fn holder(c: &Cluster) -> Option<String> {
    c.get("leases", "kube-system", "endpointd")?["spec"]["holderIdentity"]
        .as_str()
        .map(str::to_string)
}

fn endpointd_writes(c: &Cluster) -> usize {
    c.write_count("endpoints") + c.write_count("endpointslices")
}

#[test]
fn leader_sigkilled_mid_churn_the_standby_takes_over_and_nothing_is_lost() {
    let c = Cluster::start("fr-kill");
    c.load(workload());
    let mut a = Daemon::start(&c, "a", &elected("node-a"));
    wait_until("a leads", LIMIT, || holder(&c).as_deref() == Some("node-a"));
    let b = Daemon::start(&c, "b", &elected("node-b"));
    wait_until("b is a standby", LIMIT, || {
        b.http_get("/readyz")
            .is_some_and(|(_, body)| body.starts_with("ok: standby"))
    });
    c.wait_converged(LIMIT);
    let churn = Churn::default();
    let stop = AtomicBool::new(false);
    let mut takeover = Duration::ZERO;
    let mut before = 0;
    let mut ops_at_kill = 0;
    std::thread::scope(|s| {
        s.spawn(|| churn_until(&c, &churn, 20, &stop, 11));
        std::thread::sleep(Duration::from_secs(3));
        before = requests(&c);
        ops_at_kill = churn.ops.load(Ordering::SeqCst);
        let _ = a.child.kill();
        let _ = a.child.wait();
        let t = Instant::now();
        wait_until("b takes the lease", LIMIT, || {
            holder(&c).as_deref() == Some("node-b")
        });
        takeover = t.elapsed();
        std::thread::sleep(Duration::from_secs(5));
        stop.store(true, Ordering::SeqCst);
    });
    let t = c.wait_converged(LIMIT);
    eprintln!(
        "fault leader SIGKILL mid-churn: standby took the lease {takeover:?} after the kill; {} changes after it",
        churn.ops.load(Ordering::SeqCst) - ops_at_kill
    );
    report("leader SIGKILL", &c, &churn, before, t);
    assert!(
        takeover < Duration::from_millis(3000 + 2 * 500 + 1500),
        "{takeover:?}"
    );
    assert!(
        c.sim
            .store()
            .write_log()
            .iter()
            .any(|w| w.resource == "endpointslices" && w.user_agent.contains("(node-b)")),
        "the new leader wrote"
    );
    assert_eq!(b.stop(), Some(0));
}

/// Managed slices per Service (a duplicate shows as 2 for these small ones).
fn slices_per_service(c: &Cluster) -> std::collections::BTreeMap<String, usize> {
    let mut m = std::collections::BTreeMap::new();
    for s in c.all("endpointslices") {
        if s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"]
            == "endpointslice-controller.k8s.io"
        {
            let svc = s["metadata"]["labels"]["kubernetes.io/service-name"]
                .as_str()
                .unwrap_or("")
                .to_string();
            *m.entry(svc).or_insert(0) += 1;
        }
    }
    m
}

#[test]
fn sigterm_during_a_large_sync_exits_within_10s_and_the_restart_converges() {
    let c = Cluster::start("fr-term");
    const N: usize = 300;
    let mut items = vec![node("node-a", "z1")];
    for s in 0..N {
        items.push(service(
            "default",
            &format!("big-{s}"),
            &format!("big-{s}"),
            json!(8080),
        ));
        for p in 0..5 {
            let i = s * 5 + p;
            items.push(pod(
                "default",
                &format!("big-{s}-{p}"),
                &format!("big-{s}"),
                &ip(i),
                p != 0,
            ));
        }
    }
    c.load(items);
    // 20 ms per request: the first sync (2 writes per Service) takes seconds.
    c.sim.faults().set_latency(Duration::from_millis(20));
    let d = Daemon::start(&c, "a", &elected("node-a"));
    wait_until("the sync is under way", LIMIT, || {
        endpointd_writes(&c) >= 40
    });
    let written = endpointd_writes(&c);
    let t = Instant::now();
    let code = d.stop();
    let exit = t.elapsed();
    let lease_free = holder(&c).is_none_or(|h| h.is_empty());
    eprintln!(
        "fault SIGTERM mid-sync: {written} of {} writes done; exited {code:?} {exit:?} after SIGTERM; lease released: {lease_free}",
        2 * N
    );
    assert_eq!(code, Some(0));
    assert!(exit < Duration::from_secs(10), "{exit:?}");
    assert!(lease_free, "the lease is released: {:?}", holder(&c));
    assert!(endpointd_writes(&c) < 2 * N, "SIGTERM landed mid-sync");
    c.sim.faults().set_latency(Duration::ZERO);
    let t = Instant::now();
    let d = Daemon::start(&c, "b", &elected("node-a"));
    let took = c.wait_converged(Duration::from_secs(60));
    let dup: Vec<_> = slices_per_service(&c)
        .into_iter()
        .filter(|(_, n)| *n != 1)
        .collect();
    eprintln!(
        "fault SIGTERM mid-sync: the restarted process converged {took:?} ({:?} after its start)",
        t.elapsed()
    );
    assert!(dup.is_empty(), "one slice per Service: {dup:?}");
    assert_eq!(slices_per_service(&c).len(), N);
    assert_eq!(d.stop(), Some(0));
}

#[test]
fn the_api_server_unreachable_for_30s_then_back_with_the_same_state() {
    let c = Cluster::start("fr-same");
    c.load(workload());
    let d = Daemon::start(&c, "a", NO_ELECTION);
    c.wait_converged(LIMIT);
    let (before, writes) = (requests(&c), endpointd_writes(&c));
    assert!(c.sim.faults().outage(Duration::from_secs(30)));
    std::thread::sleep(Duration::from_secs(30));
    let t = c.wait_converged(LIMIT);
    // Converged already; wait for the reconnection to prove nothing moves.
    let relisted = Instant::now();
    wait_until("watching again", AFTER_OUTAGE, || requests(&c) > before);
    std::thread::sleep(Duration::from_secs(3));
    let during = requests(&c) - before;
    let new_writes = endpointd_writes(&c) - writes;
    eprintln!(
        "fault 30 s outage, same state: {during} requests; back {:?} after; converged {t:?}; {new_writes} writes",
        relisted.elapsed()
    );
    assert_eq!(
        new_writes, 0,
        "nothing to write after an outage that changed nothing"
    );
    c.wait_converged(LIMIT);
    assert_eq!(d.stop(), Some(0));
}

#[test]
fn the_api_server_back_after_30s_as_a_fresh_server_with_the_current_objects() {
    let mut c = Cluster::start("fr-fresh");
    c.load(workload());
    let d = Daemon::start(&c, "a", NO_ELECTION);
    c.wait_converged(LIMIT);
    let churn = Churn::default();
    let mut rng = fastrand::Rng::with_seed(21);
    for _ in 0..40 {
        churn_once(&c, &churn, &mut rng);
    }
    c.wait_converged(LIMIT);
    let old_rv = c.sim.store().current_rv();
    let objects = snapshot(&c);
    replace_sim(&mut c, Duration::from_secs(30), objects, 0);
    let up = Instant::now();
    // 20 changes on the fresh server before endpointd is back. Its
    // resourceVersions stay behind the old ones, so the informers that
    // watched at the old ones are told "too large" and list again.
    let mut rng = fastrand::Rng::with_seed(22);
    for _ in 0..20 {
        churn_once(&c, &churn, &mut rng);
    }
    let fresh_rv = c.sim.store().current_rv();
    assert!(fresh_rv + 40 < old_rv, "fresh {fresh_rv}, old {old_rv}");
    // Informers that failed for 30 s wait up to 60 s (client-go's 30 s cap,
    // jitter 1.0) before they try again; slice bookkeeping that looks
    // stale is dropped 10 s after the relist.
    let lists = || -> Vec<u64> {
        ["pods", "endpoints", "endpointslices"]
            .iter()
            .map(|r| c.sim.requests().full_lists(r))
            .collect()
    };
    wait_until(
        "pods, Endpoints and slices listed again",
        AFTER_OUTAGE,
        || lists().iter().all(|n| *n >= 1),
    );
    c.wait_converged(Duration::from_secs(20));
    eprintln!(
        "fault fresh server (resourceVersion {fresh_rv}, was {old_rv}) after 30 s down: converged {:?} after it came up, {} requests; LISTs of pods, endpoints, slices: {:?}",
        up.elapsed(),
        requests(&c),
        lists()
    );
    // Then it follows changes through its new watches.
    let before = requests(&c);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| churn_until(&c, &churn, 20, &stop, 23));
        std::thread::sleep(Duration::from_secs(3));
        stop.store(true, Ordering::SeqCst);
    });
    let t = c.wait_converged(LIMIT);
    report("fresh server, churn after", &c, &churn, before, t);
    assert_eq!(d.stop(), Some(0));
}

/// A fresh server whose resourceVersions have already passed those
/// endpointd watched at when it reconnects: its watches are accepted and
/// follow another history, and nothing in the protocol says so (kube-
/// controller-manager stays wrong until restarted, as Kubernetes' etcd
/// restore procedure says). endpointd notices that a Service meets only
/// conflicts for 30 s and has every informer list again.
#[test]
fn a_fresh_server_whose_resource_versions_passed_the_old_ones_is_noticed_by_its_conflicts() {
    let mut c = Cluster::start("fr-passed");
    c.load(workload());
    let d = Daemon::start(&c, "a", NO_ELECTION);
    c.wait_converged(LIMIT);
    let churn = Churn::default();
    let mut rng = fastrand::Rng::with_seed(41);
    for _ in 0..40 {
        churn_once(&c, &churn, &mut rng);
    }
    c.wait_converged(LIMIT);
    let old_rv = c.sim.store().current_rv();
    let objects = snapshot(&c);
    replace_sim(&mut c, Duration::from_secs(5), objects, 0);
    let fresh = c.sim.store().current_rv();
    // Writes that carry the fresh server past the old resourceVersions
    // before the informers come back.
    let pods: Vec<String> = c
        .all("pods")
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    let names: Vec<String> = (0..(old_rv - fresh + 20))
        .map(|_| pods[0].clone())
        .collect();
    for n in names {
        c.modify("pods", "default", &[n], |p| {
            p["metadata"]["labels"]["bump"] = json!(fastrand::u32(..).to_string());
        });
    }
    let now_rv = c.sim.store().current_rv();
    c.set_ready("default", &[pods[1].clone()], false);
    c.set_ready("default", &[pods[2].clone()], true);
    let t = c.wait_converged(Duration::from_secs(90));
    eprintln!(
        "fault fresh server past the old resourceVersions ({fresh} → {now_rv}, was {old_rv}): converged {t:?} after the changes, {} requests",
        requests(&c)
    );
    assert_eq!(d.stop(), Some(0));
}

/// The remedy of the case above: the restored store's revision bumped and
/// the older ones compacted (`etcdutl snapshot restore --bump-revision
/// --mark-compacted`, Kubernetes' documented procedure). Every informer is
/// told 410 when it comes back and lists again.
#[test]
fn a_restore_with_bumped_and_compacted_revisions_is_relisted() {
    let mut c = Cluster::start("fr-bumped");
    c.load(workload());
    let d = Daemon::start(&c, "a", NO_ELECTION);
    c.wait_converged(LIMIT);
    let churn = Churn::default();
    let mut rng = fastrand::Rng::with_seed(51);
    for _ in 0..40 {
        churn_once(&c, &churn, &mut rng);
    }
    c.wait_converged(LIMIT);
    let objects = snapshot(&c);
    replace_sim(&mut c, Duration::from_secs(5), objects, 1_000_000_000);
    let up = Instant::now();
    for _ in 0..20 {
        churn_once(&c, &churn, &mut rng);
    }
    let t = c.wait_converged(Duration::from_secs(60));
    eprintln!(
        "fault restore with bumped revisions: converged {t:?} ({:?} after it came up), {} requests",
        up.elapsed(),
        requests(&c)
    );
    let before = requests(&c);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| churn_until(&c, &churn, 20, &stop, 52));
        std::thread::sleep(Duration::from_secs(3));
        stop.store(true, Ordering::SeqCst);
    });
    let t = c.wait_converged(LIMIT);
    report("bumped restore, churn after", &c, &churn, before, t);
    assert_eq!(d.stop(), Some(0));
}
