//! The daemon's life cycle: load the configuration, set up logging, signals
//! and systemd notification, connect to the API server, keep the caches in
//! sync, run until told to stop, stop cleanly.
//!
//! Owns wiring and supervision only: caches first, then, once every cache
//! has synced, the enabled controllers' workers. It never writes to the API
//! server itself (the controllers' writers do, behind the write fence).

use crate::caches::{self, Caches};
use crate::config::{Config, ConfigErrors};
use crate::controller::fence::Fence;
use crate::controller::recorder::{self, EventRecorder, Record, RecorderConfig};
use crate::controllers::{Controllers, Deps, Running};
use crate::health::{self, Liveness, Readiness};
use crate::lease::thread::{OnEvent, OnRepeatedFailure};
use crate::lease::{Election, LeaseConfig, LeaseThread};
use crate::sdnotify::{self, Notifier};
use crate::{logging, signals};
use endpointd_base::clock::{RealClock, SharedClock};
use endpointd_kube::kube::{self, Client, ClientConfig};
use endpointd_kube::metrics::Registry;
use endpointd_kube::shutdown::Shutdown;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    /// `explain` could not read what it needs.
    Explain(crate::explain::fetch::ExplainError),
}

impl std::fmt::Display for DaemonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DaemonError::Config(e) => write!(f, "{e}"),
            DaemonError::Client(e) => write!(f, "cannot set up the API client: {e}"),
            DaemonError::Setup(e) => write!(f, "cannot start: {e}"),
            DaemonError::Failed(e) => write!(f, "stopped: {e}"),
            DaemonError::Explain(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DaemonError {}

/// How long one sync may run before the supervisor calls the worker
/// wedged (the watchdog then stops, so systemd restarts endpointd).
const WEDGED_AFTER: Duration = Duration::from_secs(300);

/// READY=1 is sent once the caches synced and the role is settled (the
/// controllers run, or this instance is a standby), or after this long in
/// any case: an instance started while the API server is unreachable must
/// not be killed by systemd's start timeout (90 s in the shipped unit).
const READY_GRACE: Duration = Duration::from_secs(60);

/// How long in-flight syncs may take to finish at shutdown before their
/// requests are cancelled. With [`RELEASE`] and the short joins after it,
/// endpointd exits within 5 s of SIGTERM whatever the API server does
/// (the shipped unit allows 20 s).
const DRAIN: Duration = Duration::from_secs(1);

/// How long the lease thread may take to release the election Lease at
/// shutdown (a release the server does not answer in time is abandoned:
/// the lease then expires on its own, as after a crash).
const RELEASE: Duration = Duration::from_secs(2);

/// client-go's leader-election health tolerance (kube-controller-manager's
/// `/healthz` fails when the lease was not renewed within lease_duration +
/// this).
const HEALTH_TOLERANCE: Duration = Duration::from_secs(20);

/// How often the supervisor looks at the caches when systemd asks for no
/// faster watchdog pings.
const SUPERVISE_EVERY: Duration = Duration::from_secs(1);

/// How often the supervisor looks while the controllers are due to start
/// (caches syncing, or synced with this instance leading):
/// at [`SUPERVISE_EVERY`] a 10,000-pod cache synced in 0.1 s waited up to
/// another 0.9 s for the controllers (measured in the cold-start bench).
/// While caches sync, each informer that syncs also wakes the supervisor at
/// once (at this tick alone the controllers started up to 20 ms late).
/// A standby that knows another leader keeps the slow tick.
const STARTING_EVERY: Duration = Duration::from_millis(20);
/// After an outage, keys waiting to retry are retried this long after the
/// supervisor saw the server answer again: time for the caches, whose
/// backoffs end at once, to resume first (a probe and a watch).
const SERVER_BACK_RETRY: Duration = Duration::from_secs(1);

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

/// Whether the role can be reported (and readiness given): without an
/// election at once; with one, after the lease thread's first round, or as
/// soon as this instance leads. Woken by the caches' sync, the supervisor
/// may look before the first round ends (a standby would report "no leader
/// yet"); a leader is known as soon as it leads — waiting for the round's
/// end (its heartbeat) left a restarted leader unready until the next
/// 1 s tick in about a third of restarts.
fn role_known(election: bool, rounds: u64, leading: bool) -> bool {
    !election || rounds > 0 || leading
}

/// `endpointd/<version> (<identity>)[ <acting>]`.
pub fn user_agent(identity: &str, acting: Option<&str>) -> String {
    let base = format!("endpointd/{} ({identity})", env!("CARGO_PKG_VERSION"));
    match acting {
        Some(a) => format!("{base} {a}"),
        None => base,
    }
}

/// Run until SIGTERM/SIGINT. Returns after a graceful stop.
pub fn run(path: &Path, shadow: bool) -> Result<(), DaemonError> {
    endpointd_kube::memory::limit_arenas();
    let loaded = Config::load(path).map_err(DaemonError::Config)?;
    let mut cfg = loaded.clone();
    cfg.mode.shadow |= shadow;
    if cfg.mode.shadow {
        // Nothing is written, so there is nothing to elect a writer for;
        // the heartbeat Lease still says this instance is alive.
        cfg.leader_election.enabled = false;
    }
    logging::init(cfg.log.level);
    log::info!(
        "{} starting (config {}, identity {})",
        crate::cli::version_line(),
        path.display(),
        cfg.leader_election.identity
    );
    let clock = RealClock::shared();
    let registry = Registry::new();
    crate::buildinfo::register(&registry);
    watch_idle_bound(&registry, cfg.kubernetes.watch_idle_timeout);
    let link = Arc::default();
    let client =
        client(&cfg, Arc::clone(&clock), &registry, None, &link).map_err(DaemonError::Client)?;
    // The lease thread has its own client: at shutdown the others are
    // cancelled at once while the election Lease is still released.
    let lease_client = self::client(&cfg, Arc::clone(&clock), &registry, None, &link)
        .map_err(DaemonError::Client)?;
    let ep_client = client_for(&cfg, &clock, &registry, "endpoint-controller", &link)?;
    let es_client = client_for(&cfg, &clock, &registry, "endpointslice-controller", &link)?;
    log::info!("API server {}", client.server());
    let shutdown = Shutdown::new();
    // SIGHUP compares with the file as loaded (shadow mode's overrides are
    // not changes).
    let current = Arc::new(Mutex::new(loaded));
    let reload_path: PathBuf = path.to_path_buf();
    let reload_cfg = Arc::clone(&current);
    let sig = signals::install(shutdown.clone(), move || reload(&reload_path, &reload_cfg))
        .map_err(|e| DaemonError::Setup(format!("signal handlers: {e}")))?;
    let readiness = Readiness::not_ready("caches not synced");
    let liveness = Liveness::default();
    let shadow_register = cfg.mode.shadow.then(|| {
        log::info!(
            "shadow mode: nothing is written; differences from the stored objects are logged, counted and listed at /shadow"
        );
        crate::shadow::Shadow::new(Arc::clone(&clock), &registry, crate::shadow::GRACE)
    });
    let server = match cfg.server.listen {
        Some(addr) => Some(
            health::start(
                addr,
                Arc::clone(&registry),
                readiness.clone(),
                liveness.clone(),
                shadow_register.clone(),
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
    let le = &cfg.leader_election;
    let fence = match le.enabled {
        true => Fence::leased(Arc::clone(&env.clock), le.renew_deadline),
        false => Fence::open(),
    };
    let identity = &le.identity;
    let results = recorder::register(&registry);
    let ep_events = event_recorder(
        &ep_client,
        &fence,
        &env.clock,
        &results,
        "endpoint-controller",
        identity,
    )?;
    let es_events = event_recorder(
        &es_client,
        &fence,
        &env.clock,
        &results,
        "endpoint-slice-controller",
        identity,
    )?;
    let all_clients = [
        client.clone(),
        lease_client.clone(),
        ep_client.clone(),
        es_client.clone(),
    ];
    let reset: OnRepeatedFailure =
        Box::new(move || all_clients.iter().for_each(Client::reset_connections));
    let lease = start_lease(
        &cfg,
        &lease_client,
        &env.clock,
        &fence,
        es_events.clone(),
        reset,
    )?;
    let controller_clients = [ep_client.clone(), es_client.clone()];
    let deps = Deps {
        endpoints_client: ep_client,
        slices_client: es_client,
        clock: Arc::clone(&env.clock),
        registry: Arc::clone(&registry),
        fence: fence.clone(),
        endpoint_events: match cfg.mode.shadow {
            true => Arc::new(recorder::Discard),
            false => Arc::new(ep_events.clone()),
        },
        slice_events: match cfg.mode.shadow {
            true => Arc::new(recorder::Discard),
            false => Arc::new(es_events.clone()),
        },
        shadow: shadow_register.clone(),
    };
    let (controllers, hooks) =
        Controllers::new(&cfg, &deps).map_err(|e| DaemonError::Setup(e.to_string()))?;
    let caches = Caches::start(&client, &cfg, &env, hooks)
        .map_err(|e| DaemonError::Setup(format!("informer threads: {e}")))?;
    let notifier = Notifier::from_env();
    notify(notifier.status("syncing caches"));
    let mut sup = Supervisor {
        caches: &caches,
        shutdown: &shutdown,
        readiness: &readiness,
        liveness: &liveness,
        notifier: &notifier,
        clock: Arc::clone(&env.clock),
        lease: &lease,
        fence,
        election: le.enabled.then_some(le),
        master: leader_metric(&registry, &le.lease_name),
        pending: Some(controllers),
        running: None,
        last_round: (0, env.clock.now()),
        started: env.clock.now(),
        ready_sent: false,
        link_seen: link.returns(),
        link,
    };
    let outcome = sup.run();
    let running = sup.running.take();
    notify(notifier.stopping("shutting down"));
    let stopping = std::time::Instant::now();
    shutdown.trigger();
    if lease.state().lost() {
        // Nothing to release (the Lease is no longer ours), and the lease
        // thread may be stuck in a request the server does not answer:
        // end its requests now rather than wait RELEASE for it.
        lease_client.cancel();
    }
    // The informers only read: cancel their requests at once.
    client.cancel();
    // In-flight syncs get DRAIN to finish; then their requests are
    // cancelled, so a server that never answers cannot hold the exit.
    let cancel_syncs = std::thread::spawn(move || {
        std::thread::sleep(DRAIN);
        controller_clients.iter().for_each(Client::cancel);
    });
    if let Some(r) = running {
        if !r.stop(DRAIN + Duration::from_millis(500)) {
            log::warn!("some syncs were still running after {DRAIN:?}; stopping anyway");
        }
    }
    drop(cancel_syncs);
    // Releases the election Lease unless it was lost, then nothing of the
    // lease client may wait any longer.
    lease.stop(RELEASE);
    lease_client.cancel();
    ep_events.stop(Duration::from_millis(200));
    es_events.stop(Duration::from_millis(200));
    caches.stop(Duration::from_millis(500));
    log::debug!("shutdown took {:?}", stopping.elapsed());
    if let Some(s) = server {
        s.shutdown();
    }
    sig.close();
    log::info!("stopped");
    outcome
}

fn client_for(
    cfg: &Config,
    clock: &SharedClock,
    registry: &Registry,
    acting: &str,
    link: &Arc<kube::Link>,
) -> Result<Client, DaemonError> {
    client(cfg, Arc::clone(clock), registry, Some(acting), link).map_err(DaemonError::Client)
}

/// One controller's event recorder (upstream's event sources
/// `endpoint-controller` and `endpoint-slice-controller`).
fn event_recorder(
    client: &Client,
    fence: &Fence,
    clock: &SharedClock,
    results: &Arc<endpointd_kube::metrics::Family<endpointd_kube::metrics::Counter>>,
    component: &str,
    identity: &str,
) -> Result<EventRecorder, DaemonError> {
    let cfg = RecorderConfig {
        component: component.to_string(),
        instance: identity.to_string(),
    };
    EventRecorder::start(
        client.clone(),
        fence.clone(),
        Arc::clone(clock),
        Arc::clone(results),
        cfg,
    )
    .map_err(|e| DaemonError::Setup(format!("event recorder thread: {e}")))
}

/// The lease thread: election (when enabled) and the heartbeat.
fn start_lease(
    cfg: &Config,
    client: &Client,
    clock: &SharedClock,
    fence: &Fence,
    events: EventRecorder,
    reset: OnRepeatedFailure,
) -> Result<LeaseThread, DaemonError> {
    let le = &cfg.leader_election;
    let lc = LeaseConfig {
        namespace: le.lease_namespace.clone(),
        identity: le.identity.clone(),
        election: le.enabled.then(|| Election {
            name: le.lease_name.clone(),
            lease_duration: le.lease_duration,
            renew_deadline: le.renew_deadline,
            retry_period: le.retry_period,
        }),
        heartbeat: le.heartbeat_duration,
        abandoned_after: crate::lease::identity::ABANDONED_AFTER,
    };
    let on_event: OnEvent = Box::new(move |r, s| events.record(r, s));
    LeaseThread::start(
        client.clone(),
        Arc::clone(clock),
        fence.clone(),
        lc,
        on_event,
        reset,
    )
    .map_err(|e| DaemonError::Setup(format!("lease thread: {e}")))
}

/// `leader_election_master_status{name}` (client-go's healthz adaptor
/// metric).
fn leader_metric(registry: &Registry, name: &str) -> Arc<endpointd_kube::metrics::Gauge> {
    registry
        .gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
            &["name"],
        )
        .with(&[name])
}

/// Watches the caches, the lease thread and, once they run, the
/// controllers.
struct Supervisor<'a> {
    caches: &'a Caches,
    shutdown: &'a Shutdown,
    readiness: &'a Readiness,
    liveness: &'a Liveness,
    notifier: &'a Notifier,
    clock: SharedClock,
    lease: &'a LeaseThread,
    /// The write fence, closed here when the lease thread is stuck.
    fence: Fence,
    election: Option<&'a crate::config::LeaderElection>,
    master: Arc<endpointd_kube::metrics::Gauge>,
    pending: Option<Controllers>,
    running: Option<Running>,
    /// Lease-thread rounds last seen, and when they last moved.
    last_round: (u64, Instant),
    /// When supervision began (for the READY grace period).
    started: Instant,
    /// Whether READY=1 was sent.
    ready_sent: bool,
    /// Shared by every client of the daemon, and its returns seen.
    link: Arc<kube::Link>,
    link_seen: u64,
}

impl Supervisor<'_> {
    /// Until shutdown: start the controllers once every cache synced and
    /// (with election) this instance leads; keep readiness, liveness and
    /// STATUS current; ping the watchdog only while every watcher thread,
    /// the lease thread and every worker make progress; fail (so systemd
    /// restarts us) if a cache stopped or leadership was lost.
    fn run(&mut self) -> Result<(), DaemonError> {
        let tick = sdnotify::watchdog_interval()
            .map(|w| (w / 2).min(SUPERVISE_EVERY))
            .unwrap_or(SUPERVISE_EVERY);
        let mut next = STARTING_EVERY.min(tick);
        let mut seen = self.caches.sync_count();
        let mut for_caches = true;
        loop {
            if for_caches {
                // An informer that syncs wakes us at once (the controllers
                // then start without waiting for the next tick); shutdown
                // is noticed within the tick.
                self.caches.wait_for_change(seen, next);
                if self.shutdown.is_triggered() {
                    break;
                }
            } else if self.shutdown.wait_timeout(next) {
                break;
            }
            next = tick;
            seen = self.caches.sync_count();
            if !self.caches.alive() {
                log::error!("a cache stopped updating; exiting so that systemd restarts endpointd");
                return Err(DaemonError::Failed("a cache stopped updating".into()));
            }
            let state = self.lease.state();
            if state.lost() {
                log::error!(
                    "leaderelection lost; exiting so that systemd restarts endpointd as a standby"
                );
                return Err(self.lost());
            }
            // A leader whose lease thread is stuck in a round (a request
            // the server does not answer) past renew_deadline has lost, as
            // client-go's renew context ends then: not when the request
            // finally returns, minutes later.
            if let Some(le) = self.election {
                if state.stuck(le.renew_deadline, self.clock.now()) {
                    state.lose(&self.fence);
                    log::error!(
                        "leader election: leadership lost: no renewal within {:?} (the lease thread is still waiting for the API server); exiting so that systemd restarts endpointd as a standby",
                        le.renew_deadline
                    );
                    return Err(self.lost());
                }
            }
            self.master.set(if state.leading() { 1.0 } else { 0.0 });
            let returns = self.link.returns();
            if returns != self.link_seen {
                self.link_seen = returns;
                if let Some(r) = &self.running {
                    r.server_back(SERVER_BACK_RETRY);
                }
            }
            let synced = self.caches.unsynced();
            for_caches = self.pending.is_some() && !synced.is_empty();
            if !synced.is_empty() {
                self.readiness
                    .set(Some(&format!("caches not synced: {}", synced.join(", "))));
            } else if self.running.is_none() && (self.election.is_none() || state.leading()) {
                self.start()?;
            }
            // Fast while this instance may be about to lead: before its
            // first election round no leader is known (with the caches
            // synced first, the slow tick held the controllers back up to
            // 1 s after the lease was taken).
            let may_lead = state.leading() || state.leader().is_empty();
            if self.pending.is_some() && (!synced.is_empty() || may_lead) {
                next = STARTING_EVERY.min(tick);
            }
            // Look again when a stuck round would lose leadership, not up
            // to a tick later.
            if let Some(at) = self
                .election
                .and_then(|le| state.stuck_at(le.renew_deadline))
            {
                next = next.min(at.saturating_duration_since(self.clock.now()));
            }
            let role = self.role();
            let role_known = role_known(self.election.is_some(), state.rounds(), state.leading());
            if synced.is_empty() && role_known {
                self.readiness.set_ready(&role);
            } else if synced.is_empty() {
                self.readiness
                    .set(Some("caches synced; leader election has not run yet"));
            }
            if let Some(problem) = self.problem() {
                log::error!("{problem}; withholding the watchdog");
                self.liveness.set(Some(&problem));
                continue;
            }
            self.liveness.set(None);
            if let Some(r) = &self.running {
                r.refresh_metrics();
            }
            let status = self.status(&role);
            // Settled: the controllers run, or this is a standby that has
            // seen the leader (before its first election round, or with the
            // lease free, it may be about to lead).
            let standby = self.election.is_some() && !state.leading() && !state.leader().is_empty();
            let settled = synced.is_empty() && (self.running.is_some() || standby);
            let waited = self.clock.now().saturating_duration_since(self.started) >= READY_GRACE;
            if !self.ready_sent && (settled || waited) {
                // Start order: caches synced → leadership settled →
                // controllers running → READY=1. A READY=1 that could not
                // be sent (the socket's queue was full) is sent again on
                // the next tick: systemd must see it.
                self.ready_sent = notify(self.notifier.ready(&status));
            } else {
                notify(self.notifier.status(&status));
            }
            notify(self.notifier.watchdog());
        }
        Ok(())
    }

    /// Leadership is lost: not ready, not master; the error to exit 1 with.
    fn lost(&self) -> DaemonError {
        self.master.set(0.0);
        self.readiness.set(Some("leader election: leadership lost"));
        DaemonError::Failed("leaderelection lost".into())
    }

    fn start(&mut self) -> Result<(), DaemonError> {
        log::info!("caches synced: {}", self.caches.summary());
        let Some(c) = self.pending.take() else {
            return Ok(());
        };
        let running = c
            .start(self.caches)
            .map_err(|e| DaemonError::Setup(format!("worker threads: {e}")))?;
        let names: Vec<&str> = running.pools().iter().map(|p| p.controller()).collect();
        log::info!("controllers running: {}", names.join(", "));
        self.running = Some(running);
        Ok(())
    }

    /// "leading", "standby; leader is X", or "running" without election.
    fn role(&self) -> String {
        let state = self.lease.state();
        match (self.election, state.leading()) {
            (None, _) => "running".into(),
            (Some(_), true) => "leading".into(),
            (Some(_), false) => match state.leader() {
                l if l.is_empty() => "standby; no leader yet".into(),
                l => format!("standby; leader is {l}"),
            },
        }
    }

    /// Why the process should not be considered alive, if it should not.
    fn problem(&mut self) -> Option<String> {
        let now = self.clock.now();
        if let Some(r) = &self.running {
            let limit = crate::controller::worker::test_wedge().map_or(WEDGED_AFTER, |(_, d)| d);
            if let Some((key, d)) = r.pools().iter().find_map(|p| p.wedged(limit)) {
                return Some(format!(
                    "a worker has been syncing {key} for {}s",
                    d.as_secs()
                ));
            }
        }
        let rounds = self.lease.state().rounds();
        if rounds != self.last_round.0 {
            self.last_round = (rounds, now);
        }
        if !self.lease.alive()
            || now.saturating_duration_since(self.last_round.1) > Duration::from_secs(120)
        {
            return Some("the lease thread stopped making progress".into());
        }
        let (Some(le), true) = (self.election, self.lease.state().leading()) else {
            return None;
        };
        let last = self.lease.state().last_renewal()?;
        let age = now.saturating_duration_since(last);
        (age > le.lease_duration + HEALTH_TOLERANCE).then(|| {
            format!(
                "leader election: the lease was not renewed for {}s",
                age.as_secs()
            )
        })
    }

    fn status(&self, role: &str) -> String {
        let queued = self.running.as_ref().map_or(0, Running::queued);
        format!("{role}; {}; {queued} syncs queued", self.caches.summary())
    }
}

/// `endpointd_informer_watch_idle_timeout_seconds`: the configured bound
/// (`kubernetes.watch_idle_timeout`) after which a silent watch is
/// restarted, so that an alert can compare
/// `endpointd_informer_watch_idle_seconds` with it.
fn watch_idle_bound(registry: &endpointd_kube::metrics::Registry, bound: std::time::Duration) {
    registry
        .gauge(
            "endpointd_informer_watch_idle_timeout_seconds",
            "kubernetes.watch_idle_timeout: a watch silent for longer is restarted; endpointd_informer_watch_idle_seconds stays below it while watches work.",
            &[],
        )
        .with(&[])
        .set(bound.as_secs_f64());
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

/// `check-config`: the effective configuration as TOML, or every problem.
/// `endpointd explain`: load the configuration, read, analyse. Logging
/// stays at warnings so that the report is all that is printed.
pub fn explain(
    path: &Path,
    namespace: &str,
    service: &str,
) -> Result<crate::explain::Report, DaemonError> {
    let cfg = Config::load(path).map_err(DaemonError::Config)?;
    logging::init(log::LevelFilter::Warn);
    let clock: SharedClock = endpointd_base::clock::RealClock::shared();
    let registry = Registry::new();
    let c = client(&cfg, clock, &registry, Some("explain"), &Arc::default())
        .map_err(DaemonError::Client)?;
    let max = cfg.endpointslices.max_endpoints_per_slice as usize;
    let items = cfg.kubernetes.max_list_items;
    crate::explain::fetch::explain(&c, namespace, service, max, items).map_err(DaemonError::Explain)
}

/// `endpointd check-config`: load and validate the file, and return the
/// effective configuration with every default filled in.
pub fn check_config(path: &Path) -> Result<String, ConfigErrors> {
    let cfg = Config::load(path)?;
    Ok(format!(
        "# effective configuration of {} (defaults filled in)\n{}",
        path.display(),
        cfg.to_toml()
    ))
}

#[cfg(test)]
mod tests {
    use super::role_known;

    #[test]
    fn a_leader_is_known_before_its_first_round_ends_a_standby_after() {
        // (election, rounds, leading) → known
        let table = [
            (false, 0, false, true),
            (true, 0, false, false),
            (true, 0, true, true),
            (true, 1, false, true),
            (true, 3, true, true),
        ];
        for (election, rounds, leading, want) in table {
            assert_eq!(
                role_known(election, rounds, leading),
                want,
                "election {election}, rounds {rounds}, leading {leading}"
            );
        }
    }
}
