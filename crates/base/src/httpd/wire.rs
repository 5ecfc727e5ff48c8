//! HTTP/1.1 framing over any `Read`/`Write`: reading request heads and
//! bodies (Content-Length or chunked) into [`Request`]s, and writing
//! responses (Content-Length or chunked). Sockets, threads and TLS live in
//! `server`; this module only turns bytes into requests and back.
//!
//! Invariant: bytes read past the end of one request stay in the
//! [`RequestReader`]'s buffer for the next one (pipelining-safe). It never
//! reads more than the head limit plus the body limit for one request.

use super::Request;
use std::io::{self, Read, Write};
use std::net::SocketAddr;

/// Largest request head (request line + headers) accepted.
pub const MAX_HEAD: usize = 64 * 1024;
/// Most headers accepted in one request.
const MAX_HEADERS: usize = 100;

/// Why a request could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The peer closed the connection cleanly between requests.
    Closed,
    /// Socket error (includes timeouts).
    Io(io::Error),
    /// The request is malformed; answer 400 and close.
    Bad(String),
    /// The head is larger than [`MAX_HEAD`]; answer 431 and close.
    HeadTooLarge,
    /// The body is larger than the limit; answer 413 and close.
    BodyTooLarge,
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        ReadError::Io(e)
    }
}

/// A parsed request plus framing facts the connection loop needs.
#[derive(Debug)]
pub struct Incoming {
    /// The request.
    pub request: Request,
    /// Whether the client asked to keep the connection open.
    pub keep_alive: bool,
}

/// Reads consecutive requests from one connection.
#[derive(Debug)]
pub struct RequestReader {
    buf: Vec<u8>,
    max_body: usize,
}

impl RequestReader {
    /// A reader accepting bodies up to `max_body` bytes.
    pub fn new(max_body: usize) -> Self {
        RequestReader {
            buf: Vec::with_capacity(8192),
            max_body,
        }
    }

    /// Whether bytes of a further (pipelined) request are already buffered.
    pub fn has_buffered(&self) -> bool {
        !self.buf.is_empty()
    }

    /// Read the next request. `w` receives `100 Continue` when asked for.
    pub fn next<S: Read + Write>(
        &mut self,
        s: &mut S,
        peer: SocketAddr,
    ) -> Result<Incoming, ReadError> {
        let (head_len, head) = self.read_head(s)?;
        self.buf.drain(..head_len);
        if head
            .header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
        {
            s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
            s.flush()?;
        }
        let body = self.read_body(s, &head)?;
        let keep_alive = keep_alive(&head);
        let (path, query) = split_target(&head.target)?;
        Ok(Incoming {
            request: Request {
                method: head.method,
                path,
                query,
                headers: head.headers,
                body,
                peer,
                client_cn: None,
            },
            keep_alive,
        })
    }

    /// Read whatever the peer sent into the buffer (kept for the next
    /// request). `Ok(0)` means the peer closed its side. Once more than
    /// [`MAX_HEAD`] bytes are buffered (a peer that keeps sending during a
    /// stream, which no well-behaved client does) it fails with
    /// `InvalidData` instead of growing the buffer without bound.
    pub fn fill_raw<S: Read>(&mut self, s: &mut S) -> io::Result<usize> {
        if self.buf.len() > MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "peer sent more than the request head limit while streaming",
            ));
        }
        let mut chunk = [0u8; 4096];
        let n = s.read(&mut chunk)?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    fn fill<S: Read>(&mut self, s: &mut S) -> Result<usize, ReadError> {
        let mut chunk = [0u8; 16 * 1024];
        let n = s.read(&mut chunk)?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    fn read_head<S: Read>(&mut self, s: &mut S) -> Result<(usize, Head), ReadError> {
        loop {
            if !self.buf.is_empty() {
                if let Some(done) = parse_head(&self.buf)? {
                    return Ok(done);
                }
                if self.buf.len() > MAX_HEAD {
                    return Err(ReadError::HeadTooLarge);
                }
            }
            if self.fill(s)? == 0 {
                return if self.buf.is_empty() {
                    Err(ReadError::Closed)
                } else {
                    Err(ReadError::Bad(
                        "connection closed inside request head".into(),
                    ))
                };
            }
        }
    }

    fn read_body<S: Read>(&mut self, s: &mut S, head: &Head) -> Result<Vec<u8>, ReadError> {
        let chunked = head
            .header("transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
        if chunked {
            return self.read_chunked(s);
        }
        let len = match head.header("content-length") {
            None => 0,
            Some(v) => v
                .trim()
                .parse::<usize>()
                .map_err(|_| ReadError::Bad(format!("bad Content-Length {v:?}")))?,
        };
        if len > self.max_body {
            return Err(ReadError::BodyTooLarge);
        }
        self.take_exact(s, len)
    }

    fn take_exact<S: Read>(&mut self, s: &mut S, len: usize) -> Result<Vec<u8>, ReadError> {
        while self.buf.len() < len {
            if self.fill(s)? == 0 {
                return Err(ReadError::Bad("connection closed inside body".into()));
            }
        }
        Ok(self.buf.drain(..len).collect())
    }

    fn take_line<S: Read>(&mut self, s: &mut S) -> Result<String, ReadError> {
        loop {
            if let Some(pos) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line: Vec<u8> = self.buf.drain(..pos + 2).take(pos).collect();
                return String::from_utf8(line)
                    .map_err(|_| ReadError::Bad("chunk line is not UTF-8".into()));
            }
            if self.buf.len() > MAX_HEAD {
                return Err(ReadError::Bad("chunk line too long".into()));
            }
            if self.fill(s)? == 0 {
                return Err(ReadError::Bad(
                    "connection closed inside chunked body".into(),
                ));
            }
        }
    }

    fn read_chunked<S: Read>(&mut self, s: &mut S) -> Result<Vec<u8>, ReadError> {
        let mut body = Vec::new();
        loop {
            let line = self.take_line(s)?;
            let size_text = line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|_| ReadError::Bad(format!("bad chunk size {size_text:?}")))?;
            if size == 0 {
                // Trailers, up to the empty line.
                while !self.take_line(s)?.is_empty() {}
                return Ok(body);
            }
            // The size is client-controlled: compare without adding so a
            // huge value cannot overflow.
            if size > self.max_body.saturating_sub(body.len()) {
                return Err(ReadError::BodyTooLarge);
            }
            let framed = size.checked_add(2).ok_or(ReadError::BodyTooLarge)?;
            let data = self.take_exact(s, framed)?;
            if &data[size..] != b"\r\n" {
                return Err(ReadError::Bad("chunk not followed by CRLF".into()));
            }
            body.extend_from_slice(&data[..size]);
        }
    }
}

/// A parsed request head.
#[derive(Debug)]
struct Head {
    method: String,
    target: String,
    minor_version: u8,
    headers: Vec<(String, String)>,
}

impl Head {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn parse_head(buf: &[u8]) -> Result<Option<(usize, Head)>, ReadError> {
    let mut hs = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut hs);
    let n = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(ReadError::Bad(format!("bad request head: {e}"))),
    };
    let headers = req
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_ascii_lowercase(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    Ok(Some((
        n,
        Head {
            method: req.method.unwrap_or("GET").to_string(),
            target: req.path.unwrap_or("/").to_string(),
            minor_version: req.version.unwrap_or(1),
            headers,
        },
    )))
}

fn keep_alive(head: &Head) -> bool {
    let conn = head.header("connection").map(|v| v.to_ascii_lowercase());
    match conn.as_deref() {
        Some(v) if v.contains("close") => false,
        Some(v) if v.contains("keep-alive") => true,
        _ => head.minor_version >= 1,
    }
}

/// Split a request target into a decoded path and decoded query pairs.
pub fn split_target(target: &str) -> Result<(String, Vec<(String, String)>), ReadError> {
    let (raw_path, raw_query) = match target.split_once('?') {
        Some((p, q)) => (p, q),
        None => (target, ""),
    };
    let path = percent_decode(raw_path, false)
        .ok_or_else(|| ReadError::Bad(format!("bad percent-encoding in path {raw_path:?}")))?;
    let mut query = Vec::new();
    for pair in raw_query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let bad = || ReadError::Bad(format!("bad percent-encoding in query {pair:?}"));
        query.push((
            percent_decode(k, true).ok_or_else(bad)?,
            percent_decode(v, true).ok_or_else(bad)?,
        ));
    }
    Ok((path, query))
}

/// Decode `%XX` escapes (and `+` as space when `plus` is set). `None` when an
/// escape is malformed or the result is not UTF-8.
pub fn percent_decode(s: &str, plus: bool) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = b.get(i + 1..i + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' if plus => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The reason phrase for a status code.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        409 => "Conflict",
        410 => "Gone",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// Write a status line and headers; `framing` is the Content-Length or
/// Transfer-Encoding header line (with its CRLF) the body needs.
pub fn write_head<W: Write>(
    w: &mut W,
    status: u16,
    headers: &[(String, String)],
    framing: &str,
    close: bool,
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (k, v) in headers {
        if k.eq_ignore_ascii_case("content-length")
            || k.eq_ignore_ascii_case("transfer-encoding")
            || k.eq_ignore_ascii_case("connection")
        {
            continue;
        }
        head.push_str(k);
        head.push_str(": ");
        head.push_str(v);
        head.push_str("\r\n");
    }
    head.push_str(framing);
    if close {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    w.write_all(head.as_bytes())
}

/// Write one chunk of a chunked body (empty data is skipped: it would end
/// the stream).
pub fn write_chunk<W: Write>(w: &mut W, data: &[u8]) -> io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    write!(w, "{:x}\r\n", data.len())?;
    w.write_all(data)?;
    w.write_all(b"\r\n")
}

/// Write the terminal chunk.
pub fn write_last_chunk<W: Write>(w: &mut W) -> io::Result<()> {
    w.write_all(b"0\r\n\r\n")
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
