//! What the informers of one API server share about its history: how many
//! times one of them found the server's history behind its own
//! resourceVersion (an API server restored from a backup, or a fresh one,
//! behind the same address): a probe before re-watching (a consistent LIST
//! of one object) answered a lower resourceVersion, or a LIST after "too
//! large resource version" did (an HA server's lagging watch cache says
//! "too large" too, but lists consistently, and moves nothing); a
//! controller stuck on conflicts moves it too. An informer that has not
//! listed since the last such finding lists again before it watches, cuts
//! a backoff short, and ends a watch open across it at that watch's next
//! event or bookmark, so that no cache keeps following another history once
//! any informer has noticed.
//!
//! A controller may also move it without any sign that the history went
//! back, only to have every cache listed afresh ([`History::relist`]); it
//! then says why, and the informers repeat that instead of claiming a
//! rollback.
//!
//! A counter only: it never blocks (beyond a short mutex), never sleeps and
//! never logs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The shared counter (one per API server; `Default` is 0).
#[derive(Debug, Default)]
pub struct History {
    epoch: AtomicU64,
    /// The epoch a [`History::relist`] moved to, and why.
    relist: Mutex<Option<(u64, String)>>,
}

impl History {
    /// Record that the server's history went back; the new epoch.
    pub fn went_back(&self) -> u64 {
        self.epoch.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Have every informer list again for another reason than a history
    /// that went back (`why`, as the informers will log it); the new epoch.
    pub fn relist(&self, why: String) -> u64 {
        let mut r = self.relist.lock().unwrap_or_else(|p| p.into_inner());
        let epoch = self.went_back();
        *r = Some((epoch, why));
        epoch
    }

    /// Why the current epoch was reached, when a [`History::relist`]
    /// moved it (None when the history went back).
    pub fn relist_reason(&self) -> Option<String> {
        let r = self.relist.lock().unwrap_or_else(|p| p.into_inner());
        let (epoch, why) = r.as_ref()?;
        (*epoch == self.epoch()).then(|| why.clone())
    }

    /// Record it only if the epoch is still `seen` (the one the caller's
    /// last list started in): the new epoch, or None when another finding
    /// moved it first (two informers noticing the same restore at once move
    /// it once).
    pub fn went_back_from(&self, seen: u64) -> Option<u64> {
        self.epoch
            .compare_exchange(seen, seen + 1, Ordering::SeqCst, Ordering::SeqCst)
            .ok()
            .map(|e| e + 1)
    }

    /// Whether resourceVersion `server` is behind `ours`: only when both
    /// are numbers (resourceVersions are opaque to clients; kube-apiserver's
    /// are etcd revisions).
    pub fn is_behind(server: &str, ours: &str) -> bool {
        match (server.parse::<u64>(), ours.parse::<u64>()) {
            (Ok(s), Ok(o)) => s < o,
            _ => false,
        }
    }

    /// The current epoch (0 until the history first went back).
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::History;

    #[test]
    fn two_findings_from_the_same_epoch_move_it_once() {
        let h = History::default();
        assert_eq!(h.went_back_from(0), Some(1));
        assert_eq!(h.went_back_from(0), None, "already moved by the first");
        assert_eq!(h.epoch(), 1);
        assert_eq!(h.went_back_from(1), Some(2));
        assert_eq!(h.went_back(), 3);
        assert_eq!(h.relist_reason(), None);
        assert_eq!(h.relist("conflicts".into()), 4);
        assert_eq!(h.relist_reason().as_deref(), Some("conflicts"));
        assert_eq!(h.went_back(), 5);
        assert_eq!(h.relist_reason(), None, "went back since");
    }
}
