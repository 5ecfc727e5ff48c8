//! The EndpointSlice controller (kube-controller-manager's `endpointslice`
//! controller, `pkg/controller/endpointslice/` and
//! `staging/src/k8s.io/endpointslice/`): keeps the discovery.k8s.io/v1
//! EndpointSlices of every Service with a selector.

pub mod topology;
