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
//! A failure reported after an answer that came later than it (two
//! requests racing) is superseded by that answer: it does not mark the
//! server unreachable.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
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
#[derive(Debug)]
pub struct Link {
    /// Fast path: false while nothing failed since the last success.
    down: AtomicBool,
    /// What the times below count from: an hour before the first time
    /// stamped, so that times a little earlier still stamp apart (set from
    /// the callers' clock; this module never reads time itself).
    base: OnceLock<Instant>,
    /// The latest answer's time, in nanoseconds after `base` plus one (0:
    /// none yet).
    last_answer: AtomicU64,
    /// The first failure since the last success.
    since: Mutex<Option<Instant>>,
    /// Successes that ended an unreachable period of at least [`MIN_DOWN`].
    returns: AtomicU64,
}

impl Default for Link {
    fn default() -> Self {
        Self {
            down: AtomicBool::new(false),
            base: OnceLock::new(),
            last_answer: AtomicU64::new(0),
            since: Mutex::new(None),
            returns: AtomicU64::new(0),
        }
    }
}

impl Link {
    /// A request could not reach the server (DNS, connect, I/O, a connect
    /// or send timeout, a proxy in front of it that found no server),
    /// found out at `now`. Ignored when an answer came later than `now`:
    /// the server was reachable after this failure.
    pub fn unreachable(&self, now: Instant) {
        let at = self.stamp(now);
        let mut since = self.since.lock().unwrap_or_else(|p| p.into_inner());
        if since.is_some() || self.last_answer.load(Ordering::SeqCst) > at {
            // Already down since an earlier failure, or superseded.
            return;
        }
        *since = Some(now);
        self.down.store(true, Ordering::SeqCst);
        // An answer that came later than this failure but was reported
        // between the check above and the store saw `down` still false and
        // took the fast path: it supersedes the failure all the same.
        if self.last_answer.load(Ordering::SeqCst) > at {
            *since = None;
            self.down.store(false, Ordering::SeqCst);
        }
    }

    /// The server answered a request at `now` (anything but a 5xx or 429).
    /// When it had not answered since a failure to reach it at least
    /// [`MIN_DOWN`] before, this counts as a return: how long since that
    /// failure.
    pub fn answered(&self, now: Instant) -> Option<Duration> {
        self.last_answer
            .fetch_max(self.stamp(now), Ordering::SeqCst);
        if !self.down() {
            return None;
        }
        let mut since = self.since.lock().unwrap_or_else(|p| p.into_inner());
        self.down.store(false, Ordering::SeqCst);
        let gone = now.saturating_duration_since(since.take()?);
        if gone < MIN_DOWN {
            return None;
        }
        self.returns.fetch_add(1, Ordering::SeqCst);
        Some(gone)
    }

    /// Whether a request failed since the last answer (one atomic load:
    /// with the time's `fetch_max`, all an answer costs while the server
    /// is reachable).
    fn down(&self) -> bool {
        self.down.load(Ordering::SeqCst)
    }

    /// `t` as nanoseconds after `base`, plus one (so that 0 means never).
    fn stamp(&self, t: Instant) -> u64 {
        let base = self
            .base
            .get_or_init(|| t.checked_sub(Duration::from_secs(3600)).unwrap_or(t));
        let nanos = t.saturating_duration_since(*base).as_nanos();
        u64::try_from(nanos).unwrap_or(u64::MAX - 1) + 1
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

    #[test]
    fn a_failure_reported_after_a_later_answer_is_superseded() {
        // Two requests race: one fails at t + 100 ms, the other is answered
        // at t + 200 ms, and the answer is reported first.
        let l = Link::default();
        let t = Instant::now();
        assert_eq!(l.answered(t + ms(200)), None);
        l.unreachable(t + ms(100));
        assert_eq!(
            l.answered(t + ms(1500)),
            None,
            "the server answered after that failure: no outage to end"
        );
        assert_eq!(l.returns(), 0);
        // A failure at the same instant as the latest answer is not
        // superseded: it is the later news.
        l.unreachable(t + ms(1500));
        assert_eq!(l.answered(t + ms(3000)), Some(ms(1500)));
        assert_eq!(l.returns(), 1);
    }

    #[test]
    fn racing_answers_and_failures_never_leave_the_link_down_behind_an_answer() {
        // Threads report failures stamped before answers that other threads
        // report concurrently; whatever the interleaving, a failure older
        // than the newest answer must not leave the link down.
        use std::sync::Arc;
        for _ in 0..200 {
            let l = Arc::new(Link::default());
            let t = Instant::now();
            let failer = {
                let l = Arc::clone(&l);
                std::thread::spawn(move || l.unreachable(t + ms(10)))
            };
            let answerer = {
                let l = Arc::clone(&l);
                std::thread::spawn(move || l.answered(t + ms(20)))
            };
            failer.join().expect("failer");
            answerer.join().expect("answerer");
            assert!(
                !l.down(),
                "a failure older than the last answer left the link down"
            );
            assert_eq!(l.answered(t + ms(5000)), None);
            assert_eq!(l.returns(), 0);
        }
    }
}
