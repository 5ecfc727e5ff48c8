//! `endpointd preflight`: before a hand-over from kube-controller-manager,
//! check everything that would make it go wrong — endpointd's permissions
//! (SelfSubjectAccessReview), the API server's version and what endpointd
//! relies on, clock skew, the lease namespace and the election Lease,
//! whether KCM still writes Endpoints or EndpointSlices (managedFields),
//! and the kubeconfig (file mode, TLS verification, token expiry).
//!
//! `checks` is pure (facts → lines); `fetch` is the only part that talks
//! to the API server (reads and access reviews — it must never write);
//! `render` prints the text form. `permissions` is the one table of what
//! endpointd uses, compared with `systemd/rbac.yaml` by a test.

pub mod checks;
pub mod fetch;
pub mod permissions;
pub mod render;

pub use checks::{Check, Level};
pub use render::PreflightReport;

use crate::config::Config;
use crate::daemon::DaemonError;
use endpointd_kube::kube::ClientConfig;
use endpointd_kube::metrics::Registry;
use std::path::Path;
use std::sync::Arc;

/// Load the configuration at `path`, read everything, check it. `Err`
/// when there is no configuration or no usable client at all (exit 1);
/// otherwise the report (exit 1 when a check failed).
pub fn run(path: &Path) -> Result<PreflightReport, DaemonError> {
    let cfg = Config::load(path).map_err(DaemonError::Config)?;
    crate::logging::init(log::LevelFilter::Error);
    let clock = endpointd_base::clock::RealClock::shared();
    let registry = Registry::new();
    let client = crate::daemon::client(
        &cfg,
        clock.clone(),
        &registry,
        Some("preflight"),
        &Arc::default(),
    )
    .map_err(DaemonError::Client)?;
    let k = &cfg.kubernetes;
    let kc_path = ClientConfig::infer_path(k.kubeconfig.as_deref(), &|v| std::env::var(v).ok())
        .map_err(DaemonError::Client)?;
    let mut cc = ClientConfig::infer(k.kubeconfig.as_deref(), k.context.as_deref())
        .map_err(DaemonError::Client)?;
    cc.request_timeout = k.request_timeout;
    cc.user_agent = crate::daemon::user_agent(&cfg.leader_election.identity, Some("preflight"));
    let inputs = fetch::fetch(&cfg, &client, &cc, kc_path, &clock);
    Ok(PreflightReport::new(checks::checks(&inputs)))
}
