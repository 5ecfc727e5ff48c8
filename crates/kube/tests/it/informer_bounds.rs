//! Informers against kube-sim when the server misbehaves quietly (issue 17):
//! a watch that goes silent is restarted after the idle bound (no relist),
//! the idle gauge shows the silence; a server that ignores
//! `sendInitialEvents` makes a watch-list informer fall back to LIST.

use crate::harness::informer as informer_support;

use std::sync::Arc;
use std::time::Duration;

use endpointd_base::clock::RealClock;
use endpointd_kube::informer::kube_source::KubeSource;
use endpointd_kube::informer::metrics::InformerMetrics;
use endpointd_kube::informer::{Informer, ListerWatcher, Recorder, ReflectorConfig};
use endpointd_kube::kube::{Client, ClientConfig, PODS};
use endpointd_kube::metrics::Registry;
use endpointd_kube::model::Pod;
use endpointd_kube::shutdown::Shutdown;
use informer_support::*;
use kube_sim::server::{SimOptions, SimServer};

fn client_with_idle(sim: &SimServer, idle: Duration) -> Client {
    let mut cfg = ClientConfig::new(sim.url());
    cfg.qps = 0.0;
    cfg.watch_idle_timeout = Some(idle);
    Client::new(cfg, RealClock::shared(), None).expect("client")
}

struct Run {
    inf: Informer<Pod>,
    shutdown: Shutdown,
    client: Client,
    registry: Arc<Registry>,
}

fn run(client: Client, cfg: ReflectorConfig) -> Run {
    let registry = Registry::new();
    let metrics = InformerMetrics::register(&registry, RealClock::shared());
    let shutdown = Shutdown::new();
    let source: Arc<dyn ListerWatcher<Pod>> =
        Arc::new(KubeSource::<Pod>::new(client.clone(), PODS));
    let inf = Informer::builder(source)
        .config(cfg)
        .clock(RealClock::shared())
        .metrics(metrics)
        .handler(Arc::new(Recorder::<Pod>::default()))
        .start(&shutdown)
        .expect("informer");
    Run {
        inf,
        shutdown,
        client,
        registry,
    }
}

impl Run {
    fn stop(self) {
        self.shutdown.trigger();
        self.client.shutdown_watches();
        assert!(self.inf.join(), "informer thread panicked");
    }

    fn gauge(&self, name: &str) -> Option<f64> {
        let text = self.registry.render();
        let prefix = format!("{name}{{resource=\"pods\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|v| v.parse().ok())
    }
}

#[test]
fn a_silent_watch_is_restarted_after_the_idle_bound_without_a_relist() {
    let sim = SimServer::start(SimOptions {
        bookmark_interval: Duration::from_millis(300),
        ..SimOptions::default()
    })
    .expect("kube-sim");
    load_pods(&sim, 1, 2);
    let r = run(
        client_with_idle(&sim, Duration::from_millis(1500)),
        fast_backoff(),
    );
    eventually("sync", 10, || r.inf.has_synced());
    eventually("watch open", 10, || sim.store().watch_count() == 1);
    // Healthy: bookmarks every 300 ms keep a 1.5 s idle bound happy.
    std::thread::sleep(Duration::from_millis(3000));
    assert_eq!(watches(&sim), 1, "a watch with bookmarks is never idle");
    let idle = r
        .gauge("endpointd_informer_watch_idle_seconds")
        .expect("idle gauge");
    assert!(idle < 1.5, "idle {idle}");
    // Silent: every new watch is accepted and then says nothing.
    sim.faults().stall_watches(true);
    sim.faults().close_all_watches();
    eventually("a stalled watch", 10, || watches(&sim) >= 2);
    std::thread::sleep(Duration::from_millis(1200));
    let idle = r
        .gauge("endpointd_informer_watch_idle_seconds")
        .expect("idle gauge");
    assert!(idle >= 1.0, "the gauge shows the silence: {idle}");
    eventually("the silent watch restarted after the bound", 10, || {
        watches(&sim) >= 4
    });
    assert_eq!(
        lists(&sim),
        1,
        "restarted from its resourceVersion, no relist"
    );
    // A silent watch is a normal end (kube-apiserver bookmarks only a
    // resource whose version moved): no error counted for it.
    let errors = r.registry.render();
    assert!(
        !errors
            .lines()
            .any(|l| l.starts_with("endpointd_informer_errors_total{resource=\"pods\"")),
        "{errors}"
    );
    // The server recovers: the watch resumes and delivers.
    sim.faults().stall_watches(false);
    create_pod(&sim, "ns-0", "pod-00009");
    eventually("the new pod", 10, || r.inf.store().len() == 3);
    assert_eq!(lists(&sim), 1);
    r.stop();
    sim.stop();
}

#[test]
fn watch_list_ignored_by_the_server_falls_back_to_list() {
    let sim = SimServer::start(SimOptions::default()).expect("kube-sim");
    load_pods(&sim, 1, 3);
    sim.faults().ignore_send_initial_events(true);
    let cfg = ReflectorConfig {
        watch_list: true,
        watch_list_bound: Duration::from_secs(2),
        ..fast_backoff()
    };
    let r = run(client(&sim, 0), cfg);
    // The server replays the state as ADDED events but never ends the
    // initial phase; the informer gives up watch-list and lists instead.
    eventually("sync through LIST", 20, || r.inf.has_synced());
    assert_eq!(r.inf.store().len(), 3);
    assert_eq!(lists(&sim), 1, "one LIST after the fallback");
    let text = r.registry.render();
    assert!(
        text.contains("endpointd_informer_watch_list_fallbacks_total{resource=\"pods\"} 1"),
        "counted:\n{text}"
    );
    create_pod(&sim, "ns-0", "pod-00009");
    eventually("the watch after the LIST delivers", 10, || {
        r.inf.store().len() == 4
    });
    r.stop();
    sim.stop();
}
