//! The listening server: an accept thread, one thread per connection, a
//! keep-alive request loop, optional TLS, and the controls faults need
//! (drop every connection; refuse new ones until a deadline).
//!
//! Invariants: every live connection is in the registry (so it can be shut
//! down) until its thread ends; `shutdown()` returns only after the accept
//! thread and every connection thread have ended. It never interprets
//! paths or bodies: that is the [`Handler`]'s job.

use super::Handler;
use crate::clock::{RealClock, SharedClock};
use rustls::ServerConfig;
use std::cell::Cell;
use std::collections::HashMap;
use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Largest request body accepted (413 above).
    pub max_body: usize,
    /// Most connections served at once (one thread each); above it a new
    /// connection gets `503` and is closed.
    pub max_connections: usize,
    /// A keep-alive connection idle this long is closed.
    pub idle_timeout: Duration,
    /// A write blocked this long fails and closes the connection.
    pub write_timeout: Duration,
    /// Time source for the refuse-until deadline.
    pub clock: SharedClock,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            max_body: 16 * 1024 * 1024,
            max_connections: 4096,
            idle_timeout: Duration::from_secs(300),
            write_timeout: Duration::from_secs(30),
            clock: RealClock::shared(),
        }
    }
}

static NEXT_CONN_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// Id of the connection whose request this thread is serving.
    static CURRENT_CONN: Cell<u64> = const { Cell::new(0) };
    /// Set by a handler to close its connection after the response.
    pub(super) static CLOSE_AFTER: Cell<bool> = const { Cell::new(false) };
}

/// Ask the server to close the current connection once the response being
/// prepared on this thread is written. No effect outside a handler.
pub fn close_after_response() {
    CLOSE_AFTER.with(|c| c.set(true));
}

struct Conn {
    stream: TcpStream,
    closed: Arc<AtomicBool>,
}

/// State shared by the accept thread, connection threads and controls.
pub(super) struct Shared {
    pub(super) opts: ServerOptions,
    pub(super) handler: Arc<dyn Handler>,
    pub(super) tls: Option<Arc<ServerConfig>>,
    pub(super) stopping: AtomicBool,
    refuse_until: Mutex<Option<Instant>>,
    conns: Mutex<HashMap<u64, Conn>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Connections accepted so far (served or turned away).
    accepted: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A running server.
pub struct Server {
    shared: Arc<Shared>,
    addr: SocketAddr,
    accept: Option<JoinHandle<()>>,
}

/// A cloneable handle for fault injection on a running server. It does
/// not keep the server alive (a handler that holds one would otherwise
/// form a cycle with the server that holds the handler); once the server
/// is gone its operations do nothing.
#[derive(Clone)]
pub struct ServerControl {
    shared: Weak<Shared>,
}

impl std::fmt::Debug for ServerControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerControl").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Listen on `addr` and serve with default options.
    pub fn start(
        addr: SocketAddr,
        tls: Option<Arc<ServerConfig>>,
        handler: Arc<dyn Handler>,
    ) -> io::Result<Server> {
        Server::start_with(addr, tls, handler, ServerOptions::default())
    }

    /// Listen on `addr` and serve with `opts`.
    pub fn start_with(
        addr: SocketAddr,
        tls: Option<Arc<ServerConfig>>,
        handler: Arc<dyn Handler>,
        opts: ServerOptions,
    ) -> io::Result<Server> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            opts,
            handler,
            tls,
            stopping: AtomicBool::new(false),
            refuse_until: Mutex::new(None),
            conns: Mutex::new(HashMap::new()),
            threads: Mutex::new(Vec::new()),
            accepted: AtomicU64::new(0),
        });
        let s2 = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("httpd-accept".into())
            .spawn(move || accept_loop(&s2, &listener))?;
        Ok(Server {
            shared,
            addr,
            accept: Some(accept),
        })
    }

    /// The address actually bound (port 0 resolved).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// A handle for fault injection.
    pub fn control(&self) -> ServerControl {
        ServerControl {
            shared: Arc::downgrade(&self.shared),
        }
    }

    /// Number of open connections.
    pub fn connections(&self) -> usize {
        lock(&self.shared.conns).len()
    }

    /// Close the listener and every connection, and join all threads.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let Some(accept) = self.accept.take() else {
            return;
        };
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wake the blocking accept() with a throwaway connection.
        let _ = TcpStream::connect_timeout(&wake_addr(self.addr), Duration::from_secs(1));
        let _ = accept.join();
        self.shared.close_conns(None);
        let threads = std::mem::take(&mut *lock(&self.shared.threads));
        for t in threads {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn wake_addr(addr: SocketAddr) -> SocketAddr {
    let mut a = addr;
    if a.ip().is_unspecified() {
        a.set_ip(match addr {
            SocketAddr::V4(_) => [127, 0, 0, 1].into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    a
}

impl ServerControl {
    /// Shut down every open connection. When called from a handler, that
    /// handler's own connection is not cut: it closes after its response.
    pub fn drop_all_connections(&self) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let current = CURRENT_CONN.with(Cell::get);
        let mine = lock(&shared.conns).contains_key(&current);
        if mine {
            close_after_response();
        }
        shared.close_conns(mine.then_some(current));
    }

    /// Accept and at once close every new connection until `until`.
    pub fn refuse_until(&self, until: Instant) {
        if let Some(shared) = self.shared.upgrade() {
            *lock(&shared.refuse_until) = Some(until);
        }
    }

    /// Whether new connections are being refused now.
    pub fn refusing(&self) -> bool {
        self.shared.upgrade().is_some_and(|s| s.refusing())
    }

    /// Number of open connections.
    pub fn connections(&self) -> usize {
        self.shared.upgrade().map_or(0, |s| lock(&s.conns).len())
    }

    /// Connections accepted since the start (including refused ones).
    pub fn accepted(&self) -> u64 {
        self.shared
            .upgrade()
            .map_or(0, |s| s.accepted.load(Ordering::Relaxed))
    }
}

impl Shared {
    fn refusing(&self) -> bool {
        let mut r = lock(&self.refuse_until);
        match *r {
            Some(until) if self.opts.clock.now() < until => true,
            Some(_) => {
                *r = None;
                false
            }
            None => false,
        }
    }

    fn close_conns(&self, except: Option<u64>) {
        for (id, c) in lock(&self.conns).iter() {
            if Some(*id) == except {
                continue;
            }
            c.closed.store(true, Ordering::SeqCst);
            let _ = c.stream.shutdown(Shutdown::Both);
        }
    }
}

fn accept_loop(shared: &Arc<Shared>, listener: &TcpListener) {
    loop {
        let accepted = listener.accept();
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let (stream, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                log::warn!("httpd: accept failed: {e}");
                shared.opts.clock.sleep(Duration::from_millis(10));
                continue;
            }
        };
        shared.accepted.fetch_add(1, Ordering::Relaxed);
        if shared.refusing() {
            let _ = stream.shutdown(Shutdown::Both);
            continue;
        }
        if lock(&shared.conns).len() >= shared.opts.max_connections {
            turn_away(stream);
            continue;
        }
        if let Err(e) = spawn_conn(shared, stream, peer) {
            log::warn!("httpd: cannot start connection thread: {e}");
        }
    }
}

/// Answer 503 on a connection over the limit and close it, without
/// reading the request (the write is small and bounded by a timeout).
fn turn_away(mut stream: TcpStream) {
    use std::io::Write;
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let _ = stream.write_all(
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 1\r\nConnection: close\r\n\r\n",
    );
    let _ = stream.shutdown(Shutdown::Write);
}

fn spawn_conn(shared: &Arc<Shared>, stream: TcpStream, peer: SocketAddr) -> io::Result<()> {
    let id = NEXT_CONN_ID.fetch_add(1, Ordering::Relaxed);
    let closed = Arc::new(AtomicBool::new(false));
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(shared.opts.idle_timeout))?;
    stream.set_write_timeout(Some(shared.opts.write_timeout))?;
    let registered = stream.try_clone()?;
    lock(&shared.conns).insert(
        id,
        Conn {
            stream: registered,
            closed: Arc::clone(&closed),
        },
    );
    let s2 = Arc::clone(shared);
    let spawned = std::thread::Builder::new()
        .name("httpd-conn".into())
        .spawn(move || {
            let _reg = Registration { shared: &s2, id };
            CURRENT_CONN.with(|c| c.set(id));
            super::conn::run_conn(&s2, stream, peer, &closed);
        });
    match spawned {
        Ok(h) => {
            let mut threads = lock(&shared.threads);
            threads.retain(|t| !t.is_finished());
            threads.push(h);
            Ok(())
        }
        Err(e) => {
            lock(&shared.conns).remove(&id);
            Err(e)
        }
    }
}

/// Removes a connection from the registry when its thread ends (even by panic).
struct Registration<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        lock(&self.shared.conns).remove(&self.id);
    }
}
