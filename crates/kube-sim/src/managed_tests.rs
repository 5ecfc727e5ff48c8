//! Table tests of managedFields bookkeeping and fieldManager validation.

use super::*;
use crate::resources::lookup;
use std::time::{Duration, UNIX_EPOCH};

fn w(manager: &str, secs: u64) -> Writer {
    Writer {
        manager: manager.into(),
        api_version: "v1".into(),
        subresource: String::new(),
        now: UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs),
    }
}

fn entries(v: &Value) -> Vec<(String, String, Value)> {
    v.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["manager"].as_str().unwrap_or("").to_string(),
                e["time"].as_str().unwrap_or("").to_string(),
                e["fieldsV1"].clone(),
            )
        })
        .collect()
}

#[test]
fn default_manager_is_the_user_agent_up_to_its_first_slash() {
    for (ua, want) in [
        ("kubectl/v1.33.0 (linux/amd64) kubernetes/abc", "kubectl"),
        ("kube-controller-manager/v1.33.0 (linux/amd64) kubernetes/abc/system:serviceaccount:kube-system:endpointslice-controller", "kube-controller-manager"),
        ("endpointd/0.1.0 (host_1)", "endpointd"),
        ("curl", "curl"),
        ("", ""),
    ] {
        assert_eq!(manager_from_user_agent(ua), want, "{ua}");
    }
    assert_eq!(manager_from_user_agent(&"é".repeat(100)).len(), 128);
}

#[test]
fn field_manager_validation_as_upstream() {
    assert!(validate_field_manager("endpointd", "CreateOptions").is_ok());
    assert!(validate_field_manager(&"m".repeat(128), "CreateOptions").is_ok());
    assert!(validate_field_manager("with space", "CreateOptions").is_ok());
    let long = validate_field_manager(&"m".repeat(129), "UpdateOptions").expect_err("long");
    let s = long.to_status();
    assert_eq!(s["code"], 422);
    assert_eq!(
        s["message"],
        "UpdateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes"
    );
    assert_eq!(s["details"]["kind"], "UpdateOptions");
    let bad = validate_field_manager("a\tb", "PatchOptions").expect_err("tab");
    let s = bad.to_status();
    assert!(
        s["message"]
            .as_str()
            .unwrap_or("")
            .contains("invalid character U+0009 (at position 1)"),
        "{s}"
    );
}

#[test]
fn two_managers_one_entry_each_replaced_on_each_write() {
    let info = lookup("", "v1", "endpoints").expect("endpoints");
    let mut v = json!({"metadata": {"name": "web", "labels": {"app": "web"}},
                       "subsets": [{"addresses": [{"ip": "10.0.0.1"}]}]});
    on_create(info, &w("kube-controller-manager", 0), &mut v);
    let e = entries(&v);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].0, "kube-controller-manager");
    assert_eq!(e[0].1, "2023-11-14T22:13:20Z");
    assert_eq!(
        e[0].2,
        json!({"f:metadata": {"f:labels": {}}, "f:subsets": {}})
    );
    let entry = &v["metadata"]["managedFields"][0];
    assert_eq!(entry["operation"], "Update");
    assert_eq!(entry["apiVersion"], "v1");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert!(entry.get("subresource").is_none());

    // Another manager changes the subsets: a second entry, later.
    let old = v.clone();
    let mut new = v.clone();
    new["subsets"] = json!([{"addresses": [{"ip": "10.0.0.2"}]}]);
    if let Some(m) = new["metadata"].as_object_mut() {
        m.remove("managedFields"); // as a typed client that drops them
    }
    on_update(info, &w("endpointd", 5), &old, &mut new);
    let e = entries(&new);
    assert_eq!(
        e.iter().map(|x| x.0.as_str()).collect::<Vec<_>>(),
        ["kube-controller-manager", "endpointd"]
    );
    assert_eq!(e[1].1, "2023-11-14T22:13:25Z");
    assert_eq!(e[1].2, json!({"f:subsets": {}}));

    // The first manager writes again: its entry is replaced (one per
    // manager), its fields merged, and it is now the latest.
    let old = new.clone();
    let mut again = new.clone();
    again["metadata"]["annotations"] = json!({"a": "b"});
    on_update(info, &w("kube-controller-manager", 9), &old, &mut again);
    let e = entries(&again);
    assert_eq!(e.len(), 2);
    assert_eq!(e[1].0, "kube-controller-manager");
    assert_eq!(e[1].1, "2023-11-14T22:13:29Z");
    assert_eq!(
        e[1].2,
        json!({"f:metadata": {"f:labels": {}, "f:annotations": {}}, "f:subsets": {}})
    );

    // A write that changes nothing records nothing.
    let old = again.clone();
    let mut same = again.clone();
    on_update(info, &w("someone", 20), &old, &mut same);
    assert_eq!(same, again);

    // `[{}]` strips them.
    let mut reset = again.clone();
    reset["metadata"]["managedFields"] = json!([{}]);
    reset["subsets"] = json!([]);
    on_update(info, &w("kubectl", 30), &again, &mut reset);
    assert!(reset["metadata"].get("managedFields").is_none(), "{reset}");
}

#[test]
fn status_writes_are_their_own_entry() {
    let info = lookup("", "v1", "pods").expect("pods");
    let old = json!({"metadata": {"name": "p"}, "spec": {"containers": []}, "status": {"phase": "Pending"}});
    let mut new = old.clone();
    new["status"]["phase"] = json!("Running");
    let mut kubelet = w("kubelet", 1);
    kubelet.subresource = "status".into();
    on_update(info, &kubelet, &old, &mut new);
    let mf = &new["metadata"]["managedFields"][0];
    assert_eq!(mf["subresource"], "status");
    assert_eq!(mf["fieldsV1"], json!({"f:status": {}}));
}
