//! kube-sim semantics over real loopback HTTP (SimServer + ureq): the same
//! paths client-go and kubectl use, including a chunked watch stream.

use kube_sim::server::{SimOptions, SimServer};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::time::Duration;

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}

fn send(a: &ureq::Agent, method: &str, url: &str, ctype: &str, body: &Value) -> (u16, Value) {
    let body = body.to_string();
    let r = match method {
        "POST" => a
            .post(url)
            .header("content-type", ctype)
            .send(body.as_bytes()),
        "PUT" => a
            .put(url)
            .header("content-type", ctype)
            .send(body.as_bytes()),
        "PATCH" => a
            .patch(url)
            .header("content-type", ctype)
            .send(body.as_bytes()),
        "DELETE" => a.delete(url).call(),
        _ => a.get(url).call(),
    };
    let mut r = r.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let status = r.status().as_u16();
    let text = r.body_mut().read_to_string().unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[test]
fn crud_list_and_watch_over_http() {
    let sim = match SimServer::start(SimOptions::default()) {
        Ok(s) => s,
        Err(e) => panic!("start: {e}"),
    };
    let base = sim.url().to_string();
    let a = agent();
    let slices = format!("{base}/apis/discovery.k8s.io/v1/namespaces/default/endpointslices");
    let (code, list) = send(&a, "GET", &slices, "", &Value::Null);
    assert_eq!(code, 200);
    assert_eq!(list["kind"], "EndpointSliceList");
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let watch = agent()
        .get(format!("{base}/apis/discovery.k8s.io/v1/endpointslices?watch=true&resourceVersion={rv}&allowWatchBookmarks=true"))
        .call()
        .unwrap_or_else(|e| panic!("watch: {e}"));
    let mut events = BufReader::new(watch.into_body().into_reader());
    let body = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "s", "labels": {"kubernetes.io/service-name": "svc"}},
        "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]});
    let (code, created) = send(&a, "POST", &slices, "application/json", &body);
    assert_eq!(code, 201, "{created}");
    let mut line = String::new();
    events.read_line(&mut line).unwrap_or_default();
    let ev: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
    assert_eq!(ev["type"], "ADDED");
    assert_eq!(ev["object"]["metadata"]["name"], "s");
    let (code, patched) = send(
        &a,
        "PATCH",
        &format!("{slices}/s"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"extra": "1"}}}),
    );
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["metadata"]["generation"], 2);
    line.clear();
    events.read_line(&mut line).unwrap_or_default();
    assert!(line.contains("\"MODIFIED\""), "{line}");
    let (code, bad) = send(
        &a,
        "POST",
        &slices,
        "application/json",
        &json!({"metadata": {"name": "t"}, "addressType": "IPv5"}),
    );
    assert_eq!(code, 422);
    assert_eq!(bad["details"]["causes"][0]["field"], "addressType");
    let (code, _) = send(&a, "DELETE", &format!("{slices}/s"), "", &Value::Null);
    assert_eq!(code, 200);
    line.clear();
    events.read_line(&mut line).unwrap_or_default();
    assert!(line.contains("\"DELETED\""), "{line}");
    sim.stop();
}
