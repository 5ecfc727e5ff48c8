//! Regression tests, one module per defect fixed (issue 37).

mod annotation_edits;
mod silent_connections;
mod slices_outlive_service;
mod unbounded_files;
mod unbounded_identity;
mod write_answers;
