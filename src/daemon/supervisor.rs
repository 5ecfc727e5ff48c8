//! The supervisor: after the threads started, watch the caches, the lease
//! thread and the workers; start the controllers once every cache synced
//! (and, with an election, this instance leads); keep readiness, liveness,
//! systemd's STATUS and watchdog current; fail when a cache stopped or
//! leadership was lost. It never writes to the API server.

use super::{notify, DaemonError, Failure};
use crate::caches::Caches;
use crate::health::{Liveness, Readiness};
use crate::lease::LeaseThread;
use crate::runtime::fence::Fence;
use crate::sdnotify::{self, Notifier};
use crate::wiring::{Controllers, Running};
use endpointd_base::clock::SharedClock;
use endpointd_kube::kube;
use endpointd_kube::shutdown::Shutdown;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long one sync may run before the supervisor calls the worker
/// wedged (the watchdog then stops, so systemd restarts endpointd).
const WEDGED_AFTER: Duration = Duration::from_secs(300);

/// READY=1 is sent once the caches synced and the role is settled (the
/// controllers run, or this instance is a standby), or after this long in
/// any case: an instance started while the API server is unreachable must
/// not be killed by systemd's start timeout (90 s in the shipped unit).
const READY_GRACE: Duration = Duration::from_secs(60);

/// client-go's leader-election health tolerance (kube-controller-manager's
/// `/healthz` fails when the lease was not renewed within lease_duration +
/// this).
const HEALTH_TOLERANCE: Duration = Duration::from_secs(20);

/// How often the supervisor looks at the caches when systemd asks for no
/// faster watchdog pings.
const SUPERVISE_EVERY: Duration = Duration::from_secs(1);

/// How often the supervisor looks while the controllers are due to start
/// (caches syncing, or synced with this instance leading):
/// at [`SUPERVISE_EVERY`] a 10,000-pod cache synced in 0.1 s waited up to
/// another 0.9 s for the controllers (measured in the cold-start bench).
/// While caches sync, each informer that syncs also wakes the supervisor at
/// once (at this tick alone the controllers started up to 20 ms late).
/// A standby that knows another leader keeps the slow tick.
const STARTING_EVERY: Duration = Duration::from_millis(20);
/// After an outage, keys waiting to retry are retried this long after the
/// supervisor saw the server answer again: time for the caches, whose
/// backoffs end at once, to resume first (a probe and a watch).
const SERVER_BACK_RETRY: Duration = Duration::from_secs(1);

/// Whether the role can be reported (and readiness given): without an
/// election at once; with one, after the lease thread's first round, or as
/// soon as this instance leads. Woken by the caches' sync, the supervisor
/// may look before the first round ends (a standby would report "no leader
/// yet"); a leader is known as soon as it leads — waiting for the round's
/// end (its heartbeat) left a restarted leader unready until the next
/// 1 s tick in about a third of restarts.
fn role_known(election: bool, rounds: u64, leading: bool) -> bool {
    !election || rounds > 0 || leading
}

/// Watches the caches, the lease thread and, once they run, the
/// controllers.
pub(super) struct Supervisor<'a> {
    pub(super) caches: &'a Caches,
    pub(super) shutdown: &'a Shutdown,
    pub(super) readiness: &'a Readiness,
    pub(super) liveness: &'a Liveness,
    pub(super) notifier: &'a Notifier,
    pub(super) clock: SharedClock,
    pub(super) lease: &'a LeaseThread,
    /// The write fence, closed here when the lease thread is stuck.
    pub(super) fence: Fence,
    pub(super) election: Option<&'a crate::config::LeaderElection>,
    pub(super) master: Arc<endpointd_kube::metrics::Gauge>,
    pub(super) pending: Option<Controllers>,
    pub(super) running: Option<Running>,
    /// Lease-thread rounds last seen, and when they last moved.
    pub(super) last_round: (u64, Instant),
    /// When supervision began (for the READY grace period).
    pub(super) started: Instant,
    /// Whether READY=1 was sent.
    pub(super) ready_sent: bool,
    /// Shared by every client of the daemon, and its returns seen.
    pub(super) link: Arc<kube::Link>,
    pub(super) link_seen: u64,
}

impl Supervisor<'_> {
    /// Until shutdown: start the controllers once every cache synced and
    /// (with election) this instance leads; keep readiness, liveness and
    /// STATUS current; ping the watchdog only while every watcher thread,
    /// the lease thread and every worker make progress; fail (so systemd
    /// restarts us) if a cache stopped or leadership was lost.
    pub(super) fn run(&mut self) -> Result<(), DaemonError> {
        let tick = sdnotify::watchdog_interval()
            .map(|w| (w / 2).min(SUPERVISE_EVERY))
            .unwrap_or(SUPERVISE_EVERY);
        let mut next = STARTING_EVERY.min(tick);
        let mut seen = self.caches.sync_count();
        let mut for_caches = true;
        loop {
            if for_caches {
                // An informer that syncs wakes us at once (the controllers
                // then start without waiting for the next tick); shutdown
                // is noticed within the tick.
                self.caches.wait_for_change(seen, next);
                if self.shutdown.is_triggered() {
                    break;
                }
            } else if self.shutdown.wait_timeout(next) {
                break;
            }
            next = tick;
            seen = self.caches.sync_count();
            if !self.caches.alive() {
                log::error!("a cache stopped updating; exiting so that systemd restarts endpointd");
                return Err(DaemonError::Failed(Failure::CacheStopped));
            }
            let state = self.lease.state();
            if state.lost() {
                log::error!(
                    "leaderelection lost; exiting so that systemd restarts endpointd as a standby"
                );
                return Err(self.lost());
            }
            // A leader whose lease thread is stuck in a round (a request
            // the server does not answer) past renew_deadline has lost, as
            // client-go's renew context ends then: not when the request
            // finally returns, minutes later.
            if let Some(le) = self.election {
                if state.stuck(le.renew_deadline, self.clock.now()) {
                    state.lose(&self.fence);
                    log::error!(
                        "leader election: leadership lost: no renewal within {:?} (the lease thread is still waiting for the API server); exiting so that systemd restarts endpointd as a standby",
                        le.renew_deadline
                    );
                    return Err(self.lost());
                }
            }
            self.master.set(if state.leading() { 1.0 } else { 0.0 });
            let returns = self.link.returns();
            if returns != self.link_seen {
                self.link_seen = returns;
                if let Some(r) = &self.running {
                    r.server_back(SERVER_BACK_RETRY);
                }
            }
            let synced = self.caches.unsynced();
            for_caches = self.pending.is_some() && !synced.is_empty();
            if !synced.is_empty() {
                self.readiness
                    .set(Some(&format!("caches not synced: {}", synced.join(", "))));
            } else if self.running.is_none() && (self.election.is_none() || state.leading()) {
                self.start()?;
            }
            // Fast while this instance may be about to lead: before its
            // first election round no leader is known (with the caches
            // synced first, the slow tick held the controllers back up to
            // 1 s after the lease was taken).
            let may_lead = state.leading() || state.leader().is_empty();
            if self.pending.is_some() && (!synced.is_empty() || may_lead) {
                next = STARTING_EVERY.min(tick);
            }
            // Look again when a stuck round would lose leadership, not up
            // to a tick later.
            if let Some(at) = self
                .election
                .and_then(|le| state.stuck_at(le.renew_deadline))
            {
                next = next.min(at.saturating_duration_since(self.clock.now()));
            }
            let role = self.role();
            let role_known = role_known(self.election.is_some(), state.rounds(), state.leading());
            if synced.is_empty() && role_known {
                self.readiness.set_ready(&role);
            } else if synced.is_empty() {
                self.readiness
                    .set(Some("caches synced; leader election has not run yet"));
            }
            if let Some(problem) = self.problem() {
                log::error!("{problem}; withholding the watchdog");
                self.liveness.set(Some(&problem));
                continue;
            }
            self.liveness.set(None);
            if let Some(r) = &self.running {
                r.refresh_metrics();
            }
            let status = self.status(&role);
            // Settled: the controllers run, or this is a standby that has
            // seen the leader (before its first election round, or with the
            // lease free, it may be about to lead).
            let standby = self.election.is_some() && !state.leading() && !state.leader().is_empty();
            let settled = synced.is_empty() && (self.running.is_some() || standby);
            let waited = self.clock.now().saturating_duration_since(self.started) >= READY_GRACE;
            if !self.ready_sent && (settled || waited) {
                // Start order: caches synced → leadership settled →
                // controllers running → READY=1. A READY=1 that could not
                // be sent (the socket's queue was full) is sent again on
                // the next tick: systemd must see it.
                self.ready_sent = notify(self.notifier.ready(&status));
            } else {
                notify(self.notifier.status(&status));
            }
            notify(self.notifier.watchdog());
        }
        Ok(())
    }

    /// Leadership is lost: not ready, not master; the error to exit 1 with.
    fn lost(&self) -> DaemonError {
        self.master.set(0.0);
        self.readiness.set(Some("leader election: leadership lost"));
        DaemonError::Failed(Failure::LeadershipLost)
    }

    fn start(&mut self) -> Result<(), DaemonError> {
        log::info!("caches synced: {}", self.caches.summary());
        let Some(c) = self.pending.take() else {
            return Ok(());
        };
        let running = c.start(self.caches).map_err(|source| DaemonError::Setup {
            what: "worker threads".into(),
            source,
        })?;
        let names: Vec<&str> = running.pools().iter().map(|p| p.controller()).collect();
        log::info!("controllers running: {}", names.join(", "));
        self.running = Some(running);
        Ok(())
    }

    /// "leading", "standby; leader is X", or "running" without election.
    fn role(&self) -> String {
        let state = self.lease.state();
        match (self.election, state.leading()) {
            (None, _) => "running".into(),
            (Some(_), true) => "leading".into(),
            (Some(_), false) => match state.leader() {
                l if l.is_empty() => "standby; no leader yet".into(),
                l => format!("standby; leader is {l}"),
            },
        }
    }

    /// Why the process should not be considered alive, if it should not.
    fn problem(&mut self) -> Option<String> {
        let now = self.clock.now();
        if let Some(r) = &self.running {
            let limit = crate::runtime::worker::test_wedge().map_or(WEDGED_AFTER, |(_, d)| d);
            if let Some((key, d)) = r.pools().iter().find_map(|p| p.wedged(limit)) {
                return Some(format!(
                    "a worker has been syncing {key} for {}s",
                    d.as_secs()
                ));
            }
        }
        let rounds = self.lease.state().rounds();
        if rounds != self.last_round.0 {
            self.last_round = (rounds, now);
        }
        if !self.lease.alive()
            || now.saturating_duration_since(self.last_round.1) > Duration::from_secs(120)
        {
            return Some("the lease thread stopped making progress".into());
        }
        let (Some(le), true) = (self.election, self.lease.state().leading()) else {
            return None;
        };
        let last = self.lease.state().last_renewal()?;
        let age = now.saturating_duration_since(last);
        (age > le.lease_duration + HEALTH_TOLERANCE).then(|| {
            format!(
                "leader election: the lease was not renewed for {}s",
                age.as_secs()
            )
        })
    }

    fn status(&self, role: &str) -> String {
        let queued = self.running.as_ref().map_or(0, Running::queued);
        format!("{role}; {}; {queued} syncs queued", self.caches.summary())
    }
}

#[cfg(test)]
mod tests {
    use super::role_known;

    #[test]
    fn a_leader_is_known_before_its_first_round_ends_a_standby_after() {
        // (election, rounds, leading) → known
        let table = [
            (false, 0, false, true),
            (true, 0, false, false),
            (true, 0, true, true),
            (true, 1, false, true),
            (true, 3, true, true),
        ];
        for (election, rounds, leading, want) in table {
            assert_eq!(
                role_known(election, rounds, leading),
                want,
                "election {election}, rounds {rounds}, leading {leading}"
            );
        }
    }
}
