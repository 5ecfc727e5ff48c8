//! A token bucket with `golang.org/x/time/rate` reservation semantics: the
//! arithmetic behind both upstream's workqueue `BucketRateLimiter`
//! (`rate.NewLimiter(10, 100)`) and client-go's client-side QPS limiter
//! (`flowcontrol.NewTokenBucketRateLimiter`). The work queue and the API
//! client each wrap it with their own policy, lock and waiting.
//!
//! Pure: callers pass `now`. [`TokenBucket::reserve`] always takes a token,
//! even one that only exists in the future, and returns how long to wait for
//! it (`Reserve().Delay()`), so tokens may go negative.
//!
//! It must never read the clock or sleep: time comes in as `now`, and
//! waiting is the caller's job.

use std::time::{Duration, Instant};

/// What `reserve` returns when a token can never be had (burst 0): the
/// largest Go `time.Duration`, upstream's `rate.InfDuration`.
pub const INF_DELAY: Duration = Duration::from_nanos(i64::MAX as u64);

/// A token bucket: `qps` tokens a second, at most `burst` saved, starting
/// full.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    qps: f64,
    burst: u32,
    tokens: f64,
    /// When `tokens` was last brought up to date; `None` before first use.
    last: Option<Instant>,
}

impl TokenBucket {
    /// A full bucket refilled at `qps` tokens per second (`f64::INFINITY` =
    /// no limit) holding at most `burst` tokens.
    pub fn new(qps: f64, burst: u32) -> TokenBucket {
        TokenBucket {
            qps,
            burst,
            tokens: f64::from(burst),
            last: None,
        }
    }

    /// Tokens available at `now` (negative when reservations are queued).
    pub fn tokens_at(&self, now: Instant) -> f64 {
        let Some(last) = self.last else {
            return self.tokens;
        };
        let elapsed = now.saturating_duration_since(last).as_secs_f64();
        let refill = if self.qps > 0.0 {
            elapsed * self.qps
        } else {
            0.0
        };
        (self.tokens + refill).min(f64::from(self.burst))
    }

    /// Take one token at `now` and return how long until it is really
    /// available (zero if it is available now).
    pub fn reserve(&mut self, now: Instant) -> Duration {
        if self.qps.is_infinite() && self.qps > 0.0 {
            return Duration::ZERO;
        }
        if self.burst == 0 {
            return INF_DELAY;
        }
        let tokens = self.tokens_at(now) - 1.0;
        // As rate.reserveN: `last` becomes `now`, even if the clock went
        // backwards (then nothing was refilled).
        self.last = Some(now);
        self.tokens = tokens;
        if tokens >= 0.0 {
            return Duration::ZERO;
        }
        if self.qps <= 0.0 || self.qps.is_nan() {
            return INF_DELAY;
        }
        // rate.durationFromTokens: truncate to whole nanoseconds.
        let nanos = 1e9 * (-tokens / self.qps);
        if nanos >= INF_DELAY.as_nanos() as f64 {
            INF_DELAY
        } else {
            Duration::from_nanos(nanos as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// One row: starting from a fresh bucket, each step advances time by
    /// `.0`, then reserves `.1` times and expects `.2` as the last delay.
    struct Case {
        name: &'static str,
        qps: f64,
        burst: u32,
        steps: Vec<(u64, u32, Duration)>,
    }

    #[test]
    fn reservation_ladders() {
        const INF: Duration = INF_DELAY;
        let cases = [
            Case {
                name: "controller bucket: 100 free, then 100 ms apart",
                qps: 10.0,
                burst: 100,
                steps: vec![
                    (0, 100, Duration::ZERO),
                    (0, 1, Duration::from_millis(100)),
                    (0, 1, Duration::from_millis(200)),
                    // 1 s refills 10 tokens: -2 + 10 = 8 left, one taken.
                    (1000, 1, Duration::ZERO),
                    (0, 7, Duration::ZERO),
                    (0, 1, Duration::from_millis(100)),
                ],
            },
            Case {
                name: "reservations in the future keep stacking",
                qps: 1.0,
                burst: 1,
                steps: vec![
                    (0, 1, Duration::ZERO),
                    (0, 1, Duration::from_secs(1)),
                    (0, 1, Duration::from_secs(2)),
                    (500, 1, Duration::from_millis(2500)),
                ],
            },
            Case {
                name: "idle refill is capped at burst",
                qps: 10.0,
                burst: 5,
                steps: vec![
                    (0, 5, Duration::ZERO),
                    (10_000, 5, Duration::ZERO),
                    (0, 1, Duration::from_millis(100)),
                ],
            },
            Case {
                name: "client ladder: 3 free, then queued 100 ms apart",
                qps: 10.0,
                burst: 3,
                steps: vec![
                    (0, 3, Duration::ZERO),
                    (0, 1, ms(100)),
                    (0, 1, ms(200)),
                    // 300 ms refill 3 tokens, 2 were owed: this one is free.
                    (300, 1, Duration::ZERO),
                    (0, 1, ms(100)),
                    // A long idle period refills to burst only.
                    (10_000, 3, Duration::ZERO),
                    (0, 1, ms(100)),
                ],
            },
            Case {
                name: "a tiny rate saturates instead of overflowing",
                qps: 1e-30,
                burst: 1,
                steps: vec![(0, 1, Duration::ZERO), (0, 1, INF)],
            },
            Case {
                name: "the smallest positive rate saturates too",
                qps: f64::MIN_POSITIVE,
                burst: 1,
                steps: vec![(0, 1, Duration::ZERO), (0, 1, INF)],
            },
            Case {
                name: "burst 0 never grants a token",
                qps: 10.0,
                burst: 0,
                steps: vec![(0, 1, INF), (1000, 1, INF)],
            },
            Case {
                name: "infinite rate never waits",
                qps: f64::INFINITY,
                burst: 0,
                steps: vec![(0, 1000, Duration::ZERO)],
            },
        ];
        let start = endpointd_base::clock::FakeClock::new();
        for case in cases {
            let mut b = TokenBucket::new(case.qps, case.burst);
            let mut now = endpointd_base::clock::Clock::now(&*start);
            for (i, &(advance, n, want)) in case.steps.iter().enumerate() {
                now += ms(advance);
                let mut got = Duration::ZERO;
                for _ in 0..n {
                    got = b.reserve(now);
                }
                assert_eq!(got, want, "{}: step {i}", case.name);
            }
        }
    }
}
