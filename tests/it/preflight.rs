//! `endpointd preflight` against kube-sim: a healthy setup (TLS, RBAC from
//! `systemd/rbac.yaml`, the ServiceAccount's token) is all ok and exits 0;
//! a ServiceAccount missing a permission fails naming it and exits 1;
//! kube-controller-manager's manager on recent EndpointSlices and a
//! kubeconfig readable by others warn; `-o json` parses; nothing is
//! written. Also: the permission table is exactly what the manifest grants.

use crate::harness::controller::tmpdir;
use endpointd::preflight::permissions::{Scope, PERMISSIONS};
use kube_sim::authn::parse_token_file;
use kube_sim::server::{SimOptions, SimServer};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const SA: &str = "system:serviceaccount:kube-system:endpointd";
const TOKEN: &str = "endpointd-sa-token-for-the-preflight-test";

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("systemd/rbac.yaml")
}

/// A TLS kube-sim with RBAC from `rbac_file` and the ServiceAccount's
/// token, and an endpointd configuration whose kubeconfig (0600) uses it.
fn rbac_setup(name: &str, rbac_file: PathBuf) -> (SimServer, PathBuf) {
    let sim = SimServer::start(SimOptions {
        tls: true,
        load: Some(rbac_file),
        rbac: true,
        token_users: parse_token_file(&format!("{TOKEN},{SA},uid-endpointd\n")).expect("tokens"),
        ..SimOptions::default()
    })
    .expect("kube-sim");
    let dir = tmpdir(&format!("preflight-{name}"));
    let ca = dir.join("ca.crt");
    std::fs::write(&ca, sim.ca_pem().expect("TLS")).expect("ca");
    let kc = dir.join("kubeconfig");
    std::fs::write(
        &kc,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    certificate-authority: {}\n\
contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: {TOKEN}\n",
            sim.url(),
            ca.display()
        ),
    )
    .expect("kubeconfig");
    std::fs::set_permissions(&kc, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    (sim, config(&dir, &kc))
}

fn config(dir: &Path, kc: &Path) -> PathBuf {
    let cfg = dir.join("c.toml");
    std::fs::write(
        &cfg,
        format!(
            "[kubernetes]\nkubeconfig = {:?}\n",
            kc.display().to_string()
        ),
    )
    .expect("config");
    cfg
}

fn preflight(cfg: &Path, json: bool) -> (i32, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_endpointd"));
    c.arg("preflight").arg("--config").arg(cfg);
    if json {
        c.args(["-o", "json"]);
    }
    let o = c
        .env_remove("RUST_LOG")
        .env_remove("KUBECONFIG")
        .output()
        .expect("run endpointd preflight");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name} in {report:#}"))
}

fn writes(sim: &SimServer) -> usize {
    sim.store().write_log_since(0).1
}

#[test]
fn a_healthy_setup_is_all_ok_and_nothing_is_written() {
    let (sim, cfg) = rbac_setup("healthy", manifest());
    let before = writes(&sim);
    let (code, out, err) = preflight(&cfg, false);
    assert_eq!(code, 0, "{out}\n{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.len() > 15, "{out}");
    for l in &lines[..lines.len() - 1] {
        assert!(l.starts_with("ok   "), "not ok: {l}\n{out}");
    }
    for name in [
        "kubeconfig/file-mode",
        "kubeconfig/tls",
        "kubeconfig/token-expiry",
        "permissions/endpointslices.discovery.k8s.io",
        "permissions/leases.coordination.k8s.io",
        "server/version",
        "clock/skew",
        "lease/namespace",
        "lease/election",
        "handover/endpoints",
        "handover/endpointslices",
    ] {
        assert!(
            out.contains(&format!(" {name}: ")),
            "{name} missing:\n{out}"
        );
    }
    assert!(
        out.ends_with("0 warn, 0 fail: ready for the hand-over\n"),
        "{out}"
    );
    assert_eq!(writes(&sim), before, "preflight wrote something");
}

#[test]
fn a_missing_permission_fails_naming_it() {
    let text = std::fs::read_to_string(manifest()).expect("manifest");
    let full = "verbs: [\"list\", \"watch\", \"create\", \"update\", \"delete\"]";
    assert_eq!(text.matches(full).count(), 1, "the endpointslices rule");
    let dir = tmpdir("preflight-rbac-file");
    let cut = dir.join("rbac.yaml");
    std::fs::write(
        &cut,
        text.replace(full, "verbs: [\"list\", \"watch\", \"create\", \"update\"]"),
    )
    .expect("manifest without delete endpointslices");
    let (_sim, cfg) = rbac_setup("missing", cut);
    let (code, out, err) = preflight(&cfg, true);
    assert_eq!(code, 1, "{out}\n{err}");
    let r: Value = serde_json::from_str(&out).expect("JSON");
    let c = check(&r, "permissions/endpointslices.discovery.k8s.io");
    assert_eq!(c["level"], "fail", "{c}");
    let msg = c["message"].as_str().unwrap_or("");
    assert!(
        msg.starts_with("missing delete endpointslices.discovery.k8s.io in every namespace"),
        "{msg}"
    );
    assert_eq!(r["summary"]["fail"], 1, "{r:#}");
    assert_eq!(check(&r, "permissions/endpoints")["level"], "ok");
}

#[test]
fn kcm_writing_slices_and_a_readable_kubeconfig_warn_and_json_parses() {
    let sim = SimServer::start(SimOptions::default()).expect("kube-sim");
    let dir = tmpdir("preflight-kcm");
    let kc = dir.join("kubeconfig");
    sim.write_kubeconfig(&kc).expect("kubeconfig");
    std::fs::set_permissions(&kc, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let cfg = config(&dir, &kc);
    // KCM's endpointslice controller writes a slice now.
    let a: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-kcm", "namespace": "default", "labels": {
            "kubernetes.io/service-name": "web",
            "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
        "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": []});
    let r = a
        .post(&format!(
            "{}/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
            sim.url()
        ))
        .header("User-Agent", "kube-controller-manager/v1.33.0 (linux/amd64) kubernetes/abc/system:serviceaccount:kube-system:endpointslice-controller")
        .header("Content-Type", "application/json")
        .send(slice.to_string().as_bytes())
        .expect("create");
    assert_eq!(r.status().as_u16(), 201);

    let (code, out, err) = preflight(&cfg, true);
    assert_eq!(code, 0, "warnings only: {out}\n{err}");
    let r: Value = serde_json::from_str(&out).expect("-o json parses");
    let c = check(&r, "handover/endpointslices");
    assert_eq!(c["level"], "warn", "{c}");
    assert!(
        c["message"]
            .as_str()
            .unwrap_or("")
            .contains("do step 3 of the hand-over (--controllers=*,-endpoint,-endpointslice)"),
        "{c}"
    );
    let c = check(&r, "kubeconfig/file-mode");
    assert_eq!(c["level"], "warn", "{c}");
    assert!(
        c["message"].as_str().unwrap_or("").contains("chmod 0600"),
        "{c}"
    );
    assert_eq!(check(&r, "handover/endpoints")["level"], "ok");
    // Plain HTTP without credentials: a warning, not a failure.
    assert_eq!(check(&r, "kubeconfig/tls")["level"], "warn");
    assert_eq!(r["summary"]["fail"], 0);
}

#[test]
fn the_permission_table_is_what_systemd_rbac_yaml_grants() {
    let (_, policy) = kube_sim::load::read_file(&manifest()).expect("manifest");
    let mut granted = Vec::new();
    for b in &policy.bindings {
        let bound = b.subjects.iter().any(|s| {
            s.kind == "ServiceAccount" && s.name == "endpointd" && s.namespace == "kube-system"
        });
        let role_ns = if b.role_kind == "Role" {
            &b.namespace
        } else {
            ""
        };
        let scope = match b.namespace.is_empty() {
            true => Scope::Cluster,
            false => Scope::LeaseNamespace,
        };
        for role in policy
            .roles
            .iter()
            .filter(|r| bound && r.name == b.role_name && r.namespace == role_ns)
        {
            for r in &role.rules {
                for v in &r.verbs {
                    for g in &r.api_groups {
                        for res in &r.resources {
                            granted.push((v.clone(), g.clone(), res.clone(), scope));
                        }
                    }
                }
            }
        }
    }
    granted.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    let mut table: Vec<_> = PERMISSIONS
        .iter()
        .map(|p| {
            (
                p.verb.to_string(),
                p.group.to_string(),
                p.resource.to_string(),
                p.scope,
            )
        })
        .collect();
    table.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    assert_eq!(table, granted);
}
