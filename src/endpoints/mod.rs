//! The Endpoints controller (kube-controller-manager's `endpoint`
//! controller, `pkg/controller/endpoint/endpoints_controller.go`): keeps one
//! core/v1 Endpoints object per Service with a selector.
