//! What the informers of one API server share about its history: how many
//! times one of them found the server's history behind its own
//! resourceVersion (told "too large resource version", then listed at a
//! lower one: an API server restored from a backup, or a fresh one, behind
//! the same address; an HA server's lagging watch cache says the same but
//! lists consistently, and moves nothing). An informer that has not listed
//! since the last such finding lists again before it watches, and ends a
//! watch open across it at that watch's next event or bookmark, so that no
//! cache keeps following another history once any informer has noticed.
//!
//! A counter only: it never blocks, never sleeps and never logs.

use std::sync::atomic::{AtomicU64, Ordering};

/// The shared counter (one per API server; `Default` is 0).
#[derive(Debug, Default)]
pub struct History(AtomicU64);

impl History {
    /// Record that the server's history went back; the new epoch.
    pub fn went_back(&self) -> u64 {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// The current epoch (0 until the history first went back).
    pub fn epoch(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}
