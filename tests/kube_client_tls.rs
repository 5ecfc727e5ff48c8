//! TLS behaviour of the client against an in-test rustls server with
//! rcgen-made certificates: client-certificate auth from kubeconfig data
//! fields, a server certificate from the wrong CA (error names the server
//! and the verification failure), `tls-server-name`, `insecure-skip-tls-
//! verify`, and a mismatched client cert/key rejected at construction.

use base64::Engine as _;
use endpointd::clock::RealClock;
use endpointd::kube::{Client, ClientConfig, Error, PODS};
use endpointd::model::{Object, Pod};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair, SanType};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

struct Pki {
    ca_pem: String,
    issuer: CertifiedIssuer<'static, KeyPair>,
}

fn ca() -> Pki {
    static N: AtomicUsize = AtomicUsize::new(0);
    let mut p = CertificateParams::new(Vec::<String>::new()).expect("params");
    let cn = format!("test-ca-{}", N.fetch_add(1, Ordering::SeqCst));
    p.distinguished_name.push(rcgen::DnType::CommonName, cn);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let issuer = CertifiedIssuer::self_signed(p, KeyPair::generate().expect("key")).expect("ca");
    Pki {
        ca_pem: issuer.pem(),
        issuer,
    }
}

/// (cert PEM, key PEM) signed by `ca` for `names` (IP literals become IP SANs).
fn leaf(ca: &Pki, names: &[&str]) -> (String, String) {
    let key = KeyPair::generate().expect("key");
    let mut p = CertificateParams::new(Vec::<String>::new()).expect("params");
    for n in names {
        p.subject_alt_names.push(match n.parse() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => SanType::DnsName((*n).try_into().expect("dns name")),
        });
    }
    let cert = p.signed_by(&key, &ca.issuer).expect("sign");
    (cert.pem(), key.serialize_pem())
}

struct TlsServer {
    port: u16,
    with_client_cert: Arc<AtomicUsize>,
}

/// Serve `pod_json` over TLS; client certificates signed by `client_ca`
/// are accepted (and counted) but not required.
fn serve(server_pair: &(String, String), client_ca: &Pki) -> TlsServer {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from(
            client_ca.issuer.as_ref().der().to_vec(),
        ))
        .expect("root");
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .allow_unauthenticated()
    .build()
    .expect("verifier");
    let chain: Vec<CertificateDer<'static>> =
        rustls::pki_types::pem::PemObject::pem_slice_iter(server_pair.0.as_bytes())
            .collect::<Result<_, _>>()
            .expect("chain");
    let key: PrivateKeyDer<'static> =
        rustls::pki_types::pem::PemObject::from_pem_slice(server_pair.1.as_bytes()).expect("key");
    let cfg = Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain, key)
            .expect("server config"),
    );
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    let counter = Arc::new(AtomicUsize::new(0));
    let c2 = Arc::clone(&counter);
    std::thread::spawn(move || {
        for tcp in l.incoming().flatten() {
            let (cfg, counter) = (Arc::clone(&cfg), Arc::clone(&c2));
            std::thread::spawn(move || {
                let Ok(conn) = rustls::ServerConnection::new(cfg) else {
                    return;
                };
                let mut s = rustls::StreamOwned::new(conn, tcp);
                let mut buf = [0u8; 4096];
                let mut head = Vec::new();
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                if s.conn.peer_certificates().is_some() {
                    counter.fetch_add(1, Ordering::SeqCst);
                }
                let body = r#"{"metadata":{"name":"p","namespace":"ns","resourceVersion":"1"}}"#;
                let resp = format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
                let _ = s.write_all(resp.as_bytes());
                let _ = s.flush();
                s.conn.send_close_notify();
                let _ = s.flush();
            });
        }
    });
    TlsServer {
        port,
        with_client_cert: counter,
    }
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn kubeconfig(server: &str, ca_pem: &str, extra_cluster: &str, user: &str) -> String {
    format!(
        "current-context: t\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    certificate-authority-data: {}\n{extra_cluster}users:\n- name: u\n  user:\n{user}contexts:\n- name: t\n  context: {{cluster: c, user: u}}\n",
        b64(ca_pem)
    )
}

fn connect(yaml: &str) -> Result<Pod, Error> {
    let cfg = ClientConfig::from_kubeconfig_str(yaml, Path::new("/nonexistent"), None)?;
    let mut cfg = cfg;
    cfg.max_retries = 0;
    let c = Client::new(cfg, RealClock::shared(), None)?;
    c.get(&PODS, Some("ns"), "p")
}

#[test]
fn client_certificate_from_kubeconfig_data() {
    let pki = ca();
    let srv = serve(&leaf(&pki, &["127.0.0.1"]), &pki);
    let (cert, key) = leaf(&pki, &["client"]);
    let user = format!(
        "    client-certificate-data: {}\n    client-key-data: {}\n",
        b64(&cert),
        b64(&key)
    );
    let url = format!("https://127.0.0.1:{}", srv.port);
    let pod = connect(&kubeconfig(&url, &pki.ca_pem, "", &user)).expect("mTLS get");
    assert_eq!(pod.name(), "p");
    assert_eq!(
        srv.with_client_cert.load(Ordering::SeqCst),
        1,
        "client presented its certificate"
    );
}

#[test]
fn wrong_ca_names_the_server_and_the_verification_failure() {
    let (pki, other) = (ca(), ca());
    let srv = serve(&leaf(&pki, &["127.0.0.1"]), &pki);
    let url = format!("https://127.0.0.1:{}", srv.port);
    let e = connect(&kubeconfig(&url, &other.ca_pem, "", "    token: t\n")).expect_err("wrong CA");
    match &e {
        Error::Transport { server, cause, .. } => {
            assert_eq!(server, &url);
            assert!(
                cause.contains("invalid peer certificate") && cause.contains("UnknownIssuer"),
                "{cause}"
            );
        }
        other => panic!("expected a transport error, got {other:?}"),
    }
    let msg = e.to_string();
    assert!(msg.contains(&url) && msg.contains("UnknownIssuer"), "{msg}");
    // insecure-skip-tls-verify gets through (and is logged as a warning).
    let insecure = kubeconfig(
        &url,
        &other.ca_pem,
        "    insecure-skip-tls-verify: true\n",
        "    token: t\n",
    );
    connect(&insecure).expect("insecure connect");
}

#[test]
fn tls_server_name_is_used_for_verification() {
    let pki = ca();
    let srv = serve(&leaf(&pki, &["kubernetes.default"]), &pki);
    let url = format!("https://127.0.0.1:{}", srv.port);
    let plain =
        connect(&kubeconfig(&url, &pki.ca_pem, "", "    token: t\n")).expect_err("IP not in SANs");
    assert!(plain.to_string().contains("not valid for name"), "{plain}");
    let named = kubeconfig(
        &url,
        &pki.ca_pem,
        "    tls-server-name: kubernetes.default\n",
        "    token: t\n",
    );
    connect(&named).expect("verified against tls-server-name");
}

#[test]
fn mismatched_client_key_is_a_config_error_not_a_panic() {
    let pki = ca();
    let (cert, _) = leaf(&pki, &["client"]);
    let (_, other_key) = leaf(&pki, &["other"]);
    let user = format!(
        "    client-certificate-data: {}\n    client-key-data: {}\n",
        b64(&cert),
        b64(&other_key)
    );
    let e =
        connect(&kubeconfig("https://127.0.0.1:1", &pki.ca_pem, "", &user)).expect_err("mismatch");
    assert!(
        matches!(&e, Error::Config { field, .. } if field == "client-certificate"),
        "{e}"
    );
    let garbage = kubeconfig("https://127.0.0.1:1", "not a pem", "", "    token: t\n");
    let e = connect(&garbage).expect_err("bad CA");
    assert!(
        matches!(&e, Error::Config { field, .. } if field == "certificate-authority"),
        "{e}"
    );
}
