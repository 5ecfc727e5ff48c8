//! kubectl against kube-sim (issue 11): `kubectl get` of every resource
//! kube-sim serves shows kube-apiserver's column headers and values
//! (written down here from upstream's printers), `-o wide` adds the
//! priority-1 columns, and `get -w` streams rows. Skipped, with a message,
//! where kubectl is not installed.

use std::time::Duration;

use crate::harness::kubectl as kubectl_support;
use kubectl_support::{kubectl_available, kubectl_ok};

use kube_sim::server::SimServer;
use serde_json::json;

fn start() -> (SimServer, std::path::PathBuf) {
    let items = vec![
        json!({"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": "node-1", "labels": {"node-role.kubernetes.io/control-plane": ""}},
               "status": {"conditions": [{"type": "Ready", "status": "True"}],
                          "addresses": [{"type": "InternalIP", "address": "192.0.2.10"}],
                          "nodeInfo": {"kubeletVersion": "v1.34.1", "osImage": "Debian GNU/Linux 12",
                                       "kernelVersion": "6.1.0", "containerRuntimeVersion": "containerd://1.7"}}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
               "spec": {"selector": {"app": "web"}, "clusterIP": "10.96.0.10",
                        "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"}},
               "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]},
               "status": {"phase": "Running", "podIP": "10.244.0.5", "podIPs": [{"ip": "10.244.0.5"}],
                          "conditions": [{"type": "Ready", "status": "True"}],
                          "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0, "image": "nginx", "imageID": "",
                                                 "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}}),
        json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web", "namespace": "default"},
               "subsets": [{"addresses": [{"ip": "10.244.0.5"}], "ports": [{"name": "http", "port": 8080}]}]}),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
               "metadata": {"name": "web-abcde", "namespace": "default", "labels": {"kubernetes.io/service-name": "web"}},
               "addressType": "IPv4", "endpoints": [{"addresses": ["10.244.0.5"]}],
               "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}),
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": "endpointd", "namespace": "kube-system"},
               "spec": {"holderIdentity": "node-1_abc"}}),
    ];
    kubectl_support::start("table", items)
}

fn get(kc: &std::path::Path, args: &[&str]) -> String {
    let mut a = vec!["get"];
    a.extend_from_slice(args);
    kubectl_ok(kc, &a)
}

/// The header line's column names, and the line starting with `name`.
fn header_and_row(out: &str, name: &str) -> (Vec<String>, Vec<String>) {
    let mut lines = out.lines();
    let header = lines.next().unwrap_or("").to_string();
    let row = lines
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or("")
        .to_string();
    // Columns are separated by 3+ spaces, values by at least 3 as well;
    // multi-word headers ("NOMINATED NODE") use single spaces.
    let split = |s: &str| -> Vec<String> {
        s.split("   ")
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect()
    };
    (split(&header), split(&row))
}

#[test]
fn kubectl_get_shows_the_api_servers_columns() {
    if !kubectl_available() {
        eprintln!("kubectl not installed: skipping the kubectl Table test");
        return;
    }
    let (sim, kc) = start();
    // (resource, name, expected header, expected leading cells)
    let cases: Vec<(&str, &str, Vec<&str>, Vec<&str>)> = vec![
        (
            "pods",
            "web-0",
            vec!["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
            vec!["web-0", "1/1", "Running", "0"],
        ),
        (
            "services",
            "web",
            vec![
                "NAME",
                "TYPE",
                "CLUSTER-IP",
                "EXTERNAL-IP",
                "PORT(S)",
                "AGE",
            ],
            vec!["web", "ClusterIP", "10.96.0.10", "<none>", "80/TCP"],
        ),
        (
            "endpoints",
            "web",
            vec!["NAME", "ENDPOINTS", "AGE"],
            vec!["web", "10.244.0.5:8080"],
        ),
        (
            "endpointslices",
            "web-abcde",
            vec!["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"],
            vec!["web-abcde", "IPv4", "8080", "10.244.0.5"],
        ),
        (
            "nodes",
            "node-1",
            vec!["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
            vec!["node-1", "Ready", "control-plane"],
        ),
        (
            "namespaces",
            "default",
            vec!["NAME", "STATUS", "AGE"],
            vec!["default", "Active"],
        ),
        (
            "leases",
            "endpointd",
            vec!["NAME", "HOLDER", "AGE"],
            vec!["endpointd", "node-1_abc"],
        ),
    ];
    for (resource, name, header, cells) in cases {
        let ns = if resource == "leases" {
            "kube-system"
        } else {
            "default"
        };
        let out = get(&kc, &[resource, "-n", ns]);
        let (h, r) = header_and_row(&out, name);
        assert_eq!(h, header, "{resource}:\n{out}");
        assert_eq!(&r[..cells.len()], &cells[..], "{resource}:\n{out}");
    }
    let wide = get(&kc, &["pods", "-o", "wide"]);
    let (h, r) = header_and_row(&wide, "web-0");
    assert_eq!(
        h,
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED NODE",
            "READINESS GATES"
        ],
        "{wide}"
    );
    assert_eq!(
        &r[5..],
        ["10.244.0.5", "node-1", "<none>", "<none>"],
        "{wide}"
    );
    let wide = get(&kc, &["nodes", "-o", "wide"]);
    let (h, r) = header_and_row(&wide, "node-1");
    assert_eq!(
        &h[5..],
        [
            "INTERNAL-IP",
            "EXTERNAL-IP",
            "OS-IMAGE",
            "KERNEL-VERSION",
            "CONTAINER-RUNTIME"
        ],
        "{wide}"
    );
    assert_eq!(
        &r[5..],
        [
            "192.0.2.10",
            "<none>",
            "Debian GNU/Linux 12",
            "6.1.0",
            "containerd://1.7"
        ],
        "{wide}"
    );
    let svc = get(&kc, &["svc", "web", "-o", "wide"]);
    assert!(svc.contains("SELECTOR") && svc.contains("app=web"), "{svc}");
    // All namespaces, several kinds at once (what the demo suggests).
    let all = get(&kc, &["pods,svc,endpoints,endpointslices", "-A"]);
    assert!(
        all.contains("pod/web-0")
            && all.contains("service/web")
            && all.contains("endpointslice.discovery.k8s.io/web-abcde"),
        "{all}"
    );

    // kubectl get -w: the Table watch streams a row per event.
    let mut child = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kc)
        .args(["get", "pods", "-w", "-n", "default"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl -w");
    std::thread::sleep(Duration::from_millis(1500));
    let key = kube_sim::store::Key::new(
        kube_sim::resources::lookup("", "v1", "pods").expect("pods"),
        "default",
        "web-0",
    );
    sim.store().txn(|t| {
        let mut v = t.get(&key).expect("pod").value();
        v["status"]["containerStatuses"][0]["restartCount"] = json!(3);
        t.put(&key, "update", v);
    });
    std::thread::sleep(Duration::from_millis(1500));
    let _ = child.kill();
    let out = child.wait_with_output().expect("output");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().next().is_some_and(|l| l.starts_with("NAME")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("web-0") && l.contains(" 3 ")),
        "the update is streamed as a row:\n{text}"
    );
    sim.stop();
}
