//! Client-side rate limiting: one token bucket (`qps` refill, `burst`
//! capacity) shared by every clone of a client, with client-go
//! (`flowcontrol.NewTokenBucketRateLimiter`, i.e. `x/time/rate`) semantics:
//! the bucket starts full, `accept()` reserves a token and blocks until it
//! is due, so waiters are served in reservation order.
//!
//! Must never read time except through the injected clock, and never hold
//! its lock while sleeping.

use crate::clock::SharedClock;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A token bucket. `qps <= 0` disables limiting (client-go treats a
/// negative QPS the same way).
#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    clock: SharedClock,
    state: Mutex<Bucket>,
}

/// The pure state: tokens available at `last` (negative = reserved ahead).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Bucket {
    pub(crate) tokens: f64,
    pub(crate) last: Instant,
}

/// Take one token at `now`; return how long the caller must wait for it.
/// A wait too long for a `Duration` (a tiny `qps`) saturates to
/// `Duration::MAX` instead of panicking.
pub(crate) fn reserve(b: &mut Bucket, now: Instant, qps: f64, burst: f64) -> Duration {
    let elapsed = now.saturating_duration_since(b.last).as_secs_f64();
    b.tokens = (b.tokens + elapsed * qps).min(burst);
    b.last = now.max(b.last);
    b.tokens -= 1.0;
    if b.tokens >= 0.0 {
        Duration::ZERO
    } else {
        Duration::try_from_secs_f64(-b.tokens / qps).unwrap_or(Duration::MAX)
    }
}

impl TokenBucket {
    /// A full bucket. A `burst` of 0 is treated as 1 (a bucket that can
    /// never hold a token would block forever).
    pub fn new(qps: f32, burst: u32, clock: SharedClock) -> TokenBucket {
        let burst = f64::from(burst.max(1));
        let now = clock.now();
        TokenBucket {
            qps: f64::from(qps),
            burst,
            clock,
            state: Mutex::new(Bucket {
                tokens: burst,
                last: now,
            }),
        }
    }

    /// Reserve a token and return the wait without sleeping.
    pub fn reserve(&self) -> Duration {
        if self.qps <= 0.0 {
            return Duration::ZERO;
        }
        let now = self.clock.now();
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        reserve(&mut st, now, self.qps, self.burst)
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
        if self.qps <= 0.0 {
            return true;
        }
        let now = self.clock.now();
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut probe = *st;
        if reserve(&mut probe, now, self.qps, self.burst).is_zero() {
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
    use crate::clock::FakeClock;
    use std::sync::Arc;

    #[test]
    fn reserve_ladder() {
        // qps 10, burst 3: three free tokens, then one every 100 ms, with
        // reservations queueing up behind each other.
        let t0 = Instant::now();
        let mut b = Bucket {
            tokens: 3.0,
            last: t0,
        };
        let ms = |n: u64| Duration::from_millis(n);
        let steps: &[(u64, u64)] = &[
            // (now in ms, expected wait in ms)
            (0, 0),
            (0, 0),
            (0, 0),
            (0, 100),
            (0, 200),
            (300, 0), // refilled 3 tokens, 2 were owed → 0 left after this
            (300, 100),
            (10_000, 0), // long idle: refills to burst only
            (10_000, 0),
            (10_000, 0),
            (10_000, 100),
        ];
        for (i, (at, want)) in steps.iter().enumerate() {
            let got = reserve(&mut b, t0 + ms(*at), 10.0, 3.0);
            assert_eq!(got.as_millis(), u128::from(*want), "step {i} at {at} ms");
        }
    }

    #[test]
    fn tiny_qps_wait_saturates_instead_of_panicking() {
        // from_secs_f64 panicked once -tokens/qps exceeded Duration::MAX.
        let t0 = Instant::now();
        let rows: &[(f64, Duration)] = &[
            (10.0, Duration::from_millis(100)),
            (1e-3, Duration::from_secs(1000)),
            (1e-30, Duration::MAX),
            (f64::MIN_POSITIVE, Duration::MAX),
        ];
        for (qps, want) in rows {
            let mut b = Bucket {
                tokens: 0.0,
                last: t0,
            };
            assert_eq!(reserve(&mut b, t0, *qps, 1.0), *want, "qps {qps}");
        }
    }

    #[test]
    fn accept_blocks_on_the_fake_clock() {
        let clock = FakeClock::new();
        let tb = Arc::new(TokenBucket::new(2.0, 1, clock.clone()));
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
    fn zero_qps_is_unlimited() {
        let tb = TokenBucket::new(0.0, 0, FakeClock::new());
        for _ in 0..1000 {
            assert!(tb.reserve().is_zero());
        }
    }
}
