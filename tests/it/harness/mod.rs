//! The shared harness of this crate's integration tests.

pub mod controller;
pub mod process;
