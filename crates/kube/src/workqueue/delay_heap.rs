//! The delaying queue's waiting list as a pure structure: a min-heap of
//! (ready time, key) with at most one live entry per key, where a second
//! wait for the same key keeps the earlier ready time (upstream `insert` in
//! `delaying_queue.go`).
//!
//! No threads, no clock: callers pass `now`. Keys with equal ready times come
//! out in insertion order.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::Instant;

use super::Key;

/// Min-heap of keys waiting for their ready time.
#[derive(Debug)]
pub struct DelayHeap<K> {
    /// Heap entries `(ready_at, seq)`; an entry is stale when `live` holds a
    /// different `seq` (or nothing) for its key.
    heap: BinaryHeap<Reverse<(Instant, u64, Slot<K>)>>,
    /// The one live entry of each waiting key: its ready time and sequence.
    live: HashMap<K, (Instant, u64)>,
    next_seq: u64,
}

/// A key inside a heap entry; never compared (the sequence number is unique).
#[derive(Debug)]
struct Slot<K>(K);

impl<K> PartialEq for Slot<K> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl<K> Eq for Slot<K> {}
impl<K> PartialOrd for Slot<K> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<K> Ord for Slot<K> {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl<K: Key> Default for DelayHeap<K> {
    fn default() -> Self {
        DelayHeap {
            heap: BinaryHeap::new(),
            live: HashMap::new(),
            next_seq: 0,
        }
    }
}

impl<K: Key> DelayHeap<K> {
    /// An empty heap.
    pub fn new() -> DelayHeap<K> {
        DelayHeap::default()
    }

    /// Wait for `key` until `ready_at`. If `key` already waits, the earlier of
    /// the two ready times wins. Returns `true` if `key` was not waiting yet.
    pub fn insert(&mut self, key: K, ready_at: Instant) -> bool {
        let seq = self.next_seq;
        if let Some(&(cur, _)) = self.live.get(&key) {
            if cur <= ready_at {
                return false;
            }
            self.next_seq += 1;
            self.live.insert(key.clone(), (ready_at, seq));
            self.heap.push(Reverse((ready_at, seq, Slot(key))));
            self.compact();
            return false;
        }
        self.next_seq += 1;
        self.live.insert(key.clone(), (ready_at, seq));
        self.heap.push(Reverse((ready_at, seq, Slot(key))));
        true
    }

    /// Remove and return, earliest first, every key whose ready time is
    /// `<= now`.
    pub fn pop_ready(&mut self, now: Instant) -> Vec<K> {
        let mut out = Vec::new();
        while let Some(Reverse((at, _, _))) = self.heap.peek() {
            if *at > now {
                break;
            }
            let Some(Reverse((_, seq, Slot(key)))) = self.heap.pop() else {
                break;
            };
            if self.live.get(&key).map(|&(_, s)| s) == Some(seq) {
                self.live.remove(&key);
                out.push(key);
            }
        }
        out
    }

    /// The earliest ready time, if any key waits.
    pub fn next_ready(&mut self) -> Option<Instant> {
        self.drop_stale_head();
        self.heap.peek().map(|Reverse((at, _, _))| *at)
    }

    /// Bring every key waiting past `by` forward to `by` (keys due sooner
    /// keep their time); how many moved. The moved keys keep their order.
    pub fn pull_in(&mut self, by: Instant) -> usize {
        let mut later: Vec<(Instant, u64, K)> = self
            .live
            .iter()
            .filter(|(_, &(at, _))| at > by)
            .map(|(k, &(at, seq))| (at, seq, k.clone()))
            .collect();
        later.sort_by_key(|&(at, seq, _)| (at, seq));
        let moved = later.len();
        for (_, _, k) in later {
            self.insert(k, by);
        }
        moved
    }

    /// Number of waiting keys.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Whether no key waits.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// The ready time of `key`, if it waits.
    pub fn ready_at(&self, key: &K) -> Option<Instant> {
        self.live.get(key).map(|&(at, _)| at)
    }

    fn is_stale(&self, seq: u64, key: &K) -> bool {
        self.live.get(key).map(|&(_, s)| s) != Some(seq)
    }

    fn drop_stale_head(&mut self) {
        while let Some(Reverse((_, seq, Slot(key)))) = self.heap.peek() {
            if !self.is_stale(*seq, key) {
                return;
            }
            self.heap.pop();
        }
    }

    /// Rebuild the heap without stale entries once they outnumber live ones,
    /// so that repeated "move earlier" updates cannot grow it without bound.
    fn compact(&mut self) {
        if self.heap.len() <= 2 * self.live.len() + 16 {
            return;
        }
        let live = &self.live;
        let entries = std::mem::take(&mut self.heap).into_vec();
        self.heap = entries
            .into_iter()
            .filter(|Reverse((_, seq, Slot(k)))| live.get(k).map(|&(_, s)| s) == Some(*seq))
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use endpointd_base::clock::{Clock, FakeClock};
    use std::time::Duration;

    enum Op {
        /// Wait for key until t0 + ms.
        Insert(&'static str, u64),
        /// pop_ready(t0 + ms) must return these keys in this order.
        Pop(u64, &'static [&'static str]),
        /// next_ready() must be t0 + ms (None = empty).
        Next(Option<u64>),
        Len(usize),
        /// pull_in(t0 + ms) must move this many keys.
        PullIn(u64, usize),
    }
    use Op::*;

    #[test]
    fn heap_table() {
        let cases: &[(&str, &[Op])] = &[
            // Upstream TestDeduping, first half.
            (
                "a later wait for a waiting key is ignored",
                &[
                    Insert("foo", 50),
                    Insert("foo", 70),
                    Len(1),
                    Next(Some(50)),
                    Pop(60, &["foo"]),
                    Pop(80, &[]),
                    Next(None),
                ],
            ),
            // Upstream TestDeduping, second half.
            (
                "an earlier wait overrides",
                &[
                    Insert("foo", 50),
                    Insert("foo", 30),
                    Len(1),
                    Next(Some(30)),
                    Pop(40, &["foo"]),
                    Pop(60, &[]),
                    Len(0),
                ],
            ),
            // Upstream TestCopyShifting.
            (
                "keys come out by ready time",
                &[
                    Insert("foo", 1000),
                    Insert("bar", 500),
                    Insert("baz", 250),
                    Pop(249, &[]),
                    Pop(2000, &["baz", "bar", "foo"]),
                ],
            ),
            // Upstream TestAddTwoFireEarly.
            (
                "an early key fires alone",
                &[
                    Insert("foo", 1000),
                    Insert("bar", 50),
                    Pop(60, &["bar"]),
                    Insert("baz", 2060),
                    Pop(1060, &["foo"]),
                    Pop(3060, &["baz"]),
                ],
            ),
            (
                "equal ready times keep insertion order",
                &[
                    Insert("x", 10),
                    Insert("y", 10),
                    Insert("w", 10),
                    Pop(10, &["x", "y", "w"]),
                ],
            ),
            (
                "pulled in: later keys come forward in their order, sooner ones stay",
                &[
                    Insert("soon", 100),
                    Insert("late", 60_000),
                    Insert("later", 300_000),
                    Insert("mid", 5_000),
                    PullIn(1_000, 3),
                    Len(4),
                    Next(Some(100)),
                    Pop(999, &["soon"]),
                    Pop(1_000, &["mid", "late", "later"]),
                    Len(0),
                    PullIn(1_000, 0),
                ],
            ),
            (
                "a key can wait again after it fired",
                &[
                    Insert("k", 10),
                    Insert("k", 5),
                    Pop(5, &["k"]),
                    Insert("k", 10),
                    Next(Some(10)),
                    Pop(10, &["k"]),
                    Len(0),
                ],
            ),
        ];
        let clock = FakeClock::new();
        let t0 = clock.now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        for (name, ops) in cases {
            let mut h = DelayHeap::new();
            for (i, op) in ops.iter().enumerate() {
                match op {
                    Insert(k, ms) => {
                        h.insert(k.to_string(), at(*ms));
                    }
                    Pop(ms, want) => {
                        let got = h.pop_ready(at(*ms));
                        assert_eq!(got, want.to_vec(), "{name}: op {i}");
                    }
                    Next(want) => assert_eq!(h.next_ready(), want.map(at), "{name}: op {i}"),
                    Len(n) => assert_eq!(h.len(), *n, "{name}: op {i}"),
                    PullIn(ms, n) => assert_eq!(h.pull_in(at(*ms)), *n, "{name}: op {i}"),
                }
            }
        }
    }

    #[test]
    fn repeated_earlier_waits_do_not_grow_the_heap() {
        let clock = FakeClock::new();
        let t0 = clock.now();
        let mut h = DelayHeap::new();
        for i in 0..10_000u64 {
            h.insert(1u32, t0 + Duration::from_secs(1_000_000 - i));
        }
        assert_eq!(h.len(), 1);
        assert!(h.heap.len() <= 2 * h.live.len() + 17, "{}", h.heap.len());
        assert_eq!(
            h.next_ready(),
            Some(t0 + Duration::from_secs(1_000_000 - 9_999))
        );
    }
}
