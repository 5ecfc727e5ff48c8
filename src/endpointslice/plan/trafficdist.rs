//! Hints from `spec.trafficDistribution` (upstream
//! `staging/src/k8s.io/endpointslice/trafficdist/trafficdist.go`;
//! docs/behaviour.md#up-b23, #up-b25) and the choice between the two hint mechanisms.
//!
//! `PreferClose` and `PreferSameZone` give every ready endpoint a hint for
//! its own zone; `PreferSameNode` also one for its node (the
//! PreferSameTrafficDistribution gate is on by default in current
//! upstream). Any other value, or none, removes every hint. Not-ready
//! endpoints are never touched and never make a slice need an update.
//!
//! Pure; never mutates its inputs.

use endpointd_kube::model::{Endpoint, EndpointHints, EndpointSlice, ForNode, ForZone, Service};
use std::sync::Arc;

/// `service.kubernetes.io/topology-mode`.
pub const TOPOLOGY_MODE: &str = "service.kubernetes.io/topology-mode";
/// The deprecated `service.kubernetes.io/topology-aware-hints`.
pub const TOPOLOGY_AWARE_HINTS: &str = "service.kubernetes.io/topology-aware-hints";

/// Upstream `hintsEnabled`: the deprecated annotation wins when present;
/// only `Auto`/`auto` enable hints.
pub fn hints_enabled(svc: &Service) -> bool {
    let a = &svc.metadata.annotations;
    let v = a.get(TOPOLOGY_AWARE_HINTS).or_else(|| a.get(TOPOLOGY_MODE));
    matches!(v, Some("Auto") | Some("auto"))
}

/// Which hints a ready endpoint gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Heuristic {
    /// No hints at all.
    Default,
    /// Own zone.
    SameZone,
    /// Own zone and own node.
    SameNode,
}

/// The heuristic for a `trafficDistribution` value.
pub fn heuristic(traffic_distribution: Option<&str>) -> Heuristic {
    match traffic_distribution {
        Some("PreferClose") | Some("PreferSameZone") => Heuristic::SameZone,
        Some("PreferSameNode") => Heuristic::SameNode,
        _ => Heuristic::Default,
    }
}

/// Whether the value names a heuristic (upstream: it "can be used").
pub fn is_valid(traffic_distribution: Option<&str>) -> bool {
    heuristic(traffic_distribution) != Heuristic::Default
}

fn ready(e: &Endpoint) -> bool {
    e.conditions.ready == Some(true)
}

fn want(e: &Endpoint, h: Heuristic) -> Option<Box<EndpointHints>> {
    let zones: Vec<ForZone> = match (h, &e.zone) {
        (Heuristic::Default, _) | (_, None) => Vec::new(),
        (_, Some(z)) => vec![ForZone {
            name: z.as_str().into(),
        }],
    };
    let nodes: Vec<ForNode> = match (h, &e.node_name) {
        (Heuristic::SameNode, Some(n)) => vec![ForNode {
            name: n.as_str().into(),
        }],
        _ => Vec::new(),
    };
    (!zones.is_empty() || !nodes.is_empty()).then(|| {
        Box::new(EndpointHints {
            for_zones: zones,
            for_nodes: nodes,
        })
    })
}

fn needs_update(s: &EndpointSlice, h: Heuristic) -> bool {
    s.endpoints.iter().any(|e| match h {
        Heuristic::Default => e.hints.is_some(),
        _ => ready(e) && e.hints != want(e, h),
    })
}

fn update(s: &mut EndpointSlice, h: Heuristic) {
    for e in &mut s.endpoints {
        match h {
            Heuristic::Default => e.hints = None,
            _ if ready(e) => e.hints = want(e, h),
            _ => {}
        }
    }
}

/// Upstream `ReconcileHints`: unchanged slices whose hints are wrong move
/// to the updates; every create and update gets the heuristic's hints.
/// Returns (creates, updates, unchanged).
pub fn reconcile_hints(
    h: Heuristic,
    mut creates: Vec<EndpointSlice>,
    mut updates: Vec<EndpointSlice>,
    unchanged: Vec<Arc<EndpointSlice>>,
) -> (
    Vec<EndpointSlice>,
    Vec<EndpointSlice>,
    Vec<Arc<EndpointSlice>>,
) {
    let mut still = Vec::with_capacity(unchanged.len());
    for s in unchanged {
        if needs_update(&s, h) {
            updates.push(Arc::unwrap_or_clone(s));
        } else {
            still.push(s);
        }
    }
    for s in creates.iter_mut().chain(updates.iter_mut()) {
        update(s, h);
    }
    (creates, updates, still)
}

#[cfg(test)]
mod tests {
    use super::*;
    use endpointd_kube::model::{AddressType, EndpointConditions};

    fn ep(ready: bool, zone: Option<&str>, hint: Option<&str>) -> Endpoint {
        Endpoint {
            addresses: vec!["10.0.0.1".into()].into(),
            conditions: EndpointConditions {
                ready: Some(ready),
                serving: Some(ready),
                terminating: Some(false),
            },
            node_name: Some("n1".into()),
            zone: zone.map(Into::into),
            hints: hint.map(|z| {
                Box::new(EndpointHints {
                    for_zones: vec![ForZone { name: z.into() }],
                    for_nodes: vec![],
                })
            }),
            ..Default::default()
        }
    }

    fn slice(eps: Vec<Endpoint>) -> EndpointSlice {
        let mut s = EndpointSlice::new(AddressType::IPv4);
        s.endpoints = eps;
        s
    }

    #[test]
    fn hints_enabled_table() {
        let cases: &[(&[(&str, &str)], bool)] = &[
            (&[], false),
            (&[(TOPOLOGY_MODE, "Auto")], true),
            (&[(TOPOLOGY_MODE, "auto")], true),
            (&[(TOPOLOGY_MODE, "AUTO")], false),
            (&[(TOPOLOGY_AWARE_HINTS, "Auto")], true),
            (
                &[(TOPOLOGY_AWARE_HINTS, "disabled"), (TOPOLOGY_MODE, "Auto")],
                false,
            ),
        ];
        for (ann, want) in cases {
            let mut s = Service::default();
            s.metadata.annotations = ann.iter().copied().collect();
            assert_eq!(hints_enabled(&s), *want, "{ann:?}");
        }
    }

    /// Upstream TestReconcileHints, in our words.
    #[test]
    fn reconcile_hints_table() {
        let zone_hint = |z: &str| {
            Some(Box::new(EndpointHints {
                for_zones: vec![ForZone { name: z.into() }],
                for_nodes: vec![],
            }))
        };
        // PreferClose: creates get zone hints on ready endpoints only.
        let (c, u, k) = reconcile_hints(
            Heuristic::SameZone,
            vec![slice(vec![
                ep(true, Some("a"), None),
                ep(false, Some("b"), None),
            ])],
            vec![],
            vec![],
        );
        assert_eq!(c[0].endpoints[0].hints, zone_hint("a"));
        assert_eq!(c[0].endpoints[1].hints, None, "not ready: untouched");
        assert!(u.is_empty() && k.is_empty());
        // An unchanged slice with a correct hint stays unchanged; a wrong one moves.
        let ok = slice(vec![
            ep(true, Some("a"), Some("a")),
            ep(false, Some("b"), None),
        ]);
        let wrong = slice(vec![ep(true, Some("a"), Some("b"))]);
        let (_, u, k) = reconcile_hints(
            Heuristic::SameZone,
            vec![],
            vec![],
            vec![Arc::new(ok.clone()), Arc::new(wrong)],
        );
        assert_eq!(k, vec![Arc::new(ok)]);
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].endpoints[0].hints, zone_hint("a"));
        // A ready endpoint without a zone gets no hint.
        let (c, _, _) = reconcile_hints(
            Heuristic::SameZone,
            vec![slice(vec![ep(true, None, None)])],
            vec![],
            vec![],
        );
        assert_eq!(c[0].endpoints[0].hints, None);
        // PreferSameNode adds the node.
        let (c, _, _) = reconcile_hints(
            Heuristic::SameNode,
            vec![slice(vec![ep(true, Some("a"), None)])],
            vec![],
            vec![],
        );
        assert_eq!(
            c[0].endpoints[0]
                .hints
                .as_ref()
                .map(|h| h.for_nodes.clone()),
            Some(vec![ForNode { name: "n1".into() }])
        );
        // Default: every hint removed, unchanged slices with hints move to updates.
        let hinted = slice(vec![ep(false, Some("a"), Some("a"))]);
        let (_, u, k) = reconcile_hints(
            Heuristic::Default,
            vec![],
            vec![],
            vec![
                Arc::new(hinted),
                Arc::new(slice(vec![ep(true, Some("a"), None)])),
            ],
        );
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].endpoints[0].hints, None);
        assert_eq!(k.len(), 1);
        assert_eq!(heuristic(Some("PreferClose")), Heuristic::SameZone);
        assert_eq!(heuristic(Some("Bogus")), Heuristic::Default);
    }
}
