//! The event recorder: Events about the objects the controllers manage,
//! written through events.k8s.io/v1 by one background thread, so that
//! recording never blocks or fails a sync.
//!
//! `record` only hands the event to a bounded channel (full → dropped and
//! counted). The thread asks the [`Correlator`](super::correlator) what to
//! do (create, extend a series, or drop as spam), asks the write fence
//! whether this instance may write, and writes. API failures are counted
//! and logged once per minute at most, never retried in a loop: an Event is
//! not worth load on a struggling API server.
//!
//! Why events.k8s.io/v1: its `series` is the API's own shape for "the same
//! event again", `kubectl get events` shows it, and the API server maps it
//! to core/v1 Events for older readers.

use super::correlator::{Correlator, EventAction};
use super::events::EventSpec;
use super::fence::Fence;
use crossbeam_channel::{bounded, Receiver, Sender, TrySendError};
use endpointd_base::clock::SharedClock;
use endpointd_kube::kube::{Client, EVENTS_V1};
use endpointd_kube::metrics::{Counter, Family, Registry};
use endpointd_kube::model::ObjectReference;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Something that emits Events; never blocks, never fails.
pub trait Record: Send + Sync {
    /// Emit `spec` about `regarding`.
    fn record(&self, regarding: &ObjectReference, spec: &EventSpec);
}

/// Drops every event (shadow mode writes none).
#[derive(Debug, Default)]
pub struct Discard;

impl Record for Discard {
    fn record(&self, _regarding: &ObjectReference, _spec: &EventSpec) {}
}

/// Keeps every event, for tests.
#[derive(Debug, Default)]
pub struct RecordingFake {
    /// What was recorded, in order.
    pub events: Mutex<Vec<(ObjectReference, EventSpec)>>,
}

impl Record for RecordingFake {
    fn record(&self, regarding: &ObjectReference, spec: &EventSpec) {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((regarding.clone(), spec.clone()));
    }
}

/// Events waiting for the writer at most.
pub const QUEUE: usize = 1000;

/// Who reports the events.
#[derive(Clone, Debug)]
pub struct RecorderConfig {
    /// `reportingController`, e.g. `endpoint-controller`.
    pub component: String,
    /// `reportingInstance`: this daemon's identity.
    pub instance: String,
}

enum Msg {
    Event(Box<(ObjectReference, EventSpec)>),
    Stop,
}

/// The recorder: cheap to clone, shared by the workers.
#[derive(Clone)]
pub struct EventRecorder {
    tx: Sender<Msg>,
    results: Arc<Family<Counter>>,
    thread: Arc<Mutex<Option<JoinHandle<()>>>>,
}

/// `endpointd_events_total{result}` for one registry.
pub fn register(registry: &Registry) -> Arc<Family<Counter>> {
    registry.counter(
        "endpointd_events_total",
        "Events recorded, by result: written (created), series (an existing Event updated), throttled (spam filter), dropped (queue full), fenced (not the leader), failed (API error).",
        &["result"],
    )
}

struct Writer {
    client: Client,
    fence: Fence,
    clock: SharedClock,
    correlator: Correlator,
    results: Arc<Family<Counter>>,
    last_error_log: Option<Instant>,
}

impl Writer {
    fn run(mut self, rx: Receiver<Msg>) {
        while let Ok(Msg::Event(ev)) = rx.recv() {
            self.one(&ev.0, &ev.1);
        }
    }

    fn one(&mut self, regarding: &ObjectReference, spec: &EventSpec) {
        let action = self
            .correlator
            .observe(self.clock.now(), self.clock.wall(), regarding, spec);
        let (event, update) = match action {
            EventAction::Throttled => return self.count("throttled"),
            EventAction::Create(e) => (e, false),
            EventAction::Update(e) => (e, true),
        };
        // Also asked by the client before each attempt; here first, so a
        // fenced event costs no rate-limiter token.
        if self.fence.check().is_err() {
            return self.count("fenced");
        }
        let ns = event.metadata.namespace.clone();
        let res = match update {
            false => self.client.create(&EVENTS_V1, Some(&ns), &*event),
            true => self.client.update(&EVENTS_V1, Some(&ns), &*event),
        };
        match res {
            Ok(stored) => {
                self.correlator.stored(&stored);
                self.count(if update { "series" } else { "written" });
            }
            Err(e) if e.is_refused() => self.count("fenced"),
            Err(e) => {
                if update && (e.is_not_found() || e.is_conflict()) {
                    self.correlator.forget(&event.metadata.name);
                }
                self.count("failed");
                let now = self.clock.now();
                if self
                    .last_error_log
                    .is_none_or(|t| now.saturating_duration_since(t) > Duration::from_secs(60))
                {
                    self.last_error_log = Some(now);
                    log::warn!(
                        "cannot write event {} on {}/{}: {e}",
                        spec.reason,
                        regarding.namespace,
                        regarding.name
                    );
                }
            }
        }
    }

    fn count(&self, result: &str) {
        self.results.with(&[result]).inc();
    }
}

/// A recorder's writer, built but not yet running: [`EventRecorder::new`]
/// gives it, [`PendingWriter::spawn`] starts its thread. Events recorded
/// before then wait in the queue.
pub struct PendingWriter {
    writer: Writer,
    rx: crossbeam_channel::Receiver<Msg>,
    name: String,
    thread: Arc<Mutex<Option<std::thread::JoinHandle<()>>>>,
}

impl PendingWriter {
    /// Start the writer thread.
    pub fn spawn(self) -> std::io::Result<()> {
        let PendingWriter {
            writer,
            rx,
            name,
            thread,
        } = self;
        let t = std::thread::Builder::new()
            .name(name)
            .spawn(move || writer.run(rx))?;
        *thread.lock().unwrap_or_else(|p| p.into_inner()) = Some(t);
        Ok(())
    }
}

impl EventRecorder {
    /// A recorder and its writer, not started. `results` from
    /// [`register`] (once per registry; recorders of several components
    /// share it).
    pub fn new(
        client: Client,
        fence: Fence,
        clock: SharedClock,
        results: Arc<Family<Counter>>,
        cfg: RecorderConfig,
    ) -> (EventRecorder, PendingWriter) {
        let (tx, rx) = bounded(QUEUE);
        let writer = Writer {
            client: client.gated(Arc::new(fence.clone())),
            fence,
            clock,
            correlator: Correlator::new(&cfg.component, &cfg.instance),
            results: Arc::clone(&results),
            last_error_log: None,
        };
        let thread = Arc::new(Mutex::new(None));
        let pending = PendingWriter {
            writer,
            rx,
            name: format!("events-{}", cfg.component),
            thread: Arc::clone(&thread),
        };
        (
            EventRecorder {
                tx,
                results,
                thread,
            },
            pending,
        )
    }

    /// [`EventRecorder::new`] with its writer thread started.
    pub fn start(
        client: Client,
        fence: Fence,
        clock: SharedClock,
        results: Arc<Family<Counter>>,
        cfg: RecorderConfig,
    ) -> std::io::Result<EventRecorder> {
        let (recorder, writer) = EventRecorder::new(client, fence, clock, results, cfg);
        writer.spawn()?;
        Ok(recorder)
    }

    /// Stop after the events already queued, waiting at most `within`.
    pub fn stop(&self, within: Duration) {
        let _ = self.tx.send_timeout(Msg::Stop, within);
        let t = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(t) = t {
            endpointd_kube::shutdown::join_within(t, within);
        }
    }
}

impl Record for EventRecorder {
    fn record(&self, regarding: &ObjectReference, spec: &EventSpec) {
        match self
            .tx
            .try_send(Msg::Event(Box::new((regarding.clone(), spec.clone()))))
        {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.results.with(&["dropped"]).inc();
            }
        }
    }
}
