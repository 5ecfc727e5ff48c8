//! Model-based property test of the store's MVCC: after any sequence of
//! creates, updates and deletes with a small history, an Exact list at
//! every resourceVersion still in the window equals the model's state at
//! that version, paginated or not; older versions get 410; a watch from any
//! version in the window replays exactly the model's changes.

use crate::harness::semantics as sim_semantics_support;

use kube_sim::store::StoreConfig;
use proptest::prelude::*;
use serde_json::{json, Value};
use sim_semantics_support::*;
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
enum Op {
    Create(u8),
    Update(u8),
    Delete(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..6).prop_map(Op::Create),
        (0u8..6).prop_map(Op::Update),
        (0u8..6).prop_map(Op::Delete),
    ]
}

/// name → label "v" of each live pod.
type State = BTreeMap<String, String>;

fn apply(sim: &Sim, op: &Op, n: usize) -> bool {
    match op {
        Op::Create(i) => sim.create(PODS, NS, pod(&format!("p{i}"))).status == 201,
        Op::Update(i) => {
            let name = format!("p{i}");
            let mut p = sim.get(PODS, NS, &name).body;
            if p["kind"] != "Pod" {
                return false;
            }
            p["metadata"]["labels"]["v"] = json!(n.to_string());
            sim.update(PODS, NS, &name, p).status == 200
        }
        Op::Delete(i) => sim.delete(PODS, NS, &format!("p{i}"), json!(null)).status == 200,
    }
}

fn state_of(items: &Value) -> State {
    items
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            let name = o["metadata"]["name"].as_str().unwrap_or("").to_string();
            let v = o["metadata"]["labels"]["v"]
                .as_str()
                .unwrap_or("")
                .to_string();
            (name, v)
        })
        .collect()
}

fn paged(sim: &Sim, rv: u64, limit: &str) -> Option<State> {
    let rv = rv.to_string();
    let mut state = State::new();
    let mut token: Option<String> = None;
    loop {
        let r = match &token {
            None => sim.list(
                PODS,
                NS,
                &[
                    ("resourceVersion", &rv),
                    ("resourceVersionMatch", "Exact"),
                    ("limit", limit),
                ],
            ),
            Some(t) => sim.list(PODS, NS, &[("limit", limit), ("continue", t)]),
        };
        if r.status != 200 {
            return None;
        }
        state.extend(state_of(&r.body["items"]));
        match r.body["metadata"]["continue"].as_str() {
            Some(t) => token = Some(t.to_string()),
            None => return Some(state),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn lists_and_watches_at_every_version(ops in proptest::collection::vec(op(), 1..40)) {
        let history = 8;
        let sim = Sim::with(StoreConfig { history, ..StoreConfig::default() });
        let mut model: Vec<(u64, State)> = vec![(sim.store.current_rv(), State::new())];
        let mut cur = State::new();
        for (n, o) in ops.iter().enumerate() {
            if apply(&sim, o, n) {
                match o {
                    Op::Create(i) => { cur.insert(format!("p{i}"), String::new()); }
                    Op::Update(i) => { cur.insert(format!("p{i}"), n.to_string()); }
                    Op::Delete(i) => { cur.remove(&format!("p{i}")); }
                }
                model.push((sim.store.current_rv(), cur.clone()));
            }
        }
        let now = sim.store.current_rv();
        let oldest = now.saturating_sub(history as u64);
        for (rv, state) in &model {
            if *rv < oldest {
                let r = sim.list(PODS, NS, &[("resourceVersion", &rv.to_string()), ("resourceVersionMatch", "Exact")]);
                prop_assert_eq!(r.status, 410);
                continue;
            }
            let full = paged(&sim, *rv, "0");
            prop_assert_eq!(full.as_ref(), Some(state), "full list at {}", rv);
            let pages = paged(&sim, *rv, "2");
            prop_assert_eq!(pages.as_ref(), Some(state), "pages of 2 at {}", rv);
            let w = sim.watch(PODS, NS, &[("resourceVersion", &rv.to_string())]);
            let mut replay = state.clone();
            let mut at = *rv;
            while at < now {
                let Some((t, o)) = w.next() else { break };
                at = o["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).unwrap_or(now);
                let name = o["metadata"]["name"].as_str().unwrap_or("").to_string();
                if t == "DELETED" {
                    replay.remove(&name);
                } else {
                    replay.insert(name, o["metadata"]["labels"]["v"].as_str().unwrap_or("").to_string());
                }
            }
            prop_assert_eq!(&replay, &cur, "watch from {} replays to the end state", rv);
        }
    }
}
