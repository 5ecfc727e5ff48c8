//! Issue 37 item 1 (client side): connections that go silent — an API
//! server behind a load balancer loses power; its TCP connections are
//! neither answered nor closed, while new connections reach a healthy
//! server (kubernetes#125530). A request stuck on one must be abandoned at
//! its own bound and retried on a *new* connection, not on the next
//! silent one from the pool; a write must not wait for the whole
//! request timeout.

use endpointd_base::clock::RealClock;
use endpointd_kube::kube::{Client, ClientConfig, LEASES};
use endpointd_kube::model::{Lease, MicroTime};
use kube_sim::server::{SimOptions, SimServer};
use kube_sim::silent_proxy::SilentProxy;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// kube-sim, a silencing proxy in front of it, and a client through the
/// proxy whose config `tweak` changes.
fn setup(tweak: impl FnOnce(&mut ClientConfig)) -> (SimServer, SilentProxy, Client) {
    let sim = SimServer::start(SimOptions::default()).expect("kube-sim");
    let upstream = sim
        .url()
        .trim_start_matches("http://")
        .parse()
        .expect("sim address");
    let proxy = SilentProxy::start(upstream).expect("proxy");
    let mut cfg = ClientConfig::from_kubeconfig_str(&sim.kubeconfig_yaml(), Path::new("."), None)
        .expect("kubeconfig");
    cfg.server = proxy.url();
    tweak(&mut cfg);
    let c = Client::new(cfg, RealClock::shared(), None).expect("client");
    (sim, proxy, c)
}

fn lease() -> Lease {
    let mut l = Lease::default();
    l.metadata.name = "endpointd".into();
    l.metadata.namespace = "kube-system".into();
    l.spec.holder_identity = Some("node-a".into());
    l.spec.lease_duration_seconds = Some(15);
    l.spec.renew_time = Some(MicroTime::from_system(std::time::SystemTime::now()));
    l
}

/// Fill the client's pool with several idle connections (4 GETs at once,
/// each held 300 ms by the server), then silence them all; the Lease as
/// read before.
fn pool_then_silence(sim: &SimServer, proxy: &SilentProxy, c: &Client) -> Lease {
    c.create(&LEASES, Some("kube-system"), &lease())
        .expect("create lease");
    sim.faults().set_latency(Duration::from_millis(300));
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                c.get::<Lease>(&LEASES, Some("kube-system"), "endpointd")
                    .expect("get")
            });
        }
    });
    sim.faults().set_latency(Duration::ZERO);
    let l = c
        .get::<Lease>(&LEASES, Some("kube-system"), "endpointd")
        .expect("get");
    let silenced = proxy.silence_open();
    assert!(silenced >= 4, "{silenced} connections silenced");
    l
}

/// `f` on a thread: its result and how long it took, or a panic after
/// `limit`.
fn timed<T: Send + 'static>(
    what: &str,
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> (T, Duration) {
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => (v, start.elapsed()),
        Err(_) => panic!("{what}: no answer within {limit:?}"),
    }
}

#[test]
fn a_request_timed_out_on_a_silent_connection_is_retried_on_a_new_one() {
    // The lease client's bound: max(1 s, renew_deadline / 2) with a 3 s
    // renew deadline.
    let bound = Duration::from_millis(1500);
    let (sim, proxy, c) = setup(|cfg| cfg.request_timeout = bound);
    pool_then_silence(&sim, &proxy, &c);
    let before = proxy.accepted();
    let (got, took) = timed(
        "GET after the silence",
        Duration::from_secs(10),
        move || c.get::<Lease>(&LEASES, Some("kube-system"), "endpointd"),
    );
    got.expect("the GET gets through on a new connection");
    eprintln!("silent connections: GET answered after {took:?} (bound {bound:?})");
    // One attempt times out at the bound, the retry (after 0.2–0.4 s) goes
    // on a new connection; before, every retry took another silent one
    // from the pool and the GET failed after 4 × 1.5 s.
    assert!(
        took < bound + Duration::from_millis(1200),
        "answered after {took:?}"
    );
    assert!(proxy.accepted() > before, "a new connection was opened");
}

#[test]
fn a_write_on_a_silent_connection_does_not_wait_for_the_request_timeout() {
    // request_timeout as the daemon's default (30 s); the write bound is
    // the client's default write timeout (10 s).
    let (sim, proxy, c) = setup(|cfg| cfg.request_timeout = Duration::from_secs(30));
    let mut l = pool_then_silence(&sim, &proxy, &c);
    let (got, took) = timed(
        "PUT after the silence",
        Duration::from_secs(16),
        move || {
            l.spec.holder_identity = Some("node-b".into());
            c.update(&LEASES, Some("kube-system"), &l)
        },
    );
    let written = got.expect("the write gets through on a new connection");
    eprintln!("silent connections: PUT answered after {took:?}");
    assert_eq!(written.spec.holder_identity.as_deref(), Some("node-b"));
    assert!(
        took < Duration::from_secs(11),
        "written after {took:?} (one write timeout of waiting at most)"
    );
}
