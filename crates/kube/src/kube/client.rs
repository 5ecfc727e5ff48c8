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
            self.run_as(
                Req {
                    verb,
                    resource: r,
                    method,
                    path_and_query: path,
                    payload: Some(Payload {
                        content_type,
                        bytes,
                    }),
                },
                part,
            )
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
