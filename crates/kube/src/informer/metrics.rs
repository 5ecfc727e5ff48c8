//! Informer metrics, one family set shared by all informers of a process
//! and labelled by resource: lists (initial and relists), watch events by
//! type, watch/list errors by kind, history probes by result, the wall time
//! of the last event (so an alert can compute its age as
//! `time() - informer_last_event_timestamp_seconds`), cached object count
//! and the synced flag.
//!
//! Registers families once ([`InformerMetrics::register`]); it never reads
//! time itself (the watcher thread passes wall time from its clock).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use crate::metrics::{Counter, Family, Gauge, Registry};
use endpointd_base::clock::SharedClock;

/// Metric families for informers.
#[derive(Debug)]
pub struct InformerMetrics {
    lists: Arc<Family<Counter>>,
    events: Arc<Family<Counter>>,
    errors: Arc<Family<Counter>>,
    last_event: Arc<Family<Gauge>>,
    objects: Arc<Family<Gauge>>,
    synced: Arc<Family<Gauge>>,
    fallbacks: Arc<Family<Counter>>,
    probes: Arc<Family<Counter>>,
    watch_idle: Arc<Family<Gauge>>,
    /// When each resource's watch last showed life (opened, event, bookmark).
    last_active: Mutex<HashMap<String, Instant>>,
}

impl InformerMetrics {
    /// Register the families in `registry` (call once per process). The
    /// watch-idle gauge is computed from `clock` whenever the registry is
    /// rendered.
    pub fn register(registry: &Registry, clock: SharedClock) -> Arc<InformerMetrics> {
        let m = Arc::new(InformerMetrics {
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
            fallbacks: registry.counter(
                "endpointd_informer_watch_list_fallbacks_total",
                "Informers that gave up watch-list (refused or ignored by the server) and use LIST.",
                &["resource"],
            ),
            probes: registry.counter(
                "endpointd_informer_history_probes_total",
                "Consistent one-object LISTs before re-watching after a watch that did not end by its timeout; result=current|behind|failed (behind: the server's history went back, every informer lists again).",
                &["resource", "result"],
            ),
            watch_idle: registry.gauge(
                "endpointd_informer_watch_idle_seconds",
                "Seconds since the resource's watch last delivered an event or bookmark (or was opened); a watch silent for longer than kubernetes.watch_idle_timeout is restarted.",
                &["resource"],
            ),
            last_active: Mutex::new(HashMap::new()),
        });
        let weak = Arc::downgrade(&m);
        registry.on_collect(Box::new(move || {
            if let Some(m) = weak.upgrade() {
                m.refresh_idle(clock.now());
            }
        }));
        m
    }

    fn refresh_idle(&self, now: Instant) {
        let last = self.last_active.lock().unwrap_or_else(|p| p.into_inner());
        for (resource, t) in last.iter() {
            let idle = now.saturating_duration_since(*t).as_secs_f64();
            self.watch_idle.with(&[resource]).set(idle);
        }
    }

    /// A watch of `resource` was opened at `now`.
    pub(crate) fn watch_opened(&self, resource: &str, now: Instant) {
        self.watch_active(resource, now);
    }

    /// A watch of `resource` delivered something at `now`.
    pub(crate) fn watch_active(&self, resource: &str, now: Instant) {
        let mut last = self.last_active.lock().unwrap_or_else(|p| p.into_inner());
        match last.get_mut(resource) {
            Some(t) => *t = now,
            None => {
                last.insert(resource.to_string(), now);
            }
        }
    }

    /// A history probe of `resource` answered (`current`, `behind`) or
    /// failed.
    pub(crate) fn probe(&self, resource: &str, result: &str) {
        self.probes.with(&[resource, result]).inc();
    }

    /// `resource` gave up watch-list.
    pub(crate) fn watch_list_fallback(&self, resource: &str) {
        self.fallbacks.with(&[resource]).inc();
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
