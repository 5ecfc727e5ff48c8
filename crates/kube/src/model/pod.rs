//! The trimmed Pod projection: exactly the fields the Endpoints and
//! EndpointSlice controllers read (docs/behaviour.md#up-a10 to #up-a15, #up-b11 to #up-b13, #up-c3, #up-b30).
//!
//! Owns the mapping from full Pod JSON to [`Pod`]; every other field
//! (managedFields, volumes, env, most of status) is skipped during parsing.
//! Must never grow fields the controllers do not read: this type dominates
//! the daemon's memory.

use super::intern::{shared_thin, IStr, ThinSet, ThinSlice};
use super::meta::{boxed, compact, compact_heap};
use super::service::{IntOrString, Protocol, ServicePort};
use super::{impl_object, Labels, OptTime, Uid, UidStr};
use compact_str::CompactString;
use serde::{Deserialize, Deserializer};

/// A cached Pod.
///
/// Memory (issue 13): short strings (name, resourceVersion, IPs, port
/// names) are inline [`CompactString`]s, the uid a [`super::Uid`] (16
/// bytes inline for a canonical UUID), the namespace and node name are
/// interned [`IStr`]s (one thin pointer each) shared by every pod naming
/// them, the labels and container ports are interned too behind thin
/// pointers (the pods of one ReplicaSet share them), a single pod IP is
/// inline, timestamps are 8-byte [`OptTime`]s, and the rarely set
/// hostname/subdomain sit behind one optional box, so a typical pod is the
/// `Arc` alone (168 bytes inline: a 184-byte request with the counts, a
/// 192-byte glibc chunk) and no allocation of its own.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(from = "PodWire")]
pub struct Pod {
    /// Trimmed metadata (name, namespace, uid, rv, labels, deletionTimestamp).
    pub metadata: PodMeta,
    /// `spec.nodeName` ("" if unscheduled); interned.
    pub node_name: IStr,
    /// `spec.hostname` and `spec.subdomain`; `None` when both are empty.
    /// Read them with [`Pod::hostname`] and [`Pod::subdomain`].
    pub host: Option<Box<PodHost>>,
    /// `status.phase`.
    pub phase: PodPhase,
    /// `status.podIPs[*].ip`; when `podIPs` is absent but the legacy
    /// `status.podIP` is set, that single IP (the API server keeps
    /// `podIP == podIPs[0]`).
    pub pod_ips: PodIps,
    /// The `Ready` condition, if the pod has one.
    pub ready: Option<ReadyCondition>,
    /// Named ports for `FindPort`: every `spec.containers[*].ports[*]` in
    /// order, then those of restartable init containers (sidecars,
    /// `restartPolicy: Always`), matching upstream `podutil.FindPort`'s
    /// search order. Interned (see [`Pod::share_ports`]).
    pub ports: ThinSlice<ContainerPort>,
}

/// A pod's metadata: what the controllers read of it. Unlike
/// [`super::TrimmedMeta`] (Services, Nodes, Namespaces) no annotations (no
/// kept annotation is read from a pod) and no creationTimestamp (upstream
/// reads a pod's Ready lastTransitionTime, never its creation time).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodMeta {
    /// `metadata.name`.
    #[serde(deserialize_with = "compact")]
    pub name: CompactString,
    /// `metadata.namespace` ("" for cluster-scoped objects); interned.
    pub namespace: IStr,
    /// `metadata.uid` (a canonical UUID as 16 bytes inline).
    pub uid: Uid,
    /// `metadata.resourceVersion`.
    #[serde(deserialize_with = "compact")]
    pub resource_version: CompactString,
    /// `metadata.labels` (interned, see [`Labels::shared`]: the pods of
    /// one ReplicaSet share one buffer).
    #[serde(deserialize_with = "shared_labels")]
    pub labels: Labels,
    /// `metadata.deletionTimestamp` (8 bytes; `.get()` for the `Time`).
    pub deletion_timestamp: OptTime,
}

impl PodMeta {
    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// `metadata.namespace`, `None` if empty.
    pub fn namespace(&self) -> Option<&str> {
        (!self.namespace.is_empty()).then_some(&*self.namespace)
    }
    /// `metadata.resourceVersion`.
    pub fn resource_version(&self) -> &str {
        &self.resource_version
    }
    /// `metadata.uid`.
    pub fn uid(&self) -> UidStr<'_> {
        self.uid.as_str()
    }
    /// Heap bytes owned (for memory accounting). The interned namespace
    /// and labels are shared, so not counted per pod.
    pub fn heap_bytes(&self) -> usize {
        compact_heap(&self.name) + self.uid.heap_bytes() + compact_heap(&self.resource_version)
    }
}

fn shared_labels<'de, D: Deserializer<'de>>(d: D) -> Result<Labels, D::Error> {
    Labels::deserialize(d).map(Labels::shared)
}

/// A pod's IPs (`status.podIPs`): one inline (the usual case: 24 bytes,
/// no allocation) or a boxed slice (none, or dual-stack). Reads as a
/// `&[CompactString]`; compares by content.
#[derive(Clone)]
pub enum PodIps {
    /// Exactly one IP, inline.
    One(CompactString),
    /// Zero or several IPs.
    Many(Box<[CompactString]>),
}

impl Default for PodIps {
    fn default() -> PodIps {
        PodIps::Many(Box::default())
    }
}

impl std::ops::Deref for PodIps {
    type Target = [CompactString];
    fn deref(&self) -> &[CompactString] {
        match self {
            PodIps::One(ip) => std::slice::from_ref(ip),
            PodIps::Many(ips) => ips,
        }
    }
}

impl PartialEq for PodIps {
    fn eq(&self, other: &PodIps) -> bool {
        **self == **other
    }
}

impl Eq for PodIps {}

impl std::fmt::Debug for PodIps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl From<Vec<CompactString>> for PodIps {
    fn from(mut v: Vec<CompactString>) -> PodIps {
        match v.pop() {
            Some(ip) if v.is_empty() => PodIps::One(ip),
            Some(ip) => {
                v.push(ip);
                PodIps::Many(v.into_boxed_slice())
            }
            None => PodIps::default(),
        }
    }
}

impl From<Box<[CompactString]>> for PodIps {
    fn from(b: Box<[CompactString]>) -> PodIps {
        b.into_vec().into()
    }
}

impl FromIterator<CompactString> for PodIps {
    fn from_iter<I: IntoIterator<Item = CompactString>>(it: I) -> PodIps {
        it.into_iter().collect::<Vec<_>>().into()
    }
}

/// `spec.hostname` and `spec.subdomain` (set only for pods of StatefulSets
/// and the like, so kept out of line).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodHost {
    /// `spec.hostname`.
    pub hostname: Box<str>,
    /// `spec.subdomain`.
    pub subdomain: Box<str>,
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
    /// `lastTransitionTime` (the trigger time of docs/behaviour.md#up-b30; `.get()` for the
    /// `Time`).
    pub last_transition_time: OptTime,
}

/// One container port, for resolving named `targetPort`s.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ContainerPort {
    /// `name` ("" if unnamed; at most 15 characters when valid, so inline).
    pub name: CompactString,
    /// `containerPort`.
    pub container_port: i32,
    /// `protocol` (defaults to TCP).
    pub protocol: Protocol,
}

impl Pod {
    /// `spec.hostname` ("" if unset).
    pub fn hostname(&self) -> &str {
        self.host.as_ref().map_or("", |h| &h.hostname)
    }

    /// `spec.subdomain` ("" if unset).
    pub fn subdomain(&self) -> &str {
        self.host.as_ref().map_or("", |h| &h.subdomain)
    }

    /// Set `spec.hostname` (for tests and fixtures).
    pub fn set_hostname(&mut self, hostname: &str) {
        let sub = self.subdomain().into();
        self.host = PodHost::new(hostname.into(), sub);
    }

    /// Set `spec.subdomain` (for tests and fixtures).
    pub fn set_subdomain(&mut self, subdomain: &str) {
        let host = self.hostname().into();
        self.host = PodHost::new(host, subdomain.into());
    }

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

    /// The shared (interned) container-port list equal to `ports`.
    pub fn share_ports(ports: Vec<ContainerPort>) -> ThinSlice<ContainerPort> {
        static PORTS: ThinSet<ContainerPort> = std::sync::OnceLock::new();
        shared_thin(&PORTS, ports, ThinSlice::new)
    }

    /// Heap bytes owned by this pod (for the cache-memory benchmark).
    /// (The interned node name, labels and ports are shared, so not
    /// counted per pod.)
    pub fn heap_bytes(&self) -> usize {
        let many = match &self.pod_ips {
            PodIps::One(_) => 0,
            PodIps::Many(ips) => std::mem::size_of_val::<[CompactString]>(ips),
        };
        self.metadata.heap_bytes()
            + self.host.as_ref().map_or(0, |h| {
                std::mem::size_of::<PodHost>() + h.hostname.len() + h.subdomain.len()
            })
            + many
            + self.pod_ips.iter().map(compact_heap).sum::<usize>()
    }
}

impl PodHost {
    /// `None` when both are empty (the common case: no allocation).
    fn new(hostname: Box<str>, subdomain: Box<str>) -> Option<Box<PodHost>> {
        (!hostname.is_empty() || !subdomain.is_empty()).then(|| {
            Box::new(PodHost {
                hostname,
                subdomain,
            })
        })
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

#[derive(Default, Deserialize)]
#[serde(default)]
struct PodWire {
    #[serde(deserialize_with = "null_default")]
    metadata: PodMeta,
    #[serde(deserialize_with = "null_default")]
    spec: SpecWire,
    #[serde(deserialize_with = "null_default")]
    status: StatusWire,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct SpecWire {
    node_name: IStr,
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
    #[serde(deserialize_with = "compact")]
    name: CompactString,
    container_port: i32,
    protocol: Option<String>,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct StatusWire {
    phase: Option<String>,
    #[serde(rename = "podIP")]
    pod_ip: Option<CompactString>,
    #[serde(rename = "podIPs", deserialize_with = "null_default")]
    pod_ips: Vec<PodIpWire>,
    #[serde(deserialize_with = "null_default")]
    conditions: Vec<ConditionWire>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct PodIpWire {
    #[serde(deserialize_with = "compact")]
    ip: CompactString,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ConditionWire {
    #[serde(rename = "type")]
    type_: String,
    status: String,
    last_transition_time: OptTime,
}

impl From<PodWire> for Pod {
    fn from(w: PodWire) -> Pod {
        let sidecars = w
            .spec
            .init_containers
            .into_iter()
            .filter(|c| c.restart_policy.as_deref() == Some("Always"));
        let ports: Vec<ContainerPort> = w
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
        let mut pod_ips: Vec<CompactString> = w
            .status
            .pod_ips
            .into_iter()
            .filter(|p| !p.ip.is_empty())
            .map(|p| p.ip)
            .collect();
        if pod_ips.is_empty() {
            pod_ips.extend(w.status.pod_ip.filter(|ip| !ip.is_empty()));
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
            host: PodHost::new(w.spec.hostname, w.spec.subdomain),
            phase: PodPhase::parse(w.status.phase.as_deref().unwrap_or("")),
            pod_ips: pod_ips.into(),
            ready,
            ports: Pod::share_ports(ports),
        }
    }
}
