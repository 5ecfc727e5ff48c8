//! Issue 37 item 6: files were read without a bound.
//! `check-config --config /dev/zero` grew to 20 GiB; a kubeconfig or
//! `KUBECONFIG` of `/dev/zero` to ~10 GiB; a FIFO hung for ever. Each now
//! fails at once (well within a second), exit 1, naming the path and the
//! file's kind or the limit.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::process::{Reaped, SpawnReaped};

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("endpointd-regr-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// (label, path, what stderr must say besides the path)
fn hostile(dir: &Path) -> Vec<(&'static str, PathBuf, &'static str)> {
    let fifo = dir.join("fifo");
    let ok = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo")
        .success();
    assert!(ok, "mkfifo {}", fifo.display());
    let large = dir.join("large.toml");
    // 5 MiB of comments: valid TOML, over the 1 MiB and 4 MiB caps.
    std::fs::write(&large, "# padding\n".repeat(512 * 1024)).expect("large file");
    let sub = dir.join("subdir");
    std::fs::create_dir_all(&sub).expect("subdir");
    vec![
        (
            "/dev/zero",
            PathBuf::from("/dev/zero"),
            "a character device",
        ),
        ("a FIFO", fifo, "a FIFO"),
        ("a too-large file", large, "the limit for a"),
        ("a directory", sub, "a directory"),
    ]
}

/// Run `cmd` (stderr captured); its exit code and stderr, or a panic when
/// it is still running after `limit` (it is killed then).
fn run_within(dir: &Path, what: &str, cmd: &mut Command, limit: Duration) -> (Option<i32>, String) {
    let err_path = dir.join(format!("{}.err", what.replace(['/', ' '], "_")));
    let err = std::fs::File::create(&err_path).expect("stderr file");
    let mut child: Reaped = cmd
        .env_remove("ENDPOINTD_CONFIG")
        .env_remove("NOTIFY_SOCKET")
        .env_remove("JOURNAL_STREAM")
        .env_remove("WATCHDOG_USEC")
        .stdout(Stdio::null())
        .stderr(Stdio::from(err))
        .spawn_reaped()
        .expect("spawn endpointd");
    let start = Instant::now();
    let code = loop {
        if let Ok(Some(s)) = child.try_wait() {
            break s.code();
        }
        assert!(
            start.elapsed() < limit,
            "{what}: still running after {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    (code, std::fs::read_to_string(&err_path).unwrap_or_default())
}

fn check(what: &str, (code, stderr): (Option<i32>, String), path: &Path, want: &str) {
    assert_eq!(code, Some(1), "{what}: exit 1; stderr: {stderr}");
    assert!(
        stderr.contains(&path.display().to_string()),
        "{what}: names the path: {stderr}"
    );
    assert!(stderr.contains(want), "{what}: says {want:?}: {stderr}");
}

#[test]
fn check_config_refuses_a_config_that_is_not_a_bounded_regular_file() {
    let dir = tmpdir("check-config");
    for (label, path, want) in hostile(&dir) {
        let what = format!("check-config --config {label}");
        let out = run_within(
            &dir,
            &what,
            Command::new(env!("CARGO_BIN_EXE_endpointd"))
                .args(["check-config", "--config"])
                .arg(&path),
            Duration::from_secs(1),
        );
        if label == "a too-large file" {
            assert!(
                out.1.contains("1 MiB"),
                "{what}: names the limit: {}",
                out.1
            );
        }
        check(&what, out, &path, want);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn run_refuses_a_kubeconfig_that_is_not_a_bounded_regular_file() {
    let dir = tmpdir("run-kubeconfig");
    for (label, path, want) in hostile(&dir) {
        // Through the configuration's key, and through $KUBECONFIG.
        let cfg = dir.join("config.toml");
        std::fs::write(
            &cfg,
            format!(
                "[kubernetes]\nkubeconfig = {:?}\n[server]\nlisten = \"\"\n",
                path.display().to_string()
            ),
        )
        .expect("config");
        let what = format!("run with kubernetes.kubeconfig at {label}");
        let out = run_within(
            &dir,
            &what,
            Command::new(env!("CARGO_BIN_EXE_endpointd"))
                .args(["run", "--config"])
                .arg(&cfg),
            Duration::from_secs(1),
        );
        check(&what, out, &path, want);
        std::fs::write(&cfg, "[server]\nlisten = \"\"\n").expect("config");
        let what = format!("run with KUBECONFIG at {label}");
        let out = run_within(
            &dir,
            &what,
            Command::new(env!("CARGO_BIN_EXE_endpointd"))
                .args(["run", "--config"])
                .arg(&cfg)
                .env("KUBECONFIG", &path),
            Duration::from_secs(1),
        );
        if label == "a too-large file" {
            assert!(
                out.1.contains("4 MiB"),
                "{what}: names the limit: {}",
                out.1
            );
        }
        check(&what, out, &path, want);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
