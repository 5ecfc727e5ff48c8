//! What this binary was built from, as `build.rs` found it: shown by
//! `endpointd --version` and exported as `endpointd_build_info`, labelled as
//! Kubernetes components label `kubernetes_build_info`.

/// The crate version (Cargo.toml).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// `v0.1.0`, `v0.1.0-3-gabcdef012345`, `v0.1.0-gabcdef012345` (no release
/// tag yet), each with `-dirty` for uncommitted changes.
pub const GIT_VERSION: &str = env!("ENDPOINTD_GIT_VERSION");
/// The full commit hash, or "unknown" (no git, no .git).
pub const GIT_COMMIT: &str = env!("ENDPOINTD_GIT_COMMIT");
/// "clean", "dirty" or "unknown".
pub const GIT_TREE_STATE: &str = env!("ENDPOINTD_GIT_TREE_STATE");
/// RFC 3339 UTC; `SOURCE_DATE_EPOCH` when the build set it.
pub const BUILD_DATE: &str = env!("ENDPOINTD_BUILD_DATE");
/// The compiler's release, e.g. `1.95.0`.
pub const RUSTC_VERSION: &str = env!("ENDPOINTD_RUSTC_VERSION");
/// The target triple, e.g. `x86_64-unknown-linux-gnu`.
pub const TARGET: &str = env!("ENDPOINTD_TARGET");
/// GOOS/GOARCH form, e.g. `linux/amd64`.
pub const PLATFORM: &str = env!("ENDPOINTD_PLATFORM");

/// `endpointd_build_info`'s label names, in order.
pub const METRIC_LABELS: [&str; 7] = [
    "version",
    "git_version",
    "git_commit",
    "git_tree_state",
    "build_date",
    "rustc_version",
    "platform",
];

/// The label values, in [`METRIC_LABELS`]' order.
pub fn metric_values() -> [&'static str; 7] {
    [
        VERSION,
        GIT_VERSION,
        GIT_COMMIT,
        GIT_TREE_STATE,
        BUILD_DATE,
        RUSTC_VERSION,
        PLATFORM,
    ]
}

/// Whether the simulator (`endpointd demo`) is built in.
pub const WITH_DEMO: bool = cfg!(feature = "demo");

/// `endpointd --version`: the version line, then one line per fact.
pub fn version_text() -> String {
    format!(
        "endpointd {VERSION}\n\
         git version: {GIT_VERSION}\n\
         git commit:  {GIT_COMMIT} ({GIT_TREE_STATE})\n\
         build date:  {BUILD_DATE}\n\
         rustc:       {RUSTC_VERSION}\n\
         target:      {TARGET} ({PLATFORM})\n\
         features:    {}\n",
        if WITH_DEMO { "demo" } else { "(none)" }
    )
}

/// Register `endpointd_build_info{…} 1` in `registry`.
pub fn register(registry: &endpointd_kube::metrics::Registry) {
    registry
        .gauge(
            "endpointd_build_info",
            "A metric with a constant '1' value labeled by version, git_version, git_commit, git_tree_state, build_date, rustc_version and platform from which endpointd was built.",
            &METRIC_LABELS,
        )
        .with(&metric_values())
        .set(1.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_have_their_forms() {
        assert!(
            GIT_VERSION.starts_with(&format!("v{VERSION}")),
            "{GIT_VERSION}"
        );
        assert!(
            ["clean", "dirty", "unknown"].contains(&GIT_TREE_STATE),
            "{GIT_TREE_STATE}"
        );
        assert_eq!(
            GIT_VERSION.ends_with("-dirty"),
            GIT_TREE_STATE == "dirty",
            "{GIT_VERSION} {GIT_TREE_STATE}"
        );
        assert!(
            GIT_COMMIT == "unknown"
                || (GIT_COMMIT.len() == 40 && GIT_COMMIT.bytes().all(|b| b.is_ascii_hexdigit())),
            "{GIT_COMMIT}"
        );
        // 2026-04-14T06:00:00Z
        assert!(
            BUILD_DATE.parse::<jiff::Timestamp>().is_ok(),
            "{BUILD_DATE}"
        );
        assert!(BUILD_DATE.ends_with('Z') && BUILD_DATE.len() == 20);
        assert!(RUSTC_VERSION.split('.').count() >= 3, "{RUSTC_VERSION}");
        assert!(PLATFORM.starts_with("linux/"), "{PLATFORM}");
        let v = version_text();
        assert!(v.starts_with(&format!("endpointd {VERSION}\n")), "{v}");
        for fact in [
            GIT_COMMIT,
            GIT_TREE_STATE,
            BUILD_DATE,
            RUSTC_VERSION,
            TARGET,
        ] {
            assert!(v.contains(fact), "{v} lacks {fact}");
        }
    }
}
