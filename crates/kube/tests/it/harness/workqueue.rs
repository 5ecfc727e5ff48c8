//! Helpers shared by the work-queue integration tests: real-time polling
//! (upstream's `wait.Poll`) and a queue config on a fake clock.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use endpointd_base::clock::{Clock, FakeClock, RealClock};
use endpointd_kube::workqueue::QueueConfig;

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Poll `cond` every real millisecond for at most 10 s (upstream's
/// `wait.Poll(1ms, 10s)`).
pub fn eventually(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..10_000 {
        if cond() {
            return;
        }
        RealClock.sleep(ms(1));
    }
    panic!("timed out waiting for {what}");
}

/// Check for `real_ms` real milliseconds that `cond` stays true.
pub fn stays(what: &str, real_ms: u64, cond: impl Fn() -> bool) {
    for _ in 0..real_ms {
        assert!(cond(), "{what}");
        RealClock.sleep(ms(1));
    }
}

pub fn fake_config(name: &str) -> (Arc<FakeClock>, QueueConfig) {
    let clock = FakeClock::new();
    let cfg = QueueConfig::new(name).clock(clock.clone()).max_wait(ms(1));
    (clock, cfg)
}
