//! The reads of `endpointd preflight`: the kubeconfig's file and
//! credentials, one SelfSubjectAccessReview per permission, `/version` and
//! the server's `Date`, the lease namespace and the election Lease, the
//! Services' trafficDistribution, and the managedFields of Endpoints and
//! EndpointSlices. Must never write: the reviews are POSTs, but the API
//! server stores nothing for them.
//!
//! `/version` and `Date` are outside what `kube::Client` can ask (it
//! addresses resources and hides response headers), so this module makes
//! that one GET itself with ureq, from the same kubeconfig material (CA,
//! client certificate, insecure flag, token or basic auth). It does not
//! follow `proxy-url` or `tls-server-name` and needs a CA (or the insecure
//! flag): without them those two checks say they were skipped.

use super::checks::{
    DateSample, Fetch, FetchError, KubeconfigFacts, LatestWrite, LeaseRecord, PreflightInputs,
    Review, ServerVersion, Settings,
};
use super::permissions::{Permission, Scope, PERMISSIONS};
use crate::config::Config;
use endpointd_base::clock::SharedClock;
use endpointd_kube::kube::paging::{Paging, DEFAULT_MAX_LIST_PAGES};
use endpointd_kube::kube::{
    Auth, Client, ClientConfig, ListParams, Resource, ENDPOINTS, ENDPOINTSLICES, LEASES,
    NAMESPACES, SERVICES,
};
use endpointd_kube::model::{DynamicObject, Labels, Lease, Namespace, Object, Service, UidStr};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

/// authorization.k8s.io/v1 selfsubjectaccessreviews.
pub const SELF_SUBJECT_ACCESS_REVIEWS: Resource = Resource {
    group: "authorization.k8s.io",
    version: "v1",
    plural: "selfsubjectaccessreviews",
    namespaced: false,
};

/// The label of the EndpointSlices the endpointslice controller owns.
const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io";

/// Most bytes of a `/version` answer read.
const MAX_VERSION_BODY: u64 = 1 << 20;

/// The election settings the checks use.
pub fn settings(cfg: &Config) -> Settings {
    let le = &cfg.leader_election;
    Settings {
        election: le.enabled,
        lease_namespace: le.lease_namespace.clone(),
        lease_name: le.lease_name.clone(),
        lease_duration: le.lease_duration,
        renew_deadline: le.renew_deadline,
        watch_list: cfg.kubernetes.watch_list,
    }
}

/// The kubeconfig's file mode, TLS settings and token.
pub fn kubeconfig_facts(
    path: Option<PathBuf>,
    cc: &ClientConfig,
    clock: &SharedClock,
) -> KubeconfigFacts {
    use std::os::unix::fs::PermissionsExt;
    let mode = path
        .as_ref()
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| m.permissions().mode());
    let (token, from_file) = match &cc.auth {
        Auth::Bearer(t) => (Some(t.to_string()), false),
        Auth::TokenFile(f) => (f.token(clock).ok().map(|t| t.to_string()), true),
        _ => (None, false),
    };
    KubeconfigFacts {
        path: path.map(|p| p.display().to_string()),
        mode,
        server: cc.server.clone(),
        insecure: cc.tls.insecure,
        sends_secret: !matches!(cc.auth, Auth::None),
        token,
        token_from_file: from_file,
    }
}

/// Why the direct GET failed.
#[derive(Debug)]
enum RawError {
    /// Not attempted.
    Skipped(String),
    /// The server could not be reached.
    Unreachable(String),
    /// It answered, but not usefully.
    Answer(String),
}

impl std::fmt::Display for RawError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RawError::Skipped(m) => write!(f, "skipped: {m}"),
            RawError::Unreachable(m) => write!(f, "the API server is unreachable: {m}"),
            RawError::Answer(m) => f.write_str(m),
        }
    }
}

fn tls_config(cc: &ClientConfig) -> Result<ureq::tls::TlsConfig, RawError> {
    use ureq::tls::{parse_pem, ClientCert, PemItem, PrivateKey, RootCerts, TlsConfig};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut b = TlsConfig::builder().unversioned_rustls_crypto_provider(provider);
    let certs = |pem: &[u8]| -> Vec<ureq::tls::Certificate<'static>> {
        parse_pem(pem)
            .filter_map(|i| match i {
                Ok(PemItem::Certificate(c)) => Some(c),
                _ => None,
            })
            .collect()
    };
    if cc.tls.insecure {
        b = b.disable_verification(true);
    }
    match &cc.tls.ca_pem {
        Some(ca) => b = b.root_certs(RootCerts::new_with_certs(&certs(ca))),
        None if cc.tls.insecure => {}
        None if cc.server.starts_with("https://") => {
            return Err(RawError::Skipped(
                "the kubeconfig names no certificate-authority".into(),
            ))
        }
        None => {}
    }
    if let (Some(c), Some(k)) = (&cc.tls.client_cert_pem, &cc.tls.client_key_pem) {
        let key =
            PrivateKey::from_pem(k).map_err(|e| RawError::Skipped(format!("client-key: {e}")))?;
        b = b.client_cert(Some(ClientCert::new_with_certs(&certs(c), key)));
    }
    Ok(b.build())
}

/// GET `/version` directly; the version and the `Date` sample.
fn version_and_date(
    cc: &ClientConfig,
    clock: &SharedClock,
) -> Result<(ServerVersion, Option<DateSample>), RawError> {
    if cc.proxy_url.is_some() {
        return Err(RawError::Skipped("the kubeconfig sets proxy-url".into()));
    }
    if cc.tls.server_name.is_some() {
        return Err(RawError::Skipped(
            "the kubeconfig sets tls-server-name".into(),
        ));
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .tls_config(tls_config(cc)?)
        .http_status_as_error(false)
        .timeout_global(Some(cc.request_timeout))
        .user_agent(cc.user_agent.as_str())
        .build()
        .into();
    let url = format!("{}/version", cc.server.trim_end_matches('/'));
    let mut req = agent.get(&url).header("Accept", "application/json");
    let auth = cc
        .auth
        .header(clock)
        .map_err(|e| RawError::Skipped(format!("credentials: {e}")))?;
    if let Some(h) = &auth {
        req = req.header("Authorization", h);
    }
    let sent = clock.wall();
    let mut resp = req
        .call()
        .map_err(|e| RawError::Unreachable(e.to_string()))?;
    let received = clock.wall();
    let date = resp
        .headers()
        .get("date")
        .and_then(|v| v.to_str().ok())
        .and_then(parse_http_date)
        .map(|server| DateSample {
            sent,
            received,
            server,
        });
    let status = resp.status().as_u16();
    let body = resp
        .body_mut()
        .with_config()
        .limit(MAX_VERSION_BODY)
        .read_to_string()
        .map_err(|e| RawError::Answer(format!("reading /version: {e}")))?;
    if status != 200 {
        return Err(RawError::Answer(format!("/version answered {status}")));
    }
    let v: Value = serde_json::from_str(&body)
        .map_err(|e| RawError::Answer(format!("/version is not JSON: {e}")))?;
    Ok((parse_version(&v)?, date))
}

fn parse_version(v: &Value) -> Result<ServerVersion, RawError> {
    let num = |f: &str| -> Option<u32> {
        let s = v.get(f)?.as_str()?;
        let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    match (num("major"), num("minor")) {
        (Some(major), Some(minor)) => Ok(ServerVersion {
            major,
            minor,
            git_version: v
                .get("gitVersion")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        }),
        _ => Err(RawError::Answer(format!(
            "/version has no numeric major and minor: {v}"
        ))),
    }
}

/// An HTTP `Date` (IMF-fixdate).
pub fn parse_http_date(s: &str) -> Option<SystemTime> {
    let s = s.trim().strip_suffix(" GMT")?;
    let ts = jiff::Timestamp::strptime("%a, %d %b %Y %H:%M:%S %z", format!("{s} +0000")).ok()?;
    Some(SystemTime::from(ts))
}

/// One SelfSubjectAccessReview.
fn review(client: &Client, p: &Permission, lease_ns: &str) -> Fetch<Review> {
    let (resource, sub) = p.split();
    let namespace = match p.scope {
        Scope::Cluster => "",
        Scope::LeaseNamespace => lease_ns,
    };
    let body = DynamicObject::from_value(json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {
            "namespace": namespace, "verb": p.verb, "group": p.group,
            "resource": resource, "subresource": sub}},
    }))
    .map_err(|e| FetchError::Body(Arc::new(e)))?;
    let got = client.create(&SELF_SUBJECT_ACCESS_REVIEWS, None, &body)?;
    let status = got.rest.get("status");
    let allowed = status
        .and_then(|s| s.get("allowed"))
        .and_then(Value::as_bool)
        .ok_or(FetchError::NoAllowed)?;
    Ok(Review {
        allowed,
        reason: status
            .and_then(|s| s.get("reason"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    })
}

/// An object's name and latest managedFields write, nothing else.
#[derive(Clone, Debug, Deserialize)]
#[serde(from = "WrittenWire")]
pub struct Written {
    key: String,
    name: String,
    namespace: String,
    resource_version: String,
    labels: Labels,
    latest: Option<(String, SystemTime)>,
}

#[derive(Deserialize)]
struct WrittenWire {
    #[serde(default)]
    metadata: WrittenMeta,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WrittenMeta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    resource_version: String,
    #[serde(default)]
    managed_fields: Option<Vec<ManagedEntry>>,
}

#[derive(Deserialize)]
struct ManagedEntry {
    #[serde(default)]
    manager: Option<String>,
    #[serde(default)]
    time: Option<String>,
}

impl From<WrittenWire> for Written {
    fn from(w: WrittenWire) -> Written {
        let m = w.metadata;
        let latest = m
            .managed_fields
            .unwrap_or_default()
            .into_iter()
            .filter_map(|e| {
                let t = e.time?.parse::<jiff::Timestamp>().ok()?;
                Some((e.manager?, SystemTime::from(t)))
            })
            .max_by_key(|(_, t)| *t);
        Written {
            key: format!("{}/{}", m.namespace, m.name),
            name: m.name,
            namespace: m.namespace,
            resource_version: m.resource_version,
            labels: Labels::default(),
            latest,
        }
    }
}

impl Object for Written {
    fn name(&self) -> &str {
        &self.name
    }
    fn namespace(&self) -> Option<&str> {
        Some(&self.namespace)
            .filter(|n| !n.is_empty())
            .map(|n| n.as_str())
    }
    fn resource_version(&self) -> &str {
        &self.resource_version
    }
    fn uid(&self) -> UidStr<'_> {
        UidStr::from("")
    }
    fn labels(&self) -> &Labels {
        &self.labels
    }
}

/// Every object of `r` (all namespaces, all pages, within `max_items`).
fn list_all<T: Object>(
    client: &Client,
    r: &Resource,
    label_selector: Option<&str>,
    field_selector: Option<String>,
    max_items: usize,
) -> Fetch<Vec<T>> {
    let mut out = Vec::new();
    let mut cont = None;
    let mut paging = Paging::new(max_items, DEFAULT_MAX_LIST_PAGES);
    loop {
        let p = ListParams {
            label_selector: label_selector.map(str::to_string),
            field_selector: field_selector.clone(),
            limit: Some(500),
            continue_token: cont.take(),
            ..ListParams::default()
        };
        let page = client.list::<T>(r, None, &p)?;
        let n = page.items.len();
        out.extend(page.items);
        match paging.page(n, page.continue_token) {
            Ok(Some(c)) => cont = Some(c),
            Ok(None) => return Ok(out),
            Err(source) => {
                return Err(FetchError::Paging {
                    resource: r.label().to_string(),
                    source,
                })
            }
        }
    }
}

fn latest_writes(
    client: &Client,
    r: &Resource,
    label_selector: Option<&str>,
    max_items: usize,
) -> Fetch<Vec<LatestWrite>> {
    let objs: Vec<Written> = list_all(client, r, label_selector, None, max_items)?;
    Ok(objs
        .into_iter()
        .filter_map(|o| {
            let (manager, time) = o.latest?;
            Some(LatestWrite {
                key: o.key,
                manager,
                time,
            })
        })
        .collect())
}

/// Read everything the checks need. `client` is the configured client;
/// `cc` the same kubeconfig loaded once more for its TLS material and
/// credentials; `path` the kubeconfig file (`None`: in-cluster).
pub fn fetch(
    cfg: &Config,
    client: &Client,
    cc: &ClientConfig,
    path: Option<PathBuf>,
    clock: &SharedClock,
) -> PreflightInputs {
    let settings = settings(cfg);
    let kubeconfig = kubeconfig_facts(path, cc, clock);
    let raw = version_and_date(cc, clock);
    let (version, date) = match &raw {
        Ok((v, d)) => (Ok(v.clone()), Ok(*d)),
        Err(e) => (
            Err(FetchError::Reason(e.to_string())),
            Err(FetchError::Reason(e.to_string())),
        ),
    };
    let max = cfg.kubernetes.max_list_items;
    let mut inputs = PreflightInputs {
        now: clock.wall(),
        settings,
        kubeconfig,
        permissions: Vec::new(),
        version,
        date,
        lease_namespace: Err("".into()),
        lease: Err("".into()),
        traffic_distribution: Err("".into()),
        endpoints_writes: Err("".into()),
        slice_writes: Err("".into()),
    };
    if let Err(RawError::Unreachable(e)) = &raw {
        // Every other read would wait out its timeout and retries too.
        let why = FetchError::Reason(format!("not checked: the API server is unreachable ({e})"));
        inputs.permissions = PERMISSIONS.iter().map(|p| (*p, Err(why.clone()))).collect();
        inputs.lease_namespace = Err(why.clone());
        inputs.lease = Err(why.clone());
        inputs.traffic_distribution = Err(why.clone());
        inputs.endpoints_writes = Err(why.clone());
        inputs.slice_writes = Err(why);
        return inputs;
    }
    let s = &inputs.settings;
    inputs.permissions = PERMISSIONS
        .iter()
        .map(|p| (*p, review(client, p, &s.lease_namespace)))
        .collect();
    inputs.lease_namespace = list_all::<Namespace>(
        client,
        &NAMESPACES,
        None,
        Some(format!("metadata.name={}", s.lease_namespace)),
        max,
    )
    .map(|l| l.iter().any(|n| n.name() == s.lease_namespace));
    inputs.lease = if s.election {
        match client.get::<Lease>(&LEASES, Some(&s.lease_namespace), &s.lease_name) {
            Ok(l) => Ok(Some(LeaseRecord {
                holder: l.spec.holder_identity.clone().unwrap_or_default(),
                renew_time: l.spec.renew_time.map(|t| t.to_system()),
                duration_seconds: l.spec.lease_duration_seconds,
            })),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        }
    } else {
        Ok(None)
    };
    inputs.traffic_distribution =
        list_all::<Service>(client, &SERVICES, None, None, max).map(|svcs| {
            let mut n: BTreeMap<String, usize> = BTreeMap::new();
            for s in &svcs {
                if let Some(t) = s.traffic_distribution.as_deref() {
                    *n.entry(t.to_string()).or_default() += 1;
                }
            }
            n.into_iter().collect()
        });
    inputs.endpoints_writes = latest_writes(client, &ENDPOINTS, None, max);
    inputs.slice_writes = latest_writes(client, &ENDPOINTSLICES, Some(MANAGED_BY), max);
    inputs.now = clock.wall();
    inputs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates_and_versions() {
        let t = parse_http_date("Thu, 01 Jan 2026 00:00:07 GMT").expect("date");
        assert_eq!(
            t.duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .ok(),
            Some(1_767_225_607)
        );
        assert!(parse_http_date("yesterday").is_none());
        assert!(parse_http_date("Thu, 01 Jan 2026 00:00:07 +0100").is_none());
        let v =
            parse_version(&json!({"major": "1", "minor": "33+", "gitVersion": "v1.33.2-gke.1"}))
                .expect("version");
        assert_eq!((v.major, v.minor), (1, 33));
        assert!(parse_version(&json!({"major": "", "minor": "x"})).is_err());
    }

    #[test]
    fn written_keeps_the_latest_managed_fields_entry() {
        let w: Written = serde_json::from_value(json!({"metadata": {"name": "web", "namespace": "default",
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "time": "2026-01-01T00:00:09Z"},
                {"manager": "endpointd", "operation": "Update", "time": "2026-01-01T00:00:05Z"},
                {"manager": "broken", "time": "not a time"}]},
            "subsets": [{"addresses": [{"ip": "10.0.0.1"}]}]}))
        .expect("parses");
        assert_eq!(w.key, "default/web");
        let (m, _) = w.latest.expect("latest");
        assert_eq!(m, "kube-controller-manager");
        let none: Written =
            serde_json::from_value(json!({"metadata": {"name": "x"}})).expect("parses");
        assert!(none.latest.is_none());
    }
}
