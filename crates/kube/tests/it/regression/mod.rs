//! Regression tests, one module per defect fixed (issue 37).

mod silent_connections;
mod unbounded_files;
mod write_answers;
