//! Client transport tests against a tiny in-test HTTP/1.1 server on
//! loopback: streaming LIST, watch streams, typed Status errors, retries
//! with Retry-After, token auth, watch shutdown and idle timeouts, metrics.
//! (The same behaviours against kube-sim live in `kube_client_sim.rs`.)

use endpointd::clock::{FakeClock, RealClock, SharedClock};
use endpointd::kube::{
    Client, ClientConfig, Error, ListParams, PatchType, Preconditions, WatchEvent, WatchParams,
    ENDPOINTSLICES, PODS, SERVICES,
};
use endpointd::metrics::Registry;
use endpointd::model::{AddressType, EndpointSlice, Object, Pod, Service};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
struct Recorded {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Recorded {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

enum Reply {
    Full(u16, Vec<(&'static str, String)>, String),
    /// Chunked body: each chunk after its delay; then end, or hang for `hang`.
    Stream(Vec<(Duration, String)>, Option<Duration>),
}

fn json(code: u16, body: &str) -> Reply {
    Reply::Full(code, vec![], body.to_string())
}

type Handler = dyn Fn(&Recorded, usize) -> Reply + Send + Sync;

struct Server {
    url: String,
    log: Arc<Mutex<Vec<Recorded>>>,
    conns: Arc<std::sync::atomic::AtomicUsize>,
}

impl Server {
    fn start(h: impl Fn(&Recorded, usize) -> Reply + Send + Sync + 'static) -> Server {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", l.local_addr().expect("addr"));
        let log = Arc::new(Mutex::new(Vec::new()));
        let conns = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (log2, h): (_, Arc<Handler>) = (Arc::clone(&log), Arc::new(h));
        let conns2 = Arc::clone(&conns);
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                conns2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let (log, h) = (Arc::clone(&log2), Arc::clone(&h));
                std::thread::spawn(move || serve_conn(s, &log, &*h));
            }
        });
        Server { url, log, conns }
    }
    fn requests(&self) -> Vec<Recorded> {
        self.log.lock().expect("log").clone()
    }
}

fn read_request(r: &mut BufReader<TcpStream>) -> Option<Recorded> {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let n = r.read_until(b'\n', &mut head).ok()?;
        if n == 0 {
            return None;
        }
    }
    let mut hs = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut hs);
    req.parse(&head).ok()?;
    let headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_string(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    let mut rec = Recorded {
        method: req.method?.to_string(),
        target: req.path?.to_string(),
        headers,
        body: Vec::new(),
    };
    let len: usize = rec
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    rec.body.resize(len, 0);
    r.read_exact(&mut rec.body).ok()?;
    Some(rec)
}

fn serve_conn(s: TcpStream, log: &Mutex<Vec<Recorded>>, h: &Handler) {
    let mut w = s.try_clone().expect("clone");
    let mut r = BufReader::new(s);
    while let Some(rec) = read_request(&mut r) {
        let n = {
            let mut l = log.lock().expect("log");
            l.push(rec.clone());
            l.len() - 1
        };
        match h(&rec, n) {
            Reply::Full(code, hdrs, body) => {
                let mut out = format!(
                    "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
                    body.len()
                );
                for (k, v) in hdrs {
                    out.push_str(&format!("{k}: {v}\r\n"));
                }
                out.push_str("\r\n");
                out.push_str(&body);
                if w.write_all(out.as_bytes()).is_err() {
                    return;
                }
            }
            Reply::Stream(chunks, hang) => {
                let _ = w.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
                for (delay, c) in chunks {
                    std::thread::sleep(delay);
                    if w.write_all(format!("{:x}\r\n{c}\r\n", c.len()).as_bytes())
                        .is_err()
                    {
                        return;
                    }
                }
                match hang {
                    Some(d) => std::thread::sleep(d),
                    None => {
                        let _ = w.write_all(b"0\r\n\r\n");
                    }
                }
                return;
            }
        }
    }
}

fn client(url: &str, clock: SharedClock, reg: Option<&Registry>) -> Client {
    let mut cfg = ClientConfig::new(url);
    cfg.qps = 0.0;
    Client::new(cfg, clock, reg).expect("client")
}

fn pod_json(name: &str, rv: &str) -> String {
    format!(
        r#"{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}","managedFields":[{{"manager":"x"}}]}},"spec":{{"nodeName":"n1"}},"status":{{"podIPs":[{{"ip":"10.0.0.1"}}]}}}}"#
    )
}

#[test]
fn list_streams_pages_and_sends_query() {
    let srv = Server::start(|r, _| {
        let items: Vec<String> = (0..3).map(|i| pod_json(&format!("p{i}"), "5")).collect();
        let cont = if r.target.contains("continue=") {
            ""
        } else {
            "tok/1"
        };
        json(
            200,
            &format!(
                r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"42","continue":"{cont}"}},"items":[{}]}}"#,
                items.join(",")
            ),
        )
    });
    let c = client(&srv.url, RealClock::shared(), None);
    let p = ListParams {
        label_selector: Some("app=web".into()),
        limit: Some(500),
        ..Default::default()
    };
    let page: endpointd::kube::ObjectList<Pod> = c.list(&PODS, Some("ns"), &p).expect("list");
    assert_eq!(page.items.len(), 3);
    assert_eq!(page.resource_version, "42");
    assert_eq!(page.continue_token.as_deref(), Some("tok/1"));
    assert_eq!(page.items[1].key(), "ns/p1");
    let p2 = ListParams {
        continue_token: page.continue_token,
        ..p
    };
    let last: endpointd::kube::ObjectList<Pod> = c.list(&PODS, Some("ns"), &p2).expect("page 2");
    assert_eq!(last.continue_token, None, "empty continue means last page");
    let conns = srv.conns.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(conns, 1, "keep-alive: both pages on one connection");
    let reqs = srv.requests();
    assert_eq!(
        reqs[0].target,
        "/api/v1/namespaces/ns/pods?labelSelector=app%3Dweb&limit=500"
    );
    assert_eq!(
        reqs[1].target,
        "/api/v1/namespaces/ns/pods?labelSelector=app%3Dweb&limit=500&continue=tok%2F1"
    );
    assert!(reqs[0]
        .header("user-agent")
        .is_some_and(|u| u.starts_with("endpointd/")));
    assert_eq!(reqs[0].header("accept"), Some("application/json"));
}

#[test]
fn typed_api_errors_for_404_409_422() {
    let srv = Server::start(|r, _| match r.method.as_str() {
        "GET" => json(
            404,
            r#"{"kind":"Status","status":"Failure","reason":"NotFound","code":404,"message":"services \"x\" not found"}"#,
        ),
        "PUT" => json(
            409,
            r#"{"kind":"Status","reason":"Conflict","code":409,"message":"the object has been modified"}"#,
        ),
        _ => json(
            422,
            r#"{"kind":"Status","reason":"Invalid","code":422,"message":"bad","details":{"causes":[{"reason":"FieldValueInvalid","message":"must be no more than 63 characters","field":"metadata.name"}]}}"#,
        ),
    });
    let c = client(&srv.url, RealClock::shared(), None);
    let e = c
        .get::<Service>(&SERVICES, Some("ns"), "x")
        .expect_err("404");
    assert!(e.is_not_found(), "{e}");
    let mut s = EndpointSlice::new(AddressType::IPv4);
    s.metadata.name = "s".into();
    s.metadata.resource_version = "3".into();
    let e = c.update(&ENDPOINTSLICES, Some("ns"), &s).expect_err("409");
    assert!(e.is_conflict() && !e.is_already_exists(), "{e}");
    let e = c.create(&ENDPOINTSLICES, Some("ns"), &s).expect_err("422");
    assert!(e.has_cause("FieldValueInvalid"), "{e}");
    assert_eq!(
        e.status().map(|s| s.causes[0].field.as_str()),
        Some("metadata.name")
    );
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 3, "4xx are never retried");
    assert_eq!(
        reqs[1].target,
        "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices/s"
    );
    assert_eq!(reqs[2].method, "POST");
    let sent: serde_json::Value = serde_json::from_slice(&reqs[2].body).expect("body");
    assert_eq!(sent["addressType"], "IPv4");
    assert_eq!(reqs[2].header("content-type"), Some("application/json"));
}

#[test]
fn retries_503_and_429_honouring_retry_after_on_the_clock() {
    // GET: two 503s with Retry-After 2, then success. POST: 503 is not
    // retried (not idempotent) but 429 is (the server did nothing).
    let srv = Server::start(|r, n| match (r.method.as_str(), n) {
        ("GET", 0 | 1) => Reply::Full(
            503,
            vec![("Retry-After", "2".into())],
            r#"{"kind":"Status","code":503,"reason":"ServiceUnavailable"}"#.into(),
        ),
        ("GET", _) => json(200, &pod_json("p", "9")),
        (_, 3) => json(503, r#"{"kind":"Status","code":503}"#),
        (_, 4) => json(
            429,
            r#"{"kind":"Status","code":429,"reason":"TooManyRequests","details":{"retryAfterSeconds":1}}"#,
        ),
        _ => json(
            201,
            r#"{"metadata":{"name":"s","resourceVersion":"1"},"addressType":"IPv4","endpoints":[],"ports":[]}"#,
        ),
    });
    let fake = FakeClock::new();
    let reg = Registry::new();
    let c = client(&srv.url, fake.clone(), Some(&reg));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stepper = {
        let (fake, done) = (fake.clone(), Arc::clone(&done));
        // Advance fake time in 1 s steps whenever the client sleeps on it.
        std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                if fake.sleepers() > 0 {
                    fake.step(Duration::from_secs(1));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let p: Pod = c.get(&PODS, Some("ns"), "p").expect("get after retries");
    assert_eq!(p.resource_version(), "9");
    let slept = fake.elapsed();
    assert!(
        slept >= Duration::from_secs(4) && slept < Duration::from_secs(6),
        "slept Retry-After (2 s) twice: {slept:?}"
    );
    let e = c
        .create(
            &ENDPOINTSLICES,
            Some("ns"),
            &EndpointSlice::new(AddressType::IPv4),
        )
        .expect_err("POST 503");
    assert!(e.is_retryable() && e.status().map(|s| s.code) == Some(503));
    let created: EndpointSlice = c
        .create(
            &ENDPOINTSLICES,
            Some("ns"),
            &EndpointSlice::new(AddressType::IPv4),
        )
        .expect("POST after 429");
    assert_eq!(created.name(), "s");
    assert!(
        fake.elapsed() >= slept + Duration::from_secs(1),
        "429 Retry-After honoured"
    );
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    stepper.join().expect("stepper");
    assert_eq!(srv.requests().len(), 6);
    let m = reg.render();
    assert!(
        m.contains(r#"rest_client_requests_total{verb="get",resource="pods",code="503"} 2"#),
        "{m}"
    );
    assert!(m.contains(r#"rest_client_requests_total{verb="create",resource="endpointslices.discovery.k8s.io",code="429"} 1"#), "{m}");
    assert!(
        m.contains("rest_client_request_duration_seconds_bucket"),
        "{m}"
    );
}

#[test]
fn token_auth_patch_and_delete_with_preconditions() {
    let srv = Server::start(|r, _| match r.method.as_str() {
        "PATCH" => json(200, &pod_json("p", "3")),
        _ => json(200, r#"{"kind":"Status","status":"Success"}"#),
    });
    let mut cfg = ClientConfig::new(&srv.url);
    cfg.auth = endpointd::kube::Auth::Bearer("s3cr3t".into());
    assert!(
        !format!("{cfg:?}").contains("s3cr3t"),
        "Debug redacts the token"
    );
    let c = Client::new(cfg, RealClock::shared(), None).expect("client");
    let _: Pod = c
        .patch(
            &PODS,
            Some("ns"),
            "p",
            PatchType::Merge,
            &serde_json::json!({"metadata": {"labels": {"a": "b"}}}),
        )
        .expect("patch");
    let pre = Preconditions {
        uid: Some("u-1".into()),
        resource_version: None,
    };
    c.delete(&PODS, Some("ns"), "p", Some(pre)).expect("delete");
    let reqs = srv.requests();
    assert!(reqs
        .iter()
        .all(|r| r.header("authorization") == Some("Bearer s3cr3t")));
    assert_eq!(
        reqs[0].header("content-type"),
        Some("application/merge-patch+json")
    );
    assert_eq!(reqs[1].method, "DELETE");
    let body: serde_json::Value = serde_json::from_slice(&reqs[1].body).expect("delete body");
    assert_eq!(body["preconditions"]["uid"], "u-1");
}

fn ev(t: &str, name: &str, rv: &str) -> String {
    format!(r#"{{"type":"{t}","object":{}}}"#, pod_json(name, rv)) + "\n"
}

#[test]
fn watch_streams_events_as_they_arrive_and_ends_cleanly() {
    let srv = Server::start(|_, _| {
        let ms = Duration::from_millis;
        // The event split across two chunks must still decode as one.
        let split = ev("MODIFIED", "a", "6");
        let (x, y) = split.split_at(20);
        Reply::Stream(
            vec![
                (ms(0), ev("ADDED", "a", "5")),
                (ms(50), x.to_string()),
                (ms(50), y.to_string()),
                (ms(0), r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}"#.to_string() + "\n"),
                (ms(0), r#"{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}}"#.to_string() + "\n"),
            ],
            None,
        )
    });
    let c = client(&srv.url, RealClock::shared(), None);
    let p = WatchParams {
        resource_version: Some("4".into()),
        allow_bookmarks: true,
        timeout_seconds: Some(290),
        ..Default::default()
    };
    let evs: Vec<_> = c.watch::<Pod>(&PODS, None, &p).expect("watch").collect();
    assert_eq!(evs.len(), 4, "{evs:?}");
    assert!(matches!(&evs[0], Ok(WatchEvent::Added(p)) if p.resource_version() == "5"));
    assert!(matches!(&evs[1], Ok(WatchEvent::Modified(p)) if p.resource_version() == "6"));
    assert!(
        matches!(&evs[2], Ok(WatchEvent::Bookmark { resource_version, initial_events_end: false }) if resource_version == "9")
    );
    assert!(matches!(&evs[3], Ok(WatchEvent::Error(s)) if s.code == 410));
    assert_eq!(
        srv.requests()[0].target,
        "/api/v1/pods?watch=true&resourceVersion=4&timeoutSeconds=290&allowWatchBookmarks=true"
    );
}

#[test]
fn watch_start_failure_is_a_typed_error() {
    let srv = Server::start(|_, _| {
        json(
            410,
            r#"{"kind":"Status","code":410,"reason":"Expired","message":"too old resource version"}"#,
        )
    });
    let c = client(&srv.url, RealClock::shared(), None);
    let e = c
        .watch::<Pod>(&PODS, Some("ns"), &WatchParams::default())
        .expect_err("410");
    assert!(e.is_gone(), "{e}");
    assert_eq!(
        srv.requests().len(),
        1,
        "watches are never retried by the client"
    );
}

#[test]
fn shutdown_watches_wakes_a_blocked_read_but_writes_still_work() {
    let srv = Server::start(|r, _| match r.target.contains("watch=true") {
        true => Reply::Stream(
            vec![(Duration::ZERO, ev("ADDED", "a", "5"))],
            Some(Duration::from_secs(20)),
        ),
        false => json(200, &pod_json("p", "1")),
    });
    let c = client(&srv.url, RealClock::shared(), None);
    let mut w = c
        .watch::<Pod>(&PODS, None, &WatchParams::default())
        .expect("watch");
    assert!(matches!(w.next(), Some(Ok(WatchEvent::Added(_)))));
    let c2 = c.clone();
    let t0 = Instant::now();
    let h = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        c2.shutdown_watches();
    });
    let next = w.next();
    assert!(matches!(next, Some(Err(Error::Shutdown))), "{next:?}");
    assert!(t0.elapsed() < Duration::from_secs(5));
    h.join().expect("shutdown thread");
    assert!(matches!(
        c.watch::<Pod>(&PODS, None, &WatchParams::default()),
        Err(Error::Shutdown)
    ));
    let _: Pod = c
        .get(&PODS, Some("ns"), "p")
        .expect("ordinary requests still work");
}

#[test]
fn connection_refused_names_the_server() {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", l.local_addr().expect("addr"));
    drop(l);
    let mut cfg = ClientConfig::new(&url);
    cfg.max_retries = 0;
    let c = Client::new(cfg, RealClock::shared(), None).expect("client");
    let e = c.get::<Pod>(&PODS, Some("ns"), "p").expect_err("refused");
    assert!(
        matches!(&e, Error::Transport { server, .. } if *server == url),
        "{e}"
    );
    assert!(e.is_retryable());
}

#[test]
fn silent_watch_hits_the_idle_read_timeout() {
    let srv = Server::start(|_, _| {
        Reply::Stream(
            vec![(Duration::ZERO, ev("ADDED", "a", "5"))],
            Some(Duration::from_secs(10)),
        )
    });
    let mut cfg = ClientConfig::new(&srv.url);
    cfg.watch_idle_margin = Duration::from_millis(300);
    let c = Client::new(cfg, RealClock::shared(), None).expect("client");
    let p = WatchParams {
        timeout_seconds: Some(1),
        ..Default::default()
    };
    let t0 = Instant::now();
    let evs: Vec<_> = c.watch::<Pod>(&PODS, None, &p).expect("watch").collect();
    let took = t0.elapsed();
    assert_eq!(evs.len(), 2, "{evs:?}");
    assert!(
        matches!(&evs[1], Err(Error::Transport { timeout: true, .. })),
        "{:?}",
        evs[1]
    );
    assert!(
        took >= Duration::from_millis(1200) && took < Duration::from_secs(5),
        "{took:?}"
    );
}

#[test]
fn unauthorized_rereads_the_token_file_and_retries_once() {
    let dir = std::env::temp_dir().join(format!("endpointd-kc-401-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let tok = dir.join("token");
    std::fs::write(&tok, "old").expect("token");
    let srv = Server::start(|r, _| match r.header("authorization") {
        Some("Bearer new") => json(200, &pod_json("p", "1")),
        _ => json(
            401,
            r#"{"kind":"Status","code":401,"reason":"Unauthorized"}"#,
        ),
    });
    let yaml = format!(
        "current-context: x\nclusters: [{{name: c, cluster: {{server: '{}'}}}}]\nusers: [{{name: u, user: {{tokenFile: token}}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\n",
        srv.url
    );
    let cfg = ClientConfig::from_kubeconfig_str(&yaml, &dir, None).expect("cfg");
    let c = Client::new(cfg, RealClock::shared(), None).expect("client");
    let e = c.get::<Pod>(&PODS, Some("ns"), "p").expect_err("old token");
    assert!(e.is_unauthorized(), "{e}");
    assert_eq!(srv.requests().len(), 2, "one re-read and retry after 401");
    std::fs::write(&tok, "new\n").expect("rotate");
    let p: Pod = c.get(&PODS, Some("ns"), "p").expect("rotated token");
    assert_eq!(p.name(), "p");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn empty_names_are_refused_locally_and_namespace_defaults_to_the_object() {
    let srv = Server::start(|_, _| {
        json(
            200,
            r#"{"metadata":{"name":"s","namespace":"obj-ns"},"addressType":"IPv4"}"#,
        )
    });
    let c = client(&srv.url, RealClock::shared(), None);
    let unnamed = EndpointSlice::new(AddressType::IPv4);
    let e = c
        .update(&ENDPOINTSLICES, Some("ns"), &unnamed)
        .expect_err("empty name");
    assert!(
        matches!(e, Error::InvalidRequest(_)) && !e.is_retryable(),
        "{e}"
    );
    assert!(matches!(
        c.get::<Pod>(&PODS, Some("ns"), ""),
        Err(Error::InvalidRequest(_))
    ));
    assert!(matches!(
        c.delete(&PODS, Some("ns"), "", None),
        Err(Error::InvalidRequest(_))
    ));
    assert!(srv.requests().is_empty(), "nothing was sent");
    let mut s = EndpointSlice::new(AddressType::IPv4);
    s.metadata.namespace = "obj-ns".into();
    s.metadata.generate_name = "web-".into();
    c.create(&ENDPOINTSLICES, None, &s).expect("create");
    assert_eq!(
        srv.requests()[0].target,
        "/apis/discovery.k8s.io/v1/namespaces/obj-ns/endpointslices"
    );
}

#[test]
fn clones_share_one_token_bucket() {
    let srv = Server::start(|_, _| json(200, &pod_json("p", "1")));
    let fake = FakeClock::new();
    let mut cfg = ClientConfig::new(&srv.url);
    cfg.qps = 1.0;
    cfg.burst = 2;
    let a = Client::new(cfg, fake.clone(), None).expect("client");
    let b = a.clone();
    let _: Pod = a.get(&PODS, Some("ns"), "p").expect("burst 1");
    let _: Pod = b.get(&PODS, Some("ns"), "p").expect("burst 2");
    let h = std::thread::spawn(move || b.get::<Pod>(&PODS, Some("ns"), "p").map(|_| ()));
    assert!(
        fake.wait_for_sleepers(1, Duration::from_secs(5)),
        "third request waits for a token"
    );
    assert_eq!(srv.requests().len(), 2);
    fake.step(Duration::from_secs(1));
    h.join()
        .expect("thread")
        .expect("third request after refill");
    assert_eq!(srv.requests().len(), 3);
}
