//! The topology cache's arithmetic (upstream `topologycache/utils.go` and
//! `sliceinfo.go`): allocations per zone, which zones give and receive
//! hints, the redistribution itself, and whether a Service is overloaded.
//!
//! Pure and deterministic: zones are visited in name order where upstream
//! iterates Go maps.

use endpointd_kube::model::{Endpoint, EndpointHints, EndpointSlice, ForZone};
use std::collections::BTreeMap;

/// Upstream `overloadThreshold`.
pub const OVERLOAD_THRESHOLD: f64 = 0.2;

/// Endpoints (hints) per zone.
pub type ZoneCounts = BTreeMap<String, usize>;

/// How many endpoints a zone should get.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Allocation {
    /// At least.
    pub minimum: usize,
    /// At most.
    pub maximum: usize,
    /// Ideally (CPU share × endpoints, at least `minimum`).
    pub desired: f64,
}

/// Whether an endpoint is ready.
pub fn ready(e: &Endpoint) -> bool {
    e.conditions.ready == Some(true)
}

/// Ready endpoints of some slices.
pub fn ready_endpoints<'a>(slices: impl IntoIterator<Item = &'a EndpointSlice>) -> usize {
    slices
        .into_iter()
        .flat_map(|s| s.endpoints.iter())
        .filter(|e| ready(e))
        .count()
}

/// A hint for one zone.
pub fn zone_hint(zone: &str) -> Option<Box<EndpointHints>> {
    Some(Box::new(EndpointHints {
        for_zones: vec![ForZone { name: zone.into() }],
        for_nodes: Vec::new(),
    }))
}

/// Upstream `getHintsByZone`: the hints an unchanged slice holds per zone,
/// or `None` when it must be rewritten (a ready endpoint without hints, a
/// hint for a zone without allocation, or more than a zone's maximum).
pub fn hints_by_zone(
    s: &EndpointSlice,
    allocated: &ZoneCounts,
    allocations: &BTreeMap<String, Allocation>,
) -> Option<ZoneCounts> {
    let mut by_zone = ZoneCounts::new();
    for e in s.endpoints.iter().filter(|e| ready(e)) {
        let zones = e
            .hints
            .as_ref()
            .map(|h| h.for_zones.as_slice())
            .unwrap_or(&[]);
        if zones.is_empty() {
            return None;
        }
        for z in zones {
            allocations.get(z.name.as_str())?;
            *by_zone.entry(z.name.to_string()).or_default() += 1;
        }
    }
    for (zone, n) in &by_zone {
        let a = allocations.get(zone)?;
        if n + allocated.get(zone).copied().unwrap_or(0) > a.maximum {
            return None;
        }
    }
    Some(by_zone)
}

fn most(m: &BTreeMap<String, f64>) -> Option<(String, f64)> {
    let mut best: Option<(&String, f64)> = None;
    for (z, n) in m {
        if *n > best.map_or(0.0, |b| b.1) {
            best = Some((z, *n));
        }
    }
    best.map(|(z, n)| (z.clone(), n))
}

/// Upstream `getGivingAndReceivingZones`: whole endpoints each zone gives
/// and receives to get from `allocated` towards the desired allocations.
pub fn giving_and_receiving(
    allocations: &BTreeMap<String, Allocation>,
    allocated: &ZoneCounts,
) -> (ZoneCounts, ZoneCounts) {
    let mut giving_f = BTreeMap::new();
    let mut receiving_f = BTreeMap::new();
    for (zone, a) in allocations {
        let have = allocated.get(zone).copied().unwrap_or(0) as f64;
        if have > a.desired {
            giving_f.insert(zone.clone(), have - a.desired);
        } else if have < a.desired {
            receiving_f.insert(zone.clone(), a.desired - have);
        }
    }
    let (mut giving, mut receiving) = (ZoneCounts::new(), ZoneCounts::new());
    // Upstream's stop: no zone left on either side, both sides short of a
    // whole endpoint, or either side short of half of one. So a zone with
    // a whole endpoint to spare still gives it to a zone that needs 0.5 or
    // more (and the reverse).
    while let (Some((g, ng)), Some((r, nr))) = (most(&giving_f), most(&receiving_f)) {
        if (ng < 1.0 && nr < 1.0) || ng < 0.5 || nr < 0.5 {
            break;
        }
        *giving.entry(g.clone()).or_default() += 1;
        *receiving.entry(r.clone()).or_default() += 1;
        if let Some(x) = giving_f.get_mut(&g) {
            *x -= 1.0;
        }
        if let Some(x) = receiving_f.get_mut(&r) {
            *x -= 1.0;
        }
    }
    (giving, receiving)
}

/// Upstream `redistributeHints`: re-hint ready endpoints of giving zones to
/// receiving zones, in slice order; the change per zone.
pub fn redistribute(
    slices: &mut [&mut EndpointSlice],
    mut giving: ZoneCounts,
    mut receiving: ZoneCounts,
) -> BTreeMap<String, i64> {
    let mut diff: BTreeMap<String, i64> = BTreeMap::new();
    for s in slices.iter_mut() {
        for e in s.endpoints.iter_mut().filter(|e| ready(e)) {
            if giving.is_empty() || receiving.is_empty() {
                return diff;
            }
            let Some(zone) = e.zone.as_deref().filter(|z| !z.is_empty()) else {
                continue;
            };
            if giving.get(zone).copied().unwrap_or(0) == 0 {
                continue;
            }
            let Some(to) = receiving
                .iter()
                .find(|(_, n)| **n > 0)
                .map(|(z, _)| z.clone())
            else {
                continue;
            };
            e.hints = zone_hint(&to);
            decrement(&mut giving, zone);
            decrement(&mut receiving, &to);
            *diff.entry(to).or_default() += 1;
            *diff.entry(zone.to_string()).or_default() -= 1;
        }
    }
    diff
}

fn decrement(m: &mut ZoneCounts, k: &str) {
    if let Some(n) = m.get_mut(k) {
        *n -= 1;
        if *n == 0 {
            m.remove(k);
        }
    }
}

/// Upstream `serviceOverloaded`: some zone has fewer hinted endpoints than
/// its CPU share allows under the overload threshold, or none at all.
pub fn overloaded(hints: &ZoneCounts, ratios: &BTreeMap<String, f64>) -> bool {
    if hints.is_empty() {
        return false;
    }
    if ratios.is_empty() {
        return true;
    }
    let total: f64 = hints.values().map(|n| *n as f64).sum();
    ratios.iter().any(|(zone, ratio)| match hints.get(zone) {
        None => true,
        Some(n) => (*n as f64) < (total * ratio / (1.0 + OVERLOAD_THRESHOLD)).ceil(),
    })
}
