//! events.k8s.io/v1 `Event`, the only event API endpointd writes.
//! `eventTime` is a required MicroTime; `regarding` is a struct upstream and
//! always written; other strings are omitted when empty.
//!
//! Must never carry secrets or unbounded text (`note` is capped at 1 KiB by
//! the API server).

use super::pod::null_default;
use super::{impl_object, MicroTime, ObjectMeta, ObjectReference};
use serde::{Deserialize, Serialize};

/// `events/v1.Event`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Always `events.k8s.io/v1`.
    #[serde(default = "Event::api_version_default")]
    pub api_version: String,
    /// Always `Event`.
    #[serde(default = "Event::kind_default")]
    pub kind: String,
    /// Metadata.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ObjectMeta,
    /// `eventTime` (required on create; `null` when unset, as Go writes a
    /// zero MicroTime).
    #[serde(default)]
    pub event_time: Option<MicroTime>,
    /// `series`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<EventSeries>,
    /// `reportingController`, e.g. `endpointslice-controller.k8s.io`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reporting_controller: String,
    /// `reportingInstance`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reporting_instance: String,
    /// `action`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub action: String,
    /// `reason`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// `regarding`.
    #[serde(default, deserialize_with = "null_default")]
    pub regarding: ObjectReference,
    /// `related`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related: Option<ObjectReference>,
    /// `note`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// `type` (`Normal` or `Warning`).
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub type_: String,
}

impl Event {
    fn api_version_default() -> String {
        "events.k8s.io/v1".into()
    }
    fn kind_default() -> String {
        "Event".into()
    }
}

impl Default for Event {
    fn default() -> Event {
        Event {
            api_version: Event::api_version_default(),
            kind: Event::kind_default(),
            metadata: ObjectMeta::default(),
            event_time: None,
            series: None,
            reporting_controller: String::new(),
            reporting_instance: String::new(),
            action: String::new(),
            reason: String::new(),
            regarding: ObjectReference::default(),
            related: None,
            note: String::new(),
            type_: String::new(),
        }
    }
}

impl_object!(Event);

/// `events/v1.EventSeries`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventSeries {
    /// `count`.
    pub count: i32,
    /// `lastObservedTime`.
    pub last_observed_time: MicroTime,
}
