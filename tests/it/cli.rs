//! The `endpointd` binary as an operator meets it: exit codes, messages,
//! `check-config` output, and `run` under signals with a real NOTIFY_SOCKET.

use std::io::Read;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use kube_sim::server::{SimOptions, SimServer};

use crate::harness::process as process_support;
use process_support::{Reaped, SpawnReaped};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_endpointd"));
    c.env_remove("ENDPOINTD_CONFIG")
        .env_remove("RUST_LOG")
        .env_remove("NOTIFY_SOCKET")
        .env_remove("JOURNAL_STREAM")
        .env_remove("WATCHDOG_USEC");
    c
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("endpointd-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write file");
    p
}

/// A kube-sim on loopback with `pods` pods in `default`, and a kubeconfig for it.
fn sim_with_pods(dir: &Path, listen: &str, pods: usize) -> (SimServer, PathBuf) {
    let opts = SimOptions {
        listen: listen.parse().expect("listen address"),
        ..SimOptions::default()
    };
    let sim = SimServer::start(opts).expect("start kube-sim");
    let items: Vec<serde_json::Value> = (0..pods)
        .map(|i| {
            serde_json::json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("web-{i}"), "namespace": "default", "labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "img"}]}})
        })
        .collect();
    sim.store()
        .load_list(&serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}))
        .expect("load pods");
    let kc = dir.join("kubeconfig");
    sim.write_kubeconfig(&kc).expect("kubeconfig");
    (sim, kc)
}

/// A config file using `kubeconfig` plus `extra` TOML.
fn config_with(dir: &Path, kubeconfig: &Path, extra: &str) -> PathBuf {
    write(
        dir,
        "c.toml",
        &format!(
            "[kubernetes]\nkubeconfig = {:?}\n{extra}",
            kubeconfig.display().to_string()
        ),
    )
}

fn out(c: &mut Command) -> (i32, String, String) {
    let o: Output = c.output().expect("run endpointd");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn usage_errors_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "missing command"),
        (&["frobnicate"], "unknown command 'frobnicate'"),
        (&["run", "--bogus"], "invalid option '--bogus'"),
        (&["run", "--config"], "missing argument"),
    ];
    for (args, needle) in cases {
        let (code, stdout, stderr) = out(bin().args(*args));
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(stderr.contains("--help"), "{args:?}: {stderr}");
    }
}

#[test]
fn version_and_help_exit_0() {
    let (code, stdout, _) = out(bin().arg("--version"));
    assert_eq!(code, 0);
    assert_eq!(stdout, endpointd::buildinfo::version_text());
    let mut lines = stdout.lines();
    assert_eq!(
        lines.next(),
        Some(format!("endpointd {}", env!("CARGO_PKG_VERSION")).as_str())
    );
    // Version, commit with tree state, build date, rustc and target.
    for label in [
        "git version: v",
        "git commit:  ",
        "build date:  ",
        "rustc:       ",
        "target:      ",
    ] {
        assert!(lines.any(|l| l.starts_with(label)), "{label}: {stdout}");
    }
    let (code, stdout, _) = out(bin().arg("--help"));
    assert_eq!(code, 0);
    assert!(stdout.contains("check-config") && stdout.contains("Exit status"));
    let (code, stdout, _) = out(bin().args(["check-config", "--help"]));
    assert_eq!(code, 0);
    assert!(stdout.contains("Usage: endpointd check-config"));
}

#[test]
fn check_config_prints_effective_configuration() {
    let d = tmpdir("check-ok");
    let cfg = write(
        &d,
        "c.toml",
        "[endpointslices]\nmax_endpoints_per_slice = 500\n",
    );
    let (code, stdout, stderr) = out(bin().arg("check-config").arg("--config").arg(&cfg));
    assert_eq!(code, 0, "{stderr}");
    let v: toml::Table = toml::from_str(&stdout).expect("stdout is TOML");
    assert_eq!(
        v["endpointslices"]["max_endpoints_per_slice"].as_integer(),
        Some(500)
    );
    assert_eq!(v["endpoints"]["workers"].as_integer(), Some(5));
    assert_eq!(v["leader_election"]["lease_duration"].as_str(), Some("15s"));
    assert_eq!(v["server"]["listen"].as_str(), Some("127.0.0.1:10266"));
}

#[test]
fn check_config_of_the_shipped_file_and_via_env() {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("config.toml");
    let (code, stdout, stderr) = out(bin().arg("check-config").env("ENDPOINTD_CONFIG", &shipped));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("lease_name = \"endpointd\""), "{stdout}");
}

#[test]
fn check_config_errors_exit_1_and_name_the_key() {
    let d = tmpdir("check-bad");
    let cases = [
        (
            "[endpointslices]\nmax_endpoints_per_slice = 0\n",
            "endpointslices.max_endpoints_per_slice = 0: must be between 1 and 1000 (line 2)",
        ),
        ("[endpoints]\nwrkers = 1\n", "endpoints.wrkers = 1: unknown key `wrkers`"),
        (
            "[leader_election]\nrenew_deadline = \"20s\"\n",
            "leader_election.lease_duration: must be greater than leader_election.renew_deadline (20s)",
        ),
    ];
    for (i, (text, needle)) in cases.iter().enumerate() {
        let cfg = write(&d, &format!("bad{i}.toml"), text);
        let (code, stdout, stderr) = out(bin().args(["check-config", "-c"]).arg(&cfg));
        assert_eq!(code, 1, "{text}");
        assert!(stdout.is_empty());
        assert!(
            stderr.contains(&format!("{}: {needle}", cfg.display())),
            "{stderr}"
        );
    }
    let missing = d.join("nope.toml");
    let (code, _, stderr) = out(bin().args(["check-config", "-c"]).arg(&missing));
    assert_eq!(code, 1);
    assert!(
        stderr.contains("nope.toml: cannot read the configuration file"),
        "{stderr}"
    );
}

#[test]
fn run_with_invalid_config_exits_1() {
    let d = tmpdir("run-bad");
    let cfg = write(&d, "c.toml", "[log]\nlevel = \"loud\"\n");
    let (code, _, stderr) = out(bin().args(["run", "-c"]).arg(&cfg));
    assert_eq!(code, 1);
    assert!(stderr.contains("log.level = \"loud\""), "{stderr}");
}

fn recv_until(sock: &UnixDatagram, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 1024];
    while Instant::now() < deadline {
        if let Ok(n) = sock.recv(&mut buf) {
            let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
            if msg.contains(needle) {
                return msg;
            }
        }
    }
    panic!("no notification containing {needle:?}");
}

fn kill(pid: u32, sig: &str) {
    let st = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("kill");
    assert!(st.success());
}

fn wait_for_file(p: &Path, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(p).unwrap_or_default();
        if text.contains(needle) || Instant::now() > deadline {
            return text;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn run_notifies_systemd_reloads_on_sighup_and_stops_on_sigterm() {
    let d = tmpdir("run");
    let (_sim, kc) = sim_with_pods(&d, "127.0.0.1:0", 3);
    let cfg = config_with(
        &d,
        &kc,
        "[server]\nlisten = \"\"\n[log]\nlevel = \"info\"\n",
    );
    let sock_path = d.join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).expect("bind notify socket");
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let log_path = d.join("stderr.log");
    let log_file = std::fs::File::create(&log_path).expect("log file");
    // Make the child's stderr "the journal stream" so it uses journald format.
    let (dev, ino) = {
        use std::os::unix::fs::MetadataExt;
        let m = log_file.metadata().expect("stat");
        (m.dev(), m.ino())
    };
    let mut child = bin()
        .args(["run", "--config"])
        .arg(&cfg)
        .env("NOTIFY_SOCKET", &sock_path)
        .env("WATCHDOG_USEC", "200000")
        .env("JOURNAL_STREAM", format!("{dev}:{ino}"))
        .stdout(Stdio::null())
        .stderr(Stdio::from(log_file))
        .spawn_reaped()
        .expect("spawn");
    let ready = recv_until(&sock, "READY=1");
    let synced = ready.clone();
    assert!(synced.contains("STATUS=leading;"), "{ready}");
    assert!(
        synced
            .contains("3 pods, 0 services, 0 nodes, 4 namespaces, 0 endpoints, 0 endpointslices; ")
            && synced.contains(" syncs queued"),
        "{synced}"
    );
    recv_until(&sock, "WATCHDOG=1");

    let base = format!(
        "[kubernetes]\nkubeconfig = {:?}\n[server]\nlisten = \"\"\n",
        kc.display().to_string()
    );
    std::fs::write(
        &cfg,
        format!("{base}[log]\nlevel = \"debug\"\n[endpoints]\nworkers = 2\n"),
    )
    .expect("rewrite");
    kill(child.id(), "-HUP");
    let log = wait_for_file(&log_path, "take effect only after a restart");
    assert!(
        log.contains("<6>endpointd::daemon: reload: log level is now debug"),
        "{log}"
    );
    assert!(log.contains("<4>endpointd::daemon: reload: these changed settings take effect only after a restart: endpoints.workers"), "{log}");

    std::fs::write(&cfg, format!("{base}[log]\nlevel = \"nope\"\n")).expect("rewrite");
    kill(child.id(), "-HUP");
    let log = wait_for_file(&log_path, "keeping the running configuration");
    assert!(
        log.contains("<3>endpointd::daemon: reload: keeping the running configuration:"),
        "{log}"
    );
    assert!(
        child.try_wait().expect("wait").is_none(),
        "a bad reload must not stop the daemon"
    );

    kill(child.id(), "-TERM");
    recv_until(&sock, "STOPPING=1");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < deadline, "did not stop after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
    let mut log = String::new();
    std::fs::File::open(&log_path)
        .expect("log")
        .read_to_string(&mut log)
        .expect("read");
    assert!(
        log.contains("<6>endpointd::daemon::supervisor: controllers running: endpoint"),
        "{log}"
    );
    assert!(
        log.lines().all(|l| l.starts_with('<')),
        "journald lines only:\n{log}"
    );
}

use crate::harness::controller::free_port;

fn http_get(addr: &str, path: &str) -> (u16, String) {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut resp = String::new();
    s.read_to_string(&mut resp).expect("read");
    let code = resp
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = resp
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (code, body)
}

/// `endpointd run --config cfg`, returned once `addr` (its server.listen) accepts.
fn spawn_serving(cfg: &Path, addr: &str) -> Reaped {
    let child = bin()
        .args(["run", "--config"])
        .arg(cfg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_reaped()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < deadline, "endpoint never came up");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[test]
fn run_serves_health_metrics_and_readiness() {
    let d = tmpdir("serve");
    let (_sim, kc) = sim_with_pods(&d, "127.0.0.1:0", 7);
    let addr = format!("127.0.0.1:{}", free_port());
    let cfg = config_with(&d, &kc, &format!("[server]\nlisten = \"{addr}\"\n"));
    let mut child = spawn_serving(&cfg, &addr);
    assert_eq!(http_get(&addr, "/healthz"), (200, "ok\n".to_string()));
    let body = wait_for_readyz(&addr, "ok");
    assert_eq!(body, "ok: leading\n");
    let (code, body) = http_get(&addr, "/metrics");
    assert_eq!(code, 200);
    // Labelled as kubernetes_build_info is.
    let b = &endpointd::buildinfo::metric_values();
    let want = format!(
        "endpointd_build_info{{version=\"{}\",git_version=\"{}\",git_commit=\"{}\",\
         git_tree_state=\"{}\",build_date=\"{}\",rustc_version=\"{}\",platform=\"{}\"}} 1",
        b[0], b[1], b[2], b[3], b[4], b[5], b[6]
    );
    assert!(body.lines().any(|l| l == want), "{want}\n{body}");
    assert!(body.contains("process_resident_memory_bytes"), "{body}");
    assert!(
        body.contains("endpointd_informer_objects{resource=\"pods\"} 7"),
        "{body}"
    );
    assert!(
        body.contains("endpointd_informer_synced{resource=\"endpointslices.discovery.k8s.io\"} 1"),
        "{body}"
    );
    assert!(
        body.lines().any(|l| l
            .starts_with("rest_client_requests_total{code=\"200\",method=\"GET\",host=\"")
            && l.contains("\",resource=\"pods\"} ")),
        "{body}"
    );
    kill(child.id(), "-TERM");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn run_fails_clearly_when_the_listen_address_is_taken() {
    let d = tmpdir("taken");
    let (_sim, kc) = sim_with_pods(&d, "127.0.0.1:0", 0);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr");
    let cfg = config_with(&d, &kc, &format!("[server]\nlisten = \"{addr}\"\n"));
    let (code, _, stderr) = out(bin().args(["run", "-c"]).arg(&cfg));
    assert_eq!(code, 1);
    assert!(
        stderr.contains(&format!("server.listen = \"{addr}\"")),
        "{stderr}"
    );
}

fn wait_for_readyz(addr: &str, prefix: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (code, body) = http_get(addr, "/readyz");
        if body.starts_with(prefix) {
            let want = if prefix.starts_with("ok") { 200 } else { 503 };
            assert_eq!(code, want, "{body}");
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "/readyz never said {prefix:?}; last: {body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn run_without_a_usable_kubeconfig_exits_1_naming_it() {
    let d = tmpdir("no-kubeconfig");
    let missing = d.join("absent.kubeconfig");
    let cfg = config_with(&d, &missing, "[server]\nlisten = \"\"\n");
    let (code, _, stderr) = out(bin().args(["run", "-c"]).arg(&cfg));
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("cannot set up the API client"), "{stderr}");
    assert!(stderr.contains("absent.kubeconfig"), "{stderr}");
    let bad = write(&d, "bad.kubeconfig", "apiVersion: v1\nclusters: [\n");
    let cfg = config_with(&d, &bad, "[server]\nlisten = \"\"\n");
    let (code, _, stderr) = out(bin().args(["run", "-c"]).arg(&cfg));
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("bad.kubeconfig"), "{stderr}");
}

#[test]
fn run_keeps_going_while_the_api_server_is_down_and_syncs_once_it_is_up() {
    let d = tmpdir("late-apiserver");
    let api = format!("127.0.0.1:{}", free_port());
    // Write the kubeconfig of a kube-sim on `api`, then stop it: the daemon
    // starts with nothing listening there.
    let (sim, kc) = sim_with_pods(&d, &api, 0);
    sim.stop();
    let addr = format!("127.0.0.1:{}", free_port());
    let cfg = config_with(&d, &kc, &format!("[server]\nlisten = \"{addr}\"\n"));
    let mut child = spawn_serving(&cfg, &addr);
    let body = wait_for_readyz(&addr, "not ready: caches not synced: ");
    assert!(body.contains("pods"), "{body}");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        child.try_wait().expect("wait").is_none(),
        "must keep running while the API server is down"
    );
    let (_sim, _) = sim_with_pods(&d, &api, 2);
    wait_for_readyz(&addr, "ok");
    let (_, metrics) = http_get(&addr, "/metrics");
    assert!(
        metrics.contains("endpointd_informer_objects{resource=\"pods\"} 2"),
        "{metrics}"
    );
    kill(child.id(), "-TERM");
    assert_eq!(child.wait().expect("wait").code(), Some(0));
}

/// `endpointd run` with the Endpoints controller only, its sync of
/// `default/web` wedged by the test hook (called wedged after 600 ms),
/// notifying `sock` with the watchdog interval `watchdog_usec`. Returns
/// once the first `WATCHDOG=1` arrived (the health server then listens):
/// (kube-sim, health address, child).
fn run_wedged(d: &Path, sock: &UnixDatagram, watchdog_usec: &str) -> (SimServer, String, Reaped) {
    let (sim, kc) = sim_with_pods(d, "127.0.0.1:0", 2);
    sim.store()
        .load_list(&serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
             "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}]}))
        .expect("service");
    let addr = format!("127.0.0.1:{}", free_port());
    let cfg = config_with(
        d,
        &kc,
        &format!("[server]\nlisten = \"{addr}\"\n[endpointslices]\nenabled = false\n"),
    );
    let sock_path = sock
        .local_addr()
        .ok()
        .and_then(|a| a.as_pathname().map(Path::to_path_buf))
        .expect("notify socket path");
    let child = bin()
        .args(["run", "--config"])
        .arg(&cfg)
        .env("NOTIFY_SOCKET", &sock_path)
        .env("WATCHDOG_USEC", watchdog_usec)
        .env("ENDPOINTD_TEST_WEDGE", "default/web,600")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_reaped()
        .expect("spawn");
    recv_until(sock, "WATCHDOG=1");
    (sim, addr, child)
}

/// Poll `/healthz` until it fails (500), for at most 15 s: its body. On
/// timeout the message names what each thread of `pid` waits in.
fn wait_for_healthz_failure(addr: &str, pid: u32) -> String {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (code, body) = http_get(addr, "/healthz");
        if code == 500 {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "healthz never failed: {body}\nthreads (name, kernel wait channel):\n{}",
            thread_waits(pid)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One line per thread of `pid`: its name and where in the kernel it
/// waits (`/proc/<pid>/task/*/wchan`).
fn thread_waits(pid: u32) -> String {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return String::new();
    };
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    tasks
        .filter_map(|t| t.ok())
        .map(|t| {
            let p = t.path();
            let name = read(&p.join("comm"));
            format!("{} {}", name.trim(), read(&p.join("wchan")))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_wedged_worker_withholds_the_watchdog_and_fails_healthz() {
    if !cfg!(feature = "test-hooks") {
        eprintln!("skipped: needs the test-hooks feature (cargo test enables it)");
        return;
    }
    let d = tmpdir("wedge");
    let sock = UnixDatagram::bind(d.join("notify.sock")).expect("bind notify socket");
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout");
    let (_sim, addr, child) = run_wedged(&d, &sock, "400000");
    let body = wait_for_healthz_failure(&addr, child.0.id());
    assert!(
        body.contains("a worker has been syncing default/web"),
        "{body}"
    );
    // Drain what was sent before, then no ping for a while.
    while sock.recv(&mut [0u8; 1024]).is_ok() {}
    let quiet_until = Instant::now() + Duration::from_millis(1500);
    let mut buf = [0u8; 1024];
    while Instant::now() < quiet_until {
        if let Ok(n) = sock.recv(&mut buf) {
            let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
            assert!(!msg.contains("WATCHDOG=1"), "pinged while wedged: {msg}");
        }
    }
}

/// systemd reads its notify socket promptly, but a receiver that falls
/// behind must not stall the supervisor: Linux queues only
/// `net.unix.max_dgram_qlen` datagrams (10 by default) on it, and a
/// blocking send then waited until someone read, with `/healthz` left
/// passing for a wedged worker (the previous test failed so under load,
/// when the startup ticks alone filled the queue its reader leaves alone
/// after the first ping). Here nothing is read after the first ping and
/// the supervisor ticks every 20 ms: the queue is full long before the
/// worker counts as wedged.
#[test]
fn a_notify_socket_nobody_reads_does_not_stall_the_supervisor() {
    if !cfg!(feature = "test-hooks") {
        eprintln!("skipped: needs the test-hooks feature (cargo test enables it)");
        return;
    }
    let d = tmpdir("unread-notify");
    let sock = UnixDatagram::bind(d.join("notify.sock")).expect("bind notify socket");
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout");
    let (_sim, addr, child) = run_wedged(&d, &sock, "40000");
    let body = wait_for_healthz_failure(&addr, child.0.id());
    assert!(
        body.contains("a worker has been syncing default/web"),
        "{body}"
    );
}

/// READY=1 must reach systemd even if its first send finds the notify
/// socket's queue full (sends never block, so a full queue drops it): the
/// supervisor sends it again on a later tick.
#[test]
fn a_ready_that_finds_the_notify_queue_full_is_sent_again() {
    let d = tmpdir("ready-full");
    let (_sim, kc) = sim_with_pods(&d, "127.0.0.1:0", 2);
    let addr = format!("127.0.0.1:{}", free_port());
    let cfg = config_with(&d, &kc, &format!("[server]\nlisten = \"{addr}\"\n"));
    let sock_path = d.join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).expect("bind notify socket");
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout");
    // Fill the queue first: endpointd's first notifications find no room.
    let filler = UnixDatagram::unbound().expect("socket");
    filler.set_nonblocking(true).expect("nonblocking");
    let mut queued = 0;
    while filler.send_to(b"FILLER=1", &sock_path).is_ok() {
        queued += 1;
        assert!(queued < 100_000, "the queue never filled");
    }
    let _child = bin()
        .args(["run", "--config"])
        .arg(&cfg)
        .env("NOTIFY_SOCKET", &sock_path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_reaped()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(Instant::now() < deadline, "endpointd never came up");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Ready is set just before READY=1 is sent (and found no room).
    wait_for_readyz(&addr, "ok");
    // Drain the filler (and a READY=1 that raced in after it); READY=1
    // then arrives, or already did.
    let mut buf = [0u8; 1024];
    let mut ready = None;
    while let Ok(n) = sock.recv(&mut buf) {
        let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
        if msg.contains("READY=1") {
            ready = Some(msg);
        }
    }
    let ready = ready.unwrap_or_else(|| recv_until(&sock, "READY=1"));
    assert!(ready.contains("STATUS=leading;"), "{ready}");
}

#[test]
fn trace_logs_never_contain_the_token_or_a_url_password() {
    let d = tmpdir("secrets");
    let token = "s3cretTOKEN-0123456789abcdef";
    let sim = SimServer::start(SimOptions {
        token: Some(token.to_string()),
        ..SimOptions::default()
    })
    .expect("kube-sim");
    sim.store()
        .load_list(&serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
             "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"}},
             "spec": {"containers": [{"name": "c", "image": "i"}]},
             "status": {"phase": "Running", "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}],
                        "conditions": [{"type": "Ready", "status": "True"}]}}]}))
        .expect("fixtures");
    let kc = d.join("kubeconfig");
    sim.write_kubeconfig(&kc).expect("kubeconfig");
    let password = "hunter2-Pa55word";
    let text = std::fs::read_to_string(&kc).expect("read kubeconfig");
    let url = sim.url().to_string();
    let with_password = url.replacen("http://", &format!("http://admin:{password}@"), 1);
    std::fs::write(&kc, text.replace(&url, &with_password)).expect("rewrite kubeconfig");
    let (_, log_path, mut child) = run_at_trace(&d, &kc);
    let deadline = Instant::now() + Duration::from_secs(15);
    while sim
        .store()
        .write_log()
        .iter()
        .all(|w| w.resource != "endpointslices")
    {
        assert!(Instant::now() < deadline, "no write happened");
        std::thread::sleep(Duration::from_millis(50));
    }
    kill(child.id(), "-TERM");
    let _ = child.wait();
    let log = std::fs::read_to_string(&log_path).expect("log");
    assert!(
        log.contains("TRACE") || log.contains("DEBUG"),
        "trace logging was on:\n{log}"
    );
    assert_no_piece_of(&[token, password], &log);
    assert!(log.contains("***@"), "the server URL is shown redacted");
}

/// `endpointd run` against `kc` at log level trace (no server), its log
/// going to a file: (config, log path, child).
fn run_at_trace(d: &Path, kc: &Path) -> (PathBuf, PathBuf, Reaped) {
    let cfg = config_with(d, kc, "[server]\nlisten = \"\"\n[log]\nlevel = \"trace\"\n");
    let log_path = d.join("trace.log");
    let child = bin()
        .args(["run", "--config"])
        .arg(&cfg)
        .env("RUST_LOG", "trace")
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&log_path).expect("log")))
        .spawn_reaped()
        .expect("spawn");
    (cfg, log_path, child)
}

/// No 8-character piece of any secret appears in `text`.
fn assert_no_piece_of(secrets: &[&str], text: &str) {
    for secret in secrets {
        for i in 0..=secret.len() - 8 {
            let piece = &secret[i..i + 8];
            assert!(
                !text.contains(piece),
                "{piece:?} of a secret in the output:\n{text}"
            );
        }
    }
}

#[test]
fn failed_connections_never_show_the_url_password() {
    let d = tmpdir("secrets-failed");
    let password = "hunter2-Pa55word";
    let token = "s3cretTOKEN-0123456789abcdef";
    // Nothing listens there: every request fails to connect.
    let port = free_port();
    let kc = d.join("kubeconfig");
    std::fs::write(
        &kc,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://admin:{password}@127.0.0.1:{port}\nusers:\n- name: u\n  user:\n    token: {token}\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"
        ),
    )
    .expect("kubeconfig");
    let (cfg, log_path, mut child) = run_at_trace(&d, &kc);
    std::thread::sleep(Duration::from_secs(3));
    kill(child.id(), "-TERM");
    let _ = child.wait();
    let log = std::fs::read_to_string(&log_path).expect("log");
    assert!(
        log.contains("127.0.0.1") && log.contains("***@"),
        "the connection failures were logged, redacted:\n{log}"
    );
    assert_no_piece_of(&[token, password], &log);

    // The one-shot command prints the failure as its error.
    let (code, stdout, stderr) = out(bin()
        .args(["explain", "--config"])
        .arg(&cfg)
        .args(["-n", "default", "web"]));
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("***@"), "{stderr}");
    assert_no_piece_of(&[token, password], &format!("{stdout}{stderr}"));
}

#[test]
fn a_kubeconfig_readable_by_others_is_warned_about() {
    use std::os::unix::fs::PermissionsExt;
    let d = tmpdir("perms");
    let (_sim, kc) = sim_with_pods(&d, "127.0.0.1:0", 0);
    let cfg = config_with(&d, &kc, "[server]\nlisten = \"\"\n");
    let log_path = d.join("run.log");
    let run = |mode: u32| {
        std::fs::set_permissions(&kc, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let mut child = bin()
            .args(["run", "--config"])
            .arg(&cfg)
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&log_path).expect("log")))
            .spawn_reaped()
            .expect("spawn");
        wait_for_file(&log_path, "caches synced");
        kill(child.id(), "-TERM");
        assert_eq!(child.wait().expect("wait").code(), Some(0));
        std::fs::read_to_string(&log_path).expect("log")
    };
    let exposed = run(0o644);
    assert!(
        exposed.contains("is readable by group or others (mode 0644)")
            && exposed.contains("chmod 600"),
        "{exposed}"
    );
    let private = run(0o600);
    assert!(
        !private.contains("readable by group or others"),
        "{private}"
    );
}

/// Output into a pipe whose reader has gone (`endpointd … | head`): exit 0
/// and no panic (`print!` panics on EPIPE; Rust ignores SIGPIPE).
#[test]
fn a_closed_output_pipe_is_not_a_panic() {
    let d = tmpdir("closed-pipe");
    let cfg = write(&d, "c.toml", "");
    for args in [&["--help"][..], &["--version"], &["check-config", "-c"]] {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let mut c = bin();
        c.args(args);
        if args[0] == "check-config" {
            c.arg(&cfg);
        }
        let o = c
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .expect("run endpointd");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
