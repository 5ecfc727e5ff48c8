//! Hand-built protobuf bodies: special types, omitempty, inline structs,
//! packed and unknown fields, and malformed input.

use super::decode::go_duration;
use super::wire::{put_bytes, put_uint};
use super::*;
use serde_json::json;

fn msg(build: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut b = Vec::new();
    build(&mut b);
    b
}

fn body(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let tm = msg(|b| {
        put_bytes(b, 1, api_version.as_bytes());
        put_bytes(b, 2, kind.as_bytes());
    });
    let mut out = MAGIC.to_vec();
    put_bytes(&mut out, 1, &tm);
    put_bytes(&mut out, 2, raw);
    put_bytes(&mut out, 3, b"");
    put_bytes(&mut out, 4, b"");
    out
}

fn meta(name: &str) -> Vec<u8> {
    msg(|b| {
        put_bytes(b, 1, name.as_bytes());
        put_bytes(b, 2, b"");
        put_uint(b, 7, 0);
        put_bytes(b, 8, b"");
        put_bytes(
            b,
            11,
            &msg(|e| {
                put_bytes(e, 1, b"app");
                put_bytes(e, 2, b"web");
            }),
        );
        put_bytes(b, 99, b"unknown field, skipped");
    })
}

#[test]
fn pod_with_special_types() {
    let port = msg(|b| {
        put_bytes(b, 1, b"http");
        put_uint(b, 2, 0);
        put_uint(b, 3, 8080);
    });
    let probe = msg(|b| {
        put_bytes(
            b,
            1,
            &msg(|h| {
                put_bytes(
                    h,
                    2,
                    &msg(|g| {
                        put_bytes(g, 1, b"/healthz");
                        put_bytes(
                            g,
                            2,
                            &msg(|i| {
                                put_uint(i, 1, 1);
                                put_uint(i, 2, 0);
                                put_bytes(i, 3, b"http");
                            }),
                        );
                    }),
                );
            }),
        );
        put_uint(b, 2, 0);
        put_uint(b, 7, 0); // pointer: kept at zero
    });
    let res = msg(|b| {
        put_bytes(
            b,
            1,
            &msg(|e| {
                put_bytes(e, 1, b"cpu");
                put_bytes(e, 2, &msg(|q| put_bytes(q, 1, b"500m")));
            }),
        );
    });
    let env = msg(|b| {
        put_bytes(b, 1, b"KEY");
        put_bytes(
            b,
            3,
            &msg(|s| {
                put_bytes(
                    s,
                    3,
                    &msg(|c| {
                        put_bytes(c, 1, &msg(|l| put_bytes(l, 1, b"cm")));
                        put_bytes(c, 2, b"k");
                    }),
                );
            }),
        );
    });
    let container = msg(|b| {
        put_bytes(b, 1, b"c");
        put_bytes(b, 2, b"nginx");
        put_bytes(b, 6, &port);
        put_bytes(b, 7, &env);
        put_bytes(b, 8, &res);
        put_bytes(b, 11, &probe);
        put_uint(b, 16, 0);
    });
    let sc = msg(|b| put_bytes(b, 4, &[0x02, 0x03])); // packed supplementalGroups
    let spec = msg(|b| {
        put_bytes(b, 2, &container);
        put_uint(b, 4, 30);
        put_bytes(b, 14, &sc);
        put_bytes(b, 6, b"");
    });
    let status = msg(|b| {
        put_bytes(b, 7, &msg(|t| put_uint(t, 1, 1_700_000_000)));
    });
    let pod = msg(|b| {
        put_bytes(b, 1, &meta("web"));
        put_bytes(b, 2, &spec);
        put_bytes(b, 3, &status);
    });
    let v = decode_object("", "v1", "Pod", &body("v1", "Pod", &pod)).expect("decode");
    assert_eq!(
        v,
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "creationTimestamp": null, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx",
                "ports": [{"name": "http", "containerPort": 8080}],
                "env": [{"name": "KEY", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}],
                "resources": {"limits": {"cpu": "500m"}},
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"},
                                   "terminationGracePeriodSeconds": 0}}],
                "terminationGracePeriodSeconds": 30,
                "securityContext": {"supplementalGroups": [2, 3]}},
            "status": {"startTime": "2023-11-14T22:13:20Z"}})
    );
}

#[test]
fn lease_micro_time_and_events_api() {
    let spec = msg(|b| {
        put_bytes(b, 1, b"me");
        put_uint(b, 2, 15);
        put_bytes(
            b,
            4,
            &msg(|t| {
                put_uint(t, 1, 1_700_000_000);
                put_uint(t, 2, 123_456_789);
            }),
        );
        put_uint(b, 5, 0);
    });
    let lease = msg(|b| {
        put_bytes(b, 1, &meta("l"));
        put_bytes(b, 2, &spec);
    });
    let v = decode_object(
        "coordination.k8s.io",
        "v1",
        "Lease",
        &body("coordination.k8s.io/v1", "Lease", &lease),
    )
    .expect("lease");
    assert_eq!(
        v["spec"],
        json!({"holderIdentity": "me", "leaseDurationSeconds": 15,
               "renewTime": "2023-11-14T22:13:20.123456Z", "leaseTransitions": 0})
    );
    let ev = msg(|b| {
        put_bytes(b, 1, &meta("e"));
        put_bytes(b, 2, b"");
        put_bytes(b, 7, b"Started");
        put_bytes(b, 8, &msg(|r| put_bytes(r, 1, b"Pod")));
        put_uint(b, 15, 0);
    });
    let v = decode_object(
        "events.k8s.io",
        "v1",
        "Event",
        &body("events.k8s.io/v1", "Event", &ev),
    )
    .expect("event");
    assert_eq!(v["eventTime"], Value::Null);
    assert_eq!(v["reason"], "Started");
    assert_eq!(v["regarding"], json!({"kind": "Pod"}));
    assert!(v.get("deprecatedCount").is_none());
}

#[test]
fn malformed_bodies_are_errors_naming_the_problem() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"{\"kind\":\"Pod\"}".to_vec(), "magic"),
        (b"k8s\x00\x0a\x05\x0a".to_vec(), "runs past the end"),
        (
            body("v1", "Pod", &msg(|b| put_uint(b, 1, 5))),
            "Pod.metadata (field 1)",
        ),
        (
            body(
                "v1",
                "Pod",
                &msg(|b| put_bytes(b, 1, &msg(|m| put_bytes(m, 1, &[0xff, 0xfe])))),
            ),
            "UTF-8",
        ),
        (body("v1", "Pod", &[0x0a, 0x80]), "truncated varint"),
        (body("v1", "Pod", &[0x0f]), "wire type 7"),
    ];
    for (b, want) in cases {
        let e = decode_object("", "v1", "Pod", &b)
            .expect_err(want)
            .to_string();
        assert!(e.contains(want), "{e} does not mention {want}");
    }
    let mut enc = body("v1", "Pod", b"");
    put_bytes(&mut enc, 3, b"gzip");
    assert!(decode_object("", "v1", "Pod", &enc)
        .expect_err("gzip")
        .to_string()
        .contains("contentEncoding"));
}

#[test]
fn a_body_of_another_kind_is_decoded_as_that_kind() {
    let pod = msg(|b| put_bytes(b, 1, &meta("p")));
    let v = decode_object("", "v1", "Namespace", &body("v1", "Pod", &pod)).expect("decodes");
    assert_eq!(v["kind"], "Pod");
    let info = crate::resources::lookup("", "v1", "namespaces").expect("ns");
    let v = decode_body(info, Some(PROTOBUF), &body("v1", "Pod", &pod)).expect("decodes");
    let e = crate::rest::check_shape(info, v).map_err(|e| e.code);
    assert_eq!(e.err(), Some(400));
    let e = decode_object("", "v1", "Pod", &body("apps/v1", "Deployment", b""))
        .expect_err("unknown")
        .to_string();
    assert!(e.contains("no protobuf schema for Deployment"), "{e}");
}

#[test]
fn content_types() {
    let info = crate::resources::lookup("", "v1", "namespaces").expect("ns");
    let ok = |ct: Option<&str>, b: &[u8]| decode_body(info, ct, b).map_err(|e| e.code);
    assert_eq!(ok(None, b"{\"a\":1}"), Ok(json!({"a": 1})));
    assert_eq!(
        ok(Some("application/json; charset=utf-8"), b"{}"),
        Ok(json!({}))
    );
    assert_eq!(ok(Some("application/yaml"), b"a: 1\n"), Ok(json!({"a": 1})));
    assert_eq!(ok(Some("text/plain"), b"{}"), Err(415));
    assert_eq!(ok(Some(PROTOBUF), b"{}"), Err(400));
    assert_eq!(ok(Some("application/json"), b"\x00"), Err(400));
}

#[test]
fn go_durations() {
    for (ns, s) in [
        (0, "0s"),
        (1, "1ns"),
        (1_500, "1.5µs"),
        (2_000_000, "2ms"),
        (1_500_000_000, "1.5s"),
        (90_000_000_000, "1m30s"),
        (3_600_000_000_000, "1h0m0s"),
        (-5_000_000_000, "-5s"),
    ] {
        assert_eq!(go_duration(ns), s);
    }
}
