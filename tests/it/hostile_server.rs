//! The real `endpointd` binary against small misbehaving API servers
//! (issue 17): one that never answers, one that only asks to retry later,
//! one whose LIST body never ends, and one whose LIST pages repeat their
//! continue token. endpointd must exit within 5 s of SIGTERM in each state,
//! the endless LIST must not grow it beyond the configured body cap (and is
//! counted), and `explain` must end a LIST that does not advance.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::harness::process as process_support;
use process_support::{Reaped, SpawnReaped};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the server does with every request.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// Reads the request, never answers (a stuck server or a dead link).
    BlackHole,
    /// 503 with `Retry-After: 30` (an overloaded server).
    RetryLater,
    /// 200 and a LIST body that never ends.
    EndlessList,
    /// A Service on GET; every LIST page ends with the same continue token.
    RepeatedContinue,
}

struct Hostile {
    port: u16,
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicUsize>,
}

impl Hostile {
    fn start(mode: Mode) -> Hostile {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        l.set_nonblocking(true).expect("nonblocking");
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicUsize::new(0));
        let (s, r) = (Arc::clone(&stop), Arc::clone(&requests));
        std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                match l.accept() {
                    Ok((c, _)) => {
                        let (s, r) = (Arc::clone(&s), Arc::clone(&r));
                        std::thread::spawn(move || serve(c, mode, &s, &r));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Hostile {
            port,
            stop,
            requests,
        }
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The request line of the next request, or None.
fn read_request(c: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut b = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match c.read(&mut b) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&b[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf);
    Some(head.lines().next().unwrap_or("").to_string())
}

fn respond(c: &mut TcpStream, status: &str, body: &str) -> bool {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    c.write_all(head.as_bytes()).is_ok() && c.write_all(body.as_bytes()).is_ok()
}

fn serve(mut c: TcpStream, mode: Mode, stop: &AtomicBool, requests: &AtomicUsize) {
    let _ = c.set_read_timeout(Some(Duration::from_millis(200)));
    loop {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Some(line) = read_request(&mut c) else {
            // Timed out between requests: keep the connection.
            if c.peer_addr().is_err() {
                return;
            }
            let mut probe = [0u8; 1];
            match c.peek(&mut probe) {
                Ok(0) => return,
                _ => continue,
            }
        };
        requests.fetch_add(1, Ordering::SeqCst);
        match mode {
            Mode::BlackHole => {
                while !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(50));
                }
                return;
            }
            Mode::RetryLater => {
                let body = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"ServiceUnavailable","code":503,"message":"try later"}"#;
                let head = format!(
                    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 30\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                );
                if c.write_all(head.as_bytes()).is_err() || c.write_all(body.as_bytes()).is_err() {
                    return;
                }
            }
            Mode::RepeatedContinue => {
                let ok = if line.contains("/services/web") {
                    respond(
                        &mut c,
                        "200 OK",
                        r#"{"kind":"Service","apiVersion":"v1","metadata":{"name":"web","namespace":"x","uid":"u","resourceVersion":"1"},"spec":{"selector":{"app":"web"},"ports":[{"port":80,"protocol":"TCP"}]}}"#,
                    )
                } else if line.contains("/endpoints/") {
                    respond(
                        &mut c,
                        "404 Not Found",
                        r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}"#,
                    )
                } else {
                    respond(
                        &mut c,
                        "200 OK",
                        r#"{"kind":"List","metadata":{"resourceVersion":"1","continue":"again"},"items":[{"metadata":{"name":"p","namespace":"x","resourceVersion":"1"}}]}"#,
                    )
                };
                if !ok {
                    return;
                }
            }
            Mode::EndlessList => {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[";
                if c.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let mut i = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    let mut chunk = String::with_capacity(64 * 1024);
                    while chunk.len() < 60 * 1024 {
                        let sep = if i == 0 { "" } else { "," };
                        chunk.push_str(&format!(
                            "{sep}{{\"metadata\":{{\"name\":\"p{i}\",\"namespace\":\"x\",\"resourceVersion\":\"1\"}}}}"
                        ));
                        i += 1;
                    }
                    if c.write_all(chunk.as_bytes()).is_err() {
                        return;
                    }
                }
                return;
            }
        }
    }
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("endpointd-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn config(dir: &Path, port: u16, extra: &str) -> PathBuf {
    let kc = dir.join("kubeconfig");
    std::fs::write(
        &kc,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:{port}\nusers:\n- name: u\n  user:\n    token: not-a-secret\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"
        ),
    )
    .expect("kubeconfig");
    let cfg = dir.join("c.toml");
    std::fs::write(
        &cfg,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[kubernetes]\nkubeconfig = {:?}\n{extra}",
            kc.display().to_string()
        ),
    )
    .expect("config");
    cfg
}

fn spawn(cfg: &Path) -> Reaped {
    Command::new(env!("CARGO_BIN_EXE_endpointd"))
        .args(["run", "--config"])
        .arg(cfg)
        .env_remove("NOTIFY_SOCKET")
        .env_remove("WATCHDOG_USEC")
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn_reaped()
        .expect("spawn endpointd")
}

/// `VmHWM` (peak RSS) of a running process, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// SIGTERM, then the time until the process exited and its stderr.
fn terminate(mut child: Reaped) -> (Duration, Option<i32>, String) {
    let t = Instant::now();
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(st.success());
    let deadline = t + Duration::from_secs(30);
    let code = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = t.elapsed();
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    (took, code, err)
}

const EXIT_BOUND: Duration = Duration::from_secs(5);

fn assert_prompt_exit(name: &str, child: Reaped) -> String {
    let (took, code, err) = terminate(child);
    eprintln!("{name}: exited {took:?} after SIGTERM");
    assert!(took < EXIT_BOUND, "{name}: took {took:?} to exit\n{err}");
    assert_eq!(code, Some(0), "{name}\n{err}");
    err
}

#[test]
fn sigterm_mid_request_to_a_server_that_never_answers() {
    let s = Hostile::start(Mode::BlackHole);
    let d = tmpdir("blackhole");
    let child = spawn(&config(&d, s.port, ""));
    let t = Instant::now();
    while s.requests.load(Ordering::SeqCst) < 4 && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let n = s.requests.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(500));
    let err = assert_prompt_exit("black hole", child);
    assert!(n >= 4, "{n} requests in flight\n{err}");
}

#[test]
fn sigterm_while_backing_off_from_a_server_that_asks_to_retry_later() {
    let s = Hostile::start(Mode::RetryLater);
    let d = tmpdir("retry-later");
    let child = spawn(&config(&d, s.port, ""));
    let t = Instant::now();
    while s.requests.load(Ordering::SeqCst) < 6 && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    // Every requester is now waiting out a Retry-After (10 s client cap,
    // 30 s in the informers' backoff).
    std::thread::sleep(Duration::from_millis(1000));
    assert_prompt_exit("retry later", child);
}

#[test]
fn an_endless_list_is_cut_at_the_body_cap_and_sigterm_still_ends_the_sync() {
    // Idle footprint: the same binary against a server that never answers.
    let idle = Hostile::start(Mode::BlackHole);
    let d = tmpdir("idle");
    let child = spawn(&config(&d, idle.port, ""));
    std::thread::sleep(Duration::from_millis(1500));
    let idle_kib = peak_rss_kib(child.id());
    assert_prompt_exit("idle", child);

    let cap: u64 = 8 << 20;
    let s = Hostile::start(Mode::EndlessList);
    let d = tmpdir("endless");
    let listen = format!("127.0.0.1:{}", free_port());
    let cfg = config(&d, s.port, &format!("max_response_bytes = {cap}\n"));
    let text = std::fs::read_to_string(&cfg).expect("config");
    std::fs::write(&cfg, text.replace("127.0.0.1:0", &listen)).expect("config");
    let child = spawn(&cfg);
    let pid = child.id();
    // Several capped LISTs: each reads up to the cap, fails, backs off.
    std::thread::sleep(Duration::from_secs(4));
    let peak_kib = peak_rss_kib(pid);
    let rejected = too_large_bodies(&listen);
    assert!(
        rejected >= 1.0,
        "endpointd_client_response_body_errors_total{{kind=\"too_large\"}} = {rejected}"
    );
    let err = assert_prompt_exit("endless list (syncing)", child);
    let bound_kib = 2 * cap / 1024 + idle_kib;
    eprintln!("endless LIST: peak RSS {peak_kib} KiB (idle {idle_kib} KiB, bound {bound_kib} KiB)");
    assert!(peak_kib > 0 && idle_kib > 0);
    assert!(
        peak_kib < bound_kib,
        "peak RSS {peak_kib} KiB over 2 x cap + idle = {bound_kib} KiB"
    );
    assert!(
        err.contains("exceeds the limit of") && err.contains("kubernetes.max"),
        "the error names the limit and its key:\n{err}"
    );
}

use crate::harness::controller::free_port;

/// The sum of `endpointd_client_response_body_errors_total{kind="too_large"}`
/// over its series, read from `/metrics`.
fn too_large_bodies(listen: &str) -> f64 {
    let Ok(mut s) = TcpStream::connect(listen) else {
        return 0.0;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    );
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.lines()
        .filter(|l| {
            l.starts_with("endpointd_client_response_body_errors_total{")
                && l.contains("kind=\"too_large\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn explain_ends_a_list_whose_continue_token_repeats() {
    let s = Hostile::start(Mode::RepeatedContinue);
    let d = tmpdir("explain-repeat");
    let cfg = config(&d, s.port, "");
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_endpointd"))
        .args(["explain", "--config"])
        .arg(&cfg)
        .args(["-n", "x", "web"])
        .env_remove("RUST_LOG")
        .output()
        .expect("endpointd explain");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("continue token again") && err.contains("pods"),
        "names the LIST and the fault: {err}"
    );
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(s.requests.load(Ordering::SeqCst) < 10, "no endless paging");
}
