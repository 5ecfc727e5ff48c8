//! Issue 37 item 6: files were read without a bound. A kubeconfig, token
//! file, CA file, client certificate or key of `/dev/zero` grew the process
//! to ~10 GiB; a FIFO in any of those places hung it for ever. Each must
//! now fail within a second, naming the path and either the file's kind or
//! the limit.

use endpointd_kube::kube::{ClientConfig, Error, TokenFile};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("endpointd-regr-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// The hostile places a path can point at: (label, path, what the error
/// must say besides the path).
fn hostile(dir: &Path) -> Vec<(&'static str, PathBuf, &'static str)> {
    let fifo = dir.join("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(status.success(), "mkfifo {}", fifo.display());
    let large = dir.join("large");
    // 5 MiB: over every cap (the kubeconfig's is 4 MiB).
    std::fs::write(&large, vec![b'a'; 5 << 20]).expect("large file");
    vec![
        (
            "/dev/zero",
            PathBuf::from("/dev/zero"),
            "a character device",
        ),
        ("a FIFO", fifo, "a FIFO"),
        ("a too-large file", large, "the limit for a"),
        ("a directory", dir.join("subdir"), "a directory"),
    ]
}

/// Run `f` on a thread: its result within `limit`, or a panic naming
/// `what` (the thread is left behind: before the fix it never ends).
fn within<T: Send + 'static>(
    what: &str,
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    let start = Instant::now();
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(_) => panic!(
            "{what}: no answer within {limit:?} ({:?} waited)",
            start.elapsed()
        ),
    }
}

fn config_error(what: &str, r: Result<ClientConfig, Error>) -> String {
    match r {
        Err(e @ Error::Config { .. }) => e.to_string(),
        Err(e) => panic!("{what}: not a configuration error: {e}"),
        Ok(_) => panic!("{what}: loaded"),
    }
}

fn check(what: &str, msg: &str, path: &Path, want: &str) {
    assert!(
        msg.contains(&path.display().to_string()),
        "{what}: the error names the path: {msg}"
    );
    assert!(msg.contains(want), "{what}: the error says {want:?}: {msg}");
}

#[test]
fn a_kubeconfig_that_is_not_a_bounded_regular_file_fails_within_a_second() {
    let dir = tmpdir("kubeconfig");
    std::fs::create_dir_all(dir.join("subdir")).expect("subdir");
    for (label, path, want) in hostile(&dir) {
        let what = format!("kubeconfig at {label}");
        let p = path.clone();
        let msg = within(&what, Duration::from_secs(1), move || {
            config_error("kubeconfig", ClientConfig::from_kubeconfig_file(&p, None))
        });
        check(&what, &msg, &path, want);
        if label == "a too-large file" {
            assert!(msg.contains("4 MiB"), "{what}: names the limit: {msg}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn files_a_kubeconfig_names_fail_within_a_second() {
    let dir = tmpdir("kc-material");
    std::fs::create_dir_all(dir.join("subdir")).expect("subdir");
    let places = hostile(&dir);
    // (field, the kubeconfig's user or cluster stanza with PATH in it)
    let fields = [
        ("tokenFile", "user: {tokenFile: 'PATH'}"),
        ("certificate-authority", "cluster-ca: 'PATH'"),
        (
            "client-certificate",
            "user: {client-certificate: 'PATH', client-key-data: eA==}",
        ),
        (
            "client-key",
            "user: {client-certificate-data: eA==, client-key: 'PATH'}",
        ),
    ];
    for (field, stanza) in fields {
        for (label, path, want) in &places {
            let p = path.display().to_string();
            let (ca, user) = match stanza.strip_prefix("cluster-ca: ") {
                Some(ca) => (
                    format!(", certificate-authority: {}", ca.replace("PATH", &p)),
                    "user: {}".to_string(),
                ),
                None => (String::new(), stanza.replace("PATH", &p)),
            };
            let kc = format!(
                "current-context: x\nclusters: [{{name: c, cluster: {{server: 'https://h:6443'{ca}}}}}]\n\
                 users: [{{name: u, {user}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\n"
            );
            let what = format!("{field} at {label}");
            let base = dir.clone();
            let msg = within(&what, Duration::from_secs(1), move || {
                config_error(
                    "kubeconfig",
                    ClientConfig::from_kubeconfig_str(&kc, &base, None),
                )
            });
            check(&what, &msg, path, want);
            if *label == "a too-large file" {
                let limit = if field == "tokenFile" {
                    "64 KiB"
                } else {
                    "1 MiB"
                };
                assert!(msg.contains(limit), "{what}: names the limit: {msg}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_token_file_reread_is_bounded_too() {
    let dir = tmpdir("token-reread");
    std::fs::create_dir_all(dir.join("subdir")).expect("subdir");
    for (label, path, want) in hostile(&dir) {
        let what = format!("token file at {label}");
        let p = path.clone();
        let msg = within(
            &what,
            Duration::from_secs(1),
            move || match TokenFile::new(p).check() {
                Err(e) => e.to_string(),
                Ok(()) => panic!("read a token"),
            },
        );
        check(&what, &msg, &path, want);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn in_cluster_files_fail_within_a_second() {
    let dir = tmpdir("in-cluster");
    std::fs::create_dir_all(dir.join("subdir")).expect("subdir");
    let places = hostile(&dir);
    let env = |k: &str| match k {
        "KUBERNETES_SERVICE_HOST" => Some("10.0.0.1".to_string()),
        "KUBERNETES_SERVICE_PORT" => Some("443".to_string()),
        _ => None,
    };
    for file in ["ca.crt", "token", "namespace"] {
        for (label, path, want) in &places {
            let sa = dir.join(format!("sa-{file}-{}", label.replace(['/', ' '], "_")));
            std::fs::create_dir_all(&sa).expect("sa dir");
            std::fs::write(sa.join("ca.crt"), "CA").expect("ca");
            std::fs::write(sa.join("token"), "tok").expect("token");
            std::fs::write(sa.join("namespace"), "kube-system").expect("namespace");
            std::fs::remove_file(sa.join(file)).expect("rm");
            std::os::unix::fs::symlink(path, sa.join(file)).expect("symlink");
            let what = format!("in-cluster {file} at {label}");
            let r = within(&what, Duration::from_secs(1), move || {
                ClientConfig::in_cluster_from(&env, &sa).map(|c| c.namespace)
            });
            match (file, r) {
                // The namespace is optional: an unreadable one is left out.
                ("namespace", Ok(ns)) => assert_eq!(ns, None, "{what}"),
                (_, Err(e)) => {
                    let msg = e.to_string();
                    assert!(msg.contains(file), "{what}: names the file: {msg}");
                    assert!(msg.contains(want), "{what}: says {want:?}: {msg}");
                }
                (_, Ok(_)) => panic!("{what}: loaded"),
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
