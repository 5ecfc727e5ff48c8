//! A simulated kubelet (`kube-sim --kubelet`), so that pods created by
//! people and scripts live like pods: nodes get a `podCIDR` and a Ready
//! condition; a pod without `nodeName` is bound to a Ready node (round
//! robin, a trivial scheduler); a bound pod gets phase Running, an IP from
//! its node's podCIDR, container statuses, and `Ready=True` after
//! `ready_after`; a terminating pod (graceful DELETE, see
//! [`super::deletion`]) is removed when its grace period, capped at
//! `grace_cap`, is over.
//!
//! Readiness can be flipped without writing status by hand: the pod
//! annotation `sim.endpointd.io/ready: "false"` makes it NotReady, removing
//! it (or `"true"`) makes it Ready again.
//!
//! [`step`] is one pass over the store, a function of the store and the
//! time; the thread only repeats it. Writes are kube-sim's own (the write
//! log attributes them to `system:kube-sim`).

use super::objects::rfc3339;
use super::resources::lookup;
use super::store::{Key, Store, Txn};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

/// The annotation that flips a pod's readiness.
pub const READY_ANNOTATION: &str = "sim.endpointd.io/ready";

/// How the kubelet behaves.
#[derive(Clone, Debug)]
pub struct KubeletOptions {
    /// How long after it starts a pod turns Ready.
    pub ready_after: Duration,
    /// Terminating pods are removed after min(grace period, this).
    pub grace_cap: Duration,
    /// How often the kubelet looks.
    pub every: Duration,
    /// A dual-stack cluster: nodes get an IPv6 podCIDR too
    /// (`fd00:10:244:<i>::/64`) and pods an IPv6 address beside the IPv4
    /// one (`podIPs` in that order, as a kubelet lists them).
    pub dual_stack: bool,
}

impl Default for KubeletOptions {
    fn default() -> Self {
        KubeletOptions {
            ready_after: Duration::from_secs(1),
            grace_cap: Duration::from_secs(5),
            every: Duration::from_millis(100),
            dual_stack: false,
        }
    }
}

fn s<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

fn parse_time(t: &str) -> Option<SystemTime> {
    t.parse::<jiff::Timestamp>().ok().map(SystemTime::from)
}

fn node_ready(n: &Value) -> bool {
    n.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

/// A Ready node's pod address ranges, as its stored `spec.podCIDRs` say.
#[derive(Debug, Clone)]
struct NodeCidrs {
    name: String,
    /// (network, prefix length) of the IPv4 podCIDR.
    v4: Option<(std::net::Ipv4Addr, u8)>,
    /// (network, prefix length) of the IPv6 podCIDR.
    v6: Option<(std::net::Ipv6Addr, u8)>,
}

fn parse_cidr<A: std::str::FromStr>(c: &str) -> Option<(A, u8)> {
    let (ip, len) = c.split_once('/')?;
    Some((ip.parse().ok()?, len.parse().ok()?))
}

fn node_cidrs(name: String, n: &Value) -> NodeCidrs {
    let cidrs: Vec<&str> = n
        .pointer("/spec/podCIDRs")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    NodeCidrs {
        name,
        v4: cidrs.iter().find_map(|c| parse_cidr(c)),
        v6: cidrs.iter().find_map(|c| parse_cidr(c)),
    }
}

/// Give nodes without one a podCIDR (10.244.<i>.0/24 with the lowest `i`
/// no node has; with `dual_stack` also fd00:10:244:<i>::/64) and a Ready
/// condition; the Ready nodes with their stored ranges, in name order.
fn nodes(t: &mut Txn<'_>, now: SystemTime, dual_stack: bool) -> Vec<NodeCidrs> {
    let Some(info) = lookup("", "v1", "nodes") else {
        return Vec::new();
    };
    let mut all: Vec<Value> = t.all_of("nodes").iter().map(|o| o.value()).collect();
    all.sort_by(|a, b| s(a, "/metadata/name").cmp(s(b, "/metadata/name")));
    let mut taken: BTreeSet<String> = all
        .iter()
        .map(|n| s(n, "/spec/podCIDR").to_string())
        .collect();
    let mut ready = Vec::new();
    for mut n in all {
        let name = s(&n, "/metadata/name").to_string();
        let mut changed = false;
        if n.pointer("/spec/podCIDR").is_none() {
            let i = (0..256)
                .find(|i| !taken.contains(&format!("10.244.{i}.0/24")))
                .unwrap_or(0);
            let cidr = format!("10.244.{i}.0/24");
            taken.insert(cidr.clone());
            n["spec"]["podCIDR"] = json!(cidr);
            n["spec"]["podCIDRs"] = match dual_stack {
                true => json!([cidr, format!("fd00:10:244:{i:x}::/64")]),
                false => json!([cidr]),
            };
            changed = true;
        }
        if n.pointer("/status/conditions").is_none() {
            n["status"]["conditions"] =
                json!([{"type": "Ready", "status": "True", "lastTransitionTime": rfc3339(now)}]);
            changed = true;
        }
        if changed {
            t.put(&Key::new(info, "", &name), "update", n.clone());
        }
        if node_ready(&n) {
            ready.push(node_cidrs(name, &n));
        }
    }
    ready
}

/// One pass: nodes, binding, IPs, readiness, graceful deletions.
/// `terminating` remembers when each terminating pod (by uid) was first
/// seen, so the grace period is measured from then, not from a timestamp
/// with whole seconds.
pub fn step(store: &Store, opts: &KubeletOptions, terminating: &mut BTreeMap<String, SystemTime>) {
    let now = store.clock().wall();
    let Some(pods_info) = lookup("", "v1", "pods") else {
        return;
    };
    store.txn(|t| {
        let ready_nodes = nodes(t, now, opts.dual_stack);
        let pods: Vec<Value> = t.all_of("pods").iter().map(|o| o.value()).collect();
        let mut used: BTreeSet<String> = pods
            .iter()
            .map(|p| s(p, "/status/podIP").to_string())
            .collect();
        let mut next_node = pods
            .iter()
            .filter(|p| !s(p, "/spec/nodeName").is_empty())
            .count();
        for mut p in pods {
            let key = Key::new(
                pods_info,
                s(&p, "/metadata/namespace"),
                s(&p, "/metadata/name"),
            );
            if parse_time(s(&p, "/metadata/deletionTimestamp")).is_some() {
                let grace = p
                    .pointer("/metadata/deletionGracePeriodSeconds")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                let wait = Duration::from_secs(grace).min(opts.grace_cap);
                let uid = s(&p, "/metadata/uid").to_string();
                let since = *terminating.entry(uid.clone()).or_insert(now);
                if now.duration_since(since).is_ok_and(|d| d >= wait) {
                    t.delete(&key, "delete");
                    terminating.remove(&uid);
                }
                continue;
            }
            let mut changed = false;
            if s(&p, "/spec/nodeName").is_empty() && !ready_nodes.is_empty() {
                p["spec"]["nodeName"] = json!(ready_nodes[next_node % ready_nodes.len()].name);
                next_node += 1;
                changed = true;
            }
            changed |= start(&mut p, &ready_nodes, &mut used, now);
            changed |= readiness(&mut p, opts, now);
            if changed {
                t.put(&key, "update", p);
            }
        }
    });
}

/// A bound pod without an IP starts: Running, an IP of its node's stored
/// IPv4 podCIDR (and, when the node has an IPv6 one, the address with the
/// same host part in it).
fn start(p: &mut Value, nodes: &[NodeCidrs], used: &mut BTreeSet<String>, now: SystemTime) -> bool {
    let node = s(p, "/spec/nodeName").to_string();
    if node.is_empty() || !s(p, "/status/podIP").is_empty() {
        return false;
    }
    let Some(n) = nodes.iter().find(|n| n.name == node) else {
        return false;
    };
    let Some((net, len)) = n.v4 else {
        return false;
    };
    let size = 1u64 << (32 - u32::from(len.min(32)));
    let Some((ip, host)) = (2..size.saturating_sub(1).min(65_536))
        .filter_map(|h| {
            let a = u32::from(net).checked_add(u32::try_from(h).ok()?)?;
            Some((std::net::Ipv4Addr::from(a).to_string(), h))
        })
        .find(|(ip, _)| !used.contains(ip))
    else {
        return false;
    };
    used.insert(ip.clone());
    let mut ips = vec![json!({"ip": ip})];
    if let Some((net6, _)) = n.v6 {
        let a = u128::from(net6).wrapping_add(u128::from(host));
        ips.push(json!({"ip": std::net::Ipv6Addr::from(a).to_string()}));
    }
    let names: Vec<String> = p
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|c| c.iter().map(|c| s(c, "/name").to_string()).collect())
        .unwrap_or_default();
    let statuses: Vec<Value> = names.iter().map(|n| json!({"name": n, "ready": false, "restartCount": 0, "started": true, "state": {"running": {"startedAt": rfc3339(now)}}})).collect();
    p["status"] = json!({"phase": "Running", "podIP": ip, "podIPs": ips, "hostIP": "10.0.0.1",
        "startTime": rfc3339(now), "containerStatuses": statuses,
        "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": rfc3339(now)}]});
    true
}

/// Ready after `ready_after` unless the annotation says "false".
fn readiness(p: &mut Value, opts: &KubeletOptions, now: SystemTime) -> bool {
    let Some(started) = parse_time(s(p, "/status/startTime")) else {
        return false;
    };
    let wanted = s(
        p,
        &format!(
            "/metadata/annotations/{}",
            READY_ANNOTATION.replace('/', "~1")
        ),
    ) != "false"
        && now
            .duration_since(started)
            .is_ok_and(|d| d >= opts.ready_after);
    let want = if wanted { "True" } else { "False" };
    let conds = p
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut by_type: BTreeMap<String, Value> = conds
        .into_iter()
        .map(|c| (s(&c, "/type").to_string(), c))
        .collect();
    if by_type.get("Ready").is_some_and(|c| c["status"] == want) {
        return false;
    }
    by_type.insert(
        "Ready".into(),
        json!({"type": "Ready", "status": want, "lastTransitionTime": rfc3339(now)}),
    );
    p["status"]["conditions"] = json!(by_type.into_values().collect::<Vec<_>>());
    if let Some(cs) = p
        .pointer_mut("/status/containerStatuses")
        .and_then(Value::as_array_mut)
    {
        cs.iter_mut().for_each(|c| c["ready"] = json!(wanted));
    }
    true
}

/// The kubelet's thread.
pub struct Kubelet {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Kubelet {
    /// Start repeating [`step`] every `opts.every`.
    pub fn start(store: Arc<Store>, opts: KubeletOptions) -> std::io::Result<Kubelet> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("sim-kubelet".into())
            .spawn(move || {
                let mut terminating = BTreeMap::new();
                while !flag.load(Ordering::SeqCst) && !store.is_stopped() {
                    step(&store, &opts, &mut terminating);
                    std::thread::sleep(opts.every);
                }
            })?;
        Ok(Kubelet {
            stop,
            thread: Some(thread),
        })
    }

    /// Stop and join.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
