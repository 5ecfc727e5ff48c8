//! Warnings about credential files others can read (issue 14): a
//! kubeconfig, a client key or a token file readable by group or others
//! leaks the API server credentials to every local user.
//!
//! Owns the check (pure on a mode, plus one `stat`) and [`warn_once`],
//! which logs such a warning (and `insecure-skip-tls-verify`'s) once per
//! process; it never changes a file and never refuses one (kubectl does
//! not either).

use std::path::Path;

/// The warning for a credential file with permission bits `mode`, if group
/// or others may read it.
pub fn exposure(what: &str, path: &Path, mode: u32) -> Option<String> {
    (mode & 0o044 != 0).then(|| {
        format!(
            "{what} {} is readable by group or others (mode {:04o}); it holds credentials: chmod 600 it",
            path.display(),
            mode & 0o7777
        )
    })
}

/// Log [`exposure`]'s warning for the file at `path`, if any, once per
/// process (see [`warn_once`]).
pub fn warn_if_exposed(what: &str, path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(m) = std::fs::metadata(path) {
        if let Some(w) = exposure(what, path, m.permissions().mode()) {
            warn_once(w);
        }
    }
}

/// Log `message` as a warning unless this process already logged the same
/// text: the daemon loads its kubeconfig and builds its TLS setup once per
/// API client (four of them), and a warning about a file or a setting
/// repeated four times at startup reads as four problems. Returns whether
/// it logged.
pub fn warn_once(message: String) -> bool {
    use std::sync::LazyLock;
    // The same record as the API server's warnings (a bounded set of texts).
    static WARNED: LazyLock<super::warnings::Seen> = LazyLock::new(Default::default);
    if !WARNED.first(&message) {
        return false;
    }
    log::warn!("{message}");
    true
}

/// A logger for unit tests that keeps every warning, to count how often
/// one was logged. Installed once per test process; other tests' warnings
/// are kept too, so a test looks for its own unique text.
#[cfg(test)]
pub(crate) mod captured {
    use std::sync::{Mutex, Once};

    static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

    struct Capture;

    impl log::Log for Capture {
        fn enabled(&self, m: &log::Metadata<'_>) -> bool {
            m.level() <= log::Level::Warn
        }
        fn log(&self, r: &log::Record<'_>) {
            if self.enabled(r.metadata()) {
                let mut w = WARNINGS.lock().unwrap_or_else(|p| p.into_inner());
                w.push(r.args().to_string());
            }
        }
        fn flush(&self) {}
    }

    /// Install the logger (no-op after the first call). Panics if another
    /// logger was installed first: the count would then be meaningless.
    pub(crate) fn install() {
        static INIT: Once = Once::new();
        INIT.call_once(|| {
            log::set_logger(&Capture).expect("no other logger in unit tests");
            log::set_max_level(log::LevelFilter::Warn);
        });
    }

    /// How many warnings logged so far contain `needle`.
    pub(crate) fn count(needle: &str) -> usize {
        let w = WARNINGS.lock().unwrap_or_else(|p| p.into_inner());
        w.iter().filter(|m| m.contains(needle)).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exposed_file_is_warned_about_once_per_process() {
        use std::os::unix::fs::PermissionsExt;
        captured::install();
        let dir = std::env::temp_dir().join(format!("endpointd-perms-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("token-warned-once");
        std::fs::write(&path, "t").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        for _ in 0..4 {
            warn_if_exposed("token file", &path);
        }
        assert_eq!(captured::count("token-warned-once"), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn group_or_world_readable_files_are_named() {
        let p = Path::new("/etc/endpointd/kubeconfig");
        let cases = [
            (0o100600, None),
            (0o100400, None),
            (0o100700, None),
            (0o100640, Some("(mode 0640)")),
            (0o100644, Some("(mode 0644)")),
            (0o100604, Some("(mode 0604)")),
            (0o100660, Some("(mode 0660)")),
        ];
        for (mode, want) in cases {
            let got = exposure("kubeconfig", p, mode);
            match want {
                None => assert_eq!(got, None, "{mode:o}"),
                Some(w) => {
                    let got = got.expect("a warning");
                    assert!(
                        got.contains(w) && got.contains("/etc/endpointd/kubeconfig"),
                        "{got}"
                    );
                    assert!(got.contains("chmod 600"), "{got}");
                }
            }
        }
    }
}
