//! kube-sim benchmark (harness = false): 50,000 pods created, listed in
//! pages of 500, and updated with 100 concurrent watches draining their
//! streams — first in-process through `sim::rest::handle`, then over
//! loopback HTTP against a `SimServer` (ureq clients). Prints one human
//! line per figure and a final JSON line.
//!
//! Run: `cargo bench --bench sim` (env `SIM_BENCH_PODS`, `SIM_BENCH_WRITES`,
//! `SIM_BENCH_WATCHERS` override the sizes).

use endpointd::clock::{Clock, RealClock};
use endpointd::httpd::{Body, Request, Response};
use endpointd::sim::requestinfo::{RequestInfo, Verb};
use endpointd::sim::rest;
use endpointd::sim::store::{Store, StoreConfig};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn call(
    store: &Arc<Store>,
    verb: Verb,
    name: Option<&str>,
    query: &[(&str, &str)],
    body: Vec<u8>,
) -> Response {
    let info = RequestInfo {
        verb,
        group: String::new(),
        version: "v1".into(),
        resource: "pods".into(),
        subresource: None,
        namespace: if verb == Verb::Watch {
            None
        } else {
            Some("default".into())
        },
        name: name.map(str::to_string),
    };
    let req = Request {
        method: "GET".into(),
        path: String::new(),
        query: query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        headers: vec![("content-type".into(), "application/json".into())],
        body,
        peer: ([127, 0, 0, 1], 1).into(),
        client_cn: None,
    };
    rest::handle(store, &info, &req)
}

fn pod(i: usize, rev: usize) -> Vec<u8> {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("pod-{i:06}"), "labels": {"app": format!("app-{}", i % 100), "rev": rev.to_string()}},
        "spec": {"nodeName": format!("node-{}", i % 50), "containers": [{"name": "c", "image": "registry.local/app:1", "ports": [{"containerPort": 8080, "name": "http"}]}]},
        "status": {"phase": "Running", "podIP": format!("10.{}.{}.{}", i / 65536, (i / 256) % 256, i % 256),
                   "conditions": [{"type": "Ready", "status": "True"}]}})
    .to_string()
    .into_bytes()
}

fn full(r: Response) -> Vec<u8> {
    match r.body {
        Body::Full(b) if r.status < 300 => b,
        Body::Full(b) => panic!("status {}: {}", r.status, String::from_utf8_lossy(&b)),
        Body::Stream(_) => panic!("unexpected stream"),
    }
}

fn paginated_list(store: &Arc<Store>) -> (usize, Duration) {
    let start = Instant::now();
    let (mut items, mut token) = (0usize, String::new());
    loop {
        let mut q = vec![("limit", "500")];
        if !token.is_empty() {
            q.push(("continue", token.as_str()));
        }
        let body = full(call(store, Verb::List, None, &q, Vec::new()));
        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        items += v["items"].as_array().map(Vec::len).unwrap_or(0);
        token = v["metadata"]["continue"].as_str().unwrap_or("").to_string();
        if token.is_empty() {
            return (items, start.elapsed());
        }
    }
}

fn main() {
    let pods = env("SIM_BENCH_PODS", 50_000);
    let writes = env("SIM_BENCH_WRITES", 20_000);
    let watchers = env("SIM_BENCH_WATCHERS", 100);
    let clock: Arc<dyn Clock> = Arc::new(RealClock);
    let store = Store::new(StoreConfig::default(), clock);

    let t = Instant::now();
    for i in 0..pods {
        full(call(&store, Verb::Create, None, &[], pod(i, 0)));
    }
    let create_s = t.elapsed().as_secs_f64();
    println!(
        "create {pods} pods: {create_s:.2}s ({:.0}/s, no watchers)",
        pods as f64 / create_s
    );

    let (n, list_time) = paginated_list(&store);
    assert_eq!(n, pods, "paginated list saw every pod once");
    println!(
        "paginated list (limit 500) of {n} pods: {:.3}s (server + client JSON parse)",
        list_time.as_secs_f64()
    );

    let received = Arc::new(AtomicUsize::new(0));
    let mut drains = Vec::new();
    for _ in 0..watchers {
        let rv = store.current_rv().to_string();
        let r = call(
            &store,
            Verb::Watch,
            None,
            &[("resourceVersion", &rv)],
            Vec::new(),
        );
        let Body::Stream(rx) = r.body else {
            panic!("watch did not stream")
        };
        let received = received.clone();
        drains.push(std::thread::spawn(move || {
            while let Ok(chunk) = rx.recv() {
                // Empty chunks are liveness probes the HTTP layer never writes.
                if !std::hint::black_box(&chunk).is_empty() {
                    received.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    let t = Instant::now();
    for w in 0..writes {
        let i = w % pods;
        full(call(
            &store,
            Verb::Update,
            Some(&format!("pod-{i:06}")),
            &[],
            pod(i, w + 1),
        ));
    }
    let write_s = t.elapsed().as_secs_f64();
    let expected = writes * watchers;
    while received.load(Ordering::Relaxed) < expected && t.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let deliver_s = t.elapsed().as_secs_f64();
    let got = received.load(Ordering::Relaxed);
    let open = store.watch_count();
    println!(
        "{writes} updates with {watchers} watches: writes {write_s:.2}s ({:.0}/s); all {got}/{expected} events delivered after {deliver_s:.2}s ({:.0} events/s); watches still open {open}",
        writes as f64 / write_s,
        got as f64 / deliver_s
    );
    let (n2, list2) = paginated_list(&store);
    println!(
        "paginated list again (with history): {n2} pods in {:.3}s",
        list2.as_secs_f64()
    );
    store.shutdown();
    for d in drains {
        let _ = d.join();
    }
    let http = over_http(pods, writes, watchers);
    println!(
        "{}",
        json!({"bench": "sim", "http": http, "pods": pods, "create_per_s": (pods as f64 / create_s).round(),
            "list_500_pages_s": list_time.as_secs_f64(), "watchers": watchers, "writes": writes,
            "writes_per_s_with_watchers": (writes as f64 / write_s).round(),
            "events_delivered": got, "events_expected": expected,
            "delivery_s": deliver_s, "watchers_dropped": watchers - open})
    );
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

fn http_list(a: &ureq::Agent, base: &str) -> (usize, Duration) {
    let start = Instant::now();
    let (mut items, mut token) = (0usize, String::new());
    loop {
        let mut url = format!("{base}/api/v1/namespaces/default/pods?limit=500");
        if !token.is_empty() {
            url.push_str("&continue=");
            url.push_str(&token);
        }
        let mut r = a.get(&url).call().unwrap_or_else(|e| panic!("list: {e}"));
        let text = r
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .unwrap_or_default();
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        items += v["items"].as_array().map(Vec::len).unwrap_or(0);
        token = v["metadata"]["continue"].as_str().unwrap_or("").to_string();
        if token.is_empty() {
            return (items, start.elapsed());
        }
    }
}

/// The same workload over loopback HTTP; returns its figures as JSON.
fn over_http(pods: usize, writes: usize, watchers: usize) -> Value {
    use endpointd::sim::server::{SimOptions, SimServer};
    use std::io::{BufRead, BufReader};
    let sim = match SimServer::start(SimOptions::default()) {
        Ok(s) => s,
        Err(e) => panic!("kube-sim did not start: {e}"),
    };
    let base = sim.url().to_string();
    for i in 0..pods {
        full(call(sim.store(), Verb::Create, None, &[], pod(i, 0)));
    }
    let a = agent();
    let (n, list_time) = http_list(&a, &base);
    assert_eq!(n, pods);
    println!(
        "HTTP paginated list (limit 500) of {n} pods: {:.3}s",
        list_time.as_secs_f64()
    );
    let received = Arc::new(AtomicUsize::new(0));
    let rv = sim.store().current_rv();
    let mut readers = Vec::new();
    for _ in 0..watchers {
        let url = format!("{base}/api/v1/pods?watch=true&resourceVersion={rv}");
        let r = agent()
            .get(&url)
            .call()
            .unwrap_or_else(|e| panic!("watch: {e}"));
        let received = received.clone();
        readers.push(std::thread::spawn(move || {
            let mut rd = BufReader::new(r.into_body().into_reader());
            let mut line = String::new();
            while rd.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                received.fetch_add(1, Ordering::Relaxed);
                line.clear();
            }
        }));
    }
    let t = Instant::now();
    let writers = 4;
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let base = base.clone();
            std::thread::spawn(move || {
                let a = agent();
                for k in (w..writes).step_by(writers) {
                    let i = k % pods;
                    let url = format!("{base}/api/v1/namespaces/default/pods/pod-{i:06}");
                    let r = a
                        .put(&url)
                        .header("content-type", "application/json")
                        .send(&pod(i, k + 1)[..]);
                    let status = r.map(|r| r.status().as_u16()).unwrap_or(0);
                    assert_eq!(status, 200, "PUT {url}");
                }
            })
        })
        .collect();
    for h in handles {
        let _ = h.join();
    }
    let write_s = t.elapsed().as_secs_f64();
    let expected = writes * watchers;
    while received.load(Ordering::Relaxed) < expected && t.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let deliver_s = t.elapsed().as_secs_f64();
    let got = received.load(Ordering::Relaxed);
    let open = sim.store().watch_count();
    println!(
        "HTTP: {writes} PUTs from {writers} clients with {watchers} HTTP watches: {:.0} writes/s; {got}/{expected} events read by clients after {deliver_s:.2}s; watches open {open}",
        writes as f64 / write_s
    );
    sim.store().close_all_watches();
    for r in readers {
        let _ = r.join();
    }
    sim.stop();
    json!({"list_500_pages_s": list_time.as_secs_f64(), "writers": writers,
        "writes_per_s_with_watchers": (writes as f64 / write_s).round(),
        "events_delivered": got, "events_expected": expected, "delivery_s": deliver_s,
        "watchers_dropped": watchers - open})
}
