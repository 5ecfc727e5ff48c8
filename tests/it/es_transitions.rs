//! Every transition of a running cluster, one scenario each, against
//! upstream's EndpointSlice reconciler: after each change, the exact
//! sequence of slice writes (create/update/delete, and which slice), the
//! content that matters (endpoints and their conditions, ports, address
//! type, hints, labels, owner) and the events recorded. The real
//! `endpointd` binary against kube-sim over HTTP; writes from kube-sim's
//! write log. (Cold start and restart: `restart_every_feature.rs`; a slice
//! edited or deleted by someone else: `endpointslice_controller.rs`.)

use crate::harness::controller as controller_support;

use controller_support::*;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);
/// The EndpointSlice controller alone, batch period 0 (KCM's default).
const CFG: &str = "[leader_election]\nenabled = false\n[endpoints]\nenabled = false\n";
const TRIGGER: &str = "endpoints.kubernetes.io/last-change-trigger-time";
const SYNCS: &str = "endpointd_syncs_total{controller=\"endpoint_slice\",result=\"success\"}";

/// A pod of `app` on `node` with one IP, Ready or not.
fn pod_on(name: &str, app: &str, node: &str, ip: &str, ready: bool) -> Value {
    let mut p = pod("default", name, app, ip, ready);
    p["spec"]["nodeName"] = json!(node);
    p
}

/// Node `name` in `zone` with 4 CPUs.
fn nodes() -> Vec<Value> {
    vec![node("node-a", "z1"), node("node-b", "z2")]
}

/// Node `name` in `zone`, Ready, without allocatable CPU.
fn node_without_cpu(name: &str, zone: &str) -> Value {
    let mut n = node(name, zone);
    if let Some(status) = n["status"].as_object_mut() {
        status.remove("allocatable");
    }
    n
}

/// One slice as the tests look at it: address type, ports as a set,
/// endpoints by address with their conditions, zone and hints.
#[derive(Debug)]
struct Slice {
    name: String,
    address_type: String,
    ports: BTreeSet<String>,
    /// address → "ready serving terminating" as r/s/t or -.
    endpoints: BTreeMap<String, Ep>,
    labels: BTreeMap<String, String>,
    owner: Value,
    annotations: Value,
}

#[derive(Debug, PartialEq, Eq)]
struct Ep {
    pod: String,
    rst: String,
    zone: Option<String>,
    hints: Option<Vec<String>>,
    hostname: Option<String>,
}

fn rst(e: &Value) -> String {
    ["ready", "serving", "terminating"]
        .iter()
        .map(|c| match e["conditions"][c].as_bool() {
            Some(true) => c[..1].to_string(),
            Some(false) => "-".to_string(),
            None => "?".to_string(),
        })
        .collect()
}

fn view(s: &Value) -> Slice {
    let str_of = |v: &Value| v.as_str().unwrap_or("").to_string();
    Slice {
        name: str_of(&s["metadata"]["name"]),
        address_type: str_of(&s["addressType"]),
        ports: s["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                format!(
                    "{}:{}/{}",
                    str_of(&p["name"]),
                    p["port"],
                    str_of(&p["protocol"])
                )
            })
            .collect(),
        endpoints: s["endpoints"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| {
                let ep = Ep {
                    pod: str_of(&e["targetRef"]["name"]),
                    rst: rst(e),
                    zone: e["zone"].as_str().map(str::to_string),
                    hints: e["hints"].is_object().then(|| {
                        e["hints"]["forZones"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|z| str_of(&z["name"]))
                            .collect()
                    }),
                    hostname: e["hostname"].as_str().map(str::to_string),
                };
                (str_of(&e["addresses"][0]), ep)
            })
            .collect(),
        labels: s["metadata"]["labels"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), str_of(v)))
            .collect(),
        owner: s["metadata"]["ownerReferences"].clone(),
        annotations: s["metadata"]["annotations"].clone(),
    }
}

/// A cluster, the daemon, and where the last step ended in the write log
/// and the events.
struct Scene {
    c: Cluster,
    d: Daemon,
}

/// Where a step started.
struct Mark {
    events: BTreeMap<String, i64>,
    writes: usize,
    syncs: f64,
}

/// What one step caused.
#[derive(Debug)]
struct Step {
    /// endpointd's slice writes, as "verb name" (a create names its
    /// generateName: "create web-").
    writes: Vec<String>,
    /// Events recorded (occurrences, series repeats included), as
    /// "Type Reason: note", sorted.
    events: Vec<String>,
}

fn is_ours(w: &kube_sim::store::WriteRecord) -> bool {
    w.user_agent.contains("endpointd")
}

impl Scene {
    fn start(name: &str, items: Vec<Value>) -> Scene {
        Scene::start_with(name, items, "")
    }

    /// With `extra` configuration after [`CFG`].
    fn start_with(name: &str, items: Vec<Value>, extra: &str) -> Scene {
        let c = Cluster::start(name);
        c.load(items);
        let d = Daemon::start(&c, "d", &format!("{CFG}{extra}"));
        d.wait_idle("endpoint_slice", 1.0, LIMIT);
        Scene { c, d }
    }

    /// Occurrences of every event so far, by (type, reason, note).
    fn event_counts(&self) -> BTreeMap<String, i64> {
        let mut m = BTreeMap::new();
        for e in self.c.all("events") {
            let k = format!(
                "{} {}: {}",
                e["type"].as_str().unwrap_or(""),
                e["reason"].as_str().unwrap_or(""),
                e["note"].as_str().or(e["message"].as_str()).unwrap_or("")
            );
            let n = e["series"]["count"].as_i64().unwrap_or(1);
            *m.entry(k).or_default() += n;
        }
        m
    }

    fn our_slice_writes(&self) -> usize {
        self.c
            .writes("endpointslices")
            .iter()
            .filter(|w| is_ours(w))
            .count()
    }

    /// Where the write log and the events are now.
    fn mark(&self) -> Mark {
        Mark {
            events: self.event_counts(),
            writes: self.our_slice_writes(),
            syncs: self.d.metric(SYNCS).unwrap_or(0.0),
        }
    }

    /// What endpointd wrote and recorded since `m`.
    fn since(&self, m: &Mark) -> Step {
        let mut events = Vec::new();
        for (k, n) in self.event_counts() {
            let was = m.events.get(&k).copied().unwrap_or(0);
            for _ in was..n {
                events.push(k.clone());
            }
        }
        let writes = self
            .c
            .writes("endpointslices")
            .into_iter()
            .filter(is_ours)
            .skip(m.writes)
            .map(|w| match w.verb.as_str() {
                // A generated name: "<generateName><5 characters>".
                "create" => format!("create {}", &w.name[..w.name.len().saturating_sub(5)]),
                _ => format!("{} {}", w.verb, w.name),
            })
            .collect();
        Step { writes, events }
    }

    /// Apply `change`, wait until `done` holds and the controller has
    /// synced at least once more and is idle; what endpointd wrote.
    fn step(&self, what: &str, change: impl FnOnce(&Cluster), done: impl FnMut() -> bool) -> Step {
        let m = self.mark();
        change(&self.c);
        wait_until(what, LIMIT, done);
        self.d.wait_idle("endpoint_slice", m.syncs + 1.0, LIMIT);
        self.since(&m)
    }

    /// The managed slices of `svc`, by name.
    fn slices(&self, svc: &str) -> Vec<Slice> {
        let mut v: Vec<Slice> = self
            .c
            .all("endpointslices")
            .iter()
            .filter(|s| {
                s["metadata"]["labels"]["kubernetes.io/service-name"] == svc
                    && s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"]
                        == "endpointslice-controller.k8s.io"
            })
            .map(view)
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// The one slice of `svc` (panics unless there is exactly one).
    fn slice(&self, svc: &str) -> Slice {
        let mut v = self.slices(svc);
        assert_eq!(v.len(), 1, "{svc}: {v:#?}");
        v.remove(0)
    }

    fn svc(&self, name: &str, f: impl Fn(&mut Value)) {
        self.c.modify("services", "default", &[name.to_string()], f);
    }

    fn pods(&self, names: &[&str], f: impl Fn(&mut Value)) {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        self.c.modify("pods", "default", &names, f);
    }

    fn uid(&self, resource: &str, name: &str) -> String {
        self.c
            .get(resource, "default", name)
            .and_then(|v| v["metadata"]["uid"].as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// Wait until `f` holds of the slices of `svc`.
    fn until<'a>(
        &'a self,
        svc: &str,
        f: impl Fn(&[Slice]) -> bool + 'a,
    ) -> impl FnMut() -> bool + 'a {
        let svc = svc.to_string();
        move || f(&self.slices(&svc))
    }
}

fn addrs(s: &Slice) -> BTreeSet<&str> {
    s.endpoints.keys().map(String::as_str).collect()
}

fn set(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// No write and no event; the slice as it was.
fn nothing(step: &Step) {
    assert!(step.writes.is_empty() && step.events.is_empty(), "{step:?}");
}

#[test]
fn service_spec_transitions() {
    let mut items = nodes();
    items.push(service("default", "web", "web", json!("http")));
    for i in 0..3 {
        let n = if i % 2 == 0 { "node-a" } else { "node-b" };
        items.push(pod_on(&format!("web-{i}"), "web", n, &ip(i), true));
    }
    for i in 0..2 {
        items.push(pod_on(
            &format!("other-{i}"),
            "other",
            "node-a",
            &ip(10 + i),
            true,
        ));
    }
    let s = Scene::start("es-trans-spec", items);
    let first = s.slice("web");
    assert_eq!(first.ports, set(&["http:8080/TCP"]));
    assert_eq!(first.endpoints.len(), 3);
    let name = first.name.clone();
    let web = [ip(0), ip(1), ip(2)];
    let web: BTreeSet<&str> = web.iter().map(String::as_str).collect();

    // targetPort by name → the same number: the same endpoint ports.
    let step = s.step(
        "targetPort http → 8080",
        |_| s.svc("web", |v| v["spec"]["ports"][0]["targetPort"] = json!(8080)),
        || true,
    );
    nothing(&step);

    // targetPort → another number: a new port map; the old slice's is no
    // longer desired → create + delete, recycled into one update of the
    // same slice.
    let step = s.step(
        "targetPort → 9090",
        |_| s.svc("web", |v| v["spec"]["ports"][0]["targetPort"] = json!(9090)),
        s.until("web", |v| {
            v.len() == 1 && v[0].ports == set(&["http:9090/TCP"])
        }),
    );
    assert_eq!(step.writes, [format!("update {name}")]);
    assert!(step.events.is_empty(), "{step:?}");
    let sl = s.slice("web");
    assert_eq!(addrs(&sl), web);
    assert!(sl.endpoints.values().all(|e| e.rst == "rs-"));

    // A second port.
    let step = s.step(
        "a metrics port",
        |_| {
            s.svc("web", |v| {
                if let Some(p) = v["spec"]["ports"].as_array_mut() {
                    p.push(json!({"name": "metrics", "port": 9100, "protocol": "TCP", "targetPort": 9100}));
                }
            })
        },
        s.until("web", |v| v.len() == 1 && v[0].ports.len() == 2),
    );
    assert_eq!(step.writes, [format!("update {name}")]);
    assert_eq!(
        s.slice("web").ports,
        set(&["http:9090/TCP", "metrics:9100/TCP"])
    );

    // A port renamed; a named targetPort no pod has: its port left out.
    let step = s.step(
        "port renamed, metrics → a name no container has",
        |_| {
            s.svc("web", |v| {
                v["spec"]["ports"][0]["name"] = json!("web");
                v["spec"]["ports"][1]["targetPort"] = json!("nope");
            })
        },
        s.until("web", |v| {
            v.len() == 1 && v[0].ports == set(&["web:9090/TCP"])
        }),
    );
    assert_eq!(step.writes, [format!("update {name}")]);
    assert_eq!(addrs(&s.slice("web")), web);

    // The Service's labels are mirrored (reserved keys excepted) …
    let step = s.step(
        "a Service label added",
        |_| s.svc("web", |v| v["metadata"]["labels"]["tier"] = json!("front")),
        s.until("web", |v| {
            v.len() == 1 && v[0].labels.get("tier").map(String::as_str) == Some("front")
        }),
    );
    assert_eq!(step.writes, [format!("update {name}")]);
    let sl = s.slice("web");
    let want: BTreeMap<String, String> = [
        ("team", "edge"),
        ("tier", "front"),
        ("kubernetes.io/service-name", "web"),
        (
            "endpointslice.kubernetes.io/managed-by",
            "endpointslice-controller.k8s.io",
        ),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(sl.labels, want);
    assert_eq!(
        sl.annotations.get(TRIGGER),
        None,
        "no pod or Service trigger time moved: the annotation is removed"
    );
    // … a reserved one and an annotation are not.
    let step = s.step(
        "a reserved label and an annotation",
        |_| {
            s.svc("web", |v| {
                v["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] = json!("me");
                v["metadata"]["annotations"] = json!({"note": "x"});
            })
        },
        || true,
    );
    nothing(&step);
    assert_eq!(s.slice("web").labels, want);

    // clusterIP → None (as a delete and re-create would make it): the
    // headless label is reserved, so not compared (docs/behaviour.md#up-b22): no write; the
    // next write of the slice adds it.
    let cluster_ip =
        s.c.get("services", "default", "web").expect("web")["spec"]["clusterIP"].clone();
    let step = s.step(
        "clusterIP None",
        |_| {
            s.svc("web", |v| {
                v["spec"]["clusterIP"] = json!("None");
                v["spec"]["clusterIPs"] = json!(["None"]);
            })
        },
        || true,
    );
    nothing(&step);
    assert_eq!(s.slice("web").labels, want);
    let mut headless = want.clone();
    headless.insert("service.kubernetes.io/headless".into(), String::new());

    // Selector changed: every endpoint replaced, in the same slice.
    let step = s.step(
        "selector app=other",
        |_| s.svc("web", |v| v["spec"]["selector"] = json!({"app": "other"})),
        s.until("web", |v| {
            v.len() == 1 && v[0].endpoints.values().all(|e| e.pod.starts_with("other"))
        }),
    );
    assert_eq!(step.writes, [format!("update {name}")]);
    let sl = s.slice("web");
    assert_eq!(sl.labels, headless, "the headless label with the write");
    assert_eq!(sl.endpoints.len(), 2);
    assert_eq!(
        sl.annotations[TRIGGER], "2026-01-01T00:00:00Z",
        "pods new to the Service: their Ready transition time"
    );

    // Selector removed: upstream leaves the slices as they are (the
    // Service is no longer the controller's).
    let step = s.step(
        "selector removed",
        |_| {
            s.svc("web", |v| {
                v["spec"].as_object_mut().map(|m| m.remove("selector"));
            })
        },
        || true,
    );
    nothing(&step);
    assert_eq!(s.slice("web").endpoints.len(), 2);
    // clusterIP back: no write either; the next one drops the label.
    let step = s.step(
        "clusterIP back",
        |_| {
            s.svc("web", |v| {
                v["spec"]["clusterIP"] = cluster_ip.clone();
                v["spec"]["clusterIPs"] = json!([cluster_ip.clone()]);
            })
        },
        || true,
    );
    nothing(&step);
    assert_eq!(s.slice("web").labels, headless);
    let step = s.step(
        "selector app=web again",
        |_| s.svc("web", |v| v["spec"]["selector"] = json!({"app": "web"})),
        s.until("web", |v| v.len() == 1 && addrs(&v[0]) == web),
    );
    assert_eq!(step.writes, [format!("update {name}")]);
    assert_eq!(s.slice("web").labels, want, "the headless label dropped");

    // ExternalName: not the controller's either; back: nothing changed.
    let step = s.step(
        "type ExternalName",
        |_| {
            s.svc("web", |v| {
                v["spec"]["type"] = json!("ExternalName");
                v["spec"]["externalName"] = json!("example.com");
            })
        },
        || true,
    );
    nothing(&step);
    let step = s.step(
        "type ClusterIP",
        |_| {
            s.svc("web", |v| {
                v["spec"]["type"] = json!("ClusterIP");
                v["spec"].as_object_mut().map(|m| m.remove("externalName"));
            })
        },
        || true,
    );
    nothing(&step);

    // Single → dual stack: one IPv6 slice created (the pods have no IPv6
    // address: an empty placeholder); back: it is deleted.
    let step = s.step(
        "ipFamilies IPv4, IPv6",
        |_| {
            s.svc("web", |v| {
                v["spec"]["ipFamilies"] = json!(["IPv4", "IPv6"]);
                v["spec"]["ipFamilyPolicy"] = json!("PreferDualStack");
            })
        },
        s.until("web", |v| v.len() == 2),
    );
    assert_eq!(step.writes, ["create web-"]);
    let v6 = s
        .slices("web")
        .into_iter()
        .find(|x| x.address_type == "IPv6")
        .expect("an IPv6 slice");
    assert!(v6.endpoints.is_empty() && v6.ports.is_empty(), "{v6:?}");
    let step = s.step(
        "ipFamilies IPv4",
        |_| {
            s.svc("web", |v| {
                v["spec"]["ipFamilies"] = json!(["IPv4"]);
                v["spec"]["ipFamilyPolicy"] = json!("SingleStack");
            })
        },
        s.until("web", |v| v.len() == 1),
    );
    assert_eq!(step.writes, [format!("delete {}", v6.name)]);
    assert_eq!(s.slice("web").address_type, "IPv4");

    // Deleted and created again under the same name: the old slice is
    // not the new Service's (another owner UID) and is not recycled; one
    // create. (The garbage collector races endpointd to delete the old
    // one: endpointd's DELETE may find it gone, a 404 that is no write.)
    let old_uid = s.uid("services", "web");
    let again = s.c.get("services", "default", "web").expect("web");
    let step = s.step(
        "Service recreated",
        |c| {
            c.delete("services", "default", &["web".to_string()]);
            let mut v = again.clone();
            v["apiVersion"] = json!("v1");
            v["kind"] = json!("Service");
            v["metadata"]
                .as_object_mut()
                .map(|m| ["uid", "resourceVersion", "creationTimestamp"].map(|k| m.remove(k)));
            c.load(vec![v]);
        },
        s.until("web", |v| {
            v.len() == 1 && v[0].owner[0]["uid"] != json!(old_uid) && v[0].endpoints.len() == 3
        }),
    );
    let creates = step.writes.iter().filter(|w| *w == "create web-").count();
    let others: Vec<&String> = step
        .writes
        .iter()
        .filter(|w| *w != "create web-" && **w != format!("delete {name}"))
        .collect();
    assert!(creates == 1 && others.is_empty(), "{step:?}");
    assert!(step.events.is_empty(), "{step:?}");
    let sl = s.slice("web");
    assert_eq!(sl.owner[0]["uid"], json!(s.uid("services", "web")));
    let created = s.c.get("services", "default", "web").expect("web");
    assert_ne!(created["metadata"]["uid"], again["metadata"]["uid"]);
    assert_eq!(
        sl.annotations[TRIGGER], created["metadata"]["creationTimestamp"],
        "a new Service: its creationTimestamp"
    );
    let name = sl.name.clone();

    // Deleted: endpointd writes nothing; the garbage collector deletes
    // the slice (its controller ownerReference names the Service).
    let sl = s.slice("web");
    assert_eq!(sl.owner[0]["uid"], json!(s.uid("services", "web")));
    assert_eq!(sl.owner[0]["controller"], true);
    let step = s.step(
        "Service deleted",
        |c| c.delete("services", "default", &["web".to_string()]),
        s.until("web", |v| v.is_empty()),
    );
    nothing(&step);
    assert!(
        s.c.writes("endpointslices")
            .iter()
            .any(|w| w.verb == "delete" && w.name == name && !is_ours(w)),
        "the garbage collector deleted {name}"
    );
    assert_eq!(s.d.stop(), Some(0));
}

/// Zone hints on every ready endpoint of `s`, each for its own zone;
/// none on the others.
fn own_zone_hints(s: &Slice) -> bool {
    s.endpoints.values().all(|e| match e.rst.starts_with('r') {
        true => e.hints == e.zone.clone().map(|z| vec![z]),
        false => e.hints.is_none(),
    })
}

fn no_hints(s: &Slice) -> bool {
    s.endpoints.values().all(|e| e.hints.is_none())
}

const ENABLED: &str =
    "Normal TopologyAwareHintsEnabled: Topology Aware Hints has been enabled, addressType: IPv4";
const DISABLED: &str =
    "Warning TopologyAwareHintsDisabled: Topology Aware Hints has been disabled, addressType: IPv4";
const INSUFFICIENT: &str = "Warning TopologyAwareHintsDisabled: Insufficient Node information: allocatable CPU or zone not specified on one or more nodes, addressType: IPv4";

#[test]
fn hint_transitions() {
    let mut items = nodes();
    items.push(service("default", "near", "near", json!("http")));
    items.push(service("default", "close", "close", json!("http")));
    for i in 0..10 {
        let n = if i % 2 == 0 { "node-a" } else { "node-b" };
        items.push(pod_on(&format!("near-{i}"), "near", n, &ip(i), true));
    }
    for i in 0..4 {
        let n = if i % 2 == 0 { "node-a" } else { "node-b" };
        items.push(pod_on(
            &format!("close-{i}"),
            "close",
            n,
            &ip(20 + i),
            i != 3,
        ));
    }
    let s = Scene::start("es-trans-hints", items);
    let near = s.slice("near").name;
    let close = s.slice("close").name;
    assert!(no_hints(&s.slice("near")) && no_hints(&s.slice("close")));

    // topology-mode: Auto on: hints, and one event.
    let step = s.step(
        "Auto on",
        |_| {
            s.svc("near", |v| {
                v["metadata"]["annotations"] =
                    json!({"service.kubernetes.io/topology-mode": "Auto"})
            })
        },
        s.until("near", |v| v.len() == 1 && !no_hints(&v[0])),
    );
    assert_eq!(step.writes, [format!("update {near}")]);
    assert_eq!(step.events, [ENABLED]);
    assert!(own_zone_hints(&s.slice("near")), "{:?}", s.slice("near"));

    // A pod turns NotReady: its hint goes, the rest keep theirs; hints
    // already enabled: no event.
    let step = s.step(
        "near-0 not ready",
        |c| c.set_ready("default", &["near-0".to_string()], false),
        s.until("near", |v| {
            v.len() == 1 && v[0].endpoints[&ip(0)].rst == "---"
        }),
    );
    assert_eq!(step.writes, [format!("update {near}")]);
    assert!(step.events.is_empty(), "{step:?}");
    let sl = s.slice("near");
    assert_eq!(sl.endpoints[&ip(0)].hints, None);
    assert!(own_zone_hints(&sl), "{sl:?}");

    // A node's zone changes: the topology worker finds the Service's
    // hints overloading a zone; its endpoints get the new zone and hint.
    // Beyond upstream, every other Service with a pod on the node is
    // synced too, so its endpoints get the new zone at once; upstream
    // syncs only the Services whose Auto hints the change overloads, and
    // the others keep the old zone until their next sync (see
    // docs/behaviour.md#up-c6).
    let zone_of = |svc: &str, i: usize| {
        let v = s.slices(svc);
        (v.len() == 1)
            .then(|| v[0].endpoints.get(&ip(i)).and_then(|e| e.zone.clone()))
            .flatten()
    };
    let mut step = s.step(
        "node-b moves to z3",
        |c| {
            c.modify("nodes", "", &["node-b".to_string()], |v| {
                v["metadata"]["labels"]["topology.kubernetes.io/zone"] = json!("z3")
            })
        },
        || {
            zone_of("near", 1).as_deref() == Some("z3")
                && zone_of("close", 21).as_deref() == Some("z3")
        },
    );
    step.writes.sort();
    assert_eq!(
        step.writes,
        [format!("update {close}"), format!("update {near}")]
    );
    assert!(step.events.is_empty(), "{step:?}");
    assert!(own_zone_hints(&s.slice("near")), "{:?}", s.slice("near"));
    assert_eq!(zone_of("close", 20).as_deref(), Some("z1"), "node-a's pod");

    // A node without allocatable CPU: node information insufficient,
    // hints removed with a warning; the CPU shows up: hints back.
    let bare = node_without_cpu("node-c", "z1");
    let step = s.step(
        "node-c without CPU",
        |c| c.load(vec![bare]),
        s.until("near", |v| v.len() == 1 && no_hints(&v[0])),
    );
    assert_eq!(step.writes, [format!("update {near}")]);
    assert_eq!(step.events, [INSUFFICIENT]);
    // The node goes: the information is sufficient again and (beyond
    // upstream, whose topology worker only re-queues Services whose
    // cached hints overload a zone, and this one's were dropped) the
    // Service gets its hints back at once.
    let step = s.step(
        "node-c deleted",
        |c| c.delete("nodes", "", &["node-c".to_string()]),
        s.until("near", |v| v.len() == 1 && !no_hints(&v[0])),
    );
    assert_eq!(step.writes, [format!("update {near}")]);
    assert_eq!(step.events, [ENABLED]);
    assert!(own_zone_hints(&s.slice("near")), "{:?}", s.slice("near"));

    // Again a Ready node without CPU, which then gets its CPU. Beyond
    // upstream (whose node handler ignores allocatable changes, so the
    // Service stayed without hints until its next pod change): the hints
    // come back at once, shared 2:1 by the zones' CPU (z1 now 8 of 12).
    let bare = node_without_cpu("node-d", "z1");
    let step = s.step(
        "node-d without CPU",
        |c| c.load(vec![bare]),
        s.until("near", |v| v.len() == 1 && no_hints(&v[0])),
    );
    assert_eq!(step.writes, [format!("update {near}")]);
    assert_eq!(step.events, [INSUFFICIENT]);
    let step = s.step(
        "node-d gets its CPU",
        |c| {
            c.modify("nodes", "", &["node-d".to_string()], |v| {
                v["status"]["allocatable"] = json!({"cpu": "4"})
            })
        },
        s.until("near", |v| v.len() == 1 && !no_hints(&v[0])),
    );
    assert_eq!(step.writes, [format!("update {near}")]);
    assert_eq!(step.events, [ENABLED]);
    let hinted = |zone: &str| {
        s.slice("near")
            .endpoints
            .values()
            .filter(|e| e.hints.as_deref() == Some(&[zone.to_string()][..]))
            .count()
    };
    assert_eq!(
        (hinted("z1"), hinted("z3")),
        (6, 3),
        "{:?}",
        s.slice("near")
    );
    // It goes again: the 1:1 shares overload z3's 3 hints; back to each
    // endpoint's own zone, no event (hints stay enabled).
    let step = s.step(
        "node-d deleted",
        |c| c.delete("nodes", "", &["node-d".to_string()]),
        s.until("near", |v| v.len() == 1 && own_zone_hints(&v[0])),
    );
    assert_eq!(step.writes, [format!("update {near}")]);
    assert!(step.events.is_empty(), "{step:?}");
    assert_eq!((hinted("z1"), hinted("z3")), (4, 5));

    // Auto → PreferClose in one change: the own-zone hints are already
    // what PreferClose wants: nothing to write, only the warning that
    // topology-aware hints are off.
    let step = s.step(
        "Auto off, PreferClose on",
        |_| {
            s.svc("near", |v| {
                v["metadata"]["annotations"] = json!({});
                v["spec"]["trafficDistribution"] = json!("PreferClose");
            })
        },
        || true,
    );
    assert!(step.writes.is_empty(), "{step:?}");
    assert_eq!(step.events, [DISABLED]);
    assert!(own_zone_hints(&s.slice("near")));

    // trafficDistribution on and off: hints follow, no events.
    let step = s.step(
        "close: PreferClose",
        |_| {
            s.svc("close", |v| {
                v["spec"]["trafficDistribution"] = json!("PreferClose")
            })
        },
        s.until("close", |v| v.len() == 1 && !no_hints(&v[0])),
    );
    assert_eq!(step.writes, [format!("update {close}")]);
    assert!(step.events.is_empty(), "{step:?}");
    let sl = s.slice("close");
    assert!(own_zone_hints(&sl), "{sl:?}");
    assert_eq!(sl.endpoints[&ip(21)].zone.as_deref(), Some("z3"));
    assert_eq!(sl.endpoints[&ip(23)].hints, None, "not ready: no hint");
    let step = s.step(
        "close: trafficDistribution unset",
        |_| {
            s.svc("close", |v| {
                v["spec"]
                    .as_object_mut()
                    .map(|m| m.remove("trafficDistribution"));
            })
        },
        s.until("close", |v| v.len() == 1 && no_hints(&v[0])),
    );
    assert_eq!(step.writes, [format!("update {close}")]);
    assert!(step.events.is_empty(), "{step:?}");

    // Auto on then off: hints removed, the "disabled" warning.
    let step = s.step(
        "near: PreferClose off, Auto on",
        |_| {
            s.svc("near", |v| {
                v["metadata"]["annotations"] =
                    json!({"service.kubernetes.io/topology-mode": "Auto"});
                v["spec"]
                    .as_object_mut()
                    .map(|m| m.remove("trafficDistribution"));
            })
        },
        || true,
    );
    assert_eq!(step.events, [ENABLED]);
    let step = s.step(
        "near: Auto off",
        |_| s.svc("near", |v| v["metadata"]["annotations"] = json!({})),
        s.until("near", |v| v.len() == 1 && no_hints(&v[0])),
    );
    assert_eq!(step.writes, [format!("update {near}")]);
    assert_eq!(step.events, [DISABLED]);
    assert_eq!(s.d.stop(), Some(0));
}

#[test]
fn pod_transitions() {
    let mut items = nodes();
    items.push(service("default", "web", "web", json!("http")));
    let mut pnr = service("default", "pnr", "pnr", json!("http"));
    pnr["spec"]["publishNotReadyAddresses"] = json!(true);
    items.push(pnr);
    for i in 0..3 {
        let n = if i % 2 == 0 { "node-a" } else { "node-b" };
        items.push(pod_on(&format!("web-{i}"), "web", n, &ip(i), true));
        items.push(pod_on(&format!("pnr-{i}"), "pnr", n, &ip(10 + i), i != 2));
    }
    let s = Scene::start("es-trans-pods", items);
    let web = s.slice("web").name;
    let pnr = s.slice("pnr").name;
    let upd = |n: &str| vec![format!("update {n}")];
    // publishNotReadyAddresses: every endpoint ready, serving as the pod.
    let sl = s.slice("pnr");
    assert_eq!(sl.endpoints[&ip(12)].rst, "r--");
    assert_eq!(sl.endpoints[&ip(10)].rst, "rs-");

    // Readiness flips.
    let step = s.step(
        "web-1 not ready",
        |c| c.set_ready("default", &["web-1".to_string()], false),
        s.until("web", |v| {
            v.len() == 1 && v[0].endpoints[&ip(1)].rst == "---"
        }),
    );
    assert_eq!(step.writes, upd(&web));
    assert!(step.events.is_empty(), "{step:?}");
    let sl = s.slice("web");
    assert_eq!(
        sl.annotations["endpoints.kubernetes.io/last-change-trigger-time"], "2026-01-01T00:00:01Z",
        "the Ready condition's transition time"
    );
    assert_eq!(sl.endpoints[&ip(1)].zone.as_deref(), Some("z2"));
    let step = s.step(
        "web-1 ready",
        |c| c.set_ready("default", &["web-1".to_string()], true),
        s.until("web", |v| {
            v.len() == 1 && v[0].endpoints[&ip(1)].rst == "rs-"
        }),
    );
    assert_eq!(step.writes, upd(&web));

    // publishNotReadyAddresses toggled: the not-ready endpoint's ready
    // condition follows; ready pods' endpoints do not change.
    let step = s.step(
        "pnr: publishNotReadyAddresses off",
        |_| {
            s.svc("pnr", |v| {
                v["spec"]["publishNotReadyAddresses"] = json!(false)
            })
        },
        s.until("pnr", |v| {
            v.len() == 1 && v[0].endpoints[&ip(12)].rst == "---"
        }),
    );
    assert_eq!(step.writes, upd(&pnr));
    let step = s.step(
        "pnr: publishNotReadyAddresses on",
        |_| {
            s.svc("pnr", |v| {
                v["spec"]["publishNotReadyAddresses"] = json!(true)
            })
        },
        s.until("pnr", |v| {
            v.len() == 1 && v[0].endpoints[&ip(12)].rst == "r--"
        }),
    );
    assert_eq!(step.writes, upd(&pnr));

    // Terminating: serving as before, not ready; with
    // publishNotReadyAddresses still ready.
    let step = s.step(
        "web-0 and pnr-0 terminating",
        |c| {
            for n in ["web-0", "pnr-0"] {
                c.modify("pods", "default", &[n.to_string()], |v| {
                    v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:01:00Z")
                });
            }
        },
        || {
            s.slice("web").endpoints[&ip(0)].rst == "-st"
                && s.slice("pnr").endpoints[&ip(10)].rst == "rst"
        },
    );
    let mut w = step.writes.clone();
    w.sort();
    let mut want = vec![format!("update {pnr}"), format!("update {web}")];
    want.sort();
    assert_eq!(w, want);
    assert!(step.events.is_empty(), "{step:?}");
    // A terminating pod's readiness still shows as serving.
    let step = s.step(
        "web-0 terminating and not ready",
        |c| c.set_ready("default", &["web-0".to_string()], false),
        s.until("web", |v| {
            v.len() == 1 && v[0].endpoints[&ip(0)].rst == "--t"
        }),
    );
    assert_eq!(step.writes, upd(&web));

    // The pod IP changes: the endpoint is replaced in place.
    let step = s.step(
        "web-2 new IP",
        |_| {
            s.pods(&["web-2"], |v| {
                v["status"]["podIP"] = json!("10.9.9.9");
                v["status"]["podIPs"] = json!([{"ip": "10.9.9.9"}]);
            })
        },
        s.until("web", |v| {
            v.len() == 1 && v[0].endpoints.contains_key("10.9.9.9")
        }),
    );
    assert_eq!(step.writes, upd(&web));
    assert_eq!(
        addrs(&s.slice("web")),
        BTreeSet::from([ip(0).as_str(), ip(1).as_str(), "10.9.9.9"])
    );

    // Terminal phase: out.
    let step = s.step(
        "web-1 Succeeded",
        |_| s.pods(&["web-1"], |v| v["status"]["phase"] = json!("Succeeded")),
        s.until("web", |v| {
            v.len() == 1 && !v[0].endpoints.contains_key(&ip(1))
        }),
    );
    assert_eq!(step.writes, upd(&web));

    // Labels no longer selected: out.
    let step = s.step(
        "pnr-1 relabelled",
        |_| {
            s.pods(&["pnr-1"], |v| {
                v["metadata"]["labels"]["app"] = json!("gone")
            })
        },
        s.until("pnr", |v| v.len() == 1 && v[0].endpoints.len() == 2),
    );
    assert_eq!(step.writes, upd(&pnr));

    // Deleted: out; the last one out leaves the placeholder (the slice
    // recycled, not deleted and created).
    let step = s.step(
        "pnr-0 deleted",
        |c| c.delete("pods", "default", &["pnr-0".to_string()]),
        s.until("pnr", |v| v.len() == 1 && v[0].endpoints.len() == 1),
    );
    assert_eq!(step.writes, upd(&pnr));
    let step = s.step(
        "pnr-2 deleted",
        |c| c.delete("pods", "default", &["pnr-2".to_string()]),
        s.until("pnr", |v| v.len() == 1 && v[0].endpoints.is_empty()),
    );
    assert_eq!(step.writes, upd(&pnr));
    let sl = s.slice("pnr");
    assert!(sl.ports.is_empty(), "the placeholder has no ports: {sl:?}");
    assert_eq!(sl.owner[0]["uid"], json!(s.uid("services", "pnr")));
    // A pod again: the placeholder is recycled.
    let step = s.step(
        "pnr-3 created",
        |c| c.load(vec![pod_on("pnr-3", "pnr", "node-a", &ip(13), true)]),
        s.until("pnr", |v| v.len() == 1 && v[0].endpoints.len() == 1),
    );
    assert_eq!(step.writes, upd(&pnr));
    assert_eq!(s.slice("pnr").ports, set(&["http:8080/TCP"]));

    // A pod on a Node not in the cache: skipped, the sync fails and is
    // retried, a warning on the Service; the Node appears: the pod is in.
    let m = s.mark();
    s.c.load(vec![pod_on("web-3", "web", "node-x", &ip(3), true)]);
    // The syncs are counted before their warnings reach the server (the
    // recorder writes them from its own thread): wait for both.
    wait_until("two failed syncs and their warnings", LIMIT, || {
        s.d.metric("endpointd_syncs_total{controller=\"endpoint_slice\",result=\"error\"}")
            .unwrap_or(0.0)
            >= 2.0
            && s.since(&m).events.len() >= 2
    });
    let step = s.since(&m);
    assert!(
        step.writes.is_empty(),
        "the pod skipped, nothing else changed: {step:?}"
    );
    let warning = "Warning FailedToUpdateEndpointSlices: Error updating Endpoint Slices for Service default/web: skipping Pod web-3 for Service default/web: Node node-x Not Found";
    assert!(
        step.events.len() >= 2 && step.events.iter().all(|e| e == warning),
        "a warning per failed sync: {step:?}"
    );
    let step = s.step(
        "node-x appears",
        |c| c.load(vec![node("node-x", "z1")]),
        s.until("web", |v| {
            v.len() == 1 && v[0].endpoints.contains_key(&ip(3))
        }),
    );
    assert_eq!(step.writes, upd(&web));
    assert!(step.events.is_empty(), "{step:?}");
    assert_eq!(s.slice("web").endpoints[&ip(3)].zone.as_deref(), Some("z1"));

    // With publishNotReadyAddresses a pod on a missing Node is published,
    // without a zone; no error.
    let step = s.step(
        "pnr-4 on a missing node",
        |c| c.load(vec![pod_on("pnr-4", "pnr", "node-y", &ip(14), true)]),
        s.until("pnr", |v| {
            v.len() == 1 && v[0].endpoints.contains_key(&ip(14))
        }),
    );
    assert_eq!(step.writes, upd(&pnr));
    assert!(step.events.is_empty(), "{step:?}");
    let e = &s.slice("pnr").endpoints[&ip(14)];
    assert_eq!((e.rst.as_str(), e.zone.as_deref()), ("rs-", None));
    // The Node appears: beyond upstream (which reads the zone only when
    // the Service syncs for another reason), the Services of its pods are
    // synced at once and the endpoint gets its zone.
    let step = s.step(
        "node-y appears",
        |c| c.load(vec![node("node-y", "z2")]),
        s.until("pnr", |v| {
            v.len() == 1 && v[0].endpoints[&ip(14)].zone.as_deref() == Some("z2")
        }),
    );
    assert_eq!(step.writes, upd(&pnr));
    assert!(step.events.is_empty(), "{step:?}");
    // publishNotReadyAddresses does not keep a pod that has finished.
    let step = s.step(
        "pnr-4 Failed",
        |_| s.pods(&["pnr-4"], |v| v["status"]["phase"] = json!("Failed")),
        s.until("pnr", |v| {
            v.len() == 1 && !v[0].endpoints.contains_key(&ip(14))
        }),
    );
    assert_eq!(step.writes, upd(&pnr));
    assert!(step.events.is_empty(), "{step:?}");
    assert_eq!(s.d.stop(), Some(0));
}

#[test]
fn scale_1_101_1_packs_into_the_slice_that_fits() {
    let mut items = nodes();
    items.push(service("default", "big", "big", json!("http")));
    items.push(pod_on("big-000", "big", "node-a", &ip(0), true));
    // One fixture transaction, one sync: with a batch period of 0 the 100
    // pod events could be split over several syncs (so could upstream's).
    let s = Scene::start_with(
        "es-trans-scale",
        items,
        "[endpointslices]\nbatch_period = \"500ms\"\n",
    );
    let first = s.slice("big").name;
    let pods: Vec<String> = (1..=100).map(|i| format!("big-{i:03}")).collect();
    let step = s.step(
        "100 more pods",
        |c| {
            c.load(
                pods.iter()
                    .enumerate()
                    .map(|(i, n)| pod_on(n, "big", "node-a", &ip(i + 1), true))
                    .collect(),
            )
        },
        s.until("big", |v| {
            v.iter().map(|x| x.endpoints.len()).sum::<usize>() == 101
        }),
    );
    // The first slice keeps its one endpoint; the 100 new ones fill a new
    // slice.
    assert_eq!(step.writes, ["create big-"]);
    let sizes: BTreeMap<String, usize> = s
        .slices("big")
        .iter()
        .map(|x| (x.name.clone(), x.endpoints.len()))
        .collect();
    assert_eq!(sizes[&first], 1);
    assert_eq!(
        sizes.values().copied().collect::<BTreeSet<_>>(),
        BTreeSet::from([1, 100])
    );
    let second = sizes
        .keys()
        .find(|n| **n != first)
        .cloned()
        .unwrap_or_default();

    let sizes = |s: &Scene| -> BTreeMap<String, usize> {
        s.slices("big")
            .iter()
            .map(|x| (x.name.clone(), x.endpoints.len()))
            .collect()
    };

    // A readiness flip touches only the slice that holds the pod.
    let step = s.step(
        "big-050 not ready",
        |c| c.set_ready("default", &["big-050".to_string()], false),
        s.until("big", |v| {
            v.iter()
                .any(|x| x.endpoints.get(&ip(50)).is_some_and(|e| e.rst == "---"))
        }),
    );
    assert_eq!(step.writes, [format!("update {second}")]);

    // One more pod: the full slice cannot take it, the other can.
    let step = s.step(
        "big-101 created",
        |c| c.load(vec![pod_on("big-101", "big", "node-a", &ip(101), true)]),
        s.until("big", |v| {
            v.iter().map(|x| x.endpoints.len()).sum::<usize>() == 102
        }),
    );
    assert_eq!(step.writes, [format!("update {first}")]);
    assert_eq!(sizes(&s)[&first], 2);

    // Back to 2 (big-000 and big-101 stay): the full slice is deleted,
    // the other one is unchanged.
    let step = s.step(
        "100 pods deleted",
        |c| c.delete("pods", "default", &pods),
        s.until("big", |v| v.len() == 1),
    );
    assert_eq!(step.writes, [format!("delete {second}")]);
    assert!(step.events.is_empty(), "{step:?}");
    assert_eq!(s.slice("big").name, first);
    assert_eq!(
        addrs(&s.slice("big")),
        BTreeSet::from([ip(0).as_str(), ip(101).as_str()])
    );
    // And to 1: the last slice loses one endpoint.
    let step = s.step(
        "big-101 deleted",
        |c| c.delete("pods", "default", &["big-101".to_string()]),
        s.until("big", |v| v.len() == 1 && v[0].endpoints.len() == 1),
    );
    assert_eq!(step.writes, [format!("update {first}")]);
    assert_eq!(s.d.stop(), Some(0));
}

#[test]
fn dual_stack_transitions() {
    let mut items = nodes();
    let mut dual = service("default", "dual", "dual", json!("http"));
    dual["spec"]["ipFamilies"] = json!(["IPv4", "IPv6"]);
    dual["spec"]["ipFamilyPolicy"] = json!("RequireDualStack");
    let mut auto = dual.clone();
    auto["metadata"]["name"] = json!("auto");
    auto["metadata"]["annotations"] = json!({"service.kubernetes.io/topology-mode": "Auto"});
    auto["spec"]["selector"] = json!({"app": "auto"});
    items.push(dual);
    items.push(auto);
    for i in 0..2 {
        let mut p = pod_on(&format!("dual-{i}"), "dual", "node-a", &ip(i), true);
        p["status"]["podIPs"] = json!([{"ip": ip(i)}, {"ip": format!("fd00::{}", i + 1)}]);
        items.push(p);
    }
    // IPv4 only: the IPv6 slice of `auto` stays an empty placeholder.
    for i in 0..8 {
        let n = if i % 2 == 0 { "node-a" } else { "node-b" };
        items.push(pod_on(&format!("auto-{i}"), "auto", n, &ip(10 + i), true));
    }
    let s = Scene::start("es-trans-dual", items);

    // Topology-mode Auto, hints for IPv4 but not for IPv6 (no endpoints):
    // IPv6 gives up with a warning on every sync, as upstream. Beyond
    // upstream: IPv4's hints stay enabled and are not announced again on
    // every sync (upstream's per-Service flag is cleared by IPv6's
    // give-up).
    let auto_v4 = s
        .slices("auto")
        .into_iter()
        .find(|x| x.address_type == "IPv4")
        .expect("an IPv4 slice");
    assert!(
        own_zone_hints(&auto_v4) && auto_v4.endpoints.len() == 8,
        "{auto_v4:?}"
    );
    let no_v6 = "Warning TopologyAwareHintsDisabled: Insufficient number of endpoints (0 endpoints, 2 zones), addressType: IPv6";
    let step = s.step(
        "auto-0 not ready",
        |c| c.set_ready("default", &["auto-0".to_string()], false),
        s.until("auto", |v| {
            v.iter()
                .any(|x| x.endpoints.get(&ip(10)).is_some_and(|e| e.rst == "---"))
        }),
    );
    assert_eq!(step.writes, [format!("update {}", auto_v4.name)]);
    assert_eq!(step.events, [no_v6]);

    let by_type = |t: &str| {
        s.slices("dual")
            .into_iter()
            .find(|x| x.address_type == t)
            .map(|x| x.name)
            .unwrap_or_default()
    };
    let (v4, v6) = (by_type("IPv4"), by_type("IPv6"));
    // The next slice update is refused (as a webhook or a quota would):
    // the IPv4 slice's. As upstream, the IPv6 slice is still written in
    // the same sync, a warning names the failure, and the retry writes
    // the IPv4 slice.
    s.c.sim.faults().fail_next(
        1,
        Some(kube_sim::requestinfo::Verb::Update),
        Some("endpointslices".into()),
        403,
        None,
    );
    let step = s.step(
        "dual-0 not ready",
        |c| c.set_ready("default", &["dual-0".to_string()], false),
        s.until("dual", |v| {
            v.len() == 2
                && v.iter().all(|x| {
                    x.endpoints
                        .values()
                        .any(|e| e.pod == "dual-0" && e.rst == "---")
                })
        }),
    );
    assert_eq!(
        step.writes,
        [format!("update {v6}"), format!("update {v4}")],
        "IPv6 in the failed sync, IPv4 on the retry"
    );
    assert_eq!(
        step.events,
        [format!(
            "Warning FailedToUpdateEndpointSlices: Error updating Endpoint Slices for Service default/dual: failed to update {v4} EndpointSlice for Service default/dual: injected failure 403 for update endpointslices"
        )]
    );
    // On the Service, from the EndpointSlice controller (docs/behaviour.md#up-b7, #up-g6).
    let failed: Vec<Value> =
        s.c.all("events")
            .into_iter()
            .filter(|e| e["reason"] == "FailedToUpdateEndpointSlices")
            .collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    let e = &failed[0];
    // events.k8s.io or core/v1 field names, as kube-sim stores them.
    let about = match e["regarding"].is_object() {
        true => &e["regarding"],
        false => &e["involvedObject"],
    };
    assert_eq!(
        (&about["kind"], &about["namespace"], &about["name"]),
        (&json!("Service"), &json!("default"), &json!("dual")),
        "{e:#}"
    );
    assert_eq!(about["uid"], json!(s.uid("services", "dual")), "{e:#}");
    let reporter = e["reportingController"]
        .as_str()
        .or(e["reportingComponent"].as_str())
        .or(e["source"]["component"].as_str());
    assert_eq!(reporter, Some("endpoint-slice-controller"), "{e:#}");
    assert_eq!(s.d.stop(), Some(0));
}
