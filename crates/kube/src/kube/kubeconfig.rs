//! kubeconfig parsing and context resolution (pure: no file reads).
//!
//! Field names follow client-go / kube-client (`certificate-authority-data`,
//! and the camelCase outlier `tokenFile`). Relative file paths are resolved
//! against the kubeconfig's directory, as kubectl does. Unsupported
//! mechanisms (exec plugins, auth providers, impersonation, a `proxy-url`
//! other than http or https) are rejected with an error naming the field
//! instead of being silently ignored.
//!
//! Must never read files or the environment, and never put secret values
//! into an error message.

use super::auth::has_control;
use super::error::Error;
use super::transport::redact_userinfo;
use base64::Engine as _;
use serde::de::IgnoredAny;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Where PEM material comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum PemSource {
    /// A file path (already resolved against the kubeconfig directory).
    File(PathBuf),
    /// Inline bytes (decoded from a `*-data` field).
    Data(Vec<u8>),
}

impl std::fmt::Debug for PemSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PemSource::File(p) => write!(f, "File({})", p.display()),
            PemSource::Data(d) => write!(f, "Data({} bytes)", d.len()),
        }
    }
}

/// How the user authenticates.
#[derive(Clone, PartialEq, Eq)]
pub enum AuthSpec {
    /// Client certificate only, or nothing.
    None,
    /// A static bearer token.
    Token(String),
    /// A bearer token re-read from this file.
    TokenFile(PathBuf),
    /// HTTP basic auth.
    Basic {
        /// User name.
        username: String,
        /// Password.
        password: String,
    },
}

impl std::fmt::Debug for AuthSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthSpec::None => f.write_str("None"),
            AuthSpec::Token(_) => f.write_str("Token(<redacted>)"),
            AuthSpec::TokenFile(p) => write!(f, "TokenFile({})", p.display()),
            AuthSpec::Basic { username, .. } => write!(f, "Basic({username}, <redacted>)"),
        }
    }
}

/// The selected context, flattened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The context's name.
    pub context: String,
    /// `cluster.server`.
    pub server: String,
    /// CA (`certificate-authority-data` wins over `certificate-authority`).
    pub ca: Option<PemSource>,
    /// Client certificate.
    pub client_cert: Option<PemSource>,
    /// Client key.
    pub client_key: Option<PemSource>,
    /// `insecure-skip-tls-verify`.
    pub insecure: bool,
    /// `tls-server-name`.
    pub tls_server_name: Option<String>,
    /// `proxy-url`: an http or https URL (see [`check_proxy_url`]).
    pub proxy_url: Option<String>,
    /// User authentication.
    pub auth: AuthSpec,
    /// `context.namespace`.
    pub namespace: Option<String>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct Kubeconfig {
    clusters: Option<Vec<Named<Cluster>>>,
    users: Option<Vec<Named<User>>>,
    contexts: Option<Vec<Named<Context>>>,
    #[serde(rename = "current-context")]
    current_context: Option<String>,
}

#[derive(Deserialize)]
struct Named<T> {
    name: String,
    #[serde(alias = "cluster", alias = "user", alias = "context")]
    #[serde(rename = "item")]
    item: Option<T>,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
struct Cluster {
    server: Option<String>,
    certificate_authority: Option<String>,
    certificate_authority_data: Option<String>,
    insecure_skip_tls_verify: Option<bool>,
    tls_server_name: Option<String>,
    proxy_url: Option<String>,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
struct User {
    client_certificate: Option<String>,
    client_certificate_data: Option<String>,
    client_key: Option<String>,
    client_key_data: Option<String>,
    token: Option<String>,
    #[serde(rename = "tokenFile")]
    token_file: Option<String>,
    username: Option<String>,
    password: Option<String>,
    exec: Option<IgnoredAny>,
    auth_provider: Option<IgnoredAny>,
    #[serde(rename = "as")]
    impersonate: Option<IgnoredAny>,
    as_groups: Option<IgnoredAny>,
    as_uid: Option<IgnoredAny>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct Context {
    cluster: Option<String>,
    user: Option<String>,
    namespace: Option<String>,
}

struct Ctx<'a> {
    source: &'a str,
    base: &'a Path,
}

impl Ctx<'_> {
    fn err(&self, field: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Config {
            source: self.source.to_string(),
            field: field.into(),
            message: message.into(),
        }
    }
    fn path(&self, p: &str) -> PathBuf {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.base.join(p)
        }
    }
    fn pem(
        &self,
        field: &str,
        file: Option<String>,
        data: Option<String>,
    ) -> Result<Option<PemSource>, Error> {
        if let Some(d) = data.filter(|d| !d.trim().is_empty()) {
            let compact: String = d.split_whitespace().collect();
            return base64::engine::general_purpose::STANDARD
                .decode(compact)
                .map(|b| Some(PemSource::Data(b)))
                .map_err(|e| self.err(format!("{field}-data"), format!("not valid base64: {e}")));
        }
        Ok(file
            .filter(|f| !f.is_empty())
            .map(|f| PemSource::File(self.path(&f))))
    }
}

/// The parser's message with its line and column, and never a source
/// snippet: the lines around an error hold tokens and key data, and this
/// text ends up in logged `Error::Config` messages. The user formatter
/// names what was expected, not the offending scalar.
fn yaml_error(e: &serde_saphyr::Error) -> String {
    e.without_snippet()
        .render_with_formatter(&serde_saphyr::UserMessageFormatter)
}

/// Parse `yaml` (named `source` in errors; relative paths resolve against
/// `base_dir`) and resolve `context`, or `current-context` if `None`.
pub fn resolve(
    yaml: &str,
    source: &str,
    base_dir: &Path,
    context: Option<&str>,
) -> Result<Resolved, Error> {
    let cx = Ctx {
        source,
        base: base_dir,
    };
    let options = serde_saphyr::options! { with_snippet: false };
    let kc: Kubeconfig = serde_saphyr::from_str_with_options(yaml, options).map_err(|e| {
        cx.err(
            "(file)",
            format!("not a valid kubeconfig: {}", yaml_error(&e)),
        )
    })?;
    let sel = select(&cx, &kc, context)?;
    let (cluster, user) = (sel.cluster, sel.user);
    let server = cluster
        .server
        .clone()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            cx.err(
                format!("clusters[{}].cluster.server", sel.cluster_name),
                "missing",
            )
        })?;
    let uf = |f: &str| format!("users[{}].user.{f}", sel.user_name);
    reject_unsupported(&cx, user, &uf)?;
    Ok(Resolved {
        context: sel.name.clone(),
        server,
        ca: cx.pem(
            &format!(
                "clusters[{}].cluster.certificate-authority",
                sel.cluster_name
            ),
            cluster.certificate_authority.clone(),
            cluster.certificate_authority_data.clone(),
        )?,
        client_cert: cx.pem(
            &uf("client-certificate"),
            user.client_certificate.clone(),
            user.client_certificate_data.clone(),
        )?,
        client_key: cx.pem(
            &uf("client-key"),
            user.client_key.clone(),
            user.client_key_data.clone(),
        )?,
        insecure: cluster.insecure_skip_tls_verify.unwrap_or(false),
        tls_server_name: cluster.tls_server_name.clone().filter(|s| !s.is_empty()),
        proxy_url: match cluster.proxy_url.as_deref().filter(|s| !s.is_empty()) {
            Some(p) => {
                let field = format!("clusters[{}].cluster.proxy-url", sel.cluster_name);
                check_proxy_url(p).map_err(|m| cx.err(field, m))?;
                Some(p.to_string())
            }
            None => None,
        },
        auth: auth_spec(&cx, user, &uf)?,
        namespace: sel.namespace,
    })
}

/// The `proxy-url` schemes the transport honours: ureq's CONNECT tunnel,
/// to the proxy in plain TCP or in TLS. ureq also parses `socks4`,
/// `socks4a`, `socks5`, `socks5h` and `socks` URLs, but without its
/// `socks-proxy` feature (not enabled) it connects to the server directly,
/// bypassing the proxy without a word.
pub const PROXY_SCHEMES: &[&str] = &["http", "https"];

/// Check a `proxy-url`: a URL with one of [`PROXY_SCHEMES`] (any case) and
/// a host, that ureq accepts. The message quotes the URL only with its
/// userinfo masked (`***@`), and not at all when it does not parse.
pub fn check_proxy_url(url: &str) -> Result<(), String> {
    let supported = PROXY_SCHEMES.join(", ");
    let uri: ureq::http::Uri = url
        .parse()
        .map_err(|e| format!("not a valid URL ({e}); expected http:// or https://"))?;
    let shown = redact_userinfo(url);
    let Some(scheme) = uri.scheme_str() else {
        return Err(format!(
            "{shown:?} has no scheme; supported schemes: {supported}"
        ));
    };
    if !PROXY_SCHEMES.iter().any(|s| s.eq_ignore_ascii_case(scheme)) {
        return Err(format!(
            "scheme {scheme:?} of {shown:?} is not supported; supported schemes: {supported}"
        ));
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(format!("{shown:?} has no host"));
    }
    ureq::Proxy::new(url)
        .map(drop)
        .map_err(|e| format!("{shown:?} is not a usable proxy URL: {e}"))
}

/// The context chosen, with its cluster and user looked up.
struct Selected<'a> {
    name: String,
    cluster_name: String,
    cluster: &'a Cluster,
    user_name: String,
    user: &'a User,
    namespace: Option<String>,
}

static NO_USER: User = User {
    client_certificate: None,
    client_certificate_data: None,
    client_key: None,
    client_key_data: None,
    token: None,
    token_file: None,
    username: None,
    password: None,
    exec: None,
    auth_provider: None,
    impersonate: None,
    as_groups: None,
    as_uid: None,
};

/// Pick `context` (or `current-context`) and resolve its references.
fn select<'a>(
    cx: &Ctx<'_>,
    kc: &'a Kubeconfig,
    context: Option<&str>,
) -> Result<Selected<'a>, Error> {
    let name = match context.filter(|c| !c.is_empty()) {
        Some(c) => c.to_string(),
        None => kc
            .current_context
            .clone()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| cx.err("current-context", "not set and no context was given"))?,
    };
    let ctx = find(&kc.contexts, &name).ok_or_else(|| {
        cx.err(
            format!("contexts[{name}]"),
            format!("context {name:?} not found"),
        )
    })?;
    let cluster_name = ctx.cluster.clone().unwrap_or_default();
    let cluster = find(&kc.clusters, &cluster_name).ok_or_else(|| {
        let msg = format!("cluster {cluster_name:?} not found");
        cx.err(format!("contexts[{name}].context.cluster"), msg)
    })?;
    let user_name = ctx.user.clone().unwrap_or_default();
    let user = if user_name.is_empty() {
        &NO_USER
    } else {
        find(&kc.users, &user_name).ok_or_else(|| {
            let msg = format!("user {user_name:?} not found");
            cx.err(format!("contexts[{name}].context.user"), msg)
        })?
    };
    Ok(Selected {
        namespace: ctx.namespace.clone().filter(|s| !s.is_empty()),
        name,
        cluster_name,
        cluster,
        user_name,
        user,
    })
}

fn find<'a, T>(list: &'a Option<Vec<Named<T>>>, name: &str) -> Option<&'a T> {
    list.as_ref()?
        .iter()
        .find(|n| n.name == name)?
        .item
        .as_ref()
}

fn reject_unsupported(cx: &Ctx<'_>, u: &User, uf: &dyn Fn(&str) -> String) -> Result<(), Error> {
    let unsupported = [
        ("exec", u.exec.is_some(), "exec credential plugins are not supported; use a token, tokenFile or client certificate"),
        ("auth-provider", u.auth_provider.is_some(), "auth providers are not supported; use a token, tokenFile or client certificate"),
        ("as", u.impersonate.is_some(), "impersonation is not supported"),
        ("as-groups", u.as_groups.is_some(), "impersonation is not supported"),
        ("as-uid", u.as_uid.is_some(), "impersonation is not supported"),
    ];
    match unsupported.iter().find(|(_, present, _)| *present) {
        Some((field, _, msg)) => Err(cx.err(uf(field), *msg)),
        None => Ok(()),
    }
}

/// The user's credentials: `tokenFile`, else `token`, else
/// `username`/`password`. A token, user name or password holding a control
/// character (see [`has_control`]) is refused here, naming the field and
/// never quoting the value: sent, it fails every request (or every login).
fn auth_spec(cx: &Ctx<'_>, u: &User, uf: &dyn Fn(&str) -> String) -> Result<AuthSpec, Error> {
    let clean = |field: &str, v: &str| {
        if has_control(v) {
            let msg = "holds a control character (a line break from a YAML block scalar?)";
            Err(cx.err(uf(field), msg))
        } else {
            Ok(())
        }
    };
    if let Some(f) = u.token_file.as_deref().filter(|f| !f.is_empty()) {
        return Ok(AuthSpec::TokenFile(cx.path(f)));
    }
    if let Some(t) = u.token.as_deref().filter(|t| !t.is_empty()) {
        clean("token", t)?;
        return Ok(AuthSpec::Token(t.to_string()));
    }
    match (&u.username, &u.password) {
        (Some(user), Some(pw)) if !user.is_empty() => {
            clean("username", user)?;
            clean("password", pw)?;
            Ok(AuthSpec::Basic {
                username: user.clone(),
                password: pw.clone(),
            })
        }
        _ => Ok(AuthSpec::None),
    }
}

#[cfg(test)]
#[path = "kubeconfig_tests.rs"]
mod tests;
