//! One endpointd instance of the demo: the real binary (`endpointd run`)
//! as a child process with its own config file, log file and metrics
//! address, so that its memory and its writes are its own.
//!
//! Owns the process; must never write to kube-sim itself.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A running `endpointd run`.
pub struct Child {
    proc: std::process::Child,
    /// `holderIdentity` it uses.
    pub identity: String,
    /// Its `/metrics` address.
    pub addr: String,
    /// Its log file.
    pub log: PathBuf,
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// GET `path` from `addr`; the body of a 200.
pub fn http_get(addr: &str, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut resp = String::new();
    s.read_to_string(&mut resp).ok()?;
    if !resp.starts_with("HTTP/1.1 200") {
        return None;
    }
    resp.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

impl Child {
    /// Start `exe run` against `kubeconfig` with identity `identity`.
    pub fn spawn(
        exe: &Path,
        dir: &Path,
        kubeconfig: &Path,
        identity: &str,
    ) -> std::io::Result<Child> {
        let addr = format!("127.0.0.1:{}", free_port()?);
        let cfg = dir.join(format!("{identity}.toml"));
        std::fs::write(
            &cfg,
            format!(
                "[kubernetes]\nkubeconfig = {:?}\n[leader_election]\nidentity = {identity:?}\n\
                 [server]\nlisten = {addr:?}\n[log]\nlevel = \"info\"\n",
                kubeconfig.display().to_string()
            ),
        )?;
        let log = dir.join(format!("{identity}.log"));
        let proc = Command::new(exe)
            .args(["run", "--config"])
            .arg(&cfg)
            .env_remove("NOTIFY_SOCKET")
            .env_remove("JOURNAL_STREAM")
            .env_remove("WATCHDOG_USEC")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&log)?))
            .spawn()?;
        Ok(Child {
            proc,
            identity: identity.to_string(),
            addr,
            log,
        })
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.proc.id()
    }

    /// Resident memory from `/proc/<pid>/status`.
    pub fn rss_bytes(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    }

    /// Sum of one metric over its label sets, if exported.
    pub fn metric_sum(&self, name: &str) -> Option<f64> {
        let body = http_get(&self.addr, "/metrics")?;
        let vals: Vec<f64> = body
            .lines()
            .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
            .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
            .collect();
        (!vals.is_empty()).then(|| vals.iter().sum())
    }

    /// `/readyz` answered 200 (with its message).
    pub fn ready(&self) -> Option<String> {
        http_get(&self.addr, "/readyz")
    }

    /// Whether the process has exited (and how).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.proc.try_wait().ok().flatten()
    }

    /// The last `n` lines of its log.
    pub fn log_tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// SIGTERM, then wait up to `limit` (SIGKILL after). The exit code.
    #[allow(unsafe_code)] // a libc call or a checked invariant: see SAFETY inside
    pub fn stop(mut self, limit: Duration) -> Option<i32> {
        // SAFETY: kill(2) on our own child's pid with a valid signal number.
        unsafe {
            libc::kill(self.proc.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(s) = self.exited() {
                return s.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.proc.kill();
        let _ = self.proc.wait();
        None
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.exited().is_none() {
            let _ = self.proc.kill();
            let _ = self.proc.wait();
        }
    }
}
