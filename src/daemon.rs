//! The daemon's life cycle: load the configuration, set up logging, signals
//! and systemd notification, run until told to stop, stop cleanly.
//!
//! Owns wiring and supervision only. This build has no controllers wired
//! yet (later issues add watchers, workers and leader election); `run` says
//! so plainly in its log and in its systemd STATUS instead of pretending to
//! work. It never writes to the API server.

use crate::config::{Config, ConfigErrors};
use crate::health::{self, Readiness};
use crate::sdnotify::{self, Notifier};
use crate::shutdown::Shutdown;
use crate::{logging, signals};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Why the daemon could not run.
#[derive(Debug)]
pub enum DaemonError {
    /// The configuration file is missing or invalid.
    Config(ConfigErrors),
    /// Setting up the process failed (signals, threads).
    Setup(String),
}

impl std::fmt::Display for DaemonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DaemonError::Config(e) => write!(f, "{e}"),
            DaemonError::Setup(e) => write!(f, "cannot start: {e}"),
        }
    }
}

impl std::error::Error for DaemonError {}

/// What this build does not do yet; logged at start and shown in STATUS.
pub const NOT_YET: &str = "controllers are not wired in this build: nothing is watched and no Endpoints or EndpointSlices are written";

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
    log::warn!("{NOT_YET}");
    let listen = cfg.server.listen;
    let shutdown = Shutdown::new();
    let current = Arc::new(Mutex::new(cfg));
    let reload_path: PathBuf = path.to_path_buf();
    let reload_cfg = Arc::clone(&current);
    let sig = signals::install(shutdown.clone(), move || reload(&reload_path, &reload_cfg))
        .map_err(|e| DaemonError::Setup(format!("signal handlers: {e}")))?;
    let registry = crate::metrics::Registry::new();
    build_info(&registry);
    let readiness = Readiness::not_ready(NOT_YET);
    let server = match listen {
        Some(addr) => Some(
            health::start(addr, Arc::clone(&registry), readiness.clone())
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
    let notifier = Notifier::from_env();
    notify(notifier.ready(&format!("idle: {NOT_YET}")));
    let tick = sdnotify::watchdog_interval()
        .map(|w| w / 2)
        .unwrap_or(Duration::from_secs(3600));
    while !shutdown.wait_timeout(tick) {
        // No workers or watchers exist yet, so there is nothing whose
        // liveness to check before the ping.
        notify(notifier.watchdog());
    }
    notify(notifier.stopping("shutting down"));
    if let Some(s) = server {
        s.shutdown();
    }
    sig.close();
    log::info!("stopped");
    Ok(())
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
