//! The event recorder against kube-sim: series instead of duplicates, the
//! per-object spam filter, the write fence, and a controller's Warning
//! event when its write fails.

use crate::harness::controller as controller_support;

use controller_support::*;
use endpointd::runtime::events::EventSpec;
use endpointd::runtime::fence::Fence;
use endpointd::runtime::recorder::{self, EventRecorder, Record, RecorderConfig};
use endpointd_base::clock::RealClock;
use endpointd_kube::kube::{Client, ClientConfig};
use endpointd_kube::metrics::Registry;
use endpointd_kube::model::ObjectReference;
use kube_sim::requestinfo::Verb;
use serde_json::{json, Value};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(20);

fn recorder(c: &Cluster, fence: Fence) -> (EventRecorder, std::sync::Arc<Registry>) {
    let client =
        Client::new(ClientConfig::new(c.sim.url()), RealClock::shared(), None).expect("client");
    let registry = Registry::new();
    let results = recorder::register(&registry);
    let cfg = RecorderConfig {
        component: "endpoint-controller".into(),
        instance: "test-1".into(),
    };
    let r = EventRecorder::start(client, fence, RealClock::shared(), results, cfg).expect("start");
    (r, registry)
}

fn obj(name: &str) -> ObjectReference {
    ObjectReference {
        kind: "Endpoints".into(),
        namespace: "default".into(),
        name: name.into(),
        uid: format!("uid-{name}").into(),
        ..Default::default()
    }
    .with_api_version("v1")
}

fn events_about(c: &Cluster, name: &str) -> Vec<Value> {
    c.all("events")
        .into_iter()
        .filter(|e| e["involvedObject"]["name"] == name || e["regarding"]["name"] == name)
        .collect()
}

fn metric(r: &Registry, result: &str) -> bool {
    r.render()
        .contains(&format!("endpointd_events_total{{result=\"{result}\"}}"))
}

#[test]
fn repeats_become_a_series_and_spam_is_throttled() {
    let c = Cluster::start("ev-series");
    let (r, registry) = recorder(&c, Fence::open());
    let spec = EventSpec::warning(
        "FailedToUpdateEndpoint",
        "Failed to update endpoint default/a: boom",
    );
    for _ in 0..5 {
        r.record(&obj("a"), &spec);
    }
    for i in 0..30 {
        r.record(&obj("b"), &EventSpec::normal("Noisy", format!("event {i}")));
    }
    r.stop(Duration::from_secs(10));
    let a = events_about(&c, "a");
    assert_eq!(a.len(), 1, "one Event for five repeats: {a:#?}");
    let count = a[0]["count"]
        .as_i64()
        .or_else(|| a[0]["series"]["count"].as_i64());
    assert_eq!(count, Some(5), "{:#}", a[0]);
    assert_eq!(a[0]["reason"], "FailedToUpdateEndpoint");
    assert_eq!(a[0]["type"], "Warning");
    assert_eq!(
        events_about(&c, "b").len(),
        25,
        "burst of 25 per object, the rest throttled"
    );
    assert!(
        metric(&registry, "throttled")
            && metric(&registry, "series")
            && metric(&registry, "written")
    );
}

#[test]
fn a_closed_fence_writes_no_event() {
    let c = Cluster::start("ev-fence");
    let fence = Fence::leased(RealClock::shared(), Duration::from_secs(10));
    let (r, registry) = recorder(&c, fence);
    r.record(&obj("a"), &EventSpec::normal("R", "n"));
    r.stop(Duration::from_secs(10));
    assert!(events_about(&c, "a").is_empty());
    assert!(metric(&registry, "fenced"));
}

#[test]
fn a_failed_endpoints_write_is_reported_on_the_object_and_retried() {
    let c = Cluster::start("ev-controller");
    c.load(vec![
        service("default", "web", "web", json!(8080)),
        pod("default", "web-0", "web", "10.0.0.1", true),
    ]);
    c.sim
        .faults()
        .fail_next(6, Some(Verb::Create), Some("endpoints".into()), 500, None);
    let d = Daemon::start(
        &c,
        "a",
        "[leader_election]\nenabled = false\n[endpointslices]\nenabled = false\n",
    );
    wait_until("a FailedToCreateEndpoint event", LIMIT, || {
        events_about(&c, "web")
            .iter()
            .any(|e| e["reason"] == "FailedToCreateEndpoint")
    });
    wait_until("the Endpoints written after the failures", LIMIT, || {
        c.get("endpoints", "default", "web").is_some()
    });
    let ev = events_about(&c, "web")
        .into_iter()
        .find(|e| e["reason"] == "FailedToCreateEndpoint")
        .expect("event");
    assert_eq!(ev["type"], "Warning");
    assert_eq!(
        ev["source"]["component"]
            .as_str()
            .or(ev["reportingComponent"].as_str()),
        Some("endpoint-controller")
    );
    assert_eq!(d.stop(), Some(0));
}
