//! Cache-memory benchmark: heap bytes and live allocations per cached Pod in
//! the informer store (trimmed `model::Pod` + keys + indexes) versus the
//! same pods kept as full `serde_json::Value` objects, measured with a
//! counting global allocator (allocations matter as much as bytes: glibc
//! adds a 16-byte header and rounding to each one, >= 32 bytes in all);
//! plus a read micro-benchmark of the store's single `RwLock` against a
//! 16-way sharded map under a concurrent writer; plus the cached
//! EndpointSlices and Endpoints the controllers write back (as the e2e
//! cluster has them: 10 pods per Service), per endpoint.
//!
//! `cargo bench --bench cache_memory [-- N]`; the last line is JSON:
//! `{"pods":N,"bytes_per_pod":..,"bytes_per_pod_full_object":..,...}`.

// A measuring harness, not shipped: a counting global allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::sync::{Arc, RwLock};

use endpointd::runtime::trigger::TriggerTimeTracker;
use endpointd_base::clock::{Clock, RealClock};
use endpointd_kube::informer::{IndexKey, SourceEvent, Store};
use endpointd_kube::model::{EndpointSlice, Endpoints, Pod, Service};

/// Counts live heap bytes.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static LIVE_ALLOCS: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        LIVE_ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        LIVE_ALLOCS.fetch_sub(1, Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        LIVE_ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new as isize - l.size() as isize, Ordering::Relaxed);
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

fn live_allocs() -> isize {
    LIVE_ALLOCS.load(Ordering::Relaxed)
}

/// A typical full Pod as the API server sends it: 5 labels, 2 ports,
/// annotations, an owner, managedFields, env, volumes, status details.
fn pod_json(i: usize) -> String {
    let ns = format!("team-{}", i % 20);
    let app = format!("app-{}", i % 50);
    let hash = format!(
        "{:010x}",
        (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 24
    );
    format!(
        r#"{{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"{app}-{hash}-{i:05}","generateName":"{app}-{hash}-","namespace":"{ns}","uid":"6f1c2a7e-3b4d-4c5e-9f60-{i:012}","resourceVersion":"{rv}","creationTimestamp":"2026-11-20T10:00:00Z","labels":{{"app":"{app}","pod-template-hash":"{hash}","tier":"backend","version":"v1.4.2","team":"{ns}"}},"annotations":{{"kubectl.kubernetes.io/restartedAt":"2026-11-19T08:00:00Z","prometheus.io/scrape":"true"}},"ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"{app}-{hash}","uid":"0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9","controller":true,"blockOwnerDeletion":true}}],"managedFields":[{{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2026-11-20T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":{{"f:metadata":{{"f:generateName":{{}},"f:labels":{{".":{{}},"f:app":{{}},"f:pod-template-hash":{{}},"f:tier":{{}},"f:version":{{}},"f:team":{{}}}},"f:ownerReferences":{{".":{{}},"k:{{\"uid\":\"0a1b2c3d\"}}":{{}}}}}},"f:spec":{{"f:containers":{{"k:{{\"name\":\"main\"}}":{{".":{{}},"f:image":{{}},"f:name":{{}},"f:ports":{{}}}}}}}}}}}},{{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2026-11-20T10:00:05Z","fieldsType":"FieldsV1","subresource":"status","fieldsV1":{{"f:status":{{"f:conditions":{{}},"f:containerStatuses":{{}},"f:hostIP":{{}},"f:phase":{{}},"f:podIP":{{}},"f:podIPs":{{}},"f:startTime":{{}}}}}}}}]}},"spec":{{"volumes":[{{"name":"kube-api-access-{hash}","projected":{{"sources":[{{"serviceAccountToken":{{"expirationSeconds":3607,"path":"token"}}}},{{"configMap":{{"name":"kube-root-ca.crt","items":[{{"key":"ca.crt","path":"ca.crt"}}]}}}}],"defaultMode":420}}}}],"containers":[{{"name":"main","image":"registry.example.com/{app}:v1.4.2","ports":[{{"name":"http","containerPort":8080,"protocol":"TCP"}},{{"name":"metrics","containerPort":9090,"protocol":"TCP"}}],"env":[{{"name":"LOG_LEVEL","value":"info"}},{{"name":"POD_NAME","valueFrom":{{"fieldRef":{{"apiVersion":"v1","fieldPath":"metadata.name"}}}}}}],"resources":{{"limits":{{"cpu":"500m","memory":"256Mi"}},"requests":{{"cpu":"100m","memory":"128Mi"}}}},"volumeMounts":[{{"name":"kube-api-access-{hash}","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}}],"readinessProbe":{{"httpGet":{{"path":"/healthz","port":8080,"scheme":"HTTP"}},"periodSeconds":10}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default","nodeName":"edge-node-{node}","securityContext":{{}},"schedulerName":"default-scheduler","tolerations":[{{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}},{{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}}],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"}},"status":{{"phase":"Running","conditions":[{{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-20T10:00:01Z"}},{{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-20T10:00:09Z"}},{{"type":"ContainersReady","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-20T10:00:09Z"}},{{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-20T10:00:00Z"}}],"hostIP":"192.168.1.{node}","hostIPs":[{{"ip":"192.168.1.{node}"}}],"podIP":"10.244.{a}.{b}","podIPs":[{{"ip":"10.244.{a}.{b}"}}],"startTime":"2026-11-20T10:00:00Z","containerStatuses":[{{"name":"main","state":{{"running":{{"startedAt":"2026-11-20T10:00:03Z"}}}},"lastState":{{}},"ready":true,"restartCount":0,"image":"registry.example.com/{app}:v1.4.2","imageID":"registry.example.com/{app}@sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945","containerID":"containerd://8c0f{hash}{hash}{hash}{hash}","started":true}}],"qosClass":"Burstable"}}}}"#,
        rv = 1000 + i,
        node = i % 8,
        a = (i / 250) % 256,
        b = i % 250 + 2,
    )
}

/// A pod's targetRef as the controllers write it (canonical UID).
fn target_ref(s: usize, i: usize) -> String {
    format!(
        r#"{{"kind":"Pod","namespace":"team-{ns}","name":"app-{s}-7d4b9c8f6-{i:05}","uid":"{s:08x}-3b4d-4c5e-9f60-{i:012x}"}}"#,
        ns = s % 20
    )
}

/// The metadata of an object written for Service `s`, as it comes back.
fn written_meta(name: &str, s: usize, labels: &str) -> String {
    format!(
        r#"{{"name":"{name}","namespace":"team-{ns}","uid":"0a1b2c3d-4e5f-6071-8293-{s:012x}","resourceVersion":"{rv}","generation":1,"creationTimestamp":"2026-11-20T10:00:00Z","labels":{{{labels}}},"managedFields":[{{"manager":"endpointd","operation":"Update","apiVersion":"v1","time":"2026-11-20T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":{{"f:metadata":{{}}}}}}]}}"#,
        ns = s % 20,
        rv = 50_000 + s
    )
}

/// Service `s`'s EndpointSlice with `k` ready pod endpoints.
fn slice_json(s: usize, k: usize) -> String {
    let eps: Vec<String> = (0..k)
        .map(|i| {
            format!(
                r#"{{"addresses":["10.{}.{}.{}"],"conditions":{{"ready":true,"serving":true,"terminating":false}},"targetRef":{},"nodeName":"edge-node-{}","zone":"zone-{}"}}"#,
                s / 250,
                s % 250,
                i + 2,
                target_ref(s, i),
                (s + i) % 100,
                (s + i) % 3
            )
        })
        .collect();
    let meta = written_meta(
        &format!("app-{s}-x7k2p"),
        s,
        &format!(
            r#""kubernetes.io/service-name":"app-{s}","endpointslice.kubernetes.io/managed-by":"endpointslice-controller.k8s.io""#
        ),
    );
    let meta = meta.replacen(
        r#","generation""#,
        &format!(r#","generateName":"app-{s}-","ownerReferences":[{{"apiVersion":"v1","kind":"Service","name":"app-{s}","uid":"0a1b2c3d-4e5f-6071-8293-{s:012x}","controller":true,"blockOwnerDeletion":true}}],"generation""#),
        1,
    );
    format!(
        r#"{{"kind":"EndpointSlice","apiVersion":"discovery.k8s.io/v1","metadata":{meta},"addressType":"IPv4","endpoints":[{}],"ports":[{{"name":"http","protocol":"TCP","port":8080}}]}}"#,
        eps.join(",")
    )
}

/// Service `s`'s Endpoints with `k` ready addresses.
fn endpoints_json(s: usize, k: usize) -> String {
    let addrs: Vec<String> = (0..k)
        .map(|i| {
            format!(
                r#"{{"ip":"10.{}.{}.{}","nodeName":"edge-node-{}","targetRef":{}}}"#,
                s / 250,
                s % 250,
                i + 2,
                (s + i) % 100,
                target_ref(s, i)
            )
        })
        .collect();
    let meta = written_meta(&format!("app-{s}"), s, r#""app":"web""#);
    format!(
        r#"{{"kind":"Endpoints","apiVersion":"v1","metadata":{meta},"subsets":[{{"addresses":[{}],"ports":[{{"name":"http","port":8080,"protocol":"TCP"}}]}}]}}"#,
        addrs.join(",")
    )
}

/// Live bytes and allocations of `docs` decoded as cached `T`s (each in
/// an `Arc`, as the store keeps them; keys and indexes not included).
fn cached<T: serde::de::DeserializeOwned>(docs: &[String]) -> (Vec<Arc<T>>, isize, isize) {
    let mut out = Vec::with_capacity(docs.len());
    let (before, before_n) = (live(), live_allocs());
    for d in docs {
        let t: T = serde_json::from_str(d).unwrap_or_else(|e| panic!("bench JSON: {e}"));
        out.push(Arc::new(t));
    }
    (out, live() - before, live_allocs() - before_n)
}

/// Parse `docs` into trimmed pods and fill a store; returns the store and
/// the live bytes and allocations of the pods alone (before the store took
/// them; the `Vec` holding them counts as one allocation, not per pod).
fn fill_store(docs: &[String]) -> (Store<Pod>, isize, isize) {
    let (before, before_n) = (live(), live_allocs());
    let pods: Vec<Pod> = docs
        .iter()
        .map(|d| serde_json::from_str::<Pod>(d).unwrap_or_else(|e| panic!("bench pod JSON: {e}")))
        .collect();
    let (pods_only, pods_allocs) = (live() - before, live_allocs() - before_n - 1);
    let store = Store::new(&[IndexKey::Namespace]);
    let notes = store.replace(pods, "1", true);
    drop(notes);
    (store, pods_only, pods_allocs)
}

/// A 16-way sharded map, for comparison with the store's single lock.
/// The shard is picked with a cheap FNV-1a over the key so that a lookup
/// costs one SipHash like the store's.
struct Sharded {
    shards: Vec<RwLock<HashMap<Arc<str>, Arc<Pod>>>>,
}

fn fnv1a(key: &str) -> u64 {
    key.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Sharded {
    fn new(pods: &[Arc<Pod>]) -> Sharded {
        let s = Sharded {
            shards: (0..16).map(|_| RwLock::new(HashMap::new())).collect(),
        };
        for p in pods {
            s.insert(Arc::clone(p));
        }
        s
    }
    fn shard(&self, key: &str) -> &RwLock<HashMap<Arc<str>, Arc<Pod>>> {
        &self.shards[(fnv1a(key) % 16) as usize]
    }
    fn insert(&self, p: Arc<Pod>) {
        use endpointd_kube::model::Object;
        let key: Arc<str> = p.key().into();
        let mut g = self.shard(&key).write().unwrap_or_else(|e| e.into_inner());
        g.insert(key, p);
    }
    fn get(&self, key: &str) -> Option<Arc<Pod>> {
        let g = self.shard(key).read().unwrap_or_else(|e| e.into_inner());
        g.get(key).cloned()
    }
}

const READERS: usize = 4;
const READS: usize = 200_000;

/// ns per get with READERS threads reading and one writer updating.
fn read_bench(
    get: impl Fn(&str) -> bool + Sync,
    write: impl Fn(usize) + Sync,
    keys: &[String],
) -> f64 {
    let stop = AtomicBool::new(false);
    let start = RealClock.now();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                write(i);
                i += 1;
                std::thread::yield_now();
            }
        });
        let readers: Vec<_> = (0..READERS)
            .map(|r| {
                let get = &get;
                s.spawn(move || {
                    let mut hits = 0usize;
                    for i in 0..READS {
                        hits += usize::from(get(&keys[(i * 7919 + r * 104_729) % keys.len()]));
                    }
                    hits
                })
            })
            .collect();
        for r in readers {
            assert_eq!(r.join().unwrap_or(0), READS, "every key is present");
        }
        stop.store(true, Ordering::Relaxed);
    });
    (RealClock.now() - start).as_nanos() as f64 / (READERS * READS) as f64
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10_000);
    let docs: Vec<String> = (0..n).map(pod_json).collect();
    let json_bytes: usize = docs.iter().map(String::len).sum();

    let (before, before_n) = (live(), live_allocs());
    let (store, pods_only, pods_allocs) = fill_store(&docs);
    let (cache, cache_allocs) = (live() - before, live_allocs() - before_n);
    assert_eq!(store.len(), n);

    let before = live();
    let full: Vec<serde_json::Value> = docs
        .iter()
        .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("bench pod JSON: {e}")))
        .collect();
    let full_bytes = live() - before;
    assert_eq!(full.len(), n);
    drop(full);

    let pods = store.list();
    let keys: Vec<String> = store.keys();

    // The trigger-time tracker's state for every pod, in Services of 10
    // pods (the e2e cluster's shape: 1,000 Services, 10,000 pods).
    let mut by_name = pods.clone();
    by_name.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let svcs: Vec<(String, Service)> = (0..n.div_ceil(10))
        .map(|i| {
            let mut s = Service::default();
            s.metadata.name = format!("svc-{i}").as_str().into();
            // The pods' creationTimestamp (pods do not keep theirs).
            s.metadata.creation_timestamp = serde_json::from_str(r#""2026-11-20T10:00:00Z""#)
                .unwrap_or_else(|e| panic!("bench time: {e}"));
            (format!("ns/svc-{i}"), s)
        })
        .collect();
    let tracker = TriggerTimeTracker::new();
    let before = live();
    let mut times = Vec::new();
    for round in 0..2 {
        let start = RealClock.now();
        for (i, (key, svc)) in svcs.iter().enumerate() {
            let hi = (i * 10 + 10).min(by_name.len());
            tracker.compute(key, svc, &by_name[i * 10..hi]);
        }
        times.push((
            round,
            (RealClock.now() - start).as_nanos() as f64 / n as f64,
        ));
    }
    let tracker_bytes = live() - before;
    let sharded = Sharded::new(&pods);
    let rw_ns = read_bench(
        |k| store.get(k).is_some(),
        |i| {
            let p = Pod::clone(&pods[i % pods.len()]);
            store.apply(SourceEvent::Modified(p));
        },
        &keys,
    );
    let sh_ns = read_bench(
        |k| sharded.get(k).is_some(),
        |i| sharded.insert(Arc::clone(&pods[i % pods.len()])),
        &keys,
    );

    // The written objects the controllers cache, 10 endpoints each.
    let services = n.div_ceil(10);
    let slice_docs: Vec<String> = (0..services).map(|s| slice_json(s, 10)).collect();
    let ep_docs: Vec<String> = (0..services).map(|s| endpoints_json(s, 10)).collect();
    let (slices, slice_bytes, slice_allocs) = cached::<EndpointSlice>(&slice_docs);
    let (eps, ep_bytes, ep_allocs) = cached::<Endpoints>(&ep_docs);
    let endpoints = (services * 10) as f64;
    assert_eq!(slices.len() + eps.len(), 2 * services);

    let per = |b: isize| b as f64 / n as f64;
    println!("pods:                      {n}");
    println!(
        "full JSON text per pod:    {:.0} B",
        json_bytes as f64 / n as f64
    );
    println!(
        "trimmed Pod alone:         {:.0} B/pod (size_of::<Pod>() = {})",
        per(pods_only),
        std::mem::size_of::<Pod>()
    );
    println!(
        "  allocations:             {:.2}/pod (Arc<Pod> included only below)",
        per(pods_allocs)
    );
    println!("cache (pods+keys+indexes): {:.0} B/pod", per(cache));
    println!("  allocations:             {:.2}/pod", per(cache_allocs));
    println!("full serde_json::Value:    {:.0} B/pod", per(full_bytes));
    println!(
        "trigger-time tracker:      {:.0} B/pod, {:.0} ns/pod to compute (second round)",
        per(tracker_bytes),
        times[1].1
    );
    println!(
        "cached EndpointSlice:      {:.0} B/endpoint, {:.2} allocations (10 per slice, object included)",
        slice_bytes as f64 / endpoints,
        slice_allocs as f64 / endpoints
    );
    println!(
        "cached Endpoints:          {:.0} B/address, {:.2} allocations (10 per object, object included)",
        ep_bytes as f64 / endpoints,
        ep_allocs as f64 / endpoints
    );
    println!("get, 1 RwLock:             {rw_ns:.0} ns/op ({READERS} readers + 1 writer)");
    println!("get, 16 shards:            {sh_ns:.0} ns/op ({READERS} readers + 1 writer)");
    println!(
        "{{\"pods\":{n},\"bytes_per_pod\":{:.0},\"allocs_per_pod\":{:.2},\"bytes_per_pod_full_object\":{:.0},\"bytes_per_pod_trimmed_only\":{:.0},\"json_text_bytes_per_pod\":{:.0},\"rwlock_get_ns\":{rw_ns:.0},\"sharded_get_ns\":{sh_ns:.0},\"trigger_tracker_bytes_per_pod\":{:.0},\"slice_bytes_per_endpoint\":{:.0},\"endpoints_bytes_per_address\":{:.0}}}",
        per(cache),
        per(cache_allocs),
        per(full_bytes),
        per(pods_only),
        json_bytes as f64 / n as f64,
        per(tracker_bytes),
        slice_bytes as f64 / endpoints,
        ep_bytes as f64 / endpoints,
    );
}
