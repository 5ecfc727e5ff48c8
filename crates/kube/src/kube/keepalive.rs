//! TCP connections to the API server with keepalive (issue 17, item 3),
//! and our own register of them so that a shutdown still reaches every one.
//!
//! ureq's own TCP connector sets no keepalive and offers no hook to set it,
//! so this connector opens the socket itself (same per-address connect
//! budget idea, `TCP_NODELAY` as configured; reads and writes as ureq's
//! `TcpTransport`, which is not public), turns on `SO_KEEPALIVE` with
//! `TCP_KEEPIDLE` 30 s, `TCP_KEEPINTVL` 10 s and `TCP_KEEPCNT` 3 — a peer that
//! vanished without a FIN (a rebooted node behind NAT, a cut link) is found
//! within about a minute even on an idle pooled connection — and hands the
//! socket to ureq. TLS and proxies chain after and before
//! it as in ureq's default chain.
//!
//! ureq's `Agent::shutdown` cannot reach sockets opened outside ureq, so
//! each connector keeps weak handles to its sockets ([`Sockets`]) and the
//! transport shuts them down itself (cancel, `shutdown_watches`, reset).
//!
//! Writes are coalesced: what ureq hands over (a request head, then its
//! body) is held until ureq waits for input, then sent with one `send(2)`
//! (one segment, one wake-up of the server instead of two). Anything ureq
//! waits for can only arrive after our bytes are out, and every wait goes
//! through `await_input`, which sends first; more than one buffer's worth
//! is sent at once.
//!
//! Owns socket options and that register; the register must never read or
//! write on the sockets (the transport does) and never keep a socket alive
//! longer than ureq does (it holds weak handles only).

// setsockopt/getsockopt/recv on sockets this module owns: every unsafe block says why it holds.
#![allow(unsafe_code)]

use std::fmt;
use std::io;
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, Transport,
};

/// Idle time before the first keepalive probe.
pub const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
/// Interval between probes.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// Unanswered probes before the connection is declared dead.
pub const KEEPALIVE_PROBES: u32 = 3;

/// Weak handles to the sockets one connector opened.
#[derive(Debug, Default)]
pub struct Sockets(Mutex<Vec<Weak<TcpStream>>>);

impl Sockets {
    fn add(&self, s: &Arc<TcpStream>) {
        let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        v.retain(|w| w.strong_count() > 0);
        v.push(Arc::downgrade(s));
    }

    /// Shut down every socket still open: blocked reads and writes on it
    /// fail at once.
    pub fn shutdown_all(&self) {
        let v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for s in v.iter().filter_map(Weak::upgrade) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Keepalive state (on, idle time) of every open socket (for tests
    /// and diagnostics).
    pub fn keepalive(&self) -> Vec<(bool, Duration)> {
        let v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        v.iter()
            .filter_map(Weak::upgrade)
            .filter_map(|s| keepalive_of(&s).ok())
            .collect()
    }

    /// Sockets still open (for tests).
    pub fn open(&self) -> usize {
        let v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        v.iter().filter(|w| w.strong_count() > 0).count()
    }
}

/// Connects with TCP keepalive and records the socket in `sockets`.
#[derive(Debug, Clone)]
pub struct KeepaliveConnector {
    /// Where the sockets are recorded.
    pub sockets: Arc<Sockets>,
}

fn setsockopt(fd: i32, level: i32, name: i32, value: i32) -> io::Result<()> {
    // SAFETY: `value` lives for the call and its size is passed; `fd` is an
    // open socket owned by the caller.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Turn on keepalive with our timings.
pub fn set_keepalive(s: &TcpStream) -> io::Result<()> {
    let fd = s.as_raw_fd();
    let secs = |d: Duration| i32::try_from(d.as_secs()).unwrap_or(i32::MAX);
    setsockopt(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1)?;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_KEEPIDLE,
            secs(KEEPALIVE_IDLE),
        )?;
        setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_KEEPINTVL,
            secs(KEEPALIVE_INTERVAL),
        )?;
        setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_KEEPCNT,
            i32::try_from(KEEPALIVE_PROBES).unwrap_or(3),
        )?;
    }
    Ok(())
}

/// Read back whether keepalive is on and its idle time (for tests).
pub fn keepalive_of(s: &TcpStream) -> io::Result<(bool, Duration)> {
    let get = |level, name| -> io::Result<i32> {
        let mut v: i32 = 0;
        let mut len = std::mem::size_of::<i32>() as libc::socklen_t;
        // SAFETY: `v` and `len` live for the call; the kernel writes at
        // most `len` bytes into `v`.
        let rc = unsafe {
            libc::getsockopt(
                s.as_raw_fd(),
                level,
                name,
                (&mut v as *mut i32).cast(),
                &mut len,
            )
        };
        if rc == 0 {
            Ok(v)
        } else {
            Err(io::Error::last_os_error())
        }
    };
    let on = get(libc::SOL_SOCKET, libc::SO_KEEPALIVE)? != 0;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let idle = Duration::from_secs(
        u64::try_from(get(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE)?).unwrap_or(0),
    );
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let idle = Duration::ZERO;
    Ok((on, idle))
}

/// A plain TCP transport (ureq's own `TcpTransport` is not public): the
/// same timeouts per read and write, EINTR retried, `WouldBlock` as a
/// timeout. Holds the strong handle the register's weak one points to.
pub struct KeepaliveTransport {
    stream: Arc<TcpStream>,
    buffers: LazyBuffers,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    /// Output handed over by ureq and not sent yet, and the write timeout
    /// it was handed over with.
    pending: Vec<u8>,
    pending_timeout: Option<NextTimeout>,
}

/// Pending output beyond this is sent at once (a large request body).
const COALESCE_MAX: usize = 16 * 1024;

impl fmt::Debug for KeepaliveTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeepaliveTransport")
            .field("peer", &self.stream.peer_addr().ok())
            .finish()
    }
}

/// `Some(d)` for a timeout that applies (zero → an immediate timeout error).
fn applies(t: &NextTimeout) -> Result<Option<Duration>, ureq::Error> {
    if t.after.is_not_happening() {
        return Ok(None);
    }
    if t.after.is_zero() {
        return Err(ureq::Error::Timeout(t.reason));
    }
    Ok(Some(*t.after))
}

fn io_err(e: io::Error, t: &NextTimeout) -> ureq::Error {
    match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ureq::Error::Timeout(t.reason),
        _ => ureq::Error::Io(e),
    }
}

impl KeepaliveTransport {
    /// Send the pending output with one `write_all`.
    fn send_pending(&mut self) -> Result<(), ureq::Error> {
        use std::io::Write;
        let Some(timeout) = self.pending_timeout.take() else {
            return Ok(());
        };
        let d = applies(&timeout)?;
        if d != self.write_timeout {
            self.stream.set_write_timeout(d)?;
            self.write_timeout = d;
        }
        let res = (&*self.stream).write_all(&self.pending);
        self.pending.clear();
        // A large body grew it: do not keep that for the connection's life.
        self.pending.shrink_to(COALESCE_MAX);
        res.map_err(|e| io_err(e, &timeout))
    }
}

impl Transport for KeepaliveTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let timeout = timeout.for_write();
        // Fail a spent budget now, as an immediate send would.
        applies(&timeout)?;
        let output = &self.buffers.output()[..amount];
        self.pending.extend_from_slice(output);
        self.pending_timeout = Some(timeout);
        if self.pending.len() >= COALESCE_MAX {
            self.send_pending()?;
        }
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        use std::io::Read;
        self.send_pending()?;
        let timeout = timeout.for_read();
        let d = applies(&timeout)?;
        if d != self.read_timeout {
            self.stream.set_read_timeout(d)?;
            self.read_timeout = d;
        }
        let started = std::time::Instant::now();
        let input = self.buffers.input_append_buf();
        let n = loop {
            match (&*self.stream).read(input) {
                // Linux does not restart socket reads with a timeout after a
                // signal: retry with what is left of the budget.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    let Some(d) = d else {
                        return Err(ureq::Error::Io(e));
                    };
                    let left = d.saturating_sub(started.elapsed());
                    if left.is_zero() {
                        return Err(ureq::Error::Timeout(timeout.reason));
                    }
                    self.stream.set_read_timeout(Some(left))?;
                    self.read_timeout = Some(left);
                }
                other => break other.map_err(|e| io_err(e, &timeout))?,
            }
        };
        self.buffers.input_appended(n);
        Ok(n > 0)
    }

    fn is_open(&mut self) -> bool {
        use std::os::fd::AsRawFd;
        // A pooled connection is reusable when reading would block: the
        // server neither closed it nor sent anything unasked. One peeking,
        // non-blocking recv(2) (it was three syscalls: two fcntl-style
        // ioctls around a non-blocking read).
        let mut buf = [0u8; 1];
        // SAFETY: the descriptor is owned by `self.stream` and open for the
        // duration of the call; `buf` is a valid writable buffer of 1 byte.
        let n = unsafe {
            libc::recv(
                self.stream.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        if n >= 0 {
            // 0: closed by the peer; > 0: unasked data (not reusable).
            return false;
        }
        let e = io::Error::last_os_error();
        matches!(e.kind(), io::ErrorKind::WouldBlock)
    }
}

fn connect_one(addr: &std::net::SocketAddr, timeout: Option<Duration>) -> io::Result<TcpStream> {
    match timeout {
        Some(t) => TcpStream::connect_timeout(addr, t),
        None => TcpStream::connect(addr),
    }
}

impl<In: Transport> Connector<In> for KeepaliveConnector {
    type Out = Either<In, KeepaliveTransport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        if let Some(c) = chained {
            // A proxy connection already exists; it is the transport.
            return Ok(Some(Either::A(c)));
        }
        // The connect budget is shared by the addresses: each gets an
        // equal part of it (at least 10 ms).
        let budget = details.timeout.not_zero().map(|d| *d);
        let n = details.addrs.len().max(1) as u32;
        let per_addr = budget.map(|b| (b / n).max(Duration::from_millis(10)));
        let mut last: Option<io::Error> = None;
        for addr in details.addrs.iter() {
            let stream = match connect_one(addr, per_addr) {
                Ok(s) => s,
                Err(e) => {
                    last = Some(e);
                    continue;
                }
            };
            if details.config.no_delay() {
                stream.set_nodelay(true)?;
            }
            if let Err(e) = set_keepalive(&stream) {
                log::debug!("TCP keepalive not set on the connection to {addr}: {e}");
            }
            let stream = Arc::new(stream);
            self.sockets.add(&stream);
            let buffers = LazyBuffers::new(
                details.config.input_buffer_size(),
                details.config.output_buffer_size(),
            );
            return Ok(Some(Either::B(KeepaliveTransport {
                stream,
                buffers,
                read_timeout: None,
                write_timeout: None,
                pending: Vec::new(),
                pending_timeout: None,
            })));
        }
        Err(match last {
            Some(e) if e.kind() == io::ErrorKind::TimedOut => {
                ureq::Error::Timeout(ureq::Timeout::Connect)
            }
            Some(e) => ureq::Error::Io(e),
            None => ureq::Error::Io(io::Error::new(
                io::ErrorKind::AddrNotAvailable,
                "no address to connect to",
            )),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn keepalive_is_set_and_the_register_shuts_sockets_down() {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let s = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        assert!(!keepalive_of(&s).expect("get").0, "off by default");
        set_keepalive(&s).expect("set");
        let (on, idle) = keepalive_of(&s).expect("get");
        assert!(on);
        if cfg!(target_os = "linux") {
            assert_eq!(idle, KEEPALIVE_IDLE);
        }
        let sockets = Sockets::default();
        let strong = Arc::new(s.try_clone().expect("clone"));
        sockets.add(&strong);
        assert_eq!(sockets.open(), 1);
        let (mut peer, _) = l.accept().expect("accept");
        sockets.shutdown_all();
        let mut buf = [0u8; 1];
        use std::io::Read;
        assert_eq!(
            peer.read(&mut buf).expect("eof"),
            0,
            "the peer sees the shutdown"
        );
        drop(strong);
        assert_eq!(sockets.open(), 0, "weak handles only");
    }
}
