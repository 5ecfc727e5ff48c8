//! The TOML configuration: parse, fill defaults, validate, print.
//!
//! Two stages, like ripgrep's: the file is read into raw, spanned values
//! (every key optional, unknown keys rejected), then validated into a
//! [`Config`] of typed values with every default filled in. The key names
//! are a contract with operators' scripts and docs: change none of them.
//! Defaults are kube-controller-manager's where KCM has the same knob.
//!
//! Every error names the file, the key path, the offending value and, where
//! the TOML parser gives a position, the line. This module never reads the
//! kubeconfig (the `kube` module resolves it) and never logs.

mod duration;
mod raw;

pub use duration::{format_duration, parse_duration};

use raw::{Field, RawConfig};
use serde::Serialize;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default config path of the systemd unit and `endpointd run`.
pub const DEFAULT_CONFIG_PATH: &str = "/etc/endpointd/config.toml";

/// client-go leader election's jitter factor: renew_deadline must exceed
/// retry_period × this.
pub const LEADER_ELECTION_JITTER_FACTOR: f64 = 1.2;

/// Upper bound of `max_endpoints_per_slice` (the API's own limit).
pub const MAX_ENDPOINTS_PER_SLICE_LIMIT: u32 = 1000;

/// The validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `[kubernetes]`
    pub kubernetes: Kubernetes,
    /// `[leader_election]`
    pub leader_election: LeaderElection,
    /// `[endpoints]`
    pub endpoints: Endpoints,
    /// `[endpointslices]`
    pub endpointslices: EndpointSlices,
    /// `[server]`
    pub server: Server,
    /// `[log]`
    pub log: Log,
}

/// How to reach the API server.
#[derive(Debug, Clone, PartialEq)]
pub struct Kubernetes {
    /// Explicit kubeconfig; `None` → `$KUBECONFIG`, in-cluster, `~/.kube/config`.
    pub kubeconfig: Option<PathBuf>,
    /// Context to use instead of `current-context`.
    pub context: Option<String>,
    /// Client-side sustained request rate.
    pub qps: f64,
    /// Client-side burst.
    pub burst: u32,
    /// Timeout of ordinary (non-watch) requests.
    pub request_timeout: Duration,
}

/// Lease-based leader election (coordination.k8s.io/v1).
#[derive(Debug, Clone, PartialEq)]
pub struct LeaderElection {
    /// Whether to elect at all (false: always write).
    pub enabled: bool,
    /// Namespace of the Lease.
    pub lease_namespace: String,
    /// Name of the Lease.
    pub lease_name: String,
    /// holderIdentity written into the Lease.
    pub identity: String,
    /// True when `identity` was generated (hostname + random suffix).
    pub identity_generated: bool,
    /// How long a lease is valid after a renewal.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up.
    pub renew_deadline: Duration,
    /// Interval between acquire/renew attempts.
    pub retry_period: Duration,
}

/// The Endpoints controller.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoints {
    /// Whether to run it.
    pub enabled: bool,
    /// Concurrent syncs (KCM `--concurrent-endpoint-syncs`).
    pub workers: usize,
    /// Pod-event batching (KCM `--endpoint-updates-batch-period`).
    pub batch_period: Duration,
}

/// The EndpointSlice controller.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointSlices {
    /// Whether to run it.
    pub enabled: bool,
    /// Concurrent syncs (KCM `--concurrent-service-endpoint-syncs`).
    pub workers: usize,
    /// KCM `--max-endpoints-per-slice`.
    pub max_endpoints_per_slice: u32,
    /// KCM `--endpointslice-updates-batch-period`.
    pub batch_period: Duration,
}

/// The metrics and health endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    /// Listen address; `None` disables the endpoint.
    pub listen: Option<SocketAddr>,
}

/// Logging.
#[derive(Debug, Clone, PartialEq)]
pub struct Log {
    /// Maximum level (`RUST_LOG` overrides).
    pub level: log::LevelFilter,
}

/// One problem in a configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file, as given.
    pub file: String,
    /// Dotted key path (`endpoints.workers`), when known.
    pub key: Option<String>,
    /// The offending value as written, when known.
    pub value: Option<String>,
    /// 1-based line, when the parser gave a position.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.file)?;
        match (&self.key, &self.value) {
            (Some(k), Some(v)) => write!(f, "{k} = {v}: ")?,
            (Some(k), None) => write!(f, "{k}: ")?,
            _ => {}
        }
        write!(f, "{}", self.message)?;
        if let Some(l) = self.line {
            write!(f, " (line {l})")?;
        }
        Ok(())
    }
}

/// Every problem found in one file (never empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

impl Config {
    /// Read and validate a file.
    pub fn load(path: &Path) -> Result<Config, ConfigErrors> {
        let file = path.display().to_string();
        match std::fs::read_to_string(path) {
            Ok(text) => Config::parse(&file, &text),
            Err(e) => Err(ConfigErrors(vec![ConfigError {
                file,
                key: None,
                value: None,
                line: None,
                message: format!("cannot read the configuration file: {e}"),
            }])),
        }
    }

    /// Parse and validate TOML text; `file` is only used in messages.
    pub fn parse(file: &str, text: &str) -> Result<Config, ConfigErrors> {
        let raw = raw::parse(file, text).map_err(|e| ConfigErrors(vec![e]))?;
        let mut v = Validator {
            file,
            text,
            errors: Vec::new(),
        };
        let cfg = v.config(raw);
        if v.errors.is_empty() {
            Ok(cfg)
        } else {
            Err(ConfigErrors(v.errors))
        }
    }

    /// The effective configuration (defaults filled in) as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(&self.effective())
            .unwrap_or_else(|e| format!("# cannot render configuration: {e}\n"))
    }

    /// Key paths whose values differ between `self` and `new` and that only
    /// take effect after a restart (everything but `log.level`).
    pub fn changes_needing_restart(&self, new: &Config) -> Vec<String> {
        let a = flatten(&self.effective());
        let b = flatten(&new.effective());
        let generated =
            self.leader_election.identity_generated && new.leader_election.identity_generated;
        let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        keys.into_iter()
            .filter(|k| a.get(*k) != b.get(*k))
            .filter(|k| k.as_str() != "log.level")
            .filter(|k| !(generated && k.as_str() == "leader_election.identity"))
            .cloned()
            .collect()
    }

    fn effective(&self) -> Effective {
        let k = &self.kubernetes;
        let le = &self.leader_election;
        let ep = &self.endpoints;
        let es = &self.endpointslices;
        Effective {
            kubernetes: EffKubernetes {
                kubeconfig: k.kubeconfig.as_ref().map(|p| p.display().to_string()),
                context: k.context.clone(),
                qps: k.qps,
                burst: k.burst,
                request_timeout: format_duration(k.request_timeout),
            },
            leader_election: EffLeaderElection {
                enabled: le.enabled,
                lease_namespace: le.lease_namespace.clone(),
                lease_name: le.lease_name.clone(),
                identity: le.identity.clone(),
                lease_duration: format_duration(le.lease_duration),
                renew_deadline: format_duration(le.renew_deadline),
                retry_period: format_duration(le.retry_period),
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
                listen: self
                    .server
                    .listen
                    .map(|a| a.to_string())
                    .unwrap_or_default(),
            },
            log: EffLog {
                level: self.log.level.to_string().to_ascii_lowercase(),
            },
        }
    }
}

impl Default for Config {
    /// The configuration of an empty file.
    fn default() -> Config {
        match Config::parse("<defaults>", "") {
            Ok(c) => c,
            // The defaults are constants validated by tests; this cannot fail.
            Err(e) => panic!("built-in defaults are invalid: {e}"),
        }
    }
}

fn flatten(e: &Effective) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
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

/// Turns raw spanned values into a [`Config`], collecting every error.
struct Validator<'a> {
    file: &'a str,
    text: &'a str,
    errors: Vec<ConfigError>,
}

impl Validator<'_> {
    fn fail<T: fmt::Debug>(&mut self, key: &str, f: &Field<T>, message: impl Into<String>) {
        self.errors.push(ConfigError {
            file: self.file.to_string(),
            key: Some(key.to_string()),
            value: f.as_ref().map(|s| raw::show(s.get_ref())),
            line: f.as_ref().map(|s| raw::line_of(self.text, s.span().start)),
            message: message.into(),
        });
    }

    fn duration(&mut self, key: &str, f: &Field<String>, default: Duration) -> Duration {
        let Some(s) = f else { return default };
        match parse_duration(s.get_ref()) {
            Ok(d) => d,
            Err(e) => {
                self.fail(key, f, e);
                default
            }
        }
    }

    fn workers(&mut self, key: &str, f: &Field<i64>, default: usize) -> usize {
        match f.as_ref().map(|s| *s.get_ref()) {
            None => default,
            Some(n) if n >= 1 => n as usize,
            Some(_) => {
                self.fail(key, f, "must be at least 1");
                default
            }
        }
    }

    fn name(&mut self, key: &str, f: Field<String>, default: &str, subdomain: bool) -> String {
        let Some(s) = &f else {
            return default.to_string();
        };
        let v = s.get_ref();
        let ok = if subdomain {
            is_dns1123_subdomain(v)
        } else {
            is_dns1123_label(v)
        };
        if !ok {
            let what = if subdomain {
                "must be a DNS-1123 subdomain (lower-case alphanumerics, '-' and '.', at most 253 characters)"
            } else {
                "must be a DNS-1123 label (lower-case alphanumerics and '-', at most 63 characters)"
            };
            self.fail(key, &f, what);
        }
        v.clone()
    }

    fn config(&mut self, raw: RawConfig) -> Config {
        Config {
            kubernetes: self.kubernetes(raw.kubernetes.unwrap_or_default()),
            leader_election: self.leader_election(raw.leader_election.unwrap_or_default()),
            endpoints: self.endpoints(raw.endpoints.unwrap_or_default()),
            endpointslices: self.endpointslices(raw.endpointslices.unwrap_or_default()),
            server: self.server(raw.server.unwrap_or_default()),
            log: self.log(raw.log.unwrap_or_default()),
        }
    }

    fn kubernetes(&mut self, r: raw::Kubernetes) -> Kubernetes {
        let kubeconfig = match &r.kubeconfig {
            Some(s) if s.get_ref().is_empty() => {
                self.fail("kubernetes.kubeconfig", &r.kubeconfig, "must not be empty (omit the key to use $KUBECONFIG, in-cluster or ~/.kube/config)");
                None
            }
            Some(s) => Some(PathBuf::from(s.get_ref())),
            None => None,
        };
        let context = match &r.context {
            Some(s) if s.get_ref().is_empty() => {
                self.fail(
                    "kubernetes.context",
                    &r.context,
                    "must not be empty (omit the key to use current-context)",
                );
                None
            }
            s => s.as_ref().map(|s| s.get_ref().clone()),
        };
        let qps = match r.qps.as_ref().map(|s| *s.get_ref()) {
            None => 20.0,
            Some(q) if q.is_finite() && q > 0.0 => q,
            Some(_) => {
                self.fail("kubernetes.qps", &r.qps, "must be a number greater than 0");
                20.0
            }
        };
        let burst = match r.burst.as_ref().map(|s| *s.get_ref()) {
            None => 30,
            Some(b) if (1..=i64::from(u32::MAX)).contains(&b) => b as u32,
            Some(_) => {
                self.fail("kubernetes.burst", &r.burst, "must be at least 1");
                30
            }
        };
        let request_timeout = self.duration(
            "kubernetes.request_timeout",
            &r.request_timeout,
            Duration::from_secs(30),
        );
        if r.request_timeout.is_some() && request_timeout.is_zero() {
            self.fail(
                "kubernetes.request_timeout",
                &r.request_timeout,
                "must be greater than 0",
            );
        }
        Kubernetes {
            kubeconfig,
            context,
            qps,
            burst,
            request_timeout,
        }
    }

    fn leader_election(&mut self, r: raw::LeaderElection) -> LeaderElection {
        let le = "leader_election";
        let lease_namespace = self.name(
            "leader_election.lease_namespace",
            r.lease_namespace,
            "kube-system",
            false,
        );
        let lease_name = self.name(
            "leader_election.lease_name",
            r.lease_name,
            "endpointd",
            true,
        );
        let (identity, identity_generated) = match &r.identity {
            Some(s) if s.get_ref().trim().is_empty() => {
                self.fail(
                    "leader_election.identity",
                    &r.identity,
                    "must not be empty (omit the key for hostname + random suffix)",
                );
                (default_identity(), true)
            }
            Some(s) => (s.get_ref().clone(), false),
            None => (default_identity(), true),
        };
        let lease_duration = self.duration(
            "leader_election.lease_duration",
            &r.lease_duration,
            Duration::from_secs(15),
        );
        let renew_deadline = self.duration(
            "leader_election.renew_deadline",
            &r.renew_deadline,
            Duration::from_secs(10),
        );
        let retry_period = self.duration(
            "leader_election.retry_period",
            &r.retry_period,
            Duration::from_secs(2),
        );
        // client-go NewLeaderElector's checks, in its order.
        for (key, f, d) in [
            ("lease_duration", &r.lease_duration, lease_duration),
            ("renew_deadline", &r.renew_deadline, renew_deadline),
            ("retry_period", &r.retry_period, retry_period),
        ] {
            if d.is_zero() {
                self.fail(&format!("{le}.{key}"), f, "must be greater than 0");
            }
        }
        if lease_duration <= renew_deadline {
            let msg = format!(
                "must be greater than leader_election.renew_deadline ({})",
                format_duration(renew_deadline)
            );
            self.fail("leader_election.lease_duration", &r.lease_duration, msg);
        }
        let jittered = retry_period.mul_f64(LEADER_ELECTION_JITTER_FACTOR);
        if !renew_deadline.is_zero() && renew_deadline <= jittered {
            let msg = format!(
                "must be greater than leader_election.retry_period × {LEADER_ELECTION_JITTER_FACTOR} ({})",
                format_duration(jittered)
            );
            self.fail("leader_election.renew_deadline", &r.renew_deadline, msg);
        }
        LeaderElection {
            enabled: r.enabled.map(|s| s.into_inner()).unwrap_or(true),
            lease_namespace,
            lease_name,
            identity,
            identity_generated,
            lease_duration,
            renew_deadline,
            retry_period,
        }
    }

    fn endpoints(&mut self, r: raw::Endpoints) -> Endpoints {
        Endpoints {
            enabled: r.enabled.map(|s| s.into_inner()).unwrap_or(true),
            workers: self.workers("endpoints.workers", &r.workers, 5),
            batch_period: self.duration("endpoints.batch_period", &r.batch_period, Duration::ZERO),
        }
    }

    fn endpointslices(&mut self, r: raw::EndpointSlices) -> EndpointSlices {
        let max = match r.max_endpoints_per_slice.as_ref().map(|s| *s.get_ref()) {
            None => 100,
            Some(n) if (1..=i64::from(MAX_ENDPOINTS_PER_SLICE_LIMIT)).contains(&n) => n as u32,
            Some(_) => {
                let msg = format!("must be between 1 and {MAX_ENDPOINTS_PER_SLICE_LIMIT}");
                self.fail(
                    "endpointslices.max_endpoints_per_slice",
                    &r.max_endpoints_per_slice,
                    msg,
                );
                100
            }
        };
        EndpointSlices {
            enabled: r.enabled.map(|s| s.into_inner()).unwrap_or(true),
            workers: self.workers("endpointslices.workers", &r.workers, 5),
            max_endpoints_per_slice: max,
            batch_period: self.duration(
                "endpointslices.batch_period",
                &r.batch_period,
                Duration::ZERO,
            ),
        }
    }

    fn server(&mut self, r: raw::Server) -> Server {
        let listen = match &r.listen {
            None => Some(SocketAddr::from(([127, 0, 0, 1], 10266))),
            Some(s) if s.get_ref().is_empty() => None,
            Some(s) => match s.get_ref().parse::<SocketAddr>() {
                Ok(a) => Some(a),
                Err(_) => {
                    self.fail(
                        "server.listen",
                        &r.listen,
                        "must be an IP socket address such as \"127.0.0.1:10266\" or \"[::1]:10266\", or \"\" to disable",
                    );
                    None
                }
            },
        };
        Server { listen }
    }

    fn log(&mut self, r: raw::Log) -> Log {
        let level = match &r.level {
            None => log::LevelFilter::Info,
            Some(s) => match s.get_ref().to_ascii_lowercase().parse::<log::LevelFilter>() {
                Ok(l) => l,
                Err(_) => {
                    self.fail(
                        "log.level",
                        &r.level,
                        "must be one of \"off\", \"error\", \"warn\", \"info\", \"debug\", \"trace\"",
                    );
                    log::LevelFilter::Info
                }
            },
        };
        Log { level }
    }
}

/// client-go / KCM default identity: hostname + "_" + a random UUID.
pub fn default_identity() -> String {
    format!(
        "{}_{}",
        hostname().unwrap_or_else(|| "localhost".into()),
        random_uuid()
    )
}

/// The kernel's host name (gethostname(2); works under `ProcSubset=pid`,
/// which hides /proc/sys).
pub fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length and gethostname
    // writes at most `len` bytes into it.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..end]).trim().to_string();
    (!name.is_empty()).then_some(name)
}

/// A random (version 4) UUID string.
pub fn random_uuid() -> String {
    let a = fastrand::u64(..);
    let b = fastrand::u64(..);
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0x0fff,
        0x8000 | ((b >> 48) & 0x3fff),
        b & 0xffff_ffff_ffff
    )
}

/// RFC 1123 label: 1–63 lower-case alphanumerics or '-', alphanumeric at both ends.
pub fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// RFC 1123 subdomain: dot-separated labels, at most 253 characters.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

#[derive(Serialize)]
struct Effective {
    kubernetes: EffKubernetes,
    leader_election: EffLeaderElection,
    endpoints: EffEndpoints,
    endpointslices: EffEndpointSlices,
    server: EffServer,
    log: EffLog,
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

#[cfg(test)]
mod tests;
