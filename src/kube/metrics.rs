//! Client request metrics with client-go's names:
//! `rest_client_requests_total{verb,resource,code}` and
//! `rest_client_request_duration_seconds{verb,resource}`.
//!
//! Several clients may share one registry (KCM gives each controller its
//! own client); the families are registered once per registry and shared,
//! so the exposition never repeats a family. Must never label by object
//! name or anything else unbounded.

use crate::metrics::{exponential_buckets, Counter, Family, Histogram, Registry};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

const REQUESTS: &str = "rest_client_requests_total";

/// The client's metric families in one registry.
#[derive(Debug)]
pub(crate) struct Metrics {
    requests: Arc<Family<Counter>>,
    duration: Arc<Family<Histogram>>,
    body_errors: Arc<Family<Counter>>,
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
                "API requests by verb, resource and HTTP code (<error> for transport failures).",
                &["verb", "resource", "code"],
            ),
            duration: r.histogram(
                "rest_client_request_duration_seconds",
                "API request latency until response headers, by verb and resource.",
                &["verb", "resource"],
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

    /// Count one rejected response body.
    pub(crate) fn body_error(&self, verb: &str, resource: &str, kind: &str) {
        self.body_errors.with(&[verb, resource, kind]).inc();
    }

    /// Count one request and observe its latency.
    pub(crate) fn record(&self, verb: &str, resource: &str, code: &str, secs: f64) {
        self.requests.with(&[verb, resource, code]).inc();
        self.duration.with(&[verb, resource]).observe(secs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_registered_once_per_registry() {
        let r = Registry::new();
        let a = Metrics::for_registry(&r);
        let b = Metrics::for_registry(&r);
        a.record("get", "pods", "200", 0.01);
        b.record("get", "pods", "200", 0.02);
        let out = r.render();
        assert_eq!(
            out.matches("# TYPE rest_client_requests_total counter")
                .count(),
            1
        );
        assert!(
            out.contains(r#"rest_client_requests_total{verb="get",resource="pods",code="200"} 2"#),
            "{out}"
        );
        let other = Registry::new();
        Metrics::for_registry(&other).record("list", "nodes", "500", 0.1);
        assert!(other.render().contains(r#"code="500"} 1"#));
        assert!(!r.render().contains("nodes"));
    }
}
