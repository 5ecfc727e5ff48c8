//! The work queue against upstream's `queue_test.go`,
//! `delaying_queue_test.go` and `rate_limiting_queue_test.go`, plus the
//! shutdown and metrics contracts. Delays run on a `FakeClock`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use endpointd::clock::{Clock, FakeClock, RealClock};
use endpointd::metrics::Registry;
use endpointd::workqueue::{
    DelayingQueue, ItemExponentialFailureRateLimiter, Queue, QueueConfig, RateLimitingQueue,
    WorkqueueMetrics,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Poll `cond` every real millisecond for at most 10 s (upstream's
/// `wait.Poll(1ms, 10s)`).
fn eventually(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..10_000 {
        if cond() {
            return;
        }
        RealClock.sleep(ms(1));
    }
    panic!("timed out waiting for {what}");
}

/// Check for `real_ms` real milliseconds that `cond` stays true.
fn stays(what: &str, real_ms: u64, cond: impl Fn() -> bool) {
    for _ in 0..real_ms {
        assert!(cond(), "{what}");
        RealClock.sleep(ms(1));
    }
}

fn fake_config(name: &str) -> (Arc<FakeClock>, QueueConfig) {
    let clock = FakeClock::new();
    let cfg = QueueConfig::new(name).clock(clock.clone()).max_wait(ms(1));
    (clock, cfg)
}

// ---- basic queue: a script of single-threaded operations ----

enum Op {
    Add(&'static str),
    /// `try_get` must return this key (`None` = nothing queued).
    Get(Option<&'static str>),
    Done(&'static str),
    Len(usize),
    ShutDown,
}
use Op::*;

#[test]
fn queue_scripts() {
    let cases: &[(&str, &[Op])] = &[
        // Upstream TestLen.
        (
            "dedup while queued",
            &[Add("foo"), Len(1), Add("bar"), Len(2), Add("foo"), Len(2)],
        ),
        // Upstream TestReinsert.
        (
            "re-add while processing comes back at done",
            &[
                Add("foo"),
                Get(Some("foo")),
                Add("foo"),
                Len(0),
                Get(None),
                Done("foo"),
                Len(1),
                Get(Some("foo")),
                Done("foo"),
                Len(0),
            ],
        ),
        (
            "FIFO order, one copy per key",
            &[
                Add("a"),
                Add("b"),
                Add("a"),
                Add("c"),
                Get(Some("a")),
                Get(Some("b")),
                Get(Some("c")),
                Get(None),
            ],
        ),
        (
            "many adds while processing give one more round",
            &[
                Add("a"),
                Get(Some("a")),
                Add("a"),
                Add("a"),
                Add("a"),
                Done("a"),
                Get(Some("a")),
                Done("a"),
                Get(None),
            ],
        ),
        (
            "done for a key not being processed changes nothing",
            &[Add("a"), Done("a"), Len(1), Get(Some("a")), Get(None)],
        ),
        (
            "adds after shutdown are ignored, queued keys still come out",
            &[
                Add("a"),
                ShutDown,
                Add("b"),
                Len(1),
                Get(Some("a")),
                Get(None),
            ],
        ),
        // Upstream TestQueueDrainageUsingShutDownWithDrainWithDirtyItem.
        (
            "a dirty key is re-queued at done even after shutdown",
            &[
                Add("foo"),
                Get(Some("foo")),
                Add("foo"),
                ShutDown,
                Get(None),
                Done("foo"),
                Get(Some("foo")),
                Done("foo"),
                Get(None),
            ],
        ),
    ];
    for (name, ops) in cases {
        let q: Queue<String> = Queue::new(&QueueConfig::new(""));
        for (i, op) in ops.iter().enumerate() {
            match op {
                Add(k) => q.add(k.to_string()),
                Get(want) => assert_eq!(q.try_get(), want.map(String::from), "{name}: op {i}"),
                Done(k) => q.done(&k.to_string()),
                Len(n) => assert_eq!(q.len(), *n, "{name}: op {i}"),
                ShutDown => q.shut_down(),
            }
        }
    }
}

// ---- basic queue: threads ----

/// Upstream TestBasic and TestAddWhileProcessing, for both shutdowns.
#[test]
fn producers_and_consumers_finish_under_both_shutdowns() {
    for drain in [false, true] {
        for readd in [false, true] {
            let q: Queue<u32> = Queue::new(&QueueConfig::new(""));
            let producers: Vec<_> = (0..50)
                .map(|i| {
                    let q = q.clone();
                    thread::spawn(move || {
                        for _ in 0..if readd { 1 } else { 20 } {
                            q.add(i);
                        }
                    })
                })
                .collect();
            let processed = Arc::new(AtomicUsize::new(0));
            let consumers: Vec<_> = (0..10)
                .map(|_| {
                    let (q, processed) = (q.clone(), processed.clone());
                    thread::spawn(move || {
                        let mut seen = std::collections::HashMap::new();
                        while let Some(k) = q.get() {
                            assert_ne!(k, u32::MAX, "got a key added after shutdown");
                            processed.fetch_add(1, Ordering::SeqCst);
                            let n = seen.entry(k).or_insert(0);
                            *n += 1;
                            if readd && *n < 2 {
                                q.add(k);
                            }
                            q.done(&k);
                        }
                    })
                })
                .collect();
            for p in producers {
                p.join().expect("producer");
            }
            if drain {
                assert!(q.shut_down_with_drain(Duration::from_secs(10)));
            } else {
                q.shut_down();
            }
            q.add(u32::MAX);
            for c in consumers {
                c.join().expect("consumer");
            }
            assert_eq!(q.len(), 0);
            assert!(processed.load(Ordering::SeqCst) >= 50);
        }
    }
}

#[test]
fn shut_down_wakes_every_blocked_get() {
    let q: Queue<u8> = Queue::new(&QueueConfig::new(""));
    let waiters: Vec<_> = (0..4)
        .map(|_| {
            let q = q.clone();
            thread::spawn(move || q.get())
        })
        .collect();
    RealClock.sleep(ms(20));
    q.shut_down();
    for w in waiters {
        assert_eq!(w.join().expect("waiter"), None);
    }
    assert!(q.shutting_down());
}

/// Upstream TestQueueDrainageUsingShutDownWithDrain.
#[test]
fn drain_waits_for_keys_in_flight() {
    let q: Queue<&str> = Queue::new(&QueueConfig::new(""));
    q.add("foo");
    q.add("bar");
    let first = q.get();
    let second = q.get();
    let q2 = q.clone();
    let drainer = thread::spawn(move || q2.shut_down_with_drain(Duration::from_secs(10)));
    eventually("shutdown started", || q.shutting_down());
    assert_eq!(q.get(), None);
    stays("drain still waiting", 20, || !drainer.is_finished());
    q.done(&first.expect("first"));
    q.done(&second.expect("second"));
    assert!(drainer.join().expect("drainer"));
}

/// Upstream TestForceQueueShutdownUsingShutDown, and the drain deadline.
#[test]
fn drain_ends_on_shut_down_or_deadline() {
    let q: Queue<&str> = Queue::new(&QueueConfig::new(""));
    q.add("foo");
    let _held = q.get();
    let q2 = q.clone();
    let drainer = thread::spawn(move || q2.shut_down_with_drain(Duration::from_secs(3600)));
    eventually("shutdown started", || q.shutting_down());
    q.shut_down();
    assert!(!drainer.join().expect("drainer"), "forced, not drained");

    let (clock, cfg) = fake_config("");
    let q: Queue<&str> = Queue::new(&cfg);
    q.add("foo");
    let _held = q.get();
    let q2 = q.clone();
    let drainer = thread::spawn(move || q2.shut_down_with_drain(Duration::from_secs(30)));
    eventually("shutdown started", || q.shutting_down());
    clock.step(Duration::from_secs(29));
    stays("drain waits until its deadline", 20, || {
        !drainer.is_finished()
    });
    clock.step(Duration::from_secs(1));
    assert!(!drainer.join().expect("drainer"), "timed out, not drained");
}

// ---- delaying queue (upstream delaying_queue_test.go) ----

/// Upstream TestSimpleQueue.
#[test]
fn delayed_key_arrives_after_its_delay() {
    let (clock, cfg) = fake_config("");
    let q: DelayingQueue<&str> = DelayingQueue::new(&cfg).expect("queue");
    q.add_after("foo", ms(50));
    eventually("timer took the key", || q.waiting_len() == 1);
    stays("not added yet", 10, || q.is_empty());
    clock.step(ms(60));
    eventually("added", || q.len() == 1);
    assert_eq!(q.waiting_len(), 0);
    let k = q.get().expect("key");
    q.done(&k);
    clock.step(Duration::from_secs(10));
    stays("nothing more", 30, || q.is_empty());
    q.shut_down();
}

/// Upstream TestDeduping.
#[test]
fn a_waiting_key_keeps_its_earlier_time() {
    let (clock, cfg) = fake_config("");
    let q: DelayingQueue<&str> = DelayingQueue::new(&cfg).expect("queue");
    q.add_after("foo", ms(50));
    q.add_after("foo", ms(70));
    eventually("merged", || q.waiting_len() == 1);
    clock.step(ms(60));
    eventually("added", || q.len() == 1);
    let k = q.get().expect("key");
    q.done(&k);
    clock.step(ms(20));
    stays("the 70 ms wait was merged", 20, || q.is_empty());

    q.add_after("foo", ms(50));
    q.add_after("foo", ms(30));
    eventually("merged", || q.waiting_len() == 1);
    clock.step(ms(40));
    eventually("added", || q.len() == 1);
    let k = q.get().expect("key");
    q.done(&k);
    clock.step(ms(20));
    stays("the 50 ms wait was merged", 20, || q.is_empty());
    q.shut_down();
}

/// Upstream TestAddTwoFireEarly and TestCopyShifting.
#[test]
fn delayed_keys_fire_in_time_order() {
    let (clock, cfg) = fake_config("");
    let q: DelayingQueue<&str> = DelayingQueue::new(&cfg).expect("queue");
    q.add_after("foo", Duration::from_secs(1));
    q.add_after("bar", ms(50));
    eventually("both waiting", || q.waiting_len() == 2);
    clock.step(ms(60));
    eventually("bar added", || q.len() == 1);
    assert_eq!(q.get(), Some("bar"));
    q.add_after("baz", Duration::from_secs(2));
    clock.step(Duration::from_secs(1));
    eventually("foo added", || q.len() == 1);
    assert_eq!(q.get(), Some("foo"));
    clock.step(Duration::from_secs(2));
    eventually("baz added", || q.len() == 1);
    assert_eq!(q.get(), Some("baz"));

    q.add_after("c1", Duration::from_secs(1));
    q.add_after("c2", ms(500));
    q.add_after("c3", ms(250));
    eventually("three waiting", || q.waiting_len() == 3);
    clock.step(Duration::from_secs(2));
    eventually("three added", || q.len() == 3);
    assert_eq!(
        [q.get(), q.get(), q.get()],
        [Some("c3"), Some("c2"), Some("c1")]
    );
    q.shut_down();
}

#[test]
fn an_earlier_add_wakes_the_timer_on_the_real_clock() {
    let q: DelayingQueue<&str> = DelayingQueue::new(&QueueConfig::new("")).expect("queue");
    q.add_after("late", Duration::from_secs(3600));
    eventually("late waiting", || q.waiting_len() == 1);
    q.add_after("soon", ms(5));
    q.add_after("now", Duration::ZERO);
    assert_eq!(q.get(), Some("now"), "a zero delay adds at once");
    // The timer sleeps toward 1 h; only the wake-up makes this arrive.
    eventually("soon added", || q.len() == 1);
    assert_eq!(q.get(), Some("soon"));
    q.shut_down();
    q.add_after("after", ms(1));
    assert_eq!(q.get(), None);
}

// ---- rate-limiting queue (upstream rate_limiting_queue_test.go) ----

/// Step the fake clock to just before `delay`, check `key` has not arrived,
/// step the last nanosecond, check it has.
fn assert_fires_after(
    clock: &FakeClock,
    q: &RateLimitingQueue<&'static str>,
    key: &'static str,
    delay: Duration,
) {
    eventually("timer took the key", || q.waiting_len() == 1);
    clock.step(delay - Duration::from_nanos(1));
    stays("not yet", 10, || q.is_empty());
    clock.step(Duration::from_nanos(1));
    eventually("arrived", || q.len() == 1);
    assert_eq!(q.get(), Some(key));
    q.done(&key);
}

#[test]
fn rate_limited_adds_back_off_per_key() {
    let (clock, cfg) = fake_config("");
    let limiter = ItemExponentialFailureRateLimiter::new(ms(1), Duration::from_secs(1));
    let q = RateLimitingQueue::new(&cfg, limiter).expect("queue");
    q.add_rate_limited("one");
    assert_fires_after(&clock, &q, "one", ms(1));
    q.add_rate_limited("one");
    assert_fires_after(&clock, &q, "one", ms(2));
    assert_eq!(q.num_requeues(&"one"), 2);
    q.add_rate_limited("two");
    assert_fires_after(&clock, &q, "two", ms(1));
    q.add_rate_limited("two");
    assert_fires_after(&clock, &q, "two", ms(2));
    q.forget(&"one");
    assert_eq!(q.num_requeues(&"one"), 0);
    q.add_rate_limited("one");
    assert_fires_after(&clock, &q, "one", ms(1));
    q.shut_down();
}

// ---- metrics ----

fn line_value(text: &str, prefix: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {prefix:?} in\n{text}"))
}

#[test]
fn metrics_follow_client_go() {
    let registry = Registry::new();
    let metrics = WorkqueueMetrics::register(&registry);
    let (clock, cfg) = fake_config("endpoint");
    let q: RateLimitingQueue<&str> = RateLimitingQueue::new(
        &cfg.metrics(&metrics),
        ItemExponentialFailureRateLimiter::new(ms(1), ms(10)),
    )
    .expect("queue");
    let other: Queue<&str> = Queue::new(&QueueConfig::new("endpoint_slice").metrics(&metrics));
    other.add("x");
    q.add("a");
    q.add("b");
    q.add("a");
    clock.step(Duration::from_secs(1));
    let a = q.get().expect("a");
    clock.step(Duration::from_secs(2));
    metrics.update_unfinished_work();
    let text = registry.render();
    let v = |p: &str| line_value(&text, p);
    assert_eq!(v("workqueue_adds_total{name=\"endpoint\"}"), 2.0);
    assert_eq!(v("workqueue_depth{name=\"endpoint\"}"), 1.0);
    assert_eq!(v("workqueue_depth{name=\"endpoint_slice\"}"), 1.0);
    assert_eq!(
        v("workqueue_queue_duration_seconds_count{name=\"endpoint\"}"),
        1.0
    );
    assert_eq!(
        v("workqueue_queue_duration_seconds_sum{name=\"endpoint\"}"),
        1.0
    );
    assert_eq!(
        v("workqueue_unfinished_work_seconds{name=\"endpoint\"}"),
        2.0
    );
    assert_eq!(
        v("workqueue_longest_running_processor_seconds{name=\"endpoint\"}"),
        2.0
    );
    q.done(&a);
    q.add_rate_limited("c");
    q.add_after("d", Duration::ZERO);
    metrics.update_unfinished_work();
    let text = registry.render();
    let v = |p: &str| line_value(&text, p);
    assert_eq!(
        v("workqueue_work_duration_seconds_count{name=\"endpoint\"}"),
        1.0
    );
    assert_eq!(
        v("workqueue_work_duration_seconds_sum{name=\"endpoint\"}"),
        2.0
    );
    assert_eq!(
        v("workqueue_unfinished_work_seconds{name=\"endpoint\"}"),
        0.0
    );
    assert_eq!(v("workqueue_retries_total{name=\"endpoint\"}"), 2.0);
    assert_eq!(
        text.matches("# TYPE workqueue_depth gauge").count(),
        1,
        "one family for all queues"
    );
    q.shut_down();
}
