//! Client request metrics with client-go's names and labels:
//! `rest_client_requests_total{code,method,host}` and
//! `rest_client_request_duration_seconds{verb,host}`, where `method` and
//! `verb` are the HTTP method in upper case (`GET`, `POST`, `PUT`,
//! `PATCH`, `DELETE`) and `host` is the server's `host[:port]`, as
//! client-go sets them, so that kube-controller-manager dashboards and
//! alerts (kubernetes-mixin: `code=~"2.."`, `verb="POST"`, `by (verb, le)`)
//! work unchanged. Both carry one label more, `resource` (`plural` or
//! `plural.group`): an extra label changes no `sum`/`sum by` query.
//!
//! Several clients may share one registry (KCM gives each controller its
//! own client); the families are registered once per registry and shared,
//! so the exposition never repeats a family. Must never label by object
//! name or anything else unbounded.
//!
//! The children a request updates are resolved once per (verb, resource,
//! code) by each client ([`ClientMetrics`]: one server, one host) and kept
//! in a small map with a cheap hash (the keys are our own constants, not
//! outside data): a request costs two atomic adds, not two label-vector
//! allocations and lookups.

use super::request::Resource;
use super::retry::Verb;
use crate::metrics::{exponential_buckets, Counter, Family, Histogram, Registry};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

const REQUESTS: &str = "rest_client_requests_total";

/// The client metric families in one registry.
#[derive(Debug)]
pub(crate) struct Metrics {
    requests: Arc<Family<Counter>>,
    duration: Arc<Family<Histogram>>,
    body_errors: Arc<Family<Counter>>,
}

/// One client's view of the families: its server's `host` label and the
/// children it resolved.
#[derive(Debug)]
pub(crate) struct ClientMetrics {
    families: Arc<Metrics>,
    host: String,
    /// Resolved children by (verb, resource, HTTP code; 0: `<error>`).
    handles: RwLock<HandleMap>,
}

/// The HTTP method of `verb`: client-go's `method` and `verb` label.
fn method(verb: Verb) -> &'static str {
    match verb {
        Verb::Get | Verb::List | Verb::Watch => "GET",
        Verb::Create => "POST",
        Verb::Update => "PUT",
        Verb::Patch => "PATCH",
        Verb::Delete => "DELETE",
    }
}

/// client-go's `host` label: the server URL's `host[:port]` (never its
/// user information).
pub(crate) fn host_label(server: &ureq::http::Uri) -> String {
    server
        .authority()
        .map(|a| {
            let a = a.as_str();
            a.rsplit_once('@').map_or(a, |(_, h)| h).to_string()
        })
        .unwrap_or_default()
}

/// Children by (verb, resource, code), hashed with [`FxHasher`].
type HandleMap = HashMap<(Verb, Resource, u16), Handles, BuildHasherDefault<FxHasher>>;

/// The children one (verb, resource, code) updates.
#[derive(Debug)]
struct Handles {
    requests: Arc<Counter>,
    duration: Arc<Histogram>,
}

/// FxHash (rustc's): a multiply and a rotate per word. Only for keys we
/// make ourselves (never outside data: no HashDoS concern).
#[derive(Default)]
pub(crate) struct FxHasher(u64);

impl FxHasher {
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Families already registered, by registry address. An entry is only
/// trusted while that registry still exposes the family (a dropped
/// registry's address may be reused by a new, empty one).
fn registered() -> &'static Mutex<HashMap<usize, Arc<Metrics>>> {
    static R: OnceLock<Mutex<HashMap<usize, Arc<Metrics>>>> = OnceLock::new();
    R.get_or_init(|| Mutex::new(HashMap::new()))
}

impl Metrics {
    /// The families in `r`, registering them on first use.
    pub(crate) fn for_registry(r: &Registry) -> Arc<Metrics> {
        let key = r as *const Registry as usize;
        let mut map = registered().lock().unwrap_or_else(|p| p.into_inner());
        let exposed = r.render().contains(&format!("# TYPE {REQUESTS} counter"));
        if let (true, Some(m)) = (exposed, map.get(&key)) {
            return Arc::clone(m);
        }
        let m = Arc::new(Metrics {
            requests: r.counter(
                REQUESTS,
                "Number of HTTP requests, partitioned by status code (<error> for transport failures), method, host and resource.",
                &["code", "method", "host", "resource"],
            ),
            duration: r.histogram(
                "rest_client_request_duration_seconds",
                "Request latency in seconds until response headers, by verb (the HTTP method), host and resource.",
                &["verb", "host", "resource"],
                exponential_buckets(0.001, 2.0, 15),
            ),
            body_errors: r.counter(
                "endpointd_client_response_body_errors_total",
                "Response bodies rejected: kind=too_large (over kubernetes.max_response_bytes or max_list_items), cut_off, undecodable.",
                &["verb", "resource", "kind"],
            ),
        });
        map.insert(key, Arc::clone(&m));
        m
    }
}

impl ClientMetrics {
    /// The families in `r` (registered on first use) for a client of the
    /// server at `host`.
    pub(crate) fn new(r: &Registry, host: String) -> ClientMetrics {
        ClientMetrics {
            families: Metrics::for_registry(r),
            host,
            handles: RwLock::new(HashMap::default()),
        }
    }

    /// Count one rejected response body.
    pub(crate) fn body_error(&self, verb: Verb, resource: &Resource, kind: &str) {
        self.families
            .body_errors
            .with(&[verb.as_str(), &resource.label(), kind])
            .inc();
    }

    /// Count one request and observe its latency; `code` `None` for a
    /// transport failure (`<error>`).
    pub(crate) fn record(&self, verb: Verb, resource: &Resource, code: Option<u16>, secs: f64) {
        let key = (verb, *resource, code.unwrap_or(0));
        {
            let map = self.handles.read().unwrap_or_else(|p| p.into_inner());
            if let Some(h) = map.get(&key) {
                h.requests.inc();
                h.duration.observe(secs);
                return;
            }
        }
        let label = resource.label();
        let code = match code {
            Some(c) => c.to_string(),
            None => "<error>".to_string(),
        };
        let (m, host) = (method(verb), self.host.as_str());
        let h = Handles {
            requests: self.families.requests.with(&[&code, m, host, &label]),
            duration: self.families.duration.with(&[m, host, &label]),
        };
        h.requests.inc();
        h.duration.observe(secs);
        self.handles
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .entry(key)
            .or_insert(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::request::{NODES, PODS};

    #[test]
    fn families_are_registered_once_per_registry() {
        let r = Registry::new();
        let a = ClientMetrics::new(&r, "10.0.0.1:6443".into());
        let b = ClientMetrics::new(&r, "10.0.0.1:6443".into());
        a.record(Verb::Get, &PODS, Some(200), 0.01);
        b.record(Verb::Get, &PODS, Some(200), 0.02);
        b.record(Verb::List, &PODS, Some(200), 0.02);
        let out = r.render();
        assert_eq!(
            out.matches("# TYPE rest_client_requests_total counter")
                .count(),
            1
        );
        // get and list are both GET: one series.
        assert!(
            out.contains(r#"rest_client_requests_total{code="200",method="GET",host="10.0.0.1:6443",resource="pods"} 3"#),
            "{out}"
        );
        let other = Registry::new();
        let m = ClientMetrics::new(&other, "api.example:443".into());
        m.record(Verb::List, &NODES, Some(500), 0.1);
        m.record(Verb::List, &NODES, None, 0.1);
        m.record(Verb::List, &NODES, None, 0.1);
        let out = other.render();
        assert!(out.contains(r#"code="500",method="GET""#), "{out}");
        assert!(
            out.contains(
                r#"code="<error>",method="GET",host="api.example:443",resource="nodes"} 2"#
            ),
            "{out}"
        );
        assert!(
            out.contains(
                r#"rest_client_request_duration_seconds_count{verb="GET",host="api.example:443",resource="nodes"} 3"#
            ),
            "{out}"
        );
        assert!(!r.render().contains("nodes"));
    }

    #[test]
    fn writes_are_labelled_with_their_http_method() {
        let r = Registry::new();
        let m = ClientMetrics::new(&r, "h:1".into());
        for (v, want) in [
            (Verb::Create, "POST"),
            (Verb::Update, "PUT"),
            (Verb::Patch, "PATCH"),
            (Verb::Delete, "DELETE"),
            (Verb::Watch, "GET"),
        ] {
            m.record(v, &PODS, Some(201), 0.01);
            let out = r.render();
            assert!(
                out.contains(&format!(r#"method="{want}""#)),
                "{want}: {out}"
            );
            assert!(
                out.contains(&format!(r#"{{verb="{want}",host="h:1""#)),
                "{want}: {out}"
            );
        }
    }

    #[test]
    fn the_host_label_is_host_and_port_without_user_information() {
        let uri = |s: &str| s.parse::<ureq::http::Uri>().expect("uri");
        assert_eq!(host_label(&uri("https://10.0.0.1:6443")), "10.0.0.1:6443");
        assert_eq!(host_label(&uri("https://u:p@api.example/")), "api.example");
        assert_eq!(host_label(&uri("https://[::1]:6443")), "[::1]:6443");
    }
}
