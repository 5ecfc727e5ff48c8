//! Heap cost of the trimmed Pod projection, measured with a counting global
//! allocator: a typical pod (5 labels, 2 container ports, realistic full
//! JSON with managedFields, env, volumes and statuses) must cost at most
//! 1 KiB (inline struct + heap) once parsed, and far less than the same pod
//! kept as a `serde_json::Value`.
//!
//! The allocator counts per thread: this binary runs other tests in
//! parallel, and only the measuring thread's bytes count.

// A counting global allocator for this binary.
#![allow(unsafe_code)]

use endpointd_kube::model::Pod;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    // Const-initialised and without a destructor: safe to touch from the
    // allocator, which must not allocate itself.
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

fn add(bytes: isize) {
    // During thread teardown the slot may be gone; those bytes are not the
    // measuring thread's.
    let _ = LIVE.try_with(|c| c.set(c.get() + bytes));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        add(l.size() as isize);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        add(-(l.size() as isize));
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        add(new as isize - l.size() as isize);
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn full_pod(i: usize) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"web-7d4b9c8f6-{i:05}","generateName":"web-7d4b9c8f6-",
"namespace":"production","uid":"3f2a6c1e-9b7d-4e2f-8a1c-{i:012}","resourceVersion":"{rv}","creationTimestamp":"2026-01-01T00:00:00Z",
"labels":{{"app":"web","pod-template-hash":"7d4b9c8f6","tier":"frontend","version":"v1.2.3","team":"payments"}},
"annotations":{{"kubectl.kubernetes.io/restartedAt":"2026-01-01T00:00:00Z","prometheus.io/scrape":"true"}},
"ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d4b9c8f6","uid":"aaaa","controller":true,"blockOwnerDeletion":true}}],
"managedFields":[{{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1",
"fieldsV1":{{"f:metadata":{{"f:generateName":{{}},"f:labels":{{".":{{}},"f:app":{{}}}}}},"f:spec":{{"f:containers":{{"k:{{\"name\":\"web\"}}":{{".":{{}}}}}}}}}}}},
{{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2026-01-01T00:00:05Z","fieldsType":"FieldsV1","subresource":"status",
"fieldsV1":{{"f:status":{{"f:conditions":{{}},"f:podIPs":{{}}}}}}}}]}},
"spec":{{"nodeName":"node-{node}","restartPolicy":"Always","serviceAccountName":"web","dnsPolicy":"ClusterFirst",
"volumes":[{{"name":"kube-api-access","projected":{{"sources":[{{"serviceAccountToken":{{"expirationSeconds":3607,"path":"token"}}}}]}}}}],
"containers":[{{"name":"web","image":"registry.example.com/web:v1.2.3","ports":[{{"name":"http","containerPort":8080,"protocol":"TCP"}},{{"name":"metrics","containerPort":9090,"protocol":"TCP"}}],
"env":[{{"name":"LOG_LEVEL","value":"info"}},{{"name":"POD_NAME","valueFrom":{{"fieldRef":{{"fieldPath":"metadata.name"}}}}}}],
"resources":{{"requests":{{"cpu":"100m","memory":"128Mi"}}}},"readinessProbe":{{"httpGet":{{"path":"/healthz","port":"http"}}}}}}]}},
"status":{{"phase":"Running","hostIP":"192.168.1.10","podIP":"10.244.{a}.{b}","podIPs":[{{"ip":"10.244.{a}.{b}"}}],"qosClass":"Burstable",
"conditions":[{{"type":"Initialized","status":"True"}},{{"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:05Z"}},
{{"type":"ContainersReady","status":"True"}},{{"type":"PodScheduled","status":"True"}}],
"containerStatuses":[{{"name":"web","ready":true,"restartCount":0,"image":"registry.example.com/web:v1.2.3","imageID":"sha256:abcdef","containerID":"containerd://0123456789abcdef",
"state":{{"running":{{"startedAt":"2026-01-01T00:00:03Z"}}}}}}]}}}}"#,
        rv = 100_000 + i,
        node = i % 16,
        a = i / 250,
        b = i % 250
    )
}

fn live() -> isize {
    LIVE.with(Cell::get)
}

#[test]
fn trimmed_pod_costs_under_one_kib_and_a_fraction_of_the_full_object() {
    const N: usize = 2000;
    let docs: Vec<String> = (0..N).map(full_pod).collect();
    let before = live();
    let pods: Vec<Pod> = docs
        .iter()
        .map(|d| serde_json::from_str(d).expect("pod"))
        .collect();
    let trimmed = (live() - before) as f64 / N as f64;
    let before = live();
    let values: Vec<serde_json::Value> = docs
        .iter()
        .map(|d| serde_json::from_str(d).expect("value"))
        .collect();
    let full = (live() - before) as f64 / N as f64;
    println!(
        "{{\"pods\":{N},\"bytes_per_pod\":{trimmed:.0},\"size_of_pod\":{},\"bytes_per_pod_full_object\":{full:.0}}}",
        std::mem::size_of::<Pod>()
    );
    assert!(pods
        .iter()
        .all(|p| p.ports.len() == 2 && p.metadata.labels.len() == 5));
    assert!(trimmed <= 1024.0, "trimmed pod costs {trimmed} bytes");
    assert!(full > 4.0 * trimmed, "full {full} vs trimmed {trimmed}");
    drop(values);
}
