//! Request authentication: static bearer token, a token file re-read
//! periodically (bound service-account tokens rotate; kubelet rewrites the
//! file), or basic auth. Client certificates live in the TLS layer.
//!
//! Must never log or `Debug`-print a token or password, and never read time
//! except through the clock it is given.

use super::error::Error;
use super::files;
use base64::Engine as _;
use endpointd_base::clock::SharedClock;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often a token file is re-read (client-go's cachingTokenSource and
/// kube-rs both use one minute).
pub const TOKEN_FILE_REFRESH: Duration = Duration::from_secs(60);

/// Authentication for every request.
#[derive(Clone)]
pub enum Auth {
    /// No `Authorization` header (client certificate or anonymous).
    None,
    /// A static bearer token.
    Bearer(Arc<str>),
    /// A bearer token read from a file and re-read every
    /// [`TOKEN_FILE_REFRESH`] and after a 401.
    TokenFile(Arc<TokenFile>),
    /// HTTP basic auth.
    Basic {
        /// User name.
        username: String,
        /// Password.
        password: Arc<str>,
    },
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::None => f.write_str("None"),
            Auth::Bearer(_) => f.write_str("Bearer(<redacted>)"),
            Auth::TokenFile(t) => write!(f, "TokenFile({})", t.path.display()),
            Auth::Basic { username, .. } => write!(f, "Basic({username}, <redacted>)"),
        }
    }
}

/// Whether `s` holds a control character (CR, LF, tab, NUL, DEL, …): an
/// HTTP header value cannot carry CR, LF or NUL (ureq fails the request,
/// which would be retried for ever), a bearer token has none, and RFC 7617
/// forbids them in basic-auth user names and passwords.
pub fn has_control(s: &str) -> bool {
    s.chars().any(char::is_control)
}

/// The token in a token file's text, trimmed of surrounding whitespace
/// (a trailing newline is usual); or why there is none, phrased to follow
/// "the token file". Never quotes the text.
pub fn token_text(raw: &str) -> Result<&str, &'static str> {
    let tok = raw.trim();
    if tok.is_empty() {
        Err("is empty")
    } else if has_control(tok) {
        Err("holds a control character inside the token (a line break?); it must hold one token")
    } else {
        Ok(tok)
    }
}

/// A token file and its cached contents.
pub struct TokenFile {
    path: PathBuf,
    cached: Mutex<Option<(Arc<str>, Instant)>>,
}

impl fmt::Debug for TokenFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenFile({})", self.path.display())
    }
}

impl TokenFile {
    /// A token file, not read yet.
    pub fn new(path: PathBuf) -> TokenFile {
        TokenFile {
            path,
            cached: Mutex::new(None),
        }
    }

    fn read(&self) -> Result<Arc<str>, Error> {
        let err = |message: String| Error::Config {
            source: self.path.display().to_string(),
            field: "tokenFile".into(),
            message,
        };
        let raw = files::read_bounded_string(&self.path, files::MAX_TOKEN_BYTES, "token file")
            .map_err(|e| err(format!("cannot read token file: {e}")))?;
        token_text(&raw)
            .map(Arc::from)
            .map_err(|why| err(format!("the token file {why}")))
    }

    /// Read the file once, as at load: `Ok` if it holds a usable token.
    /// Nothing is cached (the first request reads it again).
    pub fn check(&self) -> Result<(), Error> {
        self.read().map(drop)
    }

    /// The current token: cached for [`TOKEN_FILE_REFRESH`]. If a re-read
    /// fails but an older token is cached, the old token is kept (and a
    /// warning logged) so a briefly missing file does not stop the daemon.
    pub fn token(&self, clock: &SharedClock) -> Result<Arc<str>, Error> {
        let now = clock.now();
        let mut c = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((tok, at)) = c.as_ref() {
            if now.saturating_duration_since(*at) < TOKEN_FILE_REFRESH {
                return Ok(Arc::clone(tok));
            }
        }
        match self.read() {
            Ok(tok) => {
                *c = Some((Arc::clone(&tok), now));
                Ok(tok)
            }
            Err(e) => match c.as_ref() {
                Some((old, _)) => {
                    log::warn!("{e}; keeping the previously read token");
                    Ok(Arc::clone(old))
                }
                None => Err(e),
            },
        }
    }

    /// Forget the cached token so the next request re-reads the file.
    pub fn invalidate(&self) {
        *self.cached.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

impl Auth {
    /// The `Authorization` header value, if any.
    pub fn header(&self, clock: &SharedClock) -> Result<Option<String>, Error> {
        Ok(match self {
            Auth::None => None,
            Auth::Bearer(t) => Some(format!("Bearer {t}")),
            Auth::TokenFile(f) => Some(format!("Bearer {}", f.token(clock)?)),
            Auth::Basic { username, password } => {
                let raw = format!("{username}:{password}");
                Some(format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(raw)
                ))
            }
        })
    }

    /// After a 401: drop cached credentials. Returns whether a retry could
    /// use different credentials (only token files can change).
    pub fn refresh_after_unauthorized(&self) -> bool {
        match self {
            Auth::TokenFile(f) => {
                f.invalidate();
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use endpointd_base::clock::FakeClock;

    #[test]
    fn token_file_is_reread_after_refresh_interval_and_on_invalidate() {
        let dir = std::env::temp_dir().join(format!("endpointd-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("tmp dir");
        let path = dir.join("token");
        std::fs::write(&path, "one\n").expect("write");
        let fake = FakeClock::new();
        let clock: SharedClock = fake.clone();
        let auth = Auth::TokenFile(Arc::new(TokenFile::new(path.clone())));
        assert_eq!(
            auth.header(&clock).expect("h").as_deref(),
            Some("Bearer one")
        );
        std::fs::write(&path, "two").expect("write");
        fake.step(Duration::from_secs(59));
        assert_eq!(
            auth.header(&clock).expect("h").as_deref(),
            Some("Bearer one")
        );
        fake.step(Duration::from_secs(1));
        assert_eq!(
            auth.header(&clock).expect("h").as_deref(),
            Some("Bearer two")
        );
        std::fs::write(&path, "three").expect("write");
        assert!(auth.refresh_after_unauthorized());
        assert_eq!(
            auth.header(&clock).expect("h").as_deref(),
            Some("Bearer three")
        );
        // A vanished file keeps the last good token.
        std::fs::remove_file(&path).expect("rm");
        fake.step(Duration::from_secs(61));
        assert_eq!(
            auth.header(&clock).expect("h").as_deref(),
            Some("Bearer three")
        );
        let fresh = Auth::TokenFile(Arc::new(TokenFile::new(path)));
        let err = fresh.header(&clock).expect_err("missing file");
        assert!(
            matches!(err, Error::Config { ref field, .. } if field == "tokenFile"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_token_file_with_a_control_character_names_the_file() {
        let dir = std::env::temp_dir().join(format!("endpointd-auth-ctl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("tmp dir");
        let path = dir.join("token");
        let fake = FakeClock::new();
        let clock: SharedClock = fake.clone();
        // (file text, the token sent | None: refused)
        let cases = [
            ("tok\n", Some("tok")),
            ("\r\n tok \r\n", Some("tok")),
            ("SECRET\r\nSECRET\n", None),
            ("SECRET\nX-Injected: 1\n", None),
            ("SECRET\u{0}SECRET", None),
            ("SECRET\tSECRET", None),
        ];
        for (text, want) in cases {
            std::fs::write(&path, text).expect("write");
            let file = TokenFile::new(path.clone());
            match (file.token(&clock), want) {
                (Ok(t), Some(w)) => assert_eq!(&*t, w, "{text:?}"),
                (
                    Err(Error::Config {
                        source,
                        field,
                        message,
                    }),
                    None,
                ) => {
                    assert_eq!(source, path.display().to_string(), "{text:?}");
                    assert_eq!(field, "tokenFile");
                    assert!(message.contains("control character"), "{message}");
                    assert!(!message.contains("SECRET"), "{message}");
                    assert!(file.check().is_err(), "{text:?}");
                }
                (got, _) => panic!("{text:?}: got {got:?}"),
            }
        }
        // Rotated into a bad token: the last good one is kept.
        std::fs::write(&path, "good").expect("write");
        let auth = Auth::TokenFile(Arc::new(TokenFile::new(path.clone())));
        assert_eq!(
            auth.header(&clock).expect("h").as_deref(),
            Some("Bearer good")
        );
        std::fs::write(&path, "bad\r\nbad").expect("write");
        fake.step(TOKEN_FILE_REFRESH);
        assert_eq!(
            auth.header(&clock).expect("h").as_deref(),
            Some("Bearer good")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn debug_never_shows_secrets() {
        let cases = [
            Auth::Bearer("s3cr3t".into()),
            Auth::Basic {
                username: "u".into(),
                password: "s3cr3t".into(),
            },
        ];
        for a in cases {
            assert!(!format!("{a:?}").contains("s3cr3t"));
        }
        let clock: SharedClock = FakeClock::new();
        let b = Auth::Basic {
            username: "u".into(),
            password: "p".into(),
        };
        assert_eq!(b.header(&clock).expect("h").as_deref(), Some("Basic dTpw"));
    }
}
