//! Issue 37 item 10: slices outlived their Service. Creating and deleting
//! Services at ~54 per second, endpointd sometimes created a placeholder
//! slice just after its Service was deleted (271 in 32,000 cycles), which
//! also counted as a foreign write. The slice controller now looks at the
//! Service in its cache again right before each create and skips the
//! create once the Service is gone (or is another one).
//!
//! Deterministic form: a Service whose 6 endpoints go into 6 slices
//! (`max_endpoints_per_slice = 1`), each create held 300 ms by the server;
//! the Service is deleted once the first slice is stored. Only the create
//! already in flight may land after the delete.

use crate::harness::controller::*;
use serde_json::json;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

#[test]
fn no_slice_is_created_after_its_service_is_deleted() {
    let c = Cluster::start("slices-outlive-service");
    let pods: Vec<String> = (0..6).map(|i| format!("p{i}")).collect();
    let mut items = vec![node("node-a", "zone-a")];
    items.extend(
        pods.iter()
            .enumerate()
            .map(|(i, n)| pod("default", n, "web", &ip(i), true)),
    );
    c.load(items);
    let d = Daemon::start(
        &c,
        "sos",
        "[endpoints]\nenabled = false\n[endpointslices]\nmax_endpoints_per_slice = 1\n",
    );
    wait_until("endpointd ready", LIMIT, || {
        d.http_get("/readyz").is_some_and(|(code, _)| code == 200)
    });
    let creates = || -> Vec<u64> {
        c.writes("endpointslices")
            .iter()
            .filter(|w| w.verb == "create" && w.user_agent.starts_with("endpointd"))
            .map(|w| w.resource_version)
            .collect()
    };
    c.sim.faults().set_latency(Duration::from_millis(300));
    c.load(vec![service("default", "web", "web", json!(8080))]);
    wait_until("the first slice stored", LIMIT, || !creates().is_empty());
    c.delete("services", "default", &["web".to_string()]);
    let deleted_at = c.sim.store().current_rv();
    // Long enough for the other five creates (300 ms each) to be sent.
    std::thread::sleep(Duration::from_secs(3));
    c.sim.faults().set_latency(Duration::ZERO);
    let all = creates();
    let after: Vec<u64> = all.iter().copied().filter(|rv| *rv > deleted_at).collect();
    assert!(
        after.len() <= 1,
        "{} slice creates after the Service's deletion (rv {deleted_at}), of {}: {after:?}",
        after.len(),
        all.len()
    );
    assert_eq!(d.stop(), Some(0));
}
