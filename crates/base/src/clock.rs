//! Time, and nothing else: the only module that reads the system clocks.
//!
//! Everything that waits, backs off or expires (work queues, rate limiters,
//! reflector backoff, leases) takes an `Arc<dyn Clock>` so that tests can
//! drive time by hand with [`FakeClock`]. Code outside this module must never
//! call `Instant::now()` or `SystemTime::now()` directly (nor mix the clock's
//! instants with them: on Linux the real clock counts time suspended).

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// A source of monotonic time (for intervals and deadlines) and wall time
/// (for timestamps written into API objects).
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Monotonic "now"; only differences between two values mean anything.
    fn now(&self) -> Instant;
    /// Wall-clock time, for timestamps that leave the process.
    fn wall(&self) -> SystemTime;
    /// Block the calling thread for `d` of this clock's time.
    fn sleep(&self, d: Duration);
}

/// Shared handle to a clock.
pub type SharedClock = Arc<dyn Clock>;

/// The real clocks of the operating system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealClock;

impl RealClock {
    /// A shared real clock.
    pub fn shared() -> SharedClock {
        Arc::new(RealClock)
    }
}

/// `Instant::now()` (CLOCK_MONOTONIC on Linux) stands still while the
/// machine is suspended; CLOCK_BOOTTIME does not. The lease, the write
/// fence and every delay are judged on the latter: a leader suspended for a
/// minute sees a minute gone on resume (its fence closed, its lease
/// expired) instead of writing from a minute-old cache until its next
/// renewal fails — a weakness client-go shares (Go's monotonic clock is
/// CLOCK_MONOTONIC). Instants stay `Instant`s: the first reading of both
/// clocks is the base, later ones add the boot time elapsed since.
#[cfg(target_os = "linux")]
fn boot_now() -> Instant {
    static BASE: std::sync::OnceLock<Option<(Instant, Duration)>> = std::sync::OnceLock::new();
    let base = BASE.get_or_init(|| Some((Instant::now(), boottime()?)));
    match base {
        // CLOCK_BOOTTIME does not fail once it has worked (only an unknown
        // clock or a bad pointer make clock_gettime fail); should it, the
        // monotonic time since the base stands in, never before the base.
        Some(base) => {
            let boot = boottime()
                .unwrap_or_else(|| base.1 + Instant::now().saturating_duration_since(base.0));
            since_boot_base(*base, boot)
        }
        None => Instant::now(),
    }
}

/// CLOCK_BOOTTIME, or `None` where the kernel lacks it.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // a libc call or a checked invariant: see SAFETY inside
fn boottime() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the one we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    (rc == 0).then(|| {
        Duration::new(
            ts.tv_sec.max(0) as u64,
            ts.tv_nsec.clamp(0, 999_999_999) as u32,
        )
    })
}

/// The instant `boot` (a CLOCK_BOOTTIME reading) stands for, given one
/// reading of both clocks at the same moment.
fn since_boot_base(base: (Instant, Duration), boot: Duration) -> Instant {
    base.0 + boot.saturating_sub(base.1)
}

impl Clock for RealClock {
    fn now(&self) -> Instant {
        #[cfg(target_os = "linux")]
        return boot_now();
        #[cfg(not(target_os = "linux"))]
        Instant::now()
    }
    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d)
    }
}

/// A clock that only moves when a test calls [`FakeClock::step`] or
/// [`FakeClock::set`]. `sleep` blocks until the fake time has advanced far
/// enough, so threads that sleep on it are released deterministically.
#[derive(Debug)]
pub struct FakeClock {
    state: Mutex<FakeState>,
    moved: Condvar,
}

#[derive(Debug)]
struct FakeState {
    base: Instant,
    wall_base: SystemTime,
    offset: Duration,
    /// When each blocked [`Clock::sleep`] is due (offsets), one entry per
    /// sleeping thread until it has woken and left.
    sleepers: Vec<Duration>,
}

impl FakeState {
    /// Sleepers still waiting for time to move: one whose time has come
    /// but that has not yet run again (a busy machine can take long) is
    /// not counted, so a test stepping "while anyone sleeps" cannot step
    /// past it a second time.
    fn waiting(&self) -> usize {
        self.sleepers.iter().filter(|&&u| u > self.offset).count()
    }
}

impl FakeClock {
    /// A fake clock starting at an arbitrary instant and at the Unix time
    /// 2026-01-01T00:00:00Z.
    pub fn new() -> Arc<FakeClock> {
        Arc::new(FakeClock {
            state: Mutex::new(FakeState {
                base: Instant::now(),
                wall_base: SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600),
                offset: Duration::ZERO,
                sleepers: Vec::new(),
            }),
            moved: Condvar::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FakeState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Advance time by `d`, waking sleepers whose time has come.
    pub fn step(&self, d: Duration) {
        self.lock().offset += d;
        self.moved.notify_all();
    }

    /// Time elapsed since the clock was made.
    pub fn elapsed(&self) -> Duration {
        self.lock().offset
    }

    /// Number of threads blocked in [`Clock::sleep`] whose time has not
    /// yet come.
    pub fn sleepers(&self) -> usize {
        self.lock().waiting()
    }

    /// Wait (in real time, at most `limit`) until at least `n` threads sleep
    /// on this clock. Returns whether that happened. For tests that must not
    /// step time before a thread has gone to sleep.
    pub fn wait_for_sleepers(&self, n: usize, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut st = self.lock();
        while st.waiting() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            st = self
                .moved
                .wait_timeout(st, left.min(Duration::from_millis(5)))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Instant {
        let st = self.lock();
        st.base + st.offset
    }
    fn wall(&self) -> SystemTime {
        let st = self.lock();
        st.wall_base + st.offset
    }
    fn sleep(&self, d: Duration) {
        let mut st = self.lock();
        let until = st.offset + d;
        st.sleepers.push(until);
        self.moved.notify_all();
        while st.offset < until {
            st = self.moved.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        if let Some(i) = st.sleepers.iter().position(|&u| u == until) {
            st.sleepers.swap_remove(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_time_counts_what_the_boot_clock_counts() {
        // A minute suspended: CLOCK_BOOTTIME moved by 60 s more than the
        // monotonic clock did, and so does the instant.
        let i = Instant::now();
        let base = (i, Duration::from_secs(100));
        assert_eq!(since_boot_base(base, Duration::from_secs(100)), i);
        assert_eq!(
            since_boot_base(base, Duration::from_secs(161)),
            i + Duration::from_secs(61)
        );
        // Never before the base.
        assert_eq!(since_boot_base(base, Duration::from_secs(99)), i);
        // The real clock moves forward with it.
        let a = RealClock.now();
        std::thread::sleep(Duration::from_millis(5));
        let b = RealClock.now();
        assert!(
            b.duration_since(a) >= Duration::from_millis(5),
            "{a:?} {b:?}"
        );
    }

    #[test]
    fn fake_clock_moves_only_when_stepped() {
        let c = FakeClock::new();
        let t0 = c.now();
        let w0 = c.wall();
        assert_eq!(c.now(), t0);
        c.step(Duration::from_secs(3));
        assert_eq!(c.now() - t0, Duration::from_secs(3));
        assert_eq!(
            c.wall().duration_since(w0).ok(),
            Some(Duration::from_secs(3))
        );
    }

    #[test]
    fn fake_sleep_returns_after_step() {
        let c = FakeClock::new();
        let c2 = Arc::clone(&c);
        let h = std::thread::spawn(move || c2.sleep(Duration::from_secs(10)));
        assert!(c.wait_for_sleepers(1, Duration::from_secs(5)));
        c.step(Duration::from_secs(9));
        assert_eq!(c.sleepers(), 1);
        c.step(Duration::from_secs(1));
        // Due now: no longer counted, even before the thread has run again.
        assert_eq!(c.sleepers(), 0);
        h.join().expect("sleeper thread");
        assert_eq!(c.sleepers(), 0);
    }
}
