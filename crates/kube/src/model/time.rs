//! Kubernetes timestamps: `Time` (RFC 3339, whole seconds, `Z`) and
//! `MicroTime` (RFC 3339 with exactly 6 fractional digits, `Z`), as
//! apimachinery's `metav1.Time` / `metav1.MicroTime` marshal them.
//!
//! Also [`OptTime`], an optional `Time` in 8 bytes for cached projections.
//!
//! Owns parsing and formatting only; never reads the clock (callers convert
//! a `SystemTime` they got from `endpointd_base::clock`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::time::SystemTime;

/// `metav1.Time`: second precision on the wire.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub jiff::Timestamp);

/// `metav1.MicroTime`: microsecond precision on the wire.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MicroTime(pub jiff::Timestamp);

fn from_system(t: SystemTime) -> jiff::Timestamp {
    // Out-of-range system times (before 9999 BC / after 9999 AD) cannot come
    // from a real clock; clamp rather than fail.
    jiff::Timestamp::try_from(t).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

impl Time {
    /// From a wall-clock reading (truncated to seconds on the wire).
    pub fn from_system(t: SystemTime) -> Time {
        Time(from_system(t))
    }
    /// As a `SystemTime`.
    pub fn to_system(self) -> SystemTime {
        self.0.into()
    }
}

impl MicroTime {
    /// From a wall-clock reading (truncated to microseconds on the wire).
    pub fn from_system(t: SystemTime) -> MicroTime {
        MicroTime(from_system(t))
    }
    /// As a `SystemTime`.
    pub fn to_system(self) -> SystemTime {
        self.0.into()
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.0}", self.0)
    }
}

impl fmt::Display for MicroTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}", self.0)
    }
}

impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Debug for MicroTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

fn parse<E: serde::de::Error>(s: &str) -> Result<jiff::Timestamp, E> {
    s.parse::<jiff::Timestamp>()
        .map_err(|e| E::custom(format!("invalid RFC 3339 timestamp {s:?}: {e}")))
}

impl Serialize for Time {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Serialize for MicroTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Time, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        parse(&s).map(Time)
    }
}

impl<'de> Deserialize<'de> for MicroTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<MicroTime, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        parse(&s).map(MicroTime)
    }
}

/// An optional [`Time`] in 8 bytes (`Option<Time>` is 24): whole seconds
/// since the epoch, `i64::MIN` for none. For the timestamps of cached
/// projections (a pod's deletionTimestamp and Ready lastTransitionTime).
/// The API server writes `metav1.Time` at whole seconds; a fraction in the
/// input is dropped (rounded toward the past).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct OptTime(i64);

impl OptTime {
    /// No time.
    pub const NONE: OptTime = OptTime(i64::MIN);
    /// The time, if any.
    pub fn get(self) -> Option<Time> {
        (self.0 != i64::MIN).then(|| {
            Time(jiff::Timestamp::from_second(self.0).unwrap_or(jiff::Timestamp::UNIX_EPOCH))
        })
    }
    /// Whether a time is set.
    pub fn is_some(self) -> bool {
        self.0 != i64::MIN
    }
    /// Whether no time is set.
    pub fn is_none(self) -> bool {
        self.0 == i64::MIN
    }
}

impl Default for OptTime {
    fn default() -> OptTime {
        OptTime::NONE
    }
}

impl From<Option<Time>> for OptTime {
    fn from(t: Option<Time>) -> OptTime {
        // A valid jiff timestamp's seconds are far from i64::MIN.
        t.map_or(OptTime::NONE, |t| {
            let mut s = t.0.as_second();
            if t.0.subsec_nanosecond() < 0 {
                s -= 1;
            }
            OptTime(s)
        })
    }
}

impl From<Time> for OptTime {
    fn from(t: Time) -> OptTime {
        Some(t).into()
    }
}

impl fmt::Debug for OptTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.get(), f)
    }
}

impl<'de> Deserialize<'de> for OptTime {
    /// An RFC 3339 string or null.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<OptTime, D::Error> {
        Option::<Time>::deserialize(d).map(OptTime::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn wire_formats() {
        let t = SystemTime::UNIX_EPOCH + Duration::new(1_767_225_600, 123_456_789);
        assert_eq!(
            serde_json::to_string(&Time::from_system(t)).expect("json"),
            r#""2026-01-01T00:00:00Z""#
        );
        assert_eq!(
            serde_json::to_string(&MicroTime::from_system(t)).expect("json"),
            r#""2026-01-01T00:00:00.123456Z""#
        );
        let whole = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600);
        assert_eq!(
            MicroTime::from_system(whole).to_string(),
            "2026-01-01T00:00:00.000000Z"
        );
    }

    #[test]
    fn parses_offsets_and_fractions() {
        let cases = [
            (r#""2026-01-01T00:00:00Z""#, 1_767_225_600_i64),
            (r#""2026-01-01T01:00:00+01:00""#, 1_767_225_600),
            (r#""2026-01-01T00:00:00.5Z""#, 1_767_225_600),
        ];
        for (json, secs) in cases {
            let t: Time = serde_json::from_str(json).expect(json);
            assert_eq!(t.0.as_second(), secs, "{json}");
        }
        assert!(serde_json::from_str::<Time>(r#""yesterday""#).is_err());
    }

    #[test]
    fn opt_time_is_8_bytes_and_keeps_whole_seconds() {
        assert_eq!(std::mem::size_of::<OptTime>(), 8);
        let t: OptTime = serde_json::from_str(r#""2026-01-01T00:00:00.5Z""#).expect("time");
        assert_eq!(
            t.get().map(|t| t.to_string()).as_deref(),
            Some("2026-01-01T00:00:00Z")
        );
        let n: OptTime = serde_json::from_str("null").expect("null");
        assert!(n.is_none() && n.get().is_none() && n == OptTime::default());
        let old: OptTime = serde_json::from_str(r#""1969-12-31T23:59:59.5Z""#).expect("time");
        assert_eq!(old.get().map(|t| t.0.as_second()), Some(-1));
        let max: Time = serde_json::from_str(r#""9999-12-30T00:00:00Z""#).expect("time");
        assert_eq!(OptTime::from(max).get(), Some(max));
    }
}
