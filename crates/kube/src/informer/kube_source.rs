//! The [`ListerWatcher`] adapter onto `kube::Client`, and the mapping from
//! `kube::Error` to the reflector's [`ErrorKind`](super::source::ErrorKind)s.
//!
//! Owns only translation (parameters in, pages/events/errors out); it never
//! retries, sleeps or caches — the client retries ordinary requests and the
//! reflector decides what a failure means for the informer.

use std::marker::PhantomData;

use super::source::{
    ListRequest, ListerWatcher, Page, SourceError, SourceEvent, SourceEvents, WatchRequest,
};
use crate::kube::{self, Client, ListParams, Resource, WatchParams};
use crate::model::Object;

/// Lists and watches one resource through the HTTP client.
#[derive(Debug)]
pub struct KubeSource<T> {
    client: Client,
    resource: Resource,
    name: String,
    namespace: Option<String>,
    label_selector: Option<String>,
    field_selector: Option<String>,
    _t: PhantomData<fn() -> T>,
}

impl<T: Object> KubeSource<T> {
    /// All objects of `resource`, in all namespaces.
    pub fn new(client: Client, resource: Resource) -> KubeSource<T> {
        KubeSource {
            client,
            name: resource.label(),
            resource,
            namespace: None,
            label_selector: None,
            field_selector: None,
            _t: PhantomData,
        }
    }

    /// Only objects in namespace `ns`.
    pub fn namespace(mut self, ns: &str) -> Self {
        self.namespace = Some(ns.to_string());
        self
    }

    /// Only objects matching this label selector.
    pub fn label_selector(mut self, sel: &str) -> Self {
        self.label_selector = Some(sel.to_string());
        self
    }

    /// Only objects matching this field selector.
    pub fn field_selector(mut self, sel: &str) -> Self {
        self.field_selector = Some(sel.to_string());
        self
    }
}

/// How the reflector must treat a client error: 410/Expired/Gone, and
/// "too large resource version" (the server's history is behind our RV,
/// e.g. after an etcd restore; client-go relists with a consistent read) →
/// relist; transport, 429 and 5xx → back off and retry the same request;
/// anything else (decode errors, 401/403, shutdown) → back off and relist.
pub fn classify(e: &kube::Error) -> SourceError {
    let msg = e.to_string();
    if matches!(e.root(), kube::Error::TooLarge { .. }) {
        SourceError::other(msg).page_too_large()
    } else if e.has_cause("ResourceVersionTooLarge") {
        SourceError::expired(msg).history_behind()
    } else if e.is_gone() {
        SourceError::expired(msg)
    } else if e.is_unreachable() {
        SourceError::transient(msg).unreachable()
    } else if e.is_retryable() {
        SourceError::transient(msg).with_retry_after(e.retry_after())
    } else {
        SourceError::other(msg)
    }
}

/// The watch read nothing for `watch_idle_timeout` (a watch has no other
/// timeout on its reads).
fn is_idle(e: &kube::Error) -> bool {
    matches!(e.root(), kube::Error::Transport { timeout: true, .. })
}

fn convert<T>(ev: Result<kube::WatchEvent<T>, kube::Error>) -> Result<SourceEvent<T>, SourceError> {
    match ev {
        Ok(kube::WatchEvent::Added(o)) => Ok(SourceEvent::Added(o)),
        Ok(kube::WatchEvent::Modified(o)) => Ok(SourceEvent::Modified(o)),
        Ok(kube::WatchEvent::Deleted(o)) => Ok(SourceEvent::Deleted(o)),
        Ok(kube::WatchEvent::Bookmark {
            resource_version,
            initial_events_end,
        }) => Ok(SourceEvent::Bookmark {
            resource_version,
            initial_events_end,
        }),
        Ok(kube::WatchEvent::Error(status)) => Err(classify(&kube::Error::Api(status))),
        Err(e) => Err(classify(&e)),
    }
}

impl<T: Object> ListerWatcher<T> for KubeSource<T> {
    fn resource(&self) -> &str {
        &self.name
    }

    fn list(&self, req: &ListRequest) -> Result<Page<T>, SourceError> {
        let params = ListParams {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            limit: req.limit,
            continue_token: req.continue_token.clone(),
            resource_version: req.resource_version.clone(),
            resource_version_match: None,
        };
        let list = self
            .client
            .list::<T>(&self.resource, self.namespace.as_deref(), &params)
            .map_err(|e| classify(&e))?;
        Ok(Page {
            items: list.items,
            resource_version: list.resource_version,
            continue_token: list.continue_token,
        })
    }

    fn watch(&self, req: &WatchRequest) -> Result<SourceEvents<T>, SourceError> {
        let params = WatchParams {
            resource_version: Some(req.resource_version.clone()),
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            timeout_seconds: Some(req.timeout_seconds),
            allow_bookmarks: req.allow_bookmarks,
            send_initial_events: req.send_initial_events,
        };
        let stream = self
            .client
            .watch::<T>(&self.resource, self.namespace.as_deref(), &params)
            .map_err(|e| classify(&e))?;
        let resource = self.name.clone();
        Ok(Box::new(stream.map_while(move |ev| match ev {
            Err(e) if is_idle(&e) => {
                // kube-apiserver bookmarks only a resource whose version
                // moved, so a quiet resource's watch falls silent: a normal
                // end (resumed from its resourceVersion at once), not an
                // error to warn about, count and back off from. A stalled
                // connection ends the same way and is replaced.
                log::debug!("informer {resource}: {e}; watching again");
                None
            }
            other => Some(convert(other)),
        })))
    }

    fn link_returns(&self) -> u64 {
        self.client.link().returns()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::source::ErrorKind;
    use crate::kube::{Cause, Status};
    use std::time::Duration;

    fn api(code: u16, reason: &str, cause: Option<&str>, retry_after: Option<u64>) -> kube::Error {
        kube::Error::Api(Status {
            code,
            reason: reason.into(),
            message: "m".into(),
            causes: cause
                .map(|c| Cause {
                    reason: c.into(),
                    message: String::new(),
                    field: String::new(),
                })
                .into_iter()
                .collect(),
            retry_after: retry_after.map(Duration::from_secs),
            gateway: false,
        })
    }

    #[test]
    fn classification_follows_client_go() {
        let table: Vec<(kube::Error, ErrorKind, Option<u64>)> = vec![
            (api(410, "Expired", None, None), ErrorKind::Expired),
            (api(410, "Gone", None, None), ErrorKind::Expired),
            (
                api(504, "Timeout", Some("ResourceVersionTooLarge"), Some(1)),
                ErrorKind::Expired,
            ),
            (api(504, "Timeout", None, None), ErrorKind::Transient),
            (api(500, "InternalError", None, None), ErrorKind::Transient),
            (
                api(503, "ServiceUnavailable", None, Some(4)),
                ErrorKind::Transient,
            ),
            (
                api(429, "TooManyRequests", None, Some(2)),
                ErrorKind::Transient,
            ),
            // A proxy's page for an API server it could not reach.
            (
                kube::Error::Api(Status::from_body(502, b"<html>502</html>", None)),
                ErrorKind::Transient,
            ),
            (api(403, "Forbidden", None, None), ErrorKind::Other),
            (api(401, "Unauthorized", None, None), ErrorKind::Other),
            (
                kube::Error::Transport {
                    server: "https://127.0.0.1:1".into(),
                    cause: "connection refused".into(),
                    timeout: false,
                    unreachable: true,
                },
                ErrorKind::Transient,
            ),
            (
                kube::Error::Transport {
                    server: "https://127.0.0.1:1".into(),
                    cause: "timeout: global".into(),
                    timeout: true,
                    unreachable: false,
                },
                ErrorKind::Transient,
            ),
            (
                kube::Error::Decode {
                    what: "watch event".into(),
                    detail: "EOF".into(),
                },
                ErrorKind::Other,
            ),
            (kube::Error::Shutdown, ErrorKind::Other),
        ]
        .into_iter()
        .map(|(e, k)| {
            let ra = e.retry_after().map(|d| d.as_secs());
            (e, k, ra)
        })
        .collect();
        for (e, want, retry_after) in table {
            let got = classify(&e);
            assert_eq!(got.kind, want, "{e}");
            assert_eq!(
                got.unreachable,
                e.is_unreachable(),
                "only an unreachable server: {e}"
            );
            if want == ErrorKind::Transient {
                assert_eq!(got.retry_after.map(|d| d.as_secs()), retry_after, "{e}");
            }
        }
    }

    #[test]
    fn error_events_end_the_watch_with_their_status() {
        let ev: Result<kube::WatchEvent<crate::model::Pod>, kube::Error> =
            Ok(kube::WatchEvent::Error(Status {
                code: 410,
                reason: "Expired".into(),
                message: "too old resource version: 5 (9)".into(),
                causes: Vec::new(),
                retry_after: None,
                gateway: false,
            }));
        let got = convert(ev).expect_err("an ERROR event is an error");
        assert_eq!(got.kind, ErrorKind::Expired);
        assert!(got.message.contains("too old resource version"), "{got}");
    }
}
