//! Issue 37 item 9: annotation-only edits of a managed Endpoints counted as
//! another writer. A tool bumping one annotation of its own every 50 ms
//! made endpointd count 554 foreign writes in 30 s
//! (`endpointd_foreign_writes_total{resource="endpoints"}`) and tell the
//! operator to disable kube-controller-manager's controllers, though
//! endpointd rightly wrote nothing (the same edit on a slice counted
//! nothing). Only edits of what endpointd manages count: the subsets, the
//! labels, the trigger-time and over-capacity annotations.

use crate::harness::controller::*;
use serde_json::json;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(30);
const WARNING: &str = "another writer is changing the Endpoints and EndpointSlices";

/// Writes of Endpoints by endpointd (not the test's own edits).
fn ours(c: &Cluster) -> usize {
    c.writes("endpoints")
        .iter()
        .filter(|w| w.user_agent.starts_with("endpointd"))
        .count()
}

fn foreign(d: &Daemon) -> f64 {
    d.metric("endpointd_foreign_writes_total{resource=\"endpoints\"}")
        .unwrap_or(0.0)
}

#[test]
fn annotation_only_edits_of_a_managed_endpoints_are_not_foreign() {
    let pods: Vec<String> = (1..=2).map(|i| format!("a{i}")).collect();
    let c = Cluster::with_web("annotation-edits", &pods);
    // The slice controller off: only Endpoints writes to watch.
    let d = Daemon::start(&c, "ae", "[endpointslices]\nenabled = false\n");
    let written = || {
        c.get("endpoints", "default", "web")
            .is_some_and(|e| e["subsets"][0]["addresses"].as_array().map(Vec::len) == Some(2))
    };
    wait_until("the Endpoints written", LIMIT, written);
    d.wait_idle("endpoint", 1.0, LIMIT);
    let writes_before = ours(&c);
    let names = vec!["web".to_string()];

    // 3 s of a tool's heartbeat annotation, one edit every 50 ms.
    let start = Instant::now();
    let mut n = 0;
    while start.elapsed() < Duration::from_secs(3) {
        n += 1;
        c.modify("endpoints", "default", &names, |v| {
            v["metadata"]["annotations"]["example.com/heartbeat"] = json!(n.to_string());
        });
        std::thread::sleep(Duration::from_millis(50));
    }
    d.wait_idle("endpoint", 1.0, LIMIT);
    assert_eq!(
        ours(&c),
        writes_before,
        "an annotation of someone else's is left as it is"
    );
    assert_eq!(
        foreign(&d),
        0.0,
        "{n} annotation edits counted as another writer's"
    );
    assert!(
        !d.log_text().contains(WARNING),
        "warned of another writer:\n{}",
        d.log_text()
    );

    // An edit of what endpointd manages still counts and is corrected.
    c.modify("endpoints", "default", &names, |v| {
        v["subsets"] = json!([]);
    });
    wait_until("the emptied Endpoints corrected", LIMIT, written);
    wait_until("the edit counted", LIMIT, || foreign(&d) == 1.0);
    assert_eq!(d.stop(), Some(0));
}
