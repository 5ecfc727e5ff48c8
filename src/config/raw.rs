//! Stage one: the file as written. Every key is optional (an empty file is
//! valid), every value keeps its span for error lines, unknown keys are
//! errors. Parse errors are turned into [`ConfigError`]s naming the key.

use super::ConfigError;
use serde::Deserialize;
use toml::Spanned;

/// An optional value with its position in the file.
pub type Field<T> = Option<Spanned<T>>;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    pub kubernetes: Option<Kubernetes>,
    pub leader_election: Option<LeaderElection>,
    pub endpoints: Option<Endpoints>,
    pub endpointslices: Option<EndpointSlices>,
    pub server: Option<Server>,
    pub log: Option<Log>,
    pub mode: Option<Mode>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kubernetes {
    pub kubeconfig: Field<String>,
    pub context: Field<String>,
    pub qps: Field<f64>,
    pub burst: Field<i64>,
    pub request_timeout: Field<String>,
    pub watch_list: Field<bool>,
    pub max_response_bytes: Field<i64>,
    pub max_list_items: Field<i64>,
    pub watch_idle_timeout: Field<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaderElection {
    pub enabled: Field<bool>,
    pub lease_namespace: Field<String>,
    pub lease_name: Field<String>,
    pub identity: Field<String>,
    pub lease_duration: Field<String>,
    pub renew_deadline: Field<String>,
    pub retry_period: Field<String>,
    pub heartbeat_duration: Field<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Endpoints {
    pub enabled: Field<bool>,
    pub workers: Field<i64>,
    pub batch_period: Field<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointSlices {
    pub enabled: Field<bool>,
    pub workers: Field<i64>,
    pub max_endpoints_per_slice: Field<i64>,
    pub batch_period: Field<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Server {
    pub listen: Field<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Log {
    pub level: Field<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mode {
    pub shadow: Field<bool>,
}

/// Parse TOML text into raw values.
pub fn parse(file: &str, text: &str) -> Result<RawConfig, ConfigError> {
    toml::from_str::<RawConfig>(text).map_err(|e| {
        let offset = e.span().map(|s| s.start);
        let line = offset.map(|o| line_of(text, o));
        let (key, value) = match offset {
            Some(o) => key_at(text, o),
            None => (None, None),
        };
        ConfigError {
            file: file.to_string(),
            key,
            value,
            line,
            message: tidy(e.message()),
        }
    })
}

/// The parser's message, on one line, with serde's jargon made plainer
/// (no Rust type names: `struct Kubernetes`, `i128`, `map`).
fn tidy(msg: &str) -> String {
    let one = msg.trim().replace('\n', "; ");
    let one = one
        .replace("unknown field", "unknown key")
        .replace("invalid type: ", "wrong type: ")
        .replace("wrong type: map", "wrong type: table")
        .replace(
            " as i128, expected i64",
            " is out of range, expected a 64-bit integer",
        )
        .replace("expected i64", "expected an integer")
        .replace("expected f64", "expected a number")
        .replace("expected a boolean", "expected true or false");
    // `kubernetes = []` gives "invalid length 0, expected struct Kubernetes
    // with 9 elements"; `endpoints = true` "…, expected struct Endpoints".
    let one = match one.strip_prefix("invalid length ") {
        Some(rest) if rest.contains("expected struct ") => {
            format!(
                "wrong type: array, {}",
                &rest[rest.find("expected").unwrap_or(0)..]
            )
        }
        _ => one,
    };
    match one.find("expected struct ") {
        Some(at) => format!("{}expected a table", &one[..at]),
        None => one,
    }
}

/// 1-based line of a byte offset.
pub fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// Longest value an error quotes whole; a longer one is cut to its first
/// [`SHOWN`] characters and its length (a 1 MiB value must not become a
/// 1 MiB error line).
const SHOWN: usize = 64;

/// Render a value as it would be written in TOML (cut when long).
pub fn show<T: std::fmt::Debug>(v: &T) -> String {
    let s = format!("{v:?}");
    let n = s.chars().count();
    if n <= 2 * SHOWN {
        return s;
    }
    let head: String = s.chars().take(SHOWN).collect();
    format!("{head}… ({n} characters)")
}

/// Best-effort key path and value text for an error at `offset`: the nearest
/// `[section]` header above it and the `key = value` on its line.
fn key_at(text: &str, offset: usize) -> (Option<String>, Option<String>) {
    let line_no = line_of(text, offset);
    let lines: Vec<&str> = text.lines().collect();
    let Some(line) = lines.get(line_no.saturating_sub(1)) else {
        return (None, None);
    };
    let section = lines[..line_no.saturating_sub(1)]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| l.starts_with('[') && l.ends_with(']'))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    let t = line.trim();
    if t.starts_with('[') {
        return (
            Some(t.trim_matches(|c| c == '[' || c == ']').trim().to_string()),
            None,
        );
    }
    let Some((k, v)) = t.split_once('=') else {
        return (section, None);
    };
    let k = k.trim();
    let v = v.split(" #").next().unwrap_or(v).trim();
    let path = match section {
        Some(s) => format!("{s}.{k}"),
        None => k.to_string(),
    };
    (Some(path), Some(v.to_string()))
}
