//! The demo's small edge cluster: three nodes in two zones and seven
//! Services that between them show every rule the controllers apply, as
//! JSON fixtures for kube-sim, plus what a correct controller must make of
//! each (the demo's expectations).
//!
//! Pure data; must never talk to kube-sim itself.

use serde_json::{json, Value};

/// The namespace everything lives in.
pub const NS: &str = "demo";

/// One Service of the story and what its endpoints must look like.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expect {
    /// Service name.
    pub name: &'static str,
    /// What it shows, for the reader.
    pub about: &'static str,
    /// Pods created for it.
    pub pods: usize,
    /// (ready, not ready) addresses of its Endpoints.
    pub endpoints: (usize, usize),
    /// Address types of its slices with the endpoints each holds.
    pub slices: &'static [(&'static str, usize)],
}

/// The Services, in the order the demo shows them.
pub const SERVICES: &[Expect] = &[
    Expect {
        name: "web",
        about: "a plain web service",
        pods: 3,
        endpoints: (3, 0),
        slices: &[("IPv4", 3)],
    },
    Expect {
        name: "db",
        about: "headless, StatefulSet-style hostnames",
        pods: 3,
        endpoints: (3, 0),
        slices: &[("IPv4", 3)],
    },
    Expect {
        name: "named",
        about: "a named target port",
        pods: 2,
        endpoints: (2, 0),
        slices: &[("IPv4", 2)],
    },
    Expect {
        name: "dual",
        about: "dual-stack: one slice per family",
        pods: 2,
        endpoints: (2, 0),
        slices: &[("IPv4", 2), ("IPv6", 2)],
    },
    Expect {
        name: "early",
        about: "publishNotReadyAddresses",
        pods: 2,
        endpoints: (2, 0),
        slices: &[("IPv4", 2)],
    },
    Expect {
        name: "near",
        about: "trafficDistribution: PreferClose",
        pods: 3,
        endpoints: (3, 0),
        slices: &[("IPv4", 3)],
    },
    Expect {
        name: "big",
        about: "250 pods: more than one slice",
        pods: 250,
        endpoints: (250, 0),
        slices: &[("IPv4", 250)],
    },
];

/// Nodes: (name, zone).
pub const NODES: &[(&str, &str)] = &[
    ("edge-1", "zone-a"),
    ("edge-2", "zone-a"),
    ("edge-3", "zone-b"),
];

/// The fewest writes that produce `SERVICES`' objects: one Endpoints per
/// Service, and per Service and address type max(1, ⌈n/100⌉) slices.
pub fn minimum_writes(per_slice: usize) -> (usize, usize) {
    let slices = SERVICES
        .iter()
        .flat_map(|s| s.slices.iter())
        .map(|(_, n)| n.div_ceil(per_slice).max(1))
        .sum();
    (SERVICES.len(), slices)
}

fn node(name: &str, zone: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone, "kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi"},
                   "conditions": [{"type": "Ready", "status": "True"}]}})
}

fn service(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    if spec.get("selector").is_none() {
        spec["selector"] = json!({"app": name});
    }
    json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": NS, "labels": {"app.kubernetes.io/part-of": "demo"}},
        "spec": spec})
}

/// A running pod; `ips` its addresses, `ready` its Ready condition.
pub fn pod(
    app: &str,
    name: &str,
    node: &str,
    ips: &[String],
    ready: bool,
    port: (&str, u16),
) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": app}},
        "spec": {"nodeName": node, "containers": [{"name": "main", "image": "registry.example/demo:1",
                 "ports": [{"name": port.0, "containerPort": port.1, "protocol": "TCP"}]}]},
        "status": {"phase": "Running", "podIP": ips[0],
                   "podIPs": ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>(),
                   "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"},
                                   "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
}

fn v4(svc: usize, i: usize) -> String {
    format!("10.{}.{}.{}", 100 + svc, i / 250, 1 + i % 250)
}

/// Every object of the cluster, namespace first.
pub fn objects() -> Vec<Value> {
    let mut v = vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})];
    v.extend(NODES.iter().map(|(n, z)| node(n, z)));
    let http = json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]);
    v.push(service("web", json!({"ports": http})));
    v.push(service("db", json!({"clusterIP": "None", "ports": [{"name": "pg", "port": 5432, "protocol": "TCP", "targetPort": 5432}]})));
    v.push(service(
        "named",
        json!({"ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "web"}]}),
    ));
    v.push(service(
        "dual",
        json!({"ports": http, "ipFamilies": ["IPv4", "IPv6"], "ipFamilyPolicy": "RequireDualStack",
        "clusterIP": "10.96.200.1", "clusterIPs": ["10.96.200.1", "fd00:96::c8"]}),
    ));
    v.push(service(
        "early",
        json!({"ports": http, "publishNotReadyAddresses": true}),
    ));
    v.push(service(
        "near",
        json!({"ports": http, "trafficDistribution": "PreferClose"}),
    ));
    v.push(service("big", json!({"ports": http})));
    for (si, s) in SERVICES.iter().enumerate() {
        for i in 0..s.pods {
            let name = format!("{}-{i}", s.name);
            let node = NODES[i % NODES.len()].0;
            let mut ips = vec![v4(si, i)];
            if s.name == "dual" {
                ips.push(format!("fd00:10:{si}::{}", i + 1));
            }
            let ready = !(s.name == "early" && i == 1);
            let port = if s.name == "named" {
                ("web", 9090)
            } else if s.name == "db" {
                ("pg", 5432)
            } else {
                ("http", 8080)
            };
            let mut p = pod(s.name, &name, node, &ips, ready, port);
            if s.name == "db" {
                p["spec"]["hostname"] = json!(name);
                p["spec"]["subdomain"] = json!("db");
            }
            v.push(p);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixtures_match_expectations() {
        let objs = objects();
        let pods = objs.iter().filter(|o| o["kind"] == "Pod").count();
        assert_eq!(pods, SERVICES.iter().map(|s| s.pods).sum::<usize>());
        assert_eq!(
            objs.iter().filter(|o| o["kind"] == "Service").count(),
            SERVICES.len()
        );
        // 7 Endpoints; slices: one each, two for dual, three for big.
        assert_eq!(minimum_writes(100), (7, 10));
        let ips: std::collections::BTreeSet<&str> = objs
            .iter()
            .filter_map(|o| o["status"]["podIP"].as_str())
            .collect();
        assert_eq!(ips.len(), pods, "pod IPs are unique");
    }
}
