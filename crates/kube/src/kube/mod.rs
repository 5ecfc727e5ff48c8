//! Blocking Kubernetes API client on ureq 3 + rustls (ring): configuration
//! (kubeconfig, in-cluster), authentication, TLS, typed `Status` errors,
//! client-side rate limiting, bounded retries, streaming list/watch
//! decoding and request metrics.
//!
//! Owns every byte endpointd sends to or receives from the API server. Must
//! never log a secret (tokens and keys are redacted in `Debug`), never
//! disable TLS verification unless the kubeconfig says so, never read time
//! except through `endpointd_base::clock`, and never buffer a whole LIST body.
//!
//! # Layout (one concept a file)
//! * `files` — every file read, bounded: regular files only, a cap each.
//! * `kubeconfig` — pure parse + context resolution; `config` — loading
//!   ([`ClientConfig`]: kubeconfig file/str, in-cluster, `infer`).
//! * `auth` — bearer token, token file (re-read every 60 s and after a
//!   401), basic auth; `tls` — PEM → rustls via ureq, cert/key pair check,
//!   `tls-server-name` via a pinned resolver.
//! * `request` — pure paths and query strings; `watch` — pure event
//!   decoding over `BufRead`; `error` — [`Status`] and [`Error`].
//! * `link` — whether the server is reachable, shared by the clients of
//!   one server (a success after an outage ends informers' backoffs).
//! * `warnings` — the server's `Warning` headers, each text logged once.
//! * `ratelimit` — the shared token bucket; `retry` — the pure retry
//!   policy; `metrics` — `rest_client_*` families (once per registry);
//!   `transport` — agents, one attempt, the retry loop;
//!   `client` — the typed operations.
//!
//! # Defaults and why
//! * qps 20 / burst 30: kube-controller-manager's `--kube-api-qps/burst`.
//!   One bucket per [`Client`], shared by all clones, reservation semantics
//!   (x/time/rate) so waiters are served in order.
//! * `request_timeout` 30 s for ordinary calls (whole request), connect
//!   timeout 10 s; each attempt of a write at most `write_timeout` (10 s).
//!   An attempt that times out drops the client's idle pooled connections:
//!   when a server is lost behind a load balancer its connections go
//!   silent (neither answered nor closed) while new ones reach a healthy
//!   server, so the retry must not take another silent one from the pool. Watches run on a second agent without a global timeout;
//!   a per-read idle timeout of `timeoutSeconds` + 15 s — at most
//!   `watch_idle_timeout` (2 min) when bookmarks are requested — detects
//!   dead connections (load balancers that silently drop long requests).
//!   Every socket has TCP keepalive (`keepalive`: 30 s idle, 10 s × 3).
//! * Retries: at most 3, only 429 (any verb) and 5xx/transport failures
//!   (idempotent verbs), honouring `Retry-After` (at most 30 s from the server, each wait at most `max_retry_delay`, 10 s); watches are
//!   never retried here (the reflector owns that backoff). See `retry`.
//! * HTTP/1.1 keep-alive through ureq's pool: each concurrent watch holds
//!   its own connection (no HTTP/2), which is fine for the ~6 watches of
//!   endpointd. The pool keeps up to 25 idle connections per agent
//!   (client-go's `MaxIdleConnsPerHost`; the daemon raises it to cover a
//!   controller's workers) for 60 s (client-go 90 s, as long as
//!   kube-apiserver's idle timeout; 60 s stays clear of the server's close).
//!   ureq's defaults, 3 for 15 s, made every answer past the third close its
//!   connection, and a quiet cluster's every write a new TLS handshake.
//! * JSON only (no protobuf); LIST pages are parsed from the socket with a
//!   64 KiB buffer, so a page never exists twice in memory; every non-watch
//!   body is capped (`body`: 64 MiB, and a LIST page's items), so a hostile
//!   server cannot grow endpointd without bound.
//!
//! # Shutdown
//! [`Client::shutdown_watches`] shuts the watch agent: blocked watch reads
//! return [`Error::Shutdown`] at once, while ordinary requests (e.g. the
//! final Lease release) keep working on the other agent.
//! [`Client::cancel`] ends everything of a client: requests in flight,
//! retry and rate-limiter waits, and every later request.

mod auth;
pub mod body;
mod client;
mod config;
mod error;
pub mod files;
mod gate;
pub mod keepalive;
mod kubeconfig;
pub mod link;
mod metrics;
pub mod paging;
pub mod perms;
mod ratelimit;
pub mod request;
mod retry;
mod tls;
mod transport;
pub mod warnings;
pub mod watch;

pub use auth::{Auth, TokenFile, TOKEN_FILE_REFRESH};
pub use body::{BodyLimits, DEFAULT_MAX_LIST_ITEMS, DEFAULT_MAX_RESPONSE_BYTES};
pub use client::{Client, ObjectList, DEFAULT_WATCH_TIMEOUT};
pub use config::{ClientConfig, TlsMaterial, DEFAULT_WRITE_TIMEOUT, SERVICE_ACCOUNT_DIR};
pub use error::{Cause, Error, Status};
pub use gate::{Refusal, WriteGate};
pub use link::Link;
pub use ratelimit::ClientRateLimiter;
pub use request::{
    ListParams, PatchType, Preconditions, Resource, WatchParams, ENDPOINTS, ENDPOINTSLICES,
    EVENTS_V1, LEASES, NAMESPACES, NODES, PODS, SERVICES,
};
pub use watch::{WatchEvent, WatchStream};
