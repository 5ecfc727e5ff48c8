//! Pure request building: resource descriptors, list/watch/delete
//! parameters, and URL paths and query strings with percent-encoding.
//!
//! Must never do I/O or read the clock; everything here is a function of
//! its arguments and is table-tested.

use serde::Serialize;

/// An API resource: group, version, plural and scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Resource {
    /// API group ("" for the core group).
    pub group: &'static str,
    /// Version, e.g. `v1`.
    pub version: &'static str,
    /// Plural resource name, e.g. `pods`.
    pub plural: &'static str,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

/// core/v1 pods.
pub const PODS: Resource = Resource::core("pods", true);
/// core/v1 services.
pub const SERVICES: Resource = Resource::core("services", true);
/// core/v1 nodes.
pub const NODES: Resource = Resource::core("nodes", false);
/// core/v1 namespaces.
pub const NAMESPACES: Resource = Resource::core("namespaces", false);
/// core/v1 endpoints.
pub const ENDPOINTS: Resource = Resource::core("endpoints", true);
/// discovery.k8s.io/v1 endpointslices.
pub const ENDPOINTSLICES: Resource = Resource {
    group: "discovery.k8s.io",
    version: "v1",
    plural: "endpointslices",
    namespaced: true,
};
/// coordination.k8s.io/v1 leases.
pub const LEASES: Resource = Resource {
    group: "coordination.k8s.io",
    version: "v1",
    plural: "leases",
    namespaced: true,
};
/// events.k8s.io/v1 events.
pub const EVENTS_V1: Resource = Resource {
    group: "events.k8s.io",
    version: "v1",
    plural: "events",
    namespaced: true,
};

impl Resource {
    /// A core-group (`/api/v1`) resource.
    pub const fn core(plural: &'static str, namespaced: bool) -> Resource {
        Resource {
            group: "",
            version: "v1",
            plural,
            namespaced,
        }
    }

    /// The metrics/log label: `plural` or `plural.group`.
    pub fn label(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The URL path for a collection (`name == None`) or one object,
    /// optionally a subresource. `namespace` is ignored for cluster-scoped
    /// resources; `None` on a namespaced resource means all namespaces
    /// (valid for list and watch only).
    pub fn path(&self, namespace: Option<&str>, name: Option<&str>, sub: Option<&str>) -> String {
        let mut p = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        if let (true, Some(ns)) = (self.namespaced, namespace) {
            p.push_str("/namespaces/");
            p.push_str(&encode(ns));
        }
        p.push('/');
        p.push_str(self.plural);
        if let Some(n) = name {
            p.push('/');
            p.push_str(&encode(n));
            if let Some(s) = sub {
                p.push('/');
                p.push_str(&encode(s));
            }
        }
        p
    }
}

/// Parameters of a LIST.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListParams {
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `limit` (page size).
    pub limit: Option<u32>,
    /// `continue` token from the previous page.
    pub continue_token: Option<String>,
    /// `resourceVersion` (`"0"`: any, from the watch cache; unset: consistent).
    pub resource_version: Option<String>,
    /// `resourceVersionMatch` (`NotOlderThan` / `Exact`).
    pub resource_version_match: Option<String>,
}

/// Parameters of a WATCH.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchParams {
    /// Start after this resourceVersion.
    pub resource_version: Option<String>,
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `timeoutSeconds`: the server ends the watch cleanly after this long.
    /// The client's idle read timeout is this plus a margin.
    pub timeout_seconds: Option<u32>,
    /// `allowWatchBookmarks`.
    pub allow_bookmarks: bool,
    /// `sendInitialEvents` (watch-list; also sets
    /// `resourceVersionMatch=NotOlderThan` as the API requires).
    pub send_initial_events: bool,
}

/// Patch flavours and their content types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// RFC 7386 JSON merge patch.
    Merge,
    /// RFC 6902 JSON patch.
    Json,
    /// Kubernetes strategic merge patch.
    Strategic,
}

impl PatchType {
    /// The `Content-Type` header value.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Merge => "application/merge-patch+json",
            PatchType::Json => "application/json-patch+json",
            PatchType::Strategic => "application/strategic-merge-patch+json",
        }
    }
}

/// Delete preconditions (`DeleteOptions.preconditions`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    /// Only delete if the object still has this UID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Only delete if the object still has this resourceVersion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// The JSON body of a DELETE with preconditions.
pub fn delete_body(pre: &Preconditions) -> String {
    serde_json::json!({
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "preconditions": pre,
    })
    .to_string()
}

/// Query string (without `?`) of a LIST.
pub fn list_query(p: &ListParams) -> String {
    let mut q = Query::default();
    q.opt("labelSelector", p.label_selector.as_deref());
    q.opt("fieldSelector", p.field_selector.as_deref());
    q.opt("limit", p.limit.map(|l| l.to_string()).as_deref());
    q.opt("continue", p.continue_token.as_deref());
    q.opt("resourceVersion", p.resource_version.as_deref());
    q.opt("resourceVersionMatch", p.resource_version_match.as_deref());
    q.0
}

/// Query string (without `?`) of a WATCH.
pub fn watch_query(p: &WatchParams) -> String {
    let mut q = Query::default();
    q.opt("watch", Some("true"));
    q.opt("resourceVersion", p.resource_version.as_deref());
    q.opt("labelSelector", p.label_selector.as_deref());
    q.opt("fieldSelector", p.field_selector.as_deref());
    q.opt(
        "timeoutSeconds",
        p.timeout_seconds.map(|t| t.to_string()).as_deref(),
    );
    if p.allow_bookmarks {
        q.opt("allowWatchBookmarks", Some("true"));
    }
    if p.send_initial_events {
        q.opt("sendInitialEvents", Some("true"));
        q.opt("resourceVersionMatch", Some("NotOlderThan"));
    }
    q.0
}

#[derive(Default)]
struct Query(String);

impl Query {
    fn opt(&mut self, k: &str, v: Option<&str>) {
        if let Some(v) = v {
            if !self.0.is_empty() {
                self.0.push('&');
            }
            self.0.push_str(k);
            self.0.push('=');
            self.0.push_str(&encode(v));
        }
    }
}

/// Percent-encode everything except RFC 3986 unreserved characters.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_table() {
        let cases = [
            (PODS, Some("ns"), None, None, "/api/v1/namespaces/ns/pods"),
            (PODS, None, None, None, "/api/v1/pods"),
            (
                PODS,
                Some("ns"),
                Some("p"),
                Some("status"),
                "/api/v1/namespaces/ns/pods/p/status",
            ),
            (NODES, Some("ignored"), Some("n1"), None, "/api/v1/nodes/n1"),
            (
                NAMESPACES,
                None,
                Some("kube-system"),
                None,
                "/api/v1/namespaces/kube-system",
            ),
            (
                ENDPOINTSLICES,
                Some("a"),
                Some("s-x"),
                None,
                "/apis/discovery.k8s.io/v1/namespaces/a/endpointslices/s-x",
            ),
            (
                LEASES,
                Some("kube-system"),
                Some("endpointd"),
                None,
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/endpointd",
            ),
            (
                EVENTS_V1,
                Some("d"),
                None,
                None,
                "/apis/events.k8s.io/v1/namespaces/d/events",
            ),
            (
                PODS,
                Some("ns"),
                Some("a/b c"),
                None,
                "/api/v1/namespaces/ns/pods/a%2Fb%20c",
            ),
        ];
        for (r, ns, name, sub, want) in cases {
            assert_eq!(r.path(ns, name, sub), want);
        }
        assert_eq!(ENDPOINTSLICES.label(), "endpointslices.discovery.k8s.io");
        assert_eq!(PODS.label(), "pods");
    }

    #[test]
    fn list_query_table() {
        let cases = [
            (ListParams::default(), ""),
            (
                ListParams {
                    label_selector: Some("app=web,tier!=db".into()),
                    limit: Some(500),
                    resource_version: Some("0".into()),
                    ..Default::default()
                },
                "labelSelector=app%3Dweb%2Ctier%21%3Ddb&limit=500&resourceVersion=0",
            ),
            (
                ListParams {
                    continue_token: Some("eyJ2Ijo+/=".into()),
                    field_selector: Some("metadata.name=x".into()),
                    resource_version_match: Some("NotOlderThan".into()),
                    resource_version: Some("10".into()),
                    ..Default::default()
                },
                "fieldSelector=metadata.name%3Dx&continue=eyJ2Ijo%2B%2F%3D&resourceVersion=10&resourceVersionMatch=NotOlderThan",
            ),
        ];
        for (p, want) in cases {
            assert_eq!(list_query(&p), want, "{p:?}");
        }
    }

    #[test]
    fn watch_query_table() {
        let cases = [
            (WatchParams::default(), "watch=true"),
            (
                WatchParams {
                    resource_version: Some("7".into()),
                    timeout_seconds: Some(300),
                    allow_bookmarks: true,
                    ..Default::default()
                },
                "watch=true&resourceVersion=7&timeoutSeconds=300&allowWatchBookmarks=true",
            ),
            (
                WatchParams {
                    send_initial_events: true,
                    allow_bookmarks: true,
                    label_selector: Some("a=b".into()),
                    ..Default::default()
                },
                "watch=true&labelSelector=a%3Db&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
            ),
        ];
        for (p, want) in cases {
            assert_eq!(watch_query(&p), want, "{p:?}");
        }
    }

    #[test]
    fn delete_body_and_patch_types() {
        let b = delete_body(&Preconditions {
            uid: Some("u".into()),
            resource_version: None,
        });
        let v: serde_json::Value = serde_json::from_str(&b).expect("json");
        assert_eq!(v["preconditions"], serde_json::json!({"uid": "u"}));
        assert_eq!(v["kind"], "DeleteOptions");
        assert_eq!(
            PatchType::Merge.content_type(),
            "application/merge-patch+json"
        );
        assert_eq!(
            PatchType::Json.content_type(),
            "application/json-patch+json"
        );
        assert_eq!(
            PatchType::Strategic.content_type(),
            "application/strategic-merge-patch+json"
        );
    }
}
