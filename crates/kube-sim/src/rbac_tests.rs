//! Table tests of RBAC evaluation and the Forbidden message.

use super::*;
use crate::authn::user_with_groups;

fn res(verb: &str, group: &str, resource: &str, sub: &str, ns: &str, name: &str) -> Attributes {
    Attributes::Resource {
        verb: verb.into(),
        group: group.into(),
        resource: resource.into(),
        subresource: sub.into(),
        namespace: ns.into(),
        name: name.into(),
    }
}

fn policy() -> Policy {
    let mut p = Policy::default();
    let items = json!([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "read-pods"},
         "rules": [{"apiGroups": [""], "resources": ["pods", "services/status"], "verbs": ["get", "list", "watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "slices-all"},
         "rules": [{"apiGroups": ["discovery.k8s.io"], "resources": ["*"], "verbs": ["*"]},
                   {"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["update"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "lease", "namespace": "kube-system"},
         "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "update"],
                    "resourceNames": ["endpointd"]},
                   {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "sa-read"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "read-pods"},
         "subjects": [{"kind": "ServiceAccount", "name": "ep", "namespace": "kube-system"}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "lease", "namespace": "kube-system"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "lease"},
         "subjects": [{"kind": "ServiceAccount", "name": "ep"}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "slices-in-apps", "namespace": "apps"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "slices-all"},
         "subjects": [{"kind": "Group", "name": "system:serviceaccounts:kube-system"}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "alice-missing-role"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "nope"},
         "subjects": [{"kind": "User", "name": "alice"}]}
    ]);
    for i in items.as_array().into_iter().flatten() {
        assert!(is_rbac(i));
        p.add(i).expect("valid item");
    }
    p
}

#[test]
fn allows_table() {
    let p = policy();
    let sa = user_with_groups("system:serviceaccount:kube-system:ep", &[]);
    let other_sa = user_with_groups("system:serviceaccount:default:ep", &[]);
    let alice = user_with_groups("alice", &[]);
    let admin = user_with_groups("root", &[MASTERS]);
    let c = "coordination.k8s.io";
    let d = "discovery.k8s.io";
    let cases: Vec<(&UserInfo, Attributes, bool)> = vec![
        (&sa, res("list", "", "pods", "", "", ""), true),
        (&sa, res("watch", "", "pods", "", "ns1", ""), true),
        (&sa, res("get", "", "pods", "", "ns1", "p"), true),
        (&sa, res("create", "", "pods", "", "ns1", ""), false),
        (&sa, res("list", "", "pods", "status", "ns1", ""), false),
        (&sa, res("get", "", "services", "status", "ns1", "s"), true),
        (&sa, res("get", "", "services", "", "ns1", "s"), false),
        (&sa, res("list", "apps", "pods", "", "", ""), false),
        // A Role bound in kube-system only; resourceNames.
        (
            &sa,
            res("get", c, "leases", "", "kube-system", "endpointd"),
            true,
        ),
        (
            &sa,
            res("get", c, "leases", "", "kube-system", "other"),
            false,
        ),
        (&sa, res("list", c, "leases", "", "kube-system", ""), false),
        (&sa, res("create", c, "leases", "", "kube-system", ""), true),
        (&sa, res("create", c, "leases", "", "default", ""), false),
        (&sa, res("create", c, "leases", "", "", ""), false),
        // A ClusterRole bound by a RoleBinding to a group, in one namespace;
        // "*" verbs and resources, "*/status".
        (
            &sa,
            res("deletecollection", d, "endpointslices", "", "apps", ""),
            true,
        ),
        (
            &sa,
            res("update", d, "endpointslices", "", "web", "x"),
            false,
        ),
        (&sa, res("list", d, "endpointslices", "", "", ""), false),
        (&sa, res("update", "", "pods", "status", "apps", "p"), true),
        (&sa, res("patch", "", "pods", "status", "apps", "p"), false),
        (&other_sa, res("list", "", "pods", "", "", ""), false),
        (
            &other_sa,
            res("list", d, "endpointslices", "", "apps", ""),
            false,
        ),
        (&alice, res("get", "", "pods", "", "ns1", "p"), false),
        (&admin, res("delete", "", "nodes", "", "", "n"), true),
    ];
    for (i, (u, a, want)) in cases.iter().enumerate() {
        assert_eq!(p.allows(u, a), *want, "case {i}: {} {a:?}", u.name);
    }
    let boot = Policy::bootstrap();
    let get = |path: &str| Attributes::NonResource {
        verb: "get".into(),
        path: path.into(),
    };
    assert!(boot.allows(&sa, &get("/apis/discovery.k8s.io/v1")));
    assert!(!boot.allows(&sa, &get("/sim/faults")));
    assert!(!boot.allows(&UserInfo::new("system:anonymous", &[]), &get("/api")));
}

#[test]
fn forbidden_messages_as_kube_apiserver() {
    let u = UserInfo::new("system:serviceaccount:kube-system:ep", &[]);
    let cases = [
        (
            res("list", "", "pods", "", "", ""),
            "pods is forbidden: User \"system:serviceaccount:kube-system:ep\" cannot list resource \"pods\" in API group \"\" at the cluster scope",
        ),
        (
            res("update", "discovery.k8s.io", "endpointslices", "", "x", "web-abc"),
            "endpointslices.discovery.k8s.io \"web-abc\" is forbidden: User \"system:serviceaccount:kube-system:ep\" cannot update resource \"endpointslices\" in API group \"discovery.k8s.io\" in the namespace \"x\"",
        ),
        (
            res("update", "", "pods", "status", "x", "p"),
            "pods \"p\" is forbidden: User \"system:serviceaccount:kube-system:ep\" cannot update resource \"pods/status\" in API group \"\" in the namespace \"x\"",
        ),
        (
            Attributes::NonResource { verb: "post".into(), path: "/sim/faults".into() },
            "forbidden: User \"system:serviceaccount:kube-system:ep\" cannot post path \"/sim/faults\"",
        ),
    ];
    for (a, want) in cases {
        let e = forbidden(&u, &a);
        assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
        assert_eq!(e.message, want);
    }
    let e = forbidden(
        &u,
        &res("update", "discovery.k8s.io", "endpointslices", "", "x", "n"),
    );
    assert_eq!(
        e.details,
        Some(json!({"name": "n", "group": "discovery.k8s.io", "kind": "endpointslices"}))
    );
}

#[test]
fn bad_items_are_refused() {
    let mut p = Policy::default();
    for bad in [
        json!({"kind": "ClusterRole", "metadata": {}}),
        json!({"kind": "ClusterRoleBinding", "metadata": {"name": "b"}, "roleRef": {"kind": "Role", "name": "r"}}),
        json!({"kind": "Pod", "metadata": {"name": "p"}}),
    ] {
        assert!(p.add(&bad).is_err(), "{bad}");
    }
    assert_eq!(p, Policy::default());
}

#[test]
fn a_later_item_of_the_same_name_replaces_the_earlier() {
    let mut p = policy();
    // read-pods again, now without pods: the old rules are gone.
    p.add(
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "read-pods"},
        "rules": [{"apiGroups": [""], "resources": ["services"], "verbs": ["get"]}]}),
    )
    .expect("valid");
    let sa = user_with_groups("system:serviceaccount:kube-system:ep", &[]);
    assert!(!p.allows(&sa, &res("list", "", "pods", "", "", "")));
    assert!(p.allows(&sa, &res("get", "", "services", "", "x", "s")));
    // The binding sa-read again, for someone else: ep loses it.
    p.add(&json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "sa-read"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "read-pods"},
        "subjects": [{"kind": "User", "name": "bob"}]}))
        .expect("valid");
    assert!(!p.allows(&sa, &res("get", "", "services", "", "x", "s")));
}

#[test]
fn allowed_by_names_the_binding_as_kube_apiserver_and_agrees_with_allows() {
    let p = policy();
    let sa = user_with_groups("system:serviceaccount:kube-system:ep", &[]);
    let admin = user_with_groups("admin", &[MASTERS]);
    let cases = [
        (
            &sa,
            res("list", "", "pods", "", "", ""),
            Some("RBAC: allowed by ClusterRoleBinding \"sa-read\" of ClusterRole \"read-pods\" to ServiceAccount \"ep/kube-system\""),
        ),
        (
            &sa,
            res("create", "coordination.k8s.io", "leases", "", "kube-system", ""),
            Some("RBAC: allowed by RoleBinding \"lease/kube-system\" of Role \"lease\" to ServiceAccount \"ep/kube-system\""),
        ),
        (
            &sa,
            res("watch", "discovery.k8s.io", "endpointslices", "", "apps", ""),
            Some("RBAC: allowed by RoleBinding \"slices-in-apps/apps\" of ClusterRole \"slices-all\" to Group \"system:serviceaccounts:kube-system\""),
        ),
        (&sa, res("delete", "", "pods", "", "", ""), None),
        (
            &sa,
            res("create", "coordination.k8s.io", "leases", "", "", ""),
            None,
        ),
        (&admin, res("delete", "", "nodes", "", "", "n"), Some("")),
    ];
    for (i, (u, a, want)) in cases.iter().enumerate() {
        assert_eq!(p.allowed_by(u, a).as_deref(), *want, "case {i}: {a:?}");
        assert_eq!(p.allows(u, a), want.is_some(), "case {i}: agrees");
    }
    let boot = Policy::bootstrap();
    let ssar = res(
        "create",
        "authorization.k8s.io",
        "selfsubjectaccessreviews",
        "",
        "",
        "",
    );
    assert!(boot.allows(&sa, &ssar), "system:basic-user");
    assert!(!boot.allows(&UserInfo::new("system:anonymous", &[]), &ssar));
}
