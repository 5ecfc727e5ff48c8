//! `endpointd check-config`: load and validate the file and print the
//! effective configuration with every default filled in, or every problem.
//! Reads only the file: no kubeconfig, no API server.

use crate::config::{Config, ConfigErrors};
use std::path::Path;

/// The effective configuration of `path` as TOML, or every problem.
pub fn run(path: &Path) -> Result<String, ConfigErrors> {
    let cfg = Config::load(path)?;
    Ok(format!(
        "# effective configuration of {} (defaults filled in)\n{}",
        path.display(),
        cfg.to_toml()
    ))
}
