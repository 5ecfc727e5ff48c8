//! Build information for `endpointd --version` and the
//! `endpointd_build_info` metric (src/buildinfo.rs): git version, commit and
//! tree state, build date, rustc version and target, passed to the crate as
//! `ENDPOINTD_*` environment variables.
//!
//! No crate needed: `git` and `rustc -vV` are run through std::process, and
//! whatever cannot be found (no git, a source tarball without .git) becomes
//! "unknown". `SOURCE_DATE_EPOCH` (reproducible-builds.org) sets the build
//! date, so two builds of one commit embed the same bytes; packaging/build
//! sets it to the commit time.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR").unwrap_or_else(|| ".".into()));
    let version = env("CARGO_PKG_VERSION").unwrap_or_else(|| "0.0.0".into());

    // Re-run when the commit, the index or a tracked source changes (the
    // tree state may flip), or when SOURCE_DATE_EPOCH does.
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    println!("cargo:rerun-if-env-changed=ENDPOINTD_GIT_COMMIT");
    for p in [
        "build.rs",
        "Cargo.toml",
        "Cargo.lock",
        "src",
        "crates",
        "config.toml",
    ] {
        println!("cargo:rerun-if-changed={p}");
    }
    if let Some(git_dir) = git(&manifest_dir, &["rev-parse", "--absolute-git-dir"]) {
        let git_dir = PathBuf::from(git_dir);
        for f in ["HEAD", "index"] {
            println!("cargo:rerun-if-changed={}", git_dir.join(f).display());
        }
        if let Some(common) = git(&manifest_dir, &["rev-parse", "--git-common-dir"]) {
            let common = manifest_dir.join(common);
            println!("cargo:rerun-if-changed={}", common.join("refs").display());
            println!(
                "cargo:rerun-if-changed={}",
                common.join("packed-refs").display()
            );
        }
    }

    let commit = git(&manifest_dir, &["rev-parse", "HEAD"]);
    let tree_state = match &commit {
        None => "unknown".to_string(),
        Some(_) => match git(
            &manifest_dir,
            &["status", "--porcelain", "--untracked-files=no"],
        ) {
            Some(s) if s.is_empty() => "clean".into(),
            Some(_) => "dirty".into(),
            None => "unknown".into(),
        },
    };
    let git_version = git_version(&manifest_dir, &version, commit.as_deref(), &tree_state);

    let build_date = build_date();
    let (rustc_version, target) = rustc_info();
    let platform = platform(&target);

    let vars = [
        ("ENDPOINTD_GIT_VERSION", git_version),
        (
            "ENDPOINTD_GIT_COMMIT",
            commit.unwrap_or_else(|| "unknown".into()),
        ),
        ("ENDPOINTD_GIT_TREE_STATE", tree_state),
        ("ENDPOINTD_BUILD_DATE", build_date),
        ("ENDPOINTD_RUSTC_VERSION", rustc_version),
        ("ENDPOINTD_TARGET", target),
        ("ENDPOINTD_PLATFORM", platform),
    ];
    for (k, v) in vars {
        println!("cargo:rustc-env={k}={v}");
    }
}

fn env(k: &str) -> Option<String> {
    std::env::var(k).ok().filter(|v| !v.is_empty())
}

/// `git <args>` in `dir`, trimmed stdout; None when git is missing or fails.
fn git(dir: &std::path::Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Kubernetes' gitVersion form: `v0.1.0` on the tag `v0.1.0`,
/// `v0.1.0-3-gabcdef012345` three commits after it, `-dirty` appended for a
/// tree with uncommitted changes. Without the tag (no release tagged yet),
/// `v0.1.0-g<sha>`: the version from Cargo.toml and the commit.
fn git_version(dir: &std::path::Path, version: &str, commit: Option<&str>, tree: &str) -> String {
    let tag = format!("v{version}");
    let dirty = if tree == "dirty" { "-dirty" } else { "" };
    if let Some(d) = git(
        dir,
        &["describe", "--tags", "--match", &tag, "--abbrev=12", "HEAD"],
    ) {
        return format!("{d}{dirty}");
    }
    match commit {
        Some(c) => format!("{tag}-g{}{dirty}", &c[..c.len().min(12)]),
        None => tag,
    }
}

/// RFC 3339 UTC: SOURCE_DATE_EPOCH when set, else now.
fn build_date() -> String {
    let secs = env("SOURCE_DATE_EPOCH")
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0)
        });
    rfc3339(secs)
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (civil-from-days,
/// Howard Hinnant's algorithm).
fn rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// (`1.95.0`, target triple): the release from `rustc -vV`.
fn rustc_info() -> (String, String) {
    let target = env("TARGET").unwrap_or_else(|| "unknown".into());
    let rustc = env("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = Command::new(rustc)
        .arg("-vV")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .find_map(|l| l.strip_prefix("release:"))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    (version, target)
}

/// Go's GOOS/GOARCH form, as Kubernetes' `platform` label: `linux/amd64`.
fn platform(target: &str) -> String {
    let os = env("CARGO_CFG_TARGET_OS").unwrap_or_else(|| "unknown".into());
    let arch = env("CARGO_CFG_TARGET_ARCH")
        .unwrap_or_else(|| target.split('-').next().unwrap_or("unknown").to_string());
    let arch = match arch.as_str() {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    };
    format!("{os}/{arch}")
}
