//! Table tests of the pure preflight checks.

use super::*;
use crate::preflight::permissions::PERMISSIONS;

const T0: u64 = 1_767_225_600; // 2026-01-01T00:00:00Z

fn at(s: f64) -> SystemTime {
    shift(SystemTime::UNIX_EPOCH + Duration::from_secs(T0), s)
}

fn settings() -> Settings {
    Settings {
        election: true,
        lease_namespace: "kube-system".into(),
        lease_name: "endpointd".into(),
        lease_duration: Duration::from_secs(15),
        renew_deadline: Duration::from_secs(10),
        watch_list: false,
    }
}

fn healthy() -> PreflightInputs {
    PreflightInputs {
        now: at(0.0),
        settings: settings(),
        kubeconfig: KubeconfigFacts {
            path: Some("/etc/endpointd/kubeconfig".into()),
            mode: Some(0o600),
            server: "https://10.0.0.1:6443".into(),
            insecure: false,
            sends_secret: true,
            token: Some("opaque".into()),
            token_from_file: false,
        },
        permissions: PERMISSIONS
            .iter()
            .map(|p| {
                (
                    *p,
                    Ok(Review {
                        allowed: true,
                        reason: String::new(),
                    }),
                )
            })
            .collect(),
        version: Ok(ServerVersion {
            major: 1,
            minor: 33,
            git_version: "v1.33.1".into(),
        }),
        date: Ok(Some(DateSample {
            sent: at(-0.02),
            received: at(0.02),
            server: at(-0.5),
        })),
        lease_namespace: Ok(true),
        lease: Ok(None),
        traffic_distribution: Ok(vec![("PreferClose".into(), 2)]),
        endpoints_writes: Ok(vec![]),
        slice_writes: Ok(vec![LatestWrite {
            key: "default/web-abc".into(),
            manager: "endpointd".into(),
            time: at(-60.0),
        }]),
    }
}

fn levels(c: &[Check]) -> Vec<(String, Level)> {
    c.iter().map(|c| (c.name.clone(), c.level)).collect()
}

fn find<'a>(c: &'a [Check], name: &str) -> &'a Check {
    c.iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check {name} in {c:#?}"))
}

#[test]
fn a_healthy_setup_is_all_ok() {
    let c = checks(&healthy());
    let bad: Vec<_> = c.iter().filter(|c| c.level != Level::Ok).collect();
    assert!(bad.is_empty(), "{bad:#?}");
    assert!(!failed(&c));
    // One line per resource and scope, not per verb.
    let perms: Vec<_> = c
        .iter()
        .filter(|c| c.name.starts_with("permissions/"))
        .collect();
    assert_eq!(perms.len(), 10, "{perms:#?}");
    assert_eq!(
        find(&c, "permissions/leases.coordination.k8s.io").message,
        "get, list, create, update, delete in namespace kube-system"
    );
}

#[test]
fn permissions_table() {
    let s = settings();
    let deny = |verb: &str, res: &str| -> Vec<(Permission, Fetch<Review>)> {
        PERMISSIONS
            .iter()
            .map(|p| {
                let allowed = !(p.verb == verb && p.resource == res);
                (
                    *p,
                    Ok(Review {
                        allowed,
                        reason: String::new(),
                    }),
                )
            })
            .collect()
    };
    type Case<'a> = (&'a str, &'a str, &'a str, Level, &'a str);
    let cases: [Case; 4] = [
        (
            "create",
            "endpointslices",
            "permissions/endpointslices.discovery.k8s.io",
            Level::Fail,
            "missing create endpointslices.discovery.k8s.io in every namespace (has: list, watch, update, delete)",
        ),
        (
            "update",
            "leases",
            "permissions/leases.coordination.k8s.io",
            Level::Fail,
            "missing update leases.coordination.k8s.io in namespace kube-system",
        ),
        (
            "update",
            "services/finalizers",
            "permissions/services/finalizers",
            Level::Warn,
            "OwnerReferencesPermissionEnforcement",
        ),
        (
            "create",
            "endpoints/restricted",
            "permissions/endpoints/restricted",
            Level::Warn,
            "RestrictedEndpointsAdmission",
        ),
    ];
    for (verb, res, name, level, needle) in cases {
        let c = permissions(&deny(verb, res), &s);
        let got = find(&c, name);
        assert_eq!(got.level, level, "{got:?}");
        assert!(got.message.contains(needle), "{got:?}");
        let others = c.iter().filter(|x| x.name != name && x.level != Level::Ok);
        assert_eq!(others.count(), 0, "only {name}: {c:#?}");
    }
    // The review could not be made: a warning, not a failure.
    let mut errs = deny("", "");
    errs[0].1 = Err("403 Forbidden".into());
    let c = permissions(&errs, &s);
    assert_eq!(find(&c, "permissions/pods").level, Level::Warn);
}

#[test]
fn skew_table() {
    let s = settings();
    // (server Date minus local midpoint, round trip) → level
    let cases = [
        (-0.5, 0.04, Level::Ok),   // Date truncated: exactly in sync
        (0.9, 0.04, Level::Ok),    // within the ±0.5 s of a whole-second Date
        (1.0, 0.04, Level::Ok),    // 1.5 ± 0.52: maybe under 1 s
        (2.0, 0.04, Level::Warn),  // 2.5 ± 0.52
        (-3.0, 0.04, Level::Warn), // ahead
        (2.0, 3.0, Level::Ok),     // slow answer: cannot tell
        (6.0, 0.04, Level::Fail),  // > lease_duration − renew_deadline (5 s)
        (-7.0, 0.04, Level::Fail),
    ];
    for (off, rtt, want) in cases {
        let d = DateSample {
            sent: at(-rtt / 2.0),
            received: at(rtt / 2.0),
            server: at(off),
        };
        let c = skew(&Ok(Some(d)), &s);
        assert_eq!(c.level, want, "offset {off} rtt {rtt}: {}", c.message);
    }
    let c = skew(
        &Ok(Some(DateSample {
            sent: at(0.0),
            received: at(0.0),
            server: at(-3.5),
        })),
        &s,
    );
    assert!(
        c.message
            .starts_with("this host is 3.0 s ahead of the API server"),
        "{}",
        c.message
    );
    assert_eq!(skew(&Ok(None), &s).level, Level::Warn);
    assert_eq!(skew(&Err("x".into()), &s).level, Level::Warn);
}

fn jwt(payload: &str) -> String {
    // base64url without padding, by hand (the checks decode it).
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let b = payload.as_bytes();
    let mut out = String::new();
    for chunk in b.chunks(3) {
        let n = chunk.len();
        let v = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..=n {
            out.push(A[((v >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    format!("eyJhbGciOiJSUzI1NiJ9.{out}.c2ln")
}

#[test]
fn token_table() {
    let now = at(0.0);
    let k = |t: Option<String>, file: bool| KubeconfigFacts {
        token: t,
        token_from_file: file,
        ..KubeconfigFacts::default()
    };
    let exp = |s: i64| jwt(&format!("{{\"iss\":\"k8s\",\"exp\":{}}}", T0 as i64 + s));
    let cases = [
        (k(None, false), Level::Ok, "no bearer token"),
        (k(Some("abc".into()), false), Level::Ok, "not a JWT"),
        (
            k(Some(jwt("{\"sub\":\"x\"}")), false),
            Level::Ok,
            "not a JWT with an expiry",
        ),
        (
            k(Some(exp(30 * 86400)), false),
            Level::Ok,
            "expires in 30 days",
        ),
        (k(Some(exp(3 * 3600)), false), Level::Warn, "expires in 3 h"),
        (
            k(Some(exp(600)), true),
            Level::Warn,
            "rewrites the token file",
        ),
        (k(Some(exp(-7200)), false), Level::Fail, "expired 2 h ago"),
    ];
    for (facts, want, needle) in cases {
        let c = token_expiry(&facts, now);
        assert_eq!(c.level, want, "{:?}: {}", facts.token, c.message);
        assert!(c.message.contains(needle), "{}", c.message);
    }
    assert_eq!(base64url("aGk"), Some(b"hi".to_vec()));
    assert_eq!(base64url("a$"), None);
}

#[test]
fn kubeconfig_table() {
    let f = |mode: Option<u32>| KubeconfigFacts {
        path: Some("/k".into()),
        mode,
        ..KubeconfigFacts::default()
    };
    for (mode, want, needle) in [
        (Some(0o100600), Level::Ok, "mode 0600"),
        (Some(0o640), Level::Warn, "group-readable"),
        (Some(0o644), Level::Warn, "world-readable (mode 0644)"),
        (None, Level::Warn, "cannot read"),
    ] {
        let c = kubeconfig_mode(&f(mode)).expect("a file");
        assert_eq!(c.level, want, "{mode:?}");
        assert!(c.message.contains(needle), "{}", c.message);
    }
    assert!(
        kubeconfig_mode(&KubeconfigFacts::default()).is_none(),
        "in-cluster"
    );
    let t = |server: &str, insecure: bool, secret: bool| {
        tls(&KubeconfigFacts {
            server: server.into(),
            insecure,
            sends_secret: secret,
            ..KubeconfigFacts::default()
        })
        .level
    };
    assert_eq!(t("https://a:6443", false, true), Level::Ok);
    assert_eq!(t("https://a:6443", true, true), Level::Fail);
    assert_eq!(t("https://a:6443", true, false), Level::Warn);
    assert_eq!(t("http://10.0.0.1:8080", false, true), Level::Fail);
    assert_eq!(t("http://127.0.0.1:8080", false, true), Level::Warn);
    assert_eq!(t("http://10.0.0.1:8080", false, false), Level::Warn);
}

#[test]
fn version_table() {
    let s = settings();
    let v = |minor: u32| {
        Ok(ServerVersion {
            major: 1,
            minor,
            git_version: format!("v1.{minor}.0"),
        })
    };
    let td = |vals: &[&str]| -> Fetch<Vec<(String, usize)>> {
        Ok(vals.iter().map(|v| (v.to_string(), 1)).collect())
    };
    let lv = |c: &[Check], n: &str| find(c, n).level;
    let c = version(&v(34), &s, &td(&["PreferSameNode"]));
    assert!(c.iter().all(|c| c.level == Level::Ok), "{c:#?}");
    let c = version(&v(33), &s, &td(&["PreferSameZone", "PreferClose"]));
    assert_eq!(lv(&c, "server/traffic-distribution"), Level::Warn);
    assert!(find(&c, "server/traffic-distribution")
        .message
        .contains("PreferSameZone (1 Services)"));
    assert!(!find(&c, "server/traffic-distribution")
        .message
        .contains("PreferClose (1"));
    let c = version(&v(32), &s, &td(&[]));
    assert_eq!(lv(&c, "server/traffic-distribution"), Level::Ok);
    assert!(find(&c, "server/endpoints-deprecation")
        .message
        .contains("not deprecated"));
    let c = version(&v(20), &s, &td(&[]));
    assert_eq!(lv(&c, "server/version"), Level::Fail);
    let mut wl = s.clone();
    wl.watch_list = true;
    assert_eq!(
        lv(&version(&v(26), &wl, &td(&[])), "server/watch-list"),
        Level::Warn
    );
    assert_eq!(
        lv(&version(&v(27), &wl, &td(&[])), "server/watch-list"),
        Level::Ok
    );
    let c = version(&Err("refused".into()), &s, &td(&[]));
    assert_eq!(levels(&c), [("server/version".to_string(), Level::Warn)]);
}

#[test]
fn lease_table() {
    let rec = |holder: &str, renewed: Option<f64>, dur: i32| {
        Ok(Some(LeaseRecord {
            holder: holder.into(),
            renew_time: renewed.map(at),
            duration_seconds: Some(dur),
        }))
    };
    type Case<'a> = (
        Fetch<bool>,
        Fetch<Option<LeaseRecord>>,
        Level,
        Level,
        &'a str,
    );
    let cases: Vec<Case> = vec![
        (
            Ok(true),
            Ok(None),
            Level::Ok,
            Level::Ok,
            "does not exist yet",
        ),
        (Ok(true), rec("", None, 15), Level::Ok, Level::Ok, "is free"),
        (
            Ok(true),
            rec("h1_x", Some(-3.0), 15),
            Level::Ok,
            Level::Ok,
            "held by h1_x, renewed 3.0 s ago",
        ),
        (
            Ok(true),
            rec("h1_x", Some(-600.0), 15),
            Level::Ok,
            Level::Ok,
            "expired",
        ),
        (
            Ok(true),
            rec("h1_x", Some(30.0), 15),
            Level::Ok,
            Level::Warn,
            "in the future",
        ),
        (
            Ok(true),
            rec("h1_x", Some(-3.0), 60),
            Level::Ok,
            Level::Warn,
            "leaseDurationSeconds 60",
        ),
        (Ok(false), Ok(None), Level::Fail, Level::Ok, ""),
        (
            Err("denied".into()),
            Err("denied".into()),
            Level::Warn,
            Level::Warn,
            "cannot read",
        ),
    ];
    for (ns, lease_rec, want_ns, want_lease, needle) in cases {
        let mut i = healthy();
        i.lease_namespace = ns;
        i.lease = lease_rec;
        let c = lease(&i);
        assert_eq!(c[0].level, want_ns, "{c:#?}");
        assert_eq!(c[1].level, want_lease, "{c:#?}");
        assert!(c[1].message.contains(needle), "{}", c[1].message);
    }
    let mut i = healthy();
    i.settings.election = false;
    assert!(lease(&i)[1].message.contains("leader election is off"));
}

#[test]
fn kcm_table() {
    let w = |manager: &str, ago: f64| LatestWrite {
        key: format!("default/{manager}-{ago}"),
        manager: manager.into(),
        time: at(-ago),
    };
    let now = at(0.0);
    let cases = [
        (vec![], Level::Ok, "no Endpoints"),
        (vec![w("endpointd", 5.0)], Level::Ok, "none is kube-controller-manager"),
        (
            vec![w("endpointd", 5.0), w(KCM_MANAGER, 120.0), w(KCM_MANAGER, 30.0)],
            Level::Warn,
            "wrote 2 Endpoints within the last hour (latest: default/kube-controller-manager-30 30.0 s ago)",
        ),
        (
            vec![w(KCM_MANAGER, 7200.0), w("endpointd", 5.0)],
            Level::Ok,
            "none within the last hour",
        ),
    ];
    for (writes, want, needle) in cases {
        let c = kcm_writes("handover/endpoints", "Endpoints", &Ok(writes), now);
        assert_eq!(c.level, want, "{}", c.message);
        assert!(c.message.contains(needle), "{}", c.message);
    }
    assert!(find(
        &[kcm_writes("x", "Endpoints", &Err("nope".into()), now)],
        "x"
    )
    .message
    .contains("cannot list"));
}
