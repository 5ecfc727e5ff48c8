//! Shared helpers of the `kube_client*` tests: a tiny HTTP/1.1 server on
//! loopback that records requests and answers from a closure (full bodies
//! or chunked streams that may hang), and small JSON builders.
#![allow(dead_code)]

use endpointd_base::clock::SharedClock;
use endpointd_kube::kube::{Client, ClientConfig};
use endpointd_kube::metrics::Registry;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub enum Reply {
    Full(u16, Vec<(&'static str, String)>, String),
    /// Chunked body: each chunk after its delay; then end, or hang for `hang`.
    Stream(Vec<(Duration, String)>, Option<Duration>),
}

pub fn json(code: u16, body: &str) -> Reply {
    Reply::Full(code, vec![], body.to_string())
}

pub type Handler = dyn Fn(&Recorded, usize) -> Reply + Send + Sync;

pub struct Server {
    pub url: String,
    log: Arc<Mutex<Vec<Recorded>>>,
    pub conns: Arc<AtomicUsize>,
}

impl Server {
    pub fn start(h: impl Fn(&Recorded, usize) -> Reply + Send + Sync + 'static) -> Server {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", l.local_addr().expect("addr"));
        let log = Arc::new(Mutex::new(Vec::new()));
        let conns = Arc::new(AtomicUsize::new(0));
        let (log2, h): (_, Arc<Handler>) = (Arc::clone(&log), Arc::new(h));
        let conns2 = Arc::clone(&conns);
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                conns2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let (log, h) = (Arc::clone(&log2), Arc::clone(&h));
                std::thread::spawn(move || serve_conn(s, &log, &*h));
            }
        });
        Server { url, log, conns }
    }
    pub fn requests(&self) -> Vec<Recorded> {
        self.log.lock().expect("log").clone()
    }
}

fn read_request(r: &mut BufReader<TcpStream>) -> Option<Recorded> {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let n = r.read_until(b'\n', &mut head).ok()?;
        if n == 0 {
            return None;
        }
    }
    let mut hs = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut hs);
    req.parse(&head).ok()?;
    let headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_string(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    let mut rec = Recorded {
        method: req.method?.to_string(),
        target: req.path?.to_string(),
        headers,
        body: Vec::new(),
    };
    let len: usize = rec
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    rec.body.resize(len, 0);
    r.read_exact(&mut rec.body).ok()?;
    Some(rec)
}

fn serve_conn(s: TcpStream, log: &Mutex<Vec<Recorded>>, h: &Handler) {
    let mut w = s.try_clone().expect("clone");
    let mut r = BufReader::new(s);
    while let Some(rec) = read_request(&mut r) {
        let n = {
            let mut l = log.lock().expect("log");
            l.push(rec.clone());
            l.len() - 1
        };
        match h(&rec, n) {
            Reply::Full(code, hdrs, body) => {
                let mut out = format!(
                    "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
                    body.len()
                );
                for (k, v) in hdrs {
                    out.push_str(&format!("{k}: {v}\r\n"));
                }
                out.push_str("\r\n");
                out.push_str(&body);
                if w.write_all(out.as_bytes()).is_err() {
                    return;
                }
            }
            Reply::Stream(chunks, hang) => {
                let _ = w.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
                for (delay, c) in chunks {
                    std::thread::sleep(delay);
                    if w.write_all(format!("{:x}\r\n{c}\r\n", c.len()).as_bytes())
                        .is_err()
                    {
                        return;
                    }
                }
                match hang {
                    Some(d) => std::thread::sleep(d),
                    None => {
                        let _ = w.write_all(b"0\r\n\r\n");
                    }
                }
                return;
            }
        }
    }
}

pub fn client(url: &str, clock: SharedClock, reg: Option<&Registry>) -> Client {
    let mut cfg = ClientConfig::new(url);
    cfg.qps = 0.0;
    Client::new(cfg, clock, reg).expect("client")
}

pub fn pod_json(name: &str, rv: &str) -> String {
    format!(
        r#"{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}","managedFields":[{{"manager":"x"}}]}},"spec":{{"nodeName":"n1"}},"status":{{"podIPs":[{{"ip":"10.0.0.1"}}]}}}}"#
    )
}

pub fn ev(t: &str, name: &str, rv: &str) -> String {
    format!(r#"{{"type":"{t}","object":{}}}"#, pod_json(name, rv)) + "\n"
}
