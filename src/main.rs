//! The `endpointd` binary: parse the command line, dispatch, map every
//! outcome to an exit status in one place. Everything else is in the library.

use endpointd::cli::{self, Command, EXIT_FAILURE, EXIT_USAGE};
use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(real_main() as u8)
}

fn real_main() -> i32 {
    let cmd = match cli::parse(
        std::env::args_os().skip(1),
        std::env::var_os("ENDPOINTD_CONFIG"),
    ) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("endpointd: {e}");
            return EXIT_USAGE;
        }
    };
    match cmd {
        Command::Help(text) => emit(&text),
        Command::Version => emit(&endpointd::buildinfo::version_text()),
        Command::CheckConfig { config } => match endpointd::check_config::run(&config) {
            Ok(text) => emit(&text),
            Err(e) => {
                eprintln!("{e}");
                EXIT_FAILURE
            }
        },
        Command::Run { config, shadow } => match endpointd::daemon::run(&config, shadow) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("endpointd: {e}");
                EXIT_FAILURE
            }
        },
        Command::Explain {
            config,
            namespace,
            service,
            json,
        } => match endpointd::explain::run(&config, &namespace, &service) {
            Ok(report) if json => match serde_json::to_string_pretty(&report) {
                Ok(s) => emit(&format!("{s}\n")),
                Err(e) => {
                    eprintln!("endpointd explain: {e}");
                    EXIT_FAILURE
                }
            },
            Ok(report) => emit(&endpointd::explain::render::text(&report)),
            Err(e) => {
                eprintln!("endpointd explain: {e}");
                EXIT_FAILURE
            }
        },
        Command::Preflight { config, json } => preflight(&config, json),
        Command::Demo { keep_running } => demo(keep_running),
    }
}

/// `endpointd preflight`: the report; exit 1 when a check failed or
/// nothing could be checked.
fn preflight(config: &std::path::Path, json: bool) -> i32 {
    let report = match endpointd::preflight::run(config) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("endpointd preflight: {e}");
            return EXIT_FAILURE;
        }
    };
    let text = match json {
        true => match serde_json::to_string_pretty(&report) {
            Ok(s) => format!("{s}\n"),
            Err(e) => {
                eprintln!("endpointd preflight: {e}");
                return EXIT_FAILURE;
            }
        },
        false => endpointd::preflight::render::text(&report),
    };
    match (emit(&text), report.summary.fail) {
        (0, 0) => 0,
        _ => EXIT_FAILURE,
    }
}

#[cfg(feature = "demo")]
fn demo(keep_running: bool) -> i32 {
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("endpointd demo: cannot find its own binary: {e}");
            return EXIT_FAILURE;
        }
    };
    endpointd::demo::main(&endpointd::demo::Options { keep_running, exe })
}

#[cfg(not(feature = "demo"))]
fn demo(_keep_running: bool) -> i32 {
    eprintln!(
        "endpointd demo: this build leaves the simulator out (built without the `demo` \
         feature, as the packages are); run `cargo run --release -- demo` in a source checkout"
    );
    EXIT_FAILURE
}

/// Write `text` to stdout: 0, also when the reader went away first
/// (`endpointd explain … | head` closes the pipe; `print!` would panic on
/// it); 1 with the error for any other failure to write.
fn emit(text: &str) -> i32 {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            eprintln!("endpointd: cannot write to standard output: {e}");
            EXIT_FAILURE
        }
    }
}
