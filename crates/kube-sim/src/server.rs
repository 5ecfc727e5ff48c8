//! kube-sim as a library: [`SimServer`] wires the HTTP server, the PKI, the
//! store and the fault switchboard together, and routes each request:
//! health and `/version` (anonymous, like kube-apiserver's
//! `system:public-info-viewer`), then authentication, then `/sim/faults`,
//! `/sim/requests`, discovery, SelfSubjectAccessReviews
//! ([`super::access_review`]), and finally resource requests
//! (requestinfo → latency → counters → injected failures → stalled
//! watches → `rest::handle`).
//!
//! It owns routing and authentication only; resource semantics belong to
//! `rest` and `store`. It never logs the token or keys.

use super::discovery;
use super::faults::{Faults, WriteAnswer};
use super::requestinfo::{self, Verb};
use super::resources;
use super::rest;
use super::status::ApiError;
use super::store::{Store, StoreConfig};
use super::tls::{kubeconfig, SimPki, TlsError};
use endpointd_base::clock::{RealClock, SharedClock};
use endpointd_base::httpd::{Handler, Request, Response, Server, ServerControl, ServerOptions};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// How to start a kube-sim. `Debug` redacts the token.
#[derive(Clone)]
pub struct SimOptions {
    /// Listen address (`127.0.0.1:0` picks a free port).
    pub listen: SocketAddr,
    /// Serve HTTPS with a generated CA; clients may authenticate with the
    /// generated client certificate.
    pub tls: bool,
    /// Bearer token clients may (or, without TLS, must) present.
    pub token: Option<String>,
    /// Watch history length (events) before 410 Expired.
    pub history: usize,
    /// Interval of BOOKMARK events.
    pub bookmark_interval: Duration,
    /// A v1 List file (JSON or YAML) whose items are created at start.
    pub load: Option<PathBuf>,
    /// Time source for the store, latency and outages.
    pub clock: SharedClock,
    /// Run the simulated kubelet (off: pods keep the status they are
    /// written with and are deleted at once).
    pub kubelet: Option<super::kubelet::KubeletOptions>,
    /// Users of a static token file (`--token-auth-file`).
    pub token_users: Vec<super::authn::TokenUser>,
    /// Authorize requests with RBAC (`--authorization-mode RBAC`): the
    /// policy is the RBAC items of the `load` file.
    pub rbac: bool,
    /// After loading, before listening: what `etcdutl snapshot restore
    /// --bump-revision N --mark-compacted` does (0: nothing), so a restored
    /// server is never seen with its revisions unbumped.
    pub bump_revision: u64,
}

impl std::fmt::Debug for SimOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimOptions")
            .field("listen", &self.listen)
            .field("tls", &self.tls)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("history", &self.history)
            .field("bookmark_interval", &self.bookmark_interval)
            .field("load", &self.load)
            .field("clock", &self.clock)
            .field("token_users", &self.token_users)
            .field("rbac", &self.rbac)
            .field("bump_revision", &self.bump_revision)
            .finish()
    }
}

impl Default for SimOptions {
    fn default() -> Self {
        let store = StoreConfig::default();
        SimOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            tls: false,
            token: None,
            history: store.history,
            bookmark_interval: store.bookmark_interval,
            load: None,
            clock: RealClock::shared(),
            kubelet: None,
            token_users: Vec::new(),
            rbac: false,
            bump_revision: 0,
        }
    }
}

/// Why kube-sim could not start (or write its kubeconfig).
#[derive(Debug)]
pub enum SimError {
    /// Binding or serving the socket failed.
    Listen(std::io::Error),
    /// Certificates or the TLS config could not be made.
    Tls(TlsError),
    /// The `--load` file could not be read, parsed or created.
    Load {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: Box<super::load::LoadError>,
    },
    /// Writing the kubeconfig failed.
    Kubeconfig(std::io::Error),
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::Listen(e) => write!(f, "listening: {e}"),
            SimError::Tls(e) => write!(f, "{e}"),
            SimError::Load { path, source } => write!(f, "loading {}: {source}", path.display()),
            SimError::Kubeconfig(e) => write!(f, "writing kubeconfig: {e}"),
        }
    }
}

impl std::error::Error for SimError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SimError::Listen(e) | SimError::Kubeconfig(e) => Some(e),
            SimError::Tls(e) => Some(e),
            SimError::Load { source, .. } => Some(source.as_ref()),
        }
    }
}

/// Resource requests seen, per (verb, resource). A request is counted once
/// it is classified, before injected failures and stalls, so retries after
/// an injected 429 show up; discovery, health and `/sim/*` are not counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestStats {
    /// Count per (verb as Kubernetes spells it, plural resource).
    pub counts: BTreeMap<(String, String), u64>,
    /// Of the LISTs, those of one object (`limit=1`, no `continue`): how a
    /// client reads the current resourceVersion, not a list of the cache.
    pub one_object_lists: BTreeMap<String, u64>,
}

impl RequestStats {
    /// Requests seen with this verb for this resource.
    pub fn get(&self, verb: Verb, resource: &str) -> u64 {
        self.counts
            .get(&(verb.as_str().to_string(), resource.to_string()))
            .copied()
            .unwrap_or(0)
    }

    /// LISTs of this resource other than those of one object: the lists
    /// that fill a cache.
    pub fn full_lists(&self, resource: &str) -> u64 {
        let one = self.one_object_lists.get(resource).copied().unwrap_or(0);
        self.get(Verb::List, resource).saturating_sub(one)
    }

    /// All resource requests seen.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }
}

/// The request router behind the HTTP server.
struct SimHandler {
    store: Arc<Store>,
    faults: Arc<Faults>,
    authn: super::authn::Authenticator,
    authz: super::authz::Authorizer,
    clock: SharedClock,
    addr: OnceLock<String>,
    /// The listening server (for its connection count).
    control: OnceLock<ServerControl>,
    stats: Mutex<RequestStats>,
}

fn unauthorized() -> Response {
    ApiError::new(401, "Unauthorized", "Unauthorized").to_response()
}

fn not_found() -> Response {
    ApiError::new(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
    .to_response()
}

fn json_ok(v: &Value) -> Response {
    Response::json(200, v.to_string().into_bytes())
}

impl SimHandler {
    fn stats(&self) -> std::sync::MutexGuard<'_, RequestStats> {
        self.stats.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn connections_accepted(&self) -> u64 {
        self.control.get().map_or(0, ServerControl::accepted)
    }

    /// `GET /sim/requests[?since=N]`: counters, the write log from its
    /// `N`th entry on (all of it without `since`) with `writesTotal` (the
    /// log's length, the next `since`), and the access log. A harness that
    /// polls while it measures asks only for what is new: the whole log of
    /// a full-size bench is 2.3 MB, cloned under the store's lock.
    fn sim_requests(&self, req: &Request) -> Response {
        let since = req
            .query
            .iter()
            .find(|(k, _)| k == "since")
            .and_then(|(_, v)| v.parse::<usize>().ok())
            .unwrap_or(0);
        let (writes, total) = self.store.write_log_since(since);
        let counters: Vec<Value> = self
            .stats()
            .counts
            .iter()
            .map(|((verb, resource), n)| json!({"verb": verb, "resource": resource, "count": n}))
            .collect();
        json_ok(&json!({
            "counters": counters,
            "writes": writes,
            "writesTotal": total,
            "access": self.authz.log(),
            "resourceVersion": self.store.current_rv().to_string(),
            "connectionsAccepted": self.connections_accepted(),
        }))
    }

    fn sim_faults(&self, req: &Request) -> Response {
        match req.method.as_str() {
            "GET" => json_ok(&self.faults.snapshot()),
            "POST" | "PUT" => {
                let applied = serde_json::from_slice::<Value>(&req.body)
                    .map_err(|e| format!("body is not JSON: {e}"))
                    .and_then(|v| self.faults.apply_json(&v).map_err(|e| e.to_string()));
                match applied {
                    Ok(()) => json_ok(&self.faults.snapshot()),
                    Err(m) => ApiError::new(400, "BadRequest", m).to_response(),
                }
            }
            _ => ApiError::new(405, "MethodNotAllowed", "use GET or POST").to_response(),
        }
    }

    fn resource(&self, req: &Request, user: &super::rbac::UserInfo) -> Response {
        let Some(info) = requestinfo::parse(&req.method, &req.path, &req.query) else {
            return not_found();
        };
        if let Some(denied) = self.authz.resource(user, &info) {
            return denied;
        }
        if info.group == "authorization.k8s.io"
            && info.version == "v1"
            && info.resource == "selfsubjectaccessreviews"
            && info.namespace.is_none()
            && info.name.is_none()
        {
            return super::access_review::serve(&self.authz, user, req);
        }
        let Some(res) = resources::lookup(&info.group, &info.version, &info.resource) else {
            return not_found();
        };
        let sub_ok = match info.subresource.as_deref() {
            None => true,
            Some("finalize") => res.resource == "namespaces",
            Some(s) => res.subresources.contains(&s),
        };
        if !sub_ok || (info.namespace.is_some() && !res.namespaced) {
            return not_found();
        }
        let latency = self.faults.latency();
        if !latency.is_zero() {
            let outages = self.faults.outages();
            self.clock.sleep(latency);
            // The server went down while this request waited: it is lost,
            // not applied (its connection is gone; nobody reads this).
            if self.faults.outages() != outages {
                return ApiError::new(503, "ServiceUnavailable", "the server went down")
                    .to_response();
            }
        }
        {
            let mut stats = self.stats();
            *stats
                .counts
                .entry((info.verb.as_str().to_string(), info.resource.clone()))
                .or_insert(0) += 1;
            if info.verb == Verb::List
                && req.query("limit") == Some("1")
                && req.query("continue").is_none_or(str::is_empty)
            {
                *stats
                    .one_object_lists
                    .entry(info.resource.clone())
                    .or_insert(0) += 1;
            }
        }
        if let Some(failure) = self.faults.take_failure(&info) {
            return failure;
        }
        if info.verb == Verb::Watch {
            if let Some(stalled) = self.faults.stalled_watch(&info.resource) {
                return stalled;
            }
        }
        let mut resp = match self.faults.take_write_answer(&info) {
            None => rest::handle(&self.store, &info, req),
            Some(WriteAnswer::Lost) => {
                let stored = info.name.as_deref().and_then(|name| {
                    let res = resources::lookup(&info.group, &info.version, &info.resource)?;
                    let ns = info.namespace.as_deref().unwrap_or("");
                    let k = super::store::Key::new(res, ns, name);
                    self.store.txn(|t| t.get(&k).map(|o| o.value()))
                });
                self.faults.lost_write(&info, &req.body, stored)
            }
            Some(answer) => Faults::rewrite_answer(answer, rest::handle(&self.store, &info, req)),
        };
        if info.resource == "endpoints" && info.group.is_empty() {
            // As kube-apiserver 1.33+ answers every request for v1 Endpoints.
            resp.headers
                .push(("Warning".into(), ENDPOINTS_DEPRECATED.into()));
        }
        resp
    }
}

/// The `Warning` header kube-apiserver 1.33+ sends with v1 Endpoints.
pub const ENDPOINTS_DEPRECATED: &str =
    "299 - \"v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice\"";

/// An HTTP `Date` (IMF-fixdate, RFC 9110): `Sun, 06 Nov 1994 08:49:37 GMT`.
pub fn http_date(t: std::time::SystemTime) -> String {
    match jiff::Timestamp::try_from(t) {
        Ok(ts) => ts.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string(),
        Err(_) => "Thu, 01 Jan 1970 00:00:00 GMT".to_string(),
    }
}

fn is_health(path: &str) -> bool {
    ["/healthz", "/readyz", "/livez"]
        .iter()
        .any(|p| path == *p || path.strip_prefix(p).is_some_and(|r| r.starts_with('/')))
}

impl Handler for SimHandler {
    fn handle(&self, req: Request) -> Response {
        // A proxy in front of a server that is gone answers everything
        // itself (kube-sim's own `/sim/*` stays reachable to the test).
        if !req.path.starts_with("/sim/") {
            if let Some(resp) = self.faults.gateway_answer() {
                return resp;
            }
        }
        let who = self
            .authn
            .authenticate(req.client_cn.as_deref(), req.header("authorization"));
        let user = match (&who, req.header("authorization")) {
            (Some(u), _) => u.name.clone(),
            (None, Some(_)) => super::authn::ADMIN_TOKEN_USER.to_string(),
            (None, None) => "system:anonymous".to_string(),
        };
        let agent = req.header("user-agent").unwrap_or("").to_string();
        let mut resp = super::requester::with(&user, &agent, || self.route(&req, who.as_ref()));
        // Every answer is dated, as Go's net/http dates them (clients
        // compare it with their own clock: `endpointd preflight`).
        resp.headers
            .push(("Date".into(), http_date(self.clock.wall())));
        // Method, path and status only: never headers (they carry the token).
        log::debug!(
            "{} {} {} -> {}",
            req.peer,
            req.method,
            req.path,
            resp.status
        );
        resp
    }
}

impl SimHandler {
    fn route(&self, req: &Request, who: Option<&super::rbac::UserInfo>) -> Response {
        let path = req.path.as_str();
        if is_health(path) {
            return Response::text(200, "ok");
        }
        if path == "/version" || path == "/version/" {
            return json_ok(&discovery::version());
        }
        let Some(user) = who else {
            return unauthorized();
        };
        if self.authz.enabled() && requestinfo::parse(&req.method, path, &req.query).is_none() {
            if let Some(denied) = self.authz.non_resource(user, &req.method, path) {
                return denied;
            }
        }
        match path {
            "/sim/faults" => return self.sim_faults(req),
            "/sim/requests" => return self.sim_requests(req),
            _ => {}
        }
        if matches!(req.method.as_str(), "GET" | "HEAD") {
            let top = path.trim_end_matches('/');
            if matches!(top, "/api" | "/apis") && discovery::wants_aggregated(req.header("accept"))
            {
                let mut resp = json_ok(&discovery::aggregated(top == "/api"));
                resp.headers = vec![
                    (
                        "Content-Type".into(),
                        discovery::AGGREGATED_CONTENT_TYPE.into(),
                    ),
                    ("Vary".into(), "Accept".into()),
                ];
                return resp;
            }
            if top == "/openapi/v2" {
                return super::openapi::serve_v2(req.header("accept"));
            }
            let addr = self.addr.get().map(String::as_str).unwrap_or("");
            if let Some(doc) = discovery::document(path, addr) {
                return json_ok(&doc);
            }
        }
        self.resource(req, user)
    }
}

/// A running kube-sim.
pub struct SimServer {
    http: Option<Server>,
    handler: Arc<SimHandler>,
    store: Arc<Store>,
    faults: Arc<Faults>,
    url: String,
    pki: Option<SimPki>,
    kubelet: Option<super::kubelet::Kubelet>,
}

impl std::fmt::Debug for SimServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimServer")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl SimServer {
    /// Start a kube-sim: make the store (and PKI when `tls`), load the
    /// List file, then listen.
    pub fn start(opts: SimOptions) -> Result<SimServer, SimError> {
        let cfg = StoreConfig {
            history: opts.history,
            bookmark_interval: opts.bookmark_interval,
            graceful_pods: opts.kubelet.is_some(),
        };
        let store = Store::new(cfg, Arc::clone(&opts.clock));
        let mut policy = super::rbac::Policy::default();
        if let Some(path) = &opts.load {
            let load_err = |source| SimError::Load {
                path: path.clone(),
                source: Box::new(source),
            };
            let (list, p) = super::load::read_file(path).map_err(load_err)?;
            store.load_list(&list).map_err(load_err)?;
            policy = p;
        }
        if opts.bump_revision > 0 {
            store.bump_revision(opts.bump_revision);
        }
        let pki = if opts.tls {
            Some(SimPki::generate().map_err(SimError::Tls)?)
        } else {
            None
        };
        let tls_config = match &pki {
            Some(p) => Some(p.server_config().map_err(SimError::Tls)?),
            None => None,
        };
        let faults = Arc::new(Faults::new(Arc::clone(&store), Arc::clone(&opts.clock)));
        let handler = Arc::new(SimHandler {
            store: Arc::clone(&store),
            faults: Arc::clone(&faults),
            authn: super::authn::Authenticator {
                admin_token: opts.token.clone(),
                users: opts.token_users.clone(),
                required: opts.tls || opts.token.is_some() || !opts.token_users.is_empty(),
            },
            authz: match opts.rbac {
                true => super::authz::Authorizer::rbac(policy),
                false => super::authz::Authorizer::always_allow(),
            },
            clock: Arc::clone(&opts.clock),
            addr: OnceLock::new(),
            control: OnceLock::new(),
            stats: Mutex::new(RequestStats::default()),
        });
        let server_opts = ServerOptions {
            clock: Arc::clone(&opts.clock),
            ..ServerOptions::default()
        };
        let http = Server::start_with(opts.listen, tls_config, handler.clone(), server_opts)
            .map_err(SimError::Listen)?;
        let addr = http.local_addr();
        let _ = handler.addr.set(addr.to_string());
        let _ = handler.control.set(http.control());
        faults.attach(http.control());
        let scheme = if opts.tls { "https" } else { "http" };
        let kubelet = match &opts.kubelet {
            Some(k) => Some(
                super::kubelet::Kubelet::start(Arc::clone(&store), k.clone())
                    .map_err(SimError::Listen)?,
            ),
            None => None,
        };
        Ok(SimServer {
            url: format!("{scheme}://{addr}"),
            http: Some(http),
            handler,
            store,
            faults,
            pki,
            kubelet,
        })
    }

    /// Base URL, e.g. `https://127.0.0.1:40123`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The store (for direct inspection and setup in tests).
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The fault switchboard.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// TCP connections accepted so far (a client that keeps its
    /// connections alive opens about as many as it has requests in flight).
    pub fn connections_accepted(&self) -> u64 {
        self.handler.connections_accepted()
    }

    /// Requests seen so far, per verb and resource.
    pub fn requests(&self) -> RequestStats {
        self.handler.stats().clone()
    }

    /// The access log of `--authorization-mode RBAC` (empty when off).
    pub fn access_log(&self) -> Vec<super::authz::Access> {
        self.handler.authz.log()
    }

    /// CA certificate PEM (TLS only).
    pub fn ca_pem(&self) -> Option<&str> {
        self.pki.as_ref().map(|p| p.ca.cert_pem.as_str())
    }

    /// Client certificate PEM (TLS only).
    pub fn client_cert_pem(&self) -> Option<&str> {
        self.pki.as_ref().map(|p| p.client.cert_pem.as_str())
    }

    /// Client key PEM (TLS only).
    pub fn client_key_pem(&self) -> Option<&str> {
        self.pki.as_ref().map(|p| p.client.key_pem.as_str())
    }

    /// A kubeconfig clients use as is: server URL, CA data (TLS), and the
    /// token when one is set, else the client certificate (TLS).
    pub fn kubeconfig_yaml(&self) -> String {
        kubeconfig(
            &self.url,
            self.pki.as_ref(),
            self.handler.authn.admin_token.as_deref(),
        )
    }

    /// Write [`Self::kubeconfig_yaml`] to `path` (mode 0600: it holds
    /// secrets). An existing file is truncated and set to 0600 before the
    /// secrets are written (the open mode only applies on creation).
    pub fn write_kubeconfig(&self, path: &Path) -> Result<(), SimError> {
        use std::io::Write;
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
        let mut f = o.open(path).map_err(SimError::Kubeconfig)?;
        #[cfg(unix)]
        f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .map_err(SimError::Kubeconfig)?;
        f.write_all(self.kubeconfig_yaml().as_bytes())
            .map_err(SimError::Kubeconfig)
    }

    /// Stop: end every watch, close every connection, join all threads.
    pub fn stop(mut self) {
        self.stop_inner();
    }

    fn stop_inner(&mut self) {
        if let Some(k) = self.kubelet.as_mut() {
            k.stop();
        }
        if let Some(http) = self.http.take() {
            self.store.shutdown();
            http.shutdown();
        }
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        self.stop_inner();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_server_can_be_shared_across_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<SimServer>();
        send_sync::<RequestStats>();
    }

    /// A stopped kube-sim frees its store: the handler and the fault
    /// switchboard hold the server's control, the server holds the
    /// handler, so a strong control was a cycle that kept every object of
    /// every kube-sim a test process ever started.
    #[test]
    fn a_stopped_sim_frees_its_store() {
        let s = SimServer::start(SimOptions::default()).expect("kube-sim");
        let store = Arc::downgrade(s.store());
        s.stop();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while store.upgrade().is_some() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(store.upgrade().is_none(), "the store outlived its server");
    }

    #[test]
    fn sim_options_debug_redacts_the_token() {
        let o = SimOptions {
            token: Some("SUPERSECRETTOKEN".into()),
            ..SimOptions::default()
        };
        let text = format!("{o:?} {o:#?}");
        assert!(!text.contains("SUPERSECRETTOKEN"), "{text}");
        assert!(text.contains("<redacted>"), "{text}");
    }

    #[cfg(unix)]
    #[test]
    fn write_kubeconfig_makes_an_existing_0644_file_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir =
            std::env::temp_dir().join(format!("endpointd-kubeconfig-mode-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("kubeconfig");
        std::fs::write(&path, "old").expect("pre-create");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
            .expect("chmod 0644");
        let sim = SimServer::start(SimOptions {
            token: Some("t0ken".into()),
            ..SimOptions::default()
        })
        .expect("start");
        sim.write_kubeconfig(&path).expect("write");
        sim.stop();
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
        let text = std::fs::read_to_string(&path).expect("read");
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");
        assert!(text.contains("t0ken"));
    }

    #[test]
    fn secret_comparison_and_health_paths() {
        use crate::authn::same_secret;
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
        for (p, want) in [
            ("/healthz", true),
            ("/readyz", true),
            ("/livez/ping", true),
            ("/healthzz", false),
            ("/api", false),
        ] {
            assert_eq!(is_health(p), want, "{p}");
        }
    }
}
