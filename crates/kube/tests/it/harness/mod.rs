//! The shared harness of this crate's integration tests.

pub mod client;
pub mod informer;
pub mod workqueue;
