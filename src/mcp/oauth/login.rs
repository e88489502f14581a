//! Signing in: the authorization request with PKCE, and the two ways the
//! code comes back — the browser is sent to a listener on this machine's
//! loopback, or, on a box whose browser is elsewhere, the person pastes
//! the address the browser ended on (or the bare code).

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::sync::mpsc::Sender;

use super::discover::{self, Endpoints};
use super::{OauthConfig, TokenError, Tokens, client};
use crate::obj;

/// A sign-in waiting for its code.
pub struct Pending {
    /// Where the person signs in.
    pub url: String,
    pub redirect: String,
    listener: Option<TcpListener>,
    state: String,
    verifier: String,
    endpoints: Endpoints,
    client_id: String,
    client_secret: Option<String>,
    method: client::Method,
    server_url: String,
}

/// A code (and the `state` it came with, when it came by redirect).
pub type Code = Result<(String, Option<String>), String>;

/// The scopes of `a` and `b` together, each once, in order.
pub fn union(a: Option<&str>, b: Option<&str>) -> Option<String> {
    let mut all: Vec<&str> = Vec::new();
    for s in a.into_iter().chain(b).flat_map(str::split_whitespace) {
        if !all.contains(&s) {
            all.push(s);
        }
    }
    (!all.is_empty()).then(|| all.join(" "))
}

/// Asks the server what it needs (unless its `challenge` is at hand),
/// registers tern where it can, and prepares the authorization request;
/// `more_scope` is asked for beside what the server names (a step-up).
pub fn begin(
    agent: &ureq::Agent,
    server_url: &str,
    cfg: &OauthConfig,
    challenge: Option<String>,
    more_scope: Option<&str>,
) -> Result<Pending, String> {
    if let Some(p) = &cfg.problem {
        return Err(p.clone());
    }
    let challenge = match challenge {
        Some(c) => Some(c),
        None => probe(agent, server_url)?,
    };
    let mut endpoints = discover::endpoints(
        agent,
        server_url,
        challenge.as_deref(),
        cfg.scope.as_deref(),
    )?;
    endpoints.scope = union(endpoints.scope.as_deref(), more_scope);
    let listener = TcpListener::bind(("127.0.0.1", cfg.callback_port.unwrap_or(0)))
        .map_err(|e| format!("cannot listen on 127.0.0.1 for the sign-in's redirect: {e}"))?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("the redirect listener has no address: {e}"))?
        .port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let (client_id, client_secret, registered) = match (&cfg.client_id, &endpoints.register) {
        (Some(id), _) => (id.clone(), cfg.client_secret.clone(), None),
        (None, Some(endpoint)) => {
            let r = super::register(agent, endpoint, &redirect, &endpoints.auth_methods)?;
            (r.id, r.secret, r.method)
        }
        (None, None) => {
            return Err(
                "the authorization server offers no dynamic registration; register a client \
                 there and give its id as \"oauth\": {\"clientId\": …} in the server's definition"
                    .into(),
            );
        }
    };
    let method = client::choose(
        registered.as_deref(),
        &endpoints.auth_methods,
        client_secret.is_some(),
        false,
    );
    let state = super::random_token()?;
    let verifier = super::random_token()?;
    let mut query = vec![
        ("response_type", "code"),
        ("client_id", client_id.as_str()),
        ("redirect_uri", redirect.as_str()),
        ("code_challenge_method", "S256"),
        ("state", state.as_str()),
        ("resource", endpoints.resource.as_str()),
    ];
    let challenge = super::challenge(&verifier);
    query.push(("code_challenge", challenge.as_str()));
    if let Some(scope) = &endpoints.scope {
        query.push(("scope", scope.as_str()));
    }
    let sep = if endpoints.authorize.contains('?') {
        '&'
    } else {
        '?'
    };
    let url = format!("{}{sep}{}", endpoints.authorize, super::form_encode(&query));
    Ok(Pending {
        url,
        redirect,
        listener: Some(listener),
        state,
        verifier,
        endpoints,
        client_id,
        client_secret,
        method,
        server_url: server_url.to_string(),
    })
}

/// `tern mcp login` for a server configured for `client_credentials`:
/// the tokens straight from the token endpoint.
pub fn machine(agent: &ureq::Agent, server_url: &str, cfg: &OauthConfig) -> Result<Tokens, String> {
    if let Some(p) = &cfg.problem {
        return Err(p.clone());
    }
    let challenge = probe(agent, server_url)?;
    let endpoints = discover::endpoints(
        agent,
        server_url,
        challenge.as_deref(),
        cfg.scope.as_deref(),
    )?;
    cfg.machine_sign_in(agent, &endpoints, server_url)
        .map_err(|e| e.to_string())
}

/// The server's challenge (`WWW-Authenticate` of its 401 or 403), or an
/// error when it asks for nothing. A server may let `initialize` through
/// and ask for a sign-in only later, so after an accepted `initialize`
/// `tools/list` is asked too, as a session would.
fn probe(agent: &ureq::Agent, server_url: &str) -> Result<Option<String>, String> {
    let version = super::super::VERSIONS[0];
    let init = obj! {
        "jsonrpc" => "2.0", "id" => 0i64, "method" => "initialize",
        "params" => obj! {
            "protocolVersion" => version,
            "capabilities" => obj! {},
            "clientInfo" => obj! { "name" => "tern", "version" => env!("CARGO_PKG_VERSION") },
        },
    };
    let post = |body: &str, session: Option<&str>| {
        let mut request = agent
            .post(server_url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(s) = session {
            request = request
                .header("mcp-session-id", s)
                .header("mcp-protocol-version", version);
        }
        request
            .send(body.as_bytes())
            .map_err(|e| format!("cannot reach {server_url}: {e}"))
    };
    let header = |r: &ureq::http::Response<ureq::Body>, name: &str| {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let response = post(&init.to_json(), None)?;
    let mut status = response.status().as_u16();
    let mut challenge = header(&response, "www-authenticate");
    let session = header(&response, "mcp-session-id");
    drop(response);
    if status / 100 == 2 {
        let initialized = obj! { "jsonrpc" => "2.0", "method" => "notifications/initialized" };
        drop(post(&initialized.to_json(), session.as_deref())?);
        let list = obj! { "jsonrpc" => "2.0", "id" => 1i64, "method" => "tools/list", "params" => obj! {} };
        let response = post(&list.to_json(), session.as_deref())?;
        status = response.status().as_u16();
        challenge = header(&response, "www-authenticate");
    } else if matches!(status, 400 | 404 | 405) {
        // Perhaps a server of the older HTTP+SSE transport.
        let response = agent
            .get(server_url)
            .header("accept", "text/event-stream")
            .call()
            .map_err(|e| format!("cannot reach {server_url}: {e}"))?;
        status = response.status().as_u16();
        challenge = header(&response, "www-authenticate");
    }
    match status {
        401 | 403 => Ok(challenge),
        s if s / 100 == 2 => Err(format!(
            "{server_url} answers without a sign-in; there is nothing to log in to"
        )),
        s => Err(format!(
            "{server_url} answered HTTP {s} instead of asking for a sign-in"
        )),
    }
}

impl Pending {
    /// Serves the redirect on its own thread: the first request to
    /// `/callback` with a code (or an error) is sent on `tx`.
    pub fn serve_redirect(&mut self, tx: Sender<Code>) {
        let Some(listener) = self.listener.take() else {
            return;
        };
        let spawned = std::thread::Builder::new()
            .name("tern-oauth-redirect".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    let Ok(mut stream) = stream else { continue };
                    let Some(answer) = read_redirect(&mut stream) else {
                        let _ = stream.write_all(
                            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                        );
                        continue;
                    };
                    let page = if answer.is_ok() {
                        "Signed in. You can close this window and go back to tern."
                    } else {
                        "The sign-in did not succeed; tern says why."
                    };
                    let _ = stream.write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                            page.len()
                        )
                        .as_bytes(),
                    );
                    let _ = tx.send(answer);
                    return;
                }
            });
        drop(spawned);
    }

    /// Trades the code for tokens.
    pub fn finish(&self, code: &str, state: Option<&str>) -> Result<Tokens, String> {
        if let Some(s) = state
            && s != self.state
        {
            return Err(
                "the redirect's state does not match this sign-in (an old or forged link?)".into(),
            );
        }
        let agent = super::super::wire::agent(None)?;
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", self.redirect.as_str()),
            ("code_verifier", self.verifier.as_str()),
            ("resource", self.endpoints.resource.as_str()),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .to_vec();
        let creds = client::Credentials {
            id: &self.client_id,
            secret: self.client_secret.as_deref(),
            method: self.method,
            key: None,
            audience: &self.endpoints.issuer,
        };
        let answer = match super::token_request(&agent, &self.endpoints.token, form, &creds) {
            Ok(a) => a,
            Err(TokenError::Refused(why)) => {
                return Err(format!("the authorization server refused the code ({why})"));
            }
            Err(TokenError::Other(why)) => return Err(why),
        };
        let base = Tokens {
            token_endpoint: self.endpoints.token.clone(),
            client_id: self.client_id.clone(),
            client_secret: self.client_secret.clone(),
            resource: Some(self.endpoints.resource.clone()),
            scope: self.endpoints.scope.clone(),
            server_url: self.server_url.clone(),
            auth_method: Some(self.method.name().to_string()),
            issuer: Some(self.endpoints.issuer.clone()),
            ..Tokens::default()
        };
        Ok(super::tokens_from(&answer, &base))
    }
}

/// The code and state of a redirect request, if this is one.
fn read_redirect(stream: &mut std::net::TcpStream) -> Option<Code> {
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(10)));
    let mut buf = vec![0u8; 8192];
    let mut got = 0;
    while got < buf.len() {
        let n = stream.read(&mut buf[got..]).ok()?;
        if n == 0 {
            break;
        }
        got += n;
        if buf[..got].windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    let head = String::from_utf8_lossy(&buf[..got]);
    let target = head
        .lines()
        .next()?
        .strip_prefix("GET ")?
        .split(' ')
        .next()?;
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if path != "/callback" {
        return None;
    }
    Some(code_of(query))
}

fn code_of(query: &str) -> Code {
    let pairs = super::query_pairs(query);
    let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    if let Some(e) = get("error") {
        let why = get("error_description").map(|d| format!(": {}", super::clean(&d)));
        return Err(format!(
            "the authorization server said {}{}",
            super::clean(&e),
            why.unwrap_or_default()
        ));
    }
    match get("code") {
        Some(c) if !c.is_empty() => Ok((c, get("state"))),
        _ => Err("the redirect carried no code".into()),
    }
}

/// What the person pasted: the whole address the browser ended on, or
/// just the code.
pub fn parse_pasted(text: &str) -> Code {
    let text = text.trim();
    if text.is_empty() {
        return Err("nothing was pasted".into());
    }
    match text.split_once('?') {
        Some((_, query)) => code_of(query.split('#').next().unwrap_or(query)),
        None if text.contains("://") => Err("that address carries no code".into()),
        None if text.chars().all(|c| c.is_ascii_graphic()) => Ok((text.to_string(), None)),
        None => Err("that is neither the address the browser ended on nor a code".into()),
    }
}
