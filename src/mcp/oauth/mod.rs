//! OAuth for remote MCP servers, as the MCP authorization spec lays it
//! out: a 401 names the protected-resource metadata (RFC 9728), which
//! names the authorization server, whose metadata (RFC 8414, or OpenID
//! discovery) gives the endpoints; tern registers itself where the server
//! offers dynamic registration (RFC 7591), asks with PKCE (S256) and the
//! `resource` indicator (RFC 8707), and keeps the tokens 0600 in the state
//! folder, refreshing them before they expire.
//!
//! The person finishes the sign-in in a browser; on a box without one
//! they copy the address the browser ends on (or just its code) back to
//! tern (`login`). Tokens are never logged or shown.

pub mod client;
pub mod discover;
mod login;
pub mod store;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::json::{self, Value};
use crate::obj;

pub use login::{Code, begin, machine, parse_pasted, union};
pub use store::{Store, Tokens};

/// A refresh happens when less than this is left of a token's life.
const REFRESH_MARGIN: u64 = 60;

/// What a server's definition says about signing in (`"oauth": {…}`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OauthConfig {
    /// A client registered by hand, for servers without dynamic registration.
    pub client_id: Option<String>,
    /// `clientSecret`, its `${VAR}`s expanded.
    pub client_secret: Option<String>,
    /// The loopback port of the redirect (some servers register one exact URI).
    pub callback_port: Option<u16>,
    pub scope: Option<String>,
    /// `"grant": "client_credentials"`: tern signs in as itself, no person.
    pub machine: bool,
    /// `privateKeyFile`: a PKCS#8 PEM key for `private_key_jwt`.
    pub private_key_file: Option<std::path::PathBuf>,
    /// Why this block cannot be used, said at sign-in.
    pub problem: Option<String>,
}

impl OauthConfig {
    /// Reads `"oauth"`; `env` expands `${VAR}` in the secret and the key's
    /// path. A repository's own definition (`from_project`) may not name a
    /// private key: it would have tern sign, with the user's key, whatever
    /// its server asks, so keys come only from the user's own settings.
    pub fn from_entry(
        entry: &Value,
        env: &dyn Fn(&str) -> Option<String>,
        from_project: bool,
    ) -> OauthConfig {
        let o = entry.get("oauth");
        let s = |k: &str| o.and_then(|o| o.str_field(k)).map(str::to_string);
        let mut problem = None;
        let mut expanded = |k: &str| match s(k).map(|v| super::config::expand(&v, env)) {
            Some(Ok(v)) => Some(v),
            Some(Err(e)) => {
                problem = Some(format!("\"oauth\".{k}: {e}"));
                None
            }
            None => None,
        };
        let client_secret = expanded("clientSecret");
        let private_key_file = expanded("privateKeyFile").map(std::path::PathBuf::from);
        let machine = match s("grant").as_deref() {
            None | Some("authorization_code") => false,
            Some("client_credentials") => true,
            Some(other) => {
                problem = Some(format!(
                    "\"oauth\".grant {other} is not one tern knows (authorization_code, client_credentials)"
                ));
                false
            }
        };
        if from_project && private_key_file.is_some() {
            problem = Some(
                "a repository's .mcp.json may not name a private key (\"privateKeyFile\"); \
                 define the server in your own settings or with --mcp-config"
                    .into(),
            );
        }
        OauthConfig {
            client_id: s("clientId"),
            client_secret,
            callback_port: o
                .and_then(|o| o.get("callbackPort"))
                .and_then(Value::as_i64)
                .and_then(|p| u16::try_from(p).ok()),
            scope: s("scope"),
            machine,
            private_key_file,
            problem,
        }
    }

    /// The configured key, read now.
    pub fn key(&self) -> Result<Option<client::Key>, String> {
        self.private_key_file
            .as_deref()
            .map(client::Key::from_file)
            .transpose()
    }

    /// `client_credentials` with what this block holds.
    pub fn machine_sign_in(
        &self,
        agent: &ureq::Agent,
        endpoints: &discover::Endpoints,
        server_url: &str,
    ) -> Result<Tokens, AuthError> {
        if let Some(p) = &self.problem {
            return Err(AuthError::Other(p.clone()));
        }
        let Some(client_id) = &self.client_id else {
            return Err(AuthError::Other(
                "the client_credentials grant needs \"clientId\" in \"oauth\"".into(),
            ));
        };
        let key = self.key().map_err(AuthError::Other)?;
        client::client_credentials(
            agent,
            endpoints,
            server_url,
            &client::Machine {
                client_id,
                secret: self.client_secret.as_deref(),
                key: key.as_ref(),
                scope: self.scope.as_deref(),
            },
        )
    }
}

/// The program that opens an address in the person's browser: `BROWSER`,
/// else `xdg-open` when there is a display.
#[derive(Debug, Clone, PartialEq)]
pub struct Browser(String);

impl Browser {
    pub fn from_env(get: &dyn Fn(&str) -> Option<String>) -> Option<Browser> {
        if let Some(b) = get("BROWSER").filter(|b| !b.is_empty()) {
            return Some(Browser(b));
        }
        ["DISPLAY", "WAYLAND_DISPLAY"]
            .iter()
            .any(|k| get(k).is_some_and(|v| !v.is_empty()))
            .then(|| Browser("xdg-open".into()))
    }

    pub fn open(&self, url: &str) {
        let _ = std::process::Command::new(&self.0)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
}

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Tokens {
    /// True when the access token should be renewed before use.
    pub fn stale(&self) -> bool {
        self.expires_at
            .is_some_and(|at| now() + REFRESH_MARGIN >= at)
    }

    pub fn expired(&self) -> bool {
        self.expires_at.is_some_and(|at| now() >= at)
    }
}

/// Why a token could not be had.
#[derive(Debug, Clone, PartialEq)]
pub enum AuthError {
    /// The person must sign in again (`tern mcp login`).
    Login(String),
    /// Something else went wrong on the way.
    Other(String),
}

impl std::fmt::Display for AuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthError::Login(why) | AuthError::Other(why) => f.write_str(why),
        }
    }
}

/// Renews a sign-in: the `refresh_token` grant, or, for tern's own
/// `client_credentials` tokens, that grant again (`cfg` holds the secret
/// or key, which are never kept with the tokens). The new tokens keep what
/// the answer leaves out (a server that does not rotate the refresh token
/// sends none).
pub fn refresh(agent: &ureq::Agent, old: &Tokens, cfg: &OauthConfig) -> Result<Tokens, AuthError> {
    if old.grant.as_deref() == Some("client_credentials") && old.refresh_token.is_none() {
        let endpoints = discover::Endpoints {
            authorize: String::new(),
            token: old.token_endpoint.clone(),
            register: None,
            resource: old
                .resource
                .clone()
                .unwrap_or_else(|| old.server_url.clone()),
            scope: old.scope.clone(),
            issuer: old.issuer.clone().unwrap_or_default(),
            auth_methods: old.auth_method.iter().cloned().collect(),
        };
        return cfg.machine_sign_in(agent, &endpoints, &old.server_url);
    }
    let Some(refresh_token) = &old.refresh_token else {
        return Err(AuthError::Login("the sign-in has expired".into()));
    };
    let mut form = vec![
        ("grant_type".to_string(), "refresh_token".to_string()),
        ("refresh_token".into(), refresh_token.clone()),
    ];
    if let Some(r) = &old.resource {
        form.push(("resource".into(), r.clone()));
    }
    let key = match old.auth_method.as_deref() {
        Some("private_key_jwt") => cfg.key().map_err(AuthError::Other)?,
        _ => None,
    };
    let creds = client::Credentials {
        id: &old.client_id,
        secret: old.client_secret.as_deref(),
        // Tokens kept before the method was recorded were sent by post.
        method: old
            .auth_method
            .as_deref()
            .and_then(client::Method::parse)
            .unwrap_or(if old.client_secret.is_some() {
                client::Method::Post
            } else {
                client::Method::None
            }),
        key: key.as_ref(),
        audience: old.issuer.as_deref().unwrap_or(&old.token_endpoint),
    };
    match token_request(agent, &old.token_endpoint, form, &creds) {
        Ok(answer) => Ok(tokens_from(&answer, old)),
        Err(TokenError::Refused(why)) => Err(AuthError::Login(format!(
            "the authorization server refused to renew the sign-in ({why})"
        ))),
        Err(TokenError::Other(why)) => Err(AuthError::Other(why)),
    }
}

enum TokenError {
    /// An OAuth error answer (`invalid_grant` and the like).
    Refused(String),
    Other(String),
}

/// A token request, the client's proof added as `creds` says. A 200
/// whose body is not a JSON object with a string `access_token` (of type
/// Bearer, when it says) is an error, and nothing of it is kept.
fn token_request(
    agent: &ureq::Agent,
    endpoint: &str,
    mut form: Vec<(String, String)>,
    creds: &client::Credentials<'_>,
) -> Result<Value, TokenError> {
    let authorization = creds.apply(&mut form).map_err(TokenError::Other)?;
    let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let body = form_encode(&pairs);
    let mut request = agent
        .post(endpoint)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json");
    if let Some(a) = authorization {
        request = request.header("authorization", a);
    }
    let response = request
        .send(body.as_bytes())
        .map_err(|e| TokenError::Other(format!("cannot reach {endpoint}: {e}")))?;
    let status = response.status().as_u16();
    let text = read_small(response.into_body())
        .map_err(|e| TokenError::Other(format!("{endpoint}: {e}")))?;
    let value = json::parse(&text).ok();
    if status == 200 {
        let Some(v) = value.filter(|v| v.as_object().is_some()) else {
            return Err(TokenError::Other(format!(
                "{endpoint} answered with something that is not a JSON token response"
            )));
        };
        if v.str_field("access_token").is_none_or(str::is_empty) {
            return Err(TokenError::Other(format!(
                "{endpoint} answered without an access token"
            )));
        }
        if let Some(kind) = v.str_field("token_type")
            && !kind.eq_ignore_ascii_case("bearer")
        {
            return Err(TokenError::Other(format!(
                "{endpoint} gave a token of type {}, not Bearer",
                clean(kind)
            )));
        }
        return Ok(v);
    }
    // The error's own words, never the request (it holds the secrets).
    let why = value
        .map(|v| {
            let code = v.str_field("error").unwrap_or("error").to_string();
            match v.str_field("error_description") {
                Some(d) => format!("{code}: {}", clean(d)),
                None => code,
            }
        })
        .unwrap_or_else(|| format!("HTTP {status}"));
    if (400..500).contains(&status) {
        Err(TokenError::Refused(why))
    } else {
        Err(TokenError::Other(format!("{endpoint}: {why}")))
    }
}

fn tokens_from(answer: &Value, old: &Tokens) -> Tokens {
    let s = |k: &str| answer.str_field(k).map(str::to_string);
    Tokens {
        access_token: s("access_token").unwrap_or_default(),
        refresh_token: s("refresh_token").or_else(|| old.refresh_token.clone()),
        expires_at: answer
            .get("expires_in")
            .and_then(Value::as_i64)
            .and_then(|n| u64::try_from(n).ok())
            .map(|secs| now() + secs),
        scope: s("scope").or_else(|| old.scope.clone()),
        ..old.clone()
    }
}

/// A server's words, without control characters and bounded.
fn clean(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(300).collect()
}

fn read_small(body: ureq::Body) -> Result<String, String> {
    let mut text = String::new();
    let mut limited = std::io::Read::take(body.into_reader(), 1024 * 1024);
    std::io::Read::read_to_string(&mut limited, &mut text)
        .map_err(|e| format!("the answer broke off: {e}"))?;
    Ok(text)
}

/// GET a JSON document (metadata), at most 1 MiB.
fn get_json(agent: &ureq::Agent, url: &str) -> Result<Option<Value>, String> {
    let response = match agent
        .get(url)
        .header("accept", "application/json")
        .header("mcp-protocol-version", super::VERSIONS[0])
        .call()
    {
        Ok(r) => r,
        Err(e) => return Err(format!("cannot reach {url}: {e}")),
    };
    if response.status().as_u16() != 200 {
        return Ok(None);
    }
    let text = read_small(response.into_body())?;
    Ok(json::parse(&text).ok().filter(|v| v.as_object().is_some()))
}

/// `application/x-www-form-urlencoded`, also used for query strings.
/// One value, form-encoded (the parts of HTTP Basic, RFC 6749 §2.3.1).
fn form_encode_one(text: &str) -> String {
    let mut out = String::new();
    percent(text, &mut out);
    out
}

pub fn form_encode(pairs: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        percent(k, &mut out);
        out.push('=');
        percent(v, &mut out);
    }
    out
}

fn percent(text: &str, out: &mut String) {
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

/// The values of a query string, decoded.
pub fn query_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (unpercent(k), unpercent(v))
        })
        .collect()
}

fn unpercent(text: &str) -> String {
    let bytes = text.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Unguessable text for PKCE verifiers and `state` (base64url of 32
/// bytes from the kernel).
fn random_token() -> Result<String, String> {
    use base64::Engine as _;
    let mut bytes = [0u8; 32];
    if !crate::sys::random_bytes(&mut bytes) {
        return Err("the kernel gave no random bytes (getrandom failed)".into());
    }
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// The S256 code challenge of a verifier (RFC 7636).
fn challenge(verifier: &str) -> String {
    use base64::Engine as _;
    let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref())
}

/// A client registered by dynamic registration.
pub(crate) struct Registered {
    pub id: String,
    pub secret: Option<String>,
    /// The answer's `token_endpoint_auth_method`.
    pub method: Option<String>,
}

/// Registers tern with the authorization server (RFC 7591), asking for
/// the token endpoint auth method the server's metadata allows.
fn register(
    agent: &ureq::Agent,
    endpoint: &str,
    redirect: &str,
    supported: &[String],
) -> Result<Registered, String> {
    let body = obj! {
        "client_name" => "tern",
        "redirect_uris" => vec![Value::from(redirect)],
        "grant_types" => vec![Value::from("authorization_code"), Value::from("refresh_token")],
        "response_types" => vec![Value::from("code")],
        "token_endpoint_auth_method" => client::to_register(supported),
    };
    let response = agent
        .post(endpoint)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .send(body.to_json().as_bytes())
        .map_err(|e| format!("cannot reach the registration endpoint {endpoint}: {e}"))?;
    let status = response.status().as_u16();
    let text = read_small(response.into_body())?;
    let answer = json::parse(&text).ok();
    match answer.as_ref().and_then(|a| a.str_field("client_id")) {
        Some(id) if status / 100 == 2 => Ok(Registered {
            id: id.to_string(),
            secret: answer
                .as_ref()
                .and_then(|a| a.str_field("client_secret"))
                .map(str::to_string),
            method: client::registered_method(answer.as_ref()),
        }),
        _ => Err(format!(
            "the authorization server refused to register tern (HTTP {status}{})",
            answer
                .as_ref()
                .and_then(|a| a.str_field("error_description").or(a.str_field("error")))
                .map(|d| format!(": {}", clean(d)))
                .unwrap_or_default()
        )),
    }
}

/// How long the person has to finish signing in.
pub const LOGIN_TIME: Duration = Duration::from_secs(600);

#[cfg(test)]
mod tests;
