//! Stage two: raw spanned values → a typed [`Config`], every default filled
//! in and every rule checked. All errors are collected, not just the first.

/// Most worker threads a controller may have.
const MAX_WORKERS: i64 = 50;

use super::raw::{self, Field, RawConfig};
use super::*;

/// Smallest client-side rate accepted: below it the limiter's token
/// arithmetic (f32) rounds the rate to zero and would disable limiting.
pub const MIN_QPS: f64 = 0.01;

/// Largest client-side rate accepted: far above what any API server
/// serves, and within the limiter's f32 arithmetic.
pub const MAX_QPS: f64 = 1_000_000.0;

/// Validate `raw` (parsed from `text`, named `file` in messages).
pub(super) fn validate(file: &str, text: &str, raw: RawConfig) -> Result<Config, ConfigErrors> {
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
                self.fail(key, f, e.to_string());
                default
            }
        }
    }

    /// A controller's worker threads, 1..50: KCM's bound for
    /// `--concurrent-service-endpoint-syncs`, here for both controllers (KCM
    /// leaves `--concurrent-endpoint-syncs` unbounded), so a typo cannot
    /// start thousands of threads on an edge node.
    fn workers(&mut self, key: &str, f: &Field<i64>, default: usize) -> usize {
        match f.as_ref().map(|s| *s.get_ref()) {
            None => default,
            Some(n @ 1..=MAX_WORKERS) => n as usize,
            Some(_) => {
                self.fail(key, f, format!("must be between 1 and {MAX_WORKERS}"));
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
            mode: Mode {
                shadow: raw
                    .mode
                    .and_then(|m| m.shadow)
                    .map(|s| s.into_inner())
                    .unwrap_or(false),
            },
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
            Some(q) if (MIN_QPS..=MAX_QPS).contains(&q) => q,
            Some(_) => {
                let msg =
                    format!("must be a number from {MIN_QPS} to {MAX_QPS} (requests per second)");
                self.fail("kubernetes.qps", &r.qps, msg);
                20.0
            }
        };
        let burst = match r.burst.as_ref().map(|s| *s.get_ref()) {
            None => 30,
            Some(b) if (1..=i64::from(u32::MAX)).contains(&b) => b as u32,
            Some(_) => {
                let msg = format!("must be between 1 and {}", u32::MAX);
                self.fail("kubernetes.burst", &r.burst, msg);
                30
            }
        };
        let request_timeout = self.duration(
            "kubernetes.request_timeout",
            &r.request_timeout,
            Duration::from_secs(30),
        );
        if r.request_timeout.is_some() && request_timeout < MIN_REQUEST_TIMEOUT {
            let msg = format!(
                "must be at least {} (a LIST page of 500 pods takes longer on a busy server)",
                format_duration(MIN_REQUEST_TIMEOUT)
            );
            self.fail("kubernetes.request_timeout", &r.request_timeout, msg);
        }
        let default_bytes = endpointd_kube::kube::DEFAULT_MAX_RESPONSE_BYTES;
        let max_response_bytes = match r.max_response_bytes.as_ref().map(|s| *s.get_ref()) {
            None => default_bytes,
            Some(b) if b >= MIN_RESPONSE_BYTES => b as u64,
            Some(_) => {
                let msg = format!("must be at least {MIN_RESPONSE_BYTES} (1 MiB)");
                self.fail("kubernetes.max_response_bytes", &r.max_response_bytes, msg);
                default_bytes
            }
        };
        let default_items = endpointd_kube::kube::DEFAULT_MAX_LIST_ITEMS;
        let max_list_items = match r.max_list_items.as_ref().map(|s| *s.get_ref()) {
            None => default_items,
            Some(n) if n >= 1000 => usize::try_from(n).unwrap_or(usize::MAX),
            Some(_) => {
                self.fail(
                    "kubernetes.max_list_items",
                    &r.max_list_items,
                    "must be at least 1000",
                );
                default_items
            }
        };
        let watch_idle_timeout = self.duration(
            "kubernetes.watch_idle_timeout",
            &r.watch_idle_timeout,
            Duration::from_secs(120),
        );
        if r.watch_idle_timeout.is_some() && watch_idle_timeout < MIN_WATCH_IDLE_TIMEOUT {
            let msg = format!(
                "must be at least {} (the API server sends a bookmark about once a minute)",
                format_duration(MIN_WATCH_IDLE_TIMEOUT)
            );
            self.fail("kubernetes.watch_idle_timeout", &r.watch_idle_timeout, msg);
        }
        Kubernetes {
            kubeconfig,
            context,
            qps,
            burst,
            request_timeout,
            watch_list: r.watch_list.map(|s| s.into_inner()).unwrap_or(false),
            max_response_bytes,
            max_list_items,
            watch_idle_timeout: watch_idle_timeout.max(MIN_WATCH_IDLE_TIMEOUT),
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
            Some(s) if s.get_ref().chars().any(char::is_control) => {
                self.fail(
                    "leader_election.identity",
                    &r.identity,
                    "must not contain control characters (a line break, a tab)",
                );
                (default_identity(), true)
            }
            Some(s) if s.get_ref().len() > MAX_IDENTITY_BYTES => {
                self.fail(
                    "leader_election.identity",
                    &r.identity,
                    format!(
                        "must be at most {MAX_IDENTITY_BYTES} bytes, is {} (it is the Events' reportingInstance, which the API server limits to {MAX_IDENTITY_BYTES}, and goes into every request's User-Agent)",
                        s.get_ref().len()
                    ),
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
        let heartbeat_duration = self.duration(
            "leader_election.heartbeat_duration",
            &r.heartbeat_duration,
            Duration::from_secs(40),
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
        } else if Duration::from_secs(lease_duration.as_secs().max(1)) <= renew_deadline {
            // The Lease holds whole seconds (client-go truncates the same
            // way): standbys would take over before this leader's fence
            // closed.
            let msg = format!(
                "is written to the Lease in whole seconds ({}s), which must be greater than leader_election.renew_deadline ({})",
                lease_duration.as_secs().max(1),
                format_duration(renew_deadline)
            );
            self.fail("leader_election.lease_duration", &r.lease_duration, msg);
        }
        // Both are written to a Lease as int32 whole seconds.
        for (key, f, d) in [
            ("lease_duration", &r.lease_duration, lease_duration),
            (
                "heartbeat_duration",
                &r.heartbeat_duration,
                heartbeat_duration,
            ),
        ] {
            if d.as_secs() > i32::MAX as u64 {
                let msg = format!(
                    "must be at most {}s (a Lease holds it as a 32-bit number of seconds)",
                    i32::MAX
                );
                self.fail(&format!("{le}.{key}"), f, msg);
            }
        }
        let jittered = retry_period.mul_f64(LEADER_ELECTION_JITTER_FACTOR);
        if !renew_deadline.is_zero() && renew_deadline <= jittered {
            let msg = format!(
                "must be greater than leader_election.retry_period × {LEADER_ELECTION_JITTER_FACTOR} ({})",
                format_duration(jittered)
            );
            self.fail("leader_election.renew_deadline", &r.renew_deadline, msg);
        }
        if heartbeat_duration < Duration::from_secs(4) {
            let msg = "must be at least 4s (the identity Lease is renewed every quarter of it)";
            self.fail(
                "leader_election.heartbeat_duration",
                &r.heartbeat_duration,
                msg,
            );
        }
        LeaderElection {
            enabled: r.enabled.map(|s| s.into_inner()).unwrap_or(true),
            heartbeat_duration,
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
