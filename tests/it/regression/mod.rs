//! Regression tests, one module per defect fixed (issue 37).

mod endless_conflict;
mod foreign_backoff;
mod silent_connections;
mod unbounded_files;
mod unbounded_identity;
mod write_outage;
