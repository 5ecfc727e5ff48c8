//! `meta.k8s.io` Table output (issue 11, item 1): what kube-apiserver
//! answers when kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io`
//! — the columns and cell formats of upstream's printers
//! (`pkg/printers/internalversion/printers.go`) for every resource kube-sim
//! serves, with `-o wide`'s priority-1 columns, `includeObject`, and one-row
//! tables per watch event.
//!
//! Works on the JSON a request without Table would have returned, so a
//! request without the Table Accept header is unchanged byte for byte. Must
//! never touch the store; time only through the `now` it is given.

use endpointd_base::httpd::{Body, Response};
use serde_json::{json, Map, Value};
use std::time::{Duration, SystemTime};

/// Which Table version the `Accept` header asks for, if the first media
/// type kube-sim can serve is a Table (`v1` or `v1beta1`).
pub fn wanted(accept: Option<&str>) -> Option<&'static str> {
    for media in accept?.split(',') {
        let mut parts = media.split(';').map(str::trim);
        let base = parts.next().unwrap_or("");
        if !matches!(base, "application/json" | "*/*" | "application/*") {
            continue;
        }
        let params: Vec<(&str, &str)> = parts.filter_map(|p| p.split_once('=')).collect();
        let get = |k: &str| params.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
        match (get("as"), get("g"), get("v")) {
            (None, _, _) => return None,
            (Some("Table"), Some("meta.k8s.io"), Some("v1")) => return Some("v1"),
            (Some("Table"), Some("meta.k8s.io"), Some("v1beta1")) => return Some("v1beta1"),
            // Another `as=` (PartialObjectMetadata, …) or version: not ours;
            // try the next media type.
            _ => continue,
        }
    }
    None
}

/// What a row carries as `object` (`includeObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Include {
    /// Nothing.
    None,
    /// The object's metadata as a `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
}

/// An `includeObject` value other than None, Metadata and Object (the value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncludeError(pub String);

impl std::fmt::Display for IncludeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "includeObject: Unsupported value: {:?}: supported values: \"None\", \"Metadata\", \"Object\"",
            self.0
        )
    }
}

impl std::error::Error for IncludeError {}

impl Include {
    /// From the `includeObject` query parameter.
    pub fn parse(v: Option<&str>) -> Result<Include, IncludeError> {
        match v {
            None | Some("") | Some("Metadata") => Ok(Include::Metadata),
            Some("None") => Ok(Include::None),
            Some("Object") => Ok(Include::Object),
            Some(other) => Err(IncludeError(other.to_string())),
        }
    }
}

const NAME_DOC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

fn col(name: &str, ty: &str, format: &str, desc: &str, priority: i32) -> Value {
    json!({"name": name, "type": ty, "format": format, "description": desc, "priority": priority})
}

fn name_col() -> Value {
    col("Name", "string", "name", NAME_DOC, 0)
}

fn age_col() -> Value {
    col("Age", "string", "", AGE_DOC, 0)
}

/// The column definitions of `resource` (plural), as upstream's printers
/// define them.
pub fn columns(resource: &str) -> Vec<Value> {
    let s = |n: &str, d: &str| col(n, "string", "", d, 0);
    let wide = |n: &str, d: &str| col(n, "string", "", d, 1);
    match resource {
        "pods" => vec![
            name_col(),
            s("Ready", "The aggregate readiness state of this pod for accepting traffic."),
            s("Status", "The aggregate status of the containers in this pod."),
            s("Restarts", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
            age_col(),
            wide("IP", "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated."),
            wide("Node", "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName."),
            wide("Nominated Node", "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods."),
            wide("Readiness Gates", "If specified, all readiness gates will be evaluated for pod readiness."),
        ],
        "services" => vec![
            name_col(),
            s("Type", "type determines how the Service is exposed."),
            s("Cluster-IP", "clusterIP is the IP address of the service and is usually assigned randomly."),
            s("External-IP", "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service."),
            s("Port(s)", "The list of ports that are exposed by this service."),
            age_col(),
            wide("Selector", "Route service traffic to pods with label keys and values matching this selector."),
        ],
        "endpoints" => vec![
            name_col(),
            s("Endpoints", "The set of all endpoints is the union of all subsets."),
            age_col(),
        ],
        "endpointslices" => vec![
            name_col(),
            s("AddressType", "addressType specifies the type of address carried by this EndpointSlice."),
            s("Ports", "ports specifies the list of network ports exposed by each endpoint in this slice."),
            s("Endpoints", "endpoints is a list of unique endpoints in this slice."),
            age_col(),
        ],
        "nodes" => vec![
            name_col(),
            s("Status", "The status of the node"),
            s("Roles", "The roles of the node"),
            age_col(),
            s("Version", "Kubelet Version reported by the node."),
            wide("Internal-IP", "List of addresses reachable to the node."),
            wide("External-IP", "List of addresses reachable to the node."),
            wide("OS-Image", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."),
            wide("Kernel-Version", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."),
            wide("Container-Runtime", "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2)."),
        ],
        "namespaces" => vec![name_col(), s("Status", "The status of the namespace"), age_col()],
        "leases" => vec![
            name_col(),
            s("Holder", "holderIdentity contains the identity of the holder of a current lease."),
            age_col(),
        ],
        "events" => vec![
            s("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
            s("Type", "Type of this event (Normal, Warning), new types could be added in the future"),
            s("Reason", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
            s("Object", "The object that this event is about."),
            wide("Subobject", "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement."),
            wide("Source", "The component reporting this event. Should be a short machine understandable string."),
            s("Message", "A human-readable description of the status of this operation."),
            wide("First Seen", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"),
            wide("Count", "The number of times this event has occurred."),
            col("Name", "string", "name", NAME_DOC, 1),
        ],
        _ => vec![name_col(), age_col()],
    }
}

/// apimachinery's `duration.HumanDuration`.
pub fn human_duration(d: Duration, negative: bool) -> String {
    if negative {
        return if d > Duration::from_secs(1) {
            "<invalid>".into()
        } else {
            "0s".into()
        };
    }
    let secs = d.as_secs();
    if secs < 60 * 2 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        let s = secs % 60;
        return match s {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return match m {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return match h {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return match dy {
            0 => format!("{}y", hours / 24 / 365),
            dy => format!("{}y{dy}d", hours / 24 / 365),
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// Upstream `translateTimestampSince`: `<unknown>` for a missing time.
fn since(ts: Option<&str>, now: SystemTime) -> String {
    let Some(t) = ts.and_then(|s| s.parse::<jiff::Timestamp>().ok()) else {
        return "<unknown>".into();
    };
    let at: SystemTime = t.into();
    match now.duration_since(at) {
        Ok(d) => human_duration(d, false),
        Err(e) => human_duration(e.duration(), true),
    }
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn arr<'a>(v: &'a Value, ptr: &str) -> &'a [Value] {
    v.pointer(ptr)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn none_if_empty(s: &str) -> String {
    if s.is_empty() {
        "<none>".into()
    } else {
        s.to_string()
    }
}

fn age(o: &Value, now: SystemTime) -> String {
    since(
        o.pointer("/metadata/creationTimestamp")
            .and_then(Value::as_str),
        now,
    )
}

/// Upstream `printPod` (cells and row conditions).
fn pod_row(o: &Value, now: SystemTime) -> (Vec<Value>, Option<Value>) {
    let phase = str_at(o, "/status/phase");
    let mut reason = match str_at(o, "/status/reason") {
        "" => phase.to_string(),
        r => r.to_string(),
    };
    let conditions = arr(o, "/status/conditions");
    if conditions
        .iter()
        .any(|c| c["type"] == "PodScheduled" && c["reason"] == "SchedulingGated")
    {
        reason = "SchedulingGated".into();
    }
    let init_specs = arr(o, "/spec/initContainers");
    let restartable = |name: &str| {
        init_specs
            .iter()
            .any(|c| c["name"] == name && c["restartPolicy"] == "Always")
    };
    let total = arr(o, "/spec/containers").len()
        + init_specs
            .iter()
            .filter(|c| c["restartPolicy"] == "Always")
            .count();
    let mut ready = 0usize;
    let mut restarts = 0i64;
    let mut sidecar_restarts = 0i64;
    let mut initializing = false;
    let init_statuses = arr(o, "/status/initContainerStatuses");
    for (i, c) in init_statuses.iter().enumerate() {
        let rc = c["restartCount"].as_i64().unwrap_or(0);
        restarts += rc;
        let name = c["name"].as_str().unwrap_or("");
        if restartable(name) {
            sidecar_restarts += rc;
        }
        let term = &c["state"]["terminated"];
        let waiting = &c["state"]["waiting"];
        if term.is_object() && term["exitCode"].as_i64() == Some(0) {
            continue;
        }
        if restartable(name) && c["started"].as_bool() == Some(true) {
            if c["ready"].as_bool() == Some(true) {
                ready += 1;
            }
            continue;
        }
        if term.is_object() {
            reason = match term["reason"].as_str().unwrap_or("") {
                "" => match term["signal"].as_i64().unwrap_or(0) {
                    0 => format!("Init:ExitCode:{}", term["exitCode"].as_i64().unwrap_or(0)),
                    s => format!("Init:Signal:{s}"),
                },
                r => format!("Init:{r}"),
            };
        } else if waiting.is_object()
            && !waiting["reason"].as_str().unwrap_or("").is_empty()
            && waiting["reason"] != "PodInitializing"
        {
            reason = format!("Init:{}", waiting["reason"].as_str().unwrap_or(""));
        } else {
            reason = format!("Init:{i}/{}", init_specs.len());
        }
        initializing = true;
        break;
    }
    let initialized = conditions
        .iter()
        .any(|c| c["type"] == "Initialized" && c["status"] == "True");
    if !initializing || initialized {
        restarts = sidecar_restarts;
        let mut has_running = false;
        for c in arr(o, "/status/containerStatuses").iter().rev() {
            restarts += c["restartCount"].as_i64().unwrap_or(0);
            let waiting = &c["state"]["waiting"];
            let term = &c["state"]["terminated"];
            if waiting.is_object() && !waiting["reason"].as_str().unwrap_or("").is_empty() {
                reason = waiting["reason"].as_str().unwrap_or("").to_string();
            } else if term.is_object() && !term["reason"].as_str().unwrap_or("").is_empty() {
                reason = term["reason"].as_str().unwrap_or("").to_string();
            } else if term.is_object() {
                reason = match term["signal"].as_i64().unwrap_or(0) {
                    0 => format!("ExitCode:{}", term["exitCode"].as_i64().unwrap_or(0)),
                    s => format!("Signal:{s}"),
                };
            } else if c["ready"].as_bool() == Some(true) && c["state"]["running"].is_object() {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = conditions
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.into();
        }
    }
    let deleting = o
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null());
    if deleting && str_at(o, "/status/reason") == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting && !matches!(phase, "Succeeded" | "Failed") {
        reason = "Terminating".into();
    }
    let ip = arr(o, "/status/podIPs")
        .first()
        .and_then(|p| p["ip"].as_str())
        .unwrap_or("");
    let gates = arr(o, "/spec/readinessGates");
    let readiness_gates = match gates.len() {
        0 => "<none>".to_string(),
        n => {
            let true_count = gates
                .iter()
                .filter(|g| {
                    conditions
                        .iter()
                        .find(|c| c["type"] == g["conditionType"])
                        .is_some_and(|c| c["status"] == "True")
                })
                .count();
            format!("{true_count}/{n}")
        }
    };
    let cells = vec![
        json!(str_at(o, "/metadata/name")),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts.to_string()),
        json!(age(o, now)),
        json!(none_if_empty(ip)),
        json!(none_if_empty(str_at(o, "/spec/nodeName"))),
        json!(none_if_empty(str_at(o, "/status/nominatedNodeName"))),
        json!(readiness_gates),
    ];
    let condition = match phase {
        "Succeeded" => Some(
            json!([{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}]),
        ),
        "Failed" => Some(
            json!([{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]),
        ),
        _ => None,
    };
    (cells, condition)
}

fn format_labels(v: &Value) -> String {
    match v.as_object() {
        Some(m) if !m.is_empty() => {
            let mut pairs: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect();
            pairs.sort();
            pairs.join(",")
        }
        _ => "<none>".into(),
    }
}

/// Upstream `printService`.
fn service_row(o: &Value, now: SystemTime) -> Vec<Value> {
    let ty = str_at(o, "/spec/type");
    let cluster_ip = arr(o, "/spec/clusterIPs")
        .first()
        .and_then(Value::as_str)
        .unwrap_or("<none>")
        .to_string();
    let external: Vec<&str> = arr(o, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let lb: Vec<&str> = arr(o, "/status/loadBalancer/ingress")
        .iter()
        .filter_map(|i| {
            i["ip"]
                .as_str()
                .filter(|s| !s.is_empty())
                .or_else(|| i["hostname"].as_str())
        })
        .collect();
    let external_ip = match ty {
        "ClusterIP" | "NodePort" | "" => match external.is_empty() {
            true => "<none>".to_string(),
            false => external.join(","),
        },
        "LoadBalancer" => {
            let mut all: Vec<&str> = lb.clone();
            all.extend(external.iter());
            match all.is_empty() {
                true => "<pending>".into(),
                false => all.join(","),
            }
        }
        "ExternalName" => str_at(o, "/spec/externalName").to_string(),
        _ => "<unknown>".into(),
    };
    let ports: Vec<String> = arr(o, "/spec/ports")
        .iter()
        .map(|p| {
            let proto = p["protocol"].as_str().unwrap_or("TCP");
            let port = p["port"].as_i64().unwrap_or(0);
            match p["nodePort"].as_i64().filter(|n| *n > 0) {
                Some(np) => format!("{port}:{np}/{proto}"),
                None => format!("{port}/{proto}"),
            }
        })
        .collect();
    vec![
        json!(str_at(o, "/metadata/name")),
        json!(ty),
        json!(cluster_ip),
        json!(external_ip),
        json!(match ports.is_empty() {
            true => "<none>".to_string(),
            false => ports.join(","),
        }),
        json!(age(o, now)),
        json!(format_labels(&o["spec"]["selector"])),
    ]
}

fn with_more(list: Vec<String>, count: usize, max: usize, empty: &str) -> String {
    let ret = list.join(",");
    if count > max {
        return format!("{ret} + {} more...", count - max);
    }
    if ret.is_empty() {
        return empty.into();
    }
    ret
}

fn join_host_port(ip: &str, port: i64) -> String {
    match ip.contains(':') {
        true => format!("[{ip}]:{port}"),
        false => format!("{ip}:{port}"),
    }
}

/// Upstream `formatEndpoints` (ready addresses only, at most 3 shown).
fn endpoints_cell(o: &Value) -> String {
    let subsets = arr(o, "/subsets");
    if subsets.is_empty() {
        return "<none>".into();
    }
    let max = 3;
    let mut list = Vec::new();
    let mut count = 0;
    for ss in subsets {
        let addrs = arr(ss, "/addresses");
        let ports = arr(ss, "/ports");
        if ports.is_empty() {
            count += addrs.len();
            for a in addrs {
                if list.len() == max {
                    break;
                }
                list.push(a["ip"].as_str().unwrap_or("").to_string());
            }
            continue;
        }
        for p in ports {
            count += addrs.len();
            for a in addrs {
                if list.len() == max {
                    break;
                }
                list.push(join_host_port(
                    a["ip"].as_str().unwrap_or(""),
                    p["port"].as_i64().unwrap_or(0),
                ));
            }
        }
    }
    // Upstream prints "" (not <none>) when there are subsets without
    // ready addresses.
    with_more(list, count, max, "")
}

/// Upstream `printEndpointSlice`.
fn slice_row(o: &Value, now: SystemTime) -> Vec<Value> {
    let max = 3;
    let ports = arr(o, "/ports");
    let port_list: Vec<String> = ports
        .iter()
        .take(max)
        .map(|p| match (p["port"].as_i64(), p["name"].as_str()) {
            (Some(n), _) => n.to_string(),
            (None, Some(name)) => name.to_string(),
            (None, None) => "*".into(),
        })
        .collect();
    let addrs: Vec<&str> = arr(o, "/endpoints")
        .iter()
        .flat_map(|e| arr(e, "/addresses").iter().filter_map(Value::as_str))
        .collect();
    let ep_list: Vec<String> = addrs.iter().take(max).map(|s| s.to_string()).collect();
    vec![
        json!(str_at(o, "/metadata/name")),
        json!(str_at(o, "/addressType")),
        json!(with_more(port_list, ports.len(), max, "<unset>")),
        json!(with_more(ep_list, addrs.len(), max, "<unset>")),
        json!(age(o, now)),
    ]
}

/// Upstream `printNode`.
fn node_row(o: &Value, now: SystemTime) -> Vec<Value> {
    let mut status: Vec<String> = arr(o, "/status/conditions")
        .iter()
        .filter(|c| c["type"] == "Ready")
        .take(1)
        .map(|c| match c["status"] == "True" {
            true => "Ready".to_string(),
            false => "NotReady".to_string(),
        })
        .collect();
    if status.is_empty() {
        status.push("Unknown".into());
    }
    if o.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled".into());
    }
    let mut roles: Vec<String> = o["metadata"]["labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| match k.strip_prefix("node-role.kubernetes.io/") {
                    Some(r) if !r.is_empty() => Some(r.to_string()),
                    _ if k == "kubernetes.io/role" => {
                        v.as_str().filter(|s| !s.is_empty()).map(str::to_string)
                    }
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    roles.sort();
    roles.dedup();
    let addr = |ty: &str| {
        arr(o, "/status/addresses")
            .iter()
            .find(|a| a["type"] == ty)
            .and_then(|a| a["address"].as_str())
            .unwrap_or("<none>")
            .to_string()
    };
    let info = |k: &str| match str_at(o, &format!("/status/nodeInfo/{k}")) {
        "" => "<unknown>".to_string(),
        v => v.to_string(),
    };
    vec![
        json!(str_at(o, "/metadata/name")),
        json!(status.join(",")),
        json!(match roles.is_empty() {
            true => "<none>".to_string(),
            false => roles.join(","),
        }),
        json!(age(o, now)),
        json!(str_at(o, "/status/nodeInfo/kubeletVersion")),
        json!(addr("InternalIP")),
        json!(addr("ExternalIP")),
        json!(info("osImage")),
        json!(info("kernelVersion")),
        json!(info("containerRuntimeVersion")),
    ]
}

/// Upstream `printEvent`; events.k8s.io/v1 objects are read through their
/// core/v1 field names (`regarding` → `involvedObject`, …) as the API
/// server converts them.
fn event_row(o: &Value, now: SystemTime) -> Vec<Value> {
    let first_or = |core: &str, new: &str| {
        o.pointer(core)
            .filter(|v| !v.is_null())
            .or_else(|| o.pointer(new))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let first_ts = first_or("/firstTimestamp", "/deprecatedFirstTimestamp");
    let first = match first_ts {
        Some(t) => since(Some(t), now),
        None => since(o.pointer("/eventTime").and_then(Value::as_str), now),
    };
    let mut last = match first_or("/lastTimestamp", "/deprecatedLastTimestamp") {
        Some(t) => since(Some(t), now),
        None => first.clone(),
    };
    let mut count = o
        .get("count")
        .or_else(|| o.get("deprecatedCount"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if let Some(series) = o.get("series").filter(|s| s.is_object()) {
        last = since(series["lastObservedTime"].as_str(), now);
        count = series["count"].as_i64().unwrap_or(0);
    } else if count == 0 {
        count = 1;
    }
    let involved = o
        .get("involvedObject")
        .filter(|v| v.is_object())
        .or_else(|| o.get("regarding"))
        .cloned()
        .unwrap_or(Value::Null);
    let kind = involved["kind"].as_str().unwrap_or("").to_lowercase();
    let target = match involved["name"].as_str().unwrap_or("") {
        "" => kind,
        n => format!("{kind}/{n}"),
    };
    let component = first_or("/source/component", "/deprecatedSource/component")
        .or_else(|| o["reportingController"].as_str().filter(|s| !s.is_empty()))
        .unwrap_or("");
    let host = first_or("/source/host", "/deprecatedSource/host")
        .or_else(|| o["reportingInstance"].as_str().filter(|s| !s.is_empty()))
        .unwrap_or("");
    let source = match host {
        "" => component.to_string(),
        h => format!("{component}, {h}"),
    };
    let message = o
        .get("message")
        .or_else(|| o.get("note"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_string();
    vec![
        json!(last),
        json!(str_at(o, "/type")),
        json!(str_at(o, "/reason")),
        json!(target),
        json!(involved["fieldPath"].as_str().unwrap_or("")),
        json!(source),
        json!(message),
        json!(first),
        json!(count),
        json!(str_at(o, "/metadata/name")),
    ]
}

/// The cells of one object (and the row's conditions, for pods).
pub fn cells(resource: &str, o: &Value, now: SystemTime) -> (Vec<Value>, Option<Value>) {
    let name = json!(str_at(o, "/metadata/name"));
    let plain = |v: Vec<Value>| (v, None);
    match resource {
        "pods" => pod_row(o, now),
        "services" => plain(service_row(o, now)),
        "endpoints" => plain(vec![name, json!(endpoints_cell(o)), json!(age(o, now))]),
        "endpointslices" => plain(slice_row(o, now)),
        "nodes" => plain(node_row(o, now)),
        "namespaces" => plain(vec![
            name,
            json!(str_at(o, "/status/phase")),
            json!(age(o, now)),
        ]),
        "leases" => plain(vec![
            name,
            json!(str_at(o, "/spec/holderIdentity")),
            json!(age(o, now)),
        ]),
        "events" => plain(event_row(o, now)),
        _ => plain(vec![name, json!(age(o, now))]),
    }
}

fn row(resource: &str, o: &Value, now: SystemTime, include: Include, version: &str) -> Value {
    let (cells, conditions) = cells(resource, o, now);
    let mut r = Map::new();
    r.insert("cells".into(), Value::Array(cells));
    if let Some(c) = conditions {
        r.insert("conditions".into(), c);
    }
    match include {
        Include::None => {}
        Include::Object => {
            r.insert("object".into(), o.clone());
        }
        Include::Metadata => {
            r.insert(
                "object".into(),
                json!({"kind": "PartialObjectMetadata",
                       "apiVersion": format!("meta.k8s.io/{version}"),
                       "metadata": o.get("metadata").cloned().unwrap_or(json!({}))}),
            );
        }
    }
    Value::Object(r)
}

/// A Table of `items` with the list metadata `meta`; `headers` false for
/// the events of a watch after the first (as the API server does).
pub fn table(
    resource: &str,
    version: &str,
    meta: Value,
    items: &[Value],
    include: Include,
    headers: bool,
    now: SystemTime,
) -> Value {
    let mut t = json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": meta,
        "columnDefinitions": if headers { Value::Array(columns(resource)) } else { Value::Null },
        "rows": items.iter().map(|o| row(resource, o, now, include, version)).collect::<Vec<_>>(),
    });
    if !headers {
        if let Some(m) = t.as_object_mut() {
            m.remove("columnDefinitions");
        }
    }
    t
}

/// Turn a finished GET or LIST response into a Table response; errors
/// (non-2xx) pass through unchanged.
pub fn convert_response(
    resp: Response,
    resource: &str,
    version: &str,
    include: Include,
    now: SystemTime,
) -> Response {
    if !(200..300).contains(&resp.status) {
        return resp;
    }
    let Body::Full(bytes) = &resp.body else {
        return resp;
    };
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
        return resp;
    };
    let t = match v.get("items").and_then(Value::as_array) {
        Some(items) => {
            let meta = v.get("metadata").cloned().unwrap_or(json!({}));
            table(resource, version, meta, items, include, true, now)
        }
        None => {
            let rv = v.pointer("/metadata/resourceVersion").cloned();
            let meta = match rv {
                Some(rv) => json!({"resourceVersion": rv}),
                None => json!({}),
            };
            table(
                resource,
                version,
                meta,
                std::slice::from_ref(&v),
                include,
                true,
                now,
            )
        }
    };
    Response::json(resp.status, t.to_string().into_bytes())
}

/// Wrap a watch stream: each ADDED/MODIFIED/DELETED object becomes a
/// one-row Table (column definitions on the first only); BOOKMARK and
/// ERROR events pass through. A thread per watch moves the frames and ends
/// with either side.
pub fn convert_watch(
    resp: Response,
    resource: &'static str,
    version: &'static str,
    include: Include,
    clock: endpointd_base::clock::SharedClock,
) -> Response {
    let Body::Stream(rx) = resp.body else {
        return resp;
    };
    let (tx, out) = crossbeam_channel::unbounded::<Vec<u8>>();
    let spawned = std::thread::Builder::new()
        .name("sim-table-watch".into())
        .spawn(move || {
            let mut first = true;
            for chunk in rx.iter() {
                if chunk.is_empty() {
                    if tx.send(chunk).is_err() {
                        return;
                    }
                    continue;
                }
                let mut converted = Vec::with_capacity(chunk.len());
                for line in chunk.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                    converted.extend(convert_frame(
                        line,
                        resource,
                        version,
                        include,
                        &mut first,
                        clock.wall(),
                    ));
                }
                if tx.send(converted).is_err() {
                    return;
                }
            }
        });
    match spawned {
        Ok(_) => Response {
            status: resp.status,
            headers: resp.headers,
            body: Body::Stream(out),
        },
        Err(_) => Response::json(
            500,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                   "reason": "InternalError", "code": 500,
                   "message": "cannot start the table watch"})
            .to_string()
            .into_bytes(),
        ),
    }
}

fn convert_frame(
    line: &[u8],
    resource: &str,
    version: &str,
    include: Include,
    first: &mut bool,
    now: SystemTime,
) -> Vec<u8> {
    let mut out = line.to_vec();
    out.push(b'\n');
    let Ok(mut ev) = serde_json::from_slice::<Value>(line) else {
        return out;
    };
    if !matches!(
        ev["type"].as_str(),
        Some("ADDED") | Some("MODIFIED") | Some("DELETED")
    ) {
        return out;
    }
    let obj = ev["object"].take();
    let rv = obj.pointer("/metadata/resourceVersion").cloned();
    let meta = match rv {
        Some(rv) => json!({"resourceVersion": rv}),
        None => json!({}),
    };
    ev["object"] = table(resource, version, meta, &[obj], include, *first, now);
    *first = false;
    let mut v = ev.to_string().into_bytes();
    v.push(b'\n');
    v
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
