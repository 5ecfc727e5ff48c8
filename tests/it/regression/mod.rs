//! Regression tests, one module per defect fixed (issue 37).

mod annotation_edits;
mod endless_conflict;
mod foreign_backoff;
mod silent_connections;
mod slices_outlive_service;
mod unbounded_files;
mod unbounded_identity;
mod write_answers;
mod write_outage;
