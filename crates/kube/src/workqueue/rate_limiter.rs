//! Retry policy apart from mechanism (upstream `default_rate_limiters.go`):
//! small [`RateLimiter`]s that say how long a key waits before its next try,
//! composed with [`MaxOfRateLimiter`], and the two controllers' presets.
//!
//! Limiters only compute delays; they never sleep. The bucket limiter reads
//! time through the injected clock.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::Key;
use crate::tokenbucket::TokenBucket;
use endpointd_base::clock::SharedClock;

/// How many times the Endpoints and EndpointSlice controllers retry a key
/// before dropping it (`maxRetries = 15` in both upstream controllers).
pub const MAX_RETRIES: u32 = 15;
/// Per-key base delay of the Endpoints controller
/// (`DefaultControllerRateLimiter`: 5 ms, 10 ms, 20 ms, ...).
pub const ENDPOINTS_BASE_DELAY: Duration = Duration::from_millis(5);
/// Per-key base delay of the EndpointSlice controller (`defaultSyncBackOff`).
pub const ENDPOINTSLICE_BASE_DELAY: Duration = Duration::from_secs(1);
/// Per-key delay cap of both controllers (`maxSyncBackOff`, and 1000 s in
/// `DefaultControllerRateLimiter`).
pub const MAX_BACKOFF: Duration = Duration::from_secs(1000);
/// Overall retry rate of both controllers' bucket: 10 qps ...
pub const RETRY_BUCKET_QPS: f64 = 10.0;
/// ... with a burst of 100.
pub const RETRY_BUCKET_BURST: u32 = 100;

/// Decides how long a key waits before it is retried.
pub trait RateLimiter<K>: Send + Sync {
    /// The delay before `key`'s next try; records one more failure.
    fn when(&self, key: &K) -> Duration;
    /// Stop tracking `key` (it succeeded or was given up).
    fn forget(&self, key: &K);
    /// How many failures of `key` are recorded.
    fn num_requeues(&self, key: &K) -> u32;
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// `base · 2^failures`, capped at `max` (upstream
/// `ItemExponentialFailureRateLimiter`). The exponent is the number of
/// failures *before* this one.
#[derive(Debug)]
pub struct ItemExponentialFailureRateLimiter<K> {
    failures: Mutex<HashMap<K, u32>>,
    base: Duration,
    max: Duration,
}

impl<K: Key> ItemExponentialFailureRateLimiter<K> {
    /// Delays `base`, `2·base`, `4·base`, ... at most `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        ItemExponentialFailureRateLimiter {
            failures: Mutex::new(HashMap::new()),
            base,
            max,
        }
    }
}

/// `base · 2^exp`, or `max` when that exceeds `max` (or overflows).
pub(crate) fn exponential(base: Duration, exp: u32, max: Duration) -> Duration {
    let nanos = base.as_nanos();
    let scaled = if nanos == 0 {
        Some(0)
    } else {
        1u128.checked_shl(exp).and_then(|f| nanos.checked_mul(f))
    };
    match scaled {
        Some(n) if n <= max.as_nanos() => Duration::from_nanos(n as u64),
        _ => max,
    }
}

impl<K: Key> RateLimiter<K> for ItemExponentialFailureRateLimiter<K> {
    fn when(&self, key: &K) -> Duration {
        let mut f = lock(&self.failures);
        let n = f.entry(key.clone()).or_insert(0);
        let exp = *n;
        *n = n.saturating_add(1);
        exponential(self.base, exp, self.max)
    }
    fn forget(&self, key: &K) {
        lock(&self.failures).remove(key);
    }
    fn num_requeues(&self, key: &K) -> u32 {
        lock(&self.failures).get(key).copied().unwrap_or(0)
    }
}

/// `fast` for the first `max_fast_attempts` failures of a key, `slow` after
/// (upstream `ItemFastSlowRateLimiter`).
#[derive(Debug)]
pub struct ItemFastSlowRateLimiter<K> {
    failures: Mutex<HashMap<K, u32>>,
    fast: Duration,
    slow: Duration,
    max_fast_attempts: u32,
}

impl<K: Key> ItemFastSlowRateLimiter<K> {
    /// A fast/slow limiter.
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: u32) -> Self {
        ItemFastSlowRateLimiter {
            failures: Mutex::new(HashMap::new()),
            fast,
            slow,
            max_fast_attempts,
        }
    }
}

impl<K: Key> RateLimiter<K> for ItemFastSlowRateLimiter<K> {
    fn when(&self, key: &K) -> Duration {
        let mut f = lock(&self.failures);
        let n = f.entry(key.clone()).or_insert(0);
        *n = n.saturating_add(1);
        if *n <= self.max_fast_attempts {
            self.fast
        } else {
            self.slow
        }
    }
    fn forget(&self, key: &K) {
        lock(&self.failures).remove(key);
    }
    fn num_requeues(&self, key: &K) -> u32 {
        lock(&self.failures).get(key).copied().unwrap_or(0)
    }
}

/// One token bucket shared by all keys (upstream `BucketRateLimiter`): it
/// bounds the overall retry rate, not any one key's.
#[derive(Debug)]
pub struct BucketRateLimiter {
    bucket: Mutex<TokenBucket>,
    clock: SharedClock,
}

impl BucketRateLimiter {
    /// `qps` retries a second on average, bursts of `burst`.
    pub fn new(qps: f64, burst: u32, clock: SharedClock) -> Self {
        BucketRateLimiter {
            bucket: Mutex::new(TokenBucket::new(qps, burst)),
            clock,
        }
    }
}

impl<K> RateLimiter<K> for BucketRateLimiter {
    fn when(&self, _: &K) -> Duration {
        let now = self.clock.now();
        lock(&self.bucket).reserve(now)
    }
    fn forget(&self, _: &K) {}
    fn num_requeues(&self, _: &K) -> u32 {
        0
    }
}

/// The largest delay of its children; every child records every failure
/// (upstream `MaxOfRateLimiter`).
pub struct MaxOfRateLimiter<K> {
    limiters: Vec<Arc<dyn RateLimiter<K>>>,
}

impl<K> std::fmt::Debug for MaxOfRateLimiter<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MaxOfRateLimiter({} limiters)", self.limiters.len())
    }
}

impl<K> MaxOfRateLimiter<K> {
    /// Combine `limiters`.
    pub fn new(limiters: Vec<Arc<dyn RateLimiter<K>>>) -> Self {
        MaxOfRateLimiter { limiters }
    }
}

impl<K: Eq + Hash> RateLimiter<K> for MaxOfRateLimiter<K> {
    fn when(&self, key: &K) -> Duration {
        self.limiters
            .iter()
            .map(|l| l.when(key))
            .fold(Duration::ZERO, Duration::max)
    }
    fn forget(&self, key: &K) {
        for l in &self.limiters {
            l.forget(key);
        }
    }
    fn num_requeues(&self, key: &K) -> u32 {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(key))
            .max()
            .unwrap_or(0)
    }
}

fn controller_limiter<K: Key>(base: Duration, clock: SharedClock) -> MaxOfRateLimiter<K> {
    MaxOfRateLimiter::new(vec![
        Arc::new(ItemExponentialFailureRateLimiter::new(base, MAX_BACKOFF)),
        Arc::new(BucketRateLimiter::new(
            RETRY_BUCKET_QPS,
            RETRY_BUCKET_BURST,
            clock,
        )),
    ])
}

/// Upstream `DefaultControllerRateLimiter`: per key 5 ms · 2^n up to
/// 1000 s, overall 10 qps with burst 100.
pub fn default_controller_rate_limiter<K: Key>(clock: SharedClock) -> MaxOfRateLimiter<K> {
    controller_limiter(ENDPOINTS_BASE_DELAY, clock)
}

/// The Endpoints controller's limiter (queue `endpoint`): the default one.
pub fn endpoints_controller_rate_limiter<K: Key>(clock: SharedClock) -> MaxOfRateLimiter<K> {
    default_controller_rate_limiter(clock)
}

/// The EndpointSlice controller's limiter (queue `endpoint_slice`): per key
/// 1 s · 2^n up to 1000 s, overall 10 qps with burst 100.
pub fn endpointslice_controller_rate_limiter<K: Key>(clock: SharedClock) -> MaxOfRateLimiter<K> {
    controller_limiter(ENDPOINTSLICE_BASE_DELAY, clock)
}

#[cfg(test)]
mod tests {
    use super::*;
    use endpointd_base::clock::FakeClock;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    enum Op {
        When(&'static str, Duration),
        Requeues(&'static str, u32),
        Forget(&'static str),
    }
    use Op::*;

    fn run(name: &str, l: &dyn RateLimiter<String>, ops: &[Op]) {
        for (i, op) in ops.iter().enumerate() {
            match op {
                When(k, want) => assert_eq!(l.when(&k.to_string()), *want, "{name}: op {i}"),
                Requeues(k, want) => {
                    assert_eq!(l.num_requeues(&k.to_string()), *want, "{name}: op {i}")
                }
                Forget(k) => l.forget(&k.to_string()),
            }
        }
    }

    #[test]
    fn exponential_ladder_and_forget() {
        // Upstream TestItemExponentialFailureRateLimiter.
        let l = ItemExponentialFailureRateLimiter::new(ms(1), Duration::from_secs(1));
        run(
            "exponential",
            &l,
            &[
                When("one", ms(1)),
                When("one", ms(2)),
                When("one", ms(4)),
                When("one", ms(8)),
                When("one", ms(16)),
                Requeues("one", 5),
                When("two", ms(1)),
                When("two", ms(2)),
                Requeues("two", 2),
                Forget("one"),
                Requeues("one", 0),
                When("one", ms(1)),
            ],
        );
    }

    #[test]
    fn exponential_cap_and_overflow() {
        // (base, max, failures before, expected next delay); the first four
        // rows are upstream TestItemExponentialFailureRateLimiterOverFlow.
        let min = Duration::from_secs(60);
        let hour = Duration::from_secs(3600);
        let s = Duration::from_secs;
        let rows = [
            (ms(1), s(1000), 5, ms(32)),
            (ms(1), s(1000), 1000, s(1000)),
            (min, 1000 * hour, 2, 4 * min),
            (min, 1000 * hour, 1000, 1000 * hour),
            // Endpoints controller: the 15th retry waits 5 ms · 2^14.
            (ms(5), s(1000), 14, ms(81_920)),
            (ms(5), s(1000), 17, ms(655_360)),
            (ms(5), s(1000), 18, s(1000)),
            // EndpointSlice controller: 1 s, 2 s, ... 512 s, then 1000 s.
            (s(1), s(1000), 9, s(512)),
            (s(1), s(1000), 10, s(1000)),
            (Duration::ZERO, s(1), 500, Duration::ZERO),
        ];
        for (i, (base, max, before, want)) in rows.into_iter().enumerate() {
            let l = ItemExponentialFailureRateLimiter::new(base, max);
            let k = "k".to_string();
            for _ in 0..before {
                l.when(&k);
            }
            assert_eq!(l.when(&k), want, "row {i}");
            assert_eq!(l.num_requeues(&k), before + 1, "row {i}");
        }
    }

    #[test]
    fn fast_slow_and_max_of() {
        // Upstream TestItemFastSlowRateLimiter and TestMaxOfRateLimiter.
        let fast_slow = ItemFastSlowRateLimiter::new(ms(5), Duration::from_secs(10), 3);
        let max_of: MaxOfRateLimiter<String> = MaxOfRateLimiter::new(vec![
            Arc::new(ItemFastSlowRateLimiter::new(
                ms(5),
                Duration::from_secs(3),
                3,
            )),
            Arc::new(ItemExponentialFailureRateLimiter::new(
                ms(1),
                Duration::from_secs(1),
            )),
        ]);
        for (name, l, slow) in [
            ("fast-slow", &fast_slow as &dyn RateLimiter<String>, 10),
            ("max-of", &max_of, 3),
        ] {
            let slow = Duration::from_secs(slow);
            run(
                name,
                l,
                &[
                    When("one", ms(5)),
                    When("one", ms(5)),
                    When("one", ms(5)),
                    When("one", slow),
                    When("one", slow),
                    Requeues("one", 5),
                    When("two", ms(5)),
                    When("two", ms(5)),
                    Requeues("two", 2),
                    Forget("one"),
                    Requeues("one", 0),
                    When("one", ms(5)),
                ],
            );
        }
    }

    #[test]
    fn controller_presets() {
        let clock = FakeClock::new();
        // Endpoints: 5 ms · 2^n per key; MAX_RETRIES retries end at ~82 s.
        let ep = endpoints_controller_rate_limiter::<String>(clock.clone());
        let key = "ns/a".to_string();
        for n in 0..MAX_RETRIES {
            assert_eq!(ep.when(&key), ms(5) * 2u32.pow(n), "retry {n}");
        }
        assert_eq!(ep.num_requeues(&key), MAX_RETRIES);
        ep.forget(&key);
        assert_eq!(ep.num_requeues(&key), 0);
        // 15 tokens used; 85 more distinct keys still get 5 ms, then the
        // bucket (10 qps) dominates: 100 ms, 200 ms, ...
        for i in 0..85 {
            assert_eq!(ep.when(&format!("ns/b{i}")), ms(5), "key {i}");
        }
        assert_eq!(ep.when(&"ns/c0".to_string()), ms(100));
        assert_eq!(ep.when(&"ns/c1".to_string()), ms(200));

        // EndpointSlice: 1 s, 2 s, 4 s, ... 512 s, 1000 s.
        let eps = endpointslice_controller_rate_limiter::<String>(clock);
        let want = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 1000];
        for (n, secs) in want.into_iter().enumerate() {
            assert_eq!(eps.when(&key), Duration::from_secs(secs), "retry {n}");
        }
    }

    #[test]
    fn bucket_limiter_reads_the_injected_clock() {
        let clock = FakeClock::new();
        let l = BucketRateLimiter::new(1.0, 1, clock.clone());
        let k = 0u8;
        assert_eq!(RateLimiter::when(&l, &k), Duration::ZERO);
        assert_eq!(RateLimiter::when(&l, &k), Duration::from_secs(1));
        clock.step(Duration::from_secs(3));
        // -1 + 3 = 2, capped at the burst of 1.
        assert_eq!(RateLimiter::when(&l, &k), Duration::ZERO);
        assert_eq!(RateLimiter::when(&l, &k), Duration::from_secs(1));
        assert_eq!(RateLimiter::num_requeues(&l, &k), 0);
    }
}
