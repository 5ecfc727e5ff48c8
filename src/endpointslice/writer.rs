//! Upstream `finalize` (`staging/src/k8s.io/endpointslice/reconciler.go`;
//! docs/behaviour.md#up-b19 b–d, #up-b20): the only place slices are written. Per
//! address type: creates (skipped while the Service is being deleted),
//! then updates, then deletes; then the slices of unsupported address
//! types. As upstream's `Reconcile`: the first error stops the writes of
//! its address type, not the others', and every unsupported slice's
//! delete is tried; the errors are returned together. A create refused
//! because the namespace is terminating ends its address type quietly.
//! Each write is recorded in the generation tracker.
//!
//! Writes go through [`SliceWriter`] (the API client behind the write
//! fence in the daemon, a recording fake in tests).

use super::plan::{SlicePlan, SliceWrites};
use super::tracker::EndpointSliceTracker;
use crate::runtime::labels::TRIGGER_TIME_ANNOTATION;
use endpointd_kube::kube;
use endpointd_kube::model::{EndpointSlice, Service, Time};

/// The API writes finalize needs.
pub trait SliceWriter {
    /// POST; the created object (only its metadata is read: a writer may
    /// leave the endpoints out).
    fn create(&self, s: &EndpointSlice) -> Result<EndpointSlice, kube::Error>;
    /// PUT; the updated object (only its metadata is read).
    fn update(&self, s: &EndpointSlice) -> Result<EndpointSlice, kube::Error>;
    /// DELETE.
    fn delete(&self, namespace: &str, name: &str) -> Result<(), kube::Error>;
    /// Whether `svc` has gone from the cache (or been replaced by another
    /// Service of its name, or is being deleted) since the sync read it:
    /// asked right before each create, which is then skipped (issue 37
    /// item 10: a placeholder created just after its Service was deleted
    /// outlived it). A writer that cannot tell says no.
    fn service_gone(&self, _svc: &Service) -> bool {
        false
    }
}

/// What finalize did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FinalizeOutcome {
    /// Slices created.
    pub created: usize,
    /// Slices updated.
    pub updated: usize,
    /// Slices deleted.
    pub deleted: usize,
    /// A write of ours was overtaken by someone else's while in flight
    /// (the events held meanwhile showed a newer generation, or, during a
    /// create, a slice that was not ours): the Service must be synced
    /// again.
    pub overtaken: bool,
}

/// docs/behaviour.md#up-b20: the trigger-time annotation on a slice being written.
fn annotate(s: &mut EndpointSlice, trigger: Option<Time>) {
    match trigger {
        Some(t) => s
            .metadata
            .annotations
            .insert(TRIGGER_TIME_ANNOTATION, &t.to_string()),
        None => drop(s.metadata.annotations.remove(TRIGGER_TIME_ANNOTATION)),
    }
}

/// `e` with the slice and Service named, as upstream words it (`failed to
/// update web-abc EndpointSlice for Service shop/web`); it stays the error
/// it was (see [`kube::Error::Context`]).
fn what(doing: &str, s: &EndpointSlice, svc: &Service, e: kube::Error) -> kube::Error {
    let name = match s.metadata.name.as_str() {
        "" => String::new(),
        n => format!("{n} "),
    };
    e.context(format!(
        "{doing} {name}EndpointSlice for Service {}/{}",
        svc.metadata.namespace, svc.metadata.name
    ))
}

/// A failed write as upstream's `%v` prints it (the text of the
/// `FailedToUpdateEndpointSlices` event): the context [`what`] added, then
/// an API error's message, not our "API error 403 Forbidden: " prefix.
pub fn upstream_text(e: &kube::Error) -> String {
    match e {
        kube::Error::Context { context, source } => {
            format!("{context}: {}", upstream_text(source))
        }
        kube::Error::Api(status) => status.message.clone(),
        kube::Error::InvalidRequest(m) | kube::Error::Refused(m) => m.clone(),
        other => other.to_string(),
    }
}

/// Write one address type's changes; the first error ends them. A create
/// refused because the namespace is terminating ends them quietly.
fn write_type(
    svc: &Service,
    w: &SliceWrites,
    trigger: Option<Time>,
    writer: &dyn SliceWriter,
    tracker: &EndpointSliceTracker,
    out: &mut FinalizeOutcome,
) -> Result<(), kube::Error> {
    if svc.metadata.deletion_timestamp.is_none() {
        for s in &w.creates {
            if writer.service_gone(svc) {
                log::debug!(
                    "not creating an EndpointSlice for Service {}/{}: it is gone",
                    svc.metadata.namespace,
                    svc.metadata.name
                );
                break;
            }
            let mut s = s.clone();
            annotate(&mut s, trigger);
            let creating = tracker.begin_create(&s);
            match writer.create(&s) {
                Ok(created) => {
                    out.overtaken |= creating.finish(&created);
                    out.created += 1;
                }
                Err(e) if e.has_cause("NamespaceTerminating") => return Ok(()),
                Err(e) => return Err(what("failed to create", &s, svc, e)),
            }
        }
    }
    for s in &w.updates {
        let mut s = s.clone();
        annotate(&mut s, trigger);
        let in_flight = tracker.begin_update(&s);
        let updated = writer
            .update(&s)
            .map_err(|e| what("failed to update", &s, svc, e))?;
        out.overtaken |= in_flight.finish(&updated);
        out.updated += 1;
    }
    for s in &w.deletes {
        delete(svc, s, writer, tracker, out, "failed to delete")?;
    }
    Ok(())
}

/// Upstream `deleteEndpointSlice`: a slice already gone is no error. The
/// deletion is expected before it is sent (see
/// [`EndpointSliceTracker::deleting`]).
fn delete(
    svc: &Service,
    s: &EndpointSlice,
    writer: &dyn SliceWriter,
    tracker: &EndpointSliceTracker,
    out: &mut FinalizeOutcome,
    doing: &str,
) -> Result<(), kube::Error> {
    let prev = tracker.deleting(s);
    match writer.delete(&s.metadata.namespace, &s.metadata.name) {
        Ok(()) => {
            out.deleted += 1;
            Ok(())
        }
        Err(e) => {
            tracker.deletion_not_done(s, prev);
            if e.is_not_found() {
                Ok(())
            } else {
                Err(what(doing, s, svc, e))
            }
        }
    }
}

/// Write the plan: what was done, and the errors (none when all went
/// well), in upstream's order.
pub fn finalize(
    svc: &Service,
    plan: &SlicePlan,
    trigger: Option<Time>,
    writer: &dyn SliceWriter,
    tracker: &EndpointSliceTracker,
) -> (FinalizeOutcome, Vec<kube::Error>) {
    let mut out = FinalizeOutcome::default();
    let mut errors = Vec::new();
    for (_, w) in &plan.by_type {
        if let Err(e) = write_type(svc, w, trigger, writer, tracker, &mut out) {
            errors.push(e);
        }
    }
    for s in &plan.unsupported {
        // Upstream's `Reconcile` words these "error deleting", the
        // deletes of `finalize` "failed to delete".
        if let Err(e) = delete(svc, s, writer, tracker, &mut out, "error deleting") {
            errors.push(e);
        }
    }
    (out, errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use endpointd_kube::model::AddressType;

    #[test]
    fn a_write_conflict_stays_a_conflict_with_the_slice_named() {
        let slice: EndpointSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web-abc", "namespace": "ns"},
            "addressType": "IPv4", "endpoints": []}))
        .expect("slice");
        let mut svc = Service::default();
        svc.metadata.namespace = "ns".into();
        svc.metadata.name = "web".into();
        let conflict = kube::Error::Api(kube::Status {
            code: 409,
            reason: "Conflict".into(),
            message: "the object has been modified".into(),
            ..kube::Status::default()
        });
        let e = what("failed to update", &slice, &svc, conflict);
        assert!(e.is_conflict(), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("failed to update web-abc EndpointSlice for Service ns/web")
                && text.contains("the object has been modified"),
            "{text}"
        );
        let other = what("failed to create", &slice, &svc, kube::Error::Shutdown);
        assert!(!other.is_conflict());
        // A lost connection stays one: retried, and the outage noticed.
        let lost = kube::Error::Transport {
            server: "https://api:6443".into(),
            cause: "connection reset".into(),
            timeout: false,
            unreachable: true,
        };
        let e = what("failed to create", &slice, &svc, lost);
        assert!(e.is_retryable() && e.is_unreachable(), "{e}");
        assert!(matches!(e.root(), kube::Error::Transport { .. }));
    }

    /// A writer whose every request fails with a 500.
    struct Refusing;

    impl SliceWriter for Refusing {
        fn create(&self, _: &EndpointSlice) -> Result<EndpointSlice, kube::Error> {
            Err(server_error())
        }
        fn update(&self, _: &EndpointSlice) -> Result<EndpointSlice, kube::Error> {
            Err(server_error())
        }
        fn delete(&self, _: &str, _: &str) -> Result<(), kube::Error> {
            Err(server_error())
        }
    }

    fn server_error() -> kube::Error {
        kube::Error::Api(kube::Status {
            code: 500,
            message: "etcd down".into(),
            ..kube::Status::default()
        })
    }

    /// Creates its slices and tells the Service gone after `gone_after`
    /// of them.
    struct Vanishing {
        created: std::cell::Cell<usize>,
        gone_after: usize,
    }

    impl SliceWriter for Vanishing {
        fn create(&self, s: &EndpointSlice) -> Result<EndpointSlice, kube::Error> {
            let n = self.created.get() + 1;
            self.created.set(n);
            let mut s = s.clone();
            s.metadata.name = format!("web-{n}").as_str().into();
            s.metadata.uid = format!("u{n}").as_str().into();
            Ok(s)
        }
        fn update(&self, s: &EndpointSlice) -> Result<EndpointSlice, kube::Error> {
            Ok(s.clone())
        }
        fn delete(&self, _: &str, _: &str) -> Result<(), kube::Error> {
            Ok(())
        }
        fn service_gone(&self, _: &Service) -> bool {
            self.created.get() >= self.gone_after
        }
    }

    /// Issue 37 item 10: no create once the Service has left the cache.
    #[test]
    fn no_create_once_the_service_is_gone() {
        let slice: EndpointSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"generateName": "web-", "namespace": "ns",
                         "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4", "endpoints": []}))
        .expect("slice");
        let mut svc = Service::default();
        svc.metadata.namespace = "ns".into();
        svc.metadata.name = "web".into();
        let mut plan = SlicePlan::default();
        plan.by_type.push((
            AddressType::IPv4,
            SliceWrites {
                creates: vec![slice.clone(), slice.clone(), slice],
                ..SliceWrites::default()
            },
        ));
        for (gone_after, want) in [(0, 0), (1, 1), (9, 3)] {
            let w = Vanishing {
                created: std::cell::Cell::new(0),
                gone_after,
            };
            let tracker = EndpointSliceTracker::default();
            let (out, errors) = finalize(&svc, &plan, None, &w, &tracker);
            assert!(errors.is_empty(), "{errors:?}");
            assert_eq!(out.created, want, "gone after {gone_after}");
            assert_eq!(w.created.get(), want);
        }
    }

    /// Upstream's wording: "failed to delete" in `finalize`, "error
    /// deleting" for a slice of an address type no longer supported
    /// (`Reconcile`).
    #[test]
    fn delete_errors_are_worded_as_upstream() {
        let slice = |name: &str, t: &str| -> EndpointSlice {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "ns"},
                "addressType": t, "endpoints": []}))
            .expect("slice")
        };
        let mut svc = Service::default();
        svc.metadata.namespace = "ns".into();
        svc.metadata.name = "web".into();
        let tracker = EndpointSliceTracker::default();
        let mut plan = SlicePlan::default();
        plan.unsupported.push(slice("web-v6", "IPv6"));
        let (_, errors) = finalize(&svc, &plan, None, &Refusing, &tracker);
        let text: Vec<String> = errors.iter().map(upstream_text).collect();
        assert_eq!(text.len(), 1, "{text:?}");
        assert!(
            text[0].contains("error deleting web-v6 EndpointSlice for Service ns/web: etcd down"),
            "{text:?}"
        );
        let mut plan = SlicePlan::default();
        plan.by_type.push((
            AddressType::IPv4,
            SliceWrites {
                deletes: vec![slice("web-old", "IPv4")],
                ..SliceWrites::default()
            },
        ));
        let (_, errors) = finalize(&svc, &plan, None, &Refusing, &tracker);
        let text: Vec<String> = errors.iter().map(upstream_text).collect();
        assert!(
            text.len() == 1
                && text[0].contains("failed to delete web-old EndpointSlice for Service ns/web"),
            "{text:?}"
        );
    }
}
