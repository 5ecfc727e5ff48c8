//! Typed client errors: API failures decoded from the `Status` body (code,
//! reason, message, causes, Retry-After) and the non-API failures
//! (transport, decode, configuration, shutdown).
//!
//! Owns classification helpers (`is_not_found`, `is_gone`, `is_retryable`,
//! …) used by informers and writers. Must never include secrets (tokens,
//! keys) in any message.

use serde::Deserialize;
use std::fmt;
use std::time::Duration;

/// Largest server-requested retry delay honoured (`Retry-After` header or
/// `details.retryAfterSeconds`); larger values are capped to it (and the
/// cap is logged). 30 s is client-go's practice: a server (or anything in
/// front of it) asking for an hour must not park an informer or a sync that
/// long, and an uncapped value (up to `u64::MAX` seconds) would overflow
/// `Instant + Duration` in callers that schedule a retry.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// A server-supplied retry delay in seconds, capped at [`MAX_RETRY_AFTER`].
pub fn retry_after_secs(secs: u64) -> Duration {
    let d = Duration::from_secs(secs);
    if d > MAX_RETRY_AFTER {
        log::info!(
            "the API server asked to retry after {secs}s; waiting {}s at most",
            MAX_RETRY_AFTER.as_secs()
        );
    }
    d.min(MAX_RETRY_AFTER)
}

/// Parse a `Retry-After` header value (delay-seconds form), capped at
/// [`MAX_RETRY_AFTER`]. The HTTP-date form and garbage yield `None`.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(retry_after_secs)
}

/// A `metav1.Status` failure as the API server reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Status {
    /// HTTP status code (`Status.code`, or the response status if absent).
    pub code: u16,
    /// `Status.reason` (`NotFound`, `Conflict`, `Expired`, …).
    pub reason: String,
    /// `Status.message`.
    pub message: String,
    /// `Status.details.causes`.
    pub causes: Vec<Cause>,
    /// `Status.details.retryAfterSeconds`, or the `Retry-After` header,
    /// capped at `MAX_RETRY_AFTER` (30 s).
    pub retry_after: Option<Duration>,
    /// Not the API server's answer but that of a proxy or load balancer in
    /// front of it that found no API server to pass the request to: a 502
    /// or 503 whose body (read whole) is no `Status` — kube-apiserver
    /// answers its failures with one, if at times without `kind` (its
    /// request-timeout 504) — and without `Retry-After`. A 504 never is: a
    /// proxy's timeout (or the server's own) comes from a server that is
    /// there but slow. Counts as the server being unreachable (see
    /// [`Error::is_unreachable`]).
    pub gateway: bool,
}

/// One `StatusCause`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Cause {
    /// `reason`, e.g. `FieldValueInvalid`, `NamespaceTerminating`.
    pub reason: String,
    /// `message`.
    pub message: String,
    /// `field`, e.g. `metadata.name`.
    pub field: String,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct StatusWire {
    kind: String,
    status: String,
    code: Option<u16>,
    reason: String,
    message: String,
    details: Option<DetailsWire>,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct DetailsWire {
    causes: Option<Vec<Cause>>,
    retry_after_seconds: Option<u64>,
}

impl Status {
    /// Decode a failure body. A body that is not a `Status` (a proxy's HTML
    /// page, empty) still yields a `Status` with the HTTP code and a reason
    /// derived from it; its message is the (truncated) body, except for a
    /// gateway's answer (see [`Status::gateway`]), whose page says nothing
    /// an operator needs. A `Status` may lack `kind` (kube-apiserver's
    /// request-timeout 504 encodes one without its type fields).
    pub fn from_body(http_code: u16, body: &[u8], retry_after: Option<Duration>) -> Status {
        let retry_after = retry_after.map(|d| d.min(MAX_RETRY_AFTER));
        match serde_json::from_slice::<StatusWire>(body) {
            Ok(w)
                if w.kind == "Status"
                    || (w.kind.is_empty() && (w.status == "Failure" || w.code.is_some())) =>
            {
                Status::from_wire(w, http_code, retry_after)
            }
            _ => {
                let gateway = matches!(http_code, 502 | 503) && retry_after.is_none();
                Status {
                    code: http_code,
                    reason: reason_for_code(http_code).to_string(),
                    message: match gateway {
                        true => format!(
                            "HTTP {http_code} from a proxy or load balancer in front of the API \
                             server (not a Kubernetes Status): it found no API server to answer"
                        ),
                        false => String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned(),
                    },
                    causes: Vec::new(),
                    retry_after,
                    gateway,
                }
            }
        }
    }

    /// Decode the `object` of a watch `ERROR` event.
    pub fn from_value(v: serde_json::Value) -> Status {
        match serde_json::from_value::<StatusWire>(v) {
            Ok(w) => Status::from_wire(w, 500, None),
            Err(e) => Status {
                code: 500,
                reason: "InternalError".into(),
                message: format!("undecodable watch error object: {e}"),
                ..Status::default()
            },
        }
    }

    fn from_wire(w: StatusWire, http_code: u16, retry_after: Option<Duration>) -> Status {
        let details = w.details.unwrap_or_default();
        let code = w.code.filter(|c| *c != 0).unwrap_or(http_code);
        Status {
            code,
            reason: if w.reason.is_empty() {
                reason_for_code(code).to_string()
            } else {
                w.reason
            },
            message: w.message,
            causes: details.causes.unwrap_or_default(),
            retry_after: details
                .retry_after_seconds
                .map(retry_after_secs)
                .or(retry_after),
            gateway: false,
        }
    }
}

/// apimachinery's reason for a bare HTTP code (`NewGenericServerResponse`).
fn reason_for_code(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Gone",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        // client-go's NewGenericServerResponse: 500 and any other 5xx.
        500..=599 => "InternalError",
        _ => "Unknown",
    }
}

/// Everything a client call can fail with.
#[derive(Debug)]
pub enum Error {
    /// The API server answered with a failure `Status`. Retryable when the
    /// code is 429 or 5xx (see [`Error::is_retryable`]).
    Api(Status),
    /// The request did not complete: connect, TLS, I/O or timeout. Names
    /// the server and the cause (e.g. the certificate verification error).
    /// Retryable.
    Transport {
        /// Server URL.
        server: String,
        /// What failed.
        cause: String,
        /// Whether the cause was a timeout.
        timeout: bool,
        /// The server could not be reached, or the connection was lost:
        /// DNS, connect, I/O (reset, peer gone), a connect or send timeout.
        /// Not a slow answer (a response, read or overall timeout), which
        /// comes from a server that is there.
        unreachable: bool,
    },
    /// A response could not be decoded into the expected type. Not retryable.
    Decode {
        /// What was being decoded (e.g. `list pods`).
        what: String,
        /// The decoder's message.
        detail: String,
    },
    /// A response body exceeded a configured bound (bytes, or items in a
    /// LIST page). Not retryable here; an informer backs off and relists.
    TooLarge {
        /// What was being read (e.g. `list pods`).
        what: String,
        /// The limit and its config key.
        limit: String,
    },
    /// Bad or unsupported client configuration. Not retryable.
    Config {
        /// Where: a kubeconfig path, `in-cluster`, or an environment variable.
        source: String,
        /// The offending field, e.g. `users[admin].user.exec`.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// The request could not be built (e.g. an empty object name). Not
    /// retryable: it is a bug in the caller.
    InvalidRequest(String),
    /// The client's write gate refused the write: nothing was sent (see
    /// [`WriteGate`](super::WriteGate)). Not retryable here.
    Refused(String),
    /// The client (or its watch agent) was shut down. Not retryable.
    Shutdown,
    /// `source` with what the caller was doing (e.g. `failed to update
    /// EndpointSlice web-abc for Service shop/web`). Every question asked
    /// of an error (its code, whether to retry, whether the server is
    /// unreachable) is answered by the source: context never changes what
    /// an error is.
    Context {
        /// What was being done.
        context: String,
        /// The error it failed with.
        source: Box<Error>,
    },
}

impl Error {
    /// This error with what the caller was doing put before it; it stays
    /// the error it was (see [`Error::Context`]).
    pub fn context(self, context: impl Into<String>) -> Error {
        Error::Context {
            context: context.into(),
            source: Box::new(self),
        }
    }

    /// The error under any [`Error::Context`] layers.
    pub fn root(&self) -> &Error {
        match self {
            Error::Context { source, .. } => source.root(),
            e => e,
        }
    }

    /// The `Status`, if this is an API error.
    pub fn status(&self) -> Option<&Status> {
        match self.root() {
            Error::Api(s) => Some(s),
            _ => None,
        }
    }
    fn code(&self) -> Option<u16> {
        self.status().map(|s| s.code)
    }
    fn reason(&self) -> Option<&str> {
        self.status().map(|s| s.reason.as_str())
    }
    /// 404 / `NotFound`.
    pub fn is_not_found(&self) -> bool {
        self.reason() == Some("NotFound") || self.code() == Some(404)
    }
    /// 409 / `Conflict` (resourceVersion mismatch).
    pub fn is_conflict(&self) -> bool {
        self.reason() == Some("Conflict")
            || (self.code() == Some(409) && self.reason() != Some("AlreadyExists"))
    }
    /// 409 / `AlreadyExists`.
    pub fn is_already_exists(&self) -> bool {
        self.reason() == Some("AlreadyExists")
    }
    /// 410 / `Expired` or `Gone`: the resourceVersion is too old; relist.
    pub fn is_gone(&self) -> bool {
        matches!(self.reason(), Some("Expired") | Some("Gone")) || self.code() == Some(410)
    }
    /// 403 / `Forbidden`.
    pub fn is_forbidden(&self) -> bool {
        self.reason() == Some("Forbidden") || self.code() == Some(403)
    }
    /// 422 / `Invalid`.
    pub fn is_invalid(&self) -> bool {
        self.reason() == Some("Invalid") || self.code() == Some(422)
    }
    /// 401 / `Unauthorized`.
    pub fn is_unauthorized(&self) -> bool {
        self.code() == Some(401)
    }
    /// 429 / `TooManyRequests`.
    pub fn is_too_many_requests(&self) -> bool {
        self.code() == Some(429)
    }
    /// Some cause has this reason (e.g. `NamespaceTerminating`).
    pub fn has_cause(&self, reason: &str) -> bool {
        self.status()
            .is_some_and(|s| s.causes.iter().any(|c| c.reason == reason))
    }
    /// The server could not be reached, or the connection was lost (see
    /// [`Error::Transport`]'s `unreachable`).
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self.root(),
            Error::Transport {
                unreachable: true,
                ..
            } | Error::Api(Status { gateway: true, .. })
        )
    }
    /// Worth retrying later: transport failures, 429 and 5xx.
    pub fn is_retryable(&self) -> bool {
        match self.root() {
            Error::Transport { .. } => true,
            Error::Api(s) => s.code == 429 || s.code >= 500,
            _ => false,
        }
    }
    /// The write gate refused the write; nothing was sent.
    pub fn is_refused(&self) -> bool {
        matches!(self.root(), Error::Refused(_))
    }
    /// The server's requested delay, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        self.status().and_then(|s| s.retry_after)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Api(s) => write!(f, "API error {} {}: {}", s.code, s.reason, s.message),
            Error::Transport { server, cause, .. } => {
                write!(f, "request to {server} failed: {cause}")
            }
            Error::Decode { what, detail } => write!(f, "cannot decode {what}: {detail}"),
            Error::TooLarge { what, limit } => {
                write!(f, "response to {what} exceeds the limit of {limit}")
            }
            Error::Config {
                source,
                field,
                message,
            } => write!(f, "client configuration {source}: {field}: {message}"),
            Error::InvalidRequest(m) => write!(f, "invalid request: {m}"),
            Error::Refused(m) => write!(f, "write not sent: {m}"),
            Error::Shutdown => f.write_str("client is shut down"),
            Error::Context { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Context { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_cannot_park_a_caller_for_more_than_30_seconds() {
        assert_eq!(parse_retry_after("3600"), Some(Duration::from_secs(30)));
        assert_eq!(parse_retry_after("29"), Some(Duration::from_secs(29)));
        assert_eq!(retry_after_secs(u64::MAX), Duration::from_secs(30));
    }

    fn api(body: &str, code: u16) -> Error {
        Error::Api(Status::from_body(code, body.as_bytes(), None))
    }

    #[test]
    fn context_keeps_what_an_error_is() {
        let conflict = api(r#"{"kind":"Status","reason":"Conflict","code":409}"#, 409);
        let transport = Error::Transport {
            server: "https://api:6443".into(),
            cause: "connection reset".into(),
            timeout: false,
            unreachable: true,
        };
        let too_large = Error::TooLarge {
            what: "update endpointslices".into(),
            limit: "4 MiB (kubernetes.max_response_bytes)".into(),
        };
        let c = conflict.context("failed to update EndpointSlice a for Service ns/s");
        assert!(c.is_conflict() && !c.is_retryable(), "{c}");
        assert_eq!(c.status().map(|s| s.code), Some(409));
        assert!(c
            .to_string()
            .starts_with("failed to update EndpointSlice a for Service ns/s: API error 409"));
        let t = transport.context("a").context("b");
        assert!(t.is_retryable() && t.is_unreachable(), "{t}");
        assert_eq!(
            t.to_string(),
            "b: a: request to https://api:6443 failed: connection reset"
        );
        assert!(matches!(t.root(), Error::Transport { .. }));
        let l = too_large.context("failed to create EndpointSlice");
        assert!(matches!(l.root(), Error::TooLarge { .. }));
        assert!(!l.is_retryable());
        use std::error::Error as _;
        assert!(l
            .source()
            .is_some_and(|s| s.to_string().contains("exceeds the limit")));
    }

    #[test]
    fn status_decoding_table() {
        let ns_term = r#"{"kind":"Status","apiVersion":"v1","status":"Failure",
            "message":"forbidden: unable to create new content in namespace x because it is being terminated",
            "reason":"Forbidden","code":403,
            "details":{"causes":[{"reason":"NamespaceTerminating","message":"namespace x is being terminated","field":"metadata.namespace"}]}}"#;
        let cases: Vec<(Error, &str, [bool; 7])> = vec![
            // body, reason, [not_found, conflict, exists, gone, forbidden, retryable, unreachable]
            (
                api(
                    r#"{"kind":"Status","reason":"NotFound","code":404,"message":"pods \"x\" not found"}"#,
                    404,
                ),
                "NotFound",
                [true, false, false, false, false, false, false],
            ),
            (
                api(r#"{"kind":"Status","reason":"Conflict","code":409}"#, 409),
                "Conflict",
                [false, true, false, false, false, false, false],
            ),
            (
                api(
                    r#"{"kind":"Status","reason":"AlreadyExists","code":409}"#,
                    409,
                ),
                "AlreadyExists",
                [false, false, true, false, false, false, false],
            ),
            (
                api(r#"{"kind":"Status","reason":"Expired","code":410}"#, 410),
                "Expired",
                [false, false, false, true, false, false, false],
            ),
            (
                api(ns_term, 403),
                "Forbidden",
                [false, false, false, false, true, false, false],
            ),
            // A proxy with no API server behind it (nginx, haproxy, an
            // empty answer): the server is unreachable.
            (
                api("<html>bad gateway</html>", 502),
                "InternalError",
                [false, false, false, false, false, true, true],
            ),
            (
                api("", 503),
                "ServiceUnavailable",
                [false, false, false, false, false, true, true],
            ),
            // A 504 is a slow server, behind a proxy or not.
            (
                api("<html><h1>504 Gateway Time-out</h1></html>", 504),
                "Timeout",
                [false, false, false, false, false, true, false],
            ),
            // kube-apiserver's request timeout: a Status without kind.
            (
                api(
                    r#"{"metadata":{},"status":"Failure","message":"Timeout: request did not complete within the allotted timeout","reason":"Timeout","details":{},"code":504}"#,
                    504,
                ),
                "Timeout",
                [false, false, false, false, false, true, false],
            ),
            (
                api(
                    r#"{"status":"Failure","message":"m","reason":"ServiceUnavailable","code":503}"#,
                    503,
                ),
                "ServiceUnavailable",
                [false, false, false, false, false, true, false],
            ),
            (
                api("<html>haproxy: no server available</html>", 503),
                "ServiceUnavailable",
                [false, false, false, false, false, true, true],
            ),
            // JSON, but no Status: still a proxy's.
            (
                api(r#"{"error":"no healthy upstream"}"#, 502),
                "InternalError",
                [false, false, false, false, false, true, true],
            ),
            // The API server's own 5xx (a Status) is an answer.
            (
                api(
                    r#"{"kind":"Status","reason":"ServiceUnavailable","code":503}"#,
                    503,
                ),
                "ServiceUnavailable",
                [false, false, false, false, false, true, false],
            ),
            (
                api(r#"{"kind":"Status","reason":"Timeout","code":504}"#, 504),
                "Timeout",
                [false, false, false, false, false, true, false],
            ),
            // Not a gateway's code.
            (
                api("<html>oops</html>", 500),
                "InternalError",
                [false, false, false, false, false, true, false],
            ),
            (
                api(
                    r#"{"kind":"Status","code":429,"details":{"retryAfterSeconds":3}}"#,
                    429,
                ),
                "TooManyRequests",
                [false, false, false, false, false, true, false],
            ),
        ];
        for (e, reason, want) in cases {
            let got = [
                e.is_not_found(),
                e.is_conflict(),
                e.is_already_exists(),
                e.is_gone(),
                e.is_forbidden(),
                e.is_retryable(),
                e.is_unreachable(),
            ];
            assert_eq!(got, want, "{e}");
            assert_eq!(e.status().map(|s| s.reason.as_str()), Some(reason), "{e}");
        }
        let e = api(ns_term, 403);
        assert!(e.has_cause("NamespaceTerminating"));
        assert!(!e.has_cause("FieldValueInvalid"));
        assert_eq!(
            e.status().map(|s| s.causes[0].field.as_str()),
            Some("metadata.namespace")
        );
        let ra = api(
            r#"{"kind":"Status","code":429,"details":{"retryAfterSeconds":3}}"#,
            429,
        );
        assert_eq!(ra.retry_after(), Some(Duration::from_secs(3)));
        let hdr = Status::from_body(503, b"", Some(Duration::from_secs(2)));
        assert_eq!(hdr.retry_after, Some(Duration::from_secs(2)));
        assert!(!hdr.gateway, "a server that asks us to wait is there");
        let page = api("<html><body>502 Bad Gateway</body></html>", 502);
        assert!(!page.to_string().contains("<html"), "{page}");
    }

    #[test]
    fn huge_retry_after_is_capped() {
        let body = format!(
            r#"{{"kind":"Status","code":429,"details":{{"retryAfterSeconds":{}}}}}"#,
            u64::MAX
        );
        let s = Status::from_body(429, body.as_bytes(), None);
        assert_eq!(s.retry_after, Some(MAX_RETRY_AFTER));
        let s = Status::from_body(503, b"", Some(Duration::MAX));
        assert_eq!(s.retry_after, Some(MAX_RETRY_AFTER));
        assert_eq!(
            parse_retry_after("18446744073709551615"),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(parse_retry_after(" 7 "), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        // Still usable as an Instant offset.
        let now = std::time::Instant::now();
        assert!(now.checked_add(MAX_RETRY_AFTER).is_some());
    }

    #[test]
    fn watch_error_object_decodes() {
        let s = Status::from_value(serde_json::json!({"kind":"Status","code":410,
            "reason":"Expired","message":"too old resource version: 1 (5)"}));
        assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
        assert!(Error::Api(s).is_gone());
    }
}
