//! Whether this process reaches the API server: one [`Link`] per server,
//! shared by every client of it, so that a thread waiting out a backoff
//! after the server became unreachable learns as soon as any other request
//! got through again (the lease thread tries every `retry_period`, the
//! heartbeat every few seconds, informers on a ladder up to a minute).
//!
//! Owns only that record: requests report to it (a failure to reach the
//! server — DNS, connect, I/O, a connect or send timeout, a proxy's 502,
//! 503 or 504 page in place of the server's answer, never a slow answer —
//! and every answer that is not a 5xx or 429), waiters read how
//! many times the server came back. It never blocks on I/O, never sleeps
//! and never logs; its lock is taken only while the server is unreachable.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long after the first failure to reach the server (with no answer
/// since) an answer counts as a return. A busy link that fails some
/// requests and passes others counts none: waiters keep their own backoff
/// instead of being sent back each time one request passes. On a quiet
/// daemon one failure followed by the next answer a second later counts:
/// only failures to reach the server are reported, so it was unreachable
/// (a restart, a dropped link), and the waiters it releases failed the same
/// way.
pub const MIN_DOWN: Duration = Duration::from_secs(1);

/// The shared record (`Default`: reachable, no return yet).
#[derive(Debug, Default)]
pub struct Link {
    /// Fast path: false while nothing failed since the last success.
    down: AtomicBool,
    /// The first failure since the last success.
    since: Mutex<Option<Instant>>,
    /// Successes that ended an unreachable period of at least [`MIN_DOWN`].
    returns: AtomicU64,
}

impl Link {
    /// A request could not reach the server (DNS, connect, I/O, a connect
    /// or send timeout, a proxy in front of it that found no server).
    pub fn unreachable(&self, now: Instant) {
        let mut since = self.since.lock().unwrap_or_else(|p| p.into_inner());
        since.get_or_insert(now);
        self.down.store(true, Ordering::Release);
    }

    /// The server answered a request at `now` (anything but a 5xx or 429).
    /// When it had not answered since a failure to reach it at least
    /// [`MIN_DOWN`] before, this counts as a return: how long since that
    /// failure.
    pub fn answered(&self, now: Instant) -> Option<Duration> {
        if !self.down() {
            return None;
        }
        let mut since = self.since.lock().unwrap_or_else(|p| p.into_inner());
        self.down.store(false, Ordering::Release);
        let gone = now.saturating_duration_since(since.take()?);
        if gone < MIN_DOWN {
            return None;
        }
        self.returns.fetch_add(1, Ordering::SeqCst);
        Some(gone)
    }

    /// Whether a request failed since the last answer (one atomic load:
    /// all an answer costs while the server is reachable).
    fn down(&self) -> bool {
        self.down.load(Ordering::Acquire)
    }

    /// How many times the server came back (see [`Link::answered`]).
    pub fn returns(&self) -> u64 {
        self.returns.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_success_after_a_second_without_any_counts_one_return() {
        let t = Instant::now();
        let l = Link::default();
        assert_eq!(l.answered(t), None, "nothing failed");
        l.unreachable(t);
        l.unreachable(t + ms(600));
        assert_eq!(
            l.answered(t + ms(1500)),
            Some(ms(1500)),
            "from the first failure"
        );
        assert_eq!(l.returns(), 1);
        assert_eq!(l.answered(t + ms(1600)), None, "already back");
        assert_eq!(l.returns(), 1);
    }

    #[test]
    fn a_link_whose_requests_sometimes_pass_counts_no_return() {
        let t = Instant::now();
        let l = Link::default();
        for i in 0..10 {
            l.unreachable(t + ms(500 * i));
            assert_eq!(l.answered(t + ms(500 * i + 400)), None, "round {i}");
        }
        assert_eq!(l.returns(), 0);
        // Then a real outage.
        l.unreachable(t + ms(6000));
        assert_eq!(l.answered(t + ms(8000)), Some(ms(2000)));
        assert_eq!(l.returns(), 1);
    }
}
