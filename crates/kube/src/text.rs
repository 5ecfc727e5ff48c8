//! Text helpers shared across layers. Owns only cutting a string to a byte
//! budget without splitting a character (`str::floor_char_boundary` needs
//! Rust 1.91; the crate supports 1.88). Pure.

/// The longest prefix of `s` of at most `max` bytes that ends on a char
/// boundary.
pub fn prefix_within(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_end_on_a_char_boundary() {
        assert_eq!(prefix_within("short", 10), "short");
        assert_eq!(prefix_within("abcdef", 3), "abc");
        assert_eq!(prefix_within("éé", 3), "é");
        assert_eq!(prefix_within("é", 1), "");
        assert_eq!(prefix_within("", 0), "");
    }
}
