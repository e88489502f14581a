//! From a server's URL (and the challenge of its 401) to the endpoints
//! of its authorization server.
//!
//! Each document a server hands out is checked against the server it
//! claims to serve: the protected-resource metadata must name this very
//! resource, the authorization server's metadata its own issuer, and
//! every endpoint must be HTTPS unless it is on this machine's loopback,
//! or a hostile document could send the person's sign-in, or tern's
//! tokens, elsewhere.

use crate::json::Value;
use crate::policy::url::{self, Host, WebUrl};

#[derive(Debug, Clone, PartialEq)]
pub struct Endpoints {
    pub authorize: String,
    pub token: String,
    pub register: Option<String>,
    /// The resource indicator: the server's URL without its fragment.
    pub resource: String,
    pub scope: Option<String>,
    /// The authorization server's issuer identifier.
    pub issuer: String,
    /// `token_endpoint_auth_methods_supported`, as the metadata lists them.
    pub auth_methods: Vec<String>,
}

/// `resource_metadata` and `scope` of a `WWW-Authenticate: Bearer …`.
pub fn challenge_params(header: &str) -> (Option<String>, Option<String>) {
    (
        challenge_param(header, "resource_metadata"),
        challenge_param(header, "scope"),
    )
}

/// One parameter of a `WWW-Authenticate: Bearer …` (`error`, `scope`…).
pub fn challenge_param(header: &str, wanted: &str) -> Option<String> {
    let mut found = None;
    // key="value" pairs; values may hold commas and spaces.
    let mut rest = header.trim();
    if let Some(r) = rest.strip_prefix("Bearer").or(rest.strip_prefix("bearer")) {
        rest = r;
    }
    while !rest.is_empty() {
        rest = rest.trim_start_matches([' ', ',']);
        let Some(eq) = rest.find('=') else { break };
        let key = rest[..eq].trim().to_ascii_lowercase();
        let after = &rest[eq + 1..];
        let (value, next) = if let Some(quoted) = after.strip_prefix('"') {
            match quoted.find('"') {
                Some(end) => (&quoted[..end], &quoted[end + 1..]),
                None => (quoted, ""),
            }
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim(), &after[end..])
        };
        if key == wanted && found.is_none() {
            found = Some(value.to_string());
        }
        rest = next;
    }
    found
}

fn parse(u: &str) -> Result<WebUrl, String> {
    url::parse(u).map_err(|e| format!("{u}: {e}"))
}

fn path_of(u: &WebUrl) -> &str {
    let p = u.path.split(['?', '#']).next().unwrap_or("");
    p.trim_end_matches('/')
}

fn loopback(host: &Host) -> bool {
    match host {
        Host::Name(n) => n == "localhost",
        Host::Ip(ip) => ip.is_loopback(),
    }
}

/// HTTPS, or plain HTTP to this machine.
fn check_endpoint(what: &str, u: &str) -> Result<String, String> {
    let parsed = parse(u)?;
    if !parsed.https && !loopback(&parsed.host) {
        return Err(format!(
            "the {what} {u} is not HTTPS; tern sends sign-ins and tokens only over HTTPS (or to this machine)"
        ));
    }
    Ok(u.to_string())
}

/// Finds the endpoints for the server at `server_url`.
pub fn endpoints(
    agent: &ureq::Agent,
    server_url: &str,
    challenge: Option<&str>,
    scope_wanted: Option<&str>,
) -> Result<Endpoints, String> {
    let server = parse(server_url)?;
    let resource = server_url
        .split('#')
        .next()
        .unwrap_or(server_url)
        .to_string();
    let (named, challenge_scope) = challenge.map(challenge_params).unwrap_or_default();
    // The protected-resource metadata: where the 401 said, else at the
    // well-known places of the server's origin.
    let mut candidates = Vec::new();
    if let Some(m) = named {
        candidates.push(m);
    }
    let base = server.origin();
    let path = path_of(&server);
    if !path.is_empty() {
        candidates.push(format!("{base}/.well-known/oauth-protected-resource{path}"));
    }
    candidates.push(format!("{base}/.well-known/oauth-protected-resource"));
    let mut prm = None;
    for c in &candidates {
        check_endpoint("resource metadata", c)?;
        if let Some(doc) = super::get_json(agent, c)? {
            prm = Some(doc);
            break;
        }
    }
    let issuer = match &prm {
        Some(doc) => {
            if let Some(named) = doc.str_field("resource") {
                let theirs = parse(named)?;
                let same = theirs.origin() == base
                    && (path == path_of(&theirs)
                        || path.starts_with(&format!("{}/", path_of(&theirs))));
                if !same {
                    return Err(format!(
                        "the server's resource metadata is for {named}, not {server_url}; refusing to sign in"
                    ));
                }
            }
            doc.get("authorization_servers")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or("the server's resource metadata names no authorization server")?
        }
        // Servers of the 2025-03-26 revision: the server's origin is its
        // own authorization server.
        None => base.clone(),
    };
    let issuer_url = parse(&issuer)?;
    check_endpoint("authorization server", &issuer)?;
    let iss_base = issuer_url.origin();
    let iss_path = path_of(&issuer_url);
    let mut places = vec![
        format!("{iss_base}/.well-known/oauth-authorization-server{iss_path}"),
        format!("{iss_base}/.well-known/openid-configuration{iss_path}"),
    ];
    if !iss_path.is_empty() {
        places.push(format!(
            "{iss_base}{iss_path}/.well-known/openid-configuration"
        ));
    }
    let mut meta = None;
    for p in &places {
        if let Some(doc) = super::get_json(agent, p)? {
            meta = Some(doc);
            break;
        }
    }
    let scope = challenge_scope
        .or(scope_wanted.map(str::to_string))
        .or_else(|| {
            prm.as_ref()
                .and_then(|d| d.get("scopes_supported"))
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .filter(|s| !s.is_empty())
        });
    let Some(meta) = meta else {
        if prm.is_some() {
            return Err(format!(
                "the authorization server {issuer} publishes no metadata (tried {})",
                places.join(", ")
            ));
        }
        return Ok(Endpoints {
            authorize: format!("{base}/authorize"),
            token: format!("{base}/token"),
            register: Some(format!("{base}/register")),
            resource,
            scope,
            issuer,
            auth_methods: Vec::new(),
        });
    };
    // RFC 8414 §3.3: the issuer a document names is the one its address
    // was built from. A 2025-03-26 server (no resource metadata) has its
    // metadata at its origin by that revision's rule, not the issuer's, so
    // there an issuer under a path of the same origin is its own (it
    // serves the document); another origin is still refused.
    let issuer = match meta.str_field("issuer") {
        Some(said) if said.trim_end_matches('/') == issuer.trim_end_matches('/') => issuer,
        Some(said) if prm.is_none() && parse(said).is_ok_and(|u| u.origin() == base) => {
            said.to_string()
        }
        Some(said) => {
            return Err(format!(
                "the authorization server's metadata names the issuer {said}, not {issuer}; refusing to sign in"
            ));
        }
        None => issuer,
    };
    if let Some(methods) = meta
        .get("code_challenge_methods_supported")
        .and_then(Value::as_array)
        && !methods.iter().any(|m| m.as_str() == Some("S256"))
    {
        return Err("the authorization server does not offer PKCE with S256".into());
    }
    let field = |k: &str| meta.str_field(k).map(str::to_string);
    let authorize = field("authorization_endpoint")
        .ok_or("the authorization server's metadata has no authorization_endpoint")?;
    let token = field("token_endpoint")
        .ok_or("the authorization server's metadata has no token_endpoint")?;
    Ok(Endpoints {
        authorize: check_endpoint("authorization endpoint", &authorize)?,
        token: check_endpoint("token endpoint", &token)?,
        register: match field("registration_endpoint") {
            Some(r) => Some(check_endpoint("registration endpoint", &r)?),
            None => None,
        },
        resource,
        scope,
        issuer,
        auth_methods: meta
            .get("token_endpoint_auth_methods_supported")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
    })
}
