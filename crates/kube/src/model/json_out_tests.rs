use super::*;
use crate::model::{
    EndpointConditions, EndpointHints, ForNode, ForZone, IStr, Object, ObjectMeta, Protocol,
    RefMore, Uid,
};
use compact_str::CompactString;
use proptest::prelude::*;

/// What the hand-written writer gives for `x` (it must have one).
fn written<T: Object>(x: &T) -> Vec<u8> {
    let mut v = Vec::new();
    assert!(x.write_json(&mut v), "no hand-written writer");
    v
}

/// `json` decoded as `T` is written as serde_json writes it.
fn same<T: Object + serde::Serialize>(json: &str) {
    let x: T = serde_json::from_str(json).expect(json);
    let want = serde_json::to_vec(&x).expect("serde");
    assert_eq!(
        String::from_utf8_lossy(&written(&x)),
        String::from_utf8_lossy(&want),
        "{json}"
    );
}

#[test]
fn endpoint_slices_are_written_as_serde_writes_them() {
    for json in [
        r#"{"addressType":"IPv4"}"#,
        r#"{"addressType":"IPv6","endpoints":[],"ports":[]}"#,
        r#"{"addressType":"FQDN","endpoints":[{"addresses":[]}]}"#,
        r#"{"addressType":"IP"}"#,
        r#"{"addressType":"Bogus"}"#,
        r#"{"metadata":{"name":"s-abc","namespace":"ns","uid":"0f0e0d0c-0b0a-0908-0706-050403020100","resourceVersion":"12","generation":3,"creationTimestamp":"2026-01-01T00:00:00Z","labels":{"kubernetes.io/service-name":"s","endpointslice.kubernetes.io/managed-by":"endpointslice-controller.k8s.io"},"annotations":{"endpoints.kubernetes.io/last-change-trigger-time":"2026-01-01T00:00:01Z"},"ownerReferences":[{"apiVersion":"v1","kind":"Service","name":"s","uid":"u-1","controller":true,"blockOwnerDeletion":true}],"managedFields":[{"manager":"x"}]},
            "addressType":"IPv4",
            "endpoints":[
              {"addresses":["10.0.0.1"],"conditions":{"ready":true,"serving":true,"terminating":false},"targetRef":{"kind":"Pod","namespace":"ns","name":"p-1","uid":"0f0e0d0c-0b0a-0908-0706-050403020100"},"nodeName":"n-1","zone":"z-1"},
              {"addresses":["10.0.0.2","10.0.0.3"],"conditions":{},"hostname":"h","targetRef":{"kind":"Pod","namespace":"ns","name":"p-2","uid":"not-a-uuid","apiVersion":"v1","resourceVersion":"77","fieldPath":"spec"},"hints":{"forZones":[{"name":"z-1"}],"forNodes":[{"name":"n-1"}]}},
              {"addresses":["10.0.0.4"],"conditions":{"ready":false},"targetRef":{},"hints":{}},
              {"addresses":["10.0.0.5"],"conditions":{"serving":false,"terminating":true},"targetRef":{"name":"only-name"},"nodeName":"","zone":""}
            ],
            "ports":[{"name":"http","protocol":"TCP","port":8080,"appProtocol":"h2c"},{"port":0},{"name":"","protocol":"UDP","port":-1},{"protocol":"SCTP","port":2147483647},{"port":-2147483648},{}]}"#,
        r#"{"addressType":"IPv4","endpoints":[{"addresses":["a\"b","c\\d","e\nf","\u0001\u001f","ü→€","\u007f"],"conditions":{"ready":true},"hostname":"h\"","targetRef":{"kind":"P\"od","namespace":"n\\s","name":"p\t","uid":"u\"","apiVersion":"v\u0002","resourceVersion":"r\r","fieldPath":"f\u000c"},"nodeName":"n\b","zone":"z\""}],"ports":[{"name":"h\"","protocol":"TCP","port":1,"appProtocol":"a\\"}]}"#,
    ] {
        same::<EndpointSlice>(json);
    }
}

#[test]
fn endpoints_are_written_as_serde_writes_them() {
    for json in [
        r#"{}"#,
        r#"{"subsets":[]}"#,
        r#"{"subsets":[{}]}"#,
        r#"{"metadata":{"name":"s","namespace":"ns","labels":{"a":"b"},"annotations":{"endpoints.kubernetes.io/last-change-trigger-time":"2026-01-01T00:00:01Z"},"resourceVersion":"5"},
            "subsets":[{"addresses":[{"ip":"10.0.0.1","nodeName":"n-1","targetRef":{"kind":"Pod","namespace":"ns","name":"p-1","uid":"0f0e0d0c-0b0a-0908-0706-050403020100"}},{"ip":"10.0.0.2","hostname":"h","nodeName":""}],
                        "notReadyAddresses":[{"ip":"10.0.0.3","targetRef":{"kind":"Pod","name":"p-3","resourceVersion":"9"}}],
                        "ports":[{"name":"http","port":80,"protocol":"TCP","appProtocol":"http"},{"port":0},{"name":"","port":-5,"protocol":"UDP"}]},
                       {"notReadyAddresses":[{"ip":""}]},
                       {"ports":[{"port":1}]}]}"#,
        r#"{"subsets":[{"addresses":[{"ip":"a\"b","hostname":"h\\","nodeName":"n\n","targetRef":{"kind":"\u0000","name":"ü"}}],"ports":[{"name":"\"","port":1,"appProtocol":"\u001f"}]}]}"#,
    ] {
        same::<Endpoints>(json);
    }
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z0-9.-]{0,12}",
        1 => "\\PC{0,6}",
        1 => proptest::collection::vec(0u8..0x80, 0..6)
            .prop_map(|b| b.into_iter().map(char::from).collect::<String>()),
    ]
}

fn reference() -> impl Strategy<Value = ObjectReference> {
    (text(), text(), text(), text(), text(), text(), text()).prop_map(
        |(kind, ns, name, uid, api, rv, fp)| {
            let mut r = ObjectReference {
                kind: IStr::from(kind.as_str()),
                namespace: IStr::from(ns.as_str()),
                name: name.into(),
                uid: Uid::from(uid.as_str()),
                more: None,
            };
            r.set_more(RefMore {
                api_version: api.into(),
                resource_version: rv.into(),
                field_path: fp.into(),
            });
            r
        },
    )
}

fn opt_bool() -> impl Strategy<Value = Option<bool>> {
    proptest::option::of(any::<bool>())
}

fn endpoint_strategy() -> impl Strategy<Value = Endpoint> {
    (
        proptest::collection::vec(text(), 0..3),
        (opt_bool(), opt_bool(), opt_bool()),
        proptest::option::of(text()),
        proptest::option::of(reference()),
        (proptest::option::of(text()), proptest::option::of(text())),
        proptest::option::of((
            proptest::collection::vec(text(), 0..2),
            proptest::collection::vec(text(), 0..2),
        )),
    )
        .prop_map(
            |(addrs, (ready, serving, terminating), host, tr, (node, zone), hints)| Endpoint {
                addresses: addrs
                    .into_iter()
                    .map(CompactString::from)
                    .collect::<Vec<_>>()
                    .into(),
                conditions: EndpointConditions {
                    ready,
                    serving,
                    terminating,
                },
                hostname: host.map(|h| IStr::from(h.as_str())),
                target_ref: tr,
                node_name: node.map(|n| IStr::from(n.as_str())),
                zone: zone.map(|z| IStr::from(z.as_str())),
                hints: hints.map(|(z, n)| {
                    Box::new(EndpointHints {
                        for_zones: z
                            .into_iter()
                            .map(|name| ForZone { name: name.into() })
                            .collect(),
                        for_nodes: n
                            .into_iter()
                            .map(|name| ForNode { name: name.into() })
                            .collect(),
                    })
                }),
            },
        )
}

fn protocol() -> impl Strategy<Value = Option<Protocol>> {
    proptest::option::of(prop_oneof![
        Just("TCP"),
        Just("UDP"),
        Just("SCTP"),
        Just("odd\"")
    ])
    .prop_map(|p| p.map(Protocol::parse))
}

fn meta() -> impl Strategy<Value = ObjectMeta> {
    (text(), text(), text()).prop_map(|(name, ns, rv)| {
        let json = serde_json::json!({"name": name, "namespace": ns, "resourceVersion": rv,
            "labels": {"kubernetes.io/service-name": name}});
        serde_json::from_value(json).unwrap_or_default()
    })
}

proptest! {
    #[test]
    fn any_slice_is_written_as_serde_writes_it(
        m in meta(),
        t in prop_oneof![Just(AddressType::IPv4), Just(AddressType::IPv6), Just(AddressType::FQDN)],
        eps in proptest::collection::vec(endpoint_strategy(), 0..4),
        ports in proptest::collection::vec(
            (proptest::option::of(text()), protocol(), proptest::option::of(any::<i32>()), proptest::option::of(text())),
            0..3),
    ) {
        let mut s = EndpointSlice::new(t);
        s.metadata = m;
        s.endpoints = eps;
        s.ports = ports.into_iter().map(|(name, protocol, port, app)| EndpointSlicePort {
            name: name.map(Into::into), protocol, port, app_protocol: app.map(Into::into),
        }).collect();
        prop_assert_eq!(written(&s), serde_json::to_vec(&s).expect("serde"));
    }

    #[test]
    fn any_endpoints_is_written_as_serde_writes_it(
        m in meta(),
        subsets in proptest::collection::vec((
            proptest::collection::vec((text(), text(), proptest::option::of(text()), proptest::option::of(reference())), 0..3),
            proptest::collection::vec((text(), text(), proptest::option::of(text()), proptest::option::of(reference())), 0..3),
            proptest::collection::vec((text(), any::<i32>(), protocol(), proptest::option::of(text())), 0..3),
        ), 0..3),
    ) {
        let addr = |(ip, host, node, tr): (String, String, Option<String>, Option<ObjectReference>)| EndpointAddress {
            ip: ip.into(),
            hostname: IStr::from(host.as_str()),
            node_name: node.map(|n| IStr::from(n.as_str())),
            target_ref: tr,
        };
        let e = Endpoints {
            metadata: m,
            subsets: subsets.into_iter().map(|(a, n, p)| EndpointSubset {
                addresses: a.into_iter().map(addr).collect(),
                not_ready_addresses: n.into_iter().map(addr).collect(),
                ports: p.into_iter().map(|(name, port, protocol, app)| EndpointPort {
                    name: name.into(), port, protocol, app_protocol: app.map(Into::into),
                }).collect(),
            }).collect(),
            ..Endpoints::default()
        };
        prop_assert_eq!(written(&e), serde_json::to_vec(&e).expect("serde"));
    }
}

#[test]
fn needs_escape_finds_exactly_the_bytes_json_escapes() {
    // Every byte value at every position of strings of 0..=17 bytes.
    for len in 0..=17usize {
        for pos in 0..len.max(1) {
            for b in 0u8..=255 {
                let mut s = vec![b'a'; len];
                if len > 0 {
                    s[pos] = b;
                }
                let want = s.iter().any(|&c| c < 0x20 || c == b'"' || c == b'\\');
                assert_eq!(needs_escape(&s), want, "len {len} pos {pos} byte {b:#x}");
            }
        }
    }
}

proptest! {
    #[test]
    fn needs_escape_agrees_on_any_bytes(s in proptest::collection::vec(any::<u8>(), 0..40)) {
        let want = s.iter().any(|&c| c < 0x20 || c == b'"' || c == b'\\');
        prop_assert_eq!(needs_escape(&s), want);
    }
}
