//! Work-queue throughput: add+get+done cycles per second with 1 and 4
//! worker threads, over alternating distinct and repeated `String` keys
//! ("namespace/name"), against a bare crossbeam channel doing send+recv of
//! the same keys, measured in the same run. Prints human lines, then one
//! JSON line last.
//!
//! Each worker thread runs `add(key); get(); done()` in a loop; with 4
//! threads they share one queue (a thread may get another's key). An add
//! that finds its key already dirty queues nothing (that is the point of
//! the queue), so that thread skips its get: every add that returns `true`
//! leads to exactly one key handed out, gets never outnumber keys, and no
//! thread can wait forever. Only completed get+done cycles are counted.

use std::sync::Arc;
use std::thread;

use endpointd_base::clock::{Clock, RealClock};
use endpointd_kube::workqueue::{Queue, QueueConfig};

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

/// One thread's share of a queue run; returns completed cycles.
fn queue_loop(q: &Queue<String>, keys: &Keys, n: usize) -> usize {
    let mut done = 0;
    for i in 0..n {
        if !q.add(keys.key(i).clone()) {
            continue;
        }
        let Some(k) = q.get() else { break };
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

/// Run `body(keys, n)` on `threads` threads, `CYCLES` in all, and return
/// completed cycles per second.
fn run<F>(threads: usize, body: F) -> f64
where
    F: Fn(&Keys, usize) -> usize + Send + Sync + 'static,
{
    let per = CYCLES / threads;
    let keys: Vec<Keys> = (0..threads).map(|t| Keys::new(t, per)).collect();
    let body = Arc::new(body);
    let clock = RealClock;
    let start = clock.now();
    let handles: Vec<_> = keys
        .into_iter()
        .map(|k| {
            let body = body.clone();
            thread::spawn(move || body(&k, per))
        })
        .collect();
    let total: usize = handles.into_iter().map(|h| h.join().unwrap_or(0)).sum();
    let secs = clock.now().duration_since(start).as_secs_f64();
    if total < per * threads {
        println!(
            "  ({} of {} adds found their key dirty and queued nothing; not counted)",
            per * threads - total,
            per * threads
        );
    }
    total as f64 / secs
}

fn queue_rate(threads: usize) -> f64 {
    let q: Queue<String> = Queue::new(&QueueConfig::new(""));
    run(threads, move |keys, n| queue_loop(&q, keys, n))
}

fn channel_rate(threads: usize) -> f64 {
    let (tx, rx) = crossbeam_channel::unbounded::<String>();
    run(threads, move |keys, n| channel_loop(&tx, &rx, keys, n))
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
