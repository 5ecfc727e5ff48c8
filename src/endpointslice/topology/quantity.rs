//! Kubernetes resource quantities as the topology cache needs them:
//! allocatable CPU in millicores (`4` → 4000, `3500m` → 3500, `0.5` → 500,
//! `2k` → 2,000,000), rounded up like `Quantity.MilliValue()`.
//!
//! Pure; garbage is `None`, never a panic.

/// Millicores of a CPU quantity, or `None` if it does not parse or is
/// negative.
pub fn milli_cpu(q: &str) -> Option<u64> {
    let q = q.trim();
    let (num, mult): (&str, f64) = if let Some(n) = q.strip_suffix("Ki") {
        (n, 1024.0)
    } else if let Some(n) = q.strip_suffix("Mi") {
        (n, 1024.0 * 1024.0)
    } else if let Some(n) = q.strip_suffix("Gi") {
        (n, 1024.0 * 1024.0 * 1024.0)
    } else if let Some(n) = q.strip_suffix('m') {
        (n, 0.001)
    } else if let Some(n) = q.strip_suffix('k') {
        (n, 1e3)
    } else if let Some(n) = q.strip_suffix('M') {
        (n, 1e6)
    } else if let Some(n) = q.strip_suffix('G') {
        (n, 1e9)
    } else {
        (q, 1.0)
    };
    if num.is_empty()
        || !num
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == '.' || c == '+')
    {
        return None;
    }
    let v: f64 = num.parse().ok()?;
    let milli = (v * mult * 1000.0).ceil();
    (milli.is_finite() && milli >= 0.0 && milli < u64::MAX as f64).then_some(milli as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milli_cpu_table() {
        let cases = [
            ("4", Some(4000)),
            ("3500m", Some(3500)),
            ("0.5", Some(500)),
            ("1.5", Some(1500)),
            ("2k", Some(2_000_000)),
            ("100m", Some(100)),
            ("0", Some(0)),
            ("1e3", Some(1_000_000)),
            ("0.0001", Some(1)),
            ("", None),
            ("abc", None),
            ("-1", None),
            ("m", None),
            ("NaN", None),
            ("inf", None),
        ];
        for (q, want) in cases {
            assert_eq!(milli_cpu(q), want, "{q:?}");
        }
    }
}
