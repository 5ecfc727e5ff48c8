//! Every permission endpointd uses, as one table: what `preflight` asks
//! the API server about (SelfSubjectAccessReview). It must match
//! `systemd/rbac.yaml` exactly — `tests/it/preflight.rs` compares the two.

/// Where a permission is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    /// In every namespace (a ClusterRole bound by a ClusterRoleBinding).
    Cluster,
    /// In `[leader_election].lease_namespace` (a Role there).
    LeaseNamespace,
}

/// One verb on one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Permission {
    /// The verb.
    pub verb: &'static str,
    /// API group ("" for core).
    pub group: &'static str,
    /// Resource, `resource/subresource` for a subresource.
    pub resource: &'static str,
    /// Where.
    pub scope: Scope,
    /// Checked by an admission plugin on writes, never by a request of
    /// endpointd's own: missing is a warning (a cluster without that
    /// plugin does not need it), not a failure.
    pub admission_only: bool,
}

const fn p(verb: &'static str, group: &'static str, resource: &'static str) -> Permission {
    Permission {
        verb,
        group,
        resource,
        scope: Scope::Cluster,
        admission_only: false,
    }
}

const fn lease(verb: &'static str) -> Permission {
    Permission {
        verb,
        group: "coordination.k8s.io",
        resource: "leases",
        scope: Scope::LeaseNamespace,
        admission_only: false,
    }
}

const fn admission(verb: &'static str, resource: &'static str) -> Permission {
    Permission {
        verb,
        group: "",
        resource,
        scope: Scope::Cluster,
        admission_only: true,
    }
}

/// What endpointd uses, grouped by resource in `systemd/rbac.yaml`'s order.
pub const PERMISSIONS: &[Permission] = &[
    p("list", "", "pods"),
    p("watch", "", "pods"),
    p("list", "", "nodes"),
    p("watch", "", "nodes"),
    p("list", "", "namespaces"),
    p("watch", "", "namespaces"),
    p("get", "", "services"),
    p("list", "", "services"),
    p("watch", "", "services"),
    p("get", "", "endpoints"),
    p("list", "", "endpoints"),
    p("watch", "", "endpoints"),
    p("create", "", "endpoints"),
    p("update", "", "endpoints"),
    p("delete", "", "endpoints"),
    p("list", "discovery.k8s.io", "endpointslices"),
    p("watch", "discovery.k8s.io", "endpointslices"),
    p("create", "discovery.k8s.io", "endpointslices"),
    p("update", "discovery.k8s.io", "endpointslices"),
    p("delete", "discovery.k8s.io", "endpointslices"),
    admission("update", "services/finalizers"),
    admission("create", "endpoints/restricted"),
    p("create", "events.k8s.io", "events"),
    p("update", "events.k8s.io", "events"),
    lease("get"),
    lease("list"),
    lease("create"),
    lease("update"),
    lease("delete"),
];

impl Permission {
    /// `resource` or `resource.group`, as kubectl names it.
    pub fn resource_label(&self) -> String {
        match self.group.is_empty() {
            true => self.resource.to_string(),
            false => format!("{}.{}", self.resource, self.group),
        }
    }

    /// (resource, subresource).
    pub fn split(&self) -> (&'static str, &'static str) {
        self.resource.split_once('/').unwrap_or((self.resource, ""))
    }
}
