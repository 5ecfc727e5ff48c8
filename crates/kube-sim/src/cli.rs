//! kube-sim as a process: the command line of the `kube-sim` binary, also
//! run by benches that need the simulator as a process of its own.
//!
//! A thin CLI over [`SimServer`]: parse flags, start,
//! write the kubeconfig, print the URL (one flushed line on stdout), wait
//! for SIGTERM/SIGINT, stop. Exit codes: 0 after a signal, 1 when starting
//! fails, 2 on usage errors. It never prints the token or keys.

use crate::server::{SimOptions, SimServer};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str = "\
usage: kube-sim [--listen ADDR] [--tls] [--token TOKEN | --token-file PATH]
                [--token-auth-file PATH] [--authorization-mode AlwaysAllow|RBAC]
                [--kubeconfig-out PATH]
                [--history N] [--bookmark-interval DURATION] [--load FILE]
                [--kubelet [--ready-after DURATION] [--grace-period-cap DURATION]
                           [--dual-stack]]

An in-memory Kubernetes API server (core/v1, discovery.k8s.io/v1,
coordination.k8s.io/v1, events.k8s.io/v1) speaking the real REST and watch
protocol.

  --listen ADDR              address to listen on (default 127.0.0.1:6443;
                             port 0 picks a free one)
  --tls                      serve HTTPS with a generated CA; the generated client
                             certificate (CN endpointd, O system:masters) is accepted
  --token TOKEN              accept this bearer token (required without TLS;
                             visible in ps: prefer --token-file)
  --token-file PATH          read the bearer token from PATH (surrounding
                             whitespace trimmed)
  --token-auth-file PATH     more users, as kube-apiserver's static token file:
                             token,user,uid[,\"group1,group2\"] per line; a user
                             system:serviceaccount:NS:NAME gets the ServiceAccount
                             groups; every user gets system:authenticated
  --authorization-mode MODE  AlwaysAllow (default) or RBAC: Roles, ClusterRoles and
                             their bindings (rbac.authorization.k8s.io/v1) from the
                             --load file decide, 403 Forbidden otherwise; the
                             client certificate and --token are system:masters
                             (and only they may use /sim/*)
  --kubeconfig-out PATH      write a kubeconfig for this server (mode 0600)
  --history N                watch events kept before 410 Expired (default 10000)
  --bookmark-interval DUR    interval of BOOKMARK events, e.g. 1s, 500ms (default 1s,
                             at most 1h)
  --load FILE                create the items of a v1 List (JSON or YAML) or of a
                             YAML stream at start; RBAC items go to the authorizer,
                             ServiceAccounts and Secrets are skipped
  --kubelet                  simulate a kubelet: nodes get a podCIDR and Ready; pods
                             are bound to Ready nodes, get an IP from the node's
                             podCIDR, turn Running, and Ready after --ready-after;
                             the annotation sim.endpointd.io/ready: \"false\" makes a
                             pod NotReady; DELETE is graceful (terminating for the
                             grace period, at most --grace-period-cap). Without it,
                             pods keep the status they are written with and are
                             deleted at once.
  --ready-after DUR          with --kubelet: started → Ready delay (default 1s)
  --grace-period-cap DUR     with --kubelet: longest time a deleted pod stays
                             terminating (default 5s)
  --dual-stack               with --kubelet: nodes get an IPv6 podCIDR too
                             (fd00:10:244:<i>::/64) and pods an IPv6 address
                             beside the IPv4 one
  -h, --help                 this text

Prints the server URL on stdout once listening. SIGTERM or SIGINT stops it.
/healthz, /readyz, /livez and /version are anonymous; everything else needs
the token or the client certificate when either is configured.

Fault injection: GET /sim/faults shows the state; POST /sim/faults takes JSON
with any of: clear (bool), failNext ({count, verb, resource, code,
retryAfterSeconds} or a list of them), latencyMs, stallWatches (bool),
closeAllWatches (bool), compact (bool), outageMs. Inspection: GET
/sim/requests (counters per verb and resource, write log, resourceVersion,
and with RBAC the access log: per user, verb, resource and namespace, the
requests allowed and denied).
";

struct Cli {
    opts: SimOptions,
    kubeconfig_out: Option<PathBuf>,
}

enum Parsed {
    Run(Box<Cli>),
    Help,
}

/// Largest `--bookmark-interval` accepted: a real API server bookmarks about
/// once a minute, and a larger value only risks `Instant` overflow.
const MAX_BOOKMARK_INTERVAL: Duration = Duration::from_secs(3600);

fn parse_duration(s: &str) -> Result<Duration, String> {
    let d: jiff::SignedDuration = s.parse().map_err(|e| format!("bad duration {s:?}: {e}"))?;
    Duration::try_from(d).map_err(|_| format!("duration {s:?} must not be negative"))
}

fn parse_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> Result<Parsed, String> {
    use lexopt::prelude::*;
    let mut opts = SimOptions {
        listen: ([127, 0, 0, 1], 6443).into(),
        ..SimOptions::default()
    };
    let mut kubeconfig_out = None;
    let mut p = lexopt::Parser::from_args(args);
    let text = |v: std::ffi::OsString, flag: &str| {
        v.into_string()
            .map_err(|_| format!("{flag}: value is not UTF-8"))
    };
    while let Some(arg) = p.next().map_err(|e| e.to_string())? {
        match arg {
            Short('h') | Long("help") => return Ok(Parsed::Help),
            Long("tls") => opts.tls = true,
            Long("listen") => {
                let v = text(p.value().map_err(|e| e.to_string())?, "--listen")?;
                opts.listen = v
                    .parse()
                    .map_err(|e| format!("--listen {v:?}: {e} (want IP:PORT)"))?;
            }
            Long("token") => {
                let v = text(p.value().map_err(|e| e.to_string())?, "--token")?;
                if v.is_empty() {
                    return Err("--token must not be empty".into());
                }
                opts.token = Some(v);
            }
            Long("token-file") => {
                let v = p.value().map_err(|e| e.to_string())?;
                opts.token = Some(read_token_file(&PathBuf::from(v))?);
            }
            Long("token-auth-file") => {
                let v = PathBuf::from(p.value().map_err(|e| e.to_string())?);
                let text = std::fs::read_to_string(&v)
                    .map_err(|e| format!("--token-auth-file {}: {e}", v.display()))?;
                opts.token_users = crate::authn::parse_token_file(&text)
                    .map_err(|e| format!("--token-auth-file {}: {e}", v.display()))?;
            }
            Long("authorization-mode") => {
                let v = text(
                    p.value().map_err(|e| e.to_string())?,
                    "--authorization-mode",
                )?;
                opts.rbac = match v.as_str() {
                    "RBAC" => true,
                    "AlwaysAllow" => false,
                    _ => {
                        return Err(format!(
                            "--authorization-mode {v:?}: want AlwaysAllow or RBAC"
                        ))
                    }
                };
            }
            Long("kubeconfig-out") => {
                kubeconfig_out = Some(PathBuf::from(p.value().map_err(|e| e.to_string())?));
            }
            Long("history") => {
                let v = text(p.value().map_err(|e| e.to_string())?, "--history")?;
                opts.history = v.parse().map_err(|e| format!("--history {v:?}: {e}"))?;
            }
            Long("bookmark-interval") => {
                let v = text(p.value().map_err(|e| e.to_string())?, "--bookmark-interval")?;
                let d = parse_duration(&v)?;
                if d > MAX_BOOKMARK_INTERVAL {
                    return Err(format!("--bookmark-interval {v:?}: must be at most 1h"));
                }
                opts.bookmark_interval = d;
            }
            Long("load") => opts.load = Some(PathBuf::from(p.value().map_err(|e| e.to_string())?)),
            Long("kubelet") => {
                opts.kubelet.get_or_insert_with(Default::default);
            }
            Long("ready-after") => {
                let v = text(p.value().map_err(|e| e.to_string())?, "--ready-after")?;
                opts.kubelet
                    .get_or_insert_with(Default::default)
                    .ready_after = parse_duration(&v)?;
            }
            Long("grace-period-cap") => {
                let v = text(p.value().map_err(|e| e.to_string())?, "--grace-period-cap")?;
                opts.kubelet.get_or_insert_with(Default::default).grace_cap = parse_duration(&v)?;
            }
            Long("dual-stack") => {
                opts.kubelet.get_or_insert_with(Default::default).dual_stack = true;
            }
            _ => return Err(arg.unexpected().to_string()),
        }
    }
    Ok(Parsed::Run(Box::new(Cli {
        opts,
        kubeconfig_out,
    })))
}

fn run(cli: Cli) -> Result<(), String> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT])
        .map_err(|e| format!("installing signal handlers: {e}"))?;
    let sim = SimServer::start(cli.opts).map_err(|e| e.to_string())?;
    if let Some(path) = &cli.kubeconfig_out {
        sim.write_kubeconfig(path).map_err(|e| e.to_string())?;
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", sim.url())
        .and_then(|()| out.flush())
        .map_err(|e| format!("writing the URL: {e}"))?;
    drop(out);
    if let Some(sig) = signals.forever().next() {
        log::info!("kube-sim: signal {sig}, stopping");
    }
    sim.stop();
    Ok(())
}

/// Run kube-sim with these arguments (the program name left out) until
/// SIGTERM or SIGINT; sets up logging from `RUST_LOG` (default `warn`).
pub fn main(args: impl IntoIterator<Item = std::ffi::OsString>) -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match parse_args(args) {
        Ok(Parsed::Help) => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Ok(Parsed::Run(cli)) => match run(*cli) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("kube-sim: {e}");
                ExitCode::from(1)
            }
        },
        Err(e) => {
            eprintln!("kube-sim: {e}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// The token in `path`, trimmed; an error names the file, never its content.
fn read_token_file(path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--token-file {}: {e}", path.display()))?;
    let t = text.trim();
    if t.is_empty() {
        return Err(format!(
            "--token-file {}: the file is empty",
            path.display()
        ));
    }
    Ok(t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_file_is_read_trimmed_and_errors_name_the_file_only() {
        let dir = std::env::temp_dir().join(format!("kube-sim-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let good = dir.join("token");
        std::fs::write(&good, "s3cret-token\n").expect("write");
        let Ok(Parsed::Run(cli)) = parse(&["--token-file", &good.display().to_string()]) else {
            panic!("--token-file rejected");
        };
        assert_eq!(cli.opts.token.as_deref(), Some("s3cret-token"));
        let empty = dir.join("empty");
        std::fs::write(&empty, " \n").expect("write");
        let e = parse(&["--token-file", &empty.display().to_string()])
            .err()
            .expect("empty");
        assert!(e.contains("empty") && e.contains("empty"), "{e}");
        let missing = dir.join("missing");
        let e = parse(&["--token-file", &missing.display().to_string()])
            .err()
            .expect("missing");
        assert!(e.contains("missing"), "{e}");
        std::fs::write(&good, "s3cret-token-that-is-long\nsecond line\n").expect("write");
        let e = read_token_file(&empty).expect_err("empty");
        assert!(!e.contains("s3cret"), "{e}");
    }

    fn parse(args: &[&str]) -> Result<Parsed, String> {
        parse_args(args.iter().map(std::ffi::OsString::from))
    }

    #[test]
    fn flags_table() {
        let Ok(Parsed::Run(cli)) = parse(&[
            "--listen",
            "127.0.0.1:0",
            "--tls",
            "--token=abc",
            "--history",
            "5",
            "--bookmark-interval",
            "250ms",
            "--kubeconfig-out",
            "/tmp/k",
        ]) else {
            panic!("valid flags rejected");
        };
        assert!(parse(&["--bookmark-interval", "1h"]).is_ok());
        assert!(cli.opts.tls);
        assert_eq!(cli.opts.token.as_deref(), Some("abc"));
        assert_eq!(cli.opts.history, 5);
        assert_eq!(cli.opts.bookmark_interval, Duration::from_millis(250));
        assert_eq!(cli.opts.listen.port(), 0);
        assert!(matches!(parse(&["--help"]), Ok(Parsed::Help)));
        assert!(!cli.opts.rbac, "RBAC is off by default");
        let Ok(Parsed::Run(cli)) = parse(&["--authorization-mode", "RBAC"]) else {
            panic!("--authorization-mode RBAC rejected");
        };
        assert!(cli.opts.rbac);
        for bad in [
            &["--authorization-mode", "rbac"][..],
            &["--token-auth-file", "/nonexistent/tokens.csv"],
            &["--listen", "nowhere"][..],
            &["--history", "-1"],
            &["--bookmark-interval", "soon"],
            &["--bookmark-interval", "2h"],
            &["--token", ""],
            &["--bogus"],
            &["--listen"],
            &["extra"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
