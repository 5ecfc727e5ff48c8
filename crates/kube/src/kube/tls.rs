//! TLS for the client: PEM material → ureq/rustls configuration with the
//! ring provider passed explicitly, client certificates (RSA PKCS#1/PKCS#8,
//! EC SEC1), `insecure-skip-tls-verify`, and `tls-server-name` through a
//! pinned resolver (the request URL carries the TLS name; the resolver
//! connects to the real server address).
//!
//! Must never turn verification off unless asked (and then warn), never
//! print key material, and never let a mismatched cert/key pair reach ureq
//! (it panics on one): pairs are validated here first.

use super::error::Error;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use ureq::http::Uri;
use ureq::tls::{Certificate, ClientCert, PemItem, PrivateKey, RootCerts, TlsConfig};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// PEM material and TLS options of a [`super::ClientConfig`].
#[derive(Clone, Default, PartialEq, Eq)]
pub struct TlsMaterial {
    /// CA bundle (PEM). `None`: the system bundle is used.
    pub ca_pem: Option<Vec<u8>>,
    /// Client certificate chain (PEM).
    pub client_cert_pem: Option<Vec<u8>>,
    /// Client private key (PEM: PKCS#1, PKCS#8 or SEC1).
    pub client_key_pem: Option<Vec<u8>>,
    /// Skip server certificate verification (`insecure-skip-tls-verify`).
    pub insecure: bool,
    /// Name to verify the server certificate against (`tls-server-name`).
    pub server_name: Option<String>,
}

impl fmt::Debug for TlsMaterial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsMaterial")
            .field("ca_pem", &self.ca_pem.as_ref().map(|c| c.len()))
            .field(
                "client_cert_pem",
                &self.client_cert_pem.as_ref().map(|c| c.len()),
            )
            .field(
                "client_key_pem",
                &self.client_key_pem.as_ref().map(|_| "<redacted>"),
            )
            .field("insecure", &self.insecure)
            .field("server_name", &self.server_name)
            .finish()
    }
}

/// Where the system CA bundle usually lives (Debian/Ubuntu/Alpine, then
/// Fedora/RHEL). `SSL_CERT_FILE` is checked first.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
];

fn cfg_err(source: &str, field: &str, message: String) -> Error {
    Error::Config {
        source: source.to_string(),
        field: field.to_string(),
        message,
    }
}

/// Parse every certificate in a PEM bundle.
pub fn parse_certs(
    pem: &[u8],
    source: &str,
    field: &str,
) -> Result<Vec<Certificate<'static>>, Error> {
    let mut out = Vec::new();
    for item in ureq::tls::parse_pem(pem) {
        match item {
            Ok(PemItem::Certificate(c)) => out.push(c),
            Ok(_) => {}
            Err(e) => {
                return Err(cfg_err(
                    source,
                    field,
                    format!("invalid PEM: {}", pem_problem(&e)),
                ))
            }
        }
    }
    if out.is_empty() {
        return Err(cfg_err(source, field, "no PEM certificate found".into()));
    }
    Ok(out)
}

/// What is wrong with a PEM input, in words. The PEM reader's own texts
/// (its `Display` as much as ureq's `Debug` of it) print byte vectors
/// (`end_marker: [80, 82, …]`), and the line it finds malformed may hold
/// key data: only a block's label (`PRIVATE KEY`, `CERTIFICATE`) is ever
/// quoted, and only if it is short printable ASCII.
fn pem_problem(e: &ureq::Error) -> String {
    use rustls_pki_types::pem::Error as Pem;
    let ureq::Error::Pem(e) = e else {
        return e.to_string();
    };
    match e {
        Pem::MissingSectionEnd { end_marker } => {
            let label = std::str::from_utf8(end_marker)
                .ok()
                .filter(|l| l.len() <= 40 && l.bytes().all(|b| b == b' ' || b.is_ascii_graphic()));
            match label {
                Some(l) => format!("the PEM block `{l}` has no END line (truncated?)"),
                None => "a PEM block has no END line (truncated?)".into(),
            }
        }
        Pem::IllegalSectionStart { .. } => "a `-----BEGIN` line is malformed".into(),
        Pem::Base64Decode(_) => "a PEM block's base64 text is corrupt".into(),
        Pem::Io(e) => format!("cannot read the PEM text: {e}"),
        Pem::NoItemsFound => "no PEM block found".into(),
        Pem::SectionTooLarge => "a PEM block is too large".into(),
        _ => "not valid PEM".into(),
    }
}

fn parse_key(pem: &[u8], source: &str) -> Result<PrivateKey<'static>, Error> {
    PrivateKey::from_pem(pem).map_err(|e| {
        cfg_err(
            source,
            "client-key",
            format!("no usable PEM private key: {}", pem_problem(&e)),
        )
    })
}

fn ring() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Check that the client certificate and key belong together.
fn check_pair(
    chain: &[Certificate<'static>],
    key: &PrivateKey<'static>,
    source: &str,
) -> Result<(), Error> {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = chain
        .iter()
        .map(|c| CertificateDer::from(c.der().to_vec()))
        .collect();
    let key_der = PrivateKeyDer::try_from(key.der().to_vec()).map_err(|e| {
        cfg_err(
            source,
            "client-key",
            format!("unrecognised key encoding: {e}"),
        )
    })?;
    let provider = ring();
    // A key that cannot be loaded at all is the key's fault, not a
    // mismatch with the certificate (a body cut inside intact armour).
    provider
        .key_provider
        .load_private_key(key_der.clone_key())
        .map_err(|e| {
            cfg_err(
                source,
                "client-key",
                format!("not a usable private key: {e}"),
            )
        })?;
    rustls::sign::CertifiedKey::from_der(certs, key_der, &provider)
        .map(|_| ())
        .map_err(|e| {
            cfg_err(
                source,
                "client-certificate",
                format!("does not match client-key: {e}"),
            )
        })
}

fn system_roots(source: &str) -> Result<Vec<Certificate<'static>>, Error> {
    let env = std::env::var("SSL_CERT_FILE").ok();
    let candidates = env
        .iter()
        .map(String::as_str)
        .chain(SYSTEM_BUNDLES.iter().copied());
    for path in candidates {
        let bundle = Path::new(path);
        if let Ok(pem) =
            super::files::read_bounded(bundle, super::files::MAX_PEM_BYTES, "CA bundle")
        {
            return parse_certs(&pem, path, "system CA bundle");
        }
    }
    Err(cfg_err(
        source,
        "certificate-authority",
        "not set and no system CA bundle found; set certificate-authority(-data)".into(),
    ))
}

/// Build the ureq TLS configuration. `source` names the config in errors.
pub fn build(m: &TlsMaterial, source: &str) -> Result<TlsConfig, Error> {
    let mut b = TlsConfig::builder().unversioned_rustls_crypto_provider(ring());
    if m.insecure && m.ca_pem.is_some() {
        // client-go refuses this too: the CA would be silently ignored.
        return Err(cfg_err(
            source,
            "insecure-skip-tls-verify",
            "specifying a root certificates file with the insecure flag is not allowed \
             (certificate-authority(-data) is set)"
                .into(),
        ));
    }
    if m.insecure {
        // Once per process and source, not once per client built.
        super::perms::warn_once(format!(
            "{source}: insecure-skip-tls-verify is set; the API server's certificate is NOT verified"
        ));
        b = b.disable_verification(true);
    }
    let roots = match &m.ca_pem {
        Some(pem) => parse_certs(pem, source, "certificate-authority")?,
        None if m.insecure => Vec::new(),
        None => system_roots(source)?,
    };
    if !roots.is_empty() {
        b = b.root_certs(RootCerts::new_with_certs(&roots));
    }
    match (&m.client_cert_pem, &m.client_key_pem) {
        (Some(cert), Some(key)) => {
            let chain = parse_certs(cert, source, "client-certificate")?;
            let key = parse_key(key, source)?;
            check_pair(&chain, &key, source)?;
            b = b.client_cert(Some(ClientCert::new_with_certs(&chain, key)));
        }
        (Some(_), None) => {
            return Err(cfg_err(
                source,
                "client-key",
                "client-certificate is set but client-key is not".into(),
            ))
        }
        (None, Some(_)) => {
            return Err(cfg_err(
                source,
                "client-certificate",
                "client-key is set but client-certificate is not".into(),
            ))
        }
        (None, None) => {}
    }
    Ok(b.build())
}

/// Resolves requests for the `tls-server-name` host to the real server
/// address while the URL (and so SNI and certificate verification) uses
/// `tls-server-name`. Any other host (e.g. a proxy) resolves normally.
#[derive(Debug)]
pub struct PinnedResolver {
    name: String,
    real: Uri,
    inner: LiteralResolver,
}

impl PinnedResolver {
    /// Resolve `name` to the host and port of `real`.
    pub fn new(name: &str, real: Uri) -> PinnedResolver {
        PinnedResolver {
            name: name
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            real,
            inner: LiteralResolver::default(),
        }
    }
}

impl Resolver for PinnedResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let host = uri
            .host()
            .map(|h| h.trim_start_matches('[').trim_end_matches(']'));
        if host == Some(self.name.as_str()) {
            self.inner.resolve(&self.real, config, timeout)
        } else {
            self.inner.resolve(uri, config, timeout)
        }
    }
}

/// ureq's [`DefaultResolver`] with a fast path for IP-literal hosts.
///
/// ureq resolves the host on *every* request, pooled connection or not,
/// and with a request timeout set its default resolver does so on a new
/// thread each time (so that a slow DNS lookup can be abandoned): one
/// thread spawn per API request, most of endpointd's CPU per change under
/// churn. An IP literal (the usual in-cluster and kube-sim case) needs no
/// lookup and is answered inline, with the same IP-family filter;
/// host names still go through [`DefaultResolver`].
#[derive(Debug, Default)]
pub struct LiteralResolver {
    inner: DefaultResolver,
}

impl Resolver for LiteralResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let literal = uri.host().and_then(|h| {
            h.trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .ok()
        });
        let port = uri.port_u16().or(match uri.scheme_str() {
            Some("http") => Some(80),
            Some("https") => Some(443),
            _ => None,
        });
        if let (Some(ip), Some(port)) = (literal, port) {
            let addr = std::net::SocketAddr::new(ip, port);
            if let Some(a) = config.ip_family().keep_wanted(std::iter::once(addr)).next() {
                let mut out = self.empty();
                out.push(a);
                return Ok(out);
            }
        }
        self.inner.resolve(uri, config, timeout)
    }
}

/// Whether `name` is usable as `tls-server-name`: an IP address, or a DNS
/// name (dot-separated labels of letters, digits and inner hyphens, at
/// most 63 characters each and 253 in all). Anything else — a `/`, a `@`,
/// a space — would change the request URL, not just the name checked.
pub fn valid_server_name(name: &str) -> bool {
    if name.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    !name.is_empty() && name.len() <= 253 && name.split('.').all(label_ok)
}

/// For `tls-server-name`: the server URL with its host replaced by `name`
/// (the port is kept, made explicit). `name` must pass
/// [`valid_server_name`].
pub fn url_with_server_name(server: &Uri, name: &str) -> Result<String, String> {
    if !valid_server_name(name) {
        return Err(format!("{name:?} is not a DNS name or an IP address"));
    }
    let scheme = server.scheme_str().unwrap_or("https");
    let port = server
        .port_u16()
        .unwrap_or(if scheme == "http" { 80 } else { 443 });
    let host = if name.contains(':') && !name.starts_with('[') {
        format!("[{name}]")
    } else {
        name.to_string()
    };
    let path = server.path().trim_end_matches('/');
    Ok(format!("{scheme}://{host}:{port}{path}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_hosts_resolve_inline() {
        let r = LiteralResolver::default();
        let cfg = ureq::config::Config::default();
        let t = || NextTimeout {
            after: ureq::unversioned::transport::time::Duration::Exact(
                std::time::Duration::from_secs(5),
            ),
            reason: ureq::Timeout::Resolve,
            per_read: None,
            per_write: None,
        };
        for (url, want) in [
            ("http://127.0.0.1:8080/api", "127.0.0.1:8080"),
            ("https://10.0.0.1/api", "10.0.0.1:443"),
            ("https://[::1]:6443/", "[::1]:6443"),
        ] {
            let uri: Uri = url.parse().expect("uri");
            let got = r.resolve(&uri, &cfg, t()).expect("resolve");
            let got: Vec<String> = got.iter().map(|a| a.to_string()).collect();
            assert_eq!(got, [want], "{url}");
        }
        // A name still goes through the system resolver.
        let uri: Uri = "http://localhost:1/".parse().expect("uri");
        let got = r.resolve(&uri, &cfg, t()).expect("localhost");
        assert!(got.iter().all(|a| a.ip().is_loopback() && a.port() == 1));
    }

    #[test]
    fn tls_server_name_must_be_a_dns_name_or_an_ip() {
        for ok in [
            "kubernetes",
            "kubernetes.default.svc",
            "API-1.example.com",
            "10.0.0.1",
            "fd00::1",
        ] {
            assert!(valid_server_name(ok), "{ok}");
        }
        for bad in [
            "",
            "localhost/x",
            "a b",
            "user@host",
            "-x",
            "x-",
            "a..b",
            "host:443",
            "[fd00::1]",
        ] {
            assert!(!valid_server_name(bad), "{bad}");
        }
        let uri: Uri = "https://10.0.0.1:6443".parse().expect("uri");
        assert!(url_with_server_name(&uri, "localhost/x").is_err());
        assert_eq!(
            url_with_server_name(&uri, "kubernetes").as_deref(),
            Ok("https://kubernetes:6443")
        );
    }

    #[test]
    fn pem_errors_are_words_without_key_material() {
        let key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANSECRETSECRET\n";
        let cert = "-----BEGIN CERTIFICATE-----\nMIIBSECRETSECRET\n";
        let bad_b64 = "-----BEGIN CERTIFICATE-----\nSECRET!!SECRET\n-----END CERTIFICATE-----\n";
        // (PEM, parse as key?, fragment the error must hold)
        let cases = [
            (key, true, "the PEM block `PRIVATE KEY` has no END line"),
            (cert, false, "the PEM block `CERTIFICATE` has no END line"),
            (cert, true, "the PEM block `CERTIFICATE` has no END line"),
            (bad_b64, false, "base64 text is corrupt"),
            ("no pem here", false, "no PEM certificate found"),
        ];
        for (pem, as_key, want) in cases {
            let got = if as_key {
                parse_key(pem.as_bytes(), "kc").map(drop)
            } else {
                parse_certs(pem.as_bytes(), "kc", "certificate-authority").map(drop)
            };
            let Err(e) = got else {
                panic!("{pem:?} parsed");
            };
            let text = format!("{e} {e:?}");
            assert!(text.contains(want), "{pem:?}: {text}");
            for leak in ["SECRET", "[80, 82", "[67, 69"] {
                assert!(!text.contains(leak), "{pem:?}: {text}");
            }
        }
    }

    #[test]
    fn insecure_skip_tls_verify_with_a_ca_is_rejected() {
        let m = TlsMaterial {
            ca_pem: Some(b"-----BEGIN CERTIFICATE-----".to_vec()),
            insecure: true,
            ..TlsMaterial::default()
        };
        match build(&m, "kc") {
            Err(Error::Config { field, message, .. }) => {
                assert_eq!(field, "insecure-skip-tls-verify");
                assert!(message.contains("not allowed"), "{message}");
            }
            Err(other) => panic!("expected a config error, got {other}"),
            Ok(_) => panic!("insecure + CA accepted"),
        }
        let insecure_only = TlsMaterial {
            insecure: true,
            ..TlsMaterial::default()
        };
        assert!(build(&insecure_only, "kc").is_ok());
    }

    #[test]
    fn the_insecure_warning_is_logged_once_per_source() {
        super::super::perms::captured::install();
        let m = TlsMaterial {
            insecure: true,
            ..TlsMaterial::default()
        };
        for source in ["kc-warned-once-a", "kc-warned-once-a", "kc-warned-once-b"] {
            build(&m, source).expect("insecure build");
            build(&m, source).expect("insecure build");
        }
        let count = super::super::perms::captured::count;
        assert_eq!(count("kc-warned-once-a: insecure-skip-tls-verify"), 1);
        assert_eq!(count("kc-warned-once-b: insecure-skip-tls-verify"), 1);
    }
}
