//! The EndpointSlice controller's wiring (upstream
//! `pkg/controller/endpointslice/endpointslice_controller.go`): its
//! EndpointSlice and Node handlers (docs/behaviour.md#up-c5, #up-c6), `sync_service`
//! (docs/behaviour.md#up-b3–#up-b7), the
//! topology worker, and the API writer the reconciler's plan is applied
//! through.
//!
//! `sync_service` only gathers inputs from the caches, asks the pure
//! reconciler for a plan and hands it to `finalize`. Must never write
//! except through [`ApiSliceWriter`], which asks the fence first.

use super::plan::topology::TopologyCache;
use super::tracker::WriteOrigin;
use super::{
    finalize, managed_by_us, reconcile, service_key, EndpointSliceTracker, ReconcileInput,
    SliceMetrics, SliceWriter,
};
use crate::runtime::events::EventSpec;
use crate::runtime::fence::Fence;
use crate::runtime::foreign::ForeignWrites;
use crate::runtime::membership::{pods_for_service, services_for_pod};
use crate::runtime::podutil::service_is_managed;
use crate::runtime::recorder::Record;
use crate::runtime::trigger::TriggerTimeTracker;
use crate::runtime::worker::{SyncError, Syncer};
use endpointd_kube::informer::{DeletedObject, EventHandler, IndexKey, Store, SERVICE_NAME_LABEL};
use endpointd_kube::kube::{self, Client, ENDPOINTSLICES};
use endpointd_kube::model::{EndpointSlice, Node, ObjectReference, Pod, Service, ZONE_LABEL};
use endpointd_kube::workqueue::RateLimitingQueue;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The controller name in logs and metrics; KCM's queue is `endpoint_slice`.
pub const NAME: &str = "endpoint_slice";

/// The topology worker's name and its single queue key (upstream
/// `topologyQueueItemKey`).
pub const TOPOLOGY: &str = "endpoint_slice_topology";
/// The one key of the topology queue.
pub const TOPOLOGY_KEY: &str = "topologyQueueItemKey";
/// Prefix of the topology queue's other key, `node/<name>`: re-sync the
/// Services with a pod on that node (beyond upstream, see
/// [`NodeHandler`]).
pub const NODE_KEY_PREFIX: &str = "node/";

/// Slice events enqueue their Service no sooner than this (upstream
/// `endpointSliceChangeMinSyncDelay`).
pub const SLICE_CHANGE_MIN_DELAY: Duration = Duration::from_secs(1);

/// The caches a sync reads.
#[derive(Clone, Debug)]
pub struct SliceListers {
    /// Services.
    pub services: Store<Service>,
    /// Pods.
    pub pods: Store<Pod>,
    /// Nodes.
    pub nodes: Store<Node>,
    /// EndpointSlices, indexed by `ns/service`.
    pub slices: Store<EndpointSlice>,
}

/// State shared between the handlers and the workers.
pub struct Shared {
    /// Generations of the slices we wrote (docs/behaviour.md#up-b29).
    pub tracker: Arc<EndpointSliceTracker>,
    /// Zone ratios and hints (docs/behaviour.md#up-b24).
    pub topology: Arc<Mutex<TopologyCache>>,
}

/// The API writes of `finalize`, each behind the fence.
pub struct ApiSliceWriter {
    client: Client,
    fence: Fence,
}

impl ApiSliceWriter {
    /// A writer through `client`, gated by `fence`.
    pub fn new(client: Client, fence: Fence) -> ApiSliceWriter {
        ApiSliceWriter {
            client: client.gated(Arc::new(fence.clone())),
            fence,
        }
    }

    /// Before anything else (the client asks again before each attempt):
    /// a fenced write costs no rate-limiter token and no bookkeeping.
    fn gate(&self) -> Result<(), kube::Error> {
        self.fence
            .check()
            .map_err(|e| kube::Error::Refused(e.to_string()))
    }
}

/// The slice as written, for the tracker (which reads only its metadata):
/// the metadata the server returned (name, UID, resourceVersion,
/// generation) with the address type and ports sent, and no endpoints —
/// decoding them back from every answer cost as much as the write's own
/// serialisation.
fn with_metadata(sent: &EndpointSlice, written: endpointd_kube::model::MetaOnly) -> EndpointSlice {
    EndpointSlice {
        api_version: sent.api_version,
        kind: sent.kind,
        metadata: written.metadata,
        address_type: sent.address_type,
        endpoints: Vec::new(),
        ports: sent.ports.clone(),
    }
}

impl SliceWriter for ApiSliceWriter {
    fn create(&self, s: &EndpointSlice) -> Result<EndpointSlice, kube::Error> {
        self.gate()?;
        let written = self.client.create_meta(&ENDPOINTSLICES, None, s)?;
        Ok(with_metadata(s, written))
    }
    fn update(&self, s: &EndpointSlice) -> Result<EndpointSlice, kube::Error> {
        self.gate()?;
        let written = self.client.update_meta(&ENDPOINTSLICES, None, s)?;
        Ok(with_metadata(s, written))
    }
    fn delete(&self, namespace: &str, name: &str) -> Result<(), kube::Error> {
        self.gate()?;
        self.client
            .delete(&ENDPOINTSLICES, Some(namespace), name, None)
    }
}

/// [`ApiSliceWriter`] for one sync, telling `finalize` whether the
/// Service it writes for is still the one in the cache.
struct SyncWriter<'a> {
    writer: &'a ApiSliceWriter,
    services: &'a Store<Service>,
}

impl SliceWriter for SyncWriter<'_> {
    fn create(&self, s: &EndpointSlice) -> Result<EndpointSlice, kube::Error> {
        self.writer.create(s)
    }
    fn update(&self, s: &EndpointSlice) -> Result<EndpointSlice, kube::Error> {
        self.writer.update(s)
    }
    fn delete(&self, namespace: &str, name: &str) -> Result<(), kube::Error> {
        self.writer.delete(namespace, name)
    }
    fn service_gone(&self, svc: &Service) -> bool {
        let key = format!("{}/{}", svc.metadata.namespace, svc.metadata.name);
        self.services.get(&key).is_none_or(|now| {
            now.metadata.uid != svc.metadata.uid || now.metadata.deletion_timestamp.is_some()
        })
    }
}

/// The EndpointSlice controller: the [`Syncer`] its workers run.
pub struct SliceController {
    listers: SliceListers,
    shared: Arc<Shared>,
    writer: ApiSliceWriter,
    recorder: Arc<dyn Record>,
    metrics: Arc<SliceMetrics>,
    triggers: TriggerTimeTracker,
    max_endpoints_per_slice: usize,
    clock: endpointd_base::clock::SharedClock,
    foreign: Option<Arc<ForeignWrites>>,
}

fn service_ref(svc: &Service) -> ObjectReference {
    ObjectReference {
        kind: "Service".into(),
        namespace: (*svc.metadata.namespace).into(),
        name: (*svc.metadata.name).into(),
        uid: svc.metadata.uid.clone(),
        ..ObjectReference::default()
    }
    .with_api_version("v1")
}

impl SliceController {
    /// A controller over `listers`.
    pub fn new(
        listers: SliceListers,
        shared: Arc<Shared>,
        writer: ApiSliceWriter,
        recorder: Arc<dyn Record>,
        metrics: Arc<SliceMetrics>,
        max_endpoints_per_slice: usize,
    ) -> SliceController {
        SliceController {
            listers,
            shared,
            writer,
            recorder,
            metrics,
            triggers: TriggerTimeTracker::new(),
            max_endpoints_per_slice,
            clock: endpointd_base::clock::RealClock::shared(),
            foreign: None,
        }
    }

    /// Report writes of ours overtaken by someone else's to `foreign`.
    pub fn with_foreign(mut self, foreign: Arc<ForeignWrites>) -> Self {
        self.foreign = Some(foreign);
        self
    }

    /// The clock of the stale-cache bound.
    pub fn with_clock(mut self, clock: endpointd_base::clock::SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// The pods the Service selects and the cached slices labelled with its
    /// name (whatever their manager).
    fn pods_and_slices(
        &self,
        key: &str,
        svc: &Service,
    ) -> (Vec<Arc<Pod>>, Vec<Arc<EndpointSlice>>) {
        let pods = pods_for_service(&self.listers.pods, svc);
        let existing = self
            .listers
            .slices
            .by_index(IndexKey::NamespacedLabel(SERVICE_NAME_LABEL), key);
        (pods, existing)
    }

    /// Upstream `syncService`.
    pub fn sync_service(&self, key: &str) -> Result<(), SyncError> {
        let Some((ns, name)) = key.split_once('/') else {
            log::warn!("{NAME}: ignoring malformed key {key:?}");
            return Ok(());
        };
        let Some(svc) = self.listers.services.get(key) else {
            // docs/behaviour.md#up-b3: no API deletes; garbage collection removes the slices.
            self.triggers.delete_service(key);
            self.shared.tracker.delete_service(ns, name);
            self.metrics.delete_service(key);
            self.shared
                .topology
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .delete_service(key);
            return Ok(());
        };
        if !service_is_managed(&svc) {
            return Ok(());
        }
        let (pods, existing) = self.pods_and_slices(key, &svc);
        let ours: Vec<Arc<EndpointSlice>> = existing
            .iter()
            .filter(|s| managed_by_us(s) && s.metadata.deletion_timestamp.is_none())
            .cloned()
            .collect();
        if self.shared.tracker.stale_slices_at(
            &svc,
            ours.iter().map(|s| &**s),
            self.clock.now(),
            self.listers.slices.list_count(),
        ) {
            return Err(SyncError::StaleCache {
                cache: "EndpointSlice",
                key: key.to_string(),
            });
        }
        let trigger_time = self.triggers.compute(key, &svc, &pods);
        let nodes = |n: &str| self.listers.nodes.get(n);
        let input = ReconcileInput {
            service: &svc,
            pods: &pods,
            existing: &existing,
            nodes: &nodes,
            trigger_time,
            max_endpoints_per_slice: self.max_endpoints_per_slice,
            topology: Some(&self.shared.topology),
        };
        let plan = reconcile(&input);
        let writer = SyncWriter {
            writer: &self.writer,
            services: &self.listers.services,
        };
        let (done, write_errors) =
            finalize(&svc, &plan, trigger_time, &writer, &self.shared.tracker);
        let regarding = service_ref(&svc);
        // Upstream emits the plan's (topology) events whatever finalize
        // did, then one warning for the sync's errors together: the pods
        // skipped for a missing Node (docs/behaviour.md#up-b12) and the failed write.
        for ev in &plan.events {
            self.recorder.record(&regarding, ev);
        }
        // As upstream: the figures whatever failed, the writes that were
        // done counted.
        let td = svc.traffic_distribution.as_deref();
        self.metrics.record_plan(key, &plan, td, &done);
        let mut errors = plan.node_errors.clone();
        errors.extend(write_errors.iter().map(super::writer::upstream_text));
        if !errors.is_empty() {
            let msg = failed_message(key, &errors);
            self.recorder.record(
                &regarding,
                &EventSpec::warning("FailedToUpdateEndpointSlices", msg.clone()),
            );
            // A conflict among the writes: our cache is behind; the worker
            // retries it as stale.
            return Err(SyncError::Slices {
                message: msg,
                writes: write_errors,
            });
        }
        if done.overtaken {
            // A Service deleted meanwhile: the garbage collector removed
            // what we wrote for it, nobody else wrote (issue 37 item 10).
            let collected = writer.service_gone(&svc);
            if let Some(f) = self.foreign.as_ref().filter(|_| !collected) {
                f.seen(
                    "endpointslices",
                    &format_args!(
                        "an EndpointSlice of Service {key} (while our write was in flight)"
                    ),
                );
            }
            // Someone else wrote a slice while our write was in flight:
            // the held event would have queued the Service (docs/behaviour.md#up-c5)
            // with the slice-change delay (or the correction backoff); the
            // cache is not stale.
            let backoff = self.foreign.as_ref().map_or(Duration::ZERO, |f| {
                f.correction_delay("endpointslices", key)
            });
            return Err(SyncError::Requeue(backoff.max(SLICE_CHANGE_MIN_DELAY)));
        }
        Ok(())
    }
}

/// The message of upstream's `FailedToUpdateEndpointSlices` warning: the
/// sync's errors as an apimachinery aggregate prints them (one alone,
/// several as `[a, b]`).
pub fn failed_message(key: &str, errors: &[String]) -> String {
    let all = match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    format!("Error updating Endpoint Slices for Service {key}: {all}")
}

impl Syncer for SliceController {
    fn sync(&self, key: &str) -> Result<(), SyncError> {
        let r = self.sync_service(key);
        self.metrics.sync_result(match &r {
            Ok(()) => "success",
            Err(e) if e.is_stale() => "stale",
            Err(_) => "error",
        });
        r
    }
}

/// EndpointSlice events → the Service, after max(1 s, batch period), only
/// as docs/behaviour.md#up-c5 says (our own writes are recognised by the tracker).
pub struct SliceHandler {
    queue: RateLimitingQueue<String>,
    shared: Arc<Shared>,
    delay: Duration,
    foreign: Option<Arc<ForeignWrites>>,
}

impl SliceHandler {
    /// A handler feeding `queue`.
    pub fn new(
        queue: RateLimitingQueue<String>,
        shared: Arc<Shared>,
        batch_period: Duration,
    ) -> SliceHandler {
        SliceHandler {
            queue,
            shared,
            delay: batch_period.max(SLICE_CHANGE_MIN_DELAY),
            foreign: None,
        }
    }

    /// Report someone else's updates of our slices to `foreign`.
    pub fn with_foreign(mut self, foreign: Arc<ForeignWrites>) -> SliceHandler {
        self.foreign = Some(foreign);
        self
    }

    fn enqueue(&self, s: &EndpointSlice) {
        match service_key(s) {
            Some(k) => self.queue.add_after(k, self.delay),
            None => log::debug!(
                "{NAME}: slice {}/{} has no {SERVICE_NAME_LABEL} label; ignored",
                s.metadata.namespace,
                s.metadata.name
            ),
        }
    }
}

impl EventHandler<EndpointSlice> for SliceHandler {
    fn on_add(&self, obj: &Arc<EndpointSlice>, _initial: bool) {
        if managed_by_us(obj) && self.shared.tracker.should_sync(obj) {
            self.enqueue(obj);
        }
    }
    fn on_update(&self, old: &Arc<EndpointSlice>, new: &Arc<EndpointSlice>) {
        let relabelled = old.metadata.labels.get(SERVICE_NAME_LABEL)
            != new.metadata.labels.get(SERVICE_NAME_LABEL);
        // A slice of ours that leaves its Service's own set without being
        // deleted — relabelled to another Service, no longer managed by
        // us, or being deleted behind a finalizer — is forgotten by the
        // tracker as if deleted: still tracked, it would count as missing
        // from the cache and keep the Service stale until the next LIST.
        let being_deleted = |s: &EndpointSlice| s.metadata.deletion_timestamp.is_some();
        if managed_by_us(old)
            && !being_deleted(old)
            && (relabelled || !managed_by_us(new) || being_deleted(new))
        {
            self.shared.tracker.handle_deletion(old);
        }
        if relabelled {
            self.enqueue(new);
            self.enqueue(old);
            return;
        }
        let flipped = managed_by_us(old) != managed_by_us(new);
        let seen = managed_by_us(new).then(|| self.shared.tracker.seen(new));
        if let (Some(WriteOrigin::Foreign), Some(f)) = (seen, &self.foreign) {
            let m = &new.metadata;
            f.seen(
                "endpointslices",
                &format_args!("EndpointSlice {}/{}", m.namespace, m.name),
            );
            // Corrections back off while the other writer keeps going.
            if let Some(k) = service_key(new) {
                let delay = f.correction_delay("endpointslices", &k);
                if delay > self.delay {
                    self.queue.add_after(k, delay);
                    return;
                }
            }
        }
        if flipped || seen.is_some_and(|s| s != WriteOrigin::Ours) {
            self.enqueue(new);
        }
    }
    fn on_delete(&self, obj: &DeletedObject<EndpointSlice>) {
        let s = obj.object();
        // Also for an untracked slice of ours (the held echo of a create in
        // flight, which the tracker marks); only a tracked one whose
        // deletion was not ours syncs.
        if managed_by_us(s) && !self.shared.tracker.handle_deletion(s) {
            self.enqueue(s);
        }
    }
}

/// Node events → the topology worker (docs/behaviour.md#up-c6): adds and deletes always, updates
/// only when readiness, the zone label or (beyond upstream) the
/// allocatable CPU changed. Upstream ignores a CPU change, so zone ratios
/// went stale, and a Ready node that gets its CPU late left every
/// `topology-mode: Auto` Service without hints until its next pod change.
///
/// Also beyond upstream: a node whose zone label changes, or that appears
/// after the caches synced, queues `node/<name>`, and the topology worker
/// re-syncs every Service with a pod on it. Upstream reads an endpoint's
/// zone only when its Service syncs for another reason (docs/behaviour.md#up-c6), so a
/// relabelled node's endpoints kept the old zone — and their hints were
/// computed from it — until each Service's next pod change; and the pods
/// of a node that was missing when their Service synced (skipped with a
/// `FailedToUpdateEndpointSlices` event) waited for the sync's
/// exponential retry.
pub struct NodeHandler {
    queue: RateLimitingQueue<String>,
}

impl NodeHandler {
    /// A handler feeding the topology queue.
    pub fn new(queue: RateLimitingQueue<String>) -> NodeHandler {
        NodeHandler { queue }
    }
}

impl EventHandler<Node> for NodeHandler {
    fn on_add(&self, obj: &Arc<Node>, initial: bool) {
        self.queue.add(TOPOLOGY_KEY.to_string());
        if !initial {
            self.queue
                .add(format!("{NODE_KEY_PREFIX}{}", obj.metadata.name));
        }
    }
    fn on_update(&self, old: &Arc<Node>, new: &Arc<Node>) {
        let zone = |n: &Node| n.metadata.labels.get(ZONE_LABEL).map(str::to_string);
        let zone_changed = zone(old) != zone(new);
        if old.ready != new.ready || zone_changed || old.allocatable_cpu != new.allocatable_cpu {
            self.queue.add(TOPOLOGY_KEY.to_string());
        }
        if zone_changed {
            self.queue
                .add(format!("{NODE_KEY_PREFIX}{}", new.metadata.name));
        }
    }
    fn on_delete(&self, _obj: &DeletedObject<Node>) {
        self.queue.add(TOPOLOGY_KEY.to_string());
    }
}

/// The topology worker's sync: recompute zone ratios from every node, then
/// queue the Services whose hints now overload a zone (docs/behaviour.md#up-c6). Beyond
/// upstream: when the node information turns sufficient (e.g. the first
/// topology sync after start ran after the Services' first syncs), every
/// Service with `topology-mode: Auto` is queued too — upstream leaves such
/// a Service without hints until its next pod change.
pub struct TopologySync {
    nodes: Store<Node>,
    services: Store<Service>,
    pods: Store<Pod>,
    shared: Arc<Shared>,
    service_queue: RateLimitingQueue<String>,
}

impl TopologySync {
    /// A sync reading `nodes` (and, for a `node/<name>` key, `pods` and
    /// their `services`), re-queueing on `service_queue`.
    pub fn new(
        nodes: Store<Node>,
        services: Store<Service>,
        pods: Store<Pod>,
        shared: Arc<Shared>,
        service_queue: RateLimitingQueue<String>,
    ) -> TopologySync {
        TopologySync {
            nodes,
            services,
            pods,
            shared,
            service_queue,
        }
    }

    /// Queue every Service selecting a pod on `node` (see [`NodeHandler`]).
    /// Node relabels and late nodes are rare; one pass over the pod cache
    /// each is cheaper than a per-node index kept for every pod.
    fn resync_node(&self, node: &str) {
        let mut keys = std::collections::BTreeSet::new();
        for pod in self.pods.list() {
            if &*pod.node_name == node {
                keys.extend(services_for_pod(&self.services, &pod));
            }
        }
        log::debug!(
            "{TOPOLOGY}: node {node} changed zone or appeared: re-syncing {} Service(s)",
            keys.len()
        );
        for k in keys {
            self.service_queue.add(k);
        }
    }
}

impl Syncer for TopologySync {
    fn sync(&self, key: &str) -> Result<(), SyncError> {
        if let Some(node) = key.strip_prefix(NODE_KEY_PREFIX) {
            self.resync_node(node);
            return Ok(());
        }
        let nodes = self.nodes.list();
        let (overloaded, now_sufficient) = {
            let mut t = self
                .shared
                .topology
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let had = t.has_node_info();
            t.set_nodes(&nodes);
            (t.get_overloaded_services(), !had && t.has_node_info())
        };
        if now_sufficient {
            for svc in self.services.list() {
                if crate::endpointslice::plan::trafficdist::hints_enabled(&svc) {
                    self.service_queue
                        .add(format!("{}/{}", svc.metadata.namespace, svc.metadata.name));
                }
            }
        }
        for k in overloaded {
            self.service_queue.add(k);
        }
        Ok(())
    }
}

#[cfg(test)]
mod topology_sync_tests {
    use super::*;
    use endpointd_kube::informer::SourceEvent;

    fn obj<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
        serde_json::from_value(v).expect("object")
    }

    fn queue() -> RateLimitingQueue<String> {
        crate::runtime::testkit::queue()
    }

    /// Which node events reach the topology worker, and with which keys.
    #[test]
    fn node_events_that_queue_the_topology_worker() {
        let queue = queue();
        let h = NodeHandler::new(queue.clone());
        let base = || {
            let mut n = Node::default();
            n.metadata.name = "n".into();
            n.metadata.labels = [(ZONE_LABEL, "z1"), ("other", "x")].into_iter().collect();
            n.ready = Some(true);
            n.allocatable_cpu = Some("4".into());
            n
        };
        let topo = || vec![TOPOLOGY_KEY.to_string()];
        let topo_and_node = || vec![TOPOLOGY_KEY.to_string(), "node/n".to_string()];
        let cases: Vec<(&str, Node, Vec<String>)> = vec![
            ("nothing", base(), vec![]),
            (
                "another label",
                {
                    let mut n = base();
                    n.metadata.labels = [(ZONE_LABEL, "z1")].into_iter().collect();
                    n
                },
                vec![],
            ),
            (
                "zone (and, beyond upstream, its pods' Services)",
                {
                    let mut n = base();
                    n.metadata.labels = [(ZONE_LABEL, "z2"), ("other", "x")].into_iter().collect();
                    n
                },
                topo_and_node(),
            ),
            (
                "zone label removed",
                {
                    let mut n = base();
                    n.metadata.labels = [("other", "x")].into_iter().collect();
                    n
                },
                topo_and_node(),
            ),
            (
                "not ready",
                Node {
                    ready: Some(false),
                    ..base()
                },
                topo(),
            ),
            (
                "CPU (beyond upstream)",
                Node {
                    allocatable_cpu: Some("8".into()),
                    ..base()
                },
                topo(),
            ),
            (
                "CPU gone (beyond upstream)",
                Node {
                    allocatable_cpu: None,
                    ..base()
                },
                topo(),
            ),
        ];
        for (what, new, want) in cases {
            h.on_update(&Arc::new(base()), &Arc::new(new));
            assert_eq!(crate::runtime::testkit::drain(&queue), want, "{what}");
        }
        h.on_add(&Arc::new(base()), true);
        assert_eq!(
            crate::runtime::testkit::drain(&queue),
            topo(),
            "add from the initial list"
        );
        h.on_add(&Arc::new(base()), false);
        assert_eq!(
            crate::runtime::testkit::drain(&queue),
            topo_and_node(),
            "a node appearing later"
        );
        h.on_delete(&DeletedObject::Known(Arc::new(base())));
        assert_eq!(crate::runtime::testkit::drain(&queue), topo(), "delete");
    }

    /// `node/<name>` queues exactly the Services selecting a pod on it.
    #[test]
    fn a_node_key_resyncs_the_services_of_its_pods() {
        let services: Store<Service> = Store::new(&[IndexKey::NamespacedSelectorFirstPair]);
        for (ns, name, app) in [("a", "web", "web"), ("a", "db", "db"), ("b", "web", "web")] {
            services.apply(SourceEvent::Added(obj::<Service>(serde_json::json!({
                "metadata": {"name": name, "namespace": ns},
                "spec": {"selector": {"app": app}}
            }))));
        }
        services.apply(SourceEvent::Added(obj::<Service>(serde_json::json!({
            "metadata": {"name": "no-selector", "namespace": "a"}, "spec": {}
        }))));
        let pods: Store<Pod> = Store::new(&[]);
        for (ns, name, app, node) in [
            ("a", "web-1", "web", "n1"),
            ("a", "web-2", "web", "n1"),
            ("a", "db-1", "db", "n2"),
            ("b", "web-1", "web", "n2"),
            ("b", "web-2", "web", ""),
        ] {
            pods.apply(SourceEvent::Added(obj::<Pod>(serde_json::json!({
                "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
                "spec": {"nodeName": node, "containers": []}
            }))));
        }
        let queue = queue();
        let shared = Arc::new(Shared {
            tracker: Arc::new(EndpointSliceTracker::default()),
            topology: Arc::new(Mutex::new(TopologyCache::new())),
        });
        let sync = TopologySync::new(Store::new(&[]), services, pods, shared, queue.clone());
        let resynced = |node: &str| {
            sync.sync(&format!("{NODE_KEY_PREFIX}{node}"))
                .expect("sync");
            let mut got = crate::runtime::testkit::drain(&queue);
            got.sort();
            got
        };
        assert_eq!(resynced("n1"), vec!["a/web"]);
        assert_eq!(resynced("n2"), vec!["a/db", "b/web"]);
        assert_eq!(resynced("n3"), Vec::<String>::new());
    }

    /// Upstream's aggregate: one error alone, several in brackets.
    #[test]
    fn failed_to_update_message_table() {
        let cases: &[(&[&str], &str)] = &[
            (
                &["a"],
                "Error updating Endpoint Slices for Service ns/web: a",
            ),
            (
                &["a", "b"],
                "Error updating Endpoint Slices for Service ns/web: [a, b]",
            ),
        ];
        for (errors, want) in cases {
            let errors: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            assert_eq!(failed_message("ns/web", &errors), *want);
        }
    }

    #[test]
    fn services_with_auto_hints_are_requeued_when_node_info_turns_sufficient() {
        let nodes: Store<Node> = Store::new(&[]);
        let services: Store<Service> = Store::new(&[]);
        for (name, auto) in [("auto", true), ("plain", false)] {
            let mut meta = serde_json::json!({"name": name, "namespace": "ns"});
            if auto {
                meta["annotations"] =
                    serde_json::json!({"service.kubernetes.io/topology-mode": "Auto"});
            }
            services.apply(SourceEvent::Added(obj::<Service>(
                serde_json::json!({"metadata": meta, "spec": {"selector": {"app": name}}}),
            )));
        }
        let queue = queue();
        let shared = Arc::new(Shared {
            tracker: Arc::new(EndpointSliceTracker::default()),
            topology: Arc::new(Mutex::new(TopologyCache::new())),
        });
        let sync = TopologySync::new(
            nodes.clone(),
            services,
            Store::new(&[]),
            shared,
            queue.clone(),
        );
        sync.sync(TOPOLOGY_KEY).expect("sync");
        assert!(
            queue.try_get().is_none(),
            "no node info yet: nothing to requeue"
        );
        for (n, z) in [("a", "z1"), ("b", "z2")] {
            nodes.apply(SourceEvent::Added(obj::<Node>(serde_json::json!({
                "metadata": {"name": n, "labels": {"topology.kubernetes.io/zone": z}},
                "status": {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"cpu": "2"}}
            }))));
        }
        sync.sync(TOPOLOGY_KEY).expect("sync");
        let k = queue.try_get().expect("the Auto service is queued");
        assert_eq!(k, "ns/auto");
        queue.done(&k);
        assert!(queue.try_get().is_none(), "only Services with Auto hints");
        sync.sync(TOPOLOGY_KEY).expect("sync");
        assert!(
            queue.try_get().is_none(),
            "only when the information turns sufficient"
        );
    }
}

/// docs/behaviour.md#up-c5: which slice events queue which Service, and how late.
#[cfg(test)]
mod slice_handler_tests {
    use super::*;
    use crate::runtime::labels::{SLICE_MANAGED_BY, SLICE_MANAGED_BY_LABEL};
    use std::collections::BTreeSet;

    /// A slice of Service `svc` (no label when empty) in "ns", managed by
    /// us or not, at `generation`.
    fn slice(name: &str, svc: &str, ours: bool, generation: i64) -> Arc<EndpointSlice> {
        let mut labels = serde_json::Map::new();
        if !svc.is_empty() {
            labels.insert(SERVICE_NAME_LABEL.into(), svc.into());
        }
        let by = if ours {
            SLICE_MANAGED_BY
        } else {
            "someone-else"
        };
        labels.insert(SLICE_MANAGED_BY_LABEL.into(), by.into());
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                             "generation": generation, "labels": labels},
                "addressType": "IPv4", "endpoints": []
            }))
            .expect("slice"),
        )
    }

    /// A handler (batch period 0) over a fresh tracker, and its queue.
    fn handler() -> (RateLimitingQueue<String>, Arc<Shared>, SliceHandler) {
        let queue = crate::runtime::testkit::queue();
        let shared = Arc::new(Shared {
            tracker: Arc::new(EndpointSliceTracker::default()),
            topology: Arc::new(Mutex::new(TopologyCache::new())),
        });
        let h = SliceHandler::new(queue.clone(), Arc::clone(&shared), Duration::ZERO);
        (queue, shared, h)
    }

    #[test]
    fn slice_events_queue_their_service_after_at_least_one_second() {
        let (queue, shared, h) = handler();
        assert_eq!(h.delay, SLICE_CHANGE_MIN_DELAY, "max(1 s, batch period)");
        assert_eq!(
            SliceHandler::new(queue.clone(), Arc::clone(&shared), Duration::from_secs(3)).delay,
            Duration::from_secs(3)
        );
        let tracker = &shared.tracker;
        // Adds: ours and untracked → queued; someone else's, or the echo of
        // our own write (tracked at that generation) → not.
        h.on_add(&slice("a1", "add-ours", true, 1), false);
        h.on_add(&slice("a2", "add-foreign", false, 1), false);
        let echo = slice("a3", "add-echo", true, 2);
        tracker.update(&echo);
        h.on_add(&echo, false);
        // Updates: a service-name relabel queues both Services, whoever
        // manages the slice; a managed-by flip queues; ours at a tracked
        // generation does not, at a newer one it does.
        h.on_update(
            &slice("u1", "rel-old", false, 1),
            &slice("u1", "rel-new", false, 1),
        );
        h.on_update(
            &slice("u2", "flip", false, 1),
            &slice("u2", "flip", true, 1),
        );
        h.on_update(
            &slice("u2b", "unflip", true, 1),
            &slice("u2b", "unflip", false, 1),
        );
        let ours = slice("u3", "upd-echo", true, 4);
        tracker.update(&ours);
        h.on_update(&ours, &ours);
        let ours = slice("u4", "upd-newer", true, 4);
        tracker.update(&ours);
        h.on_update(&ours, &slice("u4", "upd-newer", true, 5));
        h.on_update(
            &slice("u5", "upd-foreign", false, 1),
            &slice("u5", "upd-foreign", false, 2),
        );
        // Deletes: a tracked slice of ours deleted by someone → queued; one
        // whose deletion we expect, or an untracked one → not.
        let gone = slice("d1", "del-unexpected", true, 1);
        tracker.update(&gone);
        h.on_delete(&DeletedObject::Known(Arc::clone(&gone)));
        let gone = slice("d2", "del-expected", true, 1);
        tracker.update(&gone);
        tracker.deleting(&gone);
        h.on_delete(&DeletedObject::Known(gone));
        h.on_delete(&DeletedObject::Known(slice("d3", "del-untracked", true, 1)));
        // Without the service-name label: ignored.
        h.on_add(&slice("x", "", true, 1), false);
        assert!(queue.try_get().is_none(), "nothing before the delay");
        std::thread::sleep(SLICE_CHANGE_MIN_DELAY + Duration::from_millis(300));
        let got: BTreeSet<String> = crate::runtime::testkit::drain(&queue).into_iter().collect();
        let want: BTreeSet<String> = [
            "ns/add-ours",
            "ns/rel-old",
            "ns/rel-new",
            "ns/flip",
            "ns/unflip",
            "ns/upd-newer",
            "ns/del-unexpected",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_tracked_slice_leaving_its_services_set_is_forgotten() {
        let (_queue, shared, h) = handler();
        let tracker = &shared.tracker;
        // Relabelled to another Service; no longer managed by us; being
        // deleted behind a finalizer.
        let relabelled = slice("r", "web", true, 1);
        let unmanaged = slice("m", "web", true, 1);
        let finalized = slice("f", "web", true, 1);
        for s in [&relabelled, &unmanaged, &finalized] {
            tracker.update(s);
        }
        h.on_update(&relabelled, &slice("r", "other", true, 1));
        h.on_update(&unmanaged, &slice("m", "web", false, 1));
        let mut gone = (*finalized).clone();
        gone.metadata.deletion_timestamp =
            Some(endpointd_kube::model::Time(jiff::Timestamp::UNIX_EPOCH)).into();
        gone.metadata.generation = Some(2);
        h.on_update(&finalized, &Arc::new(gone));
        for s in [&relabelled, &unmanaged, &finalized] {
            assert!(!tracker.has(s), "{} still tracked", s.metadata.name);
        }
    }
}
