//! The Endpoints controller's wiring (upstream
//! `pkg/controller/endpoint/endpoints_controller.go`): its queue, its
//! Endpoints-delete handler (docs/behaviour.md#up-c1), `sync_service`
//! (docs/behaviour.md#up-a4–#up-a9, #up-a17) and the
//! leftover check at start (docs/behaviour.md#up-a5).
//!
//! `sync_service` only gathers inputs from the caches, asks the pure plan
//! (`plan`) what to write, and hands that to the writer (`writer`).
//! Must never write except through [`EndpointsWriter`].

use super::plan::{plan, EndpointsInput, EndpointsPlan};
use super::writer::EndpointsWriter;
use crate::runtime::foreign::ForeignWrites;
use crate::runtime::handlers::QueueTarget;
use crate::runtime::membership::pods_for_service;
use crate::runtime::podutil::service_is_managed;
use crate::runtime::trigger::TriggerTimeTracker;
use crate::runtime::worker::{SyncError, Syncer};
use endpointd_kube::informer::{DeletedObject, EventHandler, Store};
use endpointd_kube::model::{Endpoints, Object, Pod, Service};
use endpointd_kube::workqueue::RateLimitingQueue;
use std::sync::Arc;
use std::time::Duration;

/// The controller name in logs, metrics and the work queue (KCM's queue is
/// called `endpoint`).
pub const NAME: &str = "endpoint";

/// The annotation of the old Endpoints-based leader-election lock: such
/// objects are never touched by the leftover check (docs/behaviour.md#up-a5).
pub const LEADER_ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";

/// The caches a sync reads.
#[derive(Clone, Debug)]
pub struct EndpointsListers {
    /// Services.
    pub services: Store<Service>,
    /// Pods.
    pub pods: Store<Pod>,
    /// Endpoints.
    pub endpoints: Store<Endpoints>,
}

/// The Endpoints controller: the [`Syncer`] its workers run.
pub struct EndpointsController {
    listers: EndpointsListers,
    writer: Arc<EndpointsWriter>,
    triggers: TriggerTimeTracker,
}

impl EndpointsController {
    /// A controller reading `listers` and writing through `writer`.
    pub fn new(listers: EndpointsListers, writer: Arc<EndpointsWriter>) -> EndpointsController {
        EndpointsController {
            listers,
            writer,
            triggers: TriggerTimeTracker::new(),
        }
    }

    /// Upstream `syncService`.
    pub fn sync_service(&self, key: &str) -> Result<(), SyncError> {
        let Some((ns, name)) = key.split_once('/') else {
            log::warn!("{NAME}: ignoring malformed key {key:?}");
            return Ok(());
        };
        let Some(svc) = self.listers.services.get(key) else {
            // docs/behaviour.md#up-a6: the Service is gone; its Endpoints go too.
            let cached = self.listers.endpoints.get(key);
            self.writer.delete(key, ns, name, cached.as_deref())?;
            self.triggers.delete_service(key);
            return Ok(());
        };
        if !service_is_managed(&svc) {
            // Selector removed or ExternalName: upstream stops managing
            // the Endpoints and leaves it as it is; so do its edits.
            self.writer.release(key);
            return Ok(());
        }
        let pods = pods_for_service(&self.listers.pods, &svc);
        let trigger_time = self.triggers.compute(key, &svc, &pods);
        let current = self.listers.endpoints.get(key);
        let cache_rv = self.listers.endpoints.resource_version();
        if self.writer.is_stale_bounded(
            key,
            current.as_deref(),
            &cache_rv,
            self.listers.endpoints.list_count(),
        ) {
            return Err(SyncError::StaleCache {
                cache: "endpoints",
                key: key.to_string(),
            });
        }
        let input = EndpointsInput {
            service: &svc,
            pods: &pods,
            current: current.as_deref(),
            trigger_time,
        };
        match plan(&input) {
            EndpointsPlan::Unchanged => {
                if let Some(cur) = current.as_deref() {
                    self.writer.accept(key, cur);
                }
                Ok(())
            }
            EndpointsPlan::Create(obj) => {
                let created = self.writer.create(key, ns, &obj);
                // The create's echo may have reached the cache before its
                // response did (then the handler saw nothing to forget).
                let cache_rv = self.listers.endpoints.resource_version();
                self.writer.cache_reached(key, &cache_rv);
                created
            }
            EndpointsPlan::Update(obj) => {
                let updated = self.writer.update(key, ns, &obj);
                // The update's echo may have reached the cache before its
                // response did (then the handler saw nothing to forget).
                if let Some(cur) = self.listers.endpoints.get(key) {
                    self.writer.cache_shows(key, cur.resource_version());
                }
                updated
            }
        }
    }
}

impl Syncer for EndpointsController {
    fn sync(&self, key: &str) -> Result<(), SyncError> {
        self.sync_service(key)
    }
}

/// docs/behaviour.md#up-a5: queue every cached Endpoints (those whose Service is gone are then
/// deleted), except the old leader-election locks.
pub fn check_leftover_endpoints(endpoints: &Store<Endpoints>, queue: &RateLimitingQueue<String>) {
    for ep in endpoints.list() {
        if ep.metadata.annotations.contains_key(LEADER_ANNOTATION) {
            continue;
        }
        queue.add(ep.key());
    }
}

/// Endpoints deleted → sync its Service (docs/behaviour.md#up-c1), unless we deleted it
/// ourselves ([`EndpointsWriter::own_delete_seen`]); beyond upstream, an
/// Endpoints of a managed Service changed by someone else → sync its
/// Service too, so a foreign edit is corrected at once (upstream only
/// notices at the Service's next sync). Our own writes are recognised by
/// their content, and only the Endpoints a sync has written or found right
/// count (see [`EndpointsWriter::is_foreign_edit`]): edits of any other
/// Endpoints (user-managed, orphaned, a leader-election lock) are ignored,
/// as upstream ignores them — a sync of a key without a Service would
/// DELETE it. Adds and updates also tell the writer which of its writes
/// the cache has shown ([`EndpointsWriter::cache_shows`]). In shadow mode,
/// where every Endpoints is someone else's, an Endpoints created after the
/// first list syncs its key too, so that a shadow difference "no Endpoints
/// object" leaves the list once the other controller has created it.
pub struct EndpointsHandler {
    queue: RateLimitingQueue<String>,
    writer: Arc<EndpointsWriter>,
    foreign: Option<Arc<ForeignWrites>>,
    sync_on_create: bool,
}

impl EndpointsHandler {
    /// A handler feeding `queue`.
    pub fn new(queue: RateLimitingQueue<String>, writer: Arc<EndpointsWriter>) -> EndpointsHandler {
        EndpointsHandler {
            queue,
            writer,
            foreign: None,
            sync_on_create: false,
        }
    }

    /// Sync the key of every Endpoints created after the first list (shadow
    /// mode: nothing endpointd writes, so each is another writer's).
    pub fn syncing_on_create(mut self, on: bool) -> EndpointsHandler {
        self.sync_on_create = on;
        self
    }

    /// Report someone else's edits of our Endpoints to `foreign`.
    pub fn with_foreign(mut self, foreign: Arc<ForeignWrites>) -> EndpointsHandler {
        self.foreign = Some(foreign);
        self
    }
}

impl EventHandler<Endpoints> for EndpointsHandler {
    fn on_add(&self, obj: &Arc<Endpoints>, initial: bool) {
        if self.writer.awaits_echoes() {
            self.writer.cache_shows(&obj.key(), obj.resource_version());
        }
        if self.sync_on_create && !initial {
            self.queue.add(obj.key());
        }
    }
    fn on_update(&self, old: &Arc<Endpoints>, new: &Arc<Endpoints>) {
        let key = new.key();
        self.writer.cache_shows(&key, new.resource_version());
        let foreign = old.resource_version() != new.resource_version()
            && self.writer.is_foreign_edit(&key, new);
        if foreign {
            let mut delay = Duration::ZERO;
            if let Some(f) = &self.foreign {
                if !self.writer.is_earlier_write(&key, new) {
                    f.seen("endpoints", &format_args!("Endpoints {key}"));
                }
                // Corrections of one Endpoints back off while the other
                // writer keeps going (runtime::foreign).
                delay = f.correction_delay("endpoints", &key);
            }
            match delay.is_zero() {
                true => {
                    self.queue.add(key);
                }
                false => self.queue.add_after(key, delay),
            }
        }
    }
    fn on_delete(&self, obj: &DeletedObject<Endpoints>) {
        let key = obj.object().key();
        if !self.writer.own_delete_seen(&key, obj.object()) {
            self.queue.add(key);
        }
    }
}

/// The queue target of this controller for the shared Service/Pod handlers.
pub fn target(queue: &RateLimitingQueue<String>, batch_period: Duration) -> QueueTarget {
    QueueTarget {
        queue: queue.clone(),
        batch_period,
    }
}
