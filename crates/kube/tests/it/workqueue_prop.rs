//! Property tests: random add / get / done / add_after / clock-step
//! sequences against a small reference model of client-go's semantics.
//!
//! 1. `pure_queue_and_heap_match_the_model`: the queue plus the pure delay
//!    heap, driven without threads, must match the model step by step.
//! 2. `delaying_queue_keeps_its_promises`: the real delaying queue with its
//!    timer thread on a fake clock. Batch order may differ from the model
//!    there, so the model follows the queue's choice of key; the lengths,
//!    the processing set and the final drain must still agree.
//!
//! Both check that no key is handed to a second worker while one holds it
//! and that every key is handed out after its last add took effect.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use endpointd_base::clock::{Clock, FakeClock, RealClock};
use endpointd_kube::workqueue::{DelayHeap, DelayingQueue, Queue, QueueConfig};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Add(u8),
    AddAfter(u8, u8),
    Get,
    Done(u8),
    Step(u8),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        3 => (0..6u8).prop_map(Op::Add),
        3 => (0..6u8, 0..20u8).prop_map(|(k, d)| Op::AddAfter(k, d)),
        3 => Just(Op::Get),
        2 => any::<u8>().prop_map(Op::Done),
        2 => (0..25u8).prop_map(Op::Step),
    ];
    proptest::collection::vec(op, 1..60)
}

/// The reference: upstream's algorithm over plain collections, time in ms.
#[derive(Debug, Default)]
struct Model {
    order: VecDeque<u8>,
    dirty: BTreeSet<u8>,
    processing: BTreeSet<u8>,
    /// key -> (ready time, sequence); an earlier time replaces a later one.
    waiting: BTreeMap<u8, (u64, u64)>,
    seq: u64,
    now: u64,
    /// Keys whose last effective add has not been followed by a get.
    owed: BTreeSet<u8>,
}

impl Model {
    /// Returns whether `k` became dirty.
    fn add(&mut self, k: u8) -> bool {
        self.owed.insert(k);
        if !self.dirty.insert(k) {
            return false;
        }
        if !self.processing.contains(&k) {
            self.order.push_back(k);
        }
        true
    }

    /// Hand out `k`, which must be queued; the model's own choice is the
    /// head of `order`.
    fn take(&mut self, k: u8) -> Result<(), String> {
        let pos = self.order.iter().position(|&x| x == k);
        let pos = pos.ok_or_else(|| format!("handed out {k}, which is not queued"))?;
        if self.processing.contains(&k) {
            return Err(format!("handed out {k} while it is being processed"));
        }
        self.order.remove(pos);
        self.dirty.remove(&k);
        self.processing.insert(k);
        self.owed.remove(&k);
        Ok(())
    }

    fn done(&mut self, k: u8) {
        if self.processing.remove(&k) && self.dirty.contains(&k) {
            self.order.push_back(k);
        }
    }

    fn add_after(&mut self, k: u8, d: u64) {
        if d == 0 {
            self.add(k);
            return;
        }
        let at = self.now + d;
        if matches!(self.waiting.get(&k), Some(&(cur, _)) if cur <= at) {
            return;
        }
        self.waiting.insert(k, (at, self.seq));
        self.seq += 1;
    }

    fn step(&mut self, d: u64) {
        self.now += d;
        let mut ready: Vec<(u64, u64, u8)> = self
            .waiting
            .iter()
            .filter(|(_, &(at, _))| at <= self.now)
            .map(|(&k, &(at, s))| (at, s, k))
            .collect();
        ready.sort();
        for (_, _, k) in ready {
            self.waiting.remove(&k);
            self.add(k);
        }
    }

    /// The key `Done(i)` refers to: one being processed if any.
    fn done_target(&self, i: u8) -> u8 {
        let held: Vec<u8> = self.processing.iter().copied().collect();
        if held.is_empty() {
            i % 6
        } else {
            held[usize::from(i) % held.len()]
        }
    }
}

/// The queue plus a delay heap, with this harness acting as the timer.
struct Pure {
    q: Queue<u8>,
    heap: DelayHeap<u8>,
    clock: Arc<FakeClock>,
}

impl Pure {
    fn fire(&mut self) {
        for k in self.heap.pop_ready(self.clock.now()) {
            self.q.add(k);
        }
    }
}

fn run_pure(ops: &[Op]) -> Result<(), TestCaseError> {
    let clock = FakeClock::new();
    let cfg = QueueConfig::new("").clock(clock.clone());
    let mut sut = Pure {
        q: Queue::new(&cfg),
        heap: DelayHeap::new(),
        clock,
    };
    let mut m = Model::default();
    for op in ops {
        match *op {
            Op::Add(k) => {
                prop_assert_eq!(sut.q.add(k), m.add(k));
            }
            Op::AddAfter(k, d) => {
                let d = u64::from(d);
                if d == 0 {
                    sut.q.add(k);
                } else {
                    sut.heap
                        .insert(k, sut.clock.now() + Duration::from_millis(d));
                }
                m.add_after(k, d);
            }
            Op::Get => {
                let want = m.order.front().copied();
                let got = sut.q.try_get();
                prop_assert_eq!(got, want);
                if let Some(k) = got {
                    m.take(k).map_err(TestCaseError::fail)?;
                }
            }
            Op::Done(i) => {
                let k = m.done_target(i);
                sut.q.done(&k);
                m.done(k);
            }
            Op::Step(d) => {
                sut.clock.step(Duration::from_millis(u64::from(d)));
                sut.fire();
                m.step(u64::from(d));
            }
        }
        prop_assert_eq!(sut.q.len(), m.order.len());
        prop_assert_eq!(sut.q.in_flight(), m.processing.len());
        prop_assert_eq!(sut.heap.len(), m.waiting.len());
    }
    // Let every wait expire, then work everything off.
    sut.clock.step(Duration::from_secs(1));
    sut.fire();
    m.step(1000);
    for k in m.processing.clone() {
        sut.q.done(&k);
        m.done(k);
    }
    while let Some(k) = sut.q.try_get() {
        m.take(k).map_err(TestCaseError::fail)?;
        sut.q.done(&k);
        m.done(k);
    }
    prop_assert!(
        m.owed.is_empty(),
        "never handed out after last add: {:?}",
        m.owed
    );
    Ok(())
}

fn eventually(cond: impl Fn() -> bool) -> bool {
    for _ in 0..5_000 {
        if cond() {
            return true;
        }
        RealClock.sleep(Duration::from_millis(1));
    }
    false
}

fn run_threaded(ops: &[Op]) -> Result<(), TestCaseError> {
    let clock = FakeClock::new();
    let cfg = QueueConfig::new("")
        .clock(clock.clone())
        .max_wait(Duration::from_millis(1));
    let q: DelayingQueue<u8> =
        DelayingQueue::new(&cfg).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut m = Model::default();
    let settle =
        |q: &DelayingQueue<u8>, m: &Model| eventually(|| q.waiting_len() == m.waiting.len());
    for op in ops {
        match *op {
            Op::Add(k) => {
                prop_assert_eq!(q.add(k), m.add(k));
            }
            Op::AddAfter(k, d) => {
                q.add_after(k, Duration::from_millis(u64::from(d)));
                m.add_after(k, u64::from(d));
            }
            Op::Get => match q.try_get() {
                Some(k) => m.take(k).map_err(TestCaseError::fail)?,
                None => prop_assert!(m.order.is_empty(), "queue empty, model has {:?}", m.order),
            },
            Op::Done(i) => {
                let k = m.done_target(i);
                q.done(&k);
                m.done(k);
            }
            Op::Step(d) => {
                clock.step(Duration::from_millis(u64::from(d)));
                m.step(u64::from(d));
                prop_assert!(settle(&q, &m), "timer did not settle");
            }
        }
        prop_assert_eq!(q.len(), m.order.len());
        prop_assert_eq!(q.in_flight(), m.processing.len());
    }
    clock.step(Duration::from_secs(1));
    m.step(1000);
    prop_assert!(settle(&q, &m), "timer did not settle");
    prop_assert_eq!(q.waiting_len(), 0);
    for k in m.processing.clone() {
        q.done(&k);
        m.done(k);
    }
    while let Some(k) = q.try_get() {
        m.take(k).map_err(TestCaseError::fail)?;
        q.done(&k);
        m.done(k);
    }
    prop_assert!(
        m.owed.is_empty(),
        "never handed out after last add: {:?}",
        m.owed
    );
    q.shut_down();
    prop_assert_eq!(q.get(), None);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn pure_queue_and_heap_match_the_model(ops in ops()) {
        run_pure(&ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn delaying_queue_keeps_its_promises(ops in ops()) {
        run_threaded(&ops)?;
    }
}
