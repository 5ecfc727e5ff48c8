//! The convergence check of the fault tests: every Service's Endpoints and
//! EndpointSlices hold exactly its pods — no missing, extra or stale
//! endpoint, readiness right, no endpoint in two slices, no slice of a
//! Service that is gone; over 1000 addresses, the Endpoints truncated as
//! upstream truncates them.

use super::Cluster;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Most addresses an Endpoints object holds (upstream `maxCapacity`).
const MAX_ENDPOINTS: usize = 1000;

fn s<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

/// (ready IPs, not-ready IPs) a Service should list.
fn wanted(svc: &Value, pods: &[Value]) -> (BTreeSet<String>, BTreeSet<String>) {
    let ns = s(svc, "/metadata/namespace");
    let sel = svc["spec"]["selector"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut ready = BTreeSet::new();
    let mut not_ready = BTreeSet::new();
    for p in pods {
        if s(p, "/metadata/namespace") != ns
            || !sel.iter().all(|(k, v)| p["metadata"]["labels"][k] == *v)
            || p.pointer("/metadata/deletionTimestamp")
                .is_some_and(|d| !d.is_null())
            || matches!(s(p, "/status/phase"), "Succeeded" | "Failed")
        {
            continue;
        }
        let ip = s(p, "/status/podIP");
        if ip.is_empty() {
            continue;
        }
        let is_ready = p["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
        match is_ready {
            true => ready.insert(ip.to_string()),
            false => not_ready.insert(ip.to_string()),
        };
    }
    (ready, not_ready)
}

impl Cluster {
    /// `Ok` when every managed object is exactly right, else what is not.
    pub fn converged(&self) -> Result<(), String> {
        let services = self.all("services");
        let pods = self.all("pods");
        let endpoints = self.all("endpoints");
        let slices = self.all("endpointslices");
        let mut problems = Vec::new();
        let mut managed = BTreeSet::new();
        for svc in &services {
            if !svc["spec"]["selector"].is_object() || s(svc, "/spec/type") == "ExternalName" {
                continue;
            }
            let (ns, name) = (s(svc, "/metadata/namespace"), s(svc, "/metadata/name"));
            managed.insert(format!("{ns}/{name}"));
            let (want_ready, want_not) = wanted(svc, &pods);
            // Endpoints.
            match endpoints
                .iter()
                .find(|e| s(e, "/metadata/namespace") == ns && s(e, "/metadata/name") == name)
            {
                None => problems.push(format!("{ns}/{name}: no Endpoints")),
                Some(ep) => {
                    let mut ready = BTreeSet::new();
                    let mut not = BTreeSet::new();
                    for sub in ep["subsets"].as_array().into_iter().flatten() {
                        for a in sub["addresses"].as_array().into_iter().flatten() {
                            ready.insert(s(a, "/ip").to_string());
                        }
                        for a in sub["notReadyAddresses"].as_array().into_iter().flatten() {
                            not.insert(s(a, "/ip").to_string());
                        }
                    }
                    let over = want_ready.len() + want_not.len() > MAX_ENDPOINTS;
                    let marked = ep["metadata"]["annotations"]
                        ["endpoints.kubernetes.io/over-capacity"]
                        == "truncated";
                    if over {
                        // Upstream's truncation: 1000 addresses, ready ones
                        // first, annotated over-capacity.
                        let right = ready.is_subset(&want_ready)
                            && not.is_subset(&want_not)
                            && ready.len() + not.len() == MAX_ENDPOINTS
                            && ready.len() == want_ready.len().min(MAX_ENDPOINTS)
                            && marked;
                        if !right {
                            problems.push(format!(
                                "{ns}/{name}: over capacity, Endpoints hold {} ready + {} not ready (annotated: {marked}), want {} of {} ready + {} not ready",
                                ready.len(),
                                not.len(),
                                MAX_ENDPOINTS,
                                want_ready.len(),
                                want_not.len()
                            ));
                        }
                    } else if ready != want_ready || not != want_not || marked {
                        problems.push(format!(
                            "{ns}/{name}: Endpoints ready {ready:?} not-ready {not:?}, want {want_ready:?} / {want_not:?}"
                        ));
                    }
                }
            }
            // Slices: each endpoint exactly once, with the right readiness.
            let mut seen: BTreeMap<String, bool> = BTreeMap::new();
            for sl in slices.iter().filter(|x| {
                s(x, "/metadata/namespace") == ns
                    && x["metadata"]["labels"]["kubernetes.io/service-name"] == name
                    && x["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"]
                        == "endpointslice-controller.k8s.io"
            }) {
                for e in sl["endpoints"].as_array().into_iter().flatten() {
                    let ip = e["addresses"][0].as_str().unwrap_or("").to_string();
                    let ready = e["conditions"]["ready"].as_bool().unwrap_or(false);
                    if seen.insert(ip.clone(), ready).is_some() {
                        problems.push(format!("{ns}/{name}: {ip} in two slices"));
                    }
                }
            }
            let want: BTreeMap<String, bool> = want_ready
                .iter()
                .map(|i| (i.clone(), true))
                .chain(want_not.iter().map(|i| (i.clone(), false)))
                .collect();
            if seen != want {
                let missing: Vec<_> = want.keys().filter(|k| !seen.contains_key(*k)).collect();
                let extra: Vec<_> = seen.keys().filter(|k| !want.contains_key(*k)).collect();
                let wrong: Vec<_> = want
                    .iter()
                    .filter(|(k, v)| seen.get(*k).is_some_and(|r| r != *v))
                    .map(|(k, _)| k)
                    .collect();
                problems.push(format!(
                    "{ns}/{name}: slices missing {missing:?}, extra {extra:?}, wrong readiness {wrong:?}"
                ));
            }
        }
        for sl in &slices {
            let svc = format!(
                "{}/{}",
                s(sl, "/metadata/namespace"),
                sl["metadata"]["labels"]["kubernetes.io/service-name"]
                    .as_str()
                    .unwrap_or("")
            );
            let ours = sl["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"]
                == "endpointslice-controller.k8s.io";
            if ours && !managed.contains(&svc) {
                problems.push(format!("stale slice {} of {svc}", s(sl, "/metadata/name")));
            }
        }
        match problems.is_empty() {
            true => Ok(()),
            false => Err(problems.join("\n")),
        }
    }

    /// Wait until [`Cluster::converged`] holds; the time it took, or panic
    /// with the last problems.
    pub fn wait_converged(&self, limit: std::time::Duration) -> std::time::Duration {
        let start = std::time::Instant::now();
        loop {
            match self.converged() {
                Ok(()) => return start.elapsed(),
                Err(e) if start.elapsed() > limit => {
                    panic!("not converged after {limit:?}:\n{e}")
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(50)),
            }
        }
    }
}
