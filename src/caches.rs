//! The daemon's view of the cluster: one informer per resource the
//! controllers read (pods, services, nodes, and the Endpoints and
//! EndpointSlices they own) plus namespaces (issue 4; only counted in the
//! status line), started from the validated configuration over one shared
//! API client.
//!
//! Owns starting, supervising and stopping those informers, and registering
//! the controllers' handlers ([`Hooks`]) before each informer starts. It
//! never writes to the API server.

use crate::config::Config;
use crate::runtime::handlers::{PodHandler, QueueTarget, ServiceHandler};
use endpointd_base::clock::SharedClock;
use endpointd_kube::informer::{
    EventHandler, History, IndexKey, Informer, InformerMetrics, KubeSource, ReflectorConfig,
    SyncBell, Synced, SERVICE_NAME_LABEL,
};
use endpointd_kube::kube::{self, Client};
use endpointd_kube::metrics::Registry;
use endpointd_kube::model::{EndpointSlice, Endpoints, Namespace, Node, Pod, Service};
use endpointd_kube::shutdown::Shutdown;
use std::io;
use std::sync::Arc;

/// The running informers.
#[derive(Debug)]
pub struct Caches {
    client: Client,
    /// Pods, indexed by namespace.
    pub pods: Informer<Pod>,
    /// Services, indexed by namespace and by their selector's first pair.
    pub services: Informer<Service>,
    /// Nodes (zones for topology hints).
    pub nodes: Informer<Node>,
    /// Namespaces (issue 4): only counted in the status line; no controller
    /// reads them (a create in a terminating namespace is refused by the
    /// API server, which the writers handle).
    pub namespaces: Informer<Namespace>,
    /// Endpoints, when that controller is enabled.
    pub endpoints: Option<Informer<Endpoints>>,
    /// EndpointSlices by "namespace/service", when that controller is enabled.
    pub endpointslices: Option<Informer<EndpointSlice>>,
    /// What the informers know of the API server's history (shared).
    pub history: Arc<History>,
    /// Rung as each informer syncs (see [`Caches::wait_for_change`]).
    bell: Arc<SyncBell>,
}

/// Everything `start` needs besides the configuration.
#[derive(Debug, Clone)]
pub struct Env {
    /// Time source for backoff and metrics.
    pub clock: SharedClock,
    /// Where informer metrics go.
    pub registry: Arc<Registry>,
    /// The daemon's shutdown signal.
    pub shutdown: Shutdown,
}

/// The controllers' handlers, registered before the informers start.
#[derive(Default)]
pub struct Hooks {
    /// Queues fed by the shared Service and Pod handlers (one per
    /// controller; membership is computed once per pod event).
    pub targets: Vec<QueueTarget>,
    /// Node handlers (the topology cache).
    pub nodes: Vec<Arc<dyn EventHandler<Node>>>,
    /// Endpoints handlers.
    pub endpoints: Vec<Arc<dyn EventHandler<Endpoints>>>,
    /// EndpointSlice handlers.
    pub endpointslices: Vec<Arc<dyn EventHandler<EndpointSlice>>>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hooks({} targets)", self.targets.len())
    }
}

#[allow(clippy::too_many_arguments)]
fn informer<T: endpointd_kube::model::Object + serde::de::DeserializeOwned>(
    client: &Client,
    resource: kube::Resource,
    reflector: &ReflectorConfig,
    env: &Env,
    metrics: &Arc<InformerMetrics>,
    history: &Arc<History>,
    bell: &Arc<SyncBell>,
    extra_index: Option<IndexKey>,
    handlers: Vec<Arc<dyn EventHandler<T>>>,
) -> io::Result<Informer<T>> {
    let source = Arc::new(KubeSource::<T>::new(client.clone(), resource));
    let mut b = Informer::builder(source)
        .config(reflector.clone())
        .clock(Arc::clone(&env.clock))
        .metrics(Arc::clone(metrics))
        .history(Arc::clone(history))
        .bell(Arc::clone(bell));
    if let Some(ix) = extra_index {
        b = b.index(ix);
    }
    for h in handlers {
        b = b.handler(h);
    }
    b.start(&env.shutdown)
}

impl Caches {
    /// Start the informers with the controllers' handlers; each syncs in
    /// the background, retrying with backoff while the API server is
    /// unreachable. Services start first: the pod handler reads their
    /// cache for memberships.
    pub fn start(client: &Client, cfg: &Config, env: &Env, hooks: Hooks) -> io::Result<Caches> {
        let reflector = ReflectorConfig {
            watch_list: cfg.kubernetes.watch_list,
            max_list_items: cfg.kubernetes.max_list_items,
            ..ReflectorConfig::default()
        };
        let m = InformerMetrics::register(&env.registry, env.clock.clone());
        // One history for all: when one informer finds the API server's
        // history behind its resourceVersion, every informer lists again.
        let history = Arc::new(History::default());
        let bell = Arc::new(SyncBell::default());
        let by_service = IndexKey::NamespacedLabel(SERVICE_NAME_LABEL);
        let svc_handlers: Vec<Arc<dyn EventHandler<Service>>> = match hooks.targets.is_empty() {
            true => Vec::new(),
            false => vec![Arc::new(ServiceHandler::new(hooks.targets.clone()))],
        };
        let services = informer(
            client,
            kube::SERVICES,
            &reflector,
            env,
            &m,
            &history,
            &bell,
            Some(IndexKey::NamespacedSelectorFirstPair),
            svc_handlers,
        )?;
        let pod_handlers: Vec<Arc<dyn EventHandler<Pod>>> = match hooks.targets.is_empty() {
            true => Vec::new(),
            false => vec![Arc::new(PodHandler::new(services.store(), hooks.targets))],
        };
        let endpoints = match cfg.endpoints.enabled {
            true => Some(informer(
                client,
                kube::ENDPOINTS,
                &reflector,
                env,
                &m,
                &history,
                &bell,
                None,
                hooks.endpoints,
            )?),
            false => None,
        };
        let endpointslices = match cfg.endpointslices.enabled {
            true => Some(informer(
                client,
                kube::ENDPOINTSLICES,
                &reflector,
                env,
                &m,
                &history,
                &bell,
                Some(by_service),
                hooks.endpointslices,
            )?),
            false => None,
        };
        Ok(Caches {
            client: client.clone(),
            pods: informer(
                client,
                kube::PODS,
                &reflector,
                env,
                &m,
                &history,
                &bell,
                Some(IndexKey::NamespacedLabelPairs),
                pod_handlers,
            )?,
            services,
            nodes: informer(
                client,
                kube::NODES,
                &reflector,
                env,
                &m,
                &history,
                &bell,
                None,
                hooks.nodes,
            )?,
            namespaces: informer(
                client,
                kube::NAMESPACES,
                &reflector,
                env,
                &m,
                &history,
                &bell,
                None,
                Vec::new(),
            )?,
            endpoints,
            endpointslices,
            history,
            bell,
        })
    }

    /// Every running informer, for sync and liveness checks.
    pub fn all(&self) -> Vec<&dyn Synced> {
        let mut v: Vec<&dyn Synced> =
            vec![&self.pods, &self.services, &self.nodes, &self.namespaces];
        if let Some(e) = &self.endpoints {
            v.push(e);
        }
        if let Some(s) = &self.endpointslices {
            v.push(s);
        }
        v
    }

    /// The number of informers that have synced so far, as counted for
    /// [`Caches::wait_for_change`].
    pub fn sync_count(&self) -> u64 {
        self.bell.count()
    }

    /// Block until one more informer has synced since [`Caches::sync_count`]
    /// returned `seen`, or for `d`. Returns whether one did.
    pub fn wait_for_change(&self, seen: u64, d: std::time::Duration) -> bool {
        self.bell.wait_timeout(seen, d)
    }

    /// Names of the caches that have not synced yet.
    pub fn unsynced(&self) -> Vec<String> {
        self.all()
            .into_iter()
            .filter(|i| !i.has_synced())
            .map(|i| i.name().to_string())
            .collect()
    }

    /// Whether every watcher thread still runs (false means a cache froze).
    pub fn alive(&self) -> bool {
        let opt = |o: Option<bool>| o.unwrap_or(true);
        self.pods.is_alive()
            && self.services.is_alive()
            && self.nodes.is_alive()
            && self.namespaces.is_alive()
            && opt(self.endpoints.as_ref().map(Informer::is_alive))
            && opt(self.endpointslices.as_ref().map(Informer::is_alive))
    }

    /// One line for logs and systemd STATUS: object counts per cache.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} pods, {} services, {} nodes, {} namespaces",
            self.pods.store().len(),
            self.services.store().len(),
            self.nodes.store().len(),
            self.namespaces.store().len()
        );
        if let Some(e) = &self.endpoints {
            s.push_str(&format!(", {} endpoints", e.store().len()));
        }
        if let Some(e) = &self.endpointslices {
            s.push_str(&format!(", {} endpointslices", e.store().len()));
        }
        s
    }

    /// Stop: wake blocked watch reads and join every watcher thread. The
    /// shutdown signal must already be triggered.
    pub fn stop(self, within: std::time::Duration) {
        self.client.shutdown_watches();
        let deadline = std::time::Instant::now() + within;
        let left = || deadline.saturating_duration_since(std::time::Instant::now());
        let mut ok = self.pods.join_within(left());
        ok &= self.services.join_within(left());
        ok &= self.nodes.join_within(left());
        ok &= self.namespaces.join_within(left());
        ok &= self.endpoints.is_none_or(|i| i.join_within(left()));
        ok &= self.endpointslices.is_none_or(|i| i.join_within(left()));
        if !ok {
            log::warn!("an informer thread had not stopped within {within:?} (or had panicked)");
        }
    }
}
