//! Logging on `log`, filtered as `env_logger` filters, written one of two
//! ways.
//!
//! - **journald** (stderr is the stream named by `$JOURNAL_STREAM`): each
//!   record a native-protocol datagram ([`journal`]) with `PRIORITY`,
//!   `MESSAGE` and endpointd's fields: `ENDPOINTD_CONTROLLER` and
//!   `ENDPOINTD_SERVICE` from the thread's [`context`], and
//!   `ENDPOINTD_LEASE_HOLDER` from a record's `holder` key. A record the
//!   socket does not take goes to stderr as a `<N>`-prefixed line.
//! - **human**: RFC 3339 UTC timestamp with milliseconds, level, target.
//!
//! The level comes from `[log].level`; `RUST_LOG`, when set, overrides it
//! (and then a SIGHUP reload leaves it alone). Owns formatting only; it never
//! decides what is logged, and nothing logged may contain a secret.

pub mod context;
pub mod journal;

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
    let journal = match style {
        Style::Journald => journal::Journal::connect(std::path::Path::new(journal::SOCKET)).ok(),
        Style::Human => None,
    };
    let logger = Logger::new(style, journal);
    let max = logger.filter.filter();
    if log::set_boxed_logger(Box::new(logger)).is_ok() {
        log::set_max_level(if rust_log_set() { max } else { level });
    }
}

/// The process's logger: `env_logger`'s filter (so `RUST_LOG` means what it
/// always meant), [`admitted`], then the journal or a stderr line.
pub struct Logger {
    filter: env_logger::Logger,
    rust_log: Option<String>,
    style: Style,
    journal: Option<journal::Journal>,
}

impl Logger {
    /// A logger writing in `style`; to `journal` when given (journald style).
    pub fn new(style: Style, journal: Option<journal::Journal>) -> Logger {
        let mut b = env_logger::Builder::new();
        if rust_log_set() {
            b.parse_env("RUST_LOG");
        } else {
            b.filter_level(LevelFilter::Trace);
        }
        Logger {
            filter: b.build(),
            rust_log: std::env::var("RUST_LOG").ok(),
            style,
            journal,
        }
    }

    fn line(&self, rec: &log::Record<'_>) -> String {
        format_line(
            self.style,
            rec.level(),
            rec.target(),
            rec.args(),
            RealClock.wall(),
        )
    }

    /// Send `rec` to the journal; false when it did not take it.
    fn to_journal(&self, journal: &journal::Journal, rec: &log::Record<'_>) -> bool {
        let message = format!("{}: {}", rec.target(), rec.args());
        let message = journal::bounded(&message);
        let priority = syslog_priority(rec.level()).to_string();
        let holder = rec
            .key_values()
            .get(log::kv::Key::from_str("holder"))
            .map(|v| v.to_string());
        let line = rec.line().map(|l| l.to_string());
        context::with_service(|service| {
            let mut fields: Vec<(&str, &str)> = vec![
                ("PRIORITY", &priority),
                ("SYSLOG_IDENTIFIER", "endpointd"),
                ("MESSAGE", &message),
            ];
            if let Some(c) = context::controller() {
                fields.push(("ENDPOINTD_CONTROLLER", c));
            }
            if let Some(s) = service {
                fields.push(("ENDPOINTD_SERVICE", s));
            }
            if let Some(h) = &holder {
                fields.push(("ENDPOINTD_LEASE_HOLDER", h));
            }
            if let (Some(f), Some(l)) = (rec.file(), &line) {
                fields.push(("CODE_FILE", f));
                fields.push(("CODE_LINE", l));
            }
            journal.send(&journal::encode(&fields)).is_ok()
        })
    }
}

impl log::Log for Logger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        self.filter.enabled(metadata)
    }

    fn log(&self, rec: &log::Record<'_>) {
        if !self.filter.matches(rec)
            || !admitted(rec.target(), rec.level(), self.rust_log.as_deref())
        {
            return;
        }
        if let Some(j) = &self.journal {
            if self.to_journal(j, rec) {
                return;
            }
        }
        let mut line = self.line(rec);
        line.push('\n');
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    fn flush(&self) {
        let _ = std::io::stderr().flush();
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

    /// Parse one native-protocol datagram into (name, value) pairs.
    fn parse(mut d: &[u8]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        while !d.is_empty() {
            let nl = d.iter().position(|&b| b == b'\n').expect("field end");
            let head = &d[..nl];
            if let Some(eq) = head.iter().position(|&b| b == b'=') {
                let name = String::from_utf8_lossy(&head[..eq]).into_owned();
                out.push((name, String::from_utf8_lossy(&head[eq + 1..]).into_owned()));
                d = &d[nl + 1..];
            } else {
                let name = String::from_utf8_lossy(head).into_owned();
                let len_bytes: [u8; 8] = d[nl + 1..nl + 9].try_into().expect("length");
                let len = u64::from_le_bytes(len_bytes) as usize;
                let value = &d[nl + 9..nl + 9 + len];
                out.push((name, String::from_utf8_lossy(value).into_owned()));
                d = &d[nl + 9 + len + 1..];
            }
        }
        out
    }

    #[test]
    fn journal_records_carry_priority_service_controller_and_holder() {
        use log::Log;
        let dir = std::env::temp_dir().join(format!("endpointd-journal-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("socket");
        let journald = std::os::unix::net::UnixDatagram::bind(&path).expect("bind");
        journald
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let logger = Logger::new(
            Style::Journald,
            Some(journal::Journal::connect(&path).expect("connect")),
        );
        let recv = || {
            let mut buf = vec![0u8; 128 * 1024];
            let n = journald.recv(&mut buf).expect("a datagram");
            parse(&buf[..n])
        };
        let field = |fields: &[(String, String)], name: &str| {
            fields
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };

        // A worker syncing shop/web for the endpoints controller.
        std::thread::scope(|s| {
            s.spawn(|| {
                context::set_controller("endpoints");
                let _sync = context::service("shop/web");
                logger.log(
                    &log::Record::builder()
                        .level(Level::Info)
                        .target("endpointd::endpoints::writer")
                        .args(format_args!("updated Endpoints shop/web\nsecond line"))
                        .build(),
                );
            });
        });
        let got = recv();
        assert_eq!(field(&got, "PRIORITY").as_deref(), Some("6"), "{got:?}");
        assert_eq!(
            field(&got, "ENDPOINTD_SERVICE").as_deref(),
            Some("shop/web")
        );
        assert_eq!(
            field(&got, "ENDPOINTD_CONTROLLER").as_deref(),
            Some("endpoints")
        );
        assert_eq!(
            field(&got, "MESSAGE").as_deref(),
            Some("endpointd::endpoints::writer: updated Endpoints shop/web\nsecond line")
        );
        assert_eq!(field(&got, "ENDPOINTD_LEASE_HOLDER"), None);

        // The lease thread, a leadership change with its holder; no
        // Service scope is left behind by the worker above.
        std::thread::scope(|s| {
            s.spawn(|| {
                context::set_controller("lease");
                let kv = [("holder", "node-a")];
                logger.log(
                    &log::Record::builder()
                        .level(Level::Error)
                        .target("endpointd::lease::thread")
                        .args(format_args!("leadership lost: node-a holds the lease"))
                        .key_values(&kv)
                        .build(),
                );
            });
        });
        let got = recv();
        assert_eq!(field(&got, "PRIORITY").as_deref(), Some("3"));
        assert_eq!(
            field(&got, "ENDPOINTD_CONTROLLER").as_deref(),
            Some("lease")
        );
        assert_eq!(
            field(&got, "ENDPOINTD_LEASE_HOLDER").as_deref(),
            Some("node-a")
        );
        assert_eq!(field(&got, "ENDPOINTD_SERVICE"), None);

        // A dependency's debug record stays out, as on stderr.
        logger.log(
            &log::Record::builder()
                .level(Level::Debug)
                .target("ureq::pool")
                .args(format_args!("pool detail"))
                .build(),
        );
        journald.set_nonblocking(true).expect("nonblocking");
        let mut buf = [0u8; 64];
        assert!(journald.recv(&mut buf).is_err(), "nothing more was sent");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
