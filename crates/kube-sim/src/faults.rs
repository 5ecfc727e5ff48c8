//! Fault injection for kube-sim: failing the next N matching requests,
//! added latency, stalled watches, closing every watch, compaction,
//! outages (all connections dropped, new ones refused for a while, state
//! kept) and gateway outages (a proxy in front of a server that is gone:
//! every request answered 502/503/504 with the proxy's HTML page). Driven
//! through the library API or as JSON through `/sim/faults`.
//!
//! It decides and records faults only; it never touches objects (store
//! faults are delegated to [`Store`]) and never reads time except through
//! the injected clock.

use super::requestinfo::{RequestInfo, Verb};
use super::status::ApiError;
use super::store::Store;
use endpointd_base::clock::SharedClock;
use endpointd_base::httpd::{Body, Response, ServerControl};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

/// One "fail the next N requests" rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailRule {
    /// Requests still to fail.
    pub remaining: u32,
    /// Only requests with this verb (any when `None`).
    pub verb: Option<Verb>,
    /// Only requests for this plural resource (any when `None`).
    pub resource: Option<String>,
    /// HTTP code of the failure (400..=599).
    pub code: u16,
    /// `Retry-After` seconds (header and `details.retryAfterSeconds`).
    pub retry_after: Option<u64>,
    /// Only requests whose user (certificate CN, `token-user`) or
    /// User-Agent contains this (any when `None`): faults aimed at one
    /// client, e.g. one endpointd instance by its identity.
    pub client: Option<String>,
}

/// How a `writeAnswer` rule answers a write (`answer` in the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteAnswer {
    /// Stored; answered `{}` (`"empty"`).
    Empty,
    /// Stored; answered with a success `Status` instead of the object
    /// (`"status"`).
    Status,
    /// Stored; answered with the object under another name (`"renamed"`).
    Renamed,
    /// Stored; answered with the object under another uid (`"otherUid"`).
    OtherUid,
    /// Stored; answered with the object without its `kind` (`"noKind"`).
    NoKind,
    /// Stored; answered with the object without its resourceVersion
    /// (`"noResourceVersion"`).
    NoResourceVersion,
    /// *Not* stored: answered 200/201 with the request's object under a
    /// new resourceVersion (consumed, so no other write gets it), as a
    /// server that acknowledges a write and loses it (`"lost"`).
    Lost,
}

impl WriteAnswer {
    /// Every answer by its JSON spelling.
    const ALL: &'static [(&'static str, WriteAnswer)] = &[
        ("empty", WriteAnswer::Empty),
        ("status", WriteAnswer::Status),
        ("renamed", WriteAnswer::Renamed),
        ("otherUid", WriteAnswer::OtherUid),
        ("noKind", WriteAnswer::NoKind),
        ("noResourceVersion", WriteAnswer::NoResourceVersion),
        ("lost", WriteAnswer::Lost),
    ];

    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        WriteAnswer::ALL
            .iter()
            .find(|(_, a)| *a == self)
            .map_or("", |(s, _)| s)
    }

    /// An answer by its JSON spelling.
    pub fn parse(s: &str) -> Option<WriteAnswer> {
        WriteAnswer::ALL
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, a)| *a)
    }
}

/// One "answer the next N matching writes oddly" rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerRule {
    /// Writes still to answer so.
    pub remaining: u32,
    /// Only this verb (create, update or patch; any of them when `None`).
    pub verb: Option<Verb>,
    /// Only requests for this plural resource (any when `None`).
    pub resource: Option<String>,
    /// The answer.
    pub answer: WriteAnswer,
}

#[derive(Debug, Default)]
struct State {
    rules: Vec<FailRule>,
    answers: Vec<AnswerRule>,
    latency: Duration,
    stall: bool,
    /// Stall only the watches of this plural resource (all when `None`).
    stall_only: Option<String>,
    stalled: Vec<crossbeam_channel::Sender<Vec<u8>>>,
    outages: u64,
    /// Fail one request in every `n` (with this code), deterministically.
    fail_every: Option<(u32, u16)>,
    /// Requests seen while `fail_every` is set.
    seen: u64,
    /// Lines the next watch requests are answered with, one each (then the
    /// stream ends): malformed JSON, unknown event types, oversized lines.
    bad_watch_lines: std::collections::VecDeque<Vec<u8>>,
    /// A gateway outage: until when, and the proxy's answer code.
    gateway: Option<(std::time::Instant, u16)>,
}

/// The fault switchboard of one kube-sim.
#[derive(Debug)]
pub struct Faults {
    store: Arc<Store>,
    clock: SharedClock,
    server: OnceLock<ServerControl>,
    state: Mutex<State>,
    /// Whether a gateway outage may be on: every request asks, so the lock
    /// is taken only then.
    gateway_on: AtomicBool,
    /// Standing refusals of writes ([`Faults::refuse_writes`]).
    refusals: Mutex<Vec<Refusal>>,
}

/// Every verb by its Kubernetes spelling.
const VERBS: &[Verb] = &[
    Verb::Get,
    Verb::List,
    Verb::Watch,
    Verb::Create,
    Verb::Update,
    Verb::Patch,
    Verb::Delete,
    Verb::DeleteCollection,
];

/// A verb from its Kubernetes spelling ("list", "deletecollection").
pub fn verb_from_str(s: &str) -> Option<Verb> {
    VERBS.iter().copied().find(|v| v.as_str() == s)
}

/// The `Status.reason` kube-apiserver uses for an HTTP code.
pub fn reason_for(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        410 => "Expired",
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    }
}

/// The injected error for one matched rule.
pub fn injected_error(rule: &FailRule, info: &RequestInfo) -> Response {
    let message = match rule.code {
        429 => "Too many requests, please try again later.".to_string(),
        500 => "Internal error occurred: injected by kube-sim".to_string(),
        503 => "The server is currently unable to handle the request".to_string(),
        c => format!(
            "injected failure {c} for {} {}",
            info.verb.as_str(),
            info.resource
        ),
    };
    let mut details = json!({ "kind": info.resource, "group": info.group });
    if let Some(n) = &info.name {
        details["name"] = json!(n);
    }
    if let Some(s) = rule.retry_after {
        details["retryAfterSeconds"] = json!(s);
    }
    let mut resp = ApiError::new(rule.code, reason_for(rule.code), message)
        .with_details(details)
        .to_response();
    if let Some(s) = rule.retry_after {
        resp.headers.push(("Retry-After".into(), s.to_string()));
    }
    resp
}

fn json_response(status: u16, v: &Value) -> Response {
    Response {
        status,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: Body::Full(v.to_string().into_bytes()),
    }
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Faults {
    /// Faults for `store`, timed by `clock`.
    pub fn new(store: Arc<Store>, clock: SharedClock) -> Faults {
        Faults {
            store,
            clock,
            server: OnceLock::new(),
            state: Mutex::new(State::default()),
            gateway_on: AtomicBool::new(false),
            refusals: Mutex::new(Vec::new()),
        }
    }

    /// Connect the HTTP server (needed for outages). Later calls are ignored.
    pub fn attach(&self, control: ServerControl) {
        let _ = self.server.set(control);
    }

    /// Fail the next `n` requests matching `verb` and `resource` with
    /// `code` (429 `TooManyRequests`, 500 `InternalError`, 503
    /// `ServiceUnavailable`, …), adding `Retry-After` when given.
    pub fn fail_next(
        &self,
        n: u32,
        verb: Option<Verb>,
        resource: Option<String>,
        code: u16,
        retry_after: Option<u64>,
    ) {
        if n == 0 {
            return;
        }
        lock(&self.state).rules.push(FailRule {
            remaining: n,
            verb,
            resource,
            code,
            retry_after,
            client: None,
        });
    }

    /// Fail the next `n` requests of one client — the requests whose user
    /// or User-Agent contains `client` — with `code`.
    pub fn fail_next_for(&self, n: u32, client: &str, code: u16) {
        if n == 0 {
            return;
        }
        lock(&self.state).rules.push(FailRule {
            remaining: n,
            verb: None,
            resource: None,
            code,
            retry_after: None,
            client: Some(client.to_string()),
        });
    }

    /// Delay every resource request by `d` (zero turns it off).
    pub fn set_latency(&self, d: Duration) {
        lock(&self.state).latency = d;
    }

    /// The current added latency.
    pub fn latency(&self) -> Duration {
        lock(&self.state).latency
    }

    /// While on, new watches are accepted (200, headers sent) but get no
    /// events. Turning it off ends the stalled streams.
    pub fn stall_watches(&self, on: bool) {
        let mut st = lock(&self.state);
        st.stall = on;
        st.stall_only = None;
        if !on {
            st.stalled.clear();
        }
    }

    /// [`Faults::stall_watches`] on, for the watches of one plural
    /// `resource` only (a lossy link that stops one stream while the
    /// others and new requests work).
    pub fn stall_watches_of(&self, resource: &str) {
        let mut st = lock(&self.state);
        st.stall = true;
        st.stall_only = Some(resource.to_string());
    }

    /// While on, watches ignore `sendInitialEvents` (an API server older
    /// than 1.27).
    pub fn ignore_send_initial_events(&self, on: bool) {
        self.store.set_ignore_initial_events(on);
    }

    /// End every open watch stream now (stalled ones included).
    pub fn close_all_watches(&self) {
        lock(&self.state).stalled.clear();
        self.store.close_all_watches();
    }

    /// Drop the event history: older resourceVersions get 410 on watch.
    pub fn compact(&self) {
        self.store.compact();
    }

    /// Drop every connection and refuse new ones for `d`; objects are kept.
    /// Returns false when no server is attached.
    pub fn outage(&self, d: Duration) -> bool {
        let Some(server) = self.server.get() else {
            return false;
        };
        lock(&self.state).outages += 1;
        server.refuse_until(self.clock.now() + d);
        server.drop_all_connections();
        true
    }

    /// Put a proxy with no server behind it in front of kube-sim for `d`:
    /// every connection dropped, then every request but `/sim/*` answered
    /// `code` (502 as nginx, 503 as haproxy, 504) with an HTML page and no
    /// `Retry-After`, as a load balancer answers while every API server
    /// behind it is down; objects are kept. Returns false when no server is
    /// attached or `code` is not one a gateway answers with.
    pub fn gateway_outage(&self, d: Duration, code: u16) -> bool {
        let Some(server) = self.server.get() else {
            return false;
        };
        if !matches!(code, 502..=504) {
            return false;
        }
        {
            let mut st = lock(&self.state);
            st.outages += 1;
            st.gateway = Some((self.clock.now() + d, code));
        }
        self.gateway_on.store(true, Ordering::Release);
        server.drop_all_connections();
        true
    }

    /// The proxy's answer while a gateway outage lasts.
    pub fn gateway_answer(&self) -> Option<Response> {
        if !self.gateway_on.load(Ordering::Acquire) {
            return None;
        }
        let mut st = lock(&self.state);
        let (until, code) = st.gateway?;
        if self.clock.now() >= until {
            st.gateway = None;
            self.gateway_on.store(false, Ordering::Release);
            return None;
        }
        let page = match code {
            503 => "<html><body><h1>503 Service Unavailable</h1>\nNo server is available to handle this request.\n</body></html>\n".to_string(),
            c => format!(
                "<html>\r\n<head><title>{c} {r}</title></head>\r\n<body>\r\n<center><h1>{c} {r}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
                r = endpointd_base::httpd::wire::reason(c)
            ),
        };
        Some(Response {
            status: code,
            headers: vec![("Content-Type".into(), "text/html".into())],
            body: Body::Full(page.into_bytes()),
        })
    }

    /// Outages started so far.
    pub fn outages(&self) -> u64 {
        lock(&self.state).outages
    }

    /// Answer the next `n` writes (create, update, patch) matching `verb`
    /// and `resource` with `answer` (see [`WriteAnswer`]).
    pub fn answer_writes(
        &self,
        n: u32,
        verb: Option<Verb>,
        resource: Option<String>,
        answer: WriteAnswer,
    ) {
        if n == 0 {
            return;
        }
        lock(&self.state).answers.push(AnswerRule {
            remaining: n,
            verb,
            resource,
            answer,
        });
    }

    /// Consume one matching `writeAnswer` rule, if any: how to answer
    /// this write.
    pub fn take_write_answer(&self, info: &RequestInfo) -> Option<WriteAnswer> {
        if !matches!(info.verb, Verb::Create | Verb::Update | Verb::Patch) {
            return None;
        }
        let mut st = lock(&self.state);
        let pos = st.answers.iter().position(|r| {
            r.verb.is_none_or(|v| v == info.verb)
                && r.resource.as_deref().is_none_or(|res| res == info.resource)
        })?;
        let answer = st.answers[pos].answer;
        st.answers[pos].remaining -= 1;
        if st.answers[pos].remaining == 0 {
            st.answers.remove(pos);
        }
        Some(answer)
    }

    /// A lost write's answer: `body` (the request's object) as if stored
    /// over `stored` (the object now stored, for an update), under a new
    /// resourceVersion nothing else will get; nothing is stored.
    pub fn lost_write(&self, info: &RequestInfo, body: &[u8], stored: Option<Value>) -> Response {
        let Ok(mut obj) = serde_json::from_slice::<Value>(body) else {
            return ApiError::new(400, "BadRequest", "the request body is not JSON").to_response();
        };
        let rv = self.store.skip_revision();
        let meta = &mut obj["metadata"];
        if !meta.is_object() {
            *meta = json!({});
        }
        match stored {
            Some(cur) => {
                let m = &cur["metadata"];
                meta["uid"] = m["uid"].clone();
                meta["creationTimestamp"] = m["creationTimestamp"].clone();
                if let Some(g) = m["generation"].as_i64() {
                    meta["generation"] = json!(g + 1);
                }
            }
            None => {
                meta["uid"] = json!(super::objects::new_uid());
                meta["generation"] = json!(1);
                if meta["name"].as_str().is_none_or(str::is_empty) {
                    let prefix = meta["generateName"].as_str().unwrap_or("").to_string();
                    meta["name"] = json!(format!("{prefix}lost{rv}"));
                }
            }
        }
        meta["resourceVersion"] = json!(rv.to_string());
        let code = if info.verb == Verb::Create { 201 } else { 200 };
        json_response(code, &obj)
    }

    /// The answer to a write that was stored (`resp`, kube-sim's own),
    /// rewritten as `answer` says; errors are left as they are.
    pub fn rewrite_answer(answer: WriteAnswer, resp: Response) -> Response {
        if !(200..300).contains(&resp.status) {
            return resp;
        }
        let Body::Full(bytes) = &resp.body else {
            return resp;
        };
        let Ok(mut obj) = serde_json::from_slice::<Value>(bytes) else {
            return resp;
        };
        let obj = match answer {
            WriteAnswer::Empty => json!({}),
            WriteAnswer::Status => json!({"kind": "Status", "apiVersion": "v1",
                "metadata": {}, "status": "Success", "code": resp.status}),
            WriteAnswer::Renamed => {
                let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
                obj["metadata"]["name"] = json!(format!("{name}-renamed"));
                obj
            }
            WriteAnswer::OtherUid => {
                obj["metadata"]["uid"] = json!(super::objects::new_uid());
                obj
            }
            WriteAnswer::NoKind => {
                if let Some(m) = obj.as_object_mut() {
                    m.remove("kind");
                }
                obj
            }
            WriteAnswer::NoResourceVersion => {
                if let Some(m) = obj["metadata"].as_object_mut() {
                    m.remove("resourceVersion");
                }
                obj
            }
            WriteAnswer::Lost => return resp,
        };
        json_response(resp.status, &obj)
    }

    /// Remove every rule, latency and stall.
    pub fn clear(&self) {
        let mut st = lock(&self.state);
        st.rules.clear();
        st.answers.clear();
        st.latency = Duration::ZERO;
        st.stall = false;
        st.stall_only = None;
        st.stalled.clear();
        st.bad_watch_lines.clear();
        st.fail_every = None;
        st.gateway = None;
        self.gateway_on.store(false, Ordering::Release);
        drop(st);
        self.lift_refusals();
    }

    /// Consume one matching fail rule, if any, and return its error.
    pub fn take_failure(&self, info: &RequestInfo) -> Option<Response> {
        if let Some(refused) = self.refused_write(info) {
            return Some(refused);
        }
        let mut st = lock(&self.state);
        if let Some((n, code)) = st.fail_every {
            st.seen += 1;
            if st.seen.is_multiple_of(u64::from(n.max(1))) {
                let rule = FailRule {
                    remaining: 1,
                    verb: None,
                    resource: None,
                    code,
                    retry_after: None,
                    client: None,
                };
                return Some(injected_error(&rule, info));
            }
        }
        let (user, agent) = super::requester::current();
        let pos = st.rules.iter().position(|r| {
            r.verb.is_none_or(|v| v == info.verb)
                && r.resource.as_deref().is_none_or(|res| res == info.resource)
                && r.client
                    .as_deref()
                    .is_none_or(|c| user.contains(c) || agent.contains(c))
        })?;
        let rule = st.rules[pos].clone();
        st.rules[pos].remaining -= 1;
        if st.rules[pos].remaining == 0 {
            st.rules.remove(pos);
        }
        Some(injected_error(&rule, info))
    }

    /// Fail one request in every `n` with `code` (`None`: stop): "10 % of
    /// requests fail" as a deterministic fault.
    pub fn fail_every(&self, every: Option<(u32, u16)>) {
        let mut st = lock(&self.state);
        st.fail_every = every;
        st.seen = 0;
    }

    /// Answer each of the next watch requests (any resource) with one of
    /// `lines` (a newline is added) and then end the stream: bad input a
    /// client must survive by watching again.
    pub fn bad_watch_lines(&self, lines: Vec<Vec<u8>>) {
        lock(&self.state).bad_watch_lines.extend(lines);
    }

    /// Bad watch lines not yet served.
    pub fn bad_watch_lines_left(&self) -> usize {
        lock(&self.state).bad_watch_lines.len()
    }

    /// An injected watch response: one pending bad line then the end, or
    /// when watches are stalled an open, silent stream.
    pub fn stalled_watch(&self, resource: &str) -> Option<Response> {
        let mut st = lock(&self.state);
        if let Some(mut line) = st.bad_watch_lines.pop_front() {
            line.push(b'\n');
            let (tx, rx) = crossbeam_channel::unbounded();
            let _ = tx.send(line);
            return Some(Response {
                status: 200,
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: Body::Stream(rx),
            });
        }
        if !st.stall || st.stall_only.as_deref().is_some_and(|r| r != resource) {
            return None;
        }
        let (tx, rx) = crossbeam_channel::unbounded();
        st.stalled.push(tx);
        Some(Response {
            status: 200,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: Body::Stream(rx),
        })
    }

    /// The current fault state as JSON (the `/sim/faults` GET answer).
    pub fn snapshot(&self) -> Value {
        let st = lock(&self.state);
        let rules: Vec<Value> = st
            .rules
            .iter()
            .map(|r| {
                json!({
                    "count": r.remaining,
                    "verb": r.verb.map(Verb::as_str),
                    "resource": r.resource,
                    "code": r.code,
                    "retryAfterSeconds": r.retry_after,
                    "client": r.client,
                })
            })
            .collect();
        let answers: Vec<Value> = st
            .answers
            .iter()
            .map(|r| {
                json!({
                    "count": r.remaining,
                    "verb": r.verb.map(Verb::as_str),
                    "resource": r.resource,
                    "answer": r.answer.as_str(),
                })
            })
            .collect();
        let refusing = self.server.get().is_some_and(ServerControl::refusing);
        json!({
            "failNext": rules,
            "writeAnswer": answers,
            "latencyMs": st.latency.as_millis() as u64,
            "stallWatches": st.stall,
            "stalledWatches": st.stalled.len(),
            "outages": st.outages,
            "refusingConnections": refusing,
            "gatewayOutage": st.gateway.is_some_and(|(until, _)| self.clock.now() < until),
        })
    }

    /// Apply a `/sim/faults` POST body; see [`FaultRequest::parse`].
    pub fn apply_json(&self, body: &Value) -> Result<(), FaultError> {
        let req = FaultRequest::parse(body)?;
        if req.clear {
            self.clear();
        }
        for r in req.fail_next {
            self.fail_next(r.remaining, r.verb, r.resource, r.code, r.retry_after);
        }
        for r in req.write_answer {
            self.answer_writes(r.remaining, r.verb, r.resource, r.answer);
        }
        if let Some(d) = req.latency {
            self.set_latency(d);
        }
        if let Some(on) = req.stall_watches {
            self.stall_watches(on);
        }
        if req.close_all_watches {
            self.close_all_watches();
        }
        if req.compact {
            self.compact();
        }
        if let Some(on) = req.ignore_send_initial_events {
            self.ignore_send_initial_events(on);
        }
        if let Some(d) = req.outage {
            if !self.outage(d) {
                return Err(FaultError::OutageWithoutServer);
            }
        }
        if let Some(d) = req.gateway_outage {
            if !self.gateway_outage(d, req.gateway_code) {
                return Err(FaultError::GatewayOutageWithoutServer);
            }
        }
        Ok(())
    }
}

/// A parsed `/sim/faults` POST body. Every field is optional:
///
/// ```json
/// {"clear": true,
///  "failNext": {"count": 2, "verb": "list", "resource": "pods", "code": 429, "retryAfterSeconds": 1,
///               "client": "node-b"},
///  "latencyMs": 50, "stallWatches": true, "closeAllWatches": true,
///  "compact": true, "outageMs": 2000, "ignoreSendInitialEvents": true,
///  "gatewayOutageMs": 2000, "gatewayCode": 502,
///  "writeAnswer": {"count": 1, "verb": "create", "resource": "endpointslices", "answer": "empty"}}
/// ```
/// `failNext` and `writeAnswer` may also be lists of such objects.
/// `writeAnswer.answer` is one of `empty`, `status`, `renamed`, `otherUid`,
/// `noKind`, `noResourceVersion` (the write is stored, its answer is not
/// the stored object) or `lost` (answered as stored, but not stored).
#[derive(Debug, Default, PartialEq)]
pub struct FaultRequest {
    /// Clear rules, latency and stall first.
    pub clear: bool,
    /// Fail rules to add.
    pub fail_next: Vec<FailRule>,
    /// Write-answer rules to add.
    pub write_answer: Vec<AnswerRule>,
    /// New latency.
    pub latency: Option<Duration>,
    /// Stall watches on or off.
    pub stall_watches: Option<bool>,
    /// Close every watch now.
    pub close_all_watches: bool,
    /// Compact history now.
    pub compact: bool,
    /// Start an outage of this length.
    pub outage: Option<Duration>,
    /// Ignore `sendInitialEvents` on or off (an API server before 1.27).
    pub ignore_send_initial_events: Option<bool>,
    /// Start a gateway outage of this length.
    pub gateway_outage: Option<Duration>,
    /// The gateway's answer (502..=504; 502 when not given).
    pub gateway_code: u16,
}

const KEYS: &[&str] = &[
    "clear",
    "failNext",
    "latencyMs",
    "stallWatches",
    "closeAllWatches",
    "compact",
    "outageMs",
    "ignoreSendInitialEvents",
    "gatewayOutageMs",
    "gatewayCode",
    "writeAnswer",
];

/// Why a `/sim/faults` body was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultError {
    /// The body is not a JSON object.
    NotObject,
    /// A key the body may not have.
    UnknownKey(String),
    /// A key whose value is not a boolean.
    NotBool {
        /// The key.
        key: &'static str,
        /// Its value.
        got: Value,
    },
    /// A key whose value is not a non-negative integer.
    NotCount {
        /// The key.
        key: &'static str,
        /// Its value.
        got: Value,
    },
    /// A `failNext` item that is not an object.
    RuleNotObject(Value),
    /// A `failNext.count` beyond `u32`.
    CountTooBig(u64),
    /// A `failNext` item without `code`.
    NoCode,
    /// A `failNext.code` outside 400..=599.
    CodeRange(u64),
    /// A `failNext.verb` that is not a verb.
    NotVerb(String),
    /// A `failNext` field that should be a string.
    NotString {
        /// The field (`verb`, `resource`, `client`).
        field: &'static str,
        /// Its value.
        got: Value,
    },
    /// A `gatewayCode` outside 502..=504.
    GatewayCode(u64),
    /// `outageMs` without a running server.
    OutageWithoutServer,
    /// `gatewayOutageMs` without a running server.
    GatewayOutageWithoutServer,
    /// A `writeAnswer` item that is not right; the text says how.
    WriteAnswer(String),
}

impl std::fmt::Display for FaultError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FaultError::NotObject => f.write_str("want a JSON object"),
            FaultError::WriteAnswer(m) => f.write_str(m),
            FaultError::UnknownKey(k) => write!(f, "unknown key {k:?}; known: {}", KEYS.join(", ")),
            FaultError::NotBool { key, got } => write!(f, "{key}: want a boolean, got {got}"),
            FaultError::NotCount { key, got } => {
                write!(f, "{key}: want a non-negative integer, got {got}")
            }
            FaultError::RuleNotObject(v) => write!(f, "failNext: want an object, got {v}"),
            FaultError::CountTooBig(n) => write!(f, "failNext.count {n} too big"),
            FaultError::NoCode => f.write_str("failNext.code is required"),
            FaultError::CodeRange(c) => write!(f, "failNext.code {c} is not in 400..=599"),
            FaultError::NotVerb(s) => write!(f, "failNext.verb {s:?} is not a verb"),
            FaultError::NotString { field, got } => {
                write!(f, "failNext.{field}: want a string, got {got}")
            }
            FaultError::GatewayCode(c) => write!(f, "gatewayCode {c} is not in 502..=504"),
            FaultError::OutageWithoutServer => f.write_str("outage needs a running server"),
            FaultError::GatewayOutageWithoutServer => {
                f.write_str("gatewayOutageMs needs a running server")
            }
        }
    }
}

impl std::error::Error for FaultError {}

fn opt_bool(v: &Value, key: &'static str) -> Result<Option<bool>, FaultError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(FaultError::NotBool {
            key,
            got: other.clone(),
        }),
    }
}

fn opt_u64(v: &Value, key: &'static str) -> Result<Option<u64>, FaultError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(x) => x.as_u64().map(Some).ok_or_else(|| FaultError::NotCount {
            key,
            got: x.clone(),
        }),
    }
}

fn parse_rule(v: &Value) -> Result<FailRule, FaultError> {
    if !v.is_object() {
        return Err(FaultError::RuleNotObject(v.clone()));
    }
    let count = opt_u64(v, "count")?.unwrap_or(1);
    let remaining = u32::try_from(count).map_err(|_| FaultError::CountTooBig(count))?;
    let code = opt_u64(v, "code")?.ok_or(FaultError::NoCode)?;
    let code = u16::try_from(code)
        .ok()
        .filter(|c| (400..=599).contains(c))
        .ok_or(FaultError::CodeRange(code))?;
    let verb = match v.get("verb") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            Some(verb_from_str(s).ok_or_else(|| FaultError::NotVerb(s.clone()))?)
        }
        Some(other) => {
            return Err(FaultError::NotString {
                field: "verb",
                got: other.clone(),
            })
        }
    };
    let resource = match v.get("resource") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(FaultError::NotString {
                field: "resource",
                got: other.clone(),
            })
        }
    };
    let client = match v.get("client") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(FaultError::NotString {
                field: "client",
                got: other.clone(),
            })
        }
    };
    Ok(FailRule {
        remaining,
        verb,
        resource,
        code,
        retry_after: opt_u64(v, "retryAfterSeconds")?,
        client,
    })
}

fn parse_answer_rule(v: &Value) -> Result<AnswerRule, FaultError> {
    if !v.is_object() {
        return Err(FaultError::WriteAnswer(format!(
            "writeAnswer: want an object, got {v}"
        )));
    }
    let count = opt_u64(v, "count")?.unwrap_or(1);
    let remaining = u32::try_from(count)
        .map_err(|_| FaultError::WriteAnswer(format!("writeAnswer.count {count} too big")))?;
    let verb = match v.get("verb") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match verb_from_str(s) {
            Some(v @ (Verb::Create | Verb::Update | Verb::Patch)) => Some(v),
            _ => {
                return Err(FaultError::WriteAnswer(format!(
                    "writeAnswer.verb {s:?} is not create, update or patch"
                )))
            }
        },
        Some(other) => {
            return Err(FaultError::WriteAnswer(format!(
                "writeAnswer.verb: want a string, got {other}"
            )))
        }
    };
    let resource = match v.get("resource") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(FaultError::WriteAnswer(format!(
                "writeAnswer.resource: want a string, got {other}"
            )))
        }
    };
    let answer = match v.get("answer") {
        Some(Value::String(s)) => WriteAnswer::parse(s).ok_or_else(|| {
            let known: Vec<&str> = WriteAnswer::ALL.iter().map(|(n, _)| *n).collect();
            FaultError::WriteAnswer(format!(
                "writeAnswer.answer {s:?}; known: {}",
                known.join(", ")
            ))
        })?,
        _ => {
            return Err(FaultError::WriteAnswer(
                "writeAnswer.answer (a string) is required".into(),
            ))
        }
    };
    Ok(AnswerRule {
        remaining,
        verb,
        resource,
        answer,
    })
}

impl FaultRequest {
    /// Parse and validate a POST body; unknown keys are errors.
    pub fn parse(v: &Value) -> Result<FaultRequest, FaultError> {
        let obj = v.as_object().ok_or(FaultError::NotObject)?;
        if let Some(k) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(FaultError::UnknownKey(k.clone()));
        }
        let fail_next = match v.get("failNext") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items.iter().map(parse_rule).collect::<Result<_, _>>()?,
            Some(one) => vec![parse_rule(one)?],
        };
        let write_answer = match v.get("writeAnswer") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(parse_answer_rule)
                .collect::<Result<_, _>>()?,
            Some(one) => vec![parse_answer_rule(one)?],
        };
        Ok(FaultRequest {
            clear: opt_bool(v, "clear")?.unwrap_or(false),
            fail_next,
            write_answer,
            latency: opt_u64(v, "latencyMs")?.map(Duration::from_millis),
            stall_watches: opt_bool(v, "stallWatches")?,
            close_all_watches: opt_bool(v, "closeAllWatches")?.unwrap_or(false),
            compact: opt_bool(v, "compact")?.unwrap_or(false),
            outage: opt_u64(v, "outageMs")?.map(Duration::from_millis),
            ignore_send_initial_events: opt_bool(v, "ignoreSendInitialEvents")?,
            gateway_outage: opt_u64(v, "gatewayOutageMs")?.map(Duration::from_millis),
            gateway_code: match opt_u64(v, "gatewayCode")? {
                None => 502,
                Some(c @ 502..=504) => c as u16,
                Some(c) => return Err(FaultError::GatewayCode(c)),
            },
        })
    }
}

/// A standing refusal of writes: every create, update and patch of
/// `resource` (of one object when `name` is set) answered `code` with
/// `message` until lifted, as an admission webhook that fails closed
/// answers (500 `failed calling webhook`), or an object whose every update
/// conflicts (409). Unlike a fail rule it has no count; it counts the
/// requests it refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteRefusal {
    /// Plural resource ("endpoints").
    pub resource: String,
    /// Only this object (`namespace`, `name`); every object when `None`.
    pub object: Option<(String, String)>,
    /// HTTP code of the answer (400..=599).
    pub code: u16,
    /// The Status message.
    pub message: String,
}

#[derive(Debug)]
struct Refusal {
    rule: WriteRefusal,
    refused: u64,
}

fn refusal_matches(rule: &WriteRefusal, info: &RequestInfo) -> bool {
    matches!(info.verb, Verb::Create | Verb::Update | Verb::Patch)
        && info.resource == rule.resource
        && rule.object.as_ref().is_none_or(|(ns, name)| {
            info.namespace.as_deref() == Some(ns.as_str())
                && info.name.as_deref() == Some(name.as_str())
        })
}

impl Faults {
    /// Refuse writes as `rule` says until [`Faults::lift_refusals`] (or
    /// [`Faults::clear`]).
    pub fn refuse_writes(&self, rule: WriteRefusal) {
        self.refusals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Refusal { rule, refused: 0 });
    }

    /// End every write refusal; how many requests they refused in all.
    pub fn lift_refusals(&self) -> u64 {
        let mut r = self.refusals.lock().unwrap_or_else(|p| p.into_inner());
        r.drain(..).map(|x| x.refused).sum()
    }

    /// Requests refused so far by the standing refusals.
    pub fn refused(&self) -> u64 {
        let r = self.refusals.lock().unwrap_or_else(|p| p.into_inner());
        r.iter().map(|x| x.refused).sum()
    }

    /// The answer of the first refusal `info` matches, counted.
    fn refused_write(&self, info: &RequestInfo) -> Option<Response> {
        let mut r = self.refusals.lock().unwrap_or_else(|p| p.into_inner());
        let hit = r.iter_mut().find(|x| refusal_matches(&x.rule, info))?;
        hit.refused += 1;
        let mut details = json!({ "kind": info.resource, "group": info.group });
        if let Some(n) = &info.name {
            details["name"] = json!(n);
        }
        Some(
            ApiError::new(
                hit.rule.code,
                reason_for(hit.rule.code),
                hit.rule.message.clone(),
            )
            .with_details(details)
            .to_response(),
        )
    }
}

#[cfg(test)]
mod refusal_tests {
    use super::*;
    use crate::store::StoreConfig;
    use endpointd_base::clock::RealClock;

    #[test]
    fn a_refusal_answers_matching_writes_until_lifted() {
        let store = Store::new(StoreConfig::default(), RealClock::shared());
        let f = Faults::new(store, RealClock::shared());
        f.refuse_writes(WriteRefusal {
            resource: "endpoints".into(),
            object: Some(("default".into(), "web".into())),
            code: 409,
            message: "conflict".into(),
        });
        let req = |m: &str, p: &str| {
            let info = crate::requestinfo::parse(m, p, &[]).expect("info");
            f.take_failure(&info).map(|r| r.status)
        };
        assert_eq!(
            req("PUT", "/api/v1/namespaces/default/endpoints/web"),
            Some(409)
        );
        assert_eq!(
            req("PUT", "/api/v1/namespaces/default/endpoints/web"),
            Some(409)
        );
        assert_eq!(req("GET", "/api/v1/namespaces/default/endpoints/web"), None);
        assert_eq!(req("PUT", "/api/v1/namespaces/default/endpoints/db"), None);
        assert_eq!(req("PUT", "/api/v1/namespaces/other/endpoints/web"), None);
        assert_eq!(f.refused(), 2);
        assert_eq!(f.lift_refusals(), 2);
        assert_eq!(req("PUT", "/api/v1/namespaces/default/endpoints/web"), None);
    }
}

#[cfg(test)]
mod client_rule_tests {
    use super::*;
    use crate::store::StoreConfig;
    use endpointd_base::clock::RealClock;

    #[test]
    fn a_rule_for_one_client_fails_only_its_requests() {
        let store = Store::new(StoreConfig::default(), RealClock::shared());
        let f = Faults::new(store, RealClock::shared());
        f.fail_next_for(2, "(node-b_", 503);
        let info = crate::requestinfo::parse("GET", "/api/v1/pods", &[]).expect("info");
        let from = |agent: &str| {
            crate::requester::with("token-user", agent, || {
                f.take_failure(&info).map(|r| r.status)
            })
        };
        assert_eq!(from("endpointd/0.1.0 (node-a_1) endpoint-controller"), None);
        assert_eq!(
            from("endpointd/0.1.0 (node-b_2) endpoint-controller"),
            Some(503)
        );
        assert_eq!(from("kubectl/v1.34"), None);
        assert_eq!(from("endpointd/0.1.0 (node-b_2)"), Some(503));
        assert_eq!(from("endpointd/0.1.0 (node-b_2)"), None, "two only");
        let parsed = FaultRequest::parse(&json!({"failNext": {"code": 500, "client": "node-b"}}))
            .expect("parse");
        assert_eq!(parsed.fail_next[0].client.as_deref(), Some("node-b"));
    }
}

#[cfg(test)]
mod gateway_tests {
    use super::*;

    #[test]
    fn gateway_outages_parse_with_a_gateway_code() {
        let r = FaultRequest::parse(&json!({"gatewayOutageMs": 1500})).expect("parse");
        assert_eq!(r.gateway_outage, Some(Duration::from_millis(1500)));
        assert_eq!(r.gateway_code, 502, "nginx's answer by default");
        let r =
            FaultRequest::parse(&json!({"gatewayOutageMs": 1, "gatewayCode": 503})).expect("parse");
        assert_eq!(r.gateway_code, 503);
        let e = FaultRequest::parse(&json!({"gatewayOutageMs": 1, "gatewayCode": 500}))
            .expect_err("500 is no gateway's answer")
            .to_string();
        assert!(e.contains("gatewayCode 500"), "{e}");
    }

    #[test]
    fn no_gateway_outage_without_a_server() {
        use crate::store::StoreConfig;
        use endpointd_base::clock::RealClock;
        let store = Store::new(StoreConfig::default(), RealClock::shared());
        let f = Faults::new(store, RealClock::shared());
        assert!(!f.gateway_outage(Duration::from_secs(1), 502));
        assert!(f.gateway_answer().is_none());
    }
}

#[cfg(test)]
mod write_answer_tests {
    use super::*;
    use crate::store::StoreConfig;
    use endpointd_base::clock::RealClock;

    #[test]
    fn write_answer_rules_parse_and_match_writes_only() {
        let r = FaultRequest::parse(&json!({"writeAnswer": [
            {"verb": "create", "resource": "endpointslices", "answer": "empty"},
            {"count": 2, "answer": "lost"}]}))
        .expect("parse");
        assert_eq!(r.write_answer.len(), 2);
        assert_eq!(r.write_answer[0].answer, WriteAnswer::Empty);
        assert_eq!(r.write_answer[1].remaining, 2);
        for bad in [
            json!({"writeAnswer": {"answer": "nonsense"}}),
            json!({"writeAnswer": {"verb": "get", "answer": "empty"}}),
            json!({"writeAnswer": {}}),
        ] {
            assert!(FaultRequest::parse(&bad).is_err(), "{bad}");
        }
        let store = Store::new(StoreConfig::default(), RealClock::shared());
        let f = Faults::new(store, RealClock::shared());
        f.apply_json(&json!({"writeAnswer": {"resource": "endpoints", "answer": "status"}}))
            .expect("apply");
        let get = crate::requestinfo::parse("GET", "/api/v1/namespaces/a/endpoints/x", &[])
            .expect("info");
        assert_eq!(f.take_write_answer(&get), None, "reads are not answered");
        let put = crate::requestinfo::parse("PUT", "/api/v1/namespaces/a/endpoints/x", &[])
            .expect("info");
        assert_eq!(f.take_write_answer(&put), Some(WriteAnswer::Status));
        assert_eq!(f.take_write_answer(&put), None, "once");
    }
}
