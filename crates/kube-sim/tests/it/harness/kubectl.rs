//! Shared harness for tests that drive the real kubectl against kube-sim:
//! whether kubectl is installed, a TLS kube-sim with a token and a
//! kubeconfig for it, and running kubectl with that kubeconfig.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kube_sim::server::{SimOptions, SimServer};
use serde_json::{json, Value};

/// Whether a kubectl binary runs here (tests skip, with a message, if not).
pub fn kubectl_available() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A TLS kube-sim with a bearer token, preloaded with `items`, and the path
/// of a kubeconfig for it in a fresh directory named after `tag`.
pub fn start(tag: &str, items: Vec<Value>) -> (SimServer, PathBuf) {
    start_with(tag, items, SimOptions::default())
}

/// [`start`] with more options (TLS and the token are set here).
pub fn start_with(tag: &str, items: Vec<Value>, opts: SimOptions) -> (SimServer, PathBuf) {
    let sim = SimServer::start(SimOptions {
        tls: true,
        token: Some(format!("{tag}-token")),
        ..opts
    })
    .expect("kube-sim");
    if !items.is_empty() {
        sim.store()
            .load_list(&json!({"apiVersion": "v1", "kind": "List", "items": items}))
            .expect("load");
    }
    let dir = std::env::temp_dir().join(format!("kube-sim-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let kc = dir.join("kubeconfig");
    sim.write_kubeconfig(&kc).expect("kubeconfig");
    (sim, kc)
}

/// Run kubectl with this kubeconfig (and its own cache directory, so no
/// discovery or OpenAPI cache leaks between tests).
pub fn kubectl(kc: &Path, args: &[&str]) -> Output {
    let cache = kc.with_file_name("cache");
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kc)
        .arg("--cache-dir")
        .arg(&cache)
        .args(args)
        .output()
        .expect("kubectl")
}

/// Run kubectl and return stdout, failing the test with stderr if it fails.
pub fn kubectl_ok(kc: &Path, args: &[&str]) -> String {
    let o = kubectl(kc, args);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "kubectl {args:?}: {}{out}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}
