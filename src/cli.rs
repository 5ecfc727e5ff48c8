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

/// One option, as `--help`, the man page and the shell completions show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptSpec {
    /// `-c`.
    pub short: Option<char>,
    /// `--config`.
    pub long: &'static str,
    /// The value's placeholder (`PATH`); `None` for a flag.
    pub value: Option<&'static str>,
    /// The values it accepts (for completion); empty: any.
    pub choices: &'static [&'static str],
    /// What it does.
    pub help: &'static str,
}

/// One command: the single source of its `--help`, its section of
/// endpointd(8) and its shell completions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandSpec {
    /// `check-config`.
    pub name: &'static str,
    /// One line for the command list.
    pub summary: &'static str,
    /// The synopsis after `endpointd `.
    pub usage: &'static str,
    /// Paragraphs (separated by blank lines).
    pub about: &'static str,
    /// Its options, `--help` aside.
    pub options: &'static [OptSpec],
    /// Its positional argument (`SERVICE`), if any.
    pub argument: Option<&'static str>,
    /// Completion for the argument: `files`, or "" for none.
    pub complete_argument: &'static str,
}

const CONFIG: OptSpec = OptSpec {
    short: Some('c'),
    long: "config",
    value: Some("PATH"),
    choices: &[],
    help: "Configuration file [default: $ENDPOINTD_CONFIG, else /etc/endpointd/config.toml]",
};

/// The commands, in the order help lists them.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "run",
        summary: "Run the daemon (normally under systemd)",
        usage: "run [--config <PATH>] [--shadow]",
        about: "Run the daemon: watch the API server and maintain Endpoints and \
                EndpointSlices. SIGTERM/SIGINT stop it gracefully; SIGHUP re-reads log.level.",
        options: &[
            CONFIG,
            OptSpec {
                short: None,
                long: "shadow",
                value: None,
                choices: &[],
                help: "Write nothing: compare what endpointd would write with what exists \
                       (kube-controller-manager's objects) and report the differences \
                       (log, metric, /shadow); as [mode] shadow = true",
            },
        ],
        argument: None,
        complete_argument: "",
    },
    CommandSpec {
        name: "check-config",
        summary: "Validate a configuration file and print the effective configuration \
                  (defaults filled in) as TOML",
        usage: "check-config [--config <PATH>]",
        about: "Validate a configuration file. Prints the effective configuration as TOML \
                on stdout and exits 0; prints every problem on stderr and exits 1.",
        options: &[CONFIG],
        argument: None,
        complete_argument: "",
    },
    CommandSpec {
        name: "explain",
        summary: "Why a Service's pods do or do not get traffic",
        usage: "explain [--config <PATH>] [-n <NAMESPACE>] <SERVICE> [-o text|json]",
        about: "Explain a Service: whether endpointd manages it, every pod its selector \
                matches with where it is listed (Endpoints, EndpointSlices, conditions, hints) \
                or the exact reason it is not, the pods the selector misses by one label, and \
                whether the stored objects are what endpointd computes now. Reads only (GET \
                and LIST with the configured kubeconfig); writes nothing. Exit 0 with the \
                report; 1 when the Service does not exist or a read fails.",
        options: &[
            CONFIG,
            OptSpec {
                short: Some('n'),
                long: "namespace",
                value: Some("NAMESPACE"),
                choices: &[],
                help: "The Service's namespace [default: default]",
            },
            OptSpec {
                short: Some('o'),
                long: "output",
                value: Some("FORMAT"),
                choices: &["text", "json"],
                help: "text (default) or json (stable field names)",
            },
        ],
        argument: Some("SERVICE"),
        complete_argument: "",
    },
    CommandSpec {
        name: "preflight",
        summary: "Check permissions, server, clocks, lease and KCM before a hand-over",
        usage: "preflight [--config <PATH>] [-o text|json]",
        about: "Check, before a hand-over from kube-controller-manager and without writing \
                anything, what would make it go wrong: every permission endpointd uses \
                (SelfSubjectAccessReview), the API server's version and what endpointd relies \
                on, clock skew, the lease namespace and the election Lease, whether \
                kube-controller-manager still writes Endpoints or EndpointSlices, and the \
                kubeconfig (file mode, TLS verification, token expiry). One line per check: \
                ok, warn or fail, its name, what to do. Exit 0 unless a check fails; 1 then.",
        options: &[
            CONFIG,
            OptSpec {
                short: Some('o'),
                long: "output",
                value: Some("FORMAT"),
                choices: &["text", "json"],
                help: "text (default) or json",
            },
        ],
        argument: None,
        complete_argument: "",
    },
    CommandSpec {
        name: "demo",
        summary: "Start an embedded kube-sim and show endpointd at work",
        usage: "demo [--keep-running]",
        about: "Start an embedded kube-sim on loopback (3 nodes, 7 Services, 265 pods), run \
                endpointd against it as a child process and play a short story: converge, \
                a pod turns NotReady, a graceful deletion, a scale-down, lost watches, a \
                restart. Each step prints what was written, how many writes it took and how \
                long; the demo exits 0 when every step showed what it should, else 1 with \
                what was expected and what was seen.\n\n\
                Packages are built without the simulator: there `endpointd demo` says so and \
                exits 1; run `cargo run --release -- demo` in a source checkout.",
        options: &[OptSpec {
            short: None,
            long: "keep-running",
            value: None,
            choices: &[],
            help: "Afterwards leave kube-sim and endpointd running, print a kubeconfig and \
                   kubectl commands to try; Ctrl-C stops",
        }],
        argument: None,
        complete_argument: "",
    },
];

/// The options of the top level (`endpointd --help`).
pub const TOP_OPTIONS: &[OptSpec] = &[
    OptSpec {
        short: Some('c'),
        long: "config",
        value: Some("PATH"),
        choices: &[],
        help: "Configuration file for run, check-config and explain \
               [default: $ENDPOINTD_CONFIG, else /etc/endpointd/config.toml]",
    },
    HELP,
    OptSpec {
        short: Some('V'),
        long: "version",
        value: None,
        choices: &[],
        help: "Print version and build information",
    },
];

/// `-h`/`--help`, accepted everywhere.
pub const HELP: OptSpec = OptSpec {
    short: Some('h'),
    long: "help",
    value: None,
    choices: &[],
    help: "Print help (also: endpointd <COMMAND> --help)",
};

/// Exit statuses: (status, in short for `--help`, in full for the man page).
pub const EXIT_STATUSES: &[(&str, &str, &str)] = &[
    (
        "0",
        "success",
        "Success; for run, a graceful stop after SIGTERM or SIGINT.",
    ),
    (
        "1",
        "invalid configuration or runtime failure",
        "Invalid configuration, an unusable kubeconfig, a taken listen address, or a runtime \
         failure (a cache stopped updating, leadership lost); explain: the Service does not \
         exist or a read failed; demo: a step did not show what it should, or the build \
         has no simulator.",
    ),
    (
        "2",
        "usage error",
        "Usage error: an unknown command or option, a missing or invalid argument.",
    ),
    (
        "128+N",
        "forced exit on a second SIGTERM/SIGINT",
        "Forced exit on a second SIGTERM (143) or SIGINT (130) during a graceful stop.",
    ),
];

/// Signals `endpointd run` handles: (signals, what they do).
pub const SIGNALS: &[(&str, &str)] = &[
    (
        "SIGTERM, SIGINT",
        "Stop gracefully: stop the controllers, release the lease so that another instance \
         takes over at once, and exit 0 within a few seconds. A second one forces exit \
         with status 128+N.",
    ),
    (
        "SIGHUP",
        "Re-read the configuration file: log.level takes effect at once; every other \
         changed key is named in a warning saying it needs a restart; a file that no \
         longer parses is reported and the running configuration kept \
         (systemctl reload endpointd).",
    ),
];

/// Environment variables read: (name, meaning).
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "ENDPOINTD_CONFIG",
        "Configuration file when --config is not given.",
    ),
    (
        "KUBECONFIG",
        "The kubeconfig when kubernetes.kubeconfig is unset (only its first path is read); \
         the shipped unit points it at the credential systemd passes in.",
    ),
    (
        "KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT",
        "In-cluster configuration (with the service-account token, CA and namespace files) \
         when neither kubernetes.kubeconfig nor KUBECONFIG is set.",
    ),
    (
        "RUST_LOG",
        "Log filter (env_logger syntax); overrides log.level, and then SIGHUP does not change \
         the level.",
    ),
    (
        "SSL_CERT_FILE",
        "CA bundle tried before the system's bundles when the kubeconfig names no CA.",
    ),
    (
        "NOTIFY_SOCKET, WATCHDOG_USEC, WATCHDOG_PID",
        "Set by systemd for a Type=notify unit: READY=1, STATUS= and watchdog pings go there.",
    ),
    (
        "JOURNAL_STREAM",
        "Set by systemd: when stderr is the journal, log lines carry syslog priorities \
         and no timestamp.",
    ),
];

/// Files: (path, what it is).
pub const FILES: &[(&str, &str)] = &[
    (
        "/etc/endpointd/config.toml",
        "The configuration (endpointd.toml(5)); every key commented, set to its default.",
    ),
    (
        "/etc/endpointd/kubeconfig",
        "The kubeconfig the shipped unit passes in with LoadCredential=.",
    ),
    (
        "/lib/systemd/system/endpointd.service, /usr/lib/systemd/system/endpointd.service",
        "The systemd unit (Debian, RPM-based distributions).",
    ),
    (
        "/usr/share/endpointd/rbac.yaml",
        "ServiceAccount, ClusterRole, Role and bindings with exactly what endpointd uses.",
    ),
    (
        "/usr/share/endpointd/grafana-dashboard.json, /usr/share/endpointd/alerts.yaml",
        "A Grafana dashboard and Prometheus alerting rules for the metrics.",
    ),
];

/// `endpointd <version>`.
pub fn version_line() -> String {
    format!("endpointd {}", env!("CARGO_PKG_VERSION"))
}

/// The command named `name`.
pub fn command(name: &str) -> Option<&'static CommandSpec> {
    COMMANDS.iter().find(|c| c.name == name)
}

const HELP_WIDTH: usize = 80;

/// Words of `text` wrapped to `width` columns, every line after the first
/// indented by `indent`.
fn wrap(text: &str, width: usize, indent: usize) -> String {
    let mut out = String::new();
    let mut col = indent;
    for (i, word) in text.split_whitespace().enumerate() {
        if i > 0 && col + 1 + word.len() > width {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            col = indent;
        } else if i > 0 {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += word.len();
    }
    out
}

/// `-c, --config <PATH>` / `    --shadow`.
pub fn option_label(o: &OptSpec) -> String {
    let short = match o.short {
        Some(c) => format!("-{c}, "),
        None => "    ".into(),
    };
    match o.value {
        Some(v) => format!("{short}--{} <{v}>", o.long),
        None => format!("{short}--{}", o.long),
    }
}

/// An `Options:` block.
fn options_block(opts: &[OptSpec]) -> String {
    let col = opts
        .iter()
        .map(|o| option_label(o).len())
        .max()
        .unwrap_or(0)
        + 4;
    let mut s = String::from("Options:\n");
    for o in opts {
        let label = option_label(o);
        s.push_str(&format!(
            "  {label}{}{}\n",
            " ".repeat(col - 2 - label.len()),
            wrap(o.help, HELP_WIDTH, col)
        ));
    }
    s
}

/// Paragraphs wrapped to the help width.
fn paragraphs(text: &str) -> String {
    text.split("\n\n")
        .map(|p| wrap(p, HELP_WIDTH, 0))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Top-level help.
pub fn help() -> String {
    let col = COMMANDS.iter().map(|c| c.name.len()).max().unwrap_or(0) + 5;
    let mut commands = String::from("Commands:\n");
    for c in COMMANDS {
        commands.push_str(&format!(
            "  {}{}{}\n",
            c.name,
            " ".repeat(col - 2 - c.name.len()),
            wrap(c.summary, HELP_WIDTH, col)
        ));
    }
    let exit = EXIT_STATUSES
        .iter()
        .map(|(code, short, _)| format!("{code} {short}"))
        .collect::<Vec<_>>()
        .join("; ");
    format!(
        "{}\n{}\n\nUsage: endpointd <COMMAND> [OPTIONS]\n\n{commands}\n{}\n{}\n",
        version_line(),
        paragraphs(ABOUT),
        options_block(TOP_OPTIONS),
        wrap(&format!("Exit status: {exit}."), HELP_WIDTH, 0)
    )
}

/// What endpointd is, for the top of `--help` and the man page.
pub const ABOUT: &str = "Endpoints and EndpointSlice controllers for small edge Kubernetes \
    control planes: the job of kube-controller-manager's `endpoint` and `endpointslice` \
    controllers as one small synchronous daemon.";

fn command_help(cmd: &str) -> String {
    let Some(c) = command(cmd) else {
        return help();
    };
    let mut opts = c.options.to_vec();
    opts.push(OptSpec {
        help: "Print help",
        ..HELP
    });
    format!(
        "{}\n{}\n\nUsage: endpointd {}\n\n{}",
        version_line(),
        paragraphs(c.about),
        c.usage,
        options_block(&opts)
    )
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
                    name if command(name).is_some() && help_for => {
                        return Ok(Command::Help(command_help(&v)))
                    }
                    name if command(name).is_some() => cmd = Some(v),
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

    /// The command table (help, man page, completions) and the parser
    /// agree: every option listed for a command is accepted after it, with
    /// a value where it says so, and every command is accepted.
    #[test]
    fn the_table_is_what_the_parser_accepts() {
        for c in COMMANDS {
            let arg = c.argument.map(|_| "web");
            let base: Vec<&str> = std::iter::once(c.name).chain(arg).collect();
            assert!(p(&base, None).is_ok(), "{}", c.name);
            for o in c.options.iter().chain([&HELP]) {
                let value = o.choices.first().copied().or(o.value.map(|_| "x"));
                let mut forms = vec![format!("--{}", o.long)];
                forms.extend(o.short.map(|s| format!("-{s}")));
                for form in forms {
                    let mut args = base.clone();
                    args.push(&form);
                    args.extend(value);
                    assert!(p(&args, None).is_ok(), "{args:?}: {:?}", p(&args, None));
                }
            }
            let Ok(Command::Help(h)) = p(&[c.name, "--help"], None) else {
                panic!("{} --help", c.name)
            };
            assert!(h.contains(&format!("Usage: endpointd {}", c.usage)), "{h}");
            for o in c.options {
                assert!(h.contains(&option_label(o)), "{h}");
            }
        }
        for o in TOP_OPTIONS.iter().filter(|o| o.long != "config") {
            assert!(p(&[&format!("--{}", o.long)], None).is_ok(), "{}", o.long);
        }
        let h = help();
        assert!(h.lines().all(|l| l.len() <= HELP_WIDTH), "{h}");
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
