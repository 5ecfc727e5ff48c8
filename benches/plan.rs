//! CPU of the controllers' pure plan functions for one readiness flip of a
//! 10-pod, one-port Service: the Endpoints plan (unpack, repack, compare)
//! and the EndpointSlice reconcile against the converged stored objects,
//! alternating between a flipped and the converged pod set.
//!
//! `cargo bench --bench plan [-- N]`; for a noise-free figure run the
//! binary under `valgrind --tool=callgrind` and divide the instructions by
//! N. The last line is JSON: `{"flips":N,"ns_per_flip":..}`.
use endpointd::endpoints::plan::{plan, EndpointsInput, EndpointsPlan};
use endpointd::endpointslice::plan::{reconcile, ReconcileInput};
use endpointd_kube::model::{Node, Pod, Service};
use serde_json::json;
use std::sync::Arc;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    let svc: Service = serde_json::from_value(json!({"metadata":{"name":"s","namespace":"ns","uid":"u","resourceVersion":"1","labels":{"app":"s"}},
        "spec":{"selector":{"app":"s"},"clusterIP":"10.0.0.1","clusterIPs":["10.0.0.1"],"ipFamilies":["IPv4"],"ports":[{"name":"http","port":80,"targetPort":8080,"protocol":"TCP"}]}})).expect("fixture");
    let pod = |i: usize, ready: bool| -> Arc<Pod> {
        Arc::new(serde_json::from_value(json!({"metadata":{"name":format!("p{i}"),"namespace":"ns","uid":format!("6f1c2a7e-3b4d-4c5e-9f60-{i:012}"),"resourceVersion":format!("{}", 10+i),"labels":{"app":"s","pod-template-hash":"abc"}},
          "spec":{"nodeName":format!("node-{}", i%4),"containers":[{"ports":[{"name":"http","containerPort":8080}]}]},
          "status":{"phase":"Running","podIP":format!("10.244.0.{}", i+2),"podIPs":[{"ip":format!("10.244.0.{}", i+2)}],"conditions":[{"type":"Ready","status": if ready {"True"} else {"False"}}]}})).expect("fixture"))
    };
    let nodes: Vec<Arc<Node>> = (0..4).map(|i| Arc::new(serde_json::from_value(json!({"metadata":{"name":format!("node-{i}"),"labels":{"topology.kubernetes.io/zone":"z"}}})).expect("fixture"))).collect();
    let lookup = |name: &str| nodes.iter().find(|n| &*n.metadata.name == name).cloned();
    let a: Vec<Arc<Pod>> = (0..10).map(|i| pod(i, true)).collect();
    let mut b = a.clone();
    b[3] = pod(3, false);
    // Converged state for `a`.
    let cur = match plan(&EndpointsInput {
        service: &svc,
        pods: &a,
        current: None,
        trigger_time: None,
    }) {
        EndpointsPlan::Create(mut e) => {
            e.metadata.resource_version = "5".into();
            e
        }
        other => panic!("expected a create, got {other:?}"),
    };
    let sp = reconcile(&ReconcileInput {
        service: &svc,
        pods: &a,
        existing: &[],
        nodes: &lookup,
        trigger_time: None,
        max_endpoints_per_slice: 100,
        topology: None,
    });
    let mut s = sp.by_type[0].1.creates[0].clone();
    s.metadata.name = "s-abc".into();
    s.metadata.resource_version = "6".into();
    s.metadata.generation = Some(1);
    let existing = vec![Arc::new(s)];
    let t = std::time::Instant::now();
    let mut k = 0;
    for i in 0..n {
        let pods = if i % 2 == 0 { &b } else { &a };
        if let EndpointsPlan::Update(e) = plan(&EndpointsInput {
            service: &svc,
            pods,
            current: Some(&cur),
            trigger_time: None,
        }) {
            k += e.subsets.len();
        }
        let p = reconcile(&ReconcileInput {
            service: &svc,
            pods,
            existing: &existing,
            nodes: &lookup,
            trigger_time: None,
            max_endpoints_per_slice: 100,
            topology: None,
        });
        k += p.by_type.len();
    }
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    println!("{n} flips: {ns:.0} ns per flip (both plans; {k} writes planned)");
    println!("{{\"flips\":{n},\"ns_per_flip\":{ns:.0}}}");
}
