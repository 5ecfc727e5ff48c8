//! Client-side rate limiting: one token bucket (`qps` refill, `burst`
//! capacity) shared by every clone of a client, with client-go
//! (`flowcontrol.NewTokenBucketRateLimiter`, i.e. `x/time/rate`) semantics:
//! the bucket starts full, `accept()` reserves a token and blocks until it
//! is due, so waiters are served in reservation order.
//!
//! Must never read time except through the injected clock, and never hold
//! its lock while sleeping.

use crate::tokenbucket;
use endpointd_base::clock::SharedClock;
use std::sync::Mutex;
use std::time::Duration;

/// A client's token bucket on its clock, shared by its clones. `qps <= 0` disables limiting (client-go treats a
/// negative QPS the same way).
#[derive(Debug)]
pub struct ClientRateLimiter {
    /// Whether limiting is on at all (`qps > 0`).
    limited: bool,
    clock: SharedClock,
    /// The `x/time/rate` arithmetic (shared with the work queue's limiter).
    state: Mutex<tokenbucket::TokenBucket>,
}

impl ClientRateLimiter {
    /// A full bucket. A `burst` of 0 is treated as 1 (a bucket that can
    /// never hold a token would block forever).
    pub fn new(qps: f32, burst: u32, clock: SharedClock) -> ClientRateLimiter {
        ClientRateLimiter {
            limited: qps > 0.0,
            clock,
            state: Mutex::new(tokenbucket::TokenBucket::new(f64::from(qps), burst.max(1))),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, tokenbucket::TokenBucket> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserve a token and return the wait without sleeping.
    pub fn reserve(&self) -> Duration {
        if !self.limited {
            return Duration::ZERO;
        }
        let now = self.clock.now();
        self.lock().reserve(now)
    }

    /// Block (on the clock) until a token is available, then take it.
    pub fn accept(&self) {
        let wait = self.reserve();
        if !wait.is_zero() {
            self.clock.sleep(wait);
        }
    }

    /// Take a token only if one is available now.
    pub fn try_accept(&self) -> bool {
        if !self.limited {
            return true;
        }
        let now = self.clock.now();
        let mut st = self.lock();
        let mut probe = st.clone();
        if probe.reserve(now).is_zero() {
            *st = probe;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use endpointd_base::clock::FakeClock;
    use std::sync::Arc;

    #[test]
    fn accept_blocks_on_the_fake_clock() {
        let clock = FakeClock::new();
        let tb = Arc::new(ClientRateLimiter::new(2.0, 1, clock.clone()));
        assert!(tb.try_accept());
        assert!(!tb.try_accept(), "bucket empty");
        let tb2 = Arc::clone(&tb);
        let h = std::thread::spawn(move || tb2.accept());
        assert!(clock.wait_for_sleepers(1, Duration::from_secs(5)));
        clock.step(Duration::from_millis(499));
        assert_eq!(clock.sleepers(), 1, "still waiting before 500 ms");
        clock.step(Duration::from_millis(1));
        h.join().expect("accept returned");
        assert!(!tb.try_accept(), "the token went to the blocked caller");
        clock.step(Duration::from_millis(500));
        assert!(tb.try_accept());
    }

    #[test]
    fn burst_zero_is_treated_as_one() {
        let tb = ClientRateLimiter::new(1.0, 0, FakeClock::new());
        assert!(tb.try_accept(), "one token, not none");
        assert!(!tb.try_accept());
    }

    #[test]
    fn zero_qps_is_unlimited() {
        let tb = ClientRateLimiter::new(0.0, 0, FakeClock::new());
        for _ in 0..1000 {
            assert!(tb.reserve().is_zero());
        }
    }
}
