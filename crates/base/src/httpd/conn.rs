//! One connection's life: the optional TLS wrapper, the keep-alive request
//! loop, response writing (whole or chunked, flushed per chunk) and the
//! liveness checks that end a stream when its peer or the server goes away.
//!
//! It never interprets requests (the [`Handler`](super::Handler) does) and
//! never outlives its registry entry (see `server::Registration`).

use super::server::{Shared, CLOSE_AFTER};
use super::wire::{self, ReadError, RequestReader};
use super::{Body, Response};
use crossbeam_channel::RecvTimeoutError;
use rustls::{ServerConnection, StreamOwned};
use std::cell::Cell;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Upper bound of one batched write of queued stream chunks.
const STREAM_BATCH_BYTES: usize = 64 * 1024;
use std::time::Duration;

/// How often an idle streaming response checks whether it must end.
const STREAM_TICK: Duration = Duration::from_millis(100);

/// Serve one accepted connection until it closes.
pub(super) fn run_conn(shared: &Shared, tcp: TcpStream, peer: SocketAddr, closed: &AtomicBool) {
    let probe = match tcp.try_clone() {
        Ok(p) => p,
        Err(e) => {
            log::debug!("httpd: {peer}: {e}");
            return;
        }
    };
    let result = match &shared.tls {
        None => {
            let mut s = tcp;
            serve(shared, &mut s, &probe, peer, closed, |_: &TcpStream| None)
        }
        Some(cfg) => match ServerConnection::new(Arc::clone(cfg)) {
            Ok(conn) => {
                let mut s = StreamOwned::new(conn, tcp);
                serve(shared, &mut s, &probe, peer, closed, |s| {
                    let cert = s.conn.peer_certificates()?.first()?;
                    super::tls::common_name(cert)
                })
            }
            Err(e) => Err(io::Error::other(e)),
        },
    };
    if let Err(e) = result {
        log::debug!("httpd: connection from {peer} ended: {e}");
    }
    let _ = probe.shutdown(Shutdown::Both);
}

/// The keep-alive loop of one connection.
fn serve<S: Read + Write>(
    shared: &Shared,
    s: &mut S,
    probe: &TcpStream,
    peer: SocketAddr,
    closed: &AtomicBool,
    client_cn: impl Fn(&S) -> Option<String>,
) -> io::Result<()> {
    let mut reader = RequestReader::new(shared.opts.max_body);
    let mut cn: Option<Option<String>> = None;
    loop {
        let incoming = match reader.next(s, peer) {
            Ok(i) => i,
            Err(ReadError::Closed) => return Ok(()),
            Err(ReadError::Io(e)) => return Err(e),
            Err(ReadError::Bad(m)) => return reject(s, 400, &m),
            Err(ReadError::HeadTooLarge) => return reject(s, 431, "request head too large"),
            Err(ReadError::BodyTooLarge) => return reject(s, 413, "request body too large"),
        };
        let mut req = incoming.request;
        req.client_cn = cn.get_or_insert_with(|| client_cn(s)).clone();
        let head_only = req.method == "HEAD";
        CLOSE_AFTER.with(|c| c.set(false));
        let resp = shared.handler.handle(req);
        let close = !incoming.keep_alive
            || CLOSE_AFTER.with(Cell::get)
            || shared.stopping.load(Ordering::SeqCst)
            || closed.load(Ordering::SeqCst);
        let conn = ConnIo {
            shared,
            probe,
            closed,
        };
        conn.write_response(s, &mut reader, resp, head_only, close)?;
        if close {
            return Ok(());
        }
    }
}

fn reject<S: Write>(s: &mut S, status: u16, msg: &str) -> io::Result<()> {
    let resp = Response::text(status, format!("{msg}\n"));
    let Body::Full(body) = &resp.body else {
        return Ok(());
    };
    let mut out = Vec::new();
    let framing = format!("Content-Length: {}\r\n", body.len());
    wire::write_head(&mut out, status, &resp.headers, &framing, true)?;
    out.extend_from_slice(body);
    s.write_all(&out)?;
    s.flush()
}

/// What a response writer needs besides the stream.
struct ConnIo<'a> {
    shared: &'a Shared,
    probe: &'a TcpStream,
    closed: &'a AtomicBool,
}

/// Bodies above this are written straight from the response, not copied.
const COPY_LIMIT: usize = 64 * 1024;

impl ConnIo<'_> {
    fn write_response<S: Read + Write>(
        &self,
        s: &mut S,
        reader: &mut RequestReader,
        resp: Response,
        head_only: bool,
        close: bool,
    ) -> io::Result<()> {
        let mut out = Vec::new();
        let body = match resp.body {
            Body::Full(body) => body,
            Body::Stream(rx) => {
                let framing = "Transfer-Encoding: chunked\r\n";
                wire::write_head(&mut out, resp.status, &resp.headers, framing, close)?;
                s.write_all(&out)?;
                s.flush()?;
                // Streams keep TCP_NODELAY, as Go's net/http (the real API
                // server) does. Re-enabling Nagle here once raised the sim
                // bench's fan-out throughput (~1,800 → ~2,250 writes/s with
                // 100 watches), but on a busy watch it holds an event back
                // until the previous segment is acknowledged, and with the
                // reader's delayed ACK that is up to ~40 ms: it put a 40-60 ms
                // tail on endpointd's change → write latency in the e2e bench
                // that a real API server would not cause.
                return self.stream(s, reader, &rx);
            }
        };
        let framing = format!("Content-Length: {}\r\n", body.len());
        wire::write_head(&mut out, resp.status, &resp.headers, &framing, close)?;
        let small = body.len() <= COPY_LIMIT;
        if !head_only && small {
            out.extend_from_slice(&body);
        }
        s.write_all(&out)?;
        if !head_only && !small {
            s.write_all(&body)?;
        }
        s.flush()
    }

    /// Err when the stream must end: the connection is being closed or the
    /// peer has gone away.
    fn check_alive<S: Read>(&self, s: &mut S, reader: &mut RequestReader) -> io::Result<()> {
        if self.closed.load(Ordering::SeqCst)
            || self.shared.stopping.load(Ordering::SeqCst)
            || peer_gone(s, self.probe, reader)
        {
            return Err(io::Error::other("stream ended: connection closing"));
        }
        Ok(())
    }

    /// Copy a streaming body chunk by chunk, flushing each; end it when the
    /// producer is done, the connection is being closed or the peer left.
    fn stream<S: Read + Write>(
        &self,
        s: &mut S,
        reader: &mut RequestReader,
        rx: &crossbeam_channel::Receiver<Vec<u8>>,
    ) -> io::Result<()> {
        let mut out = Vec::new();
        loop {
            match rx.recv_timeout(STREAM_TICK) {
                Ok(data) if data.is_empty() => self.check_alive(s, reader)?,
                Ok(data) => {
                    // Write this chunk and every one already queued behind it
                    // in one write (each still framed as its own chunk), so a
                    // busy stream costs one syscall per batch, not per event.
                    out.clear();
                    wire::write_chunk(&mut out, &data)?;
                    let mut ended = false;
                    while out.len() < STREAM_BATCH_BYTES {
                        match rx.try_recv() {
                            Ok(more) if more.is_empty() => {}
                            Ok(more) => wire::write_chunk(&mut out, &more)?,
                            Err(crossbeam_channel::TryRecvError::Empty) => break,
                            Err(crossbeam_channel::TryRecvError::Disconnected) => {
                                ended = true;
                                break;
                            }
                        }
                    }
                    s.write_all(&out)?;
                    if ended {
                        wire::write_last_chunk(s)?;
                        return s.flush();
                    }
                    s.flush()?;
                }
                Err(RecvTimeoutError::Timeout) => self.check_alive(s, reader)?,
                Err(RecvTimeoutError::Disconnected) => {
                    wire::write_last_chunk(s)?;
                    return s.flush();
                }
            }
        }
    }
}

/// Whether the peer has closed its side: a non-blocking read through the
/// (TLS) stream sees EOF or an error. Bytes that do arrive (a pipelined
/// request) are kept in `reader` for later.
fn peer_gone<S: Read>(s: &mut S, tcp: &TcpStream, reader: &mut RequestReader) -> bool {
    if tcp.set_nonblocking(true).is_err() {
        return true;
    }
    let gone = match reader.fill_raw(s) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != io::ErrorKind::WouldBlock,
    };
    tcp.set_nonblocking(false).is_err() || gone
}
