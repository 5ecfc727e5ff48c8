//! Watch streams over a tiny in-test HTTP/1.1 server: events as they
//! arrive (even split across chunks), bookmarks and ERROR events, typed
//! errors at watch start, `shutdown_watches` waking a blocked read, and the
//! per-read idle timeout of a silent watch.

use crate::harness::client as kube_client_support;

use endpointd_base::clock::RealClock;
use endpointd_kube::kube::{Client, ClientConfig, Error, WatchEvent, WatchParams, PODS};
use endpointd_kube::model::{Object, Pod};
use kube_client_support::{client, ev, json, pod_json, Reply, Server};
use std::time::{Duration, Instant};

#[test]
fn watch_streams_events_as_they_arrive_and_ends_cleanly() {
    let srv = Server::start(|_, _| {
        let ms = Duration::from_millis;
        // The event split across two chunks must still decode as one.
        let split = ev("MODIFIED", "a", "6");
        let (x, y) = split.split_at(20);
        Reply::Stream(
            vec![
                (ms(0), ev("ADDED", "a", "5")),
                (ms(50), x.to_string()),
                (ms(50), y.to_string()),
                (ms(0), r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}"#.to_string() + "\n"),
                (ms(0), r#"{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}}"#.to_string() + "\n"),
            ],
            None,
        )
    });
    let c = client(&srv.url, RealClock::shared(), None);
    let p = WatchParams {
        resource_version: Some("4".into()),
        allow_bookmarks: true,
        timeout_seconds: Some(290),
        ..Default::default()
    };
    let evs: Vec<_> = c.watch::<Pod>(&PODS, None, &p).expect("watch").collect();
    assert_eq!(evs.len(), 4, "{evs:?}");
    assert!(matches!(&evs[0], Ok(WatchEvent::Added(p)) if p.resource_version() == "5"));
    assert!(matches!(&evs[1], Ok(WatchEvent::Modified(p)) if p.resource_version() == "6"));
    assert!(
        matches!(&evs[2], Ok(WatchEvent::Bookmark { resource_version, initial_events_end: false }) if resource_version == "9")
    );
    assert!(matches!(&evs[3], Ok(WatchEvent::Error(s)) if s.code == 410));
    assert_eq!(
        srv.requests()[0].target,
        "/api/v1/pods?watch=true&resourceVersion=4&timeoutSeconds=290&allowWatchBookmarks=true"
    );
}

#[test]
fn watch_start_failure_is_a_typed_error() {
    let srv = Server::start(|_, _| {
        json(
            410,
            r#"{"kind":"Status","code":410,"reason":"Expired","message":"too old resource version"}"#,
        )
    });
    let c = client(&srv.url, RealClock::shared(), None);
    let e = c
        .watch::<Pod>(&PODS, Some("ns"), &WatchParams::default())
        .expect_err("410");
    assert!(e.is_gone(), "{e}");
    assert_eq!(
        srv.requests().len(),
        1,
        "watches are never retried by the client"
    );
}

#[test]
fn shutdown_watches_wakes_a_blocked_read_but_writes_still_work() {
    let srv = Server::start(|r, _| match r.target.contains("watch=true") {
        true => Reply::Stream(
            vec![(Duration::ZERO, ev("ADDED", "a", "5"))],
            Some(Duration::from_secs(20)),
        ),
        false => json(200, &pod_json("p", "1")),
    });
    let c = client(&srv.url, RealClock::shared(), None);
    let mut w = c
        .watch::<Pod>(&PODS, None, &WatchParams::default())
        .expect("watch");
    assert!(matches!(w.next(), Some(Ok(WatchEvent::Added(_)))));
    let c2 = c.clone();
    let t0 = Instant::now();
    let h = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        c2.shutdown_watches();
    });
    let next = w.next();
    assert!(matches!(next, Some(Err(Error::Shutdown))), "{next:?}");
    assert!(t0.elapsed() < Duration::from_secs(5));
    h.join().expect("shutdown thread");
    assert!(matches!(
        c.watch::<Pod>(&PODS, None, &WatchParams::default()),
        Err(Error::Shutdown)
    ));
    let _: Pod = c
        .get(&PODS, Some("ns"), "p")
        .expect("ordinary requests still work");
}

#[test]
fn reset_connections_breaks_a_blocked_watch_and_new_watches_reconnect() {
    let srv = Server::start(|r, _| match r.target.contains("watch=true") {
        true => Reply::Stream(
            vec![(Duration::ZERO, ev("ADDED", "a", "5"))],
            Some(Duration::from_secs(20)),
        ),
        false => json(200, &pod_json("p", "1")),
    });
    let c = client(&srv.url, RealClock::shared(), None);
    let mut w = c
        .watch::<Pod>(&PODS, None, &WatchParams::default())
        .expect("watch");
    assert!(matches!(w.next(), Some(Ok(WatchEvent::Added(_)))));
    let c2 = c.clone();
    let t0 = Instant::now();
    let h = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        c2.reset_connections();
    });
    let next = w.next();
    assert!(matches!(next, Some(Err(_)) | None), "{next:?}");
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "the half-open watch was dropped"
    );
    h.join().expect("reset thread");
    let mut again = c
        .watch::<Pod>(&PODS, None, &WatchParams::default())
        .expect("a new watch on a new connection");
    assert!(matches!(again.next(), Some(Ok(WatchEvent::Added(_)))));
    let _: Pod = c
        .get(&PODS, Some("ns"), "p")
        .expect("ordinary requests work");
}

#[test]
fn silent_watch_hits_the_idle_read_timeout() {
    let srv = Server::start(|_, _| {
        Reply::Stream(
            vec![(Duration::ZERO, ev("ADDED", "a", "5"))],
            Some(Duration::from_secs(10)),
        )
    });
    let mut cfg = ClientConfig::new(&srv.url);
    cfg.watch_idle_margin = Duration::from_millis(300);
    let c = Client::new(cfg, RealClock::shared(), None).expect("client");
    let p = WatchParams {
        timeout_seconds: Some(1),
        ..Default::default()
    };
    let t0 = Instant::now();
    let evs: Vec<_> = c.watch::<Pod>(&PODS, None, &p).expect("watch").collect();
    let took = t0.elapsed();
    assert_eq!(evs.len(), 2, "{evs:?}");
    assert!(
        matches!(&evs[1], Err(Error::Transport { timeout: true, .. })),
        "{:?}",
        evs[1]
    );
    assert!(
        took >= Duration::from_millis(1200) && took < Duration::from_secs(5),
        "{took:?}"
    );
}
