//! The reflector's backoff: client-go's `ExponentialBackoffManager` as the
//! reflector configures it (800 ms doubling to a 30 s cap, jitter 1.0,
//! reset after 2 minutes without a backoff request).
//!
//! Pure: the caller passes "now" (from the clock) and a uniform random
//! number in [0, 1), so every ladder is a table test. It never sleeps and
//! never reads time itself.

use std::time::{Duration, Instant};

/// Backoff parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackoffConfig {
    /// First delay (client-go: 800 ms).
    pub initial: Duration,
    /// Largest un-jittered delay (client-go: 30 s).
    pub cap: Duration,
    /// Multiplier per step (client-go: 2.0).
    pub factor: f64,
    /// Jitter: a delay `d` becomes `d + rand·jitter·d` (client-go: 1.0).
    pub jitter: f64,
    /// With no backoff requested for this long, start over at `initial`
    /// (client-go: 2 min).
    pub reset_after: Duration,
}

impl Default for BackoffConfig {
    fn default() -> BackoffConfig {
        BackoffConfig {
            initial: Duration::from_millis(800),
            cap: Duration::from_secs(30),
            factor: 2.0,
            jitter: 1.0,
            reset_after: Duration::from_secs(120),
        }
    }
}

/// Exponential backoff state.
#[derive(Debug, Clone)]
pub struct Backoff {
    config: BackoffConfig,
    /// Un-jittered delay the next request returns.
    current: Duration,
    /// When the last delay was handed out; `None` before the first.
    last_request: Option<Instant>,
}

impl Backoff {
    /// Fresh backoff at `config.initial`.
    pub fn new(config: BackoffConfig) -> Backoff {
        Backoff {
            config,
            current: config.initial,
            last_request: None,
        }
    }

    /// The next delay. `rand01` must be uniform in [0, 1).
    ///
    /// Like `wait.Backoff.Step` with `DelayWithReset`: if the last request
    /// was at least `reset_after` ago the ladder starts over; the returned
    /// delay is the current step jittered into `[d, d·(1+jitter))`, and the
    /// step then grows by `factor` up to `cap`.
    pub fn next_delay(&mut self, now: Instant, rand01: f64) -> Duration {
        if let Some(last) = self.last_request {
            if now.saturating_duration_since(last) >= self.config.reset_after {
                self.current = self.config.initial;
            }
        }
        self.last_request = Some(now);
        let base = self.current;
        let grown = base.mul_f64(self.config.factor.max(1.0));
        self.current = grown.min(self.config.cap);
        let r = rand01.clamp(0.0, 1.0);
        base + base.mul_f64(r * self.config.jitter.max(0.0))
    }

    /// The un-jittered delay the next request would start from (for tests
    /// and logs).
    pub fn current(&self) -> Duration {
        self.current
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn ladder_doubles_to_cap_without_jitter() {
        let t0 = crate::informer::fake::t0();
        let mut b = Backoff::new(BackoffConfig::default());
        // (seconds after t0 of the request, expected delay)
        let table: &[(u64, Duration)] = &[
            (0, ms(800)),
            (1, ms(1600)),
            (2, ms(3200)),
            (3, ms(6400)),
            (4, ms(12800)),
            (5, ms(25600)),
            (6, ms(30000)),
            (7, ms(30000)),
        ];
        for &(at, want) in table {
            let got = b.next_delay(t0 + Duration::from_secs(at), 0.0);
            assert_eq!(got, want, "request at +{at}s");
        }
    }

    #[test]
    fn jitter_one_stretches_up_to_double() {
        let t0 = crate::informer::fake::t0();
        let table: &[(f64, Duration)] = &[(0.0, ms(800)), (0.5, ms(1200)), (0.999, ms(1599))];
        for &(r, want) in table {
            let mut b = Backoff::new(BackoffConfig::default());
            let got = b.next_delay(t0, r);
            assert!(
                got.abs_diff(want) < ms(1),
                "rand {r}: got {got:?}, want {want:?}"
            );
        }
    }

    #[test]
    fn resets_after_two_healthy_minutes_only() {
        let t0 = crate::informer::fake::t0();
        let mut b = Backoff::new(BackoffConfig::default());
        for i in 0..4 {
            b.next_delay(t0 + Duration::from_secs(i), 0.0);
        }
        assert_eq!(b.current(), ms(12800));
        // 119 s after the last request: no reset.
        let got = b.next_delay(t0 + Duration::from_secs(3 + 119), 0.0);
        assert_eq!(got, ms(12800));
        // 120 s after the last request: back to 800 ms.
        let got = b.next_delay(t0 + Duration::from_secs(3 + 119 + 120), 0.0);
        assert_eq!(got, ms(800));
        assert_eq!(b.current(), ms(1600));
    }

    #[test]
    fn cap_holds_with_jitter() {
        let t0 = crate::informer::fake::t0();
        let mut b = Backoff::new(BackoffConfig::default());
        let mut last = Duration::ZERO;
        for i in 0..20 {
            last = b.next_delay(t0 + Duration::from_secs(i), 0.999);
        }
        assert!(last <= Duration::from_secs(60), "{last:?}");
        assert!(last >= Duration::from_secs(30), "{last:?}");
    }
}
