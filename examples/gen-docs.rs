//! Write the generated manual pages and shell completions
//! (`endpointd::manual`) under packaging/: `cargo run --example gen-docs`.
//! With `--check`, write nothing and exit 1 when a committed file differs.

use std::path::Path;

fn main() -> std::process::ExitCode {
    let check = std::env::args().any(|a| a == "--check");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stale = 0;
    for (path, text) in endpointd::manual::generated_files() {
        let file = root.join(path);
        if std::fs::read_to_string(&file).ok().as_deref() == Some(text.as_str()) {
            continue;
        }
        if check {
            eprintln!("{path}: differs from what src/cli.rs and config.toml generate");
            stale += 1;
            continue;
        }
        let written = file
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&file, &text));
        match written {
            Ok(()) => println!("wrote {path}"),
            Err(e) => {
                eprintln!("{path}: {e}");
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    if stale > 0 {
        eprintln!("run `cargo run --example gen-docs` and commit the result");
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
