//! SIGTERM while a controller's write is in flight (issue 17, item 6):
//! the API server holds every request for 10 s; endpointd, mid-write, must
//! still exit within 5 s — the drain gives syncs 1 s, then the client's
//! cancel shuts the request.

use crate::harness::controller as controller_support;

use controller_support::*;
use serde_json::json;
use std::time::{Duration, Instant};

#[test]
fn sigterm_while_a_write_hangs_exits_within_5s() {
    let c = Cluster::start("shutdown-write");
    let pods: Vec<String> = (0..4).map(|i| format!("web-{i}")).collect();
    let mut items = vec![
        node("node-a", "z1"),
        service("default", "web", "web", json!("http")),
    ];
    for (i, p) in pods.iter().enumerate() {
        items.push(pod("default", p, "web", &ip(i), true));
    }
    c.load(items);
    let d = Daemon::start(&c, "shutdown-write", "");
    wait_until("Endpoints written", Duration::from_secs(20), || {
        c.ready_ips("default").len() == 4
    });
    d.wait_idle("endpoint", 1.0, Duration::from_secs(20));

    let writes = c.write_count("endpoints");
    c.sim.faults().set_latency(Duration::from_secs(10));
    // Written straight into the store: the watch delivers it at once, and
    // the Endpoints update it causes is held by the server.
    c.set_ready("default", &pods[..1], false);
    std::thread::sleep(Duration::from_millis(1500));
    let t = Instant::now();
    let code = d.stop();
    let took = t.elapsed();
    c.sim.faults().set_latency(Duration::ZERO);
    eprintln!("SIGTERM mid-write: exited {code:?} after {took:?}");
    assert!(code.is_some(), "still running 15 s after SIGTERM");
    assert!(took < Duration::from_secs(5), "exit took {took:?}");
    assert_eq!(
        c.write_count("endpoints"),
        writes,
        "the held write never completed"
    );
}
