//! Unit tests of the HTTP/1.1 framing in `wire`: request heads and bodies
//! fed through a scripted pipe in small pieces (partial reads, pipelining,
//! malformed and oversized input) and the bytes of written responses.

use super::*;
use std::io::Cursor;

/// Reads from a script in small pieces (to exercise partial reads), records writes.
struct Pipe {
    input: Cursor<Vec<u8>>,
    step: usize,
    out: Vec<u8>,
}

impl Pipe {
    fn new(input: &[u8], step: usize) -> Pipe {
        Pipe {
            input: Cursor::new(input.to_vec()),
            step,
            out: Vec::new(),
        }
    }
}

impl Read for Pipe {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.step);
        self.input.read(&mut buf[..n])
    }
}

impl Write for Pipe {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn peer() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 1))
}

#[test]
fn pipelined_requests_with_both_body_framings() {
    let raw = b"POST /a?x=1&y=a%20b+c HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello\
GET /b%2Fc HTTP/1.1\r\nHost: h\r\n\r\n\
PUT /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n\
GET /d HTTP/1.1\r\nConnection: close\r\n\r\n";
    for step in [1, 7, 4096] {
        let mut p = Pipe::new(raw, step);
        let mut r = RequestReader::new(1024);
        let a = r.next(&mut p, peer()).expect("first");
        assert_eq!(a.request.method, "POST");
        assert_eq!(a.request.path, "/a");
        assert_eq!(
            a.request.query,
            vec![("x".into(), "1".into()), ("y".into(), "a b c".into())]
        );
        assert_eq!(a.request.body, b"hello");
        assert_eq!(a.request.header("HOST"), Some("h"));
        assert!(a.keep_alive);
        let b = r.next(&mut p, peer()).expect("second");
        assert_eq!(b.request.path, "/b/c");
        assert!(b.request.body.is_empty());
        let c = r.next(&mut p, peer()).expect("third");
        assert_eq!(c.request.body, b"abcde");
        let d = r.next(&mut p, peer()).expect("fourth");
        assert!(!d.keep_alive);
        assert!(matches!(r.next(&mut p, peer()), Err(ReadError::Closed)));
    }
}

#[test]
fn malformed_and_oversized_requests_are_rejected() {
    let cases: &[(&[u8], &str)] = &[
        (
            b"GET / HTTP/1.1\r\nContent-Length: 2000\r\n\r\n",
            "too large",
        ),
        (
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n",
            "too large",
        ),
        (b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n", "bad"),
        (b"G\x01T / HTTP/1.1\r\n\r\n", "bad"),
        (b"GET / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc", "bad"),
        (
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "bad",
        ),
        (b"GET /%zz HTTP/1.1\r\n\r\n", "bad"),
        (b"GET / HTTP/1.1\r\nHost", "bad"),
    ];
    for (raw, want) in cases {
        let mut r = RequestReader::new(1024);
        let got = r.next(&mut Pipe::new(raw, 64), peer());
        let kind = match got {
            Err(ReadError::BodyTooLarge) => "too large",
            Err(ReadError::Bad(_)) => "bad",
            other => panic!("{:?}: unexpected {other:?}", String::from_utf8_lossy(raw)),
        };
        assert_eq!(kind, *want, "{:?}", String::from_utf8_lossy(raw));
    }
}

#[test]
fn huge_head_is_refused() {
    let mut raw = b"GET / HTTP/1.1\r\nX: ".to_vec();
    raw.extend(std::iter::repeat_n(b'a', MAX_HEAD + 10));
    let mut r = RequestReader::new(1024);
    assert!(matches!(
        r.next(&mut Pipe::new(&raw, 8192), peer()),
        Err(ReadError::HeadTooLarge)
    ));
}

#[test]
fn expect_continue_gets_interim_response() {
    let raw = b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok";
    let mut p = Pipe::new(raw, 4096);
    let got = RequestReader::new(10)
        .next(&mut p, peer())
        .expect("request");
    assert_eq!(got.request.body, b"ok");
    assert_eq!(p.out, b"HTTP/1.1 100 Continue\r\n\r\n");
}

#[test]
fn http10_defaults_to_close() {
    let mut p = Pipe::new(b"GET / HTTP/1.0\r\n\r\n", 4096);
    assert!(
        !RequestReader::new(10)
            .next(&mut p, peer())
            .expect("req")
            .keep_alive
    );
    let mut p = Pipe::new(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 4096);
    assert!(
        RequestReader::new(10)
            .next(&mut p, peer())
            .expect("req")
            .keep_alive
    );
}

#[test]
fn percent_decoding_table() {
    let cases = [
        ("a%2Fb", false, Some("a/b")),
        ("a+b", false, Some("a+b")),
        ("a+b", true, Some("a b")),
        ("%41%42", true, Some("AB")),
        ("%4", true, None),
        ("%zz", true, None),
        ("%ff", true, None),
        ("", true, Some("")),
    ];
    for (input, plus, want) in cases {
        assert_eq!(
            percent_decode(input, plus).as_deref(),
            want,
            "{input} {plus}"
        );
    }
}

#[test]
fn response_framing() {
    let mut out = Vec::new();
    let headers = vec![
        ("Content-Type".to_string(), "text/plain".to_string()),
        ("Content-Length".to_string(), "999".to_string()),
    ];
    write_head(&mut out, 429, &headers, "Content-Length: 2\r\n", true).expect("head");
    assert_eq!(
        String::from_utf8_lossy(&out),
        "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"
    );
    let mut out = Vec::new();
    write_chunk(&mut out, b"hello world, 17 b").expect("chunk");
    write_chunk(&mut out, b"").expect("empty chunk");
    write_last_chunk(&mut out).expect("last");
    assert_eq!(out, b"11\r\nhello world, 17 b\r\n0\r\n\r\n");
}

#[test]
fn chunk_size_overflow_is_rejected_without_panic() {
    // A 1-byte chunk, then a chunk size of usize::MAX: `body.len() + size`
    // used to overflow (debug panic; release wrap then a slice panic).
    let raw =
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\nffffffffffffffff\r\n";
    for max_body in [1024, usize::MAX] {
        let mut r = RequestReader::new(max_body);
        let got = r.next(&mut Pipe::new(raw, 64), peer());
        assert!(
            matches!(got, Err(ReadError::BodyTooLarge)),
            "max_body {max_body}: {got:?}"
        );
    }
}

/// Endless bytes, as from a peer that keeps sending during a watch.
struct Flood;

impl Read for Flood {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        buf.fill(b'x');
        Ok(buf.len())
    }
}

#[test]
fn fill_raw_refuses_unbounded_growth_while_streaming() {
    let mut r = RequestReader::new(1024);
    let mut failed = None;
    for i in 0..10_000 {
        if let Err(e) = r.fill_raw(&mut Flood) {
            failed = Some((i, e));
            break;
        }
    }
    let (_, e) = failed.expect("fill_raw kept buffering an endless peer");
    assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    assert!(r.buf.len() <= MAX_HEAD + 4096, "buffered {}", r.buf.len());
}
