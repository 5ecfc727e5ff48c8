//! The delaying and rate-limiting queues against upstream's
//! `delaying_queue_test.go` and `rate_limiting_queue_test.go`, on a fake
//! clock, plus the metrics contract.

use crate::harness::workqueue as workqueue_support;

use std::time::Duration;

use endpointd_base::clock::{Clock, FakeClock, RealClock};
use endpointd_kube::metrics::Registry;
use endpointd_kube::workqueue::{
    DelayingQueue, ItemExponentialFailureRateLimiter, Queue, QueueConfig, RateLimitingQueue,
    WorkqueueMetrics,
};
use workqueue_support::{eventually, fake_config, ms, stays};

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
    // The timer thread adds the key, then lowers the waiting count: the
    // two are not one atomic step (a reader between them sees both).
    eventually("no longer waiting", || q.waiting_len() == 0);
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

/// Whether a key reaches the queue within 2 s of real time. The timer of a
/// real-clock queue sleeps toward its earliest key (1 h in these tests) in
/// slices of MAX_WAIT = 10 s: only a wake-up brings a key in sooner.
fn arrives_within_2s(q: &DelayingQueue<&'static str>) -> bool {
    for _ in 0..2_000 {
        if q.len() == 1 {
            return true;
        }
        RealClock.sleep(ms(1));
    }
    false
}

#[test]
fn an_earlier_add_wakes_the_timer_on_the_real_clock() {
    let q: DelayingQueue<&str> = DelayingQueue::new(&QueueConfig::new("")).expect("queue");
    q.add_after("late", Duration::from_secs(3600));
    eventually("late waiting", || q.waiting_len() == 1);
    q.add_after("soon", ms(5));
    q.add_after("now", Duration::ZERO);
    assert_eq!(q.get(), Some("now"), "a zero delay adds at once");
    assert!(
        arrives_within_2s(&q),
        "an earlier add_after did not wake the timer"
    );
    assert_eq!(q.get(), Some("soon"));
    q.shut_down();
    q.add_after("after", ms(1));
    assert_eq!(q.get(), None);
}

#[test]
fn a_pull_in_wakes_the_timer_on_the_real_clock() {
    let q: DelayingQueue<&str> = DelayingQueue::new(&QueueConfig::new("")).expect("queue");
    q.add_after("late", Duration::from_secs(3600));
    eventually("late waiting", || q.waiting_len() == 1);
    assert_eq!(q.pull_in(ms(5)), 1);
    assert!(arrives_within_2s(&q), "a pull-in did not wake the timer");
    assert_eq!(q.get(), Some("late"));
    q.shut_down();
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

/// Beyond upstream: after an outage, keys backing off (or a dropped key's
/// later retry) are pulled in; their failure counts stay.
#[test]
fn pull_in_brings_long_waits_forward_and_keeps_the_failure_count() {
    let (clock, cfg) = fake_config("");
    let limiter =
        ItemExponentialFailureRateLimiter::new(Duration::from_secs(1), Duration::from_secs(1000));
    let q = RateLimitingQueue::new(&cfg, limiter).expect("queue");
    // Five failed syncs (1 + 2 + 4 + 8 + 16 s); the sixth waits 32 s.
    for i in 0..5 {
        q.add_rate_limited("backing-off");
        assert_fires_after(&clock, &q, "backing-off", Duration::from_secs(1 << i));
    }
    q.add_rate_limited("backing-off");
    q.add_after("soon", ms(300));
    q.add_after("dropped", Duration::from_secs(300));
    eventually("all waiting", || q.waiting_len() == 3);
    assert_eq!(q.pull_in(Duration::from_secs(1)), 2, "the two long waits");
    clock.step(ms(300));
    eventually("soon, at its own time", || q.len() == 1);
    assert_eq!(q.get(), Some("soon"));
    q.done(&"soon");
    clock.step(ms(699));
    stays("not before the second", 10, || q.is_empty());
    clock.step(ms(1));
    eventually("both pulled in", || q.len() == 2);
    let got = [q.get(), q.get()];
    assert_eq!(
        got,
        [Some("backing-off"), Some("dropped")],
        "in their order"
    );
    assert_eq!(
        q.num_requeues(&"backing-off"),
        6,
        "the backoff goes on from here"
    );
    assert_eq!(q.pull_in(Duration::from_secs(1)), 0, "nothing waits");
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

/// As upstream: a queue without a name exports nothing.
#[test]
fn unnamed_queues_export_no_metrics() {
    let registry = Registry::new();
    let metrics = WorkqueueMetrics::register(&registry);
    let q: DelayingQueue<&str> =
        DelayingQueue::new(&QueueConfig::new("").metrics(&metrics)).expect("queue");
    q.add("a");
    q.add_after("b", Duration::ZERO);
    let text = registry.render();
    assert!(!text.contains("name=\""), "unexpected series in\n{text}");
    q.shut_down();
}
