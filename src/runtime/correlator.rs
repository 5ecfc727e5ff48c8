//! What to do with one more event (client-go's `EventCorrelator` habits,
//! `tools/record/events_cache.go`, on the events.k8s.io/v1 series model of
//! `tools/events`): a per-object spam filter, and deduplication of a
//! repeated event into its existing Event's `series`.
//!
//! - Spam filter: a token bucket per regarding object, burst 25, one token
//!   back every 5 minutes; an event without a token is dropped (counted).
//! - Deduplication: the same (object, type, reason, note, controller)
//!   observed again within 10 minutes of its last observation updates that
//!   Event's `series` (count, lastObservedTime) instead of creating one.
//! - Memory: at most [`MAX_TRACKED`] events and objects are remembered;
//!   the least recently seen are forgotten first.
//!
//! Pure: time comes in as arguments; never writes anything.

use super::events::EventSpec;
use endpointd_kube::model::{Event, EventSeries, MicroTime, ObjectReference};
use endpointd_kube::tokenbucket::TokenBucket;
use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

/// Spam filter: tokens saved per object (client-go `defaultSpamBurst`).
pub const SPAM_BURST: u32 = 25;
/// Spam filter: one token per 5 minutes (client-go `defaultSpamQPS`).
pub const SPAM_QPS: f64 = 1.0 / 300.0;
/// A repeat within this long of the last observation joins the series.
pub const SERIES_WINDOW: Duration = Duration::from_secs(600);
/// Events and objects remembered at most.
pub const MAX_TRACKED: usize = 4096;
/// Longest `note` the API accepts.
pub const MAX_NOTE: usize = 1024;

/// The identity of an event for deduplication.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EventKey {
    object: (String, String, String, String),
    type_: &'static str,
    reason: String,
    note: String,
}

fn object_key(r: &ObjectReference) -> (String, String, String, String) {
    (
        r.kind.to_string(),
        r.namespace.to_string(),
        r.name.to_string(),
        r.uid.to_string(),
    )
}

/// What the writer must do.
#[derive(Clone, Debug, PartialEq)]
pub enum EventAction {
    /// POST this new Event.
    Create(Box<Event>),
    /// PUT this Event (the stored one with its series advanced).
    Update(Box<Event>),
    /// Over the object's spam budget: drop.
    Throttled,
}

#[derive(Debug)]
struct Seen {
    event: Event,
    last: Instant,
}

/// The correlator's memory.
#[derive(Debug)]
pub struct Correlator {
    component: String,
    instance: String,
    buckets: HashMap<(String, String, String, String), (TokenBucket, Instant)>,
    seen: HashMap<EventKey, Seen>,
}

impl Correlator {
    /// For events reported by `component` (reportingController) from
    /// `instance` (reportingInstance).
    pub fn new(component: &str, instance: &str) -> Correlator {
        Correlator {
            component: component.to_string(),
            instance: instance.to_string(),
            buckets: HashMap::new(),
            seen: HashMap::new(),
        }
    }

    /// Decide about one event observed at `now` (monotonic) / `wall`.
    pub fn observe(
        &mut self,
        now: Instant,
        wall: SystemTime,
        regarding: &ObjectReference,
        spec: &EventSpec,
    ) -> EventAction {
        let obj = object_key(regarding);
        let (bucket, last) = self
            .buckets
            .entry(obj.clone())
            .or_insert_with(|| (TokenBucket::new(SPAM_QPS, SPAM_BURST), now));
        *last = now;
        if bucket.tokens_at(now) < 1.0 {
            return EventAction::Throttled;
        }
        bucket.reserve(now);
        let note = endpointd_kube::text::prefix_within(&spec.message, MAX_NOTE).to_string();
        let key = EventKey {
            object: obj,
            type_: spec.type_.as_str(),
            reason: spec.reason.clone(),
            note: note.clone(),
        };
        let at = MicroTime::from_system(wall);
        if let Some(s) = self.seen.get_mut(&key) {
            if now.saturating_duration_since(s.last) <= SERIES_WINDOW {
                s.last = now;
                let count = s.event.series.as_ref().map_or(1, |x| x.count) + 1;
                s.event.series = Some(EventSeries {
                    count,
                    last_observed_time: at,
                });
                return EventAction::Update(Box::new(s.event.clone()));
            }
        }
        let event = self.new_event(regarding, spec, note, at, wall);
        self.seen.insert(
            key,
            Seen {
                event: event.clone(),
                last: now,
            },
        );
        self.evict();
        EventAction::Create(Box::new(event))
    }

    fn new_event(
        &self,
        regarding: &ObjectReference,
        spec: &EventSpec,
        note: String,
        at: MicroTime,
        wall: SystemTime,
    ) -> Event {
        let nanos = wall
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let ns = match regarding.namespace.as_str() {
            "" => "default".to_string(),
            n => n.to_string(),
        };
        let mut e = Event {
            event_time: Some(at),
            reporting_controller: self.component.clone(),
            reporting_instance: self.instance.clone(),
            action: spec.reason.clone(),
            reason: spec.reason.clone(),
            regarding: regarding.clone(),
            note,
            type_: spec.type_.as_str().to_string(),
            ..Event::default()
        };
        e.metadata.name = compact_str::format_compact!("{}.{nanos:x}", regarding.name);
        e.metadata.namespace = ns.into();
        e
    }

    /// The API stored our Event as `stored` (its resourceVersion for the
    /// next series update).
    pub fn stored(&mut self, stored: &Event) {
        if let Some(s) = self
            .seen
            .values_mut()
            .find(|s| s.event.metadata.name == stored.metadata.name)
        {
            s.event = stored.clone();
        }
    }

    /// The Event `name` is gone from the API: the next repeat creates anew.
    pub fn forget(&mut self, name: &str) {
        self.seen.retain(|_, s| s.event.metadata.name != name);
    }

    fn evict(&mut self) {
        if self.seen.len() > MAX_TRACKED {
            if let Some(k) = self
                .seen
                .iter()
                .min_by_key(|(_, s)| s.last)
                .map(|(k, _)| k.clone())
            {
                self.seen.remove(&k);
            }
        }
        if self.buckets.len() > MAX_TRACKED {
            if let Some(k) = self
                .buckets
                .iter()
                .min_by_key(|(_, (_, t))| *t)
                .map(|(k, _)| k.clone())
            {
                self.buckets.remove(&k);
            }
        }
    }

    /// Events remembered (tests, memory).
    pub fn tracked(&self) -> usize {
        self.seen.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(name: &str) -> ObjectReference {
        ObjectReference {
            kind: "Service".into(),
            namespace: "ns".into(),
            name: name.into(),
            uid: "u".into(),
            ..Default::default()
        }
    }

    #[test]
    fn repeats_join_the_series_within_the_window() {
        let mut c = Correlator::new("endpoint-controller", "node-a");
        let t0 = Instant::now();
        let w0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let spec = EventSpec::warning("FailedToUpdateEndpoint", "boom");
        let EventAction::Create(e) = c.observe(t0, w0, &obj("a"), &spec) else {
            panic!("create")
        };
        assert_eq!(
            (e.reason.as_str(), e.type_.as_str(), e.note.as_str()),
            ("FailedToUpdateEndpoint", "Warning", "boom")
        );
        assert_eq!(e.metadata.namespace, "ns");
        assert!(e.metadata.name.starts_with("a."));
        assert_eq!(e.reporting_controller, "endpoint-controller");
        for n in 2..=3 {
            let EventAction::Update(u) =
                c.observe(t0 + Duration::from_secs(n), w0, &obj("a"), &spec)
            else {
                panic!("update")
            };
            assert_eq!(u.series.as_ref().map(|s| s.count), Some(n as i32));
            assert_eq!(u.metadata.name, e.metadata.name);
        }
        assert!(
            matches!(c.observe(t0, w0, &obj("b"), &spec), EventAction::Create(_)),
            "another object"
        );
        let other = EventSpec::warning("FailedToUpdateEndpoint", "other");
        assert!(
            matches!(c.observe(t0, w0, &obj("a"), &other), EventAction::Create(_)),
            "another note"
        );
        let late = t0 + Duration::from_secs(3) + SERIES_WINDOW + Duration::from_secs(1);
        assert!(
            matches!(
                c.observe(late, w0, &obj("a"), &spec),
                EventAction::Create(_)
            ),
            "after the window: a new Event"
        );
    }

    #[test]
    fn spam_filter_allows_25_then_one_per_five_minutes() {
        let mut c = Correlator::new("x", "y");
        let t0 = Instant::now();
        let w = SystemTime::UNIX_EPOCH;
        for i in 0..25 {
            let spec = EventSpec::normal("R", format!("note {i}"));
            assert!(
                !matches!(c.observe(t0, w, &obj("a"), &spec), EventAction::Throttled),
                "event {i}"
            );
        }
        let spec = EventSpec::normal("R", "one too many");
        assert_eq!(c.observe(t0, w, &obj("a"), &spec), EventAction::Throttled);
        assert!(
            !matches!(c.observe(t0, w, &obj("b"), &spec), EventAction::Throttled),
            "per object"
        );
        assert_eq!(
            c.observe(t0 + Duration::from_secs(299), w, &obj("a"), &spec),
            EventAction::Throttled
        );
        assert!(!matches!(
            c.observe(t0 + Duration::from_secs(300), w, &obj("a"), &spec),
            EventAction::Throttled
        ));
    }

    #[test]
    fn notes_are_capped_and_memory_is_bounded() {
        let mut c = Correlator::new("x", "y");
        let t0 = Instant::now();
        let long = "é".repeat(2000);
        let EventAction::Create(e) = c.observe(
            t0,
            SystemTime::UNIX_EPOCH,
            &obj("a"),
            &EventSpec::normal("R", long),
        ) else {
            panic!()
        };
        assert!(e.note.len() <= MAX_NOTE);
        for i in 0..(MAX_TRACKED + 10) {
            c.observe(
                t0 + Duration::from_millis(i as u64),
                SystemTime::UNIX_EPOCH,
                &obj(&format!("o{i}")),
                &EventSpec::normal("R", "n"),
            );
        }
        assert!(c.tracked() <= MAX_TRACKED);
    }
}
