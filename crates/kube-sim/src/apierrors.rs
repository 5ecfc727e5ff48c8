//! The error objects kube-apiserver returns for single-object operations
//! (NotFound, AlreadyExists, Conflict, BadRequest), with its exact message
//! wording and `details {name, group, kind}`. Pure constructors.
//!
//! They must never reword upstream's messages (clients match on them) or
//! read any store state.

use super::resources::ResourceInfo;
use super::status::ApiError;
use serde_json::{json, Value};

/// Qualified resource as errors print it: "pods", "endpointslices.discovery.k8s.io".
pub fn qualified_resource(info: &ResourceInfo) -> String {
    if info.group.is_empty() {
        info.resource.to_string()
    } else {
        format!("{}.{}", info.resource, info.group)
    }
}

/// `Status.details` for an error about one object.
pub fn details(info: &ResourceInfo, name: &str) -> Value {
    let mut d = json!({"name": name, "kind": info.resource});
    if !info.group.is_empty() {
        d["group"] = json!(info.group);
    }
    d
}

/// 404 NotFound for one object.
pub fn not_found(info: &ResourceInfo, name: &str) -> ApiError {
    ApiError::new(
        404,
        "NotFound",
        format!("{} \"{name}\" not found", qualified_resource(info)),
    )
    .with_details(details(info, name))
}

/// 409 AlreadyExists.
pub fn already_exists(info: &ResourceInfo, name: &str) -> ApiError {
    ApiError::new(
        409,
        "AlreadyExists",
        format!("{} \"{name}\" already exists", qualified_resource(info)),
    )
    .with_details(details(info, name))
}

/// 409 Conflict with the real server's optimistic-concurrency message.
pub fn conflict(info: &ResourceInfo, name: &str) -> ApiError {
    conflict_msg(
        info,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    )
}

/// 409 Conflict with a custom reason text.
pub fn conflict_msg(info: &ResourceInfo, name: &str, why: &str) -> ApiError {
    ApiError::new(
        409,
        "Conflict",
        format!(
            "Operation cannot be fulfilled on {} \"{name}\": {why}",
            qualified_resource(info)
        ),
    )
    .with_details(details(info, name))
}

/// 400 BadRequest.
pub fn bad_request(msg: impl Into<String>) -> ApiError {
    ApiError::new(400, "BadRequest", msg)
}
