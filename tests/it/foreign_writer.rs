//! Another controller writing the objects endpointd manages (kube-controller-
//! manager with its endpoint and endpointslice controllers still enabled):
//! each foreign update is corrected and counted; a few are corrected
//! quietly, a steady stream is named in one warning. endpointd against
//! kube-sim over HTTP; the foreign writes go straight into kube-sim's store.

use crate::harness::controller as controller_support;

use controller_support::*;
use serde_json::{json, Value};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);
const WARNING: &str = "another writer is changing the Endpoints and EndpointSlices";

fn foreign(d: &Daemon, resource: &str) -> f64 {
    d.metric(&format!(
        "endpointd_foreign_writes_total{{resource=\"{resource}\"}}"
    ))
    .unwrap_or(0.0)
}

fn warnings(d: &Daemon) -> usize {
    d.log_text().lines().filter(|l| l.contains(WARNING)).count()
}

fn stray(v: Option<Value>) -> bool {
    v.is_some_and(|v| v["metadata"]["labels"].get("foreign").is_some())
}

#[test]
fn a_second_writer_is_corrected_counted_and_named_once() {
    let pods: Vec<String> = (1..=3).map(|i| format!("w{i}")).collect();
    let c = Cluster::with_web("foreign-writer", &pods);
    let d = Daemon::start(&c, "fw", "");
    let slice = || c.web_slice(3);
    wait_until("the slice and the Endpoints written", LIMIT, || {
        slice().is_some() && c.get("endpoints", "default", "web").is_some()
    });
    let name = slice()
        .and_then(|s| s["metadata"]["name"].as_str().map(String::from))
        .expect("slice name");
    // Our own writes and their echoes are not foreign: readiness flips.
    for ready in [false, true, false, true] {
        c.set_ready("default", &pods[..1], ready);
        d.wait_idle("endpoint_slice", 1.0, LIMIT);
    }
    d.wait_idle("endpoint", 1.0, LIMIT);
    assert_eq!(foreign(&d, "endpointslices"), 0.0);
    assert_eq!(foreign(&d, "endpoints"), 0.0);

    // A foreign writer labels both objects, one edit at a time (as the
    // API server does, a slice's label change bumps its generation); each
    // is corrected before the next.
    let edit = |n: usize| {
        c.modify(
            "endpointslices",
            "default",
            std::slice::from_ref(&name),
            |v| {
                v["metadata"]["labels"]["foreign"] = json!(n.to_string());
                let g = v["metadata"]["generation"].as_i64().unwrap_or(1);
                v["metadata"]["generation"] = json!(g + 1);
            },
        );
        c.modify("endpoints", "default", &["web".to_string()], |v| {
            v["metadata"]["labels"]["foreign"] = json!(n.to_string())
        });
        wait_until("both edits corrected", LIMIT, || {
            !stray(c.get("endpointslices", "default", &name))
                && !stray(c.get("endpoints", "default", "web"))
        });
    };
    for n in 0..2 {
        edit(n);
    }
    wait_until("two of each counted", LIMIT, || {
        foreign(&d, "endpointslices") == 2.0 && foreign(&d, "endpoints") == 2.0
    });
    assert_eq!(warnings(&d), 0, "four edits: corrected quietly");
    for n in 2..6 {
        edit(n);
    }
    wait_until("six of each counted", LIMIT, || {
        foreign(&d, "endpointslices") == 6.0 && foreign(&d, "endpoints") == 6.0
    });
    let log = d.log_text();
    assert_eq!(warnings(&d), 1, "one warning for the stream:\n{log}");
    assert!(
        log.contains("--controllers=*,-endpoint,-endpointslice"),
        "it says what to do:\n{log}"
    );
    assert_eq!(d.stop(), Some(0));
}
