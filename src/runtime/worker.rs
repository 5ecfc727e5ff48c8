//! The worker pool: `workers` threads over one rate-limited work queue of
//! Service keys, each running upstream's per-key loop (docs/behaviour.md#up-a2,
//! docs/behaviour.md#up-a3, #up-d8): get → sync → forget on success, `add_rate_limited` while the
//! key has been requeued fewer than 15 times, else drop it with a warning
//! naming the key and the last error → done.
//!
//! Beyond upstream, a dropped key is not lost: it is queued again after
//! [`DROPPED_RETRY`] (with a fresh backoff). Upstream's KCM relies on its
//! informers' 12–24 h resync to pick such a Service up again; endpointd
//! has no resync, so without this a write outage longer than the retries
//! (about 3 minutes for the Endpoints controller's 5 ms · 2ⁿ) left the
//! Services that changed during it stale until their next change. And
//! when the API server answers again after an outage, keys waiting out a
//! backoff that grew while nothing could succeed (or a dropped key's later
//! retry) are synced within a second (`Running::server_back`, called by
//! the daemon's supervisor). The same holds when the server answers but
//! refuses every write (an admission webhook failing closed): while two or
//! more Services fail with server errors (5xx, 429), one of them is retried
//! every second, and the first success brings the others that failed the
//! same way in at once (`runtime::outage`). Repeated identical failures
//! are logged as one line per 30 s with a count.
//!
//! Retries of a Service that met a stale cache or a conflict back off
//! (`runtime::stuck`): quickly up to 2 s, and once the informers have
//! listed again without curing it, up to a minute.
//!
//! A panic inside one sync is caught, logged with the key, counted, and
//! treated as a failed sync: it never kills the worker or the process.
//! Each worker publishes what it is doing (key and since when) so the
//! supervisor can tell a wedged worker from a busy one.
//!
//! Owns the threads and the retry policy; never decides what a sync does.

use super::metrics::{ControllerMetrics, SyncResult};
use super::outage::{RetryLog, ServerFailures, PROBE_EVERY};
use endpointd_base::clock::SharedClock;
use endpointd_kube::kube;
use endpointd_kube::workqueue::{RateLimitingQueue, MAX_RETRIES};

/// Delay before a sync that found a stale cache (or a 409) runs again.
pub const STALE_RETRY: std::time::Duration = std::time::Duration::from_millis(200);
/// Delay before a key dropped after [`MAX_RETRIES`] failed retries is
/// queued again (beyond upstream, see the module doc).
pub const DROPPED_RETRY: std::time::Duration = std::time::Duration::from_secs(300);
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Why a sync failed. A failed request keeps the client's error (with
/// what was being done as its [`kube::Error::Context`]), so the worker
/// and its logs see a conflict, a lost connection or a body over its cap
/// for what it is.
#[derive(Debug)]
pub enum SyncError {
    /// The named informer cache is older than this controller's own last
    /// write for `key` (counted as `result="stale"`); retried soon.
    StaleCache {
        /// The cache, as logged (`EndpointSlice`, `endpoints`).
        cache: &'static str,
        /// The Service.
        key: String,
    },
    /// A request failed; retried. A conflict (409: our copy was behind
    /// the stored object) counts as stale.
    Request(kube::Error),
    /// The EndpointSlice sync's failures together, as upstream reports
    /// them in one warning: pods skipped for a Node missing from the
    /// cache, and the failed writes. Retried; stale if a write conflicted.
    Slices {
        /// Upstream's message (`Error updating Endpoint Slices for …`).
        message: String,
        /// The failed writes, each the client's error.
        writes: Vec<kube::Error>,
    },
    /// The sync panicked; retried like a failure.
    Panicked(String),
    /// The sync succeeded, but an event it held back (someone else's
    /// write seen while ours was in flight) must sync the Service again
    /// after this delay, as the event's handler would have queued it.
    /// Counted as a success.
    Requeue(std::time::Duration),
}

impl SyncError {
    /// The status code when the server refused the request itself (5xx
    /// or 429): the failures a write outage is made of.
    pub fn server_code(&self) -> Option<u16> {
        let code = |e: &kube::Error| e.status().map(|s| s.code).filter(|&c| c == 429 || c >= 500);
        match self {
            SyncError::Request(e) => code(e),
            SyncError::Slices { writes, .. } => writes.iter().find_map(code),
            _ => None,
        }
    }

    /// The failure without what names the Service (the client's error
    /// under its context): identical failures of many Services are logged
    /// together.
    pub fn kind(&self) -> String {
        match self {
            SyncError::Request(e) => e.root().to_string(),
            SyncError::Slices { writes, message } => writes
                .first()
                .map_or_else(|| message.clone(), |e| e.root().to_string()),
            other => other.to_string(),
        }
    }

    /// Counted and retried as stale: the cache is behind our own write or
    /// the stored object (a conflict).
    pub fn is_stale(&self) -> bool {
        match self {
            SyncError::StaleCache { .. } => true,
            SyncError::Request(e) => e.is_conflict(),
            SyncError::Slices { writes, .. } => writes.iter().any(kube::Error::is_conflict),
            SyncError::Panicked(_) | SyncError::Requeue(_) => false,
        }
    }
}

impl fmt::Display for SyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncError::StaleCache { cache, key } => {
                write!(
                    f,
                    "stale cache: {cache} informer cache is out of date for {key}"
                )
            }
            SyncError::Request(e) => write!(f, "{e}"),
            SyncError::Slices { message, .. } => f.write_str(message),
            SyncError::Panicked(m) => write!(f, "panicked: {m}"),
            SyncError::Requeue(d) => write!(f, "synced; to sync again in {d:?}"),
        }
    }
}

impl std::error::Error for SyncError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SyncError::Request(e) => Some(e),
            SyncError::Slices { writes, .. } => writes
                .first()
                .map(|e| e as &(dyn std::error::Error + 'static)),
            _ => None,
        }
    }
}

/// What a controller does for one key.
pub trait Syncer: Send + Sync + 'static {
    /// Reconcile the Service `key` (`ns/name`).
    fn sync(&self, key: &str) -> Result<(), SyncError>;
}

/// Test hook (`ENDPOINTD_TEST_WEDGE=<key>,<millis>`): a sync of `<key>`
/// never returns, and the supervisor calls a worker wedged after
/// `<millis>`. For the process tests of the watchdog only, and only in a
/// build with the cargo feature `test-hooks` (which `cargo test` enables;
/// release and packaged builds do not): nothing else reads it.
#[cfg(feature = "test-hooks")]
pub const TEST_WEDGE_ENV: &str = "ENDPOINTD_TEST_WEDGE";

/// The test hook's (key, threshold), if set and well-formed; always `None`
/// without the `test-hooks` feature.
pub fn test_wedge() -> Option<(String, Duration)> {
    #[cfg(feature = "test-hooks")]
    {
        let v = std::env::var(TEST_WEDGE_ENV).ok()?;
        let (key, ms) = v.rsplit_once(',')?;
        Some((
            key.to_string(),
            Duration::from_millis(ms.trim().parse().ok()?),
        ))
    }
    #[cfg(not(feature = "test-hooks"))]
    None
}

/// The test hook as a syncer around the controller's: its sync of the
/// wedged key never returns.
#[cfg(feature = "test-hooks")]
struct Wedged {
    controller: &'static str,
    key: String,
    inner: Arc<dyn Syncer>,
}

#[cfg(feature = "test-hooks")]
impl Syncer for Wedged {
    fn sync(&self, key: &str) -> Result<(), SyncError> {
        if key != self.key {
            return self.inner.sync(key);
        }
        log::warn!(
            "{}: test hook {TEST_WEDGE_ENV}: the sync of {key} never returns",
            self.controller
        );
        loop {
            std::thread::park();
        }
    }
}

/// `syncer`, wedged by the test hook when it is built in and set.
fn with_test_hook(controller: &'static str, syncer: Arc<dyn Syncer>) -> Arc<dyn Syncer> {
    #[cfg(feature = "test-hooks")]
    if let Some((key, _)) = test_wedge() {
        return Arc::new(Wedged {
            controller,
            key,
            inner: syncer,
        });
    }
    let _ = controller;
    syncer
}

/// What one worker is doing.
#[derive(Debug, Default)]
struct Slot {
    busy: Mutex<Option<(Instant, String)>>,
    finished: AtomicU64,
}

struct Ctx {
    controller: &'static str,
    queue: RateLimitingQueue<String>,
    syncer: Arc<dyn Syncer>,
    metrics: Arc<ControllerMetrics>,
    clock: SharedClock,
    slots: Vec<Slot>,
    stuck: super::stuck::StuckSyncs,
    /// Services failing with server errors (the probe, the recovery).
    failures: Mutex<ServerFailures>,
    /// Repeated failures, logged together.
    retry_log: Mutex<RetryLog>,
    /// [`DROPPED_RETRY`], in ms (tests shorten it).
    dropped_retry_ms: AtomicU64,
}

/// Running workers of one controller.
pub struct WorkerPool {
    ctx: Arc<Ctx>,
    threads: Vec<JoinHandle<()>>,
}

impl fmt::Debug for WorkerPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "WorkerPool({}, {})",
            self.ctx.controller,
            self.threads.len()
        )
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

impl Ctx {
    fn run(&self, slot: usize) {
        crate::logging::context::set_controller(match self.controller {
            "endpoint" => "endpoints",
            _ => "endpointslice",
        });
        while let Some(key) = self.queue.get() {
            self.process(slot, &key);
            self.queue.done(&key);
        }
    }

    fn process(&self, slot: usize, key: &str) {
        // Every record of this sync is about this Service (journal field).
        let _about = key
            .contains('/')
            .then(|| crate::logging::context::service(key));
        let start = self.clock.now();
        self.set_busy(slot, Some((start, key.to_string())));
        let outcome =
            catch_unwind(AssertUnwindSafe(|| self.syncer.sync(key))).unwrap_or_else(|p| {
                self.metrics.panicked(self.controller);
                let msg = panic_message(&*p);
                log::error!("{}: sync of {key} panicked: {msg}", self.controller);
                Err(SyncError::Panicked(msg))
            });
        let elapsed = self.clock.now().saturating_duration_since(start);
        self.metrics.observe(self.controller, elapsed);
        self.handle_err(key, outcome);
        self.set_busy(slot, None);
        self.slots[slot].finished.fetch_add(1, Ordering::Relaxed);
    }

    /// Upstream `handleErr`, with our stale rule, the outage probe and
    /// recovery, and repeated failures logged together.
    fn handle_err(&self, key: &str, outcome: Result<(), SyncError>) {
        let c = self.controller;
        let err = match outcome {
            Ok(()) => {
                self.queue.forget(&key.to_string());
                self.metrics.result(c, SyncResult::Success);
                self.stuck.clear(key);
                self.succeeded(key);
                return;
            }
            Err(SyncError::Requeue(delay)) => {
                self.queue.forget(&key.to_string());
                self.metrics.result(c, SyncResult::Success);
                self.stuck.clear(key);
                self.succeeded(key);
                self.queue.add_after(key.to_string(), delay);
                return;
            }
            Err(e) => e,
        };
        let k = key.to_string();
        let now = self.clock.now();
        if err.is_stale() {
            // The cache is behind our own writes or the stored object (a
            // 409): not a failure of the sync. Retry without growing the
            // queue's backoff and without ever dropping the key —
            // upstream's exponential backoff and 15-retry drop can leave a
            // Service unsynced until its next pod change after a burst of
            // conflicts (seen in the compaction fault test). The stale
            // bookkeeping gives up after 10 s; a conflict that outlasts a
            // relist backs off to a minute (runtime::stuck).
            self.metrics.result(c, SyncResult::Stale);
            self.lock_failures().other(key);
            let delay = self.stuck.stale(c, key, now);
            log::debug!("{c}: syncing {key}: {err}; retrying in {delay:?}");
            self.queue.add_after(k, delay);
            return;
        }
        self.metrics.result(c, SyncResult::Error);
        self.stuck.clear(key);
        let probe = match err.server_code() {
            Some(code) => self.lock_failures().failed(key, code, now),
            None => {
                self.lock_failures().other(key);
                false
            }
        };
        if probe || self.queue.num_requeues(&k) < MAX_RETRIES {
            let lines = self
                .retry_log
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .failed(
                    key,
                    &err.kind(),
                    format!("error syncing {key}, retrying: {err}"),
                    now,
                );
            for l in lines {
                log::info!("{c}: {l}");
            }
            match probe {
                // Many Services fail with server errors: this one is
                // retried soon whatever its backoff, and its success
                // brings the others in.
                true => self.queue.add_after(k, PROBE_EVERY),
                false => self.queue.add_rate_limited(k),
            }
            return;
        }
        let again = Duration::from_millis(self.dropped_retry_ms.load(Ordering::Relaxed));
        log::warn!(
            "{c}: dropping service {key} out of the queue after {MAX_RETRIES} retries: {err}; trying again in {again:?}"
        );
        self.metrics.result(c, SyncResult::Dropped);
        self.queue.forget(&k);
        self.queue.add_after(k, again);
    }

    /// A sync of `key` succeeded: if it had failed with a server error,
    /// writes go through again; the Services that failed the same way are
    /// synced now, and the failures counted since the last line logged.
    fn succeeded(&self, key: &str) {
        let back = self.lock_failures().succeeded(key);
        if back.is_empty() {
            return;
        }
        let now = self.clock.now();
        let lines = self
            .retry_log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .flush(now);
        for l in lines {
            log::info!("{}: {l}", self.controller);
        }
        log::info!(
            "{}: {key} synced after server errors; the {} other Services that failed the same way are synced now",
            self.controller,
            back.len()
        );
        for k in back {
            // Earlier than its backoff: the queue keeps the earlier time.
            self.queue.add_after(k, Duration::from_millis(1));
        }
    }

    fn lock_failures(&self) -> std::sync::MutexGuard<'_, ServerFailures> {
        self.failures.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set_busy(&self, slot: usize, v: Option<(Instant, String)>) {
        *self.slots[slot]
            .busy
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = v;
    }
}

impl WorkerPool {
    /// Start `workers` threads named `<controller>-<i>` over `queue`.
    pub fn start(
        controller: &'static str,
        workers: usize,
        queue: RateLimitingQueue<String>,
        syncer: Arc<dyn Syncer>,
        metrics: Arc<ControllerMetrics>,
        clock: SharedClock,
    ) -> std::io::Result<WorkerPool> {
        let ctx = Arc::new(Ctx {
            controller,
            queue,
            syncer: with_test_hook(controller, syncer),
            metrics,
            clock,
            slots: (0..workers.max(1)).map(|_| Slot::default()).collect(),
            stuck: Default::default(),
            failures: Mutex::default(),
            retry_log: Mutex::default(),
            dropped_retry_ms: AtomicU64::new(DROPPED_RETRY.as_millis() as u64),
        });
        let mut threads = Vec::with_capacity(ctx.slots.len());
        for i in 0..ctx.slots.len() {
            let c = Arc::clone(&ctx);
            let spawned = std::thread::Builder::new()
                .name(format!("{controller}-{i}"))
                .spawn(move || c.run(i));
            match spawned {
                Ok(t) => threads.push(t),
                Err(e) => {
                    ctx.queue.shut_down();
                    return Err(e);
                }
            }
        }
        Ok(WorkerPool { ctx, threads })
    }

    /// Move this history (the informers') when a Service meets only
    /// conflicts and stale caches for `stuck::STUCK_AFTER`.
    pub fn watch_history(&self, h: Arc<endpointd_kube::informer::History>) {
        self.ctx.stuck.set_history(h);
    }

    /// The controller's name.
    pub fn controller(&self) -> &'static str {
        self.ctx.controller
    }

    /// The queue the workers serve (handlers add to it).
    pub fn queue(&self) -> &RateLimitingQueue<String> {
        &self.ctx.queue
    }

    /// A worker that has been inside one sync for longer than `limit`:
    /// its key and how long.
    pub fn wedged(&self, limit: Duration) -> Option<(String, Duration)> {
        let now = self.ctx.clock.now();
        self.ctx.slots.iter().find_map(|s| {
            let busy = s.busy.lock().unwrap_or_else(|p| p.into_inner());
            let (since, key) = busy.as_ref()?;
            let d = now.saturating_duration_since(*since);
            (d > limit).then(|| (key.clone(), d))
        })
    }

    /// Syncs finished so far by all workers (progress for the watchdog).
    pub fn finished(&self) -> u64 {
        self.ctx
            .slots
            .iter()
            .map(|s| s.finished.load(Ordering::Relaxed))
            .sum()
    }

    /// Stop taking keys, let in-flight syncs finish for at most `drain`,
    /// then join the workers that stopped. Returns false if some worker
    /// was still inside a sync (its thread is left to end on its own).
    pub fn stop(self, drain: Duration) -> bool {
        let drained = self.ctx.queue.shut_down_with_drain(drain);
        if !drained {
            self.ctx.queue.shut_down();
        }
        let mut all = true;
        for t in self.threads {
            if t.is_finished() || drained {
                all &= t.join().is_ok();
            } else {
                all = false;
            }
        }
        all && drained
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use endpointd_base::clock::RealClock;
    use endpointd_kube::metrics::Registry;
    use endpointd_kube::workqueue::{ItemExponentialFailureRateLimiter, QueueConfig};
    use std::collections::HashMap;

    /// Fails `fail_times[key]` times with a 422 (or panics on "panic/…"),
    /// then succeeds; keys "down/…" fail with a 503 while `down`.
    struct Scripted {
        calls: Mutex<HashMap<String, u32>>,
        fail_times: HashMap<&'static str, u32>,
        down: std::sync::atomic::AtomicBool,
    }

    impl Syncer for Scripted {
        fn sync(&self, key: &str) -> Result<(), SyncError> {
            let n = {
                let mut c = self.calls.lock().expect("calls");
                let n = c.entry(key.to_string()).or_default();
                *n += 1;
                *n
            };
            if key.starts_with("panic/") && n <= 2 {
                panic!("boom in {key}");
            }
            if key.starts_with("requeue/") && n == 1 {
                return Err(SyncError::Requeue(Duration::from_millis(20)));
            }
            if key.starts_with("down/") && self.down.load(Ordering::SeqCst) {
                return Err(SyncError::Request(
                    kube::Error::Api(kube::Status {
                        code: 503,
                        message: "failed calling webhook".into(),
                        ..kube::Status::default()
                    })
                    .context(format!("updating {key}")),
                ));
            }
            if n <= self.fail_times.get(key).copied().unwrap_or(0) {
                return Err(SyncError::Request(kube::Error::Api(kube::Status {
                    code: 422,
                    message: format!("attempt {n}"),
                    ..kube::Status::default()
                })));
            }
            Ok(())
        }
    }

    fn pool(
        fail_times: HashMap<&'static str, u32>,
    ) -> (WorkerPool, Arc<Scripted>, Arc<ControllerMetrics>) {
        pool_with(fail_times, DROPPED_RETRY)
    }

    fn pool_with(
        fail_times: HashMap<&'static str, u32>,
        dropped_retry: Duration,
    ) -> (WorkerPool, Arc<Scripted>, Arc<ControllerMetrics>) {
        pool_backoff(fail_times, dropped_retry, Duration::from_micros(10))
    }

    fn pool_backoff(
        fail_times: HashMap<&'static str, u32>,
        dropped_retry: Duration,
        base: Duration,
    ) -> (WorkerPool, Arc<Scripted>, Arc<ControllerMetrics>) {
        let clock = RealClock::shared();
        let queue = RateLimitingQueue::new(
            &QueueConfig::new("").clock(clock.clone()),
            ItemExponentialFailureRateLimiter::new(base, base * 10),
        )
        .expect("queue");
        let syncer = Arc::new(Scripted {
            calls: Mutex::default(),
            fail_times,
            down: Default::default(),
        });
        let metrics = ControllerMetrics::register(&Registry::new());
        let p = WorkerPool::start("test", 3, queue, syncer.clone(), metrics.clone(), clock)
            .expect("pool");
        p.ctx
            .dropped_retry_ms
            .store(dropped_retry.as_millis() as u64, Ordering::Relaxed);
        (p, syncer, metrics)
    }

    fn wait_for(mut f: impl FnMut() -> bool) {
        for _ in 0..2000 {
            if f() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("condition not reached");
    }

    #[test]
    fn retries_then_drops_after_max_retries_and_survives_panics() {
        let fails = HashMap::from([("ns/flaky", 3), ("ns/broken", 100)]);
        let (p, syncer, m) = pool(fails);
        for k in ["ns/ok", "ns/flaky", "ns/broken", "panic/x"] {
            p.queue().add(k.to_string());
        }
        wait_for(|| m.count("test", SyncResult::Dropped) == 1 && p.finished() >= 1 + 4 + 16 + 3);
        let calls = syncer.calls.lock().expect("calls").clone();
        assert_eq!(calls["ns/ok"], 1);
        assert_eq!(calls["ns/flaky"], 4, "3 failures then success");
        assert_eq!(
            calls["ns/broken"],
            1 + MAX_RETRIES,
            "first try + 15 retries, then dropped"
        );
        assert_eq!(calls["panic/x"], 3, "two panics were retried like failures");
        assert_eq!(m.count("test", SyncResult::Success), 3);
        assert_eq!(m.count("test", SyncResult::Error), 3 + 16 + 2);
        // The workers are all alive: a new key is still served.
        p.queue().add("ns/after".to_string());
        wait_for(|| syncer.calls.lock().expect("calls").contains_key("ns/after"));
        assert!(p.wedged(Duration::from_secs(60)).is_none());
        assert!(p.stop(Duration::from_secs(5)));
    }

    /// Beyond upstream: a dropped key is queued again after the delay,
    /// with a fresh backoff, so a Service whose writes failed for longer
    /// than the retries converges once the fault is gone.
    #[test]
    fn a_dropped_key_is_tried_again_after_the_delay() {
        // Fails the first try, its 15 retries and the first try after the
        // drop; succeeds on the first retry of the second round.
        let fails = HashMap::from([("ns/outage", 1 + MAX_RETRIES + 1)]);
        let (p, syncer, m) = pool_with(fails, Duration::from_millis(100));
        p.queue().add("ns/outage".to_string());
        wait_for(|| m.count("test", SyncResult::Success) == 1);
        assert_eq!(m.count("test", SyncResult::Dropped), 1);
        assert_eq!(
            syncer.calls.lock().expect("calls")["ns/outage"],
            1 + MAX_RETRIES + 2,
            "dropped after 16 tries, then tried again and retried once"
        );
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(
            syncer.calls.lock().expect("calls")["ns/outage"],
            1 + MAX_RETRIES + 2,
            "nothing after the success"
        );
        assert!(p.stop(Duration::from_secs(5)));
    }

    /// A sync that asks to run again (an event it held showed someone
    /// else's write) counts as a success and is synced once more after
    /// the delay, not retried as a failure.
    #[test]
    fn requeue_is_a_success_synced_again_after_the_delay() {
        let (p, syncer, m) = pool(HashMap::new());
        p.queue().add("requeue/s".to_string());
        wait_for(|| syncer.calls.lock().expect("calls").get("requeue/s") == Some(&2));
        wait_for(|| m.count("test", SyncResult::Success) == 2);
        assert_eq!(m.count("test", SyncResult::Error), 0);
        assert_eq!(m.count("test", SyncResult::Stale), 0);
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(
            syncer.calls.lock().expect("calls")["requeue/s"],
            2,
            "once more, then done"
        );
        assert!(p.stop(Duration::from_secs(5)));
    }

    /// Issue 37 item 4: while many Services fail with server errors one is
    /// retried every second whatever its backoff, and its success brings
    /// the others in at once instead of after their backoff (10 s here).
    #[test]
    fn the_first_success_after_server_errors_brings_the_others_in() {
        let (p, syncer, m) = pool_backoff(HashMap::new(), DROPPED_RETRY, Duration::from_secs(10));
        syncer.down.store(true, Ordering::SeqCst);
        let keys: Vec<String> = (0..5).map(|i| format!("down/{i}")).collect();
        for k in &keys {
            p.queue().add(k.clone());
        }
        wait_for(|| m.count("test", SyncResult::Error) >= 7);
        let calls = |k: &str| {
            syncer
                .calls
                .lock()
                .expect("calls")
                .get(k)
                .copied()
                .unwrap_or(0)
        };
        syncer.down.store(false, Ordering::SeqCst);
        let back = Instant::now();
        wait_for(|| m.count("test", SyncResult::Success) == 5);
        let took = back.elapsed();
        assert!(
            took < Duration::from_millis(2500),
            "converged {took:?} after the server came back"
        );
        for k in &keys {
            assert!(calls(k) >= 2, "{k}");
        }
        assert!(p.stop(Duration::from_secs(5)));
    }
}
