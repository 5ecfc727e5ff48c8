//! The enabled controllers as one unit for the daemon: their queues and
//! handlers (handed to the caches before the informers start), their
//! worker pools (started only once every cache they read has synced), and
//! their orderly stop.
//!
//! Owns construction and life cycle only; never syncs anything itself.

use crate::caches::{Caches, Hooks};
use crate::clock::SharedClock;
use crate::config::Config;
use crate::controller::fence::Fence;
use crate::controller::metrics::ControllerMetrics;
use crate::controller::recorder::Record;
use crate::controller::worker::WorkerPool;
use crate::endpoints::apply::EndpointsWriter;
use crate::endpoints::controller::{self as ep, EndpointsController, EndpointsHandler};
use crate::kube::Client;
use crate::metrics::{Family, Gauge, Registry};
use crate::workqueue::{
    endpoints_controller_rate_limiter, QueueConfig, RateLimitingQueue, WorkqueueError,
    WorkqueueMetrics,
};
use std::sync::Arc;
use std::time::Duration;

/// What the controllers need from the daemon.
pub struct Deps {
    /// API client for writes.
    pub client: Client,
    /// Time.
    pub clock: SharedClock,
    /// Where metrics go.
    pub registry: Arc<Registry>,
    /// Gate of every write (leader election).
    pub fence: Fence,
    /// Event sink.
    pub recorder: Arc<dyn Record>,
}

struct EndpointsParts {
    queue: RateLimitingQueue<String>,
    writer: Arc<EndpointsWriter>,
    workers: usize,
}

/// The controllers, built but not yet running.
pub struct Controllers {
    clock: SharedClock,
    registry: Arc<Registry>,
    wq_metrics: Arc<WorkqueueMetrics>,
    metrics: Arc<ControllerMetrics>,
    endpoints: Option<EndpointsParts>,
}

/// The controllers, running.
pub struct Running {
    pools: Vec<WorkerPool>,
    pending: Arc<Family<Gauge>>,
    wq_metrics: Arc<WorkqueueMetrics>,
}

impl Controllers {
    /// Build the enabled controllers' queues and handlers. The handlers go
    /// into the returned [`Hooks`] for [`Caches::start`].
    pub fn new(cfg: &Config, deps: &Deps) -> Result<(Controllers, Hooks), WorkqueueError> {
        let wq_metrics = WorkqueueMetrics::register(&deps.registry);
        let mut hooks = Hooks::default();
        let endpoints = match cfg.endpoints.enabled {
            false => None,
            true => {
                let queue = RateLimitingQueue::new(
                    &QueueConfig::new(ep::NAME)
                        .clock(Arc::clone(&deps.clock))
                        .metrics(&wq_metrics),
                    endpoints_controller_rate_limiter(Arc::clone(&deps.clock)),
                )?;
                let writer = Arc::new(EndpointsWriter::new(
                    deps.client.clone(),
                    deps.fence.clone(),
                    Arc::clone(&deps.recorder),
                ));
                hooks
                    .targets
                    .push(ep::target(&queue, cfg.endpoints.batch_period));
                hooks.endpoints.push(Arc::new(EndpointsHandler::new(
                    queue.clone(),
                    Arc::clone(&writer),
                )));
                Some(EndpointsParts {
                    queue,
                    writer,
                    workers: cfg.endpoints.workers,
                })
            }
        };
        let c = Controllers {
            clock: Arc::clone(&deps.clock),
            registry: Arc::clone(&deps.registry),
            wq_metrics,
            metrics: ControllerMetrics::register(&deps.registry),
            endpoints,
        };
        Ok((c, hooks))
    }

    /// Start the worker pools (the caches must have synced), then the
    /// leftover check of the Endpoints controller (A5).
    pub fn start(self, caches: &Caches) -> std::io::Result<Running> {
        let mut pools = Vec::new();
        if let (Some(p), Some(epi)) = (self.endpoints, caches.endpoints.as_ref()) {
            let listers = ep::Listers {
                services: caches.services.store(),
                pods: caches.pods.store(),
                endpoints: epi.store(),
            };
            let ctrl = Arc::new(EndpointsController::new(listers, p.writer));
            let pool = WorkerPool::start(
                ep::NAME,
                p.workers,
                p.queue.clone(),
                ctrl,
                Arc::clone(&self.metrics),
                Arc::clone(&self.clock),
            )?;
            ep::check_leftover_endpoints(&epi.store(), &p.queue);
            pools.push(pool);
        }
        let pending = self.registry.gauge(
            "endpointd_controller_pending_keys",
            "Service keys queued, waiting for their time, or being synced, by controller (refreshed every second).",
            &["controller"],
        );
        let r = Running {
            pools,
            pending,
            wq_metrics: self.wq_metrics,
        };
        r.refresh_metrics();
        Ok(r)
    }
}

impl Running {
    /// The worker pools, for supervision.
    pub fn pools(&self) -> &[WorkerPool] {
        &self.pools
    }

    /// Refresh the gauges that are computed, not counted: pending keys per
    /// controller and the work queues' unfinished-work gauges.
    pub fn refresh_metrics(&self) {
        for p in &self.pools {
            let q = p.queue();
            let n = q.len() + q.waiting_len() + q.in_flight();
            self.pending.with(&[p.controller()]).set(n as f64);
        }
        self.wq_metrics.update_unfinished_work();
    }

    /// Keys queued or waiting across the controllers (for STATUS).
    pub fn queued(&self) -> usize {
        self.pools
            .iter()
            .map(|p| p.queue().len() + p.queue().waiting_len())
            .sum()
    }

    /// Stop taking keys and let in-flight syncs finish, for at most `drain`
    /// overall.
    pub fn stop(self, drain: Duration) -> bool {
        let mut ok = true;
        for p in self.pools {
            ok &= p.stop(drain);
        }
        ok
    }
}
