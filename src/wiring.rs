//! The enabled controllers as one unit for the daemon: their queues and
//! handlers (handed to the caches before the informers start), their
//! worker pools (started only once every cache they read has synced), and
//! their orderly stop. The mode is chosen here: each pool runs its
//! controller, or in shadow mode that controller's shadow syncer
//! (`crate::shadow::syncer`).
//!
//! Owns construction and life cycle only; never syncs anything itself.
//! The only module that knows every controller.

use crate::caches::{Caches, Hooks};
use crate::config::Config;
use crate::endpoints::controller::{self as ep, EndpointsController, EndpointsHandler};
use crate::endpoints::writer::EndpointsWriter;
use crate::endpointslice::controller::{
    self as es, ApiSliceWriter, NodeHandler, Shared, SliceController, SliceHandler, TopologySync,
};
use crate::endpointslice::plan::topology::TopologyCache;
use crate::endpointslice::{EndpointSliceTracker, SliceMetrics};
use crate::runtime::fence::Fence;
use crate::runtime::foreign::ForeignWrites;
use crate::runtime::metrics::ControllerMetrics;
use crate::runtime::recorder::Record;
use crate::runtime::worker::{Syncer, WorkerPool};
use crate::shadow::syncer::{EndpointsShadow, SliceShadow};
use crate::shadow::Shadow;
use endpointd_base::clock::SharedClock;
use endpointd_kube::kube::Client;
use endpointd_kube::metrics::{Family, Gauge, Registry};
use endpointd_kube::workqueue::{
    default_controller_rate_limiter, endpoints_controller_rate_limiter,
    endpointslice_controller_rate_limiter, QueueConfig, RateLimitingQueue, WorkqueueError,
    WorkqueueMetrics,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the controllers need from the daemon.
pub struct Deps {
    /// API client of the Endpoints controller.
    pub endpoints_client: Client,
    /// API client of the EndpointSlice controller.
    pub slices_client: Client,
    /// Time.
    pub clock: SharedClock,
    /// Where metrics go.
    pub registry: Arc<Registry>,
    /// Gate of every write (leader election).
    pub fence: Fence,
    /// Events of the Endpoints controller (`endpoint-controller`).
    pub endpoint_events: Arc<dyn Record>,
    /// Events of the EndpointSlice controller (`endpoint-slice-controller`).
    pub slice_events: Arc<dyn Record>,
    /// Shadow mode: compare instead of writing.
    pub shadow: Option<Arc<Shadow>>,
}

struct EndpointsParts {
    queue: RateLimitingQueue<String>,
    writer: Arc<EndpointsWriter>,
    workers: usize,
}

struct SliceParts {
    queue: RateLimitingQueue<String>,
    topology_queue: RateLimitingQueue<String>,
    shared: Arc<Shared>,
    client: Client,
    fence: Fence,
    recorder: Arc<dyn Record>,
    metrics: Arc<SliceMetrics>,
    workers: usize,
    max_per_slice: usize,
}

/// The controllers, built but not yet running.
pub struct Controllers {
    clock: SharedClock,
    registry: Arc<Registry>,
    wq_metrics: Arc<WorkqueueMetrics>,
    metrics: Arc<ControllerMetrics>,
    endpoints: Option<EndpointsParts>,
    slices: Option<SliceParts>,
    shadow: Option<Arc<Shadow>>,
    foreign: Arc<ForeignWrites>,
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
        let foreign = ForeignWrites::new(
            &deps.registry,
            Arc::clone(&deps.clock),
            deps.fence.clone(),
            deps.shadow.is_none(),
        );
        let endpoints = match cfg.endpoints.enabled {
            false => None,
            true => {
                let queue = RateLimitingQueue::new(
                    &QueueConfig::new(ep::NAME)
                        .clock(Arc::clone(&deps.clock))
                        .metrics(&wq_metrics),
                    endpoints_controller_rate_limiter(Arc::clone(&deps.clock)),
                )?;
                let writer = Arc::new(
                    EndpointsWriter::new(
                        deps.endpoints_client.clone(),
                        deps.fence.clone(),
                        Arc::clone(&deps.endpoint_events),
                    )
                    .with_clock(Arc::clone(&deps.clock)),
                );
                hooks
                    .targets
                    .push(ep::target(&queue, cfg.endpoints.batch_period));
                hooks.endpoints.push(Arc::new(
                    EndpointsHandler::new(queue.clone(), Arc::clone(&writer))
                        .with_foreign(Arc::clone(&foreign))
                        .syncing_on_create(deps.shadow.is_some()),
                ));
                Some(EndpointsParts {
                    queue,
                    writer,
                    workers: cfg.endpoints.workers,
                })
            }
        };
        let slices = match cfg.endpointslices.enabled {
            false => None,
            true => Some(slice_parts(cfg, deps, &wq_metrics, &foreign, &mut hooks)?),
        };
        let c = Controllers {
            clock: Arc::clone(&deps.clock),
            registry: Arc::clone(&deps.registry),
            wq_metrics,
            metrics: ControllerMetrics::register(&deps.registry),
            endpoints,
            slices,
            shadow: deps.shadow.clone(),
            foreign,
        };
        if let Some(s) = &c.shadow {
            if let Some(p) = &c.endpoints {
                s.set_queue(crate::shadow::ENDPOINTS, p.queue.clone());
            }
            if let Some(p) = &c.slices {
                s.set_queue(crate::shadow::ENDPOINTSLICES, p.queue.clone());
            }
        }
        Ok((c, hooks))
    }

    /// Start the worker pools (the caches must have synced), then the
    /// leftover check of the Endpoints controller (docs/behaviour.md#up-a5).
    pub fn start(self, caches: &Caches) -> std::io::Result<Running> {
        let mut pools = Vec::new();
        if let (Some(p), Some(epi)) = (self.endpoints, caches.endpoints.as_ref()) {
            let listers = ep::EndpointsListers {
                services: caches.services.store(),
                pods: caches.pods.store(),
                endpoints: epi.store(),
            };
            let ctrl: Arc<dyn Syncer> = match &self.shadow {
                Some(s) => Arc::new(EndpointsShadow::new(listers, p.writer, Arc::clone(s))),
                None => Arc::new(EndpointsController::new(listers, p.writer)),
            };
            let pool = WorkerPool::start(
                ep::NAME,
                p.workers,
                p.queue.clone(),
                ctrl,
                Arc::clone(&self.metrics),
                Arc::clone(&self.clock),
            )?;
            pool.watch_history(Arc::clone(&caches.history));
            ep::check_leftover_endpoints(&epi.store(), &p.queue);
            pools.push(pool);
        }
        if let (Some(p), Some(esi)) = (self.slices, caches.endpointslices.as_ref()) {
            let listers = es::SliceListers {
                services: caches.services.store(),
                pods: caches.pods.store(),
                nodes: caches.nodes.store(),
                slices: esi.store(),
            };
            let ctrl: Arc<dyn Syncer> = match &self.shadow {
                Some(s) => Arc::new(SliceShadow::new(
                    listers,
                    Arc::clone(&p.shared.topology),
                    p.metrics,
                    p.max_per_slice,
                    Arc::clone(s),
                )),
                None => Arc::new(
                    SliceController::new(
                        listers,
                        Arc::clone(&p.shared),
                        ApiSliceWriter::new(p.client, p.fence),
                        p.recorder,
                        p.metrics,
                        p.max_per_slice,
                    )
                    .with_clock(Arc::clone(&self.clock))
                    .with_foreign(Arc::clone(&self.foreign)),
                ),
            };
            // Beyond upstream: the zones are known before the first Service
            // sync. Upstream's topology worker starts beside the Service
            // workers, so a Service with `topology-mode: Auto` synced first
            // gets its slices written without hints and a spurious
            // "Insufficient Node information" event, then hints a moment
            // later: two writes and a false warning on every start.
            let topo = TopologySync::new(
                caches.nodes.store(),
                caches.services.store(),
                caches.pods.store(),
                Arc::clone(&p.shared),
                p.queue.clone(),
            );
            if let Err(e) = topo.sync(es::TOPOLOGY_KEY) {
                log::warn!("{}: first topology sync: {e}", es::TOPOLOGY);
                p.topology_queue.add(es::TOPOLOGY_KEY.to_string());
            }
            let pool = WorkerPool::start(
                es::NAME,
                p.workers,
                p.queue,
                ctrl,
                Arc::clone(&self.metrics),
                Arc::clone(&self.clock),
            )?;
            pool.watch_history(Arc::clone(&caches.history));
            pools.push(pool);
            pools.push(WorkerPool::start(
                es::TOPOLOGY,
                1,
                p.topology_queue,
                Arc::new(topo),
                Arc::clone(&self.metrics),
                Arc::clone(&self.clock),
            )?);
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

    /// The API server answers again after an outage: every key waiting
    /// longer than `within` is synced within `within` instead, once the
    /// caches have resumed. Those are mostly failed syncs whose backoff grew
    /// while nothing could succeed, and keys dropped after 15 retries
    /// (retried 5 minutes later); a `batch_period` or a held-back event's
    /// requeue longer than `within` syncs early too, which a sync, being
    /// idempotent, allows. Upstream waits them all out. The writes that
    /// follow are bounded by the controller's client rate limit.
    pub fn server_back(&self, within: Duration) {
        for p in &self.pools {
            let n = p.queue().pull_in(within);
            if n > 0 {
                log::info!(
                    "{}: the API server answers again; {n} waiting Services are synced within {within:?}",
                    p.controller()
                );
            }
        }
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
        let deadline = std::time::Instant::now() + drain;
        let mut ok = true;
        for p in self.pools {
            ok &= p.stop(deadline.saturating_duration_since(std::time::Instant::now()));
        }
        ok
    }
}

/// The EndpointSlice controller's queues, shared state and handlers.
fn slice_parts(
    cfg: &Config,
    deps: &Deps,
    wq_metrics: &Arc<WorkqueueMetrics>,
    foreign: &Arc<ForeignWrites>,
    hooks: &mut Hooks,
) -> Result<SliceParts, WorkqueueError> {
    let clock = &deps.clock;
    let queue = RateLimitingQueue::new(
        &QueueConfig::new(es::NAME)
            .clock(Arc::clone(clock))
            .metrics(wq_metrics),
        endpointslice_controller_rate_limiter(Arc::clone(clock)),
    )?;
    let topology_queue = RateLimitingQueue::new(
        &QueueConfig::new(es::TOPOLOGY)
            .clock(Arc::clone(clock))
            .metrics(wq_metrics),
        default_controller_rate_limiter(Arc::clone(clock)),
    )?;
    let shared = Arc::new(Shared {
        tracker: Arc::new(EndpointSliceTracker::default()),
        topology: Arc::new(Mutex::new(TopologyCache::new())),
    });
    let batch = cfg.endpointslices.batch_period;
    hooks.targets.push(ep::target(&queue, batch));
    hooks.endpointslices.push(Arc::new(
        SliceHandler::new(queue.clone(), Arc::clone(&shared), batch)
            .with_foreign(Arc::clone(foreign)),
    ));
    hooks
        .nodes
        .push(Arc::new(NodeHandler::new(topology_queue.clone())));
    Ok(SliceParts {
        queue,
        topology_queue,
        shared,
        client: deps.slices_client.clone(),
        fence: deps.fence.clone(),
        recorder: Arc::clone(&deps.slice_events),
        metrics: SliceMetrics::register(&deps.registry),
        workers: cfg.endpointslices.workers,
        max_per_slice: cfg.endpointslices.max_endpoints_per_slice as usize,
    })
}
