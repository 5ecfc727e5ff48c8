//! Command-line parsing for the `endpointd` binary: pure, so it is tested
//! without spawning processes. Owns argument syntax and help text only.

use std::ffi::OsString;
use std::path::PathBuf;

/// Exit status for usage errors (like most Unix tools).
pub const EXIT_USAGE: i32 = 2;
/// Exit status for configuration and runtime errors.
pub const EXIT_FAILURE: i32 = 1;

/// What the user asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `endpointd run`.
    Run {
        /// Configuration file.
        config: PathBuf,
        /// `--shadow`: compare, never write (as `[mode] shadow = true`).
        shadow: bool,
    },
    /// `endpointd check-config`.
    CheckConfig {
        /// Configuration file.
        config: PathBuf,
    },
    /// `endpointd explain`.
    Explain {
        /// Configuration file (for the kubeconfig and slice size).
        config: PathBuf,
        /// `-n NAMESPACE` (default `default`).
        namespace: String,
        /// The Service's name.
        service: String,
        /// `--output json` (else text).
        json: bool,
    },
    /// `endpointd preflight`.
    Preflight {
        /// Configuration file (for the kubeconfig and the lease settings).
        config: PathBuf,
        /// `--output json` (else text).
        json: bool,
    },
    /// `endpointd demo`.
    Demo {
        /// `--keep-running`: leave kube-sim and endpointd up afterwards.
        keep_running: bool,
    },
    /// `--help` (top level or of a command).
    Help(String),
    /// `--version`.
    Version,
}

/// A usage error, printed with a hint to `--help`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}\nTry 'endpointd --help' for more information.",
            self.0
        )
    }
}

/// `endpointd <version>`.
pub fn version_line() -> String {
    format!("endpointd {}", env!("CARGO_PKG_VERSION"))
}

/// Top-level help.
pub fn help() -> String {
    format!(
        "{}
Endpoints and EndpointSlice controllers for small edge Kubernetes control planes:
the job of kube-controller-manager's `endpoint` and `endpointslice` controllers as
one small synchronous daemon.

Usage: endpointd <COMMAND> [OPTIONS]

Commands:
  run            Run the daemon (normally under systemd)
  check-config   Validate a configuration file and print the effective
                 configuration (defaults filled in) as TOML
  explain        Why a Service's pods do or do not get traffic
  preflight      Check permissions, server, clocks, lease and KCM before a hand-over
  demo           Start an embedded kube-sim and show endpointd at work

Options:
  -c, --config <PATH>  Configuration file for run, check-config and explain
                       [default: $ENDPOINTD_CONFIG, else {}]
  -h, --help           Print help (also: endpointd <COMMAND> --help)
  -V, --version        Print version

Exit status: 0 success; 1 invalid configuration or runtime failure; 2 usage error;
128+N forced exit on a second SIGTERM/SIGINT.
",
        version_line(),
        crate::config::DEFAULT_CONFIG_PATH
    )
}

fn command_help(cmd: &str) -> String {
    let body = match cmd {
        "run" => "Run the daemon: watch the API server and maintain Endpoints and\nEndpointSlices. SIGTERM/SIGINT stop it gracefully; SIGHUP re-reads log.level.\n\nUsage: endpointd run [--config <PATH>] [--shadow]\n\nOptions:\n      --shadow  Write nothing: compare what endpointd would write with what\n                exists (kube-controller-manager's objects) and report the\n                differences (log, metric, /shadow); as [mode] shadow = true",
        "explain" => "Explain a Service: whether endpointd manages it, every pod its selector\nmatches with where it is listed (Endpoints, EndpointSlices, conditions, hints)\nor the exact reason it is not, the pods the selector misses by one label, and\nwhether the stored objects are what endpointd computes now. Reads only (GET\nand LIST with the configured kubeconfig); writes nothing. Exit 0 with the\nreport; 1 when the Service does not exist or a read fails.\n\nUsage: endpointd explain [--config <PATH>] [-n <NAMESPACE>] <SERVICE> [-o text|json]\n\nOptions:\n  -n, --namespace <NAMESPACE>  The Service's namespace [default: default]\n  -o, --output <FORMAT>        text (default) or json (stable field names)",
        "preflight" => "Check, before a hand-over from kube-controller-manager and without writing\nanything, what would make it go wrong: every permission endpointd uses\n(SelfSubjectAccessReview), the API server's version and what endpointd relies\non, clock skew, the lease namespace and the election Lease, whether\nkube-controller-manager still writes Endpoints or EndpointSlices, and the\nkubeconfig (file mode, TLS verification, token expiry). One line per check:\nok, warn or fail, its name, what to do. Exit 0 unless a check fails; 1 then.\n\nUsage: endpointd preflight [--config <PATH>] [-o text|json]\n\nOptions:\n  -o, --output <FORMAT>  text (default) or json",
        "check-config" => "Validate a configuration file. Prints the effective configuration as TOML\non stdout and exits 0; prints every problem on stderr and exits 1.\n\nUsage: endpointd check-config [--config <PATH>]",
        _ => "Start an embedded kube-sim on loopback (3 nodes, 7 Services, 265 pods), run\nendpointd against it as a child process and play a short story: converge,\na pod turns NotReady, a graceful deletion, a scale-down, lost watches, a\nrestart. Each step prints what was written, how many writes it took and how\nlong; the demo exits 0 when every step showed what it should, else 1 with\nwhat was expected and what was seen.\n\nUsage: endpointd demo [--keep-running]\n\nOptions:\n      --keep-running  Afterwards leave kube-sim and endpointd running, print a\n                      kubeconfig and kubectl commands to try; Ctrl-C stops",
    };
    format!("{}\n{body}\n", version_line())
}

/// Parse arguments (without the program name). `env_config` is
/// `$ENDPOINTD_CONFIG`, passed in to keep this pure.
pub fn parse(
    args: impl IntoIterator<Item = OsString>,
    env_config: Option<OsString>,
) -> Result<Command, UsageError> {
    use lexopt::prelude::*;
    let mut p = lexopt::Parser::from_args(args);
    let mut cmd: Option<String> = None;
    let mut config: Option<PathBuf> = None;
    let mut keep_running = false;
    let mut namespace: Option<String> = None;
    let mut service: Option<String> = None;
    let mut json = false;
    let mut shadow = false;
    let mut help_for = false;
    let err = |e: lexopt::Error| UsageError(e.to_string());
    while let Some(arg) = p.next().map_err(err)? {
        match arg {
            Short('h') | Long("help") => {
                return Ok(Command::Help(match &cmd {
                    Some(c) => command_help(c),
                    None => help(),
                }))
            }
            Short('V') | Long("version") => return Ok(Command::Version),
            Long("keep-running") if cmd.as_deref() == Some("demo") => keep_running = true,
            Long("shadow") if cmd.as_deref() == Some("run") => shadow = true,
            Short('n') | Long("namespace") if cmd.as_deref() == Some("explain") => {
                namespace = Some(p.value().map_err(err)?.string().map_err(err)?);
            }
            Short('o') | Long("output")
                if matches!(cmd.as_deref(), Some("explain") | Some("preflight")) =>
            {
                let v = p.value().map_err(err)?.string().map_err(err)?;
                json = match v.as_str() {
                    "json" => true,
                    "text" => false,
                    other => {
                        return Err(UsageError(format!("--output {other:?}: want text or json")))
                    }
                };
            }
            Value(v) if cmd.as_deref() == Some("explain") && service.is_none() => {
                service = Some(v.string().map_err(err)?);
            }
            Short('c') | Long("config") => {
                if !matches!(
                    cmd.as_deref(),
                    Some("run") | Some("check-config") | Some("explain") | Some("preflight")
                ) {
                    return Err(UsageError(
                        "--config goes after run, check-config or explain: endpointd run --config <PATH>".into(),
                    ));
                }
                let path = p.value().map_err(err)?;
                if path.is_empty() {
                    return Err(UsageError("--config needs a path, not an empty one".into()));
                }
                config = Some(PathBuf::from(path));
            }
            Value(v) if cmd.is_none() => {
                let v = v.string().map_err(err)?;
                match v.as_str() {
                    "run" | "check-config" | "demo" | "explain" | "preflight" if help_for => {
                        return Ok(Command::Help(command_help(&v)))
                    }
                    "run" | "check-config" | "demo" | "explain" | "preflight" => cmd = Some(v),
                    "help" if !help_for => help_for = true,
                    other => return Err(UsageError(format!("unknown command '{other}'"))),
                }
            }
            other => return Err(err(other.unexpected())),
        }
    }
    if help_for {
        return Ok(Command::Help(help()));
    }
    let config = config
        .or_else(|| env_config.filter(|v| !v.is_empty()).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(crate::config::DEFAULT_CONFIG_PATH));
    match cmd.as_deref() {
        Some("run") => Ok(Command::Run { config, shadow }),
        Some("check-config") => Ok(Command::CheckConfig { config }),
        Some("preflight") => Ok(Command::Preflight { config, json }),
        Some("explain") => match service {
            Some(service) => {
                check_explain_names(namespace.as_deref(), &service)?;
                let namespace = namespace.unwrap_or_else(|| "default".into());
                Ok(Command::Explain {
                    config,
                    namespace,
                    service,
                    json,
                })
            }
            None => Err(UsageError(
                "explain needs a Service name: endpointd explain -n <NAMESPACE> <SERVICE>".into(),
            )),
        },
        Some(_) => Ok(Command::Demo { keep_running }),
        None => Err(UsageError(
            "missing command (run, check-config, explain or demo)".into(),
        )),
    }
}

/// `explain`'s names go into request paths and a label selector: refuse
/// what no Service or namespace can be called (the API server's rules: a
/// namespace is a DNS-1123 label, a Service name a DNS-1035 label).
fn check_explain_names(namespace: Option<&str>, service: &str) -> Result<(), UsageError> {
    if let Some((ns, name)) = service.split_once('/') {
        let hint = match namespace {
            None => format!("; give the namespace with -n: endpointd explain -n {ns} {name}"),
            Some(_) => String::new(),
        };
        return Err(UsageError(format!(
            "{service:?} is not a Service name (no '/'){hint}"
        )));
    }
    let namespace = namespace.unwrap_or("default");
    if !endpointd_base::names::is_dns1123_label(namespace) {
        return Err(UsageError(format!(
            "namespace {namespace:?} is not valid: lower-case letters, digits and '-', at most 63 characters"
        )));
    }
    if !endpointd_base::names::is_dns1035_label(service) {
        return Err(UsageError(format!(
            "Service name {service:?} is not valid: lower-case letters, digits and '-', starting with a letter, at most 63 characters"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str], env: Option<&str>) -> Result<Command, String> {
        parse(args.iter().map(OsString::from), env.map(OsString::from)).map_err(|e| e.0)
    }

    #[test]
    fn table() {
        let def = PathBuf::from(crate::config::DEFAULT_CONFIG_PATH);
        let run = |c: &str| {
            Ok(Command::Run {
                config: c.into(),
                shadow: false,
            })
        };
        type Case<'a> = (&'a [&'a str], Option<&'a str>, Result<Command, String>);
        let cases: Vec<Case> = vec![
            (
                &["run"],
                None,
                Ok(Command::Run {
                    config: def.clone(),
                    shadow: false,
                }),
            ),
            (&["run", "--config", "/x.toml"], None, run("/x.toml")),
            (&["run", "-c", "/x.toml"], None, run("/x.toml")),
            (&["run", "--config=/x.toml"], None, run("/x.toml")),
            (&["run"], Some("/env.toml"), run("/env.toml")),
            (&["run", "-c", "/x.toml"], Some("/env.toml"), run("/x.toml")),
            (
                &["run"],
                Some(""),
                Ok(Command::Run {
                    config: def.clone(),
                    shadow: false,
                }),
            ),
            (
                &["check-config", "-c", "a.toml"],
                None,
                Ok(Command::CheckConfig {
                    config: "a.toml".into(),
                }),
            ),
            (
                &["demo"],
                None,
                Ok(Command::Demo {
                    keep_running: false,
                }),
            ),
            (
                &["demo", "--keep-running"],
                None,
                Ok(Command::Demo { keep_running: true }),
            ),
            (&["--version"], None, Ok(Command::Version)),
            (&["-V"], None, Ok(Command::Version)),
            (
                &[],
                None,
                Err("missing command (run, check-config, explain or demo)".into()),
            ),
            (
                &["frobnicate"],
                None,
                Err("unknown command 'frobnicate'".into()),
            ),
            (
                &["--config", "x"],
                None,
                Err("--config goes after run, check-config or explain: endpointd run --config <PATH>".into()),
            ),
            (
                &["demo", "--config", "x"],
                None,
                Err("--config goes after run, check-config or explain: endpointd run --config <PATH>".into()),
            ),
            (
                &["run", "--bogus"],
                None,
                Err("invalid option '--bogus'".into()),
            ),
            (
                &["run", "extra"],
                None,
                Err("unexpected argument \"extra\"".into()),
            ),
            (
                &["run", "--config"],
                None,
                Err("missing argument for option '--config'".into()),
            ),
            (
                &["run", "--config", ""],
                None,
                Err("--config needs a path, not an empty one".into()),
            ),
            (
                &["help", "nosuch"],
                None,
                Err("unknown command 'nosuch'".into()),
            ),
        ];
        for (args, env, want) in cases {
            assert_eq!(p(args, env), want, "{args:?} env={env:?}");
        }
    }

    #[test]
    fn help_is_useful() {
        let Ok(Command::Help(h)) = p(&["--help"], None) else {
            panic!("top-level help")
        };
        for needle in [
            "run",
            "check-config",
            "demo",
            "--config",
            "Exit status",
            "/etc/endpointd/config.toml",
        ] {
            assert!(h.contains(needle), "help lacks {needle}");
        }
        let Ok(Command::Help(h)) = p(&["run", "--help"], None) else {
            panic!("run help")
        };
        assert!(h.contains("Usage: endpointd run"));
        for cmd in ["run", "check-config", "explain", "demo"] {
            let Ok(Command::Help(h)) = p(&["help", cmd], None) else {
                panic!("help {cmd}")
            };
            assert!(h.contains(&format!("Usage: endpointd {cmd}")), "help {cmd}");
        }
        assert_eq!(p(&["help"], None), Ok(Command::Help(help())));
    }

    #[test]
    fn preflight_arguments() {
        assert_eq!(
            p(&["preflight", "-c", "/x.toml", "-o", "json"], None),
            Ok(Command::Preflight {
                config: "/x.toml".into(),
                json: true,
            })
        );
        assert_eq!(
            p(&["preflight"], Some("/env.toml")),
            Ok(Command::Preflight {
                config: "/env.toml".into(),
                json: false,
            })
        );
        assert!(p(&["preflight", "-n", "x"], None).is_err());
        assert!(p(&["preflight", "extra"], None).is_err());
        let Ok(Command::Help(h)) = p(&["help", "preflight"], None) else {
            panic!("help preflight")
        };
        assert!(h.contains("Usage: endpointd preflight"));
    }

    #[test]
    fn explain_arguments() {
        let got = p(
            &[
                "explain", "-n", "shop", "web", "-o", "json", "-c", "/x.toml",
            ],
            None,
        );
        assert_eq!(
            got,
            Ok(Command::Explain {
                config: "/x.toml".into(),
                namespace: "shop".into(),
                service: "web".into(),
                json: true,
            })
        );
        assert_eq!(
            p(&["explain", "web"], Some("/env.toml")),
            Ok(Command::Explain {
                config: "/env.toml".into(),
                namespace: "default".into(),
                service: "web".into(),
                json: false,
            })
        );
        let e = p(&["explain"], None).expect_err("no service");
        assert!(e.contains("needs a Service name"), "{e}");
        let e = p(&["explain", "web", "-o", "yaml"], None).expect_err("bad output");
        assert!(e.contains("want text or json"), "{e}");
        assert!(p(&["explain", "a", "b"], None).is_err(), "one Service only");
        // Names that no Service or namespace can have are usage errors,
        // never request paths (`a/status` reached the status subresource).
        for (args, want) in [
            (
                &["explain", "shop/web"][..],
                "give the namespace with -n: endpointd explain -n shop web",
            ),
            (
                &["explain", "-n", "odd", "a/status"],
                "\"a/status\" is not a Service name (no '/')",
            ),
            (&["explain", "a?x=1"], "Service name \"a?x=1\" is not valid"),
            (&["explain", "Web"], "Service name \"Web\" is not valid"),
            (&["explain", "1web"], "Service name \"1web\" is not valid"),
            (
                &["explain", "-n", "BAD", "web"],
                "namespace \"BAD\" is not valid",
            ),
            (&["explain", "-n", "", "web"], "namespace \"\" is not valid"),
        ] {
            let e = p(args, None).expect_err("bad name");
            assert!(e.contains(want), "{args:?}: {e}");
        }
        let e = p(&["explain", "-n", "odd", "a/status"], None).expect_err("slash");
        assert!(!e.contains("-n a status"), "no hint that ignores -n: {e}");
        let long = "a".repeat(64);
        assert!(p(&["explain", &long], None).is_err(), "64 characters");
        assert!(p(&["explain", &long[..63]], None).is_ok(), "63 characters");
        assert!(
            p(&["run", "-n", "x"], None).is_err(),
            "-n belongs to explain"
        );
    }
}
