//! `endpointd run`: the daemon's life cycle, in named steps.
//!
//! 1. [`Settings::load`]: the configuration as loaded and as run (shadow
//!    mode's overrides), and logging.
//! 2. [`Parts::build`](parts::Parts::build): every part built — metrics,
//!    API clients, the write fence, event recorders, the controllers —
//!    nothing started.
//! 3. [`Parts::start`](parts::Parts::start): the threads, in order.
//! 4. [`Started::supervise`](parts::Started::supervise): until a signal or
//!    a failure; the supervisor starts the controllers' workers once every
//!    cache synced (and this instance leads).
//! 5. [`Started::stop`](parts::Started::stop): in order, bounded.
//!
//! It never writes to the API server itself: the controllers' writers do,
//! behind the write fence.

mod parts;
mod supervisor;

use crate::config::{Config, ConfigErrors};
use crate::logging;
use endpointd_base::clock::SharedClock;
use endpointd_kube::kube::{self, Client, ClientConfig};
use endpointd_kube::metrics::Registry;
use endpointd_kube::workqueue::WorkqueueError;
use parts::Parts;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Why a command could not run, or the daemon stopped with a failure.
#[derive(Debug)]
pub enum DaemonError {
    /// The configuration file is missing or invalid.
    Config(ConfigErrors),
    /// No usable API client (kubeconfig, credentials, TLS material).
    Client(kube::Error),
    /// A thread or the listen address could not be set up.
    Setup {
        /// What was being set up (`lease thread`, `server.listen = "…"`).
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// A controller's work queue refused its configuration.
    Queue(WorkqueueError),
    /// Something the daemon depends on stopped while running.
    Failed(Failure),
    /// `explain` could not read what it needs.
    Explain(crate::explain::fetch::ExplainError),
}

/// What stopped a running daemon (it exits 1 so that systemd restarts it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// An informer stopped updating its cache.
    CacheStopped,
    /// Leadership was lost: restarted as a standby.
    LeadershipLost,
}

impl std::fmt::Display for DaemonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DaemonError::Config(e) => write!(f, "{e}"),
            DaemonError::Client(e) => write!(f, "cannot set up the API client: {e}"),
            DaemonError::Setup { what, source } => write!(f, "cannot start: {what}: {source}"),
            DaemonError::Queue(e) => write!(f, "cannot start: {e}"),
            DaemonError::Failed(Failure::CacheStopped) => {
                f.write_str("stopped: a cache stopped updating")
            }
            DaemonError::Failed(Failure::LeadershipLost) => {
                f.write_str("stopped: leaderelection lost")
            }
            DaemonError::Explain(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DaemonError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DaemonError::Config(e) => Some(e),
            DaemonError::Client(e) => Some(e),
            DaemonError::Setup { source, .. } => Some(source),
            DaemonError::Queue(e) => Some(e),
            DaemonError::Explain(e) => Some(e),
            DaemonError::Failed(_) => None,
        }
    }
}

/// The configuration, as loaded from `path` and as this run uses it.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The file.
    pub path: PathBuf,
    /// As loaded: what SIGHUP compares with.
    pub loaded: Config,
    /// As run: shadow mode turns the election off (nothing is written, so
    /// there is no writer to elect; the heartbeat Lease still says this
    /// instance is alive).
    pub cfg: Config,
}

impl Settings {
    /// Load the file, apply `--shadow`, start logging.
    pub fn load(path: &Path, shadow: bool) -> Result<Settings, DaemonError> {
        let loaded = Config::load(path).map_err(DaemonError::Config)?;
        let mut cfg = loaded.clone();
        cfg.mode.shadow |= shadow;
        if cfg.mode.shadow {
            cfg.leader_election.enabled = false;
        }
        logging::init(cfg.log.level);
        log::info!(
            "{} starting (config {}, identity {})",
            crate::cli::version_line(),
            path.display(),
            cfg.leader_election.identity
        );
        Ok(Settings {
            path: path.to_path_buf(),
            loaded,
            cfg,
        })
    }
}

/// Run until SIGTERM/SIGINT. Returns after a graceful stop.
pub fn run(path: &Path, shadow: bool) -> Result<(), DaemonError> {
    endpointd_kube::memory::limit_arenas();
    let settings = Settings::load(path, shadow)?;
    let mut started = Parts::build(settings)?.start()?;
    let outcome = started.supervise();
    started.stop();
    outcome
}

/// An API client as the configuration describes, sending
/// `User-Agent: endpointd/<version> (<identity>)` plus `acting` (the
/// controller) when given, so audit logs name the instance and the
/// controller. Each client has its own token bucket, as each
/// kube-controller-manager controller has its own clientset; the clients of
/// one process share `link`, so that any request getting through after an
/// outage ends the informers' backoffs.
pub fn client(
    cfg: &Config,
    clock: SharedClock,
    registry: &Registry,
    acting: Option<&str>,
    link: &Arc<kube::Link>,
) -> Result<Client, kube::Error> {
    let k = &cfg.kubernetes;
    let mut cc = ClientConfig::infer(k.kubeconfig.as_deref(), k.context.as_deref())?;
    cc.qps = k.qps as f32;
    cc.burst = k.burst;
    cc.request_timeout = k.request_timeout;
    cc.watch_idle_timeout = Some(k.watch_idle_timeout);
    cc.body_limits = kube::BodyLimits {
        max_bytes: k.max_response_bytes,
        max_items: k.max_list_items,
    };
    cc.user_agent = user_agent(&cfg.leader_election.identity, acting);
    // A controller's client is shared by its workers, its event recorder
    // and (EndpointSlice) the topology worker: keep all their connections.
    let callers = cfg.endpoints.workers.max(cfg.endpointslices.workers) + 2;
    cc.max_idle_connections = cc.max_idle_connections.max(callers);
    cc.link = Arc::clone(link);
    Client::new(cc, clock, Some(registry))
}

/// The renew deadline when this instance runs an election.
pub(crate) fn le_renew_deadline(cfg: &Config) -> Option<Duration> {
    let le = &cfg.leader_election;
    le.enabled.then_some(le.renew_deadline)
}

/// `endpointd/<version> (<identity>)[ <acting>]`.
pub fn user_agent(identity: &str, acting: Option<&str>) -> String {
    let base = format!("endpointd/{} ({identity})", env!("CARGO_PKG_VERSION"));
    match acting {
        Some(a) => format!("{base} {a}"),
        None => base,
    }
}

/// Log a failed notification; whether it went out (or had nowhere to go).
/// A full notify queue (its reader is behind) is warned about once until
/// a send goes out again, not on every tick.
fn notify(r: std::io::Result<bool>) -> bool {
    static QUEUE_FULL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    use std::sync::atomic::Ordering::Relaxed;
    match &r {
        Ok(_) => QUEUE_FULL.store(false, Relaxed),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
            if !QUEUE_FULL.swap(true, Relaxed) {
                log::warn!("sd_notify: the notify socket's queue is full (its reader is behind): notifications are dropped and sent again on later ticks");
            }
        }
        Err(e) => log::warn!("sd_notify failed: {e}"),
    }
    r.is_ok()
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
