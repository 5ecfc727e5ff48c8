//! The write fence: every write of Endpoints, EndpointSlices and Events asks
//! it first whether this instance may write *now*.
//!
//! With leader election, the lease thread reports each successful renewal
//! ([`Fence::renewed`]); a write is allowed only while the last renewal is
//! younger than `renew_deadline` on the monotonic clock. A process that was
//! paused (SIGSTOP, a frozen VM) or cut off from the API server therefore
//! sends nothing until the lease thread has re-confirmed leadership —
//! stricter than client-go, whose paused leader may finish in-flight syncs
//! after its lease was taken. The writers' clients carry the fence as their
//! [`WriteGate`], so it is asked again before every retry and bounds the
//! connecting and sending of each attempt. Without election the fence is always open.
//!
//! Owns that decision only; never talks to the API server.

use crate::lease::LeadershipSink;
use endpointd_base::clock::SharedClock;
use endpointd_kube::kube::{Refusal, WriteGate};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why a write was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fenced(pub String);

impl fmt::Display for Fenced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "write refused: {}", self.0)
    }
}

impl std::error::Error for Fenced {}

#[derive(Debug)]
enum Mode {
    Open,
    Leased {
        clock: SharedClock,
        renew_deadline: Duration,
        last_renewal: Mutex<Option<Instant>>,
    },
}

/// Shared handle; clones see the same state.
#[derive(Clone, Debug)]
pub struct Fence(Arc<Mode>);

impl Fence {
    /// Always allows writes (leader election disabled; tests).
    pub fn open() -> Fence {
        Fence(Arc::new(Mode::Open))
    }

    /// Closed until [`Fence::renewed`]; then open for `renew_deadline` after
    /// each renewal.
    pub fn leased(clock: SharedClock, renew_deadline: Duration) -> Fence {
        Fence(Arc::new(Mode::Leased {
            clock,
            renew_deadline,
            last_renewal: Mutex::new(None),
        }))
    }

    /// The lease was acquired or renewed at `at` (monotonic).
    pub fn renewed(&self, at: Instant) {
        if let Mode::Leased { last_renewal, .. } = &*self.0 {
            let mut l = last_renewal.lock().unwrap_or_else(|p| p.into_inner());
            if l.is_none_or(|prev| at > prev) {
                *l = Some(at);
            }
        }
    }

    /// Leadership is gone: refuse every write from now on.
    pub fn revoke(&self) {
        if let Mode::Leased { last_renewal, .. } = &*self.0 {
            *last_renewal.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
    }

    /// `Ok` if a write may be sent now.
    pub fn check(&self) -> Result<(), Fenced> {
        self.left().map(|_| ())
    }

    /// How long writes may still be sent (`None`: no limit), or why not.
    fn left(&self) -> Result<Option<Duration>, Fenced> {
        match &*self.0 {
            Mode::Open => Ok(None),
            Mode::Leased {
                clock,
                renew_deadline,
                last_renewal,
            } => {
                let last = *last_renewal.lock().unwrap_or_else(|p| p.into_inner());
                match last {
                    None => Err(Fenced("not the leader".into())),
                    Some(t) => {
                        let age = clock.now().saturating_duration_since(t);
                        if age < *renew_deadline {
                            Ok(Some(*renew_deadline - age))
                        } else {
                            Err(Fenced(format!(
                                "leadership not confirmed for {:.1}s (renew_deadline {:.1}s)",
                                age.as_secs_f64(),
                                renew_deadline.as_secs_f64()
                            )))
                        }
                    }
                }
            }
        }
    }
}

/// The client asks the fence before every attempt of a write, retries
/// included, and bounds the attempt's connecting and sending by the
/// fence's deadline: a write that waited (rate limiter, backoff, a slow
/// link) past `renew_deadline` since the last renewal is not sent.
impl WriteGate for Fence {
    fn time_left(&self) -> Result<Option<Duration>, Refusal> {
        Ok(self.left()?)
    }
}

/// The lease thread opens and closes the fence through its interface.
impl LeadershipSink for Fence {
    fn renewed(&self, sent: Instant) {
        Fence::renewed(self, sent);
    }
    fn stopped_leading(&self) {
        self.revoke();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use endpointd_base::clock::{Clock, FakeClock};

    #[test]
    fn open_always_allows() {
        assert_eq!(Fence::open().check(), Ok(()));
    }

    #[test]
    fn leased_allows_only_within_renew_deadline_of_last_renewal() {
        let clock = FakeClock::new();
        let f = Fence::leased(clock.clone(), Duration::from_secs(10));
        assert!(f.check().is_err(), "closed before the first renewal");
        f.renewed(clock.now());
        assert!(f.check().is_ok());
        clock.step(Duration::from_millis(9_999));
        assert!(f.check().is_ok());
        clock.step(Duration::from_millis(1));
        assert!(f.check().is_err(), "a paused leader may not write");
        f.renewed(clock.now());
        assert!(f.check().is_ok());
        // An older renewal reported late does not move the fence back.
        f.renewed(clock.now() - Duration::from_secs(9));
        clock.step(Duration::from_secs(5));
        assert!(f.check().is_ok());
        f.revoke();
        assert!(f.check().is_err());
    }

    #[test]
    fn as_a_write_gate_it_grants_what_is_left_of_renew_deadline() {
        let clock = FakeClock::new();
        let f = Fence::leased(clock.clone(), Duration::from_secs(10));
        assert_eq!(
            f.time_left().map_err(|e| e.to_string()),
            Err("write refused: not the leader".into())
        );
        f.renewed(clock.now());
        clock.step(Duration::from_millis(9_250));
        assert_eq!(f.time_left().ok(), Some(Some(Duration::from_millis(750))));
        clock.step(Duration::from_millis(750));
        let e = f.time_left().expect_err("lapsed").to_string();
        assert!(e.contains("leadership not confirmed for 10.0s"), "{e}");
        assert_eq!(Fence::open().time_left().ok(), Some(None));
    }
}
