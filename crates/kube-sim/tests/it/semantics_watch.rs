//! kube-sim watch semantics through `sim::rest::handle`: initial state,
//! replay from history, 410 as an ERROR event, bookmarks, selector
//! filtering (leaving the selection = DELETED), watch-list, timeouts,
//! fan-out and the close-all-watches fault.

use crate::harness::semantics as sim_semantics_support;

use kube_sim::store::StoreConfig;
use serde_json::json;
use sim_semantics_support::*;
use std::time::Duration;

fn ev(t: &str, n: &str) -> Option<(String, String)> {
    Some((t.to_string(), n.to_string()))
}

#[test]
fn watch_from_current_state_then_live() {
    let sim = Sim::new();
    sim.create(PODS, NS, pod("a"));
    let w = sim.watch(PODS, NS, &[]);
    assert_eq!(w.status, 200);
    assert_eq!(
        w.next_name(),
        ev("ADDED", "a"),
        "synthetic ADDED for existing objects"
    );
    sim.create(PODS, NS, pod("b"));
    let (t, obj) = w.next().expect("live event");
    assert_eq!(
        (t.as_str(), obj["kind"].as_str(), obj["apiVersion"].as_str()),
        ("ADDED", Some("Pod"), Some("v1"))
    );
    let mut b = sim.get(PODS, NS, "b").body;
    b["metadata"]["labels"]["x"] = json!("1");
    sim.update(PODS, NS, "b", b);
    assert_eq!(w.next_name(), ev("MODIFIED", "b"));
    sim.delete(PODS, NS, "b", json!(null));
    let (t, obj) = w.next().expect("delete event");
    assert_eq!(t, "DELETED");
    assert_eq!(
        obj["metadata"]["resourceVersion"],
        sim.store.current_rv().to_string()
    );
    // Other namespaces are not seen by a namespaced watch.
    sim.create("namespaces", None, json!({"metadata": {"name": "other"}}));
    sim.create(PODS, Some("other"), pod("c"));
    assert!(w.quiet(100));
}

#[test]
fn replay_from_resource_version_and_410() {
    let sim = Sim::with(StoreConfig {
        history: 5,
        ..StoreConfig::default()
    });
    let first = sim.create(PODS, NS, pod("a")).body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string();
    sim.create(PODS, NS, pod("b"));
    let w = sim.watch(PODS, None, &[("resourceVersion", &first)]);
    assert_eq!(
        w.next_name(),
        ev("ADDED", "b"),
        "replay starts after the given RV"
    );
    assert!(w.quiet(50));
    for i in 0..6 {
        sim.create(PODS, NS, pod(&format!("x{i}")));
    }
    let old = sim.watch(PODS, None, &[("resourceVersion", &first)]);
    assert_eq!(old.status, 200);
    let (t, status) = old.next().expect("error event");
    assert_eq!(t, "ERROR");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["code"], 410);
    assert_eq!(status["reason"], "Expired");
    assert!(
        status["message"]
            .as_str()
            .unwrap_or("")
            .starts_with(&format!("too old resource version: {first} (")),
        "{status}"
    );
    assert!(old.ends());
    // compact(): everything older than now is gone.
    let now = sim.store.current_rv();
    sim.store.compact();
    let at_now = sim.watch(PODS, None, &[("resourceVersion", &now.to_string())]);
    assert!(
        at_now.quiet(50),
        "watch at the current RV is fine after compaction"
    );
    let before = sim.watch(PODS, None, &[("resourceVersion", &(now - 1).to_string())]);
    assert_eq!(before.next().map(|e| e.0), Some("ERROR".to_string()));
}

#[test]
fn selector_filtering_and_leaving_is_deleted() {
    let sim = Sim::new();
    let w = sim.watch(
        PODS,
        NS,
        &[
            ("labelSelector", "app=web"),
            ("resourceVersion", &sim.store.current_rv().to_string()),
        ],
    );
    sim.create(PODS, NS, pod("a"));
    let mut other = pod("o");
    other["metadata"]["labels"] = json!({"app": "db"});
    sim.create(PODS, NS, other);
    assert_eq!(w.next_name(), ev("ADDED", "a"));
    let mut a = sim.get(PODS, NS, "a").body;
    a["metadata"]["labels"]["app"] = json!("db");
    let a = sim.update(PODS, NS, "a", a).body;
    let (t, obj) = w.next().expect("leave event");
    assert_eq!(t, "DELETED");
    assert_eq!(
        obj["metadata"]["labels"]["app"], "web",
        "the last state that matched"
    );
    assert_eq!(
        obj["metadata"]["resourceVersion"],
        a["metadata"]["resourceVersion"]
    );
    let mut o = sim.get(PODS, NS, "o").body;
    o["metadata"]["labels"]["app"] = json!("web");
    sim.update(PODS, NS, "o", o);
    assert_eq!(
        w.next_name(),
        ev("ADDED", "o"),
        "entering the selection is ADDED"
    );
    // Single-object watch by field selector.
    let one = sim.watch(PODS, NS, &[("fieldSelector", "metadata.name=o")]);
    assert_eq!(one.next_name(), ev("ADDED", "o"));
    sim.create(PODS, NS, pod("z"));
    assert!(one.quiet(50));
}

#[test]
fn bookmarks_initial_events_and_timeout() {
    let sim = Sim::with(StoreConfig {
        history: 100,
        bookmark_interval: Duration::from_secs(1),
        ..StoreConfig::default()
    });
    sim.create(PODS, NS, pod("a"));
    let wl = sim.watch(
        PODS,
        NS,
        &[
            ("sendInitialEvents", "true"),
            ("resourceVersionMatch", "NotOlderThan"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", "3"),
        ],
    );
    assert_eq!(wl.next_name(), ev("ADDED", "a"));
    let (t, bm) = wl.next().expect("initial-events-end bookmark");
    assert_eq!(t, "BOOKMARK");
    assert_eq!(bm["kind"], "Pod");
    assert_eq!(
        bm["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert_eq!(
        bm["metadata"]["resourceVersion"],
        sim.store.current_rv().to_string()
    );
    sim.create(PODS, NS, pod("b"));
    assert_eq!(wl.next_name(), ev("ADDED", "b"));
    assert!(sim.clock.wait_for_sleepers(1, Duration::from_secs(3)));
    sim.clock.step(Duration::from_secs(1));
    let (t, bm) = wl.next().expect("periodic bookmark");
    assert_eq!(t, "BOOKMARK");
    assert_eq!(
        bm["metadata"]["resourceVersion"],
        sim.store.current_rv().to_string()
    );
    assert!(bm["metadata"].get("annotations").is_none());
    for _ in 0..3 {
        assert!(sim.clock.wait_for_sleepers(1, Duration::from_secs(3)));
        sim.clock.step(Duration::from_secs(1));
    }
    assert!(wl.ends(), "timeoutSeconds ends the stream");
    let bad = sim.raw(
        kube_sim::requestinfo::Verb::Watch,
        PODS,
        NS,
        None,
        &[("sendInitialEvents", "true")],
        "",
        "",
    );
    assert_eq!(bad.status, 422);
}

#[test]
fn fan_out_and_close_all_watches() {
    let sim = Sim::new();
    let ws: Vec<Watch> = (0..20)
        .map(|_| sim.watch(SLICES, None, &[("resourceVersion", "4")]))
        .collect();
    for i in 0..10 {
        assert_eq!(
            sim.create(SLICES, NS, slice(&format!("s{i}"), &["10.0.0.1"]))
                .status,
            201
        );
    }
    for w in &ws {
        for i in 0..10 {
            assert_eq!(w.next_name(), ev("ADDED", &format!("s{i}")));
        }
    }
    assert_eq!(sim.store.watch_count(), 20);
    sim.store.close_all_watches();
    for w in &ws {
        assert!(w.ends());
    }
}

#[test]
fn slow_and_departed_watchers_are_dropped_without_blocking_writers() {
    let sim = Sim::new();
    let gone = sim.watch(PODS, NS, &[("resourceVersion", "4")]);
    let slow = sim.watch(PODS, NS, &[("resourceVersion", "4")]);
    assert_eq!(sim.store.watch_count(), 2);
    drop(gone);
    sim.create(PODS, NS, pod("first"));
    assert_eq!(
        sim.store.watch_count(),
        1,
        "a departed client is unsubscribed on the next event"
    );
    let limit = kube_sim::watch::WATCH_BACKLOG;
    for i in 0..limit + 10 {
        let r = sim.call(
            kube_sim::requestinfo::Verb::Create,
            "coordination.k8s.io/leases",
            NS,
            None,
            &[],
            &json!({"metadata": {"name": format!("l{i}")}}),
        );
        assert_eq!(r.status, 201);
    }
    assert_eq!(
        sim.store.watch_count(),
        1,
        "other resources do not count against the pod watch"
    );
    let mut p = sim.get(PODS, NS, "first").body;
    for i in 0..limit + 10 {
        p["metadata"]["labels"]["n"] = json!(i.to_string());
        p = sim.update(PODS, NS, "first", p).body;
    }
    assert_eq!(
        sim.store.watch_count(),
        0,
        "a watcher too far behind is dropped"
    );
    let mut n = 0;
    while slow.next().is_some() {
        n += 1;
    }
    assert!(
        n >= limit && n < limit + 10,
        "it got what was queued, then the stream ended ({n})"
    );
}

#[test]
fn concurrent_writers_every_watcher_sees_every_event_in_order() {
    let sim = Sim::new();
    let start = sim.store.current_rv().to_string();
    let watches: Vec<Watch> = (0..4)
        .map(|_| sim.watch(PODS, None, &[("resourceVersion", &start)]))
        .collect();
    std::thread::scope(|s| {
        for w in 0..4 {
            let sim = &sim;
            s.spawn(move || {
                for i in 0..100 {
                    let name = format!("w{w}-{}", i % 10);
                    if sim.create(PODS, NS, pod(&name)).status == 409 {
                        if i % 3 == 0 {
                            sim.delete(PODS, NS, &name, json!(null));
                        } else {
                            let mut p = sim.get(PODS, NS, &name).body;
                            p["metadata"]["labels"]["i"] = json!(i.to_string());
                            sim.update(PODS, NS, &name, p);
                        }
                    }
                }
            });
        }
    });
    let want: std::collections::BTreeMap<String, String> = sim.list(PODS, None, &[]).body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            (
                o["metadata"]["name"].as_str().unwrap_or("").to_string(),
                o["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect();
    let end = sim.store.current_rv();
    for w in &watches {
        let mut state = std::collections::BTreeMap::new();
        let mut last = 0u64;
        while last < end {
            let (t, o) = w.next().expect("every event arrives");
            let rv: u64 = o["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            assert!(
                rv > last,
                "resourceVersions strictly increase ({last} then {rv})"
            );
            last = rv;
            let name = o["metadata"]["name"].as_str().unwrap_or("").to_string();
            if t == "DELETED" {
                state.remove(&name);
            } else {
                state.insert(name, rv.to_string());
            }
        }
        assert_eq!(state, want, "replaying the stream gives the final state");
    }
}

#[test]
fn huge_timeout_seconds_and_bookmark_interval_do_not_overflow() {
    // `now + Duration::from_secs(u64::MAX)` used to panic in the handler.
    let sim = Sim::with(StoreConfig {
        history: 100,
        bookmark_interval: Duration::MAX,
        ..StoreConfig::default()
    });
    let w = sim.watch(
        PODS,
        NS,
        &[
            ("timeoutSeconds", "18446744073709551615"),
            ("allowWatchBookmarks", "true"),
        ],
    );
    assert_eq!(w.status, 200);
    sim.create(PODS, NS, pod("a"));
    assert_eq!(w.next_name(), ev("ADDED", "a"));
    assert!(sim.clock.wait_for_sleepers(1, Duration::from_secs(3)));
    sim.clock.step(Duration::from_secs(3600));
    assert!(
        w.quiet(50),
        "no deadline and no bookmark: the stream stays open"
    );
}

/// kube-apiserver's watch cache (and etcd) accept a watch from a
/// resourceVersion they have not reached — after an etcd restore, a client's
/// resourceVersion is ahead of the server's — and stay silent until their
/// counter passes it: no error, events and bookmarks up to it withheld.
#[test]
fn a_watch_from_a_future_resource_version_is_silent_until_the_counter_passes_it() {
    let sim = Sim::with(StoreConfig {
        history: 100,
        bookmark_interval: Duration::from_secs(1),
        ..StoreConfig::default()
    });
    sim.create(PODS, NS, pod("a"));
    let ahead = sim.store.current_rv() + 3;
    let w = sim.watch(
        PODS,
        NS,
        &[
            ("resourceVersion", &ahead.to_string()),
            ("allowWatchBookmarks", "true"),
        ],
    );
    assert_eq!(w.status, 200, "accepted, not 504");
    sim.create(PODS, NS, pod("b"));
    assert!(sim.clock.wait_for_sleepers(1, Duration::from_secs(3)));
    sim.clock.step(Duration::from_secs(1));
    // The ticker has run (it sleeps again) before silence is checked.
    assert!(sim.clock.wait_for_sleepers(1, Duration::from_secs(3)));
    assert!(
        w.quiet(100),
        "an event and a bookmark behind it are withheld"
    );
    sim.create(PODS, NS, pod("c"));
    sim.create(PODS, NS, pod("d"));
    assert_eq!(sim.store.current_rv(), ahead);
    assert!(w.quiet(100), "so is the event at its resourceVersion");
    sim.create(PODS, NS, pod("e"));
    assert_eq!(w.next_name(), ev("ADDED", "e"), "the first one past it");
}
