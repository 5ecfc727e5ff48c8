//! `endpointd run`'s parts: [`Parts::build`] makes every part from the
//! configuration and starts nothing (the work queues' own delay timers
//! aside); [`Parts::start`] starts the threads in order — signals, the
//! health server, the event recorders, the lease thread, the informers —
//! and [`Started::stop`] stops them in the order that releases the Lease
//! last. The controllers' workers are started later, by the supervisor.

use super::supervisor::Supervisor;
use super::{le_renew_deadline, notify, reload, DaemonError, Settings};
use crate::caches::{self, Caches, Hooks};
use crate::config::Config;
use crate::health::{self, Liveness, Readiness};
use crate::lease::thread::{OnEvent, OnRepeatedFailure};
use crate::lease::{Election, LeaseConfig, LeaseThread};
use crate::runtime::events::EventSpec;
use crate::runtime::fence::Fence;
use crate::runtime::recorder::{self, EventRecorder, PendingWriter, Record, RecorderConfig};
use crate::sdnotify::Notifier;
use crate::signals::{self, SignalThread};
use crate::wiring::{Controllers, Deps};
use endpointd_base::clock::{RealClock, SharedClock};
use endpointd_kube::kube::{self, Client};
use endpointd_kube::metrics::Registry;
use endpointd_kube::shutdown::Shutdown;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long in-flight syncs may take to finish at shutdown before their
/// requests are cancelled. With [`RELEASE`] and the short joins after it,
/// endpointd exits within 5 s of SIGTERM whatever the API server does
/// (the shipped unit allows 20 s).
const DRAIN: Duration = Duration::from_secs(1);

/// How long the lease thread may take to release the election Lease at
/// shutdown (a release the server does not answer in time is abandoned:
/// the lease then expires on its own, as after a crash).
const RELEASE: Duration = Duration::from_secs(2);

/// Everything `run` needs, built from the configuration; no thread of its
/// own runs yet.
pub(super) struct Parts {
    settings: Settings,
    clock: SharedClock,
    registry: Arc<Registry>,
    link: Arc<kube::Link>,
    /// The informers' client (reads only).
    client: Client,
    /// The lease thread's client: its requests bounded within the renew
    /// deadline, and cancelled last at shutdown.
    lease_client: Client,
    ep_client: Client,
    es_client: Client,
    fence: Fence,
    shadow: Option<Arc<crate::shadow::Shadow>>,
    readiness: Readiness,
    liveness: Liveness,
    ep_events: (EventRecorder, PendingWriter),
    es_events: (EventRecorder, PendingWriter),
    controllers: Controllers,
    hooks: Hooks,
}

/// The running daemon: the threads [`Parts::start`] started.
pub(super) struct Started {
    settings: Settings,
    clock: SharedClock,
    registry: Arc<Registry>,
    link: Arc<kube::Link>,
    client: Client,
    lease_client: Client,
    ep_client: Client,
    es_client: Client,
    fence: Fence,
    readiness: Readiness,
    liveness: Liveness,
    ep_events: EventRecorder,
    es_events: EventRecorder,
    shutdown: Shutdown,
    signals: SignalThread,
    server: Option<endpointd_base::httpd::Server>,
    lease: LeaseThread,
    caches: Caches,
    notifier: Notifier,
    /// The controllers until the supervisor starts them.
    controllers: Option<Controllers>,
    /// The controllers' workers once started.
    running: Option<crate::wiring::Running>,
}

impl Parts {
    /// Build every part from `settings`; start nothing.
    pub(super) fn build(settings: Settings) -> Result<Parts, DaemonError> {
        let cfg = &settings.cfg;
        let clock = RealClock::shared();
        let registry = Registry::new();
        crate::buildinfo::register(&registry);
        watch_idle_bound(&registry, cfg.kubernetes.watch_idle_timeout);
        let link = Arc::default();
        let client = super::client(cfg, Arc::clone(&clock), &registry, None, &link)
            .map_err(DaemonError::Client)?;
        // Each lease request is bounded well within renew_deadline, so that
        // one hung on a connection gone silent cannot cost the lease.
        let mut lease_cfg = cfg.clone();
        lease_cfg.kubernetes.request_timeout = crate::lease::election::request_timeout(
            le_renew_deadline(cfg),
            cfg.leader_election.heartbeat_duration,
            cfg.kubernetes.request_timeout,
        );
        let lease_client = super::client(&lease_cfg, Arc::clone(&clock), &registry, None, &link)
            .map_err(DaemonError::Client)?;
        let acting = |a: &str| {
            super::client(cfg, Arc::clone(&clock), &registry, Some(a), &link)
                .map_err(DaemonError::Client)
        };
        let ep_client = acting("endpoint-controller")?;
        let es_client = acting("endpointslice-controller")?;
        let le = &cfg.leader_election;
        let fence = match le.enabled {
            true => Fence::leased(Arc::clone(&clock), le.renew_deadline),
            false => Fence::open(),
        };
        let shadow = cfg.mode.shadow.then(|| {
            crate::shadow::Shadow::new(Arc::clone(&clock), &registry, crate::shadow::GRACE)
        });
        let results = recorder::register(&registry);
        let events = |c: &Client, component: &str| {
            let rc = RecorderConfig {
                component: component.to_string(),
                instance: crate::lease::identity::reporting_instance(&le.identity),
            };
            EventRecorder::new(
                c.clone(),
                fence.clone(),
                Arc::clone(&clock),
                Arc::clone(&results),
                rc,
            )
        };
        let ep_events = events(&ep_client, "endpoint-controller");
        let es_events = events(&es_client, "endpoint-slice-controller");
        // Shadow mode records no events: it changes nothing to report.
        let recorder_for = |r: &EventRecorder| -> Arc<dyn Record> {
            match cfg.mode.shadow {
                true => Arc::new(recorder::Discard),
                false => Arc::new(r.clone()),
            }
        };
        let deps = Deps {
            endpoints_client: ep_client.clone(),
            slices_client: es_client.clone(),
            clock: Arc::clone(&clock),
            registry: Arc::clone(&registry),
            fence: fence.clone(),
            endpoint_events: recorder_for(&ep_events.0),
            slice_events: recorder_for(&es_events.0),
            shadow: shadow.clone(),
        };
        let (controllers, hooks) = Controllers::new(cfg, &deps).map_err(DaemonError::Queue)?;
        Ok(Parts {
            clock,
            registry,
            link,
            client,
            lease_client,
            ep_client,
            es_client,
            fence,
            shadow,
            readiness: Readiness::not_ready("caches not synced"),
            liveness: Liveness::default(),
            ep_events,
            es_events,
            controllers,
            hooks,
            settings,
        })
    }

    /// Start the threads, in order: signals, the health server, the event
    /// recorders, the lease thread, the informers.
    pub(super) fn start(self) -> Result<Started, DaemonError> {
        let Parts {
            settings,
            clock,
            registry,
            link,
            client,
            lease_client,
            ep_client,
            es_client,
            fence,
            shadow,
            readiness,
            liveness,
            ep_events,
            es_events,
            controllers,
            hooks,
        } = self;
        let cfg = &settings.cfg;
        let setup = |what: &str| {
            let what = what.to_string();
            move |source| DaemonError::Setup { what, source }
        };
        log::info!("API server {}", client.server());
        if shadow.is_some() {
            log::info!(
                "shadow mode: nothing is written; differences from the stored objects are logged, counted and listed at /shadow"
            );
        }
        let shutdown = Shutdown::new();
        // SIGHUP compares with the file as loaded (shadow mode's overrides
        // are not changes).
        let current = Arc::new(Mutex::new(settings.loaded.clone()));
        let reload_path: PathBuf = settings.path.clone();
        let signals = signals::install(shutdown.clone(), move || reload(&reload_path, &current))
            .map_err(setup("signal handlers"))?;
        let server = match cfg.server.listen {
            Some(addr) => Some(
                health::start(
                    addr,
                    Arc::clone(&registry),
                    readiness.clone(),
                    liveness.clone(),
                    shadow,
                )
                .map_err(setup(&format!("server.listen = \"{addr}\"")))?,
            ),
            None => None,
        };
        if let Some(s) = &server {
            log::info!(
                "serving /metrics, /healthz and /readyz on http://{}",
                s.local_addr()
            );
        }
        let (ep_events, ep_writer) = ep_events;
        let (es_events, es_writer) = es_events;
        ep_writer.spawn().map_err(setup("event recorder thread"))?;
        es_writer.spawn().map_err(setup("event recorder thread"))?;
        let all_clients = [
            client.clone(),
            lease_client.clone(),
            ep_client.clone(),
            es_client.clone(),
        ];
        let reset: OnRepeatedFailure =
            Box::new(move || all_clients.iter().for_each(Client::reset_connections));
        let lease = start_lease(cfg, &lease_client, &clock, &fence, es_events.clone(), reset)?;
        let env = caches::Env {
            clock: Arc::clone(&clock),
            registry: Arc::clone(&registry),
            shutdown: shutdown.clone(),
        };
        let caches = Caches::start(&client, cfg, &env, hooks).map_err(setup("informer threads"))?;
        let notifier = Notifier::from_env();
        notify(notifier.status("syncing caches"));
        Ok(Started {
            settings,
            clock,
            registry,
            link,
            client,
            lease_client,
            ep_client,
            es_client,
            fence,
            readiness,
            liveness,
            ep_events,
            es_events,
            shutdown,
            signals,
            server,
            lease,
            caches,
            notifier,
            controllers: Some(controllers),
            running: None,
        })
    }
}

impl Started {
    /// Until SIGTERM/SIGINT or a failure (see [`Supervisor`]).
    pub(super) fn supervise(&mut self) -> Result<(), DaemonError> {
        let le = &self.settings.cfg.leader_election;
        let now = self.clock.now();
        let mut sup = Supervisor {
            caches: &self.caches,
            shutdown: &self.shutdown,
            readiness: &self.readiness,
            liveness: &self.liveness,
            notifier: &self.notifier,
            clock: Arc::clone(&self.clock),
            lease: &self.lease,
            fence: self.fence.clone(),
            election: le.enabled.then_some(le),
            master: leader_metric(&self.registry, &le.lease_name),
            pending: self.controllers.take(),
            running: None,
            last_round: (0, now),
            started: now,
            ready_sent: false,
            link_seen: self.link.returns(),
            link: Arc::clone(&self.link),
        };
        let outcome = sup.run();
        self.running = sup.running.take();
        outcome
    }

    /// Stop everything, bounded: endpointd exits within about 5 s of
    /// SIGTERM whatever the API server does.
    pub(super) fn stop(self) {
        notify(self.notifier.stopping("shutting down"));
        let stopping = std::time::Instant::now();
        self.shutdown.trigger();
        if self.lease.state().lost() {
            // Nothing to release (the Lease is no longer ours), and the
            // lease thread may be stuck in a request the server does not
            // answer: end its requests now rather than wait RELEASE for it.
            self.lease_client.cancel();
        }
        // The informers only read: cancel their requests at once.
        self.client.cancel();
        // In-flight syncs get DRAIN to finish; then their requests are
        // cancelled, so a server that never answers cannot hold the exit.
        let controller_clients = [self.ep_client.clone(), self.es_client.clone()];
        let cancel_syncs = std::thread::spawn(move || {
            std::thread::sleep(DRAIN);
            controller_clients.iter().for_each(Client::cancel);
        });
        if let Some(r) = self.running {
            if !r.stop(DRAIN + Duration::from_millis(500)) {
                log::warn!("some syncs were still running after {DRAIN:?}; stopping anyway");
            }
        }
        drop(cancel_syncs);
        // Releases the election Lease unless it was lost, then nothing of
        // the lease client may wait any longer.
        self.lease.stop(RELEASE);
        self.lease_client.cancel();
        self.ep_events.stop(Duration::from_millis(200));
        self.es_events.stop(Duration::from_millis(200));
        self.caches.stop(Duration::from_millis(500));
        log::debug!("shutdown took {:?}", stopping.elapsed());
        if let Some(s) = self.server {
            s.shutdown();
        }
        self.signals.close();
        log::info!("stopped");
    }
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
    let on_event: OnEvent =
        Box::new(move |r, reason, msg| events.record(r, &EventSpec::normal(reason, msg)));
    LeaseThread::start(
        client.clone(),
        Arc::clone(clock),
        fence.clone(),
        lc,
        on_event,
        reset,
    )
    .map_err(|source| DaemonError::Setup {
        what: "lease thread".into(),
        source,
    })
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
