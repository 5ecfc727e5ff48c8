//! WATCH: one thread per open watch turns store events into the wire
//! stream (one JSON event + "\n" per chunk): synthetic ADDED for the
//! initial state, replay from history, selector filtering (an object that
//! leaves the selection is sent as DELETED, one that enters as ADDED),
//! BOOKMARKs, the watch-list end marker, `timeoutSeconds`, and 410 as an
//! ERROR event.
//!
//! Per-watcher work (filtering, framing) happens here, off the store lock;
//! the store only hands out `Arc`ed events. Time comes from the store's
//! clock through its ticks; this module never sleeps.

use super::list::{parse_rv, too_large};
use super::objects::{bad_request, Obj};
use super::resources::ResourceInfo;
use super::selector::{FieldRequirement, Selectors};
use super::status::ApiError;
use super::store::{res_index, Event, EventType, Msg, Store, WatchFrom, WatchStart};
use super::validate;
use crate::httpd::Request;
use crate::httpd::{Body, Response};
use crossbeam_channel::Sender;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Capacity of the channel to the HTTP writer.
const OUT_BUFFER: usize = 256;

/// What one watch sends, decided from the query.
#[derive(Debug)]
struct Spec {
    info: &'static ResourceInfo,
    sel: Selectors,
    bookmarks: bool,
    initial_end: bool,
    deadline: Option<Instant>,
    bookmark_interval: Duration,
}

/// Serve a WATCH: start the stream or answer with an error.
pub fn watch(
    store: &Arc<Store>,
    info: &'static ResourceInfo,
    namespace: Option<&str>,
    name: Option<&str>,
    req: &Request,
) -> Result<Response, ApiError> {
    let mut sel = Selectors::parse(req.query("labelSelector"), req.query("fieldSelector"))
        .map_err(|e| bad_request(e.0))?;
    if let Some(n) = name {
        sel.fields.0.push(FieldRequirement {
            field: "metadata.name".into(),
            pointer: "/metadata/name",
            value: n.to_string(),
            negated: false,
        });
    }
    let rv = req.query("resourceVersion").unwrap_or("");
    let rv_match = req.query("resourceVersionMatch").unwrap_or("");
    let initial_events = req.query("sendInitialEvents") == Some("true");
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
    let clock = store.clock().clone();
    let timeout = req
        .query("timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|s| *s > 0);
    let spec = Spec {
        info,
        sel,
        bookmarks: req.query("allowWatchBookmarks") == Some("true"),
        initial_end: initial_events,
        deadline: timeout.map(|s| clock.now() + Duration::from_secs(s)),
        bookmark_interval: store.config().bookmark_interval,
    };
    let start = store.txn(|t| {
        if let WatchFrom::Rv(n) = from {
            if n > t.rv() {
                return Err(too_large(n, t.rv()));
            }
        }
        t.watch(res_index(info), namespace, from)
    });
    let (out_tx, out_rx) = crossbeam_channel::bounded(OUT_BUFFER);
    match start {
        Ok(start) => {
            let store = store.clone();
            std::thread::Builder::new()
                .name("sim-watch".into())
                .spawn(move || {
                    let id = start.id;
                    run(&store, spec, start, &out_tx);
                    store.unwatch(id);
                })
                .map_err(|e| ApiError::new(500, "InternalError", format!("watch thread: {e}")))?;
        }
        Err(e) if e.code == 410 => {
            let _ = out_tx.send(frame("ERROR", &e.to_status().to_string().into_bytes()));
        }
        Err(e) => return Err(e),
    }
    Ok(Response {
        status: 200,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: Body::Stream(out_rx),
    })
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
fn convert(ev: &Event, sel: &Selectors) -> Option<Vec<u8>> {
    if sel.is_empty() {
        return Some(ev.line().to_vec());
    }
    let now = sel.matches(&ev.obj.value);
    let was = ev.prev.as_ref().is_some_and(|p| sel.matches(&p.value));
    match (ev.kind, was, now) {
        (EventType::Added, _, true) | (EventType::Deleted, _, true) => Some(ev.line().to_vec()),
        (EventType::Modified, true, true) => Some(ev.line().to_vec()),
        (EventType::Modified, false, true) => Some(frame("ADDED", &ev.obj.full_json())),
        (EventType::Modified, true, false) => {
            // Leaves the selection: its previous state, stamped with this RV.
            let prev = ev.prev.as_ref()?;
            let mut v = prev.value.clone();
            v["metadata"]["resourceVersion"] = Value::String(ev.rv.to_string());
            Some(frame("DELETED", &Obj::new(prev.info, v).full_json()))
        }
        _ => None,
    }
}

fn run(store: &Store, spec: Spec, start: WatchStart, out: &Sender<Vec<u8>>) {
    let clock = store.clock().clone();
    for obj in &start.initial {
        if spec.sel.matches(&obj.value) && out.send(frame("ADDED", &obj.full_json())).is_err() {
            return;
        }
    }
    if spec.initial_end && out.send(bookmark(spec.info, start.start_rv, true)).is_err() {
        return;
    }
    for ev in &start.replay {
        if let Some(f) = convert(ev, &spec.sel) {
            if out.send(f).is_err() {
                return;
            }
        }
    }
    let mut next_bookmark = clock.now() + spec.bookmark_interval;
    while let Ok(msg) = start.rx.recv() {
        match msg {
            Msg::Event(ev) => {
                if let Some(f) = convert(&ev, &spec.sel) {
                    if out.send(f).is_err() {
                        return;
                    }
                }
            }
            Msg::Tick(rv) => {
                let now = clock.now();
                if spec.deadline.is_some_and(|d| now >= d) || store.is_stopped() {
                    return;
                }
                if spec.bookmarks && now >= next_bookmark {
                    next_bookmark = now + spec.bookmark_interval;
                    if out.send(bookmark(spec.info, rv, false)).is_err() {
                        return;
                    }
                }
            }
        }
    }
}
