//! What this machine charges for handing work to another thread, the cost
//! that dominates endpointd's CPU per change at low rates (every change
//! wakes the pod informer, a worker per controller, the workers again for
//! their answers, and the two informers of the echoes). Prints human lines,
//! then one JSON line last:
//!
//! - a system call (`getppid`), in a loop;
//! - a round trip between two threads through two of endpointd's work
//!   queues (a key added to one, got and done by the other thread, which
//!   adds it to the second), back to back: wall time and the process's CPU
//!   time per round trip;
//! - the same round trip after the sender has slept for 1 ms each time,
//!   so both threads are idle when it starts (how endpointd's threads wait
//!   between changes at 100 changes/s): CPU per round trip, three wake-ups
//!   of idle threads (and, when a core went idle too, of the core).
//!
//! Compare machines with it before comparing endpointd's CPU per change.

// A measuring harness, not shipped: libc calls (getppid, getrusage).
#![allow(unsafe_code)]

use endpointd_kube::workqueue::{Queue, QueueConfig};
use std::time::{Duration, Instant};

/// The process's user + system CPU time so far.
fn cpu() -> Duration {
    // SAFETY: getrusage fills the zeroed struct it is given; no pointers kept.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn syscall_ns(n: u32) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        // SAFETY: getppid has no arguments and cannot fail.
        std::hint::black_box(unsafe { libc::getppid() });
    }
    t.elapsed().as_nanos() as f64 / f64::from(n)
}

/// (wall µs, CPU µs) per round trip; with `idle` not zero, the sender
/// sleeps that long before each round trip, so the echoing thread is idle
/// when it is woken. The wall time excludes the sleeps; the CPU time is the
/// whole loop's (the sleeper's own wake-up included, as in endpointd).
fn round_trips(n: u32, idle: Duration) -> (f64, f64) {
    let to: Queue<u32> = Queue::new(&QueueConfig::new(""));
    let back: Queue<u32> = Queue::new(&QueueConfig::new(""));
    let (rx, tx) = (to.clone(), back.clone());
    let echo = std::thread::spawn(move || {
        while let Some(v) = rx.get() {
            rx.done(&v);
            tx.add(v);
        }
    });
    let mut wall = Duration::ZERO;
    let c = cpu();
    for i in 0..n {
        if !idle.is_zero() {
            std::thread::sleep(idle);
        }
        let t = Instant::now();
        to.add(i);
        match back.get() {
            Some(v) => back.done(&v),
            None => break,
        }
        wall += t.elapsed();
    }
    let busy = cpu().saturating_sub(c);
    to.shut_down();
    let _ = echo.join();
    let per = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(n);
    (per(wall), per(busy))
}

fn main() {
    let sys = syscall_ns(1_000_000);
    println!("system call (getppid): {sys:.0} ns");
    let (bw, bc) = round_trips(50_000, Duration::ZERO);
    println!("round trip between two threads, back to back: {bw:.1} µs wall, {bc:.1} µs CPU");
    let (iw, ic) = round_trips(2_000, Duration::from_millis(1));
    println!(
        "round trip after 1 ms idle: {iw:.1} µs wall, {ic:.1} µs CPU (three wake-ups: the sleeper, the echo, the answer)"
    );
    println!(
        "{}",
        serde_json::json!({
            "syscall_ns": sys,
            "round_trip_busy": {"wall_us": bw, "cpu_us": bc},
            "round_trip_after_1ms_idle": {"wall_us": iw, "cpu_us": ic},
        })
    );
}
