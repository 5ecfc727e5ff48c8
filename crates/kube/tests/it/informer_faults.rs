//! Informers against kube-sim when watches fail: 410 after compaction
//! (relist with synthetic events and tombstones), 5xx bursts (backoff on a
//! frozen fake clock, no hot loop, no relist) and bookmarks that spare a
//! relist after an idle period.

use crate::harness::informer as informer_support;

use std::time::Duration;

use endpointd_base::clock::{Clock, FakeClock, RealClock};
use endpointd_kube::informer::{DeletedObject, Notification, ReflectorConfig};
use endpointd_kube::model::Object;
use informer_support::*;
use kube_sim::requestinfo::Verb;
use kube_sim::resources::lookup;
use kube_sim::server::{SimOptions, SimServer};
use kube_sim::store::Key;
use serde_json::json;

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
