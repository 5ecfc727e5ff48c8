//! A TCP proxy on loopback that can make every connection open at one
//! moment go silent — the shape of kubernetes#125530: an API server behind
//! a load balancer loses power; its TCP connections are neither answered
//! nor closed, while new connections reach a healthy server.
//!
//! [`SilentProxy::silence_open`] stops forwarding on every connection open
//! at that moment, in both directions, and keeps their sockets open (no
//! FIN, no RST); connections accepted afterwards are forwarded as usual.
//! For tests: each connection costs two threads.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// One proxied connection: both sockets (kept open while silent) and
/// whether it is silenced.
struct Conn {
    client: TcpStream,
    upstream: TcpStream,
    silent: Arc<AtomicBool>,
}

#[derive(Default)]
struct Shared {
    conns: Mutex<Vec<Conn>>,
    stop: AtomicBool,
    accepted: AtomicUsize,
}

/// The proxy: listens on `127.0.0.1:0`, forwards to one upstream address.
pub struct SilentProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

/// Copy `from` → `to` until either ends or the connection is silenced
/// (then return without closing anything: the sockets stay open in
/// [`Shared::conns`]).
fn pump(mut from: TcpStream, mut to: TcpStream, silent: Arc<AtomicBool>, stop: Arc<Shared>) {
    let _ = from.set_read_timeout(Some(Duration::from_millis(20)));
    let mut buf = [0u8; 16 * 1024];
    loop {
        if silent.load(Ordering::SeqCst) || stop.stop.load(Ordering::SeqCst) {
            return;
        }
        match from.read(&mut buf) {
            Ok(0) => {
                if !silent.load(Ordering::SeqCst) {
                    let _ = to.shutdown(Shutdown::Write);
                }
                return;
            }
            Ok(n) => {
                // Bytes read after the silence began are swallowed: a
                // server that lost power answers nothing.
                if silent.load(Ordering::SeqCst) {
                    return;
                }
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => {
                if !silent.load(Ordering::SeqCst) {
                    let _ = to.shutdown(Shutdown::Both);
                }
                return;
            }
        }
    }
}

impl SilentProxy {
    /// Start forwarding every connection to `upstream`.
    pub fn start(upstream: SocketAddr) -> io::Result<SilentProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let shared = Arc::new(Shared::default());
        let sh = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("silent-proxy".into())
            .spawn(move || {
                while !sh.stop.load(Ordering::SeqCst) {
                    let client = match listener.accept() {
                        Ok((c, _)) => c,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(5));
                            continue;
                        }
                        Err(_) => continue,
                    };
                    let _ = client.set_nonblocking(false);
                    let Ok(upstream) = TcpStream::connect(upstream) else {
                        continue;
                    };
                    let _ = client.set_nodelay(true);
                    let _ = upstream.set_nodelay(true);
                    sh.accepted.fetch_add(1, Ordering::SeqCst);
                    let silent = Arc::new(AtomicBool::new(false));
                    let clones = (
                        client.try_clone(),
                        upstream.try_clone(),
                        client.try_clone(),
                        upstream.try_clone(),
                    );
                    let (Ok(c1), Ok(u1), Ok(c2), Ok(u2)) = clones else {
                        continue;
                    };
                    sh.conns
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(Conn {
                            client,
                            upstream,
                            silent: Arc::clone(&silent),
                        });
                    let (s1, st1) = (Arc::clone(&silent), Arc::clone(&sh));
                    std::thread::spawn(move || pump(c1, u1, s1, st1));
                    let st2 = Arc::clone(&sh);
                    std::thread::spawn(move || pump(u2, c2, silent, st2));
                }
            })?;
        Ok(SilentProxy {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Silence every connection open now (forwarding stops both ways, the
    /// sockets stay open); returns how many. Later connections are
    /// forwarded.
    pub fn silence_open(&self) -> usize {
        let conns = self.shared.conns.lock().unwrap_or_else(|p| p.into_inner());
        conns
            .iter()
            .filter(|c| !c.silent.swap(true, Ordering::SeqCst))
            .count()
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for SilentProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
        let conns =
            std::mem::take(&mut *self.shared.conns.lock().unwrap_or_else(|p| p.into_inner()));
        for c in conns {
            let _ = c.client.shutdown(Shutdown::Both);
            let _ = c.upstream.shutdown(Shutdown::Both);
        }
    }
}
