//! Shadow mode end to end: `endpointd run --shadow` against kube-sim holding
//! objects written as kube-controller-manager writes them. Agreement gives
//! zero differences; each deliberate divergence is reported once; a
//! difference fixed later leaves `/shadow`; nothing is ever written.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::harness::process as process_support;
use process_support::{Reaped, SpawnReaped};
use std::time::{Duration, Instant};

use kube_sim::resources::lookup;
use kube_sim::server::{SimOptions, SimServer};
use kube_sim::store::Key;
use serde_json::{json, Value};
use std::io::Read;

/// The body of a GET, whatever its status (the harness's `http_get`).
use crate::harness::controller::free_port;

fn http_get(addr: &str, path: &str) -> Option<String> {
    crate::harness::controller::http_get(addr, path).map(|(_, body)| body)
}

fn pod(name: &str, app: &str, ip: &str, ready: bool) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app},
                     "uid": format!("uid-{name}")},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "img",
                 "ports": [{"name": "http", "containerPort": 8080}]}]},
        "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                   "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}})
}

fn service(name: &str, extra: Value) -> Value {
    let mut s = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "default", "labels": {"team": "edge"}},
        "spec": {"selector": {"app": name}, "clusterIP": format!("10.96.0.{}", name.len()),
                 "ipFamilies": ["IPv4"],
                 "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]}});
    if let (Some(spec), Value::Object(extra)) = (s["spec"].as_object_mut(), extra) {
        spec.extend(extra);
    }
    s
}

/// An address with its pod's targetRef as kube-controller-manager writes it
/// (uid, and a resourceVersion of its own).
fn addr(ip: &str, pod: &str) -> Value {
    json!({"ip": ip, "nodeName": "n1",
           "targetRef": {"kind": "Pod", "namespace": "default", "name": pod,
                         "uid": format!("uid-{pod}"), "resourceVersion": "12345"}})
}

/// Endpoints as kube-controller-manager writes them (the Service's labels;
/// a KCM older than 1.33 adds no managed-by label): upstream's
/// `RepackSubsets` sorts each subset's addresses by IP, then uid; its
/// subset and port order come from hashes of Go structs (not reproducible,
/// and compared as sets).
fn endpoints(name: &str, ready: &[(&str, &str)], not_ready: &[(&str, &str)], port: i32) -> Value {
    let sorted = |v: &[(&str, &str)]| {
        let mut v = v.to_vec();
        v.sort_by_key(|(ip, _)| ip.parse::<std::net::Ipv4Addr>().ok());
        v.iter().map(|(ip, p)| addr(ip, p)).collect::<Vec<_>>()
    };
    json!({"apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": name, "namespace": "default", "labels": {"team": "edge"}},
        "subsets": [{
            "addresses": sorted(ready),
            "notReadyAddresses": sorted(not_ready),
            "ports": [{"name": "http", "port": port, "protocol": "TCP"}]}]})
}

fn ep(ip: &str, pod: &str, ready: bool, hint: bool) -> Value {
    let mut e = json!({"addresses": [ip], "nodeName": "n1", "zone": "z1",
        "conditions": {"ready": ready, "serving": ready, "terminating": false},
        "targetRef": {"kind": "Pod", "namespace": "default", "name": pod, "uid": format!("uid-{pod}")}});
    if hint {
        e["hints"] = json!({"forZones": [{"name": "z1"}]});
    }
    e
}

/// A slice as kube-controller-manager names and labels it.
fn slice(svc: &str, endpoints: Vec<Value>) -> Value {
    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": format!("{svc}-kcm01"), "namespace": "default",
                     "labels": {"kubernetes.io/service-name": svc, "team": "edge",
                                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]})
}

fn setup() -> (SimServer, PathBuf, String) {
    let sim = SimServer::start(SimOptions::default()).expect("kube-sim");
    let items = vec![
        json!({"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z1"}},
               "status": {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"cpu": "2"}}}),
        // web: everything as endpointd would write it (in KCM's order).
        service("web", json!({})),
        pod("web-a", "web", "10.0.0.1", true),
        pod("web-b", "web", "10.0.0.2", true),
        pod("web-c", "web", "10.0.0.3", false),
        endpoints(
            "web",
            &[("10.0.0.1", "web-a"), ("10.0.0.2", "web-b")],
            &[("10.0.0.3", "web-c")],
            8080,
        ),
        slice(
            "web",
            vec![
                ep("10.0.0.3", "web-c", false, false),
                ep("10.0.0.2", "web-b", true, false),
                ep("10.0.0.1", "web-a", true, false),
            ],
        ),
        // multi: two ports; kube-controller-manager's ports in another order.
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "multi", "namespace": "default"},
            "spec": {"selector": {"app": "multi"}, "clusterIP": "10.96.0.50", "ipFamilies": ["IPv4"],
                     "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"},
                               {"name": "metrics", "port": 9090, "targetPort": 9090, "protocol": "TCP"}]}}),
        pod("multi-a", "multi", "10.0.2.1", true),
        pod("multi-b", "multi", "10.0.2.2", true),
        json!({"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": "multi", "namespace": "default"},
            "subsets": [{
                "addresses": [addr("10.0.2.1", "multi-a"), addr("10.0.2.2", "multi-b")],
                "ports": [{"name": "metrics", "port": 9090, "protocol": "TCP"},
                          {"name": "http", "port": 8080, "protocol": "TCP"}]}]}),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "multi-kcm01", "namespace": "default",
                         "labels": {"kubernetes.io/service-name": "multi",
                                    "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
            "addressType": "IPv4",
            "endpoints": [ep("10.0.2.2", "multi-b", true, false), ep("10.0.2.1", "multi-a", true, false)],
            "ports": [{"name": "metrics", "port": 9090, "protocol": "TCP"},
                      {"name": "http", "port": 8080, "protocol": "TCP"}]}),
        // api: a missing pod, a stale port and a stale label in the
        // Endpoints, a wrong condition and a missing hint in the slice
        // (PreferClose).
        service("api", json!({"trafficDistribution": "PreferClose"})),
        pod("api-a", "api", "10.0.1.1", true),
        pod("api-b", "api", "10.0.1.2", true),
        pod("api-c", "api", "10.0.1.3", false),
        {
            let mut e = endpoints(
                "api",
                &[("10.0.1.1", "api-a")],
                &[("10.0.1.3", "api-c")],
                8081,
            );
            e["metadata"]["labels"]["team"] = json!("core");
            e
        },
        slice(
            "api",
            vec![
                ep("10.0.1.1", "api-a", true, false),
                ep("10.0.1.2", "api-b", true, true),
                ep("10.0.1.3", "api-c", true, false),
            ],
        ),
    ];
    sim.store()
        .load_list(&json!({"apiVersion": "v1", "kind": "List", "items": items}))
        .expect("load");
    let dir = std::env::temp_dir().join(format!("endpointd-shadow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let kc = dir.join("kubeconfig");
    sim.write_kubeconfig(&kc).expect("kubeconfig");
    let addr = format!("127.0.0.1:{}", free_port());
    let cfg = dir.join("c.toml");
    std::fs::write(
        &cfg,
        format!(
            "[kubernetes]\nkubeconfig = {:?}\n[server]\nlisten = \"{addr}\"\n",
            kc.display().to_string()
        ),
    )
    .expect("config");
    (sim, cfg, addr)
}

/// `endpointd run` with shadow mode from the config key (`--shadow` only
/// sets the same key).
fn spawn(cfg: &PathBuf) -> Reaped {
    let text = std::fs::read_to_string(cfg).expect("config");
    std::fs::write(cfg, format!("{text}[mode]\nshadow = true\n")).expect("config");
    Command::new(env!("CARGO_BIN_EXE_endpointd"))
        .args(["run", "--config"])
        .arg(cfg)
        .env_remove("NOTIFY_SOCKET")
        .env("RUST_LOG", "warn")
        .stderr(Stdio::piped())
        .spawn_reaped()
        .expect("endpointd run --shadow")
}

fn differences(addr: &str) -> Vec<Value> {
    http_get(addr, "/shadow")
        .and_then(|b| serde_json::from_str::<Value>(&b).ok())
        .and_then(|v| v["differences"].as_array().cloned())
        .unwrap_or_default()
}

fn counter(addr: &str, kind: &str) -> u64 {
    let m = http_get(addr, "/metrics").unwrap_or_default();
    let prefix = format!("endpointd_shadow_differences_total{{kind=\"{kind}\"}} ");
    m.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn kinds_of(diffs: &[Value], service: &str) -> Vec<String> {
    let mut v: Vec<String> = diffs
        .iter()
        .filter(|d| d["service"] == service)
        .map(|d| d["kind"].as_str().unwrap_or("").to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn shadow_mode_reports_each_divergence_once_and_writes_nothing() {
    let (sim, cfg, addr) = setup();
    let mut child = spawn(&cfg);
    let want = [
        "endpoints_addresses",
        "endpoints_labels",
        "endpoints_ports",
        "slice_conditions",
        "slice_hints",
    ];
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut diffs = Vec::new();
    while Instant::now() < deadline {
        diffs = differences(&addr);
        if kinds_of(&diffs, "default/api") == want {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(kinds_of(&diffs, "default/api"), want, "{diffs:#?}");
    for agreeing in ["default/web", "default/multi"] {
        assert_eq!(
            kinds_of(&diffs, agreeing),
            Vec::<String>::new(),
            "{diffs:#?}"
        );
    }
    let detail = |kind: &str| {
        diffs
            .iter()
            .find(|d| d["kind"] == kind)
            .and_then(|d| d["detail"].as_str())
            .unwrap_or("")
            .to_string()
    };
    assert!(
        detail("endpoints_addresses").contains("missing 10.0.1.2 (api-b)"),
        "{diffs:#?}"
    );
    assert!(
        detail("endpoints_ports").contains("http:8081/TCP stored, want http:8080/TCP"),
        "{diffs:#?}"
    );
    assert_eq!(
        detail("endpoints_labels"),
        "labels: team=core stored, want team=edge",
        "{diffs:#?}"
    );
    assert!(
        detail("slice_conditions").contains("10.0.1.3 (api-c)"),
        "{diffs:#?}"
    );
    assert!(
        detail("slice_hints").contains("10.0.1.1 (api-a)"),
        "{diffs:#?}"
    );

    // A resync (a pod label change) does not report them again.
    let key = Key::new(lookup("", "v1", "pods").expect("pods"), "default", "api-a");
    sim.store().txn(|t| {
        let mut v = t.get(&key).expect("pod").value();
        v["metadata"]["labels"]["touched"] = json!("1");
        t.put(&key, "update", v);
    });
    std::thread::sleep(Duration::from_secs(2));
    for k in want {
        assert_eq!(counter(&addr, k), 1, "{k} counted once");
    }

    // kube-controller-manager fixes the Endpoints: those differences leave.
    let ep_key = Key::new(
        lookup("", "v1", "endpoints").expect("endpoints"),
        "default",
        "api",
    );
    let fixed = endpoints(
        "api",
        &[("10.0.1.1", "api-a"), ("10.0.1.2", "api-b")],
        &[("10.0.1.3", "api-c")],
        8080,
    );
    sim.store().txn(|t| {
        let mut v = t.get(&ep_key).expect("endpoints").value();
        v["subsets"] = fixed["subsets"].clone();
        v["metadata"]["labels"] = fixed["metadata"]["labels"].clone();
        t.put(&ep_key, "update", v);
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline
        && kinds_of(&differences(&addr), "default/api") != ["slice_conditions", "slice_hints"]
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        kinds_of(&differences(&addr), "default/api"),
        ["slice_conditions", "slice_hints"]
    );

    // A Service created now: listed as missing its objects until the
    // other controller has created them, then no longer (an Endpoints
    // created, not updated, syncs its Service too).
    sim.store()
        .load_list(&json!({"apiVersion": "v1", "kind": "List", "items": [
            service("late", json!({})),
            pod("late-a", "late", "10.0.3.1", true),
        ]}))
        .expect("load late");
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline
        && !kinds_of(&differences(&addr), "default/late").contains(&"endpoints_missing".to_string())
    {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        kinds_of(&differences(&addr), "default/late").contains(&"endpoints_missing".to_string()),
        "{:#?}",
        differences(&addr)
    );
    sim.store()
        .load_list(&json!({"apiVersion": "v1", "kind": "List", "items": [
            endpoints("late", &[("10.0.3.1", "late-a")], &[], 8080),
            slice("late", vec![ep("10.0.3.1", "late-a", true, false)]),
        ]}))
        .expect("load late's objects");
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline && !kinds_of(&differences(&addr), "default/late").is_empty() {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        kinds_of(&differences(&addr), "default/late"),
        Vec::<String>::new(),
        "{:#?}",
        differences(&addr)
    );
    let _ = child.kill();
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let _ = child.wait();
    // Each confirmed difference was logged once.
    for k in want {
        assert_eq!(err.matches(&format!("({k})")).count(), 1, "{k}: {err}");
    }
    // Nothing but the heartbeat Lease (`endpointd-<identity>`) was
    // written: no Endpoints, slice, Event, nor the election Lease.
    let writes: Vec<String> = sim
        .store()
        .write_log()
        .iter()
        .filter(|w| w.user != "system:kube-sim")
        .filter(|w| !(w.resource == "leases" && w.name.starts_with("endpointd-")))
        .map(|w| format!("{} {} {}", w.verb, w.resource, w.name))
        .collect();
    assert!(writes.is_empty(), "shadow mode wrote: {writes:?}");
    sim.stop();
}
