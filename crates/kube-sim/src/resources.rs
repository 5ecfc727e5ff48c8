//! The static table of resources kube-sim serves: group, version, plural,
//! kind, scope, verbs and subresources. Discovery documents, request routing
//! and the store all read this one table; nothing else may list resources.

/// One served resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group ("" for core).
    pub group: &'static str,
    /// Version ("v1").
    pub version: &'static str,
    /// Plural resource name as in paths ("pods").
    pub resource: &'static str,
    /// Singular name ("pod").
    pub singular: &'static str,
    /// Kind ("Pod").
    pub kind: &'static str,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Short names for kubectl ("po").
    pub short_names: &'static [&'static str],
    /// Subresources served ("status").
    pub subresources: &'static [&'static str],
}

const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

impl ResourceInfo {
    /// `apiVersion` as written in objects: "v1" or "group/version".
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The list kind ("PodList").
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// Verbs served on the main resource.
    pub fn verbs(&self) -> &'static [&'static str] {
        VERBS
    }
}

macro_rules! res {
    ($g:expr, $r:expr, $s:expr, $k:expr, $ns:expr, $short:expr, $sub:expr) => {
        ResourceInfo {
            group: $g,
            version: "v1",
            resource: $r,
            singular: $s,
            kind: $k,
            namespaced: $ns,
            short_names: $short,
            subresources: $sub,
        }
    };
}

/// Every resource kube-sim serves.
pub static RESOURCES: &[ResourceInfo] = &[
    res!(
        "",
        "namespaces",
        "namespace",
        "Namespace",
        false,
        &["ns"],
        &["status"]
    ),
    res!("", "nodes", "node", "Node", false, &["no"], &["status"]),
    res!("", "pods", "pod", "Pod", true, &["po"], &["status"]),
    res!(
        "",
        "services",
        "service",
        "Service",
        true,
        &["svc"],
        &["status"]
    ),
    res!(
        "",
        "endpoints",
        "endpoints",
        "Endpoints",
        true,
        &["ep"],
        &[]
    ),
    res!("", "events", "event", "Event", true, &["ev"], &[]),
    res!(
        "discovery.k8s.io",
        "endpointslices",
        "endpointslice",
        "EndpointSlice",
        true,
        &[],
        &[]
    ),
    res!(
        "coordination.k8s.io",
        "leases",
        "lease",
        "Lease",
        true,
        &[],
        &[]
    ),
    res!(
        "events.k8s.io",
        "events",
        "event",
        "Event",
        true,
        &["ev"],
        &[]
    ),
];

/// Look a resource up by group, version and plural name.
pub fn lookup(group: &str, version: &str, resource: &str) -> Option<&'static ResourceInfo> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.resource == resource)
}

/// Look a resource up by `apiVersion` and `kind` (as in a List file).
pub fn lookup_kind(api_version: &str, kind: &str) -> Option<&'static ResourceInfo> {
    RESOURCES
        .iter()
        .find(|r| r.api_version() == api_version && r.kind == kind)
}

/// The groups served besides core, in discovery order.
pub fn groups() -> Vec<&'static str> {
    let mut g: Vec<&'static str> = Vec::new();
    for r in RESOURCES {
        if !r.group.is_empty() && !g.contains(&r.group) {
            g.push(r.group);
        }
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_table() {
        let cases = [
            ("", "v1", "pods", Some(("Pod", true, "v1"))),
            ("", "v1", "nodes", Some(("Node", false, "v1"))),
            (
                "discovery.k8s.io",
                "v1",
                "endpointslices",
                Some(("EndpointSlice", true, "discovery.k8s.io/v1")),
            ),
            ("", "v1", "endpointslices", None),
            ("apps", "v1", "deployments", None),
        ];
        for (g, v, r, want) in cases {
            let got = lookup(g, v, r).map(|i| (i.kind, i.namespaced, i.api_version()));
            let want = want.map(|(k, n, a)| (k, n, a.to_string()));
            assert_eq!(got, want, "{g}/{v}/{r}");
        }
        assert_eq!(
            lookup_kind("events.k8s.io/v1", "Event").map(|r| r.group),
            Some("events.k8s.io")
        );
        assert_eq!(
            groups(),
            vec!["discovery.k8s.io", "coordination.k8s.io", "events.k8s.io"]
        );
    }
}
