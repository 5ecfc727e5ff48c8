//! The checks of `endpointd preflight` as pure functions: fetched facts
//! ([`PreflightInputs`]) → one [`Check`] per line. No I/O and no clock: `now` comes
//! in with the facts.
//!
//! Thresholds (see docs/operations.md, "Before the hand-over"):
//! * clock skew: the server's `Date` has whole seconds, so the skew is
//!   known to ±(0.5 s + half the round trip); warn when it is surely over
//!   [`SKEW_WARN`] (1 s), fail when surely over `lease_duration −
//!   renew_deadline` (5 s by default);
//! * KCM's writes: `kube-controller-manager` as the latest manager of an
//!   Endpoints or endpointslice-controller slice written within
//!   [`RECENT`] (1 h) warns;
//! * a bearer token: expired fails, expiring within [`TOKEN_SOON`] (a
//!   day) warns;
//! * the kubeconfig: group- or world-readable warns; no TLS verification
//!   (`insecure-skip-tls-verify`, or plain `http://`) fails when a token or
//!   password goes to the server that way, else warns.

use super::permissions::{Permission, Scope};
use serde::Serialize;
use std::time::{Duration, SystemTime};

/// Skew surely above this warns.
pub const SKEW_WARN: Duration = Duration::from_secs(1);
/// A KCM write this recent means KCM still runs its controllers.
pub const RECENT: Duration = Duration::from_secs(3600);
/// A bearer token expiring within this warns.
pub const TOKEN_SOON: Duration = Duration::from_secs(24 * 3600);
/// The field manager of kube-controller-manager's writes.
pub const KCM_MANAGER: &str = "kube-controller-manager";

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Nothing to do.
    Ok,
    /// Look at it before the hand-over.
    Warn,
    /// The hand-over would go wrong: fix it first.
    Fail,
}

impl Level {
    /// `ok`, `warn` or `fail`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Fail => "fail",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Outcome.
    pub level: Level,
    /// Stable name (`permissions/endpoints`, `clock/skew`, …).
    pub name: String,
    /// What was found and, unless ok, what to do.
    pub message: String,
}

fn check(level: Level, name: impl Into<String>, message: impl Into<String>) -> Check {
    Check {
        level,
        name: name.into(),
        message: message.into(),
    }
}

/// The answer to one access review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    /// `status.allowed`.
    pub allowed: bool,
    /// `status.reason` ("" when none).
    pub reason: String,
}

/// `/version`, the parts used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerVersion {
    /// Major (1).
    pub major: u32,
    /// Minor (33; "33+" read as 33).
    pub minor: u32,
    /// `gitVersion`.
    pub git_version: String,
}

/// The server's `Date` against the local clock around the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateSample {
    /// Local time when the request was sent.
    pub sent: SystemTime,
    /// Local time when the answer arrived.
    pub received: SystemTime,
    /// The server's `Date` (whole seconds, truncated).
    pub server: SystemTime,
}

/// The election Lease as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRecord {
    /// `holderIdentity` ("" when free).
    pub holder: String,
    /// `renewTime`.
    pub renew_time: Option<SystemTime>,
    /// `leaseDurationSeconds`.
    pub duration_seconds: Option<i32>,
}

/// The latest managedFields write of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatestWrite {
    /// `namespace/name`.
    pub key: String,
    /// The manager.
    pub manager: String,
    /// Its time.
    pub time: SystemTime,
}

/// The kubeconfig's facts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubeconfigFacts {
    /// The file (`None`: in-cluster credentials).
    pub path: Option<String>,
    /// Its permission bits, when it could be read.
    pub mode: Option<u32>,
    /// The server URL.
    pub server: String,
    /// `insecure-skip-tls-verify`.
    pub insecure: bool,
    /// A token or password is sent (not only a client certificate).
    pub sends_secret: bool,
    /// The bearer token (static or from a file), if any.
    pub token: Option<String>,
    /// The token comes from a file that is re-read (`tokenFile`, in-cluster).
    pub token_from_file: bool,
}

/// The configuration the checks judge against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `leader_election.enabled`.
    pub election: bool,
    /// `leader_election.lease_namespace`.
    pub lease_namespace: String,
    /// `leader_election.lease_name`.
    pub lease_name: String,
    /// `leader_election.lease_duration`.
    pub lease_duration: Duration,
    /// `leader_election.renew_deadline`.
    pub renew_deadline: Duration,
    /// `kubernetes.watch_list`.
    pub watch_list: bool,
}

/// A fetch's result: the value, or why it could not be read.
pub type Fetch<T> = Result<T, FetchError>;

/// Why a fetch failed. Cloneable (the inputs are), so the client error is
/// shared.
#[derive(Debug, Clone)]
pub enum FetchError {
    /// The request failed.
    Kube(std::sync::Arc<endpointd_kube::kube::Error>),
    /// A request body could not be built.
    Body(std::sync::Arc<serde_json::Error>),
    /// A LIST of `resource` was cut short.
    Paging {
        /// The resource's label.
        resource: String,
        /// Why.
        source: endpointd_kube::kube::paging::PagingError,
    },
    /// A SelfSubjectAccessReview answer without `status.allowed`.
    NoAllowed,
    /// Not fetched, for the reason given (the API server is unreachable,
    /// the `/version` request failed).
    Reason(String),
}

impl From<endpointd_kube::kube::Error> for FetchError {
    fn from(e: endpointd_kube::kube::Error) -> Self {
        FetchError::Kube(std::sync::Arc::new(e))
    }
}

impl From<&str> for FetchError {
    fn from(reason: &str) -> Self {
        FetchError::Reason(reason.to_string())
    }
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Kube(e) => write!(f, "{e}"),
            FetchError::Body(e) => write!(f, "{e}"),
            FetchError::Paging { resource, source } => write!(f, "listing {resource}: {source}"),
            FetchError::NoAllowed => f.write_str("the review came back without status.allowed"),
            FetchError::Reason(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for FetchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FetchError::Kube(e) => Some(e.as_ref()),
            FetchError::Body(e) => Some(e.as_ref()),
            FetchError::Paging { source, .. } => Some(source),
            FetchError::NoAllowed | FetchError::Reason(_) => None,
        }
    }
}

/// Everything the checks look at.
#[derive(Debug, Clone)]
pub struct PreflightInputs {
    /// The local time after the fetches.
    pub now: SystemTime,
    /// The configuration.
    pub settings: Settings,
    /// The kubeconfig.
    pub kubeconfig: KubeconfigFacts,
    /// Each permission with its review.
    pub permissions: Vec<(Permission, Fetch<Review>)>,
    /// `/version`.
    pub version: Fetch<ServerVersion>,
    /// The `Date` sample (`Ok(None)`: the server sent no `Date`).
    pub date: Fetch<Option<DateSample>>,
    /// Whether the lease namespace exists.
    pub lease_namespace: Fetch<bool>,
    /// The election Lease (`None`: not created yet).
    pub lease: Fetch<Option<LeaseRecord>>,
    /// trafficDistribution values of the Services (value, count).
    pub traffic_distribution: Fetch<Vec<(String, usize)>>,
    /// Latest writes of Endpoints.
    pub endpoints_writes: Fetch<Vec<LatestWrite>>,
    /// Latest writes of the endpointslice-controller's EndpointSlices.
    pub slice_writes: Fetch<Vec<LatestWrite>>,
}

/// Every check, in report order.
pub fn checks(i: &PreflightInputs) -> Vec<Check> {
    let mut out = Vec::new();
    out.extend(kubeconfig_mode(&i.kubeconfig));
    out.push(tls(&i.kubeconfig));
    out.push(token_expiry(&i.kubeconfig, i.now));
    out.extend(permissions(&i.permissions, &i.settings));
    out.extend(version(&i.version, &i.settings, &i.traffic_distribution));
    out.push(skew(&i.date, &i.settings));
    out.extend(lease(i));
    let skew = i.date.as_ref().ok().copied().flatten().map(estimate);
    let server_now = match skew {
        Some((s, _)) => shift(i.now, s),
        None => i.now,
    };
    out.push(kcm_writes(
        "handover/endpoints",
        "Endpoints",
        &i.endpoints_writes,
        server_now,
    ));
    out.push(kcm_writes(
        "handover/endpointslices",
        "EndpointSlices",
        &i.slice_writes,
        server_now,
    ));
    out
}

/// Whether any check failed.
pub fn failed(checks: &[Check]) -> bool {
    checks.iter().any(|c| c.level == Level::Fail)
}

fn secs(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=119 => format!("{:.1} s", d.as_secs_f64()),
        120..=7199 => format!("{} min", s / 60),
        7200..=172_799 => format!("{} h", s / 3600),
        _ => format!("{} days", s / 86400),
    }
}

/// `t + s` for a signed number of seconds.
fn shift(t: SystemTime, s: f64) -> SystemTime {
    let d = Duration::from_secs_f64(s.abs());
    match s >= 0.0 {
        true => t.checked_add(d).unwrap_or(t),
        false => t.checked_sub(d).unwrap_or(t),
    }
}

/// Seconds from `a` to `b` (negative when `b` is earlier).
fn diff(a: SystemTime, b: SystemTime) -> f64 {
    match b.duration_since(a) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

/// The kubeconfig's file mode.
pub fn kubeconfig_mode(k: &KubeconfigFacts) -> Option<Check> {
    let name = "kubeconfig/file-mode";
    let path = k.path.as_ref()?;
    Some(match k.mode {
        None => check(
            Level::Warn,
            name,
            format!("cannot read the mode of {path}; make sure only endpointd's user can read it"),
        ),
        Some(m) if m & 0o044 != 0 => check(
            Level::Warn,
            name,
            format!(
                "{path} is {} (mode {:04o}) and holds credentials: chmod 0600 {path}",
                match m & 0o004 != 0 {
                    true => "world-readable",
                    false => "group-readable",
                },
                m & 0o7777
            ),
        ),
        Some(m) => check(Level::Ok, name, format!("{path}: mode {:04o}", m & 0o7777)),
    })
}

fn is_loopback(server: &str) -> bool {
    let rest = server
        .split_once("://")
        .map_or(server, |(_, r)| r)
        .trim_start_matches('[');
    ["127.", "localhost", "::1"]
        .iter()
        .any(|p| rest.starts_with(p))
}

/// TLS verification of the API server.
pub fn tls(k: &KubeconfigFacts) -> Check {
    let name = "kubeconfig/tls";
    let plain = k.server.starts_with("http://");
    match (plain, k.insecure, k.sends_secret) {
        (true, _, true) if !is_loopback(&k.server) => check(
            Level::Fail,
            name,
            format!("{} is plain HTTP and the kubeconfig sends a token or password over it: use https with certificate-authority", k.server),
        ),
        (true, _, _) => check(
            Level::Warn,
            name,
            format!("{} is plain HTTP: answers are not authenticated; use https with certificate-authority", k.server),
        ),
        (false, true, true) => check(
            Level::Fail,
            name,
            "insecure-skip-tls-verify is set and a token or password is sent: anyone on the path can take it and impersonate the API server; set certificate-authority(-data) instead",
        ),
        (false, true, false) => check(
            Level::Warn,
            name,
            "insecure-skip-tls-verify is set: the API server's certificate is not verified, anyone on the path can feed endpointd false pods; set certificate-authority(-data) instead",
        ),
        (false, false, _) => check(Level::Ok, name, "the API server's certificate is verified"),
    }
}

/// The payload of a JWT, decoded without verifying it.
pub fn jwt_exp(token: &str) -> Option<SystemTime> {
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let bytes = base64url(payload)?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let exp = v.get("exp")?.as_f64()?;
    if !exp.is_finite() || exp < 0.0 {
        return None;
    }
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs_f64(exp))
}

/// Unpadded (or padded) base64url.
fn base64url(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// A bearer token's expiry.
pub fn token_expiry(k: &KubeconfigFacts, now: SystemTime) -> Check {
    let name = "kubeconfig/token-expiry";
    let Some(token) = &k.token else {
        return check(
            Level::Ok,
            name,
            "no bearer token (client certificate or none)",
        );
    };
    let Some(exp) = jwt_exp(token) else {
        return check(
            Level::Ok,
            name,
            "the token is not a JWT with an expiry (a long-lived ServiceAccount token Secret has none)",
        );
    };
    let renew = match k.token_from_file {
        true => "unless something rewrites the token file before then (endpointd re-reads it every 60 s)",
        false => "put a long-lived token in the kubeconfig (systemd/rbac.yaml's endpointd-token Secret) or use tokenFile with something that renews it",
    };
    match exp.duration_since(now) {
        Err(e) => check(
            Level::Fail,
            name,
            format!("the token expired {} ago: {renew}", secs(e.duration())),
        ),
        Ok(left) if left < TOKEN_SOON => check(
            Level::Warn,
            name,
            format!("the token expires in {}: {renew}", secs(left)),
        ),
        Ok(left) => check(
            Level::Ok,
            name,
            format!("the token expires in {}", secs(left)),
        ),
    }
}

/// The permission lines: one per (resource, scope), naming the verbs.
pub fn permissions(reviews: &[(Permission, Fetch<Review>)], s: &Settings) -> Vec<Check> {
    let mut out = Vec::new();
    let mut groups: Vec<(String, Scope, bool)> = Vec::new();
    for (p, _) in reviews {
        let g = (p.resource_label(), p.scope, p.admission_only);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    for (label, scope, admission) in groups {
        let of: Vec<&(Permission, Fetch<Review>)> = reviews
            .iter()
            .filter(|(p, _)| p.resource_label() == label && p.scope == scope)
            .collect();
        let verbs = |f: &dyn Fn(&Fetch<Review>) -> bool| -> Vec<&str> {
            of.iter()
                .filter(|(_, r)| f(r))
                .map(|(p, _)| p.verb)
                .collect()
        };
        let all = verbs(&|_| true).join(", ");
        let missing = verbs(&|r| matches!(r, Ok(Review { allowed: false, .. })));
        let errors: Vec<String> = of
            .iter()
            .filter_map(|(p, r)| r.as_ref().err().map(|e| format!("{}: {e}", p.verb)))
            .collect();
        let where_ = match scope {
            Scope::Cluster => "in every namespace".to_string(),
            Scope::LeaseNamespace => format!("in namespace {}", s.lease_namespace),
        };
        let name = format!("permissions/{label}");
        let c = if !missing.is_empty() {
            let fix = match scope {
                Scope::Cluster => "grant it as the ClusterRole system:endpointd of systemd/rbac.yaml does",
                Scope::LeaseNamespace => "grant it as the Role system:endpointd:leader-election of systemd/rbac.yaml does, in the lease namespace",
            };
            match admission {
                true => check(
                    Level::Warn,
                    name,
                    format!(
                        "missing {} {label} {where_}: needed where the {} admission plugin runs; {fix}",
                        missing.join(", "),
                        match label.as_str() {
                            "services/finalizers" => "OwnerReferencesPermissionEnforcement",
                            _ => "RestrictedEndpointsAdmission",
                        }
                    ),
                ),
                false => check(
                    Level::Fail,
                    name,
                    format!(
                        "missing {} {label} {where_} (has: {}); {fix}",
                        missing.join(", "),
                        {
                            let have = verbs(&|r| matches!(r, Ok(Review { allowed: true, .. })));
                            match have.is_empty() {
                                true => "none".to_string(),
                                false => have.join(", "),
                            }
                        }
                    ),
                ),
            }
        } else if !errors.is_empty() {
            check(
                Level::Warn,
                name,
                format!(
                    "could not ask the API server (SelfSubjectAccessReview): {}",
                    errors.join("; ")
                ),
            )
        } else {
            check(Level::Ok, name, format!("{all} {where_}"))
        };
        out.push(c);
    }
    out
}

/// `trafficDistribution` values and the minor version from which the
/// API server serves them by default (GA or beta on by default).
const TRAFFIC_DISTRIBUTION: &[(&str, u32)] = &[
    ("PreferClose", 33),
    ("PreferSameZone", 34),
    ("PreferSameNode", 34),
];

/// The version lines: the version itself, watch-list, trafficDistribution
/// and the Endpoints deprecation.
pub fn version(
    v: &Fetch<ServerVersion>,
    s: &Settings,
    td: &Fetch<Vec<(String, usize)>>,
) -> Vec<Check> {
    let v = match v {
        Ok(v) => v,
        Err(e) => {
            return vec![check(
                Level::Warn,
                "server/version",
                format!("cannot read /version: {e}; the checks that depend on it were skipped"),
            )]
        }
    };
    let mut out = Vec::new();
    let minor = if v.major == 1 { v.minor } else { 0 };
    out.push(match minor {
        0..=20 => check(
            Level::Fail,
            "server/version",
            format!("{}: endpointd writes discovery.k8s.io/v1 EndpointSlices, served from 1.21; upgrade the control plane first", v.git_version),
        ),
        _ => check(Level::Ok, "server/version", v.git_version.clone()),
    });
    out.push(match (s.watch_list, minor >= 27) {
        (true, false) => check(
            Level::Warn,
            "server/watch-list",
            "kubernetes.watch_list = true but the server predates watch-list (1.27): every sync falls back to paginated LISTs; set it to false",
        ),
        (true, true) => check(
            Level::Ok,
            "server/watch-list",
            "kubernetes.watch_list = true: served from 1.27 where the WatchList feature is on; refused or ignored, endpointd falls back to paginated LISTs",
        ),
        (false, _) => check(
            Level::Ok,
            "server/watch-list",
            format!(
                "kubernetes.watch_list = false (paginated LISTs){}",
                match minor >= 27 {
                    true => "; the server may serve watch-list (1.27+, WatchList feature)",
                    false => "",
                }
            ),
        ),
    });
    let served: Vec<&str> = TRAFFIC_DISTRIBUTION
        .iter()
        .filter(|(_, m)| minor >= *m)
        .map(|(n, _)| *n)
        .collect();
    let used = td.as_ref().ok().cloned().unwrap_or_default();
    let early: Vec<String> = used
        .iter()
        .filter(|(val, _)| !served.contains(&val.as_str()))
        .map(|(val, n)| format!("{val} ({n} Services)"))
        .collect();
    out.push(match (early.is_empty(), td) {
        (false, _) => check(
            Level::Warn,
            "server/traffic-distribution",
            format!(
                "Services use {} which this server serves by default only from {}: the API server keeps the field only with its feature gate on; endpointd honours it as written",
                early.join(", "),
                "1.33 (PreferClose) / 1.34 (PreferSameZone, PreferSameNode)"
            ),
        ),
        (true, Err(e)) => check(
            Level::Warn,
            "server/traffic-distribution",
            format!("cannot list Services: {e}"),
        ),
        (true, Ok(_)) => check(
            Level::Ok,
            "server/traffic-distribution",
            format!(
                "served: {}; in use: {}",
                match served.is_empty() {
                    true => "none by default".to_string(),
                    false => served.join(", "),
                },
                match used.is_empty() {
                    true => "none".to_string(),
                    false => used
                        .iter()
                        .map(|(v, n)| format!("{v} ({n})"))
                        .collect::<Vec<_>>()
                        .join(", "),
                }
            ),
        ),
    });
    out.push(match minor >= 33 {
        true => check(
            Level::Ok,
            "server/endpoints-deprecation",
            "v1 Endpoints are deprecated from 1.33: the server sends a Warning with each Endpoints request (endpointd logs it once); set endpoints.enabled = false once nothing reads Endpoints",
        ),
        false => check(
            Level::Ok,
            "server/endpoints-deprecation",
            "v1 Endpoints are not deprecated before 1.33",
        ),
    });
    out
}

/// Skew estimate in seconds (server minus local; positive: the server is
/// ahead) and its error bound.
pub fn estimate(d: DateSample) -> (f64, f64) {
    let rtt = diff(d.sent, d.received).max(0.0);
    let mid = shift(d.sent, rtt / 2.0);
    // `Date` is truncated to the second: the server's time was in
    // [Date, Date + 1 s).
    let skew = diff(mid, d.server) + 0.5;
    (skew, 0.5 + rtt / 2.0)
}

/// Clock skew against the API server.
pub fn skew(d: &Fetch<Option<DateSample>>, s: &Settings) -> Check {
    let name = "clock/skew";
    let d = match d {
        Err(e) => return check(Level::Warn, name, format!("cannot compare clocks: {e}")),
        Ok(None) => {
            return check(
                Level::Warn,
                name,
                "the API server sent no Date header: cannot compare clocks",
            )
        }
        Ok(Some(d)) => *d,
    };
    let (skew, err) = estimate(d);
    let surely = (skew.abs() - err).max(0.0);
    let margin = s.lease_duration.saturating_sub(s.renew_deadline);
    let said = format!(
        "this host is {:.1} s {} the API server (±{:.1} s)",
        skew.abs(),
        if skew > 0.0 { "behind" } else { "ahead of" },
        err
    );
    if surely > margin.as_secs_f64() {
        check(
            Level::Fail,
            name,
            format!("{said}: more than lease_duration − renew_deadline ({}); lease ages and renewTimes you judge the hand-over by are off by more than the election's margin; fix time sync (chrony/systemd-timesyncd) on this host or the control plane", secs(margin)),
        )
    } else if surely > SKEW_WARN.as_secs_f64() {
        check(
            Level::Warn,
            name,
            format!("{said}: over 1 s; check time sync (chrony/systemd-timesyncd): renewTimes and trigger-time annotations read wrong by that much"),
        )
    } else {
        check(Level::Ok, name, said)
    }
}

/// The lease namespace and the election Lease.
pub fn lease(i: &PreflightInputs) -> Vec<Check> {
    let s = &i.settings;
    let mut out = Vec::new();
    let ns = &s.lease_namespace;
    out.push(match &i.lease_namespace {
        Ok(true) => check(Level::Ok, "lease/namespace", format!("namespace {ns} exists")),
        Ok(false) => check(
            Level::Fail,
            "lease/namespace",
            format!("namespace {ns} does not exist: endpointd cannot create its Leases; create it or set leader_election.lease_namespace"),
        ),
        Err(e) => check(
            Level::Warn,
            "lease/namespace",
            format!("cannot tell whether namespace {ns} exists: {e}"),
        ),
    });
    let name = "lease/election";
    let key = format!("{ns}/{}", s.lease_name);
    if !s.election {
        out.push(check(
            Level::Ok,
            name,
            "leader election is off (leader_election.enabled = false): run exactly one instance",
        ));
        return out;
    }
    out.push(match &i.lease {
        Err(e) => check(Level::Warn, name, format!("cannot read Lease {key}: {e}")),
        Ok(None) => check(
            Level::Ok,
            name,
            format!("Lease {key} does not exist yet: the first instance creates it and leads"),
        ),
        Ok(Some(l)) if l.holder.is_empty() => check(
            Level::Ok,
            name,
            format!("Lease {key} is free: the first instance takes it"),
        ),
        Ok(Some(l)) => {
            let dur = l
                .duration_seconds
                .map(|d| Duration::from_secs(d.max(0) as u64))
                .unwrap_or(s.lease_duration);
            let age = l.renew_time.map(|r| diff(r, i.now));
            let want = s.lease_duration.as_secs();
            match age {
                None => check(
                    Level::Ok,
                    name,
                    format!("Lease {key} names {} but was never renewed: it is free once lease_duration passes", l.holder),
                ),
                Some(a) if a < -SKEW_WARN.as_secs_f64() => check(
                    Level::Warn,
                    name,
                    format!("Lease {key} held by {}: its renewTime is {:.1} s in the future: the holder's clock is ahead of this host's", l.holder, -a),
                ),
                Some(a) if l.duration_seconds.is_some_and(|d| d as u64 != want) => check(
                    Level::Warn,
                    name,
                    format!("Lease {key} held by {}, renewed {} ago, with leaseDurationSeconds {} while this configuration says {want}: give every instance the same leader_election timings", l.holder, secs(Duration::from_secs_f64(a.max(0.0))), dur.as_secs()),
                ),
                Some(a) if a <= dur.as_secs_f64() => check(
                    Level::Ok,
                    name,
                    format!("Lease {key} held by {}, renewed {} ago: another instance leads; this one will be a standby", l.holder, secs(Duration::from_secs_f64(a.max(0.0)))),
                ),
                Some(a) => check(
                    Level::Ok,
                    name,
                    format!("Lease {key} last held by {}, not renewed for {} (expired): the first instance takes it over", l.holder, secs(Duration::from_secs_f64(a))),
                ),
            }
        }
    });
    out
}

/// Whether kube-controller-manager still writes `what`.
pub fn kcm_writes(
    name: &str,
    what: &str,
    writes: &Fetch<Vec<LatestWrite>>,
    server_now: SystemTime,
) -> Check {
    let writes = match writes {
        Ok(w) => w,
        Err(e) => return check(Level::Warn, name, format!("cannot list {what}: {e}")),
    };
    let kcm: Vec<&LatestWrite> = writes.iter().filter(|w| w.manager == KCM_MANAGER).collect();
    let latest = kcm.iter().max_by_key(|w| w.time);
    let recent: Vec<&&LatestWrite> = kcm
        .iter()
        .filter(|w| diff(w.time, server_now) <= RECENT.as_secs_f64())
        .collect();
    let mut managers: Vec<&str> = writes.iter().map(|w| w.manager.as_str()).collect();
    managers.sort_unstable();
    managers.dedup();
    let latest_text = |w: &LatestWrite| {
        format!(
            "{} {} ago",
            w.key,
            secs(Duration::from_secs_f64(diff(w.time, server_now).max(0.0)))
        )
    };
    match (latest, recent.is_empty()) {
        (Some(w), false) => check(
            Level::Warn,
            name,
            format!(
                "kube-controller-manager wrote {} {what} within the last hour (latest: {}): it still runs its controllers; do step 3 of the hand-over (--controllers=*,-endpoint,-endpointslice) before endpointd writes",
                recent.len(),
                latest_text(w)
            ),
        ),
        (Some(w), true) => check(
            Level::Ok,
            name,
            format!(
                "kube-controller-manager is the latest writer of {} {what}, none within the last hour (latest: {}); a quiet cluster looks the same, so confirm its --controllers",
                kcm.len(),
                latest_text(w)
            ),
        ),
        (None, _) if writes.is_empty() => check(Level::Ok, name, format!("no {what} with managedFields")),
        (None, _) => check(
            Level::Ok,
            name,
            format!("latest writers: {}; none is kube-controller-manager", managers.join(", ")),
        ),
    }
}

#[cfg(test)]
#[path = "checks_tests.rs"]
mod tests;
