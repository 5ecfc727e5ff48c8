//! Test harness for kube-sim semantics: builds `Request`/`RequestInfo`
//! pairs and drives `sim::rest::handle` directly (no sockets).
#![allow(dead_code)]

use endpointd_base::clock::{FakeClock, SharedClock};
use endpointd_base::httpd::{Body, Request, Response};
use kube_sim::requestinfo::{RequestInfo, Verb};
use kube_sim::rest;
use kube_sim::store::{Store, StoreConfig};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// A store on a fake clock.
pub struct Sim {
    pub store: Arc<Store>,
    pub clock: Arc<FakeClock>,
}

/// A decoded response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
}

impl Sim {
    pub fn new() -> Sim {
        Sim::with(StoreConfig::default())
    }

    pub fn with(cfg: StoreConfig) -> Sim {
        let clock = FakeClock::new();
        let shared: SharedClock = clock.clone();
        Sim {
            store: Store::new(cfg, shared),
            clock,
        }
    }

    /// Send one request; `target` is "group/resource[/sub]" and the
    /// namespace/name come separately.
    #[allow(clippy::too_many_arguments)]
    pub fn raw(
        &self,
        verb: Verb,
        res: &str,
        ns: Option<&str>,
        name: Option<&str>,
        query: &[(&str, &str)],
        body: &str,
        ctype: &str,
    ) -> Response {
        let (gr, sub) = match res.split_once(':') {
            Some((gr, sub)) => (gr, Some(sub.to_string())),
            None => (res, None),
        };
        let (group, resource) = gr.rsplit_once('/').unwrap_or(("", gr));
        let info = RequestInfo {
            verb,
            group: group.to_string(),
            version: "v1".into(),
            resource: resource.to_string(),
            subresource: sub,
            namespace: ns.map(str::to_string),
            name: name.map(str::to_string),
        };
        let method = match verb {
            Verb::Get | Verb::List | Verb::Watch => "GET",
            Verb::Create => "POST",
            Verb::Update => "PUT",
            Verb::Patch => "PATCH",
            Verb::Delete | Verb::DeleteCollection => "DELETE",
        };
        let req = Request {
            method: method.into(),
            path: String::new(),
            query: query
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            headers: vec![("content-type".into(), ctype.into())],
            body: body.as_bytes().to_vec(),
            peer: "127.0.0.1:1".parse().expect("addr"),
            client_cn: None,
        };
        rest::handle(&self.store, &info, &req)
    }

    pub fn call(
        &self,
        verb: Verb,
        res: &str,
        ns: Option<&str>,
        name: Option<&str>,
        query: &[(&str, &str)],
        body: &Value,
    ) -> Reply {
        let b = if body.is_null() {
            String::new()
        } else {
            body.to_string()
        };
        decode(self.raw(verb, res, ns, name, query, &b, "application/json"))
    }

    pub fn create(&self, res: &str, ns: Option<&str>, body: Value) -> Reply {
        self.call(Verb::Create, res, ns, None, &[], &body)
    }

    pub fn get(&self, res: &str, ns: Option<&str>, name: &str) -> Reply {
        self.call(Verb::Get, res, ns, Some(name), &[], &Value::Null)
    }

    pub fn update(&self, res: &str, ns: Option<&str>, name: &str, body: Value) -> Reply {
        self.call(Verb::Update, res, ns, Some(name), &[], &body)
    }

    pub fn delete(&self, res: &str, ns: Option<&str>, name: &str, body: Value) -> Reply {
        self.call(Verb::Delete, res, ns, Some(name), &[], &body)
    }

    pub fn list(&self, res: &str, ns: Option<&str>, query: &[(&str, &str)]) -> Reply {
        self.call(Verb::List, res, ns, None, query, &Value::Null)
    }

    pub fn patch(
        &self,
        res: &str,
        ns: Option<&str>,
        name: &str,
        ctype: &str,
        body: Value,
    ) -> Reply {
        decode(self.raw(
            Verb::Patch,
            res,
            ns,
            Some(name),
            &[],
            &body.to_string(),
            ctype,
        ))
    }

    pub fn watch(&self, res: &str, ns: Option<&str>, query: &[(&str, &str)]) -> Watch {
        let r = self.raw(Verb::Watch, res, ns, None, query, "", "");
        match r.body {
            Body::Stream(rx) => Watch {
                status: r.status,
                rx,
            },
            Body::Full(b) => panic!(
                "watch answered {}: {}",
                r.status,
                String::from_utf8_lossy(&b)
            ),
        }
    }

    /// Wait until `f` holds (the collector runs in the background).
    pub fn eventually(&self, what: &str, f: impl Fn() -> bool) {
        for _ in 0..500 {
            if f() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("timed out waiting for: {what}");
    }
}

pub fn decode(r: Response) -> Reply {
    let body = match r.body {
        Body::Full(b) => serde_json::from_slice(&b)
            .unwrap_or_else(|e| panic!("bad JSON ({e}): {}", String::from_utf8_lossy(&b))),
        Body::Stream(_) => panic!("unexpected stream"),
    };
    Reply {
        status: r.status,
        body,
    }
}

/// An open watch stream.
pub struct Watch {
    pub status: u16,
    pub rx: crossbeam_channel::Receiver<Vec<u8>>,
}

impl Watch {
    /// Next event as (type, object); None when the stream ended or stalled.
    /// Empty chunks (liveness probes the HTTP layer never writes) are skipped.
    pub fn next(&self) -> Option<(String, Value)> {
        let chunk = self.chunk(3000)?;
        assert_eq!(
            chunk.last(),
            Some(&b'\n'),
            "one event per chunk, newline-terminated"
        );
        let v: Value = serde_json::from_slice(&chunk).expect("event JSON");
        Some((
            v["type"].as_str().unwrap_or("").to_string(),
            v["object"].clone(),
        ))
    }

    fn chunk(&self, ms: u64) -> Option<Vec<u8>> {
        let deadline = std::time::Instant::now() + Duration::from_millis(ms);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(c) if c.is_empty() => continue,
                Ok(c) => return Some(c),
                Err(_) => return None,
            }
        }
    }

    /// Next event's (type, name).
    pub fn next_name(&self) -> Option<(String, String)> {
        self.next()
            .map(|(t, o)| (t, o["metadata"]["name"].as_str().unwrap_or("").to_string()))
    }

    /// Whether nothing arrives within `ms`.
    pub fn quiet(&self, ms: u64) -> bool {
        self.chunk(ms).is_none()
    }

    /// Whether the stream ends (all senders dropped) within 3 s.
    pub fn ends(&self) -> bool {
        loop {
            match self.rx.recv_timeout(Duration::from_secs(3)) {
                Ok(_) => continue,
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return true,
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => return false,
            }
        }
    }
}

pub fn pod(name: &str) -> Value {
    serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}})
}

pub fn slice(name: &str, addrs: &[&str]) -> Value {
    let eps: Vec<Value> = addrs
        .iter()
        .map(|a| serde_json::json!({"addresses": [a], "conditions": {"ready": true}}))
        .collect();
    serde_json::json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "labels": {"kubernetes.io/service-name": "svc"}},
        "addressType": "IPv4", "endpoints": eps, "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]})
}

pub const PODS: &str = "pods";
pub const SLICES: &str = "discovery.k8s.io/endpointslices";
pub const NS: Option<&str> = Some("default");
