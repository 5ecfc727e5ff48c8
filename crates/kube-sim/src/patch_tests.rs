//! Table tests for the three patch formats (cases from RFC 7386 appendix A,
//! RFC 6902 section A, and what kubectl label/annotate/apply send).

use super::*;
use serde_json::json;

#[test]
fn merge_patch_rfc7386_table() {
    let cases = [
        (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
        (
            json!({"a": "b"}),
            json!({"b": "c"}),
            json!({"a": "b", "b": "c"}),
        ),
        (json!({"a": "b"}), json!({"a": null}), json!({})),
        (
            json!({"a": "b", "b": "c"}),
            json!({"a": null}),
            json!({"b": "c"}),
        ),
        (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
        (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
        (
            json!({"a": {"b": "c"}}),
            json!({"a": {"b": "d", "c": null}}),
            json!({"a": {"b": "d"}}),
        ),
        (
            json!({"a": [{"b": "c"}]}),
            json!({"a": [1]}),
            json!({"a": [1]}),
        ),
        (
            json!({"e": null}),
            json!({"a": 1}),
            json!({"e": null, "a": 1}),
        ),
        (
            json!({}),
            json!({"a": {"bb": {"ccc": null}}}),
            json!({"a": {"bb": {}}}),
        ),
    ];
    for (doc, patch, want) in cases {
        assert_eq!(merge_patch(&doc, &patch), want, "{doc} + {patch}");
    }
}

#[test]
fn json_patch_table() {
    let doc = json!({"metadata": {"labels": {"a": "1"}}, "list": [1, 2, 3]});
    let ok = [
        (
            json!([{"op": "add", "path": "/metadata/labels/b", "value": "2"}]),
            json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "list": [1, 2, 3]}),
        ),
        (
            json!([{"op": "remove", "path": "/metadata/labels/a"}]),
            json!({"metadata": {"labels": {}}, "list": [1, 2, 3]}),
        ),
        (
            json!([{"op": "replace", "path": "/list/0", "value": 9}]),
            json!({"metadata": {"labels": {"a": "1"}}, "list": [9, 2, 3]}),
        ),
        (
            json!([{"op": "add", "path": "/list/-", "value": 4}]),
            json!({"metadata": {"labels": {"a": "1"}}, "list": [1, 2, 3, 4]}),
        ),
        (
            json!([{"op": "add", "path": "/list/1", "value": 7}]),
            json!({"metadata": {"labels": {"a": "1"}}, "list": [1, 7, 2, 3]}),
        ),
        (
            json!([{"op": "move", "from": "/list", "path": "/moved"}]),
            json!({"metadata": {"labels": {"a": "1"}}, "moved": [1, 2, 3]}),
        ),
        (
            json!([{"op": "copy", "from": "/list/2", "path": "/c"}]),
            json!({"metadata": {"labels": {"a": "1"}}, "list": [1, 2, 3], "c": 3}),
        ),
        (
            json!([{"op": "test", "path": "/list/0", "value": 1}, {"op": "remove", "path": "/list"}]),
            json!({"metadata": {"labels": {"a": "1"}}}),
        ),
        (
            json!([{"op": "add", "path": "/metadata/labels/x~1y", "value": "z"}]),
            json!({"metadata": {"labels": {"a": "1", "x/y": "z"}}, "list": [1, 2, 3]}),
        ),
    ];
    for (patch, want) in ok {
        assert_eq!(json_patch(&doc, &patch), Ok(want), "{patch}");
    }
    let failing = [
        (json!([{"op": "test", "path": "/list/0", "value": 2}]), 422),
        (json!([{"op": "remove", "path": "/nope"}]), 422),
        (
            json!([{"op": "replace", "path": "/metadata/missing", "value": 1}]),
            422,
        ),
        (json!([{"op": "add", "path": "/list/9", "value": 1}]), 422),
        (json!([{"op": "frobnicate", "path": "/a"}]), 400),
        (json!({"op": "add"}), 400),
    ];
    for (patch, code) in failing {
        assert_eq!(
            json_patch(&doc, &patch).map_err(|e| e.code),
            Err(code),
            "{patch}"
        );
    }
}

#[test]
fn strategic_merge_table() {
    let pod = json!({
        "metadata": {"labels": {"app": "a"}, "finalizers": ["x"],
                     "ownerReferences": [{"uid": "u1", "name": "o1"}]},
        "spec": {"containers": [{"name": "c", "image": "i1",
                                  "ports": [{"containerPort": 80, "name": "http"}]}],
                 "tolerations": [{"key": "k"}]},
        "status": {"conditions": [{"type": "Ready", "status": "False"},
                                  {"type": "PodScheduled", "status": "True"}]}
    });
    let cases = [
        (
            "kubectl label",
            json!({"metadata": {"labels": {"tier": "fe"}}}),
            "/metadata/labels",
            json!({"app": "a", "tier": "fe"}),
        ),
        (
            "label removal",
            json!({"metadata": {"labels": {"app": null}}}),
            "/metadata/labels",
            json!({}),
        ),
        (
            "condition by type",
            json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
            "/status/conditions",
            json!([{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]),
        ),
        (
            "condition delete",
            json!({"status": {"conditions": [{"type": "Ready", "$patch": "delete"}]}}),
            "/status/conditions",
            json!([{"type": "PodScheduled", "status": "True"}]),
        ),
        (
            "container by name",
            json!({"spec": {"containers": [{"name": "c", "image": "i2"}]}}),
            "/spec/containers/0/image",
            json!("i2"),
        ),
        (
            "container port by containerPort",
            json!({"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 443}]}]}}),
            "/spec/containers/0/ports",
            json!([{"containerPort": 80, "name": "http"}, {"containerPort": 443}]),
        ),
        (
            "atomic list replaced",
            json!({"spec": {"tolerations": [{"key": "other"}]}}),
            "/spec/tolerations",
            json!([{"key": "other"}]),
        ),
        (
            "finalizers are a set",
            json!({"metadata": {"finalizers": ["y", "x"]}}),
            "/metadata/finalizers",
            json!(["x", "y"]),
        ),
        (
            "deleteFromPrimitiveList",
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}}),
            "/metadata/finalizers",
            json!([]),
        ),
        (
            "ownerReferences by uid",
            json!({"metadata": {"ownerReferences": [{"uid": "u2", "name": "o2"}]}}),
            "/metadata/ownerReferences",
            json!([{"uid": "u1", "name": "o1"}, {"uid": "u2", "name": "o2"}]),
        ),
        (
            "$patch replace",
            json!({"spec": {"$patch": "replace", "nodeName": "n"}}),
            "/spec",
            json!({"nodeName": "n"}),
        ),
        (
            "setElementOrder ignored",
            json!({"metadata": {"labels": {"b": "2"}}, "status": {"$setElementOrder/conditions": [{"type": "Ready"}]}}),
            "/status/conditions/0/type",
            json!("Ready"),
        ),
    ];
    for (what, patch, ptr, want) in cases {
        let got = apply(PatchType::Strategic, &pod, patch.to_string().as_bytes())
            .unwrap_or_else(|e| panic!("{what}: {e:?}"));
        assert_eq!(got.pointer(ptr), Some(&want), "{what}");
    }
    let st = json!({"status": {"podIPs": [{"ip": "10.0.0.1"}]}});
    let got = strategic(
        &st,
        &json!({"status": {"podIPs": [{"ip": "fd00::1"}]}}),
        &mut Vec::new(),
    );
    assert_eq!(
        got["status"]["podIPs"],
        json!([{"ip": "10.0.0.1"}, {"ip": "fd00::1"}])
    );
    let eps = json!({"endpoints": [{"addresses": ["10.0.0.1"]}], "subsets": [{"addresses": [{"ip": "a"}]}]});
    let got = strategic(
        &eps,
        &json!({"endpoints": [{"addresses": ["10.0.0.2"]}], "subsets": []}),
        &mut Vec::new(),
    );
    assert_eq!(
        got,
        json!({"endpoints": [{"addresses": ["10.0.0.2"]}], "subsets": []}),
        "atomic lists are replaced"
    );
    let svc = json!({"spec": {"ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "b"}]}});
    let got = strategic(
        &svc,
        &json!({"spec": {"ports": [{"port": 81, "targetPort": 8081}]}}),
        &mut Vec::new(),
    );
    assert_eq!(
        got["spec"]["ports"][1],
        json!({"port": 81, "name": "b", "targetPort": 8081})
    );
}

#[test]
fn content_types() {
    let cases = [
        ("application/merge-patch+json", Ok(PatchType::Merge)),
        (
            "application/json-patch+json; charset=utf-8",
            Ok(PatchType::Json),
        ),
        (
            "application/strategic-merge-patch+json",
            Ok(PatchType::Strategic),
        ),
        ("application/apply-patch+yaml", Err(415)),
        ("text/plain", Err(415)),
    ];
    for (ct, want) in cases {
        assert_eq!(
            PatchType::from_content_type(ct).map_err(|e| e.code),
            want,
            "{ct}"
        );
    }
}
