//! Warnings the API server sends with an answer (the `Warning` response
//! header, `299 - "text"`: deprecated APIs, admission policies in `Warn`
//! mode, webhooks' warnings). client-go's default handler logs every one,
//! on every request; endpointd logs each distinct text once per process,
//! so that an operator sees them without a line per write.
//!
//! Owns the header's parsing (pure) and the record of texts already shown.
//! Never logs a text twice, nor an empty one or one with control
//! characters (nothing a server sends can forge a log line), never
//! remembers more than [`MAX_TEXTS`] texts (a server that varies its
//! warnings cannot grow endpointd), never blocks beyond its one short
//! lock — and takes none for a header value the same as the last one (a
//! 1.33+ server's Endpoints answers all carry the same warning).

use std::collections::HashSet;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

/// Distinct texts remembered; later new ones are not shown.
pub const MAX_TEXTS: usize = 64;

/// Longest text shown (a server's text is cut there, on a char boundary).
const MAX_TEXT: usize = 512;

/// The warning texts of one `Warning` header value: those with code 299
/// (the only code kube-apiserver sends, and the only one client-go shows),
/// unescaped. A malformed value yields what parsed before the fault.
pub fn parse(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = value;
    loop {
        rest = rest.trim_start_matches([' ', ',']);
        if rest.is_empty() {
            return out;
        }
        let Some((code, after)) = rest.split_once(' ') else {
            return out;
        };
        let Some((agent, after)) = after.split_once(' ') else {
            return out;
        };
        if agent.is_empty() {
            return out;
        }
        let Some((text, after)) = quoted(after) else {
            return out;
        };
        if code == "299" {
            out.push(text);
        }
        // An optional quoted date, then a comma before the next warning.
        rest = after.trim_start();
        if rest.starts_with('"') {
            match quoted(rest) {
                Some((_, after)) => rest = after,
                None => return out,
            }
        }
    }
}

/// A quoted string at the start of `s` (backslash escapes undone) and what
/// follows it.
fn quoted(s: &str) -> Option<(String, &str)> {
    let body = s.strip_prefix('"')?;
    let mut text = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((text, &body[i + 1..])),
            '\\' => text.push(chars.next()?.1),
            c => text.push(c),
        }
    }
    None
}

/// The texts shown so far.
#[derive(Debug, Default)]
pub struct Seen {
    texts: Mutex<HashSet<String>>,
}

impl Seen {
    /// Whether `text` is new (and remembered now); false once
    /// [`MAX_TEXTS`] texts are remembered.
    pub fn first(&self, text: &str) -> bool {
        let mut texts = self.texts.lock().unwrap_or_else(|p| p.into_inner());
        if texts.contains(text) || texts.len() >= MAX_TEXTS {
            return false;
        }
        texts.insert(text.to_string())
    }
}

/// The texts this process has shown.
static SHOWN: LazyLock<Seen> = LazyLock::new(Seen::default);

/// A hash of the last header value reported (0: none yet).
static LAST: AtomicU64 = AtomicU64::new(0);

/// The hasher of [`LAST`]: the project's fast one (as for the caches and
/// fingerprints), not SipHash — it runs once per answer that has a
/// `Warning` header, which on a 1.33+ server is every Endpoints write.
static LAST_HASHER: LazyLock<foldhash::fast::RandomState> = LazyLock::new(Default::default);

/// Whether a text is worth a log line: not empty, no control characters.
fn showable(text: &str) -> bool {
    !text.is_empty() && !text.chars().any(char::is_control)
}

/// Log each text of a response's `Warning` header values (raw bytes: a
/// webhook's text may be UTF-8) that this process has not shown yet.
pub fn report<'a>(server: &str, values: impl Iterator<Item = &'a [u8]>) {
    for raw in values {
        let h = LAST_HASHER.hash_one(raw).max(1);
        if LAST.swap(h, Ordering::Relaxed) == h {
            continue;
        }
        let Ok(value) = std::str::from_utf8(raw) else {
            continue;
        };
        for text in parse(value) {
            if !showable(&text) || !SHOWN.first(&text) {
                continue;
            }
            let shown = cut(&text);
            if text.starts_with("v1 Endpoints is deprecated") {
                // Expected: endpointd writes Endpoints as kube-controller-
                // manager does (1.33+ servers warn on every such request).
                log::info!("API server {server} warns (shown once): {shown}");
            } else {
                log::warn!("API server {server} warns (each text shown once): {shown}");
            }
        }
    }
}

fn cut(text: &str) -> &str {
    crate::text::prefix_within(text, MAX_TEXT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_parse_as_client_go_reads_them() {
        let rows: [(&str, &[&str]); 10] = [
            (
                r#"299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice""#,
                &["v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"],
            ),
            // Two in one value, one with a date; escapes undone.
            (
                r#"299 - "a, b", 299 kube "say \"hi\"" "Wed, 21 Oct 2015 07:28:00 GMT""#,
                &["a, b", r#"say "hi""#],
            ),
            // Other codes are not shown.
            (r#"199 - "misc", 299 - "kept""#, &["kept"]),
            (r#"299 - """#, &[""]),
            // Malformed: what parsed before the fault.
            (r#"299 - "ok", 299 - "unterminated"#, &["ok"]),
            (r#"299 - "ok", 299  "no agent""#, &["ok"]),
            (r#"299 -"#, &[]),
            ("garbage", &[]),
            ("", &[]),
            (r#"299 - "ünïcode""#, &["ünïcode"]),
        ];
        for (value, want) in rows {
            assert_eq!(parse(value), want, "{value}");
        }
    }

    #[test]
    fn empty_texts_and_control_characters_are_not_shown() {
        assert!(showable("v1 Endpoints is deprecated"));
        assert!(showable("ünïcode"));
        assert!(!showable(""));
        assert!(!showable("forged\nINFO fake line"));
        assert!(!showable("bell\u{7}"));
    }

    #[test]
    fn each_text_is_shown_once_and_the_record_is_bounded() {
        let seen = Seen::default();
        assert!(seen.first("a"));
        assert!(!seen.first("a"), "shown once");
        for i in 1..MAX_TEXTS {
            assert!(seen.first(&i.to_string()));
        }
        assert!(!seen.first("one too many"), "bounded");
        assert!(!seen.first("a"));
    }

    #[test]
    fn long_texts_are_cut_on_a_char_boundary() {
        let long = "é".repeat(MAX_TEXT);
        let c = cut(&long);
        assert!(
            c.len() <= MAX_TEXT && c.len() >= MAX_TEXT - 1,
            "{}",
            c.len()
        );
        assert_eq!(cut("short"), "short");
    }
}
