//! Prometheus metrics: counters, gauges and histograms with labels, and the
//! text exposition format (version 0.0.4).
//!
//! Owns metric storage and rendering only. It never starts a server (see the
//! daemon's HTTP endpoint) and never reads time itself: durations are
//! observed by callers that hold a clock. Metric families are registered once
//! in a [`Registry`]; children (one per label set) are created on first use
//! and then updated lock-free through atomics; finding an existing child
//! allocates nothing.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// A monotonically increasing count.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Add one.
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    /// Add `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    /// Current value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A value that goes up and down (stored as f64 bits).
#[derive(Debug, Default)]
pub struct Gauge(AtomicU64);

impl Gauge {
    /// Set the value.
    pub fn set(&self, v: f64) {
        self.0.store(v.to_bits(), Ordering::Relaxed);
    }
    /// Add `d` (may be negative).
    pub fn add(&self, d: f64) {
        let mut cur = self.0.load(Ordering::Relaxed);
        loop {
            let new = (f64::from_bits(cur) + d).to_bits();
            match self
                .0
                .compare_exchange_weak(cur, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(actual) => cur = actual,
            }
        }
    }
    /// Add one.
    pub fn inc(&self) {
        self.add(1.0)
    }
    /// Subtract one.
    pub fn dec(&self) {
        self.add(-1.0)
    }
    /// Current value.
    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

/// A histogram with fixed upper bounds (seconds, usually).
#[derive(Debug)]
pub struct Histogram {
    bounds: Arc<[f64]>,
    counts: Box<[AtomicU64]>,
    sum: Gauge,
    count: AtomicU64,
}

impl Histogram {
    /// A histogram with the given increasing upper bounds (+Inf is implied).
    pub fn new(bounds: Arc<[f64]>) -> Histogram {
        let counts = (0..bounds.len()).map(|_| AtomicU64::new(0)).collect();
        Histogram {
            bounds,
            counts,
            sum: Gauge::default(),
            count: AtomicU64::new(0),
        }
    }
    /// Record one observation.
    pub fn observe(&self, v: f64) {
        if let Some(i) = self.bounds.iter().position(|b| v <= *b) {
            self.counts[i].fetch_add(1, Ordering::Relaxed);
        }
        self.sum.add(v);
        self.count.fetch_add(1, Ordering::Relaxed);
    }
    /// Number of observations.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
    /// Sum of observations.
    pub fn sum(&self) -> f64 {
        self.sum.get()
    }
}

/// Exponential bucket bounds: `start`, `start*factor`, … (`n` bounds).
pub fn exponential_buckets(start: f64, factor: f64, n: usize) -> Arc<[f64]> {
    (0..n)
        .scan(start, |b, _| {
            let v = *b;
            *b *= factor;
            Some(v)
        })
        .collect()
}

/// One metric family: a name, help text, label names and one child per
/// label-value tuple.
#[derive(Debug)]
pub struct Family<T> {
    name: String,
    help: String,
    labels: Vec<String>,
    make: fn(&Family<T>) -> T,
    bounds: Arc<[f64]>,
    /// Children sorted by their label values (the order `Vec<String>`
    /// compares in), found by binary search on the borrowed values.
    children: RwLock<Vec<(Vec<String>, Arc<T>)>>,
}

/// `stored` against `values` in `Vec<String>` order: value by value, a
/// prefix first.
fn cmp_values(stored: &[String], values: &[&str]) -> std::cmp::Ordering {
    stored
        .iter()
        .map(String::as_str)
        .cmp(values.iter().copied())
}

impl<T> Family<T> {
    /// The child for these label values (created on first use). The number of
    /// values must match the family's label names; extra values are ignored
    /// and missing ones are rendered empty. Finding an existing child
    /// allocates nothing (a binary search over the children, compared with
    /// the borrowed values, under a read lock).
    pub fn with(&self, values: &[&str]) -> Arc<T> {
        {
            let r = self.children.read().unwrap_or_else(|p| p.into_inner());
            if let Ok(i) = r.binary_search_by(|(k, _)| cmp_values(k, values)) {
                return Arc::clone(&r[i].1);
            }
        }
        let mut w = self.children.write().unwrap_or_else(|p| p.into_inner());
        match w.binary_search_by(|(k, _)| cmp_values(k, values)) {
            Ok(i) => Arc::clone(&w[i].1),
            Err(i) => {
                let c = Arc::new((self.make)(self));
                let key = values.iter().map(|s| s.to_string()).collect();
                w.insert(i, (key, Arc::clone(&c)));
                c
            }
        }
    }

    fn snapshot(&self) -> Vec<(Vec<String>, Arc<T>)> {
        self.children
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(k, v)| (k.clone(), Arc::clone(v)))
            .collect()
    }
}

#[derive(Debug, Clone)]
enum Entry {
    Counter(Arc<Family<Counter>>),
    Gauge(Arc<Family<Gauge>>),
    Histogram(Arc<Family<Histogram>>),
}

/// A function run before every rendering, to refresh gauges that are
/// computed rather than kept (e.g. "seconds since").
pub type Collector = Box<dyn Fn() + Send + Sync>;

/// The set of metric families a process exposes.
#[derive(Default)]
pub struct Registry {
    entries: Mutex<Vec<Entry>>,
    collectors: Mutex<Vec<Collector>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").finish_non_exhaustive()
    }
}

fn family<T>(
    name: &str,
    help: &str,
    labels: &[&str],
    bounds: Arc<[f64]>,
    make: fn(&Family<T>) -> T,
) -> Arc<Family<T>> {
    Arc::new(Family {
        name: name.to_string(),
        help: help.to_string(),
        labels: labels.iter().map(|s| s.to_string()).collect(),
        make,
        bounds,
        children: RwLock::new(Vec::new()),
    })
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Arc<Registry> {
        Arc::new(Registry::default())
    }

    fn push(&self, e: Entry) {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(e);
    }

    /// Register a counter family.
    pub fn counter(&self, name: &str, help: &str, labels: &[&str]) -> Arc<Family<Counter>> {
        let f = family(name, help, labels, Arc::from([]), |_| Counter::default());
        self.push(Entry::Counter(Arc::clone(&f)));
        f
    }

    /// Register a gauge family.
    pub fn gauge(&self, name: &str, help: &str, labels: &[&str]) -> Arc<Family<Gauge>> {
        let f = family(name, help, labels, Arc::from([]), |_| Gauge::default());
        self.push(Entry::Gauge(Arc::clone(&f)));
        f
    }

    /// Register a histogram family with the given bucket bounds.
    pub fn histogram(
        &self,
        name: &str,
        help: &str,
        labels: &[&str],
        bounds: Arc<[f64]>,
    ) -> Arc<Family<Histogram>> {
        let f = family(name, help, labels, bounds, |f| {
            Histogram::new(Arc::clone(&f.bounds))
        });
        self.push(Entry::Histogram(Arc::clone(&f)));
        f
    }

    /// Run `f` before every rendering (it must be quick and never block).
    pub fn on_collect(&self, f: Collector) {
        self.collectors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(f);
    }

    /// Render every family in the Prometheus text format 0.0.4.
    pub fn render(&self) -> String {
        for c in self
            .collectors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            c();
        }
        let entries = self
            .entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut out = String::new();
        for e in entries {
            match e {
                Entry::Counter(f) => render_simple(&mut out, &f, "counter", |c| c.get() as f64),
                Entry::Gauge(f) => render_simple(&mut out, &f, "gauge", |g| g.get()),
                Entry::Histogram(f) => render_histogram(&mut out, &f),
            }
        }
        out
    }
}

/// The Content-Type for [`Registry::render`]'s output.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn label_str(names: &[String], values: &[String], extra: Option<(&str, &str)>) -> String {
    let mut parts: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let v = values.get(i).map(String::as_str).unwrap_or("");
            format!("{n}=\"{}\"", escape(v))
        })
        .collect();
    if let Some((n, v)) = extra {
        parts.push(format!("{n}=\"{}\"", escape(v)));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", parts.join(","))
    }
}

fn header<T>(out: &mut String, f: &Family<T>, kind: &str) {
    let help = f.help.replace('\\', "\\\\").replace('\n', "\\n");
    let _ = writeln!(out, "# HELP {} {}", f.name, help);
    let _ = writeln!(out, "# TYPE {} {}", f.name, kind);
}

fn render_simple<T>(out: &mut String, f: &Family<T>, kind: &str, val: fn(&T) -> f64) {
    header(out, f, kind);
    for (k, c) in f.snapshot() {
        let _ = writeln!(
            out,
            "{}{} {}",
            f.name,
            label_str(&f.labels, &k, None),
            val(&c)
        );
    }
}

fn render_histogram(out: &mut String, f: &Family<Histogram>) {
    header(out, f, "histogram");
    for (k, h) in f.snapshot() {
        let mut cum = 0u64;
        for (i, b) in h.bounds.iter().enumerate() {
            cum += h.counts[i].load(Ordering::Relaxed);
            let le = b.to_string();
            let l = label_str(&f.labels, &k, Some(("le", &le)));
            let _ = writeln!(out, "{}_bucket{} {}", f.name, l, cum);
        }
        let l = label_str(&f.labels, &k, Some(("le", "+Inf")));
        let _ = writeln!(out, "{}_bucket{} {}", f.name, l, h.count());
        let l = label_str(&f.labels, &k, None);
        let _ = writeln!(out, "{}_sum{} {}", f.name, l, h.sum());
        let _ = writeln!(out, "{}_count{} {}", f.name, l, h.count());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_gauges_and_histograms() {
        let r = Registry::new();
        let c = r.counter("reqs_total", "Requests.", &["verb", "code"]);
        c.with(&["GET", "200"]).add(3);
        c.with(&["PUT", "409"]).inc();
        let g = r.gauge("depth", "Queue depth.", &["name"]);
        g.with(&["endpoint"]).set(2.0);
        let h = r.histogram("lat_seconds", "Latency.", &[], Arc::from([0.1, 1.0]));
        h.with(&[]).observe(0.05);
        h.with(&[]).observe(0.5);
        h.with(&[]).observe(5.0);
        let text = r.render();
        let expect = [
            "# TYPE reqs_total counter",
            "reqs_total{verb=\"GET\",code=\"200\"} 3",
            "reqs_total{verb=\"PUT\",code=\"409\"} 1",
            "depth{name=\"endpoint\"} 2",
            "lat_seconds_bucket{le=\"0.1\"} 1",
            "lat_seconds_bucket{le=\"1\"} 2",
            "lat_seconds_bucket{le=\"+Inf\"} 3",
            "lat_seconds_sum 5.55",
            "lat_seconds_count 3",
        ];
        for line in expect {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
    }

    #[test]
    fn children_are_found_by_borrowed_values_in_vec_order() {
        let r = Registry::new();
        let c = r.counter("o_total", "O.", &["a", "b"]);
        for v in [
            &["b", ""][..],
            &["a", "z"],
            &["a"],
            &["ab", "a"],
            &["a", "b"],
        ] {
            c.with(v).inc();
        }
        assert!(Arc::ptr_eq(&c.with(&["a", "b"]), &c.with(&["a", "b"])));
        assert!(!Arc::ptr_eq(&c.with(&["a"]), &c.with(&["a", ""])));
        c.with(&["a", "b"]).inc();
        let keys: Vec<Vec<String>> = c.snapshot().into_iter().map(|(k, _)| k).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert_eq!(keys.len(), 6);
        assert_eq!(c.with(&["a", "b"]).get(), 2);
    }

    #[test]
    fn label_values_are_escaped() {
        let r = Registry::new();
        let c = r.counter("x_total", "X.", &["v"]);
        c.with(&["a\"b\\c\nd"]).inc();
        assert!(r.render().contains("x_total{v=\"a\\\"b\\\\c\\nd\"} 1"));
    }

    #[test]
    fn exponential_buckets_multiply() {
        let b = exponential_buckets(0.001, 10.0, 3);
        assert_eq!(b.len(), 3);
        for (got, want) in b.iter().zip([0.001, 0.01, 0.1]) {
            assert!((got - want).abs() < 1e-12, "{got} != {want}");
        }
    }
}
