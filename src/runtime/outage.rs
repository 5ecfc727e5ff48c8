//! A write outage seen from one controller's workers: many Services
//! failing the same way at once (an admission webhook refusing every write
//! with 500 `failed calling webhook`, an overloaded server answering 429).
//!
//! [`ServerFailures`] remembers the Services whose last sync failed with a
//! server error (5xx or 429), by status code. While two or more do, one of
//! them is retried every [`PROBE_EVERY`] whatever its backoff (the probe);
//! the first sync of one of them that succeeds means writes go through
//! again, and the others that failed with the same code are synced at once
//! instead of waiting out a backoff that grew while nothing could succeed.
//! The writes that follow are bounded by the controller's client rate
//! limit and its worker count.
//!
//! [`RetryLog`] turns repeated identical failures into one line per
//! interval ([`LOG_EVERY`]) with a count, instead of one line per failure.
//!
//! Both pure: times are passed in, nothing is logged or queued here.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// How often one Service is retried while many fail with server errors.
pub const PROBE_EVERY: Duration = Duration::from_secs(1);
/// At most one line per kind of failure per controller per this long.
pub const LOG_EVERY: Duration = Duration::from_secs(30);

/// The Services failing with server errors, and the probe.
#[derive(Debug, Default)]
pub struct ServerFailures {
    /// Key → the status code of its last failure.
    failed: HashMap<String, u16>,
    /// When the current probe runs, if one is scheduled.
    probe: Option<Instant>,
}

impl ServerFailures {
    /// The sync of `key` failed with server error `code` at `now`. True
    /// when this key is to be the probe: retried after [`PROBE_EVERY`]
    /// instead of its backoff (only while two or more Services fail so,
    /// and no other probe is scheduled).
    pub fn failed(&mut self, key: &str, code: u16, now: Instant) -> bool {
        self.failed.insert(key.to_string(), code);
        if self.failed.len() < 2 || self.probe.is_some_and(|t| t > now) {
            return false;
        }
        self.probe = Some(now + PROBE_EVERY);
        true
    }

    /// The sync of `key` failed otherwise (a conflict, a bad request): it
    /// no longer counts.
    pub fn other(&mut self, key: &str) {
        self.failed.remove(key);
    }

    /// The sync of `key` succeeded. If it had failed with a server error,
    /// writes go through again: the other keys that failed with the same
    /// code, to sync now (and forgotten here).
    pub fn succeeded(&mut self, key: &str) -> Vec<String> {
        let Some(code) = self.failed.remove(key) else {
            return Vec::new();
        };
        let mut back = Vec::new();
        self.failed.retain(|k, c| {
            if *c == code {
                back.push(k.clone());
                false
            } else {
                true
            }
        });
        if self.failed.is_empty() {
            self.probe = None;
        }
        back.sort();
        back
    }

    /// Keys remembered.
    pub fn len(&self) -> usize {
        self.failed.len()
    }

    /// Whether no key is remembered.
    pub fn is_empty(&self) -> bool {
        self.failed.is_empty()
    }
}

#[derive(Debug)]
struct Group {
    since: Instant,
    /// Failures held back since `since`, and of how many Services.
    count: u64,
    keys: HashSet<String>,
}

/// Repeated failures of one controller, one line per kind per interval.
#[derive(Debug, Default)]
pub struct RetryLog {
    groups: HashMap<String, Group>,
}

impl RetryLog {
    /// A sync of `key` failed at `now` with an error of kind `kind` (the
    /// error without what names the Service), `line` being the usual line
    /// for it. Returns the lines to log now: the first failure of a kind
    /// logs its own line; the next ones within [`LOG_EVERY`] are counted,
    /// and once it has passed they are logged as one line (at the next
    /// failure of any kind, or [`RetryLog::flush`]). A kind with nothing
    /// counted for [`LOG_EVERY`] is forgotten.
    pub fn failed(&mut self, key: &str, kind: &str, line: String, now: Instant) -> Vec<String> {
        let mut out = Vec::new();
        self.groups.retain(|k, g| {
            let over = now.saturating_duration_since(g.since) >= LOG_EVERY;
            if !over || k == kind {
                return true;
            }
            if g.count > 0 {
                out.push(summary(k, g, now));
            }
            false
        });
        out.sort();
        let Some(g) = self.groups.get_mut(kind) else {
            self.groups.insert(
                kind.to_string(),
                Group {
                    since: now,
                    count: 0,
                    keys: HashSet::new(),
                },
            );
            out.push(line);
            return out;
        };
        g.count += 1;
        g.keys.insert(key.to_string());
        if now.saturating_duration_since(g.since) >= LOG_EVERY {
            out.push(summary(kind, g, now));
            g.since = now;
            g.count = 0;
            g.keys.clear();
        }
        out
    }

    /// The failures counted and not yet logged, as lines (syncs succeed
    /// again, or the controller stops); forgets every kind.
    pub fn flush(&mut self, now: Instant) -> Vec<String> {
        let mut out: Vec<String> = self
            .groups
            .drain()
            .filter(|(_, g)| g.count > 0)
            .map(|(k, g)| summary(&k, &g, now))
            .collect();
        out.sort();
        out
    }

    /// Whether some failure is counted or remembered.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }
}

fn summary(kind: &str, g: &Group, now: Instant) -> String {
    let n = g.keys.len();
    let services = if n == 1 { "Service" } else { "Services" };
    format!(
        "error syncing {n} {services}, retrying: {kind}; {} times in {}s",
        g.count,
        now.saturating_duration_since(g.since).as_secs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_success_after_server_errors_brings_the_others_failed_the_same_way() {
        let t0 = Instant::now();
        let s = |ms: u64| t0 + Duration::from_millis(ms);
        let mut f = ServerFailures::default();
        // One Service failing alone is no outage: no probe.
        assert!(!f.failed("ns/a", 500, s(0)));
        assert!(!f.failed("ns/a", 500, s(2000)));
        // A second one: it is the probe; the next ones are not, until
        // the probe's time has come.
        assert!(f.failed("ns/b", 500, s(2100)));
        assert!(!f.failed("ns/c", 500, s(2200)));
        assert!(!f.failed("ns/b", 429, s(2300)), "probe still scheduled");
        assert!(f.failed("ns/b", 500, s(3100)), "the probe again");
        f.failed("ns/d", 429, s(3200));
        f.failed("ns/e", 500, s(3300));
        f.other("ns/e");
        // A Service that never failed succeeds: nothing follows.
        assert!(f.succeeded("ns/x").is_empty());
        // The probe succeeds: the others that failed with 500 follow.
        assert_eq!(f.succeeded("ns/b"), ["ns/a", "ns/c"]);
        assert_eq!(f.len(), 1, "the 429 stays");
        assert!(f.succeeded("ns/d").is_empty(), "alone with its code");
        assert!(f.is_empty());
        assert!(!f.failed("ns/a", 500, s(4000)), "a new run, alone again");
    }

    #[test]
    fn identical_failures_are_one_line_per_interval_with_a_count() {
        let t0 = Instant::now();
        let s = |secs: u64| t0 + Duration::from_secs(secs);
        let mut l = RetryLog::default();
        let line = |k: &str| format!("error syncing {k}, retrying: boom");
        assert_eq!(
            l.failed("ns/a", "boom", line("ns/a"), s(0)),
            [line("ns/a")],
            "the first is logged as it is"
        );
        for (i, t) in (1..30).enumerate() {
            let k = format!("ns/s{}", i % 4);
            assert!(l.failed(&k, "boom", line(&k), s(t)).is_empty(), "{t}");
        }
        // Another kind has its own first line.
        assert_eq!(
            l.failed("ns/z", "other", line("ns/z"), s(15)),
            [line("ns/z")]
        );
        assert_eq!(
            l.failed("ns/a", "boom", line("ns/a"), s(30)),
            ["error syncing 5 Services, retrying: boom; 30 times in 30s"]
        );
        assert!(l.failed("ns/a", "boom", line("ns/a"), s(31)).is_empty());
        assert!(l.failed("ns/a", "other", line("ns/a"), s(32)).is_empty());
        assert_eq!(
            l.flush(s(40)),
            [
                "error syncing 1 Service, retrying: boom; 1 times in 10s",
                "error syncing 1 Service, retrying: other; 1 times in 25s"
            ]
        );
        assert!(l.is_empty());
        assert_eq!(
            l.failed("ns/a", "boom", line("ns/a"), s(41)),
            [line("ns/a")],
            "after a flush, the first is logged again"
        );
        // A kind counted and then quiet is logged at the next failure of
        // any kind past its interval; one with nothing counted is just
        // forgotten.
        l.failed("ns/b", "boom", line("ns/b"), s(42));
        l.failed("ns/c", "rare", line("ns/c"), s(43));
        assert_eq!(
            l.failed("ns/d", "third", line("ns/d"), s(80)),
            [
                "error syncing 1 Service, retrying: boom; 1 times in 39s".to_string(),
                line("ns/d")
            ]
        );
        assert_eq!(
            l.failed("ns/c", "rare", line("ns/c"), s(81)),
            [line("ns/c")],
            "forgotten: a first line again"
        );
    }
}
