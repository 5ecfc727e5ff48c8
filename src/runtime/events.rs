//! Kubernetes Events about the objects the controllers manage: what an event
//! says ([`EventSpec`]) as plain data, so that pure reconcilers can return
//! the events they want emitted.

/// `type` of an Event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Informational.
    Normal,
    /// Something went wrong.
    Warning,
}

impl EventType {
    /// As the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// One event to emit on an object: type, reason (CamelCase, e.g.
/// `FailedToUpdateEndpoint`) and a human message.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EventSpec {
    /// Normal or Warning.
    pub type_: EventType,
    /// Machine-readable reason.
    pub reason: String,
    /// Human-readable note.
    pub message: String,
}

impl EventSpec {
    /// A Normal event.
    pub fn normal(reason: &str, message: impl Into<String>) -> EventSpec {
        EventSpec {
            type_: EventType::Normal,
            reason: reason.to_string(),
            message: message.into(),
        }
    }

    /// A Warning event.
    pub fn warning(reason: &str, message: impl Into<String>) -> EventSpec {
        EventSpec {
            type_: EventType::Warning,
            reason: reason.to_string(),
            message: message.into(),
        }
    }
}
