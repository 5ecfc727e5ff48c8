//! The observability kit (packaging/observability) against a running
//! endpointd: every metric and label that the Grafana dashboard and the
//! alerting rules (and the rules' promtool tests) name must be in the
//! `/metrics` of an endpointd that leads and has synced (and, for the
//! shadow-mode families, of one in shadow mode); and kube-controller-
//! manager's dashboard queries (kubernetes-mixin) must find endpointd's
//! client and work-queue series with the labels and values they select.
//!
//! PromQL is read by a small scanner, not a parser: identifiers not
//! followed by `(` are metric names, `{…}` after one its label matchers,
//! `by`/`without`/`on`/`ignoring`/`group_left`/`group_right (…)` grouping
//! labels, `{{label}}` in a legend a label; strings, `[…]` ranges, numbers
//! and Grafana's `$variables` are skipped. Self-contained (its own helpers)
//! so that it can move into a test module as it is.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::process as process_support;
use process_support::{Reaped, SpawnReaped};

use kube_sim::server::{SimOptions, SimServer};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(60);

/// Labels Prometheus adds to every series of a target (not exported by the
/// daemon itself), and the metric name pseudo-label.
const TARGET_LABELS: &[&str] = &["job", "instance", "cluster", "__name__"];
/// Series Prometheus makes itself.
const SYNTHETIC: &[&str] = &["up"];

// ---------------------------------------------------------------- scrape

/// Series names of one scrape, each with the label names it carries.
type Exported = BTreeMap<String, BTreeSet<String>>;

/// One sample line: name, labels (name → value).
fn parse_sample(line: &str) -> Option<(String, BTreeMap<String, String>)> {
    let end = line.find(['{', ' '])?;
    let name = line[..end].to_string();
    let mut labels = BTreeMap::new();
    if line[end..].starts_with('{') {
        let mut chars = line[end + 1..].chars().peekable();
        loop {
            let key: String = chars
                .by_ref()
                .skip_while(|c| *c == ',' || *c == ' ')
                .take_while(|c| *c != '=' && *c != '}')
                .collect();
            if key.is_empty() {
                break;
            }
            if chars.next() != Some('"') {
                return None;
            }
            let mut value = String::new();
            loop {
                match chars.next()? {
                    '\\' => value.push(chars.next()?),
                    '"' => break,
                    c => value.push(c),
                }
            }
            labels.insert(key, value);
            if chars.peek() == Some(&'}') {
                break;
            }
        }
    }
    Some((name, labels))
}

/// Every sample of a scrape.
fn samples(body: &str) -> Vec<(String, BTreeMap<String, String>)> {
    body.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(parse_sample)
        .collect()
}

fn exported(bodies: &[&str]) -> Exported {
    let mut out = Exported::new();
    for body in bodies {
        for (name, labels) in samples(body) {
            out.entry(name).or_default().extend(labels.into_keys());
        }
    }
    out
}

// ---------------------------------------------------------------- PromQL

/// What one expression names.
#[derive(Debug, Default)]
struct Refs {
    metrics: BTreeSet<String>,
    /// (metric, label, matcher op, value) of every selector matcher.
    matchers: Vec<(String, String, String, String)>,
    /// Grouping labels (by, on, …) and legend labels of the expression.
    labels: BTreeSet<String>,
}

const GROUPING: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];
/// Operators and aggregations (`sum by (x) (…)`: not followed by `(`).
const KEYWORDS: &[&str] = &[
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "inf",
    "nan",
    "atan2",
    "start",
    "end",
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
];

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}
fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// A quoted string at `i` (`"`, `'` or `` ` ``): its value and the index
/// after it.
fn string_at(s: &[char], i: usize) -> Result<(String, usize), String> {
    let q = s[i];
    let mut j = i + 1;
    let mut v = String::new();
    while j < s.len() {
        match s[j] {
            '\\' if q != '`' => {
                j += 1;
                if let Some(c) = s.get(j) {
                    v.push(*c);
                }
            }
            c if c == q => return Ok((v, j + 1)),
            c => v.push(c),
        }
        j += 1;
    }
    Err(format!(
        "unterminated string in {:?}",
        s.iter().collect::<String>()
    ))
}

fn skip_ws(s: &[char], mut i: usize) -> usize {
    while i < s.len() && s[i].is_whitespace() {
        i += 1;
    }
    i
}

fn ident_at(s: &[char], mut i: usize) -> (String, usize) {
    let start = i;
    while i < s.len() && is_ident(s[i]) {
        i += 1;
    }
    (s[start..i].iter().collect(), i)
}

fn scan(expr: &str) -> Result<Refs, String> {
    let s: Vec<char> = expr.chars().collect();
    let mut r = Refs::default();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c == '"' || c == '\'' || c == '`' {
            i = string_at(&s, i)?.1;
        } else if c == '$' {
            // A Grafana variable: $name or ${name}.
            i += 1;
            if s.get(i) == Some(&'{') {
                while i < s.len() && s[i] != '}' {
                    i += 1;
                }
                i += 1;
            } else {
                i = ident_at(&s, i).1;
            }
        } else if c == '[' {
            while i < s.len() && s[i] != ']' {
                i += 1;
            }
            i += 1;
        } else if c.is_ascii_digit() || c == '.' {
            while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == '.') {
                i += 1;
            }
        } else if is_ident_start(c) {
            let (word, j) = ident_at(&s, i);
            let k = skip_ws(&s, j);
            let next = s.get(k).copied();
            let lower = word.to_ascii_lowercase();
            if GROUPING.contains(&lower.as_str()) {
                i = j;
                if next == Some('(') {
                    let end = s[k..]
                        .iter()
                        .position(|c| *c == ')')
                        .map(|p| k + p)
                        .ok_or_else(|| format!("unclosed {word}( in {expr}"))?;
                    let list: String = s[k + 1..end].iter().collect();
                    r.labels.extend(
                        list.split(',')
                            .map(str::trim)
                            .filter(|l| !l.is_empty())
                            .map(String::from),
                    );
                    i = end + 1;
                }
            } else if next == Some('(') || KEYWORDS.contains(&lower.as_str()) {
                i = j;
            } else {
                r.metrics.insert(word.clone());
                i = j;
                if next == Some('{') {
                    i = selector(&s, k + 1, &word, &mut r, expr)?;
                }
            }
        } else if c == '{' {
            i = selector(&s, i + 1, "", &mut r, expr)?;
        } else {
            i += 1;
        }
    }
    Ok(r)
}

/// The matchers of a selector starting at `i` (after `{`); the index after
/// its `}`.
fn selector(
    s: &[char],
    mut i: usize,
    metric: &str,
    r: &mut Refs,
    expr: &str,
) -> Result<usize, String> {
    loop {
        i = skip_ws(s, i);
        match s.get(i) {
            None => return Err(format!("unclosed selector in {expr}")),
            Some('}') => return Ok(i + 1),
            Some(',') => i += 1,
            Some(_) => {
                let (label, j) = ident_at(s, i);
                if label.is_empty() {
                    return Err(format!("bad selector at {i} in {expr}"));
                }
                let j = skip_ws(s, j);
                let op: String = s[j..]
                    .iter()
                    .take_while(|c| matches!(c, '=' | '!' | '~'))
                    .collect();
                let j = skip_ws(s, j + op.len());
                if op.is_empty() || !matches!(s.get(j), Some('"' | '\'' | '`')) {
                    return Err(format!("bad matcher {label} in {expr}"));
                }
                let (value, j) = string_at(s, j)?;
                r.matchers.push((metric.to_string(), label, op, value));
                i = j;
            }
        }
    }
}

/// `{{label}}` names of a Grafana legend.
fn legend_labels(legend: &str) -> Vec<String> {
    legend
        .split("{{")
        .skip(1)
        .filter_map(|p| p.split_once("}}"))
        .map(|(l, _)| l.trim().to_string())
        .collect()
}

/// Every problem of one expression against the scrape.
fn check_expr(what: &str, expr: &str, extra_labels: &[String], have: &Exported) -> Vec<String> {
    let mut errs = Vec::new();
    let r = match scan(expr) {
        Ok(r) => r,
        Err(e) => return vec![format!("{what}: {e}")],
    };
    let target = |l: &str| TARGET_LABELS.contains(&l);
    for m in &r.metrics {
        if !SYNTHETIC.contains(&m.as_str()) && !have.contains_key(m) {
            errs.push(format!("{what}: metric {m} is not exported ({expr})"));
        }
    }
    for (m, label, _, _) in &r.matchers {
        let ok = target(label)
            || SYNTHETIC.contains(&m.as_str())
            || have.get(m).is_some_and(|ls| ls.contains(label))
            || (m.is_empty() && have.values().any(|ls| ls.contains(label)));
        if !ok && (m.is_empty() || have.contains_key(m)) {
            errs.push(format!("{what}: {m} has no label {label} ({expr})"));
        }
    }
    let mut all: BTreeSet<String> = TARGET_LABELS.iter().map(|s| s.to_string()).collect();
    for m in &r.metrics {
        if let Some(ls) = have.get(m) {
            all.extend(ls.iter().cloned());
        }
    }
    for l in r.labels.iter().chain(extra_labels) {
        if !all.contains(l) {
            errs.push(format!(
                "{what}: label {l} is on none of {:?} ({expr})",
                r.metrics
            ));
        }
    }
    if r.metrics.is_empty() && !expr.contains("vector(") {
        errs.push(format!("{what}: no metric found in {expr}"));
    }
    errs
}

// ---------------------------------------------------------------- the kit

fn kit_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/observability")
}

fn read(name: &str) -> String {
    let p = kit_dir().join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn yaml(name: &str) -> Value {
    serde_saphyr::from_str::<Value>(&read(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Every problem of the dashboard: its targets and query variables.
fn check_dashboard(have: &Exported) -> Vec<String> {
    let d: Value = serde_json::from_str(&read("grafana-dashboard.json"))
        .unwrap_or_else(|e| panic!("grafana-dashboard.json: {e}"));
    let mut errs = Vec::new();
    let mut exprs = 0;
    let mut stack: Vec<&Value> = d["panels"]
        .as_array()
        .map(|v| v.iter().collect())
        .unwrap_or_default();
    while let Some(p) = stack.pop() {
        if let Some(inner) = p["panels"].as_array() {
            stack.extend(inner);
        }
        let title = p["title"].as_str().unwrap_or("?");
        for t in p["targets"].as_array().into_iter().flatten() {
            let expr = t["expr"].as_str().unwrap_or("");
            let legend = legend_labels(t["legendFormat"].as_str().unwrap_or(""));
            errs.extend(check_expr(&format!("panel {title:?}"), expr, &legend, have));
            exprs += 1;
        }
    }
    for v in d["templating"]["list"].as_array().into_iter().flatten() {
        if v["type"] != "query" {
            continue;
        }
        let q = v["query"]["query"]
            .as_str()
            .or(v["query"].as_str())
            .unwrap_or("");
        let what = format!("variable {}", v["name"]);
        match q
            .strip_prefix("label_values(")
            .and_then(|q| q.strip_suffix(')'))
            .and_then(|q| q.rsplit_once(','))
        {
            Some((sel, label)) => {
                errs.extend(check_expr(&what, sel, &[label.trim().to_string()], have))
            }
            None => errs.push(format!("{what}: not label_values(selector, label): {q}")),
        }
    }
    assert!(
        exprs >= 12,
        "the dashboard has {exprs} queries: the walk found too few"
    );
    errs
}

/// Every problem of the rules and their tests; the alert names.
fn check_rules(have: &Exported) -> (Vec<String>, BTreeSet<String>) {
    let rules = yaml("alerts.yaml");
    let mut errs = Vec::new();
    let mut alerts = BTreeSet::new();
    for g in rules["groups"].as_array().into_iter().flatten() {
        for rule in g["rules"].as_array().into_iter().flatten() {
            let name = rule["alert"].as_str().unwrap_or("?").to_string();
            for a in ["summary", "runbook"] {
                if rule["annotations"][a]
                    .as_str()
                    .is_none_or(|s| s.trim().is_empty())
                {
                    errs.push(format!("alert {name}: no annotations.{a}"));
                }
            }
            let expr = rule["expr"].as_str().unwrap_or("");
            errs.extend(check_expr(&format!("alert {name}"), expr, &[], have));
            alerts.insert(name);
        }
    }
    // The promtool tests feed series that must be real ones too, and show
    // every alert both firing and not firing.
    let tests = yaml("alerts-test.yaml");
    let mut fires = BTreeSet::new();
    let mut quiet = BTreeSet::new();
    for t in tests["tests"].as_array().into_iter().flatten() {
        for s in t["input_series"].as_array().into_iter().flatten() {
            let series = s["series"].as_str().unwrap_or("");
            errs.extend(check_expr("alerts-test.yaml series", series, &[], have));
        }
        for c in t["alert_rule_test"].as_array().into_iter().flatten() {
            let name = c["alertname"].as_str().unwrap_or("").to_string();
            match c["exp_alerts"].as_array().map(Vec::len) {
                Some(0) | None => quiet.insert(name),
                Some(_) => fires.insert(name),
            };
        }
    }
    for a in &alerts {
        if !fires.contains(a) {
            errs.push(format!("alerts-test.yaml never shows {a} firing"));
        }
        if !quiet.contains(a) {
            errs.push(format!("alerts-test.yaml never shows {a} not firing"));
        }
    }
    (errs, alerts)
}

// ---------------------------------------------------------------- processes

/// The body of a GET, whatever its status (the harness's `http_get`).
use crate::harness::controller::free_port;

fn http_get(addr: &str, path: &str) -> Option<String> {
    crate::harness::controller::http_get(addr, path).map(|(_, body)| body)
}

fn objects() -> Vec<Value> {
    let pod = |name: &str, ip: &str| {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"},
                         "uid": format!("uid-{name}")},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "img",
                     "ports": [{"name": "http", "containerPort": 8080}]}]},
            "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                       "conditions": [{"type": "Ready", "status": "True"}]}})
    };
    vec![
        json!({"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z1"}},
               "status": {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"cpu": "2"}}}),
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}, "clusterIP": "10.96.0.10", "ipFamilies": ["IPv4"],
                     "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]}}),
        pod("web-a", "10.0.0.1"),
        pod("web-b", "10.0.0.2"),
    ]
}

/// kube-sim with one Service and its pods (nothing written for it yet),
/// and an endpointd against it; `extra` TOML is appended to its config.
fn start(name: &str, extra: &str) -> (SimServer, Reaped, String) {
    let sim = SimServer::start(SimOptions::default()).expect("kube-sim");
    sim.store()
        .load_list(&json!({"apiVersion": "v1", "kind": "List", "items": objects()}))
        .expect("load");
    let dir = std::env::temp_dir().join(format!("endpointd-obs-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let kc = dir.join("kubeconfig");
    sim.write_kubeconfig(&kc).expect("kubeconfig");
    let addr = format!("127.0.0.1:{}", free_port());
    let cfg = dir.join("c.toml");
    std::fs::write(
        &cfg,
        format!(
            "[kubernetes]\nkubeconfig = {:?}\n[server]\nlisten = \"{addr}\"\n{extra}",
            kc.display().to_string()
        ),
    )
    .expect("config");
    let child = Command::new(env!("CARGO_BIN_EXE_endpointd"))
        .args(["run", "--config"])
        .arg(&cfg)
        .env_remove("NOTIFY_SOCKET")
        .env_remove("WATCHDOG_USEC")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_reaped()
        .expect("endpointd run");
    (sim, child, addr)
}

/// `/metrics` once `ready(body)` holds.
fn scrape_when(addr: &str, what: &str, ready: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + LIMIT;
    let mut body = String::new();
    while Instant::now() < deadline {
        body = http_get(addr, "/metrics").unwrap_or_default();
        if ready(&body) {
            return body;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("{what}: not within {LIMIT:?}; last scrape:\n{body}");
}

/// The scrape of a leading, synced endpointd and of one in shadow mode
/// that confirmed a difference: taken once (the tests of this file share
/// it; their processes would otherwise race for ports).
fn scrapes() -> (String, String) {
    static SCRAPES: std::sync::Mutex<Option<(String, String)>> = std::sync::Mutex::new(None);
    let mut s = SCRAPES.lock().unwrap_or_else(|p| p.into_inner());
    s.get_or_insert_with(take_scrapes).clone()
}

fn take_scrapes() -> (String, String) {
    let (_sim, _d, addr) = start(
        "leader",
        "[leader_election]\nlease_duration = \"3s\"\nrenew_deadline = \"2s\"\nretry_period = \"500ms\"\n",
    );
    let (_ssim, _s, saddr) = start("shadow", "[mode]\nshadow = true\n");
    let leader = scrape_when(&addr, "leading and synced", |b| {
        let has = |s: &str| b.lines().any(|l| l.starts_with(s));
        has("leader_election_master_status{name=\"endpointd\"} 1")
            && has("endpointd_syncs_total{controller=\"endpoint\",result=\"success\"}")
            && has("endpointd_syncs_total{controller=\"endpoint_slice\",result=\"success\"}")
            && b.contains("method=\"POST\"")
            && has("endpointd_informer_watch_idle_seconds{")
            && has("process_resident_memory_bytes ")
    });
    let shadow = scrape_when(&saddr, "a shadow difference confirmed", |b| {
        b.lines()
            .any(|l| l.starts_with("endpointd_shadow_differences_total{"))
    });
    (leader, shadow)
}

#[test]
fn the_dashboard_and_the_rules_name_only_exported_metrics_and_labels() {
    let (leader, shadow) = scrapes();
    let have = exported(&[&leader, &shadow]);
    let mut errs = check_dashboard(&have);
    let (rule_errs, alerts) = check_rules(&have);
    errs.extend(rule_errs);
    assert!(alerts.len() >= 10, "{alerts:?}");
    assert!(
        errs.is_empty(),
        "{}\n\nexported: {have:#?}",
        errs.join("\n")
    );
}

#[test]
fn the_checker_finds_unknown_metrics_and_labels() {
    let have = exported(&[concat!(
        "a_total{x=\"1\",y=\"2\"} 1\n",
        "h_bucket{le=\"0.1\",x=\"1\"} 1\n",
    )]);
    let ok = |e: &str, legend: &[&str]| {
        let legend: Vec<String> = legend.iter().map(|s| s.to_string()).collect();
        check_expr("t", e, &legend, &have)
    };
    assert!(ok(
        r#"sum by (x, job) (rate(a_total{y="2", instance=~"$instance"}[$__rate_interval]))"#,
        &["x"]
    )
    .is_empty());
    assert!(ok(r#"histogram_quantile(0.99, sum by (le) (rate(h_bucket[5m]))) > on (job) group_left () 2 * a_total offset 15m"#, &[]).is_empty());
    assert!(ok("up == 0", &[]).is_empty());
    assert_eq!(ok("b_total", &[]).len(), 1, "unknown metric");
    assert_eq!(
        ok(r#"a_total{z="1"}"#, &[]).len(),
        1,
        "unknown matcher label"
    );
    assert_eq!(
        ok("sum by (z) (a_total)", &[]).len(),
        1,
        "unknown grouping label"
    );
    assert_eq!(ok("a_total", &["z"]).len(), 1, "unknown legend label");
    assert_eq!(ok(r#"a_total{x="1""#, &[]).len(), 1, "unclosed selector");
}

// ---------------------------------------------------------------- mixin

/// A label matcher of the mixin's queries: `=` or `=~` with a pattern of
/// literal characters, `.` and `|` alternatives (all they use).
fn matches(op: &str, pattern: &str, value: &str) -> bool {
    let like = |p: &str| {
        p.chars().count() == value.chars().count()
            && p.chars()
                .zip(value.chars())
                .all(|(a, b)| a == '.' || a == b)
    };
    match op {
        "=" => pattern == value,
        "=~" => pattern.split('|').any(like),
        "!=" => pattern != value,
        "!~" => !pattern.split('|').any(like),
        _ => false,
    }
}

#[test]
fn kube_controller_manager_dashboard_queries_find_endpointds_series() {
    // kubernetes-mixin dashboards/controller-manager.libsonnet, with
    // %(kubeControllerManagerSelector)s = job="kube-controller-manager"
    // and the cluster label as configured there. The duration queries
    // group by (verb, le) today and by (verb, url, le) in older versions;
    // a grouping label a series lacks is no error (url is not checked).
    let queries = [
        r#"sum(rate(rest_client_requests_total{job="kube-controller-manager", instance=~"$instance",code=~"2.."}[5m]))"#,
        r#"histogram_quantile(0.99, sum(rate(rest_client_request_duration_seconds_bucket{cluster="$cluster", job="kube-controller-manager", instance=~"$instance", verb="POST"}[5m])) by (verb, le))"#,
        r#"histogram_quantile(0.99, sum(rate(rest_client_request_duration_seconds_bucket{cluster="$cluster", job="kube-controller-manager", instance=~"$instance", verb="GET"}[5m])) by (verb, le))"#,
        r#"sum(rate(workqueue_adds_total{cluster="$cluster", job="kube-controller-manager", instance=~"$instance"}[5m])) by (cluster, instance, name)"#,
        r#"sum(rate(workqueue_depth{cluster="$cluster", job="kube-controller-manager", instance=~"$instance"}[5m])) by (cluster, instance, name)"#,
        r#"histogram_quantile(0.99, sum(rate(workqueue_queue_duration_seconds_bucket{cluster="$cluster", job="kube-controller-manager", instance=~"$instance"}[5m])) by (cluster, instance, name, le))"#,
        r#"process_resident_memory_bytes{cluster="$cluster", job="kube-controller-manager",instance=~"$instance"}"#,
        r#"rate(process_cpu_seconds_total{cluster="$cluster", job="kube-controller-manager",instance=~"$instance"}[5m])"#,
        r#"leader_election_master_status{job="kube-controller-manager"}"#,
    ];
    let (leader, _) = scrapes();
    let have = exported(&[&leader]);
    let series = samples(&leader);
    let mut errs = Vec::new();
    for q in queries {
        errs.extend(check_expr("mixin", q, &[], &have));
        let r = scan(q).expect("scan");
        for m in &r.metrics {
            let hit = series.iter().any(|(name, labels)| {
                name == m
                    && r.matchers
                        .iter()
                        .filter(|(mm, l, _, _)| mm == m && !TARGET_LABELS.contains(&l.as_str()))
                        .all(|(_, l, op, v)| labels.get(l).is_some_and(|got| matches(op, v, got)))
            });
            if !hit {
                errs.push(format!("mixin: no {m} series matches {q}"));
            }
        }
    }
    assert!(errs.is_empty(), "{}\n\n{leader}", errs.join("\n"));
    // client-go's label names, each on its family.
    for (family, labels) in [
        (
            "rest_client_requests_total",
            &["code", "method", "host"][..],
        ),
        (
            "rest_client_request_duration_seconds_bucket",
            &["verb", "host"][..],
        ),
    ] {
        for l in labels {
            assert!(
                have.get(family).is_some_and(|ls| ls.contains(*l)),
                "{family} lacks {l}: {:?}",
                have.get(family)
            );
        }
    }
}
