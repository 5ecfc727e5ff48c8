//! Issue 37 item 8: an unbounded identity. `check-config` accepted a 10 MB
//! `leader_election.identity`; at 300 characters the "became leader" Event
//! was refused (reportingInstance is limited to 128), at 70,000 every
//! request failed (the identity is in the User-Agent). The identity is now
//! at most 128 bytes, refused at load with the limit named, and an Event's
//! reportingInstance never exceeds the API's limit.

use crate::harness::controller::*;
use endpointd::config::Config;
use serde_json::json;
use std::time::{Duration, Instant};

fn identity_cfg(id: &str) -> String {
    format!("[leader_election]\nidentity = {}\n", toml_string(id))
}

/// `s` as a TOML basic string.
fn toml_string(s: &str) -> String {
    json!(s).to_string()
}

#[test]
fn the_identity_is_validated_at_load() {
    let huge = "n".repeat(1_000_000);
    // (identity, None: accepted | Some(fragment of the error))
    let table: Vec<(String, Option<&str>)> = vec![
        ("node-a_0f4c".into(), None),
        ("n".repeat(128), None),
        ("é".repeat(64), None), // 128 bytes
        (
            "n".repeat(129),
            Some("must be at most 128 bytes, is 129 (it is the Events' reportingInstance"),
        ),
        ("n".repeat(300), Some("must be at most 128 bytes, is 300")),
        ("é".repeat(65), Some("must be at most 128 bytes, is 130")),
        (
            "n".repeat(70_000),
            Some("must be at most 128 bytes, is 70000"),
        ),
        (huge.clone(), Some("must be at most 128 bytes, is 1000000")),
        (
            "node\ta".into(),
            Some("must not contain control characters"),
        ),
        ("  ".into(), Some("must not be empty")),
    ];
    for (id, want) in table {
        let shown = id.chars().take(20).collect::<String>();
        let start = Instant::now();
        let got = Config::parse("config.toml", &identity_cfg(&id));
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{shown}…: validated in {:?}",
            start.elapsed()
        );
        match (got, want) {
            (Ok(c), None) => assert_eq!(c.leader_election.identity, id),
            (Err(e), Some(w)) => {
                let msg = e.to_string();
                assert!(msg.contains(w), "{shown}… ({} bytes): {msg}", id.len());
                assert!(msg.contains("leader_election.identity"), "{msg}");
                assert!(
                    msg.len() < 1000,
                    "{shown}…: the error quotes no huge value ({} bytes)",
                    msg.len()
                );
            }
            (Ok(_), Some(w)) => panic!("{shown}… ({} bytes) accepted; want {w:?}", id.len()),
            (Err(e), None) => panic!("{shown}… refused: {e}"),
        }
    }
}

#[test]
fn a_leader_with_the_longest_identity_gets_its_event_accepted() {
    // 128 bytes, not ASCII: the limit is in bytes, as kube-apiserver's.
    let id = format!("{}{}", "é".repeat(60), "node-a_1");
    assert_eq!(id.len(), 128);
    let c = Cluster::start("identity-128");
    c.load(vec![node("node-a", "z1")]);
    let d = Daemon::start(
        &c,
        "a",
        &format!(
            "[leader_election]\nlease_duration = \"3s\"\nrenew_deadline = \"2s\"\nretry_period = \"500ms\"\nidentity = {}\n",
            toml_string(&id)
        ),
    );
    let limit = Duration::from_secs(30);
    wait_until("the leader's Event", limit, || {
        c.all("events").iter().any(|e| {
            e["reason"] == "LeaderElection" && e["message"] == format!("{id} became leader")
        })
    });
    let ev = c
        .all("events")
        .into_iter()
        .find(|e| e["reason"] == "LeaderElection")
        .expect("event");
    // Stored in the core form: reportingInstance → reportingInstance.
    assert_eq!(ev["reportingInstance"], json!(id), "{ev}");
    let lease = c.get("leases", "kube-system", "endpointd").expect("lease");
    assert_eq!(lease["spec"]["holderIdentity"], json!(id));
    assert!(
        !d.log_text().contains("reportingInstance"),
        "no Event refused: {}",
        d.log_text()
    );
}
