//! API defaulting that endpointd's behaviour depends on, applied before
//! validation as kube-apiserver does: Service `type`, `sessionAffinity`,
//! port `protocol` and `targetPort` (= `port`), ClusterIP allocation from
//! 10.96.0.0/12 with `clusterIPs`, `ipFamilies`, `ipFamilyPolicy` and
//! `internalTrafficPolicy`; an update that omits the allocated values keeps
//! them; Endpoints/EndpointSlice port `protocol` = TCP. An empty Service
//! `selector` is dropped, as kube-apiserver's storage drops an empty map
//! (it reads back as no selector).
//!
//! Only reads the store (to find a free ClusterIP); never writes.

use super::resources::ResourceInfo;
use super::store::Txn;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};

/// First address handed out (10.96.0.1 is the `kubernetes` Service's).
const FIRST_IP: u32 = u32::from_be_bytes([10, 96, 0, 10]);
/// End of 10.96.0.0/12.
const LAST_IP: u32 = u32::from_be_bytes([10, 111, 255, 254]);

/// Apply the defaults for `info` to `v` (`old` on update).
pub fn apply(t: &Txn<'_>, info: &ResourceInfo, v: &mut Value, old: Option<&Value>) {
    match info.resource {
        "services" => service(t, v, old),
        "endpoints" => {
            if let Some(subsets) = v.get_mut("subsets").and_then(Value::as_array_mut) {
                for ss in subsets {
                    default_protocols(ss.get_mut("ports"));
                }
            }
        }
        "endpointslices" => default_protocols(v.get_mut("ports")),
        _ => {}
    }
}

fn default_protocols(ports: Option<&mut Value>) {
    for p in ports.and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(m) = p.as_object_mut() {
            if m.get("protocol").is_none_or(Value::is_null) {
                m.insert("protocol".into(), json!("TCP"));
            }
        }
    }
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn service(t: &Txn<'_>, v: &mut Value, old: Option<&Value>) {
    if !v.get("spec").is_some_and(Value::is_object) {
        v["spec"] = json!({});
    }
    if let Some(old) = old {
        // An update that leaves the allocated values out keeps them.
        for f in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            if v["spec"].get(f).is_none_or(|x| x.is_null() || x == "") {
                if let Some(o) = old.pointer(&format!("/spec/{f}")) {
                    v["spec"][f] = o.clone();
                }
            }
        }
    }
    let spec = &mut v["spec"];
    if spec
        .get("selector")
        .is_some_and(|s| s.as_object().is_some_and(|m| m.is_empty()))
    {
        if let Some(m) = spec.as_object_mut() {
            m.remove("selector");
        }
    }
    for (f, d) in [
        ("type", "ClusterIP"),
        ("sessionAffinity", "None"),
        ("internalTrafficPolicy", "Cluster"),
    ] {
        if spec.get(f).is_none_or(|x| x.is_null() || x == "") {
            spec[f] = json!(d);
        }
    }
    for p in spec
        .get_mut("ports")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let Some(p) = p.as_object_mut() else { continue };
        if p.get("protocol").is_none_or(Value::is_null) {
            p.insert("protocol".into(), json!("TCP"));
        }
        if p.get("targetPort").is_none_or(|x| x.is_null() || x == 0) {
            if let Some(port) = p.get("port").cloned() {
                p.insert("targetPort".into(), port);
            }
        }
    }
    if str_at(spec, "/type") == "ExternalName" {
        return;
    }
    let mut ip = str_at(spec, "/clusterIP").to_string();
    if ip.is_empty() {
        ip = free_cluster_ip(t);
        spec["clusterIP"] = json!(ip);
    }
    if spec.get("clusterIPs").is_none_or(|x| x.is_null()) {
        spec["clusterIPs"] = json!([ip]);
    }
    if spec.get("ipFamilies").is_none_or(|x| x.is_null()) {
        let family = match ip.parse::<IpAddr>() {
            Ok(IpAddr::V6(_)) => "IPv6",
            _ => "IPv4",
        };
        spec["ipFamilies"] = json!([family]);
    }
    if spec.get("ipFamilyPolicy").is_none_or(|x| x.is_null()) {
        spec["ipFamilyPolicy"] = json!("SingleStack");
    }
}

/// The lowest unused address of the service range.
fn free_cluster_ip(t: &Txn<'_>) -> String {
    let used: HashSet<String> = t
        .all_of("services")
        .iter()
        .map(|s| {
            s.field("spec.clusterIP")
                .map(str::to_string)
                .unwrap_or_else(|| str_at(&s.value(), "/spec/clusterIP").to_string())
                .to_string()
        })
        .collect();
    (FIRST_IP..=LAST_IP)
        .map(|n| Ipv4Addr::from(n).to_string())
        .find(|ip| !used.contains(ip))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::lookup;
    use crate::store::{Store, StoreConfig};
    use endpointd_base::clock::RealClock;

    #[test]
    fn service_defaults_table() {
        let store = Store::new(StoreConfig::default(), RealClock::shared());
        let Some(svc) = lookup("", "v1", "services") else {
            panic!("services not served")
        };
        let cases = [
            (
                json!({"spec": {"ports": [{"port": 80}]}}),
                json!({"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                       "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
                       "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "ipFamilies": ["IPv4"],
                       "ipFamilyPolicy": "SingleStack"}),
            ),
            (
                json!({"spec": {"clusterIP": "None", "ports": [{"port": 53, "protocol": "UDP", "targetPort": "dns"}]}}),
                json!({"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                       "ports": [{"port": 53, "protocol": "UDP", "targetPort": "dns"}],
                       "clusterIP": "None", "clusterIPs": ["None"], "ipFamilies": ["IPv4"],
                       "ipFamilyPolicy": "SingleStack"}),
            ),
            (
                json!({"spec": {"clusterIP": "fd00::10"}}),
                json!({"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                       "clusterIP": "fd00::10", "clusterIPs": ["fd00::10"], "ipFamilies": ["IPv6"],
                       "ipFamilyPolicy": "SingleStack"}),
            ),
            (
                json!({"spec": {"selector": {}, "clusterIP": "None"}}),
                json!({"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                       "clusterIP": "None", "clusterIPs": ["None"], "ipFamilies": ["IPv4"],
                       "ipFamilyPolicy": "SingleStack"}),
            ),
            (
                json!({"spec": {"type": "ExternalName", "externalName": "x.example"}}),
                json!({"type": "ExternalName", "externalName": "x.example", "sessionAffinity": "None",
                       "internalTrafficPolicy": "Cluster"}),
            ),
        ];
        for (mut v, want) in cases {
            store.txn(|t| apply(t, svc, &mut v, None));
            assert_eq!(v["spec"], want);
        }
        let old = json!({"spec": {"clusterIP": "10.96.0.77", "clusterIPs": ["10.96.0.77"], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack"}});
        let mut upd = json!({"spec": {"ports": [{"port": 1}]}});
        store.txn(|t| apply(t, svc, &mut upd, Some(&old)));
        assert_eq!(
            upd["spec"]["clusterIP"], "10.96.0.77",
            "allocated values survive an update"
        );
    }
}
