//! PLACEHOLDER until the event recorder lands: the `Record` seam the
//! controllers emit events through, and a recording fake for tests.

use super::events::EventSpec;
use crate::model::ObjectReference;
use std::sync::Mutex;

/// Something that emits Events; never blocks, never fails.
pub trait Record: Send + Sync {
    /// Emit `spec` about `regarding`.
    fn record(&self, regarding: &ObjectReference, spec: &EventSpec);
}

/// Keeps every event, for tests.
#[derive(Debug, Default)]
pub struct RecordingFake {
    /// What was recorded, in order.
    pub events: Mutex<Vec<(ObjectReference, EventSpec)>>,
}

impl Record for RecordingFake {
    fn record(&self, regarding: &ObjectReference, spec: &EventSpec) {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((regarding.clone(), spec.clone()));
    }
}
