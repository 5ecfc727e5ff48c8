//! The well-known labels and annotations both controllers write or read,
//! in one place: the Endpoints controller, the EndpointSlice controller
//! and shadow mode import them from here, never from each other.
//!
//! Constants only; the rules that use them stay in the controllers' plans.

use endpointd_kube::informer::SERVICE_NAME_LABEL;

/// `endpoints.kubernetes.io/last-change-trigger-time`, on Endpoints and
/// EndpointSlices alike.
pub const TRIGGER_TIME_ANNOTATION: &str = "endpoints.kubernetes.io/last-change-trigger-time";
/// `endpoints.kubernetes.io/over-capacity`.
pub const OVER_CAPACITY_ANNOTATION: &str = "endpoints.kubernetes.io/over-capacity";
/// `service.kubernetes.io/headless`, on the objects of a headless Service.
pub const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";

/// `endpoints.kubernetes.io/managed-by` (upstream `LabelManagedBy`).
pub const ENDPOINTS_MANAGED_BY_LABEL: &str = "endpoints.kubernetes.io/managed-by";
/// Its value on the objects the Endpoints controller writes (upstream
/// `ControllerName`).
pub const ENDPOINTS_MANAGED_BY: &str = "endpoint-controller";

/// `endpointslice.kubernetes.io/managed-by`: the controller managing a
/// slice.
pub const SLICE_MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// Our value of it: kube-controller-manager's, so that endpointd adopts
/// the slices it leaves behind without churn.
pub const SLICE_MANAGED_BY: &str = "endpointslice-controller.k8s.io";

/// Labels a Service cannot pass on to its slices
/// (`docs/behaviour.md#up-b22`).
pub const SLICE_RESERVED_LABELS: &[&str] =
    &[SERVICE_NAME_LABEL, SLICE_MANAGED_BY_LABEL, HEADLESS_LABEL];
