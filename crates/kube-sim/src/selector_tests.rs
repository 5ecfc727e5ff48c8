//! Table tests for [`super`] (selector).

use super::*;
use serde_json::json;

#[test]
fn label_selector_table() {
    let obj = json!({"metadata": {"labels": {"app": "web", "tier": "fe", "v": "1"}}});
    let none = json!({"metadata": {}});
    let cases: &[(&str, bool, bool)] = &[
        // selector, matches obj, matches an object without labels
        ("", true, true),
        ("app=web", true, false),
        ("app==web", true, false),
        ("app=db", false, false),
        ("app!=db", true, true),
        ("app!=web", false, true),
        ("app in (web,db)", true, false),
        ("app in (db)", false, false),
        ("app notin (db)", true, true),
        ("app notin (web, db)", false, true),
        ("app", true, false),
        ("!app", false, true),
        ("missing", false, false),
        ("!missing", true, true),
        ("app=web,tier=fe", true, false),
        ("app=web,tier=be", false, false),
        ("app in (web,db),!missing, v=1", true, false),
    ];
    for (sel, want, want_none) in cases {
        let s = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
        assert_eq!(s.matches_object(&obj), *want, "{sel}");
        assert_eq!(s.matches_object(&none), *want_none, "{sel} (no labels)");
    }
}

#[test]
fn label_selector_errors() {
    for bad in ["app in web", "a b", "app=we b", "=x", "app in (a", "!"] {
        assert!(LabelSelector::parse(bad).is_err(), "{bad} must not parse");
    }
}

#[test]
fn field_selector_table() {
    let pod = json!({"metadata": {"name": "p", "namespace": "ns"},
                     "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
    let cases: &[(&str, bool)] = &[
        ("metadata.name=p", true),
        ("metadata.name==p", true),
        ("metadata.name=q", false),
        ("metadata.name!=q", true),
        ("metadata.namespace=ns,spec.nodeName=n1", true),
        ("spec.nodeName!=n1", false),
        ("status.phase=Running", true),
        ("status.phase!=Succeeded,status.phase!=Failed", true),
    ];
    for (sel, want) in cases {
        let s = FieldSelector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
        assert_eq!(s.matches_object(&pod), *want, "{sel}");
    }
    let unscheduled = json!({"metadata": {"name": "p"}});
    let s = FieldSelector::parse("spec.nodeName=").unwrap_or_default();
    assert!(s.matches_object(&unscheduled));
    assert_eq!(
        FieldSelector::parse("spec.foo=x"),
        Err(SelectorError("field label not supported: spec.foo".into()))
    );
    let event =
        json!({"involvedObject": {"kind": "Pod", "name": "p"}, "source": {"component": "kubelet"}});
    let node = json!({"spec": {}});
    let cases: &[(&str, &str, &Value, Option<bool>)] = &[
        (
            "events",
            "involvedObject.kind=Pod,involvedObject.name=p",
            &event,
            Some(true),
        ),
        ("events", "source=kubelet", &event, Some(true)),
        ("events", "spec.nodeName=x", &event, None),
        ("services", "spec.nodeName=x", &event, None),
        ("nodes", "spec.unschedulable=false", &node, Some(true)),
        ("nodes", "spec.unschedulable=true", &node, Some(false)),
        ("pods", "spec.hostNetwork!=true", &pod, Some(true)),
        ("endpointslices", "metadata.name=p", &pod, Some(true)),
    ];
    for (res, sel, obj, want) in cases {
        let got = FieldSelector::parse_for(res, sel)
            .ok()
            .map(|s| s.matches_object(obj));
        assert_eq!(got, *want, "{res}: {sel}");
    }
    assert_eq!(
        FieldSelector::parse("metadata.name=x")
            .unwrap_or_default()
            .pinned_name(),
        Some("x")
    );
}
