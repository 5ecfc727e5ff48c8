//! kube-sim benchmark (harness = false): 50,000 pods created, listed in
//! pages of 500, and updated with 100 concurrent watches draining their
//! streams — first in-process through `sim::rest::handle`, then over
//! loopback HTTP against a `SimServer` (ureq clients). Prints one human
//! line per figure and a final JSON line.
//!
//! Time comes from `clock::RealClock` (the crate rule: no direct clock reads).
//! Run: `cargo bench --bench sim` (env `SIM_BENCH_PODS`, `SIM_BENCH_WRITES`,
//! `SIM_BENCH_WATCHERS` override the sizes).

use endpointd_base::clock::{Clock, RealClock};
use endpointd_base::httpd::{Body, Request, Response};
use kube_sim::requestinfo::{RequestInfo, Verb};
use kube_sim::rest;
use kube_sim::store::{Store, StoreConfig};
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
    let start = RealClock.now();
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

/// Sizes of one run.
#[derive(Clone, Copy)]
struct Sizes {
    pods: usize,
    writes: usize,
    watchers: usize,
}

/// Peak resident set size of this process in MiB (Linux `VmHWM`).
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// Count the non-empty chunks of each stream (empty ones are liveness
/// probes the HTTP layer never writes).
fn drain_all(
    rxs: Vec<crossbeam_channel::Receiver<Vec<u8>>>,
    received: &Arc<AtomicUsize>,
) -> Vec<std::thread::JoinHandle<()>> {
    rxs.into_iter()
        .map(|rx| {
            let received = received.clone();
            std::thread::spawn(move || {
                while let Ok(chunk) = rx.recv() {
                    if !std::hint::black_box(&chunk).is_empty() {
                        received.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect()
}

/// Wait until `expected` events arrived (at most 120 s); (count, elapsed).
fn await_events(received: &AtomicUsize, expected: usize, since: Instant) -> (usize, f64) {
    while received.load(Ordering::Relaxed) < expected && since.elapsed() < Duration::from_secs(120)
    {
        RealClock.sleep(Duration::from_millis(5));
    }
    (
        received.load(Ordering::Relaxed),
        since.elapsed().as_secs_f64(),
    )
}

/// The workload in-process through `rest::handle`.
fn in_process(z: Sizes) -> Value {
    let clock: Arc<dyn Clock> = Arc::new(RealClock);
    let store = Store::new(StoreConfig::default(), clock);
    let t = RealClock.now();
    for i in 0..z.pods {
        full(call(&store, Verb::Create, None, &[], pod(i, 0)));
    }
    let create_s = t.elapsed().as_secs_f64();
    println!(
        "create {} pods: {create_s:.2}s ({:.0}/s, no watchers)",
        z.pods,
        z.pods as f64 / create_s
    );
    let (n, list_time) = paginated_list(&store);
    assert_eq!(n, z.pods, "paginated list saw every pod once");
    println!(
        "paginated list (limit 500) of {n} pods: {:.3}s (server + client JSON parse)",
        list_time.as_secs_f64()
    );
    let rv = store.current_rv().to_string();
    let rxs = (0..z.watchers)
        .map(|_| {
            match call(
                &store,
                Verb::Watch,
                None,
                &[("resourceVersion", &rv)],
                Vec::new(),
            )
            .body
            {
                Body::Stream(rx) => rx,
                Body::Full(_) => panic!("watch did not stream"),
            }
        })
        .collect();
    let received = Arc::new(AtomicUsize::new(0));
    let drains = drain_all(rxs, &received);
    let t = RealClock.now();
    for w in 0..z.writes {
        let i = w % z.pods;
        full(call(
            &store,
            Verb::Update,
            Some(&format!("pod-{i:06}")),
            &[],
            pod(i, w + 1),
        ));
    }
    let write_s = t.elapsed().as_secs_f64();
    let expected = z.writes * z.watchers;
    let (got, deliver_s) = await_events(&received, expected, t);
    let open = store.watch_count();
    println!(
        "{} updates with {} watches: {:.0} writes/s; {got}/{expected} events delivered after {deliver_s:.2}s; watches open {open}",
        z.writes, z.watchers, z.writes as f64 / write_s
    );
    let (_, list2) = paginated_list(&store);
    println!(
        "paginated list again (with history): {:.3}s; peak RSS {:.0} MiB",
        list2.as_secs_f64(),
        peak_rss_mib()
    );
    store.shutdown();
    for d in drains {
        let _ = d.join();
    }
    json!({"create_per_s": (z.pods as f64 / create_s).round(), "list_500_pages_s": list_time.as_secs_f64(),
        "writes_per_s_with_watchers": (z.writes as f64 / write_s).round(), "events_delivered": got,
        "events_expected": expected, "delivery_s": deliver_s, "watchers_dropped": z.watchers - open,
        "peak_rss_mib": peak_rss_mib().round()})
}

fn main() {
    let z = Sizes {
        pods: env("SIM_BENCH_PODS", 50_000),
        writes: env("SIM_BENCH_WRITES", 20_000),
        watchers: env("SIM_BENCH_WATCHERS", 100),
    };
    let inproc = in_process(z);
    let http = over_http(z);
    println!(
        "{}",
        json!({"bench": "sim", "pods": z.pods, "writes": z.writes, "watchers": z.watchers,
            "in_process": inproc, "http": http})
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
    let start = RealClock.now();
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

/// HTTP watches from `rv`: one reader thread per stream counting lines.
fn http_watches(
    base: &str,
    rv: u64,
    n: usize,
    received: &Arc<AtomicUsize>,
) -> Vec<std::thread::JoinHandle<()>> {
    use std::io::{BufRead, BufReader};
    (0..n)
        .map(|_| {
            let url = format!("{base}/api/v1/pods?watch=true&resourceVersion={rv}");
            let r = agent()
                .get(&url)
                .call()
                .unwrap_or_else(|e| panic!("watch: {e}"));
            let received = received.clone();
            std::thread::spawn(move || {
                let mut rd = BufReader::new(r.into_body().into_reader());
                let mut line = String::new();
                while rd.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                    received.fetch_add(1, Ordering::Relaxed);
                    line.clear();
                }
            })
        })
        .collect()
}

/// `writes` PUTs spread over `writers` client threads.
fn http_puts(base: &str, z: Sizes, writers: usize) {
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let base = base.to_string();
            std::thread::spawn(move || {
                let a = agent();
                for k in (w..z.writes).step_by(writers) {
                    let i = k % z.pods;
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
}

/// The same workload over loopback HTTP; returns its figures as JSON.
fn over_http(z: Sizes) -> Value {
    use kube_sim::server::{SimOptions, SimServer};
    let sim = match SimServer::start(SimOptions::default()) {
        Ok(s) => s,
        Err(e) => panic!("kube-sim did not start: {e}"),
    };
    let base = sim.url().to_string();
    for i in 0..z.pods {
        full(call(sim.store(), Verb::Create, None, &[], pod(i, 0)));
    }
    let (n, list_time) = http_list(&agent(), &base);
    assert_eq!(n, z.pods);
    println!(
        "HTTP paginated list (limit 500) of {n} pods: {:.3}s",
        list_time.as_secs_f64()
    );
    let received = Arc::new(AtomicUsize::new(0));
    let readers = http_watches(&base, sim.store().current_rv(), z.watchers, &received);
    let writers = 4;
    let t = RealClock.now();
    http_puts(&base, z, writers);
    let write_s = t.elapsed().as_secs_f64();
    let expected = z.writes * z.watchers;
    let (got, deliver_s) = await_events(&received, expected, t);
    let open = sim.store().watch_count();
    println!(
        "HTTP: {} PUTs from {writers} clients with {} HTTP watches: {:.0} writes/s; {got}/{expected} events read by clients after {deliver_s:.2}s; watches open {open}",
        z.writes, z.watchers, z.writes as f64 / write_s
    );
    sim.store().close_all_watches();
    for r in readers {
        let _ = r.join();
    }
    sim.stop();
    json!({"list_500_pages_s": list_time.as_secs_f64(), "writers": writers,
        "writes_per_s_with_watchers": (z.writes as f64 / write_s).round(),
        "events_delivered": got, "events_expected": expected, "delivery_s": deliver_s,
        "watchers_dropped": z.watchers - open})
}
