//! kube-sim fault injection over real HTTP: injected failures (429 with
//! Retry-After, 500, 503), latency, stalled watches, outages with recovery,
//! the `/sim/faults` admin endpoint and the `/sim/requests` counters.

use endpointd_base::clock::{FakeClock, RealClock, SharedClock};
use endpointd_base::httpd::Body;
use kube_sim::faults::{reason_for, FaultRequest, Faults};
use kube_sim::requestinfo::{RequestInfo, Verb};
use kube_sim::server::{SimOptions, SimServer};
use kube_sim::store::{Store, StoreConfig};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::time::{Duration, Instant};

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}

fn sim() -> SimServer {
    SimServer::start(SimOptions::default()).expect("kube-sim")
}

/// (status, Retry-After header, JSON body).
fn call(
    a: &ureq::Agent,
    method: &str,
    url: &str,
    body: Option<Value>,
) -> (u16, Option<String>, Value) {
    let mut r = match (method, body) {
        ("GET", _) => a.get(url).call(),
        ("POST", Some(b)) => a.post(url).send_json(b),
        ("POST", None) => a.post(url).send_empty(),
        (m, _) => panic!("method {m} not used here"),
    }
    .expect("request");
    let status = r.status().as_u16();
    let retry = r
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = r.body_mut().read_to_string().expect("body");
    (
        status,
        retry,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[test]
fn fail_next_injects_429_with_retry_after_then_passes() {
    let s = sim();
    let a = agent();
    s.faults()
        .fail_next(2, Some(Verb::List), Some("pods".into()), 429, Some(7));
    let pods = format!("{}/api/v1/namespaces/default/pods", s.url());
    for _ in 0..2 {
        let (st, retry, body) = call(&a, "GET", &pods, None);
        assert_eq!(st, 429);
        assert_eq!(retry.as_deref(), Some("7"));
        assert_eq!(body["kind"], "Status");
        assert_eq!(body["reason"], "TooManyRequests");
        assert_eq!(body["details"]["retryAfterSeconds"], 7);
    }
    // The rule is used up; other verbs and resources were never affected.
    let (st, _, _) = call(&a, "GET", &pods, None);
    assert_ne!(st, 429);
    assert_eq!(s.requests().get(Verb::List, "pods"), 3);
}

#[test]
fn admin_endpoint_injects_500_and_503_and_reports_state() {
    let s = sim();
    let a = agent();
    let faults = format!("{}/sim/faults", s.url());
    let (st, _, state) = call(
        &a,
        "POST",
        &faults,
        Some(json!({"failNext": [
            {"count": 1, "verb": "get", "resource": "nodes", "code": 500},
            {"count": 1, "resource": "services", "code": 503, "retryAfterSeconds": 1}
        ]})),
    );
    assert_eq!(st, 200, "{state}");
    assert_eq!(state["failNext"].as_array().map(Vec::len), Some(2));
    let cases = [
        ("/api/v1/nodes/n1", 500, "InternalError"),
        (
            "/api/v1/namespaces/default/services",
            503,
            "ServiceUnavailable",
        ),
    ];
    for (path, code, reason) in cases {
        let (st, _, body) = call(&a, "GET", &format!("{}{path}", s.url()), None);
        assert_eq!(
            (st, body["reason"].as_str()),
            (code, Some(reason)),
            "{path}"
        );
        assert_eq!(body["code"], code);
    }
    let (_, _, state) = call(&a, "GET", &faults, None);
    assert_eq!(state["failNext"], json!([]));
    let (st, _, bad) = call(&a, "POST", &faults, Some(json!({"failNext": {"code": 42}})));
    assert_eq!((st, bad["reason"].as_str()), (400, Some("BadRequest")));
    let (_, _, req) = call(&a, "GET", &format!("{}/sim/requests", s.url()), None);
    let counters = req["counters"].as_array().expect("counters");
    assert!(counters
        .iter()
        .any(|c| c["verb"] == "get" && c["resource"] == "nodes" && c["count"] == 1));
    assert!(req["writes"].is_array());
    assert!(req["resourceVersion"].is_string());
}

#[test]
fn requests_since_returns_only_the_newer_writes() {
    let s = sim();
    let a = agent();
    let log = |q: &str| call(&a, "GET", &format!("{}/sim/requests{q}", s.url()), None).2;
    let base = log("")["writesTotal"].as_u64().expect("writesTotal");
    assert_eq!(
        log("")["writes"].as_array().map(Vec::len),
        Some(base as usize)
    );
    create_pod(&s, "a");
    create_pod(&s, "b");
    let tail = log(&format!("?since={}", base + 1));
    let names: Vec<&str> = tail["writes"]
        .as_array()
        .expect("writes")
        .iter()
        .filter_map(|w| w["name"].as_str())
        .collect();
    assert_eq!(names, ["b"]);
    assert_eq!(tail["writesTotal"], base + 2);
    let past = log(&format!("?since={}", base + 10));
    assert_eq!(past["writes"], json!([]));
    assert_eq!(past["writesTotal"], base + 2);
    // Not a number: the whole log, as without `since`.
    assert_eq!(
        log("?since=x")["writes"].as_array().map(Vec::len),
        Some(base as usize + 2)
    );
}

#[test]
fn latency_delays_resource_requests_only() {
    let s = sim();
    let a = agent();
    s.faults().set_latency(Duration::from_millis(300));
    let timed = |p: &str| {
        let t = Instant::now();
        call(&a, "GET", &format!("{}{p}", s.url()), None);
        t.elapsed()
    };
    assert!(timed("/api/v1/nodes") >= Duration::from_millis(300));
    assert!(timed("/version") < Duration::from_millis(300));
    s.faults().set_latency(Duration::ZERO);
    assert!(timed("/api/v1/nodes") < Duration::from_millis(300));
}

fn create_pod(s: &SimServer, name: &str) -> Value {
    let body = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    let url = format!("{}/api/v1/namespaces/default/pods", s.url());
    let (st, _, obj) = call(&agent(), "POST", &url, Some(body));
    assert_eq!(st, 201, "{obj}");
    obj
}

fn watch_reader(s: &SimServer, query: &str) -> (u16, BufReader<ureq::BodyReader<'static>>) {
    let a: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_per_read(Some(Duration::from_secs(5)))
        .build()
        .into();
    let url = format!(
        "{}/api/v1/namespaces/default/pods?watch=true&{query}",
        s.url()
    );
    let r = a.get(&url).call().expect("watch");
    (
        r.status().as_u16(),
        BufReader::new(r.into_body().into_reader()),
    )
}

fn next_event(rd: &mut impl BufRead) -> Value {
    let mut line = String::new();
    rd.read_line(&mut line).expect("event line");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
}

#[test]
fn close_all_watches_ends_open_streams() {
    let s = sim();
    let (st, mut rd) = watch_reader(&s, "");
    assert_eq!(st, 200);
    create_pod(&s, "p1");
    let ev = next_event(&mut rd);
    assert_eq!(
        (
            ev["type"].as_str(),
            ev["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("p1"))
    );
    s.faults().close_all_watches();
    let mut rest = String::new();
    rd.read_to_string(&mut rest).expect("clean end of stream");
    assert_eq!(rest, "");
}

#[test]
fn compaction_makes_older_resource_versions_expire() {
    let s = sim();
    let old_rv = create_pod(&s, "a")["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_string();
    create_pod(&s, "b");
    s.faults().compact();
    let (st, mut rd) = watch_reader(&s, &format!("resourceVersion={old_rv}"));
    // kube-apiserver answers either HTTP 410 or 200 with an ERROR event.
    let status = if st == 200 {
        let ev = next_event(&mut rd);
        assert_eq!(ev["type"], "ERROR");
        ev["object"].clone()
    } else {
        let mut body = String::new();
        rd.read_to_string(&mut body).expect("body");
        serde_json::from_str(&body).expect("status")
    };
    assert_eq!(status["code"], 410, "{status}");
    assert_eq!(status["reason"], "Expired");
}

#[test]
fn stalled_watch_sends_headers_but_no_events_until_lifted() {
    let s = sim();
    // Without the stall, a watch without resourceVersion would start with ADDED p0.
    create_pod(&s, "p0");
    s.faults().stall_watches(true);
    let a: ureq::Agent = ureq::Agent::config_builder()
        .timeout_per_read(Some(Duration::from_millis(300)))
        .build()
        .into();
    let url = format!("{}/api/v1/namespaces/default/pods?watch=true", s.url());
    let r = a.get(&url).call().expect("watch accepted");
    assert_eq!(r.status().as_u16(), 200);
    let mut rd = r.into_body().into_reader();
    let mut buf = [0u8; 64];
    let err = rd.read(&mut buf).expect_err("no event while stalled");
    assert!(err.to_string().contains("timeout"), "{err}");
    assert_eq!(s.requests().get(Verb::Watch, "pods"), 1);

    // A second stalled watch ends cleanly when the stall is lifted.
    let a2: ureq::Agent = ureq::Agent::config_builder()
        .timeout_per_read(Some(Duration::from_secs(5)))
        .build()
        .into();
    let r = a2.get(&url).call().expect("watch accepted");
    let mut rd = r.into_body().into_reader();
    s.faults().stall_watches(false);
    let mut rest = Vec::new();
    rd.read_to_end(&mut rest).expect("clean end of stream");
    assert!(rest.is_empty());
}

#[test]
fn outage_drops_connections_refuses_then_recovers_with_state() {
    let clock = FakeClock::new();
    let shared: SharedClock = clock.clone();
    let s = SimServer::start(SimOptions {
        clock: shared,
        ..SimOptions::default()
    })
    .expect("kube-sim");
    let a = agent();
    let url = format!("{}/version", s.url());
    assert_eq!(call(&a, "GET", &url, None).0, 200);
    let rv = s.store().current_rv();
    assert!(s.faults().outage(Duration::from_secs(30)));
    assert!(a.get(&url).call().is_err(), "refused during the outage");
    clock.step(Duration::from_secs(31));
    assert_eq!(call(&a, "GET", &url, None).0, 200);
    assert_eq!(s.store().current_rv(), rv, "state kept");
}

#[test]
fn outage_through_admin_endpoint_answers_the_caller() {
    let clock = FakeClock::new();
    let shared: SharedClock = clock.clone();
    let s = SimServer::start(SimOptions {
        clock: shared,
        ..SimOptions::default()
    })
    .expect("kube-sim");
    let a = agent();
    let other = agent();
    let version = format!("{}/version", s.url());
    assert_eq!(call(&other, "GET", &version, None).0, 200);
    let (st, _, state) = call(
        &a,
        "POST",
        &format!("{}/sim/faults", s.url()),
        Some(json!({"outageMs": 5000})),
    );
    assert_eq!(st, 200, "the caller gets its answer");
    assert_eq!(state["refusingConnections"], true);
    assert!(
        other.get(&version).call().is_err(),
        "other clients are cut off"
    );
    clock.step(Duration::from_secs(6));
    assert_eq!(call(&other, "GET", &version, None).0, 200);
}

// ---- the switchboard itself (no HTTP) ----

fn info(verb: Verb, resource: &str) -> RequestInfo {
    RequestInfo {
        verb,
        group: String::new(),
        version: "v1".into(),
        resource: resource.into(),
        subresource: None,
        namespace: Some("default".into()),
        name: None,
    }
}

fn faults() -> Faults {
    let clock = RealClock::shared();
    Faults::new(Store::new(StoreConfig::default(), clock.clone()), clock)
}

#[test]
fn fail_next_matches_and_counts_down() {
    let f = faults();
    f.fail_next(2, Some(Verb::List), Some("pods".into()), 429, Some(3));
    f.fail_next(1, None, None, 500, None);
    // A get of pods skips the list rule and takes the catch-all one.
    let r = f.take_failure(&info(Verb::Get, "pods")).expect("catch-all");
    assert_eq!(r.status, 500);
    assert!(f.take_failure(&info(Verb::Get, "pods")).is_none());
    assert!(f.take_failure(&info(Verb::List, "services")).is_none());
    for _ in 0..2 {
        let r = f.take_failure(&info(Verb::List, "pods")).expect("429");
        assert_eq!(r.status, 429);
        assert!(r.headers.contains(&("Retry-After".into(), "3".into())));
        let Body::Full(b) = &r.body else {
            panic!("full body")
        };
        let s: Value = serde_json::from_slice(b).expect("json");
        assert_eq!(s["reason"], "TooManyRequests");
        assert_eq!(s["details"]["retryAfterSeconds"], 3);
    }
    assert!(f.take_failure(&info(Verb::List, "pods")).is_none());
}

#[test]
fn reasons_table() {
    for (code, reason) in [
        (429, "TooManyRequests"),
        (500, "InternalError"),
        (503, "ServiceUnavailable"),
        (504, "Timeout"),
        (409, "Conflict"),
        (599, "Unknown"),
    ] {
        assert_eq!(reason_for(code), reason);
    }
}

#[test]
fn fault_request_parsing() {
    let ok = FaultRequest::parse(&json!({
        "failNext": [{"count": 2, "verb": "watch", "code": 503}],
        "latencyMs": 20, "stallWatches": true, "outageMs": 5
    }))
    .expect("valid");
    assert_eq!(ok.fail_next[0].verb, Some(Verb::Watch));
    assert_eq!(ok.fail_next[0].remaining, 2);
    assert_eq!(ok.latency, Some(Duration::from_millis(20)));
    assert_eq!(ok.outage, Some(Duration::from_millis(5)));
    let bad = [
        json!([]),
        json!({"nope": 1}),
        json!({"failNext": {"count": 1}}),
        json!({"failNext": {"code": 200}}),
        json!({"failNext": {"code": 500, "verb": "fetch"}}),
        json!({"failNext": {"code": 500, "resource": 3}}),
        json!({"latencyMs": -1}),
        json!({"stallWatches": "yes"}),
    ];
    for b in bad {
        assert!(FaultRequest::parse(&b).is_err(), "{b}");
    }
}

#[test]
fn stall_and_latency_state() {
    let f = faults();
    assert!(f.stalled_watch("pods").is_none());
    f.apply_json(&json!({"stallWatches": true, "latencyMs": 7}))
        .expect("apply");
    let r = f.stalled_watch("pods").expect("stalled");
    let Body::Stream(rx) = r.body else {
        panic!("stream")
    };
    assert_eq!(f.snapshot()["stalledWatches"], 1);
    assert_eq!(f.latency(), Duration::from_millis(7));
    f.stall_watches(false);
    // The stream ends (sender dropped) once the stall is lifted.
    assert!(rx.recv().is_err());
    // One resource only.
    f.stall_watches_of("endpointslices");
    assert!(f.stalled_watch("pods").is_none());
    assert!(f.stalled_watch("endpointslices").is_some());
    assert_eq!(f.snapshot()["stalledWatches"], 1);
    f.stall_watches(false);
    assert!(!f.outage(Duration::from_secs(1)), "no server attached");
    f.apply_json(&json!({"clear": true})).expect("clear");
    assert_eq!(f.latency(), Duration::ZERO);
}
