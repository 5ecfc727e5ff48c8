//! `endpointd explain`: why a Service's pods do or do not get traffic,
//! from one-shot reads (no informers), using the controllers' own pure
//! decisions.
//!
//! `analyze` is pure (inputs → [`Explanation`]); `fetch` is the only part that
//! talks to the API server (GET/LIST only — it must never write);
//! `render` prints the text form.

pub mod analyze;
pub mod fetch;
pub mod render;

pub use analyze::{analyze, ExplainInputs, Explanation};

/// `endpointd explain`: load the configuration, read, analyse. Logging
/// stays at warnings so that the report is all that is printed.
pub fn run(
    path: &std::path::Path,
    namespace: &str,
    service: &str,
) -> Result<Explanation, crate::daemon::DaemonError> {
    use crate::daemon::DaemonError;
    let cfg = crate::config::Config::load(path).map_err(DaemonError::Config)?;
    crate::logging::init(log::LevelFilter::Warn);
    let clock = endpointd_base::clock::RealClock::shared();
    let registry = endpointd_kube::metrics::Registry::new();
    let c = crate::daemon::client(&cfg, clock, &registry, Some("explain"), &Default::default())
        .map_err(DaemonError::Client)?;
    let max = cfg.endpointslices.max_endpoints_per_slice as usize;
    let items = cfg.kubernetes.max_list_items;
    fetch::explain(&c, namespace, service, max, items).map_err(DaemonError::Explain)
}
