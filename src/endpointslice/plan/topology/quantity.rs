//! Kubernetes resource quantities as the topology cache needs them:
//! allocatable CPU in nanocores, exactly, and sums of them in millicores
//! rounded up like `Quantity.MilliValue()` (`4` → 4000, `3500m` → 3500,
//! `0.5` → 500, `2k` → 2,000,000).
//!
//! Pure; garbage is `None`, never a panic.

/// Millicores of a CPU quantity (the table test's view of [`nano_cpu`]),
/// or `None` if it does not parse, is negative or does not fit:
/// `Quantity.MilliValue()`, the value times 1000 rounded up, exactly
/// (`1900m` is 1900 — through floating point 1900 × 0.001 × 1000 came out
/// 1901, which shifted zone CPU ratios and so the topology hints written).
#[cfg(test)]
fn milli_cpu(q: &str) -> Option<u64> {
    u64::try_from(milli_of_nanos(nano_cpu(q)?))
        .ok()
        .filter(|m| *m < u64::MAX)
}

/// Millicores of a sum of nanocores, rounded up (`MilliValue` of a sum).
pub fn milli_of_nanos(n: u128) -> u128 {
    n.div_ceil(1_000_000)
}

/// Nanocores of a CPU quantity, rounded up (the API server keeps no finer
/// precision), in exact decimal arithmetic; `None` if it does not parse,
/// is negative or does not fit. Upstream adds the quantities themselves
/// and rounds only the sums to millicores; summing nanocores and rounding
/// the sums ([`milli_of_nanos`]) gives the same figures.
pub fn nano_cpu(q: &str) -> Option<u128> {
    let q = q.trim();
    let (number, binary, exp10) = split_suffix(q)?;
    let number = number.strip_prefix('+').unwrap_or(number);
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let mut mantissa: u128 = 0;
    for b in int.bytes().chain(frac.bytes()) {
        mantissa = mantissa
            .checked_mul(10)?
            .checked_add(u128::from(b - b'0'))?;
    }
    let mantissa = mantissa.checked_mul(binary)?;
    // value × 10^9 = mantissa × 10^(exp10 + 9 − fraction digits)
    let e = exp10 + 9 - i64::try_from(frac.len()).ok()?;
    if e >= 0 {
        mantissa.checked_mul(10u128.checked_pow(u32::try_from(e).ok()?)?)
    } else {
        Some(match 10u128.checked_pow(u32::try_from(-e).ok()?) {
            Some(d) => mantissa.div_ceil(d),
            None => u128::from(mantissa > 0),
        })
    }
}

/// The number, its binary multiplier and its decimal exponent
/// (`<number><suffix>`: `Ki`…`Ei`, `n`, `u`, `m`, `k`…`E`, or `e`/`E` and an
/// exponent).
fn split_suffix(q: &str) -> Option<(&str, u128, i64)> {
    const BINARY: [(&str, u32); 6] = [
        ("Ki", 10),
        ("Mi", 20),
        ("Gi", 30),
        ("Ti", 40),
        ("Pi", 50),
        ("Ei", 60),
    ];
    const DECIMAL: [(char, i64); 9] = [
        ('n', -9),
        ('u', -6),
        ('m', -3),
        ('k', 3),
        ('M', 6),
        ('G', 9),
        ('T', 12),
        ('P', 15),
        ('E', 18),
    ];
    for (suffix, bits) in BINARY {
        if let Some(n) = q.strip_suffix(suffix) {
            return Some((n, 1u128 << bits, 0));
        }
    }
    if let Some(at) = q.find(['e', 'E']).filter(|at| at + 1 < q.len()) {
        let exp: i64 = q[at + 1..].parse().ok()?;
        return (exp.abs() <= 64).then_some((&q[..at], 1, exp));
    }
    for (suffix, exp) in DECIMAL {
        if let Some(n) = q.strip_suffix(suffix) {
            return Some((n, 1, exp));
        }
    }
    Some((q, 1, 0))
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
            // Exact where floating point rounds up one millicore too many.
            ("1900m", Some(1900)),
            ("3800m", Some(3800)),
            ("940m", Some(940)),
            ("9m", Some(9)),
            ("2.007", Some(2007)),
            ("0.1", Some(100)),
            ("+2", Some(2000)),
            ("1Ki", Some(1_024_000)),
            ("1.5Mi", Some(1_572_864_000)),
            ("2P", Some(2_000_000_000_000_000_000)),
            ("1E", None),
            ("1.5e-3", Some(2)),
            ("5e-4", Some(1)),
            ("1.", Some(1000)),
            (".5", Some(500)),
            ("0.00000000000000000000000000000000000000000001", Some(1)),
            (".", None),
            ("1.2.3", None),
            ("1x", None),
            ("1e", None),
            ("e3", None),
            // n and u, which the API server writes for sub-milli values.
            ("1500u", Some(2)),
            ("1n", Some(1)),
            ("3999999999n", Some(4000)),
            ("3999500u", Some(4000)),
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
