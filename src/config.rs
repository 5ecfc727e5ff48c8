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
mod effective;
mod raw;
mod validate;

pub use duration::{format_duration, parse_duration, DurationError};
pub use endpointd_base::names::{is_dns1123_label, is_dns1123_subdomain};

use effective::{flatten, Effective};
use endpointd_kube::kube::files;
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
    /// `[mode]`
    pub mode: Mode,
}

/// How the daemon runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Mode {
    /// Shadow mode: compute and compare, never write Endpoints,
    /// EndpointSlices or Events (`endpointd run --shadow` sets it too).
    pub shadow: bool,
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
    /// Informers sync through watch-list (`sendInitialEvents`) instead of
    /// paginated LISTs.
    pub watch_list: bool,
    /// Cap on one non-watch response body, in bytes.
    pub max_response_bytes: u64,
    /// Cap on the objects of one LIST (all pages together).
    pub max_list_items: usize,
    /// A watch silent for longer than this is restarted.
    pub watch_idle_timeout: Duration,
}

/// Smallest `kubernetes.max_response_bytes` (1 MiB): below it, ordinary
/// pages of a real cluster would fail.
pub const MIN_RESPONSE_BYTES: i64 = 1 << 20;

/// Smallest `kubernetes.watch_idle_timeout`: kube-apiserver sends a
/// bookmark about once a minute, so a shorter bound would restart healthy
/// quiet watches.
pub const MIN_WATCH_IDLE_TIMEOUT: Duration = Duration::from_secs(70);

/// Shortest `kubernetes.request_timeout`: below a second ordinary requests
/// fail on any busy server, and a typo such as "1ns" fails every one.
pub const MIN_REQUEST_TIMEOUT: Duration = Duration::from_secs(1);

/// Longest `leader_election.identity`, in bytes. The Lease's
/// holderIdentity has no hard API limit, but the identity is also every
/// Event's `reportingInstance`, which kube-apiserver refuses past 128
/// (an identity of 300 characters lost the "became leader" Event), and it
/// goes into every request's User-Agent (at 70,000 every request failed).
/// The default `<hostname>_<uuid>` is at most 64 + 1 + 36 = 101.
pub const MAX_IDENTITY_BYTES: usize = 128;

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
    /// Duration of this instance's identity Lease (the heartbeat), renewed
    /// every quarter of it.
    pub heartbeat_duration: Duration,
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
        let read = files::read_bounded_string(path, files::MAX_CONFIG_BYTES, "configuration file");
        match read {
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
        validate::validate(file, text, raw)
    }

    /// The effective configuration (defaults filled in) as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(&Effective::of(self))
            .unwrap_or_else(|e| format!("# cannot render configuration: {e}\n"))
    }

    /// Key paths whose values differ between `self` and `new` and that only
    /// take effect after a restart (everything but `log.level`).
    pub fn changes_needing_restart(&self, new: &Config) -> Vec<String> {
        let a = flatten(&Effective::of(self));
        let b = flatten(&Effective::of(new));
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
#[allow(unsafe_code)] // a libc call or a checked invariant: see SAFETY inside
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

#[cfg(test)]
mod tests;
