//! **service-churn** (issue 37 item 10): Services created and deleted at
//! ~50 per second for a window (10 s at CI size, 10 minutes full size),
//! each selecting the pods of the cluster's first Service (so each gets a
//! slice with endpoints and an Endpoints), each deleted one cycle (20 ms)
//! after its creation, as a tool that tries Services out.
//! endpointd's RSS is sampled every 10 s; the slope after the first
//! minute (or over the whole window when shorter) says whether anything
//! is kept per deleted Service. Also: the slice creates that reached the
//! server after their Service was deleted (kube-sim's write log), the
//! foreign writes counted (should be 0), and every churned Service's
//! objects gone at the end.

use crate::procs::{cluster, endpointd, http_get, kube_sim, settle, Size};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// Services alive at once.
const ALIVE: usize = 1;
/// RSS sampling period.
const SAMPLE: Duration = Duration::from_secs(10);
/// Warm-up left out of the slope when the window allows.
const WARM_UP: Duration = Duration::from_secs(60);

/// One request; the status code and body (any code).
fn send(addr: &str, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut r = String::new();
    s.read_to_string(&mut r).ok()?;
    let code = r.get(9..12)?.parse().ok()?;
    Some((code, r.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?))
}

fn churn_service(i: usize) -> String {
    json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": format!("churn-{i}"), "namespace": "bench"},
        "spec": {"selector": {"app": "s-0"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}})
    .to_string()
}

/// Least-squares slope of `(t seconds, y)` in y per minute.
fn slope_per_min(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x / n, b + y / n));
    let (num, den) = points.iter().fold((0.0, 0.0), |(a, b), (x, y)| {
        (a + (x - mx) * (y - my), b + (x - mx) * (x - mx))
    });
    if den == 0.0 {
        0.0
    } else {
        num / den * 60.0
    }
}

fn metric(addr: &str, series: &str) -> f64 {
    http_get(addr, "/metrics")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// The scenario; `window` is the churn's length, `rate` Services per second.
pub fn run(
    dir: &Path,
    size: &Size,
    window: Duration,
    rate: f64,
) -> (Map<String, Value>, Vec<String>) {
    let mut failures = Vec::new();
    let (sim, url, kc) = kube_sim(dir, &cluster(*size));
    let addr = url.trim_start_matches("http://").to_string();
    let (d, maddr) = endpointd(dir, &kc, "bench-service-churn", "");
    settle(&url, Duration::from_millis(1500), Duration::from_secs(600));
    let mark = kube_sim_log_len(&addr);
    let period = Duration::from_secs_f64(1.0 / rate.max(0.1));
    let coll = "/api/v1/namespaces/bench/services";
    let start = Instant::now();
    let mut samples: Vec<(f64, f64)> = vec![(0.0, d.rss() as f64 / 1048576.0)];
    let mut next_sample = start + SAMPLE;
    let mut deleted_at: std::collections::HashMap<String, u64> = Default::default();
    let mut cycles = 0usize;
    let mut errors = 0usize;
    let mut next = start;
    while start.elapsed() < window {
        if send(&addr, "POST", coll, &churn_service(cycles)).is_none_or(|(c, _)| c != 201) {
            errors += 1;
        }
        if cycles >= ALIVE {
            let old = format!("churn-{}", cycles - ALIVE);
            match send(&addr, "DELETE", &format!("{coll}/{old}"), "") {
                Some((200, body)) => {
                    let rv = serde_json::from_str::<Value>(&body)
                        .ok()
                        .and_then(|v| v["metadata"]["resourceVersion"].as_str()?.parse().ok())
                        .unwrap_or(0);
                    deleted_at.insert(old, rv);
                }
                _ => errors += 1,
            }
        }
        cycles += 1;
        if Instant::now() >= next_sample {
            samples.push((start.elapsed().as_secs_f64(), d.rss() as f64 / 1048576.0));
            next_sample += SAMPLE;
        }
        next += period;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    samples.push((secs, d.rss() as f64 / 1048576.0));
    // Delete the last ones, then let everything settle.
    for i in cycles.saturating_sub(ALIVE)..cycles {
        let name = format!("churn-{i}");
        if let Some((200, body)) = send(&addr, "DELETE", &format!("{coll}/{name}"), "") {
            let rv = serde_json::from_str::<Value>(&body)
                .ok()
                .and_then(|v| v["metadata"]["resourceVersion"].as_str()?.parse().ok())
                .unwrap_or(0);
            deleted_at.insert(name, rv);
        }
    }
    settle(&url, Duration::from_millis(1500), Duration::from_secs(120));
    let after_settle = d.rss() as f64 / 1048576.0;
    // Slice creates that reached the server after their Service's delete.
    let writes: Value = http_get(&addr, &format!("/sim/requests?since={mark}"))
        .and_then(|b| serde_json::from_str(&b).ok())
        .unwrap_or(Value::Null);
    let slice_creates: Vec<&Value> = writes["writes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|w| w["resource"] == "endpointslices" && w["verb"] == "create")
        .collect();
    let late = slice_creates
        .iter()
        .filter(|w| {
            let svc = w["name"]
                .as_str()
                .and_then(|n| n.rsplit_once('-').map(|(s, _)| s.to_string()))
                .unwrap_or_default();
            let rv = w["resource_version"].as_u64().unwrap_or(0);
            deleted_at.get(&svc).is_some_and(|d| rv > *d)
        })
        .count();
    let left = http_get(
        &addr,
        "/apis/discovery.k8s.io/v1/namespaces/bench/endpointslices",
    )
    .and_then(|b| serde_json::from_str::<Value>(&b).ok())
    .map(|v| {
        v["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| {
                s["metadata"]["labels"]["kubernetes.io/service-name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("churn-"))
            })
            .count()
    })
    .unwrap_or(usize::MAX);
    let foreign = metric(
        &maddr,
        "endpointd_foreign_writes_total{resource=\"endpointslices\"}",
    ) + metric(
        &maddr,
        "endpointd_foreign_writes_total{resource=\"endpoints\"}",
    );
    let warm: Vec<(f64, f64)> = samples
        .iter()
        .copied()
        .filter(|(t, _)| *t >= WARM_UP.as_secs_f64())
        .collect();
    let (slope, over) = match warm.len() >= 2 {
        true => (slope_per_min(&warm), "after the first minute"),
        false => (slope_per_min(&samples), "over the whole window"),
    };
    let shown: Vec<String> = samples
        .iter()
        .map(|(t, r)| format!("{t:.0}s {r:.1}"))
        .collect();
    println!(
        "service-churn {secs:.0} s: {cycles} Services created and deleted ({:.1}/s, {errors} request errors); RSS MiB {}; after settling {after_settle:.1}; slope {slope:+.3} MiB/min {over}; {late} slice creates after their Service's delete; {left} churned slices left; {foreign} foreign writes",
        cycles as f64 / secs,
        shown.join(", ")
    );
    if left != 0 {
        failures.push(format!(
            "service-churn: {left} slices of deleted Services left"
        ));
    }
    if foreign != 0.0 {
        failures.push(format!("service-churn: {foreign} foreign writes counted"));
    }
    if d.term() != Some(0) {
        failures.push("service-churn: endpointd did not stop cleanly".into());
    }
    drop(sim);
    let mut out = Map::new();
    out.insert(
        "service_churn".into(),
        json!({
            "window_s": secs.round(),
            "cycles": cycles,
            "request_errors": errors,
            "rss_mib": samples.iter().map(|(t, r)| json!([t.round(), (r * 10.0).round() / 10.0])).collect::<Vec<_>>(),
            "rss_after_settle_mib": (after_settle * 10.0).round() / 10.0,
            "rss_slope_mib_per_min": (slope * 1000.0).round() / 1000.0,
            "slope_over": over,
            "late_slice_creates": late,
            "slice_creates": slice_creates.len(),
            "deletes": deleted_at.len(),
            "churned_slices_left": left,
            "foreign_writes": foreign,
        }),
    );
    (out, failures)
}

/// The length of kube-sim's write log now.
fn kube_sim_log_len(addr: &str) -> u64 {
    http_get(addr, "/sim/requests?since=0")
        .and_then(|b| serde_json::from_str::<Value>(&b).ok())
        .and_then(|v| v["writesTotal"].as_u64())
        .unwrap_or(0)
}
