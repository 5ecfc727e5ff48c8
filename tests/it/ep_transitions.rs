//! The Endpoints controller over each transition of a running cluster: for
//! every change of a Service, a pod or the Endpoints itself, exactly the
//! writes upstream's `pkg/controller/endpoint` makes (once), the content
//! it writes (subsets, labels, annotations) and no event — or, where the
//! README lists a deviation, what endpointd does better.
//!
//! Each scenario runs on its own Service in a shared cluster, with the
//! EndpointSlice controller off and no batching, and reads only the
//! writes endpointd made to that Service's Endpoints (the fixture's own
//! writes are kube-sim's).
#![allow(clippy::cloned_ref_to_slice_refs)] // table rows read better with clones

use crate::harness::controller as controller_support;

use controller_support::*;
use kube_sim::requestinfo::Verb;
use serde_json::{json, Value};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);
const CFG: &str = "[leader_election]\nenabled = false\n[endpointslices]\nenabled = false\n";
const TRIGGER: &str = "endpoints.kubernetes.io/last-change-trigger-time";
const OVER: &str = "endpoints.kubernetes.io/over-capacity";
const HEADLESS: &str = "service.kubernetes.io/headless";

/// A running pod of `app` with containers offering `http` 8080/TCP,
/// `metrics` 9090/TCP and `dns` 5353/UDP.
fn mkpod(name: &str, app: &str, ip: &str, ready: bool) -> Value {
    let mut p = pod("default", name, app, ip, ready);
    p["spec"]["containers"][0]["ports"] = json!([
        {"name": "http", "containerPort": 8080, "protocol": "TCP"},
        {"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
        {"name": "dns", "containerPort": 5353, "protocol": "UDP"}]);
    p
}

/// A Service `name` selecting `app=<name>`, port `http` 80 → `http`.
fn svc(name: &str) -> Value {
    service("default", name, name, json!("http"))
}

/// One stored Endpoints, as the lines the tests compare: each subset as
/// `ready [a, …] notReady [a, …] ports [p, …]`, an address as
/// `ip host=h node=n ref=Pod/ns/name`, a port as `name:port/proto[/app]`.
fn subsets(ep: &Value) -> Vec<String> {
    let addr = |a: &Value| {
        let mut s = a["ip"].as_str().unwrap_or("?").to_string();
        if let Some(h) = a["hostname"].as_str() {
            s += &format!(" host={h}");
        }
        if let Some(n) = a["nodeName"].as_str() {
            s += &format!(" node={n}");
        }
        let r = &a["targetRef"];
        if r.is_object() {
            s += &format!(
                " ref={}/{}/{}",
                r["kind"].as_str().unwrap_or("?"),
                r["namespace"].as_str().unwrap_or("?"),
                r["name"].as_str().unwrap_or("?")
            );
        }
        s
    };
    let list = |v: &Value, f: &dyn Fn(&Value) -> String| {
        let items: Vec<String> = v.as_array().into_iter().flatten().map(f).collect();
        format!("[{}]", items.join(", "))
    };
    let port = |p: &Value| {
        let mut s = format!(
            "{}:{}/{}",
            p["name"].as_str().unwrap_or(""),
            p["port"],
            p["protocol"].as_str().unwrap_or("?")
        );
        if let Some(a) = p["appProtocol"].as_str() {
            s += &format!("/{a}");
        }
        s
    };
    ep["subsets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            format!(
                "ready {} notReady {} ports {}",
                list(&s["addresses"], &addr),
                list(&s["notReadyAddresses"], &addr),
                list(&s["ports"], &port)
            )
        })
        .collect()
}

/// `ip node=node-a ref=Pod/default/<name>`: an address of [`mkpod`].
fn a(ip: &str, name: &str) -> String {
    format!("{ip} node=node-a ref=Pod/default/{name}")
}

/// `endpoints.kubernetes.io/managed-by`, on every Endpoints written (as
/// kube-controller-manager's since 1.33).
const MANAGED_BY: &str = "endpoints.kubernetes.io/managed-by";

/// The labels but the controller's managed-by label, which is checked.
fn labels(ep: &Value) -> Value {
    let mut l = ep["metadata"]["labels"].clone();
    assert_eq!(
        l[MANAGED_BY],
        json!("endpoint-controller"),
        "managed-by label of {}",
        ep["metadata"]["name"]
    );
    l.as_object_mut().map(|m| m.remove(MANAGED_BY));
    l
}

fn annotation<'a>(ep: &'a Value, key: &str) -> Option<&'a str> {
    ep["metadata"]["annotations"][key].as_str()
}

/// POST, PUT and DELETE requests for Endpoints so far (failed ones and
/// no-op PUTs, which store nothing, included).
fn write_requests(c: &Cluster) -> u64 {
    let r = c.sim.requests();
    [Verb::Create, Verb::Update, Verb::Delete]
        .iter()
        .map(|v| r.get(*v, "endpoints"))
        .sum()
}

/// A point in the write log, and how many Endpoints write requests had
/// been made then.
#[derive(Clone, Copy)]
struct Mark {
    log: usize,
    requests: u64,
}

/// A cluster and one endpointd on it.
struct Fx {
    c: Cluster,
    d: Daemon,
}

impl Fx {
    fn start(name: &str, items: Vec<Value>) -> Fx {
        let c = Cluster::start(name);
        c.load(items);
        let d = Daemon::start(&c, "ep", CFG);
        Fx { c, d }
    }

    /// Successful Endpoints syncs so far.
    fn syncs(&self) -> f64 {
        self.d
            .metric("endpointd_syncs_total{controller=\"endpoint\",result=\"success\"}")
            .unwrap_or(0.0)
    }

    /// Wait until one more sync than `before` has finished and the
    /// controller is idle.
    fn settle(&self, before: f64) {
        self.d.wait_idle("endpoint", before + 1.0, LIMIT);
    }

    /// The stored Endpoints `name`.
    fn ep(&self, name: &str) -> Option<Value> {
        self.c.get("endpoints", "default", name)
    }

    /// Wait until Endpoints `name` has these subsets.
    fn wait_subsets(&self, name: &str, want: &[String]) {
        wait_until(&format!("{name}: {want:?}"), LIMIT, || {
            self.ep(name).is_some_and(|e| subsets(&e) == want)
        });
    }

    /// A point in the write log and the request counts.
    fn mark(&self) -> Mark {
        Mark {
            log: self.c.sim.store().write_log().len(),
            requests: self.write_requests(),
        }
    }

    fn write_requests(&self) -> u64 {
        write_requests(&self.c)
    }

    /// The verbs of endpointd's writes to Endpoints `name` since `mark`,
    /// followed by `unlogged ×N` when N more Endpoints write requests were
    /// made since (of any name) than writes stored: a PUT that changed
    /// nothing (kube-sim, as kube-apiserver, stores nothing for it), a
    /// DELETE into a 404, a POST into a 409.
    fn writes(&self, mark: Mark, name: &str) -> Vec<String> {
        let log = self.c.sim.store().write_log();
        let ours: Vec<_> = log[mark.log..]
            .iter()
            .filter(|w| w.resource == "endpoints" && w.user_agent.starts_with("endpointd"))
            .collect();
        let mut verbs: Vec<String> = ours
            .iter()
            .filter(|w| w.name == name)
            .map(|w| w.verb.clone())
            .collect();
        let requests = self.write_requests() - mark.requests;
        if requests > ours.len() as u64 {
            verbs.push(format!("unlogged ×{}", requests - ours.len() as u64));
        }
        verbs
    }

    /// Every Event stored.
    fn events(&self) -> Vec<Value> {
        self.c.all("events")
    }

    /// Change Service `name`, then wait for the sync it causes.
    fn change_service(&self, name: &str, f: impl Fn(&mut Value)) {
        let before = self.syncs();
        self.c.modify("services", "default", &[name.to_string()], f);
        self.settle(before);
    }

    fn change_pod(&self, name: &str, f: impl Fn(&mut Value)) {
        self.c.modify("pods", "default", &[name.to_string()], f);
    }

    /// Change Endpoints `name` as a foreign writer would.
    fn change_ep(&self, name: &str, f: impl Fn(&mut Value)) {
        self.c
            .modify("endpoints", "default", &[name.to_string()], f);
    }
}

fn ready_cond(ready: bool, at: &str) -> Value {
    json!([{"type": "Ready", "status": if ready {"True"} else {"False"}, "lastTransitionTime": at}])
}

/// Service ports: added, renamed, targetPort name → number, a name that
/// no container offers, appProtocol; every change one PUT with exactly the
/// new ports.
#[test]
fn service_port_changes_write_once_each() {
    let fx = Fx::start(
        "ep-tr-ports",
        vec![svc("ports"), mkpod("p1", "ports", "10.0.0.1", true)],
    );
    let p1 = a("10.0.0.1", "p1");
    fx.wait_subsets(
        "ports",
        &[format!("ready [{p1}] notReady [] ports [http:8080/TCP]")],
    );
    fx.settle(0.0);
    let events = fx.events().len();
    let created = fx.ep("ports").expect("endpoints");
    assert_eq!(
        labels(&created),
        json!({"team": "edge"}),
        "no headless label: a clusterIP"
    );
    assert!(
        annotation(&created, TRIGGER).is_some(),
        "first sync: the Service's creation time"
    );

    let steps: Vec<(&str, Value, Vec<String>)> = vec![
        (
            "a second port by name, with an appProtocol",
            json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http"},
                   {"name": "metrics", "port": 9000, "protocol": "TCP", "targetPort": "metrics", "appProtocol": "prom"}]),
            vec![format!(
                "ready [{p1}] notReady [] ports [http:8080/TCP, metrics:9090/TCP/prom]"
            )],
        ),
        (
            "renamed",
            json!([{"name": "web", "port": 80, "protocol": "TCP", "targetPort": "http"},
                   {"name": "metrics", "port": 9000, "protocol": "TCP", "targetPort": "metrics", "appProtocol": "prom"}]),
            vec![format!(
                "ready [{p1}] notReady [] ports [web:8080/TCP, metrics:9090/TCP/prom]"
            )],
        ),
        (
            "targetPort by name → number (no container declares it: kept)",
            json!([{"name": "web", "port": 80, "protocol": "TCP", "targetPort": 8081},
                   {"name": "metrics", "port": 9000, "protocol": "TCP", "targetPort": "metrics", "appProtocol": "prom"}]),
            vec![format!(
                "ready [{p1}] notReady [] ports [web:8081/TCP, metrics:9090/TCP/prom]"
            )],
        ),
        (
            "a UDP port by name; a port whose name no container offers is left out",
            json!([{"name": "dns", "port": 53, "protocol": "UDP", "targetPort": "dns"},
                   {"name": "gone", "port": 81, "protocol": "TCP", "targetPort": "nope"},
                   {"name": "udp-http", "port": 82, "protocol": "UDP", "targetPort": "http"}]),
            vec![format!("ready [{p1}] notReady [] ports [dns:5353/UDP]")],
        ),
        (
            "no port resolves: the pod is left out altogether",
            json!([{"name": "gone", "port": 81, "protocol": "TCP", "targetPort": "nope"}]),
            vec![],
        ),
        (
            "removed down to one port",
            json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http"}]),
            vec![format!("ready [{p1}] notReady [] ports [http:8080/TCP]")],
        ),
    ];
    for (what, ports, want) in steps {
        let mark = fx.mark();
        fx.change_service("ports", |s| s["spec"]["ports"] = ports.clone());
        fx.wait_subsets("ports", &want);
        assert_eq!(fx.writes(mark, "ports"), ["update"], "{what}");
        let ep = fx.ep("ports").expect("endpoints");
        assert_eq!(
            annotation(&ep, TRIGGER),
            None,
            "{what}: nothing triggered it"
        );
        assert_eq!(labels(&ep), json!({"team": "edge"}), "{what}");
    }
    // The same ports again (an unrelated Service change): no write.
    let mark = fx.mark();
    fx.change_service("ports", |s| {
        s["metadata"]["annotations"] = json!({"x": "y"})
    });
    assert_eq!(fx.writes(mark, "ports"), Vec::<String>::new());
    assert_eq!(fx.events().len(), events, "no event");
    assert_eq!(fx.d.stop(), Some(0));
}

/// Selector changed (one PUT to the new pods), removed (upstream stops
/// managing: the Endpoints is left as it is, whatever the pods do), set
/// again (one PUT).
#[test]
fn selector_changed_removed_and_restored() {
    let fx = Fx::start(
        "ep-tr-selector",
        vec![
            svc("sel"),
            mkpod("x1", "sel", "10.0.1.1", true),
            mkpod("y1", "other", "10.0.1.2", true),
        ],
    );
    let (x1, y1) = (a("10.0.1.1", "x1"), a("10.0.1.2", "y1"));
    fx.wait_subsets(
        "sel",
        &[format!("ready [{x1}] notReady [] ports [http:8080/TCP]")],
    );
    fx.settle(0.0);
    let events = fx.events().len();

    let mark = fx.mark();
    fx.change_service("sel", |s| s["spec"]["selector"] = json!({"app": "other"}));
    fx.wait_subsets(
        "sel",
        &[format!("ready [{y1}] notReady [] ports [http:8080/TCP]")],
    );
    assert_eq!(fx.writes(mark, "sel"), ["update"]);

    let mark = fx.mark();
    fx.change_service("sel", |s| {
        s["spec"].as_object_mut().map(|m| m.remove("selector"));
    });
    let before = fx.syncs();
    fx.change_pod("y1", |p| {
        p["status"]["conditions"] = ready_cond(false, "2026-01-01T00:00:09Z")
    });
    fx.c.load(vec![mkpod("y2", "other", "10.0.1.3", true)]);
    // Nothing queues the selector-less Service for these pods; one more
    // Service event shows that a sync of it writes nothing either.
    fx.change_service("sel", |s| s["metadata"]["annotations"] = json!({"x": "y"}));
    assert!(fx.syncs() > before);
    assert_eq!(fx.writes(mark, "sel"), Vec::<String>::new(), "left alone");
    let ep = fx.ep("sel").expect("kept");
    assert_eq!(
        subsets(&ep),
        [format!("ready [{y1}] notReady [] ports [http:8080/TCP]")]
    );
    // Now user-managed: its edits are not ours to correct, not even
    // looked at (no sync).
    let before = fx.syncs();
    fx.change_ep("sel", |e| {
        e["subsets"][0]["addresses"][0]["ip"] = json!("192.0.2.7")
    });
    fx.d.wait_idle("endpoint", before, LIMIT);
    assert_eq!(
        fx.syncs(),
        before,
        "no sync for a user-managed Endpoints' edit"
    );
    assert_eq!(fx.writes(mark, "sel"), Vec::<String>::new(), "left alone");

    let mark = fx.mark();
    fx.change_service("sel", |s| s["spec"]["selector"] = json!({"app": "other"}));
    let y2 = a("10.0.1.3", "y2");
    fx.wait_subsets(
        "sel",
        &[format!(
            "ready [{y2}] notReady [{y1}] ports [http:8080/TCP]"
        )],
    );
    assert_eq!(fx.writes(mark, "sel"), ["update"]);
    assert_eq!(fx.events().len(), events, "no event");
    assert_eq!(fx.d.stop(), Some(0));
}

/// type → ExternalName: upstream writes nothing and leaves the Endpoints;
/// back to ClusterIP: one PUT with what the pods are now.
#[test]
fn external_name_and_back() {
    let fx = Fx::start(
        "ep-tr-extname",
        vec![
            svc("ext"),
            mkpod("e1", "ext", "10.0.2.1", true),
            mkpod("e2", "ext", "10.0.2.2", true),
        ],
    );
    let (e1, e2) = (a("10.0.2.1", "e1"), a("10.0.2.2", "e2"));
    fx.wait_subsets(
        "ext",
        &[format!(
            "ready [{e1}, {e2}] notReady [] ports [http:8080/TCP]"
        )],
    );
    fx.settle(0.0);
    let mark = fx.mark();
    fx.change_service("ext", |s| {
        s["spec"]["type"] = json!("ExternalName");
        s["spec"]["externalName"] = json!("example.com");
    });
    let before = fx.syncs();
    fx.c.delete("pods", "default", &["e2".to_string()]);
    fx.settle(before);
    assert_eq!(fx.writes(mark, "ext"), Vec::<String>::new(), "left alone");
    fx.change_service("ext", |s| s["spec"]["type"] = json!("ClusterIP"));
    fx.wait_subsets(
        "ext",
        &[format!("ready [{e1}] notReady [] ports [http:8080/TCP]")],
    );
    assert_eq!(fx.writes(mark, "ext"), ["update"]);
    assert_eq!(fx.d.stop(), Some(0));
}

/// A headless Service without ports: its pods' addresses, ready and not,
/// with no ports (docs/behaviour.md#up-a13), in one write (kube-sim accepts port-less subsets,
/// as kube-apiserver does).
#[test]
fn headless_service_without_ports_lists_addresses_without_ports() {
    let mut h = svc("hnp");
    h["spec"]["clusterIP"] = json!("None");
    h["spec"].as_object_mut().map(|s| s.remove("ports"));
    let c = Cluster::start("ep-tr-headless-no-ports");
    c.load(vec![
        h,
        mkpod("n1", "hnp", "10.0.4.1", true),
        mkpod("n2", "hnp", "10.0.4.2", false),
    ]);
    let mark = Mark {
        log: c.sim.store().write_log().len(),
        requests: write_requests(&c),
    };
    let d = Daemon::start(&c, "ep", CFG);
    let fx = Fx { c, d };
    fx.wait_subsets(
        "hnp",
        &[format!(
            "ready [{}] notReady [{}] ports []",
            a("10.0.4.1", "n1"),
            a("10.0.4.2", "n2")
        )],
    );
    fx.settle(0.0);
    assert_eq!(fx.writes(mark, "hnp"), ["create"]);
    assert_eq!(fx.d.stop(), Some(0));
}

/// Labels mirrored from the Service; the headless label follows
/// `clusterIP` but, as upstream, is not compared: a change of clusterIP
/// alone writes nothing, the next write fixes the label.
#[test]
fn labels_and_headless_label() {
    let mut h = svc("hl");
    h["spec"]["clusterIP"] = json!("None");
    let fx = Fx::start("ep-tr-labels", vec![h, mkpod("h1", "hl", "10.0.3.1", true)]);
    let h1 = a("10.0.3.1", "h1");
    fx.wait_subsets(
        "hl",
        &[format!("ready [{h1}] notReady [] ports [http:8080/TCP]")],
    );
    fx.settle(0.0);
    let events = fx.events().len();
    assert_eq!(
        labels(&fx.ep("hl").expect("ep")),
        json!({"team": "edge", HEADLESS: ""})
    );

    let mark = fx.mark();
    fx.change_service("hl", |s| {
        s["metadata"]["labels"] = json!({"team": "edge", "tier": "web"})
    });
    wait_until("labels mirrored", LIMIT, || {
        fx.ep("hl")
            .is_some_and(|e| labels(&e) == json!({"team": "edge", "tier": "web", HEADLESS: ""}))
    });
    assert_eq!(fx.writes(mark, "hl"), ["update"]);

    let mark = fx.mark();
    fx.change_service("hl", |s| {
        s["metadata"].as_object_mut().map(|m| m.remove("labels"));
    });
    wait_until("labels removed", LIMIT, || {
        fx.ep("hl")
            .is_some_and(|e| labels(&e) == json!({HEADLESS: ""}))
    });
    assert_eq!(fx.writes(mark, "hl"), ["update"]);

    // clusterIP None → an IP: not compared (docs/behaviour.md#up-a18), no write.
    let mark = fx.mark();
    fx.change_service("hl", |s| {
        s["spec"]["clusterIP"] = json!("10.96.0.77");
        s["spec"]["clusterIPs"] = json!(["10.96.0.77"]);
    });
    assert_eq!(fx.writes(mark, "hl"), Vec::<String>::new());
    // The next write drops it.
    fx.change_pod("h1", |p| {
        p["status"]["conditions"] = ready_cond(false, "2026-01-01T00:00:09Z")
    });
    fx.wait_subsets(
        "hl",
        &[format!("ready [] notReady [{h1}] ports [http:8080/TCP]")],
    );
    fx.settle(0.0);
    assert_eq!(fx.writes(mark, "hl"), ["update"]);
    let ep = fx.ep("hl").expect("ep");
    assert_eq!(labels(&ep), json!({}), "no label left but managed-by");
    assert_eq!(
        annotation(&ep, TRIGGER),
        Some("2026-01-01T00:00:09Z"),
        "the pod's transition"
    );

    // A Service that carries the headless label itself (with a clusterIP):
    // mirrored without it, once; then (beyond upstream, which never finds
    // that equal) not rewritten on every sync. (kube-sim, as
    // kube-apiserver, stores nothing for a PUT that changes nothing: count
    // the requests.)
    let puts = || fx.c.sim.requests().get(Verb::Update, "endpoints");
    let puts_before = puts();
    let mark = fx.mark();
    fx.change_service("hl", |s| {
        s["metadata"]["labels"] = json!({"team": "edge", HEADLESS: "yes"})
    });
    wait_until("labels mirrored", LIMIT, || {
        fx.ep("hl")
            .is_some_and(|e| labels(&e) == json!({"team": "edge"}))
    });
    fx.change_service("hl", |s| {
        s["metadata"]["annotations"] = json!({"touch": "1"})
    });
    fx.change_service("hl", |s| {
        s["metadata"]["annotations"] = json!({"touch": "2"})
    });
    assert_eq!(fx.writes(mark, "hl"), ["update"]);
    assert_eq!(puts() - puts_before, 1, "one PUT");
    assert_eq!(fx.events().len(), events, "no event");
    assert_eq!(fx.d.stop(), Some(0));
}

/// publishNotReadyAddresses toggled: one PUT each way; terminating pods
/// stay while it is set; the pre-1.24 tolerate-unready annotation is
/// ignored.
#[test]
fn publish_not_ready_addresses_and_terminating() {
    let fx = Fx::start(
        "ep-tr-publish",
        vec![
            svc("pub"),
            mkpod("r1", "pub", "10.0.4.1", true),
            mkpod("n1", "pub", "10.0.4.2", false),
        ],
    );
    let (r1, n1) = (a("10.0.4.1", "r1"), a("10.0.4.2", "n1"));
    let split = vec![format!(
        "ready [{r1}] notReady [{n1}] ports [http:8080/TCP]"
    )];
    let all = vec![format!(
        "ready [{r1}, {n1}] notReady [] ports [http:8080/TCP]"
    )];
    fx.wait_subsets("pub", &split);
    fx.settle(0.0);
    let events = fx.events().len();

    let mark = fx.mark();
    fx.change_service("pub", |s| {
        s["metadata"]["annotations"] =
            json!({"service.alpha.kubernetes.io/tolerate-unready-endpoints": "true"});
    });
    assert_eq!(
        fx.writes(mark, "pub"),
        Vec::<String>::new(),
        "removed in 1.24"
    );

    fx.change_service("pub", |s| {
        s["spec"]["publishNotReadyAddresses"] = json!(true)
    });
    fx.wait_subsets("pub", &all);
    assert_eq!(fx.writes(mark, "pub"), ["update"]);

    // Terminating while published: kept, in addresses, no write.
    let mark = fx.mark();
    let before = fx.syncs();
    fx.change_pod("r1", |p| {
        p["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:01:00Z")
    });
    fx.settle(before);
    assert_eq!(fx.writes(mark, "pub"), Vec::<String>::new());
    assert_eq!(subsets(&fx.ep("pub").expect("ep")), all);

    // Published no more: the terminating pod leaves, the not-ready one
    // goes back to notReadyAddresses.
    fx.change_service("pub", |s| {
        s["spec"]["publishNotReadyAddresses"] = json!(false)
    });
    fx.wait_subsets(
        "pub",
        &[format!("ready [] notReady [{n1}] ports [http:8080/TCP]")],
    );
    assert_eq!(fx.writes(mark, "pub"), ["update"]);
    assert_eq!(fx.events().len(), events, "no event");
    assert_eq!(fx.d.stop(), Some(0));
}

/// Pod transitions, each one PUT with the new content (or none where
/// upstream ignores the change): IP change, readiness flip, terminating,
/// Succeeded / Failed (whatever the restartPolicy), no IP yet then one,
/// hostname only with subdomain == service name, relabelled out of the
/// selector, deleted.
#[test]
fn pod_transitions_write_once_each() {
    let mut h = mkpod("h1", "pods", "10.0.5.3", true);
    h["spec"]["hostname"] = json!("web-0");
    h["spec"]["subdomain"] = json!("pods");
    let mut other_sub = mkpod("h2", "pods", "10.0.5.4", true);
    other_sub["spec"]["hostname"] = json!("web-1");
    other_sub["spec"]["subdomain"] = json!("elsewhere");
    let mut no_ip = mkpod("q1", "pods", "10.0.5.9", true);
    if let Some(m) = no_ip["status"].as_object_mut() {
        m.remove("podIP");
        m.remove("podIPs");
    }
    let fx = Fx::start(
        "ep-tr-pods",
        vec![
            svc("pods"),
            mkpod("p1", "pods", "10.0.5.1", true),
            mkpod("p2", "pods", "10.0.5.2", true),
            h,
            other_sub,
            no_ip,
        ],
    );
    let line = |ready: &[String], not_ready: &[String]| {
        vec![format!(
            "ready [{}] notReady [{}] ports [http:8080/TCP]",
            ready.join(", "),
            not_ready.join(", ")
        )]
    };
    let p1 = a("10.0.5.1", "p1");
    let p2 = a("10.0.5.2", "p2");
    let h1 = "10.0.5.3 host=web-0 node=node-a ref=Pod/default/h1".to_string();
    let h2 = a("10.0.5.4", "h2");
    fx.wait_subsets(
        "pods",
        &line(&[p1.clone(), p2.clone(), h1.clone(), h2.clone()], &[]),
    );
    fx.settle(0.0);
    let events = fx.events().len();

    // (what, change, expected subsets; None: upstream ignores the change).
    type Step<'a> = (
        &'a str,
        &'a str,
        Box<dyn Fn(&mut Value)>,
        Option<Vec<String>>,
    );
    let p1b = a("10.0.5.11", "p1");
    // What the next write shows of the changes that sync nothing.
    let p2b = "10.0.5.2 node=node-b ref=Pod/default/p2".to_string();
    let h2b = "10.0.5.4 host=web-1 node=node-a ref=Pod/default/h2".to_string();
    let steps: Vec<Step> = vec![
        (
            "IP changed",
            "p1",
            Box::new(|p| {
                p["status"]["podIP"] = json!("10.0.5.11");
                p["status"]["podIPs"] = json!([{"ip": "10.0.5.11"}]);
            }),
            Some(line(
                &[p1b.clone(), p2.clone(), h1.clone(), h2.clone()],
                &[],
            )),
        ),
        (
            "not ready",
            "p2",
            Box::new(|p| p["status"]["conditions"] = ready_cond(false, "2026-01-01T00:00:05Z")),
            Some(line(&[p1b.clone(), h1.clone(), h2.clone()], &[p2.clone()])),
        ),
        (
            "ready again",
            "p2",
            Box::new(|p| p["status"]["conditions"] = ready_cond(true, "2026-01-01T00:00:06Z")),
            Some(line(
                &[p1b.clone(), p2.clone(), h1.clone(), h2.clone()],
                &[],
            )),
        ),
        (
            "annotation only: not relevant",
            "p2",
            Box::new(|p| p["metadata"]["annotations"] = json!({"a": "b"})),
            None,
        ),
        (
            "nodeName changed: not relevant (upstream C3)",
            "p2",
            Box::new(|p| p["spec"]["nodeName"] = json!("node-b")),
            None,
        ),
        (
            "subdomain now the Service's: same Services, not relevant (C3)",
            "h2",
            Box::new(|p| p["spec"]["subdomain"] = json!("pods")),
            None,
        ),
        (
            "no IP yet → an IP",
            "q1",
            Box::new(|p| {
                p["status"]["podIP"] = json!("10.0.5.9");
                p["status"]["podIPs"] = json!([{"ip": "10.0.5.9"}]);
            }),
            Some(line(
                &[
                    p1b.clone(),
                    p2b.clone(),
                    h1.clone(),
                    h2b.clone(),
                    a("10.0.5.9", "q1"),
                ],
                &[],
            )),
        ),
        (
            "Succeeded, still Ready (restartPolicy Never)",
            "q1",
            Box::new(|p| {
                p["spec"]["restartPolicy"] = json!("Never");
                p["status"]["phase"] = json!("Succeeded");
            }),
            Some(line(
                &[p1b.clone(), p2b.clone(), h1.clone(), h2b.clone()],
                &[],
            )),
        ),
        (
            "Failed, not ready, restartPolicy Always",
            "p2",
            Box::new(|p| {
                p["spec"]["restartPolicy"] = json!("Always");
                p["status"]["phase"] = json!("Failed");
                p["status"]["conditions"] = ready_cond(false, "2026-01-01T00:00:07Z");
            }),
            Some(line(&[p1b.clone(), h1.clone(), h2b.clone()], &[])),
        ),
        (
            "terminating",
            "h2",
            Box::new(|p| p["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:01:00Z")),
            Some(line(&[p1b.clone(), h1.clone()], &[])),
        ),
        (
            "relabelled out of the selector",
            "h1",
            Box::new(|p| p["metadata"]["labels"] = json!({"app": "gone"})),
            Some(line(&[p1b.clone()], &[])),
        ),
    ];
    for (what, pod, f, want) in steps {
        let mark = fx.mark();
        let before = fx.syncs();
        fx.change_pod(pod, f);
        match &want {
            Some(want) => {
                fx.wait_subsets("pods", want);
                fx.settle(before);
                assert_eq!(fx.writes(mark, "pods"), ["update"], "{what}");
            }
            None => {
                fx.d.wait_idle("endpoint", before, LIMIT);
                assert_eq!(fx.syncs(), before, "{what}: no sync");
                assert_eq!(fx.writes(mark, "pods"), Vec::<String>::new(), "{what}");
            }
        }
    }
    let mark = fx.mark();
    fx.c.delete("pods", "default", &["p1".to_string()]);
    fx.wait_subsets("pods", &[]);
    fx.settle(0.0);
    assert_eq!(fx.writes(mark, "pods"), ["update"], "deleted");
    assert_eq!(fx.events().len(), events, "no event");
    assert_eq!(fx.d.stop(), Some(0));
}

/// Dual stack: the Endpoints keep the primary family; a change of the
/// pod's other-family IP syncs but writes nothing; a single-stack IPv6
/// Service skips a pod without an IPv6 address.
#[test]
fn dual_stack_keeps_the_primary_family() {
    let mut dual = svc("dual");
    dual["spec"]["ipFamilies"] = json!(["IPv4", "IPv6"]);
    dual["spec"]["ipFamilyPolicy"] = json!("RequireDualStack");
    let mut v6 = svc("six");
    v6["spec"]["selector"] = json!({"app": "dual"});
    v6["spec"]["ipFamilies"] = json!(["IPv6"]);
    v6["spec"]["ipFamilyPolicy"] = json!("SingleStack");
    let dpod = |name: &str, ips: &[&str]| {
        let mut p = mkpod(name, "dual", ips[0], true);
        p["status"]["podIPs"] = json!(ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>());
        p
    };
    let fx = Fx::start(
        "ep-tr-dual",
        vec![
            dual,
            v6,
            dpod("d1", &["10.0.6.1", "fd00::1"]),
            dpod("d2", &["10.0.6.2"]),
        ],
    );
    let d1 = a("10.0.6.1", "d1");
    let d2 = a("10.0.6.2", "d2");
    fx.wait_subsets(
        "dual",
        &[format!(
            "ready [{d1}, {d2}] notReady [] ports [http:8080/TCP]"
        )],
    );
    let d1v6 = a("fd00::1", "d1");
    fx.wait_subsets(
        "six",
        &[format!("ready [{d1v6}] notReady [] ports [http:8080/TCP]")],
    );
    fx.settle(0.0);
    let mark = fx.mark();
    let before = fx.syncs();
    fx.change_pod("d1", |p| {
        p["status"]["podIPs"][1] = json!({"ip": "fd00::11"})
    });
    let d1v6b = a("fd00::11", "d1");
    fx.wait_subsets(
        "six",
        &[format!("ready [{d1v6b}] notReady [] ports [http:8080/TCP]")],
    );
    fx.settle(before + 1.0);
    assert_eq!(
        fx.writes(mark, "dual"),
        Vec::<String>::new(),
        "IPv4 unchanged"
    );
    assert_eq!(fx.writes(mark, "six"), ["update"]);
    // Single stack → dual stack (a secondary family added): the primary
    // family is unchanged, so is the Endpoints.
    let mark = fx.mark();
    fx.change_service("six", |s| {
        s["spec"]["ipFamilies"] = json!(["IPv6", "IPv4"]);
        s["spec"]["ipFamilyPolicy"] = json!("PreferDualStack");
    });
    assert_eq!(fx.writes(mark, "six"), Vec::<String>::new());
    assert_eq!(
        subsets(&fx.ep("six").expect("ep")),
        [format!("ready [{d1v6b}] notReady [] ports [http:8080/TCP]")]
    );
    assert_eq!(fx.d.stop(), Some(0));
}

/// A Service deleted: its Endpoints DELETEd once (no second DELETE into a
/// 404); re-created with the same name: one POST, trigger time its new
/// creation time.
#[test]
fn service_deleted_then_recreated() {
    let fx = Fx::start(
        "ep-tr-recreate",
        vec![svc("again"), mkpod("g1", "again", "10.0.7.1", true)],
    );
    let g1 = a("10.0.7.1", "g1");
    let want = [format!("ready [{g1}] notReady [] ports [http:8080/TCP]")];
    fx.wait_subsets("again", &want);
    fx.settle(0.0);
    let events = fx.events().len();
    let deletes = || fx.c.sim.requests().get(Verb::Delete, "endpoints");
    let deletes_before = deletes();
    let mark = fx.mark();
    let before = fx.syncs();
    fx.c.delete("services", "default", &["again".to_string()]);
    wait_until("Endpoints deleted", LIMIT, || fx.ep("again").is_none());
    fx.settle(before);
    assert_eq!(fx.writes(mark, "again"), ["delete"]);
    assert_eq!(deletes() - deletes_before, 1, "one DELETE request");

    let mut s = svc("again");
    s["metadata"]["labels"] = json!({"gen": "2"});
    let before = fx.syncs();
    fx.c.load(vec![s]);
    fx.wait_subsets("again", &want);
    fx.settle(before);
    assert_eq!(fx.writes(mark, "again"), ["delete", "create"]);
    let ep = fx.ep("again").expect("ep");
    assert_eq!(labels(&ep), json!({"gen": "2"}));
    let created = fx.c.get("services", "default", "again").expect("svc");
    assert_eq!(
        annotation(&ep, TRIGGER),
        created["metadata"]["creationTimestamp"].as_str(),
        "the new Service's creation time"
    );
    assert_eq!(fx.events().len(), events, "no event");
    assert_eq!(fx.d.stop(), Some(0));
}

/// Over capacity: 1,000 → 1,001 ready (annotation set, the first 1,000
/// kept) → 999 (annotation removed, every address); 1,001 with two not
/// ready: the ready ones kept first.
#[test]
fn over_capacity_set_and_removed() {
    let names: Vec<String> = (0..1001).map(|i| format!("c{i:04}")).collect();
    let mut items = vec![svc("cap")];
    items.extend(
        names[..1000]
            .iter()
            .enumerate()
            .map(|(i, n)| mkpod(n, "cap", &ip(i), true)),
    );
    let fx = Fx::start("ep-tr-capacity", items);
    let count = |ep: &Value| {
        let (mut r, mut n) = (0, 0);
        for s in ep["subsets"].as_array().into_iter().flatten() {
            r += s["addresses"].as_array().map_or(0, |v| v.len());
            n += s["notReadyAddresses"].as_array().map_or(0, |v| v.len());
        }
        (r, n)
    };
    let wait_state = |what: &str, want: (usize, usize), over: bool| {
        wait_until(what, LIMIT, || {
            fx.ep("cap")
                .is_some_and(|e| count(&e) == want && annotation(&e, OVER).is_some() == over)
        })
    };
    wait_state("1000 ready, not over", (1000, 0), false);
    fx.settle(0.0);
    let events = fx.events().len();

    let mark = fx.mark();
    let before = fx.syncs();
    fx.c.load(vec![mkpod(&names[1000], "cap", &ip(1000), true)]);
    wait_state("1001 → 1000 kept, over", (1000, 0), true);
    fx.settle(before);
    assert_eq!(fx.writes(mark, "cap"), ["update"]);
    let ep = fx.ep("cap").expect("ep");
    assert_eq!(annotation(&ep, OVER), Some("truncated"));
    let ips: Vec<&str> = ep["subsets"][0]["addresses"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["ip"].as_str())
        .collect();
    assert_eq!(ips.len(), 1000);
    // Addresses sort by their text (upstream LessEndpointAddress): the
    // greatest one is cut.
    let last = (0..1001).map(ip).max().expect("ips");
    assert!(!ips.contains(&last.as_str()), "{last} is cut");

    // One pod not ready: the 1,000 ready ones kept, the not-ready one
    // dropped; a second: 999 ready kept, one of the two not-ready ones.
    for (i, want) in [(1000, 0), (999, 1)].into_iter().enumerate() {
        let mark = fx.mark();
        let before = fx.syncs();
        fx.c.set_ready("default", &names[i..i + 1], false);
        wait_state(&format!("{want:?}"), want, true);
        fx.settle(before);
        assert_eq!(fx.writes(mark, "cap"), ["update"], "{want:?}");
        let ep = fx.ep("cap").expect("ep");
        let not_ready: Vec<&Value> = ep["subsets"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|s| s["notReadyAddresses"].as_array().into_iter().flatten())
            .collect();
        assert!(not_ready
            .iter()
            .all(|a| a["ip"] == ip(0) || a["ip"] == ip(1)));
    }

    // Back to 1,000 pods, then 999: every address, the annotation
    // removed (one pod at a time: two deletes are two watch events, and
    // with no batching the first may be synced alone).
    for (name, want) in [(&names[1000], (998, 2)), (&names[999], (997, 2))] {
        let mark = fx.mark();
        let before = fx.syncs();
        fx.c.delete("pods", "default", std::slice::from_ref(name));
        wait_state(&format!("{want:?}"), want, false);
        fx.settle(before);
        assert_eq!(fx.writes(mark, "cap"), ["update"], "{want:?}");
    }
    assert_eq!(fx.events().len(), events, "no event");
    assert_eq!(fx.d.stop(), Some(0));
}

/// Foreign writers: an edit of the subsets is corrected at once (README:
/// upstream waits for the Service's next sync); an edit of what upstream
/// does not compare (an annotation) is left; a delete is re-created once.
#[test]
fn foreign_edit_and_delete_of_a_managed_endpoints() {
    let fx = Fx::start(
        "ep-tr-foreign",
        vec![svc("fw"), mkpod("f1", "fw", "10.0.8.1", true)],
    );
    let want = [format!(
        "ready [{}] notReady [] ports [http:8080/TCP]",
        a("10.0.8.1", "f1")
    )];
    fx.wait_subsets("fw", &want);
    fx.settle(0.0);
    let events = fx.events().len();

    let mark = fx.mark();
    let before = fx.syncs();
    fx.change_ep("fw", |e| {
        e["subsets"][0]["addresses"][0]["ip"] = json!("192.0.2.9")
    });
    fx.wait_subsets("fw", &want);
    fx.settle(before);
    assert_eq!(fx.writes(mark, "fw"), ["update"], "corrected once");

    // An annotation is not compared: no write. What a foreign writer adds
    // beside the subsets (annotations, ownerReferences, finalizers)
    // survives our next PUT, as upstream's deep copy of the current object
    // keeps it. (One edit, of nothing endpointd sets: no sync, no foreign
    // write (issue 37 item 9); the wait lets the cache have it before the
    // pod change below, whose PUT would otherwise carry an older
    // resourceVersion into a 409.)
    let mark = fx.mark();
    let before = fx.syncs();
    fx.change_ep("fw", |e| {
        e["metadata"]["annotations"] = json!({"note": "mine"});
        e["metadata"]["finalizers"] = json!(["example.com/keep"]);
        e["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
            "name": "owner", "uid": "6f1c2a7e-3b4d-4c5e-9f60-000000000001"}]);
    });
    fx.settle(0.0);
    assert_eq!(
        fx.syncs(),
        before,
        "someone else's annotation syncs nothing"
    );
    assert_eq!(fx.writes(mark, "fw"), Vec::<String>::new(), "not compared");
    assert_eq!(annotation(&fx.ep("fw").expect("ep"), "note"), Some("mine"));

    let mark = fx.mark();
    fx.change_pod("f1", |p| {
        p["status"]["conditions"] = ready_cond(false, "2026-01-01T00:00:09Z")
    });
    let not_ready = [format!(
        "ready [] notReady [{}] ports [http:8080/TCP]",
        a("10.0.8.1", "f1")
    )];
    fx.wait_subsets("fw", &not_ready);
    fx.settle(0.0);
    assert_eq!(fx.writes(mark, "fw"), ["update"]);
    let ep = fx.ep("fw").expect("ep");
    assert_eq!(annotation(&ep, "note"), Some("mine"));
    assert_eq!(ep["metadata"]["finalizers"], json!(["example.com/keep"]));
    assert_eq!(ep["metadata"]["ownerReferences"][0]["name"], "owner");
    assert_eq!(annotation(&ep, TRIGGER), Some("2026-01-01T00:00:09Z"));
    fx.change_pod("f1", |p| {
        p["status"]["conditions"] = ready_cond(true, "2026-01-01T00:00:10Z")
    });
    fx.wait_subsets("fw", &want);
    fx.change_ep("fw", |e| {
        e["metadata"]
            .as_object_mut()
            .map(|m| m.remove("finalizers"));
    });
    fx.settle(0.0);

    let mark = fx.mark();
    let before = fx.syncs();
    fx.c.delete("endpoints", "default", &["fw".to_string()]);
    fx.wait_subsets("fw", &want);
    fx.settle(before);
    assert_eq!(fx.writes(mark, "fw"), ["create"], "re-created once");
    assert_eq!(fx.events().len(), events, "no event");

    // After a restart, before any write of the new process: corrected at
    // once too.
    let Fx { c, d } = fx;
    assert_eq!(d.stop(), Some(0));
    let d = Daemon::start(&c, "ep2", CFG);
    let fx = Fx { c, d };
    fx.settle(0.0);
    let mark = fx.mark();
    let before = fx.syncs();
    fx.change_ep("fw", |e| {
        e["subsets"][0]["addresses"][0]["ip"] = json!("192.0.2.10")
    });
    fx.wait_subsets("fw", &want);
    fx.settle(before);
    assert_eq!(
        fx.writes(mark, "fw"),
        ["update"],
        "corrected once after a restart"
    );
    assert_eq!(fx.d.stop(), Some(0));
}

/// Endpoints that are not a managed Service's: a selector-less Service's
/// (user-managed), one whose Service does not exist (yet), and an old
/// Endpoints-based leader-election lock. Upstream never reacts to their
/// creation or edits (only the start's leftover check deletes an orphan
/// without the lock annotation), so endpointd must not either.
#[test]
fn foreign_endpoints_of_no_managed_service_are_left_alone() {
    let manual = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "manual", "namespace": "default"}, "spec": {"ports": [{"port": 80}]}});
    let fx = Fx::start("ep-tr-orphans", vec![manual, svc("anchor")]);
    wait_until("anchor", LIMIT, || fx.ep("anchor").is_some());
    fx.settle(0.0);
    let events = fx.events().len();
    let ep = |name: &str, ann: Value| {
        json!({"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": name, "namespace": "default", "annotations": ann},
            "subsets": [{"addresses": [{"ip": "192.0.2.1"}], "ports": [{"port": 80}]}]})
    };
    let lock = json!({"control-plane.alpha.kubernetes.io/leader":
        "{\"holderIdentity\":\"a\",\"leaseDurationSeconds\":15}"});
    let mark = fx.mark();
    fx.c.load(vec![
        ep("manual", json!({})),
        ep("early", json!({})),
        ep("lock", lock),
    ]);
    let deletes = fx.c.sim.requests().get(Verb::Delete, "endpoints");
    for round in 0..3 {
        for name in ["manual", "early", "lock"] {
            fx.change_ep(name, |e| {
                e["subsets"][0]["addresses"][0]["ip"] = json!(format!("192.0.2.{}", 10 + round));
                e["metadata"]["annotations"]["renewed"] = json!(round.to_string());
            });
        }
    }
    // Let whatever was queued run.
    let before = fx.syncs();
    fx.change_service("anchor", |s| {
        s["metadata"]["annotations"] = json!({"x": "y"})
    });
    assert!(fx.syncs() > before);
    let written: Vec<(&str, Vec<String>)> = ["manual", "early", "lock"]
        .into_iter()
        .map(|name| (name, fx.writes(mark, name)))
        .collect();
    let none: Vec<(&str, Vec<String>)> = ["manual", "early", "lock"]
        .into_iter()
        .map(|name| (name, Vec::new()))
        .collect();
    assert_eq!(written, none, "left alone");
    for name in ["manual", "early", "lock"] {
        assert!(fx.ep(name).is_some(), "{name} kept");
    }
    assert_eq!(
        fx.c.sim.requests().get(Verb::Delete, "endpoints"),
        deletes,
        "no DELETE, not even into a 404"
    );
    assert_eq!(fx.events().len(), events, "no event");

    // A restart's leftover check (docs/behaviour.md#up-a5) deletes the orphan, once, and
    // neither the lock nor the user-managed one.
    let Fx { c, d } = fx;
    assert_eq!(d.stop(), Some(0));
    let mark = Mark {
        log: c.sim.store().write_log().len(),
        requests: write_requests(&c),
    };
    let d = Daemon::start(&c, "ep2", CFG);
    let fx = Fx { c, d };
    wait_until("the orphan deleted", LIMIT, || fx.ep("early").is_none());
    fx.settle(0.0);
    assert_eq!(fx.writes(mark, "early"), ["delete"]);
    for name in ["manual", "lock", "anchor"] {
        assert!(fx.ep(name).is_some(), "{name} kept");
        assert_eq!(fx.writes(mark, name), Vec::<String>::new(), "{name}");
    }
    assert_eq!(fx.d.stop(), Some(0));
}

/// An Endpoints a foreign writer created before its Service: the
/// Service's first sync PUTs over it once (no POST into a 409, no event),
/// keeping the writer's annotation.
#[test]
fn foreign_endpoints_created_before_its_service() {
    let fx = Fx::start(
        "ep-tr-early",
        vec![svc("anchor"), mkpod("l1", "late", "10.0.9.1", true)],
    );
    wait_until("anchor", LIMIT, || fx.ep("anchor").is_some());
    fx.settle(0.0);
    let events = fx.events().len();
    let mark = fx.mark();
    fx.c.load(vec![json!({"apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "late", "namespace": "default", "annotations": {"note": "mine"},
                     "labels": {"stale": "yes"}},
        "subsets": [{"addresses": [{"ip": "192.0.2.1"}], "ports": [{"port": 80}]}]})]);
    // The cache has it once a sync of another Service has run after it.
    fx.change_service("anchor", |s| {
        s["metadata"]["annotations"] = json!({"x": "y"})
    });
    let before = fx.syncs();
    fx.c.load(vec![svc("late")]);
    let want = [format!(
        "ready [{}] notReady [] ports [http:8080/TCP]",
        a("10.0.9.1", "l1")
    )];
    fx.wait_subsets("late", &want);
    fx.settle(before);
    assert_eq!(fx.writes(mark, "late"), ["update"]);
    let ep = fx.ep("late").expect("ep");
    assert_eq!(labels(&ep), json!({"team": "edge"}));
    assert_eq!(annotation(&ep, "note"), Some("mine"));
    assert_eq!(fx.events().len(), events, "no event");
    assert_eq!(fx.d.stop(), Some(0));
}

/// A Service deleted and re-created with the same name before the watch
/// event of our own DELETE of its Endpoints has reached the cache: the
/// re-created Service's sync must not take the cached (already deleted)
/// Endpoints for its own, and the echo of the DELETE must not be dropped
/// as ours when the Service exists again — else the Service is left
/// without Endpoints (upstream syncs on every Endpoints delete and
/// re-creates it). Driven in-process, the caches fed by hand, to hold the
/// echo back.
#[test]
fn recreated_before_the_delete_echo_gets_its_endpoints() {
    use endpointd::endpoints::controller::{
        EndpointsController, EndpointsHandler, EndpointsListers,
    };
    use endpointd::endpoints::writer::EndpointsWriter;
    use endpointd::runtime::fence::Fence;
    use endpointd::runtime::recorder::Discard;
    use endpointd_base::clock::RealClock;
    use endpointd_kube::informer::{DeletedObject, EventHandler, IndexKey, SourceEvent, Store};
    use endpointd_kube::kube::{Client, ClientConfig};
    use endpointd_kube::model::{Endpoints, Pod, Service};
    use endpointd_kube::workqueue::{
        ItemExponentialFailureRateLimiter, QueueConfig, RateLimitingQueue,
    };
    use std::sync::Arc;

    let c = Cluster::start("ep-tr-echo");
    c.load(vec![svc("echo"), mkpod("o1", "echo", "10.0.10.1", true)]);
    fn parse<T: serde::de::DeserializeOwned>(v: Value) -> T {
        serde_json::from_value(v).expect("decodes")
    }
    let services: Store<Service> = Store::new(&[IndexKey::Namespace]);
    let pods: Store<Pod> = Store::new(&[IndexKey::Namespace]);
    let endpoints: Store<Endpoints> = Store::new(&[IndexKey::Namespace]);
    let svc_now = || parse(c.get("services", "default", "echo").expect("svc"));
    services.apply(SourceEvent::Added(svc_now()));
    pods.apply(SourceEvent::Added(parse(
        c.get("pods", "default", "o1").expect("pod"),
    )));
    let client =
        Client::new(ClientConfig::new(c.sim.url()), RealClock::shared(), None).expect("client");
    let writer = Arc::new(EndpointsWriter::new(
        client,
        Fence::open(),
        Arc::new(Discard),
    ));
    let listers = EndpointsListers {
        services: services.clone(),
        pods: pods.clone(),
        endpoints: endpoints.clone(),
    };
    let ctrl = EndpointsController::new(listers, Arc::clone(&writer));
    let queue: RateLimitingQueue<String> = RateLimitingQueue::new(
        &QueueConfig::new("").clock(RealClock::shared()),
        ItemExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1)),
    )
    .expect("queue");
    let handler = EndpointsHandler::new(queue.clone(), Arc::clone(&writer));
    let key = "default/echo";
    let verbs = || -> Vec<String> {
        c.writes("endpoints")
            .iter()
            .filter(|w| w.user_agent.starts_with("endpointd"))
            .map(|w| w.verb.clone())
            .collect()
    };

    // Created, and the cache shows it.
    ctrl.sync_service(key).expect("create");
    let first: Endpoints = parse(c.get("endpoints", "default", "echo").expect("created"));
    endpoints.apply(SourceEvent::Added(first.clone()));
    handler.on_add(&Arc::new(first.clone()), false);

    // The Service goes: its Endpoints is DELETEd; the echo is held back.
    let gone = svc_now();
    c.delete("services", "default", &["echo".to_string()]);
    services.apply(SourceEvent::Deleted(gone));
    ctrl.sync_service(key).expect("delete");
    assert!(c.get("endpoints", "default", "echo").is_none());

    // Re-created at once; its sync still sees the deleted Endpoints.
    c.load(vec![svc("echo")]);
    services.apply(SourceEvent::Added(svc_now()));
    let mut retry = ctrl.sync_service(key).is_err();
    // The echo arrives.
    endpoints.apply(SourceEvent::Deleted(first.clone()));
    handler.on_delete(&DeletedObject::Known(Arc::new(first)));
    while let Some(k) = queue.try_get() {
        queue.done(&k);
        retry = true;
    }
    if retry {
        ctrl.sync_service(key).expect("sync after the echo");
    }
    assert!(
        c.get("endpoints", "default", "echo").is_some(),
        "the re-created Service has its Endpoints; endpointd wrote {:?}",
        verbs()
    );
    assert_eq!(verbs(), ["create", "delete", "create"]);
}

/// A write the API server refuses: one Warning event on the Endpoints
/// (upstream's reason and message), then the retry writes once.
#[test]
fn refused_writes_record_one_warning_each_then_retry() {
    let fx = Fx::start(
        "ep-tr-refused",
        vec![svc("anchor"), mkpod("w1", "refuse", "10.0.11.1", true)],
    );
    wait_until("anchor", LIMIT, || fx.ep("anchor").is_some());
    fx.settle(0.0);
    fx.c.sim
        .faults()
        .fail_next(1, Some(Verb::Create), Some("endpoints".into()), 403, None);
    let mark = fx.mark();
    fx.c.load(vec![svc("refuse")]);
    let w1 = a("10.0.11.1", "w1");
    fx.wait_subsets(
        "refuse",
        &[format!("ready [{w1}] notReady [] ports [http:8080/TCP]")],
    );
    fx.settle(0.0);
    // The refused POST is a request without a stored write.
    assert_eq!(fx.writes(mark, "refuse"), ["create", "unlogged ×1"]);
    let warnings = |reason: &str| -> Vec<Value> {
        fx.events()
            .into_iter()
            .filter(|e| e["reason"] == reason)
            .collect()
    };
    let created = warnings("FailedToCreateEndpoint");
    assert_eq!(created.len(), 1, "{created:#?}");
    let e = &created[0];
    assert_eq!(e["type"], "Warning");
    // events.k8s.io or core/v1 field names, as kube-sim stores them.
    let about = |e: &Value| match e["regarding"].is_object() {
        true => e["regarding"].clone(),
        false => e["involvedObject"].clone(),
    };
    let note = |e: &Value| match e["note"].as_str() {
        Some(n) => n.to_string(),
        None => e["message"].as_str().unwrap_or("").to_string(),
    };
    assert_eq!(about(e)["kind"], "Endpoints");
    assert_eq!(about(e)["name"], "refuse");
    assert_eq!(about(e)["namespace"], "default");
    assert!(
        note(e).starts_with("Failed to create endpoint for service default/refuse: "),
        "{e:#}"
    );
    let reporter = e["reportingController"]
        .as_str()
        .or(e["reportingComponent"].as_str());
    assert_eq!(reporter, Some("endpoint-controller"), "{e:#}");

    fx.c.sim
        .faults()
        .fail_next(1, Some(Verb::Update), Some("endpoints".into()), 422, None);
    let mark = fx.mark();
    fx.change_pod("w1", |p| {
        p["status"]["conditions"] = ready_cond(false, "2026-01-01T00:00:09Z")
    });
    fx.wait_subsets(
        "refuse",
        &[format!("ready [] notReady [{w1}] ports [http:8080/TCP]")],
    );
    fx.settle(0.0);
    assert_eq!(fx.writes(mark, "refuse"), ["update", "unlogged ×1"]);
    let updated = warnings("FailedToUpdateEndpoint");
    assert_eq!(updated.len(), 1, "{updated:#?}");
    assert_eq!(about(&updated[0])["name"], "refuse");
    assert!(
        Some(note(&updated[0]).as_str())
            .is_some_and(|m| m.starts_with("Failed to update endpoint default/refuse: ")),
        "{:#}",
        updated[0]
    );
    // As upstream, the retried PUT carries no trigger time: the tracker
    // moved on at the failed sync (docs/behaviour.md#up-a9).
    let ep = fx.ep("refuse").expect("ep");
    assert_eq!(annotation(&ep, TRIGGER), None);
    assert_eq!(fx.d.stop(), Some(0));
}

/// A Service in a namespace being deleted (held by a finalizer, as a
/// load balancer's), its Endpoints deleted by the namespace's collector:
/// the re-creating POST is refused 403 with the `NamespaceTerminating`
/// cause. As upstream (docs/behaviour.md#up-a21), that is no error: no `FailedToCreateEndpoint`
/// event (not even an attempt, which the terminating namespace would
/// refuse too), no retry — one POST, and the sync counts as a success.
#[test]
fn create_refused_in_a_terminating_namespace_is_dropped() {
    let ns = "doomed";
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    let mut s = service(ns, "term", "term", json!("http"));
    s["metadata"]["finalizers"] = json!(["service.kubernetes.io/load-balancer-cleanup"]);
    let mut p = pod(ns, "t1", "term", "10.0.12.1", true);
    p["metadata"]["finalizers"] = json!(["example.com/hold"]);
    let fx = Fx::start("ep-tr-terminating", vec![namespace, s, p]);
    let ep = || fx.c.get("endpoints", ns, "term");
    wait_until("term created", LIMIT, || ep().is_some());
    fx.settle(0.0);
    let event_requests = || {
        let r = fx.c.sim.requests();
        [Verb::Create, Verb::Update, Verb::Patch]
            .iter()
            .map(|v| r.get(*v, "events"))
            .sum::<u64>()
    };
    let errors = || {
        fx.d.metric("endpointd_syncs_total{controller=\"endpoint\",result=\"error\"}")
            .unwrap_or(0.0)
    };
    // The namespace DELETEd (kube-sim marks it so), its collector has
    // marked what finalizers hold (one step each, so that each is one
    // sync): the pod, terminating, leaves the Endpoints.
    let gone = "2026-01-01T00:02:00Z";
    fx.c.modify("namespaces", "", &[ns.to_string()], |n| {
        n["metadata"]["deletionTimestamp"] = json!(gone);
        n["status"] = json!({"phase": "Terminating"});
    });
    let before = fx.syncs();
    fx.c.modify("services", ns, &["term".to_string()], |s| {
        s["metadata"]["deletionTimestamp"] = json!(gone)
    });
    fx.settle(before);
    let before = fx.syncs();
    fx.c.modify("pods", ns, &["t1".to_string()], |p| {
        p["metadata"]["deletionTimestamp"] = json!(gone)
    });
    wait_until("t1 gone from the Endpoints", LIMIT, || {
        ep().is_some_and(|e| subsets(&e).is_empty())
    });
    fx.settle(before);
    let (events, errors_before) = (event_requests(), errors());

    // The collector deletes the Endpoints; endpointd's POST is refused.
    let mark = fx.mark();
    let before = fx.syncs();
    fx.c.delete("endpoints", ns, &["term".to_string()]);
    wait_until("the sync's end", LIMIT, || {
        fx.syncs() > before || errors() > errors_before
    });
    assert_eq!(errors(), errors_before, "not an error");
    fx.settle(before);
    assert_eq!(
        fx.writes(mark, "term"),
        ["unlogged ×1"],
        "one refused POST, not retried"
    );
    assert!(ep().is_none());
    assert!(
        fx.c.get("namespaces", "", ns).is_some(),
        "still terminating"
    );
    assert_eq!(event_requests(), events, "no event, not even tried");
    assert_eq!(errors(), errors_before, "never an error");
    assert_eq!(fx.d.stop(), Some(0));
}
