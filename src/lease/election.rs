//! client-go's leader election decision (`tools/leaderelection/
//! leaderelection.go` `tryAcquireOrRenew`, `release`; docs/behaviour.md#up-f2 to #up-f6)
//! as pure functions: from what was observed, the Lease just read and
//! the time, what to write.
//!
//! Expiry is judged only by the *local* monotonic time at which this
//! instance last saw the record change (`observed_at`), never by the
//! timestamps inside the record, so clock skew between control-plane
//! nodes cannot hand out a lease early. A read is dated when it
//! *returned* (client-go's `setObservedRecord` after the Get): a slow read
//! may carry a renewal made just before the answer, so dating it from when
//! the request was sent would expire that renewal early.
//!
//! Never does I/O and never reads the clock: time comes in as arguments.

use endpointd_kube::model::{Lease, LeaseSpec, MicroTime, ObjectMeta};
use std::time::{Duration, Instant, SystemTime};

/// What this instance last saw of the election Lease.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// The Lease as last read or written (carries the resourceVersion).
    pub lease: Option<Lease>,
    /// When (local, monotonic) its record last changed as seen from here.
    pub at: Option<Instant>,
}

/// What to do after reading the Lease.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// No Lease yet: create this one.
    Create(Lease),
    /// Write this (acquire, renew or take over) with optimistic concurrency.
    Update(Lease),
    /// Someone else holds a valid lease.
    Held {
        /// Its holder.
        holder: String,
    },
}

fn holder(l: &Lease) -> &str {
    l.spec.holder_identity.as_deref().unwrap_or("")
}

impl Observed {
    /// The observed holder ("" if none).
    pub fn holder(&self) -> &str {
        self.lease.as_ref().map_or("", holder)
    }

    /// Whether the observed record is still valid at `now`
    /// (`observedTime + leaseDurationSeconds > now`).
    pub fn valid(&self, now: Instant) -> bool {
        let (Some(l), Some(at)) = (&self.lease, self.at) else {
            return false;
        };
        let secs = l.spec.lease_duration_seconds.unwrap_or(0).max(0) as u64;
        at + Duration::from_secs(secs) > now
    }

    /// Record a Lease read at `now`: the observation time moves only when
    /// the record changed.
    pub fn saw(&mut self, got: Lease, now: Instant) {
        let changed = self.lease.as_ref().is_none_or(|old| old.spec != got.spec);
        if changed || self.at.is_none() {
            self.at = Some(now);
        }
        self.lease = Some(got);
    }

    /// Record our own successful write at `now`.
    pub fn wrote(&mut self, l: Lease, now: Instant) {
        self.lease = Some(l);
        self.at = Some(now);
    }
}

/// The record this instance writes when it (still) holds the lease.
fn record(me: &str, duration: Duration, wall: SystemTime, keep: Option<&LeaseSpec>) -> LeaseSpec {
    let now = MicroTime::from_system(wall);
    LeaseSpec {
        holder_identity: Some(me.to_string()),
        lease_duration_seconds: Some(duration.as_secs().max(1) as i32),
        acquire_time: keep.and_then(|k| k.acquire_time).or(Some(now)),
        renew_time: Some(now),
        lease_transitions: keep.map_or(Some(0), |k| k.lease_transitions),
        ..keep.cloned().unwrap_or_default()
    }
}

/// The fast path (docs/behaviour.md#up-f3): renew directly from the observed Lease, without a read,
/// when we hold it and it is still valid locally.
pub fn fast_renew(
    obs: &Observed,
    me: &str,
    duration: Duration,
    now: Instant,
    wall: SystemTime,
) -> Option<Lease> {
    let l = obs.lease.as_ref()?;
    if holder(l) != me || !obs.valid(now) {
        return None;
    }
    let mut next = l.clone();
    next.spec = record(me, duration, wall, Some(&l.spec));
    Some(next)
}

/// The slow path (docs/behaviour.md#up-f3), after a read (`got` is `None` on NotFound). `now` is
/// when the read *returned*: the observation time, and the instant at
/// which validity is judged.
///
/// NotFound while the last record we saw names another holder and is
/// still valid locally (someone deleted the Lease: `kubectl delete lease`,
/// a tool recreating it) is `Held` by that holder until it expires: that
/// leader may still be writing, behind a fence open until its last
/// renewal + renew_deadline. client-go creates at once (the same race);
/// the holder itself, or a released or expired record, creates at once.
pub fn decide(
    obs: &mut Observed,
    got: Option<Lease>,
    me: &str,
    name: (&str, &str),
    duration: Duration,
    now: Instant,
    wall: SystemTime,
) -> Decision {
    let Some(got) = got else {
        let last = obs.holder();
        if !last.is_empty() && last != me && obs.valid(now) {
            return Decision::Held {
                holder: last.to_string(),
            };
        }
        return Decision::Create(Lease {
            metadata: ObjectMeta {
                namespace: name.0.into(),
                name: name.1.into(),
                ..ObjectMeta::default()
            },
            spec: record(me, duration, wall, None),
            ..Lease::default()
        });
    };
    obs.saw(got.clone(), now);
    let h = holder(&got);
    if !h.is_empty() && h != me && obs.valid(now) {
        return Decision::Held {
            holder: h.to_string(),
        };
    }
    let mut next = got.clone();
    if h == me {
        next.spec = record(me, duration, wall, Some(&got.spec));
    } else {
        let transitions = got.spec.lease_transitions.unwrap_or(0) + 1;
        let mut keep = got.spec.clone();
        keep.acquire_time = None;
        keep.lease_transitions = Some(transitions);
        next.spec = record(me, duration, wall, Some(&keep));
    }
    Decision::Update(next)
}

/// How long one Lease request (election or heartbeat) may take: client-go
/// bounds each at max(1 s, renew_deadline / 2) "to keep a single hung
/// request from forcing a leader loss" — a request stuck on a connection
/// gone silent is abandoned and retried on a new one well within the renew
/// deadline (5 s of the default 10 s). Without election the heartbeat,
/// renewed every quarter of its duration, bounds it the same way (at most
/// half a renewal interval). Never more than `request_timeout`.
pub fn request_timeout(
    renew_deadline: Option<Duration>,
    heartbeat: Duration,
    request_timeout: Duration,
) -> Duration {
    let half = match renew_deadline {
        Some(d) => d / 2,
        None => heartbeat / 8,
    };
    half.max(Duration::from_secs(1)).min(request_timeout)
}

/// When a leader whose lease thread has been busy in one round (election
/// or heartbeat requests) since `busy_since` must count its leadership as
/// lost: `renew_deadline` after the later of `busy_since` and its last
/// renewal — when its write fence closes, or later. client-go runs each
/// renewal under a context with RenewDeadline, so kube-controller-manager
/// exits then; our thread may be held far longer by one request (30 s per
/// attempt plus client retries). `None` while not leading, or while the
/// thread sleeps between rounds (`busy_since` is `None`): a process paused
/// between rounds may still renew on resume if nobody took the lease.
pub fn stuck_at(
    leading: bool,
    busy_since: Option<Instant>,
    last_renewal: Option<Instant>,
    renew_deadline: Duration,
) -> Option<Instant> {
    let busy = busy_since.filter(|_| leading)?;
    Some(last_renewal.map_or(busy, |r| r.max(busy)) + renew_deadline)
}

/// Whether leadership is lost at `now` because the lease thread is stuck
/// in a round ([`stuck_at`] has passed):
/// `leading && busy && now − max(busy_since, last_renewal) ≥ renew_deadline`.
pub fn stuck(
    leading: bool,
    busy_since: Option<Instant>,
    last_renewal: Option<Instant>,
    renew_deadline: Duration,
    now: Instant,
) -> bool {
    stuck_at(leading, busy_since, last_renewal, renew_deadline).is_some_and(|at| now >= at)
}

/// docs/behaviour.md#up-f5 (newer client-go): release a Lease just read, only if we still hold
/// it: holder cleared, duration 1 s, transitions kept.
pub fn release(got: &Lease, me: &str, wall: SystemTime) -> Option<Lease> {
    if holder(got) != me {
        return None;
    }
    let now = MicroTime::from_system(wall);
    let mut l = got.clone();
    l.spec.holder_identity = None;
    l.spec.lease_duration_seconds = Some(1);
    l.spec.acquire_time = Some(now);
    l.spec.renew_time = Some(now);
    Some(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_request_is_bounded_by_half_the_renew_deadline() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        // (renew_deadline, heartbeat, request_timeout) → bound
        let table = [
            (Some(s(10)), s(40), s(30), s(5)),
            (Some(s(2)), s(40), s(30), s(1)),
            (Some(ms(1500)), s(40), s(30), s(1)),
            (Some(s(4)), s(40), s(30), s(2)),
            (Some(s(60)), s(40), s(20), s(20)),
            (None, s(40), s(30), s(5)),
            (None, s(4), s(30), s(1)),
        ];
        for (rd, hb, rt, want) in table {
            assert_eq!(request_timeout(rd, hb, rt), want, "{rd:?} {hb:?} {rt:?}");
        }
    }

    const D: Duration = Duration::from_secs(15);

    fn lease(holder: Option<&str>, transitions: i32, rv: &str) -> Lease {
        let mut l = Lease::default();
        l.metadata.namespace = "kube-system".into();
        l.metadata.name = "endpointd".into();
        l.metadata.resource_version = rv.into();
        l.spec.holder_identity = holder.map(Into::into);
        l.spec.lease_duration_seconds = Some(15);
        l.spec.lease_transitions = Some(transitions);
        l.spec.acquire_time = Some(MicroTime::from_system(SystemTime::UNIX_EPOCH));
        l
    }

    fn name() -> (&'static str, &'static str) {
        ("kube-system", "endpointd")
    }

    #[test]
    fn election_table() {
        let t0 = Instant::now();
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        // Free: create.
        let mut obs = Observed::default();
        let Decision::Create(c) = decide(&mut obs, None, "a", name(), D, t0, wall) else {
            panic!("create")
        };
        assert_eq!(c.spec.holder_identity.as_deref(), Some("a"));
        assert_eq!(c.spec.lease_transitions, Some(0));
        assert_eq!(c.spec.lease_duration_seconds, Some(15));
        // Held by b, first seen now: valid for 15 s of *our* time.
        let mut obs = Observed::default();
        let held = lease(Some("b"), 3, "10");
        assert_eq!(
            decide(&mut obs, Some(held.clone()), "a", name(), D, t0, wall),
            Decision::Held { holder: "b".into() }
        );
        // Unchanged record read again 14 s later: still held.
        assert!(matches!(
            decide(
                &mut obs,
                Some(held.clone()),
                "a",
                name(),
                D,
                t0 + Duration::from_secs(14),
                wall
            ),
            Decision::Held { .. }
        ));
        // 15 s after we first saw it unchanged: expired, take over (+1 transition).
        let Decision::Update(u) = decide(
            &mut obs,
            Some(held.clone()),
            "a",
            name(),
            D,
            t0 + Duration::from_secs(15),
            wall,
        ) else {
            panic!("takeover")
        };
        assert_eq!(u.spec.holder_identity.as_deref(), Some("a"));
        assert_eq!(u.spec.lease_transitions, Some(4));
        assert_eq!(u.metadata.resource_version, "10", "optimistic concurrency");
        assert_ne!(
            u.spec.acquire_time, held.spec.acquire_time,
            "a new acquireTime"
        );
        // A renewal by b (record changed) resets our observation time.
        let mut renewed = held.clone();
        renewed.spec.renew_time = Some(MicroTime::from_system(wall));
        renewed.metadata.resource_version = "11".into();
        let later = t0 + Duration::from_secs(20);
        assert!(matches!(
            decide(&mut obs, Some(renewed), "a", name(), D, later, wall),
            Decision::Held { .. }
        ));
        // Our own lease: renew keeping acquireTime and transitions.
        let mut obs = Observed::default();
        let mine = lease(Some("a"), 2, "12");
        let Decision::Update(r) = decide(&mut obs, Some(mine.clone()), "a", name(), D, t0, wall)
        else {
            panic!("renew")
        };
        assert_eq!(
            (r.spec.lease_transitions, r.spec.acquire_time),
            (Some(2), mine.spec.acquire_time)
        );
        // A released lease (no holder) is free at once.
        let mut obs = Observed::default();
        assert!(matches!(
            decide(
                &mut obs,
                Some(lease(None, 5, "13")),
                "a",
                name(),
                D,
                t0,
                wall
            ),
            Decision::Update(_)
        ));
    }

    #[test]
    fn a_deleted_lease_is_not_recreated_while_another_holder_may_still_write() {
        // NotFound after we saw a holder: `kubectl delete lease`, or
        // something recreating it. client-go creates at once (its leader
        // may still be writing); we wait until the last record we saw of
        // another holder has expired locally.
        let t0 = Instant::now();
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let s = Duration::from_secs;
        // We are "a". (the holder of the record seen at t0, None: nothing
        // seen; time since then; Held by whom, None: Create)
        let table = [
            (None, s(0), None),
            (Some(Some("b")), s(0), Some("b")),
            (Some(Some("b")), s(14), Some("b")),
            (Some(Some("b")), s(15), None),
            (Some(Some("b")), s(60), None),
            (Some(Some("a")), s(0), None),
            (Some(None), s(0), None),
            (Some(Some("")), s(0), None),
        ];
        for (seen, after, want) in table {
            let mut obs = Observed::default();
            if let Some(h) = seen {
                obs.saw(lease(h, 3, "10"), t0);
            }
            let before = (obs.holder().to_string(), obs.at);
            let got = decide(&mut obs, None, "a", name(), D, t0 + after, wall);
            let case = format!("last saw {seen:?}, {after:?} later");
            match want {
                Some(h) => assert_eq!(got, Decision::Held { holder: h.into() }, "{case}"),
                None => {
                    let Decision::Create(c) = got else {
                        panic!("{case}: {got:?}")
                    };
                    assert_eq!(c.spec.holder_identity.as_deref(), Some("a"), "{case}");
                    assert_eq!(c.metadata.resource_version, "", "{case}");
                }
            }
            assert_eq!(
                (obs.holder().to_string(), obs.at),
                before,
                "{case}: a NotFound is not an observation"
            );
        }
    }

    #[test]
    fn record_timestamps_are_never_trusted() {
        // b's record claims a renewal far in the future; we still judge
        // expiry by when we saw it.
        let t0 = Instant::now();
        let wall = SystemTime::UNIX_EPOCH;
        let mut future = lease(Some("b"), 0, "1");
        future.spec.renew_time = Some(MicroTime::from_system(
            SystemTime::UNIX_EPOCH + Duration::from_secs(4_000_000_000),
        ));
        let mut obs = Observed::default();
        assert!(matches!(
            decide(&mut obs, Some(future.clone()), "a", name(), D, t0, wall),
            Decision::Held { .. }
        ));
        assert!(matches!(
            decide(&mut obs, Some(future), "a", name(), D, t0 + D, wall),
            Decision::Update(_)
        ));
    }

    #[test]
    fn a_leader_stuck_in_a_round_past_renew_deadline_has_lost() {
        let t0 = Instant::now();
        let at = |n: Option<u64>| n.map(|n| t0 + Duration::from_secs(n));
        let rd = Duration::from_secs(10);
        // (leading, busy since, last renewal, now: seconds after t0) → lost
        let table = [
            // Asleep between rounds (or paused there): never, however old
            // the renewal; it may still renew on resume.
            (true, None, Some(0), 60, false),
            // Not leading: nothing to lose.
            (false, Some(0), None, 60, false),
            (false, Some(0), Some(0), 60, false),
            // Busy since 2 (renewed at 0): lost at 2 + 10.
            (true, Some(2), Some(0), 11, false),
            (true, Some(2), Some(0), 12, true),
            (true, Some(2), Some(0), 300, true),
            // Renewed in this round at 3, then the heartbeat hangs: 3 + 10.
            (true, Some(2), Some(3), 12, false),
            (true, Some(2), Some(3), 13, true),
            // Leading with no renewal recorded: from busy_since.
            (true, Some(5), None, 14, false),
            (true, Some(5), None, 15, true),
        ];
        for (leading, busy, last, now, want) in table {
            assert_eq!(
                stuck(
                    leading,
                    at(busy),
                    at(last),
                    rd,
                    t0 + Duration::from_secs(now)
                ),
                want,
                "leading {leading}, busy since {busy:?}, last renewal {last:?}, now {now}"
            );
        }
        assert_eq!(stuck_at(true, at(Some(2)), at(Some(3)), rd), at(Some(13)));
        assert_eq!(stuck_at(false, at(Some(2)), at(Some(3)), rd), None);
        assert_eq!(stuck_at(true, None, at(Some(3)), rd), None);
    }

    #[test]
    fn fast_path_and_release() {
        let t0 = Instant::now();
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(5);
        let mut obs = Observed::default();
        obs.wrote(lease(Some("a"), 1, "7"), t0);
        let r = fast_renew(&obs, "a", D, t0 + Duration::from_secs(2), wall).expect("fast renew");
        assert_eq!(r.metadata.resource_version, "7");
        assert_eq!(r.spec.renew_time, Some(MicroTime::from_system(wall)));
        assert!(
            fast_renew(&obs, "a", D, t0 + D, wall).is_none(),
            "expired locally: read first"
        );
        assert!(fast_renew(&obs, "b", D, t0, wall).is_none(), "not ours");
        let rel = release(&lease(Some("a"), 4, "8"), "a", wall).expect("ours");
        assert_eq!(
            (
                rel.spec.holder_identity.clone(),
                rel.spec.lease_duration_seconds,
                rel.spec.lease_transitions
            ),
            (None, Some(1), Some(4))
        );
        assert!(
            release(&lease(Some("b"), 4, "8"), "a", wall).is_none(),
            "only while still ours"
        );
    }
}
