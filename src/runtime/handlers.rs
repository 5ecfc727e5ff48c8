//! Event handlers shared by both controllers (docs/behaviour.md#up-c1–#up-c4): they
//! turn Service and Pod changes into Service keys on each controller's
//! queue. Membership is computed once per pod event and fanned out to every
//! controller, each with its own batch period.
//!
//! Handlers run on informer threads: they only compute keys and enqueue,
//! never block, never read the API server.

use super::membership::services_for_pod;
use super::relevance::services_to_update_on_pod_change;
use endpointd_kube::informer::{DeletedObject, EventHandler, Store};
use endpointd_kube::model::{Object, Pod, Service};
use endpointd_kube::workqueue::RateLimitingQueue;
use std::sync::Arc;
use std::time::Duration;

/// One controller's queue and how long pod-triggered adds wait.
#[derive(Clone, Debug)]
pub struct QueueTarget {
    /// The controller's queue of Service keys.
    pub queue: RateLimitingQueue<String>,
    /// KCM `--endpoint-updates-batch-period` /
    /// `--endpointslice-updates-batch-period` (0: at once).
    pub batch_period: Duration,
}

/// Service add/update/delete → the key, at once, on every target (docs/behaviour.md#up-c1: an
/// update does not compare old and new).
#[derive(Debug)]
pub struct ServiceHandler {
    targets: Vec<QueueTarget>,
}

impl ServiceHandler {
    /// A handler feeding `targets`.
    pub fn new(targets: Vec<QueueTarget>) -> ServiceHandler {
        ServiceHandler { targets }
    }

    fn add(&self, svc: &Service) {
        let key = svc.key();
        for t in &self.targets {
            t.queue.add(key.clone());
        }
    }
}

impl EventHandler<Service> for ServiceHandler {
    fn on_add(&self, obj: &Arc<Service>, _initial: bool) {
        self.add(obj);
    }
    fn on_update(&self, _old: &Arc<Service>, new: &Arc<Service>) {
        self.add(new);
    }
    fn on_delete(&self, obj: &DeletedObject<Service>) {
        self.add(obj.object());
    }
}

/// Pod add/update/delete → the keys of the Services concerned, after each
/// target's batch period (docs/behaviour.md#up-c1–#up-c3).
#[derive(Debug)]
pub struct PodHandler {
    services: Store<Service>,
    targets: Vec<QueueTarget>,
}

impl PodHandler {
    /// A handler reading memberships from `services`, feeding `targets`.
    pub fn new(services: Store<Service>, targets: Vec<QueueTarget>) -> PodHandler {
        PodHandler { services, targets }
    }

    fn enqueue(&self, keys: impl IntoIterator<Item = String>) {
        for key in keys {
            for t in &self.targets {
                t.queue.add_after(key.clone(), t.batch_period);
            }
        }
    }
}

impl EventHandler<Pod> for PodHandler {
    /// Beyond upstream, a pod of the informer's first list enqueues
    /// nothing: the controllers start only once every cache has synced,
    /// and by then the Service informer's own first list has put every
    /// Service on every queue ([`ServiceHandler`]), so the keys a pod of the
    /// first list would add are already there. Upstream computes them
    /// anyway (10,000 pods: 66 M instructions, 8 % of a full-size cold
    /// start, on the path to the first write).
    fn on_add(&self, obj: &Arc<Pod>, initial: bool) {
        if initial {
            return;
        }
        self.enqueue(services_for_pod(&self.services, obj));
    }
    fn on_update(&self, old: &Arc<Pod>, new: &Arc<Pod>) {
        let keys =
            services_to_update_on_pod_change(old, new, |p| services_for_pod(&self.services, p));
        self.enqueue(keys);
    }
    fn on_delete(&self, obj: &DeletedObject<Pod>) {
        self.enqueue(services_for_pod(&self.services, obj.object()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use endpointd_kube::informer::{IndexKey, SourceEvent};
    use endpointd_kube::model::ReadyCondition;

    fn queue() -> RateLimitingQueue<String> {
        crate::runtime::testkit::queue()
    }

    /// The keys ready now, sorted.
    fn drain(q: &RateLimitingQueue<String>) -> Vec<String> {
        let mut v = crate::runtime::testkit::drain(q);
        v.sort();
        v
    }

    fn pod(rv: &str, app: &str, ready: bool) -> Arc<Pod> {
        let mut p = Pod::default();
        p.metadata.namespace = "ns".into();
        p.metadata.name = "p".into();
        p.metadata.resource_version = rv.into();
        p.metadata.labels = [("app", app)].into_iter().collect();
        p.ready = Some(ReadyCondition {
            is_true: ready,
            last_transition_time: None.into(),
        });
        Arc::new(p)
    }

    #[test]
    fn pod_events_fan_out_to_every_controller_and_batch() {
        let services: Store<Service> = Store::new(&[IndexKey::Namespace]);
        for (name, app) in [("a", "a"), ("b", "b")] {
            let mut s = Service::default();
            s.metadata.namespace = "ns".into();
            s.metadata.name = name.into();
            s.selector = Some([("app", app)].into_iter().collect());
            services.apply(SourceEvent::Added(s));
        }
        let (q1, q2) = (queue(), queue());
        let h = PodHandler::new(
            services,
            vec![
                QueueTarget {
                    queue: q1.clone(),
                    batch_period: Duration::ZERO,
                },
                QueueTarget {
                    queue: q2.clone(),
                    batch_period: Duration::from_secs(3600),
                },
            ],
        );
        // A pod of the first list: its Services are queued by their own
        // first list already.
        h.on_add(&pod("1", "a", true), true);
        assert!(drain(&q1).is_empty());
        assert_eq!(q2.waiting_len(), 0);
        h.on_add(&pod("1", "a", true), false);
        assert_eq!(drain(&q1), vec!["ns/a"]);
        assert!(drain(&q2).is_empty(), "batched for an hour");
        assert_eq!(q2.waiting_len(), 1);
        // Relabel a → b while also turning unready: both services.
        h.on_update(&pod("1", "a", true), &pod("2", "b", false));
        assert_eq!(drain(&q1), vec!["ns/a", "ns/b"]);
        // Resync (same RV): nothing.
        h.on_update(&pod("2", "b", false), &pod("2", "b", true));
        assert!(drain(&q1).is_empty());
        h.on_delete(&DeletedObject::FinalStateUnknown {
            key: "ns/p".into(),
            last: pod("3", "b", true),
        });
        assert_eq!(drain(&q1), vec!["ns/b"]);
    }
}
