//! The EndpointSlice generation tracker (upstream
//! `staging/src/k8s.io/endpointslice/util/endpointslice_tracker.go`;
//! docs/behaviour.md#up-b6, #up-b29): per Service, the generation of every slice this
//! controller wrote (or −1: deletion expected), so that handlers ignore our
//! own writes and a sync knows when the cache is older than them. While an
//! update or a create of ours is in flight, events that may be its echo are
//! held until its response says whose they were (a difference from
//! upstream, which syncs the Service once more when the echo wins the race).
//!
//! Thread-safe (handlers and workers share it); never reads a cache.

use super::service_key;
use crate::runtime::stale::give_up_stale;
use compact_str::CompactString;
use endpointd_kube::model::{EndpointSlice, Service, Uid};
use std::borrow::Borrow;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, MutexGuard};

/// Upstream `deletionExpected`.
const DELETION_EXPECTED: i64 = -1;
/// A held generation meaning: the slice was deleted while our write of it
/// was in flight (higher than any real generation, so the write's finish
/// syncs the Service again; the finish does not track the slice).
const DELETED_MEANWHILE: i64 = i64::MAX;

/// Slice UID → generation, sorted by UID: a Service's usual one slice
/// inline, more in one exact-size block. A hash map of UID strings cost
/// several hundred bytes, and a one-element Vec its own allocation
/// (issue 13).
#[derive(Debug, Default)]
enum Gens {
    #[default]
    Empty,
    One((Uid, i64)),
    /// Two or more (a box, not a Vec: 32 bytes in all, not 40).
    Many(Box<[(Uid, i64)]>),
}

impl Gens {
    fn as_slice(&self) -> &[(Uid, i64)] {
        match self {
            Gens::Empty => &[],
            Gens::One(e) => std::slice::from_ref(e),
            Gens::Many(v) => v,
        }
    }
    fn as_mut_slice(&mut self) -> &mut [(Uid, i64)] {
        match self {
            Gens::Empty => &mut [],
            Gens::One(e) => std::slice::from_mut(e),
            Gens::Many(v) => v,
        }
    }
    fn find(&self, uid: &Uid) -> Result<usize, usize> {
        self.as_slice().binary_search_by(|e| e.0.cmp(uid))
    }
    fn get(&self, uid: &Uid) -> Option<i64> {
        self.find(uid).ok().map(|i| self.as_slice()[i].1)
    }
    fn get_mut(&mut self, uid: &Uid) -> Option<&mut i64> {
        let i = self.find(uid).ok()?;
        Some(&mut self.as_mut_slice()[i].1)
    }
    fn contains(&self, uid: &Uid) -> bool {
        self.find(uid).is_ok()
    }
    fn insert(&mut self, uid: Uid, g: i64) {
        *self.entry_or(uid, g) = g;
    }
    /// The entry of `uid` (inserted as `g` when absent).
    fn entry_or(&mut self, uid: Uid, g: i64) -> &mut i64 {
        let i = match self.find(&uid) {
            Ok(i) => i,
            Err(i) => {
                *self = match std::mem::take(self) {
                    Gens::Empty => Gens::One((uid, g)),
                    Gens::One(e) => {
                        let mut v = Vec::with_capacity(2);
                        v.push(e);
                        v.insert(i, (uid, g));
                        Gens::Many(v.into_boxed_slice())
                    }
                    Gens::Many(v) => {
                        let mut v = v.into_vec();
                        v.reserve_exact(1);
                        v.insert(i, (uid, g));
                        Gens::Many(v.into_boxed_slice())
                    }
                };
                i
            }
        };
        &mut self.as_mut_slice()[i].1
    }
    fn remove(&mut self, uid: &Uid) -> Option<i64> {
        let i = self.find(uid).ok()?;
        let (rest, g) = match std::mem::take(self) {
            Gens::Many(v) => {
                let mut v = v.into_vec();
                let g = v.remove(i).1;
                let rest = match (v.pop(), v.is_empty()) {
                    (Some(last), true) => Gens::One(last),
                    (Some(last), false) => {
                        v.push(last);
                        Gens::Many(v.into_boxed_slice())
                    }
                    (None, _) => Gens::Empty,
                };
                (rest, g)
            }
            Gens::One(e) => (Gens::Empty, e.1),
            Gens::Empty => return None,
        };
        *self = rest;
        Some(g)
    }
    fn clear(&mut self) {
        *self = Gens::Empty;
    }
    fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }
}

#[derive(Debug, Default)]
struct ServiceState {
    /// The Service's `ns/name` (inline up to 24 bytes).
    key: CompactString,
    /// The Service UID the generations belong to (docs/behaviour.md#up-b6's UID reset).
    service_uid: Uid,
    generations: Gens,
    /// What only matters while writes are in flight or the cache looks
    /// stale; `None` (no block) the rest of the time.
    busy: Option<Box<Busy>>,
}

#[derive(Debug, Default)]
struct Busy {
    /// Slices (by UID) with an update of ours in flight, and the highest
    /// generation an event showed meanwhile (0: none yet).
    in_flight: Gens,
    /// Creates of ours in flight.
    creating: u32,
    /// Untracked slices (by UID) that events showed while creates of ours
    /// were in flight, with the highest generation seen: the echo of one
    /// of our creates, or someone else's slice.
    held_new: Gens,
    /// Since when the cache has looked older than our writes.
    stale_since: Option<std::time::Instant>,
    /// The slice cache's LIST count when that began (see
    /// [`EndpointSliceTracker::stale_slices_at`]).
    stale_lists: Option<u64>,
}

impl ServiceState {
    fn busy(&mut self) -> &mut Busy {
        self.busy.get_or_insert_with(Box::default)
    }
    /// Drop the [`Busy`] block once it holds nothing.
    fn tidy(&mut self) {
        if self.busy.as_ref().is_some_and(|b| {
            b.in_flight.is_empty()
                && b.creating == 0
                && b.held_new.is_empty()
                && b.stale_since.is_none()
        }) {
            self.busy = None;
        }
    }
}

/// A table slot: one Service's state in its own block, found by its key.
/// 8 bytes a slot (the table has up to twice as many slots as Services)
/// where a `Box<str>` key beside the state inline took 72, plus the key's
/// own allocation (issue 13).
#[derive(Debug)]
struct Slot(Box<ServiceState>);

impl Borrow<str> for Slot {
    fn borrow(&self) -> &str {
        &self.0.key
    }
}

impl Hash for Slot {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.key.as_str().hash(state);
    }
}

impl PartialEq for Slot {
    fn eq(&self, other: &Slot) -> bool {
        self.0.key == other.0.key
    }
}

impl Eq for Slot {}

/// The per-Service states (a set: a state holds its key).
type States = HashSet<Slot>;

/// How a Service's cached slices compare with what we wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Staleness {
    /// They show all our writes.
    Fresh,
    /// One shows an older generation than ours, or one we deleted.
    Older,
    /// One we wrote (created) is not there.
    Missing,
}

/// How `slices` compare with `st` (docs/behaviour.md#up-b6); a recreated Service (new UID)
/// starts afresh. A missing slice outranks an older one: it is the case
/// that must not be synced from the cache early.
fn staleness<'a>(
    st: &mut ServiceState,
    svc: &Service,
    slices: impl IntoIterator<Item = &'a EndpointSlice>,
) -> Staleness {
    if st.service_uid.is_empty() {
        st.service_uid = svc.metadata.uid.clone();
    } else if svc.metadata.uid != st.service_uid {
        st.service_uid = svc.metadata.uid.clone();
        st.generations.clear();
        return Staleness::Fresh;
    }
    let mut older = false;
    let mut seen = HashSet::new();
    for s in slices {
        let uid = Uid::new(&s.metadata.uid);
        if let Some(g) = st.generations.get(&uid) {
            if g == DELETION_EXPECTED || g > generation(s) {
                older = true;
            }
        }
        seen.insert(uid);
    }
    if st
        .generations
        .as_slice()
        .iter()
        .any(|(uid, g)| *g != DELETION_EXPECTED && !seen.contains(uid))
    {
        Staleness::Missing
    } else if older {
        Staleness::Older
    } else {
        Staleness::Fresh
    }
}

/// An update in flight (see [`EndpointSliceTracker::begin_update`]);
/// dropping it unfinished (the write failed) stops holding events.
#[must_use]
pub struct InFlight<'a> {
    tracker: &'a EndpointSliceTracker,
    key: Option<String>,
    uid: Uid,
}

impl InFlight<'_> {
    /// The update succeeded and the API returned `written`: remember its
    /// generation, and return true when an event held meanwhile showed a
    /// newer generation than ours (someone else wrote the slice after us:
    /// the Service must be synced again).
    pub fn finish(mut self, written: &EndpointSlice) -> bool {
        let g = generation(written);
        let Some(k) = self.key.take() else {
            self.tracker.update(written);
            return false;
        };
        // One lock: an echo arriving between ending the hold and recording
        // our generation would otherwise sync the Service for nothing.
        let uid = &self.uid;
        self.tracker.upsert(&k, |entry| {
            let held = entry
                .busy
                .as_mut()
                .and_then(|b| b.in_flight.remove(uid))
                .unwrap_or(0);
            entry.tidy();
            if held != DELETED_MEANWHILE {
                entry.generations.insert(Uid::new(&written.metadata.uid), g);
            }
            held > g
        })
    }
}

/// A create in flight (see [`EndpointSliceTracker::begin_create`]);
/// dropping it unfinished (the write failed) stops holding events.
#[must_use]
pub struct Creating<'a> {
    tracker: &'a EndpointSliceTracker,
    key: Option<String>,
}

impl Creating<'_> {
    /// The create succeeded and the API returned `created`: track it, and
    /// return true when an event held meanwhile was not the echo of ours
    /// (someone else's slice, or ours at a newer generation than the one
    /// we wrote): the Service must be synced again.
    pub fn finish(mut self, created: &EndpointSlice) -> bool {
        let g = generation(created);
        let Some(k) = self.key.take() else {
            self.tracker.update(created);
            return false;
        };
        let uid = Uid::new(&created.metadata.uid);
        self.tracker.upsert(&k, |entry| {
            let busy = entry.busy();
            busy.creating = busy.creating.saturating_sub(1);
            let held = busy.held_new.remove(&uid);
            let mut again = held.is_some_and(|held| held > g);
            if busy.creating == 0 && !busy.held_new.is_empty() {
                busy.held_new.clear();
                again = true;
            }
            entry.tidy();
            if held != Some(DELETED_MEANWHILE) {
                entry.generations.insert(uid, g);
            }
            again
        })
    }
}

impl Drop for Creating<'_> {
    fn drop(&mut self) {
        if let Some(k) = self.key.take() {
            self.tracker.update_existing(&k, |entry| {
                let busy = entry.busy();
                busy.creating = busy.creating.saturating_sub(1);
                if busy.creating == 0 {
                    // The sync failed and is retried (or the namespace is
                    // terminating): it reads the cache afresh.
                    busy.held_new.clear();
                }
                entry.tidy();
            });
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(k) = self.key.take() {
            self.tracker.end_update(&k, &self.uid);
        }
    }
}

/// Keyed by `ns/service` from the slice's service-name label.
#[derive(Debug, Default)]
pub struct EndpointSliceTracker {
    state: Mutex<States>,
}

fn generation(s: &EndpointSlice) -> i64 {
    s.metadata.generation.unwrap_or(0)
}

/// What [`EndpointSliceTracker::seen`] makes of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOrigin {
    /// Our own write, or older.
    Ours,
    /// A slice (or Service) we have not written.
    Untracked,
    /// Someone else's write to a slice we wrote.
    Foreign,
}

impl EndpointSliceTracker {
    fn lock(&self) -> MutexGuard<'_, States> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `f` on the state of `key` (a new one when untracked), under the
    /// lock. (A set has no mutable lookup: the state is taken out and put
    /// back, its key unchanged.)
    fn upsert<R>(&self, key: &str, f: impl FnOnce(&mut ServiceState) -> R) -> R {
        let mut all = self.lock();
        let mut slot = all.take(key).unwrap_or_else(|| {
            Slot(Box::new(ServiceState {
                key: key.into(),
                ..ServiceState::default()
            }))
        });
        let r = f(&mut slot.0);
        all.insert(slot);
        r
    }

    /// `f` on the state of `key` if tracked, under the lock.
    fn update_existing<R>(&self, key: &str, f: impl FnOnce(&mut ServiceState) -> R) -> Option<R> {
        let mut all = self.lock();
        let mut slot = all.take(key)?;
        let r = f(&mut slot.0);
        all.insert(slot);
        Some(r)
    }

    fn set(&self, s: &EndpointSlice, g: i64) {
        let Some(k) = service_key(s) else { return };
        self.upsert(&k, |st| {
            st.generations.insert(Uid::new(&s.metadata.uid), g);
        });
    }

    /// We wrote `s` (as returned by the API): remember its generation.
    pub fn update(&self, s: &EndpointSlice) {
        self.set(s, generation(s));
    }

    /// An update of `s` (a cached slice, same UID) is about to be sent.
    /// Until the returned guard is finished with the API's answer (or
    /// dropped), events about `s` do not sync its Service: their
    /// generation is held instead. The watch often delivers the echo of
    /// our own write before the write's response arrives; upstream (same
    /// race) then syncs the Service once more for nothing.
    pub fn begin_update(&self, s: &EndpointSlice) -> InFlight<'_> {
        let key = service_key(s);
        let uid = Uid::new(&s.metadata.uid);
        if let Some(k) = &key {
            self.upsert(k, |st| st.busy().in_flight.insert(uid.clone(), 0));
        }
        InFlight {
            tracker: self,
            key,
            uid,
        }
    }

    /// A create of `s` (a desired slice, no UID yet) is about to be sent.
    /// Until the returned guard is finished with the API's answer (or
    /// dropped), events about slices of its Service that are not tracked
    /// do not sync the Service: they are held instead, and the Service is
    /// synced again only if one of them turns out not to be our create's
    /// echo. At a cold start the echo of most creates arrives before the
    /// create's response; upstream (same race) then syncs the Service once
    /// more for nothing.
    pub fn begin_create(&self, s: &EndpointSlice) -> Creating<'_> {
        let key = service_key(s);
        if let Some(k) = &key {
            self.upsert(k, |st| st.busy().creating += 1);
        }
        Creating { tracker: self, key }
    }

    /// Stop holding events of a slice; the highest generation held.
    fn end_update(&self, key: &str, uid: &Uid) -> i64 {
        self.update_existing(key, |st| {
            let held = st.busy.as_mut().and_then(|b| b.in_flight.remove(uid));
            st.tidy();
            held.unwrap_or(0)
        })
        .unwrap_or(0)
    }

    /// A DELETE of `s` is about to be sent: expect its deletion before the
    /// answer, since the watch often delivers the event first (marked after
    /// the answer, such an event was taken for someone else's deletion —
    /// one more sync — and the mark then stayed forever; upstream marks
    /// after the answer too). What was tracked before, for
    /// [`EndpointSliceTracker::deletion_not_done`].
    pub fn deleting(&self, s: &EndpointSlice) -> Option<i64> {
        let k = service_key(s)?;
        let uid = Uid::new(&s.metadata.uid);
        self.upsert(&k, |st| {
            let prev = st.generations.get(&uid);
            st.generations.insert(uid, DELETION_EXPECTED);
            prev
        })
    }

    /// The DELETE of `s` did nothing (it failed, or `s` was gone already:
    /// someone else's deletion, whose event then syncs the Service): track
    /// `s` as before, `prev` — unless its deletion event was handled
    /// meanwhile, which has forgotten it already.
    pub fn deletion_not_done(&self, s: &EndpointSlice, prev: Option<i64>) {
        let Some(k) = service_key(s) else { return };
        let uid = Uid::new(&s.metadata.uid);
        self.update_existing(&k, |st| {
            if st.generations.get(&uid) != Some(DELETION_EXPECTED) {
                return;
            }
            match prev {
                Some(g) => st.generations.insert(uid, g),
                None => {
                    st.generations.remove(&uid);
                }
            }
        });
    }

    /// Whether `s`'s UID is tracked.
    pub fn has(&self, s: &EndpointSlice) -> bool {
        let Some(k) = service_key(s) else {
            return false;
        };
        let uid = Uid::new(&s.metadata.uid);
        self.lock()
            .get(k.as_str())
            .is_some_and(|st| st.0.generations.contains(&uid))
    }

    /// Whether an event about `s` should sync its Service: untracked
    /// Service or slice, or a generation newer than ours.
    pub fn should_sync(&self, s: &EndpointSlice) -> bool {
        self.seen(s) != WriteOrigin::Ours
    }

    /// What an event about `s` shows: our own write (its echo, held while
    /// the write is in flight, or an older generation), a slice or Service
    /// not tracked, or someone else's write to a slice we wrote (a
    /// generation newer than ours).
    pub fn seen(&self, s: &EndpointSlice) -> WriteOrigin {
        let Some(k) = service_key(s) else {
            return WriteOrigin::Untracked;
        };
        let uid = Uid::new(&s.metadata.uid);
        self.update_existing(&k, |x| {
            if let Some(held) = x.busy.as_mut().and_then(|b| b.in_flight.get_mut(&uid)) {
                *held = (*held).max(generation(s));
                return WriteOrigin::Ours;
            }
            match x.generations.get(&uid) {
                None => match x.busy.as_mut().filter(|b| b.creating > 0) {
                    Some(b) => {
                        let held = b.held_new.entry_or(uid, 0);
                        *held = (*held).max(generation(s));
                        WriteOrigin::Ours
                    }
                    None => WriteOrigin::Untracked,
                },
                Some(g) if generation(s) > g => WriteOrigin::Foreign,
                Some(_) => WriteOrigin::Ours,
            }
        })
        .unwrap_or(WriteOrigin::Untracked)
    }

    /// `s` was deleted: forget it; false when it was tracked and the
    /// deletion was not ours (only then is a sync due).
    /// A write of ours to it still in flight (an update, or the create
    /// whose echo is held) will not track it again, and its finish asks
    /// for another sync: tracked again, the slice would count as missing
    /// from the cache (stale) until the next LIST.
    pub fn handle_deletion(&self, s: &EndpointSlice) -> bool {
        let Some(k) = service_key(s) else { return true };
        let uid = Uid::new(&s.metadata.uid);
        match self
            .update_existing(&k, |x| {
                if let Some(b) = x.busy.as_mut() {
                    for held in [b.in_flight.get_mut(&uid), b.held_new.get_mut(&uid)]
                        .into_iter()
                        .flatten()
                    {
                        *held = DELETED_MEANWHILE;
                    }
                }
                x.generations.remove(&uid)
            })
            .flatten()
        {
            Some(g) => g == DELETION_EXPECTED,
            None => true,
        }
    }

    /// Forget a deleted Service.
    pub fn delete_service(&self, namespace: &str, name: &str) {
        self.lock().remove(format!("{namespace}/{name}").as_str());
    }

    /// docs/behaviour.md#up-b6: whether `slices` (the cached managed slices of `svc`) are older
    /// than what we wrote. A recreated Service (new UID) starts afresh.
    pub fn stale_slices<'a>(
        &self,
        svc: &Service,
        slices: impl IntoIterator<Item = &'a EndpointSlice>,
    ) -> bool {
        let key = format!("{}/{}", svc.metadata.namespace, svc.metadata.name);
        self.update_existing(&key, |st| staleness(st, svc, slices) != Staleness::Fresh)
            .unwrap_or(false)
    }

    /// [`EndpointSliceTracker::stale_slices`] with a bound, after which the
    /// Service's tracked generations are dropped (logged) and it is synced
    /// from the cache as it is; `lists` is the slice cache's
    /// [`list_count`](endpointd_kube::informer::Store::list_count).
    /// - A cached slice older than ours (or one we deleted): after
    ///   [`STALE_GIVE_UP`](crate::runtime::stale::STALE_GIVE_UP). Syncing
    ///   from it then is safe: an update carries the resourceVersion it
    ///   read, so a truly stale one meets a 409.
    /// - A slice we created that the cache lacks: only once the cache was
    ///   listed again since this began. A watch that stalls (a lossy link
    ///   stops one TCP stream while new connections work, until the idle
    ///   timeout) left the cache without our create; giving up on time then
    ///   made the sync create the same endpoints again in a second slice.
    ///   A fresh LIST is a consistent read: lacking the slice then, it is
    ///   gone (an etcd restore; the history check makes the informers list
    ///   again). A LIST that began before our create and ended after this
    ///   began is the one case left; the duplicate it can cause is removed
    ///   by the next sync.
    pub fn stale_slices_at<'a>(
        &self,
        svc: &Service,
        slices: impl IntoIterator<Item = &'a EndpointSlice>,
        now: std::time::Instant,
        lists: u64,
    ) -> bool {
        let key = format!("{}/{}", svc.metadata.namespace, svc.metadata.name);
        self.update_existing(&key, |st| {
            let kind = staleness(st, svc, slices);
            if kind == Staleness::Fresh {
                if let Some(b) = st.busy.as_mut() {
                    b.stale_since = None;
                    b.stale_lists = None;
                }
                st.tidy();
                return false;
            }
            let b = st.busy();
            let since = *b.stale_since.get_or_insert(now);
            let lists_then = *b.stale_lists.get_or_insert(lists);
            let missing = kind == Staleness::Missing;
            if !give_up_stale(
                "EndpointSlice",
                &key,
                missing,
                (since, lists_then),
                (now, lists),
            ) {
                return true;
            }
            st.generations.clear();
            let b = st.busy();
            b.stale_since = None;
            b.stale_lists = None;
            st.tidy();
            false
        })
        .unwrap_or(false)
    }

    /// Remember which Service UID the tracked generations belong to (called
    /// before a sync writes).
    pub fn set_service_uid(&self, svc: &Service) {
        let key = format!("{}/{}", svc.metadata.namespace, svc.metadata.name);
        self.upsert(&key, |st| {
            if svc.metadata.uid != st.service_uid {
                st.service_uid = svc.metadata.uid.clone();
                st.generations.clear();
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::stale::STALE_GIVE_UP;
    use endpointd_kube::model::AddressType;

    fn slice(uid: &str, gen: i64) -> EndpointSlice {
        let mut s = EndpointSlice::new(AddressType::IPv4);
        s.metadata.namespace = "ns".into();
        s.metadata.name = uid.into();
        s.metadata.uid = uid.into();
        s.metadata.generation = Some(gen);
        s.metadata.labels = [("kubernetes.io/service-name", "svc")]
            .into_iter()
            .collect();
        s
    }

    fn svc(uid: &str) -> Service {
        let mut s = Service::default();
        s.metadata.namespace = "ns".into();
        s.metadata.name = "svc".into();
        s.metadata.uid = uid.into();
        s
    }

    #[test]
    fn a_slot_is_a_pointer_and_a_state_88_bytes() {
        assert_eq!(std::mem::size_of::<Slot>(), 8);
        assert_eq!(std::mem::size_of::<Gens>(), 32);
        // 88 + 8 rounds up to the same 96-byte glibc chunk as 80 did.
        assert_eq!(std::mem::size_of::<ServiceState>(), 88);
        let t = EndpointSliceTracker::default();
        t.set_service_uid(&svc("u1"));
        t.update(&slice("a", 1));
        let all = t.lock();
        assert_eq!(all.len(), 1, "one state per Service, found by its key");
        let st = all.get("ns/svc").expect("tracked");
        assert_eq!(st.0.key, "ns/svc");
        assert!(st.0.generations.contains(&Uid::new("a")));
    }

    /// Inserts, updates and removals keep the UIDs sorted, one slice
    /// inline and more in a block.
    #[test]
    fn gens_table() {
        let u = |s: &str| Uid::new(s);
        let mut g = Gens::default();
        assert_eq!(g.remove(&u("a")), None);
        g.insert(u("b"), 2);
        assert!(matches!(g, Gens::One(_)));
        *g.entry_or(u("b"), 0) += 1;
        assert_eq!(g.get(&u("b")), Some(3));
        g.insert(u("c"), 4);
        g.insert(u("a"), 1);
        let uids: Vec<String> = g
            .as_slice()
            .iter()
            .map(|e| e.0.as_str().to_string())
            .collect();
        assert_eq!(uids, ["a", "b", "c"]);
        assert_eq!(*g.entry_or(u("c"), 9), 4, "present: kept");
        if let Some(x) = g.get_mut(&u("a")) {
            *x = -1;
        }
        assert_eq!(g.get(&u("a")), Some(-1));
        assert_eq!(g.remove(&u("b")), Some(3));
        assert!(matches!(g, Gens::Many(_)));
        assert_eq!(g.remove(&u("a")), Some(-1));
        assert!(matches!(g, Gens::One(_)), "back inline");
        assert!(g.contains(&u("c")) && !g.contains(&u("a")));
        assert_eq!(g.remove(&u("c")), Some(4));
        assert!(g.is_empty() && matches!(g, Gens::Empty));
        g.insert(u("z"), 1);
        g.clear();
        assert!(g.is_empty());
    }

    /// Someone else's write is told from ours: a generation newer than the
    /// one we wrote is foreign; our echo, an older generation, an update
    /// held while ours is in flight, and a slice we never wrote are not.
    #[test]
    fn foreign_writes_are_newer_generations_of_slices_we_wrote() {
        let t = EndpointSliceTracker::default();
        assert_eq!(
            t.seen(&slice("a", 1)),
            WriteOrigin::Untracked,
            "no Service state"
        );
        t.update(&slice("a", 2));
        assert_eq!(t.seen(&slice("a", 2)), WriteOrigin::Ours, "our echo");
        assert_eq!(t.seen(&slice("a", 1)), WriteOrigin::Ours, "older");
        assert_eq!(t.seen(&slice("a", 3)), WriteOrigin::Foreign);
        assert_eq!(t.seen(&slice("b", 1)), WriteOrigin::Untracked, "not ours");
        let w = t.begin_update(&slice("a", 2));
        assert_eq!(
            t.seen(&slice("a", 3)),
            WriteOrigin::Ours,
            "held while in flight"
        );
        assert!(!w.finish(&slice("a", 3)));
        assert_eq!(t.seen(&slice("a", 4)), WriteOrigin::Foreign);
    }

    /// The echo of our own update, seen before the update's response, does
    /// not sync; a newer generation seen meanwhile does (once the response
    /// is in); a failed write stops holding.
    #[test]
    fn events_during_our_update_are_held() {
        let t = EndpointSliceTracker::default();
        t.update(&slice("a", 2));
        let w = t.begin_update(&slice("a", 2));
        assert!(
            !t.should_sync(&slice("a", 3)),
            "our echo, before the response"
        );
        assert!(!w.finish(&slice("a", 3)), "the echo was ours");
        assert!(!t.should_sync(&slice("a", 3)), "tracked as ours");
        assert!(t.should_sync(&slice("a", 4)), "no longer held");

        let w = t.begin_update(&slice("a", 4));
        assert!(!t.should_sync(&slice("a", 5)));
        assert!(!t.should_sync(&slice("a", 6)), "someone else's, after ours");
        assert!(w.finish(&slice("a", 5)), "overtaken: sync again");
        assert!(t.should_sync(&slice("a", 6)));

        let w = t.begin_update(&slice("a", 6));
        assert!(!t.should_sync(&slice("a", 7)));
        drop(w); // the write failed
        assert!(t.should_sync(&slice("a", 7)), "not held after a failure");
        assert!(t.should_sync(&slice("b", 1)), "other slices are not held");
    }

    /// The echo of our own create, seen before the create's response, does
    /// not sync; a slice of the Service that is not ours, seen while a
    /// create was in flight, does (once the creates are done); so does our
    /// slice at a newer generation than the one we created; a failed
    /// create stops holding.
    #[test]
    fn events_during_our_create_are_held() {
        let t = EndpointSliceTracker::default();
        let desired = slice("", 0);
        let c = t.begin_create(&desired);
        assert!(
            !t.should_sync(&slice("a", 1)),
            "our echo, before the response"
        );
        assert!(!c.finish(&slice("a", 1)), "the echo was ours");
        assert!(!t.should_sync(&slice("a", 1)), "tracked as ours");
        assert!(t.should_sync(&slice("x", 1)), "no longer held");

        // Two creates in one sync; the second's echo comes first.
        let c1 = t.begin_create(&desired);
        assert!(!t.should_sync(&slice("b", 1)));
        assert!(!c1.finish(&slice("b", 1)));
        let c2 = t.begin_create(&desired);
        assert!(!t.should_sync(&slice("c", 1)));
        assert!(!t.should_sync(&slice("b", 1)), "b is tracked");
        assert!(!c2.finish(&slice("c", 1)));

        // Someone else's slice appears while ours is being created.
        let c = t.begin_create(&desired);
        assert!(!t.should_sync(&slice("d", 1)), "held");
        assert!(!t.should_sync(&slice("e", 1)), "held");
        assert!(c.finish(&slice("d", 1)), "e was not ours: sync again");
        assert!(t.should_sync(&slice("e", 2)), "not held any more");

        // Ours, changed by someone else before our response came.
        let c = t.begin_create(&desired);
        assert!(!t.should_sync(&slice("f", 1)));
        assert!(!t.should_sync(&slice("f", 2)));
        assert!(c.finish(&slice("f", 1)), "overtaken: sync again");

        // A failed create.
        let c = t.begin_create(&desired);
        assert!(!t.should_sync(&slice("g", 1)));
        drop(c);
        assert!(t.should_sync(&slice("g", 1)), "not held after a failure");
        let mut other = slice("h", 1);
        other.metadata.labels = [("kubernetes.io/service-name", "other")]
            .into_iter()
            .collect();
        let c = t.begin_create(&desired);
        assert!(t.should_sync(&other), "other Services are not held");
        drop(c);
    }

    /// Upstream TestEndpointSliceTrackerUpdate / ShouldSync / HandleDeletion.
    #[test]
    fn should_sync_and_deletions() {
        let t = EndpointSliceTracker::default();
        assert!(t.should_sync(&slice("a", 1)), "untracked service");
        t.update(&slice("a", 2));
        assert!(t.has(&slice("a", 2)));
        assert!(!t.should_sync(&slice("a", 2)), "our own write");
        assert!(!t.should_sync(&slice("a", 1)), "older");
        assert!(t.should_sync(&slice("a", 3)), "someone else's newer write");
        assert!(t.should_sync(&slice("b", 1)), "untracked slice");
        assert!(!t.handle_deletion(&slice("a", 2)), "an unexpected deletion");
        assert!(!t.has(&slice("a", 2)));
        t.deleting(&slice("b", 1));
        assert!(
            t.should_sync(&slice("b", 1)),
            "-1 counts as lower than every real generation"
        );
    }

    /// Our DELETE is expected before it is sent: its event, before or
    /// after the answer, syncs nothing and leaves nothing behind; a failed
    /// DELETE (or one that found the slice gone) keeps the slice tracked
    /// as it was, unless its deletion event came meanwhile.
    #[test]
    fn deletions_expected_before_they_are_sent() {
        let t = EndpointSliceTracker::default();
        let a = slice("a", 1);
        t.update(&a);
        assert_eq!(t.deleting(&a), Some(1));
        assert!(t.handle_deletion(&a), "ours: no sync");
        assert!(!t.has(&a), "nothing left behind");
        let b = slice("b", 2);
        t.update(&b);
        let prev = t.deleting(&b);
        t.deletion_not_done(&b, prev);
        assert!(!t.should_sync(&b), "tracked at 2 again");
        assert!(t.should_sync(&slice("b", 3)));
        // Someone else deleted it first (handled: a sync), our DELETE then
        // finds it gone: no mark stays.
        let d = slice("d", 1);
        t.update(&d);
        assert!(!t.handle_deletion(&d));
        let prev = t.deleting(&d);
        t.deletion_not_done(&d, prev);
        assert!(!t.has(&d));
        // The event came while a failed DELETE was in flight: not re-added.
        let e = slice("e", 1);
        t.update(&e);
        let prev = t.deleting(&e);
        assert!(t.handle_deletion(&e));
        t.deletion_not_done(&e, prev);
        assert!(!t.has(&e));
    }

    /// A slice deleted by someone else while our write of it is in flight
    /// (its deletion event before our answer): the write's finish asks for
    /// another sync and does not track the slice again (tracked, it would
    /// count as missing from the cache until the next LIST).
    #[test]
    fn a_slice_deleted_while_our_write_is_in_flight_is_not_tracked_again() {
        let t = EndpointSliceTracker::default();
        let s = slice("s", 3);
        t.update(&s);
        let f = t.begin_update(&s);
        assert!(!t.handle_deletion(&s), "not ours: the handler syncs");
        assert!(!t.should_sync(&slice("s", 5)), "still held");
        assert!(f.finish(&slice("s", 4)), "sync again");
        assert!(!t.has(&s));
        // A create: its echo held, then its deletion, then our answer.
        let c = t.begin_create(&slice("", 0));
        assert!(!t.should_sync(&slice("x", 1)), "the echo is held");
        assert!(
            t.handle_deletion(&slice("x", 1)),
            "untracked: no sync of its own"
        );
        assert!(c.finish(&slice("x", 1)), "sync again");
        assert!(!t.has(&slice("x", 1)));
        assert!(!t.stale_slices(&svc("u1"), []), "nothing missing");
    }

    /// Upstream TestEndpointSliceTrackerStaleSlices.
    #[test]
    fn stale_slices_table() {
        let t = EndpointSliceTracker::default();
        t.set_service_uid(&svc("u1"));
        assert!(!t.stale_slices(&svc("u1"), []), "nothing tracked");
        t.update(&slice("a", 2));
        assert!(
            !t.stale_slices(&svc("u1"), &[slice("a", 2)]),
            "same generation"
        );
        assert!(
            !t.stale_slices(&svc("u1"), &[slice("a", 3)]),
            "newer generation"
        );
        assert!(
            t.stale_slices(&svc("u1"), &[slice("a", 1)]),
            "older generation"
        );
        assert!(
            t.stale_slices(&svc("u1"), []),
            "tracked slice missing from the cache"
        );
        t.deleting(&slice("a", 2));
        assert!(
            t.stale_slices(&svc("u1"), &[slice("a", 2)]),
            "deleted by us but still cached"
        );
        assert!(!t.stale_slices(&svc("u1"), []), "deleted and gone");
        t.update(&slice("c", 5));
        assert!(
            !t.stale_slices(&svc("u2"), []),
            "recreated service: generations reset"
        );
        assert!(!t.has(&slice("c", 5)));
    }

    #[test]
    fn a_cache_stale_for_longer_than_the_bound_is_given_up_on() {
        let t = EndpointSliceTracker::default();
        t.set_service_uid(&svc("u1"));
        t.update(&slice("a", 7));
        // An etcd restore brought the slice back at generation 2.
        let restored = [slice("a", 2)];
        let t0 = std::time::Instant::now();
        assert!(t.stale_slices_at(&svc("u1"), &restored, t0, 1));
        assert!(t.stale_slices_at(&svc("u1"), &restored, t0 + STALE_GIVE_UP / 2, 1));
        assert!(
            !t.stale_slices_at(&svc("u1"), &restored, t0 + STALE_GIVE_UP, 1),
            "given up after the bound"
        );
        assert!(
            !t.stale_slices(&svc("u1"), &restored),
            "bookkeeping dropped"
        );
        // A short lag is still waited out.
        t.update(&slice("a", 3));
        let lagging = [slice("a", 2)];
        let t1 = t0 + STALE_GIVE_UP * 2;
        assert!(t.stale_slices_at(&svc("u1"), &lagging, t1, 1));
        assert!(!t.stale_slices_at(
            &svc("u1"),
            &[slice("a", 3)],
            t1 + std::time::Duration::from_millis(5),
            1
        ));
        assert!(
            t.stale_slices_at(&svc("u1"), &lagging, t1 + STALE_GIVE_UP, 1),
            "a fresh stale period starts again"
        );
    }

    /// A slice we created that the cache lacks (its watch stalled) is
    /// waited for however long it takes, until the cache is listed again;
    /// giving up on time created the same endpoints in a second slice.
    #[test]
    fn a_created_slice_missing_from_the_cache_is_given_up_on_only_after_a_list() {
        let t = EndpointSliceTracker::default();
        t.set_service_uid(&svc("u1"));
        t.update(&slice("a", 1));
        let t0 = std::time::Instant::now();
        let (no_slice, at) = ([], |k: u32| t0 + STALE_GIVE_UP * k);
        assert!(t.stale_slices_at(&svc("u1"), no_slice, at(0), 4));
        assert!(
            t.stale_slices_at(&svc("u1"), no_slice, at(30), 4),
            "no LIST since: still waiting for the watch"
        );
        // Missing outranks older: an older slice beside the missing one
        // does not bring the time bound back.
        t.update(&slice("b", 5));
        assert!(t.stale_slices_at(&svc("u1"), &[slice("b", 4)], at(31), 4));
        assert!(
            !t.stale_slices_at(&svc("u1"), no_slice, at(31), 5),
            "listed again and still missing: given up"
        );
        assert!(!t.stale_slices(&svc("u1"), no_slice), "bookkeeping dropped");
        // The watch delivers in time: fresh, and the next stale period
        // starts from scratch.
        t.update(&slice("c", 1));
        assert!(t.stale_slices_at(&svc("u1"), no_slice, at(40), 5));
        assert!(!t.stale_slices_at(&svc("u1"), &[slice("c", 1)], at(40), 5));
        assert!(t.stale_slices_at(&svc("u1"), &[slice("c", 0)], at(41), 6));
        assert!(
            t.stale_slices_at(&svc("u1"), &[slice("c", 0)], at(41), 7),
            "older only: a LIST alone does not end it"
        );
        assert!(!t.stale_slices_at(&svc("u1"), &[slice("c", 0)], at(42), 7));
    }
}
