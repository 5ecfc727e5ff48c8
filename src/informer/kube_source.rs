//! The [`ListerWatcher`] adapter onto `kube::Client`, and the mapping from
//! `kube::Error` to the reflector's [`ErrorKind`]s.
//!
//! Owns only translation (parameters in, pages/events/errors out); it never
//! retries, sleeps or caches — the client retries ordinary requests and the
//! reflector decides what a failure means for the informer.

use std::marker::PhantomData;

use super::source::{
    ListRequest, ListerWatcher, Page, SourceError, WatchEvent, WatchEvents, WatchRequest,
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

/// How the reflector must treat a client error: 410/Expired/Gone → relist;
/// transport, 429 and 5xx → back off and retry the same request; anything
/// else (decode errors, 401/403, shutdown) → back off and relist.
pub fn classify(e: &kube::Error) -> SourceError {
    let msg = e.to_string();
    if e.is_gone() {
        SourceError::expired(msg)
    } else if e.is_retryable() {
        SourceError::transient(msg).with_retry_after(e.retry_after())
    } else {
        SourceError::other(msg)
    }
}

fn convert<T>(ev: Result<kube::WatchEvent<T>, kube::Error>) -> Result<WatchEvent<T>, SourceError> {
    match ev {
        Ok(kube::WatchEvent::Added(o)) => Ok(WatchEvent::Added(o)),
        Ok(kube::WatchEvent::Modified(o)) => Ok(WatchEvent::Modified(o)),
        Ok(kube::WatchEvent::Deleted(o)) => Ok(WatchEvent::Deleted(o)),
        Ok(kube::WatchEvent::Bookmark {
            resource_version,
            initial_events_end,
        }) => Ok(WatchEvent::Bookmark {
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

    fn watch(&self, req: &WatchRequest) -> Result<WatchEvents<T>, SourceError> {
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
        Ok(Box::new(stream.map(convert)))
    }
}
