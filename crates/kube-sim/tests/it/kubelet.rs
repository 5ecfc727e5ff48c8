//! kube-sim's simulated kubelet through kubectl: a pod created with
//! `kubectl run` becomes Ready and is deleted gracefully. The client's view
//! (watch events, pod IPs) is in endpointd-kube's tests (`sim_kubelet`).

use crate::harness::kubectl as kubectl_support;

use kube_sim::kubelet::KubeletOptions;
use kube_sim::server::SimOptions;
use serde_json::json;
use std::time::Duration;

#[test]
fn a_pod_created_with_kubectl_becomes_ready_and_is_deleted_gracefully() {
    if !kubectl_support::kubectl_available() {
        eprintln!("kubectl not installed: skipped");
        return;
    }
    let (sim, kc) = kubectl_support::start_with(
        "kubelet-kubectl",
        vec![json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"}})],
        SimOptions {
            kubelet: Some(KubeletOptions {
                ready_after: Duration::from_millis(300),
                grace_cap: Duration::from_secs(1),
                every: Duration::from_millis(20),
                ..KubeletOptions::default()
            }),
            ..SimOptions::default()
        },
    );
    let k = |args: &[&str]| kubectl_support::kubectl_ok(&kc, args);
    k(&["create", "namespace", "demo"]);
    k(&["run", "web", "--image=nginx", "-l", "app=web", "-n", "demo"]);
    k(&["expose", "pod", "web", "--port", "80", "-n", "demo"]);
    k(&[
        "wait",
        "--for=condition=Ready",
        "pod/web",
        "-n",
        "demo",
        "--timeout=20s",
    ]);
    let ip = k(&[
        "get",
        "pod",
        "web",
        "-n",
        "demo",
        "-o",
        "jsonpath={.status.podIP}",
    ]);
    let cidr = k(&["get", "node", "a", "-o", "jsonpath={.spec.podCIDR}"]);
    assert_eq!(cidr, "10.244.0.0/24");
    assert!(ip.starts_with("10.244.0."), "{ip} in {cidr}");
    // Graceful deletion: terminating first, then gone.
    k(&["delete", "pod", "web", "-n", "demo", "--wait=false"]);
    let ts = k(&[
        "get",
        "pod",
        "web",
        "-n",
        "demo",
        "-o",
        "jsonpath={.metadata.deletionTimestamp}",
    ]);
    assert!(!ts.is_empty(), "terminating after kubectl delete");
    k(&[
        "wait",
        "--for=delete",
        "pod/web",
        "-n",
        "demo",
        "--timeout=20s",
    ]);
    sim.stop();
}
