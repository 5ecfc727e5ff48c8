//! Issue 37 item 4: after a write outage (an admission webhook refusing
//! every write with 500 "failed calling webhook") the last of 40 Services
//! was correct only when its per-Service backoff ran out — 15.1 s after a
//! 120 s outage — and every failed retry logged its own line (184–273 a
//! minute). Now one Service is retried every second while many fail so,
//! its first success brings the others in at once, and the failures are
//! logged as one line per 30 s with a count.

use crate::harness::controller::*;
use kube_sim::faults::WriteRefusal;
use serde_json::json;
use std::time::{Duration, Instant};

const SERVICES: usize = 40;
/// Long enough for both controllers' backoffs to pass a few seconds
/// (Endpoints 5 ms · 2ⁿ: next retry about 41 s after the first failure;
/// slices 1 s · 2ⁿ: about 31 s).
const OUTAGE: Duration = Duration::from_secs(25);
/// Convergence after the webhook answers again.
const RECOVERY: Duration = Duration::from_secs(3);
/// Log lines allowed while the outage lasts (both controllers: the first
/// failure of each kind, maybe a count at 30 s).
const MAX_LINES: usize = 12;

const WEBHOOK: &str = "Internal error occurred: failed calling webhook \"validate.example.com\": failed to call webhook: Post \"https://webhook.example.svc:443/validate\": context deadline exceeded";

#[test]
fn writes_resume_within_seconds_of_a_webhook_outage_with_few_log_lines() {
    let c = Cluster::start("write-outage");
    let names: Vec<String> = (0..SERVICES).map(|i| format!("s{i}")).collect();
    let mut items = vec![node("node-a", "zone-a")];
    for (i, n) in names.iter().enumerate() {
        items.push(service("default", n, n, json!(8080)));
        items.push(pod("default", &format!("{n}-p"), n, &ip(i), true));
    }
    c.load(items);
    let d = Daemon::start(&c, "wo", "");
    c.wait_converged(Duration::from_secs(60));
    d.wait_idle("endpoint", SERVICES as f64, Duration::from_secs(30));
    d.wait_idle("endpoint_slice", SERVICES as f64, Duration::from_secs(30));
    for resource in ["endpoints", "endpointslices"] {
        c.sim.faults().refuse_writes(WriteRefusal {
            resource: resource.into(),
            object: None,
            code: 500,
            message: WEBHOOK.into(),
        });
    }
    let lines_before = d.log_text().lines().count();
    // Every Service changes: its pod turns NotReady.
    let pods: Vec<String> = names.iter().map(|n| format!("{n}-p")).collect();
    c.set_ready("default", &pods, false);
    std::thread::sleep(OUTAGE);
    let log = d.log_text();
    let during: Vec<&str> = log.lines().skip(lines_before).collect();
    let refused = c.sim.faults().lift_refusals();
    let back = Instant::now();
    let took = c.wait_converged(Duration::from_secs(120));
    let converged = back.elapsed();
    eprintln!(
        "{refused} writes refused in {OUTAGE:?}; {} log lines during the outage; converged {converged:?} after it ({took:?})",
        during.len()
    );
    assert!(
        converged <= RECOVERY,
        "converged {converged:?} after the outage:\n{}",
        d.log_text()
    );
    assert!(
        during.len() <= MAX_LINES,
        "{} log lines during a {OUTAGE:?} outage:\n{}",
        during.len(),
        during.join("\n")
    );
    assert!(
        during.iter().any(|l| l.contains("failed calling webhook")),
        "the failure is still logged:\n{}",
        during.join("\n")
    );
    assert_eq!(d.stop(), Some(0));
}
