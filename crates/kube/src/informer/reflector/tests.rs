//! Table tests of the pure reflector state machine.

use std::time::Duration;

use super::*;
use crate::informer::fake::{obj, page, t0, Obj};

fn cfg() -> ReflectorConfig {
    ReflectorConfig {
        seed: Some(7),
        ..ReflectorConfig::default()
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A reflector that has listed one page at rv "10" and opened a watch.
fn watching(now: Instant) -> Reflector<Obj> {
    let mut r = Reflector::new(cfg());
    assert!(matches!(r.next_action(now), Action::List(_)));
    let out = r.step(
        Input::Listed(Ok(page(vec![obj("a", "x", "5")], "10", None))),
        now,
    );
    assert!(matches!(out, Output::Replace { .. }));
    assert!(matches!(r.next_action(now), Action::Watch(_)));
    r.step(Input::WatchOpened(Ok(())), now);
    assert!(r.is_watching());
    r
}

#[test]
fn paginated_consistent_list_then_watch_from_list_rv() {
    let now = t0();
    let mut r: Reflector<Obj> = Reflector::new(cfg());
    let want_first = ListRequest {
        limit: Some(500),
        continue_token: None,
        resource_version: None,
    };
    assert_eq!(r.next_action(now), Action::List(want_first));
    let out = r.step(
        Input::Listed(Ok(page(vec![obj("a", "1", "3")], "9", Some("c1")))),
        now,
    );
    assert_eq!(out, Output::None, "no store change before the last page");
    let want_next = ListRequest {
        limit: Some(500),
        continue_token: Some("c1".into()),
        resource_version: None,
    };
    assert_eq!(r.next_action(now), Action::List(want_next));
    let out = r.step(
        Input::Listed(Ok(page(vec![obj("a", "2", "4")], "9", None))),
        now,
    );
    assert_eq!(
        out,
        Output::Replace {
            items: vec![obj("a", "1", "3"), obj("a", "2", "4")],
            rv: "9".into()
        }
    );
    let Action::Watch(w) = r.next_action(now) else {
        panic!("expected a watch");
    };
    assert_eq!(w.resource_version, "9");
    assert!(w.allow_bookmarks);
    assert!(
        (300..600).contains(&w.timeout_seconds),
        "{}",
        w.timeout_seconds
    );
    assert_eq!(r.lists_started(), 1);
}

#[test]
fn events_and_bookmarks_advance_rv_and_clean_end_resumes() {
    let now = t0();
    let mut r = watching(now);
    let table: Vec<(SourceEvent<Obj>, &str)> = vec![
        (SourceEvent::Added(obj("a", "y", "11")), "11"),
        (SourceEvent::Modified(obj("a", "y", "12")), "12"),
        (
            SourceEvent::Bookmark {
                resource_version: "20".into(),
                initial_events_end: false,
            },
            "20",
        ),
        (SourceEvent::Deleted(obj("a", "y", "21")), "21"),
    ];
    for (ev, rv) in table {
        let out = r.step(Input::Event(Ok(ev.clone())), now);
        assert_eq!(out, Output::Apply(ev));
        assert!(matches!(r.state(), State::Watching { rv: cur, .. } if cur == rv));
    }
    // Ended by its timeoutSeconds (at most 600 s): no probe.
    let end = now + Duration::from_secs(600);
    r.step(Input::WatchEnded, end);
    let Action::Watch(w) = r.next_action(end) else {
        panic!("a watch ended by its timeout re-watches at once");
    };
    assert_eq!(w.resource_version, "21");
    assert_eq!(r.lists_started(), 1, "no relist");
}

#[test]
fn very_short_empty_watch_backs_off_then_rewatches() {
    let now = t0();
    let mut r = watching(now);
    r.step(Input::WatchEnded, now + ms(10));
    let Action::Wait(d) = r.next_action(now + ms(10)) else {
        panic!("expected a backoff");
    };
    assert!(d >= ms(800) && d < ms(1600), "{d:?}");
    let after = now + ms(10) + d;
    assert!(
        matches!(r.next_action(after), Action::Probe(_)),
        "an early end"
    );
    r.step(Input::Probed(Ok("10".into())), after);
    assert!(matches!(r.next_action(after), Action::Watch(w) if w.resource_version == "10"));
    // A second short watch doubles the delay.
    r.step(Input::WatchOpened(Ok(())), after);
    r.step(Input::WatchEnded, after);
    let Action::Wait(d2) = r.next_action(after) else {
        panic!("expected a backoff");
    };
    assert!(d2 >= ms(1600) && d2 < ms(3200), "{d2:?}");
}

#[test]
fn long_quiet_watch_end_is_healthy() {
    let now = t0();
    let mut r = watching(now);
    let end = now + Duration::from_secs(2);
    r.step(Input::WatchEnded, end);
    assert!(
        matches!(r.next_action(end), Action::Probe(_)),
        "no backoff; but it ended before its timeout: probe first"
    );
    r.step(Input::Probed(Ok("12".into())), end);
    assert!(matches!(r.next_action(end), Action::Watch(w) if w.resource_version == "10"));
}

/// How the machine reacts to each error kind, on open and mid-stream.
#[test]
fn error_classification_table() {
    enum Want {
        ListNow,
        BackoffThenList,
        BackoffThenWatch,
    }
    // (kind, on open?, seconds after the list, expected)
    let table = [
        (ErrorKind::Expired, true, 5, Want::ListNow),
        (ErrorKind::Expired, false, 5, Want::ListNow),
        (ErrorKind::Expired, true, 0, Want::BackoffThenList),
        (ErrorKind::Transient, true, 5, Want::BackoffThenWatch),
        (ErrorKind::Transient, false, 5, Want::BackoffThenWatch),
        (ErrorKind::Other, true, 5, Want::BackoffThenList),
        (ErrorKind::Other, false, 5, Want::BackoffThenList),
    ];
    for (i, (kind, on_open, after, want)) in table.into_iter().enumerate() {
        let start = t0();
        let mut r: Reflector<Obj> = Reflector::new(cfg());
        r.next_action(start);
        r.step(Input::Listed(Ok(page(vec![], "10", None))), start);
        let now = start + Duration::from_secs(after);
        r.next_action(now);
        let e = SourceError {
            kind,
            message: "x".into(),
            retry_after: None,
            too_large: false,
            history_behind: false,
            unreachable: false,
        };
        if on_open {
            r.step(Input::WatchOpened(Err(e)), now);
        } else {
            r.step(Input::WatchOpened(Ok(())), now);
            r.step(Input::Event(Err(e)), now);
        }
        assert!(!r.is_watching(), "case {i}");
        let act = r.next_action(now);
        let later = now + Duration::from_secs(2);
        match want {
            Want::ListNow => assert!(matches!(act, Action::List(_)), "case {i}: {act:?}"),
            Want::BackoffThenList => {
                assert!(matches!(act, Action::Wait(_)), "case {i}: {act:?}");
                assert!(matches!(r.next_action(later), Action::List(_)), "case {i}");
            }
            Want::BackoffThenWatch => {
                assert!(matches!(act, Action::Wait(_)), "case {i}: {act:?}");
                assert!(
                    matches!(r.next_action(later), Action::Probe(_)),
                    "case {i}: probe first"
                );
                r.step(Input::Probed(Ok("10".into())), later);
                assert!(
                    matches!(r.next_action(later), Action::Watch(ref w) if w.resource_version == "10"),
                    "case {i}"
                );
            }
        }
    }
}

#[test]
fn list_failure_backs_off_honours_retry_after_and_restarts_paging() {
    let now = t0();
    let mut r: Reflector<Obj> = Reflector::new(cfg());
    r.next_action(now);
    r.step(
        Input::Listed(Ok(page(vec![obj("a", "1", "1")], "5", Some("c")))),
        now,
    );
    r.next_action(now);
    let e = SourceError::transient("503").with_retry_after(Some(Duration::from_secs(7)));
    r.step(Input::Listed(Err(e)), now);
    assert_eq!(r.next_action(now), Action::Wait(Duration::from_secs(7)));
    let Action::List(req) = r.next_action(now + Duration::from_secs(7)) else {
        panic!("expected a relist");
    };
    assert_eq!(req.continue_token, None, "paging restarts from page 1");
    let out = r.step(
        Input::Listed(Ok(page(vec![obj("a", "2", "2")], "6", None))),
        now,
    );
    assert_eq!(
        out,
        Output::Replace {
            items: vec![obj("a", "2", "2")],
            rv: "6".into()
        },
        "items of the failed list are discarded"
    );
    assert_eq!(r.lists_started(), 2);
}

#[test]
fn huge_retry_after_does_not_overflow_the_backoff_deadline() {
    let now = t0();
    for ra in [
        Duration::MAX,
        Duration::from_secs(u64::MAX),
        MAX_BACKOFF_WAIT * 2,
    ] {
        let mut r: Reflector<Obj> = Reflector::new(cfg());
        r.next_action(now);
        let e = SourceError::transient("429").with_retry_after(Some(ra));
        r.step(Input::Listed(Err(e)), now);
        assert_eq!(r.next_action(now), Action::Wait(MAX_BACKOFF_WAIT), "{ra:?}");
        assert!(
            matches!(r.next_action(now + MAX_BACKOFF_WAIT), Action::List(_)),
            "{ra:?}"
        );
    }
}

#[test]
fn events_after_a_failed_watch_are_ignored() {
    let now = t0();
    let mut r = watching(now);
    r.step(Input::Event(Err(SourceError::other("bad json"))), now);
    let out = r.step(
        Input::Event(Ok(SourceEvent::Added(obj("a", "z", "99")))),
        now,
    );
    assert_eq!(out, Output::None);
}

fn watch_list_cfg() -> ReflectorConfig {
    ReflectorConfig {
        watch_list: true,
        ..cfg()
    }
}

fn bookmark(rv: &str, end: bool) -> SourceEvent<Obj> {
    SourceEvent::Bookmark {
        resource_version: rv.into(),
        initial_events_end: end,
    }
}

#[test]
fn watch_list_collects_initial_events_until_end_bookmark() {
    let now = t0();
    let mut r: Reflector<Obj> = Reflector::new(watch_list_cfg());
    let Action::Watch(w) = r.next_action(now) else {
        panic!("watch-list starts with a watch");
    };
    assert!(w.send_initial_events && w.allow_bookmarks);
    assert_eq!(w.resource_version, "");
    r.step(Input::WatchOpened(Ok(())), now);
    assert!(r.is_watching());
    // (event, expected output is a Replace)
    let table = [
        (SourceEvent::Added(obj("a", "1", "3")), false),
        (SourceEvent::Added(obj("a", "2", "4")), false),
        (SourceEvent::Deleted(obj("a", "2", "5")), false),
        (bookmark("5", false), false),
        (SourceEvent::Added(obj("a", "3", "6")), false),
        (bookmark("7", true), true),
    ];
    let mut replaced = None;
    for (i, (ev, want_replace)) in table.into_iter().enumerate() {
        let out = r.step(Input::Event(Ok(ev)), now);
        assert_eq!(
            matches!(out, Output::Replace { .. }),
            want_replace,
            "event {i}"
        );
        if want_replace {
            replaced = Some(out);
        }
    }
    assert_eq!(
        replaced,
        Some(Output::Replace {
            items: vec![obj("a", "1", "3"), obj("a", "3", "6")],
            rv: "7".into()
        })
    );
    // The same stream goes on as an ordinary watch.
    let ev = SourceEvent::Modified(obj("a", "1", "8"));
    assert_eq!(r.step(Input::Event(Ok(ev.clone())), now), Output::Apply(ev));
    let end = now + Duration::from_secs(600);
    r.step(Input::WatchEnded, end);
    let Action::Watch(w) = r.next_action(end) else {
        panic!("re-watch");
    };
    assert_eq!(w.resource_version, "8");
    assert!(!w.send_initial_events);
}

#[test]
fn watch_list_rejected_falls_back_to_list_for_good() {
    let now = t0();
    let mut r: Reflector<Obj> = Reflector::new(watch_list_cfg());
    r.next_action(now);
    let forbidden = SourceError::other("sendInitialEvents is forbidden");
    r.step(Input::WatchOpened(Err(forbidden)), now);
    let later = now + Duration::from_secs(2);
    assert!(matches!(r.next_action(later), Action::List(_)));
    r.step(Input::Listed(Ok(page(vec![], "9", None))), later);
    r.next_action(later);
    r.step(Input::WatchOpened(Ok(())), later);
    let much_later = later + Duration::from_secs(10);
    r.step(Input::Event(Err(SourceError::expired("gone"))), much_later);
    assert!(matches!(r.next_action(much_later), Action::List(_)));
}

#[test]
fn watch_list_ending_early_backs_off_and_retries_watch_list() {
    let now = t0();
    let mut r: Reflector<Obj> = Reflector::new(watch_list_cfg());
    r.next_action(now);
    r.step(Input::WatchOpened(Ok(())), now);
    r.step(
        Input::Event(Ok(SourceEvent::Added(obj("a", "1", "3")))),
        now,
    );
    let out = r.step(Input::WatchEnded, now);
    assert!(
        matches!(out, Output::Failed(_)),
        "a partial initial list never reaches the store: {out:?}"
    );
    assert!(matches!(r.next_action(now), Action::Wait(_)));
    let later = now + Duration::from_secs(2);
    assert!(matches!(r.next_action(later), Action::Watch(w) if w.send_initial_events));
    assert_eq!(r.lists_started(), 2);
}

fn bounded_cfg() -> ReflectorConfig {
    ReflectorConfig {
        max_list_items: 3,
        max_list_pages: 4,
        ..cfg()
    }
}

/// Pages as `(items, continue token)`.
type Pages = Vec<(usize, Option<&'static str>)>;

/// Feed pages `(items, continue)` and return the outputs.
fn feed(r: &mut Reflector<Obj>, now: Instant, pages: &[(usize, Option<&str>)]) -> Vec<Output<Obj>> {
    let mut outs = Vec::new();
    for (i, (n, cont)) in pages.iter().enumerate() {
        assert!(matches!(r.next_action(now), Action::List(_)), "page {i}");
        let items = (0..*n)
            .map(|k| obj("a", &format!("{i}-{k}"), "1"))
            .collect();
        outs.push(r.step(Input::Listed(Ok(page(items, "9", *cont))), now));
    }
    outs
}

#[test]
fn list_bounds_end_a_list_with_an_error_and_a_relist_after_backoff() {
    // (pages, reason the last page fails, or None when the list completes)
    let table: Vec<(Pages, Option<&str>)> = vec![
        (vec![(3, None)], None),
        (vec![(2, Some("c1")), (1, None)], None),
        (
            vec![(2, Some("c1")), (2, None)],
            Some("more than 3 objects"),
        ),
        (vec![(4, None)], Some("kubernetes.max_list_items")),
        (
            vec![(1, Some("c1")), (0, Some("c1"))],
            Some("continue token again"),
        ),
        (
            vec![(0, Some("a")), (0, Some("b")), (0, Some("a"))],
            Some("continue token again"),
        ),
        (
            vec![
                (0, Some("a")),
                (0, Some("b")),
                (0, Some("c")),
                (0, Some("d")),
            ],
            Some("more than 4 pages"),
        ),
        (
            vec![(0, Some("a")), (0, Some("b")), (0, Some("c")), (0, None)],
            None,
        ),
    ];
    for (pages, want) in table {
        let now = t0();
        let mut r: Reflector<Obj> = Reflector::new(bounded_cfg());
        let outs = feed(&mut r, now, &pages);
        let last = outs.last().expect("one output");
        match want {
            None => assert!(
                matches!(last, Output::Replace { .. }),
                "{pages:?}: {last:?}"
            ),
            Some(reason) => {
                let Output::Failed(e) = last else {
                    panic!("{pages:?}: want Failed, got {last:?}");
                };
                assert!(e.message.contains(reason), "{pages:?}: {e}");
                assert!(matches!(r.next_action(now), Action::Wait(_)), "backs off");
                let later = now + Duration::from_secs(60);
                match r.next_action(later) {
                    Action::List(req) => assert_eq!(req.continue_token, None, "a fresh list"),
                    other => panic!("{pages:?}: want a relist, got {other:?}"),
                }
            }
        }
    }
}

#[test]
fn watch_list_ignored_by_the_server_falls_back_to_list_for_good() {
    let now = t0();
    let cfg = ReflectorConfig {
        watch_list_bound: Duration::from_secs(30),
        ..watch_list_cfg()
    };
    let mut r: Reflector<Obj> = Reflector::new(cfg);
    assert!(matches!(r.next_action(now), Action::Watch(w) if w.send_initial_events));
    r.step(Input::WatchOpened(Ok(())), now);
    // An older server: synthetic ADDED events and plain bookmarks, never
    // the initial-events-end one.
    let soon = now + Duration::from_secs(10);
    assert_eq!(
        r.step(
            Input::Event(Ok(SourceEvent::Added(obj("a", "1", "3")))),
            soon
        ),
        Output::None
    );
    assert_eq!(
        r.step(Input::Event(Ok(bookmark("4", false))), soon),
        Output::None
    );
    let late = now + Duration::from_secs(31);
    let out = r.step(Input::Event(Ok(bookmark("5", false))), late);
    let Output::Failed(e) = out else {
        panic!("want Failed, got {out:?}");
    };
    assert!(e.message.contains("ignores sendInitialEvents"), "{e}");
    assert!(!r.uses_watch_list());
    let later = late + Duration::from_secs(60);
    assert!(matches!(r.next_action(later), Action::List(_)));

    // A silent server: the idle read timeout ends the stream past the bound.
    let mut r: Reflector<Obj> = Reflector::new(ReflectorConfig {
        watch_list_bound: Duration::from_secs(30),
        ..watch_list_cfg()
    });
    r.next_action(now);
    r.step(Input::WatchOpened(Ok(())), now);
    let out = r.step(Input::Event(Err(SourceError::transient("idle"))), late);
    assert!(matches!(out, Output::Failed(_)), "{out:?}");
    assert!(!r.uses_watch_list());
}

#[test]
fn watch_list_ending_early_is_reported() {
    let now = t0();
    let mut r: Reflector<Obj> = Reflector::new(watch_list_cfg());
    r.next_action(now);
    r.step(Input::WatchOpened(Ok(())), now);
    let out = r.step(Input::WatchEnded, now);
    let Output::Failed(e) = out else {
        panic!("want Failed, got {out:?}");
    };
    assert!(e.message.contains("ended before its initial events"), "{e}");
    assert!(
        r.uses_watch_list(),
        "an early end alone does not give up watch-list"
    );
}

#[test]
fn a_page_over_the_body_limits_is_listed_again_at_once_in_smaller_pages() {
    let now = t0();
    let mut r: Reflector<Obj> = Reflector::new(cfg());
    let big = || Input::Listed(Err(SourceError::other("too large").page_too_large()));
    let mut sizes = Vec::new();
    for _ in 0..7 {
        let Action::List(req) = r.next_action(now) else {
            panic!("lists again at once while the page can shrink");
        };
        sizes.push(req.limit.unwrap_or(0));
        r.step(big(), now);
    }
    assert_eq!(sizes, [500, 250, 125, 62, 31, 15, 10]);
    // At the smallest page a further failure backs off (a hostile endless
    // body cannot make it loop).
    assert!(matches!(r.next_action(now), Action::Wait(_)));
    // The smaller page stays for later lists.
    let later = now + Duration::from_secs(60);
    let Action::List(req) = r.next_action(later) else {
        panic!("a list after the backoff");
    };
    assert_eq!(req.limit, Some(10));
}

#[test]
fn watch_list_attempts_each_shorter_than_the_bound_still_fall_back() {
    // Each attempt ends after 90 s (an idle bound under the 120 s
    // watch-list bound) with synthetic ADDED events but no end bookmark.
    let now = t0();
    let mut r: Reflector<Obj> = Reflector::new(ReflectorConfig {
        watch_list_bound: Duration::from_secs(120),
        ..watch_list_cfg()
    });
    let mut t = now;
    let mut outs = Vec::new();
    for _ in 0..2 {
        loop {
            match r.next_action(t) {
                Action::Wait(d) => t += d.max(Duration::from_millis(1)),
                Action::Watch(w) => {
                    assert!(w.send_initial_events);
                    break;
                }
                Action::List(_) => panic!("fell back before the bound"),
                Action::Probe(_) => panic!("a watch-list is not resumed, nothing to probe"),
            }
        }
        r.step(Input::WatchOpened(Ok(())), t);
        r.step(Input::Event(Ok(SourceEvent::Added(obj("a", "1", "3")))), t);
        t += Duration::from_secs(90);
        outs.push(r.step(Input::WatchEnded, t));
    }
    let Some(Output::Failed(e)) = outs.last() else {
        panic!("want Failed, got {outs:?}");
    };
    assert!(e.message.contains("ignores sendInitialEvents"), "{e}");
    assert!(!r.uses_watch_list());

    // An attempt that cannot even be opened (server down) restarts the
    // count: a reachable server that ignores the parameter is needed.
    let mut r: Reflector<Obj> = Reflector::new(ReflectorConfig {
        watch_list_bound: Duration::from_secs(120),
        ..watch_list_cfg()
    });
    r.next_action(now);
    r.step(Input::WatchOpened(Ok(())), now);
    let t1 = now + Duration::from_secs(90);
    r.step(Input::WatchEnded, t1);
    let mut t = t1;
    while !matches!(r.next_action(t), Action::Watch(_)) {
        t += Duration::from_secs(1);
    }
    r.step(
        Input::WatchOpened(Err(SourceError::transient("connection refused"))),
        t,
    );
    while !matches!(r.next_action(t), Action::Watch(_)) {
        t += Duration::from_secs(1);
    }
    r.step(Input::WatchOpened(Ok(())), t);
    let out = r.step(Input::WatchEnded, t + Duration::from_secs(90));
    assert!(r.uses_watch_list(), "{out:?}");
}

#[test]
fn an_expired_continue_token_lists_everything_at_once_without_backoff() {
    // client-go's pager: page 2 of a paged LIST answers 410 (the token
    // outlived the server's compaction); the next LIST is unpaged, at once.
    let now = t0();
    let mut r: Reflector<Obj> = Reflector::new(cfg());
    assert!(matches!(r.next_action(now), Action::List(_)));
    r.step(
        Input::Listed(Ok(page(vec![obj("a", "1", "3")], "9", Some("c1")))),
        now,
    );
    assert!(matches!(r.next_action(now), Action::List(ref l) if l.continue_token.is_some()));
    r.step(
        Input::Listed(Err(SourceError::expired("continue expired"))),
        now,
    );
    let all = ListRequest {
        limit: None,
        continue_token: None,
        resource_version: None,
    };
    assert_eq!(r.next_action(now), Action::List(all.clone()));
    let out = r.step(
        Input::Listed(Ok(page(
            vec![obj("a", "1", "3"), obj("a", "2", "4")],
            "12",
            None,
        ))),
        now,
    );
    assert!(
        matches!(out, Output::Replace { ref items, .. } if items.len() == 2),
        "{out:?}"
    );
    // A fresh reflector: the unpaged LIST over the body limits is paged
    // again at once, at the same size.
    let mut r: Reflector<Obj> = Reflector::new(cfg());
    let Action::List(first) = r.next_action(now) else {
        panic!("a list");
    };
    assert_eq!(first.limit, Some(500));
    r.step(
        Input::Listed(Ok(page(vec![obj("a", "1", "3")], "9", Some("c1")))),
        now,
    );
    r.step(
        Input::Listed(Err(SourceError::expired("continue expired"))),
        now,
    );
    assert_eq!(r.next_action(now), Action::List(all));
    r.step(
        Input::Listed(Err(SourceError::other("too large").page_too_large())),
        now,
    );
    let Action::List(again) = r.next_action(now) else {
        panic!("paged again at once");
    };
    assert_eq!((again.limit, again.continue_token), (Some(500), None));
    // A second expiry right after an unpaged attempt failed otherwise
    // backs off as any list failure does.
    r.step(
        Input::Listed(Ok(page(vec![obj("a", "1", "3")], "9", Some("c2")))),
        now,
    );
    r.step(
        Input::Listed(Err(SourceError::expired("continue expired"))),
        now,
    );
    r.step(Input::Listed(Err(SourceError::transient("reset"))), now);
    assert!(matches!(r.next_action(now), Action::Wait(_)));
}

/// The probe that follows a watch which did not end by its own timeout:
/// a consistent LIST of one object; a server behind our resourceVersion
/// (an etcd restore, a fresh server) means listing again at once.
#[test]
fn a_probe_behind_our_resource_version_lists_again() {
    let now = t0();
    let mut r = watching(now);
    r.step(
        Input::Event(Ok(SourceEvent::Added(obj("a", "y", "40")))),
        now,
    );
    r.step(
        Input::Event(Err(SourceError::transient("connection reset"))),
        now,
    );
    let Action::Wait(d) = r.next_action(now) else {
        panic!("a transient error backs off");
    };
    let later = now + d;
    assert_eq!(
        r.next_action(later),
        Action::Probe(ListRequest {
            limit: Some(1),
            continue_token: None,
            resource_version: None,
        })
    );
    let out = r.step(Input::Probed(Ok("7".into())), later);
    assert_eq!(
        out,
        Output::WentBack {
            server: "7".into(),
            ours: "40".into()
        }
    );
    assert!(
        matches!(r.next_action(later), Action::List(l) if l.limit == Some(500) && l.continue_token.is_none())
    );
    assert_eq!(r.lists_started(), 2);
    // The list completes: no probe before its watch.
    r.step(Input::Listed(Ok(page(vec![], "8", None))), later);
    assert!(matches!(r.next_action(later), Action::Watch(w) if w.resource_version == "8"));
}

/// A reflector watching at rv "10" whose watch ended cleanly after 120 s
/// (the idle bound, before its timeout), asked to probe; and that time.
fn ended_at_the_idle_bound() -> (Reflector<Obj>, Instant) {
    let now = t0();
    let mut r = watching(now);
    let end = now + Duration::from_secs(120);
    r.step(Input::WatchEnded, end);
    assert!(
        matches!(r.next_action(end), Action::Probe(_)),
        "an early end"
    );
    (r, end)
}

#[test]
fn a_probe_at_or_past_our_resource_version_watches_from_ours() {
    // (server's resourceVersion, ours = "10"): never behind when either is
    // not a number (resourceVersions are opaque to clients).
    for server in ["10", "11", "999", "abc", ""] {
        let (mut r, later) = ended_at_the_idle_bound();
        assert_eq!(
            r.step(Input::Probed(Ok(server.into())), later),
            Output::None
        );
        assert!(
            matches!(r.next_action(later), Action::Watch(w) if w.resource_version == "10"),
            "{server}"
        );
        assert_eq!(r.lists_started(), 1, "{server}");
        // Verified: the next timeout end re-watches without a probe.
        r.step(Input::WatchOpened(Ok(())), later);
        let end = later + Duration::from_secs(600);
        r.step(Input::WatchEnded, end);
        assert!(matches!(r.next_action(end), Action::Watch(_)), "{server}");
    }
}

#[test]
fn a_failed_probe_backs_off_and_probes_again() {
    let now = t0();
    let mut r = watching(now);
    r.step(
        Input::WatchOpened(Err(SourceError::transient("connection refused"))),
        now,
    );
    let Action::Wait(d) = r.next_action(now) else {
        panic!("backoff");
    };
    let t1 = now + d;
    assert!(matches!(r.next_action(t1), Action::Probe(_)));
    r.step(Input::Probed(Err(SourceError::transient("refused"))), t1);
    let Action::Wait(d2) = r.next_action(t1) else {
        panic!("a failed probe backs off");
    };
    assert!(d2 > d, "the backoff grows: {d:?} then {d2:?}");
    assert!(
        matches!(r.next_action(t1 + d2), Action::Probe(_)),
        "still unverified"
    );
}

#[test]
fn a_probe_that_cannot_succeed_lists_again_after_a_backoff() {
    let (mut r, t1) = ended_at_the_idle_bound();
    r.step(Input::Probed(Err(SourceError::other("403 forbidden"))), t1);
    let Action::Wait(d) = r.next_action(t1) else {
        panic!("backoff");
    };
    assert!(
        matches!(r.next_action(t1 + d), Action::List(l) if l.limit == Some(500)),
        "not probing forever"
    );
}

#[test]
fn a_watch_list_stream_ended_by_its_timeout_is_not_probed() {
    // The timeout counts from the request, not from the end bookmark.
    let now = t0();
    let mut r: Reflector<Obj> = Reflector::new(ReflectorConfig {
        watch_timeout_min: Duration::from_secs(300),
        watch_timeout_max: Duration::from_secs(300),
        ..watch_list_cfg()
    });
    let Action::Watch(w) = r.next_action(now) else {
        panic!("watch-list starts with a watch");
    };
    assert_eq!(w.timeout_seconds, 300);
    r.step(Input::WatchOpened(Ok(())), now);
    let synced = now + Duration::from_secs(100);
    r.step(Input::Event(Ok(bookmark("7", true))), synced);
    let end = now + Duration::from_secs(300);
    r.step(Input::WatchEnded, end);
    assert!(
        matches!(r.next_action(end), Action::Watch(w) if w.resource_version == "7"),
        "ended by its timeout: no probe"
    );
}

#[test]
fn only_a_backoff_for_an_unreachable_server_ends_when_it_answers_again() {
    let unreachable = || SourceError::transient("connection refused").unreachable();
    // (the watch's failure, whether `retry_now` ends its backoff)
    let table: Vec<(&str, SourceError, bool)> = vec![
        ("unreachable", unreachable(), true),
        ("503", SourceError::transient("HTTP 503"), false),
        (
            "429 with Retry-After",
            SourceError::transient("HTTP 429").with_retry_after(Some(ms(5000))),
            false,
        ),
        ("403", SourceError::other("Forbidden"), false),
    ];
    for (what, e, ends) in table {
        let now = t0();
        let mut r = watching(now);
        r.step(Input::Event(Err(e)), now);
        let Action::Wait(d) = r.next_action(now) else {
            panic!("{what}: backing off");
        };
        assert!(d >= ms(800), "{what}: {d:?}");
        assert_eq!(r.retry_now(), ends, "{what}");
        let next = r.next_action(now);
        match ends {
            // The same request as after the full wait: the watch from rv 10
            // (or, first, the probe a broken watch calls for).
            true => assert!(
                matches!(&next, Action::Probe(_))
                    || matches!(&next, Action::Watch(w) if w.resource_version == "10"),
                "{what}: {next:?}"
            ),
            false => assert!(matches!(next, Action::Wait(_)), "{what}: {next:?}"),
        }
    }
    // A list that could not reach the server: listed again at once.
    let now = t0();
    let mut r: Reflector<Obj> = Reflector::new(cfg());
    assert!(matches!(r.next_action(now), Action::List(_)));
    r.step(Input::Listed(Err(unreachable())), now);
    assert!(matches!(r.next_action(now), Action::Wait(_)));
    assert!(r.retry_now());
    assert!(matches!(r.next_action(now), Action::List(l) if l.continue_token.is_none()));
    assert!(!r.retry_now(), "nothing to end while listing");
}
