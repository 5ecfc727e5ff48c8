//! The daemon's life cycle: load the configuration, set up logging, signals
//! and systemd notification, connect to the API server, keep the caches in
//! sync, run until told to stop, stop cleanly.
//!
//! Owns wiring and supervision only: caches first, then, once every cache
//! has synced, the enabled controllers' workers. It never writes to the API
//! server itself (the controllers' writers do, behind the write fence).

use crate::caches::{self, Caches};
use crate::clock::{RealClock, SharedClock};
use crate::config::{Config, ConfigErrors};
use crate::controller::fence::Fence;
use crate::controller::recorder::{self, EventRecorder, RecorderConfig};
use crate::controllers::{Controllers, Deps, Running};
use crate::health::{self, Liveness, Readiness};
use crate::kube::{self, Client, ClientConfig};
use crate::metrics::Registry;
use crate::sdnotify::{self, Notifier};
use crate::shutdown::Shutdown;
use crate::{logging, signals};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Why the daemon could not run, or stopped with a failure.
#[derive(Debug)]
pub enum DaemonError {
    /// The configuration file is missing or invalid.
    Config(ConfigErrors),
    /// No usable API client (kubeconfig, credentials, TLS material).
    Client(kube::Error),
    /// Setting up the process failed (signals, threads, listen address).
    Setup(String),
    /// Something the daemon depends on stopped while running.
    Failed(String),
}

impl std::fmt::Display for DaemonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DaemonError::Config(e) => write!(f, "{e}"),
            DaemonError::Client(e) => write!(f, "cannot set up the API client: {e}"),
            DaemonError::Setup(e) => write!(f, "cannot start: {e}"),
            DaemonError::Failed(e) => write!(f, "stopped: {e}"),
        }
    }
}

impl std::error::Error for DaemonError {}

/// How long one sync may run before the supervisor calls the worker
/// wedged (the watchdog then stops, so systemd restarts endpointd).
const WEDGED_AFTER: Duration = Duration::from_secs(300);

/// How long in-flight syncs may take to finish at shutdown.
const DRAIN: Duration = Duration::from_secs(5);

/// How often the supervisor looks at the caches when systemd asks for no
/// faster watchdog pings.
const SUPERVISE_EVERY: Duration = Duration::from_secs(1);

/// The API client the configuration describes.
pub fn client(
    cfg: &Config,
    clock: SharedClock,
    registry: &Registry,
) -> Result<Client, kube::Error> {
    let k = &cfg.kubernetes;
    let mut cc = ClientConfig::infer(k.kubeconfig.as_deref(), k.context.as_deref())?;
    cc.qps = k.qps as f32;
    cc.burst = k.burst;
    cc.request_timeout = k.request_timeout;
    Client::new(cc, clock, Some(registry))
}

/// Run until SIGTERM/SIGINT. Returns after a graceful stop.
pub fn run(path: &Path) -> Result<(), DaemonError> {
    let cfg = Config::load(path).map_err(DaemonError::Config)?;
    logging::init(cfg.log.level);
    log::info!(
        "{} starting (config {}, identity {})",
        crate::cli::version_line(),
        path.display(),
        cfg.leader_election.identity
    );
    let clock = RealClock::shared();
    let registry = Registry::new();
    build_info(&registry);
    let client = client(&cfg, Arc::clone(&clock), &registry).map_err(DaemonError::Client)?;
    log::info!("API server {}", client.server());
    let shutdown = Shutdown::new();
    let current = Arc::new(Mutex::new(cfg.clone()));
    let reload_path: PathBuf = path.to_path_buf();
    let reload_cfg = Arc::clone(&current);
    let sig = signals::install(shutdown.clone(), move || reload(&reload_path, &reload_cfg))
        .map_err(|e| DaemonError::Setup(format!("signal handlers: {e}")))?;
    let readiness = Readiness::not_ready("caches not synced");
    let liveness = Liveness::default();
    let server = match cfg.server.listen {
        Some(addr) => Some(
            health::start(
                addr,
                Arc::clone(&registry),
                readiness.clone(),
                liveness.clone(),
            )
            .map_err(|e| DaemonError::Setup(format!("server.listen = \"{addr}\": {e}")))?,
        ),
        None => None,
    };
    if let Some(s) = &server {
        log::info!(
            "serving /metrics, /healthz and /readyz on http://{}",
            s.local_addr()
        );
    }
    let env = caches::Env {
        clock,
        registry: Arc::clone(&registry),
        shutdown: shutdown.clone(),
    };
    let fence = Fence::open();
    let identity = &cfg.leader_election.identity;
    let (ep_events, es_events) = event_recorders(&client, &fence, &env.clock, &registry, identity)?;
    let deps = Deps {
        client: client.clone(),
        clock: Arc::clone(&env.clock),
        registry: Arc::clone(&registry),
        fence,
        endpoint_events: Arc::new(ep_events.clone()),
        slice_events: Arc::new(es_events.clone()),
    };
    let (controllers, hooks) =
        Controllers::new(&cfg, &deps).map_err(|e| DaemonError::Setup(e.to_string()))?;
    let caches = Caches::start(&client, &cfg, &env, hooks)
        .map_err(|e| DaemonError::Setup(format!("informer threads: {e}")))?;
    let notifier = Notifier::from_env();
    notify(notifier.ready("syncing caches"));
    let mut sup = Supervisor {
        caches: &caches,
        shutdown: &shutdown,
        readiness: &readiness,
        notifier: &notifier,
        pending: Some(controllers),
        running: None,
    };
    let outcome = sup.run();
    let running = sup.running.take();
    notify(notifier.stopping("shutting down"));
    shutdown.trigger();
    if let Some(r) = running {
        if !r.stop(DRAIN) {
            log::warn!("some syncs were still running after {DRAIN:?}; stopping anyway");
        }
    }
    ep_events.stop(Duration::from_secs(1));
    es_events.stop(Duration::from_secs(1));
    caches.stop();
    if let Some(s) = server {
        s.shutdown();
    }
    sig.close();
    log::info!("stopped");
    outcome
}

/// The two controllers' event recorders (upstream's event sources
/// `endpoint-controller` and `endpoint-slice-controller`).
fn event_recorders(
    client: &Client,
    fence: &Fence,
    clock: &SharedClock,
    registry: &Registry,
    identity: &str,
) -> Result<(EventRecorder, EventRecorder), DaemonError> {
    let results = recorder::register(registry);
    let start = |component: &str| {
        let cfg = RecorderConfig {
            component: component.to_string(),
            instance: identity.to_string(),
        };
        EventRecorder::start(
            client.clone(),
            fence.clone(),
            Arc::clone(clock),
            Arc::clone(&results),
            cfg,
        )
        .map_err(|e| DaemonError::Setup(format!("event recorder thread: {e}")))
    };
    Ok((
        start("endpoint-controller")?,
        start("endpoint-slice-controller")?,
    ))
}

/// Watches the caches and, once they synced, the controllers.
struct Supervisor<'a> {
    caches: &'a Caches,
    shutdown: &'a Shutdown,
    readiness: &'a Readiness,
    notifier: &'a Notifier,
    pending: Option<Controllers>,
    running: Option<Running>,
}

impl Supervisor<'_> {
    /// Until shutdown: start the controllers once every cache synced, keep
    /// readiness and STATUS current, ping the watchdog only while every
    /// watcher thread runs and no worker is wedged, and fail (so systemd
    /// restarts us) if a cache stopped.
    fn run(&mut self) -> Result<(), DaemonError> {
        let tick = sdnotify::watchdog_interval()
            .map(|w| (w / 2).min(SUPERVISE_EVERY))
            .unwrap_or(SUPERVISE_EVERY);
        while !self.shutdown.wait_timeout(tick) {
            if !self.caches.alive() {
                log::error!("a cache stopped updating; exiting so that systemd restarts endpointd");
                return Err(DaemonError::Failed("a cache stopped updating".into()));
            }
            if self.running.is_none() {
                self.try_start()?;
            }
            if let Some(r) = &self.running {
                if let Some((key, d)) = r.pools().iter().find_map(|p| p.wedged(WEDGED_AFTER)) {
                    log::error!(
                        "a worker has been syncing {key} for {}s; withholding the watchdog",
                        d.as_secs()
                    );
                    continue;
                }
                r.refresh_metrics();
                notify(self.notifier.status(&self.status(r)));
            }
            notify(self.notifier.watchdog());
        }
        Ok(())
    }

    fn try_start(&mut self) -> Result<(), DaemonError> {
        let missing = self.caches.unsynced();
        if !missing.is_empty() {
            self.readiness
                .set(Some(&format!("caches not synced: {}", missing.join(", "))));
            return Ok(());
        }
        log::info!("caches synced: {}", self.caches.summary());
        let Some(c) = self.pending.take() else {
            return Ok(());
        };
        let running = c
            .start(self.caches)
            .map_err(|e| DaemonError::Setup(format!("worker threads: {e}")))?;
        let names: Vec<&str> = running.pools().iter().map(|p| p.controller()).collect();
        log::info!("controllers running: {}", names.join(", "));
        self.readiness.set(None);
        self.running = Some(running);
        Ok(())
    }

    fn status(&self, r: &Running) -> String {
        format!(
            "running; {}; {} syncs queued",
            self.caches.summary(),
            r.queued()
        )
    }
}

/// `endpointd_build_info{version} 1`, as Kubernetes components export it.
fn build_info(registry: &crate::metrics::Registry) {
    registry
        .gauge(
            "endpointd_build_info",
            "Build information; the value is always 1.",
            &["version"],
        )
        .with(&[env!("CARGO_PKG_VERSION")])
        .set(1.0);
}

fn notify(r: std::io::Result<bool>) {
    if let Err(e) = r {
        log::warn!("sd_notify failed: {e}");
    }
}

/// SIGHUP: re-read the file; apply `log.level`; name what needs a restart.
/// A bad file is reported and the running configuration kept.
fn reload(path: &Path, current: &Mutex<Config>) {
    let new = match Config::load(path) {
        Ok(c) => c,
        Err(e) => {
            log::error!("reload: keeping the running configuration: {e}");
            return;
        }
    };
    let mut cur = current.lock().unwrap_or_else(|p| p.into_inner());
    if new.log.level != cur.log.level {
        if logging::set_level(new.log.level) {
            log::info!(
                "reload: log level is now {}",
                new.log.level.as_str().to_ascii_lowercase()
            );
        } else {
            log::info!("reload: RUST_LOG is set and overrides log.level; level unchanged");
        }
    }
    let restart = cur.changes_needing_restart(&new);
    if restart.is_empty() {
        log::info!("reload: done; no other setting changed");
    } else {
        log::warn!(
            "reload: these changed settings take effect only after a restart: {}",
            restart.join(", ")
        );
    }
    cur.log = new.log;
}

/// `check-config`: the effective configuration as TOML, or every problem.
pub fn check_config(path: &Path) -> Result<String, ConfigErrors> {
    let cfg = Config::load(path)?;
    Ok(format!(
        "# effective configuration of {} (defaults filled in)\n{}",
        path.display(),
        cfg.to_toml()
    ))
}
