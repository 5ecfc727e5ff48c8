//! The demo's nine steps, each printing what it does and checking what it
//! shows against kube-sim's state and write log.

use super::child::Child;
use super::cluster::{self, NS, SERVICES};
use super::observe::{self, Writes};
use super::render;
use super::{DemoError, Options, StoryReport};
use kube_sim::kubelet::KubeletOptions;
use kube_sim::server::{SimOptions, SimServer};
use kube_sim::store::Store;
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

/// The number of steps.
const STEPS: u32 = 9;

/// How long any one wait may take before the step fails.
const LIMIT: Duration = Duration::from_secs(20);
/// How long the simulated kubelet keeps a deleted pod terminating.
const GRACE_CAP: Duration = Duration::from_secs(3);

/// No write for this long: the daemon has settled.
const QUIET: Duration = Duration::from_millis(1200);

struct Story<'a> {
    opts: &'a Options,
    out: &'a mut dyn Write,
    sim: SimServer,
    dir: PathBuf,
    kubeconfig: PathBuf,
    report: StoryReport,
    /// The write log's length before the first endpointd started.
    start_mark: usize,
}

/// Run the story; `Err` only when the demo itself cannot run (ports,
/// files, processes).
pub fn run(opts: &Options, out: &mut dyn Write) -> Result<StoryReport, DemoError> {
    let dir = std::env::temp_dir().join(format!("endpointd-demo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|source| DemoError::File {
        path: dir.clone(),
        source,
    })?;
    let sim = SimServer::start(SimOptions {
        kubelet: Some(KubeletOptions {
            ready_after: Duration::from_secs(1),
            grace_cap: GRACE_CAP,
            every: Duration::from_millis(50),
            dual_stack: false,
        }),
        ..SimOptions::default()
    })
    .map_err(DemoError::Sim)?;
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig)
        .map_err(DemoError::Kubeconfig)?;
    let mut s = Story {
        opts,
        out,
        sim,
        dir,
        kubeconfig,
        report: StoryReport::default(),
        start_mark: 0,
    };
    let result = s.play();
    if let Ok(b) = result.as_ref() {
        if opts.keep_running && s.report.failures.is_empty() {
            s.keep_running(b);
        }
    }
    let stopped = result.map(|b| b.stop(Duration::from_secs(10)));
    let Story {
        sim, dir, report, ..
    } = s;
    sim.stop();
    let _ = std::fs::remove_dir_all(&dir);
    stopped.map(|_| report)
}

impl Story<'_> {
    fn say(&mut self, line: impl AsRef<str>) {
        let _ = writeln!(self.out, "{}", line.as_ref());
        let _ = self.out.flush();
    }

    fn check(&mut self, step: &str, ok: bool, expected: impl AsRef<str>, seen: impl AsRef<str>) {
        if !ok {
            let f = format!(
                "{step}: expected {}, saw {}",
                expected.as_ref(),
                seen.as_ref()
            );
            self.say(format!("    ✗ {f}"));
            self.report.failures.push(f);
        }
    }

    fn store(&self) -> &Store {
        self.sim.store()
    }

    fn wait(&mut self, step: &str, what: &str, mut f: impl FnMut(&Store) -> bool) -> bool {
        let deadline = Instant::now() + LIMIT;
        while Instant::now() < deadline {
            if f(self.store()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.check(step, false, what, "a timeout after 20 s");
        false
    }

    /// Wait until no Endpoints or slice write has landed for [`QUIET`].
    fn settle(&mut self) {
        let deadline = Instant::now() + LIMIT;
        let mut last = (observe::mark(self.store()), Instant::now());
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            let n = observe::mark(self.store());
            if n != last.0 {
                last = (n, Instant::now());
            } else if last.1.elapsed() >= QUIET {
                return;
            }
        }
    }

    fn tally(&mut self, w: &Writes) {
        self.report.endpoints_writes += w.endpoints.len();
        self.report.slice_writes += w.slices.len();
    }

    fn play(&mut self) -> Result<Child, DemoError> {
        self.say("endpointd demo: kube-controller-manager's Endpoints and EndpointSlice");
        self.say("controllers as one small daemon, shown on an embedded kube-sim.");
        self.step1_cluster()?;
        self.step2_preflight()?;
        let a = self.step3_start()?;
        self.step4_not_ready();
        self.step5_graceful_delete();
        self.step6_scale_down();
        self.step7_watches_lost();
        let b = self.step8_restart(a)?;
        self.step9_summary(&b);
        Ok(b)
    }

    fn heading(&mut self, n: u32, text: &str) {
        self.say("");
        self.say(format!("[{n}/{STEPS}] {text}"));
    }

    fn step1_cluster(&mut self) -> Result<(), DemoError> {
        self.heading(1, "A small edge cluster: 3 nodes in 2 zones, 7 Services");
        let objs = cluster::objects();
        let list = json!({"apiVersion": "v1", "kind": "List", "items": objs});
        self.store().load_list(&list).map_err(DemoError::Load)?;
        for (n, z) in cluster::NODES {
            self.say(format!("    node {n:<8} {z}"));
        }
        for e in SERVICES {
            self.say(format!(
                "    service {:<6} {:>3} pods  {}",
                e.name, e.pods, e.about
            ));
        }
        Ok(())
    }

    /// `endpointd preflight` as an operator runs it before the hand-over:
    /// the real binary, no failure, and not one write.
    fn step2_preflight(&mut self) -> Result<(), DemoError> {
        self.heading(
            2,
            "Before the hand-over: endpointd preflight checks, writes nothing",
        );
        let cfg = self.dir.join("preflight.toml");
        std::fs::write(
            &cfg,
            format!(
                "[kubernetes]\nkubeconfig = {:?}\n",
                self.kubeconfig.display().to_string()
            ),
        )
        .map_err(|source| DemoError::File {
            path: cfg.clone(),
            source,
        })?;
        let mark = self.store().write_log_since(0).1;
        let t0 = Instant::now();
        let o = std::process::Command::new(&self.opts.exe)
            .args(["preflight", "-o", "json", "--config"])
            .arg(&cfg)
            .env_remove("RUST_LOG")
            .output()
            .map_err(|source| DemoError::Preflight {
                exe: self.opts.exe.clone(),
                source,
            })?;
        let took = t0.elapsed();
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        let n = |l: &str| v["summary"][l].as_u64().unwrap_or(0);
        let named = |l: &str| -> Vec<String> {
            v["checks"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|c| c["level"] == l)
                .filter_map(|c| c["name"].as_str().map(str::to_string))
                .collect()
        };
        self.say(format!(
            "    {} ok, {} warn, {} fail in {}; exit {}",
            n("ok"),
            n("warn"),
            n("fail"),
            render::ms(Some(took)),
            o.status.code().unwrap_or(-1)
        ));
        let warned = named("warn");
        for w in &warned {
            self.say(format!("    warn: {w}"));
        }
        if warned.iter().any(|w| w == "kubeconfig/tls") {
            self.say("    (the demo's kube-sim speaks plain HTTP on loopback)");
        }
        // endpointd's writes only: the simulated kubelet may still be
        // marking step 1's pods ready meanwhile.
        let writes = self
            .store()
            .write_log_since(mark)
            .0
            .iter()
            .filter(|w| w.user_agent.starts_with("endpointd/"))
            .count();
        self.say(format!("    API writes by endpointd: {writes}"));
        self.check(
            "2",
            o.status.success() && n("fail") == 0 && n("ok") > 0,
            "exit 0 and no failed check",
            format!("exit {:?}, failed: {:?}", o.status.code(), named("fail")),
        );
        self.check("2", writes == 0, "no write", format!("{writes} writes"));
        Ok(())
    }

    fn spawn(&mut self, identity: &str) -> Result<Child, DemoError> {
        Child::spawn(&self.opts.exe, &self.dir, &self.kubeconfig, identity).map_err(|source| {
            DemoError::Start {
                exe: self.opts.exe.clone(),
                source,
            }
        })
    }

    fn step3_start(&mut self) -> Result<Child, DemoError> {
        self.heading(
            3,
            "endpointd starts, wins the lease and writes every object",
        );
        let mark = observe::mark(self.store());
        self.start_mark = mark;
        let t0 = self.store().clock().wall();
        let a = self.spawn("demo-a")?;
        let ok = self.wait("3", "every Service converged", |s| {
            observe::converged(s).is_ok()
        });
        if !ok {
            let why = observe::converged(self.store())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            self.say(format!("    {why}\n    endpointd log:\n{}", a.log_tail(15)));
        }
        let holder = self.lease_holder();
        self.say(format!(
            "    lease holder: {}",
            holder.as_deref().unwrap_or("<no lease>")
        ));
        self.check(
            "3",
            holder.as_deref() == Some("demo-a"),
            "the lease held by demo-a",
            holder.unwrap_or_default(),
        );
        self.settle();
        for e in SERVICES {
            let ep = observe::endpoints(self.store(), e.name);
            let sl = observe::slices(self.store(), e.name);
            for l in render::service_table(e.name, e.about, ep.as_ref(), &sl, 4) {
                self.say(l);
            }
        }
        let w = observe::writes_since(self.store(), mark);
        self.tally(&w);
        let min = cluster::minimum_writes(100);
        self.report.minimum = min;
        self.report.story_minimum = min;
        let took = w.delays(t0).0.max(w.delays(t0).1);
        self.say(format!(
            "    API writes: {} Endpoints (minimum {}), {} EndpointSlices (minimum {})",
            w.endpoints.len(),
            min.0,
            w.slices.len(),
            min.1
        ));
        self.say(format!(
            "    everything written {} after endpointd started",
            render::ms(took)
        ));
        self.check(
            "3",
            (w.endpoints.len(), w.slices.len()) == min,
            format!("{min:?} writes"),
            format!("{:?}", (w.endpoints.len(), w.slices.len())),
        );
        Ok(a)
    }

    /// Make a change in one transaction; wait until `done`; settle; the
    /// writes it caused and when the change was made.
    fn change(
        &mut self,
        step: &str,
        what: &str,
        f: impl FnOnce(&Story<'_>),
        done: impl FnMut(&Store) -> bool,
    ) -> (Writes, SystemTime) {
        let mark = observe::mark(self.store());
        let t0 = self.store().clock().wall();
        f(self);
        self.wait(step, what, done);
        self.settle();
        let w = observe::writes_since(self.store(), mark);
        self.tally(&w);
        (w, t0)
    }

    fn modify_pods(&self, names: &[&str], f: impl Fn(&mut Value)) {
        let Some(info) = kube_sim::resources::lookup("", "v1", "pods") else {
            return;
        };
        self.store().txn(|t| {
            for n in names {
                let k = kube_sim::store::Key::new(info, NS, n);
                if let Some(o) = t.get(&k) {
                    let mut v = o.value();
                    f(&mut v);
                    t.put(&k, "update", v);
                }
            }
        });
    }

    /// DELETE as the API server does it: with the simulated kubelet, the
    /// pod turns terminating and the kubelet removes it later.
    fn graceful_delete(&self, name: &str) {
        let Some(info) = kube_sim::resources::lookup("", "v1", "pods") else {
            return;
        };
        let key = kube_sim::store::Key::new(info, NS, name);
        let now = self.store().clock().wall();
        let opts = kube_sim::deletion::DeleteOptions::default();
        let _ = self
            .store()
            .txn(|t| kube_sim::deletion::delete_in(t, &key, &opts, now));
    }

    fn delete_pods(&self, names: &[String]) {
        let Some(info) = kube_sim::resources::lookup("", "v1", "pods") else {
            return;
        };
        self.store().txn(|t| {
            for n in names {
                t.delete(&kube_sim::store::Key::new(info, NS, n), "delete");
            }
        });
    }

    fn set_ready(&self, pod: &str, ready: bool, at: &str) {
        self.modify_pods(&[pod], |v| {
            v["status"]["conditions"] = json!([{"type": "Ready", "status": if ready {"True"} else {"False"}, "lastTransitionTime": at}]);
        });
    }

    fn minimum(&mut self, endpoints: usize, slices: usize) {
        self.report.story_minimum.0 += endpoints;
        self.report.story_minimum.1 += slices;
    }

    fn one_and_one(&mut self, step: &str, w: &Writes, t0: SystemTime, what: &str) {
        let (ds, de) = w.delays(t0);
        self.say(format!("    {what}"));
        self.say(format!(
            "      → {} EndpointSlice update(s), {} after the change",
            w.slices.len(),
            render::ms(ds)
        ));
        self.say(format!(
            "      → {} Endpoints update(s), {} after the change",
            w.endpoints.len(),
            render::ms(de)
        ));
        self.minimum(1, 1);
        self.check(
            step,
            w.slices.len() == 1 && w.endpoints.len() == 1,
            "1 slice and 1 Endpoints write",
            format!("{} and {}", w.slices.len(), w.endpoints.len()),
        );
        if let Some(d) = ds {
            self.report.delays.push(d);
        }
    }

    fn step4_not_ready(&mut self) {
        self.heading(4, "Pod web-1 turns NotReady");
        let (w, t0) = self.change(
            "4",
            "web-1 not ready everywhere",
            |s| s.set_ready("web-1", false, "2026-01-01T00:01:00Z"),
            |s| {
                observe::endpoints(s, "web").map(|e| observe::endpoint_counts(&e)) == Some((2, 1))
                    && observe::slices(s, "web")
                        .iter()
                        .flat_map(|sl| observe::slice_endpoints(sl).to_vec())
                        .any(|e| {
                            e["targetRef"]["name"] == "web-1" && e["conditions"]["ready"] == false
                        })
            },
        );
        self.one_and_one("4", &w, t0, "web-1 not ready");
    }

    fn step5_graceful_delete(&mut self) {
        self.heading(5, "Pod web-2 is deleted gracefully: terminating, then gone");
        let (w, t0) = self.change(
            "5",
            "web-2 terminating",
            |s| s.graceful_delete("web-2"),
            |s| {
                observe::slices(s, "web")
                    .iter()
                    .flat_map(|sl| observe::slice_endpoints(sl).to_vec())
                    .any(|e| {
                        e["targetRef"]["name"] == "web-2" && e["conditions"]["terminating"] == true
                    })
            },
        );
        let term = observe::slices(self.store(), "web")
            .iter()
            .flat_map(|sl| observe::slice_endpoints(sl).to_vec())
            .find(|e| e["targetRef"]["name"] == "web-2")
            .map(|e| render::endpoint_line(&e))
            .unwrap_or_default();
        self.say("    in its slice:");
        self.say(term);
        self.one_and_one(
            "5",
            &w,
            t0,
            "web-2 terminating (serving, not ready; out of the Endpoints)",
        );
        let (w, _) = self.change(
            "5",
            "web-2 gone",
            |_| {},
            |s| {
                observe::slices(s, "web")
                    .iter()
                    .map(|sl| observe::slice_endpoints(sl).len())
                    .sum::<usize>()
                    == 2
            },
        );
        self.say(format!(
            "    the kubelet removed it after its grace period (capped at {}s):",
            GRACE_CAP.as_secs()
        ));
        self.say(format!(
            "    web-2 gone: {} EndpointSlice update(s), {} Endpoints write(s)",
            w.slices.len(),
            w.endpoints.len()
        ));
        self.minimum(0, 1);
        self.check(
            "5",
            w.slices.len() == 1 && w.endpoints.is_empty(),
            "1 slice write and none to Endpoints",
            format!("{} and {}", w.slices.len(), w.endpoints.len()),
        );
    }

    fn step6_scale_down(&mut self) {
        self.heading(6, "Service big scales from 250 to 120 pods");
        let gone: Vec<String> = (120..250).map(|i| format!("big-{i}")).collect();
        let touched = observe::slices(self.store(), "big")
            .iter()
            .filter(|sl| {
                observe::slice_endpoints(sl).iter().any(|e| {
                    e["targetRef"]["name"]
                        .as_str()
                        .is_some_and(|n| gone.iter().any(|g| g == n))
                })
            })
            .count();
        let (w, _) = self.change(
            "6",
            "120 endpoints for big",
            |s| s.delete_pods(&gone),
            |s| {
                observe::endpoints(s, "big").map(|e| observe::endpoint_counts(&e)) == Some((120, 0))
                    && observe::slices(s, "big")
                        .iter()
                        .map(|sl| observe::slice_endpoints(sl).len())
                        .sum::<usize>()
                        == 120
            },
        );
        let sizes: Vec<usize> = observe::slices(self.store(), "big")
            .iter()
            .map(|sl| observe::slice_endpoints(sl).len())
            .collect();
        self.say(format!(
            "    slices now hold {sizes:?} endpoints, none created"
        ));
        self.say(format!(
            "    writes: {} slice updates, {} deletes, {} creates, {} Endpoints",
            w.slice_verbs("update"),
            w.slice_verbs("delete"),
            w.slice_verbs("create"),
            w.endpoints.len()
        ));
        self.say(format!(
            "    (minimum: {touched} slice writes, 1 Endpoints write)"
        ));
        self.minimum(1, touched);
        self.check(
            "6",
            w.slice_verbs("create") == 0,
            "no slice created while scaling down",
            format!("{} created", w.slice_verbs("create")),
        );
    }

    fn step7_watches_lost(&mut self) {
        self.heading(7, "kube-sim drops every watch and compacts its history");
        let mark = observe::mark(self.store());
        self.sim.faults().close_all_watches();
        self.sim.faults().compact();
        std::thread::sleep(Duration::from_millis(2500));
        let w = observe::writes_since(self.store(), mark);
        self.say(format!(
            "    after the relist: {} writes",
            w.endpoints.len() + w.slices.len()
        ));
        self.check(
            "7",
            w.endpoints.is_empty() && w.slices.is_empty(),
            "no write after a relist",
            format!("{} writes", w.endpoints.len() + w.slices.len()),
        );
        let (w, t0) = self.change(
            "7",
            "web-1 ready again",
            |s| s.set_ready("web-1", true, "2026-01-01T00:03:00Z"),
            |s| observe::endpoints(s, "web").map(|e| observe::endpoint_counts(&e)) == Some((2, 0)),
        );
        self.one_and_one("7", &w, t0, "then web-1 ready again");
    }

    fn step8_restart(&mut self, a: Child) -> Result<Child, DemoError> {
        self.heading(8, "endpointd restarts: a new instance takes over");
        let mark = observe::mark(self.store());
        let code = a.stop(Duration::from_secs(10));
        self.check(
            "8",
            code == Some(0),
            "exit 0 after SIGTERM",
            format!("{code:?}"),
        );
        let b = self.spawn("demo-b")?;
        self.wait("8", "demo-b ready", |_| b.ready().is_some());
        self.settle();
        std::thread::sleep(Duration::from_millis(500));
        let w = observe::writes_since(self.store(), mark);
        let holder = self.lease_holder();
        self.check(
            "8",
            holder.as_deref() == Some("demo-b"),
            "the lease held by demo-b",
            holder.clone().unwrap_or_else(|| "no lease".into()),
        );
        self.say(format!(
            "    lease holder: {}",
            holder.as_deref().unwrap_or("<no lease>")
        ));
        self.say(format!(
            "    writes on the converged cluster: {}",
            w.endpoints.len() + w.slices.len()
        ));
        self.check(
            "8",
            w.endpoints.is_empty() && w.slices.is_empty(),
            "0 writes after a restart",
            format!("{}", w.endpoints.len() + w.slices.len()),
        );
        Ok(b)
    }

    fn lease_holder(&self) -> Option<String> {
        let info = kube_sim::resources::lookup("coordination.k8s.io", "v1", "leases")?;
        let k = kube_sim::store::Key::new(info, "kube-system", "endpointd");
        let v = self.store().txn(|t| t.get(&k).map(|o| o.value()))?;
        v["spec"]["holderIdentity"].as_str().map(str::to_string)
    }

    fn step9_summary(&mut self, b: &Child) {
        self.heading(9, "Summary");
        self.report.rss_bytes = b.rss_bytes();
        let all = observe::writes_since(self.store(), self.start_mark);
        self.report.log_writes = (all.endpoints.len(), all.slices.len());
        self.report.pid = Some(b.pid());
        let slices: usize = SERVICES
            .iter()
            .map(|e| observe::slices(self.store(), e.name).len())
            .sum();
        let pods = self.store().txn(|t| t.all_of("pods").len());
        let mut d = self.report.delays.clone();
        d.sort();
        let p50 = d.get(d.len() / 2).copied();
        let max = d.last().copied();
        self.say(format!(
            "    {} services, {pods} pods, {slices} EndpointSlices",
            SERVICES.len()
        ));
        self.say(format!(
            "    writes over the story: {} Endpoints (minimum {}),",
            self.report.endpoints_writes, self.report.story_minimum.0
        ));
        self.say(format!(
            "      {} EndpointSlices (minimum {})",
            self.report.slice_writes, self.report.story_minimum.1
        ));
        self.say(format!(
            "    pod change → slice written: p50 {}, max {}",
            render::ms(p50),
            render::ms(max)
        ));
        self.say(format!(
            "    endpointd (pid {}) resident memory: {}",
            b.pid(),
            self.report.rss_bytes.map_or("?".into(), render::mib)
        ));
        if self.report.failures.is_empty() {
            self.say("    every step showed what it should.");
        }
        if !self.opts.keep_running {
            self.say("  Try next:");
            self.say("    endpointd demo --keep-running   # explore it with kubectl");
            self.say("    cargo test                      # every test, incl. kubectl's");
        }
    }

    fn keep_running(&mut self, b: &Child) {
        let pod = self.dir.join("pod-web-9.json");
        let manifest = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-9", "namespace": NS, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "main", "image": "registry.example/demo:1",
                     "ports": [{"name": "http", "containerPort": 8080}]}]}});
        let _ = std::fs::write(&pod, manifest.to_string());
        self.say("");
        self.say("kube-sim (with its simulated kubelet) and endpointd keep running;");
        self.say("Ctrl-C stops both. Try:");
        self.say(format!("  export KUBECONFIG={}", self.kubeconfig.display()));
        self.say("  kubectl -n demo get pods,svc,endpoints,endpointslices");
        self.say("  kubectl -n demo get endpointslices -w        # in a second terminal");
        self.say(format!("  kubectl apply -f {}", pod.display()));
        self.say("      # bound, an IP from its node's podCIDR, Ready after 1 s");
        self.say("  kubectl -n demo annotate pod web-9 sim.endpointd.io/ready=false");
        self.say("  kubectl -n demo annotate pod web-9 sim.endpointd.io/ready-");
        self.say("  kubectl -n demo delete pod web-9 --wait=false");
        self.say(format!(
            "      # terminating for {}s, then gone",
            GRACE_CAP.as_secs()
        ));
        self.say(format!(
            "  curl -s http://{}/metrics | grep ^endpoint",
            b.addr
        ));
        self.say(format!("  endpointd's log: {}", b.log.display()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let _ = signal_hook::flag::register(sig, std::sync::Arc::clone(&stop));
        }
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
        }
        self.say("stopping.");
    }
}
