//! The daemon's view of the cluster: one informer per resource the
//! controllers read (pods, services, nodes, namespaces, and the Endpoints
//! and EndpointSlices they own), started from the validated configuration
//! over one shared API client.
//!
//! Owns starting, supervising and stopping those informers. It never writes
//! to the API server and registers no handlers yet: the controllers (later
//! issues) attach theirs here.

use crate::clock::SharedClock;
use crate::config::Config;
use crate::informer::{
    IndexKey, Informer, InformerMetrics, KubeSource, ReflectorConfig, Synced, SERVICE_NAME_LABEL,
};
use crate::kube::{self, Client};
use crate::metrics::Registry;
use crate::model::{EndpointSlice, Endpoints, Namespace, Node, Pod, Service};
use crate::shutdown::Shutdown;
use std::io;
use std::sync::Arc;

/// The running informers.
#[derive(Debug)]
pub struct Caches {
    client: Client,
    /// Pods, indexed by namespace.
    pub pods: Informer<Pod>,
    /// Services, indexed by namespace.
    pub services: Informer<Service>,
    /// Nodes (zones for topology hints).
    pub nodes: Informer<Node>,
    /// Namespaces (terminating ones are skipped).
    pub namespaces: Informer<Namespace>,
    /// Endpoints, when that controller is enabled.
    pub endpoints: Option<Informer<Endpoints>>,
    /// EndpointSlices by "namespace/service", when that controller is enabled.
    pub endpointslices: Option<Informer<EndpointSlice>>,
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

fn informer<T: crate::model::Object + serde::de::DeserializeOwned>(
    client: &Client,
    resource: kube::Resource,
    reflector: &ReflectorConfig,
    env: &Env,
    metrics: &Arc<InformerMetrics>,
    extra_index: Option<IndexKey>,
) -> io::Result<Informer<T>> {
    let source = Arc::new(KubeSource::<T>::new(client.clone(), resource));
    let mut b = Informer::builder(source)
        .config(reflector.clone())
        .clock(Arc::clone(&env.clock))
        .metrics(Arc::clone(metrics));
    if let Some(ix) = extra_index {
        b = b.index(ix);
    }
    b.start(&env.shutdown)
}

impl Caches {
    /// Start the informers; each syncs in the background, retrying with
    /// backoff while the API server is unreachable.
    pub fn start(client: &Client, cfg: &Config, env: &Env) -> io::Result<Caches> {
        let reflector = ReflectorConfig {
            watch_list: cfg.kubernetes.watch_list,
            ..ReflectorConfig::default()
        };
        let m = InformerMetrics::register(&env.registry);
        let by_service = IndexKey::NamespacedLabel(SERVICE_NAME_LABEL);
        Ok(Caches {
            client: client.clone(),
            pods: informer(client, kube::PODS, &reflector, env, &m, None)?,
            services: informer(client, kube::SERVICES, &reflector, env, &m, None)?,
            nodes: informer(client, kube::NODES, &reflector, env, &m, None)?,
            namespaces: informer(client, kube::NAMESPACES, &reflector, env, &m, None)?,
            endpoints: match cfg.endpoints.enabled {
                true => Some(informer(
                    client,
                    kube::ENDPOINTS,
                    &reflector,
                    env,
                    &m,
                    None,
                )?),
                false => None,
            },
            endpointslices: match cfg.endpointslices.enabled {
                true => Some(informer(
                    client,
                    kube::ENDPOINTSLICES,
                    &reflector,
                    env,
                    &m,
                    Some(by_service),
                )?),
                false => None,
            },
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
    pub fn stop(self) {
        self.client.shutdown_watches();
        let mut ok = self.pods.join();
        ok &= self.services.join();
        ok &= self.nodes.join();
        ok &= self.namespaces.join();
        ok &= self.endpoints.is_none_or(Informer::join);
        ok &= self.endpointslices.is_none_or(Informer::join);
        if !ok {
            log::error!("an informer thread had panicked");
        }
    }
}
