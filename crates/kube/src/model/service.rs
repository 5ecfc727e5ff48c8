//! The trimmed Service projection: selector, ports, cluster IPs, families,
//! publishNotReadyAddresses, trafficDistribution and the topology
//! annotations (docs/behaviour.md#up-a7 to #up-a13, #up-b8, #up-b23 to #up-b25), plus the shared
//! [`Protocol`] and [`IntOrString`] value types.
//!
//! An empty selector (`{}`) is no selector (`None`: user-managed endpoints,
//! never touched), as the API defines it ("if empty or not present, … an
//! external process managing its endpoints"): kube-apiserver stores an
//! empty map as none, so kube-controller-manager never sees `{}`; endpointd
//! must not read it as "every pod of the namespace" from any server.

use super::meta::{boxed, opt_boxed, TrimmedMeta};
use super::pod::null_default;
use super::{impl_object, Labels};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A cached Service.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(from = "ServiceWire")]
pub struct Service {
    /// Trimmed metadata (keeps the topology annotations).
    pub metadata: TrimmedMeta,
    /// `spec.selector`: `None` when absent, null or empty (`{}`); never
    /// `Some` of an empty set.
    pub selector: Option<Labels>,
    /// `spec.clusterIP` (`"None"` for headless, "" if unset).
    pub cluster_ip: Box<str>,
    /// `spec.clusterIPs`.
    pub cluster_ips: Box<[Box<str>]>,
    /// `spec.type` ("" if unset; the API server defaults it to ClusterIP).
    pub type_: Box<str>,
    /// `spec.ports`.
    pub ports: Box<[ServicePort]>,
    /// `spec.publishNotReadyAddresses`.
    pub publish_not_ready_addresses: bool,
    /// `spec.ipFamilies` (`IPv4` / `IPv6`).
    pub ip_families: Box<[Box<str>]>,
    /// `spec.externalName`.
    pub external_name: Box<str>,
    /// `spec.trafficDistribution`.
    pub traffic_distribution: Option<Box<str>>,
}

impl_object!(Service, {
    fn selector(&self) -> Option<&Labels> {
        self.selector.as_ref()
    }
});

impl Service {
    /// `clusterIP == "None"`.
    pub fn is_headless(&self) -> bool {
        &*self.cluster_ip == "None"
    }
    /// Upstream `helper.IsServiceIPSet`: clusterIP neither "" nor "None".
    pub fn is_ip_set(&self) -> bool {
        !self.cluster_ip.is_empty() && !self.is_headless()
    }
}

/// One `spec.ports` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ServicePort {
    /// `name` ("" when the Service has a single unnamed port).
    #[serde(deserialize_with = "boxed")]
    pub name: Box<str>,
    /// `protocol` (defaults to TCP).
    #[serde(deserialize_with = "null_default")]
    pub protocol: Protocol,
    /// `port`.
    pub port: i32,
    /// `targetPort` (the API server defaults it to `port`; absent → 0).
    #[serde(deserialize_with = "null_default")]
    pub target_port: IntOrString,
    /// `appProtocol`.
    #[serde(deserialize_with = "opt_boxed")]
    pub app_protocol: Option<Box<str>>,
}

/// L4 protocol of a port.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    /// `TCP` (the default).
    #[default]
    Tcp,
    /// `UDP`.
    Udp,
    /// `SCTP`.
    Sctp,
    /// Anything else, kept verbatim so it still matches only itself.
    Other(Box<str>),
}

impl Protocol {
    /// Parse the wire spelling (case-sensitive, as upstream compares it).
    pub fn parse(s: &str) -> Protocol {
        match s {
            "TCP" => Protocol::Tcp,
            "UDP" => Protocol::Udp,
            "SCTP" => Protocol::Sctp,
            other => Protocol::Other(other.into()),
        }
    }
    /// The wire spelling.
    pub fn as_str(&self) -> &str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
            Protocol::Sctp => "SCTP",
            Protocol::Other(s) => s,
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Protocol {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Protocol {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Protocol, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(Protocol::parse(&s))
    }
}

/// `intstr.IntOrString` (a Service port's `targetPort`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum IntOrString {
    /// A port number.
    Int(i32),
    /// A container port name.
    String(Box<str>),
}

impl Default for IntOrString {
    fn default() -> IntOrString {
        IntOrString::Int(0)
    }
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct ServiceWire {
    #[serde(deserialize_with = "null_default")]
    metadata: TrimmedMeta,
    #[serde(deserialize_with = "null_default")]
    spec: SpecWire,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct SpecWire {
    selector: Option<Labels>,
    #[serde(rename = "clusterIP", deserialize_with = "boxed")]
    cluster_ip: Box<str>,
    #[serde(rename = "clusterIPs", deserialize_with = "null_default")]
    cluster_ips: Vec<String>,
    #[serde(rename = "type", deserialize_with = "boxed")]
    type_: Box<str>,
    #[serde(deserialize_with = "null_default")]
    ports: Vec<ServicePort>,
    #[serde(deserialize_with = "null_default")]
    publish_not_ready_addresses: bool,
    #[serde(deserialize_with = "null_default")]
    ip_families: Vec<String>,
    #[serde(deserialize_with = "boxed")]
    external_name: Box<str>,
    #[serde(deserialize_with = "opt_boxed")]
    traffic_distribution: Option<Box<str>>,
}

fn boxed_all(v: Vec<String>) -> Box<[Box<str>]> {
    v.into_iter().map(String::into_boxed_str).collect()
}

impl From<ServiceWire> for Service {
    fn from(w: ServiceWire) -> Service {
        let s = w.spec;
        Service {
            metadata: w.metadata,
            selector: s.selector.filter(|l| !l.is_empty()),
            cluster_ip: s.cluster_ip,
            cluster_ips: boxed_all(s.cluster_ips),
            type_: s.type_,
            ports: s.ports.into_boxed_slice(),
            publish_not_ready_addresses: s.publish_not_ready_addresses,
            ip_families: boxed_all(s.ip_families),
            external_name: s.external_name,
            traffic_distribution: s.traffic_distribution,
        }
    }
}
