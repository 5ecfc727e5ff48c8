//! The text form of an [`Explanation`]: what an operator reads first
//! (is the Service managed, which pods get traffic, which do not and why),
//! then the near misses and whether the stored objects are current.
//! Pure string building; must never print or read anything itself.

use super::analyze::{Explanation, PodReport, Reason};
use std::fmt::Write;

/// One line per reason, in words.
pub fn reason_text(r: &Reason, publish_not_ready: bool) -> String {
    match r {
        Reason::TerminalPhase { phase } => {
            format!("phase {phase}: finished pods are never endpoints")
        }
        Reason::NoPodIp => "no IP yet (not scheduled, or its sandbox is not up)".into(),
        Reason::NoIpOfFamily { family } => {
            format!("no {family} address, the Service's family: out of the Endpoints and of that address type's slices")
        }
        Reason::InvalidPodIp { ips } => format!(
            "its IPs {ips:?} are not IP addresses: out of the Endpoints and the slices"
        ),
        Reason::Terminating => match publish_not_ready {
            true => "terminating: kept in the Endpoints (publishNotReadyAddresses) and in the slices with terminating=true".into(),
            false => "terminating: out of the Endpoints (publishNotReadyAddresses: true would keep it), in the slices with ready=false, terminating=true".into(),
        },
        Reason::NotReady => match publish_not_ready {
            true => "not Ready, but published anyway (publishNotReadyAddresses)".into(),
            false => "not Ready: under notReadyAddresses, ready=false in its slice; gets no traffic".into(),
        },
        Reason::NamedPortMissing {
            service_port,
            target_port,
            protocol,
        } => format!(
            "declares no container port named {target_port:?} ({protocol}): Service port {service_port:?} has no endpoint on this pod"
        ),
        Reason::NodeMissing { node } => format!(
            "its node {node:?} does not exist: the EndpointSlice controller skips the pod until it does"
        ),
        Reason::OverCapacity => "over capacity: the Endpoints keep 1000 addresses (ready ones first) and leave this one out; its EndpointSlice lists it".into(),
    }
}

fn pod_line(out: &mut String, p: &PodReport, publish: bool) {
    let ips = match p.ips.is_empty() {
        true => "-".to_string(),
        false => p.ips.join(","),
    };
    let _ = writeln!(
        out,
        "  {} ({}, {}, node {}): {}",
        p.name,
        p.state,
        ips,
        if p.node.is_empty() { "-" } else { &p.node },
        match &p.in_endpoints {
            Some(w) => format!("Endpoints {w}"),
            None => "not in the Endpoints".into(),
        }
    );
    if p.in_slices.is_empty() {
        let _ = writeln!(out, "      not in any EndpointSlice");
    }
    for s in &p.in_slices {
        let b = |v: Option<bool>| v.map_or("-".to_string(), |x| x.to_string());
        let mut extra = String::new();
        if let Some(z) = &s.zone {
            let _ = write!(extra, ", zone {z}");
        }
        if !s.hint_zones.is_empty() {
            let _ = write!(extra, ", hints {}", s.hint_zones.join(","));
        }
        if !s.hint_nodes.is_empty() {
            let _ = write!(extra, ", node hints {}", s.hint_nodes.join(","));
        }
        let _ = writeln!(
            out,
            "      slice {} ({}): ready={} serving={} terminating={}{extra}",
            s.slice,
            s.address_type,
            b(s.ready),
            b(s.serving),
            b(s.terminating)
        );
    }
    if !p.resolved_ports.is_empty() {
        let ports: Vec<String> = p
            .resolved_ports
            .iter()
            .map(|r| {
                let name = match r.name.is_empty() {
                    true => "(unnamed)",
                    false => &r.name,
                };
                match r.container_port {
                    Some(c) => format!("{name} → {c}"),
                    None => format!("{name} → (not declared)"),
                }
            })
            .collect();
        let _ = writeln!(out, "      ports: {}", ports.join(", "));
    }
    for r in &p.reasons {
        let _ = writeln!(out, "      why: {}", reason_text(r, publish));
    }
}

/// Render `r` as text.
pub fn text(r: &Explanation) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Service {}", r.service);
    if let Some(why) = &r.unmanaged_reason {
        let _ = writeln!(out, "  not managed by endpointd: {why}");
        return out;
    }
    let _ = writeln!(
        out,
        "  {}address types {} (Endpoints: {}), publishNotReadyAddresses {}{}{}",
        if r.headless { "headless, " } else { "" },
        r.address_types.join("+"),
        r.endpoints_family,
        r.publish_not_ready_addresses,
        r.traffic_distribution
            .as_deref()
            .map(|t| format!(", trafficDistribution {t}"))
            .unwrap_or_default(),
        if r.topology_auto {
            ", topology-mode Auto"
        } else {
            ""
        }
    );
    let _ = writeln!(out, "  hints: {}", r.hints);
    for p in &r.ports {
        let _ = writeln!(
            out,
            "  port {:?} {}/{} → targetPort {}",
            p.name, p.port, p.protocol, p.target_port
        );
    }
    if r.endpoints_truncated {
        let _ = writeln!(
            out,
            "  over capacity: the Endpoints hold 1000 addresses at most (the slices hold all)"
        );
    }
    let ready = r.pods.iter().filter(|p| p.state == "ready").count();
    let _ = writeln!(
        out,
        "Pods selected: {} ({} ready and serving traffic)",
        r.pods.len(),
        ready
    );
    for p in &r.pods {
        pod_line(&mut out, p, r.publish_not_ready_addresses);
    }
    if !r.near_misses.is_empty() {
        let _ = writeln!(out, "Pods the selector misses by one label:");
        for n in &r.near_misses {
            let _ = writeln!(
                out,
                "  {}: {}={} wanted, {}",
                n.pod,
                n.label,
                n.want,
                match &n.have {
                    Some(h) => format!("has {}={h}", n.label),
                    None => format!("has no label {}", n.label),
                }
            );
        }
    }
    if r.endpoints_in_sync && r.slices_in_sync {
        let _ = writeln!(
            out,
            "In sync: the stored Endpoints and EndpointSlices mean what endpointd computes now."
        );
        for d in &r.differences {
            let _ = writeln!(out, "  note: {d}");
        }
    } else {
        let _ = writeln!(
            out,
            "Not in sync (a sync is pending, or another writer is active):"
        );
        for d in &r.differences {
            let _ = writeln!(out, "  {d}");
        }
    }
    out
}
