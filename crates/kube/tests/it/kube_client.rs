//! Client transport tests against a tiny in-test HTTP/1.1 server on
//! loopback: streaming LIST and keep-alive, typed Status errors, retries
//! with Retry-After on a fake clock, token auth and 401 re-reads, patch and
//! delete bodies, the shared token bucket, proxy-url, metrics.
//! (Watches: `kube_client_watch.rs`; against kube-sim: `kube_client_sim.rs`.)

use crate::harness::client as kube_client_support;

use endpointd_base::clock::{FakeClock, RealClock};
use endpointd_kube::kube::{
    Client, ClientConfig, Error, ListParams, PatchType, Preconditions, ENDPOINTSLICES, PODS,
    SERVICES,
};
use endpointd_kube::metrics::Registry;
use endpointd_kube::model::{AddressType, EndpointSlice, Object, Pod, Service};
use kube_client_support::{client, json, pod_json, Reply, Server};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

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
    let page: endpointd_kube::kube::ObjectList<Pod> = c.list(&PODS, Some("ns"), &p).expect("list");
    assert_eq!(page.items.len(), 3);
    assert_eq!(page.resource_version, "42");
    assert_eq!(page.continue_token.as_deref(), Some("tok/1"));
    assert_eq!(page.items[1].key(), "ns/p1");
    let p2 = ListParams {
        continue_token: page.continue_token,
        ..p
    };
    let last: endpointd_kube::kube::ObjectList<Pod> =
        c.list(&PODS, Some("ns"), &p2).expect("page 2");
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
            r#"{"kind":"EndpointSlice","metadata":{"name":"s","uid":"u1","resourceVersion":"1"},"addressType":"IPv4","endpoints":[],"ports":[]}"#,
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
    // client-go's labels (code, method, host) and our resource.
    let line = |head: &str, tail: &str| m.lines().any(|l| l.starts_with(head) && l.ends_with(tail));
    assert!(
        line(
            r#"rest_client_requests_total{code="503",method="GET",host="127.0.0.1"#,
            r#"",resource="pods"} 2"#
        ),
        "{m}"
    );
    assert!(
        line(
            r#"rest_client_requests_total{code="429",method="POST",host="127.0.0.1"#,
            r#"",resource="endpointslices.discovery.k8s.io"} 1"#
        ),
        "{m}"
    );
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
    cfg.auth = endpointd_kube::kube::Auth::Bearer("s3cr3t".into());
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
            r#"{"kind":"EndpointSlice","metadata":{"name":"web-s","namespace":"obj-ns","uid":"u1","resourceVersion":"1"},"addressType":"IPv4"}"#,
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

#[test]
fn proxy_url_from_kubeconfig_is_used() {
    let proxy = Server::start(|r, _| match r.method.as_str() {
        "CONNECT" => Reply::Full(200, vec![], String::new()),
        _ => json(200, &pod_json("p", "1")),
    });
    let yaml = format!(
        "current-context: x\nclusters: [{{name: c, cluster: {{server: 'http://kube.invalid:6443', proxy-url: '{}'}}}}]\ncontexts: [{{name: x, context: {{cluster: c}}}}]\n",
        proxy.url
    );
    let cfg =
        ClientConfig::from_kubeconfig_str(&yaml, std::path::Path::new("."), None).expect("cfg");
    let c = Client::new(cfg, RealClock::shared(), None).expect("client");
    let p: Pod = c
        .get(&PODS, Some("ns"), "p")
        .expect("get through the proxy");
    assert_eq!(p.name(), "p");
    let seen: Vec<String> = proxy
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.target))
        .collect();
    // ureq tunnels through the proxy with CONNECT, then sends the request.
    assert_eq!(
        seen,
        [
            "CONNECT kube.invalid:6443",
            "GET /api/v1/namespaces/ns/pods/p"
        ]
    );
}

#[test]
fn list_bodies_over_ten_megabytes_stream_without_a_limit() {
    // 200 pods with a 64 KiB annotation each: a ~13 MB body, past ureq's
    // 10 MB default for buffered reads.
    let big = "x".repeat(64 * 1024);
    let item = format!(
        r#"{{"metadata":{{"name":"p","namespace":"ns","annotations":{{"huge":"{big}"}}}}}}"#
    );
    let body = format!(
        r#"{{"metadata":{{"resourceVersion":"7"}},"items":[{}]}}"#,
        vec![item; 200].join(",")
    );
    assert!(body.len() > 12 * 1024 * 1024);
    let srv = Server::start(move |_, _| json(200, &body));
    let c = client(&srv.url, RealClock::shared(), None);
    let l: endpointd_kube::kube::ObjectList<Pod> = c
        .list(&PODS, None, &ListParams::default())
        .expect("big list");
    assert_eq!(l.items.len(), 200);
    assert!(l.items.iter().all(|p| p.metadata.name == "p"));
}

#[test]
fn large_request_bodies_are_sent_whole_on_one_connection() {
    // Heads and bodies are held until the response is awaited and sent in
    // one write; a body over the 16 KiB coalescing bound goes out in
    // pieces. Both must arrive whole, and keep-alive must still hold.
    let srv = Server::start(|r, _| json(200, &String::from_utf8_lossy(&r.body)));
    let c = client(&srv.url, RealClock::shared(), None);
    for n in [0usize, 100, 16 * 1024 - 300, 40 * 1024, 300 * 1024] {
        let patch = serde_json::json!({"metadata": {"name": "p", "namespace": "ns",
            "resourceVersion": "1", "annotations": {"pad": "x".repeat(n)}}});
        let got: Pod = c
            .patch(&PODS, Some("ns"), "p", PatchType::Merge, &patch)
            .expect("patch");
        assert_eq!(got.key(), "ns/p");
        let reqs = srv.requests();
        let sent: serde_json::Value =
            serde_json::from_slice(&reqs[reqs.len() - 1].body).expect("body");
        assert_eq!(sent, patch, "body of {n} pad bytes arrives whole");
    }
    let conns = srv.conns.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(conns, 1, "keep-alive across every size");
}

#[test]
fn an_oversized_response_head_is_a_clear_error() {
    // Connection buffers are 16 KiB: a response head over the limit fails
    // naming the header size, and ordinary heads still work.
    let srv = Server::start(|r, _| {
        let pad = if r.target.contains("big") {
            40 * 1024
        } else {
            100
        };
        Reply::Full(200, vec![("X-Pad", "p".repeat(pad))], pod_json("p", "1"))
    });
    let c = client(&srv.url, RealClock::shared(), None);
    let ok: Pod = c.get(&PODS, Some("ns"), "small").expect("small head");
    assert_eq!(ok.key(), "ns/p");
    let err = c
        .get::<Pod>(&PODS, Some("ns"), "big")
        .expect_err("a 40 KiB head is refused");
    let msg = err.to_string();
    assert!(msg.contains("header") && msg.contains("big"), "{msg}");
}
