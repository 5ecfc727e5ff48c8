//! The one shared shutdown signal every thread observes.
//!
//! Cloning a [`Shutdown`] shares it. `trigger()` is idempotent and wakes
//! every waiter. Threads poll `is_triggered()` between units of work or
//! block in `wait_timeout()` instead of sleeping, so they notice shutdown at
//! once. It owns no threads and never exits the process.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

#[derive(Debug, Default)]
struct Inner {
    flag: AtomicBool,
    lock: Mutex<()>,
    cv: Condvar,
}

/// A shared, one-way shutdown flag.
#[derive(Debug, Clone, Default)]
pub struct Shutdown {
    inner: Arc<Inner>,
}

impl Shutdown {
    /// A fresh, untriggered signal.
    pub fn new() -> Shutdown {
        Shutdown::default()
    }

    /// Start shutting down; wakes every waiter. Idempotent.
    pub fn trigger(&self) {
        let _g = self.inner.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.inner.flag.store(true, Ordering::SeqCst);
        self.inner.cv.notify_all();
    }

    /// Whether shutdown has started.
    pub fn is_triggered(&self) -> bool {
        self.inner.flag.load(Ordering::SeqCst)
    }

    /// Block for up to `d` (real time) or until shutdown; returns
    /// `is_triggered()`. Use instead of `sleep` in loops.
    pub fn wait_timeout(&self, d: Duration) -> bool {
        let g = self.inner.lock.lock().unwrap_or_else(|p| p.into_inner());
        if self.is_triggered() {
            return true;
        }
        let _ = self
            .inner
            .cv
            .wait_timeout_while(g, d, |_| !self.is_triggered())
            .unwrap_or_else(|p| p.into_inner());
        self.is_triggered()
    }

    /// Block until shutdown.
    pub fn wait(&self) {
        while !self.wait_timeout(Duration::from_secs(3600)) {}
    }
}

/// Join `t` if it ends within `within` (polling, real time); otherwise
/// leave it to end on its own. Returns whether it was joined.
pub fn join_within(t: std::thread::JoinHandle<()>, within: Duration) -> bool {
    join_within_on(t, within, &endpointd_base::clock::RealClock)
}

/// [`join_within`] on `clock`: the bound is the time elapsed on it, not
/// the number of polls (a loaded machine oversleeps every poll: counted
/// in polls, the 2 s given to the Lease release took 2.5-2.8 s with 56
/// busy processes on the 2 cores).
fn join_within_on(
    t: std::thread::JoinHandle<()>,
    within: Duration,
    clock: &dyn endpointd_base::clock::Clock,
) -> bool {
    const POLL: Duration = Duration::from_millis(10);
    let deadline = clock.now() + within;
    while !t.is_finished() {
        let left = deadline.saturating_duration_since(clock.now());
        if left.is_zero() {
            break;
        }
        clock.sleep(left.min(POLL));
    }
    t.is_finished() && t.join().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_within_bounds_the_time_elapsed_not_the_number_of_polls() {
        use endpointd_base::clock::FakeClock;
        // Every 10 ms poll oversleeps to 25 ms, as on a loaded machine: the
        // wait still ends once 2 s have passed (counting polls, it took
        // 200 of them: 5 s).
        let clock = FakeClock::new();
        let (release, held) = std::sync::mpsc::channel::<()>();
        let stuck = std::thread::spawn(move || {
            let _ = held.recv();
        });
        let c = Arc::clone(&clock);
        let joiner = std::thread::spawn(move || join_within_on(stuck, Duration::from_secs(2), &*c));
        while !joiner.is_finished() {
            if clock.wait_for_sleepers(1, Duration::from_millis(20)) {
                clock.step(Duration::from_millis(25));
            }
        }
        assert!(
            !joiner.join().expect("joiner"),
            "the stuck thread is not joined"
        );
        let took = clock.elapsed();
        assert!(
            took >= Duration::from_secs(2) && took < Duration::from_millis(2025),
            "{took:?}"
        );
        drop(release);
    }

    #[test]
    fn join_within_joins_a_thread_that_ends_and_reports_a_panic() {
        let cases: [(fn(), bool); 2] = [(|| {}, true), (|| panic!("boom"), false)];
        for (body, want) in cases {
            let t = std::thread::spawn(body);
            assert_eq!(join_within(t, Duration::from_secs(10)), want);
        }
    }

    #[test]
    fn trigger_wakes_waiters_and_is_shared_by_clones() {
        let s = Shutdown::new();
        assert!(!s.is_triggered());
        assert!(!s.wait_timeout(Duration::from_millis(1)));
        let s2 = s.clone();
        let h = std::thread::spawn(move || s2.wait_timeout(Duration::from_secs(30)));
        std::thread::sleep(Duration::from_millis(20));
        s.trigger();
        assert!(h.join().expect("waiter"));
        assert!(s.is_triggered());
        s.trigger();
        assert!(s.wait_timeout(Duration::from_secs(30)));
    }
}
