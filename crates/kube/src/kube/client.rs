//! The public client: typed get/list/watch/create/update/update_status/
//! patch/delete over any [`Resource`], sharing one transport (agents, token
//! bucket, metrics) between all clones.
//!
//! LIST bodies are deserialised straight into typed items (capped in bytes
//! and items, no intermediate `Value`; `body` reads a page of up to 8 MiB
//! whole first, and streams anything larger); watches are handed out as
//! [`WatchStream`]s. Must never retry a watch (the informer owns that
//! policy) and never buffer a response beyond `body`'s sizes.

use super::body;
use super::config::ClientConfig;
use super::error::Error;
use super::gate::WriteGate;
use super::request::{self, ListParams, PatchType, Preconditions, Resource, WatchParams};
use super::retry::Verb;
use super::transport::{Payload, Req, Transport};
use super::watch::WatchStream;
use crate::metrics::Registry;
use crate::model::{MetaOnly, Object};
use endpointd_base::clock::SharedClock;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::io::BufReader;
use std::sync::Arc;
use std::time::Duration;

/// `timeoutSeconds` assumed when a watch sets none (the API server's
/// default upper bound is 30 min; client-go uses 5–10 min).
pub const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(600);

/// A page of a LIST.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectList<T> {
    /// The objects.
    pub items: Vec<T>,
    /// `metadata.resourceVersion` of the list.
    pub resource_version: String,
    /// `metadata.continue` (`None` on the last page).
    pub continue_token: Option<String>,
}

/// A blocking Kubernetes API client. Cheap to clone; clones share the
/// connection pools, the rate limiter and the metrics (and a clone keeps
/// its original's write gate, if any).
#[derive(Clone, Debug)]
pub struct Client {
    t: Arc<Transport>,
    gate: Option<Arc<dyn WriteGate>>,
}

fn with_query(path: String, q: String) -> String {
    if q.is_empty() {
        path
    } else {
        format!("{path}?{q}")
    }
}

/// Refuse to address an object without a name (the path would name the
/// collection instead).
fn named<'a>(r: &Resource, name: &'a str) -> Result<&'a str, Error> {
    if name.is_empty() {
        return Err(Error::InvalidRequest(format!(
            "{}: object name is empty",
            r.label()
        )));
    }
    Ok(name)
}

impl Client {
    /// Build a client: TLS and proxy are validated now (a bad certificate,
    /// key or URL is an error here, not at the first request).
    pub fn new(
        cfg: ClientConfig,
        clock: SharedClock,
        metrics: Option<&Registry>,
    ) -> Result<Client, Error> {
        Ok(Client {
            t: Arc::new(Transport::new(&cfg, clock, metrics)?),
            gate: None,
        })
    }

    /// This client (same connections, limiter and metrics) with every
    /// create, update, patch and delete sent — and retried — only while
    /// `gate` allows, each attempt ending within the time it grants.
    /// Reads and watches are not gated.
    pub fn gated(&self, gate: Arc<dyn WriteGate>) -> Client {
        Client {
            t: self.t.clone(),
            gate: Some(gate),
        }
    }

    /// The gate for `verb`: writes only.
    fn gate_for(&self, verb: Verb) -> Option<&dyn WriteGate> {
        match verb {
            Verb::Get | Verb::List | Verb::Watch => None,
            _ => self.gate.as_deref(),
        }
    }

    /// The API server URL.
    pub fn server(&self) -> &str {
        &self.t.server
    }

    /// Whether the server is reachable (shared with every client built
    /// from the same [`ClientConfig::link`](super::ClientConfig)).
    pub fn link(&self) -> &Arc<super::Link> {
        &self.t.link
    }

    /// Wake every blocked watch read (it returns [`Error::Shutdown`]) and
    /// refuse new watches. Ordinary requests keep working, so leases can
    /// still be released afterwards.
    pub fn shutdown_watches(&self) {
        self.t.shutdown_watches()
    }

    /// Cancel every request of this client and its clones, in flight or
    /// waiting (retry backoff, rate limiter), and refuse new ones with
    /// [`Error::Shutdown`]. For shutdown only: it cannot be undone.
    pub fn cancel(&self) {
        self.t.cancel()
    }

    /// Keepalive state (on, idle time) of every open connection of this
    /// client (for tests and diagnostics).
    pub fn socket_keepalive(&self) -> Vec<(bool, Duration)> {
        self.t.socket_keepalive()
    }

    /// Drop every pooled connection so the next requests and watches
    /// reconnect (see the heartbeat's repeated-failure handling).
    pub fn reset_connections(&self) {
        self.t.reset_connections()
    }

    fn run<T: DeserializeOwned>(&self, req: Req<'_>) -> Result<T, Error> {
        self.run_as(req, body::Part::Whole)
    }

    /// [`Client::run`], decoding `part` of the response body.
    fn run_as<T: DeserializeOwned>(&self, req: Req<'_>, part: body::Part) -> Result<T, Error> {
        let what = format!("{} {}", req.verb.as_str(), req.resource.label());
        let resp = self.t.execute(&req, self.gate_for(req.verb))?;
        let body = resp.into_body().into_reader();
        body::decode_part(
            body,
            part,
            &what,
            &self.t.server,
            &self.t.body_limits,
            &body::IN_FLIGHT,
        )
        .inspect_err(|e| self.t.record_body_error(&req, e))
    }

    /// GET one object.
    pub fn get<T: Object>(
        &self,
        r: &Resource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<T, Error> {
        self.run(Req {
            verb: Verb::Get,
            resource: r,
            method: "GET",
            path_and_query: r.path(namespace, Some(named(r, name)?), None),
            payload: None,
        })
    }

    /// LIST one page (read whole up to 8 MiB, streamed beyond).
    pub fn list<T: Object>(
        &self,
        r: &Resource,
        namespace: Option<&str>,
        p: &ListParams,
    ) -> Result<ObjectList<T>, Error> {
        let req = Req {
            verb: Verb::List,
            resource: r,
            method: "GET",
            path_and_query: with_query(r.path(namespace, None, None), request::list_query(p)),
            payload: None,
        };
        let what = format!("list {}", req.resource.label());
        let resp = self
            .t
            .execute(&req, None)
            .inspect_err(|_| body::release_list_page())?;
        // Items cost at least their in-memory size whatever their JSON
        // size (`{}` is 2 bytes): a page may hold no more items than fit in
        // the byte cap at that size, nor more than a whole LIST may.
        let mut limits = self.t.body_limits;
        let per_item = std::mem::size_of::<T>().max(1) as u64;
        let fit = usize::try_from(limits.max_bytes / per_item).unwrap_or(usize::MAX);
        limits.max_items = limits.max_items.min(fit.max(1));
        let w: body::ListBody<T> = body::decode_list(
            resp.into_body().into_reader(),
            &what,
            &self.t.server,
            &limits,
            &body::IN_FLIGHT,
        )
        .inspect_err(|e| self.t.record_body_error(&req, e))?;
        Ok(ObjectList {
            items: w.items,
            resource_version: w.resource_version,
            continue_token: w.continue_token,
        })
    }

    /// Start a WATCH. The stream's idle read timeout is `timeoutSeconds`
    /// (or [`DEFAULT_WATCH_TIMEOUT`]) plus `ClientConfig::watch_idle_margin`,
    /// and at most `ClientConfig::watch_idle_timeout` when bookmarks are
    /// requested (a healthy server then never stays silent that long).
    pub fn watch<T: Object>(
        &self,
        r: &Resource,
        namespace: Option<&str>,
        p: &WatchParams,
    ) -> Result<WatchStream<T>, Error> {
        let timeout = p
            .timeout_seconds
            .map(|s| Duration::from_secs(u64::from(s)))
            .unwrap_or(DEFAULT_WATCH_TIMEOUT);
        let req = Req {
            verb: Verb::Watch,
            resource: r,
            method: "GET",
            path_and_query: with_query(r.path(namespace, None, None), request::watch_query(p)),
            payload: None,
        };
        let mut idle = timeout + self.t.watch_idle_margin;
        if p.allow_bookmarks {
            if let Some(bound) = self.t.watch_idle_timeout {
                idle = idle.min(bound);
            }
        }
        let resp = self.t.start_watch(&req, idle)?;
        let reader = BufReader::with_capacity(64 * 1024, resp.into_body().into_reader());
        Ok(WatchStream::new(
            Box::new(reader),
            self.t.server.clone(),
            Arc::clone(&self.t.watch_shutdown),
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn write<T: Object>(
        &self,
        part: body::Part,
        verb: Verb,
        method: &'static str,
        path: String,
        r: &Resource,
        content_type: &'static str,
        encode: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>,
    ) -> Result<T, Error> {
        body::with_request_buffer(|bytes| {
            encode(&mut *bytes).map_err(|e| Error::Decode {
                what: format!("{} {} request body", verb.as_str(), r.label()),
                detail: e.to_string(),
            })?;
            // A create's or update's answer must be the object written:
            // what the request said of it is read from its body first.
            let sent = matches!(verb, Verb::Create | Verb::Update).then(|| Sent::of(bytes));
            let req = Req {
                verb,
                resource: r,
                method,
                path_and_query: path,
                payload: Some(Payload {
                    content_type,
                    bytes,
                }),
            };
            let Some(sent) = sent else {
                return self.run_as(req, part);
            };
            let what = format!("{} {}", req.verb.as_str(), req.resource.label());
            let resp = self.t.execute(&req, self.gate_for(req.verb))?;
            body::decode_answer::<T, _>(
                resp.into_body().into_reader(),
                part,
                &what,
                &self.t.server,
                &self.t.body_limits,
                &body::IN_FLIGHT,
            )
            .and_then(|(answer, kind)| {
                sent.check(&answer, kind.as_deref())
                    .map(|()| answer)
                    .map_err(|detail| Error::Decode {
                        what: format!("the answer to {what}"),
                        detail,
                    })
            })
            .inspect_err(|e| self.t.record_body_error(&req, e))
        })
    }

    /// POST a new object into `namespace` (`None`: the object's own
    /// namespace; the body's namespace field may then stay empty).
    pub fn create<T: Object + Serialize>(
        &self,
        r: &Resource,
        namespace: Option<&str>,
        obj: &T,
    ) -> Result<T, Error> {
        self.post(body::Part::Whole, r, namespace, obj)
    }

    /// PUT an object (optimistic concurrency through its resourceVersion).
    /// `namespace: None` uses the object's own namespace.
    pub fn update<T: Object + Serialize>(
        &self,
        r: &Resource,
        namespace: Option<&str>,
        obj: &T,
    ) -> Result<T, Error> {
        self.put(body::Part::Whole, r, namespace, obj, None)
    }

    /// POST like [`Client::create`], decoding only the metadata of what
    /// the server returns.
    pub fn create_meta<T: Object + Serialize>(
        &self,
        r: &Resource,
        namespace: Option<&str>,
        obj: &T,
    ) -> Result<MetaOnly, Error> {
        self.post(body::Part::Metadata, r, namespace, obj)
    }

    /// PUT like [`Client::update`], decoding only the metadata of what the
    /// server returns.
    pub fn update_meta<T: Object + Serialize>(
        &self,
        r: &Resource,
        namespace: Option<&str>,
        obj: &T,
    ) -> Result<MetaOnly, Error> {
        self.put(body::Part::Metadata, r, namespace, obj, None)
    }

    /// PUT the `status` subresource.
    pub fn update_status<T: Object + Serialize>(
        &self,
        r: &Resource,
        namespace: Option<&str>,
        obj: &T,
    ) -> Result<T, Error> {
        self.put(body::Part::Whole, r, namespace, obj, Some("status"))
    }

    /// POST an object; the answer decoded as `R` (`part` of it).
    fn post<T: Object + Serialize, R: Object>(
        &self,
        part: body::Part,
        r: &Resource,
        namespace: Option<&str>,
        obj: &T,
    ) -> Result<R, Error> {
        let path = r.path(namespace.or(obj.namespace()), None, None);
        let json = "application/json";
        self.write(part, Verb::Create, "POST", path, r, json, |b| {
            object_json(obj, b)
        })
    }

    /// PUT an object or one of its subresources; the answer decoded as `R`
    /// (`part` of it).
    fn put<T: Object + Serialize, R: Object>(
        &self,
        part: body::Part,
        r: &Resource,
        namespace: Option<&str>,
        obj: &T,
        subresource: Option<&str>,
    ) -> Result<R, Error> {
        let ns = namespace.or(obj.namespace());
        let path = r.path(ns, Some(named(r, obj.name())?), subresource);
        let json = "application/json";
        self.write(part, Verb::Update, "PUT", path, r, json, |b| {
            object_json(obj, b)
        })
    }

    /// PATCH an object with a merge, JSON or strategic-merge patch.
    pub fn patch<T: Object, B: Serialize + ?Sized>(
        &self,
        r: &Resource,
        namespace: Option<&str>,
        name: &str,
        kind: PatchType,
        patch: &B,
    ) -> Result<T, Error> {
        let path = r.path(namespace, Some(named(r, name)?), None);
        self.write(
            body::Part::Whole,
            Verb::Patch,
            "PATCH",
            path,
            r,
            kind.content_type(),
            |b| serde_json::to_writer(b, patch),
        )
    }

    /// DELETE an object, optionally only if its UID / resourceVersion still
    /// match (409 Conflict otherwise).
    pub fn delete(
        &self,
        r: &Resource,
        namespace: Option<&str>,
        name: &str,
        pre: Option<Preconditions>,
    ) -> Result<(), Error> {
        let body = pre.map(|p| request::delete_body(&p));
        let resp = self.t.execute(
            &Req {
                verb: Verb::Delete,
                resource: r,
                method: "DELETE",
                path_and_query: r.path(namespace, Some(named(r, name)?), None),
                payload: body.as_deref().map(|b| Payload {
                    content_type: "application/json",
                    bytes: b.as_bytes(),
                }),
            },
            self.gate_for(Verb::Delete),
        )?;
        // Drain the (small) body so the connection returns to the pool.
        let _ = std::io::copy(&mut resp.into_body().into_reader(), &mut std::io::sink());
        Ok(())
    }
}

/// What a create or update said of the object it wrote, read from its
/// request body: the answer must name the same object (issue 37 item 7: a
/// create answered `{}`, with a `Status`, or with the object under another
/// name or uid was taken as done; the controller then waited for a slice
/// that never appeared under that identity).
#[derive(Debug, Default, PartialEq)]
struct Sent {
    kind: Option<String>,
    name: String,
    generate_name: String,
    uid: String,
}

impl Sent {
    fn of(body: &[u8]) -> Sent {
        let meta = body::metadata_span(body).unwrap_or_default();
        let field = |key: &[u8]| body::string_member(meta, key).unwrap_or_default();
        Sent {
            kind: body::top_level_kind(body).filter(|k| !k.is_empty()),
            name: field(b"name"),
            generate_name: field(b"generateName"),
            uid: field(b"uid"),
        }
    }

    /// Whether `answer`, of top-level `kind`, is the object this request
    /// wrote: the kind sent (any but a `Status` when none was) and, when
    /// the request named an object, the name sent (with `generateName`: a
    /// longer name with that prefix), the uid sent (any when none was) and
    /// a resourceVersion. What is wrong otherwise.
    fn check<T: Object>(&self, answer: &T, kind: Option<&str>) -> Result<(), String> {
        let kind = kind.unwrap_or("");
        let kind_ok = match &self.kind {
            Some(want) => kind == want,
            None => !kind.is_empty() && kind != "Status",
        };
        if !kind_ok {
            return Err(format!(
                "the answer is not the object written: kind {kind:?}, want {:?}",
                self.kind.as_deref().unwrap_or("the object's")
            ));
        }
        if self.name.is_empty() && self.generate_name.is_empty() {
            // Nothing named: no object to be stored (a review such as
            // SelfSubjectAccessReview is answered, never stored, and has
            // no name, uid or resourceVersion).
            return Ok(());
        }
        let name = answer.name();
        let name_ok = match (self.name.as_str(), self.generate_name.as_str()) {
            ("", prefix) => name.len() > prefix.len() && name.starts_with(prefix),
            (sent, _) => name == sent,
        };
        if !name_ok {
            let want = match self.name.as_str() {
                "" => format!("a name starting {:?}", self.generate_name),
                n => format!("{n:?}"),
            };
            return Err(format!(
                "the answer is not the object written: name {name:?}, want {want}"
            ));
        }
        let uid = answer.uid();
        let uid: &str = &uid;
        if uid.is_empty() || (!self.uid.is_empty() && uid != self.uid) {
            let want = match self.uid.as_str() {
                "" => "one".to_string(),
                u => format!("{u:?}"),
            };
            return Err(format!(
                "the answer is not the object written: {name:?} with uid {uid:?}, want {want}"
            ));
        }
        if answer.resource_version().is_empty() {
            return Err(format!("the answer has no resourceVersion for {name:?}"));
        }
        Ok(())
    }
}

/// An object as a request body: its hand-written writer when the kind has
/// one (the same bytes: see `Object::write_json`), serde otherwise.
fn object_json<T: Object + Serialize>(obj: &T, out: &mut Vec<u8>) -> serde_json::Result<()> {
    if obj.write_json(out) {
        return Ok(());
    }
    serde_json::to_writer(out, obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Endpoints, Pod};

    /// The answer to a create or update must be the object written.
    #[test]
    fn a_write_answer_must_name_the_object_written() {
        use crate::model::MetaOnly;
        let meta = |v: serde_json::Value| -> MetaOnly {
            serde_json::from_value(serde_json::json!({ "metadata": v })).expect("meta")
        };
        let named = Sent::of(
            br#"{"kind":"Endpoints","apiVersion":"v1","metadata":{"name":"web","namespace":"ns"}}"#,
        );
        assert_eq!(named.kind.as_deref(), Some("Endpoints"));
        assert_eq!(named.name, "web");
        let generated = Sent::of(
            br#"{"kind":"EndpointSlice","metadata":{"generateName":"web-","namespace":"ns"}}"#,
        );
        assert_eq!(generated.generate_name, "web-");
        let updated = Sent::of(
            br#"{"kind":"Endpoints","metadata":{"name":"web","uid":"u1","resourceVersion":"5"}}"#,
        );
        let ok = serde_json::json!({"name": "web", "uid": "u1", "resourceVersion": "6"});
        let slice = serde_json::json!({"name": "web-x7k2p", "uid": "u2", "resourceVersion": "6"});
        let cases: Vec<(&Sent, serde_json::Value, Option<&str>, bool)> = vec![
            (&named, ok.clone(), Some("Endpoints"), true),
            (&updated, ok.clone(), Some("Endpoints"), true),
            (&generated, slice.clone(), Some("EndpointSlice"), true),
            // `{}`, a Status, no kind.
            (&named, serde_json::json!({}), None, false),
            (&named, serde_json::json!({}), Some("Status"), false),
            (&named, ok.clone(), None, false),
            // Another name, uid; none; no resourceVersion.
            (
                &named,
                serde_json::json!({"name": "other", "uid": "u1", "resourceVersion": "6"}),
                Some("Endpoints"),
                false,
            ),
            (
                &updated,
                serde_json::json!({"name": "web", "uid": "u9", "resourceVersion": "6"}),
                Some("Endpoints"),
                false,
            ),
            (
                &named,
                serde_json::json!({"name": "web", "resourceVersion": "6"}),
                Some("Endpoints"),
                false,
            ),
            (
                &named,
                serde_json::json!({"name": "web", "uid": "u1"}),
                Some("Endpoints"),
                false,
            ),
            // generateName: a longer name with the prefix.
            (
                &generated,
                serde_json::json!({"name": "web-", "uid": "u2", "resourceVersion": "6"}),
                Some("EndpointSlice"),
                false,
            ),
            (
                &generated,
                serde_json::json!({"name": "db-x7k2p", "uid": "u2", "resourceVersion": "6"}),
                Some("EndpointSlice"),
                false,
            ),
        ];
        for (sent, answer, kind, want) in cases {
            let got = sent.check(&meta(answer.clone()), kind);
            assert_eq!(
                got.is_ok(),
                want,
                "{sent:?} answered {kind:?} {answer}: {got:?}"
            );
        }
        // Nothing named (a review): only the kind is checked.
        let review = Sent::of(br#"{"kind":"SelfSubjectAccessReview","metadata":{}}"#);
        assert!(review
            .check(
                &meta(serde_json::json!({})),
                Some("SelfSubjectAccessReview")
            )
            .is_ok());
        assert!(review
            .check(&meta(serde_json::json!({})), Some("Status"))
            .is_err());
        // Without a kind sent, anything but a Status will do.
        let kindless = Sent::of(br#"{"metadata":{"name":"web"}}"#);
        assert!(kindless.check(&meta(ok.clone()), Some("Lease")).is_ok());
        assert!(kindless.check(&meta(ok), Some("Status")).is_err());
    }

    fn shareable<T: Clone + Send + Sync + 'static>() {}
    fn sendable<T: Send + 'static>() {}

    #[test]
    fn client_is_clone_send_sync_and_streams_are_send() {
        shareable::<Client>();
        shareable::<ObjectList<Pod>>();
        sendable::<WatchStream<Pod>>();
        sendable::<WatchStream<Endpoints>>();
        sendable::<Error>();
    }
}
