//! The bench's processes and fixtures: kube-sim and endpointd as separate
//! processes on loopback, a generated cluster, /proc sampling.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Cluster size.
#[derive(Clone, Copy, Debug)]
pub struct Size {
    pub services: usize,
    pub pods: usize,
    pub nodes: usize,
}

pub fn ip(i: usize) -> String {
    format!("10.{}.{}.{}", 1 + i / 65536, (i / 256) % 256, i % 256)
}

pub fn pod(i: usize, svc: usize, nodes: usize, ready: bool) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("p-{i}"), "namespace": "bench", "labels": {"app": format!("s-{svc}")}},
        "spec": {"nodeName": format!("n-{}", i % nodes), "containers": [{"name": "c", "image": "i",
                 "ports": [{"name": "http", "containerPort": 8080}]}]},
        "status": {"phase": "Running", "podIP": ip(i), "podIPs": [{"ip": ip(i)}],
                   "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"},
                                   "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
}

/// A v1 List of the cluster: pods spread over services round robin.
pub fn cluster(size: Size) -> Value {
    let mut items =
        vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})];
    for n in 0..size.nodes {
        items.push(json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("n-{n}"), "labels": {"topology.kubernetes.io/zone": format!("z-{}", n % 3)}},
            "status": {"allocatable": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}]}}));
    }
    for s in 0..size.services {
        items.push(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("s-{s}"), "namespace": "bench"},
            "spec": {"selector": {"app": format!("s-{s}")}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}));
    }
    for i in 0..size.pods {
        items.push(pod(i, i % size.services.max(1), size.nodes.max(1), true));
    }
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

/// Σ max(1, ceil(endpoints/100)) slices + 1 Endpoints per service.
pub fn minimum_writes(size: Size) -> (usize, usize) {
    let per = |s: usize| size.pods / size.services + usize::from(s < size.pods % size.services);
    let slices = (0..size.services)
        .map(|s| per(s).div_ceil(100).max(1))
        .sum();
    (size.services, slices)
}

pub struct Proc {
    pub child: Child,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
    pub fn term(mut self) -> Option<i32> {
        // SAFETY: kill(2) on our own child with a valid signal.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(s)) = self.child.try_wait() {
                return s.code();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }
    /// Resident memory in bytes.
    pub fn rss(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        s.lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    }
    /// User + system CPU seconds.
    pub fn cpu(&self) -> f64 {
        let s = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap_or_default();
        let after = s.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<&str> = after.split_whitespace().collect();
        let ticks: f64 = f.get(11).and_then(|x| x.parse().ok()).unwrap_or(0.0)
            + f.get(12).and_then(|x| x.parse().ok()).unwrap_or(0.0);
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        ticks / hz
    }
}

/// The first argument that makes the bench binary run as kube-sim.
pub const AS_KUBE_SIM: &str = "--as-kube-sim";

/// Start kube-sim with `list` loaded; its URL and kubeconfig.
pub fn kube_sim(dir: &Path, list: &Value) -> (Proc, String, PathBuf) {
    kube_sim_with(dir, list, &[])
}

/// [`kube_sim`] with more of kube-sim's flags.
pub fn kube_sim_with(dir: &Path, list: &Value, flags: &[&str]) -> (Proc, String, PathBuf) {
    let load = dir.join("cluster.json");
    std::fs::write(&load, list.to_string()).expect("write cluster");
    let kc = dir.join("kubeconfig");
    let me = std::env::current_exe().expect("the bench's own path");
    let mut child = Command::new(me)
        .arg(AS_KUBE_SIM)
        .args(["--listen", "127.0.0.1:0", "--history", "1000000", "--load"])
        .arg(&load)
        .arg("--kubeconfig-out")
        .arg(&kc)
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kube-sim");
    let mut line = String::new();
    let out = child.stdout.take().expect("stdout");
    BufReader::new(out).read_line(&mut line).expect("url");
    let url = line.trim().to_string();
    let latency = SERVER_LATENCY_MS.load(std::sync::atomic::Ordering::Relaxed);
    if latency > 0 {
        let body = json!({ "latencyMs": latency }).to_string();
        let addr = url.trim_start_matches("http://");
        http_send(addr, "POST", "/sim/faults", &body).expect("set kube-sim's latency");
    }
    (Proc { child }, url, kc)
}

/// `--server-latency-ms`: every kube-sim the bench starts answers each
/// resource request after this long (its `latencyMs` fault), standing in
/// for the per-request cost of a real API server and its etcd.
pub static SERVER_LATENCY_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Start `endpointd run` with `extra` TOML; its metrics address.
pub fn endpointd(dir: &Path, kc: &Path, name: &str, extra: &str) -> (Proc, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port");
    let addr = format!("127.0.0.1:{port}");
    let cfg = dir.join(format!("{name}.toml"));
    std::fs::write(
        &cfg,
        format!(
            "[kubernetes]\nkubeconfig = {:?}\nqps = 1000.0\nburst = 2000\n[leader_election]\nidentity = {name:?}\n[server]\nlisten = {addr:?}\n[log]\nlevel = \"warn\"\n{extra}",
            kc.display().to_string()
        ),
    )
    .expect("config");
    let child = Command::new(env!("CARGO_BIN_EXE_endpointd"))
        .args(["run", "--config"])
        .arg(&cfg)
        .env_remove("RUST_LOG")
        .env_remove("NOTIFY_SOCKET")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("endpointd");
    (Proc { child }, addr)
}

pub fn http_get(addr: &str, path: &str) -> Option<String> {
    http_send(addr, "GET", path, "")
}

/// One request with `body` (JSON when not empty); the body of a 200 answer.
pub fn http_send(addr: &str, method: &str, path: &str, body: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut r = String::new();
    s.read_to_string(&mut r).ok()?;
    if !r.starts_with("HTTP/1.1 200") {
        return None;
    }
    r.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

/// endpointd's Endpoints and EndpointSlice writes (by user agent) in
/// kube-sim's log, read incrementally (`/sim/requests?since=N`): each poll
/// fetches only the writes since the previous one. The whole log of a
/// full-size run is 2.3 MB, which kube-sim clones under its store's lock
/// and this side parses; fetched every 50 ms while a cold start was being
/// timed, it took CPU (and the store lock) from the two processes being
/// measured.
pub struct WriteLog {
    addr: String,
    next: u64,
    counts: (usize, usize),
    first: Option<f64>,
    last: Option<f64>,
}

impl WriteLog {
    /// A cursor that has read the log so far.
    pub fn new(sim_url: &str) -> WriteLog {
        let mut w = WriteLog {
            addr: sim_url.trim_start_matches("http://").to_string(),
            next: 0,
            counts: (0, 0),
            first: None,
            last: None,
        };
        w.poll();
        w
    }

    /// Read what was written since the last poll; endpointd's (Endpoints,
    /// slices) writes so far.
    pub fn poll(&mut self) -> (usize, usize) {
        let path = format!("/sim/requests?since={}", self.next);
        let Some(v) =
            http_get(&self.addr, &path).and_then(|b| serde_json::from_str::<Value>(&b).ok())
        else {
            return self.counts;
        };
        for w in v["writes"].as_array().into_iter().flatten() {
            if !w["userAgent"]
                .as_str()
                .unwrap_or("")
                .starts_with("endpointd/")
            {
                continue;
            }
            match w["resource"].as_str() {
                Some("endpoints") => self.counts.0 += 1,
                Some("endpointslices") => self.counts.1 += 1,
                _ => continue,
            }
            if let Some(t) = w["time"].as_f64() {
                self.first = Some(self.first.map_or(t, |f| f.min(t)));
                self.last = Some(self.last.map_or(t, |l| l.max(t)));
            }
        }
        if let Some(n) = v["writesTotal"].as_u64() {
            self.next = n;
        }
        self.counts
    }

    /// When (kube-sim's clock, seconds since the epoch) endpointd last
    /// wrote an Endpoints or EndpointSlice, as far as read.
    pub fn last_write_time(&self) -> Option<f64> {
        self.last
    }

    /// When endpointd first wrote one, as far as read.
    pub fn first_write_time(&self) -> Option<f64> {
        self.first
    }
}

/// Endpointd's writes (by user agent) per resource, from kube-sim's log.
pub fn writes(sim_url: &str) -> (usize, usize) {
    WriteLog::new(sim_url).counts
}

/// Wait until endpointd's write counts stop moving for `quiet`.
pub fn settle(sim_url: &str, quiet: Duration, limit: Duration) -> ((usize, usize), Instant) {
    settle_log(&mut WriteLog::new(sim_url), quiet, limit)
}

/// [`settle`] reading through `log`.
pub fn settle_log(
    log: &mut WriteLog,
    quiet: Duration,
    limit: Duration,
) -> ((usize, usize), Instant) {
    let deadline = Instant::now() + limit;
    let mut last = (log.counts, Instant::now());
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        let w = log.poll();
        if w != last.0 {
            last = (w, Instant::now());
        } else if last.1.elapsed() >= quiet {
            break;
        }
    }
    last
}

pub fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i.min(v.len() - 1)]
}
