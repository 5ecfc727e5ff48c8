//! Least privilege proven: endpointd (both controllers, leader election,
//! events) runs against kube-sim with `--authorization-mode RBAC`,
//! authenticated as `systemd/rbac.yaml`'s ServiceAccount, through a
//! realistic workload (two namespaces, readiness flips, pod deletions that
//! empty slices, a topology-aware Service switched off and on, a Service
//! deleted, an operator's `endpointd explain`, SIGTERM). Every request
//! must be allowed, and what endpointd used (verb, resource, scope) must
//! be exactly what the manifest grants — except the grants that admission
//! plugins check rather than requests.

use crate::harness::controller as controller_support;

use controller_support::*;
use kube_sim::authn::parse_token_file;
use kube_sim::authz::Access;
use kube_sim::rbac::Policy;
use kube_sim::server::SimOptions;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const SA: &str = "system:serviceaccount:kube-system:endpointd";
const TOKEN: &str = "endpointd-sa-token-for-the-rbac-test";
const LIMIT: Duration = Duration::from_secs(30);

/// Grants no request uses: admission plugins check them on writes, so a
/// cluster running those plugins needs them (see the comments in the
/// manifest). kube-sim runs neither plugin.
const ADMISSION_ONLY: &[(&str, &str, &str)] = &[
    // OwnerReferencesPermissionEnforcement: slices' ownerReference with
    // blockOwnerDeletion=true.
    ("update", "", "services/finalizers"),
    // RestrictedEndpointsAdmission (OpenShift): Endpoints with restricted IPs.
    ("create", "", "endpoints/restricted"),
];

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("systemd/rbac.yaml")
}

/// (verb, group, resource, scope): scope "*" for a ClusterRole bound by a
/// ClusterRoleBinding, else the RoleBinding's namespace.
type Grant = (String, String, String, String);

/// What the manifest grants the ServiceAccount.
fn grants(p: &Policy) -> Vec<Grant> {
    let mut out = Vec::new();
    for b in &p.bindings {
        let bound = b.subjects.iter().any(|s| {
            s.kind == "ServiceAccount" && s.name == "endpointd" && s.namespace == "kube-system"
        });
        let role_ns = if b.role_kind == "Role" {
            &b.namespace
        } else {
            ""
        };
        let scope = if b.namespace.is_empty() {
            "*"
        } else {
            &b.namespace
        };
        for role in p
            .roles
            .iter()
            .filter(|r| bound && r.name == b.role_name && r.namespace == role_ns)
        {
            for r in &role.rules {
                for v in &r.verbs {
                    for g in &r.api_groups {
                        for res in &r.resources {
                            out.push((v.clone(), g.clone(), res.clone(), scope.to_string()));
                        }
                    }
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn used_by(g: &Grant, a: &Access) -> bool {
    a.verb == g.0
        && a.group == g.1
        && a.resource == g.2
        && (g.3 == "*" || a.namespace == g.3)
        && a.allowed > 0
}

#[test]
fn endpointd_uses_exactly_what_systemd_rbac_yaml_grants() {
    let opts = SimOptions {
        load: Some(manifest()),
        rbac: true,
        token_users: parse_token_file(&format!("{TOKEN},{SA},uid-endpointd\n")).expect("tokens"),
        ..SimOptions::default()
    };
    let c = Cluster::start_with("rbac-lp", opts);
    std::fs::write(
        &c.kubeconfig,
        kube_sim::tls::kubeconfig(c.sim.url(), None, Some(TOKEN)),
    )
    .expect("kubeconfig with the ServiceAccount's token");
    // The workload: two namespaces, a Service of 25 pods (3 slices of 10),
    // one of 6, and a topology-aware one over two zones.
    let mut near = service("default", "near", "near", json!(8080));
    near["metadata"]["annotations"] = json!({"service.kubernetes.io/topology-mode": "Auto"});
    let mut items = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}),
        node("node-a", "z1"),
        node("node-b", "z2"),
        service("default", "web", "web", json!(8080)),
        service("shop", "cart", "cart", json!("http")),
        near,
    ];
    let web: Vec<String> = (0..25).map(|i| format!("web-{i}")).collect();
    for (i, n) in web.iter().enumerate() {
        items.push(pod("default", n, "web", &ip(i), true));
    }
    for i in 0..6 {
        items.push(pod(
            "shop",
            &format!("cart-{i}"),
            "cart",
            &ip(100 + i),
            true,
        ));
    }
    for i in 0..4 {
        let mut p = pod("default", &format!("near-{i}"), "near", &ip(200 + i), true);
        p["spec"]["nodeName"] = json!(if i % 2 == 0 { "node-a" } else { "node-b" });
        items.push(p);
    }
    c.load(items);
    let started = Instant::now();
    let d = Daemon::start(
        &c,
        "a",
        "[leader_election]\nidentity = \"node-a\"\nlease_duration = \"3s\"\nrenew_deadline = \"2s\"\nretry_period = \"500ms\"\nheartbeat_duration = \"4s\"\n[endpointslices]\nmax_endpoints_per_slice = 10\n",
    );
    c.wait_converged(LIMIT);
    // Readiness flips.
    c.set_ready("default", &web[..8], false);
    c.set_ready("shop", &["cart-0".to_string()], false);
    c.wait_converged(LIMIT);
    c.set_ready("default", &web[..4], true);
    c.wait_converged(LIMIT);
    // Pod deletions that leave slices empty.
    c.delete("pods", "default", &web[5..]);
    c.wait_converged(LIMIT);
    // Topology hints off, then on again (a second, correlated event).
    let events = |reason: &str| {
        c.all("events")
            .iter()
            .filter(|e| e["reason"] == reason)
            .count()
    };
    wait_until("hints enabled", LIMIT, || {
        events("TopologyAwareHintsEnabled") == 1
    });
    let set_mode = |mode: Option<&str>| {
        c.modify("services", "default", &["near".to_string()], |s| {
            s["metadata"]["annotations"] = match mode {
                Some(m) => json!({"service.kubernetes.io/topology-mode": m}),
                None => json!({}),
            };
        })
    };
    set_mode(None);
    // (Matched by message too: the reason alone also covers "Insufficient
    // Node information", which must not be what is seen here.)
    wait_until("hints disabled", LIMIT, || {
        c.all("events").iter().any(|e| {
            e["reason"] == "TopologyAwareHintsDisabled"
                && e["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("Topology Aware Hints has been disabled"))
        })
    });
    set_mode(Some("Auto"));
    let deadline = Instant::now() + LIMIT;
    while !c
        .sim
        .access_log()
        .iter()
        .any(|a| a.resource == "events" && a.verb == "update")
    {
        if Instant::now() > deadline {
            let evs: Vec<String> = c
                .all("events")
                .iter()
                .map(|e| {
                    format!(
                        "{} {} {} {}",
                        e["reason"], e["message"], e["count"], e["series"]
                    )
                })
                .collect();
            let log: Vec<_> = c
                .sim
                .access_log()
                .into_iter()
                .filter(|a| a.resource == "events")
                .collect();
            panic!("hints enabled again: no series update; events {evs:#?}; access {log:#?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // A Service deleted: its Endpoints go.
    c.delete("services", "shop", &["cart".to_string()]);
    wait_until("cart's Endpoints deleted", LIMIT, || {
        c.get("endpoints", "shop", "cart").is_none()
    });
    c.wait_converged(LIMIT);
    // An operator's `endpointd explain` with the same config (GET, LIST).
    let explain = std::process::Command::new(env!("CARGO_BIN_EXE_endpointd"))
        .args(["explain", "--config"])
        .arg(c.dir.join("a.toml"))
        .args(["-n", "default", "near"])
        .env_remove("RUST_LOG")
        .output()
        .expect("run endpointd explain");
    assert!(explain.status.success(), "{explain:?}");
    // The leader looks for abandoned identity leases at each heartbeat.
    wait_until("the leader listed the identity leases", LIMIT, || {
        c.sim
            .access_log()
            .iter()
            .any(|a| a.resource == "leases" && a.verb == "list")
    });
    // Stop: the lease is released and the identity lease deleted.
    assert_eq!(d.stop(), Some(0), "endpointd exits 0 on SIGTERM");
    let run = started.elapsed();
    wait_until("lease released", LIMIT, || {
        c.get("leases", "kube-system", "endpointd")
            .is_some_and(|l| {
                l["spec"]["holderIdentity"].is_null() || l["spec"]["holderIdentity"] == ""
            })
    });

    let log: Vec<Access> = c
        .sim
        .access_log()
        .into_iter()
        .filter(|a| a.user == SA)
        .collect();
    let denied: Vec<&Access> = log.iter().filter(|a| a.denied > 0).collect();
    let (policy_list, policy) = kube_sim::load::read_file(&manifest()).expect("manifest");
    drop(policy_list);
    let granted = grants(&policy);
    let resource_log: Vec<&Access> = log
        .iter()
        .filter(|a| !a.resource.starts_with('/'))
        .collect();
    // The table (shown with --nocapture): what was used, per scope.
    let mut table: BTreeMap<(String, String, String), BTreeMap<String, u64>> = BTreeMap::new();
    for a in &resource_log {
        let scope = if a.namespace.is_empty() {
            "cluster"
        } else {
            &a.namespace
        };
        *table
            .entry((a.verb.clone(), a.group.clone(), a.resource.clone()))
            .or_default()
            .entry(scope.to_string())
            .or_default() += a.allowed + a.denied;
    }
    println!("endpointd ran {run:?} under RBAC; requests by verb, group, resource and scope:");
    for ((v, g, r), scopes) in &table {
        println!(
            "  {v:<7} {:<22} {r:<22} {scopes:?}",
            if g.is_empty() { "core" } else { g }
        );
    }
    for a in log.iter().filter(|a| a.resource.starts_with('/')) {
        println!("  non-resource: {} {} ({})", a.verb, a.resource, a.allowed);
    }
    assert!(denied.is_empty(), "requests denied: {denied:#?}");
    let unused: Vec<&Grant> = granted
        .iter()
        .filter(|g| !resource_log.iter().any(|a| used_by(g, a)))
        .filter(|g| !ADMISSION_ONLY.contains(&(g.0.as_str(), g.1.as_str(), g.2.as_str())))
        .collect();
    let ungranted: Vec<&&Access> = resource_log
        .iter()
        .filter(|a| !granted.iter().any(|g| used_by(g, a)))
        .collect();
    println!("granted: {granted:?}");
    assert!(
        unused.is_empty() && ungranted.is_empty(),
        "granted but never used: {unused:?}\nused but not granted: {ungranted:?}"
    );
}
