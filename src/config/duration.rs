//! Durations as Go writes them (`time.ParseDuration`): "500ms", "15s",
//! "2m", "1h30m", "1.5s". Units: ns, us (µs), ms, s, m, h. "0" alone is
//! allowed; negative durations are not (no key here takes one), and, as in
//! Go, none longer than [`MAX`] (about 292 years).

use std::time::Duration;

/// The longest duration Go's `time.Duration` holds (2⁶³ − 1 ns):
/// `time.ParseDuration` refuses anything longer, and so do we. Anything
/// shorter can be added to the clock's readings without overflow.
pub const MAX: Duration = Duration::from_nanos(i64::MAX as u64);

/// Why a duration string does not parse. The messages end with an example
/// of a valid duration (except [`DurationError::OutOfRange`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DurationError {
    /// Nothing but whitespace.
    Empty,
    /// A unit where a number should be (the input).
    Invalid(String),
    /// A number that does not parse (the input).
    Number {
        /// The input.
        input: String,
        /// Why the number does not parse.
        source: std::num::ParseFloatError,
    },
    /// A number without a unit (the input).
    MissingUnit(String),
    /// A unit other than ns, us, µs, ms, s, m, h.
    UnknownUnit {
        /// The unit as written.
        unit: String,
        /// The input.
        input: String,
    },
    /// Longer than [`MAX`] (the input).
    OutOfRange(String),
    /// A negative, non-zero duration.
    Negative,
}

impl std::fmt::Display for DurationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DurationError::Empty => f.write_str("empty duration"),
            DurationError::Invalid(s) => write!(f, "invalid duration {s:?}"),
            DurationError::Number { input, .. } => write!(f, "invalid number in {input:?}"),
            DurationError::MissingUnit(s) => write!(f, "missing unit in {s:?}"),
            DurationError::UnknownUnit { unit, input } => {
                write!(f, "unknown unit {unit:?} in {input:?}")
            }
            DurationError::OutOfRange(s) => {
                return write!(
                    f,
                    "duration {s:?} is out of range: at most {} (Go's limit)",
                    format_duration(MAX)
                )
            }
            DurationError::Negative => f.write_str("must not be negative"),
        }?;
        f.write_str(": write a duration such as \"500ms\", \"15s\", \"2m\" or \"1h30m\"")
    }
}

impl std::error::Error for DurationError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DurationError::Number { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Parse a Go-style duration string.
pub fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    let t = s.trim();
    if t.is_empty() {
        return Err(DurationError::Empty);
    }
    let (negative, unsigned) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    if unsigned == "0" {
        return Ok(Duration::ZERO);
    }
    let mut rest = unsigned;
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return Err(DurationError::Invalid(s.to_string()));
        }
        let number: f64 = rest[..num_len]
            .parse()
            .map_err(|source| DurationError::Number {
                input: s.to_string(),
                source,
            })?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "" => return Err(DurationError::MissingUnit(s.to_string())),
            other => {
                return Err(DurationError::UnknownUnit {
                    unit: other.to_string(),
                    input: s.to_string(),
                })
            }
        };
        total += number * scale;
        rest = &rest[unit_len..];
    }
    let too_long = || DurationError::OutOfRange(s.to_string());
    let d = Duration::try_from_secs_f64(total).map_err(|_| too_long())?;
    if d > MAX {
        return Err(too_long());
    }
    if negative && !d.is_zero() {
        return Err(DurationError::Negative);
    }
    Ok(d)
}

/// Format a duration the way Go prints it, compactly: "0s", "500ms",
/// "15s", "1.5s", "2m", "1h30m".
pub fn format_duration(d: Duration) -> String {
    if d.is_zero() {
        return "0s".to_string();
    }
    let nanos = d.as_nanos();
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return trim_float(nanos as f64 / 1e3, "us");
    }
    if nanos < 1_000_000_000 {
        return trim_float(nanos as f64 / 1e6, "ms");
    }
    let secs = d.as_secs();
    let (h, m) = (secs / 3600, (secs % 3600) / 60);
    let s = (secs % 60) as f64 + f64::from(d.subsec_nanos()) / 1e9;
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0.0 {
        out.push_str(&trim_float(s, "s"));
    }
    out
}

fn trim_float(v: f64, unit: &str) -> String {
    let s = format!("{v:.9}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_table() {
        let ms = Duration::from_millis;
        let cases: &[(&str, Result<Duration, &str>)] = &[
            ("0", Ok(Duration::ZERO)),
            ("0s", Ok(Duration::ZERO)),
            ("500ms", Ok(ms(500))),
            ("15s", Ok(ms(15_000))),
            ("2m", Ok(ms(120_000))),
            ("1h30m", Ok(ms(5_400_000))),
            ("1.5s", Ok(ms(1_500))),
            ("100us", Ok(Duration::from_micros(100))),
            ("10µs", Ok(Duration::from_micros(10))),
            ("7ns", Ok(Duration::from_nanos(7))),
            ("", Err("empty duration")),
            ("15", Err("missing unit")),
            ("-1s", Err("must not be negative")),
            ("5x", Err("unknown unit \"x\"")),
            ("s", Err("invalid duration")),
            ("1..2s", Err("invalid number")),
            ("-0s", Ok(Duration::ZERO)),
            ("-0", Ok(Duration::ZERO)),
            ("+5s", Ok(ms(5_000))),
            ("2562047h47m16s", Ok(Duration::from_secs(9_223_372_036))),
            (
                "2562048h",
                Err("out of range: at most 2562047h47m16.854775807s"),
            ),
            ("9223372036854775807s", Err("out of range")),
            ("1e400h", Err("unknown unit \"e\"")),
        ];
        for (input, want) in cases {
            let got = parse_duration(input);
            match (want, &got) {
                (Ok(w), Ok(g)) => assert_eq!(g, w, "{input:?}"),
                (Err(w), Err(g)) => {
                    assert!(g.to_string().contains(w), "{input:?}: {g:?} lacks {w:?}")
                }
                _ => panic!("{input:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn messages_are_whole_sentences() {
        let e = |s: &str| parse_duration(s).map_err(|e| e.to_string()).err();
        let hint = ": write a duration such as \"500ms\", \"15s\", \"2m\" or \"1h30m\"";
        assert_eq!(e(" "), Some(format!("empty duration{hint}")));
        assert_eq!(e("5x"), Some(format!("unknown unit \"x\" in \"5x\"{hint}")));
        assert_eq!(
            e("2562048h"),
            Some(
                "duration \"2562048h\" is out of range: at most 2562047h47m16.854775807s (Go's limit)"
                    .to_string()
            )
        );
    }

    #[test]
    fn format_table() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_millis(500), "500ms"),
            (Duration::from_secs(15), "15s"),
            (Duration::from_secs(120), "2m"),
            (Duration::from_secs(5400), "1h30m"),
            (Duration::from_millis(1500), "1.5s"),
            (Duration::from_micros(250), "250us"),
            (Duration::from_nanos(3), "3ns"),
        ];
        for (d, want) in cases {
            assert_eq!(format_duration(d), want);
            assert_eq!(parse_duration(want), Ok(d), "round trip {want}");
        }
    }
}
