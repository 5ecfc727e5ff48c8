//! Work-queue throughput: add+get+done cycles per second with 1 and 4
//! worker threads, over alternating distinct and repeated `String` keys
//! ("namespace/name"), against a bare crossbeam channel doing send+recv of
//! the same keys, measured in the same run. Prints human lines, then one
//! JSON line last.
//!
//! Each worker thread runs `add(key); get(); done()` in a loop; with 4
//! threads they share one queue (a thread may get another's key). An add
//! that finds its key already dirty is deduplicated and queues nothing, so
//! that thread skips its get (otherwise gets would outnumber keys and the
//! threads would end up waiting for keys that never come); only completed
//! get+done cycles count. As a safety net the main thread also detects a
//! stall (every unfinished thread blocked, nothing queued or held) and
//! shuts the queue down.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use endpointd::clock::{Clock, RealClock};
use endpointd::workqueue::{Queue, QueueConfig};

const CYCLES: usize = 1_000_000;
const HOT: usize = 16;
const ROUNDS: usize = 3;

/// Keys of one thread: distinct ones, and `HOT` repeated ones.
struct Keys {
    distinct: Vec<String>,
    hot: Vec<String>,
}

impl Keys {
    fn new(thread: usize, n: usize) -> Keys {
        Keys {
            distinct: (0..n).map(|i| format!("ns-{thread}/svc-{i}")).collect(),
            hot: (0..HOT).map(|i| format!("ns-{thread}/hot-{i}")).collect(),
        }
    }
    fn key(&self, i: usize) -> &String {
        if i.is_multiple_of(2) {
            &self.distinct[i / 2]
        } else {
            &self.hot[i % HOT]
        }
    }
}

/// Counters the main thread watches to detect the end-of-run stall.
#[derive(Default)]
struct Progress {
    /// Threads that have not finished their loop.
    running: AtomicUsize,
    /// Threads blocked in `get`.
    blocked: AtomicUsize,
}

/// One thread's share of a queue run; returns completed cycles.
fn queue_loop(q: &Queue<String>, p: &Progress, keys: &Keys, n: usize) -> usize {
    let mut done = 0;
    for i in 0..n {
        if !q.add(keys.key(i).clone()) {
            continue;
        }
        p.blocked.fetch_add(1, Ordering::SeqCst);
        let got = q.get();
        p.blocked.fetch_sub(1, Ordering::SeqCst);
        let Some(k) = got else { break };
        q.done(&k);
        done += 1;
    }
    done
}

fn channel_loop(
    tx: &crossbeam_channel::Sender<String>,
    rx: &crossbeam_channel::Receiver<String>,
    keys: &Keys,
    n: usize,
) -> usize {
    let mut done = 0;
    for i in 0..n {
        if tx.send(keys.key(i).clone()).is_err() {
            break;
        }
        match rx.recv() {
            Ok(k) => drop(std::hint::black_box(k)),
            Err(_) => break,
        }
        done += 1;
    }
    done
}

/// Run `body(progress, keys, n)` on `threads` threads, `CYCLES` in all,
/// and return completed cycles per second. `stalled(progress)` is polled
/// every millisecond; when it says so twice in a row, `stop` ends the run.
fn run<F, S, T>(threads: usize, body: F, stalled: S, stop: T) -> f64
where
    F: Fn(&Progress, &Keys, usize) -> usize + Send + Sync + 'static,
    S: Fn(&Progress) -> bool,
    T: Fn(),
{
    let per = CYCLES / threads;
    let keys: Vec<Keys> = (0..threads).map(|t| Keys::new(t, per)).collect();
    let body = Arc::new(body);
    let progress = Arc::new(Progress::default());
    progress.running.store(threads, Ordering::SeqCst);
    let clock = RealClock;
    let start = clock.now();
    let handles: Vec<_> = keys
        .into_iter()
        .map(|k| {
            let (body, p) = (body.clone(), progress.clone());
            thread::spawn(move || {
                let n = body(&p, &k, per);
                p.running.fetch_sub(1, Ordering::SeqCst);
                n
            })
        })
        .collect();
    let mut stalls = 0;
    while progress.running.load(Ordering::SeqCst) > 0 {
        // Two polls in a row, so that a racy read cannot end the run early.
        stalls = if stalled(&progress) { stalls + 1 } else { 0 };
        if stalls == 2 {
            println!("  (stall detected: run stopped)");
            stop();
            break;
        }
        clock.sleep(std::time::Duration::from_millis(1));
    }
    let total: usize = handles.into_iter().map(|h| h.join().unwrap_or(0)).sum();
    if total < per * threads {
        println!(
            "  ({} of {} adds found their key dirty and queued nothing; not counted)",
            per * threads - total,
            per * threads
        );
    }
    let secs = clock.now().duration_since(start).as_secs_f64();
    total as f64 / secs
}

fn queue_rate(threads: usize) -> f64 {
    let q: Queue<String> = Queue::new(&QueueConfig::new(""));
    let (q1, q2, q3) = (q.clone(), q.clone(), q);
    run(
        threads,
        move |p, keys, n| queue_loop(&q1, p, keys, n),
        move |p| {
            let running = p.running.load(Ordering::SeqCst);
            running > 0
                && p.blocked.load(Ordering::SeqCst) == running
                && q2.is_empty()
                && q2.in_flight() == 0
        },
        move || q3.shut_down(),
    )
}

fn channel_rate(threads: usize) -> f64 {
    let (tx, rx) = crossbeam_channel::unbounded::<String>();
    run(
        threads,
        move |_, keys, n| channel_loop(&tx, &rx, keys, n),
        |_| false,
        || {},
    )
}

/// Median of `ROUNDS` runs after one warm-up run.
fn median(label: &str, f: impl Fn() -> f64) -> f64 {
    f();
    let mut v: Vec<f64> = (0..ROUNDS).map(|_| f()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v[ROUNDS / 2];
    println!("{label:<34} {m:>12.0} cycles/s  (runs: {v:.0?})");
    m
}

fn main() {
    println!("workqueue bench: {CYCLES} add+get+done cycles per run, String keys, half distinct, half from {HOT} repeated per thread");
    let q1 = median("queue, 1 worker", || queue_rate(1));
    let q4 = median("queue, 4 workers", || queue_rate(4));
    let c1 = median("crossbeam channel, 1 thread", || channel_rate(1));
    let c4 = median("crossbeam channel, 4 threads", || channel_rate(4));
    println!("queue / channel, 1 thread: {:.2}", q1 / c1);
    println!("queue / channel, 4 threads: {:.2}", q4 / c4);
    println!(
        "{}",
        serde_json::json!({
            "ops_per_sec_1_worker": q1.round(),
            "ops_per_sec_4_workers": q4.round(),
            "channel_baseline_ops_per_sec": c1.round(),
            "channel_baseline_ops_per_sec_4_threads": c4.round(),
            "queue_to_channel_ratio_1_worker": (q1 / c1 * 1000.0).round() / 1000.0,
            "queue_to_channel_ratio_4_workers": (q4 / c4 * 1000.0).round() / 1000.0,
        })
    );
}
