//! Tests of the store: event application, relist diffs, indexes and the
//! atomic relist swap.

use std::sync::atomic::{AtomicBool, Ordering};

use super::*;
use crate::informer::fake::{obj, Obj};

const SVC: IndexKey = IndexKey::Label(SERVICE_NAME_LABEL);

fn store() -> Store<Obj> {
    Store::new(&[IndexKey::Namespace, SVC])
}

#[derive(Debug, PartialEq)]
enum Kind {
    Add(&'static str),
    Update(&'static str, &'static str),
    Delete(&'static str, bool),
}

fn kind(n: &Notification<Obj>) -> Kind {
    let leak = |s: &str| -> &'static str { Box::leak(s.to_string().into_boxed_str()) };
    match n {
        Notification::Add { obj, .. } => Kind::Add(leak(&obj.key())),
        Notification::Update { old, new } => Kind::Update(leak(&old.rv), leak(&new.rv)),
        Notification::Delete(d) => Kind::Delete(leak(&d.object().key()), d.is_tombstone()),
    }
}

#[test]
fn apply_follows_client_go_indexer_semantics() {
    let s = store();
    // (event, expected notification, keys after)
    let table: Vec<(SourceEvent<Obj>, Option<Kind>, &[&str])> = vec![
        (
            SourceEvent::Added(obj("a", "x", "1")),
            Some(Kind::Add("a/x")),
            &["a/x"],
        ),
        (
            SourceEvent::Added(obj("a", "x", "2")),
            Some(Kind::Update("1", "2")),
            &["a/x"],
        ),
        (
            SourceEvent::Modified(obj("b", "y", "3")),
            Some(Kind::Add("b/y")),
            &["a/x", "b/y"],
        ),
        (
            SourceEvent::Modified(obj("b", "y", "4")),
            Some(Kind::Update("3", "4")),
            &["a/x", "b/y"],
        ),
        (
            SourceEvent::Deleted(obj("a", "x", "5")),
            Some(Kind::Delete("a/x", false)),
            &["b/y"],
        ),
        (SourceEvent::Deleted(obj("a", "x", "6")), None, &["b/y"]),
        (
            SourceEvent::Bookmark {
                resource_version: "9".into(),
                initial_events_end: false,
            },
            None,
            &["b/y"],
        ),
    ];
    for (i, (ev, want, keys)) in table.into_iter().enumerate() {
        let got = s.apply(ev);
        assert_eq!(got.as_ref().map(kind), want, "step {i}");
        assert_eq!(s.keys(), keys, "step {i}");
    }
    assert_eq!(s.resource_version(), "9");
}

#[test]
fn delete_notification_carries_the_events_final_state() {
    let s = store();
    s.apply(SourceEvent::Added(obj("a", "x", "1")));
    let Some(Notification::Delete(DeletedObject::Known(o))) =
        s.apply(SourceEvent::Deleted(obj("a", "x", "7")))
    else {
        panic!("expected a known delete");
    };
    assert_eq!(o.rv, "7");
}

#[test]
fn replace_emits_adds_updates_then_tombstones_with_last_state() {
    let s = store();
    for o in [
        obj("n", "a", "1"),
        obj("n", "b", "1"),
        obj("n", "c", "1"),
        obj("n", "e", "4"),
    ] {
        s.apply(SourceEvent::Added(o));
    }
    let list = vec![obj("n", "a", "1"), obj("n", "b", "2"), obj("n", "d", "1")];
    let notes = s.replace(list, "50", false);
    let kinds: Vec<Kind> = notes.iter().map(kind).collect();
    assert_eq!(
        kinds,
        vec![
            Kind::Update("1", "2"),
            Kind::Add("n/d"),
            Kind::Delete("n/c", true),
            Kind::Delete("n/e", true),
        ]
    );
    let Notification::Delete(DeletedObject::FinalStateUnknown { key, last }) = &notes[3] else {
        panic!("tombstone expected");
    };
    assert_eq!((key.as_str(), last.rv.as_str()), ("n/e", "4"));
    assert!(matches!(notes[1], Notification::Add { initial: false, .. }));
    assert_eq!(s.keys(), ["n/a", "n/b", "n/d"]);
    assert_eq!(s.resource_version(), "50");
}

#[test]
fn initial_replace_marks_adds_initial() {
    let s = store();
    let notes = s.replace(vec![obj("n", "a", "1"), obj("n", "b", "1")], "3", true);
    assert_eq!(notes.len(), 2);
    assert!(notes
        .iter()
        .all(|n| matches!(n, Notification::Add { initial: true, .. })));
}

#[test]
fn indexes_follow_updates_deletes_and_relists() {
    let s = store();
    let names = |v: Vec<Arc<Obj>>| {
        let mut n: Vec<String> = v.iter().map(|o| o.key()).collect();
        n.sort();
        n
    };
    s.apply(SourceEvent::Added(
        obj("a", "s1", "1").label(SERVICE_NAME_LABEL, "web"),
    ));
    s.apply(SourceEvent::Added(
        obj("a", "s2", "1").label(SERVICE_NAME_LABEL, "web"),
    ));
    s.apply(SourceEvent::Added(
        obj("b", "s3", "1").label(SERVICE_NAME_LABEL, "web"),
    ));
    s.apply(SourceEvent::Added(obj("b", "s4", "1")));
    assert_eq!(names(s.list_namespace("a")), ["a/s1", "a/s2"]);
    assert_eq!(names(s.list_namespace("b")), ["b/s3", "b/s4"]);
    assert_eq!(names(s.by_index(SVC, "web")), ["a/s1", "a/s2", "b/s3"]);
    // Relabel moves the object between buckets.
    s.apply(SourceEvent::Modified(
        obj("a", "s2", "2").label(SERVICE_NAME_LABEL, "db"),
    ));
    assert_eq!(names(s.by_index(SVC, "web")), ["a/s1", "b/s3"]);
    assert_eq!(names(s.by_index(SVC, "db")), ["a/s2"]);
    s.apply(SourceEvent::Deleted(obj("a", "s1", "3")));
    assert_eq!(names(s.list_namespace("a")), ["a/s2"]);
    assert_eq!(names(s.by_index(SVC, "web")), ["b/s3"]);
    s.replace(
        vec![obj("c", "s5", "1").label(SERVICE_NAME_LABEL, "web")],
        "9",
        false,
    );
    assert_eq!(names(s.by_index(SVC, "web")), ["c/s5"]);
    assert!(s.list_namespace("a").is_empty());
    assert!(s.by_index(SVC, "db").is_empty());
}

#[test]
fn namespaced_label_index_files_slices_under_their_service_key() {
    const SVC_KEY: IndexKey = IndexKey::NamespacedLabel(SERVICE_NAME_LABEL);
    let s: Store<Obj> = Store::new(&[SVC_KEY]);
    s.apply(SourceEvent::Added(
        obj("a", "web-1", "1").label(SERVICE_NAME_LABEL, "web"),
    ));
    s.apply(SourceEvent::Added(
        obj("b", "web-1", "1").label(SERVICE_NAME_LABEL, "web"),
    ));
    s.apply(SourceEvent::Added(
        obj("a", "web-2", "1").label(SERVICE_NAME_LABEL, "web"),
    ));
    let mut got: Vec<String> = s
        .by_index(SVC_KEY, "a/web")
        .iter()
        .map(|o| o.key())
        .collect();
    got.sort();
    assert_eq!(got, ["a/web-1", "a/web-2"]);
    s.apply(SourceEvent::Deleted(obj("a", "web-1", "2")));
    assert_eq!(s.by_index(SVC_KEY, "a/web").len(), 1);
    assert_eq!(s.by_index(SVC_KEY, "b/web").len(), 1);
    // Same answers without the index (full scan).
    let plain: Store<Obj> = Store::new(&[]);
    plain.apply(SourceEvent::Added(
        obj("b", "web-1", "1").label(SERVICE_NAME_LABEL, "web"),
    ));
    assert_eq!(plain.by_index(SVC_KEY, "b/web").len(), 1);
}

#[test]
fn by_index_without_index_scans() {
    let s: Store<Obj> = Store::new(&[]);
    s.apply(SourceEvent::Added(obj("a", "x", "1").label("app", "q")));
    s.apply(SourceEvent::Added(obj("b", "y", "1")));
    assert_eq!(s.list_namespace("a").len(), 1);
    assert_eq!(s.by_index(IndexKey::Label("app"), "q").len(), 1);
}

#[test]
fn cluster_scoped_keys_have_no_namespace() {
    let s = store();
    s.apply(SourceEvent::Added(obj("", "node-1", "1")));
    assert!(s.get("node-1").is_some());
    assert!(s.get_namespaced("", "node-1").is_some());
    assert!(s.list_namespace("").is_empty());
}

/// Keys are not stored: lookups hash and compare (namespace, name), so the
/// same name in two namespaces and cluster-scoped are three objects, and
/// an index bucket holds the current object, not a stale copy.
#[test]
fn keys_are_namespace_and_name() {
    let s = store();
    for (ns, rv) in [("a", "1"), ("b", "2"), ("", "3")] {
        s.apply(SourceEvent::Added(obj(ns, "x", rv)));
    }
    assert_eq!(s.keys(), vec!["a/x", "b/x", "x"]);
    assert_eq!(s.get("a/x").map(|o| o.rv.clone()).as_deref(), Some("1"));
    assert_eq!(
        s.get_namespaced("b", "x").map(|o| o.rv.clone()).as_deref(),
        Some("2")
    );
    assert_eq!(s.get("x").map(|o| o.rv.clone()).as_deref(), Some("3"));
    assert!(s.get("c/x").is_none() && s.get("a/y").is_none() && s.get("a").is_none());
    s.apply(SourceEvent::Modified(obj("a", "x", "4")));
    let in_a = s.list_namespace("a");
    assert_eq!(in_a.len(), 1);
    assert_eq!(in_a[0].rv, "4");
    assert!(Arc::ptr_eq(&in_a[0], &s.get("a/x").expect("a/x")));
    s.apply(SourceEvent::Deleted(obj("b", "x", "5")));
    assert_eq!(s.keys(), vec!["a/x", "x"]);
    // Many objects: the table grows and rehashes on (namespace, name).
    let many: Vec<Obj> = (0..2000)
        .map(|i| obj(&format!("n{}", i % 7), &format!("p{i}"), "1"))
        .collect();
    s.replace(many, "9", false);
    assert_eq!(s.len(), 2000);
    assert!((0..2000).all(|i| s.get(&format!("n{}/p{i}", i % 7)).is_some()));
    assert_eq!(
        s.list_namespace("n3").len(),
        (0..2000).filter(|i| i % 7 == 3).count()
    );
}

/// The namespace index is the per-namespace tables: the same answers with
/// and without [`IndexKey::Namespace`] (but the `Option`s of a store built
/// without it), and a namespace's table goes with its last object.
#[test]
fn namespace_tables_answer_the_namespace_index() {
    const NS: IndexKey = IndexKey::Namespace;
    for keys in [&[NS][..], &[]] {
        let s: Store<Obj> = Store::new(keys);
        for (ns, name) in [("a", "x"), ("a", "y"), ("b", "x"), ("", "n")] {
            s.apply(SourceEvent::Added(obj(ns, name, "1")));
        }
        assert_eq!(s.list_namespace("a").len(), 2);
        assert_eq!(s.by_index(NS, "b").len(), 1);
        assert!(s.list_namespace("").is_empty() && s.list_namespace("c").is_empty());
        let indexed = !keys.is_empty();
        assert_eq!(s.index_count(NS, "a"), indexed.then_some(2));
        assert_eq!(s.index_count(NS, ""), indexed.then_some(0));
        let values: Vec<String> = ["a", "b", "", "c"].map(String::from).to_vec();
        let any = s.by_index_any(NS, &values).map(|v| v.len());
        assert_eq!(any, indexed.then_some(3));
        s.apply(SourceEvent::Deleted(obj("b", "x", "2")));
        assert_eq!(s.len(), 3);
        assert_eq!(s.read().spaces.len(), 2, "b's table is gone");
        s.replace(vec![obj("c", "z", "3"), obj("c", "z", "4")], "5", false);
        assert_eq!((s.len(), s.read().spaces.len()), (1, 1));
        assert_eq!(s.get("c/z").map(|o| o.rv.clone()).as_deref(), Some("4"));
    }
}

/// A bucket holds one object inline, up to `FEW` in an array, more in a
/// table: every size on the way up and down answers the same, always with
/// the object the store holds now.
#[test]
fn buckets_of_every_size_hold_the_current_objects() {
    assert_eq!(std::mem::size_of::<Bucket<Obj>>(), 16);
    let s: Store<Obj> = Store::new(&[SVC]);
    let o = |i: usize, rv: &str| obj("a", &format!("p{i:02}"), rv).label(SERVICE_NAME_LABEL, "web");
    let check = |live: &[usize]| {
        let mut got: Vec<String> = s.by_index(SVC, "web").iter().map(|o| o.key()).collect();
        got.sort();
        let want: Vec<String> = live.iter().map(|i| format!("a/p{i:02}")).collect();
        assert_eq!(got, want);
        assert_eq!(s.index_count(SVC, "web"), Some(live.len()));
        for p in s.by_index(SVC, "web") {
            let held = s.get(&p.key()).expect("held");
            assert!(Arc::ptr_eq(&p, &held), "{}", p.key());
        }
    };
    let mut live = Vec::new();
    for i in 0..FEW + 3 {
        s.apply(SourceEvent::Added(o(i, "1")));
        live.push(i);
        check(&live);
        // An update replaces the entry in place, whatever the layout.
        s.apply(SourceEvent::Modified(o(i / 2, "2")));
        check(&live);
    }
    // Down again: from the middle, the front and the back.
    while !live.is_empty() {
        let i = live.remove(live.len() / 2);
        s.apply(SourceEvent::Deleted(o(i, "3")));
        check(&live);
    }
    // A table bucket is left for a fresh one when it empties; the small
    // layouts go back down to one inline object.
    for i in 0..3 {
        s.apply(SourceEvent::Added(o(i, "4")));
    }
    for (i, left) in [(0, vec![1, 2]), (2, vec![1]), (1, vec![])] {
        s.apply(SourceEvent::Deleted(o(i, "5")));
        check(&left);
    }
    assert!(s.read().indexes[0].buckets.is_empty());
}

/// Readers running during repeated relists always see one complete list.
#[test]
fn relist_swap_never_shows_a_partial_cache() {
    const N: usize = 2000;
    let s = store();
    let gen = |tag: &str| -> Vec<Obj> {
        (0..N)
            .map(|i| obj(tag, &format!("p{i}"), "1").label(SERVICE_NAME_LABEL, tag))
            .collect()
    };
    s.replace(gen("x"), "1", true);
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (s, stop) = (s.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut checks = 0u32;
                while !stop.load(Ordering::Relaxed) || checks == 0 {
                    assert_eq!(s.len(), N);
                    let x = s.by_index(SVC, "x").len();
                    let y = s.by_index(SVC, "y").len();
                    // Two calls may straddle a swap; each alone is whole.
                    assert!(x == 0 || x == N, "x={x}");
                    assert!(y == 0 || y == N, "y={y}");
                    checks += 1;
                }
                checks
            })
        })
        .collect();
    for round in 0..20 {
        let tag = if round % 2 == 0 { "y" } else { "x" };
        let notes = s.replace(gen(tag), "2", false);
        assert_eq!(notes.len(), 2 * N, "N adds and N tombstones");
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().expect("reader panicked") > 0);
    }
}

mod replace_model {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// (name index, rv) pairs; few names so lists overlap a lot.
    fn objs() -> impl Strategy<Value = Vec<(u8, u8)>> {
        proptest::collection::vec((0u8..12, 0u8..3), 0..16)
    }

    fn build(v: &[(u8, u8)]) -> Vec<Obj> {
        // A list never repeats a key: keep the first of each name.
        let mut seen = std::collections::HashSet::new();
        v.iter()
            .filter(|(n, _)| seen.insert(*n))
            .map(|(n, rv)| obj("ns", &format!("o{n}"), &rv.to_string()))
            .collect()
    }

    proptest! {
        /// Replaying the synthetic notifications on the old content yields
        /// exactly the new list; every key changes at most once; deletes
        /// carry the old state.
        #[test]
        fn notifications_turn_old_content_into_new(old in objs(), new in objs()) {
            let s = store();
            let old = build(&old);
            let new = build(&new);
            s.replace(old.clone(), "1", true);
            let notes = s.replace(new.clone(), "2", false);
            let mut model: BTreeMap<String, Obj> =
                old.iter().map(|o| (o.key(), o.clone())).collect();
            let mut touched = std::collections::HashSet::new();
            for n in &notes {
                let key = match n {
                    Notification::Add { obj, initial } => {
                        prop_assert!(!initial);
                        prop_assert!(model.insert(obj.key(), Obj::clone(obj)).is_none());
                        obj.key()
                    }
                    Notification::Update { old: o, new: nw } => {
                        prop_assert_ne!(&o.rv, &nw.rv);
                        let prev = model.insert(nw.key(), Obj::clone(nw));
                        prop_assert_eq!(prev.as_ref(), Some(o.as_ref()));
                        nw.key()
                    }
                    Notification::Delete(d) => {
                        prop_assert!(d.is_tombstone());
                        let prev = model.remove(&d.object().key());
                        prop_assert_eq!(prev.as_ref(), Some(d.object().as_ref()));
                        d.object().key()
                    }
                };
                prop_assert!(touched.insert(key), "a key changed twice");
            }
            let want: BTreeMap<String, Obj> = new.iter().map(|o| (o.key(), o.clone())).collect();
            prop_assert_eq!(&model, &want);
            let stored: BTreeMap<String, Obj> =
                s.list().iter().map(|o| (o.key(), Obj::clone(o))).collect();
            prop_assert_eq!(&stored, &want);
            prop_assert_eq!(s.list_namespace("ns").len(), want.len());
        }
    }
}

#[test]
fn list_count_counts_replacements_only() {
    let s: Store<crate::model::Service> = Store::new(&[]);
    assert_eq!(s.list_count(), 0);
    s.replace(Vec::new(), "5", true);
    assert_eq!(s.list_count(), 1);
    let svc: crate::model::Service =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "a", "namespace": "n"}}))
            .expect("service");
    s.apply(crate::informer::SourceEvent::Added(svc));
    assert_eq!(s.list_count(), 1, "a watch event is not a list");
    s.replace(Vec::new(), "9", false);
    assert_eq!(s.list_count(), 2);
}
