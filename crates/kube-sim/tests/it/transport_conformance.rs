//! Runs the conformance suite of real clients (tests/conformance: the
//! official Python `kubernetes` client and kubectl) against the kube-sim
//! binary cargo built for this test run, so `cargo test` covers it.
//!
//! Needs python3 (the suite makes its venv under target/ from
//! tests/requirements.txt when missing) and kubectl on the PATH (kubectl
//! tests are skipped without it). Set `KUBE_SIM_SKIP_CONFORMANCE=1` to skip
//! on machines without python3.

use std::process::Command;

#[test]
fn python_client_and_kubectl_conformance() {
    if std::env::var_os("KUBE_SIM_SKIP_CONFORMANCE").is_some() {
        eprintln!("KUBE_SIM_SKIP_CONFORMANCE set: conformance suite skipped");
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/run.sh");
    let status = Command::new(script)
        .env("KUBE_SIM", env!("CARGO_BIN_EXE_kube-sim"))
        .status()
        .unwrap_or_else(|e| panic!("cannot run {script}: {e}"));
    assert!(status.success(), "conformance suite failed ({status})");
}
