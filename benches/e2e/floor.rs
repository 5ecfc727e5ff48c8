//! Floors measured with the objects endpointd actually wrote, on a kube-sim
//! of their own (no endpointd there, so nothing else reacts to them):
//!
//! - **CPU floor of a change**: one thread doing, per readiness flip, only
//!   what any client of this API must do for it — receive and decode the
//!   pod's watch event, PUT one EndpointSlice and one Endpoints (typed,
//!   through `kube::Client` as endpointd does, the response read for its
//!   metadata), receive and decode the two echoes — with no controller
//!   logic, no queue and no thread hand-off. Its own CPU time (user +
//!   system, `RUSAGE_THREAD`) per 1,000 flips is what the protocol alone
//!   costs a client on this machine; endpointd's CPU per 1,000 changes is
//!   judged against it.
//! - **Cold-start floor with the same objects**: every slice and Endpoints
//!   endpointd wrote at cold start, POSTed by a bare client with
//!   endpointd's concurrency (its 5 + 5 workers). The floor (the
//!   same number of small Leases, 10 threads) stays the target's floor; this
//!   one shows how much of the gap is the objects' own size.
//!
//! Must never touch the main run's kube-sim except to read from it.

use super::churn::client;
use super::procs::{cluster, kube_sim, Size};
use endpointd_kube::kube::{
    Client, ListParams, WatchEvent, WatchParams, ENDPOINTS, ENDPOINTSLICES, PODS,
};
use endpointd_kube::model::{DynamicObject, EndpointSlice, Endpoints, ObjectMeta, Pod};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// The server-set metadata cleared, so the object can be created anew.
fn fresh(m: &mut ObjectMeta) {
    // The owner (the Service) has another uid in the floor's kube-sim: a
    // reference to the first one names an absent owner, and the collector
    // would delete the copy.
    m.owner_references = Default::default();
    m.uid = Default::default();
    m.resource_version = Default::default();
    m.generation = None;
    m.creation_timestamp = Default::default();
    m.extra = None;
}

/// This thread's CPU time so far: (user, system).
fn thread_cpu() -> (Duration, Duration) {
    // SAFETY: getrusage fills the zeroed struct it is given; no pointers kept.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_THREAD is Linux's per-thread usage.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    (tv(u.ru_utime), tv(u.ru_stime))
}

/// The next ADDED/MODIFIED object on a watch (bookmarks skipped).
fn next_object<T, I>(w: &mut I) -> Option<T>
where
    I: Iterator<Item = Result<WatchEvent<T>, endpointd_kube::kube::Error>>,
{
    for ev in w.by_ref() {
        match ev {
            Ok(WatchEvent::Added(o) | WatchEvent::Modified(o)) => return Some(o),
            Ok(WatchEvent::Bookmark { .. }) => continue,
            _ => return None,
        }
    }
    None
}

/// CPU milliseconds per 1,000 flips of the protocol alone (see the module
/// doc), user and system, over `rounds` flips after 50 of warm-up; `None`
/// if it could not run.
pub fn cpu_floor(dir: &Path, main_url: &str, rounds: usize) -> Option<(f64, f64)> {
    let main = client(main_url);
    let sel = ListParams {
        label_selector: Some("kubernetes.io/service-name=s-0".into()),
        ..ListParams::default()
    };
    let mut slice = main
        .list::<EndpointSlice>(&ENDPOINTSLICES, Some("bench"), &sel)
        .ok()?
        .items
        .into_iter()
        .next()?;
    let mut eps = main
        .get::<Endpoints>(&ENDPOINTS, Some("bench"), "s-0")
        .ok()?;
    if slice.endpoints.is_empty() || eps.subsets.is_empty() {
        return None;
    }
    fresh(&mut slice.metadata);
    fresh(&mut eps.metadata);

    let d = dir.join("cpu-floor");
    std::fs::create_dir_all(&d).ok()?;
    let (_sim, url, _kc) = kube_sim(
        &d,
        &cluster(Size {
            services: 1,
            pods: 10,
            nodes: 1,
        }),
    );
    let c = client(&url);
    slice.metadata.resource_version = c
        .create_meta(&ENDPOINTSLICES, Some("bench"), &slice)
        .ok()?
        .metadata
        .resource_version;
    let m = c
        .create_meta(&ENDPOINTS, Some("bench"), &eps)
        .ok()?
        .metadata;
    eps.metadata.resource_version = m.resource_version.clone();
    let wp = WatchParams {
        resource_version: Some(m.resource_version.to_string()),
        // Bounded: a lost event ends the floor instead of hanging the bench.
        timeout_seconds: Some(120),
        ..WatchParams::default()
    };
    let mut pods_w = c.watch::<Pod>(&PODS, Some("bench"), &wp).ok()?;
    let mut slices_w = c
        .watch::<EndpointSlice>(&ENDPOINTSLICES, Some("bench"), &wp)
        .ok()?;
    let mut eps_w = c.watch::<Endpoints>(&ENDPOINTS, Some("bench"), &wp).ok()?;

    // The load generator flips one pod per round, in lockstep with the
    // measured thread (its own work is not measured).
    let (go_tx, go_rx) = crossbeam_channel::bounded::<usize>(1);
    let gen_client: Client = client(&url);
    let generator = std::thread::spawn(move || {
        let mut pods: Vec<DynamicObject> = (0..10)
            .filter_map(|i| {
                gen_client
                    .get::<DynamicObject>(&PODS, Some("bench"), &format!("p-{i}"))
                    .ok()
            })
            .collect();
        for k in go_rx {
            let n = pods.len().max(1);
            let Some(p) = pods.get_mut(k % n) else {
                return;
            };
            let ready = p.rest["status"]["conditions"][0]["status"] != "True";
            p.rest["status"]["conditions"] = json!([{"type": "Ready",
                "status": if ready {"True"} else {"False"},
                "lastTransitionTime": "2026-01-01T00:00:01Z"}]);
            if let Ok(np) = gen_client.update_status(&PODS, Some("bench"), &*p) {
                *p = np;
            }
        }
    });

    // One flip: the pod event in, both writes, both echoes in; `None` when
    // any step failed (the floor is then not reported).
    let mut round = |k: usize| -> Option<()> {
        go_tx.send(k).ok()?;
        next_object(&mut pods_w)?;
        let n = slice.endpoints.len();
        let cond = &mut slice.endpoints[k % n].conditions;
        cond.ready = Some(!cond.ready.unwrap_or(true));
        cond.serving = cond.ready;
        let m = c.update_meta(&ENDPOINTSLICES, Some("bench"), &slice).ok()?;
        slice.metadata.resource_version = m.metadata.resource_version;
        let s = &mut eps.subsets[0];
        if k.is_multiple_of(2) && !s.addresses.is_empty() {
            let a = s.addresses.remove(0);
            s.not_ready_addresses.push(a);
        } else if !s.not_ready_addresses.is_empty() {
            let a = s.not_ready_addresses.remove(0);
            s.addresses.push(a);
        }
        let m = c.update_meta(&ENDPOINTS, Some("bench"), &eps).ok()?;
        eps.metadata.resource_version = m.metadata.resource_version;
        next_object(&mut slices_w)?;
        next_object(&mut eps_w)?;
        Some(())
    };
    let warm = 50;
    let ok = (0..warm).all(|k| round(k).is_some());
    let t0 = thread_cpu();
    let ok = ok && (warm..warm + rounds).all(|k| round(k).is_some());
    let (u1, s1) = thread_cpu();
    let per =
        |a: Duration, b: Duration| a.saturating_sub(b).as_secs_f64() * 1e6 / rounds.max(1) as f64;
    let cpu = (per(u1, t0.0), per(s1, t0.1));
    drop(go_tx);
    let _ = generator.join();
    c.shutdown_watches();
    ok.then_some(cpu)
}

/// Every slice and Endpoints the main run holds, POSTed into a kube-sim of
/// their own by `threads` bare writers; the time it took.
pub fn cold_floor_same_objects(dir: &Path, main_url: &str, threads: usize) -> Option<Duration> {
    let main = client(main_url);
    let all = ListParams::default();
    let mut slices = main
        .list::<EndpointSlice>(&ENDPOINTSLICES, Some("bench"), &all)
        .ok()?
        .items;
    let mut eps = main
        .list::<Endpoints>(&ENDPOINTS, Some("bench"), &all)
        .ok()?
        .items;
    slices.iter_mut().for_each(|s| fresh(&mut s.metadata));
    eps.iter_mut().for_each(|e| fresh(&mut e.metadata));
    let d = dir.join("cold-floor");
    std::fs::create_dir_all(&d).ok()?;
    let (_sim, url, _kc) = kube_sim(
        &d,
        &cluster(Size {
            services: 0,
            pods: 0,
            nodes: 0,
        }),
    );
    // (`cluster` always holds the namespace.)
    let c = client(&url);
    let (slices, eps) = (&slices, &eps);
    let t = Instant::now();
    std::thread::scope(|s| {
        for w in 0..threads {
            let c = c.clone();
            s.spawn(move || {
                // Half the writers POST Endpoints, half slices, as
                // endpointd's two controllers do.
                let half = (threads / 2).max(1);
                if w < half {
                    for e in eps.iter().skip(w).step_by(half) {
                        let _ = c.create_meta(&ENDPOINTS, Some("bench"), e);
                    }
                } else {
                    let k = (threads - half).max(1);
                    for sl in slices.iter().skip(w - half).step_by(k) {
                        let _ = c.create_meta(&ENDPOINTSLICES, Some("bench"), sl);
                    }
                }
            });
        }
    });
    Some(t.elapsed())
}
