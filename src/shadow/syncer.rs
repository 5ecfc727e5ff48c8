//! Shadow mode's syncers: what the worker pools run instead of the
//! controllers when the wiring (`crate::wiring`) chooses shadow mode. Each
//! reads the same caches as its controller, computes what a sync would
//! write with the controller's pure plan functions, and hands the
//! differences to the [`Shadow`] register.
//!
//! Must never write to the API server and never record an event. The
//! controllers do not know these exist.

use super::{compare_endpoints, compare_service_slices, Shadow, ENDPOINTS, ENDPOINTSLICES};
use crate::endpoints::controller::{EndpointsListers, NAME as ENDPOINTS_NAME};
use crate::endpoints::plan::desired::unpacked_subsets;
use crate::endpoints::plan::desired_subsets;
use crate::endpoints::plan::repack::repack_subsets;
use crate::endpoints::writer::EndpointsWriter;
use crate::endpointslice::controller::SliceListers;
use crate::endpointslice::plan::topology::TopologyCache;
use crate::endpointslice::{reconcile, ReconcileInput, SliceMetrics};
use crate::runtime::membership::pods_for_service;
use crate::runtime::podutil::service_is_managed;
use crate::runtime::worker::{SyncError, Syncer};
use endpointd_kube::informer::{IndexKey, SERVICE_NAME_LABEL};
use std::sync::{Arc, Mutex};

/// The Endpoints controller's shadow syncer: compares the Endpoints a sync
/// would write with the stored one.
pub struct EndpointsShadow {
    listers: EndpointsListers,
    /// Only its foreign-edit bookkeeping is used (which stored Endpoints
    /// were compared, so that the handler syncs again on their change);
    /// nothing is written through it.
    writer: Arc<EndpointsWriter>,
    shadow: Arc<Shadow>,
}

impl EndpointsShadow {
    /// A shadow syncer reading `listers`, reporting to `shadow`.
    pub fn new(
        listers: EndpointsListers,
        writer: Arc<EndpointsWriter>,
        shadow: Arc<Shadow>,
    ) -> EndpointsShadow {
        EndpointsShadow {
            listers,
            writer,
            shadow,
        }
    }
}

impl Syncer for EndpointsShadow {
    /// The differences between what a sync would write and what is
    /// stored, to the register; no write.
    fn sync(&self, key: &str) -> Result<(), SyncError> {
        if key.split_once('/').is_none() {
            log::warn!("{ENDPOINTS_NAME}: ignoring malformed key {key:?}");
            return Ok(());
        }
        let svc = self.listers.services.get(key);
        let Some(svc) = svc.filter(|s| service_is_managed(s)) else {
            self.shadow.forget(key, ENDPOINTS);
            self.writer.release(key);
            return Ok(());
        };
        let pods = pods_for_service(&self.listers.pods, &svc);
        let full = repack_subsets(&unpacked_subsets(&svc, &pods));
        let over = desired_subsets(&svc, &pods).1;
        let current = self.listers.endpoints.get(key);
        if let Some(cur) = current.as_deref() {
            // Compare again when the other controller rewrites it.
            self.writer.observe(key, cur);
        }
        let diffs = compare_endpoints(&full, over, current.as_deref(), &svc.metadata.labels);
        self.shadow.observe(key, ENDPOINTS, diffs);
        Ok(())
    }
}

/// The EndpointSlice controller's shadow syncer: the slices a sync would
/// create from scratch, compared per address type with the stored ones
/// (managed by the EndpointSlice controller, not being deleted).
pub struct SliceShadow {
    listers: SliceListers,
    topology: Arc<Mutex<TopologyCache>>,
    metrics: Arc<SliceMetrics>,
    max_endpoints_per_slice: usize,
    shadow: Arc<Shadow>,
}

impl SliceShadow {
    /// A shadow syncer reading `listers` and the zones of `topology`,
    /// counting its syncs in `metrics`, reporting to `shadow`.
    pub fn new(
        listers: SliceListers,
        topology: Arc<Mutex<TopologyCache>>,
        metrics: Arc<SliceMetrics>,
        max_endpoints_per_slice: usize,
        shadow: Arc<Shadow>,
    ) -> SliceShadow {
        SliceShadow {
            listers,
            topology,
            metrics,
            max_endpoints_per_slice,
            shadow,
        }
    }

    fn compare(&self, key: &str) {
        let svc = self.listers.services.get(key);
        let Some(svc) = svc.filter(|s| service_is_managed(s)) else {
            self.shadow.forget(key, ENDPOINTSLICES);
            return;
        };
        let pods = pods_for_service(&self.listers.pods, &svc);
        let existing = self
            .listers
            .slices
            .by_index(IndexKey::NamespacedLabel(SERVICE_NAME_LABEL), key);
        let nodes = |n: &str| self.listers.nodes.get(n);
        let plan = reconcile(&ReconcileInput {
            service: &svc,
            pods: &pods,
            existing: &[],
            nodes: &nodes,
            trigger_time: None,
            max_endpoints_per_slice: self.max_endpoints_per_slice,
            topology: Some(&self.topology),
        });
        let diffs = compare_service_slices(&plan, &existing, self.max_endpoints_per_slice);
        self.shadow.observe(key, ENDPOINTSLICES, diffs);
    }
}

impl Syncer for SliceShadow {
    /// No write, no event; counted as a successful sync.
    fn sync(&self, key: &str) -> Result<(), SyncError> {
        self.compare(key);
        self.metrics.sync_result("success");
        Ok(())
    }
}
