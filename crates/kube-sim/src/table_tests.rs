use super::*;
use serde_json::json;

fn at(secs_ago: u64) -> (SystemTime, String) {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let t = now - Duration::from_secs(secs_ago);
    let ts = jiff::Timestamp::try_from(t).expect("ts").to_string();
    (now, ts)
}

#[test]
fn accept_header_negotiation() {
    let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    let cases = [
        (Some(kubectl), Some("v1")),
        (Some("application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json"), Some("v1beta1")),
        (Some("application/json"), None),
        (None, None),
        (Some("application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io,application/json"), None),
        (Some("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io"), Some("v1")),
    ];
    for (accept, want) in cases {
        assert_eq!(wanted(accept), want, "{accept:?}");
    }
}

#[test]
fn human_durations_as_apimachinery_prints_them() {
    let cases = [
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600 - 1, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 60 * 7, "3h7m"),
        (8 * 3600, "8h"),
        (47 * 3600, "47h"),
        (48 * 3600, "2d"),
        (50 * 3600, "2d2h"),
        (8 * 24 * 3600, "8d"),
        (2 * 365 * 24 * 3600, "2y"),
        (2 * 365 * 24 * 3600 + 24 * 3600, "2y1d"),
        (9 * 365 * 24 * 3600, "9y"),
    ];
    for (secs, want) in cases {
        assert_eq!(
            human_duration(Duration::from_secs(secs), false),
            want,
            "{secs}"
        );
    }
    assert_eq!(human_duration(Duration::from_millis(500), true), "0s");
    assert_eq!(human_duration(Duration::from_secs(5), true), "<invalid>");
}

fn pod(extra: Value, ts: &str) -> Value {
    let mut p = json!({
        "metadata": {"name": "web-0", "namespace": "default", "creationTimestamp": ts},
        "spec": {"nodeName": "n1", "containers": [{"name": "a"}, {"name": "b"}]},
        "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.5"}, {"ip": "fd00::5"}],
                   "conditions": [{"type": "Ready", "status": "True"}],
                   "containerStatuses": [
                       {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}},
                       {"name": "b", "ready": true, "restartCount": 2, "state": {"running": {}}}]}
    });
    merge(&mut p, extra);
    p
}

fn merge(a: &mut Value, b: Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
}

fn strs(cells: &[Value]) -> Vec<String> {
    cells
        .iter()
        .map(|c| match c {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

#[test]
fn pod_rows_follow_print_pod() {
    let (now, ts) = at(125);
    // (changes, READY, STATUS, RESTARTS, IP, NODE, READINESS GATES)
    let cases: Vec<(Value, [&str; 6])> = vec![
        (
            json!({}),
            ["2/2", "Running", "2", "10.0.0.5", "n1", "<none>"],
        ),
        (
            json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}),
            ["2/2", "Terminating", "2", "10.0.0.5", "n1", "<none>"],
        ),
        (
            json!({"status": {"phase": "Pending", "podIPs": [], "containerStatuses": [
                {"name": "a", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}},
                {"name": "b", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]},
                   "spec": {"nodeName": ""}}),
            [
                "0/2",
                "ContainerCreating",
                "0",
                "<none>",
                "<none>",
                "<none>",
            ],
        ),
        (
            json!({"spec": {"initContainers": [{"name": "init"}]},
                   "status": {"initContainerStatuses": [{"name": "init", "restartCount": 1,
                       "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}}),
            [
                "0/2",
                "Init:CrashLoopBackOff",
                "1",
                "10.0.0.5",
                "n1",
                "<none>",
            ],
        ),
        (
            json!({"spec": {"initContainers": [{"name": "init"}]},
                   "status": {"initContainerStatuses": [{"name": "init", "restartCount": 0, "state": {"running": {}}}]}}),
            ["0/2", "Init:0/1", "0", "10.0.0.5", "n1", "<none>"],
        ),
        (
            json!({"status": {"phase": "Succeeded", "containerStatuses": [
                {"name": "a", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                {"name": "b", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}}),
            ["0/2", "Completed", "0", "10.0.0.5", "n1", "<none>"],
        ),
        (
            json!({"spec": {"readinessGates": [{"conditionType": "x/gate"}]},
                   "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "x/gate", "status": "False"}]}}),
            ["2/2", "Running", "2", "10.0.0.5", "n1", "0/1"],
        ),
    ];
    for (i, (changes, want)) in cases.into_iter().enumerate() {
        let (c, _) = cells("pods", &pod(changes, &ts), now);
        let c = strs(&c);
        assert_eq!(c[0], "web-0");
        assert_eq!(
            [&c[1], &c[2], &c[3], &c[5], &c[6], &c[8]],
            want.map(String::from).each_ref(),
            "case {i}: {c:?}"
        );
        assert_eq!(c[4], "2m5s", "AGE");
        assert_eq!(c[7], "<none>", "NOMINATED NODE");
    }
    let (_, cond) = cells(
        "pods",
        &pod(json!({"status": {"phase": "Failed"}}), &ts),
        now,
    );
    assert_eq!(cond.expect("row condition")[0]["reason"], "Failed");
}

#[test]
fn service_endpoint_slice_node_lease_namespace_event_rows() {
    let (now, ts) = at(30);
    let m = |name: &str| json!({"name": name, "namespace": "default", "creationTimestamp": ts});
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "services",
            json!({"metadata": m("web"), "spec": {"type": "ClusterIP", "clusterIPs": ["10.96.0.10"],
                   "selector": {"tier": "fe", "app": "web"},
                   "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}}),
            vec![
                "web",
                "ClusterIP",
                "10.96.0.10",
                "<none>",
                "80/TCP,53/UDP",
                "30s",
                "app=web,tier=fe",
            ],
        ),
        (
            "services",
            json!({"metadata": m("np"), "spec": {"type": "NodePort", "clusterIPs": ["10.96.0.11"],
                   "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]}}),
            vec![
                "np",
                "NodePort",
                "10.96.0.11",
                "<none>",
                "80:30080/TCP",
                "30s",
                "<none>",
            ],
        ),
        (
            "services",
            json!({"metadata": m("lb"), "spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.0.12"],
                   "ports": [{"port": 443, "nodePort": 31443, "protocol": "TCP"}]}}),
            vec![
                "lb",
                "LoadBalancer",
                "10.96.0.12",
                "<pending>",
                "443:31443/TCP",
                "30s",
                "<none>",
            ],
        ),
        (
            "services",
            json!({"metadata": m("ext"), "spec": {"type": "ExternalName", "externalName": "example.com"}}),
            vec![
                "ext",
                "ExternalName",
                "<none>",
                "example.com",
                "<none>",
                "30s",
                "<none>",
            ],
        ),
        (
            "endpoints",
            json!({"metadata": m("web"), "subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "10.0.0.3"}, {"ip": "10.0.0.4"}],
                   "notReadyAddresses": [{"ip": "10.0.0.9"}], "ports": [{"port": 8080}]}]}),
            vec![
                "web",
                "10.0.0.1:8080,10.0.0.2:8080,10.0.0.3:8080 + 1 more...",
                "30s",
            ],
        ),
        (
            "endpoints",
            json!({"metadata": m("v6"), "subsets": [{"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 80}]}]}),
            vec!["v6", "[fd00::1]:80", "30s"],
        ),
        (
            "endpoints",
            json!({"metadata": m("none")}),
            vec!["none", "<none>", "30s"],
        ),
        (
            "endpoints",
            json!({"metadata": m("headless"), "subsets": [{"addresses": [{"ip": "10.0.0.1"}]}]}),
            vec!["headless", "10.0.0.1", "30s"],
        ),
        (
            "endpointslices",
            json!({"metadata": m("web-abc"), "addressType": "IPv4",
                   "ports": [{"name": "http", "port": 80}, {"name": "m", "port": 9090}, {"name": "x"}, {"port": 1}],
                   "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]}]}),
            vec![
                "web-abc",
                "IPv4",
                "80,9090,x + 1 more...",
                "10.0.0.1,10.0.0.2",
                "30s",
            ],
        ),
        (
            "endpointslices",
            json!({"metadata": m("empty"), "addressType": "IPv6", "ports": [], "endpoints": []}),
            vec!["empty", "IPv6", "<unset>", "<unset>", "30s"],
        ),
        (
            "nodes",
            json!({"metadata": {"name": "n1", "creationTimestamp": ts,
                                "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "edge"}},
                   "spec": {"unschedulable": true},
                   "status": {"conditions": [{"type": "Ready", "status": "False"}],
                              "addresses": [{"type": "InternalIP", "address": "192.0.2.1"}],
                              "nodeInfo": {"kubeletVersion": "v1.34.0", "osImage": "Debian"}}}),
            vec![
                "n1",
                "NotReady,SchedulingDisabled",
                "control-plane,edge",
                "30s",
                "v1.34.0",
                "192.0.2.1",
                "<none>",
                "Debian",
                "<unknown>",
                "<unknown>",
            ],
        ),
        (
            "namespaces",
            json!({"metadata": {"name": "default", "creationTimestamp": ts}, "status": {"phase": "Active"}}),
            vec!["default", "Active", "30s"],
        ),
        (
            "leases",
            json!({"metadata": m("endpointd"), "spec": {"holderIdentity": "node-a_1"}}),
            vec!["endpointd", "node-a_1", "30s"],
        ),
        (
            "events",
            json!({"metadata": m("web.1"), "type": "Warning", "reason": "FailedToUpdateEndpoint",
                   "involvedObject": {"kind": "Endpoints", "name": "web"}, "source": {"component": "endpoint-controller"},
                   "message": " boom ", "firstTimestamp": ts, "lastTimestamp": ts, "count": 3}),
            vec![
                "30s",
                "Warning",
                "FailedToUpdateEndpoint",
                "endpoints/web",
                "",
                "endpoint-controller",
                "boom",
                "30s",
                "3",
                "web.1",
            ],
        ),
        (
            "events",
            json!({"metadata": m("web.2"), "type": "Normal", "reason": "TopologyAwareHintsEnabled",
                   "regarding": {"kind": "Service", "name": "web"}, "reportingController": "endpoint-slice-controller",
                   "reportingInstance": "node-a", "note": "on", "eventTime": "2026-01-01T00:00:00.000000Z",
                   "series": {"count": 4, "lastObservedTime": ts}}),
            vec![
                "30s",
                "Normal",
                "TopologyAwareHintsEnabled",
                "service/web",
                "",
                "endpoint-slice-controller, node-a",
                "on",
                "<unknown>",
                "4",
                "web.2",
            ],
        ),
    ];
    for (i, (resource, obj, want)) in cases.into_iter().enumerate() {
        let (c, _) = cells(resource, &obj, now);
        let got = strs(&c);
        assert_eq!(
            got.len(),
            columns(resource).len(),
            "{resource}: one cell per column"
        );
        let want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        if resource == "events" && obj.get("eventTime").is_some() {
            // First seen comes from eventTime (far in the past here).
            assert_eq!(got[..7], want[..7], "case {i}");
            assert_eq!(got[8..], want[8..], "case {i}");
        } else {
            assert_eq!(got, want, "case {i} ({resource})");
        }
    }
}

#[test]
fn tables_carry_columns_rows_and_the_object_as_asked() {
    let (now, ts) = at(5);
    let p = pod(json!({}), &ts);
    let t = table(
        "pods",
        "v1",
        json!({"resourceVersion": "7"}),
        std::slice::from_ref(&p),
        Include::Metadata,
        true,
        now,
    );
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(t["metadata"]["resourceVersion"], "7");
    let names: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates"
        ]
    );
    assert_eq!(t["columnDefinitions"][5]["priority"], 1);
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(t["rows"][0]["object"]["metadata"]["name"], "web-0");
    let full = table(
        "pods",
        "v1beta1",
        json!({}),
        std::slice::from_ref(&p),
        Include::Object,
        false,
        now,
    );
    assert_eq!(full["apiVersion"], "meta.k8s.io/v1beta1");
    assert!(
        full.get("columnDefinitions").is_none(),
        "no headers after the first watch event"
    );
    assert_eq!(full["rows"][0]["object"]["spec"]["nodeName"], "n1");
    let none = table("pods", "v1", json!({}), &[p], Include::None, true, now);
    assert!(none["rows"][0].get("object").is_none());
    assert!(Include::parse(Some("Everything")).is_err());
}
