//! The forms of a preflight report: one text line per check
//! (`ok   name: message`) with a closing summary, or JSON for scripts.
//! Pure string building.

use super::checks::{Check, Level};
use serde::Serialize;
use std::fmt::Write;

/// The whole report, as `-o json` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PreflightReport {
    /// Every check, in order.
    pub checks: Vec<Check>,
    /// How many of each level.
    pub summary: Summary,
}

/// Counts per level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Checks that passed.
    pub ok: usize,
    /// Warnings.
    pub warn: usize,
    /// Failures (any: exit 1).
    pub fail: usize,
}

impl PreflightReport {
    /// The report of `checks`.
    pub fn new(checks: Vec<Check>) -> PreflightReport {
        let mut summary = Summary::default();
        for c in &checks {
            match c.level {
                Level::Ok => summary.ok += 1,
                Level::Warn => summary.warn += 1,
                Level::Fail => summary.fail += 1,
            }
        }
        PreflightReport { checks, summary }
    }
}

/// The text form.
pub fn text(r: &PreflightReport) -> String {
    let mut out = String::new();
    for c in &r.checks {
        let _ = writeln!(out, "{:<4} {}: {}", c.level.as_str(), c.name, c.message);
    }
    let s = r.summary;
    let _ = writeln!(
        out,
        "{} ok, {} warn, {} fail{}",
        s.ok,
        s.warn,
        s.fail,
        match (s.fail, s.warn) {
            (0, 0) => ": ready for the hand-over",
            (0, _) => ": read the warnings before the hand-over",
            _ => ": fix the failures before the hand-over",
        }
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_summary() {
        let c = |level, name: &str| Check {
            level,
            name: name.into(),
            message: "m".into(),
        };
        let r = PreflightReport::new(vec![
            c(Level::Ok, "a"),
            c(Level::Warn, "b"),
            c(Level::Fail, "c"),
        ]);
        assert_eq!(
            text(&r),
            "ok   a: m\nwarn b: m\nfail c: m\n1 ok, 1 warn, 1 fail: fix the failures before the hand-over\n"
        );
        let v = serde_json::to_value(&r).expect("json");
        assert_eq!(v["checks"][2]["level"], "fail");
        assert_eq!(v["summary"]["warn"], 1);
    }
}
