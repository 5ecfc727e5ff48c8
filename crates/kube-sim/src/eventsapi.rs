//! events.k8s.io/v1 is a second view of the core/v1 Event objects, as in
//! kube-apiserver (one storage, converted per request): objects are stored
//! in core form; this module converts bodies on the way in and out.
//!
//! Pure field renames (`regarding` ↔ `involvedObject`, `note` ↔ `message`,
//! `reportingController` ↔ `reportingComponent`, `deprecated*` ↔ the legacy
//! timestamps, count and source); never touches the store.

use super::resources::ResourceInfo;
use serde_json::Value;

/// (events.k8s.io/v1 name, core/v1 name) of every renamed field.
const RENAMES: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// Whether `info` is the events.k8s.io view.
pub fn is_events_api(info: &ResourceInfo) -> bool {
    info.group == "events.k8s.io" && info.resource == "events"
}

fn rename(v: &Value, from_new: bool) -> Value {
    let mut out = v.clone();
    let Some(m) = out.as_object_mut() else {
        return out;
    };
    for (new, old) in RENAMES {
        let (from, to) = if from_new { (new, old) } else { (old, new) };
        if let Some(x) = m.remove(*from) {
            m.insert((*to).to_string(), x);
        }
    }
    for f in ["kind", "apiVersion"] {
        m.remove(f);
    }
    out
}

/// An events.k8s.io/v1 body in core/v1 form (type meta dropped).
pub fn to_core(v: &Value) -> Value {
    rename(v, true)
}

/// A stored core/v1 Event in events.k8s.io/v1 form (type meta dropped).
pub fn from_core(v: &Value) -> Value {
    rename(v, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_and_renames() {
        let core = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod"}, "message": "m",
            "reportingComponent": "c", "source": {"component": "c"}, "firstTimestamp": "t1",
            "lastTimestamp": "t2", "count": 3, "reason": "R", "type": "Normal", "eventTime": null});
        let new = from_core(&core);
        assert_eq!(new["regarding"]["kind"], "Pod");
        assert_eq!(new["note"], "m");
        assert_eq!(new["reportingController"], "c");
        assert_eq!(new["deprecatedCount"], 3);
        assert!(new.get("involvedObject").is_none() && new.get("message").is_none());
        assert_eq!(to_core(&new), core);
    }
}
