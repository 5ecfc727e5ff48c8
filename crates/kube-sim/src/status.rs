//! `Status` error objects exactly as kube-apiserver writes them
//! (`kind: Status`, `apiVersion: v1`, `status: Failure`, message, reason,
//! details, code). Every kube-sim error response goes through here.
//!
//! It must never put secrets (tokens, keys, credential headers) into a
//! message.

use endpointd_base::httpd::Response;
use serde_json::{json, Value};

/// A Kubernetes API error as kube-sim reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status code (also `Status.code`).
    pub code: u16,
    /// `Status.reason` ("NotFound", "Conflict", "Invalid", …).
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// `Status.details` (name, group, kind, causes, retryAfterSeconds), if any.
    pub details: Option<Value>,
}

impl ApiError {
    /// An error without details.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason: reason.to_string(),
            message: message.into(),
            details: None,
        }
    }

    /// Attach `details`.
    pub fn with_details(mut self, details: Value) -> ApiError {
        self.details = Some(details);
        self
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }

    /// The HTTP response carrying the `Status`.
    pub fn to_response(&self) -> Response {
        Response::json(self.code, self.to_status().to_string().into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_shape() {
        let e = ApiError::new(404, "NotFound", "pods \"x\" not found")
            .with_details(json!({"name": "x", "kind": "pods"}));
        let s = e.to_status();
        assert_eq!(s["kind"], "Status");
        assert_eq!(s["apiVersion"], "v1");
        assert_eq!(s["status"], "Failure");
        assert_eq!(s["code"], 404);
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["details"]["name"], "x");
        assert_eq!(e.to_response().status, 404);
    }
}
