//! The per-resource rules behind [`super::validate`]: EndpointSlice
//! (upstream `pkg/apis/discovery/validation/validation.go`), Endpoints
//! (`ValidateEndpoints` in `pkg/apis/core/validation`) and Lease
//! (`pkg/apis/coordination/validation`). Pure; each appends field causes.
//!
//! They must never modify the object or look at anything but the objects
//! they are given.

use super::validate::{address_ok, ip_ok, is_dns1123_label, is_dns1123_subdomain, Cause};
use serde_json::{json, Value};
use std::collections::HashSet;

/// Upstream `maxEndpoints`.
pub const MAX_ENDPOINTS: usize = 1000;
/// Upstream `maxPorts`.
pub const MAX_PORTS: usize = 100;
/// Upstream `maxAddresses` per endpoint.
pub const MAX_ADDRESSES: usize = 100;

const ADDRESS_TYPES: &[&str] = &["FQDN", "IPv4", "IPv6"];
const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

fn arr<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// EndpointSlice rules.
pub fn endpoint_slice(old: Option<&Value>, new: &Value, out: &mut Vec<Cause>) {
    let at = new.get("addressType").cloned().unwrap_or(Value::Null);
    let at_str = at.as_str().unwrap_or("");
    if at_str.is_empty() {
        out.push(Cause::required("addressType", ""));
    } else if !ADDRESS_TYPES.contains(&at_str) {
        out.push(Cause::not_supported("addressType", &at, ADDRESS_TYPES));
    }
    if let Some(old_at) = old.and_then(|o| o.get("addressType")) {
        if *old_at != at {
            out.push(Cause::invalid("addressType", &at, "field is immutable"));
        }
    }
    let endpoints = arr(new, "endpoints");
    if endpoints.len() > MAX_ENDPOINTS {
        out.push(Cause::too_many("endpoints", endpoints.len(), MAX_ENDPOINTS));
    }
    for (i, ep) in endpoints.iter().enumerate() {
        slice_endpoint(&format!("endpoints[{i}]"), at_str, ep, out);
    }
    let ports = arr(new, "ports");
    if ports.len() > MAX_PORTS {
        out.push(Cause::too_many("ports", ports.len(), MAX_PORTS));
    }
    let mut names = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let path = format!("ports[{i}]");
        let name = p.get("name").and_then(Value::as_str).unwrap_or("");
        if !name.is_empty() && !is_dns1123_label(name) {
            out.push(Cause::invalid(
                &format!("{path}.name"),
                &json!(name),
                "must be a valid DNS label",
            ));
        }
        if !names.insert(name.to_string()) {
            out.push(Cause::duplicate(&format!("{path}.name"), &json!(name)));
        }
        protocol(&path, p, false, out);
        if let Some(port) = p.get("port").filter(|v| !v.is_null()) {
            port_number(&format!("{path}.port"), port, out);
        }
    }
}

fn slice_endpoint(path: &str, address_type: &str, ep: &Value, out: &mut Vec<Cause>) {
    let addresses = arr(ep, "addresses");
    let apath = format!("{path}.addresses");
    if addresses.is_empty() {
        out.push(Cause::required(&apath, "must contain at least 1 address"));
    } else if addresses.len() > MAX_ADDRESSES {
        out.push(Cause::too_many(&apath, addresses.len(), MAX_ADDRESSES));
    }
    for (j, a) in addresses.iter().enumerate() {
        let s = a.as_str().unwrap_or("");
        if !address_ok(address_type, s) {
            let detail = match address_type {
                "IPv4" => "must be a valid IPv4 address",
                "IPv6" => "must be a valid IPv6 address",
                _ => "must be a valid FQDN",
            };
            out.push(Cause::invalid(&format!("{apath}[{j}]"), a, detail));
        }
    }
    for (field, check) in [
        ("nodeName", is_dns1123_subdomain as fn(&str) -> bool),
        ("hostname", is_dns1123_label),
    ] {
        if let Some(v) = ep.get(field).and_then(Value::as_str) {
            if !check(v) {
                let what = if field == "nodeName" {
                    "a valid node name"
                } else {
                    "a valid DNS label"
                };
                out.push(Cause::invalid(
                    &format!("{path}.{field}"),
                    &json!(v),
                    &format!("must be {what}"),
                ));
            }
        }
    }
}

fn protocol(path: &str, p: &Value, required: bool, out: &mut Vec<Cause>) {
    match p.get("protocol") {
        None | Some(Value::Null) if required => {
            out.push(Cause::required(&format!("{path}.protocol"), ""))
        }
        None | Some(Value::Null) => {}
        Some(v) if v.as_str().is_some_and(|s| PROTOCOLS.contains(&s)) => {}
        Some(v) => out.push(Cause::not_supported(
            &format!("{path}.protocol"),
            v,
            PROTOCOLS,
        )),
    }
}

fn port_number(path: &str, v: &Value, out: &mut Vec<Cause>) {
    if !v.as_i64().is_some_and(|n| (1..=65535).contains(&n)) {
        out.push(Cause::invalid(
            path,
            v,
            "must be between 1 and 65535, inclusive",
        ));
    }
}

/// Endpoints rules (subsets well-formed).
pub fn endpoints(new: &Value, out: &mut Vec<Cause>) {
    for (i, ss) in arr(new, "subsets").iter().enumerate() {
        let path = format!("subsets[{i}]");
        let ready = arr(ss, "addresses");
        let not_ready = arr(ss, "notReadyAddresses");
        if ready.is_empty() && not_ready.is_empty() {
            out.push(Cause::required(
                &path,
                "must specify `addresses` or `notReadyAddresses`",
            ));
        }
        for (list, key) in [(ready, "addresses"), (not_ready, "notReadyAddresses")] {
            for (j, a) in list.iter().enumerate() {
                let ip = a.get("ip").cloned().unwrap_or(Value::Null);
                let ipath = format!("{path}.{key}[{j}].ip");
                match ip.as_str() {
                    None | Some("") => out.push(Cause::required(&ipath, "")),
                    Some(s) if !ip_ok(s) => {
                        out.push(Cause::invalid(&ipath, &ip, "must be a valid IP address"))
                    }
                    _ => {}
                }
            }
        }
        // No ports is valid: a headless Service without ports has
        // endpoints without ports (upstream's validateEndpointSubsets).
        let ports = arr(ss, "ports");
        for (k, p) in ports.iter().enumerate() {
            let ppath = format!("{path}.ports[{k}]");
            let name = p.get("name").and_then(Value::as_str).unwrap_or("");
            if ports.len() > 1 && name.is_empty() {
                out.push(Cause::required(&format!("{ppath}.name"), ""));
            } else if !name.is_empty() && !is_dns1123_label(name) {
                out.push(Cause::invalid(
                    &format!("{ppath}.name"),
                    &json!(name),
                    "must be a valid DNS label",
                ));
            }
            port_number(
                &format!("{ppath}.port"),
                p.get("port").unwrap_or(&Value::Null),
                out,
            );
            protocol(&ppath, p, true, out);
        }
    }
}

/// Lease rules (types are checked before, as decode errors).
pub fn lease(new: &Value, out: &mut Vec<Cause>) {
    if let Some(d) = new
        .pointer("/spec/leaseDurationSeconds")
        .and_then(Value::as_i64)
    {
        if d <= 0 {
            out.push(Cause::invalid(
                "spec.leaseDurationSeconds",
                &json!(d),
                "must be greater than 0",
            ));
        }
    }
    if let Some(t) = new
        .pointer("/spec/leaseTransitions")
        .and_then(Value::as_i64)
    {
        if t < 0 {
            out.push(Cause::invalid(
                "spec.leaseTransitions",
                &json!(t),
                "must be greater than or equal to 0",
            ));
        }
    }
}

const SERVICE_TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
/// `spec.trafficDistribution` values kube-apiserver accepts (1.33+, with
/// `PreferSameTrafficDistribution` on, as it is by default from 1.34).
const TRAFFIC_DISTRIBUTIONS: &[&str] = &["PreferClose", "PreferSameZone", "PreferSameNode"];

/// IANA service name (a string `targetPort`): ≤ 15 characters, lower-case
/// alphanumerics and '-', at least one letter, no leading/trailing or
/// double '-'.
pub fn is_port_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 15
        && s.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && s.bytes().any(|c| c.is_ascii_lowercase())
        && !s.starts_with('-')
        && !s.ends_with('-')
        && !s.contains("--")
}

/// Service rules (upstream `ValidateService`, the parts endpointd relies on;
/// on update a set ClusterIP is immutable).
pub fn service(old: Option<&Value>, new: &Value, out: &mut Vec<Cause>) {
    let spec = new.get("spec").unwrap_or(&Value::Null);
    let old_ip = old
        .and_then(|o| o.pointer("/spec/clusterIP"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let new_ip = spec.get("clusterIP").and_then(Value::as_str).unwrap_or("");
    if !old_ip.is_empty() && old_ip != new_ip {
        out.push(Cause::invalid(
            "spec.clusterIPs[0]",
            &json!(new_ip),
            "may not change once set",
        ));
    }
    let ty = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    if !SERVICE_TYPES.contains(&ty) {
        out.push(Cause::not_supported("spec.type", &json!(ty), SERVICE_TYPES));
    }
    if let Some(td) = spec.get("trafficDistribution").and_then(Value::as_str) {
        if !TRAFFIC_DISTRIBUTIONS.contains(&td) {
            out.push(Cause::not_supported(
                "spec.trafficDistribution",
                &json!(td),
                TRAFFIC_DISTRIBUTIONS,
            ));
        }
    }
    let ip = spec.get("clusterIP").and_then(Value::as_str).unwrap_or("");
    if !ip.is_empty() && ip != "None" && !ip_ok(ip) {
        out.push(Cause::invalid(
            "spec.clusterIP",
            &json!(ip),
            "must be empty, 'None', or a valid IP address",
        ));
    }
    let ports = arr(spec, "ports");
    if ports.is_empty() && ip != "None" && ty != "ExternalName" {
        out.push(Cause::required("spec.ports", ""));
    }
    let mut names = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let path = format!("spec.ports[{i}]");
        let name = p.get("name").and_then(Value::as_str).unwrap_or("");
        if ports.len() > 1 && name.is_empty() {
            out.push(Cause::required(&format!("{path}.name"), ""));
        } else if !name.is_empty() && !is_dns1123_label(name) {
            out.push(Cause::invalid(
                &format!("{path}.name"),
                &json!(name),
                "must be a valid DNS label",
            ));
        }
        if !name.is_empty() && !names.insert(name.to_string()) {
            out.push(Cause::duplicate(&format!("{path}.name"), &json!(name)));
        }
        port_number(
            &format!("{path}.port"),
            p.get("port").unwrap_or(&Value::Null),
            out,
        );
        protocol(&path, p, true, out);
        match p.get("targetPort") {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if is_port_name(s) => {}
            Some(Value::String(s)) => out.push(Cause::invalid(
                &format!("{path}.targetPort"),
                &json!(s),
                "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
            )),
            Some(n) => port_number(&format!("{path}.targetPort"), n, out),
        }
    }
}

/// Upstream limits for events (`pkg/apis/core/validation/events.go`).
const EVENT_LIMITS: &[(&str, usize)] = &[
    ("reportingInstance", 128),
    ("action", 128),
    ("reason", 128),
    ("message", 1024),
];

/// An event field (core/v1 names: events.k8s.io bodies are converted to
/// the core form before validation, as upstream validates `core.Event`).
fn event_field<'a>(v: &'a Value, _strict: bool, name: &str) -> Option<&'a Value> {
    v.get(name).filter(|x| !x.is_null())
}

fn text<'a>(v: &'a Value, strict: bool, f: &str) -> &'a str {
    event_field(v, strict, f)
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Event rules: the legacy checks for every version; the strict ones for
/// events.k8s.io (`strict`), as upstream `ValidateEventCreate`.
pub fn event(new: &Value, strict: bool, out: &mut Vec<Cause>) {
    let ns = new
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let involved_ns = event_field(new, strict, "involvedObject")
        .and_then(|o| o.get("namespace"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let has_time = !text(new, strict, "eventTime").is_empty();
    let ns_ok = match (has_time, involved_ns.is_empty()) {
        (false, true) => ns.is_empty() || ns == "default",
        (false, false) => ns == involved_ns,
        (true, true) => ns == "default" || ns == "kube-system",
        (true, false) => true,
    };
    if !ns_ok {
        out.push(Cause::invalid(
            "involvedObject.namespace",
            &json!(involved_ns),
            "does not match event.namespace",
        ));
    }
    if has_time {
        // (core/v1 JSON name, upstream error field)
        for (f, field) in [
            ("reportingComponent", "reportingController"),
            ("reportingInstance", "reportingInstance"),
            ("action", "action"),
            ("reason", "reason"),
        ] {
            if text(new, strict, f).is_empty() {
                out.push(Cause::required(field, ""));
            }
        }
        for (f, max) in EVENT_LIMITS {
            if text(new, strict, f).len() > *max {
                out.push(Cause::invalid(
                    f,
                    &json!(""),
                    &format!("can have at most {max} characters"),
                ));
            }
        }
    }
    if !strict {
        return;
    }
    if !has_time {
        out.push(Cause::required("eventTime", ""));
    }
    let ty = text(new, strict, "type");
    if ty != "Normal" && ty != "Warning" {
        out.push(Cause::invalid(
            "type",
            &json!(""),
            &format!("has invalid value: {ty}"),
        ));
    }
    for f in ["firstTimestamp", "lastTimestamp", "count", "source"] {
        let set = event_field(new, strict, f)
            .is_some_and(|x| x != &json!(0) && x != &json!({}) && x != "");
        if set {
            out.push(Cause::invalid(f, &json!(""), "needs to be unset"));
        }
    }
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
