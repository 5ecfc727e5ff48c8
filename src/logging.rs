//! Logging setup on `log` + `env_logger`, in one of two line formats.
//!
//! - **journald** (stderr is the stream named by `$JOURNAL_STREAM`): no
//!   timestamp (journald adds its own) and a `<N>` syslog-priority prefix so
//!   journald keeps each line's level.
//! - **human**: RFC 3339 UTC timestamp with milliseconds, level, target.
//!
//! The level comes from `[log].level`; `RUST_LOG`, when set, overrides it
//! (and then a SIGHUP reload leaves it alone). Owns formatting only; it never
//! decides what is logged, and nothing logged may contain a secret.

use endpointd_base::clock::{Clock, RealClock};
use log::{Level, LevelFilter};
use std::io::Write;

/// The line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `<6>target: message`, for journald.
    Journald,
    /// `2026-11-21T06:00:00.123Z INFO  target: message`.
    Human,
}

/// syslog priority of a log level (sd-daemon(3) prefixes).
pub fn syslog_priority(level: Level) -> u8 {
    match level {
        Level::Error => 3,
        Level::Warn => 4,
        Level::Info => 6,
        Level::Debug | Level::Trace => 7,
    }
}

/// One formatted line (without the trailing newline).
pub fn format_line(
    style: Style,
    level: Level,
    target: &str,
    msg: &std::fmt::Arguments<'_>,
    now: std::time::SystemTime,
) -> String {
    match style {
        Style::Journald => format!("<{}>{target}: {msg}", syslog_priority(level)),
        Style::Human => {
            let ts = jiff::Timestamp::try_from(now)
                .map(|t| format!("{t:.3}"))
                .unwrap_or_else(|_| "-".to_string());
            format!("{ts} {:<5} {target}: {msg}", level.as_str())
        }
    }
}

/// Decide the style: journald when `journal_stream` ("DEV:INODE" from
/// `$JOURNAL_STREAM`) names the same file as our stderr (`stderr_id`), as
/// systemd documents; a mere presence of the variable is not enough because
/// a child may inherit it with stderr redirected elsewhere.
pub fn style_for(journal_stream: Option<&str>, stderr_id: Option<(u64, u64)>) -> Style {
    let Some(js) = journal_stream else {
        return Style::Human;
    };
    let parsed = js
        .split_once(':')
        .and_then(|(d, i)| Some((d.parse::<u64>().ok()?, i.parse::<u64>().ok()?)));
    match (parsed, stderr_id) {
        (Some(want), Some(have)) if want == have => Style::Journald,
        _ => Style::Human,
    }
}

/// Device and inode of our stderr.
fn stderr_id() -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata("/proc/self/fd/2").ok()?;
    Some((m.dev(), m.ino()))
}

/// The style for this process's stderr.
pub fn detect_style() -> Style {
    style_for(std::env::var("JOURNAL_STREAM").ok().as_deref(), stderr_id())
}

/// Whether a record reaches the log. The workspace's own records (targets
/// `endpointd…`, `endpointd_kube…`, `endpointd_base…`, `kube_sim…`) always pass the level filter; a dependency's
/// only at warn and error, unless `RUST_LOG` names that crate in a
/// directive (`RUST_LOG=ureq=trace`). A global `trace` must never turn on
/// a dependency's debug output. The HTTP library's wire dump
/// (`ureq_proto::util` at trace: every byte sent, in hex rows, the
/// `Authorization: Bearer …` header included) is never shown, even when
/// `RUST_LOG` names the crate: a token split over hex rows cannot be
/// redacted. ureq's own request lines redact credentials themselves.
pub fn admitted(target: &str, level: Level, rust_log: Option<&str>) -> bool {
    let krate = target.split("::").next().unwrap_or(target);
    if OWN_CRATES.contains(&krate) || level <= Level::Warn {
        return true;
    }
    if target == WIRE_DUMP {
        return false;
    }
    rust_log.is_some_and(|spec| {
        spec.split(',')
            .filter_map(|d| d.split_once('=').map(|(m, _)| m.trim()))
            .any(|m| m.split("::").next() == Some(krate))
    })
}

/// The workspace's crates, by the names their log targets start with.
const OWN_CRATES: [&str; 4] = ["endpointd", "endpointd_kube", "endpointd_base", "kube_sim"];

/// The target of ureq's raw wire dump (see [`admitted`]).
const WIRE_DUMP: &str = "ureq_proto::util";

/// Whether `RUST_LOG` is set (it then owns the filter).
pub fn rust_log_set() -> bool {
    std::env::var_os("RUST_LOG").is_some_and(|v| !v.is_empty())
}

/// Install the global logger. With `RUST_LOG` set its directives apply;
/// otherwise every record up to `level` is shown and [`set_level`] can change
/// it later. Calling it twice is harmless (the second call does nothing).
pub fn init(level: LevelFilter) {
    let style = detect_style();
    let mut b = env_logger::Builder::new();
    if rust_log_set() {
        b.parse_env("RUST_LOG");
    } else {
        b.filter_level(LevelFilter::Trace);
    }
    let rust_log = std::env::var("RUST_LOG").ok();
    b.format(move |buf, rec| {
        if !admitted(rec.target(), rec.level(), rust_log.as_deref()) {
            return Ok(());
        }
        let line = format_line(
            style,
            rec.level(),
            rec.target(),
            rec.args(),
            RealClock.wall(),
        );
        writeln!(buf, "{line}")
    });
    if b.try_init().is_ok() && !rust_log_set() {
        log::set_max_level(level);
    }
}

/// Change the level at run time (SIGHUP). Returns false when `RUST_LOG`
/// owns the filter and nothing was changed.
pub fn set_level(level: LevelFilter) -> bool {
    if rust_log_set() {
        return false;
    }
    log::set_max_level(level);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    #[test]
    fn dependencies_are_quiet_unless_named() {
        let cases: &[(&str, Level, Option<&str>, bool)] = &[
            ("endpointd::daemon", Level::Trace, None, true),
            ("kube_sim", Level::Debug, None, true),
            ("endpointd_kube::kube::transport", Level::Info, None, true),
            ("endpointd_base::httpd", Level::Debug, None, true),
            ("endpointd_kubeish", Level::Info, None, false),
            ("ureq_proto::util", Level::Trace, None, false),
            ("ureq_proto::util", Level::Trace, Some("trace"), false),
            (
                "ureq::pool",
                Level::Debug,
                Some("debug,endpointd=trace"),
                false,
            ),
            ("rustls::client", Level::Warn, None, true),
            ("ureq::error", Level::Error, Some("off"), true),
            (
                "ureq_proto::util",
                Level::Trace,
                Some("ureq_proto=trace"),
                false,
            ),
            (
                "ureq_proto::client",
                Level::Trace,
                Some("ureq_proto=trace"),
                true,
            ),
            (
                "ureq::pool",
                Level::Debug,
                Some("info,ureq::pool=debug"),
                true,
            ),
            ("ureq_proto::util", Level::Trace, Some("ureq=trace"), false),
        ];
        for (target, level, spec, want) in cases {
            assert_eq!(
                admitted(target, *level, *spec),
                *want,
                "{target} {level} {spec:?}"
            );
        }
    }

    #[test]
    fn journald_lines_have_priority_and_no_timestamp() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_767_225_600_123);
        let cases = [
            (Level::Error, "<3>endpointd::x: boom"),
            (Level::Warn, "<4>endpointd::x: boom"),
            (Level::Info, "<6>endpointd::x: boom"),
            (Level::Debug, "<7>endpointd::x: boom"),
            (Level::Trace, "<7>endpointd::x: boom"),
        ];
        for (lvl, want) in cases {
            let got = format_line(
                Style::Journald,
                lvl,
                "endpointd::x",
                &format_args!("boom"),
                t,
            );
            assert_eq!(got, want);
        }
        let human = format_line(
            Style::Human,
            Level::Warn,
            "endpointd::x",
            &format_args!("boom"),
            t,
        );
        assert_eq!(human, "2026-01-01T00:00:00.123Z WARN  endpointd::x: boom");
    }

    #[test]
    fn journald_only_when_stderr_is_the_journal_stream() {
        let cases = [
            (None, Some((1, 2)), Style::Human),
            (Some("1:2"), Some((1, 2)), Style::Journald),
            (Some("1:3"), Some((1, 2)), Style::Human),
            (Some("garbage"), Some((1, 2)), Style::Human),
            (Some("1:2"), None, Style::Human),
        ];
        for (js, id, want) in cases {
            assert_eq!(style_for(js, id), want, "{js:?} {id:?}");
        }
    }
}
