//! Shared harness of the controller integration tests: a kube-sim on
//! loopback, fixtures written straight into its store (one transaction per
//! step, so a step is one burst of watch events), the real `endpointd`
//! binary as a child process against it, polling, and the write log.
#![allow(dead_code)] // each test binary uses a different subset

pub mod churn;
pub mod converge;

use kube_sim::resources::lookup;
use kube_sim::server::{SimOptions, SimServer};
use kube_sim::store::{Key, WriteRecord};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A kube-sim and a scratch directory with its kubeconfig.
pub struct Cluster {
    pub sim: SimServer,
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
}

pub fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("endpointd-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

pub fn key(resource: &str, ns: &str, name: &str) -> Key {
    let (group, version) = match resource {
        "endpointslices" => ("discovery.k8s.io", "v1"),
        "leases" => ("coordination.k8s.io", "v1"),
        _ => ("", "v1"),
    };
    Key::new(lookup(group, version, resource).expect("served"), ns, name)
}

/// A Service selecting `app=<app>` with one TCP port 80 → `target`.
pub fn service(ns: &str, name: &str, app: &str, target: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": ns, "labels": {"team": "edge"}},
        "spec": {"selector": {"app": app}, "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": target}]}})
}

/// A running pod of `app` with one IP, optionally Ready.
pub fn pod(ns: &str, name: &str, app: &str, ip: &str, ready: bool) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
        "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "img",
                 "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]}]},
        "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                   "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"},
                                   "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
}

pub fn node(name: &str, zone: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
        "status": {"allocatable": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}]}})
}

pub fn ip(i: usize) -> String {
    format!("10.{}.{}.{}", 1 + i / 65536, (i / 256) % 256, i % 256)
}

impl Cluster {
    /// [`Cluster::start`] loaded with node `node-a` (zone-a), Service
    /// `default/web` (port 8080) and a ready pod `web` per name in `pods`.
    pub fn with_web(name: &str, pods: &[String]) -> Cluster {
        let c = Cluster::start(name);
        let mut items = vec![
            node("node-a", "zone-a"),
            service("default", "web", "web", json!(8080)),
        ];
        items.extend(
            pods.iter()
                .enumerate()
                .map(|(i, n)| pod("default", n, "web", &ip(i), true)),
        );
        c.load(items);
        c
    }

    /// The EndpointSlice of Service `default/web` holding `n` endpoints.
    pub fn web_slice(&self, n: usize) -> Option<Value> {
        self.all("endpointslices").into_iter().find(|s| {
            s["metadata"]["labels"]["kubernetes.io/service-name"] == "web"
                && s["endpoints"].as_array().map(Vec::len) == Some(n)
        })
    }

    pub fn start(name: &str) -> Cluster {
        let opts = SimOptions {
            listen: "127.0.0.1:0".parse().expect("addr"),
            ..SimOptions::default()
        };
        Cluster::start_with(name, opts)
    }

    /// A cluster whose kube-sim starts with `opts`.
    pub fn start_with(name: &str, opts: SimOptions) -> Cluster {
        let sim = SimServer::start(opts).expect("start kube-sim");
        let dir = tmpdir(name);
        let kubeconfig = dir.join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        Cluster {
            sim,
            dir,
            kubeconfig,
        }
    }

    /// Create `items` in one transaction (namespaces first).
    pub fn load(&self, items: Vec<Value>) {
        let n = items.len();
        let created = self
            .sim
            .store()
            .load_list(&json!({"apiVersion": "v1", "kind": "List", "items": items}))
            .expect("load into kube-sim");
        assert_eq!(created, n);
    }

    /// The stored object, as JSON.
    pub fn get(&self, resource: &str, ns: &str, name: &str) -> Option<Value> {
        let k = key(resource, ns, name);
        self.sim.store().txn(|t| t.get(&k).map(|o| o.value()))
    }

    /// Every stored object of `resource`.
    pub fn all(&self, resource: &str) -> Vec<Value> {
        self.sim
            .store()
            .txn(|t| t.all_of(resource).iter().map(|o| o.value()).collect())
    }

    /// Change stored objects in one transaction.
    pub fn modify(&self, resource: &str, ns: &str, names: &[String], f: impl Fn(&mut Value)) {
        self.sim.store().txn(|t| {
            for name in names {
                let k = key(resource, ns, name);
                let mut v = t.get(&k).expect("object exists").value();
                f(&mut v);
                t.put(&k, "update", v);
            }
        });
    }

    /// Stall the watches of `resource` only (a lossy link stopping that
    /// one stream) and end every open watch, so that the informer of
    /// `resource` comes back into a silent stream; returns once it has.
    /// `Faults::stall_watches(false)` lifts it.
    pub fn stall_watches_of(&self, resource: &str, limit: Duration) {
        self.sim.faults().stall_watches_of(resource);
        self.sim.faults().close_all_watches();
        wait_until(&format!("the {resource} watch back, silent"), limit, || {
            self.sim.faults().snapshot()["stalledWatches"] == 1
        });
    }

    /// Set the Ready condition of pods, in one transaction.
    pub fn set_ready(&self, ns: &str, names: &[String], ready: bool) {
        self.modify("pods", ns, names, |v| {
            v["status"]["conditions"] = json!([{"type": "Ready",
                "status": if ready {"True"} else {"False"},
                "lastTransitionTime": "2026-01-01T00:00:01Z"}]);
        });
    }

    /// A readiness-flap storm: 4 threads, 150 random flips each, no pause,
    /// seeded so a failure reproduces.
    pub fn flap_storm(&self, ns: &str, pods: &[String], seed: u64) {
        std::thread::scope(|s| {
            for t in 0..4u64 {
                s.spawn(move || {
                    let mut rng = fastrand::Rng::with_seed(seed + t);
                    for _ in 0..150 {
                        let p = pods[rng.usize(..pods.len())].clone();
                        self.set_ready(ns, &[p], rng.bool());
                    }
                });
            }
        });
    }

    /// The IPs of the pods of `ns` whose Ready condition is True.
    pub fn ready_ips(&self, ns: &str) -> std::collections::BTreeSet<String> {
        self.all("pods")
            .iter()
            .filter(|p| p["metadata"]["namespace"] == ns)
            .filter(|p| p["status"]["conditions"][0]["status"] == "True")
            .map(|p| p["status"]["podIP"].as_str().unwrap_or("").to_string())
            .collect()
    }

    /// Delete objects, in one transaction.
    pub fn delete(&self, resource: &str, ns: &str, names: &[String]) {
        self.sim.store().txn(|t| {
            for name in names {
                t.delete(&key(resource, ns, name), "delete");
            }
        });
    }

    /// Writes endpointd made to `resource` (the tests never write it).
    pub fn writes(&self, resource: &str) -> Vec<WriteRecord> {
        self.sim
            .store()
            .write_log()
            .into_iter()
            .filter(|w| w.resource == resource)
            .collect()
    }

    pub fn write_count(&self, resource: &str) -> usize {
        self.writes(resource).len()
    }
}

/// Poll `f` every 20 ms until it holds or `limit` passes (then panic with
/// `what` and the last value `show` renders).
pub fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A running `endpointd run` against a [`Cluster`].
pub struct Daemon {
    pub child: Child,
    pub log: PathBuf,
    pub metrics_addr: String,
}

/// The config file for a daemon against `c`, plus `extra` TOML.
pub fn config(c: &Cluster, name: &str, metrics_addr: &str, extra: &str) -> PathBuf {
    let p = c.dir.join(format!("{name}.toml"));
    let text = format!(
        "[kubernetes]\nkubeconfig = {:?}\nqps = 1000.0\nburst = 1000\n[server]\nlisten = \"{metrics_addr}\"\n{extra}",
        c.kubeconfig.display().to_string()
    );
    std::fs::write(&p, text).expect("config");
    p
}

impl Daemon {
    /// Start `endpointd run` with `extra` TOML appended to its config; it
    /// logs at `info`, or at `$IT_RUST_LOG` (e.g. `debug`) when set.
    pub fn start(c: &Cluster, name: &str, extra: &str) -> Daemon {
        let metrics_addr = format!("127.0.0.1:{}", free_port());
        let cfg = config(c, name, &metrics_addr, extra);
        let log = c.dir.join(format!("{name}.log"));
        let child = Command::new(env!("CARGO_BIN_EXE_endpointd"))
            .args(["run", "--config"])
            .arg(&cfg)
            .env_remove("NOTIFY_SOCKET")
            .env_remove("JOURNAL_STREAM")
            .env_remove("WATCHDOG_USEC")
            .env(
                "RUST_LOG",
                std::env::var("IT_RUST_LOG").unwrap_or("info".into()),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&log).expect("log file")))
            .spawn()
            .expect("spawn endpointd");
        Daemon {
            child,
            log,
            metrics_addr,
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// GET `path` on the daemon's server.
    pub fn http_get(&self, path: &str) -> Option<(u16, String)> {
        http_get(&self.metrics_addr, path)
    }

    /// The value of one metric line (exact name with labels), if present.
    pub fn metric(&self, series: &str) -> Option<f64> {
        let (_, body) = self.http_get("/metrics")?;
        body.lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
    }

    /// Wait until `controller` has finished at least `min_syncs`
    /// successful syncs and has had no key queued, waiting or in flight for
    /// two consecutive refreshes of its pending gauge (the daemon refreshes
    /// it every second).
    pub fn wait_idle(&self, controller: &str, min_syncs: f64, limit: Duration) {
        let done =
            format!("endpointd_syncs_total{{controller=\"{controller}\",result=\"success\"}}");
        let pending = format!("endpointd_controller_pending_keys{{controller=\"{controller}\"}}");
        let mut quiet_since: Option<Instant> = None;
        wait_until(
            &format!("{controller} idle after {min_syncs} syncs"),
            limit,
            || {
                let synced = self.metric(&done).unwrap_or(0.0) >= min_syncs;
                if synced && self.metric(&pending) == Some(0.0) {
                    let since = *quiet_since.get_or_insert_with(Instant::now);
                    since.elapsed() > Duration::from_millis(2200)
                } else {
                    quiet_since = None;
                    false
                }
            },
        );
    }

    /// SIGTERM and wait; the exit code.
    pub fn stop(mut self) -> Option<i32> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                return s.code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn http_get(addr: &str, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut resp = String::new();
    s.read_to_string(&mut resp).ok()?;
    let code = resp.get(9..12)?.parse().ok()?;
    let body = resp.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((code, body))
}

pub fn path_str(p: &Path) -> String {
    p.display().to_string()
}
