//! Informer metrics, one family set shared by all informers of a process
//! and labelled by resource: lists (initial and relists), watch events by
//! type, watch/list errors by kind, the wall time of the last event (so an
//! alert can compute its age as `time() - informer_last_event_timestamp_seconds`),
//! cached object count and the synced flag.
//!
//! Registers families once ([`InformerMetrics::register`]); it never reads
//! time itself (the watcher thread passes wall time from its clock).

use std::sync::Arc;
use std::time::SystemTime;

use crate::metrics::{Counter, Family, Gauge, Registry};

/// Metric families for informers.
#[derive(Debug)]
pub struct InformerMetrics {
    lists: Arc<Family<Counter>>,
    events: Arc<Family<Counter>>,
    errors: Arc<Family<Counter>>,
    last_event: Arc<Family<Gauge>>,
    objects: Arc<Family<Gauge>>,
    synced: Arc<Family<Gauge>>,
}

impl InformerMetrics {
    /// Register the families in `registry` (call once per process).
    pub fn register(registry: &Registry) -> Arc<InformerMetrics> {
        Arc::new(InformerMetrics {
            lists: registry.counter(
                "endpointd_informer_lists_total",
                "Complete LISTs applied to the cache; kind=initial|relist.",
                &["resource", "kind"],
            ),
            events: registry.counter(
                "endpointd_informer_watch_events_total",
                "Watch events received, by type.",
                &["resource", "type"],
            ),
            errors: registry.counter(
                "endpointd_informer_errors_total",
                "List and watch failures, by error kind.",
                &["resource", "kind"],
            ),
            last_event: registry.gauge(
                "endpointd_informer_last_event_timestamp_seconds",
                "Unix time of the last list or watch event applied.",
                &["resource"],
            ),
            objects: registry.gauge(
                "endpointd_informer_objects",
                "Objects in the informer cache.",
                &["resource"],
            ),
            synced: registry.gauge(
                "endpointd_informer_synced",
                "1 once the first list has been delivered to handlers.",
                &["resource"],
            ),
        })
    }

    pub(crate) fn list_done(
        &self,
        resource: &str,
        initial: bool,
        objects: usize,
        wall: SystemTime,
    ) {
        let kind = if initial { "initial" } else { "relist" };
        self.lists.with(&[resource, kind]).inc();
        self.objects.with(&[resource]).set(objects as f64);
        self.synced.with(&[resource]).set(1.0);
        self.touch(resource, wall);
    }

    pub(crate) fn event(&self, resource: &str, kind: &str, objects: usize, wall: SystemTime) {
        self.events.with(&[resource, kind]).inc();
        self.objects.with(&[resource]).set(objects as f64);
        self.touch(resource, wall);
    }

    pub(crate) fn error(&self, resource: &str, kind: &str) {
        self.errors.with(&[resource, kind]).inc();
    }

    fn touch(&self, resource: &str, wall: SystemTime) {
        let secs = wall
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        self.last_event.with(&[resource]).set(secs);
    }
}
