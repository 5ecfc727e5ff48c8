//! Issue 37 item 1: the leader gave up its lease when its connections went
//! silent (kubernetes#125530's shape: an API server behind a load balancer
//! loses power; its TCP connections are neither answered nor closed, while
//! new connections reach a healthy server). With a 10 s renew deadline the
//! leader exited 11 s after: the renewal waited for the 30 s request
//! timeout. Each Lease request is now bounded at max(1 s,
//! renew_deadline / 2) and a timed-out request is retried on a new
//! connection: the leader keeps its lease.

use crate::harness::controller::*;
use kube_sim::silent_proxy::SilentProxy;
use serde_json::json;
use std::time::{Duration, Instant};

const RENEW_DEADLINE: Duration = Duration::from_secs(4);

#[test]
fn the_leader_keeps_its_lease_when_its_connections_go_silent() {
    let mut c = Cluster::start("silent-conns");
    let mut items = vec![
        node("node-a", "z1"),
        service("default", "web", "web", json!(8080)),
    ];
    items.extend((0..3).map(|i| pod("default", &format!("web-{i}"), "web", &ip(i), true)));
    c.load(items);
    // endpointd talks to kube-sim through the proxy.
    let upstream = c
        .sim
        .url()
        .trim_start_matches("http://")
        .parse()
        .expect("sim address");
    let proxy = SilentProxy::start(upstream).expect("proxy");
    let proxied = c.dir.join("kubeconfig-proxied");
    let yaml = c.sim.kubeconfig_yaml().replace(c.sim.url(), &proxy.url());
    assert!(yaml.contains(&proxy.url()), "{yaml}");
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::File::options()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&proxied)
            .expect("kubeconfig");
        f.write_all(yaml.as_bytes()).expect("kubeconfig");
    }
    c.kubeconfig = proxied;
    // lease_duration > renew_deadline > 1.2 × retry_period; request_timeout
    // stays the default 30 s.
    let mut d = Daemon::start(
        &c,
        "a",
        "[leader_election]\nidentity = \"node-a\"\nlease_duration = \"6s\"\nrenew_deadline = \"4s\"\nretry_period = \"500ms\"\n",
    );
    let limit = Duration::from_secs(30);
    wait_until("node-a leads", limit, || {
        d.http_get("/readyz").map(|(_, b)| b).unwrap_or_default() == "ok: leading\n"
    });
    wait_until("the Endpoints written", limit, || {
        c.get("endpoints", "default", "web").is_some()
    });
    std::thread::sleep(Duration::from_secs(1));
    let silenced = proxy.silence_open();
    assert!(silenced >= 2, "{silenced} connections silenced");
    let silent_at = Instant::now();
    let renew_time = |c: &Cluster| {
        let l = c.get("leases", "kube-system", "endpointd").expect("lease");
        assert_eq!(l["spec"]["holderIdentity"], "node-a", "{l}");
        l["spec"]["renewTime"].as_str().unwrap_or("").to_string()
    };
    let (mut last, mut changed_at) = (renew_time(&c), silent_at);
    let mut worst = Duration::ZERO;
    // Three renew deadlines of silence on every connection open at the
    // start (the watches' included).
    while silent_at.elapsed() < 3 * RENEW_DEADLINE {
        if let Ok(Some(s)) = d.child.try_wait() {
            panic!(
                "endpointd exited ({s}) {:?} after its connections went silent:\n{}",
                silent_at.elapsed(),
                d.log_text()
            );
        }
        let now = renew_time(&c);
        if now != last {
            (last, changed_at) = (now, Instant::now());
        }
        let age = changed_at.elapsed();
        worst = worst.max(age);
        assert!(
            age < RENEW_DEADLINE,
            "renewTime unchanged for {age:?} ({:?} after the silence began):\n{}",
            silent_at.elapsed(),
            d.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!(
        "silent connections: {silenced} silenced, longest gap between renewals seen {worst:?} (renew deadline {RENEW_DEADLINE:?}), {} connections accepted by the proxy",
        proxy.accepted()
    );
    let log = d.log_text();
    assert!(!log.contains("leadership lost"), "{log}");
    assert_eq!(
        d.http_get("/readyz").map(|(_, b)| b).unwrap_or_default(),
        "ok: leading\n"
    );
    assert_eq!(d.stop(), Some(0));
}
