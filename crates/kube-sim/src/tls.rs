//! kube-sim's throwaway PKI: a CA, a server certificate for loopback
//! (SANs 127.0.0.1, ::1, localhost) and a client certificate (CN
//! "endpointd", O "system:masters"), all made with rcgen at start, plus the
//! rustls `ServerConfig` that serves the one and verifies the other.
//!
//! It also renders the kubeconfig that carries these credentials to
//! clients. Keys live only in memory and in the kubeconfig the caller asks
//! for; this module never logs them or writes them anywhere itself.

use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use serde_json::Value;
use std::sync::Arc;

/// Common name of the generated client certificate.
pub const CLIENT_CN: &str = "endpointd";
/// Organization (Kubernetes group) of the generated client certificate.
pub const CLIENT_ORG: &str = "system:masters";

/// Why the PKI could not be made.
#[derive(Debug)]
pub enum TlsError {
    /// rcgen failed to make a key or certificate.
    Generate(String),
    /// rustls rejected the certificates or the verifier setup.
    Config(String),
}

impl std::fmt::Display for TlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TlsError::Generate(m) => write!(f, "generating certificates: {m}"),
            TlsError::Config(m) => write!(f, "building the TLS server config: {m}"),
        }
    }
}

impl std::error::Error for TlsError {}

fn gen_err(e: rcgen::Error) -> TlsError {
    TlsError::Generate(e.to_string())
}

/// One certificate with its key, in PEM and DER.
#[derive(Clone)]
pub struct CertKey {
    /// Certificate, PEM.
    pub cert_pem: String,
    /// Private key (PKCS#8), PEM.
    pub key_pem: String,
    cert_der: CertificateDer<'static>,
    key_der: Vec<u8>,
}

impl std::fmt::Debug for CertKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("CertKey").finish_non_exhaustive()
    }
}

/// The CA with the server and client certificates it signed.
#[derive(Debug, Clone)]
pub struct SimPki {
    /// The CA (its key is kept so tests could sign more).
    pub ca: CertKey,
    /// Server certificate for 127.0.0.1, ::1 and localhost.
    pub server: CertKey,
    /// Client certificate (CN [`CLIENT_CN`], O [`CLIENT_ORG`]).
    pub client: CertKey,
}

fn leaf(
    cn: &str,
    org: Option<&str>,
    sans: Vec<SanType>,
    usage: ExtendedKeyUsagePurpose,
    issuer: &Issuer<'_, KeyPair>,
) -> Result<CertKey, TlsError> {
    let mut p = CertificateParams::default();
    p.distinguished_name.push(DnType::CommonName, cn);
    if let Some(o) = org {
        p.distinguished_name.push(DnType::OrganizationName, o);
    }
    p.subject_alt_names = sans;
    p.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    p.extended_key_usages = vec![usage];
    p.use_authority_key_identifier_extension = true;
    let key = KeyPair::generate().map_err(gen_err)?;
    let cert = p.signed_by(&key, issuer).map_err(gen_err)?;
    Ok(CertKey {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        cert_der: cert.der().clone(),
        key_der: key.serialize_der(),
    })
}

impl SimPki {
    /// Make a fresh CA, server and client certificate.
    pub fn generate() -> Result<SimPki, TlsError> {
        let mut ca_params = CertificateParams::default();
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "kube-sim-ca");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = KeyPair::generate().map_err(gen_err)?;
        let ca_cert = ca_params.self_signed(&ca_key).map_err(gen_err)?;
        let ca = CertKey {
            cert_pem: ca_cert.pem(),
            key_pem: ca_key.serialize_pem(),
            cert_der: ca_cert.der().clone(),
            key_der: ca_key.serialize_der(),
        };
        let issuer = Issuer::new(ca_params, ca_key);
        let sans = vec![
            SanType::IpAddress([127, 0, 0, 1].into()),
            SanType::IpAddress(std::net::Ipv6Addr::LOCALHOST.into()),
            SanType::DnsName("localhost".try_into().map_err(gen_err)?),
        ];
        let server = leaf(
            "kube-sim",
            None,
            sans,
            ExtendedKeyUsagePurpose::ServerAuth,
            &issuer,
        )?;
        let client = leaf(
            CLIENT_CN,
            Some(CLIENT_ORG),
            Vec::new(),
            ExtendedKeyUsagePurpose::ClientAuth,
            &issuer,
        )?;
        Ok(SimPki { ca, server, client })
    }

    /// The rustls server config: serves the server certificate, asks for a
    /// client certificate and verifies it against the CA when one is sent,
    /// but lets clients without one connect (they may carry a token instead;
    /// the HTTP layer decides, as kube-apiserver does).
    pub fn server_config(&self) -> Result<Arc<ServerConfig>, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = RootCertStore::empty();
        roots
            .add(self.ca.cert_der.clone())
            .map_err(|e| TlsError::Config(format!("CA certificate: {e}")))?;
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
                .allow_unauthenticated()
                .build()
                .map_err(|e| TlsError::Config(format!("client verifier: {e}")))?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.server.key_der.clone()));
        let mut cfg = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(
                vec![self.server.cert_der.clone(), self.ca.cert_der.clone()],
                key,
            )
            .map_err(|e| TlsError::Config(format!("server certificate: {e}")))?;
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(cfg))
    }
}

/// A kubeconfig for `url`: CA data when `pki` is given, and the token when
/// one is set, else the client certificate and key (TLS only).
pub fn kubeconfig(url: &str, pki: Option<&SimPki>, token: Option<&str>) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    // JSON strings are valid YAML double-quoted scalars.
    let q = |s: &str| Value::from(s).to_string();
    let mut cluster = format!("    server: {}\n", q(url));
    if let Some(p) = pki {
        cluster.push_str(&format!(
            "    certificate-authority-data: {}\n",
            b64(&p.ca.cert_pem)
        ));
    }
    let user = match (token, pki) {
        (Some(t), _) => format!("    token: {}\n", q(t)),
        (None, Some(p)) => format!(
            "    client-certificate-data: {}\n    client-key-data: {}\n",
            b64(&p.client.cert_pem),
            b64(&p.client.key_pem)
        ),
        (None, None) => String::new(),
    };
    let user = if user.is_empty() {
        "  user: {}\n".to_string()
    } else {
        format!("  user:\n{user}")
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kube-sim\n  cluster:\n{cluster}\
contexts:\n- name: kube-sim\n  context:\n    cluster: kube-sim\n    user: kube-sim\n    namespace: default\n\
current-context: kube-sim\nusers:\n- name: kube-sim\n{user}preferences: {{}}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pki_is_consistent() {
        let pki = SimPki::generate().expect("pki");
        assert!(pki.ca.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(pki.client.key_pem.contains("PRIVATE KEY"));
        assert_eq!(
            endpointd_base::httpd::tls::common_name(&pki.client.cert_der).as_deref(),
            Some(CLIENT_CN)
        );
        assert_eq!(
            endpointd_base::httpd::tls::organizations(&pki.client.cert_der),
            vec![CLIENT_ORG.to_string()]
        );
        assert!(pki.server_config().is_ok());
        assert!(!format!("{pki:?}").contains("PRIVATE"));
    }

    #[test]
    fn kubeconfig_variants_parse_as_yaml() {
        let pki = SimPki::generate().expect("pki");
        let cases = [
            (Some(&pki), Some("t0k\"en"), true, false),
            (Some(&pki), None, true, true),
            (None, Some("tok"), false, false),
            (None, None, false, false),
        ];
        for (p, token, has_ca, has_cert) in cases {
            let text = kubeconfig("https://127.0.0.1:1", p, token);
            let v: Value = serde_saphyr::from_str(&text).expect("yaml");
            assert_eq!(v["current-context"], "kube-sim");
            assert_eq!(v["clusters"][0]["cluster"]["server"], "https://127.0.0.1:1");
            let cluster = &v["clusters"][0]["cluster"];
            assert_eq!(cluster.get("certificate-authority-data").is_some(), has_ca);
            let user = &v["users"][0]["user"];
            assert_eq!(user.get("client-key-data").is_some(), has_cert);
            assert_eq!(user.get("token").and_then(Value::as_str), token);
        }
    }
}
