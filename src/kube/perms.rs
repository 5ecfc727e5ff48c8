//! Warnings about credential files others can read (issue 14): a
//! kubeconfig, a client key or a token file readable by group or others
//! leaks the API server credentials to every local user.
//!
//! Owns the check only (pure on a mode, plus one `stat`); it never changes
//! a file and never refuses one (kubectl does not either) — the caller logs
//! the warning.

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

/// Log [`exposure`]'s warning for the file at `path`, if any.
pub fn warn_if_exposed(what: &str, path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(m) = std::fs::metadata(path) {
        if let Some(w) = exposure(what, path, m.permissions().mode()) {
            log::warn!("{w}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
