//! Table tests for kubeconfig parsing and context resolution.

use super::*;

const BASE: &str = r#"
apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: c1
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority: pki/ca.crt
- name: c2
  cluster:
    server: https://k3s.local:6443
    certificate-authority-data: LS0tLS1CRUdJTg==
    certificate-authority: /ignored/because/data/wins
    insecure-skip-tls-verify: true
    tls-server-name: kubernetes.default
    proxy-url: http://proxy:3128
users:
- name: tok
  user:
    token: abc
- name: tokfile
  user:
    tokenFile: secrets/token
- name: kebab
  user:
    token-file: /not/a/real/field
- name: cert
  user:
    client-certificate: /etc/k/client.crt
    client-key-data: a2V5
- name: execu
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: aws
- name: provider
  user:
    auth-provider:
      name: oidc
- name: basic
  user:
    username: admin
    password: pw
contexts:
- name: dev
  context: {cluster: c1, user: tok, namespace: shop}
- name: files
  context: {cluster: c1, user: tokfile}
- name: kebab
  context: {cluster: c1, user: kebab}
- name: certs
  context: {cluster: c2, user: cert}
- name: exec
  context: {cluster: c1, user: execu}
- name: provider
  context: {cluster: c1, user: provider}
- name: basic
  context: {cluster: c1, user: basic}
- name: nocluster
  context: {cluster: missing, user: tok}
- name: anon
  context: {cluster: c1}
- name: ghost
  context: {cluster: c1, user: ghost}
"#;

fn base() -> &'static Path {
    Path::new("/home/u/.kube")
}

#[test]
fn resolution_table() {
    type Check = fn(&Resolved);
    let cases: Vec<(Option<&str>, Check)> = vec![
        (None, |r| {
            assert_eq!(r.context, "dev");
            assert_eq!(r.server, "https://10.0.0.1:6443");
            assert_eq!(
                r.ca,
                Some(PemSource::File("/home/u/.kube/pki/ca.crt".into()))
            );
            assert_eq!(r.auth, AuthSpec::Token("abc".into()));
            assert_eq!(r.namespace.as_deref(), Some("shop"));
            assert!(!r.insecure);
        }),
        (Some("files"), |r| {
            assert_eq!(
                r.auth,
                AuthSpec::TokenFile("/home/u/.kube/secrets/token".into())
            );
            assert_eq!(r.namespace, None);
        }),
        // `token-file` is not a kubeconfig field; only camelCase `tokenFile` is.
        (Some("kebab"), |r| assert_eq!(r.auth, AuthSpec::None)),
        (Some("certs"), |r| {
            assert_eq!(r.ca, Some(PemSource::Data(b"-----BEGIN".to_vec())));
            assert_eq!(
                r.client_cert,
                Some(PemSource::File("/etc/k/client.crt".into()))
            );
            assert_eq!(r.client_key, Some(PemSource::Data(b"key".to_vec())));
            assert!(r.insecure);
            assert_eq!(r.tls_server_name.as_deref(), Some("kubernetes.default"));
            assert_eq!(r.proxy_url.as_deref(), Some("http://proxy:3128"));
            assert_eq!(r.auth, AuthSpec::None);
        }),
        (Some("basic"), |r| {
            assert_eq!(
                r.auth,
                AuthSpec::Basic {
                    username: "admin".into(),
                    password: "pw".into()
                }
            );
            assert!(!format!("{:?}", r.auth).contains("pw"), "password redacted");
        }),
        (Some("anon"), |r| assert_eq!(r.auth, AuthSpec::None)),
    ];
    for (ctx, check) in cases {
        let r = resolve(BASE, "kc", base(), ctx).unwrap_or_else(|e| panic!("{ctx:?}: {e}"));
        check(&r);
    }
}

#[test]
fn error_table_names_the_field() {
    let no_current = BASE.replace("current-context: dev", "");
    let bad_b64 = BASE.replace("client-key-data: a2V5", "client-key-data: '***'");
    let cases: Vec<(&str, Option<&str>, &str, &str)> = vec![
        // (yaml, context, field, message fragment)
        (
            BASE,
            Some("exec"),
            "users[execu].user.exec",
            "exec credential plugins are not supported",
        ),
        (
            BASE,
            Some("provider"),
            "users[provider].user.auth-provider",
            "auth providers are not supported",
        ),
        (
            BASE,
            Some("prod"),
            "contexts[prod]",
            "context \"prod\" not found",
        ),
        (
            BASE,
            Some("nocluster"),
            "contexts[nocluster].context.cluster",
            "cluster \"missing\" not found",
        ),
        (
            BASE,
            Some("ghost"),
            "contexts[ghost].context.user",
            "user \"ghost\" not found",
        ),
        (&no_current, None, "current-context", "not set"),
        (
            &bad_b64,
            Some("certs"),
            "users[cert].user.client-key-data",
            "not valid base64",
        ),
        (
            "clusters: [unclosed",
            None,
            "(file)",
            "not a valid kubeconfig",
        ),
    ];
    for (yaml, ctx, field, msg) in cases {
        match resolve(yaml, "kc", base(), ctx) {
            Err(Error::Config {
                source,
                field: f,
                message,
            }) => {
                assert_eq!(source, "kc");
                assert_eq!(f, field, "{ctx:?}");
                assert!(message.contains(msg), "{ctx:?}: {message}");
            }
            other => panic!("{ctx:?}: expected a config error, got {other:?}"),
        }
    }
}

#[test]
fn json_kubeconfig_is_accepted() {
    let json = r#"{"current-context":"x","clusters":[{"name":"c","cluster":{"server":"http://127.0.0.1:8080"}}],
                   "contexts":[{"name":"x","context":{"cluster":"c"}}],"users":null}"#;
    let r = resolve(json, "kc.json", base(), None).expect("json kubeconfig");
    assert_eq!(r.server, "http://127.0.0.1:8080");
}

#[test]
fn yaml_errors_do_not_quote_neighbouring_secrets() {
    // serde-saphyr's default error text carries a source snippet (the
    // lines around the error), which would put the token into a logged
    // Error::Config message.
    let cases = [
        // duplicate key
        "users:\n- name: u\n  user:\n    token: SUPERSECRETTOKEN\n    token: x\n",
        // syntax error
        "users:\n- name: u\n  user:\n    token: SUPERSECRETTOKEN\n\tbad: [\n",
        // bad type
        "users:\n- name: u\n  user:\n    token: SUPERSECRETTOKEN\n    username: [1]\n",
        "users:\n- name: u\n  user:\n    token: [SUPERSECRETTOKEN]\n",
        "clusters:\n- name: c\n  cluster:\n    insecure-skip-tls-verify: SUPERSECRETTOKEN\n",
    ];
    for yaml in cases {
        let Err(e) = resolve(yaml, "kc", Path::new("/"), None) else {
            panic!("{yaml:?} parsed");
        };
        let text = format!("{e} {e:?}");
        assert!(!text.contains("SUPERSECRETTOKEN"), "{yaml:?}: {text}");
        assert!(text.contains("line "), "{yaml:?}: {text}");
    }
}

#[test]
fn proxy_url_must_be_http_or_https() {
    // (proxy-url, None = accepted | Some(fragments the error must hold))
    let cases: Vec<(&str, Option<&[&str]>)> = vec![
        ("http://proxy:3128", None),
        ("https://u:pw@proxy.example:8443", None),
        ("HTTP://proxy:3128/", None),
        // ureq parses these, then connects directly without the feature.
        (
            "socks5://puser:PASS@127.0.0.1:1",
            Some(&[
                "scheme \"socks5\"",
                "socks5://***@127.0.0.1:1",
                "http, https",
            ]),
        ),
        (
            "socks5h://proxy:1080",
            Some(&["scheme \"socks5h\"", "http, https"]),
        ),
        (
            "socks://proxy:1080",
            Some(&["scheme \"socks\"", "http, https"]),
        ),
        ("ftp://proxy:21", Some(&["scheme \"ftp\"", "http, https"])),
        ("proxy:3128", Some(&["supported schemes: http, https"])),
        ("http://pr oxy:3128", Some(&["not a valid URL"])),
        ("http://u:PASS word@proxy:3128", Some(&["not a valid URL"])),
        ("http:///path", Some(&["not a valid URL"])),
    ];
    for (url, want) in cases {
        let yaml = BASE.replace(
            "proxy-url: http://proxy:3128",
            &format!("proxy-url: '{url}'"),
        );
        match (resolve(&yaml, "kc", base(), Some("certs")), want) {
            (Ok(r), None) => assert_eq!(r.proxy_url.as_deref(), Some(url)),
            (Err(Error::Config { field, message, .. }), Some(fragments)) => {
                assert_eq!(field, "clusters[c2].cluster.proxy-url", "{url}");
                for f in fragments {
                    assert!(message.contains(f), "{url}: {message}");
                }
                assert!(!message.contains("PASS"), "{url}: {message}");
            }
            (got, _) => panic!("{url}: got {got:?}, wanted {want:?}"),
        }
    }
}

#[test]
fn credentials_with_control_characters_are_refused_naming_the_field() {
    // (user entry, field named) — each value holds SECRET around the
    // control character, which the error must never quote.
    let cases = [
        ("{token: \"SECRET\\r\\nSECRET\"}", "token"),
        ("{token: \"SECRET\\nX-Injected: 1\"}", "token"),
        ("{token: \"SECRET\\n\"}", "token"),
        ("{token: \"SECRET\\u0000\"}", "token"),
        ("{token: \"SECRET\\tSECRET\"}", "token"),
        ("{token: \"SECRET\\u007f\"}", "token"),
        ("{username: \"adm\\nin\", password: SECRET}", "username"),
        ("{username: admin, password: \"SECRET\\r\\n\"}", "password"),
    ];
    for (user, field) in cases {
        let yaml = format!(
            "current-context: x\nclusters: [{{name: c, cluster: {{server: 'https://h:6443'}}}}]\n\
             users: [{{name: u, user: {user}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\n"
        );
        match resolve(&yaml, "kc", base(), None) {
            Err(Error::Config {
                field: f, message, ..
            }) => {
                assert_eq!(f, format!("users[u].user.{field}"), "{user}");
                assert!(message.contains("control character"), "{user}: {message}");
                assert!(!message.contains("SECRET"), "{user}: {message}");
            }
            other => panic!("{user}: expected a config error, got {other:?}"),
        }
    }
    // Printable tokens, and a user name and password with spaces, pass.
    let ok = BASE.replace("token: abc", "token: 'abc.DEF-_~+/='");
    let r = resolve(&ok, "kc", base(), None).expect("printable token");
    assert_eq!(r.auth, AuthSpec::Token("abc.DEF-_~+/=".into()));
    let ok = BASE.replace("password: pw", "password: 'p w'");
    assert!(resolve(&ok, "kc", base(), Some("basic")).is_ok());
}
