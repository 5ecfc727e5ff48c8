//! The retry policy for ordinary requests (not watches): which failures are
//! retried, how often, and after what delay. Pure; the client sleeps.
//!
//! Why these rules:
//! * **429** is retried for every verb: the API server rejects the request
//!   (max-inflight or API priority and fairness) before doing any work, so
//!   repeating even a POST cannot duplicate an effect.
//! * **5xx** and **transport failures** are retried only for idempotent
//!   verbs (get, list, update, delete). A PUT carries a resourceVersion, so a
//!   replay of an already-applied update fails with 409 instead of applying
//!   twice; a replayed DELETE gets 404. A POST with `generateName` or a JSON
//!   patch could apply twice, so those surface the error to the caller.
//! * `Retry-After` (header or `details.retryAfterSeconds`) is honoured but
//!   capped, so a hostile or confused server cannot park a worker for long;
//!   without it, a short exponential backoff with jitter is used.
//!
//! Must never retry more than `max_retries` times or sleep past `max_delay`.

use super::error::Error;
use std::time::Duration;

/// The operation, for retry decisions and metrics labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verb {
    /// GET one object.
    Get,
    /// GET a collection.
    List,
    /// GET with `watch=true`.
    Watch,
    /// POST.
    Create,
    /// PUT (object or status).
    Update,
    /// PATCH.
    Patch,
    /// DELETE.
    Delete,
}

impl Verb {
    /// Lower-case Kubernetes verb, the metrics label.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
        }
    }
    /// Safe to replay after an unknown outcome.
    pub fn is_idempotent(self) -> bool {
        matches!(self, Verb::Get | Verb::List | Verb::Update | Verb::Delete)
    }
}

/// Bounds of the policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First backoff when the server gives no Retry-After.
    pub base: Duration,
    /// Cap on any single delay, including Retry-After.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_retries: 3,
            base: Duration::from_millis(200),
            max_delay: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    /// The delay before retry number `attempt + 1` (attempt counts from 0),
    /// or `None` to give up. `jitter` in [0, 1) spreads the fallback delay
    /// by up to +100 %.
    pub fn delay(&self, verb: Verb, err: &Error, attempt: u32, jitter: f64) -> Option<Duration> {
        if attempt >= self.max_retries || verb == Verb::Watch {
            return None;
        }
        let allowed = match err {
            Error::Api(s) if s.code == 429 => true,
            Error::Api(s) if s.code >= 500 => verb.is_idempotent(),
            Error::Transport { .. } => verb.is_idempotent(),
            _ => false,
        };
        if !allowed {
            return None;
        }
        let d = match err.retry_after() {
            Some(ra) => ra,
            None => self
                .base
                .saturating_mul(1 << attempt.min(16))
                .mul_f64(1.0 + jitter.clamp(0.0, 1.0)),
        };
        Some(d.min(self.max_delay))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::error::Status;

    fn api(code: u16, retry_after: Option<u64>) -> Error {
        Error::Api(Status {
            code,
            retry_after: retry_after.map(Duration::from_secs),
            ..Status::default()
        })
    }

    fn transport() -> Error {
        Error::Transport {
            server: "https://k".into(),
            cause: "connection refused".into(),
            timeout: false,
            unreachable: true,
        }
    }

    #[test]
    fn policy_table() {
        let p = RetryPolicy::default();
        let ms = Duration::from_millis;
        let cases: Vec<(Verb, Error, u32, Option<Duration>)> = vec![
            (Verb::Get, api(503, None), 0, Some(ms(200))),
            (Verb::Get, api(503, None), 2, Some(ms(800))),
            (Verb::Get, api(503, None), 3, None),
            (Verb::List, api(500, Some(2)), 0, Some(ms(2000))),
            (Verb::Update, api(504, Some(60)), 0, Some(ms(10_000))),
            (Verb::Create, api(503, Some(1)), 0, None),
            (Verb::Patch, api(500, None), 0, None),
            (Verb::Create, api(429, Some(1)), 0, Some(ms(1000))),
            (Verb::Patch, api(429, None), 1, Some(ms(400))),
            (Verb::Delete, transport(), 0, Some(ms(200))),
            (Verb::Create, transport(), 0, None),
            (Verb::Watch, api(429, Some(1)), 0, None),
            (Verb::Get, api(404, None), 0, None),
            (Verb::Update, api(409, None), 0, None),
            (Verb::Get, Error::Shutdown, 0, None),
        ];
        for (verb, err, attempt, want) in cases {
            assert_eq!(
                p.delay(verb, &err, attempt, 0.0),
                want,
                "{verb:?} {err} #{attempt}"
            );
        }
        assert_eq!(p.delay(Verb::Get, &api(503, None), 0, 0.5), Some(ms(300)));
    }
}
