//! Bad input in a watch stream (issue 14): malformed JSON, an unknown
//! event type and a line over the 16 MiB event limit, each served by
//! kube-sim to a running endpointd's watch while pods change. Each is
//! logged once, the watch is opened again, and everything converges.

use crate::harness::controller as controller_support;

use controller_support::churn::*;
use controller_support::*;
use kube_sim::requestinfo::Verb;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(30);

fn watches_and_lists(c: &Cluster) -> (u64, u64) {
    let r = c.sim.requests();
    let sum = |v: Verb| {
        r.counts
            .iter()
            .filter(|((verb, _), _)| verb == v.as_str())
            .map(|(_, n)| *n)
            .sum()
    };
    (sum(Verb::Watch), sum(Verb::List))
}

#[test]
fn malformed_unknown_and_oversized_watch_lines_are_logged_once_and_rewatched() {
    let c = Cluster::start("bad-watch");
    c.load(workload());
    let d = Daemon::start(&c, "a", "[leader_election]\nenabled = false\n");
    c.wait_converged(LIMIT);
    let churn = Churn::default();
    let mut rng = fastrand::Rng::with_seed(31);
    let oversized = {
        let mut l =
            br#"{"type":"ADDED","object":{"metadata":{"name":"big","resourceVersion":"1"},"pad":""#
                .to_vec();
        l.extend(std::iter::repeat_n(b'x', 16 * 1024 * 1024 + 1));
        l.extend(b"\"}}");
        l
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "malformed JSON",
            br#"{"type":"MODIFIED","object":{"metadata":"#.to_vec(),
        ),
        ("not JSON", b"<html>502 Bad Gateway</html>".to_vec()),
        (
            "unknown event type",
            br#"{"type":"RENAMED","object":{"metadata":{"name":"x","resourceVersion":"1"}}}"#
                .to_vec(),
        ),
        ("oversized line", oversized),
    ];
    for (what, line) in cases {
        let log_before = d.log_text().matches("watch failed").count();
        let (w0, l0) = watches_and_lists(&c);
        let t = Instant::now();
        c.sim.faults().bad_watch_lines(vec![line]);
        c.sim.faults().close_all_watches();
        wait_until("the bad line served", LIMIT, || {
            c.sim.faults().bad_watch_lines_left() == 0
        });
        for _ in 0..10 {
            churn_once(&c, &churn, &mut rng);
        }
        let conv = c.wait_converged(LIMIT);
        // The informer that got the bad line watches again.
        wait_until("every watch open again", LIMIT, || {
            watches_and_lists(&c).0 >= w0 + 7
        });
        let (w1, l1) = watches_and_lists(&c);
        let text = d.log_text();
        let logged: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("watch failed"))
            .skip(log_before)
            .collect();
        eprintln!(
            "bad watch line ({what}): {} watches and {} lists after it; converged {conv:?} ({:?} after injection); logged: {logged:?}",
            w1 - w0,
            l1 - l0,
            t.elapsed()
        );
        assert_eq!(logged.len(), 1, "logged once: {logged:?}");
        assert!(
            logged[0].len() < 1000,
            "the log line does not quote the input"
        );
    }
    assert_eq!(d.stop(), Some(0), "no crash");
}
