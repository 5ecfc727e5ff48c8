//! TLS behaviour of the client against an in-test rustls server with
//! rcgen-made certificates: client-certificate auth from kubeconfig data
//! fields, a server certificate from the wrong CA (error names the server
//! and the verification failure), `tls-server-name`, `insecure-skip-tls-
//! verify`, and a mismatched client cert/key rejected at construction.

use base64::Engine as _;
use endpointd_base::clock::RealClock;
use endpointd_kube::kube::{Client, ClientConfig, Error, PODS};
use endpointd_kube::model::{Object, Pod};
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
    // insecure-skip-tls-verify together with a CA is refused, like
    // client-go does (the CA would be silently ignored).
    let both = kubeconfig(
        &url,
        &other.ca_pem,
        "    insecure-skip-tls-verify: true\n",
        "    token: t\n",
    );
    match connect(&both) {
        Err(Error::Config { field, .. }) => assert_eq!(field, "insecure-skip-tls-verify"),
        other => panic!("insecure + CA: expected a config error, got {other:?}"),
    }
    // insecure-skip-tls-verify alone gets through (and is logged as a warning).
    let insecure = kubeconfig(&url, &other.ca_pem, "", "    token: t\n").replace(
        &format!("    certificate-authority-data: {}\n", b64(&other.ca_pem)),
        "    insecure-skip-tls-verify: true\n",
    );
    assert!(!insecure.contains("certificate-authority"), "{insecure}");
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
    // A key whose body was cut inside intact armour: the key's fault, not
    // a mismatch.
    let body: String = other_key
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<Vec<_>>()
        .concat();
    let cut = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        &body[..body.len() / 2 / 4 * 4]
    );
    let user = format!(
        "    client-certificate-data: {}\n    client-key-data: {}\n",
        b64(&cert),
        b64(&cut)
    );
    let e =
        connect(&kubeconfig("https://127.0.0.1:1", &pki.ca_pem, "", &user)).expect_err("a cut key");
    assert!(
        matches!(&e, Error::Config { field, .. } if field == "client-key"),
        "{e}"
    );
    assert!(!e.to_string().contains("does not match"), "{e}");
    let garbage = kubeconfig("https://127.0.0.1:1", "not a pem", "", "    token: t\n");
    let e = connect(&garbage).expect_err("bad CA");
    assert!(
        matches!(&e, Error::Config { field, .. } if field == "certificate-authority"),
        "{e}"
    );
}

/// A public key for rcgen to certify: the raw subjectPublicKey bits
/// (RSAPublicKey DER for RSA, the uncompressed point for EC), base64.
struct RawPublic(Vec<u8>, &'static rcgen::SignatureAlgorithm);

impl rcgen::PublicKeyData for RawPublic {
    fn der_bytes(&self) -> &[u8] {
        &self.0
    }
    fn algorithm(&self) -> &'static rcgen::SignatureAlgorithm {
        self.1
    }
}

// Test-only keys (generated once with `openssl genrsa -traditional` and
// `openssl ecparam -genkey -noout`), in the encodings kubeadm (PKCS#1 RSA)
// and k3s (SEC1 EC) write into kubeconfigs. They protect nothing.
const RSA_PKCS1_KEY: &str = "-----BEGIN RSA PRIVATE KEY-----\nMIIEogIBAAKCAQEAvFKWo0iZBXG520VMC51owxl8oqun5GYZplDRBoTBw1yZDz26\nnliEd3hBGR3HpDUXJuCIMF3XJPES7NnXzJNeb6o1So+OfefhOfZnwg/5Qa7U1K//\nnpHnLx50+T9kSncpP1lY2g6PQNs1xV6rnAdAq2EPfLofXO/ti9Ih/oPryqBYrI/N\n0Ia8TAdOdc8H4hhZruk006VVD1bH7daMSA3WqyLejaufEwUwGMxw/ySorHgm7yNI\nG76L8A9B2+uJ51m/ovvxfRgAASy9WEKchm9p6R0m7qTL1mBdeZ7iJhTgX4WiUwWn\niK0DB2RRSjAUOC9XtYvY+WIXJfT1PglV8Ufq+wIDAQABAoIBABLSVkffe5u1sBOg\nK2eFxfCp3XEMou0K30lmDl4Oaqcx3AJP8xTcV/DwzeDKvydEPxodmr7qwhPpHDEb\n3JuPpwKWCll3W5Bt2m7Gl7wniIvuA0t2g5+/iVGGQ76dfVKL8k1oip7QkbSzs/4T\n5ibj+qymOLwIhhXtzNoKmGctnCVWEVVZP5LWrqA5Ch+9J56CIhB8ecCFUXqI+k77\nH8aeXuNmpWuokFeDrWmTPogl1pH1tbrmLRIOeiiPJf5JSTzedQiIOQN2kQzpY6oS\n12e7mG2o+iZN7MZMxW4qeVYhuzd+LFfipGdrn8tsWRSWvPtb0JCZBI+fQfVEGn14\nA0SGpVECgYEA5qdyK1STxh+a+Ov0aJkC4i7hXLQotoGlljXij7e/DWhpwroOJFwd\nB9/6Kcg7/MZeX8gl/0VyLaN5tVM5eTiQHyTZLX+MJtgTu23mMeo9YaSKzkvgTMnl\nQxuUdfwfEV56zXAmJ0dBMHci1VlQjZwKGK7byoF5Y4HAP1K6W+68c4UCgYEA0QRP\ntE2V4nCZRGOodqa9HVko+mZX4WSO2HPQE/IrFSuuhh+ETywAbl4o9lWdSh5e4/jz\nv8yziqh1Znz/oFlwrPX/D4NO23Ki8422VHdW19U0oVwt0xIMbYBcNKQYTl62GpwX\nsUOv2/sbFYEZnxKd8MOOyjPo8+AAgQQlcM3c7H8CgYBzCWRps/8Xuz+hkp0NZfMI\nN/VyNPBxRev+JNXgc/Y3i7HjysOu4rof6Vdta05v3cfH4Z0B2fL+TCAxjVaG3O0U\ne15N0OVnojEFM+SxVHBUuKn6BeHSqodLlv/OcHZWRVbeC2ccA+/BaknXOnpwhjiK\n4vr/3t9Z/6aQboQ/wav/uQKBgFKX2osL8YNmLRpaKxKftrEnL0srL+TP4KZltT58\nfkvCVBeJ0rWaVJ1INfWJRTspnyOEl4Ud9YCAKswR7s1FKoIePui5YWrT9NI7GGZu\nNfHZvQ9aJn12b1TB2S2v/i7RvDHtpmsUrSRHKJ+pwR8bsy+VhxIdyxq7VFem9MiL\ngJYvAoGAbls9CSuGDXs+BayiM9pKiRQeDA0zEqJr3MKjI0JDFnMgUOpQyKTIzK0A\n3RV5MipvkA8+Ia+1r9+5iCI1W0UbUaw06HbAK1r49BYCTJW1G3ePN0lKVYkE8lj+\n/Ekl6RllOdEd2sdCI5yD9UmUPgrkLkeC12FNzhpZ3ElyTXYzTg8=\n-----END RSA PRIVATE KEY-----";
const RSA_PUB: &str = "MIIBCgKCAQEAvFKWo0iZBXG520VMC51owxl8oqun5GYZplDRBoTBw1yZDz26nliEd3hBGR3HpDUXJuCIMF3XJPES7NnXzJNeb6o1So+OfefhOfZnwg/5Qa7U1K//npHnLx50+T9kSncpP1lY2g6PQNs1xV6rnAdAq2EPfLofXO/ti9Ih/oPryqBYrI/N0Ia8TAdOdc8H4hhZruk006VVD1bH7daMSA3WqyLejaufEwUwGMxw/ySorHgm7yNIG76L8A9B2+uJ51m/ovvxfRgAASy9WEKchm9p6R0m7qTL1mBdeZ7iJhTgX4WiUwWniK0DB2RRSjAUOC9XtYvY+WIXJfT1PglV8Ufq+wIDAQAB";
const EC_SEC1_KEY: &str = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIPbbeR/8crO6kxfb5toLdptTVEuSA3f6WcFzBvBybEdGoAoGCCqGSM49\nAwEHoUQDQgAEwL/jDuIetmiqdbYnNg/OsApDEW3YmhGsnZ1pWR7sOKHtilkT1ay3\nPywzA8zsJpiXKRQHOqsilU6UJZJpQ29X6A==\n-----END EC PRIVATE KEY-----";
const EC_PUB: &str =
    "BMC/4w7iHrZoqnW2JzYPzrAKQxFt2JoRrJ2daVke7Dih7YpZE9Wstz8sMwPM7CaYlykUBzqrIpVOlCWSaUNvV+g=";

#[test]
fn rsa_pkcs1_and_ec_sec1_client_keys_authenticate() {
    let pki = ca();
    let srv = serve(&leaf(&pki, &["127.0.0.1"]), &pki);
    let url = format!("https://127.0.0.1:{}", srv.port);
    let keys = [
        (RSA_PKCS1_KEY, RSA_PUB, &rcgen::PKCS_RSA_SHA256),
        (EC_SEC1_KEY, EC_PUB, &rcgen::PKCS_ECDSA_P256_SHA256),
    ];
    for (i, (key, public, alg)) in keys.into_iter().enumerate() {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(public)
            .expect("b64");
        let spki = RawPublic(raw, alg);
        let mut p = CertificateParams::new(Vec::<String>::new()).expect("params");
        p.distinguished_name
            .push(rcgen::DnType::CommonName, "client");
        let cert = p.signed_by(&spki, &pki.issuer).expect("sign").pem();
        let user = format!(
            "    client-certificate-data: {}\n    client-key-data: {}\n",
            b64(&cert),
            b64(key)
        );
        let pod = connect(&kubeconfig(&url, &pki.ca_pem, "", &user))
            .unwrap_or_else(|e| panic!("key #{i}: {e}"));
        assert_eq!(pod.name(), "p");
        assert_eq!(
            srv.with_client_cert.load(Ordering::SeqCst),
            i + 1,
            "key #{i} presented"
        );
    }
}

#[test]
fn an_invalid_tls_server_name_is_refused_when_the_client_is_built() {
    use endpointd_base::clock::RealClock;
    use endpointd_kube::kube::{Client, ClientConfig};
    let mut cfg = ClientConfig::new("https://127.0.0.1:6443");
    cfg.tls.server_name = Some("localhost/x".into());
    let e = Client::new(cfg, RealClock::shared(), None).expect_err("refused");
    let msg = e.to_string();
    assert!(
        msg.contains("tls-server-name") && msg.contains("localhost/x"),
        "{msg}"
    );
}
