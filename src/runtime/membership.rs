//! Pod → Service membership (upstream `GetPodServiceMemberships`,
//! docs/behaviour.md#up-c2): the Services of the pod's namespace whose non-nil
//! selector matches the pod's labels.
//!
//! Reads the Service cache's selector index (each Service filed under its
//! selector's first label pair, `{}` under its own bucket): a pod event
//! tests only the Services filed under one of the pod's label pairs, not
//! every Service of its namespace; without that index, the namespace
//! index. Never scans every Service of the cluster. Selectors are equality maps already parsed into
//! [`endpointd_kube::model::Labels`] when the Service was cached, so there is no
//! selector cache to keep in step as upstream has. Must never write.

use endpointd_kube::informer::store::{empty_selector_value, label_pair_value};
use endpointd_kube::informer::{IndexKey, Store};
use endpointd_kube::model::{Object, Pod, Service};
use std::collections::BTreeSet;

/// Keys (`ns/name`) of the Services whose selector selects `pod`.
pub fn services_for_pod(services: &Store<Service>, pod: &Pod) -> BTreeSet<String> {
    let ns = &*pod.metadata.namespace;
    let values: Vec<String> = std::iter::once(empty_selector_value(ns))
        .chain(
            pod.metadata
                .labels
                .iter()
                .map(|(k, v)| label_pair_value(ns, k, v)),
        )
        .collect();
    services
        .by_index_any(IndexKey::NamespacedSelectorFirstPair, &values)
        .unwrap_or_else(|| services.list_namespace(ns))
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
/// upstream `podLister.Pods(ns).List(selector)`, which scans the whole
/// namespace). With the pod cache's label-pair index the scan starts from
/// the smallest bucket among the selector's pairs, so a sync costs the
/// pods it selects, not the pods of its namespace; without the index (or
/// for `{}`) the namespace is scanned.
pub fn pods_for_service(pods: &Store<Pod>, svc: &Service) -> Vec<std::sync::Arc<Pod>> {
    let Some(sel) = svc.selector.as_ref() else {
        return Vec::new();
    };
    let ns = &*svc.metadata.namespace;
    let by = IndexKey::NamespacedLabelPairs;
    let smallest = sel
        .iter()
        .map(|(k, v)| label_pair_value(ns, k, v))
        .filter_map(|value| Some((pods.index_count(by, &value)?, value)))
        .min();
    let mut v = match smallest {
        Some((_, value)) => pods.by_index(by, &value),
        None => pods.list_namespace(ns),
    };
    v.retain(|p| sel.matches(&p.metadata.labels));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use endpointd_kube::informer::{IndexKey, SourceEvent};
    use endpointd_kube::model::Labels;

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
    fn pods_for_service_with_and_without_the_label_index() {
        for indexed in [false, true] {
            let keys: &[IndexKey] = match indexed {
                true => &[IndexKey::Namespace, IndexKey::NamespacedLabelPairs],
                false => &[IndexKey::Namespace],
            };
            let store: Store<Pod> = Store::new(keys);
            for (i, (ns, labels)) in [
                ("ns", &[("app", "web"), ("tier", "fe")][..]),
                ("ns", &[("app", "web")][..]),
                ("ns", &[("app", "db")][..]),
                ("other", &[("app", "web"), ("tier", "fe")][..]),
            ]
            .into_iter()
            .enumerate()
            {
                let mut p = pod(ns, labels);
                p.metadata.name = format!("p{i}").into();
                store.apply(SourceEvent::Added(p));
            }
            let names = |s: &Service| {
                let mut v: Vec<String> = pods_for_service(&store, s)
                    .iter()
                    .map(|p| p.metadata.name.to_string())
                    .collect();
                v.sort();
                v
            };
            assert_eq!(
                names(&svc("ns", "a", Some(&[("app", "web")]))),
                ["p0", "p1"],
                "{indexed}"
            );
            assert_eq!(
                names(&svc("ns", "b", Some(&[("app", "web"), ("tier", "fe")]))),
                ["p0"],
                "{indexed}"
            );
            assert_eq!(
                names(&svc("ns", "c", Some(&[]))),
                ["p0", "p1", "p2"],
                "{indexed}"
            );
            assert!(names(&svc("ns", "d", Some(&[("app", "none")]))).is_empty());
            assert!(names(&svc("ns", "e", None)).is_empty());
            // A relabelled pod moves buckets.
            let mut moved = pod("ns", &[("app", "db")]);
            moved.metadata.name = "p1".into();
            store.apply(SourceEvent::Modified(moved));
            assert_eq!(
                names(&svc("ns", "a", Some(&[("app", "web")]))),
                ["p0"],
                "{indexed}"
            );
        }
    }

    #[test]
    fn memberships_follow_selectors_within_the_namespace() {
        for keys in [
            &[IndexKey::Namespace][..],
            &[IndexKey::Namespace, IndexKey::NamespacedSelectorFirstPair][..],
        ] {
            memberships(Store::new(keys));
        }
    }

    fn memberships(store: Store<Service>) {
        for s in [
            svc("ns", "web", Some(&[("app", "web")])),
            svc("ns", "all", Some(&[])),
            svc("ns", "manual", None),
            svc("ns", "two", Some(&[("app", "web"), ("tier", "fe")])),
            svc("other", "web", Some(&[("app", "web")])),
        ] {
            store.apply(SourceEvent::Added(s));
        }
        let got = services_for_pod(&store, &pod("ns", &[("app", "web")]));
        let want: BTreeSet<String> = ["ns/all", "ns/web"].iter().map(|s| s.to_string()).collect();
        assert_eq!(got, want);
        let got = services_for_pod(&store, &pod("ns", &[("app", "web"), ("tier", "fe")]));
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(services_for_pod(&store, &pod("none", &[("app", "web")])).is_empty());
        // Filed under its first pair ("app=web") but needs "tier" too; a
        // pod with only the second pair is not selected by "two".
        let got = services_for_pod(&store, &pod("ns", &[("tier", "fe")]));
        let want: BTreeSet<String> = ["ns/all"].iter().map(|s| s.to_string()).collect();
        assert_eq!(got, want);
        // A selector change moves the Service between buckets.
        store.apply(SourceEvent::Modified(svc(
            "ns",
            "web",
            Some(&[("tier", "fe")]),
        )));
        let got = services_for_pod(&store, &pod("ns", &[("tier", "fe")]));
        assert_eq!(got.len(), 2, "{got:?}");
        store.apply(SourceEvent::Deleted(svc(
            "ns",
            "web",
            Some(&[("tier", "fe")]),
        )));
        let got = services_for_pod(&store, &pod("ns", &[("tier", "fe")]));
        assert_eq!(got.len(), 1, "{got:?}");
    }
}
