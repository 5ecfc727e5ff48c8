//! client-go workqueue semantics (placeholder, issue 5).
