//! endpointd's own HTTP endpoint (`[server].listen`): `/metrics`
//! (Prometheus text), `/healthz` (liveness) and `/readyz` (readiness).
//!
//! Owns the routing of those three paths and the process metrics. It never
//! decides health itself: the daemon's supervisor sets readiness (with a
//! message saying why it is or is not ready) and liveness (a wedged worker,
//! a lease not renewed). Nothing here needs auth: it listens on loopback by
//! default and exposes no secret.

use endpointd_base::httpd::server::Server;
use endpointd_base::httpd::{Handler, Request, Response};
use endpointd_kube::metrics::{Registry, CONTENT_TYPE};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone)]
enum State {
    Ok(String),
    Failing(String),
}

/// Shared readiness: ready with a message ("leading", "standby; …"), or
/// not ready because of a reason.
#[derive(Debug, Clone)]
pub struct Readiness(Arc<Mutex<State>>);

impl Default for Readiness {
    fn default() -> Readiness {
        Readiness::not_ready("starting")
    }
}

impl Readiness {
    /// Not ready, for `reason`.
    pub fn not_ready(reason: &str) -> Readiness {
        Readiness(Arc::new(Mutex::new(State::Failing(reason.to_string()))))
    }
    /// Not ready for `Some(reason)`; ready (message "ok") for `None`.
    pub fn set(&self, reason: Option<&str>) {
        match reason {
            Some(r) => self.put(State::Failing(r.to_string())),
            None => self.put(State::Ok("ok".into())),
        }
    }
    /// Ready; `/readyz` answers `ok: <message>`.
    pub fn set_ready(&self, message: &str) {
        self.put(State::Ok(message.to_string()));
    }
    fn put(&self, s: State) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = s;
    }
    /// The current reason, if not ready.
    pub fn reason(&self) -> Option<String> {
        match &*self.0.lock().unwrap_or_else(|p| p.into_inner()) {
            State::Ok(_) => None,
            State::Failing(r) => Some(r.clone()),
        }
    }
    fn body(&self) -> (u16, String) {
        match &*self.0.lock().unwrap_or_else(|p| p.into_inner()) {
            State::Ok(m) if m == "ok" => (200, "ok\n".into()),
            State::Ok(m) => (200, format!("ok: {m}\n")),
            State::Failing(r) => (503, format!("not ready: {r}\n")),
        }
    }
}

/// Shared liveness: alive, or failing with a reason (`/healthz` then
/// answers 500 so that a supervisor restarts the process).
#[derive(Debug, Clone)]
pub struct Liveness(Arc<Mutex<Option<String>>>);

impl Default for Liveness {
    fn default() -> Liveness {
        Liveness(Arc::new(Mutex::new(None)))
    }
}

impl Liveness {
    /// Failing for `Some(reason)`, alive for `None`.
    pub fn set(&self, failure: Option<&str>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = failure.map(str::to_string);
    }
    /// The failure, if any.
    pub fn failure(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The request handler.
#[derive(Debug)]
pub struct HealthHandler {
    registry: Arc<Registry>,
    readiness: Readiness,
    liveness: Liveness,
    shadow: Option<Arc<crate::shadow::Shadow>>,
}

impl Handler for HealthHandler {
    fn handle(&self, req: Request) -> Response {
        if req.method != "GET" && req.method != "HEAD" {
            return Response::text(405, "method not allowed\n");
        }
        match req.path.as_str() {
            "/healthz" | "/livez" => match self.liveness.failure() {
                None => Response::text(200, "ok\n"),
                Some(f) => Response::text(500, format!("unhealthy: {f}\n")),
            },
            "/readyz" => {
                let (code, body) = self.readiness.body();
                Response::text(code, body)
            }
            "/shadow" => match &self.shadow {
                Some(s) => {
                    let mut r = Response::text(200, s.json());
                    r.headers = vec![("Content-Type".into(), "application/json".into())];
                    r
                }
                None => Response::text(404, "not in shadow mode\n"),
            },
            "/metrics" => {
                let mut body = self.registry.render();
                body.push_str(&process_metrics());
                let mut r = Response::text(200, body);
                r.headers = vec![("Content-Type".into(), CONTENT_TYPE.into())];
                r
            }
            _ => Response::text(404, "not found: try /metrics, /healthz or /readyz\n"),
        }
    }
}

/// Start the endpoint on `addr`.
pub fn start(
    addr: SocketAddr,
    registry: Arc<Registry>,
    readiness: Readiness,
    liveness: Liveness,
    shadow: Option<Arc<crate::shadow::Shadow>>,
) -> io::Result<Server> {
    Server::start(
        addr,
        None,
        Arc::new(HealthHandler {
            registry,
            readiness,
            liveness,
            shadow,
        }),
    )
}

/// `process_*` metrics from /proc/self (Linux), as client_golang names them.
pub fn process_metrics() -> String {
    let mut out = String::new();
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map(|k| k * 1024)
    };
    if let Some(rss) = kib("VmRSS:") {
        out.push_str("# HELP process_resident_memory_bytes Resident memory size in bytes.\n");
        out.push_str(&format!(
            "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {rss}\n"
        ));
    }
    if let Some(vsz) = kib("VmSize:") {
        out.push_str("# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n");
        out.push_str(&format!(
            "# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes {vsz}\n"
        ));
    }
    if let Some(cpu) = cpu_seconds() {
        out.push_str(
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n",
        );
        out.push_str(&format!(
            "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total {cpu}\n"
        ));
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        out.push_str("# HELP process_open_fds Number of open file descriptors.\n");
        out.push_str(&format!(
            "# TYPE process_open_fds gauge\nprocess_open_fds {}\n",
            fds.count()
        ));
    }
    out
}

/// utime + stime of this process in seconds.
#[allow(unsafe_code)] // a libc call or a checked invariant: see SAFETY inside
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are the
    // 14th and 15th fields of the whole line.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no memory-safety preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| (utime + stime) / hz as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(h: &HealthHandler, path: &str) -> (u16, String) {
        let req = Request {
            method: "GET".into(),
            path: path.into(),
            query: vec![],
            headers: vec![],
            body: vec![],
            peer: "127.0.0.1:1".parse().expect("addr"),
            client_cn: None,
        };
        let r = h.handle(req);
        let body = match r.body {
            endpointd_base::httpd::Body::Full(b) => String::from_utf8_lossy(&b).into_owned(),
            endpointd_base::httpd::Body::Stream(_) => String::new(),
        };
        (r.status, body)
    }

    #[test]
    fn routes() {
        let registry = Registry::new();
        registry.counter("x_total", "X.", &[]).with(&[]).inc();
        let readiness = Readiness::not_ready("caches not synced");
        let liveness = Liveness::default();
        let h = HealthHandler {
            registry,
            readiness: readiness.clone(),
            liveness: liveness.clone(),
            shadow: None,
        };
        assert_eq!(get(&h, "/healthz"), (200, "ok\n".into()));
        liveness.set(Some("worker endpoint-0 wedged in default/web for 301s"));
        assert_eq!(
            get(&h, "/healthz"),
            (
                500,
                "unhealthy: worker endpoint-0 wedged in default/web for 301s\n".into()
            )
        );
        liveness.set(None);
        assert_eq!(get(&h, "/livez"), (200, "ok\n".into()));
        assert_eq!(
            get(&h, "/readyz"),
            (503, "not ready: caches not synced\n".into())
        );
        readiness.set(None);
        assert_eq!(get(&h, "/readyz"), (200, "ok\n".into()));
        readiness.set_ready("standby; leader is node-b_1");
        assert_eq!(
            get(&h, "/readyz"),
            (200, "ok: standby; leader is node-b_1\n".into())
        );
        let (code, body) = get(&h, "/metrics");
        assert_eq!(code, 200);
        assert!(body.contains("x_total 1"), "{body}");
        assert!(body.contains("process_resident_memory_bytes "), "{body}");
        assert!(body.contains("process_cpu_seconds_total "), "{body}");
        assert_eq!(get(&h, "/nope").0, 404);
    }
}
