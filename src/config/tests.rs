//! Table tests: defaults, every validation rule, every error naming its key.

use super::*;

fn errs(text: &str) -> Vec<String> {
    match Config::parse("config.toml", text) {
        Ok(c) => panic!("expected an error for {text:?}, got {c:?}"),
        Err(e) => e.0.iter().map(|e| e.to_string()).collect(),
    }
}

#[test]
fn empty_file_gives_documented_defaults() {
    let c = Config::parse("config.toml", "").expect("empty file is valid");
    assert_eq!(c.kubernetes.kubeconfig, None);
    assert_eq!(c.kubernetes.context, None);
    assert_eq!(c.kubernetes.qps, 20.0);
    assert_eq!(c.kubernetes.burst, 30);
    assert_eq!(c.kubernetes.request_timeout, Duration::from_secs(30));
    assert!(!c.kubernetes.watch_list);
    assert_eq!(c.kubernetes.max_response_bytes, 64 << 20);
    assert_eq!(c.kubernetes.max_list_items, 200_000);
    assert_eq!(c.kubernetes.watch_idle_timeout, Duration::from_secs(120));
    let le = &c.leader_election;
    assert!(le.enabled);
    assert_eq!(le.lease_namespace, "kube-system");
    assert_eq!(le.lease_name, "endpointd");
    assert!(le.identity_generated);
    let host = hostname().expect("hostname");
    assert!(
        le.identity.starts_with(&format!("{host}_")),
        "{}",
        le.identity
    );
    assert_eq!(le.lease_duration, Duration::from_secs(15));
    assert_eq!(le.renew_deadline, Duration::from_secs(10));
    assert_eq!(le.retry_period, Duration::from_secs(2));
    assert!(c.endpoints.enabled);
    assert_eq!(c.endpoints.workers, 5);
    assert_eq!(c.endpoints.batch_period, Duration::ZERO);
    assert!(c.endpointslices.enabled);
    assert_eq!(c.endpointslices.workers, 5);
    assert_eq!(c.endpointslices.max_endpoints_per_slice, 100);
    assert_eq!(c.endpointslices.batch_period, Duration::ZERO);
    assert_eq!(
        c.server.listen,
        Some("127.0.0.1:10266".parse().expect("addr"))
    );
    assert_eq!(c.log.level, log::LevelFilter::Info);
}

#[test]
fn shipped_config_toml_is_the_defaults() {
    let text = include_str!("../../config.toml");
    let shipped = Config::parse("config.toml", text).expect("shipped config.toml is valid");
    let mut defaults = Config::default();
    defaults.leader_election.identity = shipped.leader_election.identity.clone();
    assert_eq!(shipped, defaults);
    // Every key is present (possibly commented out when it has no literal default).
    for key in [
        "kubeconfig",
        "context",
        "qps",
        "burst",
        "request_timeout",
        "watch_list",
        "max_response_bytes",
        "max_list_items",
        "watch_idle_timeout",
        "shadow",
        "enabled",
        "lease_namespace",
        "lease_name",
        "identity",
        "lease_duration",
        "renew_deadline",
        "retry_period",
        "heartbeat_duration",
        "workers",
        "batch_period",
        "max_endpoints_per_slice",
        "listen",
        "level",
    ] {
        assert!(
            text.contains(&format!("{key} =")),
            "config.toml lacks {key}"
        );
    }
}

#[test]
fn explicit_values_are_taken() {
    let c = Config::parse(
        "config.toml",
        r#"
[kubernetes]
kubeconfig = "/etc/endpointd/kubeconfig"
context = "edge"
qps = 5.5
burst = 7
request_timeout = "10s"
watch_list = true
[leader_election]
enabled = false
lease_namespace = "endpointd-system"
lease_name = "endpointd.example"
identity = "node-a"
lease_duration = "30s"
renew_deadline = "20s"
retry_period = "4s"
[endpoints]
enabled = false
workers = 2
batch_period = "1s"
[endpointslices]
workers = 3
max_endpoints_per_slice = 1000
batch_period = "500ms"
[server]
listen = ""
[log]
level = "debug"
"#,
    )
    .expect("valid");
    assert_eq!(
        c.kubernetes.kubeconfig,
        Some(PathBuf::from("/etc/endpointd/kubeconfig"))
    );
    assert_eq!(c.kubernetes.context.as_deref(), Some("edge"));
    assert_eq!((c.kubernetes.qps, c.kubernetes.burst), (5.5, 7));
    assert!(c.kubernetes.watch_list);
    assert!(!c.leader_election.enabled);
    assert_eq!(c.leader_election.identity, "node-a");
    assert!(!c.leader_election.identity_generated);
    assert_eq!(c.leader_election.renew_deadline, Duration::from_secs(20));
    assert!(!c.endpoints.enabled);
    assert_eq!(c.endpoints.batch_period, Duration::from_secs(1));
    assert_eq!(c.endpointslices.max_endpoints_per_slice, 1000);
    assert_eq!(c.server.listen, None);
    assert_eq!(c.log.level, log::LevelFilter::Debug);
}

#[test]
fn every_rule_names_its_key() {
    // (input, expected message — exact where the issue fixes it)
    let cases: &[(&str, &str)] = &[
        (
            "[endpointslices]\nmax_endpoints_per_slice = 0\n",
            "config.toml: endpointslices.max_endpoints_per_slice = 0: must be between 1 and 1000 (line 2)",
        ),
        (
            "[endpointslices]\nmax_endpoints_per_slice = 1001\n",
            "config.toml: endpointslices.max_endpoints_per_slice = 1001: must be between 1 and 1000 (line 2)",
        ),
        ("[endpoints]\nworkers = 0\n", "config.toml: endpoints.workers = 0: must be between 1 and 50 (line 2)"),
        ("[endpointslices]\nworkers = -3\n", "config.toml: endpointslices.workers = -3: must be between 1 and 50 (line 2)"),
        ("[endpoints]\nworkers = 100000\n", "config.toml: endpoints.workers = 100000: must be between 1 and 50 (line 2)"),
        ("[kubernetes]\nqps = 0.0\n", "config.toml: kubernetes.qps = 0.0: must be a number from 0.01 to 1000000 (requests per second) (line 2)"),
        ("[kubernetes]\nqps = 1e308\n", "config.toml: kubernetes.qps = 1e308: must be a number from 0.01 to 1000000 (requests per second) (line 2)"),
        ("[kubernetes]\nqps = nan\n", "config.toml: kubernetes.qps = NaN: must be a number from 0.01 to 1000000"),
        ("[kubernetes]\nqps = 1e-50\n", "config.toml: kubernetes.qps = 1e-50: must be a number from 0.01 to 1000000 (requests per second) (line 2)"),
        ("[kubernetes]\nburst = 0\n", "config.toml: kubernetes.burst = 0: must be between 1 and 4294967295 (line 2)"),
        (
            "[kubernetes]\nburst = 4294967296\n",
            "config.toml: kubernetes.burst = 4294967296: must be between 1 and 4294967295 (line 2)",
        ),
        (
            "[kubernetes]\nmax_response_bytes = 1000\n",
            "config.toml: kubernetes.max_response_bytes = 1000: must be at least 1048576 (1 MiB) (line 2)",
        ),
        (
            "[kubernetes]\nmax_list_items = 10\n",
            "config.toml: kubernetes.max_list_items = 10: must be at least 1000 (line 2)",
        ),
        (
            "[kubernetes]\nwatch_idle_timeout = \"30s\"\n",
            "config.toml: kubernetes.watch_idle_timeout = \"30s\": must be at least 1m10s (the API server sends a bookmark about once a minute) (line 2)",
        ),
        (
            "[kubernetes]\nrequest_timeout = \"0s\"\n",
            "config.toml: kubernetes.request_timeout = \"0s\": must be at least 1s (a LIST page of 500 pods takes longer on a busy server) (line 2)",
        ),
        (
            "[kubernetes]\nrequest_timeout = \"1ns\"\n",
            "config.toml: kubernetes.request_timeout = \"1ns\": must be at least 1s",
        ),
        (
            "[kubernetes]\nrequest_timeout = \"9223372036854775807s\"\n",
            "config.toml: kubernetes.request_timeout = \"9223372036854775807s\": duration \"9223372036854775807s\" is out of range: at most 2562047h47m16.854775807s (Go's limit)",
        ),
        (
            "[leader_election]\nlease_duration = \"2147483648s\"\n",
            "config.toml: leader_election.lease_duration = \"2147483648s\": must be at most 2147483647s (a Lease holds it as a 32-bit number of seconds) (line 2)",
        ),
        (
            "[leader_election]\nheartbeat_duration = \"600000h\"\n",
            "config.toml: leader_election.heartbeat_duration = \"600000h\": must be at most 2147483647s",
        ),
        (
            "[leader_election]\nidentity = \"node\\na\"\n",
            "config.toml: leader_election.identity = \"node\\na\": must not contain control characters",
        ),
        ("[kubernetes]\nkubeconfig = \"\"\n", "config.toml: kubernetes.kubeconfig = \"\": must not be empty"),
        ("[kubernetes]\ncontext = \"\"\n", "config.toml: kubernetes.context = \"\": must not be empty"),
        (
            "[kubernetes]\nrequest_timeout = \"30\"\n",
            "config.toml: kubernetes.request_timeout = \"30\": missing unit in \"30\"",
        ),
        (
            "[leader_election]\nlease_duration = \"10s\"\n",
            "config.toml: leader_election.lease_duration = \"10s\": must be greater than leader_election.renew_deadline (10s) (line 2)",
        ),
        (
            "[leader_election]\nlease_duration = \"10.9s\"\n",
            "config.toml: leader_election.lease_duration = \"10.9s\": is written to the Lease in whole seconds (10s), which must be greater than leader_election.renew_deadline (10s) (line 2)",
        ),
        (
            "[leader_election]\nretry_period = \"9s\"\n",
            "config.toml: leader_election.renew_deadline: must be greater than leader_election.retry_period × 1.2 (10.8s)",
        ),
        (
            "[leader_election]\nrenew_deadline = \"2.4s\"\n",
            "config.toml: leader_election.renew_deadline = \"2.4s\": must be greater than leader_election.retry_period × 1.2 (2.4s) (line 2)",
        ),
        (
            "[leader_election]\nretry_period = \"0s\"\n",
            "config.toml: leader_election.retry_period = \"0s\": must be greater than 0 (line 2)",
        ),
        (
            "[leader_election]\nlease_namespace = \"Kube_System\"\n",
            "config.toml: leader_election.lease_namespace = \"Kube_System\": must be a DNS-1123 label",
        ),
        (
            "[leader_election]\nlease_name = \"-bad\"\n",
            "config.toml: leader_election.lease_name = \"-bad\": must be a DNS-1123 subdomain",
        ),
        ("[leader_election]\nidentity = \" \"\n", "config.toml: leader_election.identity = \" \": must not be empty"),
        ("[server]\nlisten = \"localhost\"\n", "config.toml: server.listen = \"localhost\": must be an IP socket address"),
        ("[log]\nlevel = \"loud\"\n", "config.toml: log.level = \"loud\": must be one of"),
        ("[endpoints]\nbatch_period = \"-1s\"\n", "config.toml: endpoints.batch_period = \"-1s\": must not be negative"),
        // Parser errors: unknown keys, wrong types, syntax, with the line.
        ("[endpoints]\nwrkers = 5\n", "config.toml: endpoints.wrkers = 5: unknown key `wrkers`, expected one of"),
        ("[endpoints]\nworkers = \"five\"\n", "config.toml: endpoints.workers = \"five\": wrong type: string \"five\", expected an integer (line 2)"),
        ("[endpoints]\nenabled = 1\n", "config.toml: endpoints.enabled = 1: wrong type"),
        // No Rust type names in what the operator reads.
        ("endpoints = true\n", "config.toml: endpoints = true: wrong type: boolean `true`, expected a table (line 1)"),
        ("kubernetes = []\n", "config.toml: kubernetes = []: wrong type: array, expected a table (line 1)"),
        (
            "[endpoints]\nworkers = 99999999999999999999\n",
            "config.toml: endpoints.workers = 99999999999999999999: wrong type: integer `99999999999999999999` is out of range, expected a 64-bit integer (line 2)",
        ),
        ("[metrics]\nlisten = \"\"\n", "config.toml: metrics: unknown key `metrics`"),
        ("[endpoints\n", "config.toml: "),
    ];
    for (input, want) in cases {
        let got = errs(input);
        assert!(
            got.iter().any(|g| g.starts_with(want)),
            "input {input:?}\n got: {got:#?}\nwant prefix: {want}"
        );
    }
}

#[test]
fn syntax_errors_carry_a_line() {
    let got = errs("[log]\nlevel = \"info\"\n\n[endpoints\n");
    assert!(got[0].ends_with("(line 4)"), "{got:?}");
}

#[test]
fn all_errors_are_reported_at_once() {
    let got = errs(
        "[endpoints]\nworkers = 0\n[endpointslices]\nworkers = 0\nmax_endpoints_per_slice = 0\n",
    );
    assert_eq!(got.len(), 3, "{got:#?}");
}

#[test]
fn effective_config_round_trips() {
    let c = Config::parse(
        "config.toml",
        "[endpoints]\nworkers = 9\n[kubernetes]\ncontext = \"x\"\n",
    )
    .expect("valid");
    let text = c.to_toml();
    assert!(text.contains("workers = 9"), "{text}");
    assert!(text.contains("request_timeout = \"30s\""), "{text}");
    assert!(text.contains("listen = \"127.0.0.1:10266\""), "{text}");
    let again = Config::parse("effective", &text).expect("effective config parses");
    assert_eq!(again.endpoints, c.endpoints);
    assert_eq!(again.kubernetes, c.kubernetes);
    assert_eq!(again.leader_election.identity, c.leader_election.identity);
}

#[test]
fn restart_changes_exclude_log_level_and_generated_identity() {
    let a = Config::parse("a", "[log]\nlevel = \"info\"\n").expect("valid");
    let b = Config::parse(
        "b",
        "[log]\nlevel = \"debug\"\n[endpoints]\nworkers = 2\n[kubernetes]\ncontext = \"c\"\n",
    )
    .expect("valid");
    assert_eq!(
        a.changes_needing_restart(&b),
        vec![
            "endpoints.workers".to_string(),
            "kubernetes.context".to_string()
        ]
    );
    assert!(a.changes_needing_restart(&a.clone()).is_empty());
}

#[test]
fn uuid_shape() {
    let u = random_uuid();
    let parts: Vec<&str> = u.split('-').collect();
    assert_eq!(
        parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
        vec![8, 4, 4, 4, 12]
    );
    assert!(parts[2].starts_with('4'));
    assert_ne!(u, random_uuid());
}

#[test]
fn heartbeat_duration_defaults_and_bounds() {
    let c = Config::parse("config.toml", "").expect("defaults");
    assert_eq!(
        c.leader_election.heartbeat_duration,
        Duration::from_secs(40)
    );
    let c = Config::parse(
        "config.toml",
        "[leader_election]\nheartbeat_duration = \"1m\"\n",
    )
    .expect("1m");
    assert_eq!(
        c.leader_election.heartbeat_duration,
        Duration::from_secs(60)
    );
    let e = Config::parse(
        "config.toml",
        "[leader_election]\nheartbeat_duration = \"2s\"\n",
    )
    .expect_err("too short");
    assert_eq!(
        e.to_string(),
        "config.toml: leader_election.heartbeat_duration = \"2s\": must be at least 4s (the identity Lease is renewed every quarter of it) (line 2)"
    );
}
