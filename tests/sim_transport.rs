//! Transport-level tests over real sockets: the generic `httpd` server
//! (keep-alive, pipelining, chunked streaming, TLS client certificates,
//! connection controls, limits) and kube-sim's authentication, discovery
//! and `/version`.

use endpointd::clock::{FakeClock, SharedClock};
use endpointd::httpd::{Body, Handler, Request, Response, Server, ServerOptions};
use endpointd::sim::server::{SimOptions, SimServer};
use endpointd::sim::tls::SimPki;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Echoes method, path, peer port and client CN; `/stream` hands out a
/// stream whose sender the test takes from `senders`.
#[derive(Default)]
struct Echo {
    senders: Mutex<Vec<crossbeam_channel::Sender<Vec<u8>>>>,
}

impl Handler for Echo {
    fn handle(&self, req: Request) -> Response {
        if req.path == "/stream" {
            let (tx, rx) = crossbeam_channel::unbounded();
            self.senders.lock().expect("lock").push(tx);
            return Response {
                status: 200,
                headers: vec![],
                body: Body::Stream(rx),
            };
        }
        if req.path == "/big" {
            let body: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
            return Response {
                status: 200,
                headers: vec![],
                body: Body::Full(body),
            };
        }
        Response::text(
            200,
            format!(
                "{} {} {} {} {}",
                req.method,
                req.path,
                req.peer.port(),
                req.client_cn.as_deref().unwrap_or("none"),
                req.body.len()
            ),
        )
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}

fn get_text(a: &ureq::Agent, url: &str) -> Result<(u16, String), ureq::Error> {
    let mut r = a.get(url).call()?;
    let status = r.status().as_u16();
    Ok((status, r.body_mut().read_to_string()?))
}

fn echo_server(opts: ServerOptions) -> (Server, Arc<Echo>) {
    let echo = Arc::new(Echo::default());
    let addr: SocketAddr = ([127, 0, 0, 1], 0).into();
    let s = Server::start_with(addr, None, echo.clone(), opts).expect("start");
    (s, echo)
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn keep_alive_reuses_one_connection() {
    let (s, _) = echo_server(ServerOptions::default());
    let a = agent();
    let url = format!("http://{}/x", s.local_addr());
    let ports: Vec<String> = (0..5)
        .map(|_| {
            let (st, body) = get_text(&a, &url).expect("get");
            assert_eq!(st, 200);
            body.split(' ').nth(2).unwrap_or("").to_string()
        })
        .collect();
    assert!(ports.iter().all(|p| p == &ports[0]), "{ports:?}");
    assert_eq!(s.connections(), 1);
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let (s, _) = echo_server(ServerOptions::default());
    let mut c = TcpStream::connect(s.local_addr()).expect("connect");
    c.write_all(
        b"GET /one HTTP/1.1\r\nHost: x\r\n\r\nPOST /two HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc\
GET /three HTTP/1.1\r\nConnection: close\r\n\r\n",
    )
    .expect("write");
    let mut all = String::new();
    c.read_to_string(&mut all).expect("read until close");
    let bodies: Vec<&str> = all
        .split("HTTP/1.1 200 OK")
        .skip(1)
        .filter_map(|r| r.split("\r\n\r\n").nth(1))
        .collect();
    assert_eq!(bodies.len(), 3, "{all}");
    assert!(bodies[0].starts_with("GET /one"));
    assert!(bodies[1].starts_with("POST /two") && bodies[1].ends_with(" 3"));
    assert!(bodies[2].starts_with("GET /three"));
    assert!(all.contains("Connection: close"));
}

#[test]
fn chunked_stream_arrives_chunk_by_chunk() {
    let (s, echo) = echo_server(ServerOptions::default());
    let a: ureq::Agent = ureq::Agent::config_builder()
        .timeout_per_read(Some(Duration::from_secs(5)))
        .build()
        .into();
    let r = a
        .get(format!("http://{}/stream", s.local_addr()))
        .call()
        .expect("stream");
    assert_eq!(
        r.headers()
            .get("transfer-encoding")
            .and_then(|v| v.to_str().ok()),
        Some("chunked")
    );
    let mut rd = BufReader::new(r.into_body().into_reader());
    let tx = echo.senders.lock().expect("lock").pop().expect("sender");
    // Each event is sent only after the previous one was read: a server
    // that buffered chunks would make this read time out.
    for i in 0..3 {
        tx.send(format!("{{\"n\":{i}}}\n").into_bytes())
            .expect("send");
        let mut line = String::new();
        rd.read_line(&mut line).expect("line");
        assert_eq!(line, format!("{{\"n\":{i}}}\n"));
    }
    drop(tx);
    let mut rest = String::new();
    rd.read_to_string(&mut rest).expect("clean end");
    assert_eq!(rest, "");
}

#[test]
fn stream_producer_sees_client_going_away() {
    let (s, echo) = echo_server(ServerOptions::default());
    let mut c = TcpStream::connect(s.local_addr()).expect("connect");
    c.write_all(b"GET /stream HTTP/1.1\r\n\r\n").expect("write");
    let mut head = [0u8; 64];
    let _ = c.read(&mut head).expect("head");
    wait_until("stream sender", || {
        !echo.senders.lock().expect("l").is_empty()
    });
    let tx = echo.senders.lock().expect("lock").pop().expect("sender");
    drop(c);
    wait_until("send error after disconnect", || {
        tx.send(b"x\n".to_vec()).is_err()
    });
    wait_until("connection deregistered", || s.connections() == 0);
}

#[test]
fn large_bodies_and_head_requests_keep_framing() {
    let (s, _) = echo_server(ServerOptions::default());
    let a = agent();
    let url = format!("http://{}/big", s.local_addr());
    for _ in 0..2 {
        let (st, body) = get_text(&a, &url).expect("big");
        assert_eq!(st, 200);
        assert_eq!(body.len(), 200_000);
        assert!(body.starts_with("abcdefghijklmnopqrstuvwxyza"));
    }
    let r = a.head(&url).call().expect("head");
    assert_eq!(
        r.headers()
            .get("content-length")
            .and_then(|v| v.to_str().ok()),
        Some("200000")
    );
    // The connection is still in sync after HEAD (no body was sent).
    assert_eq!(get_text(&a, &url).expect("after head").1.len(), 200_000);
    assert_eq!(s.connections(), 1);
}

#[test]
fn tls_stream_producer_sees_client_going_away() {
    let pki = SimPki::generate().expect("pki");
    let echo = Arc::new(Echo::default());
    let cfg = pki.server_config().expect("cfg");
    let s = Server::start(([127, 0, 0, 1], 0).into(), Some(cfg), echo.clone()).expect("start");
    let a = tls_agent(&pki, true);
    let url = format!("https://127.0.0.1:{}/stream", s.local_addr().port());
    let r = a.get(&url).call().expect("stream");
    let tx = echo.senders.lock().expect("lock").pop().expect("sender");
    tx.send(b"first\n".to_vec()).expect("send");
    let mut rd = BufReader::new(r.into_body().into_reader());
    let mut line = String::new();
    rd.read_line(&mut line).expect("first line");
    assert_eq!(line, "first\n");
    drop(rd);
    drop(a);
    // Empty messages write nothing, so only the liveness probe can notice.
    wait_until("send error after TLS disconnect", || {
        tx.send(Vec::new()).is_err()
    });
}

#[test]
fn tls_reports_verified_client_cert_cn() {
    let pki = SimPki::generate().expect("pki");
    let echo = Arc::new(Echo::default());
    let cfg = pki.server_config().expect("cfg");
    let s = Server::start(([127, 0, 0, 1], 0).into(), Some(cfg), echo).expect("start");
    let url = format!("https://127.0.0.1:{}/who", s.local_addr().port());
    let cases = [(true, "endpointd"), (false, "none")];
    for (with_cert, want) in cases {
        let a = tls_agent(&pki, with_cert);
        let (st, body) = get_text(&a, &url).expect("tls get");
        assert_eq!(st, 200);
        assert_eq!(body.split(' ').nth(3), Some(want), "{body}");
    }
}

fn tls_agent(pki: &SimPki, with_cert: bool) -> ureq::Agent {
    use ureq::tls::{Certificate, ClientCert, PrivateKey, RootCerts, TlsConfig};
    let ca = Certificate::from_pem(pki.ca.cert_pem.as_bytes()).expect("ca");
    let mut b = TlsConfig::builder()
        .root_certs(RootCerts::new_with_certs(&[ca]))
        .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()));
    if with_cert {
        let cert = Certificate::from_pem(pki.client.cert_pem.as_bytes()).expect("cert");
        let key = PrivateKey::from_pem(pki.client.key_pem.as_bytes()).expect("key");
        b = b.client_cert(Some(ClientCert::new_with_certs(&[cert], key)));
    }
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .tls_config(b.build())
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}

#[test]
fn drop_all_then_refuse_until_deadline() {
    let clock = FakeClock::new();
    let shared: SharedClock = clock.clone();
    let opts = ServerOptions {
        clock: shared.clone(),
        ..ServerOptions::default()
    };
    let (s, _) = echo_server(opts);
    let a = agent();
    let url = format!("http://{}/x", s.local_addr());
    assert_eq!(get_text(&a, &url).expect("before").0, 200);
    assert_eq!(s.connections(), 1);
    let ctl = s.control();
    ctl.refuse_until(shared.now() + Duration::from_secs(10));
    ctl.drop_all_connections();
    wait_until("connections dropped", || s.connections() == 0);
    assert!(ctl.refusing());
    assert!(get_text(&a, &url).is_err(), "new connections are refused");
    clock.step(Duration::from_secs(11));
    assert!(!ctl.refusing());
    assert_eq!(get_text(&a, &url).expect("after").0, 200);
}

#[test]
fn bad_requests_get_400_413_and_close() {
    let opts = ServerOptions {
        max_body: 10,
        ..ServerOptions::default()
    };
    let (s, _) = echo_server(opts);
    let cases: [(&[u8], &str); 2] = [
        (b"GET / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", "413"),
        (b"GET / HTTP/1.1\r\nContent-Length: nope\r\n\r\n", "400"),
    ];
    for (raw, code) in cases {
        let mut c = TcpStream::connect(s.local_addr()).expect("connect");
        c.write_all(raw).expect("write");
        let mut out = String::new();
        c.read_to_string(&mut out).expect("read until close");
        assert!(out.starts_with(&format!("HTTP/1.1 {code} ")), "{out}");
    }
}

#[test]
fn shutdown_ends_open_streams_and_joins() {
    let (s, echo) = echo_server(ServerOptions::default());
    let mut c = TcpStream::connect(s.local_addr()).expect("connect");
    c.write_all(b"GET /stream HTTP/1.1\r\n\r\n").expect("write");
    wait_until("stream open", || {
        !echo.senders.lock().expect("l").is_empty()
    });
    let started = Instant::now();
    s.shutdown();
    assert!(started.elapsed() < Duration::from_secs(3));
    let mut rest = Vec::new();
    c.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let _ = c.read_to_end(&mut rest); // EOF or reset, but not a hang
}

// ---- kube-sim: authentication, discovery, /version ----

fn sim(tls: bool, token: Option<&str>) -> SimServer {
    SimServer::start(SimOptions {
        tls,
        token: token.map(str::to_string),
        ..SimOptions::default()
    })
    .expect("kube-sim")
}

fn get_json(a: &ureq::Agent, url: &str, token: Option<&str>) -> (u16, Value) {
    let mut req = a.get(url);
    if let Some(t) = token {
        req = req.header("Authorization", &format!("Bearer {t}"));
    }
    let mut r = req.call().expect("request");
    let status = r.status().as_u16();
    let text = r.body_mut().read_to_string().expect("body");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[test]
fn token_auth_and_anonymous_public_paths() {
    let s = sim(false, Some("s3cret"));
    let a = agent();
    let cases = [
        ("/api", None, 401),
        ("/api", Some("wrong"), 401),
        ("/api/v1/namespaces/default/pods", Some("wrong"), 401),
        ("/sim/faults", None, 401),
        ("/api", Some("s3cret"), 200),
        ("/version", None, 200),
        ("/healthz", None, 200),
        ("/readyz", Some("wrong"), 200),
    ];
    for (path, token, want) in cases {
        let (st, body) = get_json(&a, &format!("{}{path}", s.url()), token);
        assert_eq!(st, want, "{path} {token:?}");
        if want == 401 {
            assert_eq!(body["kind"], "Status");
            assert_eq!(body["reason"], "Unauthorized");
            assert_eq!(body["code"], 401);
        }
    }
}

#[test]
fn tls_client_cert_or_token_authenticates() {
    let s = sim(true, Some("tok"));
    assert!(s.url().starts_with("https://127.0.0.1:"));
    let pki_like = |with_cert| {
        // Build an agent from the server's own PEMs, as a kubeconfig user would.
        let pki = SimPkiView {
            ca: s.ca_pem().expect("ca").to_string(),
            cert: s.client_cert_pem().expect("cert").to_string(),
            key: s.client_key_pem().expect("key").to_string(),
        };
        pki.agent(with_cert)
    };
    let url = format!("{}/api/v1", s.url());
    assert_eq!(get_json(&pki_like(true), &url, None).0, 200);
    assert_eq!(get_json(&pki_like(false), &url, Some("tok")).0, 200);
    assert_eq!(get_json(&pki_like(false), &url, None).0, 401);
    assert_eq!(get_json(&pki_like(false), &url, Some("bad")).0, 401);
}

struct SimPkiView {
    ca: String,
    cert: String,
    key: String,
}

impl SimPkiView {
    fn agent(&self, with_cert: bool) -> ureq::Agent {
        use ureq::tls::{Certificate, ClientCert, PrivateKey, RootCerts, TlsConfig};
        let ca = Certificate::from_pem(self.ca.as_bytes()).expect("ca");
        let mut b = TlsConfig::builder()
            .root_certs(RootCerts::new_with_certs(&[ca]))
            .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()));
        if with_cert {
            let cert = Certificate::from_pem(self.cert.as_bytes()).expect("cert");
            let key = PrivateKey::from_pem(self.key.as_bytes()).expect("key");
            b = b.client_cert(Some(ClientCert::new_with_certs(&[cert], key)));
        }
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .tls_config(b.build())
            .build()
            .into()
    }
}

#[test]
fn discovery_documents_and_version() {
    let s = sim(false, None);
    let a = agent();
    let get = |p: &str| get_json(&a, &format!("{}{p}", s.url()), None);
    let (st, api) = get("/api");
    assert_eq!((st, api["kind"].as_str()), (200, Some("APIVersions")));
    assert_eq!(api["versions"][0], "v1");
    let (_, apis) = get("/apis");
    assert_eq!(apis["kind"], "APIGroupList");
    assert_eq!(apis["groups"].as_array().map(Vec::len), Some(3));
    let (_, core) = get("/api/v1");
    let names: Vec<&str> = core["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    for want in [
        "pods",
        "pods/status",
        "services/status",
        "endpoints",
        "events",
        "nodes",
    ] {
        assert!(names.contains(&want), "{want} missing: {names:?}");
    }
    let (_, slices) = get("/apis/discovery.k8s.io/v1");
    assert_eq!(slices["groupVersion"], "discovery.k8s.io/v1");
    assert_eq!(slices["resources"][0]["kind"], "EndpointSlice");
    let (st, missing) = get("/apis/apps/v1");
    assert_eq!((st, missing["reason"].as_str()), (404, Some("NotFound")));
    let (st, unknown) = get("/api/v1/namespaces/default/widgets");
    assert_eq!((st, unknown["kind"].as_str()), (404, Some("Status")));
    let (_, v) = get("/version");
    assert_eq!(
        (v["major"].as_str(), v["minor"].as_str()),
        (Some("1"), Some("33"))
    );
    assert_eq!(v["gitVersion"], "v1.33.0-kube-sim");
}

#[test]
fn kubeconfig_is_usable_as_written() {
    let s = sim(true, None);
    let dir = std::env::temp_dir().join(format!("kube-sim-kc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("kubeconfig");
    s.write_kubeconfig(&path).expect("write");
    let text = std::fs::read_to_string(&path).expect("read");
    let _ = std::fs::remove_dir_all(&dir);
    let kc: Value = serde_saphyr::from_str(&text).expect("yaml");
    let server = kc["clusters"][0]["cluster"]["server"]
        .as_str()
        .expect("server");
    assert_eq!(server, s.url());
    let b64 = |k: &str| {
        use base64::Engine as _;
        let v = kc["users"][0]["user"][k]
            .as_str()
            .or_else(|| kc["clusters"][0]["cluster"][k].as_str())
            .expect(k);
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(v)
                .expect("b64"),
        )
        .expect("utf8")
    };
    let view = SimPkiView {
        ca: b64("certificate-authority-data"),
        cert: b64("client-certificate-data"),
        key: b64("client-key-data"),
    };
    assert_eq!(
        get_json(&view.agent(true), &format!("{server}/api"), None).0,
        200
    );
}
