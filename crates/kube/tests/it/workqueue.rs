//! The basic work queue against upstream's `queue_test.go`: dedup,
//! re-add while processing, FIFO order, and both shutdowns.

use crate::harness::workqueue as workqueue_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use endpointd_base::clock::{Clock, RealClock};
use endpointd_kube::workqueue::{Queue, QueueConfig};
use workqueue_support::{eventually, fake_config, ms, stays};

// ---- basic queue: a script of single-threaded operations ----

enum Op {
    /// `add` must make the key dirty (return `true`).
    Add(&'static str),
    /// `add` must change nothing (return `false`).
    Dup(&'static str),
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
            &[Add("foo"), Len(1), Add("bar"), Len(2), Dup("foo"), Len(2)],
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
                Dup("a"),
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
                Dup("a"),
                Dup("a"),
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
                Dup("b"),
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
                Add(k) => assert!(q.add(k.to_string()), "{name}: op {i}"),
                Dup(k) => assert!(!q.add(k.to_string()), "{name}: op {i}"),
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

/// Workers share one queue handle by reference or by clone.
#[test]
fn queues_are_send_and_sync() {
    fn check<T: Send + Sync + Clone + 'static>() {}
    check::<Queue<String>>();
    check::<endpointd_kube::workqueue::DelayingQueue<String>>();
    check::<endpointd_kube::workqueue::RateLimitingQueue<String>>();
}
