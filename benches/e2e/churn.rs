//! The scenarios: cold start, steady churn with its floor, restart, burst.

use super::procs::{
    self, cluster, endpointd, http_get, kube_sim, minimum_writes, percentile, settle, Size,
};
use endpointd_base::clock::RealClock;
use endpointd_kube::kube::{
    Client, ClientConfig, ListParams, WatchEvent, WatchParams, ENDPOINTS, ENDPOINTSLICES, LEASES,
    NAMESPACES, PODS,
};
use endpointd_kube::model::{DynamicObject, Object};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct RunResult {
    pub json: Map<String, Value>,
    pub failures: Vec<String>,
}

/// The bench's own client: no client-side rate limit, so that the load
/// generator is never the bottleneck.
pub fn client(url: &str) -> Client {
    let mut cfg = ClientConfig::new(url);
    cfg.qps = 100_000.0;
    cfg.burst = 100_000;
    Client::new(cfg, RealClock::shared(), None).expect("client")
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn wait_ready(addr: &str) -> Duration {
    let t = Instant::now();
    while http_get(addr, "/readyz").is_none() && t.elapsed() < Duration::from_secs(300) {
        std::thread::sleep(Duration::from_millis(10));
    }
    t.elapsed()
}

fn empty_rss(dir: &Path) -> u64 {
    let d = dir.join("empty");
    std::fs::create_dir_all(&d).expect("dir");
    let (_sim, _url, kc) = kube_sim(
        &d,
        &cluster(Size {
            services: 0,
            pods: 0,
            nodes: 0,
        }),
    );
    let (e, addr) = endpointd(&d, &kc, "empty", "");
    wait_ready(&addr);
    std::thread::sleep(Duration::from_secs(1));
    let rss = e.rss();
    e.term();
    rss
}

/// Cold start, then churn and restart on the same cluster.
pub fn main_run(
    dir: &Path,
    size: &Size,
    rate: f64,
    duration: Duration,
    do_churn: bool,
    do_lifecycle: bool,
    do_restart: bool,
) -> RunResult {
    let mut json = Map::new();
    let mut failures = Vec::new();
    let empty = empty_rss(dir);
    let (sim, url, kc) = kube_sim(dir, &cluster(*size));
    // Read before the start, so the polls while endpointd starts fetch only
    // its writes.
    let mut log = procs::WriteLog::new(&url);
    let sim_cpu0 = sim.cpu();
    let t0 = Instant::now();
    let wall0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let (d, addr) = endpointd(dir, &kc, "bench-a", "");
    let ((ep, sl), last) = procs::settle_log(
        &mut log,
        Duration::from_millis(1500),
        Duration::from_secs(600),
    );
    // When the writes stopped as the polling loop saw it: late by up to
    // one 50 ms poll plus the fetch of the writes since the previous poll.
    let polled = last.saturating_duration_since(t0);
    // When the last write happened by kube-sim's own log (same machine,
    // same clock): the figure compared with the floor, which is timed by
    // its client directly.
    let cold = log
        .last_write_time()
        .map(|t| Duration::from_secs_f64((t - wall0).max(0.0)))
        .unwrap_or(polled);
    // Diagnostic: the CPU both processes spent (10 ms ticks; the settle's
    // quiet second and a half adds next to nothing).
    let (cold_cpu, cold_sim_cpu) = (d.cpu(), sim.cpu() - sim_cpu0);
    // Diagnostic: the part before the first write (process start, LISTs,
    // cache sync, election) and the writing itself.
    let first = log
        .first_write_time()
        .map(|t| Duration::from_secs_f64((t - wall0).max(0.0)));
    let min = minimum_writes(*size);
    let floor = cold_floor(&url, ep + sl);
    println!("cold start: {:.0} ms until the last write ({:.0} ms as polled; the first at {:.0} ms; CPU endpointd {:.0} + kube-sim {:.0} ms); writes {ep} Endpoints + {sl} slices (minimum {} + {}); floor {:.0} ms for {} bare POSTs", ms(cold), ms(polled), first.map_or(f64::NAN, ms), cold_cpu * 1e3, cold_sim_cpu * 1e3, min.0, min.1, ms(floor), ep + sl);
    if (ep, sl) != min {
        failures.push(format!(
            "cold start wrote {:?}, minimum {:?}",
            (ep, sl),
            min
        ));
    }
    let loaded = d.rss();
    // Diagnostic, not the target's floor: the very objects written, with
    // endpointd's concurrency (5 Endpoints + 5 slice workers).
    let same = super::floor::cold_floor_same_objects(dir, &url, 10);
    if let Some(t) = same {
        println!(
            "cold start floor with the same objects: {:.0} ms for {} POSTs of the slices and Endpoints written, 10 bare writers",
            ms(t),
            ep + sl
        );
    }
    json.insert("cold".into(), json!({"ms": ms(cold), "ms_polled": ms(polled), "first_write_ms": first.map(ms), "cpu_ms": [cold_cpu * 1e3, cold_sim_cpu * 1e3], "floor_ms": ms(floor),
        "floor_same_objects_ms": same.map(ms), "endpoints_writes": ep, "slice_writes": sl, "minimum": [min.0, min.1]}));
    json.insert(
        "rss".into(),
        json!({"empty_bytes": empty, "loaded_bytes": loaded,
        "per_pod_bytes": (loaded.saturating_sub(empty)) as f64 / size.pods.max(1) as f64}),
    );
    println!(
        "rss: empty {:.1} MiB, loaded {:.1} MiB, {:.0} B per cached pod",
        empty as f64 / 1048576.0,
        loaded as f64 / 1048576.0,
        (loaded.saturating_sub(empty)) as f64 / size.pods.max(1) as f64
    );
    if do_churn {
        let (mut j, f) = churn(&url, &d, size, rate, duration);
        // The protocol's own CPU per change, on a kube-sim of its own.
        let floor_cpu = super::floor::cpu_floor(dir, &url, 1000);
        match floor_cpu {
            Some((u, s)) => println!("churn CPU floor: {:.0} ms per 1,000 flips (user {u:.0} + system {s:.0}; one bare thread: pod event in, slice + Endpoints PUT, both echoes in)", u + s),
            None => failures.push("the churn CPU floor could not run".into()),
        }
        if let Value::Object(m) = &mut j {
            m.insert(
                "floor_cpu_ms_per_1000_changes".into(),
                json!(floor_cpu.map(|(u, s)| u + s)),
            );
            m.insert(
                "floor_cpu_user_system_ms".into(),
                json!(floor_cpu.map(|(u, s)| [u, s])),
            );
        }
        json.insert("churn".into(), j);
        failures.extend(f);
    }
    if do_lifecycle {
        let (j, f) = super::lifecycle::lifecycle(&url, &d, size, rate, duration);
        json.insert("lifecycle".into(), j);
        failures.extend(f);
    }
    if do_restart {
        let before = procs::writes(&url);
        d.term();
        let t = Instant::now();
        let (d2, addr2) = endpointd(dir, &kc, "bench-b", "");
        wait_ready(&addr2);
        let ready = t.elapsed();
        std::thread::sleep(Duration::from_secs(10));
        let after = procs::writes(&url);
        let extra = (after.0 - before.0) + (after.1 - before.1);
        println!(
            "restart: ready after {:.0} ms; {extra} writes in the following 10 s",
            ms(ready)
        );
        if extra != 0 {
            failures.push(format!("restart wrote {extra} objects"));
        }
        json.insert(
            "restart".into(),
            json!({"ready_ms": ms(ready), "writes_10s": extra}),
        );
        d2.term();
    }
    let _ = addr;
    RunResult { json, failures }
}

/// The same number of objects POSTed by a bare client with endpointd's
/// concurrency (its 5 Endpoints + 5 slice workers).
fn cold_floor(url: &str, n: usize) -> Duration {
    const WRITERS: usize = 10;
    let c = client(url);
    let ns: DynamicObject = DynamicObject::from_value(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "floor"}}),
    )
    .expect("ns");
    let _ = c.create(&NAMESPACES, None, &ns);
    let t = Instant::now();
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let c = c.clone();
            s.spawn(move || {
                for i in (w..n).step_by(WRITERS) {
                    let l = DynamicObject::from_value(json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                        "metadata": {"name": format!("f-{i}"), "namespace": "floor"}, "spec": {"holderIdentity": "x"}})).expect("lease");
                    let _ = c.create(&LEASES, Some("floor"), &l);
                }
            });
        }
    });
    t.elapsed()
}

type Pending = Arc<Mutex<HashMap<String, (bool, Instant)>>>;

pub fn watch_thread(
    c: Client,
    r: endpointd_kube::kube::Resource,
    rv: String,
    stop: Arc<AtomicBool>,
    f: impl Fn(&Value) + Send + 'static,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let p = WatchParams {
            resource_version: Some(rv),
            timeout_seconds: Some(3600),
            ..WatchParams::default()
        };
        let Ok(w) = c.watch::<DynamicObject>(&r, Some("bench"), &p) else {
            return;
        };
        for ev in w {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            if let Ok(WatchEvent::Added(o) | WatchEvent::Modified(o)) = ev {
                f(&serde_json::to_value(&o).unwrap_or(Value::Null));
            }
        }
    })
}

fn record(lat: &Mutex<Vec<f64>>, pending: &Pending, name: &str, ready: bool) {
    let mut p = pending.lock().expect("lock");
    if let Some((want, t0)) = p.get(name).copied() {
        if want == ready {
            p.remove(name);
            lat.lock().expect("lock").push(ms(t0.elapsed()));
        }
    }
}

/// Steady churn: readiness flips at `rate`/s for `duration`.
fn churn(
    url: &str,
    d: &procs::Proc,
    size: &Size,
    rate: f64,
    duration: Duration,
) -> (Value, Vec<String>) {
    let c = client(url);
    let list = c
        .list::<DynamicObject>(&PODS, Some("bench"), &ListParams::default())
        .expect("pods");
    let rv = list.resource_version.clone();
    let mut pods: HashMap<String, DynamicObject> = list
        .items
        .into_iter()
        .map(|p| (p.name().to_string(), p))
        .collect();
    let (slice_pending, ep_pending): (Pending, Pending) = (Arc::default(), Arc::default());
    let (slice_lat, ep_lat, floor_lat) = (
        Arc::new(Mutex::new(Vec::new())),
        Arc::new(Mutex::new(Vec::new())),
        Arc::new(Mutex::new(Vec::new())),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let (sp, sl) = (slice_pending.clone(), slice_lat.clone());
    let t1 = watch_thread(
        c.clone(),
        ENDPOINTSLICES,
        rv.clone(),
        stop.clone(),
        move |s| {
            for e in s["endpoints"].as_array().into_iter().flatten() {
                record(
                    &sl,
                    &sp,
                    e["targetRef"]["name"].as_str().unwrap_or(""),
                    e["conditions"]["ready"] == true,
                );
            }
        },
    );
    let (ep, el) = (ep_pending.clone(), ep_lat.clone());
    let t2 = watch_thread(c.clone(), ENDPOINTS, rv.clone(), stop.clone(), move |e| {
        for s in e["subsets"].as_array().into_iter().flatten() {
            for (list, ready) in [("addresses", true), ("notReadyAddresses", false)] {
                for a in s[list].as_array().into_iter().flatten() {
                    record(
                        &el,
                        &ep,
                        a["targetRef"]["name"].as_str().unwrap_or(""),
                        ready,
                    );
                }
            }
        }
    });
    let floor_t0: Arc<Mutex<HashMap<i64, Instant>>> = Arc::default();
    let (ft, fl) = (floor_t0.clone(), floor_lat.clone());
    let t3 = watch_thread(c.clone(), LEASES, rv, stop.clone(), move |l| {
        if l["metadata"]["name"] == "floor-probe" {
            if let Some(seq) = l["spec"]["leaseTransitions"].as_i64() {
                if let Some(t0) = ft.lock().expect("lock").remove(&seq) {
                    fl.lock().expect("lock").push(ms(t0.elapsed()));
                }
            }
        }
    });
    let probe = DynamicObject::from_value(json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "floor-probe", "namespace": "bench"}, "spec": {"leaseTransitions": 0}})).expect("probe");
    let mut probe = c
        .create(&LEASES, Some("bench"), &probe)
        .expect("probe lease");
    let (w0, cpu0, mut peak) = (procs::writes(url), d.cpu(), d.rss());
    let n = (rate * duration.as_secs_f64()).round() as usize;
    let mut rng = fastrand::Rng::with_seed(7);
    let names: Vec<String> = {
        let mut v: Vec<String> = pods.keys().cloned().collect();
        v.sort();
        v
    };
    let start = Instant::now();
    let mut want: HashMap<String, bool> = HashMap::new();
    for k in 0..n {
        let due = start + Duration::from_secs_f64(k as f64 / rate);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let name = names[rng.usize(..names.len())].clone();
        let Some(p) = pods.get_mut(&name) else {
            continue;
        };
        let ready = p.rest["status"]["conditions"][0]["status"] != "True";
        p.rest["status"]["conditions"] = json!([{"type": "Ready", "status": if ready {"True"} else {"False"}, "lastTransitionTime": "2026-01-01T00:00:01Z"}]);
        let t0 = Instant::now();
        slice_pending
            .lock()
            .expect("lock")
            .insert(name.clone(), (ready, t0));
        ep_pending
            .lock()
            .expect("lock")
            .insert(name.clone(), (ready, t0));
        match c.update_status(&PODS, Some("bench"), &*p) {
            Ok(np) => *p = np,
            Err(e) => eprintln!("flip {name}: {e}"),
        }
        want.insert(name, ready);
        if k % 5 == 0 {
            let seq = k as i64 + 1;
            probe.rest["spec"]["leaseTransitions"] = json!(seq);
            floor_t0.lock().expect("lock").insert(seq, Instant::now());
            if let Ok(np) = c.update(&LEASES, Some("bench"), &probe) {
                probe = np;
            }
        }
        peak = peak.max(d.rss());
    }
    let ((ep_w, sl_w), _) = settle(url, Duration::from_millis(1500), Duration::from_secs(120));
    let cpu = d.cpu() - cpu0;
    let steady = d.rss();
    stop.store(true, Ordering::SeqCst);
    c.shutdown_watches();
    for t in [t1, t2, t3] {
        let _ = t.join();
    }
    let mut failures = Vec::new();
    let unreflected =
        slice_pending.lock().expect("lock").len() + ep_pending.lock().expect("lock").len();
    if unreflected > 0 {
        failures.push(format!(
            "{unreflected} flips never observed in slices/Endpoints"
        ));
    }
    let final_ok = final_state_matches(&c, &want);
    if !final_ok {
        failures.push("final slices do not match every pod's last readiness".into());
    }
    let (mut s, mut e, mut f) = (
        slice_lat.lock().expect("l").clone(),
        ep_lat.lock().expect("l").clone(),
        floor_lat.lock().expect("l").clone(),
    );
    let j = json!({"changes": n, "slice_latency_ms": q(&mut s), "endpoints_latency_ms": q(&mut e), "floor_latency_ms": q(&mut f),
        "slice_writes_per_change": (sl_w - w0.1) as f64 / n.max(1) as f64, "endpoints_writes_per_change": (ep_w - w0.0) as f64 / n.max(1) as f64,
        "cpu_ms_per_1000_changes": cpu * 1000.0 / n.max(1) as f64 * 1000.0, "rss_peak_bytes": peak, "rss_steady_bytes": steady, "final_state_exact": final_ok});
    println!("churn: {n} flips at {rate}/s over {} pods: slice p50 {:.2} ms p99 {:.2} ms; Endpoints p50 {:.2} ms p99 {:.2} ms; floor p50 {:.2} ms p99 {:.2} ms",
        size.pods, j["slice_latency_ms"]["p50"].as_f64().unwrap_or(0.0), j["slice_latency_ms"]["p99"].as_f64().unwrap_or(0.0),
        j["endpoints_latency_ms"]["p50"].as_f64().unwrap_or(0.0), j["endpoints_latency_ms"]["p99"].as_f64().unwrap_or(0.0),
        j["floor_latency_ms"]["p50"].as_f64().unwrap_or(0.0), j["floor_latency_ms"]["p99"].as_f64().unwrap_or(0.0));
    println!("churn: writes per change {:.2} slices, {:.2} Endpoints; CPU {:.0} ms per 1,000 changes; RSS peak {:.1} MiB, steady {:.1} MiB",
        j["slice_writes_per_change"].as_f64().unwrap_or(0.0), j["endpoints_writes_per_change"].as_f64().unwrap_or(0.0),
        j["cpu_ms_per_1000_changes"].as_f64().unwrap_or(0.0), peak as f64 / 1048576.0, steady as f64 / 1048576.0);
    (j, failures)
}

/// p50/p90/p99/max and the count of latencies in ms.
pub fn q(v: &mut [f64]) -> Value {
    json!({"p50": percentile(v, 0.5), "p90": percentile(v, 0.9), "p99": percentile(v, 0.99), "max": percentile(v, 1.0), "n": v.len()})
}

fn final_state_matches(c: &Client, want: &HashMap<String, bool>) -> bool {
    let Ok(list) = c.list::<DynamicObject>(&ENDPOINTSLICES, Some("bench"), &ListParams::default())
    else {
        return false;
    };
    let mut seen: HashMap<String, bool> = HashMap::new();
    for s in list.items {
        let v = serde_json::to_value(&s).unwrap_or(Value::Null);
        for e in v["endpoints"].as_array().into_iter().flatten() {
            seen.insert(
                e["targetRef"]["name"].as_str().unwrap_or("").to_string(),
                e["conditions"]["ready"] == true,
            );
        }
    }
    want.iter().all(|(n, r)| seen.get(n) == Some(r))
}

/// 1,000 flips of one 100-pod service's pods within a second, with
/// batch_period 0 s and 1 s.
pub fn burst(dir: &Path) -> RunResult {
    let mut json = Map::new();
    let mut failures = Vec::new();
    for batch in ["0s", "1s"] {
        let d = dir.join(format!("burst-{batch}"));
        std::fs::create_dir_all(&d).expect("dir");
        let size = Size {
            services: 1,
            pods: 100,
            nodes: 3,
        };
        let (_sim, url, kc) = kube_sim(&d, &cluster(size));
        let extra = format!("[endpoints]\nbatch_period = \"{batch}\"\n[endpointslices]\nbatch_period = \"{batch}\"\n");
        let (e, _addr) = endpointd(&d, &kc, "burst", &extra);
        let (w0, _) = settle(&url, Duration::from_millis(1500), Duration::from_secs(60));
        let c = client(&url);
        let list = c
            .list::<DynamicObject>(&PODS, Some("bench"), &ListParams::default())
            .expect("pods");
        let pods: Vec<DynamicObject> = list.items;
        let t = Instant::now();
        std::thread::scope(|s| {
            for (w, chunk) in pods.chunks(25).enumerate() {
                let c = c.clone();
                let mut mine: Vec<DynamicObject> = chunk.to_vec();
                s.spawn(move || {
                    // 250 flips over 24 of the 25 pods: some pods flip an
                    // odd number of times, so the final state differs and
                    // the batched syncs must still write it.
                    for k in 0..250 {
                        let i = k % (mine.len() - 1).max(1);
                        let p = &mut mine[i];
                        let ready = p.rest["status"]["conditions"][0]["status"] != "True";
                        p.rest["status"]["conditions"] =
                            json!([{"type": "Ready", "status": if ready {"True"} else {"False"}}]);
                        if let Ok(np) = c.update_status(&PODS, Some("bench"), &*p) {
                            *p = np;
                        }
                        let _ = w;
                    }
                });
            }
        });
        let burst_s = t.elapsed().as_secs_f64();
        let (w1, _) = settle(&url, Duration::from_millis(2500), Duration::from_secs(60));
        let (ep, sl) = (w1.0 - w0.0, w1.1 - w0.1);
        println!("burst (batch_period {batch}): 1000 flips in {burst_s:.2} s → {sl} slice writes, {ep} Endpoints writes");
        json.insert(
            batch.into(),
            json!({"flips": 1000, "seconds": burst_s, "slice_writes": sl, "endpoints_writes": ep}),
        );
        let bound = 2.0 * burst_s.ceil();
        if batch == "1s" && (sl == 0 || ep == 0 || sl as f64 > bound || ep as f64 > bound) {
            failures.push(format!(
                "burst with batch_period 1s wrote {sl} slices and {ep} Endpoints"
            ));
        }
        e.term();
    }
    RunResult { json, failures }
}
