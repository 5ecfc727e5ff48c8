//! The HTTP layer of the client: two ureq agents (ordinary requests, and
//! watches so that shutting down watches cannot break the final writes),
//! one request attempt with auth headers and timeouts, the retry loop, and
//! request metrics; each attempt tells the shared [`Link`] whether the
//! server could be reached (a failure to reach it, or an answer).
//!
//! Must never log request headers (they carry the token), never read an
//! error body without a size limit, and never sleep except on the clock.

use super::auth::Auth;
use super::body::BodyLimits;
use super::config::ClientConfig;
use super::error::{Error, Status};
use super::gate::WriteGate;
use super::keepalive::{KeepaliveConnector, Sockets};
use super::kubeconfig;
use super::link::Link;
use super::metrics::{host_label, ClientMetrics};
use super::ratelimit::ClientRateLimiter;
use super::request::Resource;
use super::retry::{RetryPolicy, Verb};
use super::tls;
use crate::metrics::Registry;
use endpointd_base::clock::SharedClock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use ureq::http::{Response, Uri};
use ureq::unversioned::transport::{ConnectProxyConnector, Connector, RustlsConnector};
use ureq::{Agent, Body, RequestBuilder};

/// Largest error body read into a `Status` (a Status is tiny; this only
/// guards against a misbehaving proxy).
const MAX_ERROR_BODY: u64 = 1 << 20;
/// Connect timeout for every request.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a wait (retry backoff, rate limiter) looks for a cancel.
const CANCEL_POLL: Duration = Duration::from_millis(50);
/// Input and output buffer of every connection (ureq's default is 128 KiB
/// each, per connection and per layer: TCP and TLS). Only response heads
/// must fit: bodies and request bodies stream through in buffer-sized
/// pieces. Kubernetes response heads are well under 2 KiB.
pub(crate) const CONN_BUFFER: usize = 16 * 1024;
/// Largest response head (status line and headers) accepted: below
/// [`CONN_BUFFER`], so a larger head fails with ureq's clear
/// "response header is too big" instead of a full buffer that reads
/// nothing ("made no progress").
pub(crate) const MAX_RESPONSE_HEAD: usize = CONN_BUFFER - 1024;

/// A request body.
pub(crate) struct Payload<'a> {
    pub content_type: &'static str,
    pub bytes: &'a [u8],
}

/// One logical request.
pub(crate) struct Req<'a> {
    pub verb: Verb,
    pub resource: &'a Resource,
    pub method: &'static str,
    pub path_and_query: String,
    pub payload: Option<Payload<'a>>,
}

/// How long one attempt may take.
#[derive(Clone, Copy, Debug)]
enum Limit {
    /// The agent's `request_timeout`.
    Agent,
    /// A watch: no overall limit, at most this long between reads.
    Idle(Duration),
    /// The write gate's time left, for connecting and sending.
    Within(Duration),
}

/// Shared state behind every clone of a client.
#[derive(Debug)]
pub(crate) struct Transport {
    pub base: String,
    pub server: String,
    agent: Mutex<Pool>,
    watch_agent: Mutex<Option<Pool>>,
    /// What the agents are built from, to build them again.
    agent_cfg: ClientConfig,
    tls_cfg: ureq::tls::TlsConfig,
    pub watch_shutdown: Arc<AtomicBool>,
    /// Set by [`Transport::cancel`]: every request, retry wait and rate
    /// limiter wait ends at once with [`Error::Shutdown`].
    cancelled: AtomicBool,
    pub watch_idle_margin: Duration,
    pub watch_idle_timeout: Option<Duration>,
    auth: Auth,
    limiter: ClientRateLimiter,
    pub clock: SharedClock,
    retry: RetryPolicy,
    metrics: Option<ClientMetrics>,
    pub body_limits: BodyLimits,
    /// Whether the server is reachable, shared with the other clients of
    /// the daemon: told of every unreachable failure and every answer.
    pub link: Arc<Link>,
    /// Bumped whenever we shut connection pools ourselves (a reset, the
    /// watches' shutdown): the failures that causes say nothing about the
    /// server.
    pools: AtomicU64,
}

/// An agent and the sockets its connector opened (ureq's own shutdown
/// cannot reach them: see `keepalive`).
#[derive(Clone, Debug)]
struct Pool {
    agent: Agent,
    sockets: Arc<Sockets>,
}

impl Pool {
    /// Fail every request in flight on this pool at once.
    fn shutdown(self) {
        self.sockets.shutdown_all();
        self.agent.shutdown();
    }
}

fn agent(cfg: &ClientConfig, tls: ureq::tls::TlsConfig, watch: bool) -> Result<Pool, Error> {
    let mut b = Agent::config_builder()
        .http_status_as_error(false)
        .tls_config(tls)
        .user_agent(cfg.user_agent.as_str())
        .timeout_connect(Some(CONNECT_TIMEOUT.min(cfg.request_timeout)))
        .input_buffer_size(CONN_BUFFER)
        .output_buffer_size(CONN_BUFFER)
        .max_response_header_size(MAX_RESPONSE_HEAD)
        .max_idle_connections(cfg.max_idle_connections)
        .max_idle_connections_per_host(cfg.max_idle_connections)
        .max_idle_age(cfg.idle_connection_timeout)
        .max_redirects(0);
    if !watch {
        b = b.timeout_global(Some(cfg.request_timeout));
    }
    if let Some(p) = &cfg.proxy_url {
        // Checked again here for a config not loaded from a kubeconfig:
        // ureq takes a socks URL and then connects directly.
        let proxy = kubeconfig::check_proxy_url(p)
            .and_then(|()| ureq::Proxy::new(p).map_err(|e| format!("invalid proxy URL: {e}")))
            .map_err(|message| Error::Config {
                source: cfg.source.clone(),
                field: "proxy-url".into(),
                message,
            })?;
        b = b.proxy(Some(proxy));
    }
    let config = b.build();
    let sockets = Arc::new(Sockets::default());
    // ureq's default chain with our TCP connector (keepalive) in place of
    // its own: CONNECT proxy, TCP, then rustls.
    let connector = ()
        .chain(ConnectProxyConnector::default())
        .chain(KeepaliveConnector {
            sockets: Arc::clone(&sockets),
        })
        .chain(RustlsConnector::default());
    let agent = match &cfg.tls.server_name {
        Some(name) => {
            let real: Uri = cfg.server.parse().map_err(|e| server_err(cfg, e))?;
            Agent::with_parts(config, connector, tls::PinnedResolver::new(name, real))
        }
        None => Agent::with_parts(config, connector, tls::LiteralResolver::default()),
    };
    Ok(Pool { agent, sockets })
}

/// Whether a failed request says the server cannot be reached or the
/// connection was lost (DNS, connect, I/O, a connect or send timeout), as
/// opposed to a slow answer from a server that is there (a response, read
/// or overall timeout) or a refused handshake (TLS).
fn unreachable(e: &ureq::Error) -> bool {
    use ureq::Timeout as T;
    match e {
        ureq::Error::Io(io) => !matches!(
            io.kind(),
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
        ),
        ureq::Error::HostNotFound
        | ureq::Error::ConnectionFailed
        | ureq::Error::ConnectProxyFailed(_) => true,
        ureq::Error::Timeout(t) => matches!(
            t,
            T::Resolve | T::Connect | T::SendRequest | T::SendBody | T::PerWrite
        ),
        _ => false,
    }
}

/// The URL with any `user:password@` replaced by `***@`: the form every
/// log line, error and metric label gets (a password in a server URL must
/// never be printed).
pub fn redact_userinfo(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (Some(s), r),
        None => (None, url),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let host = match authority.rfind('@') {
        Some(i) => format!("***@{}", &authority[i + 1..]),
        None => authority.to_string(),
    };
    match scheme {
        Some(s) => format!("{s}://{host}{tail}"),
        None => format!("{host}{tail}"),
    }
}

fn server_err(cfg: &ClientConfig, e: impl std::fmt::Display) -> Error {
    Error::Config {
        source: cfg.source.clone(),
        field: "server".into(),
        message: format!("invalid server URL {:?}: {e}", redact_userinfo(&cfg.server)),
    }
}

impl Transport {
    pub fn new(
        cfg: &ClientConfig,
        clock: SharedClock,
        metrics: Option<&Registry>,
    ) -> Result<Transport, Error> {
        let uri: Uri = cfg.server.parse().map_err(|e| server_err(cfg, e))?;
        let scheme = uri.scheme_str().unwrap_or("");
        if scheme != "https" && scheme != "http" || uri.host().is_none() {
            return Err(server_err(cfg, "expected http(s)://host[:port]"));
        }
        let tls_cfg = if scheme == "https" {
            tls::build(&cfg.tls, &cfg.source)?
        } else {
            ureq::tls::TlsConfig::builder()
                .unversioned_rustls_crypto_provider(Arc::new(
                    rustls::crypto::ring::default_provider(),
                ))
                .build()
        };
        let base = match &cfg.tls.server_name {
            Some(name) => tls::url_with_server_name(&uri, name).map_err(|e| Error::Config {
                source: cfg.source.clone(),
                field: "tls-server-name".into(),
                message: e,
            })?,
            None => cfg.server.trim_end_matches('/').to_string(),
        };
        Ok(Transport {
            base,
            server: redact_userinfo(&cfg.server),
            agent: Mutex::new(agent(cfg, tls_cfg.clone(), false)?),
            watch_agent: Mutex::new(Some(agent(cfg, tls_cfg.clone(), true)?)),
            agent_cfg: cfg.clone(),
            tls_cfg,
            watch_shutdown: Arc::new(AtomicBool::new(false)),
            cancelled: AtomicBool::new(false),
            watch_idle_margin: cfg.watch_idle_margin,
            watch_idle_timeout: cfg.watch_idle_timeout,
            auth: cfg.auth.clone(),
            limiter: ClientRateLimiter::new(cfg.qps, cfg.burst, Arc::clone(&clock)),
            clock,
            retry: RetryPolicy {
                max_retries: cfg.max_retries,
                max_delay: cfg.max_retry_delay,
                ..RetryPolicy::default()
            },
            metrics: metrics.map(|r| ClientMetrics::new(r, host_label(&uri))),
            body_limits: cfg.body_limits,
            link: Arc::clone(&cfg.link),
            pools: AtomicU64::new(0),
        })
    }

    /// Shut the watch agent: every blocked watch read fails at once and
    /// later watches return [`Error::Shutdown`].
    pub fn shutdown_watches(&self) {
        self.watch_shutdown.store(true, Ordering::SeqCst);
        self.pools.fetch_add(1, Ordering::AcqRel);
        let a = self
            .watch_agent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(a) = a {
            a.shutdown();
        }
    }

    /// Cancel everything: requests in flight fail at once (their
    /// connections are shut down), waits for a retry or for the rate
    /// limiter end, and every later request returns [`Error::Shutdown`].
    /// For shutdown: SIGTERM must not wait for a server that never answers.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        self.shutdown_watches();
        self.agent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .shutdown();
    }

    /// Keepalive state (on, idle time) of every open socket, ordinary and
    /// watch (for tests and diagnostics).
    pub fn socket_keepalive(&self) -> Vec<(bool, Duration)> {
        let mut v = self
            .agent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .sockets
            .keepalive();
        if let Some(w) = self
            .watch_agent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            v.extend(w.sockets.keepalive());
        }
        v
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Sleep `d` on the clock in short slices, ending early on cancel;
    /// false when cancelled.
    fn pause(&self, d: Duration) -> bool {
        let deadline = self.clock.now() + d;
        loop {
            if self.is_cancelled() {
                return false;
            }
            let left = deadline.saturating_duration_since(self.clock.now());
            if left.is_zero() {
                return true;
            }
            self.clock.sleep(left.min(CANCEL_POLL));
        }
    }

    /// Drop every pooled connection: new agents replace the old ones, so
    /// the next requests open fresh connections, and blocked watch reads on
    /// the old watch agent fail at once so the informers reconnect. Used
    /// after repeated heartbeat failures, against half-open TCP connections
    /// that a flaky link leaves behind (the kubelet's
    /// `onRepeatedHeartbeatFailure`). Requests in flight finish on the old
    /// agent. Does nothing after `shutdown_watches` for the watch agent.
    pub fn reset_connections(&self) {
        self.pools.fetch_add(1, Ordering::AcqRel);
        if let Ok(a) = agent(&self.agent_cfg, self.tls_cfg.clone(), false) {
            *self.agent.lock().unwrap_or_else(|p| p.into_inner()) = a;
        }
        if self.watch_shutdown.load(Ordering::SeqCst) {
            return;
        }
        let Ok(fresh) = agent(&self.agent_cfg, self.tls_cfg.clone(), true) else {
            return;
        };
        let old = self
            .watch_agent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(fresh);
        if let Some(old) = old {
            old.shutdown();
        }
    }

    /// Replace the ordinary agent with a new one: its idle pooled
    /// connections close once the requests in flight on it end (they keep
    /// their own handle); watches are left alone.
    fn fresh_pool(&self) {
        match agent(&self.agent_cfg, self.tls_cfg.clone(), false) {
            Ok(a) => {
                log::debug!(
                    "a request to {} timed out: dropping the idle pooled connections",
                    self.server
                );
                *self.agent.lock().unwrap_or_else(|p| p.into_inner()) = a;
            }
            Err(e) => log::debug!("cannot build a new connection pool: {e}"),
        }
    }

    fn transport_err(&self, e: ureq::Error) -> Error {
        Error::Transport {
            server: self.server.clone(),
            timeout: matches!(e, ureq::Error::Timeout(_)),
            unreachable: unreachable(&e),
            cause: e.to_string(),
        }
    }

    /// Count a response body that exceeded a limit or was cut off.
    pub fn record_body_error(&self, req: &Req<'_>, e: &Error) {
        let kind = match e {
            Error::TooLarge { .. } => "too_large",
            Error::Transport { .. } => "cut_off",
            Error::Decode { .. } => "undecodable",
            _ => return,
        };
        if matches!(e, Error::TooLarge { .. }) {
            log::warn!("{e}");
            // The partial body is dropped by now: give its pages back.
            crate::memory::trim();
        }
        if let Some(m) = &self.metrics {
            m.body_error(req.verb, req.resource, kind);
        }
    }

    fn record(&self, req: &Req<'_>, code: Option<u16>, secs: f64) {
        if let Some(m) = &self.metrics {
            m.record(req.verb, req.resource, code, secs);
        }
    }

    fn prep<B>(
        &self,
        rb: RequestBuilder<B>,
        auth: Option<&str>,
        limit: Limit,
        write: bool,
    ) -> RequestBuilder<B> {
        let mut rb = rb.header("Accept", "application/json");
        if let Some(a) = auth {
            rb = rb.header("Authorization", a);
        }
        // A write's attempt ends within write_timeout, its answer included:
        // on a connection gone silent it would otherwise hold its worker
        // for the whole request_timeout.
        if write && !matches!(limit, Limit::Idle(_)) {
            let whole = self
                .agent_cfg
                .write_timeout
                .min(self.agent_cfg.request_timeout);
            rb = rb.config().timeout_global(Some(whole)).build();
        }
        match limit {
            Limit::Idle(d) => rb
                .config()
                .timeout_global(None)
                .timeout_recv_body(None)
                .timeout_per_read(Some(d))
                .build(),
            // Connecting and sending end by the gate's deadline; the answer
            // to a write sent in time is still read (abandoning it would
            // report an applied write as failed).
            Limit::Within(d) => {
                let d = d.min(self.agent_cfg.request_timeout);
                rb.config()
                    .timeout_connect(Some(d.min(CONNECT_TIMEOUT)))
                    .timeout_send_request(Some(d))
                    .timeout_send_body(Some(d))
                    .build()
            }
            Limit::Agent => rb,
        }
    }

    /// One attempt on `agent`.
    fn attempt(&self, agent: &Agent, req: &Req<'_>, limit: Limit) -> Result<Response<Body>, Error> {
        let auth = self.auth.header(&self.clock)?;
        let auth = auth.as_deref();
        let url = format!("{}{}", self.base, req.path_and_query);
        let write = !matches!(req.verb, Verb::Get | Verb::List | Verb::Watch);
        let send = |rb: RequestBuilder<ureq::typestate::WithBody>| match &req.payload {
            Some(p) => self
                .prep(rb, auth, limit, write)
                .header("Content-Type", p.content_type)
                .send(p.bytes),
            None => self.prep(rb, auth, limit, write).send_empty(),
        };
        let res = match (req.method, &req.payload) {
            ("GET", _) => self.prep(agent.get(&url), auth, limit, write).call(),
            ("DELETE", None) => self.prep(agent.delete(&url), auth, limit, write).call(),
            ("DELETE", Some(_)) => send(agent.delete(&url).force_send_body()),
            ("POST", _) => send(agent.post(&url)),
            ("PUT", _) => send(agent.put(&url)),
            _ => send(agent.patch(&url)),
        };
        res.map_err(|e| self.transport_err(e))
    }

    /// Rate-limit, ask the write gate (if any), send, record metrics,
    /// decode failures into `Status`. A watch passes its idle timeout.
    fn once(
        &self,
        agent: &Agent,
        req: &Req<'_>,
        idle: Option<Duration>,
        gate: Option<&dyn WriteGate>,
    ) -> Result<Response<Body>, Error> {
        let wait = self.limiter.reserve();
        if !wait.is_zero() && !self.pause(wait) {
            return Err(Error::Shutdown);
        }
        if self.is_cancelled() {
            return Err(Error::Shutdown);
        }
        // Asked here, after the rate limiter's wait and before each retry:
        // a write that waited past its gate's deadline is never sent, nor
        // one whose connecting or sending would outlast it.
        let limit = match (idle, gate.map(|g| g.time_left())) {
            (Some(d), _) => Limit::Idle(d),
            (None, Some(Err(why))) => return Err(Error::Refused(why.to_string())),
            (None, Some(Ok(Some(d)))) => Limit::Within(d),
            (None, _) => Limit::Agent,
        };
        let pools = self.pools.load(Ordering::Acquire);
        let start = self.clock.now();
        let res = self.attempt(agent, req, limit);
        let end = self.clock.now();
        let secs = end.saturating_duration_since(start).as_secs_f64();
        let mut resp = match res {
            Ok(r) => r,
            Err(_) if self.is_cancelled() => return Err(Error::Shutdown),
            Err(e) => {
                // Not when we shut the connection's pool ourselves.
                let ours = self.pools.load(Ordering::Acquire) != pools;
                if e.is_unreachable() && !ours {
                    self.link.unreachable(end);
                }
                self.record(req, None, secs);
                return Err(e);
            }
        };
        let code = resp.status().as_u16();
        self.record(req, Some(code), secs);
        super::warnings::report(
            &self.server,
            resp.headers()
                .get_all(ureq::http::header::WARNING)
                .iter()
                .map(|v| v.as_bytes()),
        );
        // Any answer but one of an overloaded or failing server says the
        // server is there.
        if code < 500 && code != 429 {
            if let Some(gone) = self.link.answered(end) {
                log::info!(
                    "API server {} answers again (no request got through for {:.1} s)",
                    self.server,
                    gone.as_secs_f64()
                );
            }
        }
        if (200..300).contains(&code) {
            return Ok(resp);
        }
        let retry_after = resp
            .headers()
            .get("Retry-After")
            .and_then(|v| v.to_str().ok())
            .and_then(crate::kube::error::parse_retry_after);
        let body = resp
            .body_mut()
            .with_config()
            .limit(MAX_ERROR_BODY)
            .read_to_vec();
        let whole = body.is_ok();
        let mut status = Status::from_body(code, &body.unwrap_or_default(), retry_after);
        // A proxy answered for an API server it could not reach: as a
        // refused connection (a TCP-mode load balancer's answer). Not when
        // the body could not be read: that says nothing of who answered.
        status.gateway &= whole;
        if status.gateway {
            // Stamped now, not at `end`: the page took time to read, and an
            // answer to another request in that time must not supersede
            // the failure (see `Link::unreachable`).
            self.link.unreachable(self.clock.now());
        }
        Err(Error::Api(status))
    }

    /// An ordinary request with the retry policy and one re-authentication
    /// after a 401 when credentials can change (token files); a write is
    /// sent, and sent again, only while `gate` allows it.
    pub fn execute(
        &self,
        req: &Req<'_>,
        gate: Option<&dyn WriteGate>,
    ) -> Result<Response<Body>, Error> {
        let mut attempt = 0;
        let mut reauthed = false;
        loop {
            let agent = self
                .agent
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .agent
                .clone();
            let err = match self.once(&agent, req, None, gate) {
                Ok(r) => return Ok(r),
                Err(e) => e,
            };
            if matches!(err, Error::Transport { timeout: true, .. }) && !self.is_cancelled() {
                // The connection went silent, and the pool's idle ones
                // (opened the same way, through the same balancer) may
                // have too: the retry, and every later request, opens a
                // new connection instead of waiting out another.
                self.fresh_pool();
            }
            if err.is_unauthorized() && !reauthed && self.auth.refresh_after_unauthorized() {
                reauthed = true;
                continue;
            }
            let Some(delay) = self.retry.delay(req.verb, &err, attempt, fastrand::f64()) else {
                return Err(err);
            };
            // A retry the gate would refuse after the backoff is not waited
            // for: the caller gets the error that ended the last attempt.
            if let Some(g) = gate {
                match g.time_left() {
                    Err(_) => return Err(err),
                    Ok(Some(left)) if left <= delay => return Err(err),
                    Ok(_) => {}
                }
            }
            log::debug!(
                "{} {} failed ({err}); retry {} in {delay:?}",
                req.method,
                req.resource.label(),
                attempt + 1
            );
            if !self.pause(delay) {
                return Err(Error::Shutdown);
            }
            attempt += 1;
        }
    }

    /// Start a watch on the watch agent with a per-read idle timeout.
    pub fn start_watch(&self, req: &Req<'_>, idle: Duration) -> Result<Response<Body>, Error> {
        let agent = {
            let g = self.watch_agent.lock().unwrap_or_else(|p| p.into_inner());
            g.as_ref().map(|p| p.agent.clone()).ok_or(Error::Shutdown)?
        };
        match self.once(&agent, req, Some(idle), None) {
            Err(_) if self.watch_shutdown.load(Ordering::SeqCst) => Err(Error::Shutdown),
            Err(e) if e.is_unauthorized() && self.auth.refresh_after_unauthorized() => {
                self.once(&agent, req, Some(idle), None)
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::redact_userinfo;

    #[test]
    fn userinfo_never_survives() {
        let cases = [
            ("http://admin:hunter2@host:6443", "http://***@host:6443"),
            ("https://user@host/path?x=1", "https://***@host/path?x=1"),
            ("https://host:6443", "https://host:6443"),
            ("https://a:b@c@host/p@q", "https://***@host/p@q"),
            ("host:6443", "host:6443"),
            ("u:p@host", "***@host"),
        ];
        for (url, want) in cases {
            assert_eq!(redact_userinfo(url), want, "{url}");
        }
    }

    #[test]
    fn only_failures_to_reach_the_server_say_it_is_unreachable() {
        use std::io::{Error as IoError, ErrorKind};
        use ureq::{Error, Timeout};
        let table: Vec<(Error, bool)> = vec![
            (Error::Io(IoError::from(ErrorKind::ConnectionRefused)), true),
            (Error::Io(IoError::from(ErrorKind::ConnectionReset)), true),
            (Error::Io(IoError::other("Peer disconnected")), true),
            (Error::HostNotFound, true),
            (Error::ConnectionFailed, true),
            (Error::Timeout(Timeout::Resolve), true),
            (Error::Timeout(Timeout::Connect), true),
            (Error::Timeout(Timeout::SendRequest), true),
            (Error::Timeout(Timeout::SendBody), true),
            // A slow answer comes from a server that is there.
            (Error::Io(IoError::from(ErrorKind::TimedOut)), false),
            (Error::Timeout(Timeout::Global), false),
            (Error::Timeout(Timeout::RecvResponse), false),
            (Error::Timeout(Timeout::RecvBody), false),
            (Error::Timeout(Timeout::PerRead), false),
            // A refused handshake is not an outage.
            (Error::Tls("certificate not valid for name"), false),
            (Error::StatusCode(503), false),
        ];
        for (e, want) in table {
            assert_eq!(super::unreachable(&e), want, "{e}");
        }
    }
}
