//! The stale-cache give-up policy both controllers' trackers share: when
//! a cache that looks older than our own writes is taken for right after
//! all (an API server restored from a backup, a write the cache will never
//! show), so that a Service is not kept stale forever.
//!
//! Pure apart from the log line; never reads a clock or a cache (the
//! caller passes the times and the caches' LIST counts).

/// How long the cache may look older than our own writes before the
/// bookkeeping is taken for wrong and dropped. Watch lag is milliseconds;
/// what outlasts this is an API server restored from an etcd backup
/// (generations went back) or a write the cache will never show. Upstream
/// stays stale until the process restarts; we converge. (A write we
/// created that the cache lacks is given up on only after the cache was
/// listed again, whatever the time: see [`give_up_stale`].)
pub const STALE_GIVE_UP: std::time::Duration = std::time::Duration::from_secs(10);

/// Whether a cache that has looked older than our writes since `since`
/// (when its LIST count was `lists_then`) is given up on now (logged), for
/// both controllers: a write the cache lacks that we *created* only once
/// the cache was listed again (`lists` differs: a fresh, consistent read
/// still lacking it means it is gone; before that, the watch may just be
/// stalled, and syncing from the cache would create it twice); any other
/// staleness after [`STALE_GIVE_UP`]. `what` names the cache in the log.
pub fn give_up_stale(
    what: &str,
    key: &str,
    created_missing: bool,
    (since, lists_then): (std::time::Instant, u64),
    (now, lists): (std::time::Instant, u64),
) -> bool {
    if created_missing {
        if lists == lists_then {
            return false;
        }
        log::warn!(
            "{what} cache of {key} lacks what we created even after listing again (an API server restored from a backup?); forgetting what we wrote and syncing from the cache"
        );
    } else {
        if now.saturating_duration_since(since) < STALE_GIVE_UP {
            return false;
        }
        log::warn!(
            "{what} cache of {key} still older than our writes after {}s (an API server restored from a backup?); forgetting what we wrote and syncing from the cache",
            STALE_GIVE_UP.as_secs()
        );
    }
    true
}
