//! `endpointd explain`: why a Service's pods do or do not get traffic,
//! from one-shot reads (no informers), using the controllers' own pure
//! decisions.
//!
//! `analyze` is pure (inputs → [`Explanation`]); `fetch` is the only part that
//! talks to the API server (GET/LIST only — it must never write);
//! `render` prints the text form.

pub mod analyze;
pub mod fetch;
pub mod render;

pub use analyze::{analyze, ExplainInputs, Explanation};
