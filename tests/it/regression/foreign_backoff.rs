//! Issue 37 item 3: another writer of an Endpoints was answered write for
//! write (a client rewriting it every 50 ms got 1,098 corrections in
//! 60 s), its slices once a second. Corrections of one object now back
//! off: a few at once, then 1 s doubling up to a minute while the other
//! writer keeps going; the object is still corrected once it stops.

use crate::harness::controller::*;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(30);
/// How long the other writer fights.
const FIGHT: Duration = Duration::from_secs(15);
/// Our corrections of each object allowed during the fight: three at
/// once, then 1 + 2 + 4 + 8 s of backoff fit in 15 s (plus slack for
/// corrections in flight).
const MAX_CORRECTIONS: usize = 10;

#[test]
fn a_second_writer_is_corrected_with_backoff_not_write_for_write() {
    let pods: Vec<String> = (1..=3).map(|i| format!("w{i}")).collect();
    let c = Cluster::with_web("foreign-backoff", &pods);
    let d = Daemon::start(&c, "fb", "");
    let slice = || c.web_slice(3);
    wait_until("the slice and the Endpoints written", LIMIT, || {
        slice().is_some() && c.get("endpoints", "default", "web").is_some()
    });
    d.wait_idle("endpoint_slice", 1.0, LIMIT);
    d.wait_idle("endpoint", 1.0, LIMIT);
    let name = slice()
        .and_then(|s| s["metadata"]["name"].as_str().map(String::from))
        .expect("slice name");
    let ours = |resource: &str, obj: &str| {
        c.writes(resource)
            .iter()
            .filter(|w| w.name == obj && w.user_agent.contains("endpointd"))
            .count()
    };
    let before = (ours("endpoints", "web"), ours("endpointslices", &name));
    let edits = AtomicUsize::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            let start = Instant::now();
            let mut n = 0u64;
            while start.elapsed() < FIGHT {
                n += 1;
                c.modify("endpoints", "default", &["web".to_string()], |v| {
                    v["metadata"]["labels"]["foreign"] = json!(n.to_string())
                });
                c.modify(
                    "endpointslices",
                    "default",
                    std::slice::from_ref(&name),
                    |v| {
                        v["metadata"]["labels"]["foreign"] = json!(n.to_string());
                        let g = v["metadata"]["generation"].as_i64().unwrap_or(1);
                        v["metadata"]["generation"] = json!(g + 1);
                    },
                );
                edits.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        });
    });
    let fought = (
        ours("endpoints", "web") - before.0,
        ours("endpointslices", &name) - before.1,
    );
    eprintln!(
        "{} foreign edits of each in {FIGHT:?}: {} Endpoints corrections, {} slice corrections",
        edits.load(Ordering::Relaxed),
        fought.0,
        fought.1
    );
    let log = d.log_text();
    assert!(
        fought.0 <= MAX_CORRECTIONS,
        "{} Endpoints corrections in {FIGHT:?}:\n{log}",
        fought.0
    );
    assert!(
        fought.1 <= MAX_CORRECTIONS,
        "{} slice corrections in {FIGHT:?}:\n{log}",
        fought.1
    );
    assert!(
        fought.0 >= 1 && fought.1 >= 1,
        "still corrected: {fought:?}"
    );
    // Once the writer stops, the last edits are corrected (within the
    // backoff reached, 16 s here).
    let stray = |v: Option<serde_json::Value>| {
        v.is_some_and(|v| v["metadata"]["labels"].get("foreign").is_some())
    };
    wait_until(
        "both objects corrected after the fight",
        Duration::from_secs(40),
        || {
            !stray(c.get("endpoints", "default", "web"))
                && !stray(c.get("endpointslices", "default", &name))
        },
    );
    assert_eq!(d.stop(), Some(0));
}
