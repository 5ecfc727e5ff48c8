//! systemd's notification protocol (sd_notify(3)) without libsystemd:
//! datagrams of `KEY=VALUE` lines sent to the socket in `$NOTIFY_SOCKET`
//! (a path, or `@name` for the abstract namespace).
//!
//! Owns the socket and the message text only. It never decides *when* to
//! send READY or WATCHDOG: the daemon's supervisor does, after its own
//! liveness checks pass. Without `$NOTIFY_SOCKET` every call is a no-op.

use std::io;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::path::PathBuf;
use std::time::Duration;

/// Where notifications go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A filesystem socket path.
    Path(PathBuf),
    /// An abstract-namespace name (without the leading `@`).
    Abstract(Vec<u8>),
}

impl Target {
    /// Parse a `$NOTIFY_SOCKET` value.
    pub fn parse(v: &str) -> Option<Target> {
        if v.is_empty() {
            None
        } else if let Some(name) = v.strip_prefix('@') {
            Some(Target::Abstract(name.as_bytes().to_vec()))
        } else if v.starts_with('/') {
            Some(Target::Path(PathBuf::from(v)))
        } else {
            None
        }
    }
}

/// A notifier bound to one target (or to nothing).
#[derive(Debug, Clone, Default)]
pub struct Notifier {
    target: Option<Target>,
}

impl Notifier {
    /// From `$NOTIFY_SOCKET`; a no-op notifier when it is unset or invalid.
    pub fn from_env() -> Notifier {
        Notifier {
            target: std::env::var("NOTIFY_SOCKET")
                .ok()
                .and_then(|v| Target::parse(&v)),
        }
    }

    /// To an explicit target.
    pub fn new(target: Option<Target>) -> Notifier {
        Notifier { target }
    }

    /// Whether a socket is configured.
    pub fn enabled(&self) -> bool {
        self.target.is_some()
    }

    /// Send raw `KEY=VALUE\n…` text. Ok(false) when no socket is configured.
    ///
    /// Never blocks: when the receiver's queue is full (its reader is
    /// behind; Linux queues only `net.unix.max_dgram_qlen` datagrams, 10 by
    /// default) the datagram is dropped with `ErrorKind::WouldBlock`. A
    /// blocking send would stall the caller, the daemon's supervisor, and
    /// with it `/healthz` and the wedge check, for as long as nobody reads.
    pub fn send(&self, state: &str) -> io::Result<bool> {
        let Some(t) = &self.target else {
            return Ok(false);
        };
        let sock = UnixDatagram::unbound()?;
        sock.set_nonblocking(true)?;
        match t {
            Target::Path(p) => sock.send_to(state.as_bytes(), p)?,
            Target::Abstract(name) => {
                use std::os::linux::net::SocketAddrExt;
                let addr = SocketAddr::from_abstract_name(name)?;
                sock.send_to_addr(state.as_bytes(), &addr)?
            }
        };
        Ok(true)
    }

    /// `READY=1` with a status line.
    pub fn ready(&self, status: &str) -> io::Result<bool> {
        self.send(&format!("READY=1\nSTATUS={}", one_line(status)))
    }

    /// `STATUS=…`.
    pub fn status(&self, status: &str) -> io::Result<bool> {
        self.send(&format!("STATUS={}", one_line(status)))
    }

    /// `WATCHDOG=1`: only after the caller's liveness checks passed.
    pub fn watchdog(&self) -> io::Result<bool> {
        self.send("WATCHDOG=1")
    }

    /// `STOPPING=1` with a status line.
    pub fn stopping(&self, status: &str) -> io::Result<bool> {
        self.send(&format!("STOPPING=1\nSTATUS={}", one_line(status)))
    }

    /// `RELOADING=1` (around a SIGHUP reload), then `READY=1` when done.
    pub fn reloading(&self) -> io::Result<bool> {
        self.send("RELOADING=1")
    }
}

fn one_line(s: &str) -> String {
    s.replace('\n', " ")
}

/// The watchdog interval systemd expects pings within (`$WATCHDOG_USEC`),
/// if it is meant for this process (`$WATCHDOG_PID` unset or ours).
pub fn watchdog_interval() -> Option<Duration> {
    watchdog_from(
        std::env::var("WATCHDOG_USEC").ok().as_deref(),
        std::env::var("WATCHDOG_PID").ok().as_deref(),
        std::process::id(),
    )
}

/// Pure form of [`watchdog_interval`].
pub fn watchdog_from(usec: Option<&str>, pid: Option<&str>, me: u32) -> Option<Duration> {
    if let Some(p) = pid {
        if p.parse::<u32>().ok() != Some(me) {
            return None;
        }
    }
    let us: u64 = usec?.parse().ok().filter(|u| *u > 0)?;
    Some(Duration::from_micros(us))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_targets() {
        assert_eq!(Target::parse(""), None);
        assert_eq!(Target::parse("relative"), None);
        assert_eq!(
            Target::parse("/run/systemd/notify"),
            Some(Target::Path("/run/systemd/notify".into()))
        );
        assert_eq!(
            Target::parse("@sock"),
            Some(Target::Abstract(b"sock".to_vec()))
        );
    }

    #[test]
    fn watchdog_env() {
        let cases = [
            (Some("30000000"), None, Some(Duration::from_secs(30))),
            (Some("30000000"), Some("42"), Some(Duration::from_secs(30))),
            (Some("30000000"), Some("43"), None),
            (Some("0"), None, None),
            (Some("x"), None, None),
            (None, None, None),
        ];
        for (usec, pid, want) in cases {
            assert_eq!(watchdog_from(usec, pid, 42), want, "{usec:?} {pid:?}");
        }
    }

    fn recv(sock: &UnixDatagram) -> String {
        let mut buf = [0u8; 512];
        let n = sock.recv(&mut buf).expect("datagram");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    #[test]
    fn datagrams_reach_a_real_path_socket() {
        let dir = std::env::temp_dir().join(format!("sdnotify-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("tmp dir");
        let path = dir.join("notify.sock");
        let _ = std::fs::remove_file(&path);
        let sock = UnixDatagram::bind(&path).expect("bind");
        sock.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let n = Notifier::new(Some(Target::Path(path.clone())));
        assert!(n.ready("syncing\ncaches").expect("send"));
        assert_eq!(recv(&sock), "READY=1\nSTATUS=syncing caches");
        n.watchdog().expect("send");
        assert_eq!(recv(&sock), "WATCHDOG=1");
        n.status("leading").expect("send");
        assert_eq!(recv(&sock), "STATUS=leading");
        n.stopping("draining").expect("send");
        assert_eq!(recv(&sock), "STOPPING=1\nSTATUS=draining");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn datagrams_reach_an_abstract_socket() {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("endpointd-test-{}", std::process::id());
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).expect("addr");
        let sock = UnixDatagram::bind_addr(&addr).expect("bind");
        sock.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let n = Notifier::new(Target::parse(&format!("@{name}")));
        assert!(n.watchdog().expect("send"));
        assert_eq!(recv(&sock), "WATCHDOG=1");
    }

    #[test]
    fn a_full_queue_drops_the_datagram_instead_of_blocking() {
        let dir = std::env::temp_dir().join(format!("sdnotify-full-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("tmp dir");
        let path = dir.join("notify.sock");
        let _ = std::fs::remove_file(&path);
        let sock = UnixDatagram::bind(&path).expect("bind");
        let n = Notifier::new(Some(Target::Path(path.clone())));
        // Never read: the queue holds max_dgram_qlen datagrams (or what
        // the receive buffer takes), far fewer than this.
        let mut sent = 0;
        let err = loop {
            match n.watchdog() {
                Ok(_) => sent += 1,
                Err(e) => break e,
            }
            assert!(sent < 100_000, "the queue never filled");
        };
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock, "{err}");
        assert!(sent > 0);
        // What was queued is intact, and sending works again once read.
        sock.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        assert_eq!(recv(&sock), "WATCHDOG=1");
        n.status("leading").expect("room again");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn no_socket_is_a_no_op() {
        assert!(!Notifier::new(None).ready("x").expect("no-op"));
    }
}
