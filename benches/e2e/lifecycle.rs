//! Lifecycle churn on the converged cluster: pods added and deleted across
//! the Services, one Service scaled up by 10 pods and down again, and a
//! rolling restart of another (each pod replaced by a new one, the new one
//! first). Reports add → written and delete → written latencies, writes
//! per change, and checks that every Service's slices and Endpoints end
//! holding exactly its pods.
//!
//! A delete is taken as written when an event of a slice (or the
//! Endpoints) of the pod's Service no longer lists it: at the bench's
//! sizes (≤ 100 pods a Service) each Service has one slice.

use super::churn::{client, ms, q, watch_thread};
use super::procs::{self, percentile, pod, settle, Proc, Size};
use endpointd_kube::kube::{Client, ListParams, ENDPOINTS, ENDPOINTSLICES, PODS};
use endpointd_kube::model::{DynamicObject, Object};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One change the load generator makes.
#[derive(Clone, Debug)]
enum Op {
    /// Create pod `i` for Service `svc`.
    Add { i: usize, svc: usize },
    /// Delete the pod named so.
    Delete { name: String, svc: usize },
}

/// Pending changes: pod name → (service, added?, when).
type Pending = Arc<Mutex<HashMap<String, (usize, bool, Instant)>>>;

/// The changes, in order: `n` of them over the live `pods` (name →
/// service), new pods numbered from `next`.
fn plan(n: usize, size: &Size, pods: &BTreeMap<String, usize>, next: usize) -> Vec<Op> {
    let mut rng = fastrand::Rng::with_seed(11);
    let mut live: BTreeMap<String, usize> = pods.clone();
    let mut next = next;
    let mut ops = Vec::new();
    let services = size.services.max(2);
    // Scale Service 0 up by 10 at once, down again halfway.
    let scaled: Vec<usize> = (0..10).map(|k| next + k).collect();
    next += 10;
    for &i in &scaled {
        ops.push(Op::Add { i, svc: 0 });
        live.insert(format!("p-{i}"), 0);
    }
    // Rolling restart of Service 1: replacements interleaved below.
    let mut rolling: Vec<String> = live
        .iter()
        .filter(|(_, s)| **s == 1)
        .map(|(n, _)| n.clone())
        .collect();
    while ops.len() < n {
        if ops.len() == n / 2 {
            for &i in &scaled {
                ops.push(Op::Delete {
                    name: format!("p-{i}"),
                    svc: 0,
                });
                live.remove(&format!("p-{i}"));
            }
            continue;
        }
        match ops.len() % 4 {
            0 if !rolling.is_empty() => {
                let old = rolling.remove(0);
                ops.push(Op::Add { i: next, svc: 1 });
                live.insert(format!("p-{next}"), 1);
                next += 1;
                ops.push(Op::Delete {
                    name: old.clone(),
                    svc: 1,
                });
                live.remove(&old);
            }
            1 | 3 => {
                let svc = 2 + rng.usize(..services.saturating_sub(2).max(1));
                let svc = svc.min(size.services.saturating_sub(1));
                ops.push(Op::Add { i: next, svc });
                live.insert(format!("p-{next}"), svc);
                next += 1;
            }
            _ => {
                let candidates: Vec<(&String, &usize)> =
                    live.iter().filter(|(_, s)| **s >= 2).collect();
                if candidates.is_empty() {
                    continue;
                }
                let (name, svc) = candidates[rng.usize(..candidates.len())];
                let (name, svc) = (name.clone(), *svc);
                ops.push(Op::Delete {
                    name: name.clone(),
                    svc,
                });
                live.remove(&name);
            }
        }
    }
    ops
}

/// Record the pending changes of Service `svc` that an object listing
/// `listed` shows written: an added pod listed, a deleted one gone. The
/// latencies go to `adds` or `deletes`.
fn observe(
    pending: &Pending,
    adds: &Mutex<Vec<f64>>,
    deletes: &Mutex<Vec<f64>>,
    svc: usize,
    listed: &[String],
) {
    let mut p = pending.lock().expect("lock");
    let done: Vec<String> = p
        .iter()
        .filter(|(name, (s, added, _))| *s == svc && listed.contains(name) == *added)
        .map(|(name, _)| name.clone())
        .collect();
    for name in done {
        if let Some((_, added, t0)) = p.remove(&name) {
            let to = if added { adds } else { deletes };
            to.lock().expect("lock").push(ms(t0.elapsed()));
        }
    }
}

fn service_index(v: &Value, label: bool) -> Option<usize> {
    let name = match label {
        true => v["metadata"]["labels"]["kubernetes.io/service-name"].as_str()?,
        false => v["metadata"]["name"].as_str()?,
    };
    name.strip_prefix("s-")?.parse().ok()
}

/// Every Service's slices and Endpoints hold exactly its pods (ready ones
/// ready), no endpoint twice.
fn exact(c: &Client) -> Result<(), String> {
    let list = |r| {
        c.list::<DynamicObject>(r, Some("bench"), &ListParams::default())
            .map(|l| l.items)
            .map_err(|e| e.to_string())
    };
    let mut want: BTreeMap<String, bool> = BTreeMap::new();
    for p in list(&PODS)? {
        let v = serde_json::to_value(&p).unwrap_or(Value::Null);
        let ready = v["status"]["conditions"][0]["status"] == "True";
        want.insert(p.name().to_string(), ready);
    }
    let mut slices: BTreeMap<String, bool> = BTreeMap::new();
    for s in list(&ENDPOINTSLICES)? {
        let v = serde_json::to_value(&s).unwrap_or(Value::Null);
        for e in v["endpoints"].as_array().into_iter().flatten() {
            let name = e["targetRef"]["name"].as_str().unwrap_or("").to_string();
            if slices
                .insert(name.clone(), e["conditions"]["ready"] == true)
                .is_some()
            {
                return Err(format!("{name} is in two slices"));
            }
        }
    }
    let mut eps: BTreeMap<String, bool> = BTreeMap::new();
    for e in list(&ENDPOINTS)? {
        let v = serde_json::to_value(&e).unwrap_or(Value::Null);
        for s in v["subsets"].as_array().into_iter().flatten() {
            for (key, ready) in [("addresses", true), ("notReadyAddresses", false)] {
                for a in s[key].as_array().into_iter().flatten() {
                    let name = a["targetRef"]["name"].as_str().unwrap_or("").to_string();
                    eps.insert(name, ready);
                }
            }
        }
    }
    if slices != want {
        return Err("the slices do not hold exactly the pods".into());
    }
    if eps != want {
        return Err("the Endpoints do not hold exactly the pods".into());
    }
    Ok(())
}

/// Run the lifecycle phase at `rate` changes/s for `duration`.
pub fn lifecycle(
    url: &str,
    d: &Proc,
    size: &Size,
    rate: f64,
    duration: Duration,
) -> (Value, Vec<String>) {
    let c = client(url);
    let list = c
        .list::<DynamicObject>(&PODS, Some("bench"), &ListParams::default())
        .expect("pods");
    let rv = list.resource_version.clone();
    let pods: BTreeMap<String, usize> = list
        .items
        .iter()
        .filter_map(|p| {
            let v = serde_json::to_value(p).ok()?;
            let svc = v["metadata"]["labels"]["app"]
                .as_str()?
                .strip_prefix("s-")?;
            Some((p.name().to_string(), svc.parse().ok()?))
        })
        .collect();
    let n = (rate * duration.as_secs_f64()).round().max(40.0) as usize;
    let ops = plan(n, size, &pods, size.pods + 1_000_000);
    let (slice_pending, ep_pending): (Pending, Pending) = (Arc::default(), Arc::default());
    let lat: [Arc<Mutex<Vec<f64>>>; 4] = Default::default();
    let stop = Arc::new(AtomicBool::new(false));
    let (sp, sa, sd) = (slice_pending.clone(), lat[0].clone(), lat[1].clone());
    let t1 = watch_thread(
        c.clone(),
        ENDPOINTSLICES,
        rv.clone(),
        stop.clone(),
        move |s| {
            let Some(svc) = service_index(s, true) else {
                return;
            };
            let listed: Vec<String> = s["endpoints"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e["targetRef"]["name"].as_str().map(str::to_string))
                .collect();
            observe(&sp, &sa, &sd, svc, &listed);
        },
    );
    let (ep, ea, ed) = (ep_pending.clone(), lat[2].clone(), lat[3].clone());
    let t2 = watch_thread(c.clone(), ENDPOINTS, rv, stop.clone(), move |e| {
        let Some(svc) = service_index(e, false) else {
            return;
        };
        let listed: Vec<String> = e["subsets"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|s| {
                let a = s["addresses"].as_array().cloned().unwrap_or_default();
                let b = s["notReadyAddresses"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                a.into_iter().chain(b)
            })
            .filter_map(|a| a["targetRef"]["name"].as_str().map(str::to_string))
            .collect();
        observe(&ep, &ea, &ed, svc, &listed);
    });
    let (w0, cpu0) = (procs::writes(url), d.cpu());
    let start = Instant::now();
    let (mut adds, mut deletes) = (0usize, 0usize);
    for (k, op) in ops.iter().enumerate() {
        let due = start + Duration::from_secs_f64(k as f64 / rate);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let (name, svc, added) = match op {
            Op::Add { i, svc } => (format!("p-{i}"), *svc, true),
            Op::Delete { name, svc } => (name.clone(), *svc, false),
        };
        let t0 = Instant::now();
        for p in [&slice_pending, &ep_pending] {
            p.lock()
                .expect("lock")
                .insert(name.clone(), (svc, added, t0));
        }
        let r = match op {
            Op::Add { i, svc } => DynamicObject::from_value(pod(*i, *svc, size.nodes.max(1), true))
                .map_err(|e| e.to_string())
                .and_then(|o| {
                    c.create(&PODS, Some("bench"), &o)
                        .map_err(|e| e.to_string())
                })
                .map(|_| adds += 1),
            Op::Delete { name, .. } => c
                .delete(&PODS, Some("bench"), name, None)
                .map(|_| deletes += 1)
                .map_err(|e| e.to_string()),
        };
        if let Err(e) = r {
            eprintln!("lifecycle {name}: {e}");
            for p in [&slice_pending, &ep_pending] {
                p.lock().expect("lock").remove(&name);
            }
        }
    }
    let ((ep_w, sl_w), _) = settle(url, Duration::from_millis(1500), Duration::from_secs(120));
    let cpu = d.cpu() - cpu0;
    stop.store(true, Ordering::SeqCst);
    c.shutdown_watches();
    for t in [t1, t2] {
        let _ = t.join();
    }
    let changes = adds + deletes;
    let mut failures = Vec::new();
    let unobserved =
        slice_pending.lock().expect("lock").len() + ep_pending.lock().expect("lock").len();
    if unobserved > 0 {
        failures.push(format!("lifecycle: {unobserved} changes never observed"));
    }
    if let Err(e) = exact(&c) {
        failures.push(format!("lifecycle: {e}"));
    }
    let mut l: Vec<Vec<f64>> = lat.iter().map(|m| m.lock().expect("l").clone()).collect();
    let j = json!({"changes": changes, "adds": adds, "deletes": deletes,
        "slice_add_latency_ms": q(&mut l[0]), "slice_delete_latency_ms": q(&mut l[1]),
        "endpoints_add_latency_ms": q(&mut l[2]), "endpoints_delete_latency_ms": q(&mut l[3]),
        "slice_writes_per_change": (sl_w - w0.1) as f64 / changes.max(1) as f64,
        "endpoints_writes_per_change": (ep_w - w0.0) as f64 / changes.max(1) as f64,
        "cpu_ms_per_1000_changes": cpu * 1_000_000.0 / changes.max(1) as f64,
        "final_state_exact": failures.is_empty()});
    println!("lifecycle: {adds} adds + {deletes} deletes (scale up/down 10, a rolling restart) at {rate}/s: slice add p50 {:.2} ms p99 {:.2} ms, delete p50 {:.2} ms p99 {:.2} ms; writes per change {:.2} slices, {:.2} Endpoints; CPU {:.0} ms per 1,000 changes",
        percentile(&mut l[0], 0.5), percentile(&mut l[0], 0.99), percentile(&mut l[1], 0.5), percentile(&mut l[1], 0.99),
        j["slice_writes_per_change"].as_f64().unwrap_or(0.0), j["endpoints_writes_per_change"].as_f64().unwrap_or(0.0),
        j["cpu_ms_per_1000_changes"].as_f64().unwrap_or(0.0));
    (j, failures)
}
