//! The shared harness of this crate's integration tests.

pub mod kubectl;
pub mod process;
pub mod semantics;
