//! Thread-level tests: an informer over the scripted fake source, with a
//! fake clock so that backoff is observable and deterministic.

use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{unbounded, Sender};

use super::fake::{eventually, obj, page, FakeSource, Obj, WatchScript};
use super::*;
use crate::metrics::Registry;
use endpointd_base::clock::{Clock, FakeClock};

type Tx = Sender<Result<SourceEvent<Obj>, SourceError>>;

struct Harness {
    src: Arc<FakeSource>,
    clock: Arc<FakeClock>,
    shutdown: Shutdown,
    rec: Arc<Recorder<Obj>>,
}

impl Harness {
    fn new() -> Harness {
        Harness {
            src: Arc::new(FakeSource::default()),
            clock: FakeClock::new(),
            shutdown: Shutdown::new(),
            rec: Arc::new(Recorder::default()),
        }
    }

    fn channel_watch(&self) -> Tx {
        let (tx, rx) = unbounded();
        self.src.push_watch(WatchScript::Channel(rx));
        tx
    }

    fn start(&self, metrics: Option<Arc<InformerMetrics>>) -> Informer<Obj> {
        let cfg = ReflectorConfig {
            seed: Some(1),
            ..ReflectorConfig::default()
        };
        let mut b = Informer::builder(self.src.clone() as Arc<dyn ListerWatcher<Obj>>)
            .config(cfg)
            .handler(self.rec.clone())
            .clock(self.clock.clone());
        if let Some(m) = metrics {
            b = b.metrics(m);
        }
        b.start(&self.shutdown).expect("spawn informer")
    }

    /// Start an informer sharing `history` with others.
    fn start_sharing(&self, history: &Arc<History>) -> Informer<Obj> {
        Informer::builder(self.src.clone() as Arc<dyn ListerWatcher<Obj>>)
            .config(ReflectorConfig {
                seed: Some(1),
                ..ReflectorConfig::default()
            })
            .handler(self.rec.clone())
            .clock(self.clock.clone())
            .history(Arc::clone(history))
            .start(&self.shutdown)
            .expect("spawn informer")
    }

    /// Stop: trigger shutdown, wake fake sleeps, end open watches.
    fn stop(&self, inf: Informer<Obj>, open: Vec<Tx>) {
        self.shutdown.trigger();
        drop(open);
        self.clock.step(Duration::from_secs(120));
        assert!(inf.join(), "informer thread panicked");
    }

    /// The `n`th watch was requested, every watch from rv 10 (where the
    /// one list left it): transient errors do not relist.
    fn resumed_at_10_without_relist(&self, n: usize) {
        eventually(&format!("watch {n}"), || self.src.watch_reqs().len() == n);
        assert!(self
            .src
            .watch_reqs()
            .iter()
            .all(|w| w.resource_version == "10"));
        assert_eq!(self.src.list_reqs().len(), 1, "no relist");
    }

    fn notes(&self, n: usize) -> Vec<Notification<Obj>> {
        eventually(&format!("{n} notifications"), || self.rec.len() >= n);
        self.rec.take()
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn initial_paginated_sync_then_ordered_watch_events() {
    let h = Harness::new();
    h.src.push_list(Ok(page(
        vec![obj("a", "1", "1"), obj("a", "2", "2")],
        "10",
        Some("c"),
    )));
    h.src
        .push_list(Ok(page(vec![obj("b", "3", "3")], "10", None)));
    let tx = h.channel_watch();
    let inf = h.start(None);
    assert!(wait_for_sync(&[&inf as &dyn Synced], &h.shutdown));
    let adds = h.rec.take();
    let keys: Vec<(String, bool)> = adds
        .iter()
        .map(|n| match n {
            Notification::Add { obj, initial } => (obj.key(), *initial),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    let want = [("a/1", true), ("a/2", true), ("b/3", true)];
    assert_eq!(keys, want.map(|(k, i)| (k.to_string(), i)));
    let reqs = h.src.list_reqs();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1].continue_token.as_deref(), Some("c"));
    assert!(reqs
        .iter()
        .all(|r| r.limit == Some(500) && r.resource_version.is_none()));

    for ev in [
        SourceEvent::Added(obj("a", "4", "11")),
        SourceEvent::Modified(obj("a", "4", "12")),
        SourceEvent::Deleted(obj("a", "1", "13")),
    ] {
        tx.send(Ok(ev)).expect("send");
    }
    let notes = h.notes(3);
    assert!(matches!(&notes[0], Notification::Add { obj, initial: false } if obj.rv == "11"));
    assert!(
        matches!(&notes[1], Notification::Update { old, new } if old.rv == "11" && new.rv == "12")
    );
    assert!(matches!(&notes[2], Notification::Delete(DeletedObject::Known(o)) if o.name == "1"));
    let store = inf.store();
    assert_eq!(store.keys(), ["a/2", "a/4", "b/3"]);
    assert_eq!(store.resource_version(), "13");
    assert_eq!(h.src.watch_reqs()[0].resource_version, "10");
    h.stop(inf, vec![tx]);
}

#[test]
fn dropped_watch_resumes_from_last_rv_without_relist() {
    let h = Harness::new();
    h.src
        .push_list(Ok(page(vec![obj("a", "1", "1")], "10", None)));
    h.src.push_watch(WatchScript::Items(vec![
        Ok(SourceEvent::Added(obj("a", "2", "11"))),
        Ok(SourceEvent::Bookmark {
            resource_version: "15".into(),
            initial_events_end: false,
        }),
    ]));
    let tx = h.channel_watch();
    let inf = h.start(None);
    eventually("second watch", || h.src.watch_reqs().len() == 2);
    tx.send(Ok(SourceEvent::Modified(obj("a", "2", "16"))))
        .expect("send");
    let notes = h.notes(3);
    assert_eq!(notes.len(), 3, "1 initial add, 1 add, 1 update: {notes:?}");
    let rvs: Vec<String> = h
        .src
        .watch_reqs()
        .into_iter()
        .map(|w| w.resource_version)
        .collect();
    assert_eq!(rvs, ["10", "15"], "resumes from the bookmark's RV");
    assert_eq!(h.src.list_reqs().len(), 1, "no relist");
    h.stop(inf, vec![tx]);
}

#[test]
fn expired_watch_relists_with_synthetic_events_and_tombstones() {
    let h = Harness::new();
    let reg = Registry::new();
    let metrics = InformerMetrics::register(&reg, h.clock.clone());
    let first = vec![obj("n", "a", "1"), obj("n", "b", "1"), obj("n", "c", "1")];
    h.src.push_list(Ok(page(first, "10", None)));
    let tx1 = h.channel_watch();
    h.src.push_list(Ok(page(
        vec![
            obj("n", "a", "11"),
            obj("n", "b", "12"),
            obj("n", "d", "13"),
        ],
        "20",
        None,
    )));
    let tx2 = h.channel_watch();
    let inf = h.start(Some(metrics));
    assert_eq!(h.notes(3).len(), 3);
    tx1.send(Ok(SourceEvent::Modified(obj("n", "a", "11"))))
        .expect("send");
    assert_eq!(h.notes(1).len(), 1);
    h.clock.step(Duration::from_secs(5)); // the list is no longer fresh
    tx1.send(Err(SourceError::expired("too old resource version: 10")))
        .expect("send");
    let notes = h.notes(3);
    assert!(
        matches!(&notes[0], Notification::Update { old, new } if old.rv == "1" && new.rv == "12")
    );
    assert!(matches!(&notes[1], Notification::Add { obj, initial: false } if obj.name == "d"));
    match &notes[2] {
        Notification::Delete(DeletedObject::FinalStateUnknown { key, last }) => {
            assert_eq!((key.as_str(), last.rv.as_str()), ("n/c", "1"));
        }
        other => panic!("expected a tombstone, got {other:?}"),
    }
    assert_eq!(inf.store().keys(), ["n/a", "n/b", "n/d"]);
    assert_eq!(h.src.list_reqs().len(), 2);
    eventually("watch from the relist RV", || h.src.watch_reqs().len() == 2);
    assert_eq!(h.src.watch_reqs()[1].resource_version, "20");
    let text = reg.render();
    assert!(
        text.contains(r#"endpointd_informer_lists_total{resource="objs",kind="relist"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"endpointd_informer_errors_total{resource="objs",kind="expired"} 1"#),
        "{text}"
    );
    h.stop(inf, vec![tx1, tx2]);
}

#[test]
fn server_errors_back_off_exponentially_and_rewatch_same_rv() {
    let h = Harness::new();
    h.src.push_list(Ok(page(vec![], "10", None)));
    for _ in 0..3 {
        h.src
            .push_watch(WatchScript::Fail(SourceError::transient("HTTP 503")));
    }
    let tx = h.channel_watch();
    let inf = h.start(None);
    // Each failure sleeps (fake time frozen) until stepped past its delay,
    // which is jittered into [d, 2d) for d = 800 ms, 1.6 s, 3.2 s. After a
    // step, wait_for_sleepers counts only sleepers not yet due, so it waits
    // for the next failure's sleep. (When it also counted the sleeper just
    // stepped past until that thread ran again, a busy machine failed this
    // with "no hot loop after failure 2": 28 of 30 runs at nice 19 next to
    // two busy processes on one core; 0 of 70 since.)
    for (n, step) in [(1usize, ms(1600)), (2, ms(3200)), (3, ms(6400))] {
        assert!(h.clock.wait_for_sleepers(1, Duration::from_secs(5)));
        // Frozen time: no further request however long we wait in real time.
        endpointd_base::clock::RealClock.sleep(ms(20));
        assert_eq!(h.src.watch_reqs().len(), n, "no hot loop after failure {n}");
        h.clock.step(step);
    }
    h.resumed_at_10_without_relist(4);
    h.stop(inf, vec![tx]);
}

#[test]
fn watches_that_end_at_once_do_not_hot_loop() {
    let h = Harness::new();
    h.src.push_list(Ok(page(vec![], "10", None)));
    for _ in 0..5 {
        h.src.push_watch(WatchScript::Items(Vec::new()));
    }
    let inf = h.start(None);
    assert!(h.clock.wait_for_sleepers(1, Duration::from_secs(5)));
    endpointd_base::clock::RealClock.sleep(ms(50));
    assert_eq!(
        h.src.requests(),
        2,
        "one list, one short watch, then backoff"
    );
    h.stop(inf, vec![]);
}

#[test]
fn wait_for_sync_returns_false_on_shutdown() {
    let h = Harness::new();
    // No list script: the first list fails and the informer backs off.
    let inf = h.start(None);
    let sd = h.shutdown.clone();
    let waiter = std::thread::spawn(move || {
        endpointd_base::clock::RealClock.sleep(ms(30));
        sd.trigger();
    });
    assert!(!wait_for_sync(&[&inf as &dyn Synced], &h.shutdown));
    assert!(!inf.has_synced());
    waiter.join().expect("trigger thread");
    h.stop(inf, vec![]);
}

/// An informer sharing `history`, listed at rv 100 (one object, at 90) and
/// watching on a channel.
fn watching_at_100(history: &Arc<History>) -> (Harness, Tx, Informer<Obj>) {
    let h = Harness::new();
    h.src
        .push_list(Ok(page(vec![obj("n", "x", "90")], "100", None)));
    let tx = h.channel_watch();
    let inf = h.start_sharing(history);
    eventually("watching", || h.src.watch_reqs().len() == 1);
    (h, tx, inf)
}

#[test]
fn a_history_gone_back_makes_every_informer_sharing_it_relist() {
    let history = Arc::new(History::default());
    let ((a, ta, ia), (b, tb, ib)) = (watching_at_100(&history), watching_at_100(&history));
    // A fresh server behind the same address: A is told its RV is too large.
    for h in [&a, &b] {
        h.src
            .push_list(Ok(page(vec![obj("n", "x", "7")], "8", None)));
    }
    let (ta2, tb2) = (a.channel_watch(), b.channel_watch());
    a.clock.step(Duration::from_secs(5));
    ta.send(Err(SourceError::expired(
        "Too large resource version: 100, current: 8",
    )
    .history_behind()))
        .expect("send");
    eventually("A relisted", || a.src.list_reqs().len() == 2);
    // Its list came back behind the resourceVersion it had: the history
    // went back, for everyone.
    eventually("the epoch moved", || history.epoch() == 1);
    // B's watch goes on (the server accepted its RV) until its next event:
    // then it lists again instead of following another history.
    tb.send(Ok(SourceEvent::Modified(obj("n", "x", "101"))))
        .expect("send");
    eventually("B relisted", || b.src.list_reqs().len() == 2);
    eventually("B watches from the new list", || {
        b.src.watch_reqs().len() == 2
    });
    assert_eq!(b.src.watch_reqs()[1].resource_version, "8");
    assert_eq!(history.epoch(), 1, "one finding, one epoch");
    a.stop(ia, vec![ta2]);
    b.stop(ib, vec![tb, tb2]);
}

/// kube-apiserver accepts a watch from a resourceVersion newer than its
/// own (its watch cache and etcd do not answer "too large"): after a
/// restore, a re-opened watch would be silent, and the caches would follow
/// the old history. The probe after a broken watch finds the server behind.
#[test]
fn a_probe_after_a_broken_watch_finds_a_restored_server_and_everyone_relists() {
    let history = Arc::new(History::default());
    let ((a, ta, ia), (b, tb, ib)) = (watching_at_100(&history), watching_at_100(&history));
    // The server goes away (A's stream breaks) and comes back restored.
    for h in [&a, &b] {
        h.src
            .push_list(Ok(page(vec![obj("n", "x", "7")], "8", None)));
    }
    a.src.push_probe(Ok("8".into()));
    let (ta2, tb2) = (a.channel_watch(), b.channel_watch());
    // B's stream ends at once without a word (a very short watch): it
    // backs off (at least 800 ms) before it would probe.
    drop(tb);
    assert!(b.clock.wait_for_sleepers(1, Duration::from_secs(5)));
    ta.send(Err(SourceError::transient("connection reset by peer")))
        .expect("send");
    assert!(a.clock.wait_for_sleepers(1, Duration::from_secs(5)));
    a.clock.step(Duration::from_secs(2));
    eventually("A probed and relisted", || {
        a.src.probes() == 1 && a.src.list_reqs().len() == 2
    });
    eventually("the epoch moved", || history.epoch() == 1);
    assert!(
        a.src.list_reqs()[1].resource_version.is_none(),
        "consistent"
    );
    eventually("A watches from the new list", || {
        a.src.watch_reqs().len() == 2
    });
    assert_eq!(a.src.watch_reqs()[1].resource_version, "8");
    // A's finding cuts B's backoff short (at its next 100 ms slice) and B
    // lists again without probing.
    b.clock.step(ms(100));
    eventually("B relisted", || b.src.list_reqs().len() == 2);
    eventually("B watches from the new list", || {
        b.src.watch_reqs().len() == 2
    });
    assert_eq!(b.src.watch_reqs()[1].resource_version, "8");
    assert_eq!(b.src.probes(), 0);
    assert_eq!(history.epoch(), 1, "one finding, one epoch");
    a.stop(ia, vec![ta2]);
    b.stop(ib, vec![tb2]);
}

/// A watch-list's stream goes on as an ordinary watch after its initial
/// events: a history found behind by another informer ends it at its next
/// event, as it ends any other watch.
#[test]
fn a_watch_list_stream_past_its_initial_events_follows_the_history_epoch() {
    let history = Arc::new(History::default());
    let h = Harness::new();
    let tx = h.channel_watch();
    let inf = Informer::builder(h.src.clone() as Arc<dyn ListerWatcher<Obj>>)
        .config(ReflectorConfig {
            seed: Some(1),
            watch_list: true,
            ..ReflectorConfig::default()
        })
        .handler(h.rec.clone())
        .clock(h.clock.clone())
        .history(Arc::clone(&history))
        .start(&h.shutdown)
        .expect("spawn informer");
    tx.send(Ok(SourceEvent::Added(obj("n", "x", "5"))))
        .expect("send");
    tx.send(Ok(SourceEvent::Bookmark {
        resource_version: "10".into(),
        initial_events_end: true,
    }))
    .expect("send");
    eventually("synced", || inf.has_synced());
    let tx2 = h.channel_watch();
    history.went_back();
    tx.send(Ok(SourceEvent::Modified(obj("n", "x", "11"))))
        .expect("send");
    eventually("a new watch-list", || h.src.watch_reqs().len() == 2);
    assert!(h.src.watch_reqs()[1].send_initial_events);
    h.stop(inf, vec![tx, tx2]);
}

#[test]
fn too_large_then_a_list_not_behind_moves_nothing() {
    // An HA server whose watch cache lags answers "too large resource
    // version" too, but a consistent list from it is not behind us: only
    // this informer lists again (as client-go's reflector does).
    let history = Arc::new(History::default());
    let h = Harness::new();
    h.src
        .push_list(Ok(page(vec![obj("n", "x", "90")], "100", None)));
    let t1 = h.channel_watch();
    let inf = h.start_sharing(&history);
    eventually("watching", || h.src.watch_reqs().len() == 1);
    h.src
        .push_list(Ok(page(vec![obj("n", "x", "105")], "120", None)));
    let t2 = h.channel_watch();
    h.clock.step(Duration::from_secs(5));
    t1.send(Err(SourceError::expired(
        "Too large resource version: 100, current: 99",
    )
    .history_behind()))
        .expect("send");
    eventually("relisted and watching again", || {
        h.src.list_reqs().len() == 2 && h.src.watch_reqs().len() == 2
    });
    assert_eq!(h.src.watch_reqs()[1].resource_version, "120");
    assert_eq!(history.epoch(), 0, "a lagging cache moves no shared epoch");
    h.stop(inf, vec![t1, t2]);
}

/// After an outage each informer waits out its own backoff (up to a minute
/// with client-go's 30 s cap and jitter 1.0); once any request of the
/// process gets through again, a backoff for a failure that did not reach
/// the server ends at the next slice. One the server asked for does not.
#[test]
fn a_backoff_for_an_unreachable_server_ends_when_another_request_gets_through() {
    let h = Harness::new();
    h.src.push_list(Ok(page(vec![], "10", None)));
    for _ in 0..2 {
        h.src.push_watch(WatchScript::Fail(
            SourceError::transient("connection refused").unreachable(),
        ));
    }
    h.src
        .push_watch(WatchScript::Fail(SourceError::transient("HTTP 503")));
    let tx = h.channel_watch();
    let inf = h.start(None);
    let backing_off = |n: usize, what: &str| {
        assert!(
            h.clock.wait_for_sleepers(1, Duration::from_secs(5)),
            "{what}"
        );
        // Frozen time: no further request however long we wait in real time.
        endpointd_base::clock::RealClock.sleep(ms(20));
        assert_eq!(h.src.watch_reqs().len(), n, "{what}");
    };
    backing_off(1, "the first watch could not reach the server");
    // Another request got through: the next 100 ms slice ends the wait
    // (the backoff itself is at least 800 ms).
    h.src.server_back();
    h.clock.step(ms(100));
    eventually("second watch", || h.src.watch_reqs().len() == 2);
    backing_off(2, "unreachable again: no second release without a return");
    h.clock.step(ms(100));
    // Asleep again (a request would have come first): the wait goes on.
    assert!(h.clock.wait_for_sleepers(1, Duration::from_secs(5)));
    assert_eq!(h.src.watch_reqs().len(), 2, "the backoff runs on");
    h.src.server_back();
    h.clock.step(ms(100));
    eventually("third watch", || h.src.watch_reqs().len() == 3);
    backing_off(3, "503: the server answered, and asked us to wait");
    h.src.server_back();
    h.clock.step(ms(100));
    assert!(h.clock.wait_for_sleepers(1, Duration::from_secs(5)));
    assert_eq!(h.src.watch_reqs().len(), 3, "a 503's backoff is kept");
    // Its full backoff (the ladder's third rung, 3.2 s jittered up to 2 ×).
    h.clock.step(ms(6400));
    h.resumed_at_10_without_relist(4);
    h.stop(inf, vec![tx]);
}
