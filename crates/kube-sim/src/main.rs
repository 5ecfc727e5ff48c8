//! The `kube-sim` binary: everything is in [`kube_sim::cli`].

use std::process::ExitCode;

fn main() -> ExitCode {
    kube_sim::cli::main(std::env::args_os().skip(1))
}
