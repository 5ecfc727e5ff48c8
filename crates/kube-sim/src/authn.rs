//! Authentication: which user and groups a request comes from — kube-sim's
//! client certificate, its admin `--token`, or a user of a static token
//! file (`--token-auth-file`, kube-apiserver's format
//! `token,user,uid,"group1,group2"`).
//!
//! Pure apart from comparing secrets. It never logs, prints or puts a token
//! into an error message or a `Debug` output; it does not authorize.

use super::rbac::{UserInfo, MASTERS};

/// Every authenticated user is in this group.
pub const AUTHENTICATED: &str = "system:authenticated";
/// The name kube-sim gives the holder of its admin `--token`.
pub const ADMIN_TOKEN_USER: &str = "token-user";

/// A token and the user it authenticates. `Debug` redacts the token.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenUser {
    /// The bearer token.
    pub token: String,
    /// The user it stands for.
    pub user: UserInfo,
}

impl std::fmt::Debug for TokenUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenUser")
            .field("token", &"<redacted>")
            .field("user", &self.user)
            .finish()
    }
}

/// The groups of `name`: those given, `system:authenticated`, and for a
/// ServiceAccount (`system:serviceaccount:NS:NAME`) the groups its token
/// authenticator adds: `system:serviceaccounts`, `system:serviceaccounts:NS`.
pub fn user_with_groups(name: &str, groups: &[&str]) -> UserInfo {
    let mut u = UserInfo::new(name, groups);
    if let Some(ns) = name
        .strip_prefix("system:serviceaccount:")
        .and_then(|r| r.split_once(':'))
        .map(|(ns, _)| ns)
    {
        for g in [
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{ns}"),
        ] {
            if !u.in_group(&g) {
                u.groups.push(g);
            }
        }
    }
    if !u.in_group(AUTHENTICATED) {
        u.groups.push(AUTHENTICATED.to_string());
    }
    u
}

/// Split one CSV line (fields optionally in double quotes, `""` inside
/// quotes for a quote).
fn csv_fields(line: &str) -> Result<Vec<String>, &'static str> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let cur = out.last_mut().ok_or("empty")?;
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            ('"', true) => quoted = false,
            ('"', false) if cur.is_empty() => quoted = true,
            (',', false) => out.push(String::new()),
            (c, _) => cur.push(c),
        }
    }
    match quoted {
        true => Err("unterminated quote"),
        false => Ok(out),
    }
}

/// Why a static token file does not parse. Names the line, never its token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenFileError {
    /// A line whose quoting is broken.
    Quote {
        /// 1-based line number.
        line: usize,
        /// What is wrong with the quoting.
        reason: &'static str,
    },
    /// A line without a token, user and uid.
    Fields {
        /// 1-based line number.
        line: usize,
    },
}

impl std::fmt::Display for TokenFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenFileError::Quote { line, reason } => write!(f, "line {line}: {reason}"),
            TokenFileError::Fields { line } => {
                write!(f, "line {line}: want token,user,uid[,\"group1,group2\"]")
            }
        }
    }
}

impl std::error::Error for TokenFileError {}

/// Parse a static token file: one `token,user,uid[,"group1,group2"]` per
/// line; blank lines and `#` comments skipped. Errors name the line, never
/// its token.
pub fn parse_token_file(text: &str) -> Result<Vec<TokenUser>, TokenFileError> {
    let mut users = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f = csv_fields(line).map_err(|reason| TokenFileError::Quote {
            line: i + 1,
            reason,
        })?;
        if f.len() < 3 || f[0].trim().is_empty() || f[1].trim().is_empty() {
            return Err(TokenFileError::Fields { line: i + 1 });
        }
        let groups: Vec<&str> = f
            .get(3)
            .map(|g| {
                g.split(',')
                    .map(str::trim)
                    .filter(|g| !g.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        users.push(TokenUser {
            token: f[0].trim().to_string(),
            user: user_with_groups(f[1].trim(), &groups),
        });
    }
    Ok(users)
}

/// Compare without an early exit on the first differing byte.
pub fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The credentials kube-sim accepts.
#[derive(Debug, Clone, Default)]
pub struct Authenticator {
    /// The admin token (`--token`): user `token-user` in `system:masters`.
    pub admin_token: Option<String>,
    /// Users of the static token file.
    pub users: Vec<TokenUser>,
    /// Whether a credential is required (a token configured or TLS on).
    pub required: bool,
}

impl Authenticator {
    /// The user of a request with this client certificate CN and
    /// `Authorization` header; `None` when a credential is required and
    /// none is valid. kube-sim's only client certificate is in
    /// `system:masters`. A bearer token that matches none of the configured
    /// ones is refused. Without required credentials, a request without one
    /// is `system:anonymous` (`token-user` if it sends a token while none is
    /// configured) in `system:unauthenticated`.
    pub fn authenticate(&self, client_cn: Option<&str>, auth: Option<&str>) -> Option<UserInfo> {
        if let Some(cn) = client_cn {
            return Some(user_with_groups(cn, &[MASTERS]));
        }
        let bearer = auth
            .map(|a| {
                a.strip_prefix("Bearer ")
                    .or_else(|| a.strip_prefix("bearer "))
                    .unwrap_or("")
                    .trim()
            })
            .filter(|t| !t.is_empty());
        if let Some(got) = bearer {
            if let Some(want) = &self.admin_token {
                if same_secret(got.as_bytes(), want.as_bytes()) {
                    return Some(user_with_groups(ADMIN_TOKEN_USER, &[MASTERS]));
                }
            }
            // Every entry is compared (no early exit on a match).
            let found = self.users.iter().fold(None, |acc, u| {
                match same_secret(got.as_bytes(), u.token.as_bytes()) {
                    true => Some(u),
                    false => acc,
                }
            });
            if let Some(u) = found {
                return Some(u.user.clone());
            }
        }
        // A bearer token that matches no configured one is refused (401), as
        // kube-apiserver refuses it even where anonymous requests are allowed.
        let invalid_token =
            bearer.is_some() && (self.admin_token.is_some() || !self.users.is_empty());
        let name = match (self.required || invalid_token, auth.is_some()) {
            (true, _) => return None,
            (false, true) => ADMIN_TOKEN_USER,
            (false, false) => "system:anonymous",
        };
        Some(UserInfo::new(name, &["system:unauthenticated"]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_file_lines_and_groups() {
        let text = "# comment\n\ns3cret,system:serviceaccount:kube-system:endpointd,uid1\n\
                    t2,alice,uid2,\"dev,ops\"\n";
        let users = parse_token_file(text).expect("parse");
        assert_eq!(users.len(), 2);
        assert_eq!(
            users[0].user.groups,
            vec![
                "system:serviceaccounts",
                "system:serviceaccounts:kube-system",
                "system:authenticated"
            ]
        );
        assert_eq!(users[1].user.groups, vec!["dev", "ops", AUTHENTICATED]);
        for bad in ["onlyqq9", "qq9,,uid", "qq9,user,uid,\"open"] {
            let e = parse_token_file(bad).expect_err(bad).to_string();
            assert!(e.contains("line 1") && !e.contains("qq9"), "{e}");
        }
        assert!(!format!("{:?}", users[0]).contains("s3cret"));
    }

    #[test]
    fn authenticate_table() {
        let a = Authenticator {
            admin_token: Some("admin".into()),
            users: parse_token_file("sa-token,system:serviceaccount:ns:sa,1\n").expect("parse"),
            required: true,
        };
        let name = |cn: Option<&str>, h: Option<&str>| a.authenticate(cn, h).map(|u| u.name);
        assert_eq!(name(Some("endpointd"), None).as_deref(), Some("endpointd"));
        assert_eq!(
            name(None, Some("Bearer admin")).as_deref(),
            Some("token-user")
        );
        assert_eq!(
            name(None, Some("Bearer sa-token")).as_deref(),
            Some("system:serviceaccount:ns:sa")
        );
        assert_eq!(name(None, Some("Bearer wrong")), None);
        assert_eq!(name(None, None), None);
        let sa = a.authenticate(None, Some("Bearer sa-token")).expect("sa");
        assert!(!sa.in_group(MASTERS));
        let open = Authenticator::default();
        assert!(open.authenticate(None, None).is_some());
        // Credentials not required, but tokens configured: a wrong one is
        // refused (kube-apiserver's 401), not taken for anonymous.
        let users_only = Authenticator {
            required: false,
            ..a
        };
        assert_eq!(
            users_only
                .authenticate(None, Some("Bearer wrong"))
                .map(|u| u.name),
            None
        );
        assert_eq!(
            users_only
                .authenticate(None, None)
                .map(|u| u.name)
                .as_deref(),
            Some("system:anonymous")
        );
    }
}
