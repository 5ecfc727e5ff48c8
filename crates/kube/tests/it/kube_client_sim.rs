//! The client against kube-sim over loopback HTTP(S): token auth,
//! client-certificate TLS, wrong CA, typed 404/409/422 errors, retries on
//! 503/429 counted by the simulator, paginated LIST, WATCH with bookmarks
//! and 410 after compaction, and our written types accepted by the
//! simulator's validation.

use endpointd_base::clock::{FakeClock, RealClock, SharedClock};
use endpointd_kube::kube::{
    Client, ClientConfig, Error, ListParams, ObjectList, Preconditions, WatchEvent, WatchParams,
    WriteGate, ENDPOINTSLICES, LEASES, PODS, SERVICES,
};
use endpointd_kube::model::{
    AddressType, DynamicObject, Endpoint, EndpointConditions, EndpointSlice, EndpointSlicePort,
    Lease, MicroTime, Object, Pod, Protocol, Service,
};
use kube_sim::requestinfo::Verb;
use kube_sim::server::{SimOptions, SimServer};
use serde_json::json;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn sim(tls: bool, token: Option<&str>) -> SimServer {
    SimServer::start(SimOptions {
        tls,
        token: token.map(str::to_string),
        bookmark_interval: Duration::from_millis(200),
        ..Default::default()
    })
    .expect("kube-sim")
}

fn config(s: &SimServer) -> ClientConfig {
    ClientConfig::from_kubeconfig_str(&s.kubeconfig_yaml(), Path::new("."), None)
        .expect("kubeconfig")
}

fn client(s: &SimServer, clock: SharedClock) -> Client {
    Client::new(config(s), clock, None).expect("client")
}

/// A client of `s` with its config changed by `tweak`.
fn client_with(s: &SimServer, tweak: impl FnOnce(&mut ClientConfig)) -> Client {
    let mut cfg = config(s);
    tweak(&mut cfg);
    Client::new(cfg, RealClock::shared(), None).expect("client")
}

fn pod(name: &str) -> DynamicObject {
    DynamicObject::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x",
                 "ports": [{"name": "http", "containerPort": 8080}]}]},
        "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}],
                   "conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .expect("pod")
}

fn service(name: &str) -> DynamicObject {
    DynamicObject::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]}
    }))
    .expect("service")
}

#[test]
fn token_auth_and_wrong_token() {
    let s = sim(false, Some("t0ken"));
    let c = client(&s, RealClock::shared());
    let l: ObjectList<Pod> = c
        .list(&PODS, Some("default"), &ListParams::default())
        .expect("list with token");
    assert!(l.items.is_empty());
    let bad = client_with(&s, |c| {
        c.auth = endpointd_kube::kube::Auth::Bearer("wrong".into());
    });
    let e = bad
        .list::<Pod>(&PODS, Some("default"), &ListParams::default())
        .expect_err("401");
    assert!(e.is_unauthorized(), "{e}");
    s.stop();
}

#[test]
fn client_certificate_tls_and_wrong_ca() {
    let s = sim(true, None);
    let c = client(&s, RealClock::shared());
    c.create(&PODS, Some("default"), &pod("p1"))
        .expect("create over mTLS");
    let p: Pod = c.get(&PODS, Some("default"), "p1").expect("get over mTLS");
    assert_eq!(p.key(), "default/p1");
    let other = sim(true, None);
    let wrong = client_with(&s, |c| {
        c.tls.ca_pem = other.ca_pem().map(|p| p.as_bytes().to_vec());
        c.max_retries = 0;
    });
    let e = wrong
        .get::<Pod>(&PODS, Some("default"), "p1")
        .expect_err("wrong CA");
    let msg = e.to_string();
    assert!(matches!(e, Error::Transport { .. }), "{e:?}");
    assert!(
        msg.contains(s.url()) && msg.contains("invalid peer certificate"),
        "{msg}"
    );
    other.stop();
    s.stop();
}

#[test]
fn typed_errors_404_409_422() {
    let s = sim(false, None);
    let c = client(&s, RealClock::shared());
    let e = c
        .get::<Service>(&SERVICES, Some("default"), "nope")
        .expect_err("404");
    assert!(e.is_not_found(), "{e}");
    let created = c
        .create(&SERVICES, Some("default"), &service("web"))
        .expect("create");
    let e = c
        .create(&SERVICES, Some("default"), &service("web"))
        .expect_err("dup");
    assert!(e.is_already_exists() && !e.is_conflict(), "{e}");
    let mut changed = created.clone();
    changed.metadata.labels.insert("v", "2");
    let updated = c
        .update(&SERVICES, Some("default"), &changed)
        .expect("update at current rv");
    assert_ne!(updated.resource_version(), created.resource_version());
    let e = c
        .update(&SERVICES, Some("default"), &created)
        .expect_err("stale rv");
    assert!(e.is_conflict(), "{e}");
    let pre = Preconditions {
        uid: Some("not-the-uid".into()),
        resource_version: None,
    };
    let e = c
        .delete(&SERVICES, Some("default"), "web", Some(pre))
        .expect_err("uid precondition");
    assert!(e.is_conflict(), "{e}");
    let mut bad = EndpointSlice::new(AddressType::IPv4);
    bad.metadata.name = "Not_A_DNS_Name".into();
    let e = c
        .create(&ENDPOINTSLICES, Some("default"), &bad)
        .expect_err("422");
    assert!(
        e.is_invalid() && e.status().is_some_and(|st| !st.causes.is_empty()),
        "{e}"
    );
    let pre = Preconditions {
        uid: Some(created.uid().to_string()),
        resource_version: None,
    };
    c.delete(&SERVICES, Some("default"), "web", Some(pre))
        .expect("delete with matching uid");
    s.stop();
}

#[test]
fn written_types_pass_simulator_validation() {
    let s = sim(false, None);
    let c = client(&s, RealClock::shared());
    let mut slice = EndpointSlice::new(AddressType::IPv4);
    slice.metadata.generate_name = "web-".into();
    slice
        .metadata
        .labels
        .insert("kubernetes.io/service-name", "web");
    slice.endpoints.push(Endpoint {
        addresses: vec!["10.0.0.1".into()].into(),
        conditions: EndpointConditions {
            ready: Some(true),
            serving: Some(true),
            terminating: Some(false),
        },
        node_name: Some("n1".into()),
        ..Default::default()
    });
    slice.ports.push(EndpointSlicePort {
        name: Some("http".into()),
        protocol: Some(Protocol::Tcp),
        port: Some(8080),
        app_protocol: None,
    });
    let got = c
        .create(&ENDPOINTSLICES, Some("default"), &slice)
        .expect("create slice");
    assert!(got.name().starts_with("web-") && got.metadata.generation.is_some());
    assert_eq!(got.endpoints, slice.endpoints);
    let mut lease = Lease::default();
    lease.metadata.name = "endpointd".into();
    lease.spec.holder_identity = Some("me".into());
    lease.spec.lease_duration_seconds = Some(15);
    lease.spec.renew_time = Some(MicroTime::from_system(std::time::SystemTime::now()));
    let l = c
        .create(&LEASES, Some("default"), &lease)
        .expect("create lease");
    let wire = |t: Option<MicroTime>| t.map(|t| t.to_string());
    assert_eq!(wire(l.spec.renew_time), wire(lease.spec.renew_time));
    assert_eq!(l.spec.holder_identity.as_deref(), Some("me"));
    s.stop();
}

/// Step a fake clock whenever something sleeps on it, until dropped.
struct Stepper(Arc<AtomicBool>, Option<std::thread::JoinHandle<()>>);

impl Stepper {
    fn start(fake: Arc<FakeClock>) -> Stepper {
        let done = Arc::new(AtomicBool::new(false));
        let d = Arc::clone(&done);
        let h = std::thread::spawn(move || {
            while !d.load(Ordering::SeqCst) {
                if fake.sleepers() > 0 {
                    fake.step(Duration::from_millis(500));
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        Stepper(done, Some(h))
    }
}

impl Drop for Stepper {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
        if let Some(h) = self.1.take() {
            let _ = h.join();
        }
    }
}

#[test]
fn retries_on_503_and_429_are_bounded_and_counted_by_the_sim() {
    let s = sim(false, None);
    let fake = FakeClock::new();
    let _stepper = Stepper::start(fake.clone());
    let c = client(&s, fake.clone());
    s.faults()
        .fail_next(2, Some(Verb::List), Some("pods".into()), 503, Some(2));
    c.list::<Pod>(&PODS, Some("default"), &ListParams::default())
        .expect("list after two 503s");
    assert_eq!(s.requests().get(Verb::List, "pods"), 3);
    assert!(
        fake.elapsed() >= Duration::from_secs(4),
        "Retry-After honoured: {:?}",
        fake.elapsed()
    );
    s.faults()
        .fail_next(10, Some(Verb::List), Some("pods".into()), 503, None);
    let e = c
        .list::<Pod>(&PODS, Some("default"), &ListParams::default())
        .expect_err("gives up");
    assert!(e.is_retryable());
    assert_eq!(
        s.requests().get(Verb::List, "pods"),
        3 + 4,
        "1 attempt + 3 retries"
    );
    s.faults().clear();
    s.faults()
        .fail_next(1, Some(Verb::Create), Some("services".into()), 503, None);
    let e = c
        .create(&SERVICES, Some("default"), &service("a"))
        .expect_err("POST 503 not retried");
    assert_eq!(e.status().map(|st| st.code), Some(503));
    assert_eq!(s.requests().get(Verb::Create, "services"), 1);
    s.faults()
        .fail_next(1, Some(Verb::Create), Some("services".into()), 429, Some(1));
    c.create(&SERVICES, Some("default"), &service("a"))
        .expect("POST retried after 429");
    assert_eq!(s.requests().get(Verb::Create, "services"), 3);
    s.stop();
}

/// A write gate that allows `n` attempts, each granted `within`, then
/// refuses (a leader whose lease lapsed while its write was being retried).
#[derive(Debug)]
struct Allow {
    left: AtomicU32,
    within: Option<Duration>,
}

impl Allow {
    fn new(n: u32, within: Option<Duration>) -> Arc<Allow> {
        Arc::new(Allow {
            left: AtomicU32::new(n),
            within,
        })
    }
}

impl WriteGate for Allow {
    fn time_left(&self) -> Result<Option<Duration>, endpointd_kube::kube::Refusal> {
        match self
            .left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        {
            Ok(_) => Ok(self.within),
            Err(_) => Err("lease lapsed".into()),
        }
    }
}

fn refused(e: &Error) -> bool {
    matches!(e, Error::Refused(m) if m.contains("lease lapsed"))
}

#[test]
fn a_gated_write_is_asked_before_every_attempt_and_bounded_by_it() {
    let s = sim(false, None);
    let c = client(&s, RealClock::shared());
    let svc: DynamicObject = c
        .create(&SERVICES, Some("default"), &service("a"))
        .expect("create");
    let put_503 = || {
        s.faults()
            .fail_next(1, Some(Verb::Update), Some("services".into()), 503, None)
    };
    // The first PUT fails with 503 and the gate closes meanwhile: the
    // retry is never sent, and the caller sees the 503.
    put_503();
    let e = c
        .gated(Allow::new(1, None))
        .update(&SERVICES, Some("default"), &svc)
        .expect_err("not retried");
    assert_eq!(e.status().map(|st| st.code), Some(503), "{e}");
    assert_eq!(s.requests().get(Verb::Update, "services"), 1);
    // The gate grants less than the backoff (200 ms or more): the retry
    // is not waited for.
    put_503();
    let t = std::time::Instant::now();
    let e = c
        .gated(Allow::new(5, Some(Duration::from_millis(50))))
        .update(&SERVICES, Some("default"), &svc)
        .expect_err("not retried");
    assert_eq!(e.status().map(|st| st.code), Some(503), "{e}");
    assert!(
        t.elapsed() < Duration::from_millis(190),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(s.requests().get(Verb::Update, "services"), 2);
    // Closed from the start: nothing is sent, whatever the verb.
    let closed = c.gated(Allow::new(0, None));
    let e = closed
        .create(&SERVICES, Some("default"), &service("b"))
        .expect_err("refused");
    assert!(refused(&e), "{e}");
    let e = closed
        .delete(&SERVICES, Some("default"), "a", None)
        .expect_err("refused");
    assert!(refused(&e), "{e}");
    assert_eq!(s.requests().get(Verb::Create, "services"), 1);
    assert_eq!(s.requests().get(Verb::Delete, "services"), 0);
    // Reads are not gated.
    closed
        .get::<DynamicObject>(&SERVICES, Some("default"), "a")
        .expect("get");
    // The time granted bounds connecting and sending, not the answer: a
    // write sent in time is read to the end however long the server takes
    // (abandoning it would report an applied write as failed).
    s.faults().set_latency(Duration::from_millis(800));
    c.gated(Allow::new(1, Some(Duration::from_millis(200))))
        .update(&SERVICES, Some("default"), &svc)
        .expect("answered after the time granted");
    s.faults().set_latency(Duration::ZERO);
    assert_eq!(s.requests().get(Verb::Update, "services"), 3);
    s.stop();
}

#[test]
fn huge_retry_after_from_the_server_is_capped() {
    // Header and details.retryAfterSeconds of u64::MAX seconds: kept
    // uncapped, the informer's `now + retry_after` overflowed and panicked.
    let s = sim(false, None);
    let c = client_with(&s, |c| {
        c.max_retries = 0;
    });
    s.faults().fail_next(
        1,
        Some(Verb::List),
        Some("pods".into()),
        429,
        Some(u64::MAX),
    );
    let e = c
        .list::<Pod>(&PODS, Some("default"), &ListParams::default())
        .expect_err("429");
    let ra = e.retry_after().expect("retry-after kept");
    assert_eq!(
        ra,
        Duration::from_secs(30),
        "capped at 30 s (client-go's practice)"
    );
    assert!(std::time::Instant::now().checked_add(ra).is_some());
    s.stop();
}

#[test]
fn paginated_list_watch_bookmarks_and_410() {
    let s = sim(false, None);
    let c = client(&s, RealClock::shared());
    for i in 0..5 {
        c.create(&PODS, Some("default"), &pod(&format!("p{i}")))
            .expect("create");
    }
    let mut p = ListParams {
        limit: Some(2),
        ..Default::default()
    };
    let (mut names, mut pages, mut rvs) = (Vec::new(), 0, Vec::new());
    loop {
        let page: ObjectList<Pod> = c.list(&PODS, Some("default"), &p).expect("page");
        pages += 1;
        names.extend(page.items.iter().map(|x| x.name().to_string()));
        rvs.push(page.resource_version);
        match page.continue_token {
            Some(t) => p.continue_token = Some(t),
            None => break,
        }
    }
    assert_eq!((pages, names.len()), (3, 5), "{names:?}");
    rvs.dedup();
    assert_eq!(
        rvs.len(),
        1,
        "every page reports the snapshot's resourceVersion: {rvs:?}"
    );
    let rv = rvs.remove(0);
    let wp = WatchParams {
        resource_version: Some(rv.clone()),
        allow_bookmarks: true,
        timeout_seconds: Some(5),
        ..Default::default()
    };
    let mut w = c.watch::<Pod>(&PODS, Some("default"), &wp).expect("watch");
    c.create(&PODS, Some("default"), &pod("p5"))
        .expect("create p5");
    let mut saw_add = false;
    let mut saw_bookmark = false;
    for ev in w.by_ref() {
        match ev.expect("event") {
            WatchEvent::Added(x) => saw_add |= x.name() == "p5",
            WatchEvent::Bookmark { .. } => saw_bookmark = true,
            other => panic!("unexpected {other:?}"),
        }
        if saw_add && saw_bookmark {
            break;
        }
    }
    assert!(saw_add && saw_bookmark);
    drop(w);
    c.delete(&PODS, Some("default"), "p0", None)
        .expect("delete");
    s.faults().compact();
    let stale = WatchParams {
        resource_version: Some(rv),
        ..Default::default()
    };
    let gone = match c.watch::<Pod>(&PODS, Some("default"), &stale) {
        Err(e) => e.is_gone(),
        Ok(mut w) => matches!(w.next(), Some(Ok(WatchEvent::Error(st))) if st.code == 410),
    };
    assert!(gone, "watch from a compacted resourceVersion gets 410");
    s.stop();
}

#[test]
fn watch_list_ends_initial_events_with_an_annotated_bookmark() {
    let s = sim(false, None);
    let c = client(&s, RealClock::shared());
    for i in 0..3 {
        c.create(&PODS, Some("default"), &pod(&format!("w{i}")))
            .expect("create");
    }
    let wp = WatchParams {
        allow_bookmarks: true,
        send_initial_events: true,
        timeout_seconds: Some(5),
        ..Default::default()
    };
    let mut added = Vec::new();
    for ev in c
        .watch::<Pod>(&PODS, Some("default"), &wp)
        .expect("watch-list")
    {
        match ev.expect("event") {
            WatchEvent::Added(p) => added.push(p.name().to_string()),
            WatchEvent::Bookmark {
                initial_events_end: true,
                resource_version,
            } => {
                assert!(!resource_version.is_empty());
                break;
            }
            WatchEvent::Bookmark { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    added.sort();
    assert_eq!(added, ["w0", "w1", "w2"]);
    s.stop();
}

/// Throughput report (ignored by default; run with `--ignored
/// --nocapture`): 10,000 realistic pods listed in pages of 500 through the
/// client into trimmed `Pod`s.
#[test]
#[ignore]
fn list_10k_pods_report() {
    let items: Vec<serde_json::Value> = (0..10_000)
        .map(|i| {
            let mut v = serde_json::to_value(pod(&format!("p{i:05}"))).expect("pod");
            v["metadata"]["labels"] = json!({"app": "web", "tier": "fe", "version": "v1",
                "team": "payments", "pod-template-hash": "7d4b9c8f6"});
            v
        })
        .collect();
    let s = sim(false, None);
    s.store()
        .load_list(&json!({"apiVersion": "v1", "kind": "List", "items": items}))
        .expect("load");
    let c = client(&s, RealClock::shared());
    let t = std::time::Instant::now();
    let mut p = ListParams {
        limit: Some(500),
        ..Default::default()
    };
    let (mut n, mut pages) = (0, 0);
    loop {
        let page: ObjectList<Pod> = c.list(&PODS, None, &p).expect("page");
        n += page.items.len();
        pages += 1;
        match page.continue_token {
            Some(t) => p.continue_token = Some(t),
            None => break,
        }
    }
    assert_eq!(n, 10_000);
    println!(
        "{{\"pods\":{n},\"pages\":{pages},\"list_ms\":{}}}",
        t.elapsed().as_millis()
    );
    s.stop();
}

#[test]
fn api_connections_have_tcp_keepalive_over_http_and_tls() {
    for tls in [false, true] {
        let s = sim(tls, Some("t0k3n"));
        let c = client(&s, RealClock::shared());
        let _: ObjectList<Pod> = c
            .list(&PODS, Some("default"), &ListParams::default())
            .expect("list");
        let mut w = c
            .watch::<Pod>(
                &PODS,
                Some("default"),
                &WatchParams {
                    allow_bookmarks: true,
                    ..WatchParams::default()
                },
            )
            .expect("watch");
        // The first bookmark proves the watch connection works.
        assert!(matches!(w.next(), Some(Ok(WatchEvent::Bookmark { .. }))));
        let ka = c.socket_keepalive();
        assert!(
            ka.len() >= 2,
            "tls={tls}: a request and a watch connection: {ka:?}"
        );
        for (on, idle) in ka {
            assert!(on, "tls={tls}: keepalive on");
            if cfg!(target_os = "linux") {
                assert_eq!(idle, Duration::from_secs(30), "tls={tls}");
            }
        }
        c.cancel();
        assert!(
            matches!(
                c.list::<Pod>(&PODS, None, &ListParams::default()),
                Err(Error::Shutdown)
            ),
            "tls={tls}: a cancelled client refuses requests"
        );
        s.stop();
    }
}

/// Ten threads sharing one client keep ten connections alive: the idle
/// pool holds every connection the client has in flight (ureq keeps 3 per
/// host unless told; with more callers than that, every answer beyond the
/// third closed its connection and the next request opened a new one — a
/// TCP, and against a real API server a TLS, handshake per request).
#[test]
fn ten_concurrent_callers_reuse_their_connections() {
    let s = sim(false, None);
    let c = client_with(&s, |c| {
        c.qps = 0.0;
    });
    c.create(&SERVICES, Some("default"), &service("web"))
        .expect("create");
    let before = s.connections_accepted();
    let start = Arc::new(std::sync::Barrier::new(10));
    let threads: Vec<_> = (0..10)
        .map(|_| {
            let c = c.clone();
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                start.wait();
                for _ in 0..100 {
                    c.get::<Service>(&SERVICES, Some("default"), "web")
                        .expect("get");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("caller");
    }
    let opened = s.connections_accepted() - before;
    assert!(
        opened <= 10,
        "1,000 GETs from 10 threads opened {opened} connections"
    );
}

/// An idle connection is reused until `idle_connection_timeout` (default
/// 60 s, below kube-apiserver's 90 s), then replaced by a new one.
#[test]
fn idle_connections_are_reused_until_the_idle_timeout() {
    assert_eq!(
        ClientConfig::new("http://x").idle_connection_timeout,
        Duration::from_secs(60)
    );
    let s = sim(false, None);
    let get = |c: &Client| {
        c.get::<Service>(&SERVICES, Some("default"), "web")
            .expect("get")
    };
    let kept = client(&s, RealClock::shared());
    kept.create(&SERVICES, Some("default"), &service("web"))
        .expect("create");
    let short = client_with(&s, |c| {
        c.idle_connection_timeout = Duration::from_millis(300);
    });
    get(&short);
    let before = s.connections_accepted();
    std::thread::sleep(Duration::from_millis(600));
    get(&kept);
    assert_eq!(
        s.connections_accepted(),
        before,
        "idle 0.6 s < 60 s: reused"
    );
    get(&short);
    assert_eq!(
        s.connections_accepted(),
        before + 1,
        "idle 0.6 s > 0.3 s: a new connection"
    );
}

/// Clients built from configs sharing one `link` learn from each other that
/// the server is back: a request that could not reach it marks the link
/// down, any later success (of any of them) counts one return. An answer
/// that is an error (404) is not a transport failure.
#[test]
fn clients_sharing_a_link_see_the_server_come_back() {
    let s = sim(false, None);
    let link = Arc::new(endpointd_kube::kube::Link::default());
    let share = |cfg: &mut ClientConfig| {
        cfg.link = Arc::clone(&link);
        cfg.max_retries = 0;
        cfg.request_timeout = Duration::from_secs(2);
    };
    let (a, b) = (client_with(&s, share), client_with(&s, share));
    assert!(matches!(
        a.get::<Pod>(&PODS, Some("default"), "missing"),
        Err(Error::Api(_))
    ));
    assert_eq!(link.returns(), 0);
    assert!(s.faults().outage(Duration::from_millis(1500)));
    let r = a.list::<Pod>(&PODS, Some("default"), &ListParams::default());
    assert!(matches!(r, Err(Error::Transport { .. })), "{r:?}");
    assert_eq!(link.returns(), 0, "down, not back");
    std::thread::sleep(Duration::from_millis(1700));
    b.list::<Pod>(&PODS, Some("default"), &ListParams::default())
        .expect("the server is back");
    assert_eq!(link.returns(), 1, "B's success ended A's outage");
    assert_eq!(a.link().returns(), 1);
    a.list::<Pod>(&PODS, Some("default"), &ListParams::default())
        .expect("list");
    assert_eq!(link.returns(), 1, "one return per outage");
}
