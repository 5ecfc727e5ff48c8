//! Legacy (unaggregated) discovery documents and `/version`, built from the
//! resource table in [`super::resources`]: `/api` (APIVersions), `/apis`
//! (APIGroupList), `/apis/{group}` (APIGroup), `/api/v1` and
//! `/apis/{group}/{version}` (APIResourceList).
//!
//! Aggregated discovery (`apidiscovery.k8s.io/v2` APIGroupDiscoveryList at
//! `/api` and `/apis`) is served when the `Accept` header asks for it, as
//! kubectl ≥ 1.30 does; everyone else gets the legacy documents.
//!
//! Pure: documents are functions of the table (and the server address);
//! this module never lists resources of its own.

use super::resources::{self, ResourceInfo, RESOURCES};
use serde_json::{json, Value};

/// Kubernetes version kube-sim claims.
pub const MAJOR: &str = "1";
/// Minor version kube-sim claims.
pub const MINOR: &str = "33";
/// `gitVersion` of `/version`.
pub const GIT_VERSION: &str = "v1.33.0-kube-sim";

/// Verbs of a `{resource}/status` (or `/finalize`) subresource.
const SUB_VERBS: &[&str] = &["get", "patch", "update"];

/// The `/version` document (version.Info).
pub fn version() -> Value {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    json!({
        "major": MAJOR,
        "minor": MINOR,
        "emulationMajor": MAJOR,
        "emulationMinor": MINOR,
        "minCompatibilityMajor": MAJOR,
        "minCompatibilityMinor": "32",
        "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": format!("{}/{arch}", std::env::consts::OS),
    })
}

/// `/api`: the core group's versions. `server` is `host:port` as clients
/// reach it.
pub fn api_versions(server: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server}],
    })
}

fn group_doc(group: &str) -> Value {
    let gv = json!({"groupVersion": format!("{group}/v1"), "version": "v1"});
    json!({
        "name": group,
        "versions": [gv.clone()],
        "preferredVersion": gv,
    })
}

/// `/apis`: every named group.
pub fn api_group_list() -> Value {
    let groups: Vec<Value> = resources::groups().into_iter().map(group_doc).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`: one group, if served.
pub fn api_group(group: &str) -> Option<Value> {
    if !resources::groups().contains(&group) {
        return None;
    }
    let mut doc = group_doc(group);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

fn resource_entries(r: &ResourceInfo) -> Vec<Value> {
    let mut main = json!({
        "name": r.resource,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": r.verbs(),
    });
    if !r.short_names.is_empty() {
        main["shortNames"] = json!(r.short_names);
    }
    if r.group.is_empty() && matches!(r.resource, "pods" | "services") {
        main["categories"] = json!(["all"]);
    }
    let mut out = vec![main];
    let mut subs: Vec<&str> = r.subresources.to_vec();
    if r.group.is_empty() && r.resource == "namespaces" && !subs.contains(&"finalize") {
        subs.push("finalize");
    }
    for sub in subs {
        let verbs: &[&str] = if sub == "finalize" {
            &["update"]
        } else {
            SUB_VERBS
        };
        out.push(json!({
            "name": format!("{}/{sub}", r.resource),
            "singularName": "",
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": verbs,
        }));
    }
    out
}

/// `/api/v1` or `/apis/{group}/{version}`: the resources of one group
/// version, with subresource entries (`pods/status`), if served.
pub fn api_resource_list(group: &str, version: &str) -> Option<Value> {
    let served: Vec<&ResourceInfo> = RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    if served.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let resources: Vec<Value> = served.into_iter().flat_map(resource_entries).collect();
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}

/// `Content-Type` of an aggregated discovery answer.
pub const AGGREGATED_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether an `Accept` header asks for aggregated discovery v2 (any entry
/// `application/json` with g=apidiscovery.k8s.io, v=v2,
/// as=APIGroupDiscoveryList, in any parameter order).
pub fn wants_aggregated(accept: Option<&str>) -> bool {
    accept.unwrap_or("").split(',').any(|entry| {
        let mut parts = entry.split(';').map(str::trim);
        if parts.next() != Some("application/json") {
            return false;
        }
        let params: Vec<(&str, &str)> = parts.filter_map(|p| p.split_once('=')).collect();
        let has = |k: &str, v: &str| params.iter().any(|(pk, pv)| *pk == k && *pv == v);
        has("g", "apidiscovery.k8s.io") && has("v", "v2") && has("as", "APIGroupDiscoveryList")
    })
}

fn gvk(r: &ResourceInfo) -> Value {
    json!({"group": r.group, "version": r.version, "kind": r.kind})
}

fn aggregated_resource(r: &ResourceInfo) -> Value {
    let entries = resource_entries(r);
    let subresources: Vec<Value> = entries[1..]
        .iter()
        .map(|e| {
            let name = e["name"].as_str().unwrap_or("");
            json!({
                "subresource": name.split_once('/').map(|(_, s)| s).unwrap_or(name),
                "responseKind": gvk(r),
                "verbs": e["verbs"],
            })
        })
        .collect();
    let mut doc = json!({
        "resource": r.resource,
        "responseKind": gvk(r),
        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": r.verbs(),
    });
    for key in ["shortNames", "categories"] {
        if let Some(v) = entries[0].get(key) {
            doc[key] = v.clone();
        }
    }
    if !subresources.is_empty() {
        doc["subresources"] = json!(subresources);
    }
    doc
}

/// Aggregated discovery: the core group (`/api`, `core` true) or every
/// named group (`/apis`), with all resources inline.
pub fn aggregated(core: bool) -> Value {
    let groups: Vec<&str> = if core { vec![""] } else { resources::groups() };
    let items: Vec<Value> = groups
        .into_iter()
        .map(|g| {
            let res: Vec<Value> = RESOURCES
                .iter()
                .filter(|r| r.group == g)
                .map(aggregated_resource)
                .collect();
            json!({
                "metadata": {"name": g, "creationTimestamp": null},
                "versions": [{"version": "v1", "resources": res, "freshness": "Current"}],
            })
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

/// The path segment of a group version in OpenAPI v3 ("api/v1",
/// "apis/discovery.k8s.io/v1").
fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `/openapi/v3`: the index of per-group-version documents.
pub fn openapi_v3_index() -> Value {
    let mut paths = serde_json::Map::new();
    for r in RESOURCES {
        let gv = gv_path(r.group, r.version);
        let url = format!("/openapi/v3/{gv}?hash={}", OPENAPI_HASH);
        paths.insert(gv, json!({ "serverRelativeURL": url }));
    }
    json!({ "paths": paths })
}

/// Changes whenever the documents below change (kubectl caches by it).
const OPENAPI_HASH: &str = "kube-sim-2";

/// `/openapi/v3/{api/v1|apis/g/v}`: a minimal OpenAPI v3 document with one
/// PATCH operation per resource that declares its group-version-kind and the
/// `fieldValidation` query parameter. That is what kubectl (`apply`,
/// `create` with `--validate=strict`, the default) checks to send
/// `fieldValidation=Strict` to the server instead of downloading schemas.
/// Component schemas (from [`super::openapi`], with patch merge keys) serve
/// `kubectl explain` and kubectl's strategic merge patches.
pub fn openapi_v3_document(path: &str) -> Option<Value> {
    let mut paths = serde_json::Map::new();
    let mut schemas = serde_json::Map::new();
    for r in RESOURCES {
        if gv_path(r.group, r.version) != path {
            continue;
        }
        if schemas.is_empty() {
            schemas = super::openapi::v3_schemas(r.group, r.version);
        }
        let collection = if r.namespaced {
            format!("/{path}/namespaces/{{namespace}}/{}", r.resource)
        } else {
            format!("/{path}/{}", r.resource)
        };
        let op = json!({
            "patch": {
                "operationId": format!("patch{}", r.kind),
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind":
                    {"group": r.group, "version": r.version, "kind": r.kind},
                "parameters": [
                    {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
                    {"name": "force", "in": "query", "schema": {"type": "boolean"}},
                ],
                "responses": {"200": {"description": "OK"}},
            }
        });
        paths.insert(format!("{collection}/{{name}}"), op);
    }
    if paths.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": GIT_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// The discovery document for a path, if it is one. `server` as for
/// [`api_versions`].
pub fn document(path: &str, server: &str) -> Option<Value> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    match parts.as_slice() {
        ["api"] => Some(api_versions(server)),
        ["apis"] => Some(api_group_list()),
        ["api", v] => api_resource_list("", v),
        ["apis", g] => api_group(g),
        ["apis", g, v] => api_resource_list(g, v),
        ["openapi", "v3"] => Some(openapi_v3_index()),
        ["openapi", "v3", rest @ ..] => openapi_v3_document(&rest.join("/")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(doc: &Value) -> Vec<String> {
        doc["resources"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|r| r["name"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn documents_by_path() {
        let s = "127.0.0.1:6443";
        let cases: Vec<(&str, Option<&str>)> = vec![
            ("/api", Some("APIVersions")),
            ("/apis", Some("APIGroupList")),
            ("/api/v1", Some("APIResourceList")),
            ("/api/v2", None),
            ("/apis/discovery.k8s.io", Some("APIGroup")),
            ("/apis/discovery.k8s.io/v1", Some("APIResourceList")),
            ("/apis/coordination.k8s.io/v1/", Some("APIResourceList")),
            ("/apis/apps/v1", None),
            ("/apis/apps", None),
            ("/api/v1/pods", None),
            ("/openapi/v2", None),
            ("/openapi/v3/apis/apps/v1", None),
        ];
        for (path, kind) in cases {
            let got = document(path, s);
            assert_eq!(
                got.as_ref().and_then(|d| d["kind"].as_str()),
                kind,
                "{path}"
            );
        }
    }

    #[test]
    fn core_resource_list_is_complete() {
        let doc = api_resource_list("", "v1").expect("core");
        assert_eq!(doc["groupVersion"], "v1");
        let n = names(&doc);
        for want in [
            "namespaces",
            "namespaces/status",
            "namespaces/finalize",
            "nodes",
            "nodes/status",
            "pods",
            "pods/status",
            "services",
            "services/status",
            "endpoints",
            "events",
        ] {
            assert!(n.contains(&want.to_string()), "missing {want} in {n:?}");
        }
        let pods = &doc["resources"][n.iter().position(|x| x == "pods").unwrap_or(0)];
        assert_eq!(pods["kind"], "Pod");
        assert_eq!(pods["namespaced"], true);
        assert_eq!(pods["shortNames"], json!(["po"]));
        assert_eq!(pods["singularName"], "pod");
        assert!(pods["verbs"]
            .as_array()
            .is_some_and(|v| v.contains(&json!("watch"))));
        let eps = api_resource_list("discovery.k8s.io", "v1").expect("group");
        assert_eq!(eps["groupVersion"], "discovery.k8s.io/v1");
        assert_eq!(names(&eps), vec!["endpointslices".to_string()]);
    }

    #[test]
    fn openapi_v3_declares_field_validation_for_every_kind() {
        let index = document("/openapi/v3", "").expect("index");
        let paths = index["paths"].as_object().expect("paths");
        assert_eq!(paths.len(), 4, "{paths:?}");
        for (gv, entry) in paths {
            let url = entry["serverRelativeURL"].as_str().expect("url");
            let path = url.split('?').next().unwrap_or("");
            let doc = document(path, "").unwrap_or_else(|| panic!("{gv}: {url}"));
            for (p, op) in doc["paths"].as_object().expect("doc paths") {
                let gvk = &op["patch"]["x-kubernetes-group-version-kind"];
                assert!(gvk["kind"].is_string(), "{p}");
                let params = op["patch"]["parameters"].as_array().expect("params");
                assert!(params
                    .iter()
                    .any(|x| x["name"] == "fieldValidation" && x["in"] == "query"));
            }
        }
        let core = document("/openapi/v3/api/v1", "").expect("core");
        assert!(core["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"].is_object());
        assert!(core["paths"]["/api/v1/nodes/{name}"].is_object());
    }

    #[test]
    fn aggregated_discovery_negotiation_and_shape() {
        let cases = [
            (Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"), true),
            (Some("application/json; as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io"), true),
            (Some("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"), false),
            (Some("application/json, */*"), false),
            (None, false),
        ];
        for (accept, want) in cases {
            assert_eq!(wants_aggregated(accept), want, "{accept:?}");
        }
        let core = aggregated(true);
        assert_eq!(core["items"].as_array().map(Vec::len), Some(1));
        assert_eq!(core["items"][0]["metadata"]["name"], "");
        let res = core["items"][0]["versions"][0]["resources"]
            .as_array()
            .expect("res");
        let pods = res.iter().find(|r| r["resource"] == "pods").expect("pods");
        assert_eq!(pods["scope"], "Namespaced");
        assert_eq!(pods["responseKind"]["kind"], "Pod");
        assert_eq!(pods["subresources"][0]["subresource"], "status");
        let nodes = res
            .iter()
            .find(|r| r["resource"] == "nodes")
            .expect("nodes");
        assert_eq!(nodes["scope"], "Cluster");
        let apis = aggregated(false);
        let names: Vec<&str> = apis["items"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|i| i["metadata"]["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(names, resources::groups());
    }

    #[test]
    fn groups_and_version() {
        let g = api_group_list();
        let names: Vec<&str> = g["groups"]
            .as_array()
            .map(|a| a.iter().filter_map(|x| x["name"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(
            names,
            vec!["discovery.k8s.io", "coordination.k8s.io", "events.k8s.io"]
        );
        assert_eq!(
            g["groups"][0]["preferredVersion"]["groupVersion"],
            "discovery.k8s.io/v1"
        );
        let v = version();
        assert_eq!(v["major"], "1");
        assert_eq!(v["minor"], "33");
        assert_eq!(v["gitVersion"], GIT_VERSION);
        assert!(v["platform"].as_str().is_some_and(|p| p.contains('/')));
    }
}
