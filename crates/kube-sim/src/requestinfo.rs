//! Request classification: an API path, method and query → verb, group,
//! version, resource, subresource, namespace and name (kube-apiserver's
//! RequestInfo). Pure; never touches the store.
//!
//! The parser (`parse`) is written by the sim transport layer; the struct is
//! the contract between the transport (faults, counters) and `rest`.

/// The Kubernetes verb of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verb {
    /// GET of one object.
    Get,
    /// GET of a collection.
    List,
    /// GET of a collection (or one object by fieldSelector) with `watch=true`.
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH.
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
}

impl Verb {
    /// The verb as Kubernetes spells it ("get", "deletecollection", …).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }
}

/// A classified resource request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestInfo {
    /// The verb.
    pub verb: Verb,
    /// API group, "" for core.
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource name.
    pub resource: String,
    /// Subresource ("status"), if any.
    pub subresource: Option<String>,
    /// Namespace from the path, if any.
    pub namespace: Option<String>,
    /// Object name from the path, if any.
    pub name: Option<String>,
}

/// Whether a query value is true as Go's `strconv.ParseBool` reads it.
fn parse_bool(v: &str) -> bool {
    matches!(v, "1" | "t" | "T" | "true" | "TRUE" | "True")
}

/// Classify a resource request as kube-apiserver's `RequestInfoFactory`
/// does. `None` for anything that is not a resource path (discovery,
/// `/version`, unknown prefixes, too many segments).
///
/// Rules: `/api/{v}/…` (core) or `/apis/{g}/{v}/…`; an optional legacy
/// `watch/` segment makes the verb `watch`; `namespaces/{ns}/{resource}…`
/// sets the namespace, while `namespaces/{name}[/status|/finalize]` is the
/// namespaces resource itself (its `namespace` is left `None`: namespaces
/// are cluster-scoped objects); then `{resource}[/{name}[/{sub}]]`. A
/// nameless GET is `list`, or `watch` with `watch=true|1`; a nameless
/// DELETE is `deletecollection`. Unlike upstream, a
/// `fieldSelector=metadata.name=…` does not set `name`: `rest` applies the
/// selector itself, so `name` is always the path's.
pub fn parse(method: &str, path: &str, query: &[(String, String)]) -> Option<RequestInfo> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, mut rest) = match parts.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    let mut legacy_watch = false;
    if rest.first() == Some(&"watch") {
        legacy_watch = true;
        rest = &rest[1..];
    }
    let mut namespace = None;
    if rest.first() == Some(&"namespaces")
        && rest.len() > 2
        && !matches!(rest[2], "status" | "finalize")
    {
        namespace = Some(rest[1].to_string());
        rest = &rest[2..];
    }
    if rest.is_empty() || rest.len() > 3 || rest.iter().any(|p| p.is_empty()) {
        return None;
    }
    let name = rest.get(1).map(|s| s.to_string());
    let watch_param = query.iter().any(|(k, v)| k == "watch" && parse_bool(v));
    let verb = match (method, name.is_some()) {
        _ if legacy_watch && matches!(method, "GET" | "HEAD") => Verb::Watch,
        ("GET" | "HEAD", true) => Verb::Get,
        ("GET" | "HEAD", false) if watch_param => Verb::Watch,
        ("GET" | "HEAD", false) => Verb::List,
        ("POST", _) => Verb::Create,
        ("PUT", _) => Verb::Update,
        ("PATCH", _) => Verb::Patch,
        ("DELETE", true) => Verb::Delete,
        ("DELETE", false) => Verb::DeleteCollection,
        _ => return None,
    };
    Some(RequestInfo {
        verb,
        group: group.to_string(),
        version: version.to_string(),
        resource: rest[0].to_string(),
        subresource: rest.get(2).map(|s| s.to_string()),
        namespace,
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    type Want<'a> = Option<(
        Verb,
        &'a str,
        &'a str,
        Option<&'a str>,
        Option<&'a str>,
        Option<&'a str>,
    )>;

    #[test]
    fn parse_table() {
        use Verb::*;
        // (method, path, query, want: verb, group, resource, namespace, name, subresource)
        let cases: Vec<(&str, &str, &str, Want)> = vec![
            (
                "GET",
                "/api/v1/pods",
                "",
                Some((List, "", "pods", None, None, None)),
            ),
            (
                "GET",
                "/api/v1/pods",
                "watch=true",
                Some((Watch, "", "pods", None, None, None)),
            ),
            (
                "GET",
                "/api/v1/pods",
                "watch=1",
                Some((Watch, "", "pods", None, None, None)),
            ),
            (
                "GET",
                "/api/v1/pods",
                "watch=false",
                Some((List, "", "pods", None, None, None)),
            ),
            (
                "GET",
                "/api/v1/namespaces/ns1/pods",
                "",
                Some((List, "", "pods", Some("ns1"), None, None)),
            ),
            (
                "GET",
                "/api/v1/namespaces/ns1/pods/p",
                "",
                Some((Get, "", "pods", Some("ns1"), Some("p"), None)),
            ),
            (
                "GET",
                "/api/v1/namespaces/ns1/pods/p",
                "watch=true",
                Some((Get, "", "pods", Some("ns1"), Some("p"), None)),
            ),
            (
                "PUT",
                "/api/v1/namespaces/ns1/pods/p/status",
                "",
                Some((Update, "", "pods", Some("ns1"), Some("p"), Some("status"))),
            ),
            (
                "PATCH",
                "/api/v1/namespaces/ns1/services/s/status",
                "",
                Some((
                    Patch,
                    "",
                    "services",
                    Some("ns1"),
                    Some("s"),
                    Some("status"),
                )),
            ),
            (
                "POST",
                "/api/v1/namespaces/ns1/pods",
                "",
                Some((Create, "", "pods", Some("ns1"), None, None)),
            ),
            (
                "DELETE",
                "/api/v1/namespaces/ns1/pods/p",
                "",
                Some((Delete, "", "pods", Some("ns1"), Some("p"), None)),
            ),
            (
                "DELETE",
                "/api/v1/namespaces/ns1/pods",
                "",
                Some((DeleteCollection, "", "pods", Some("ns1"), None, None)),
            ),
            (
                "GET",
                "/api/v1/namespaces",
                "",
                Some((List, "", "namespaces", None, None, None)),
            ),
            (
                "GET",
                "/api/v1/namespaces/ns1",
                "",
                Some((Get, "", "namespaces", None, Some("ns1"), None)),
            ),
            (
                "PUT",
                "/api/v1/namespaces/ns1/status",
                "",
                Some((Update, "", "namespaces", None, Some("ns1"), Some("status"))),
            ),
            (
                "PUT",
                "/api/v1/namespaces/ns1/finalize",
                "",
                Some((
                    Update,
                    "",
                    "namespaces",
                    None,
                    Some("ns1"),
                    Some("finalize"),
                )),
            ),
            (
                "DELETE",
                "/api/v1/namespaces/ns1",
                "",
                Some((Delete, "", "namespaces", None, Some("ns1"), None)),
            ),
            (
                "GET",
                "/api/v1/nodes/n1",
                "",
                Some((Get, "", "nodes", None, Some("n1"), None)),
            ),
            (
                "GET",
                "/api/v1/watch/pods",
                "",
                Some((Watch, "", "pods", None, None, None)),
            ),
            (
                "GET",
                "/api/v1/watch/namespaces/ns1/pods/p",
                "",
                Some((Watch, "", "pods", Some("ns1"), Some("p"), None)),
            ),
            (
                "GET",
                "/api/v1/watch/namespaces/ns1",
                "",
                Some((Watch, "", "namespaces", None, Some("ns1"), None)),
            ),
            (
                "GET",
                "/apis/discovery.k8s.io/v1/endpointslices",
                "",
                Some((List, "discovery.k8s.io", "endpointslices", None, None, None)),
            ),
            (
                "GET",
                "/apis/discovery.k8s.io/v1/namespaces/d/endpointslices/",
                "watch=t",
                Some((
                    Watch,
                    "discovery.k8s.io",
                    "endpointslices",
                    Some("d"),
                    None,
                    None,
                )),
            ),
            (
                "PUT",
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l",
                "",
                Some((
                    Update,
                    "coordination.k8s.io",
                    "leases",
                    Some("kube-system"),
                    Some("l"),
                    None,
                )),
            ),
            (
                "HEAD",
                "/api/v1/pods",
                "",
                Some((List, "", "pods", None, None, None)),
            ),
            ("GET", "/api", "", None),
            ("GET", "/api/v1", "", None),
            ("GET", "/apis/discovery.k8s.io/v1", "", None),
            ("GET", "/apis", "", None),
            ("GET", "/version", "", None),
            ("GET", "/healthz", "", None),
            ("GET", "/api/v1/namespaces/a/pods/p/status/extra", "", None),
            ("GET", "/api/v1//pods", "", None),
            ("OPTIONS", "/api/v1/pods", "", None),
        ];
        for (method, path, q, want) in cases {
            let query: Vec<(String, String)> = q
                .split('&')
                .filter(|p| !p.is_empty())
                .filter_map(|p| p.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let got = parse(method, path, &query);
            let want = want.map(|(verb, g, r, ns, name, sub)| RequestInfo {
                verb,
                group: g.to_string(),
                version: "v1".to_string(),
                resource: r.to_string(),
                subresource: sub.map(str::to_string),
                namespace: ns.map(str::to_string),
                name: name.map(str::to_string),
            });
            assert_eq!(got, want, "{method} {path}?{q}");
        }
    }

    #[test]
    fn verb_names() {
        assert_eq!(Verb::DeleteCollection.as_str(), "deletecollection");
        assert_eq!(Verb::Watch.as_str(), "watch");
    }
}
