//! End-to-end benchmark: kube-sim and the release endpointd as **separate
//! processes** on loopback, so endpointd's own RSS and CPU are measured.
//!
//! ```text
//! cargo bench --bench e2e -- [--services S] [--pods P] [--nodes N]
//!                            [--rate R] [--duration SECS] [--scenario churn|lifecycle|restart|cold|burst|idle|service-churn|all]
//!                            [--server-latency-ms MS] [--service-churn-seconds SECS]
//! ```
//! Defaults are CI-sized (20 services, 200 pods, 5 nodes, 20 changes/s for
//! 5 s). Full size: `--services 1000 --pods 10000 --nodes 100 --rate 100
//! --duration 60`.
//!
//! Scenarios: **cold** start (time until every object is written and
//! writes stop; writes vs the minimum; the floor: the same number of objects
//! POSTed by a bare client with endpointd's concurrency, 10), **churn** (readiness flips
//! at R/s: change → EndpointSlice and → Endpoints latency through watches,
//! the floor = a bare Lease write observed through a watch interleaved with
//! the churn, writes per change, CPU per 1,000 changes, RSS), **lifecycle**
//! (pods added and deleted, a Service scaled up by 10 and down, a rolling
//! restart of another, at R/s: add → written and delete → written
//! latencies, writes per change, every Service ending exact), **restart**
//! (writes in the 10 s after a restart on a converged cluster, time until
//! ready), **burst** (1,000 flips of one 100-pod service within a second,
//! batch_period 0 s and 1 s), **idle** (a converged cluster with nothing
//! changing for 5 minutes, 10 s at CI size: CPU and wake-ups per second,
//! per thread, against the bookmarks and Lease writes that cannot be
//! avoided), **service-churn** (Services created and deleted at ~50/s, 10 s
//! at CI size, 10 minutes full size or `--service-churn-seconds`:
//! endpointd's RSS every 10 s and its slope after the first minute, slice
//! creates that came after their Service's delete, slices left, foreign
//! writes). With default sizes it asserts correctness
//! and exits 1 on a violation. Human lines first, a JSON summary last.
//!
//! `--server-latency-ms MS` (default 0) makes every kube-sim of the run,
//! the floors' too, answer each resource request after MS ms: kube-sim
//! answers a write in tens of microseconds, a real API server (etcd) in
//! milliseconds, which changes what the floors mean.

// A measuring harness, not shipped: libc calls (sysconf, getrusage, kill) on its own processes.
#![allow(unsafe_code)]

#[path = "e2e/churn.rs"]
mod churn;
#[path = "e2e/floor.rs"]
mod floor;
#[path = "e2e/idle.rs"]
mod idle;
#[path = "e2e/lifecycle.rs"]
mod lifecycle;
#[path = "e2e/procs.rs"]
mod procs;
#[path = "e2e/service_churn.rs"]
mod service_churn;

use procs::Size;
use serde_json::json;
use std::time::{Duration, Instant};

struct Args {
    size: Size,
    rate: f64,
    duration: Duration,
    scenario: String,
    server_latency_ms: u64,
    service_churn_s: Option<u64>,
}

fn args() -> Args {
    let mut a = Args {
        size: Size {
            services: 20,
            pods: 200,
            nodes: 5,
        },
        rate: 20.0,
        duration: Duration::from_secs(5),
        scenario: "all".into(),
        server_latency_ms: 0,
        service_churn_s: None,
    };
    let v: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < v.len() {
        let val = v.get(i + 1).cloned().unwrap_or_default();
        match v[i].as_str() {
            "--services" => a.size.services = val.parse().unwrap_or(a.size.services),
            "--pods" => a.size.pods = val.parse().unwrap_or(a.size.pods),
            "--nodes" => a.size.nodes = val.parse().unwrap_or(a.size.nodes),
            "--rate" => a.rate = val.parse().unwrap_or(a.rate),
            "--duration" => a.duration = Duration::from_secs(val.parse().unwrap_or(5)),
            "--scenario" => a.scenario = val,
            "--server-latency-ms" => a.server_latency_ms = val.parse().unwrap_or(0),
            "--service-churn-seconds" => a.service_churn_s = val.parse().ok(),
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    a
}

fn main() {
    // The bench starts kube-sim as a process of its own by running itself
    // again with this first argument (the binary is another package's).
    let mut argv = std::env::args_os().skip(1);
    if argv.next().is_some_and(|a| a == procs::AS_KUBE_SIM) {
        std::process::exit(match kube_sim::cli::main(argv) {
            c if c == std::process::ExitCode::SUCCESS => 0,
            _ => 1,
        });
    }
    let a = args();
    procs::SERVER_LATENCY_MS.store(a.server_latency_ms, std::sync::atomic::Ordering::Relaxed);
    let default = a.size.services == 20 && a.size.pods == 200;
    let dir = std::env::temp_dir().join(format!("endpointd-e2e-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let run = |s: &str| a.scenario == "all" || a.scenario == s;
    let mut summary = serde_json::Map::new();
    let mut failures: Vec<String> = Vec::new();
    summary.insert("size".into(), json!({"services": a.size.services, "pods": a.size.pods, "nodes": a.size.nodes, "rate": a.rate, "duration_s": a.duration.as_secs(), "server_latency_ms": a.server_latency_ms}));
    if run("cold") || run("churn") || run("lifecycle") || run("restart") {
        let r = churn::main_run(
            &dir,
            &a.size,
            a.rate,
            a.duration,
            run("churn"),
            run("lifecycle"),
            run("restart"),
        );
        for (k, v) in r.json {
            summary.insert(k, v);
        }
        failures.extend(r.failures);
    }
    if run("idle") {
        // CI size: a short window (correctness only); full size: 5 minutes.
        let window = match default {
            true => Duration::from_secs(10),
            false => a.duration.max(Duration::from_secs(300)),
        };
        let (json, f) = idle::run(&dir, &a.size, window);
        for (k, v) in json {
            summary.insert(k, v);
        }
        failures.extend(f);
    }
    if run("service-churn") {
        // CI size: 10 s (correctness, a first slope); full size: 10 minutes.
        let window = match (a.service_churn_s, default) {
            (Some(s), _) => Duration::from_secs(s),
            (None, true) => Duration::from_secs(10),
            (None, false) => Duration::from_secs(600),
        };
        let (json, f) = service_churn::run(&dir, &a.size, window, 50.0);
        for (k, v) in json {
            summary.insert(k, v);
        }
        failures.extend(f);
    }
    if run("burst") {
        let r = churn::burst(&dir);
        summary.insert("burst".into(), serde_json::Value::Object(r.json));
        failures.extend(r.failures);
    }
    let _ = std::fs::remove_dir_all(&dir);
    summary.insert("failures".into(), json!(failures));
    println!("{}", serde_json::Value::Object(summary));
    if default && !failures.is_empty() {
        std::process::exit(1);
    }
    let _ = Instant::now();
}
