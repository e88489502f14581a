//! Where a server's tokens live: one JSON file per server and URL in
//! `<state>/mcp-auth/`, the folder 0700 and each file 0600, written
//! whole (a temporary file renamed over the old one) so a crash never
//! leaves half a token.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use crate::json::{self, Value};
use crate::obj;

/// What a sign-in left: the tokens, and what renewing them needs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tokens {
    pub access_token: String,
    pub refresh_token: Option<String>,
    /// Seconds since the epoch.
    pub expires_at: Option<u64>,
    pub token_endpoint: String,
    pub client_id: String,
    pub client_secret: Option<String>,
    /// The resource indicator the tokens were asked for.
    pub resource: Option<String>,
    pub scope: Option<String>,
    /// The server URL they belong to (a changed URL needs a new sign-in).
    pub server_url: String,
    /// How tern shows who it is at the token endpoint (`client_secret_basic`…).
    pub auth_method: Option<String>,
    /// The authorization server's issuer (the audience of an assertion).
    pub issuer: Option<String>,
    /// `client_credentials` for tern's own tokens; else a person's sign-in.
    pub grant: Option<String>,
    /// Scopes a server asked for that these tokens lack: the next
    /// `tern mcp login` asks for them too.
    pub wants_scope: Option<String>,
}

impl Tokens {
    fn to_value(&self) -> Value {
        let mut v = obj! {
            "server_url" => self.server_url.as_str(),
            "access_token" => self.access_token.as_str(),
            "token_endpoint" => self.token_endpoint.as_str(),
            "client_id" => self.client_id.as_str(),
        };
        if let Some(m) = v.as_object_mut() {
            let mut opt = |k: &str, val: &Option<String>| {
                if let Some(x) = val {
                    m.insert(k, x.as_str());
                }
            };
            opt("refresh_token", &self.refresh_token);
            opt("client_secret", &self.client_secret);
            opt("resource", &self.resource);
            opt("scope", &self.scope);
            opt("auth_method", &self.auth_method);
            opt("issuer", &self.issuer);
            opt("grant", &self.grant);
            opt("wants_scope", &self.wants_scope);
            if let Some(at) = self.expires_at {
                m.insert("expires_at", i64::try_from(at).unwrap_or(i64::MAX));
            }
        }
        v
    }

    fn from_value(v: &Value) -> Option<Tokens> {
        let s = |k: &str| v.str_field(k).map(str::to_string);
        Some(Tokens {
            access_token: s("access_token")?,
            refresh_token: s("refresh_token"),
            expires_at: v
                .get("expires_at")
                .and_then(Value::as_i64)
                .and_then(|n| u64::try_from(n).ok()),
            token_endpoint: s("token_endpoint")?,
            client_id: s("client_id")?,
            client_secret: s("client_secret"),
            resource: s("resource"),
            scope: s("scope"),
            server_url: s("server_url")?,
            auth_method: s("auth_method"),
            issuer: s("issuer"),
            grant: s("grant"),
            wants_scope: s("wants_scope"),
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// `<root>/mcp-auth`, where root is tern's state folder (TERN_HOME,
    /// XDG_DATA_HOME/tern or ~/.local/share/tern).
    pub fn new(root: &Path) -> Store {
        Store {
            dir: root.join("mcp-auth"),
        }
    }

    /// The file of one server: its name, kept readable, and a hash of its
    /// URL, so two servers of one name in different projects do not share.
    pub fn path(&self, name: &str, url: &str) -> PathBuf {
        let safe: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(60)
            .collect();
        let hash = url.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        self.dir.join(format!("{safe}-{hash:016x}.json"))
    }

    /// The tokens kept for this server, if any (and only if they were
    /// asked for this very URL).
    pub fn load(&self, name: &str, url: &str) -> Option<Tokens> {
        let text = std::fs::read_to_string(self.path(name, url)).ok()?;
        let tokens = Tokens::from_value(&json::parse(&text).ok()?)?;
        (tokens.server_url == url).then_some(tokens)
    }

    pub fn save(&self, name: &str, tokens: &Tokens) -> std::io::Result<PathBuf> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        let path = self.path(name, &tokens.server_url);
        crate::sys::write_private(&path, tokens.to_value().to_json().as_bytes())?;
        Ok(path)
    }

    /// Forgets the server's tokens; true if there were any.
    pub fn delete(&self, name: &str, url: &str) -> std::io::Result<bool> {
        match std::fs::remove_file(self.path(name, url)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}
