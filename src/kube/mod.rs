//! Blocking Kubernetes API client (placeholder, issue 4).
