//! Upstream `RepackSubsets` (`pkg/api/v1/endpoints/util.go`;
//! docs/behaviour.md#up-a16): the canonical form of a list of subsets.
//!
//! Addresses are de-duplicated by (IP, targetRef UID); for one address and
//! port, not-ready trumps ready; addresses offering exactly the same
//! {address, ready} set are merged into one subset with all their ports;
//! port-less subsets survive (as upstream's sentinel port -1) with no
//! ports.
//!
//! Order: addresses as upstream (`LessEndpointAddress`: IP text bytes, then
//! UID, no targetRef first). Upstream sorts ports and subsets by the md5 of
//! a Go spew dump, which cannot be reproduced outside Go; ours is plain
//! and deterministic: ports by (port, protocol, name, appProtocol), subsets
//! by their sorted ports, then their first ready and not-ready addresses.
//! The subsets compare is order-sensitive, so the first sync over an
//! Endpoints written by kube-controller-manager with more than one subset
//! or port may rewrite it once in our order; after that it is stable.
//!
//! Pure; must never allocate more than the input's size.

use endpointd_kube::model::{EndpointAddress, EndpointPort, EndpointSubset, Uid};
use std::collections::BTreeMap;

/// (IP, UID) — upstream's `addressKey`.
/// An address's identity: its IP and its pod's UID, borrowed from the
/// input (ordered as upstream orders `(ip, uid)` strings).
/// ([`Uid`] orders as its text does.)
type AddrKey<'a> = (&'a str, Option<&'a Uid>);

fn addr_key(a: &EndpointAddress) -> AddrKey<'_> {
    (&a.ip, a.target_ref.as_ref().map(|t| &t.uid))
}

/// Upstream `LessEndpointAddress`: by IP, then by the pod's UID.
pub fn cmp_address(a: &EndpointAddress, b: &EndpointAddress) -> std::cmp::Ordering {
    addr_key(a).cmp(&addr_key(b))
}

/// Ports ordered by number, protocol, name and appProtocol (a stable
/// canonical order: the Endpoints API treats ports as a set).
pub fn port_key(p: &EndpointPort) -> (i32, &str, &str, &str) {
    (
        p.port,
        p.protocol.as_ref().map(|x| x.as_str()).unwrap_or_default(),
        &p.name,
        p.app_protocol.as_deref().unwrap_or_default(),
    )
}

fn cmp_port(a: &EndpointPort, b: &EndpointPort) -> std::cmp::Ordering {
    port_key(a).cmp(&port_key(b))
}

/// One address of the unpacked form on one port (`None`: a port-less
/// subset) and whether it is ready there.
pub type Triple<'a> = (&'a EndpointAddress, Option<&'a EndpointPort>, bool);

/// Upstream `RepackSubsets`.
pub fn repack_subsets(subsets: &[EndpointSubset]) -> Vec<EndpointSubset> {
    repack(subsets.iter().flat_map(|s| {
        let slots: &[EndpointPort] = &s.ports;
        let port_less = slots.is_empty().then_some(None);
        port_less
            .into_iter()
            .chain(slots.iter().map(Some))
            .flat_map(move |slot| {
                let ready = s.addresses.iter().map(move |a| (a, slot, true));
                ready.chain(s.not_ready_addresses.iter().map(move |a| (a, slot, false)))
            })
    }))
}

/// [`repack_subsets`] over the unpacked (address, port, ready) triples, in
/// the order the subsets would list them: nothing is built per triple.
pub fn repack<'a>(unpacked: impl IntoIterator<Item = Triple<'a>>) -> Vec<EndpointSubset> {
    // The first address seen per identity (a BTreeMap: with the handful
    // of addresses of a Service, cheaper than hashing the strings).
    let mut addrs: BTreeMap<AddrKey<'a>, &'a EndpointAddress> = BTreeMap::new();
    // port → (address → ready), in first-seen order of ports.
    let mut by_port: Vec<(Option<&'a EndpointPort>, BTreeMap<AddrKey<'a>, bool>)> = Vec::new();
    for (a, slot, ready) in unpacked {
        let i = match by_port.iter().position(|(p, _)| *p == slot) {
            Some(i) => i,
            None => {
                by_port.push((slot, BTreeMap::new()));
                by_port.len() - 1
            }
        };
        let k = addr_key(a);
        addrs.entry(k).or_insert(a);
        let e = by_port[i].1.entry(k).or_insert(ready);
        *e = *e && ready;
    }
    // Group ports by their identical {address, ready} sets.
    let mut groups: Vec<(BTreeMap<AddrKey<'_>, bool>, Vec<EndpointPort>)> = Vec::new();
    for (slot, set) in by_port {
        let i = match groups.iter().position(|(s, _)| *s == set) {
            Some(i) => i,
            None => {
                groups.push((set, Vec::new()));
                groups.len() - 1
            }
        };
        if let Some(p) = slot {
            groups[i].1.push(p.clone());
        }
    }
    let mut out: Vec<EndpointSubset> = groups
        .into_iter()
        .map(|(set, mut ports)| {
            let n_ready = set.values().filter(|r| **r).count();
            let mut ready = Vec::with_capacity(n_ready);
            let mut not_ready = Vec::with_capacity(set.len() - n_ready);
            // The set is in key order, which is `cmp_address` order.
            for (k, r) in set {
                let a = addrs.get(&k).map(|a| (*a).clone()).unwrap_or_default();
                if r {
                    ready.push(a)
                } else {
                    not_ready.push(a)
                }
            }
            ports.sort_by(cmp_port);
            EndpointSubset {
                addresses: ready,
                not_ready_addresses: not_ready,
                ports,
            }
        })
        .collect();
    out.sort_by(cmp_subset);
    out
}

/// Subsets by their sorted ports, then their first ready and first
/// not-ready address (compared in place, nothing built per comparison).
fn cmp_subset(a: &EndpointSubset, b: &EndpointSubset) -> std::cmp::Ordering {
    fn first(v: &[EndpointAddress]) -> Option<AddrKey<'_>> {
        v.first().map(addr_key)
    }
    a.ports
        .iter()
        .map(port_key)
        .cmp(b.ports.iter().map(port_key))
        .then_with(|| first(&a.addresses).cmp(&first(&b.addresses)))
        .then_with(|| first(&a.not_ready_addresses).cmp(&first(&b.not_ready_addresses)))
}

#[cfg(test)]
#[allow(clippy::cloned_ref_to_slice_refs)] // table rows read better with clones
mod tests {
    use super::*;
    use endpointd_kube::model::{ObjectReference, Protocol};

    fn a(ip: &str, uid: Option<&str>) -> EndpointAddress {
        EndpointAddress {
            ip: ip.into(),
            target_ref: uid.map(|u| ObjectReference {
                uid: u.into(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn p(name: &str, port: i32) -> EndpointPort {
        EndpointPort {
            name: name.into(),
            port,
            protocol: Some(Protocol::Tcp),
            app_protocol: None,
        }
    }

    fn ss(
        ready: &[EndpointAddress],
        not_ready: &[EndpointAddress],
        ports: &[EndpointPort],
    ) -> EndpointSubset {
        EndpointSubset {
            addresses: ready.to_vec(),
            not_ready_addresses: not_ready.to_vec(),
            ports: ports.to_vec(),
        }
    }

    /// The cases of upstream TestPackSubsets, in our words (compared as
    /// sets where upstream's order is its spew-hash order).
    #[test]
    fn pack_subsets_table() {
        let (a1, a2, a3) = (
            a("1.2.3.4", Some("u1")),
            a("5.6.7.8", Some("u2")),
            a("1.2.3.4", Some("u3")),
        );
        let (p1, p2) = (p("a", 111), p("b", 222));
        let cases: Vec<(&str, Vec<EndpointSubset>, Vec<EndpointSubset>)> = vec![
            ("empty", vec![], vec![]),
            (
                "no ports: kept without ports",
                vec![ss(&[a1.clone()], &[], &[])],
                vec![ss(&[a1.clone()], &[], &[])],
            ),
            (
                "one each",
                vec![ss(&[a1.clone()], &[], &[p1.clone()])],
                vec![ss(&[a1.clone()], &[], &[p1.clone()])],
            ),
            (
                "not ready only",
                vec![ss(&[], &[a1.clone()], &[p1.clone()])],
                vec![ss(&[], &[a1.clone()], &[p1.clone()])],
            ),
            (
                "same address, two ports → one subset",
                vec![
                    ss(&[a1.clone()], &[], &[p1.clone()]),
                    ss(&[a1.clone()], &[], &[p2.clone()]),
                ],
                vec![ss(&[a1.clone()], &[], &[p1.clone(), p2.clone()])],
            ),
            (
                "duplicate address deduplicated",
                vec![
                    ss(&[a1.clone()], &[], &[p1.clone()]),
                    ss(&[a1.clone()], &[], &[p1.clone()]),
                ],
                vec![ss(&[a1.clone()], &[], &[p1.clone()])],
            ),
            (
                "same IP, different UIDs: two addresses",
                vec![
                    ss(&[a1.clone()], &[], &[p1.clone()]),
                    ss(&[a3.clone()], &[], &[p1.clone()]),
                ],
                vec![ss(&[a1.clone(), a3.clone()], &[], &[p1.clone()])],
            ),
            (
                "two addresses one port",
                vec![ss(&[a2.clone(), a1.clone()], &[], &[p1.clone()])],
                vec![ss(&[a1.clone(), a2.clone()], &[], &[p1.clone()])],
            ),
            (
                "not ready trumps ready for the same address and port",
                vec![
                    ss(&[a1.clone()], &[], &[p1.clone()]),
                    ss(&[], &[a1.clone()], &[p1.clone()]),
                ],
                vec![ss(&[], &[a1.clone()], &[p1.clone()])],
            ),
            (
                "ready on one port, not ready on another → two subsets",
                vec![
                    ss(&[a1.clone()], &[], &[p1.clone()]),
                    ss(&[], &[a1.clone()], &[p2.clone()]),
                ],
                vec![
                    ss(&[a1.clone()], &[], &[p1.clone()]),
                    ss(&[], &[a1.clone()], &[p2.clone()]),
                ],
            ),
            (
                "different address sets per port",
                vec![
                    ss(&[a1.clone()], &[], &[p1.clone()]),
                    ss(&[a2.clone()], &[], &[p2.clone()]),
                ],
                vec![
                    ss(&[a1.clone()], &[], &[p1.clone()]),
                    ss(&[a2.clone()], &[], &[p2.clone()]),
                ],
            ),
            (
                "mixed ready and not ready on one port",
                vec![ss(&[a1.clone()], &[a2.clone()], &[p1.clone()])],
                vec![ss(&[a1.clone()], &[a2.clone()], &[p1.clone()])],
            ),
            (
                "nil targetRef sorts first",
                vec![ss(&[a1.clone(), a("1.2.3.4", None)], &[], &[p1.clone()])],
                vec![ss(&[a("1.2.3.4", None), a1.clone()], &[], &[p1.clone()])],
            ),
        ];
        for (what, input, want) in cases {
            assert_eq!(repack_subsets(&input), want, "{what}");
        }
    }

    #[test]
    fn order_is_independent_of_input_order() {
        let x = vec![
            ss(&[a("10.0.0.2", Some("b"))], &[], &[p("http", 80)]),
            ss(
                &[],
                &[a("10.0.0.3", Some("c"))],
                &[p("http", 80), p("dns", 53)],
            ),
            ss(&[a("10.0.0.1", Some("a"))], &[], &[p("http", 80)]),
        ];
        let mut y = x.clone();
        y.reverse();
        assert_eq!(repack_subsets(&x), repack_subsets(&y));
    }
}
