//! (stub: contract only — the sim semantics helper replaces the body)
//!
//! Resource semantics: one classified request → store operation → response
//! (objects, lists, watch streams, Status errors).

use super::requestinfo::RequestInfo;
use super::status::ApiError;
use super::store::Store;
use crate::httpd::{Request, Response};
use std::sync::Arc;

/// Serve one resource request.
pub fn handle(_store: &Arc<Store>, info: &RequestInfo, _req: &Request) -> Response {
    ApiError::new(404, "NotFound", format!("{} not served yet", info.resource)).to_response()
}
