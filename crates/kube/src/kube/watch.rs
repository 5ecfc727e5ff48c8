//! Watch-event decoding: newline-delimited `{"type": …, "object": …}` JSON
//! from any `BufRead` into typed [`WatchEvent`]s, and the [`WatchStream`]
//! iterator the client hands out.
//!
//! The decoder streams: when `type` precedes `object` (as kube-apiserver
//! writes it) the object is deserialised straight into `T`; only the rare
//! reversed order is buffered. Must never block on anything but the
//! reader, and never swallow a truncated event (a partial last line is an
//! error, so the caller re-watches from the last delivered resourceVersion).

use super::error::{Error, Status};
use serde::de::{DeserializeOwned, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::io::{BufRead, ErrorKind, Read};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The annotation on the bookmark that ends a watch-list's initial events.
pub const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// One watch event.
#[derive(Clone, Debug, PartialEq)]
pub enum WatchEvent<T> {
    /// `ADDED`.
    Added(T),
    /// `MODIFIED`.
    Modified(T),
    /// `DELETED` (the object's last state).
    Deleted(T),
    /// `BOOKMARK`: only the resourceVersion moves.
    Bookmark {
        /// The bookmark's resourceVersion.
        resource_version: String,
        /// Annotated `k8s.io/initial-events-end: "true"` (watch-list).
        initial_events_end: bool,
    },
    /// `ERROR`: the server ends the watch with this Status (410 → relist).
    Error(Status),
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct BookmarkObj {
    metadata: BookmarkMeta,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct BookmarkMeta {
    resource_version: String,
    annotations: Option<std::collections::BTreeMap<String, String>>,
}

#[derive(Clone, Copy)]
enum Kind {
    Added,
    Modified,
    Deleted,
    Bookmark,
    Error,
}

fn kind(s: &str) -> Option<Kind> {
    Some(match s {
        "ADDED" => Kind::Added,
        "MODIFIED" => Kind::Modified,
        "DELETED" => Kind::Deleted,
        "BOOKMARK" => Kind::Bookmark,
        "ERROR" => Kind::Error,
        _ => return None,
    })
}

fn bookmark<T>(b: BookmarkObj) -> WatchEvent<T> {
    let end = b
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(INITIAL_EVENTS_END))
        .is_some_and(|v| v == "true");
    WatchEvent::Bookmark {
        resource_version: b.metadata.resource_version,
        initial_events_end: end,
    }
}

/// Deserialise `object` of the given kind from any deserializer.
fn object<'de, T: DeserializeOwned, D: Deserializer<'de>>(
    k: Kind,
    d: D,
) -> Result<WatchEvent<T>, D::Error> {
    Ok(match k {
        Kind::Added => WatchEvent::Added(T::deserialize(d)?),
        Kind::Modified => WatchEvent::Modified(T::deserialize(d)?),
        Kind::Deleted => WatchEvent::Deleted(T::deserialize(d)?),
        Kind::Bookmark => bookmark(BookmarkObj::deserialize(d)?),
        Kind::Error => WatchEvent::Error(Status::from_value(serde_json::Value::deserialize(d)?)),
    })
}

struct Wire<T>(WatchEvent<T>);

struct WireVisitor<T>(PhantomData<T>);

impl<'de, T: DeserializeOwned> Visitor<'de> for WireVisitor<T> {
    type Value = Wire<T>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a watch event object with `type` and `object`")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Wire<T>, A::Error> {
        use serde::de::Error as _;
        let mut k: Option<Kind> = None;
        let mut buffered: Option<serde_json::Value> = None;
        let mut ev: Option<WatchEvent<T>> = None;
        while let Some(key) = a.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "type" => {
                    let t = a.next_value::<std::borrow::Cow<'de, str>>()?;
                    k = Some(kind(&t).ok_or_else(|| {
                        A::Error::custom(format!("unknown watch event type {t:?}"))
                    })?);
                }
                "object" => match k {
                    Some(k) => ev = Some(a.next_value_seed(ObjectSeed(k, PhantomData))?),
                    None => buffered = Some(a.next_value()?),
                },
                _ => {
                    a.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        let k = k.ok_or_else(|| A::Error::missing_field("type"))?;
        if let Some(ev) = ev {
            return Ok(Wire(ev));
        }
        let v = buffered.ok_or_else(|| A::Error::missing_field("object"))?;
        object(k, v).map(Wire).map_err(A::Error::custom)
    }
}

struct ObjectSeed<T>(Kind, PhantomData<T>);

impl<'de, T: DeserializeOwned> serde::de::DeserializeSeed<'de> for ObjectSeed<T> {
    type Value = WatchEvent<T>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<WatchEvent<T>, D::Error> {
        object(self.0, d)
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Wire<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Wire<T>, D::Error> {
        d.deserialize_map(WireVisitor(PhantomData))
    }
}

/// Longest single watch event line accepted (16 MiB). The whole line is
/// buffered before decoding, so without a limit a server (or anything in
/// between) sending bytes without a newline grows memory without bound.
/// kube-apiserver objects are limited to about 1.5 MiB (etcd's request
/// limit), so real events stay far below it.
pub const MAX_EVENT_LINE: usize = 16 * 1024 * 1024;

/// Decode one event line (without or with its trailing newline).
pub fn decode_event<T: DeserializeOwned>(line: &[u8]) -> Result<WatchEvent<T>, Error> {
    super::body::from_json_bytes::<Wire<T>>(line)
        .map(|w| w.0)
        .map_err(|e| Error::Decode {
            what: "watch event".into(),
            detail: e.to_string(),
        })
}

/// A live watch: an iterator of events that ends when the server closes
/// the stream cleanly (`None`), or after yielding one error.
pub struct WatchStream<T> {
    reader: Box<dyn BufRead + Send>,
    server: String,
    shutdown: Arc<AtomicBool>,
    line: Vec<u8>,
    done: bool,
    _t: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for WatchStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchStream")
            .field("server", &self.server)
            .field("done", &self.done)
            .finish()
    }
}

impl<T: DeserializeOwned> WatchStream<T> {
    /// Wrap a response body. `server` names the server in errors;
    /// `shutdown` turns read errors after a client shutdown into
    /// [`Error::Shutdown`].
    pub fn new(
        reader: Box<dyn BufRead + Send>,
        server: String,
        shutdown: Arc<AtomicBool>,
    ) -> WatchStream<T> {
        WatchStream {
            reader,
            server,
            shutdown,
            line: Vec::with_capacity(4096),
            done: false,
            _t: PhantomData,
        }
    }

    fn read_error(&self, e: std::io::Error) -> Error {
        if self.shutdown.load(Ordering::SeqCst) {
            return Error::Shutdown;
        }
        let timeout = e.kind() == ErrorKind::TimedOut
            || e.kind() == ErrorKind::WouldBlock
            || e.get_ref()
                .and_then(|i| i.downcast_ref::<ureq::Error>())
                .is_some_and(|u| matches!(u, ureq::Error::Timeout(_)));
        Error::Transport {
            server: self.server.clone(),
            cause: if timeout {
                format!("watch idle for longer than the read timeout: {e}")
            } else {
                format!("watch stream read failed: {e}")
            },
            timeout,
            unreachable: !timeout,
        }
    }
}

impl<T: DeserializeOwned> Iterator for WatchStream<T> {
    type Item = Result<WatchEvent<T>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            self.line.clear();
            let n = match self
                .reader
                .by_ref()
                .take(MAX_EVENT_LINE as u64 + 1)
                .read_until(b'\n', &mut self.line)
            {
                Ok(n) => n,
                Err(e) => {
                    self.done = true;
                    return Some(Err(self.read_error(e)));
                }
            };
            if n == 0 {
                self.done = true;
                return None;
            }
            if self.line.len() > MAX_EVENT_LINE {
                self.done = true;
                return Some(Err(Error::Decode {
                    what: "watch event".into(),
                    detail: format!("event line longer than the limit of {MAX_EVENT_LINE} bytes"),
                }));
            }
            let complete = self.line.last() == Some(&b'\n');
            if self.line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let ev = decode_event(&self.line);
            if !complete {
                self.done = true;
                if ev.is_err() {
                    return Some(Err(Error::Transport {
                        server: self.server.clone(),
                        cause: "watch stream ended in the middle of an event".into(),
                        timeout: false,
                        unreachable: true,
                    }));
                }
            }
            if ev.is_err() {
                self.done = true;
            }
            return Some(ev);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Object, Pod};
    use std::io::Cursor;

    fn stream(body: &str) -> Vec<Result<WatchEvent<Pod>, Error>> {
        let r: Box<dyn BufRead + Send> = Box::new(Cursor::new(body.as_bytes().to_vec()));
        WatchStream::<Pod>::new(r, "https://k".into(), Arc::new(AtomicBool::new(false))).collect()
    }

    fn summary(evs: &[Result<WatchEvent<Pod>, Error>]) -> Vec<String> {
        evs.iter()
            .map(|e| match e {
                Ok(WatchEvent::Added(p)) => format!("A {}@{}", p.name(), p.resource_version()),
                Ok(WatchEvent::Modified(p)) => format!("M {}@{}", p.name(), p.resource_version()),
                Ok(WatchEvent::Deleted(p)) => format!("D {}@{}", p.name(), p.resource_version()),
                Ok(WatchEvent::Bookmark {
                    resource_version,
                    initial_events_end,
                }) => format!("B {resource_version} {initial_events_end}"),
                Ok(WatchEvent::Error(s)) => format!("E {} {}", s.code, s.reason),
                Err(Error::Transport { cause, .. }) => format!("T {cause}"),
                Err(e) => format!("X {e}"),
            })
            .collect()
    }

    const ADD: &str =
        r#"{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"5"}}}"#;

    #[test]
    fn decoding_table() {
        let cases: Vec<(String, Vec<&str>)> = vec![
            (format!("{ADD}\n"), vec!["A a@5"]),
            (
                format!(
                    "{ADD}\n\n{}\n{}\n",
                    r#"{"object":{"metadata":{"name":"a","resourceVersion":"6"}},"type":"MODIFIED"}"#,
                    r#"{"type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"7"}}}"#
                ),
                vec!["A a@5", "M a@6", "D a@7"],
            ),
            (
                format!(
                    "{ADD}\n{}\n",
                    r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (9)","reason":"Expired","code":410}}"#
                ),
                vec!["A a@5", "E 410 Expired"],
            ),
            (
                format!(
                    "{}\n{}\n",
                    r#"{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"12"}}}"#,
                    r#"{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"13","annotations":{"k8s.io/initial-events-end":"true"}}}}"#
                ),
                vec!["B 12 false", "B 13 true"],
            ),
            // A partial last line (connection cut mid-event) is an error…
            (
                format!(
                    "{ADD}\n{}",
                    r#"{"type":"MODIFIED","object":{"metadata":{"na"#
                ),
                vec!["A a@5", "T watch stream ended in the middle of an event"],
            ),
            // …but a complete last event without its newline is delivered.
            (ADD.to_string(), vec!["A a@5"]),
            (String::new(), vec![]),
        ];
        for (body, want) in cases {
            assert_eq!(summary(&stream(&body)), want, "body: {body}");
        }
    }

    #[test]
    fn undecodable_events_end_the_stream_with_decode_error() {
        let body = format!("{}\n{ADD}\n", r#"{"type":"RENAMED","object":{}}"#);
        let evs = stream(&body);
        assert_eq!(evs.len(), 1);
        assert!(matches!(evs[0], Err(Error::Decode { .. })));
    }

    #[test]
    fn oversized_event_line_is_a_decode_error_naming_the_limit() {
        // A decodable event just over the limit: without the cap it was
        // buffered whole and delivered.
        let pad = "x".repeat(MAX_EVENT_LINE);
        let body = format!(
            r#"{{"type":"ADDED","object":{{"metadata":{{"name":"a","resourceVersion":"1"}},"pad":"{pad}"}}}}"#
        ) + "\n";
        let evs = stream(&body);
        assert_eq!(evs.len(), 1);
        match &evs[0] {
            Err(e @ Error::Decode { detail, .. }) => {
                assert!(detail.contains(&MAX_EVENT_LINE.to_string()), "{e}");
            }
            other => panic!(
                "expected a decode error, got {:?}",
                other.as_ref().map(|_| "event")
            ),
        }
        // An ordinary event still decodes.
        let ok = r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#.to_string();
        assert!(matches!(stream(&(ok + "\n"))[..], [Ok(_)]));
    }
}
