//! Client request metrics with client-go's names:
//! `rest_client_requests_total{verb,resource,code}` and
//! `rest_client_request_duration_seconds{verb,resource}`.
//!
//! Several clients may share one registry (KCM gives each controller its
//! own client); the families are registered once per registry and shared,
//! so the exposition never repeats a family. Must never label by object
//! name or anything else unbounded.
//!
//! The children a request updates are resolved once per (verb, resource,
//! code) and kept in a small map with a cheap hash (the keys are our own
//! constants, not outside data): a request costs two atomic adds, not two
//! label-vector allocations and lookups.

use super::request::Resource;
use super::retry::Verb;
use crate::metrics::{exponential_buckets, Counter, Family, Histogram, Registry};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

const REQUESTS: &str = "rest_client_requests_total";

/// The client's metric families in one registry.
#[derive(Debug)]
pub(crate) struct Metrics {
    requests: Arc<Family<Counter>>,
    duration: Arc<Family<Histogram>>,
    body_errors: Arc<Family<Counter>>,
    /// Resolved children by (verb, resource, HTTP code; 0: `<error>`).
    handles: RwLock<HandleMap>,
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
            handles: RwLock::new(HashMap::default()),
        });
        map.insert(key, Arc::clone(&m));
        m
    }

    /// Count one rejected response body.
    pub(crate) fn body_error(&self, verb: Verb, resource: &Resource, kind: &str) {
        self.body_errors
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
        let h = Handles {
            requests: self.requests.with(&[verb.as_str(), &label, &code]),
            duration: self.duration.with(&[verb.as_str(), &label]),
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
        let a = Metrics::for_registry(&r);
        let b = Metrics::for_registry(&r);
        a.record(Verb::Get, &PODS, Some(200), 0.01);
        b.record(Verb::Get, &PODS, Some(200), 0.02);
        b.record(Verb::Get, &PODS, Some(200), 0.02);
        let out = r.render();
        assert_eq!(
            out.matches("# TYPE rest_client_requests_total counter")
                .count(),
            1
        );
        assert!(
            out.contains(r#"rest_client_requests_total{verb="get",resource="pods",code="200"} 3"#),
            "{out}"
        );
        let other = Registry::new();
        let m = Metrics::for_registry(&other);
        m.record(Verb::List, &NODES, Some(500), 0.1);
        m.record(Verb::List, &NODES, None, 0.1);
        m.record(Verb::List, &NODES, None, 0.1);
        let out = other.render();
        assert!(out.contains(r#"code="500"} 1"#), "{out}");
        assert!(out.contains(r#"code="<error>"} 2"#), "{out}");
        assert!(
            out.contains(
                r#"rest_client_request_duration_seconds_count{verb="list",resource="nodes"} 3"#
            ),
            "{out}"
        );
        assert!(!r.render().contains("nodes"));
    }
}
