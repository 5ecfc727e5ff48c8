//! `ClientConfig`: everything needed to build a [`super::Client`], loaded
//! from a kubeconfig, from the in-cluster service-account environment, or
//! inferred (explicit path → `$KUBECONFIG` → in-cluster → `~/.kube/config`).
//!
//! Owns file reads of kubeconfig-referenced material (CA, client cert/key;
//! token files are read by [`super::Auth`], and once here at load to
//! check them). Must never log secrets; every error names the file and
//! field at fault.

use super::auth::{Auth, TokenFile};
use super::body::BodyLimits;
use super::error::Error;
use super::files;
use super::kubeconfig::{self, AuthSpec, PemSource};
use super::link::Link;
pub use super::tls::TlsMaterial;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The in-cluster service-account directory.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Default [`ClientConfig::write_timeout`]: kube-apiserver's default
/// admission-webhook timeout, so a write slowed by a webhook still gets its
/// answer, while one on a dead connection is given up after a third of the
/// default request timeout.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// Client settings. Defaults follow kube-controller-manager (qps 20,
/// burst 30) and client-go's practice of a bounded request timeout.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// API server base URL, e.g. `https://10.0.0.1:6443` (no trailing `/`).
    pub server: String,
    /// TLS material and options.
    pub tls: TlsMaterial,
    /// Request authentication.
    pub auth: Auth,
    /// `proxy-url`: an http or https URL (a CONNECT proxy); any other
    /// scheme is refused when the client is built.
    pub proxy_url: Option<String>,
    /// The context's (or service account's) namespace.
    pub namespace: Option<String>,
    /// Client-side rate limit: sustained requests per second (≤ 0: none).
    pub qps: f32,
    /// Client-side rate limit: burst.
    pub burst: u32,
    /// Whole-request timeout for ordinary (non-watch) requests.
    pub request_timeout: Duration,
    /// Whole-attempt timeout for a create, update, patch or delete (at
    /// most `request_timeout`). Default [`DEFAULT_WRITE_TIMEOUT`]: a write
    /// stuck on a connection that went silent (a server lost behind a load
    /// balancer: neither answered nor closed) holds its worker this long,
    /// not the whole `request_timeout`; its retry goes on a new connection.
    pub write_timeout: Duration,
    /// `User-Agent` header.
    pub user_agent: String,
    /// Retries for 429/5xx/transport failures (see the retry policy).
    pub max_retries: u32,
    /// Cap on any single retry delay, including a server's Retry-After.
    pub max_retry_delay: Duration,
    /// Extra idle time a watch may stay silent beyond its `timeoutSeconds`
    /// before its connection is declared dead (per-read timeout).
    pub watch_idle_margin: Duration,
    /// With bookmarks requested, a watch silent for longer than this is
    /// declared dead (`kubernetes.watch_idle_timeout`): the API server
    /// sends a bookmark about once a minute, so silence means a half-open
    /// connection or a stuck server. `None`: only the margin above applies.
    pub watch_idle_timeout: Option<Duration>,
    /// Cap on a non-watch response body, and on the items of one LIST
    /// page (`kubernetes.max_response_bytes`, `kubernetes.max_list_items`).
    pub body_limits: BodyLimits,
    /// Keep-alive connections kept open while idle (per agent; an agent
    /// talks to one host). Must cover the threads that share the client:
    /// past it, each answer beyond the limit closes its connection and the
    /// next request opens a new one (ureq keeps 3 unless told).
    /// Default 25, client-go's `MaxIdleConnsPerHost`.
    pub max_idle_connections: usize,
    /// How long an idle keep-alive connection is kept for reuse. Default
    /// 60 s: client-go keeps 90 s, as long as kube-apiserver's own idle
    /// timeout, and relies on Go retrying a request the server's close
    /// raced with; 30 s less keeps us clear of that race. (ureq's own
    /// default, 15 s, made a quiet cluster's every write open a new TLS
    /// connection.)
    pub idle_connection_timeout: Duration,
    /// What this config was loaded from (a path or `in-cluster`), for errors.
    pub source: String,
    /// Whether the server is reachable, shared by the clients of one server
    /// (the daemon gives all of its clients one; each new config has its own).
    pub link: Arc<Link>,
}

impl ClientConfig {
    /// A config for `server` with defaults and no credentials (tests, or
    /// plain-HTTP loopback servers).
    pub fn new(server: &str) -> ClientConfig {
        ClientConfig {
            server: server.trim_end_matches('/').to_string(),
            tls: TlsMaterial::default(),
            auth: Auth::None,
            proxy_url: None,
            namespace: None,
            qps: 20.0,
            burst: 30,
            request_timeout: Duration::from_secs(30),
            write_timeout: DEFAULT_WRITE_TIMEOUT,
            user_agent: format!("endpointd/{}", env!("CARGO_PKG_VERSION")),
            max_retries: 3,
            max_retry_delay: Duration::from_secs(10),
            watch_idle_margin: Duration::from_secs(15),
            watch_idle_timeout: Some(Duration::from_secs(120)),
            body_limits: BodyLimits::default(),
            max_idle_connections: 25,
            idle_connection_timeout: Duration::from_secs(60),
            source: server.to_string(),
            link: Arc::default(),
        }
    }

    /// Load `path` and resolve `context` (or `current-context`).
    pub fn from_kubeconfig_file(path: &Path, context: Option<&str>) -> Result<ClientConfig, Error> {
        let yaml = files::read_bounded_string(path, files::MAX_KUBECONFIG_BYTES, "kubeconfig")
            .map_err(|e| Error::Config {
                source: path.display().to_string(),
                field: "(file)".into(),
                message: format!("cannot read kubeconfig: {e}"),
            })?;
        super::perms::warn_if_exposed("kubeconfig", path);
        let base = path.parent().unwrap_or(Path::new("."));
        ClientConfig::from_kubeconfig_source(&yaml, &path.display().to_string(), base, context)
    }

    /// Parse kubeconfig YAML; relative paths resolve against `base_dir`.
    pub fn from_kubeconfig_str(
        yaml: &str,
        base_dir: &Path,
        context: Option<&str>,
    ) -> Result<ClientConfig, Error> {
        let source = base_dir.join("(kubeconfig)").display().to_string();
        ClientConfig::from_kubeconfig_source(yaml, &source, base_dir, context)
    }

    /// Parse kubeconfig YAML read from `source` (named in every error).
    fn from_kubeconfig_source(
        yaml: &str,
        source: &str,
        base_dir: &Path,
        context: Option<&str>,
    ) -> Result<ClientConfig, Error> {
        let r = kubeconfig::resolve(yaml, source, base_dir, context)?;
        let load = |p: Option<PemSource>, field: &str| -> Result<Option<Vec<u8>>, Error> {
            match p {
                None => Ok(None),
                Some(PemSource::Data(d)) => Ok(Some(d)),
                Some(PemSource::File(f)) => files::read_bounded(&f, files::MAX_PEM_BYTES, field)
                    .map(Some)
                    .map_err(|e| Error::Config {
                        source: source.to_string(),
                        field: field.into(),
                        message: format!("cannot read {}: {e}", f.display()),
                    }),
            }
        };
        if let Some(PemSource::File(f)) = &r.client_key {
            super::perms::warn_if_exposed("client key", f);
        }
        if let AuthSpec::TokenFile(p) = &r.auth {
            super::perms::warn_if_exposed("token file", p);
        }
        let mut cfg = ClientConfig::new(&r.server);
        cfg.source = source.to_string();
        cfg.tls = TlsMaterial {
            ca_pem: load(r.ca, "certificate-authority")?,
            client_cert_pem: load(r.client_cert, "client-certificate")?,
            client_key_pem: load(r.client_key, "client-key")?,
            insecure: r.insecure,
            server_name: r.tls_server_name,
        };
        cfg.auth = match r.auth {
            AuthSpec::None => Auth::None,
            AuthSpec::Token(t) => Auth::Bearer(t.into()),
            AuthSpec::TokenFile(p) => {
                // Read once now, as client-go does: a missing file or one
                // that holds no usable token fails the load, not every
                // request. It is read again on use (it rotates).
                let file = TokenFile::new(p);
                file.check()?;
                Auth::TokenFile(Arc::new(file))
            }
            AuthSpec::Basic { username, password } => Auth::Basic {
                username,
                password: password.into(),
            },
        };
        cfg.proxy_url = r.proxy_url;
        cfg.namespace = r.namespace;
        Ok(cfg)
    }

    /// The in-cluster config from the process environment and
    /// [`SERVICE_ACCOUNT_DIR`].
    pub fn in_cluster() -> Result<ClientConfig, Error> {
        ClientConfig::in_cluster_from(&|k| std::env::var(k).ok(), Path::new(SERVICE_ACCOUNT_DIR))
    }

    /// The in-cluster config from `env` and a service-account directory
    /// holding `token`, `ca.crt` and (optionally) `namespace`.
    pub fn in_cluster_from(
        env: &dyn Fn(&str) -> Option<String>,
        sa_dir: &Path,
    ) -> Result<ClientConfig, Error> {
        let err = |field: &str, message: String| Error::Config {
            source: "in-cluster".into(),
            field: field.into(),
            message,
        };
        let host = env("KUBERNETES_SERVICE_HOST")
            .filter(|h| !h.is_empty())
            .ok_or_else(|| {
                err(
                    "KUBERNETES_SERVICE_HOST",
                    "not set: not running in a cluster".into(),
                )
            })?;
        let port = env("KUBERNETES_SERVICE_PORT")
            .filter(|p| !p.is_empty())
            .ok_or_else(|| err("KUBERNETES_SERVICE_PORT", "not set".into()))?;
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host
        };
        let mut cfg = ClientConfig::new(&format!("https://{host}:{port}"));
        cfg.source = "in-cluster".into();
        let ca = sa_dir.join("ca.crt");
        cfg.tls.ca_pem = Some(
            files::read_bounded(&ca, files::MAX_PEM_BYTES, "CA bundle")
                .map_err(|e| err("ca.crt", format!("cannot read {}: {e}", ca.display())))?,
        );
        let token_path = sa_dir.join("token");
        // Fail now, as client-go does, rather than on the first request; the
        // file is still re-read periodically afterwards.
        match files::read_bounded_string(&token_path, files::MAX_TOKEN_BYTES, "token file") {
            Ok(t) => {
                if let Err(why) = super::auth::token_text(&t) {
                    return Err(err("token", format!("{} {why}", token_path.display())));
                }
            }
            Err(e) => {
                return Err(err(
                    "token",
                    format!("cannot read {}: {e}", token_path.display()),
                ))
            }
        }
        let token = TokenFile::new(token_path);
        cfg.auth = Auth::TokenFile(Arc::new(token));
        cfg.namespace = files::read_bounded_string(
            &sa_dir.join("namespace"),
            files::MAX_NAMESPACE_BYTES,
            "namespace file",
        )
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
        Ok(cfg)
    }

    /// The kubeconfig path `infer` would use, or `None` for in-cluster.
    pub fn infer_path(
        explicit: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<PathBuf>, Error> {
        if let Some(p) = explicit {
            return Ok(Some(p.to_path_buf()));
        }
        if let Some(first) = env("KUBECONFIG")
            .and_then(|k| std::env::split_paths(&k).find(|p| !p.as_os_str().is_empty()))
        {
            return Ok(Some(first));
        }
        if env("KUBERNETES_SERVICE_HOST").is_some_and(|h| !h.is_empty()) {
            return Ok(None);
        }
        match env("HOME").filter(|h| !h.is_empty()) {
            Some(home) => Ok(Some(Path::new(&home).join(".kube").join("config"))),
            None => Err(Error::Config {
                source: "environment".into(),
                field: "KUBECONFIG".into(),
                message: "no kubeconfig given, KUBECONFIG, KUBERNETES_SERVICE_HOST and HOME are all unset".into(),
            }),
        }
    }

    /// Explicit path, else `$KUBECONFIG` (first path), else in-cluster,
    /// else `~/.kube/config`.
    pub fn infer(explicit: Option<&Path>, context: Option<&str>) -> Result<ClientConfig, Error> {
        match ClientConfig::infer_path(explicit, &|k| std::env::var(k).ok())? {
            Some(p) => ClientConfig::from_kubeconfig_file(&p, context),
            None => ClientConfig::in_cluster(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn infer_order_table() {
        let explicit = Path::new("/etc/endpointd/kubeconfig");
        // (explicit path, environment, Some(expected path or None = in-cluster) | None = error)
        type Case<'a> = (
            Option<&'a Path>,
            Vec<(&'a str, &'a str)>,
            Option<Option<&'a str>>,
        );
        let cases: Vec<Case> = vec![
            (
                Some(explicit),
                vec![("KUBECONFIG", "/a")],
                Some(Some("/etc/endpointd/kubeconfig")),
            ),
            (
                None,
                vec![("KUBECONFIG", "/a:/b"), ("KUBERNETES_SERVICE_HOST", "h")],
                Some(Some("/a")),
            ),
            (None, vec![("KUBECONFIG", ":/b")], Some(Some("/b"))),
            (
                None,
                vec![("KUBERNETES_SERVICE_HOST", "10.0.0.1"), ("HOME", "/root")],
                Some(None),
            ),
            (
                None,
                vec![("HOME", "/home/u")],
                Some(Some("/home/u/.kube/config")),
            ),
            (None, vec![], None),
        ];
        for (exp, env, want) in cases {
            let got = ClientConfig::infer_path(exp, &env_of(&env));
            match want {
                Some(w) => assert_eq!(got.expect("path").as_deref(), w.map(Path::new), "{env:?}"),
                None => assert!(matches!(got, Err(Error::Config { .. })), "{env:?}"),
            }
        }
    }

    #[test]
    fn in_cluster_reads_the_service_account_dir() {
        let dir = std::env::temp_dir().join(format!("endpointd-sa-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join("ca.crt"), "CA").expect("ca");
        std::fs::write(dir.join("token"), "tok").expect("token");
        std::fs::write(dir.join("namespace"), "kube-system\n").expect("ns");
        let env = env_of(&[
            ("KUBERNETES_SERVICE_HOST", "fd00::1"),
            ("KUBERNETES_SERVICE_PORT", "443"),
        ]);
        let cfg = ClientConfig::in_cluster_from(&env, &dir).expect("in-cluster");
        assert_eq!(cfg.server, "https://[fd00::1]:443");
        assert_eq!(cfg.tls.ca_pem.as_deref(), Some(&b"CA"[..]));
        assert_eq!(cfg.namespace.as_deref(), Some("kube-system"));
        assert!(matches!(cfg.auth, Auth::TokenFile(_)));
        assert!(cfg.user_agent.starts_with("endpointd/"));
        let missing = ClientConfig::in_cluster_from(&env_of(&[]), &dir);
        assert!(
            matches!(missing, Err(Error::Config { ref field, .. }) if field == "KUBERNETES_SERVICE_HOST")
        );
        std::fs::write(dir.join("token"), "  \n").expect("blank token");
        let blank = ClientConfig::in_cluster_from(&env, &dir);
        assert!(matches!(blank, Err(Error::Config { ref field, .. }) if field == "token"));
        std::fs::write(dir.join("token"), "SECRET\r\nSECRET\n").expect("two-line token");
        match ClientConfig::in_cluster_from(&env, &dir) {
            Err(Error::Config { field, message, .. }) => {
                assert_eq!(field, "token");
                assert!(message.contains("control character"), "{message}");
                assert!(message.contains("token"), "{message}");
                assert!(!message.contains("SECRET"), "{message}");
            }
            other => panic!("two-line token: {other:?}"),
        }
        std::fs::remove_file(dir.join("ca.crt")).expect("rm");
        let no_ca = ClientConfig::in_cluster_from(&env, &dir);
        assert!(matches!(no_ca, Err(Error::Config { ref field, .. }) if field == "ca.crt"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_kubeconfig_token_file_is_checked_at_load() {
        let dir = std::env::temp_dir().join(format!("endpointd-kc-tf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let kc = "current-context: x\nclusters: [{name: c, cluster: {server: 'https://h:6443'}}]\n\
                  users: [{name: u, user: {tokenFile: tok}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n";
        // (file text or None: no file, None: loads | Some(message fragment))
        let cases = [
            (Some("tok\n"), None),
            (Some("SECRET\r\nSECRET"), Some("control character")),
            (Some(" \n"), Some("empty")),
            (None, Some("cannot read token file")),
        ];
        for (text, want) in cases {
            let _ = std::fs::remove_file(dir.join("tok"));
            if let Some(t) = text {
                std::fs::write(dir.join("tok"), t).expect("token");
            }
            match (ClientConfig::from_kubeconfig_str(kc, &dir, None), want) {
                (Ok(cfg), None) => assert!(matches!(cfg.auth, Auth::TokenFile(_))),
                (
                    Err(Error::Config {
                        source,
                        field,
                        message,
                    }),
                    Some(w),
                ) => {
                    assert_eq!(source, dir.join("tok").display().to_string(), "{text:?}");
                    assert_eq!(field, "tokenFile");
                    assert!(message.contains(w), "{text:?}: {message}");
                    assert!(!message.contains("SECRET"), "{message}");
                }
                (got, _) => panic!("{text:?}: got {got:?}"),
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn kubeconfig_file_reads_relative_material() {
        let dir = std::env::temp_dir().join(format!("endpointd-kc-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("pki")).expect("dir");
        std::fs::write(dir.join("pki/ca.crt"), "PEM").expect("ca");
        let kc = "current-context: x\nclusters: [{name: c, cluster: {server: 'https://h:6443/', certificate-authority: pki/ca.crt}}]\ncontexts: [{name: x, context: {cluster: c}}]\n";
        std::fs::write(dir.join("config"), kc).expect("kc");
        let cfg = ClientConfig::from_kubeconfig_file(&dir.join("config"), None).expect("cfg");
        assert_eq!(cfg.server, "https://h:6443");
        assert_eq!(cfg.tls.ca_pem.as_deref(), Some(&b"PEM"[..]));
        std::fs::remove_file(dir.join("pki/ca.crt")).expect("rm");
        let err = ClientConfig::from_kubeconfig_file(&dir.join("config"), None).expect_err("no ca");
        assert!(
            err.to_string().contains("certificate-authority") && err.to_string().contains("ca.crt"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
