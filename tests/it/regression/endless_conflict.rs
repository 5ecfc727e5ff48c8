//! Issue 37 item 5: one object whose every update is answered 409 cost
//! five PUTs a second forever (597 in 120 s), and every 30 s a relist of
//! all six informers, each logging that "the API server's history went
//! back" — which it did not. Now the relist is tried once, saying why,
//! and the retries of that Service back off (to 2 s before the relist, to a
//! minute after); other Services are unaffected.

use crate::harness::controller::*;
use kube_sim::faults::WriteRefusal;
use serde_json::json;
use std::time::{Duration, Instant};

const FIGHT: Duration = Duration::from_secs(60);
/// PUTs to the conflicting Endpoints allowed in [`FIGHT`]: up to 2 s apart
/// for the 30 s before the relist (18), then 2, 4, 8, 16 s apart; plus
/// slack for syncs queued by events.
const MAX_PUTS: u64 = 30;

#[test]
fn an_object_that_always_conflicts_backs_off_and_relists_once_saying_why() {
    let c = Cluster::start("endless-conflict");
    let mut items = vec![node("node-a", "zone-a")];
    for (i, n) in ["web", "db"].iter().enumerate() {
        items.push(service("default", n, n, json!(8080)));
        items.push(pod("default", &format!("{n}-p"), n, &ip(i), true));
    }
    c.load(items);
    let d = Daemon::start(&c, "ec", "");
    c.wait_converged(Duration::from_secs(60));
    d.wait_idle("endpoint", 2.0, Duration::from_secs(30));
    c.sim.faults().refuse_writes(WriteRefusal {
        resource: "endpoints".into(),
        object: Some(("default".into(), "web".into())),
        code: 409,
        message: "Operation cannot be fulfilled on endpoints \"web\": the object has been modified; please apply your changes to the latest version and try again".into(),
    });
    c.set_ready("default", &["web-p".to_string()], false);
    let start = Instant::now();
    // Meanwhile another Service changes every 10 s and is written at once.
    let mut ready = true;
    let mut slowest = Duration::ZERO;
    while start.elapsed() < FIGHT {
        std::thread::sleep(Duration::from_secs(8));
        ready = !ready;
        c.set_ready("default", &["db-p".to_string()], ready);
        let t = Instant::now();
        wait_until("db's Endpoints follow", Duration::from_secs(10), || {
            let ep = c.get("endpoints", "default", "db");
            let key = if ready {
                "addresses"
            } else {
                "notReadyAddresses"
            };
            ep.is_some_and(|e| {
                e["subsets"][0][key]
                    .as_array()
                    .is_some_and(|a| !a.is_empty())
            })
        });
        slowest = slowest.max(t.elapsed());
    }
    let puts = c.sim.faults().refused();
    let log = d.log_text();
    let relists = log
        .lines()
        .filter(|l| l.contains("every informer lists again"))
        .count();
    eprintln!("{puts} PUTs refused with 409 in {FIGHT:?}; {relists} relists; db written within {slowest:?}");
    assert!(
        puts <= MAX_PUTS,
        "{puts} PUTs of the conflicting Endpoints in {FIGHT:?}:\n{log}"
    );
    assert!(puts >= 3, "still retried: {puts}");
    assert!(slowest < Duration::from_secs(3), "db waited {slowest:?}");
    assert!(
        !log.contains("history went back"),
        "no rollback claimed:\n{log}"
    );
    assert!(relists <= 1, "{relists} relists:\n{log}");
    assert!(
        log.contains("listing again: endpoint: every sync of default/web has met a conflict"),
        "the informers say why they list:\n{log}"
    );
    // Once the object accepts writes again, it is corrected within the
    // backoff reached (at most a minute).
    c.sim.faults().lift_refusals();
    c.wait_converged(Duration::from_secs(70));
    assert_eq!(d.stop(), Some(0));
}
