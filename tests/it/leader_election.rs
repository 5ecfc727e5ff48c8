//! Leader election with real processes against kube-sim: one leader
//! writes, a standby only renews its own identity Lease, takeovers after
//! SIGTERM (released lease) and SIGKILL (expired lease), and a paused
//! leader that resumes after losing its lease writes nothing and exits 1.

use crate::harness::controller as controller_support;

use controller_support::*;
use serde_json::json;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(30);
/// lease_duration > renew_deadline > 1.2 × retry_period, short for tests.
const FAST: &str = "[leader_election]\nlease_duration = \"3s\"\nrenew_deadline = \"2s\"\nretry_period = \"500ms\"\n";

fn cfg(identity: &str) -> String {
    format!("{FAST}identity = \"{identity}\"\n")
}

fn ready_body(d: &Daemon) -> String {
    d.http_get("/readyz").map(|(_, b)| b).unwrap_or_default()
}

fn holder(c: &Cluster) -> Option<String> {
    c.get("leases", "kube-system", "endpointd")?["spec"]["holderIdentity"]
        .as_str()
        .map(str::to_string)
}

fn ready_count(c: &Cluster, name: &str) -> usize {
    c.get("endpoints", "default", name)
        .map(|e| {
            e["subsets"].as_array().map_or(0, |s| {
                s.iter()
                    .map(|x| x["addresses"].as_array().map_or(0, Vec::len))
                    .sum()
            })
        })
        .unwrap_or(0)
}

/// A cluster with one service and `n` ready pods on node-a.
fn cluster(name: &str, n: usize) -> Cluster {
    let c = Cluster::start(name);
    let mut items = vec![
        node("node-a", "z1"),
        service("default", "web", "web", json!(8080)),
    ];
    items.extend((0..n).map(|i| pod("default", &format!("web-{i}"), "web", &ip(i), true)));
    c.load(items);
    c
}

fn writes_of_standby(d: &Daemon) -> f64 {
    let (_, body) = d.http_get("/metrics").unwrap_or_default();
    body.lines()
        .filter(|l| l.starts_with("rest_client_requests_total{"))
        .filter(|l| {
            ["POST", "PUT", "DELETE", "PATCH"]
                .iter()
                .any(|v| l.contains(&format!("method=\"{v}\"")))
        })
        .filter(|l| {
            ["\"endpoints\"", "endpointslices", "events"]
                .iter()
                .any(|r| l.contains(r))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn one_leader_writes_and_the_standby_only_heartbeats() {
    let c = cluster("le-two", 3);
    let a = Daemon::start(&c, "a", &cfg("node-a"));
    wait_until("a leads", LIMIT, || ready_body(&a) == "ok: leading\n");
    let b = Daemon::start(&c, "b", &cfg("node-b"));
    wait_until("b is a standby", LIMIT, || {
        ready_body(&b) == "ok: standby; leader is node-a\n"
    });
    wait_until("3 ready addresses", LIMIT, || ready_count(&c, "web") == 3);
    c.set_ready("default", &["web-0".to_string()], false);
    wait_until("2 ready addresses", LIMIT, || ready_count(&c, "web") == 2);
    assert_eq!(
        writes_of_standby(&b),
        0.0,
        "the standby never writes Endpoints, EndpointSlices or Events"
    );
    assert!(writes_of_standby(&a) > 0.0);
    let by = |who: &str| -> Vec<String> {
        c.sim
            .store()
            .write_log()
            .into_iter()
            .filter(|w| w.user_agent.contains(who))
            .map(|w| w.resource)
            .collect()
    };
    let standby = by("(node-b)");
    assert!(
        !standby.is_empty() && standby.iter().all(|r| r == "leases"),
        "kube-sim's write log: the standby wrote only its leases: {standby:?}"
    );
    let leader = by("(node-a)");
    assert!(
        leader.iter().any(|r| r == "endpoints") && leader.iter().any(|r| r == "endpointslices"),
        "{leader:?}"
    );
    assert!(c
        .sim
        .store()
        .write_log()
        .iter()
        .filter(|w| w.resource == "endpoints")
        .all(|w| w.user_agent.contains("(node-a) endpoint-controller")));
    let ids: Vec<String> = c
        .all("leases")
        .iter()
        .filter(|l| l["metadata"]["labels"]["endpointd.io/identity"] == "endpointd")
        .filter_map(|l| l["spec"]["holderIdentity"].as_str().map(str::to_string))
        .collect();
    assert!(
        ids.contains(&"node-a".to_string()) && ids.contains(&"node-b".to_string()),
        "{ids:?}"
    );
    wait_until("the 'became leader' Event on the Lease", LIMIT, || {
        c.all("events").iter().any(|e| {
            e["reason"] == "LeaderElection"
                && e["message"] == "node-a became leader"
                && e["involvedObject"]["kind"] == "Lease"
        })
    });
    let (_, m) = a.http_get("/metrics").unwrap_or_default();
    assert!(
        m.contains("leader_election_master_status{name=\"endpointd\"} 1"),
        "{m}"
    );
    let (_, m) = b.http_get("/metrics").unwrap_or_default();
    assert!(
        m.contains("leader_election_master_status{name=\"endpointd\"} 0"),
        "{m}"
    );
    assert_eq!(b.http_get("/healthz").map(|(c, _)| c), Some(200));
    assert_eq!(b.stop(), Some(0));
    assert_eq!(a.stop(), Some(0));
}

#[test]
fn sigterm_releases_the_lease_and_the_standby_takes_over_at_once() {
    let c = cluster("le-term", 2);
    let mut a = Daemon::start(&c, "a", &cfg("node-a"));
    wait_until("a leads", LIMIT, || holder(&c).as_deref() == Some("node-a"));
    let b = Daemon::start(&c, "b", &cfg("node-b"));
    wait_until("b is a standby", LIMIT, || {
        ready_body(&b).starts_with("ok: standby")
    });
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &a.child.id().to_string()])
        .status();
    let t = Instant::now();
    let mut took = None;
    while t.elapsed() < LIMIT {
        if holder(&c).as_deref() == Some("node-b") {
            took = Some(t.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let took = took.expect("b took the lease");
    eprintln!("TAKEOVER {took:?}");
    assert!(
        took <= Duration::from_millis(2 * 500),
        "takeover within 2 × retry_period after SIGTERM, took {took:?}"
    );
    // The lease is released just before the process ends: wait for that
    // end (a second SIGTERM would force an exit with 143 on a loaded
    // machine where it has not come yet).
    let (code, _) = exit_within(&mut a, LIMIT);
    assert_eq!(code, Some(0), "a clean exit after the release");
    wait_until("b leads", LIMIT, || ready_body(&b) == "ok: leading\n");
    c.set_ready("default", &["web-0".to_string()], false);
    wait_until("b reacts", LIMIT, || ready_count(&c, "web") == 1);
    assert_eq!(b.stop(), Some(0));
}

#[test]
fn sigkill_leader_is_replaced_after_the_lease_expires_and_nothing_is_lost() {
    let c = cluster("le-kill", 2);
    let mut a = Daemon::start(&c, "a", &cfg("node-a"));
    wait_until("a leads", LIMIT, || holder(&c).as_deref() == Some("node-a"));
    let b = Daemon::start(&c, "b", &cfg("node-b"));
    wait_until("b is a standby", LIMIT, || {
        ready_body(&b).starts_with("ok: standby")
    });
    let _ = a.child.kill();
    let _ = a.child.wait();
    let t = Instant::now();
    c.set_ready("default", &["web-1".to_string()], false);
    wait_until("b leads", LIMIT, || ready_body(&b) == "ok: leading\n");
    assert!(
        t.elapsed() < Duration::from_millis(3000 + 2 * 500 + 1500),
        "{:?}",
        t.elapsed()
    );
    wait_until("the change made while nobody led is written", LIMIT, || {
        ready_count(&c, "web") == 1
    });
    assert_eq!(b.stop(), Some(0));
}

#[test]
fn a_paused_leader_writes_nothing_after_resuming_and_exits() {
    let c = cluster("le-stop", 2);
    let mut a = Daemon::start(&c, "a", &cfg("node-a"));
    wait_until("a leads", LIMIT, || holder(&c).as_deref() == Some("node-a"));
    let b = Daemon::start(&c, "b", &cfg("node-b"));
    wait_until("b is a standby", LIMIT, || {
        ready_body(&b).starts_with("ok: standby")
    });
    let pid = a.child.id().to_string();
    let _ = std::process::Command::new("kill")
        .args(["-STOP", &pid])
        .status();
    wait_until("b takes over", LIMIT, || ready_body(&b) == "ok: leading\n");
    c.set_ready("default", &["web-0".to_string()], false);
    wait_until("b writes the change", LIMIT, || ready_count(&c, "web") == 1);
    b.wait_idle("endpoint", 1.0, LIMIT);
    let before = c.write_count("endpoints") + c.write_count("endpointslices");
    let mark = c.sim.store().write_log().len();
    let _ = std::process::Command::new("kill")
        .args(["-CONT", &pid])
        .status();
    let (code, _) = exit_within(&mut a, LIMIT);
    assert_eq!(
        code,
        Some(1),
        "lost leadership → exit 1 so systemd restarts it as a standby"
    );
    assert!(
        a.log_text().contains("leaderelection lost"),
        "{}",
        a.log_text()
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        c.write_count("endpoints") + c.write_count("endpointslices"),
        before,
        "the resumed leader wrote nothing"
    );
    let by_a: Vec<String> = c.sim.store().write_log()[mark..]
        .iter()
        .filter(|w| w.user_agent.contains("(node-a)") && w.resource != "leases")
        .map(|w| format!("{} {}", w.verb, w.resource))
        .collect();
    assert!(
        by_a.is_empty(),
        "kube-sim's write log: the resumed leader wrote {by_a:?}"
    );
    assert_eq!(b.stop(), Some(0));
}

#[test]
fn split_brain_the_cut_off_leader_writes_nothing_after_the_new_leaders_first_write() {
    let c = cluster("le-split", 2);
    let mut a = Daemon::start(&c, "a", &cfg("node-a"));
    wait_until("a leads", LIMIT, || holder(&c).as_deref() == Some("node-a"));
    let b = Daemon::start(&c, "b", &cfg("node-b"));
    wait_until("b is a standby", LIMIT, || {
        ready_body(&b).starts_with("ok: standby")
    });
    // The leader's link fails (all of its requests, and only its own);
    // the standby still reaches the API server.
    c.sim.faults().fail_next_for(1_000_000, "(node-a)", 503);
    wait_until("b takes over", LIMIT, || ready_body(&b) == "ok: leading\n");
    c.set_ready("default", &["web-0".to_string()], false);
    wait_until("b writes the change", LIMIT, || ready_count(&c, "web") == 1);
    let log = c.sim.store().write_log();
    let first_b = log
        .iter()
        .position(|w| w.user_agent.contains("(node-b)") && w.resource != "leases")
        .expect("the new leader wrote");
    let by_a: Vec<String> = log[first_b..]
        .iter()
        .filter(|w| w.user_agent.contains("(node-a)"))
        .map(|w| format!("{} {}", w.verb, w.resource))
        .collect();
    assert!(
        by_a.is_empty(),
        "the cut-off leader wrote after the new leader: {by_a:?}"
    );
    // It gave up leadership (renew deadline) and exits for systemd to restart it.
    let (code, _) = exit_within(&mut a, LIMIT);
    assert_eq!(code, Some(1), "{}", a.log_text());
    // Its link returns; restarted (as systemd would), it is a standby.
    c.sim.faults().clear();
    let a2 = Daemon::start(&c, "a2", &cfg("node-a"));
    wait_until("a comes back as a standby", LIMIT, || {
        ready_body(&a2).starts_with("ok: standby; leader is node-b")
    });
    assert_eq!(holder(&c).as_deref(), Some("node-b"));
    assert_eq!(a2.stop(), Some(0));
    assert_eq!(b.stop(), Some(0));
}

fn renew_time(c: &Cluster) -> Option<String> {
    c.get("leases", "kube-system", "endpointd")?["spec"]["renewTime"]
        .as_str()
        .map(str::to_string)
}

#[test]
fn a_deleted_lease_goes_back_to_its_leader_and_the_standby_never_leads() {
    let c = cluster("le-deleted", 2);
    let a = Daemon::start(&c, "a", &cfg("node-a"));
    wait_until("a leads", LIMIT, || ready_body(&a) == "ok: leading\n");
    let b = Daemon::start(&c, "b", &cfg("node-b"));
    wait_until("b is a standby", LIMIT, || {
        ready_body(&b) == "ok: standby; leader is node-a\n"
    });
    wait_until("2 ready addresses", LIMIT, || ready_count(&c, "web") == 2);
    // So that b certainly reads NotFound before a can recreate the Lease
    // (otherwise who comes first is a race), a is paused for 1 s right
    // after a renewal — well within its renew_deadline (2 s) — and the
    // Lease is deleted meanwhile (`kubectl delete lease`).
    let pid = a.child.id().to_string();
    let last = renew_time(&c);
    wait_until("a renews", LIMIT, || renew_time(&c) != last);
    let _ = std::process::Command::new("kill")
        .args(["-STOP", &pid])
        .status();
    c.delete("leases", "kube-system", &["endpointd".to_string()]);
    let deleted = Instant::now();
    // Something for a new leader to write.
    c.set_ready("default", &["web-0".to_string()], false);
    std::thread::sleep(Duration::from_secs(1));
    let _ = std::process::Command::new("kill")
        .args(["-CONT", &pid])
        .status();
    // b keeps standing by for at least lease_duration (3 s) after the delete.
    while deleted.elapsed() < Duration::from_millis(3500) {
        let r = ready_body(&b);
        assert_ne!(
            r,
            "ok: leading\n",
            "b led {:?} after the delete",
            deleted.elapsed()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(holder(&c).as_deref(), Some("node-a"), "{}", a.log_text());
    assert_eq!(ready_body(&a), "ok: leading\n");
    assert_eq!(ready_body(&b), "ok: standby; leader is node-a\n");
    wait_until("a writes the change", LIMIT, || ready_count(&c, "web") == 1);
    let by_b: Vec<String> = c
        .sim
        .store()
        .write_log()
        .iter()
        .filter(|w| w.user_agent.contains("(node-b)") && w.resource != "leases")
        .map(|w| format!("{} {}", w.verb, w.resource))
        .collect();
    assert!(by_b.is_empty(), "kube-sim's write log: b wrote {by_b:?}");
    assert_eq!(b.stop(), Some(0));
    assert_eq!(a.stop(), Some(0));
}

/// Wait for `d` to exit within `limit`; its exit code and how long it took.
fn exit_within(d: &mut Daemon, limit: Duration) -> (Option<i32>, Duration) {
    let t = Instant::now();
    loop {
        if let Ok(Some(s)) = d.child.try_wait() {
            return (s.code(), t.elapsed());
        }
        assert!(
            t.elapsed() < limit,
            "still running {limit:?} later: {}",
            d.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_leader_whose_requests_hang_exits_soon_after_the_renew_deadline() {
    let c = cluster("le-slow", 2);
    let mut a = Daemon::start(&c, "a", &cfg("node-a"));
    wait_until("a leads", LIMIT, || ready_body(&a) == "ok: leading\n");
    wait_until("2 ready addresses", LIMIT, || ready_count(&c, "web") == 2);
    // Every request now takes 6 s: the lease thread hangs in one round,
    // long past renew_deadline (2 s). client-go gives each renewal
    // RenewDeadline, so kube-controller-manager exits then.
    c.sim.faults().set_latency(Duration::from_secs(6));
    let (code, took) = exit_within(&mut a, Duration::from_secs(15));
    eprintln!("EXITED {took:?} after the latency began");
    assert_eq!(code, Some(1), "{}", a.log_text());
    let log = a.log_text();
    assert!(
        log.contains("leadership lost: no renewal within 2s")
            && log.contains("leaderelection lost"),
        "{log}"
    );
    // At most retry_period (500 ms) until the next round begins, then
    // renew_deadline (2 s), then the exit, which may drain an in-flight
    // sync for up to 1.5 s (2.5–3.0 s in all, measured; a loaded CI machine
    // gets 3.5 s more; before the fix it ran on past 15 s).
    assert!(
        took <= Duration::from_millis(2000 + 500 + 1500 + 3500),
        "exited {took:?} after the requests began to hang: {log}"
    );
}

#[test]
fn a_leader_paused_between_rounds_past_renew_deadline_goes_on_if_nobody_took_over() {
    let c = cluster("le-pause-alone", 2);
    // Rounds 1.5 s apart (renew_deadline 2 s > 1.2 × 1.5 s), so that the
    // pause below lands between two rounds even on a loaded machine.
    let slow_rounds = "[leader_election]\nlease_duration = \"3s\"\nrenew_deadline = \"2s\"\nretry_period = \"1500ms\"\nidentity = \"node-a\"\n";
    let mut a = Daemon::start(&c, "a", slow_rounds);
    wait_until("a leads", LIMIT, || ready_body(&a) == "ok: leading\n");
    wait_until("2 ready addresses", LIMIT, || ready_count(&c, "web") == 2);
    // Paused between rounds (just after a renewal, whose answer it has
    // read) for longer than renew_deadline (2 s): its fence closes, but
    // the lease thread was not stuck in a round, so on resume it renews
    // and goes on leading (as client-go does) — nobody else took over.
    let pid = a.child.id().to_string();
    let last = renew_time(&c);
    wait_until("a renews", LIMIT, || renew_time(&c) != last);
    // Well inside the 1.5 s to the next round, and long after the round
    // that renewed has finished.
    std::thread::sleep(Duration::from_millis(400));
    let _ = std::process::Command::new("kill")
        .args(["-STOP", &pid])
        .status();
    std::thread::sleep(Duration::from_millis(2500));
    let paused = renew_time(&c);
    let _ = std::process::Command::new("kill")
        .args(["-CONT", &pid])
        .status();
    wait_until("a renews after resuming", LIMIT, || {
        renew_time(&c) != paused
    });
    c.set_ready("default", &["web-0".to_string()], false);
    wait_until("a writes the change", LIMIT, || ready_count(&c, "web") == 1);
    assert!(
        matches!(a.child.try_wait(), Ok(None)),
        "a exited: {}",
        a.log_text()
    );
    assert_eq!(ready_body(&a), "ok: leading\n");
    assert!(
        !a.log_text().contains("leadership lost"),
        "{}",
        a.log_text()
    );
    assert_eq!(a.stop(), Some(0));
}
