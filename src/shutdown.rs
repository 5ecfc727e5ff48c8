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
    let step = Duration::from_millis(10);
    let mut waited = Duration::ZERO;
    while !t.is_finished() && waited < within {
        std::thread::sleep(step);
        waited += step;
    }
    t.is_finished() && t.join().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

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
