//! Stress: 8 workers and 2 producers on one delaying queue, 1,000,000
//! producer operations (adds, and some short `add_after`s) over 1,024 keys;
//! workers sometimes re-add the key they hold. Checks that no key is ever
//! held by two workers at once and that every key is processed at least
//! once after its last add.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use endpointd_base::clock::{Clock, RealClock};
use endpointd_kube::workqueue::{DelayingQueue, QueueConfig};

const KEYS: usize = 1024;
const PRODUCERS: usize = 2;
const WORKERS: usize = 8;
const OPS: usize = 1_000_000;

struct Tally {
    /// Bumped by a producer just before each add of the key.
    added: Vec<AtomicU64>,
    /// The highest `added` value a worker saw after getting the key.
    processed: Vec<AtomicU64>,
    /// Set while a worker holds the key.
    held: Vec<AtomicBool>,
    overlaps: AtomicUsize,
    gets: AtomicUsize,
}

fn worker(q: DelayingQueue<u32>, t: Arc<Tally>, seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    while let Some(k) = q.get() {
        let i = k as usize;
        if t.held[i].swap(true, SeqCst) {
            t.overlaps.fetch_add(1, SeqCst);
        }
        let seen = t.added[i].load(SeqCst);
        t.processed[i].fetch_max(seen, SeqCst);
        t.gets.fetch_add(1, SeqCst);
        if rng.u8(..) < 16 {
            // Added again while processing: must come back after done.
            q.add(k);
        }
        if rng.u8(..) < 4 {
            thread::yield_now();
        }
        t.held[i].store(false, SeqCst);
        q.done(&k);
    }
}

fn producer(q: DelayingQueue<u32>, t: Arc<Tally>, seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    for _ in 0..OPS / PRODUCERS {
        let k = rng.u32(..KEYS as u32);
        t.added[k as usize].fetch_add(1, SeqCst);
        if rng.u8(..) < 4 {
            q.add_after(k, Duration::from_micros(rng.u64(1..2000)));
        } else {
            q.add(k);
        }
    }
}

#[test]
fn eight_workers_one_million_operations() {
    let start = RealClock.now();
    let q: DelayingQueue<u32> = DelayingQueue::new(&QueueConfig::new("stress")).expect("queue");
    let t = Arc::new(Tally {
        added: (0..KEYS).map(|_| AtomicU64::new(0)).collect(),
        processed: (0..KEYS).map(|_| AtomicU64::new(0)).collect(),
        held: (0..KEYS).map(|_| AtomicBool::new(false)).collect(),
        overlaps: AtomicUsize::new(0),
        gets: AtomicUsize::new(0),
    });
    let workers: Vec<_> = (0..WORKERS)
        .map(|i| {
            let (q, t) = (q.clone(), t.clone());
            thread::spawn(move || worker(q, t, 100 + i as u64))
        })
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|i| {
            let (q, t) = (q.clone(), t.clone());
            thread::spawn(move || producer(q, t, i as u64))
        })
        .collect();
    for p in producers {
        p.join().expect("producer");
    }
    // Let every delayed add reach the queue before shutting down.
    for _ in 0..5_000 {
        if q.waiting_len() == 0 {
            break;
        }
        RealClock.sleep(Duration::from_millis(1));
    }
    assert_eq!(q.waiting_len(), 0, "delayed adds never arrived");
    assert!(
        q.shut_down_with_drain(Duration::from_secs(60)),
        "workers did not drain"
    );
    for w in workers {
        w.join().expect("worker");
    }
    assert_eq!(t.overlaps.load(SeqCst), 0, "a key was held by two workers");
    let lost: Vec<usize> = (0..KEYS)
        .filter(|&i| t.processed[i].load(SeqCst) != t.added[i].load(SeqCst))
        .collect();
    assert!(
        lost.is_empty(),
        "keys not processed after their last add: {lost:?}"
    );
    assert!(q.is_empty());
    let secs = RealClock.now().duration_since(start).as_secs_f64();
    eprintln!(
        "stress: {OPS} adds, {} gets, {secs:.2} s",
        t.gets.load(SeqCst)
    );
}
