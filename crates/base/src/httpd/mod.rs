//! A small synchronous HTTP/1.1 server: one thread per connection,
//! keep-alive, `httparse` for request heads, optional TLS (rustls) with
//! optional client-certificate verification, and chunked streaming
//! responses flushed after every chunk (watch streams).
//!
//! Shared by kube-sim and endpointd's metrics/health endpoint. It owns
//! sockets and framing only: it never interprets paths (that is the
//! [`Handler`]'s job) and never buffers a streaming body.

mod conn;
pub mod server;
pub mod tls;
pub mod wire;

pub use server::{close_after_response, Server, ServerControl, ServerOptions};

use std::net::SocketAddr;

/// One parsed HTTP request with its whole body read.
#[derive(Debug, Clone)]
pub struct Request {
    /// Method, upper case as sent ("GET", "POST", …).
    pub method: String,
    /// Path without the query string, percent-decoded.
    pub path: String,
    /// Query parameters in order, percent-decoded (`+` is a space).
    pub query: Vec<(String, String)>,
    /// Headers in order; names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The request body (empty when none).
    pub body: Vec<u8>,
    /// The peer's address.
    pub peer: SocketAddr,
    /// Common name of a verified TLS client certificate, if one was presented.
    pub client_cn: Option<String>,
}

impl Request {
    /// First header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// First query parameter with this name.
    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A response body: complete, or streamed chunk by chunk.
#[derive(Debug)]
pub enum Body {
    /// Sent with `Content-Length`.
    Full(Vec<u8>),
    /// Sent with `Transfer-Encoding: chunked`; every received `Vec<u8>` is
    /// written as one chunk and flushed at once. The stream ends (terminal
    /// chunk) when every sender is dropped. If the client goes away the
    /// receiver is dropped, so senders see a send error and can clean up
    /// (the server checks for that at least every 100 ms; an empty `Vec`
    /// writes nothing and only triggers that check).
    Stream(crossbeam_channel::Receiver<Vec<u8>>),
}

/// An HTTP response.
#[derive(Debug)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers (Content-Length / Transfer-Encoding are added by the server).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Body,
}

impl Response {
    /// A complete JSON response.
    pub fn json(status: u16, body: Vec<u8>) -> Response {
        Response {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: Body::Full(body),
        }
    }

    /// A complete plain-text response.
    pub fn text(status: u16, body: impl Into<String>) -> Response {
        Response {
            status,
            headers: vec![("Content-Type".into(), "text/plain; charset=utf-8".into())],
            body: Body::Full(body.into().into_bytes()),
        }
    }
}

/// Something that answers requests. Called on the connection's thread; may
/// block (a streaming response's producer runs elsewhere and feeds the channel).
pub trait Handler: Send + Sync + 'static {
    /// Answer one request.
    fn handle(&self, req: Request) -> Response;
}
