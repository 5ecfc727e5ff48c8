//! endpointd's integration tests, one binary: the daemon against kube-sim
//! over HTTP, counting writes in kube-sim's log; the CLI, demo, explain,
//! shadow mode, leader election, faults and restarts. The shared harness is
//! in [`harness`].

mod harness;

mod bad_input;
mod bad_watch_stream;
mod cli;
#[cfg(feature = "demo")]
mod demo;
mod endpoints_controller;
mod endpointslice_controller;
mod ep_transitions;
mod es_transitions;
mod events;
mod explain;
mod faults;
mod faults_restart;
mod foreign_writer;
mod hostile_server;
mod leader_election;
mod observability_kit;
mod preflight;
mod rbac_least_privilege;
mod regression;
mod restart_every_feature;
mod shadow;
mod shutdown;
