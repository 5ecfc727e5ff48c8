//! The trimmed Pod projection: exactly the fields the Endpoints and
//! EndpointSlice controllers read (upstream-spec A10–A15, B11–B13, C3, B30).
//!
//! Owns the mapping from full Pod JSON to [`Pod`]; every other field
//! (managedFields, volumes, env, most of status) is skipped during parsing.
//! Must never grow fields the controllers do not read: this type dominates
//! the daemon's memory.

use super::meta::{boxed, TrimmedMeta};
use super::service::{IntOrString, Protocol, ServicePort};
use super::{impl_object, Time};
use serde::{Deserialize, Deserializer};

/// A cached Pod.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(from = "PodWire")]
pub struct Pod {
    /// Trimmed metadata (name, namespace, uid, rv, labels, deletionTimestamp).
    pub metadata: TrimmedMeta,
    /// `spec.nodeName` ("" if unscheduled).
    pub node_name: Box<str>,
    /// `spec.hostname`.
    pub hostname: Box<str>,
    /// `spec.subdomain`.
    pub subdomain: Box<str>,
    /// `status.phase`.
    pub phase: PodPhase,
    /// `status.podIPs[*].ip`; when `podIPs` is absent but the legacy
    /// `status.podIP` is set, that single IP (the API server keeps
    /// `podIP == podIPs[0]`).
    pub pod_ips: Box<[Box<str>]>,
    /// The `Ready` condition, if the pod has one.
    pub ready: Option<ReadyCondition>,
    /// Named ports for `FindPort`: every `spec.containers[*].ports[*]` in
    /// order, then those of restartable init containers (sidecars,
    /// `restartPolicy: Always`), matching upstream `podutil.FindPort`'s
    /// search order.
    pub ports: Box<[ContainerPort]>,
}

impl_object!(Pod);

/// `status.phase`. An empty or unrecognised phase maps to `Unknown`
/// (upstream only tests for `Succeeded`/`Failed`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PodPhase {
    /// Accepted, not all containers running yet.
    Pending,
    /// Bound and running.
    Running,
    /// All containers terminated successfully.
    Succeeded,
    /// All containers terminated, at least one failed.
    Failed,
    /// Unknown, empty or unrecognised.
    #[default]
    Unknown,
}

impl PodPhase {
    fn parse(s: &str) -> PodPhase {
        match s {
            "Pending" => PodPhase::Pending,
            "Running" => PodPhase::Running,
            "Succeeded" => PodPhase::Succeeded,
            "Failed" => PodPhase::Failed,
            _ => PodPhase::Unknown,
        }
    }
    /// Whether the pod has terminated (`Succeeded` or `Failed`).
    pub fn is_terminal(self) -> bool {
        matches!(self, PodPhase::Succeeded | PodPhase::Failed)
    }
}

/// The pod's `Ready` condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadyCondition {
    /// `status == "True"`.
    pub is_true: bool,
    /// `lastTransitionTime` (the trigger time of B30).
    pub last_transition_time: Option<Time>,
}

/// One container port, for resolving named `targetPort`s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerPort {
    /// `name` ("" if unnamed).
    pub name: Box<str>,
    /// `containerPort`.
    pub container_port: i32,
    /// `protocol` (defaults to TCP).
    pub protocol: Protocol,
}

impl Pod {
    /// Whether the Ready condition is present and `True` (upstream
    /// `podutil.IsPodReady`).
    pub fn is_ready(&self) -> bool {
        self.ready.is_some_and(|r| r.is_true)
    }

    /// Upstream `podutil.FindPort` (`pkg/api/v1/pod/util.go`): an integer
    /// `targetPort` is returned as is; a name is looked up in the container
    /// ports (containers first, then sidecars) with the service port's
    /// protocol, first match wins. `None`: no suitable port.
    pub fn find_port(&self, svc_port: &ServicePort) -> Option<i32> {
        match &svc_port.target_port {
            IntOrString::Int(p) => Some(*p),
            IntOrString::String(name) => self
                .ports
                .iter()
                .find(|c| c.name == *name && c.protocol == svc_port.protocol)
                .map(|c| c.container_port),
        }
    }

    /// Heap bytes owned by this pod (for the cache-memory benchmark).
    pub fn heap_bytes(&self) -> usize {
        self.metadata.heap_bytes()
            + self.node_name.len()
            + self.hostname.len()
            + self.subdomain.len()
            + self.pod_ips.len() * std::mem::size_of::<Box<str>>()
            + self.pod_ips.iter().map(|s| s.len()).sum::<usize>()
            + self.ports.len() * std::mem::size_of::<ContainerPort>()
            + self.ports.iter().map(|p| p.name.len()).sum::<usize>()
    }
}

/// Deserialize a possibly-null value into its default.
pub(crate) fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Deserialize a possibly-null array into a `Vec` without spare capacity:
/// a JSON array has no length hint, so the `Vec` grows by doubling and a
/// cached 10-address Endpoints subset would keep room for 16.
pub(crate) fn null_default_vec<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let mut v = Option::<Vec<T>>::deserialize(d)?.unwrap_or_default();
    v.shrink_to_fit();
    Ok(v)
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct PodWire {
    #[serde(deserialize_with = "null_default")]
    metadata: TrimmedMeta,
    #[serde(deserialize_with = "null_default")]
    spec: SpecWire,
    #[serde(deserialize_with = "null_default")]
    status: StatusWire,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct SpecWire {
    #[serde(deserialize_with = "boxed")]
    node_name: Box<str>,
    #[serde(deserialize_with = "boxed")]
    hostname: Box<str>,
    #[serde(deserialize_with = "boxed")]
    subdomain: Box<str>,
    #[serde(deserialize_with = "null_default")]
    containers: Vec<ContainerWire>,
    #[serde(deserialize_with = "null_default")]
    init_containers: Vec<ContainerWire>,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ContainerWire {
    #[serde(deserialize_with = "null_default")]
    ports: Vec<PortWire>,
    restart_policy: Option<String>,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct PortWire {
    #[serde(deserialize_with = "boxed")]
    name: Box<str>,
    container_port: i32,
    protocol: Option<String>,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct StatusWire {
    phase: Option<String>,
    #[serde(rename = "podIP")]
    pod_ip: Option<String>,
    #[serde(rename = "podIPs", deserialize_with = "null_default")]
    pod_ips: Vec<PodIpWire>,
    #[serde(deserialize_with = "null_default")]
    conditions: Vec<ConditionWire>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct PodIpWire {
    ip: String,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ConditionWire {
    #[serde(rename = "type")]
    type_: String,
    status: String,
    last_transition_time: Option<Time>,
}

impl From<PodWire> for Pod {
    fn from(w: PodWire) -> Pod {
        let sidecars = w
            .spec
            .init_containers
            .into_iter()
            .filter(|c| c.restart_policy.as_deref() == Some("Always"));
        let ports: Box<[ContainerPort]> = w
            .spec
            .containers
            .into_iter()
            .chain(sidecars)
            .flat_map(|c| c.ports)
            .map(|p| ContainerPort {
                name: p.name,
                container_port: p.container_port,
                protocol: Protocol::parse(p.protocol.as_deref().unwrap_or("TCP")),
            })
            .collect();
        let mut pod_ips: Vec<Box<str>> = w
            .status
            .pod_ips
            .into_iter()
            .filter(|p| !p.ip.is_empty())
            .map(|p| p.ip.into_boxed_str())
            .collect();
        if pod_ips.is_empty() {
            pod_ips.extend(w.status.pod_ip.filter(|ip| !ip.is_empty()).map(Into::into));
        }
        let ready = w
            .status
            .conditions
            .into_iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| ReadyCondition {
                is_true: c.status == "True",
                last_transition_time: c.last_transition_time,
            });
        Pod {
            metadata: w.metadata,
            node_name: w.spec.node_name,
            hostname: w.spec.hostname,
            subdomain: w.spec.subdomain,
            phase: PodPhase::parse(w.status.phase.as_deref().unwrap_or("")),
            pod_ips: pod_ips.into_boxed_slice(),
            ready,
            ports,
        }
    }
}
