//! `endpointd explain` against kube-sim: the report in JSON and text, an
//! unknown Service, and no write at all.

use std::path::PathBuf;
use std::process::Command;

use crate::harness::process as process_support;
use process_support::SpawnReaped;

use kube_sim::resources::lookup;
use kube_sim::server::{SimOptions, SimServer};
use kube_sim::store::Key;
use serde_json::{json, Value};

fn setup(name: &str) -> (SimServer, PathBuf) {
    let sim = SimServer::start(SimOptions::default()).expect("kube-sim");
    let pod = |n: &str, app: &str, ready: bool, port: &str| {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": n, "namespace": "default", "labels": {"app": app}},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "img",
                     "ports": [{"name": port, "containerPort": 8080}]}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}],
                       "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}})
    };
    let items = vec![
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
               "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}),
        pod("web-ready", "web", true, "http"),
        pod("web-starting", "web", false, "http"),
        pod("web-wrongport", "web", true, "htp"),
        pod("web-typo", "wbe", true, "http"),
    ];
    let mut items = items;
    // One pod per remaining reason.
    let mut done = pod("web-done", "web", false, "http");
    done["status"]["phase"] = json!("Succeeded");
    let mut noip = pod("web-noip", "web", false, "http");
    noip["status"] = json!({"phase": "Pending"});
    let mut orphan = pod("web-orphan", "web", true, "http");
    orphan["spec"]["nodeName"] = json!("node-gone");
    let mut leaving = pod("web-leaving", "web", true, "http");
    leaving["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    leaving["metadata"]["finalizers"] = json!(["example.com/hold"]);
    items.extend([done, noip, orphan, leaving]);
    items.push(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "v6", "namespace": "default"},
        "spec": {"selector": {"app": "web"}, "ipFamilies": ["IPv6"], "clusterIP": "fd00::10",
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}));
    sim.store()
        .load_list(&json!({"apiVersion": "v1", "kind": "List", "items": items}))
        .expect("load");
    // Terminating, as a DELETE of a pod with a finalizer leaves it.
    let key = Key::new(
        lookup("", "v1", "pods").expect("pods"),
        "default",
        "web-leaving",
    );
    sim.store().txn(|t| {
        let mut v = t.get(&key).expect("pod").value();
        v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        t.put(&key, "update", v);
    });
    let dir = std::env::temp_dir().join(format!("endpointd-explain-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let kc = dir.join("kubeconfig");
    sim.write_kubeconfig(&kc).expect("kubeconfig");
    let cfg = dir.join("c.toml");
    std::fs::write(
        &cfg,
        format!(
            "[kubernetes]\nkubeconfig = {:?}\n",
            kc.display().to_string()
        ),
    )
    .expect("config");
    (sim, cfg)
}

fn explain(cfg: &PathBuf, args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_endpointd"))
        .arg("explain")
        .arg("--config")
        .arg(cfg)
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run endpointd explain");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn explain_reports_every_pod_and_writes_nothing() {
    let (sim, cfg) = setup("report");
    let (code, out, err) = explain(&cfg, &["-n", "default", "web", "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("JSON report");
    assert_eq!(v["service"], "default/web");
    assert_eq!(v["managed"], true);
    let pods = v["pods"].as_array().expect("pods");
    let by = |n: &str| pods.iter().find(|p| p["name"] == n).cloned().expect(n);
    assert_eq!(by("web-ready")["state"], "ready");
    assert_eq!(by("web-ready")["reasons"], json!([]));
    assert_eq!(
        by("web-starting")["reasons"],
        json!([{"reason": "notReady"}])
    );
    assert_eq!(
        by("web-wrongport")["reasons"],
        json!([{"reason": "namedPortMissing", "servicePort": "http", "targetPort": "http", "protocol": "TCP"}])
    );
    assert_eq!(
        by("web-done")["reasons"],
        json!([{"reason": "terminalPhase", "phase": "Succeeded"}])
    );
    assert_eq!(by("web-noip")["reasons"], json!([{"reason": "noPodIp"}]));
    assert_eq!(
        by("web-orphan")["reasons"],
        json!([{"reason": "nodeMissing", "node": "node-gone"}])
    );
    assert_eq!(by("web-leaving")["state"], "terminating");
    assert_eq!(
        by("web-leaving")["reasons"],
        json!([{"reason": "terminating"}])
    );
    assert_eq!(
        v["nearMisses"],
        json!([{"pod": "web-typo", "label": "app", "want": "web", "have": "wbe"}])
    );
    // Nothing wrote the Endpoints yet: out of sync, and says so.
    assert_eq!(v["endpointsInSync"], false);
    assert_eq!(v["slicesInSync"], false);

    let (code, text, err) = explain(&cfg, &["web"]);
    assert_eq!(code, 0, "{err}");
    for want in [
        "Service default/web",
        "Pods selected: 7 (3 ready",
        "web-starting (notReady",
        "why: not Ready",
        "declares no container port named \"http\"",
        "web-typo: app=web wanted, has app=wbe",
        "Not in sync",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    assert!(
        sim.store()
            .write_log()
            .iter()
            .all(|w| w.user == "system:kube-sim"),
        "explain never writes"
    );
    sim.stop();
}

#[test]
fn a_service_of_the_other_family_explains_every_pod() {
    let (sim, cfg) = setup("family");
    let (code, out, err) = explain(&cfg, &["v6", "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    let ready = v["pods"]
        .as_array()
        .expect("pods")
        .iter()
        .find(|p| p["name"] == "web-ready")
        .cloned()
        .expect("web-ready");
    assert_eq!(ready["state"], "excluded");
    assert_eq!(
        ready["reasons"],
        json!([{"reason": "noIpOfFamily", "family": "IPv6"}])
    );
    sim.stop();
}

#[test]
fn an_unknown_service_exits_1_naming_it() {
    let (sim, cfg) = setup("unknown");
    let (code, out, err) = explain(&cfg, &["-n", "default", "nope"]);
    assert_eq!(code, 1, "{out}");
    assert!(err.contains("service default/nope not found"), "{err}");
    sim.stop();
}

#[test]
fn after_endpointd_synced_the_report_is_in_sync_and_locates_each_pod() {
    let (sim, cfg) = setup("synced");
    let text = std::fs::read_to_string(&cfg).expect("config");
    std::fs::write(
        &cfg,
        format!("{text}[leader_election]\nenabled = false\n[server]\nlisten = \"\"\n"),
    )
    .expect("config");
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_endpointd"))
        .args(["run", "--config"])
        .arg(&cfg)
        .env_remove("NOTIFY_SOCKET")
        .stderr(std::process::Stdio::null())
        .spawn_reaped()
        .expect("endpointd run");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut v = Value::Null;
    while std::time::Instant::now() < deadline {
        let (code, out, _) = explain(&cfg, &["web", "-o", "json"]);
        assert_eq!(code, 0);
        v = serde_json::from_str(&out).expect("json");
        if v["endpointsInSync"] == true && v["slicesInSync"] == true {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let _ = daemon.kill();
    let _ = daemon.wait();
    assert_eq!(v["endpointsInSync"], true, "{v:#}");
    assert_eq!(v["slicesInSync"], true, "{v:#}");
    let pods = v["pods"].as_array().expect("pods");
    let by = |n: &str| pods.iter().find(|p| p["name"] == n).cloned().expect(n);
    assert_eq!(by("web-ready")["inEndpoints"], "addresses");
    assert_eq!(by("web-starting")["inEndpoints"], "notReadyAddresses");
    assert_eq!(by("web-ready")["inSlices"][0]["ready"], true);
    assert_eq!(by("web-starting")["inSlices"][0]["ready"], false);
    sim.stop();
}
