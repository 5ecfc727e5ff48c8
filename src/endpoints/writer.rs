//! The only writer of core/v1 Endpoints (docs/behaviour.md#up-a6,
//! #up-a21, #up-a22): POST, PUT and DELETE through the API client, each
//! behind the write fence, with the bookkeeping the stale-cache guard needs.
//!
//! Its memory, per key: the resourceVersions we replaced, the objects we
//! created or deleted until the cache shows them (a sync that races its
//! own write fails as stale, it never writes twice), and the content of
//! our last write, so the handler tells a foreign edit from our echo.
//! Why each exists: `docs/history.md#endpoints-writer`.
//!
//! Must never decide what to write (the plan does) and never write when the
//! fence is closed.

use super::StaleTracker;
use crate::runtime::events::EventSpec;
use crate::runtime::fence::Fence;
use crate::runtime::labels::{OVER_CAPACITY_ANNOTATION, TRIGGER_TIME_ANNOTATION};
use crate::runtime::recorder::Record;
use crate::runtime::stale::give_up_stale;
use crate::runtime::worker::SyncError;
use endpointd_kube::kube::{self, Client, ENDPOINTS};
use endpointd_kube::model::{Endpoints, Object, ObjectReference, UidText};
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};

/// Content fingerprints hash with foldhash, seeded per process (std's
/// `DefaultHasher`, SipHash with fixed keys, cost 1.4 % of a cold start).
/// The key hashes that stand for `sent`'s keys keep std's keyed SipHash.
type Fast = foldhash::fast::RandomState;
use std::sync::{Arc, Mutex};

/// The hasher of a table whose keys are already hashes: the key is the
/// hash.
#[derive(Default)]
struct PreHashed(u64);

impl Hasher for PreHashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Key hash → fingerprints of our last write and of the one before it
/// (0: none).
type Sent = HashMap<u64, (u64, u64), BuildHasherDefault<PreHashed>>;

/// Replace an emptied `map` holding a table by an unallocated one: a cold
/// start's burst of creates must not keep its table for good.
fn release_if_empty<K, V, S: Default>(map: &mut HashMap<K, V, S>) {
    if map.is_empty() && map.capacity() > 0 {
        *map = HashMap::default();
    }
}

/// Writes Endpoints for the controller.
pub struct EndpointsWriter {
    client: Client,
    fence: Fence,
    recorder: Arc<dyn Record>,
    stale: StaleTracker,
    /// Keys we created that the cache has not shown yet, with the
    /// resourceVersion the create returned (only an integer one is kept:
    /// any other counts as reached at once, see [`rv_reached`]). Empty
    /// once the creates' echoes are in.
    created: Mutex<HashMap<String, u64>>,
    /// A fingerprint of the content (labels, annotations, subsets) of our
    /// last write per key (or, with no write of ours, of the stored content
    /// a sync found right), recorded *before* the request, so that handlers
    /// can tell our own writes from a foreign writer's even when the watch
    /// event overtakes the write's response (a resourceVersion recorded
    /// after the response cannot: that race made the handler take our own
    /// write for a foreign one and sync again at once).
    ///
    /// Keyed by a 64-bit hash of the key (random per process; 17 bytes a
    /// Service instead of ~60 with the key's own String): two keys
    /// colliding (p ≈ n²/2⁶⁵: ~3·10⁻¹⁴ for 1,000 Services) share one
    /// fingerprint, which is harmless — our own write taken for a foreign
    /// one syncs the key once more for nothing (the plan is unchanged), and
    /// a foreign edit taken for ours (its fingerprint equal to the other
    /// key's, another 2⁻⁶⁴) waits for the key's next sync, as upstream.
    sent: Mutex<Sent>,
    /// Keys the `sent` hashes.
    key_hasher: RandomState,
    /// Since when each key's cache has looked older than our writes, and
    /// the cache's LIST count then.
    stale_since: Mutex<HashMap<String, (std::time::Instant, u64)>>,
    /// Keys whose DELETE we sent and whose delete the cache has not shown
    /// yet (recorded before the request: the event may overtake the
    /// response), with the UID of the object the cache showed then (`None`:
    /// it showed none). Empty between Service deletions.
    deleting: Mutex<HashMap<String, Option<UidText>>>,
    clock: endpointd_base::clock::SharedClock,
}

/// The annotations endpointd sets on an Endpoints. Every other annotation
/// is kept as it is stored (a write copies it over), so an edit of one of
/// them is nobody's business but its writer's: not a foreign edit (issue
/// 37, item 9: a tool bumping one annotation every 50 ms counted 554
/// foreign writes in 30 s and had the operator told to disable
/// kube-controller-manager's controllers).
const MANAGED_ANNOTATIONS: [&str; 2] = [TRIGGER_TIME_ANNOTATION, OVER_CAPACITY_ANNOTATION];

/// What a write decides about an Endpoints: its labels (all of them: a
/// write sets the Service's, the headless and the managed-by label, and
/// drops any other), the annotations endpointd sets
/// ([`MANAGED_ANNOTATIONS`]) and the subsets (everything else is
/// server-set, identity, or someone else's annotation), hashed.
pub fn fingerprint(obj: &Endpoints) -> u64 {
    use std::hash::Hash;
    // One seed for the process: fingerprints are compared with each other.
    static SEED: std::sync::OnceLock<Fast> = std::sync::OnceLock::new();
    let mut h = SEED.get_or_init(Fast::default).build_hasher();
    // The written content hashed field by field (it used to be serialised
    // to JSON first, twice per write: on sending and on the echo).
    obj.metadata.labels.hash(&mut h);
    for k in MANAGED_ANNOTATIONS {
        obj.metadata.annotations.get(k).hash(&mut h);
    }
    obj.subsets.len().hash(&mut h);
    for s in &obj.subsets {
        s.addresses.hash(&mut h);
        s.not_ready_addresses.hash(&mut h);
        s.ports.hash(&mut h);
    }
    h.finish()
}

fn reference(obj: &Endpoints, ns: &str) -> ObjectReference {
    ObjectReference {
        kind: "Endpoints".into(),
        namespace: ns.into(),
        name: obj.name().into(),
        uid: obj.uid().into(),
        ..ObjectReference::default()
    }
    .with_api_version("v1")
}

/// Whether a cache at resourceVersion `cache` has seen the write that
/// produced `written`. resourceVersions are opaque; every API server we know
/// (etcd-backed, kube-sim) uses increasing integers, and anything else is
/// treated as reached (never stale), which is the safe side for liveness.
/// (A `written` that is not an integer is never remembered, see
/// [`EndpointsWriter::create`].)
fn rv_reached(cache: &str, written: u64) -> bool {
    cache.parse::<u64>().map_or(true, |c| c >= written)
}

/// `e` as the sync's error, with the write named (`updating Endpoints
/// ns/web: …`).
fn failed(what: &str, key: &str, e: kube::Error) -> SyncError {
    SyncError::Request(e.context(format!("{what} Endpoints {key}")))
}

/// The fence closed before a write was sent: the client's own refusal.
fn fenced(e: impl std::fmt::Display) -> SyncError {
    SyncError::Request(kube::Error::Refused(e.to_string()))
}

impl EndpointsWriter {
    /// A writer through `client`, gated by `fence`.
    pub fn new(client: Client, fence: Fence, recorder: Arc<dyn Record>) -> EndpointsWriter {
        EndpointsWriter {
            client: client.gated(Arc::new(fence.clone())),
            fence,
            recorder,
            stale: StaleTracker::default(),
            created: Mutex::default(),
            sent: Mutex::default(),
            key_hasher: RandomState::new(),
            stale_since: Mutex::default(),
            deleting: Mutex::default(),
            clock: endpointd_base::clock::RealClock::shared(),
        }
    }

    /// The clock of the stale-cache bound.
    pub fn with_clock(mut self, clock: endpointd_base::clock::SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// [`EndpointsWriter::is_stale`] with a bound: a key whose cache has
    /// looked older than our writes for
    /// [`STALE_GIVE_UP`](crate::runtime::stale::STALE_GIVE_UP) has
    /// its bookkeeping dropped (logged) and is synced from the cache as it
    /// is — after an API server was restored from a backup, resourceVersions
    /// go back and would otherwise keep the key stale forever. An
    /// Endpoints we created that the cache lacks is given up on only once
    /// the cache was listed again since (`lists`, the cache's
    /// [`list_count`](endpointd_kube::informer::Store::list_count)), whatever the
    /// time: a stalled Endpoints watch otherwise got a POST into a 409 and
    /// a `FailedToCreateEndpoint` warning on every retry until the stream
    /// came back. (See `EndpointSliceTracker::stale_slices_at`.)
    pub fn is_stale_bounded(
        &self,
        key: &str,
        current: Option<&Endpoints>,
        cache_rv: &str,
        lists: u64,
    ) -> bool {
        let stale = self.is_stale(key, current, cache_rv);
        let mut since = self.stale_since.lock().unwrap_or_else(|p| p.into_inner());
        if !stale {
            since.remove(key);
            return false;
        }
        let now = self.clock.now();
        let (first, lists_then) = *since.entry(key.to_string()).or_insert((now, lists));
        // Stale with nothing cached: our create is what the cache lacks.
        let missing = current.is_none();
        if !give_up_stale("Endpoints", key, missing, (first, lists_then), (now, lists)) {
            return true;
        }
        since.remove(key);
        drop(since);
        self.stale.delete(key);
        self.forget_created(key);
        self.forget_delete(key);
        false
    }

    /// Whether `obj` (as the cache now shows it) is a foreign edit of an
    /// Endpoints we keep: `key` has the fingerprint of our last write (or
    /// of the content a sync found right, [`EndpointsWriter::accept`]) and
    /// `obj`'s content differs. An Endpoints we do not keep — a
    /// selector-less or ExternalName Service's, one whose Service does not
    /// exist, an old Endpoints-based leader-election lock — is never a
    /// foreign edit: upstream does not react to its edits at all, and a
    /// sync of a key without a Service DELETEs.
    pub fn is_foreign_edit(&self, key: &str, obj: &Endpoints) -> bool {
        let h = self.key_hasher.hash_one(key);
        let s = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        s.get(&h).is_some_and(|own| own.0 != fingerprint(obj))
    }

    /// Whether `obj`, a foreign edit by [`EndpointsWriter::is_foreign_edit`],
    /// holds what we wrote to `key` the time before our last write: the
    /// late echo of a write of ours that succeeded though its answer said
    /// otherwise (a 5xx or a cut connection after the commit, then a retry
    /// that wrote other content). It is synced like any foreign edit, but
    /// no other writer made it.
    pub fn is_earlier_write(&self, key: &str, obj: &Endpoints) -> bool {
        let h = self.key_hasher.hash_one(key);
        let s = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        s.get(&h)
            .is_some_and(|own| own.1 != 0 && own.1 == fingerprint(obj))
    }

    /// A sync found `cur`, the stored Endpoints of the managed Service
    /// `key`, right and wrote nothing: unless a write of ours is
    /// remembered, remember `cur`'s content as what the key should hold,
    /// so a foreign edit is corrected at once (after a restart too, before
    /// any write of ours).
    pub fn accept(&self, key: &str, cur: &Endpoints) {
        let h = self.key_hasher.hash_one(key);
        let mut s = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        s.entry(h).or_insert_with(|| (fingerprint(cur), 0));
    }

    /// Shadow mode compared `cur`, the stored Endpoints of the managed
    /// Service `key` (we write nothing): any later change of its content
    /// is a foreign edit, so the comparison is made again.
    pub fn observe(&self, key: &str, cur: &Endpoints) {
        self.sending(key, cur);
    }

    /// The Service `key` is not (or no longer) managed: its Endpoints is
    /// not ours to keep, its edits are not foreign edits.
    pub fn release(&self, key: &str) {
        let h = self.key_hasher.hash_one(key);
        let mut s = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        if s.remove(&h).is_some() {
            release_if_empty(&mut s);
        }
        drop(s);
        // A Service deleted (or unmanaged) while its key looked stale: a
        // later Service of that name starts its own stale clock.
        let mut since = self.stale_since.lock().unwrap_or_else(|p| p.into_inner());
        if since.remove(key).is_some() {
            release_if_empty(&mut since);
        }
    }

    fn sending(&self, key: &str, obj: &Endpoints) {
        let h = self.key_hasher.hash_one(key);
        let f = fingerprint(obj);
        let mut s = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        let own = s.entry(h).or_insert((f, 0));
        if own.0 != f {
            *own = (f, own.0);
        }
    }

    fn deleting(&self) -> std::sync::MutexGuard<'_, HashMap<String, Option<UidText>>> {
        self.deleting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cache has just shown `key`'s Endpoints (`deleted`) deleted:
    /// whether that was our own DELETE — one is pending and `deleted` is
    /// the object the cache showed when we sent it (or it showed none).
    /// Then nothing is left to do for the key: its Service was absent, and
    /// a Service added since has been synced, failing as stale while the
    /// cache still showed the deleted object (see
    /// [`EndpointsWriter::is_stale`]), or queues its key itself. Upstream
    /// syncs the Service again and DELETEs once more, into a 404.
    pub fn own_delete_seen(&self, key: &str, deleted: &Endpoints) -> bool {
        let ours = self
            .deleting()
            .get(key)
            .is_some_and(|uid| uid.as_ref().is_none_or(|u| *u == deleted.metadata.uid));
        self.forget_delete(key);
        ours
    }

    /// Forget a pending DELETE of `key` (it failed, found nothing, or we
    /// create the object again).
    fn forget_delete(&self, key: &str) {
        let mut d = self.deleting();
        d.remove(key);
        release_if_empty(&mut d);
    }

    fn created(&self) -> std::sync::MutexGuard<'_, HashMap<String, u64>> {
        self.created.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn forget_created(&self, key: &str) {
        let mut created = self.created();
        created.remove(key);
        release_if_empty(&mut created);
    }

    /// The cache of Endpoints is at resourceVersion `cache_rv` (or has just
    /// shown `key`'s object at that version): forget a create of `key` the
    /// cache has passed. From then on [`EndpointsWriter::is_stale`]
    /// would drop that entry anyway (the object cached: always; absent:
    /// once the cache has reached the create, which it has — a cache's
    /// resourceVersion only grows), so only memory changes.
    pub fn cache_reached(&self, key: &str, cache_rv: &str) {
        let mut created = self.created();
        if created.get(key).is_some_and(|w| rv_reached(cache_rv, *w)) {
            created.remove(key);
            release_if_empty(&mut created);
        }
    }

    /// The cache has just shown `key`'s Endpoints at version `rv` (an add
    /// or update event): forget a create of `key` the cache has passed
    /// ([`EndpointsWriter::cache_reached`]) and a replaced version it has
    /// passed ([`StaleTracker::passed`]).
    pub fn cache_shows(&self, key: &str, rv: &str) {
        self.cache_reached(key, rv);
        self.stale.passed(key, rv);
    }

    /// Whether a write of ours awaits its echo (for the handler, which
    /// then names the key; `false` almost always between writes).
    pub fn awaits_echoes(&self) -> bool {
        !self.created().is_empty() || !self.stale.is_empty()
    }

    /// Whether the cached state of `key` is older than our own last write
    /// (docs/behaviour.md#up-a17): `current` carries a resourceVersion we replaced, or is the
    /// very object (same UID) we DELETEd and the cache has not shown gone
    /// yet (its Service deleted and re-created meanwhile: a sync from it
    /// would take the deleted object for the current one, write nothing or
    /// PUT into a 404, and the delete's echo would then be dropped as ours,
    /// leaving the Service without Endpoints), or is absent although we
    /// created it and the cache (at `cache_rv`) has not yet reached the
    /// create's resourceVersion. A create the cache skipped over (created
    /// and deleted while its watch was down) stops counting once the cache
    /// is past it, so a key can never stay stale forever.
    pub fn is_stale(&self, key: &str, current: Option<&Endpoints>, cache_rv: &str) -> bool {
        let mut created = self.created();
        match current {
            Some(cur) => {
                created.remove(key);
                release_if_empty(&mut created);
                let deleted = self
                    .deleting()
                    .get(key)
                    .is_some_and(|uid| uid.as_ref() == Some(&cur.metadata.uid));
                deleted || self.stale.is_stale(key, cur.resource_version())
            }
            None => match created.get(key) {
                None => false,
                Some(&rv) if rv_reached(cache_rv, rv) => {
                    created.remove(key);
                    release_if_empty(&mut created);
                    false
                }
                Some(_) => true,
            },
        }
    }

    /// POST (docs/behaviour.md#up-a21). A namespace being deleted is not an error. The fence is
    /// asked first (the client asks again before each attempt), so a
    /// fenced write costs no rate-limiter token and no bookkeeping.
    pub fn create(&self, key: &str, ns: &str, obj: &Endpoints) -> Result<(), SyncError> {
        self.fence.check().map_err(fenced)?;
        self.sending(key, obj);
        self.forget_delete(key);
        match self.client.create_meta(&ENDPOINTS, Some(ns), obj) {
            Ok(written) => {
                // A resourceVersion that is not an integer would count as
                // reached at once (rv_reached): nothing to remember.
                if let Ok(rv) = written.resource_version().parse::<u64>() {
                    self.created().insert(key.to_string(), rv);
                }
                Ok(())
            }
            Err(e) if e.is_forbidden() && e.has_cause("NamespaceTerminating") => {
                log::debug!("not creating Endpoints {key}: its namespace is terminating");
                Ok(())
            }
            // Fenced between the check above and an attempt: not a failure
            // of the write, so no warning.
            Err(e) if e.is_refused() => Err(failed("creating", key, e)),
            Err(e) => {
                let msg = format!("Failed to create endpoint for service {key}: {e}");
                self.warn(obj, ns, "FailedToCreateEndpoint", msg);
                Err(failed("creating", key, e))
            }
        }
    }

    /// PUT with the cached resourceVersion (docs/behaviour.md#up-a21, #up-a22).
    pub fn update(&self, key: &str, ns: &str, obj: &Endpoints) -> Result<(), SyncError> {
        self.fence.check().map_err(fenced)?;
        self.sending(key, obj);
        match self.client.update_meta(&ENDPOINTS, Some(ns), obj) {
            Ok(written) => {
                if written.resource_version() != obj.resource_version() {
                    self.stale.stale(key, obj.resource_version());
                }
                Ok(())
            }
            Err(e) if e.is_refused() => Err(failed("updating", key, e)),
            Err(e) => {
                let msg = format!("Failed to update endpoint {key}: {e}");
                self.warn(obj, ns, "FailedToUpdateEndpoint", msg);
                // A conflict: our cache is behind the stored object; the
                // worker retries it as stale, from a fresher cache.
                Err(failed("updating", key, e))
            }
        }
    }

    /// DELETE the Endpoints of a deleted Service (docs/behaviour.md#up-a6): NotFound is success;
    /// the stale state of the key is dropped. `cached` is what the cache
    /// shows for the key now (upstream does not look; we remember its UID
    /// until the cache shows it deleted).
    pub fn delete(
        &self,
        key: &str,
        ns: &str,
        name: &str,
        cached: Option<&Endpoints>,
    ) -> Result<(), SyncError> {
        self.fence.check().map_err(fenced)?;
        let uid = cached.map(|e| e.metadata.uid.clone());
        self.deleting().insert(key.to_string(), uid);
        match self.client.delete(&ENDPOINTS, Some(ns), name, None) {
            Ok(()) => {}
            Err(e) if e.is_not_found() => self.forget_delete(key),
            Err(e) => {
                self.forget_delete(key);
                return Err(failed("deleting", key, e));
            }
        }
        self.stale.delete(key);
        self.forget_created(key);
        self.release(key);
        Ok(())
    }

    fn warn(&self, obj: &Endpoints, ns: &str, reason: &str, msg: String) {
        self.recorder
            .record(&reference(obj, ns), &EventSpec::warning(reason, msg));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::recorder::Discard;
    use endpointd_kube::kube::ClientConfig;

    /// A writer whose client is never used by these tests.
    fn writer() -> EndpointsWriter {
        let client = Client::new(
            ClientConfig::new("http://127.0.0.1:9"),
            endpointd_base::clock::RealClock::shared(),
            None,
        )
        .expect("client");
        EndpointsWriter::new(client, Fence::open(), Arc::new(Discard))
    }

    /// A key that looked stale when its Service went away leaves no stale
    /// clock behind (a Service of the same name would inherit it and give
    /// up at once).
    #[test]
    fn a_released_key_forgets_when_it_turned_stale() {
        let w = writer();
        w.created().insert("ns/a".into(), 100);
        assert!(
            w.is_stale_bounded("ns/a", None, "99", 0),
            "stale, clock started"
        );
        assert_eq!(w.stale_since.lock().map(|m| m.len()).unwrap_or(9), 1);
        w.release("ns/a");
        assert!(w.stale_since.lock().map(|m| m.is_empty()).unwrap_or(false));
    }

    /// A create is remembered until the cache has passed its
    /// resourceVersion, then forgotten (and the table released) whether or
    /// not the key is synced again.
    #[test]
    fn a_create_is_forgotten_once_the_cache_has_passed_it() {
        let w = writer();
        assert!(!w.awaits_echoes());
        w.created().insert("ns/a".into(), 100);
        w.created().insert("ns/b".into(), 101);
        assert!(w.awaits_echoes());
        assert!(w.is_stale("ns/a", None, "99"), "the cache has not seen it");
        w.cache_reached("ns/a", "99");
        assert!(w.is_stale("ns/a", None, "99"), "still not seen");
        w.cache_reached("ns/a", "100");
        assert!(!w.is_stale("ns/a", None, "99"), "forgotten");
        assert!(w.is_stale("ns/b", None, "100"), "per key");
        w.cache_reached("ns/b", "not-a-number");
        assert!(!w.awaits_echoes(), "an opaque version counts as reached");
        assert_eq!(w.created().capacity(), 0, "the table is released");
        w.cache_reached("ns/c", "5");
        assert!(!w.is_stale("ns/c", None, "1"), "never created");
    }

    /// Our last write's content is recognised per key; only the
    /// Endpoints we keep (written, or found right by a sync) have foreign
    /// edits.
    #[test]
    fn foreign_edits_per_key() {
        let w = writer();
        let a = ep("", "10.0.0.1");
        let b = ep("", "10.0.0.2");
        assert!(!w.is_foreign_edit("ns/a", &a), "not ours: never foreign");
        assert!(!w.is_foreign_edit("ns/a", &b), "not ours: never foreign");
        w.sending("ns/a", &a);
        w.sending("ns/b", &b);
        assert!(!w.is_foreign_edit("ns/a", &ep("7", "10.0.0.1")), "our own");
        assert!(w.is_foreign_edit("ns/a", &b), "someone else's content");
        assert!(!w.is_foreign_edit("ns/b", &b));
        assert!(!w.is_earlier_write("ns/a", &b), "no write before the last");
        w.sending("ns/a", &b);
        assert!(!w.is_foreign_edit("ns/a", &b), "the last write counts");
        assert!(w.is_foreign_edit("ns/a", &a));
        // The late echo of the write before (it landed, its answer said
        // otherwise, a retry wrote `b`): synced, but ours.
        assert!(w.is_earlier_write("ns/a", &a));
        assert!(
            !w.is_earlier_write("ns/a", &ep("", "10.0.0.9")),
            "someone else's"
        );
        w.sending("ns/a", &b);
        assert!(
            w.is_earlier_write("ns/a", &a),
            "the same content again keeps it"
        );
        // Found right by a sync: kept from then on; a write of ours is
        // not overridden by it.
        w.accept("ns/c", &a);
        assert!(w.is_foreign_edit("ns/c", &b));
        assert!(!w.is_foreign_edit("ns/c", &a));
        w.accept("ns/a", &a);
        assert!(!w.is_foreign_edit("ns/a", &b), "our write of b stays");
        // No longer managed: nothing is foreign.
        w.release("ns/c");
        assert!(!w.is_foreign_edit("ns/c", &b));
        w.release("ns/a");
        w.release("ns/b");
        assert_eq!(w.sent.lock().expect("sent").capacity(), 0, "released");
    }

    /// A pending DELETE: the object we deleted, still cached, is stale;
    /// its delete event is our echo; another object of the same name (a
    /// new UID) is neither.
    #[test]
    fn a_pending_delete_makes_the_deleted_object_stale_until_its_echo() {
        let w = writer();
        let old = ep("7", "10.0.0.1");
        let mut new = ep("9", "10.0.0.1");
        new.metadata.uid = "u-other".into();
        w.deleting()
            .insert("ns/web".into(), Some(old.metadata.uid.clone()));
        assert!(w.is_stale("ns/web", Some(&old), "8"), "the deleted object");
        assert!(!w.is_stale("ns/web", Some(&new), "9"), "a new object");
        assert!(!w.is_stale("ns/web", None, "8"), "gone");
        assert!(!w.is_stale("ns/other", Some(&old), "8"), "per key");
        assert!(!w.own_delete_seen("ns/web", &new), "not the one we deleted");
        assert!(!w.is_stale("ns/web", Some(&old), "8"), "forgotten");
        w.deleting()
            .insert("ns/web".into(), Some(old.metadata.uid.clone()));
        assert!(w.own_delete_seen("ns/web", &old), "our echo");
        assert!(!w.own_delete_seen("ns/web", &old), "once");
        // The cache showed nothing when we deleted: any delete is ours.
        w.deleting().insert("ns/web".into(), None);
        assert!(!w.is_stale("ns/web", Some(&new), "9"));
        assert!(w.own_delete_seen("ns/web", &new));
        assert_eq!(w.deleting().capacity(), 0, "the table is released");
    }

    fn ep(rv: &str, ip: &str) -> Endpoints {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "ns", "resourceVersion": rv,
                         "uid": format!("u-{rv}"), "labels": {"app": "web"}},
            "subsets": [{"addresses": [{"ip": ip}], "ports": [{"port": 80, "protocol": "TCP"}]}]
        }))
        .expect("endpoints")
    }

    #[test]
    fn fingerprint_is_the_written_content_not_the_server_fields() {
        // What we sent (no RV, no UID) and what the watch shows back.
        let mut sent = ep("", "10.0.0.1");
        sent.metadata.uid.clear();
        assert_eq!(fingerprint(&sent), fingerprint(&ep("42", "10.0.0.1")));
        assert_ne!(fingerprint(&sent), fingerprint(&ep("43", "10.0.0.2")));
        let mut relabelled = ep("44", "10.0.0.1");
        relabelled.metadata.labels.insert("app", "other");
        assert_ne!(fingerprint(&sent), fingerprint(&relabelled));
        // Someone else's annotation is not ours to keep; ours are.
        let mut annotated = ep("45", "10.0.0.1");
        annotated.metadata.annotations.insert("tool/heartbeat", "1");
        assert_eq!(fingerprint(&sent), fingerprint(&annotated));
        for ours in MANAGED_ANNOTATIONS {
            let mut edited = ep("46", "10.0.0.1");
            edited.metadata.annotations.insert(ours, "x");
            assert_ne!(fingerprint(&sent), fingerprint(&edited), "{ours}");
        }
    }
}
