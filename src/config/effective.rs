//! The effective configuration as it is printed (`check-config`) and
//! compared (SIGHUP): every value in its TOML form, durations as strings.

use super::{format_duration, Config};
use serde::Serialize;
use std::collections::BTreeMap;

impl Effective {
    /// The printable form of `c`.
    pub(super) fn of(c: &Config) -> Effective {
        let k = &c.kubernetes;
        let le = &c.leader_election;
        let ep = &c.endpoints;
        let es = &c.endpointslices;
        Effective {
            kubernetes: EffKubernetes {
                kubeconfig: k.kubeconfig.as_ref().map(|p| p.display().to_string()),
                context: k.context.clone(),
                qps: k.qps,
                burst: k.burst,
                request_timeout: format_duration(k.request_timeout),
                watch_list: k.watch_list,
                max_response_bytes: k.max_response_bytes,
                max_list_items: k.max_list_items,
                watch_idle_timeout: format_duration(k.watch_idle_timeout),
            },
            leader_election: EffLeaderElection {
                enabled: le.enabled,
                lease_namespace: le.lease_namespace.clone(),
                lease_name: le.lease_name.clone(),
                identity: le.identity.clone(),
                lease_duration: format_duration(le.lease_duration),
                renew_deadline: format_duration(le.renew_deadline),
                retry_period: format_duration(le.retry_period),
                heartbeat_duration: format_duration(le.heartbeat_duration),
            },
            endpoints: EffEndpoints {
                enabled: ep.enabled,
                workers: ep.workers,
                batch_period: format_duration(ep.batch_period),
            },
            endpointslices: EffEndpointSlices {
                enabled: es.enabled,
                workers: es.workers,
                max_endpoints_per_slice: es.max_endpoints_per_slice,
                batch_period: format_duration(es.batch_period),
            },
            server: EffServer {
                listen: c.server.listen.map(|a| a.to_string()).unwrap_or_default(),
            },
            log: EffLog {
                level: c.log.level.to_string().to_ascii_lowercase(),
            },
            mode: EffMode {
                shadow: c.mode.shadow,
            },
        }
    }
}

/// `section.key` → TOML value text.
pub(super) fn flatten(e: &Effective) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Ok(toml::Value::Table(t)) = toml::Value::try_from(e) {
        for (section, v) in t {
            if let toml::Value::Table(inner) = v {
                for (k, v) in inner {
                    out.insert(format!("{section}.{k}"), v.to_string());
                }
            }
        }
    }
    out
}

#[derive(Serialize)]
pub(super) struct Effective {
    kubernetes: EffKubernetes,
    leader_election: EffLeaderElection,
    endpoints: EffEndpoints,
    endpointslices: EffEndpointSlices,
    server: EffServer,
    log: EffLog,
    mode: EffMode,
}

#[derive(Serialize)]
struct EffMode {
    shadow: bool,
}

#[derive(Serialize)]
struct EffKubernetes {
    #[serde(skip_serializing_if = "Option::is_none")]
    kubeconfig: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    context: Option<String>,
    qps: f64,
    burst: u32,
    request_timeout: String,
    watch_list: bool,
    max_response_bytes: u64,
    max_list_items: usize,
    watch_idle_timeout: String,
}

#[derive(Serialize)]
struct EffLeaderElection {
    enabled: bool,
    lease_namespace: String,
    lease_name: String,
    identity: String,
    lease_duration: String,
    renew_deadline: String,
    retry_period: String,
    heartbeat_duration: String,
}

#[derive(Serialize)]
struct EffEndpoints {
    enabled: bool,
    workers: usize,
    batch_period: String,
}

#[derive(Serialize)]
struct EffEndpointSlices {
    enabled: bool,
    workers: usize,
    max_endpoints_per_slice: u32,
    batch_period: String,
}

#[derive(Serialize)]
struct EffServer {
    listen: String,
}

#[derive(Serialize)]
struct EffLog {
    level: String,
}
