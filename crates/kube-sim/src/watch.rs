//! WATCH: turns store events into the wire stream (one JSON event + "\n"
//! per chunk): synthetic ADDED for the initial state, replay from history,
//! selector filtering (an object that leaves the selection is sent as
//! DELETED, one that enters as ADDED), BOOKMARKs, the watch-list end
//! marker, `timeoutSeconds`, and 410 as an ERROR event. A watch from a
//! resourceVersion newer than the store's is accepted, as kube-apiserver's
//! watch cache (and etcd) accept it: events and bookmarks up to that
//! version are withheld, so after a restore the stream stays silent until
//! the counter passes it.
//!
//! A [`Watcher`] lives in the store and is driven under its lock by writes
//! (`deliver`) and by the ticker (`tick`); it never blocks: frames go to an
//! unbounded channel whose backlog is capped, and a watcher over the cap
//! (slow client) or whose client left is dropped, which ends its stream.
//! No thread per watch; this module never sleeps or reads time itself.

use super::list::parse_rv;
use super::objects::{is_converted, Obj};
use super::resources::ResourceInfo;
use super::selector::{FieldRequirement, Selectors};
use super::status::ApiError;
use super::store::{res_index, Backlog, Event, EventType, Store, WatchFrom};
use super::validate;
use crossbeam_channel::{Receiver, Sender};
use endpointd_base::httpd::Request;
use endpointd_base::httpd::{Body, Response};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Frames a watcher may have queued (beyond its initial backlog) before it
/// counts as too slow and is dropped, as the real server drops watchers
/// whose buffer fills.
pub const WATCH_BACKLOG: usize = 8192;

/// One open watch, as the store holds it.
#[derive(Debug)]
pub struct Watcher {
    res: usize,
    namespace: Option<String>,
    info: &'static ResourceInfo,
    sel: Selectors,
    out: Sender<Vec<u8>>,
    limit: usize,
    bookmarks: bool,
    deadline: Option<Instant>,
    /// `None` when `now + interval` is not representable (no bookmarks).
    next_bookmark: Option<Instant>,
    interval: Duration,
    /// Events and bookmarks at or below this resourceVersion are withheld
    /// (a watch from a resourceVersion the store had not reached; 0
    /// otherwise), as kube-apiserver's cacheWatcher sends only newer ones.
    after: u64,
}

impl Watcher {
    /// Offer a write; false when the watcher must be dropped.
    pub fn deliver(&mut self, ev: &Event) -> bool {
        if ev.rv <= self.after
            || ev.key.res != self.res
            || self
                .namespace
                .as_ref()
                .is_some_and(|ns| *ns != ev.key.namespace)
        {
            return true;
        }
        match convert(ev, &self.sel, self.info) {
            Some(frame) => self.send(frame),
            None => true,
        }
    }

    /// Periodic tick (`rv` = the store's resourceVersion, every event up to
    /// it already delivered): timeout, bookmark, or a liveness probe (an
    /// empty chunk, which the HTTP layer turns into a peer check).
    pub fn tick(&mut self, now: Instant, rv: u64) -> bool {
        if self.deadline.is_some_and(|d| now >= d) {
            return false;
        }
        if self.bookmarks
            && (self.after == 0 || rv > self.after)
            && self.next_bookmark.is_some_and(|t| now >= t)
        {
            self.next_bookmark = now.checked_add(self.interval);
            return self.send(bookmark(self.info, rv, false));
        }
        self.out.send(Vec::new()).is_ok()
    }

    fn send(&self, frame: Vec<u8>) -> bool {
        self.out.len() < self.limit && self.out.send(frame).is_ok()
    }
}

/// Serve a WATCH: start the stream or answer with an error.
pub fn watch(
    store: &Arc<Store>,
    info: &'static ResourceInfo,
    namespace: Option<&str>,
    name: Option<&str>,
    req: &Request,
) -> Result<Response, ApiError> {
    let (w, from, initial_events, rx) = prepare(store, info, namespace, name, req)?;
    store.txn(|t| {
        if let WatchFrom::Rv(n) = from {
            if n > t.rv() {
                let mut w = w;
                w.after = n;
                t.add_watcher(w);
                return Ok(());
            }
        }
        match t.watch_backlog(w.res, namespace, from) {
            Ok(backlog) => {
                let mut w = w;
                w.limit += w.send_backlog(&backlog, initial_events.then_some(t.rv()));
                t.add_watcher(w);
            }
            // Like the real server: 200, then one ERROR event, then the end.
            Err(e) if e.code == 410 => {
                let _ = w
                    .out
                    .send(frame("ERROR", e.to_status().to_string().as_bytes()));
            }
            Err(e) => return Err(e),
        }
        Ok(())
    })?;
    Ok(Response {
        status: 200,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: Body::Stream(rx),
    })
}

/// The watcher a request asks for, where it starts, whether it is a
/// watch-list (`sendInitialEvents`), and its stream's receiving end.
type Prepared = (Watcher, WatchFrom, bool, Receiver<Vec<u8>>);

/// Build the [`Prepared`] watch of a request.
fn prepare(
    store: &Store,
    info: &'static ResourceInfo,
    namespace: Option<&str>,
    name: Option<&str>,
    req: &Request,
) -> Result<Prepared, ApiError> {
    let mut sel = Selectors::from_request(info.resource, req)?;
    if let Some(n) = name {
        sel.fields.0.push(FieldRequirement {
            field: "metadata.name".into(),
            pointer: "/metadata/name".into(),
            value: n.to_string(),
            negated: false,
        });
    }
    let rv = req.query("resourceVersion").unwrap_or("");
    let rv_match = req.query("resourceVersionMatch").unwrap_or("");
    let initial_events =
        req.query("sendInitialEvents") == Some("true") && !store.ignores_initial_events();
    if initial_events && rv_match != "NotOlderThan" {
        return Err(validate::invalid_list_options(
            "resourceVersionMatch",
            rv_match,
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    let from = if initial_events || rv.is_empty() || rv == "0" {
        WatchFrom::CurrentState
    } else {
        WatchFrom::Rv(parse_rv(rv)?)
    };
    let timeout = req
        .query("timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|s| *s > 0);
    let now = store.clock().now();
    let interval = store.config().bookmark_interval;
    let (out, rx) = crossbeam_channel::unbounded();
    let w = Watcher {
        res: res_index(info),
        namespace: namespace.map(str::to_string),
        info,
        sel,
        out,
        limit: WATCH_BACKLOG,
        bookmarks: req.query("allowWatchBookmarks") == Some("true"),
        // timeoutSeconds is client-controlled: a deadline past what Instant
        // can represent means no deadline (checked, `+` would panic).
        deadline: timeout.and_then(|s| now.checked_add(Duration::from_secs(s))),
        next_bookmark: now.checked_add(interval),
        interval,
        after: 0,
    };
    Ok((w, from, initial_events, rx))
}

impl Watcher {
    /// Queue the initial objects (or replayed events), then the watch-list
    /// end bookmark at `initial_end_rv`; returns how many frames were queued.
    fn send_backlog(&self, backlog: &Backlog, initial_end_rv: Option<u64>) -> usize {
        let mut frames: Vec<Vec<u8>> = match backlog {
            Backlog::Objects(objs) => objs
                .iter()
                .filter(|o| self.sel.matches_obj(o))
                .map(|o| frame("ADDED", &o.json_as(self.info)))
                .collect(),
            Backlog::Events(evs) => evs
                .iter()
                .filter_map(|e| convert(e, &self.sel, self.info))
                .collect(),
        };
        if let Some(rv) = initial_end_rv {
            frames.push(bookmark(self.info, rv, true));
        }
        let n = frames.len();
        for f in frames {
            let _ = self.out.send(f);
        }
        n
    }
}

/// One wire event: `{"type":T,"object":OBJ}` + "\n".
pub fn frame(kind: &str, object: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(object.len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    out.extend_from_slice(object);
    out.extend_from_slice(b"}\n");
    out
}

/// A BOOKMARK object: the resource's kind with only a resourceVersion.
pub fn bookmark(info: &ResourceInfo, rv: u64, initial_end: bool) -> Vec<u8> {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let obj = json!({"kind": info.kind, "apiVersion": info.api_version(), "metadata": meta});
    frame("BOOKMARK", obj.to_string().as_bytes())
}

/// The frame to send for `ev` under `sel`, or None when filtered out.
fn convert(ev: &Event, sel: &Selectors, view: &ResourceInfo) -> Option<Vec<u8>> {
    // The shared frame when the watcher sees the stored form.
    let same = !is_converted(ev.obj.info, view);
    let as_is = |kind: &str| {
        if same {
            ev.line().to_vec()
        } else {
            frame(kind, &ev.obj.json_as(view))
        }
    };
    if sel.is_empty() {
        return Some(as_is(ev.kind.as_str()));
    }
    let now = sel.matches_obj(&ev.obj);
    let was = ev.prev.as_ref().is_some_and(|p| sel.matches_obj(p));
    match (ev.kind, was, now) {
        (EventType::Added, _, true) | (EventType::Deleted, _, true) => {
            Some(as_is(ev.kind.as_str()))
        }
        (EventType::Modified, true, true) => Some(as_is("MODIFIED")),
        (EventType::Modified, false, true) => Some(frame("ADDED", &ev.obj.json_as(view))),
        (EventType::Modified, true, false) => {
            // Leaves the selection: its previous state, stamped with this RV.
            let prev = ev.prev.as_ref()?;
            let mut v = prev.value();
            v["metadata"]["resourceVersion"] = Value::String(ev.rv.to_string());
            Some(frame("DELETED", &Obj::new(prev.info, v).json_as(view)))
        }
        _ => None,
    }
}
