//! Plain-text rendering of what the demo shows: a Service's Endpoints and
//! EndpointSlices in the spirit of `kubectl get endpointslices -o wide`,
//! fitting an 80-column terminal and a CI log (no colours).
//!
//! Pure functions from API JSON to lines; must never read kube-sim.

use super::observe::{endpoint_counts, slice_endpoints};
use serde_json::Value;
use std::time::Duration;

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// `http:8080/TCP,…` of a slice or an Endpoints subset.
pub fn ports(ports: &Value) -> String {
    let list: Vec<String> = ports
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let name = s(&p["name"]);
            let proto = p["protocol"].as_str().unwrap_or("TCP");
            match name {
                "" => format!("{}/{proto}", p["port"]),
                n => format!("{n}:{}/{proto}", p["port"]),
            }
        })
        .collect();
    if list.is_empty() {
        "<none>".into()
    } else {
        list.join(",")
    }
}

/// The conditions of a slice endpoint in words.
pub fn conditions(e: &Value) -> String {
    let c = &e["conditions"];
    let mut v = vec![if c["ready"] == true {
        "ready"
    } else {
        "not-ready"
    }];
    if c["serving"] == true && c["ready"] != true {
        v.push("serving");
    }
    if c["terminating"] == true {
        v.push("terminating");
    }
    v.join(",")
}

/// One line per endpoint: address, conditions, node/zone, hints.
pub fn endpoint_line(e: &Value) -> String {
    let addr = e["addresses"]
        .as_array()
        .and_then(|a| a.first())
        .map(s)
        .unwrap_or("");
    let mut line = format!("      {addr:<22} {:<22}", conditions(e));
    let node = s(&e["nodeName"]);
    let zone = s(&e["zone"]);
    if !node.is_empty() || !zone.is_empty() {
        line.push_str(&format!(" {node}/{zone}"));
    }
    if let Some(h) = e["hostname"].as_str() {
        line.push_str(&format!(" host={h}"));
    }
    let zones: Vec<&str> = e["hints"]["forZones"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|z| s(&z["name"]))
        .collect();
    if !zones.is_empty() {
        line.push_str(&format!(" hint→{}", zones.join(",")));
    }
    line.trim_end().to_string()
}

/// A Service's objects as lines; slices with more than `max_rows`
/// endpoints are summarised.
pub fn service_table(
    name: &str,
    about: &str,
    ep: Option<&Value>,
    slices: &[Value],
    max_rows: usize,
) -> Vec<String> {
    let mut out = vec![format!("  {name} — {about}")];
    match ep {
        None => out.push("    Endpoints: none".into()),
        Some(ep) => {
            let (r, n) = endpoint_counts(ep);
            let p = ep["subsets"]
                .as_array()
                .and_then(|a| a.first())
                .map(|s0| ports(&s0["ports"]));
            out.push(format!(
                "    Endpoints {name}: {r} ready, {n} not ready; ports {}",
                p.unwrap_or_else(|| "<none>".into())
            ));
        }
    }
    for sl in slices {
        let eps = slice_endpoints(sl);
        out.push(format!(
            "    EndpointSlice {:<18} {:<5} {:<16} {} endpoints",
            s(&sl["metadata"]["name"]),
            s(&sl["addressType"]),
            ports(&sl["ports"]),
            eps.len()
        ));
        if eps.len() <= max_rows {
            out.extend(eps.iter().map(endpoint_line));
        } else {
            let ready = eps
                .iter()
                .filter(|e| e["conditions"]["ready"] == true)
                .count();
            out.push(format!(
                "      ({ready} ready, {} not ready)",
                eps.len() - ready
            ));
        }
    }
    out
}

/// Milliseconds with one decimal, or "-".
pub fn ms(d: Option<Duration>) -> String {
    d.map_or_else(
        || "-".into(),
        |d| format!("{:.1} ms", d.as_secs_f64() * 1000.0),
    )
}

/// Mebibytes with one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_slices_like_kubectl_wide() {
        let sl = json!({"metadata": {"name": "web-abcde"}, "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": [
                {"addresses": ["10.0.0.1"], "conditions": {"ready": true, "serving": true, "terminating": false},
                 "nodeName": "edge-1", "zone": "zone-a", "hints": {"forZones": [{"name": "zone-a"}]}},
                {"addresses": ["10.0.0.2"], "conditions": {"ready": false, "serving": true, "terminating": true},
                 "nodeName": "edge-2", "zone": "zone-a"}]});
        let ep = json!({"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]});
        let lines = service_table(
            "web",
            "a plain web service",
            Some(&ep),
            std::slice::from_ref(&sl),
            5,
        );
        assert_eq!(
            lines[1],
            "    Endpoints web: 1 ready, 0 not ready; ports http:8080/TCP"
        );
        assert!(
            lines[2].starts_with("    EndpointSlice web-abcde"),
            "{}",
            lines[2]
        );
        assert!(
            lines[3].contains("ready") && lines[3].ends_with("edge-1/zone-a hint→zone-a"),
            "{}",
            lines[3]
        );
        assert!(
            lines[4].contains("not-ready,serving,terminating"),
            "{}",
            lines[4]
        );
        assert!(lines.iter().all(|l| l.chars().count() <= 80), "{lines:#?}");
        let summary = service_table("web", "x", None, &[sl], 1);
        assert_eq!(summary[1], "    Endpoints: none");
        assert_eq!(summary[3], "      (1 ready, 1 not ready)");
        assert_eq!(ports(&json!([])), "<none>");
        assert_eq!(ms(Some(Duration::from_micros(4_150))), "4.2 ms");
    }
}
