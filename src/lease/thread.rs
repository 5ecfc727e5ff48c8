//! The lease thread: one thread, two jobs (docs/behaviour.md#up-f3–#up-f8).
//!
//! 1. Leader election over `[leader_election] lease_namespace/lease_name`:
//!    renew every `retry_period`, or (standby) try to acquire every
//!    `retry_period` jittered up to ×1.6, through [`super::election`]; every success opens the write
//!    fence from the moment the request was *sent*; no successful renewal
//!    within `renew_deadline` → leadership lost (fence closed, the daemon
//!    exits 1 as kube-controller-manager does). The thread publishes since
//!    when it has been busy in a round ([`LeaseState::busy_since`]): a
//!    round stuck in a request past `renew_deadline` loses leadership too,
//!    declared by the daemon ([`LeaseState::lose`]); once lost, never back.
//! 2. The heartbeat: this instance's identity Lease, renewed every quarter
//!    of its duration (jitter 0.04) from the last written copy without a
//!    read, up to 5 immediate retries, a conflict → read or create it
//!    again, creating backs off 100 ms doubling to 7 s (between ticks, so
//!    the election is never starved). While leading, identity Leases
//!    abandoned for over an hour are deleted.
//!
//! On stop: release the election Lease if still ours (so a standby takes
//! over within about one `retry_period`) and delete our identity Lease.
//! Decisions are the pure functions of `election` and `identity`; this
//! file only moves data and sleeps (interruptibly, through [`Shutdown`]).

use super::election::{self, Decision, Observed};
use super::identity;
use super::sink::LeadershipSink;
pub use super::sink::OnEvent;
use endpointd_base::clock::SharedClock;
use endpointd_kube::kube::{Client, Error, ListParams, LEASES};
use endpointd_kube::model::{Lease, Object, ObjectReference};
use endpointd_kube::shutdown::Shutdown;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Abandoned identity Leases deleted per heartbeat round at most.
const ABANDONED_PER_ROUND: usize = 3;

/// The election Lease and its timing (client-go's names).
#[derive(Clone, Debug)]
pub struct Election {
    /// Lease name.
    pub name: String,
    /// Validity of a renewal.
    pub lease_duration: Duration,
    /// How long a leader keeps trying before it gives up.
    pub renew_deadline: Duration,
    /// Interval between attempts.
    pub retry_period: Duration,
}

/// What the thread runs.
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    /// Namespace of both Leases.
    pub namespace: String,
    /// holderIdentity.
    pub identity: String,
    /// `None`: no election (the heartbeat still runs).
    pub election: Option<Election>,
    /// Duration of the identity Lease (renewed every quarter of it).
    pub heartbeat: Duration,
    /// Identity Leases expired for longer than this are deleted.
    pub abandoned_after: Duration,
}

/// What the daemon reads.
#[derive(Debug, Default)]
pub struct LeaseState {
    leading: AtomicBool,
    lost: AtomicBool,
    leader: Mutex<String>,
    /// Also serialises [`LeaseState::renewed`] and [`LeaseState::lose`].
    last_renewal: Mutex<Option<Instant>>,
    busy_since: Mutex<Option<Instant>>,
    rounds: AtomicU64,
}

impl LeaseState {
    /// Whether this instance leads now.
    pub fn leading(&self) -> bool {
        self.leading.load(Ordering::SeqCst)
    }
    /// Whether it led and lost the lease (the daemon must exit).
    pub fn lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }
    /// The holder last observed ("" if none).
    pub fn leader(&self) -> String {
        self.leader
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
    /// When the election Lease was last acquired or renewed by us.
    pub fn last_renewal(&self) -> Option<Instant> {
        *self.last_renewal.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// Loop rounds so far (progress for the watchdog).
    pub fn rounds(&self) -> u64 {
        self.rounds.load(Ordering::Relaxed)
    }
    /// Since when the thread has been in its current round (election or
    /// heartbeat requests); `None` while it sleeps between rounds.
    pub fn busy_since(&self) -> Option<Instant> {
        *self.busy_since.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// When leadership counts as lost if the current round is still
    /// running then ([`election::stuck_at`]).
    pub fn stuck_at(&self, renew_deadline: Duration) -> Option<Instant> {
        election::stuck_at(
            self.leading(),
            self.busy_since(),
            self.last_renewal(),
            renew_deadline,
        )
    }
    /// Whether leadership is lost at `now` because the thread is stuck in
    /// a round ([`election::stuck`]).
    pub fn stuck(&self, renew_deadline: Duration, now: Instant) -> bool {
        election::stuck(
            self.leading(),
            self.busy_since(),
            self.last_renewal(),
            renew_deadline,
            now,
        )
    }
    /// Leadership is lost for good: not leading, `lost`, every write
    /// refused. Whether this instance was leading. A renewal answered later
    /// changes nothing ([`LeaseState::renewed`]).
    pub fn lose(&self, fence: &dyn LeadershipSink) -> bool {
        let _serial = self.last_renewal.lock().unwrap_or_else(|p| p.into_inner());
        self.lost.store(true, Ordering::SeqCst);
        fence.stopped_leading();
        self.leading.swap(false, Ordering::SeqCst)
    }
    /// A successful acquisition or renewal sent at `sent`: the fence opens
    /// and this instance leads — unless leadership was lost meanwhile
    /// (`None`: nothing changes). `Some(true)` when it just became leader.
    fn renewed(&self, fence: &dyn LeadershipSink, sent: Instant) -> Option<bool> {
        let mut last = self.last_renewal.lock().unwrap_or_else(|p| p.into_inner());
        if self.lost() {
            return None;
        }
        fence.renewed(sent);
        *last = Some(sent);
        Some(!self.leading.swap(true, Ordering::SeqCst))
    }
    fn set_busy(&self, since: Option<Instant>) {
        *self.busy_since.lock().unwrap_or_else(|p| p.into_inner()) = since;
    }
}

/// Called when renewing the identity Lease failed twice in one round for a
/// reason other than a conflict: the daemon drops the API clients' pooled
/// connections (the kubelet's `onRepeatedHeartbeatFailure`).
pub type OnRepeatedFailure = Box<dyn Fn() + Send>;

/// The Lease requests the thread makes (the API client in the daemon, an
/// in-memory fake in the tests).
pub trait LeaseApi: Send {
    /// GET.
    fn get(&self, ns: &str, name: &str) -> Result<Lease, Error>;
    /// POST.
    fn create(&self, ns: &str, l: &Lease) -> Result<Lease, Error>;
    /// PUT (optimistic concurrency through the resourceVersion).
    fn update(&self, ns: &str, l: &Lease) -> Result<Lease, Error>;
    /// DELETE.
    fn delete(&self, ns: &str, name: &str) -> Result<(), Error>;
    /// LIST with a label selector.
    fn list(&self, ns: &str, p: &ListParams) -> Result<Vec<Lease>, Error>;
}

impl LeaseApi for Client {
    fn get(&self, ns: &str, name: &str) -> Result<Lease, Error> {
        Client::get(self, &LEASES, Some(ns), name)
    }
    fn create(&self, ns: &str, l: &Lease) -> Result<Lease, Error> {
        Client::create(self, &LEASES, Some(ns), l)
    }
    fn update(&self, ns: &str, l: &Lease) -> Result<Lease, Error> {
        Client::update(self, &LEASES, Some(ns), l)
    }
    fn delete(&self, ns: &str, name: &str) -> Result<(), Error> {
        Client::delete(self, &LEASES, Some(ns), name, None)
    }
    fn list(&self, ns: &str, p: &ListParams) -> Result<Vec<Lease>, Error> {
        Client::list::<Lease>(self, &LEASES, Some(ns), p).map(|l| l.items)
    }
}

struct Runner {
    api: Box<dyn LeaseApi>,
    clock: SharedClock,
    fence: Box<dyn LeadershipSink>,
    cfg: LeaseConfig,
    state: Arc<LeaseState>,
    stop: Shutdown,
    on_event: OnEvent,
    on_repeated_failure: OnRepeatedFailure,
    obs: Observed,
    identity_lease: Option<Lease>,
    ensure_backoff: Duration,
}

/// The running thread.
pub struct LeaseThread {
    state: Arc<LeaseState>,
    stop: Shutdown,
    thread: Option<JoinHandle<()>>,
}

/// When to try again: a leader renews every `retry_period` (client-go's
/// renew loop is not jittered); a standby retries every `retry_period`
/// jittered up to ×1.6 — less than client-go's ×2.2 (jitter 1.2), so that a
/// released lease is taken over within 2 × `retry_period` while standbys
/// still spread their reads.
fn next_attempt(e: &Election, leading: bool) -> Duration {
    match leading {
        true => e.retry_period,
        false => jitter(e.retry_period, 0.6),
    }
}

fn jitter(d: Duration, factor: f64) -> Duration {
    d.mul_f64(1.0 + fastrand::f64() * factor)
}

impl Runner {
    fn run(mut self) {
        let start = self.clock.now();
        let (mut next_elect, mut next_beat) = (start, start);
        while !self.stop.is_triggered() {
            let now = self.clock.now();
            // Busy from here until the sleep: the daemon gives leadership
            // up when a round outlasts renew_deadline (a request may hang
            // for minutes), as client-go's renew context does.
            let elect = self.cfg.election.clone().filter(|_| now >= next_elect);
            let beat_due = now >= next_beat;
            if elect.is_some() || beat_due {
                self.state.set_busy(Some(now));
            }
            if let Some(e) = elect {
                self.elect(&e);
                next_elect = self.clock.now() + next_attempt(&e, self.state.leading());
            }
            if beat_due && !self.state.lost() {
                next_beat = self.clock.now() + self.heartbeat();
            }
            if self.state.lost() {
                // The Lease is no longer ours (release skips it), but the
                // identity Lease is: deleted now, not left to expire for an
                // hour under a name the restart will not use again.
                break;
            }
            self.state.set_busy(None);
            self.state.rounds.fetch_add(1, Ordering::Relaxed);
            let next = match self.cfg.election {
                Some(_) => next_elect.min(next_beat),
                None => next_beat,
            };
            self.stop
                .wait_timeout(next.saturating_duration_since(self.clock.now()));
        }
        self.release();
    }

    fn set_leader(&self, holder: &str) {
        let mut l = self.state.leader.lock().unwrap_or_else(|p| p.into_inner());
        if *l != holder {
            log::info!(
                holder = holder;
                "leader election: the lease is now held by {}",
                if holder.is_empty() { "nobody" } else { holder }
            );
            *l = holder.to_string();
        }
    }

    /// One election round (`tryAcquireOrRenew` + the renew-deadline check).
    /// Once leadership is lost (here, or by the daemon while this thread
    /// was stuck in a request) it never leads again.
    fn elect(&mut self, e: &Election) {
        if self.state.lost() {
            return;
        }
        let me = self.cfg.identity.clone();
        let sent = self.clock.now();
        let ok = self.try_acquire_or_renew(e, &me, sent);
        if ok {
            match self.state.renewed(&*self.fence, sent) {
                None => {
                    log::warn!("leader election: a renewal answered after leadership was given up is ignored");
                    return;
                }
                Some(true) => {
                    // A slow acquisition (no deadline, as client-go's) must
                    // not count against the first renewal's deadline.
                    self.state.set_busy(Some(self.clock.now()));
                    log::info!(holder = me.as_str(); "leader election: {me} became leader");
                    let message = format!("{me} became leader");
                    (self.on_event)(&self.lease_ref(e), "LeaderElection", &message);
                }
                Some(false) => {}
            }
            self.set_leader(&me);
            return;
        }
        if self.state.leading() {
            let last = self.state.last_renewal().unwrap_or(sent);
            if self.clock.now().saturating_duration_since(last) >= e.renew_deadline {
                log::error!(
                    "leader election: leadership lost (no renewal within {:?})",
                    e.renew_deadline
                );
                self.state.lose(&*self.fence);
            }
        }
    }

    /// `sent`: when the round began. Our own writes are dated from it (the
    /// fence too: a renewal counts from before it was sent); what a read
    /// returns is dated from when the read returned.
    fn try_acquire_or_renew(&mut self, e: &Election, me: &str, sent: Instant) -> bool {
        let wall = self.clock.wall();
        let ns = self.cfg.namespace.clone();
        if let Some(next) = election::fast_renew(&self.obs, me, e.lease_duration, sent, wall) {
            if let Ok(w) = self.api.update(&ns, &next) {
                self.obs.wrote(w, sent);
                return true;
            }
        }
        let got = match self.api.get(&ns, &e.name) {
            Ok(l) => Some(l),
            Err(err) if err.is_not_found() => None,
            Err(err) => {
                log::debug!("leader election: reading lease {ns}/{}: {err}", e.name);
                return false;
            }
        };
        let seen = self.clock.now();
        match election::decide(
            &mut self.obs,
            got,
            me,
            (&ns, &e.name),
            e.lease_duration,
            seen,
            wall,
        ) {
            Decision::Held { holder } => {
                self.set_leader(&holder);
                if self.state.leading() {
                    log::error!(holder = holder.as_str(); "leader election: leadership lost: {holder} holds the lease");
                    self.state.lose(&*self.fence);
                }
                false
            }
            Decision::Create(l) => self.write(self.api.create(&ns, &l), sent),
            Decision::Update(l) => self.write(self.api.update(&ns, &l), sent),
        }
    }

    fn write(&mut self, r: Result<Lease, Error>, now: Instant) -> bool {
        match r {
            Ok(w) => {
                self.obs.wrote(w, now);
                true
            }
            Err(err) => {
                log::debug!("leader election: writing the lease: {err}");
                false
            }
        }
    }

    fn lease_ref(&self, e: &Election) -> ObjectReference {
        let l = self.obs.lease.as_ref();
        ObjectReference {
            kind: "Lease".into(),
            namespace: self.cfg.namespace.as_str().into(),
            name: e.name.as_str().into(),
            uid: l.map(|l| l.uid().into()).unwrap_or_default(),
            ..ObjectReference::default()
        }
        .with_api_version("coordination.k8s.io/v1")
    }
}

impl Runner {
    /// One heartbeat round; how long until the next.
    fn heartbeat(&mut self) -> Duration {
        let every = jitter(self.cfg.heartbeat / 4, 0.04);
        let ns = self.cfg.namespace.clone();
        let mut reset = false;
        for attempt in 0..5 {
            let Some(base) = self.identity_lease.clone() else {
                return match self.ensure_identity() {
                    true => every,
                    false => self.backoff(),
                };
            };
            let next = identity::renewed(&base, self.cfg.heartbeat, self.clock.wall());
            match self.api.update(&ns, &next) {
                Ok(w) => {
                    self.identity_lease = Some(w);
                    if self.state.leading() {
                        self.collect_abandoned();
                    }
                    return every;
                }
                Err(e) if e.is_conflict() || e.is_not_found() => self.identity_lease = None,
                Err(e) => {
                    log::debug!("heartbeat: renewing {}: {e}", base.name());
                    if attempt > 0 && !reset {
                        log::warn!("heartbeat: repeated failures renewing the identity lease ({e}); dropping pooled API connections");
                        (self.on_repeated_failure)();
                        reset = true;
                    }
                }
            }
        }
        self.backoff()
    }

    fn backoff(&mut self) -> Duration {
        let d = self.ensure_backoff;
        self.ensure_backoff = (d * 2).min(Duration::from_secs(7));
        d
    }

    /// Read our identity Lease, or create it (the seed's `ensureLease`).
    fn ensure_identity(&mut self) -> bool {
        let ns = self.cfg.namespace.clone();
        let name = identity::lease_name(&self.cfg.identity);
        let got = match self.api.get(&ns, &name) {
            Ok(l) => Ok(l),
            Err(e) if e.is_not_found() => {
                let l = identity::new_lease(
                    &ns,
                    &self.cfg.identity,
                    self.cfg.heartbeat,
                    self.clock.wall(),
                );
                self.api.create(&ns, &l)
            }
            Err(e) => Err(e),
        };
        match got {
            Ok(l) => {
                self.identity_lease = Some(l);
                self.ensure_backoff = Duration::from_millis(100);
                true
            }
            Err(e) => {
                log::debug!("heartbeat: ensuring {ns}/{name}: {e}");
                false
            }
        }
    }

    /// While leading: delete identity Leases abandoned for over an hour.
    fn collect_abandoned(&self) {
        let ns = &self.cfg.namespace;
        let p = ListParams {
            label_selector: Some(format!(
                "{}={}",
                identity::IDENTITY_LABEL,
                identity::IDENTITY_LABEL_VALUE
            )),
            ..ListParams::default()
        };
        let Ok(items) = self.api.list(ns, &p) else {
            return;
        };
        let wall = self.clock.wall();
        // A few a round: the round's time counts against renew_deadline
        // (a slow server and a backlog of abandoned Leases must not cost
        // the leader its lease); the rest go in the next rounds.
        for l in items
            .iter()
            .filter(|l| identity::abandoned(l, wall, self.cfg.abandoned_after))
            .take(ABANDONED_PER_ROUND)
        {
            log::info!(
                "heartbeat: deleting the abandoned identity lease {ns}/{}",
                l.name()
            );
            let _ = self.api.delete(ns, l.name());
        }
    }

    /// On stop: release the election Lease if still ours, delete our
    /// identity Lease (best effort, a few attempts).
    fn release(&mut self) {
        let ns = self.cfg.namespace.clone();
        if let (Some(e), true) = (self.cfg.election.clone(), self.state.leading()) {
            self.fence.stopped_leading();
            self.state.leading.store(false, Ordering::SeqCst);
            for _ in 0..3 {
                let Ok(got) = self.api.get(&ns, &e.name) else {
                    break;
                };
                let Some(rel) = election::release(&got, &self.cfg.identity, self.clock.wall())
                else {
                    break;
                };
                match self.api.update(&ns, &rel) {
                    Ok(_) => {
                        log::info!("leader election: released the lease {ns}/{}", e.name);
                        break;
                    }
                    Err(err) if err.is_conflict() => continue,
                    Err(err) => {
                        log::warn!("leader election: releasing the lease: {err}");
                        break;
                    }
                }
            }
        }
        let name = identity::lease_name(&self.cfg.identity);
        let _ = self.api.delete(&ns, &name);
    }
}

impl LeaseThread {
    /// Start the thread.
    pub fn start(
        api: impl LeaseApi + 'static,
        clock: SharedClock,
        fence: impl LeadershipSink + 'static,
        cfg: LeaseConfig,
        on_event: OnEvent,
        on_repeated_failure: OnRepeatedFailure,
    ) -> std::io::Result<LeaseThread> {
        let state = Arc::new(LeaseState::default());
        let stop = Shutdown::new();
        let runner = Runner {
            api: Box::new(api),
            clock,
            fence: Box::new(fence),
            cfg,
            state: Arc::clone(&state),
            stop: stop.clone(),
            on_event,
            on_repeated_failure,
            obs: Observed::default(),
            identity_lease: None,
            ensure_backoff: Duration::from_millis(100),
        };
        let thread = std::thread::Builder::new()
            .name("lease".into())
            .spawn(move || {
                crate::logging::context::set_controller("lease");
                runner.run()
            })?;
        Ok(LeaseThread {
            state,
            stop,
            thread: Some(thread),
        })
    }

    /// The shared state.
    pub fn state(&self) -> &Arc<LeaseState> {
        &self.state
    }

    /// Whether the thread still runs.
    pub fn alive(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Stop: release the Lease if ours, then end; wait at most `within`.
    pub fn stop(mut self, within: Duration) {
        self.stop.trigger();
        if let Some(t) = self.thread.take() {
            endpointd_kube::shutdown::join_within(t, within);
        }
    }
}

#[cfg(test)]
#[path = "thread_tests.rs"]
mod tests;
