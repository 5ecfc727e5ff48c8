//! **idle**: what endpointd costs while nothing changes. A converged
//! cluster, kube-sim bookmarking each watch once a minute as kube-apiserver
//! does, the Lease renewed every retry period: endpointd's CPU and its
//! wake-ups (voluntary context switches summed over its threads, from
//! `/proc/<pid>/task/*/status`) over the window, per thread name too, so
//! every periodic timer shows. The floor is what cannot be avoided in the
//! same window: one wake-up per bookmark received and per Lease write
//! (kube-sim's write log counts the latter).

use crate::procs::{cluster, endpointd, kube_sim_with, settle, Size};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Voluntary context switches per thread name (threads of one name summed).
fn wakeups(pid: u32) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        let dir = t.path();
        let name = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
        let n = status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        *out.entry(name.trim().to_string()).or_insert(0) += n;
    }
    out
}

/// Writes in kube-sim's write log since `since` to `resource`, and where
/// the log now ends.
fn writes_to(url: &str, resource: &str, since: u64) -> (usize, u64) {
    let addr = url.trim_start_matches("http://");
    let body =
        crate::procs::http_get(addr, &format!("/sim/requests?since={since}")).unwrap_or_default();
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let n = v["writes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|w| w["resource"].as_str() == Some(resource))
        .count();
    (n, v["writesTotal"].as_u64().unwrap_or(since))
}

/// The idle scenario; `window` is the measured quiet time.
pub fn run(dir: &Path, size: &Size, window: Duration) -> (Map<String, Value>, Vec<String>) {
    let mut json = Map::new();
    let mut failures = Vec::new();
    let (sim, url, kc) = kube_sim_with(dir, &cluster(*size), &["--bookmark-interval", "1m"]);
    let (d, _addr) = endpointd(dir, &kc, "bench-idle", "");
    settle(&url, Duration::from_millis(1500), Duration::from_secs(600));
    // Let start-up's last work (events, the first heartbeat) pass.
    std::thread::sleep(Duration::from_secs(3));
    let (_, mark) = writes_to(&url, "leases", 0);
    let (cpu0, w0, t0) = (d.cpu(), wakeups(d.pid()), Instant::now());
    std::thread::sleep(window);
    let (cpu1, w1, secs) = (d.cpu(), wakeups(d.pid()), t0.elapsed().as_secs_f64());
    let (leases, _) = writes_to(&url, "leases", mark);
    let cpu_pct = (cpu1 - cpu0) / secs * 100.0;
    let mut per_thread = Map::new();
    let mut total = 0u64;
    for (name, n) in &w1 {
        let d = n.saturating_sub(w0.get(name).copied().unwrap_or(0));
        total += d;
        if d > 0 {
            per_thread.insert(
                name.clone(),
                json!((d as f64 / secs * 100.0).round() / 100.0),
            );
        }
    }
    let rate = total as f64 / secs;
    // Watches: pods, services, nodes, namespaces, endpoints, endpointslices.
    let bookmarks = 6.0 * secs / 60.0;
    let floor = (bookmarks + leases as f64) / secs;
    println!(
        "idle {:.0} s: CPU {:.3} % of one core; {:.2} wake-ups/s (floor {:.2}: {} Lease writes, ~{:.0} bookmarks); per thread {}",
        secs,
        cpu_pct,
        rate,
        floor,
        leases,
        bookmarks,
        Value::Object(per_thread.clone())
    );
    json.insert(
        "idle".into(),
        json!({
            "window_s": secs.round(),
            "cpu_percent": (cpu_pct * 1000.0).round() / 1000.0,
            "wakeups_per_s": (rate * 100.0).round() / 100.0,
            "floor_wakeups_per_s": (floor * 100.0).round() / 100.0,
            "lease_writes": leases,
            "rss_mib": (d.rss() as f64 / 1048576.0 * 10.0).round() / 10.0,
            "per_thread_wakeups_per_s": per_thread,
        }),
    );
    if d.term() != Some(0) {
        failures.push("idle: endpointd did not stop cleanly".into());
    }
    drop(sim);
    (json, failures)
}
