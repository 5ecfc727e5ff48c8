//! The lease thread's rounds, driven step by step with a fake clock against
//! an in-memory Lease API: acquire, the fast-path renewal, renew deadline →
//! lost, takeover after expiry (a slow read dated from its return), release,
//! the busy mark while a request blocks, a loss declared meanwhile is
//! final; the heartbeat's create, renewal without a read, conflict →
//! re-ensure, repeated failures → connection reset, and the ensure backoff
//! ladder.

use super::*;
use crate::runtime::fence::Fence;
use endpointd_base::clock::{Clock, FakeClock};
use endpointd_kube::kube::Status;
use endpointd_kube::model::MicroTime;
use std::collections::HashMap;
use std::sync::atomic::AtomicU32;
use std::sync::Condvar;

#[derive(Default)]
struct Store {
    leases: Mutex<HashMap<(String, String), Lease>>,
    rv: AtomicU64,
    down: AtomicBool,
    conflicts: AtomicU32,
    gets: AtomicU32,
    updates: AtomicU32,
    /// Runs at the start of every request, with its verb ("get",
    /// "create", "update", …): a slow or blocking server.
    hook: Mutex<Option<Hook>>,
}

type Hook = Box<dyn FnMut(&str) + Send>;

#[derive(Clone, Default)]
struct FakeApi(Arc<Store>);

fn status(code: u16, reason: &str) -> Error {
    Error::Api(Status::from_value(
        serde_json::json!({"kind": "Status", "code": code, "reason": reason}),
    ))
}

impl FakeApi {
    fn set_hook(&self, h: Option<Hook>) {
        *self.0.hook.lock().expect("lock") = h;
    }
    fn call_hook(&self, verb: &str) {
        if let Some(h) = self.0.hook.lock().expect("lock").as_mut() {
            h(verb);
        }
    }
    fn check(&self) -> Result<(), Error> {
        match self.0.down.load(Ordering::SeqCst) {
            true => Err(status(503, "ServiceUnavailable")),
            false => Ok(()),
        }
    }
    fn stamp(&self, l: &Lease) -> Lease {
        let mut l = l.clone();
        l.metadata.resource_version = (self.0.rv.fetch_add(1, Ordering::SeqCst) + 1)
            .to_string()
            .into();
        l
    }
    fn lease(&self, ns: &str, name: &str) -> Option<Lease> {
        self.0
            .leases
            .lock()
            .expect("lock")
            .get(&(ns.to_string(), name.to_string()))
            .cloned()
    }
    fn put(&self, l: Lease) {
        let k = (
            l.metadata.namespace.to_string(),
            l.metadata.name.to_string(),
        );
        self.0.leases.lock().expect("lock").insert(k, l);
    }
}

impl LeaseApi for FakeApi {
    fn get(&self, ns: &str, name: &str) -> Result<Lease, Error> {
        self.call_hook("get");
        self.check()?;
        self.0.gets.fetch_add(1, Ordering::SeqCst);
        self.lease(ns, name).ok_or_else(|| status(404, "NotFound"))
    }
    fn create(&self, ns: &str, l: &Lease) -> Result<Lease, Error> {
        self.call_hook("create");
        self.check()?;
        if self.lease(ns, &l.metadata.name).is_some() {
            return Err(status(409, "AlreadyExists"));
        }
        let mut l = self.stamp(l);
        l.metadata.namespace = ns.into();
        self.put(l.clone());
        Ok(l)
    }
    fn update(&self, ns: &str, l: &Lease) -> Result<Lease, Error> {
        self.call_hook("update");
        self.check()?;
        self.0.updates.fetch_add(1, Ordering::SeqCst);
        if self.0.conflicts.load(Ordering::SeqCst) > 0 {
            self.0.conflicts.fetch_sub(1, Ordering::SeqCst);
            return Err(status(409, "Conflict"));
        }
        let cur = self
            .lease(ns, &l.metadata.name)
            .ok_or_else(|| status(404, "NotFound"))?;
        if cur.metadata.resource_version != l.metadata.resource_version {
            return Err(status(409, "Conflict"));
        }
        let l = self.stamp(l);
        self.put(l.clone());
        Ok(l)
    }
    fn delete(&self, ns: &str, name: &str) -> Result<(), Error> {
        self.call_hook("delete");
        self.check()?;
        self.0
            .leases
            .lock()
            .expect("lock")
            .remove(&(ns.to_string(), name.to_string()));
        Ok(())
    }
    fn list(&self, ns: &str, _p: &ListParams) -> Result<Vec<Lease>, Error> {
        self.call_hook("list");
        self.check()?;
        Ok(self
            .0
            .leases
            .lock()
            .expect("lock")
            .values()
            .filter(|l| l.metadata.namespace == ns)
            .cloned()
            .collect())
    }
}

const E: fn() -> Election = || Election {
    name: "endpointd".into(),
    lease_duration: Duration::from_secs(15),
    renew_deadline: Duration::from_secs(10),
    retry_period: Duration::from_secs(2),
};

fn runner(
    api: &FakeApi,
    clock: &Arc<FakeClock>,
    me: &str,
    resets: Arc<AtomicU32>,
) -> (Runner, Fence) {
    let fence = Fence::leased(clock.clone(), E().renew_deadline);
    let r = Runner {
        api: Box::new(api.clone()),
        clock: clock.clone(),
        fence: Box::new(fence.clone()),
        cfg: LeaseConfig {
            namespace: "kube-system".into(),
            identity: me.into(),
            election: Some(E()),
            heartbeat: Duration::from_secs(40),
            abandoned_after: Duration::from_secs(3600),
        },
        state: Arc::new(LeaseState::default()),
        stop: Shutdown::new(),
        on_event: Box::new(|_, _, _| {}),
        on_repeated_failure: Box::new(move || {
            resets.fetch_add(1, Ordering::SeqCst);
        }),
        obs: Observed::default(),
        identity_lease: None,
        ensure_backoff: Duration::from_millis(100),
    };
    (r, fence)
}

#[test]
fn acquire_renew_fast_path_then_lose_after_the_renew_deadline() {
    let api = FakeApi::default();
    let clock = FakeClock::new();
    let (mut a, fence) = runner(&api, &clock, "a", Arc::default());
    assert!(
        fence.check().is_err(),
        "closed before the first acquisition"
    );
    a.elect(&E());
    assert!(a.state.leading() && fence.check().is_ok());
    assert_eq!(
        api.lease("kube-system", "endpointd")
            .and_then(|l| l.spec.holder_identity),
        Some("a".into())
    );
    let gets = api.0.gets.load(Ordering::SeqCst);
    clock.step(Duration::from_secs(2));
    a.elect(&E());
    assert_eq!(
        api.0.gets.load(Ordering::SeqCst),
        gets,
        "a renewal within the lease uses the fast path: no read"
    );
    // The API server goes away: renewals fail until renew_deadline passes.
    api.0.down.store(true, Ordering::SeqCst);
    for _ in 0..4 {
        clock.step(Duration::from_secs(2));
        a.elect(&E());
        assert!(
            a.state.leading() && !a.state.lost(),
            "still leading within the deadline"
        );
    }
    assert!(fence.check().is_ok(), "8 s since the last renewal < 10 s");
    clock.step(Duration::from_secs(2));
    assert!(
        fence.check().is_err(),
        "the fence closes at renew_deadline, before the thread notices"
    );
    a.elect(&E());
    assert!(a.state.lost() && !a.state.leading());
}

#[test]
fn a_standby_takes_over_only_after_the_lease_expired_locally() {
    let api = FakeApi::default();
    let clock = FakeClock::new();
    let (mut a, _) = runner(&api, &clock, "a", Arc::default());
    let (mut b, b_fence) = runner(&api, &clock, "b", Arc::default());
    a.elect(&E());
    b.elect(&E());
    assert!(!b.state.leading() && b.state.leader() == "a");
    // a stops renewing (killed). b sees the same record for 15 s of its time.
    for _ in 0..7 {
        clock.step(Duration::from_secs(2));
        b.elect(&E());
        assert!(!b.state.leading(), "at {:?}", clock.elapsed());
    }
    clock.step(Duration::from_secs(2));
    b.elect(&E());
    assert!(b.state.leading() && b_fence.check().is_ok());
    let l = api.lease("kube-system", "endpointd").expect("lease");
    assert_eq!(
        (l.spec.holder_identity.as_deref(), l.spec.lease_transitions),
        (Some("b"), Some(1))
    );
    // a comes back: it sees b's valid lease and has lost.
    a.elect(&E());
    assert!(a.state.lost());
}

#[test]
fn a_slow_read_dates_a_renewal_it_returns_from_when_the_read_returned() {
    // b's GET takes 6 s (a slow server: timeouts, client retries) and
    // returns a record a renewed just before the answer. client-go's
    // setObservedRecord stamps observedTime after the Get: b must count a's
    // lease from the GET's return, not from when it was sent.
    let api = FakeApi::default();
    let clock = FakeClock::new();
    let (mut a, _) = runner(&api, &clock, "a", Arc::default());
    let (mut b, _) = runner(&api, &clock, "b", Arc::default());
    a.elect(&E());
    b.elect(&E());
    assert!(!b.state.leading() && b.state.leader() == "a");
    clock.step(Duration::from_secs(2));
    let (h_api, h_clock) = (api.clone(), clock.clone());
    let mut armed = true;
    api.set_hook(Some(Box::new(move |verb| {
        if verb != "get" || !std::mem::take(&mut armed) {
            return;
        }
        h_clock.step(Duration::from_secs(6));
        let mut l = h_api.lease("kube-system", "endpointd").expect("lease");
        l.spec.renew_time = Some(MicroTime::from_system(h_clock.wall()));
        h_api.put(h_api.stamp(&l));
    })));
    b.elect(&E());
    let returned = clock.elapsed();
    assert!(!b.state.leading());
    // a renews no more. Just before lease_duration after the GET returned,
    // its lease is still valid for b.
    clock.step(E().lease_duration - Duration::from_millis(1));
    b.elect(&E());
    assert!(
        !b.state.leading(),
        "took over {:?} after the slow GET returned",
        clock.elapsed() - returned
    );
    clock.step(Duration::from_millis(1));
    b.elect(&E());
    assert!(b.state.leading(), "lease_duration after the GET returned");
}

/// Open or not, and its waiters.
type Gate = Arc<(Mutex<bool>, Condvar)>;

/// A hook that blocks every `verb` request until the gate opens; the
/// count of requests that reached it.
fn blocking(verb: &'static str) -> (Hook, Gate, Arc<AtomicU32>) {
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let entered = Arc::new(AtomicU32::new(0));
    let (g, n) = (Arc::clone(&gate), Arc::clone(&entered));
    let hook: Hook = Box::new(move |v| {
        if v != verb {
            return;
        }
        n.fetch_add(1, Ordering::SeqCst);
        let (m, cv) = &*g;
        let mut open = m.lock().expect("lock");
        while !*open {
            open = cv.wait(open).expect("lock");
        }
    });
    (hook, gate, entered)
}

fn open(gate: &(Mutex<bool>, Condvar)) {
    *gate.0.lock().expect("lock") = true;
    gate.1.notify_all();
}

fn wait_for(what: &str, f: impl Fn() -> bool) {
    let t = std::time::Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(10), "{what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn the_thread_is_marked_busy_while_a_request_blocks_and_not_while_it_sleeps() {
    let api = FakeApi::default();
    let clock = FakeClock::new();
    let (a, _) = runner(&api, &clock, "a", Arc::default());
    let (state, stop) = (Arc::clone(&a.state), a.stop.clone());
    let (hook, gate, entered) = blocking("get");
    api.set_hook(Some(hook));
    assert_eq!(state.busy_since(), None);
    let began = clock.now();
    let thread = std::thread::spawn(move || a.run());
    wait_for("the first round's GET", || {
        entered.load(Ordering::SeqCst) == 1
    });
    clock.step(Duration::from_secs(30));
    assert_eq!(
        state.busy_since(),
        Some(began),
        "busy since the round began, while its GET blocks"
    );
    assert_eq!(state.rounds(), 0);
    open(&gate);
    wait_for("the round's end", || state.rounds() >= 1);
    assert!(state.leading());
    assert_eq!(state.busy_since(), None, "asleep between rounds");
    stop.trigger();
    thread.join().expect("lease thread");
}

#[test]
fn leadership_given_up_while_a_renewal_blocks_is_not_taken_back() {
    let api = FakeApi::default();
    let clock = FakeClock::new();
    let (mut a, fence) = runner(&api, &clock, "a", Arc::default());
    a.elect(&E());
    assert!(a.state.leading() && fence.check().is_ok());
    let state = Arc::clone(&a.state);
    let (hook, gate, entered) = blocking("update");
    api.set_hook(Some(hook));
    clock.step(E().retry_period);
    let thread = std::thread::spawn(move || {
        a.elect(&E());
        a
    });
    wait_for("the renewal", || entered.load(Ordering::SeqCst) == 1);
    // The daemon gives up (the round outlasted renew_deadline) while the
    // renewal is in flight; then the server answers it.
    clock.step(E().renew_deadline);
    assert!(state.lose(&fence), "was leading");
    open(&gate);
    let mut a = thread.join().expect("elect");
    assert!(
        !a.state.leading() && a.state.lost(),
        "a late renewal does not lead again"
    );
    assert!(fence.check().is_err(), "nor reopen the fence");
    let updates = api.0.updates.load(Ordering::SeqCst);
    a.elect(&E());
    assert_eq!(
        api.0.updates.load(Ordering::SeqCst),
        updates,
        "no renewal after the loss"
    );
    assert!(!a.state.leading());
}

#[test]
fn release_hands_the_lease_over_at_once() {
    let api = FakeApi::default();
    let clock = FakeClock::new();
    let (mut a, fence) = runner(&api, &clock, "a", Arc::default());
    let (mut b, _) = runner(&api, &clock, "b", Arc::default());
    a.elect(&E());
    b.elect(&E());
    a.release();
    assert!(fence.check().is_err());
    let l = api.lease("kube-system", "endpointd").expect("lease");
    assert_eq!(
        (
            l.spec.holder_identity.clone(),
            l.spec.lease_duration_seconds
        ),
        (None, Some(1))
    );
    clock.step(Duration::from_secs(2));
    b.elect(&E());
    assert!(b.state.leading(), "a released lease is free at once");
}

#[test]
fn heartbeat_create_renew_conflict_and_repeated_failures() {
    let api = FakeApi::default();
    let clock = FakeClock::new();
    let resets = Arc::new(AtomicU32::new(0));
    let (mut a, _) = runner(&api, &clock, "node-a_1234", resets.clone());
    let every = a.heartbeat();
    assert!(
        every >= Duration::from_secs(10) && every <= Duration::from_millis(10_400),
        "{every:?}"
    );
    let name = identity::lease_name("node-a_1234");
    let first = api
        .lease("kube-system", &name)
        .expect("identity lease created");
    assert_eq!(first.spec.holder_identity.as_deref(), Some("node-a_1234"));
    let gets = api.0.gets.load(Ordering::SeqCst);
    clock.step(Duration::from_secs(10));
    a.heartbeat();
    assert_eq!(
        api.0.gets.load(Ordering::SeqCst),
        gets,
        "renewed from the last written copy, without a read"
    );
    assert!(
        api.lease("kube-system", &name)
            .expect("lease")
            .spec
            .renew_time
            > first.spec.renew_time
    );
    // A conflict: read again and renew in the same round.
    api.0.conflicts.store(1, Ordering::SeqCst);
    a.heartbeat();
    assert_eq!(api.0.gets.load(Ordering::SeqCst), gets + 1);
    assert!(a.identity_lease.is_some());
    assert_eq!(
        resets.load(Ordering::SeqCst),
        0,
        "conflicts are not failures"
    );
    // Down: five attempts fail; the connections are reset once; then the
    // ensure backoff ladder 100 ms … 7 s.
    api.0.down.store(true, Ordering::SeqCst);
    let d0 = a.heartbeat();
    assert_eq!(resets.load(Ordering::SeqCst), 1);
    assert_eq!(d0, Duration::from_millis(100));
    a.identity_lease = None;
    let ladder: Vec<u64> = (0..8).map(|_| a.heartbeat().as_millis() as u64).collect();
    assert_eq!(ladder, vec![200, 400, 800, 1600, 3200, 6400, 7000, 7000]);
    api.0.down.store(false, Ordering::SeqCst);
    assert!(
        a.heartbeat() >= Duration::from_secs(10),
        "back to the normal interval"
    );
}

#[test]
fn a_leader_deletes_at_most_three_abandoned_identity_leases_a_round() {
    let api = FakeApi::default();
    let clock = FakeClock::new();
    let (mut a, _) = runner(&api, &clock, "a", Arc::default());
    a.elect(&E());
    assert!(a.state.leading());
    let old = |i: usize| format!("endpointd-gone-{i}");
    for i in 0..5 {
        let mut l = Lease::default();
        l.metadata.namespace = "kube-system".into();
        l.metadata.name = old(i).into();
        api.put(l); // no renewTime: abandoned
    }
    let left = || {
        (0..5)
            .filter(|i| api.lease("kube-system", &old(*i)).is_some())
            .count()
    };
    a.heartbeat(); // creates our own identity Lease
    assert_eq!(left(), 5);
    a.heartbeat();
    assert_eq!(left(), 2, "three in this round");
    a.heartbeat();
    assert_eq!(left(), 0, "the rest in the next");
}

/// A standby's acquisition has no deadline (as client-go's): one answered
/// long after it was sent makes it leader with a full renew_deadline for
/// its first renewal, not "stuck" at once.
#[test]
fn a_slow_acquisition_does_not_count_against_the_first_renewal() {
    let api = FakeApi::default();
    let clock = FakeClock::new();
    let (a, _) = runner(&api, &clock, "a", Arc::default());
    let (state, stop) = (Arc::clone(&a.state), a.stop.clone());
    // Every create waits for a permit: the election Lease's, then (same
    // round) our identity Lease's.
    let permits = Arc::new((Mutex::new(0u32), Condvar::new()));
    let entered = Arc::new(AtomicU32::new(0));
    let (p, n) = (Arc::clone(&permits), Arc::clone(&entered));
    api.set_hook(Some(Box::new(move |v| {
        if v != "create" {
            return;
        }
        n.fetch_add(1, Ordering::SeqCst);
        let (m, cv) = &*p;
        let mut left = m.lock().expect("lock");
        while *left == 0 {
            left = cv.wait(left).expect("lock");
        }
        *left -= 1;
    })));
    let permit = || {
        *permits.0.lock().expect("lock") += 1;
        permits.1.notify_all();
    };
    let thread = std::thread::spawn(move || a.run());
    wait_for("the acquiring create", || {
        entered.load(Ordering::SeqCst) == 1
    });
    clock.step(Duration::from_secs(30)); // renew_deadline is 10 s
    permit();
    wait_for("the identity Lease's create", || {
        entered.load(Ordering::SeqCst) == 2
    });
    let rd = E().renew_deadline;
    assert!(state.leading());
    assert!(
        !state.stuck(rd, clock.now()),
        "just became leader: a full renew_deadline to renew"
    );
    assert!(state.stuck(rd, clock.now() + rd), "but not more");
    permit();
    stop.trigger();
    thread.join().expect("lease thread");
}

#[test]
fn a_leader_that_loses_the_lease_deletes_its_identity_lease_as_it_ends() {
    let api = FakeApi::default();
    let clock = FakeClock::new();
    let (a, _) = runner(&api, &clock, "a", Arc::default());
    let state = Arc::clone(&a.state);
    let mine = identity::lease_name("a");
    let thread = std::thread::spawn(move || a.run());
    wait_for("leading with an identity lease", || {
        state.leading() && api.lease("kube-system", &mine).is_some()
    });
    // Someone else holds the Lease now; past renew_deadline the next round
    // (a retry_period of real time later) has lost.
    let mut l = api.lease("kube-system", "endpointd").expect("lease");
    l.spec.holder_identity = Some("intruder".into());
    api.put(api.stamp(&l));
    clock.step(E().renew_deadline + E().retry_period);
    thread.join().expect("the thread ends by itself once lost");
    assert!(state.lost());
    assert!(
        api.lease("kube-system", &mine).is_none(),
        "the identity lease was left behind"
    );
    assert_eq!(
        api.lease("kube-system", "endpointd")
            .and_then(|l| l.spec.holder_identity),
        Some("intruder".into()),
        "the election Lease is not touched"
    );
}
