//! endpointd-kube's integration tests, one binary: the client against fake
//! servers and kube-sim (TLS, watches, memory bounds, hostile bodies), the
//! informers, the work queue and its property and stress tests. The shared
//! harness is in [`harness`].

mod harness;

mod fuzz_decoders;
mod informer;
mod informer_bounds;
mod informer_faults;
mod kube_client;
mod kube_client_memory;
mod kube_client_sim;
mod kube_client_tls;
mod kube_client_watch;
mod regression;
mod sim_kubelet;
mod workqueue;
mod workqueue_delaying;
mod workqueue_prop;
mod workqueue_stress;
