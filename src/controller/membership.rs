//! Pod → Service membership (upstream `GetPodServiceMemberships`,
//! upstream-spec C2): the Services of the pod's namespace whose non-nil
//! selector matches the pod's labels.
//!
//! Reads only the Service cache's namespace index, never scans every
//! Service of the cluster. Selectors are equality maps already parsed into
//! [`crate::model::Labels`] when the Service was cached, so there is no
//! selector cache to keep in step as upstream has. Must never write.

use crate::informer::Store;
use crate::model::{Object, Pod, Service};
use std::collections::BTreeSet;

/// Keys (`ns/name`) of the Services whose selector selects `pod`.
pub fn services_for_pod(services: &Store<Service>, pod: &Pod) -> BTreeSet<String> {
    let ns = &*pod.metadata.namespace;
    services
        .list_namespace(ns)
        .iter()
        .filter(|svc| selects(svc, pod))
        .map(|svc| svc.key())
        .collect()
}

/// Whether `svc` has a selector and it matches `pod` (same namespace
/// assumed). `{}` matches every pod.
pub fn selects(svc: &Service, pod: &Pod) -> bool {
    svc.selector
        .as_ref()
        .is_some_and(|sel| sel.matches(&pod.metadata.labels))
}

/// The pods of `svc`'s namespace its selector matches (what a sync reads;
/// upstream `podLister.Pods(ns).List(selector)`).
pub fn pods_for_service(pods: &Store<Pod>, svc: &Service) -> Vec<std::sync::Arc<Pod>> {
    let Some(sel) = svc.selector.as_ref() else {
        return Vec::new();
    };
    let mut v = pods.list_namespace(&svc.metadata.namespace);
    v.retain(|p| sel.matches(&p.metadata.labels));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::{IndexKey, WatchEvent};
    use crate::model::Labels;

    fn svc(ns: &str, name: &str, sel: Option<&[(&str, &str)]>) -> Service {
        let mut s = Service::default();
        s.metadata.namespace = ns.into();
        s.metadata.name = name.into();
        s.metadata.resource_version = "1".into();
        s.selector = sel.map(|kv| kv.iter().copied().collect());
        s
    }

    fn pod(ns: &str, labels: &[(&str, &str)]) -> Pod {
        let mut p = Pod::default();
        p.metadata.namespace = ns.into();
        p.metadata.name = "p".into();
        p.metadata.labels = labels.iter().copied().collect::<Labels>();
        p
    }

    #[test]
    fn memberships_follow_selectors_within_the_namespace() {
        let store: Store<Service> = Store::new(&[IndexKey::Namespace]);
        for s in [
            svc("ns", "web", Some(&[("app", "web")])),
            svc("ns", "all", Some(&[])),
            svc("ns", "manual", None),
            svc("ns", "two", Some(&[("app", "web"), ("tier", "fe")])),
            svc("other", "web", Some(&[("app", "web")])),
        ] {
            store.apply(WatchEvent::Added(s));
        }
        let got = services_for_pod(&store, &pod("ns", &[("app", "web")]));
        let want: BTreeSet<String> = ["ns/all", "ns/web"].iter().map(|s| s.to_string()).collect();
        assert_eq!(got, want);
        let got = services_for_pod(&store, &pod("ns", &[("app", "web"), ("tier", "fe")]));
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(services_for_pod(&store, &pod("none", &[("app", "web")])).is_empty());
    }
}
