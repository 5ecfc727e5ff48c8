//! Kubernetes name rules (apimachinery `validation.IsDNS1123Label` and
//! friends), shared by the config file's checks, kube-sim's validation and
//! the controllers' object names. Pure predicates; no messages, no I/O.

/// RFC 1123 label: 1–63 lower-case alphanumerics or '-', alphanumeric at
/// both ends (namespaces, most label-like names).
pub fn is_dns1123_label(s: &str) -> bool {
    s.len() <= 63 && is_label_shaped(s)
}

/// Lower-case alphanumerics and '-', at least one, alphanumeric at both
/// ends: a label's pattern without its length bound.
fn is_label_shaped(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// RFC 1123 subdomain as apimachinery's `IsDNS1123Subdomain` checks it
/// (most object names): at most 253 characters, dot-separated parts of
/// lower-case alphanumerics and '-', alphanumeric at both ends of each
/// part. Unlike a label, a part may be longer than 63 characters
/// (upstream checks only the pattern and the total).
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_label_shaped)
}

/// RFC 1035 label: an RFC 1123 label that starts with a letter (Service names).
pub fn is_dns1035_label(s: &str) -> bool {
    is_dns1123_label(s) && s.as_bytes()[0].is_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        // (input, 1123 label, 1123 subdomain, 1035 label)
        let long_label = "a".repeat(63);
        let too_long_label = "a".repeat(64);
        let slice_name = format!("{}-9wb2p", "s".repeat(63));
        let long_sub = format!("{0}.{0}.{0}.{1}", "a".repeat(63), "a".repeat(61));
        let cases: Vec<(&str, bool, bool, bool)> = vec![
            ("kube-system", true, true, true),
            ("a", true, true, true),
            ("123-abc", true, true, false),
            ("endpointd.example.com", false, true, false),
            ("-a", false, false, false),
            ("a-", false, false, false),
            ("A", false, false, false),
            ("a_b", false, false, false),
            ("", false, false, false),
            ("a..b", false, false, false),
            (&long_label, true, true, true),
            // A subdomain's part may pass 63 (upstream checks the pattern
            // and the total only): a 63-character Service's slice name.
            (&too_long_label, false, true, false),
            (&slice_name, false, true, false),
            (&long_sub, false, true, false),
        ];
        for (s, label, sub, l1035) in cases {
            assert_eq!(is_dns1123_label(s), label, "1123 label {s:?}");
            assert_eq!(is_dns1123_subdomain(s), sub, "1123 subdomain {s:?}");
            assert_eq!(is_dns1035_label(s), l1035, "1035 label {s:?}");
        }
        assert!(
            !is_dns1123_subdomain(&format!("{long_sub}a")),
            "254 characters"
        );
    }
}
