//! Issue 37 item 7: a create answered with `{}`, a `Status`, or the object
//! under another name or uid was taken as created. The POST was stored,
//! but endpointd counted a success, waited for a slice that never appeared
//! in its cache under that identity, delayed the Service's changes 26.9 s
//! (1,851–2,262 stale syncs), warned falsely of a restored backup and of
//! another writer, and relisted every informer. Such an answer is now an
//! undecodable one (`Error::Decode`, as an empty or HTML answer): the sync
//! fails, is retried, and finds the stored slice in its cache. (The client
//! checks every answer form: `crates/kube/tests/it/regression/write_answers.rs`;
//! here the two that held a Service back.)

use crate::harness::controller::*;
use serde_json::json;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(30);

/// Bound on a readiness change reaching the slice once the odd answer
/// was given (before the fix: 26.9 s).
const CONVERGED_WITHIN: Duration = Duration::from_secs(5);

fn slices_of(c: &Cluster, svc: &str) -> Vec<serde_json::Value> {
    c.all("endpointslices")
        .into_iter()
        .filter(|s| s["metadata"]["labels"]["kubernetes.io/service-name"] == svc)
        .collect()
}

/// The readiness of each endpoint of the Service's slices, by IP.
fn ready_by_ip(c: &Cluster, svc: &str) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = slices_of(c, svc)
        .iter()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .map(|e| {
            (
                e["addresses"][0].as_str().unwrap_or("").to_string(),
                e["conditions"]["ready"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    out.sort();
    out
}

/// One Service, its slice create answered `answer` (the slice stored), then
/// a readiness flip: converged within [`CONVERGED_WITHIN`], one slice, no
/// warning of a restored backup or another writer, nothing counted as
/// foreign.
fn odd_create_answer(answer: &str) {
    let c = Cluster::start(&format!("write-answer-{answer}"));
    c.sim.faults().answer_writes(
        1,
        Some(kube_sim::requestinfo::Verb::Create),
        Some("endpointslices".into()),
        kube_sim::faults::WriteAnswer::parse(answer).expect("answer"),
    );
    let pods: Vec<String> = (0..2).map(|i| format!("p{i}")).collect();
    let mut items = vec![
        node("node-a", "zone-a"),
        service("default", "web", "web", json!(8080)),
    ];
    items.extend(
        pods.iter()
            .enumerate()
            .map(|(i, n)| pod("default", n, "web", &ip(i), true)),
    );
    c.load(items);
    let d = Daemon::start(&c, "wa", "[endpoints]\nenabled = false\n");
    wait_until("the odd answer given", LIMIT, || {
        c.sim.faults().snapshot()["writeAnswer"]
            .as_array()
            .is_some_and(Vec::is_empty)
    });
    wait_until("the slice stored", LIMIT, || {
        ready_by_ip(&c, "web") == vec![(ip(0), true), (ip(1), true)]
    });
    let start = Instant::now();
    c.set_ready("default", &pods[..1], false);
    wait_until(
        &format!("{answer}: the flip in the slice within {CONVERGED_WITHIN:?}"),
        CONVERGED_WITHIN,
        || ready_by_ip(&c, "web") == vec![(ip(0), false), (ip(1), true)],
    );
    let took = start.elapsed();
    d.wait_idle("endpoint_slice", 1.0, LIMIT);
    let log = d.log_text();
    assert_eq!(slices_of(&c, "web").len(), 1, "{answer}: one slice");
    for false_alarm in ["restored from a backup", "another writer", "lists again"] {
        assert!(
            !log.contains(false_alarm),
            "{answer}: {false_alarm:?} in the log:\n{log}"
        );
    }
    assert_eq!(
        d.metric("endpointd_foreign_writes_total{resource=\"endpointslices\"}")
            .unwrap_or(0.0),
        0.0,
        "{answer}: counted as another writer's"
    );
    assert!(
        log.contains("the answer is not the object written")
            || log.contains("the answer has no resourceVersion"),
        "{answer}: the odd answer is named:\n{log}"
    );
    eprintln!("{answer}: flip converged in {took:?}");
    assert_eq!(d.stop(), Some(0));
}

#[test]
fn a_create_answered_with_an_empty_object_is_not_taken_as_created() {
    odd_create_answer("empty");
}

#[test]
fn a_create_answered_with_a_status_is_not_taken_as_created() {
    odd_create_answer("status");
}
