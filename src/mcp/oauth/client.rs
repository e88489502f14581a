//! How tern proves who it is at the token endpoint (RFC 6749 §2.3,
//! RFC 7523): no secret (a public client), a secret in HTTP Basic or in
//! the form, or an assertion signed with a private key; and the
//! `client_credentials` grant, which needs no person at all.

use std::path::Path;

use base64::Engine as _;

use super::{AuthError, TokenError, Tokens};
use crate::json::Value;
use crate::obj;

/// A `token_endpoint_auth_method` tern can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    None,
    Basic,
    Post,
    PrivateKeyJwt,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::None => "none",
            Method::Basic => "client_secret_basic",
            Method::Post => "client_secret_post",
            Method::PrivateKeyJwt => "private_key_jwt",
        }
    }

    pub fn parse(name: &str) -> Option<Method> {
        [
            Method::None,
            Method::Basic,
            Method::Post,
            Method::PrivateKeyJwt,
        ]
        .into_iter()
        .find(|m| m.name() == name)
    }
}

/// The method to use: what the registration answer said, when tern can
/// do it; else the first of the server's list that fits what tern holds
/// (a key, a secret, or nothing); with no list, RFC 8414's default for a
/// secret (Basic), else none.
pub fn choose(registered: Option<&str>, supported: &[String], secret: bool, key: bool) -> Method {
    let can = |m: Method| match m {
        Method::None => true,
        Method::Basic | Method::Post => secret,
        Method::PrivateKeyJwt => key,
    };
    if let Some(m) = registered.and_then(Method::parse).filter(|m| can(*m)) {
        return m;
    }
    let offered: Vec<Method> = supported.iter().filter_map(|s| Method::parse(s)).collect();
    // What tern holds is used when the server takes it: a key or secret
    // that is left unused would make the server see a public client.
    let order = [Method::PrivateKeyJwt, Method::Basic, Method::Post];
    if offered.is_empty() {
        return match (key, secret) {
            (true, _) => Method::PrivateKeyJwt,
            (_, true) => Method::Basic,
            _ => Method::None,
        };
    }
    offered
        .iter()
        .copied()
        .find(|m| order.contains(m) && can(*m))
        .or_else(|| offered.iter().copied().find(|m| *m == Method::None))
        .unwrap_or(offered[0])
}

/// The method to ask for when registering (tern has no secret yet):
/// none when the server takes public clients, else a secret.
pub fn to_register(supported: &[String]) -> &'static str {
    if supported.is_empty() || supported.iter().any(|s| s == "none") {
        return "none";
    }
    supported
        .iter()
        .filter_map(|s| Method::parse(s))
        .find(|m| matches!(m, Method::Basic | Method::Post))
        .unwrap_or(Method::None)
        .name()
}

/// Who tern is at a token endpoint, and how it shows it.
pub struct Credentials<'a> {
    pub id: &'a str,
    pub secret: Option<&'a str>,
    pub method: Method,
    pub key: Option<&'a Key>,
    /// The `aud` of an assertion: the authorization server's issuer.
    pub audience: &'a str,
}

impl Credentials<'_> {
    /// Adds the client's proof to a token request: form fields, or the
    /// `Authorization` header it returns.
    pub fn apply(&self, form: &mut Vec<(String, String)>) -> Result<Option<String>, String> {
        let mut field = |k: &str, v: &str| form.push((k.to_string(), v.to_string()));
        match self.method {
            Method::None => field("client_id", self.id),
            Method::Post => {
                field("client_id", self.id);
                if let Some(s) = self.secret {
                    field("client_secret", s);
                }
            }
            Method::Basic => {
                // RFC 6749 §2.3.1: each part form-encoded before joining.
                let pair = format!(
                    "{}:{}",
                    super::form_encode_one(self.id),
                    super::form_encode_one(self.secret.unwrap_or_default())
                );
                return Ok(Some(format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(pair)
                )));
            }
            Method::PrivateKeyJwt => {
                let key = self
                    .key
                    .ok_or("private_key_jwt needs a private key (\"privateKeyFile\")")?;
                field("client_id", self.id);
                field(
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                );
                field("client_assertion", &key.assertion(self.id, self.audience)?);
            }
        }
        Ok(None)
    }
}

/// A private key for `private_key_jwt`: ECDSA P-256 (ES256).
pub struct Key {
    pair: ring::signature::EcdsaKeyPair,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(ES256)")
    }
}

impl Key {
    /// A PKCS#8 PEM (`BEGIN PRIVATE KEY`) of a P-256 key.
    pub fn from_pem(pem: &str) -> Result<Key, String> {
        if pem.contains("BEGIN EC PRIVATE KEY") || pem.contains("BEGIN RSA PRIVATE KEY") {
            return Err("the key is not PKCS#8; convert it with \
                 openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.p8"
                .into());
        }
        let body: String = pem
            .lines()
            .skip_while(|l| !l.starts_with("-----BEGIN PRIVATE KEY-----"))
            .skip(1)
            .take_while(|l| !l.starts_with("-----END"))
            .map(str::trim)
            .collect();
        if body.is_empty() {
            return Err("no PEM private key (-----BEGIN PRIVATE KEY-----) found".into());
        }
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .map_err(|e| format!("the key's PEM is not base64: {e}"))?;
        let rng = ring::rand::SystemRandom::new();
        let pair = ring::signature::EcdsaKeyPair::from_pkcs8(
            &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &der,
            &rng,
        )
        .map_err(|e| format!("not an ECDSA P-256 key tern can sign ES256 with ({e})"))?;
        Ok(Key { pair })
    }

    pub fn from_file(path: &Path) -> Result<Key, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the private key {}: {e}", path.display()))?;
        Key::from_pem(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// A client assertion (RFC 7523 §3): iss and sub the client, aud the
    /// authorization server, good for five minutes, used once (jti).
    pub fn assertion(&self, client_id: &str, audience: &str) -> Result<String, String> {
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let now = i64::try_from(super::now()).unwrap_or(i64::MAX);
        let header = obj! { "alg" => "ES256", "typ" => "JWT" };
        let claims = obj! {
            "iss" => client_id,
            "sub" => client_id,
            "aud" => audience,
            "iat" => now,
            "exp" => now.saturating_add(300),
            "jti" => super::random_token()?,
        };
        let signing_input = format!(
            "{}.{}",
            b64(header.to_json().as_bytes()),
            b64(claims.to_json().as_bytes())
        );
        let rng = ring::rand::SystemRandom::new();
        let signature = self
            .pair
            .sign(&rng, signing_input.as_bytes())
            .map_err(|_| "signing the client assertion failed".to_string())?;
        Ok(format!("{signing_input}.{}", b64(signature.as_ref())))
    }
}

/// What a `client_credentials` sign-in needs besides the endpoints.
pub struct Machine<'a> {
    pub client_id: &'a str,
    pub secret: Option<&'a str>,
    pub key: Option<&'a Key>,
    pub scope: Option<&'a str>,
}

/// The `client_credentials` grant (RFC 6749 §4.4, the MCP extension
/// SEP-1046): tokens for tern itself, with no browser and no person.
pub fn client_credentials(
    agent: &ureq::Agent,
    endpoints: &super::discover::Endpoints,
    server_url: &str,
    m: &Machine<'_>,
) -> Result<Tokens, AuthError> {
    let method = choose(
        None,
        &endpoints.auth_methods,
        m.secret.is_some(),
        m.key.is_some(),
    );
    if method == Method::None {
        return Err(AuthError::Other(
            "the client_credentials grant needs a client secret or a private key".into(),
        ));
    }
    let mut form = vec![("grant_type".to_string(), "client_credentials".to_string())];
    form.push(("resource".into(), endpoints.resource.clone()));
    if let Some(s) = m.scope.or(endpoints.scope.as_deref()) {
        form.push(("scope".into(), s.to_string()));
    }
    let creds = Credentials {
        id: m.client_id,
        secret: m.secret,
        method,
        key: m.key,
        audience: &endpoints.issuer,
    };
    let base = Tokens {
        token_endpoint: endpoints.token.clone(),
        client_id: m.client_id.to_string(),
        resource: Some(endpoints.resource.clone()),
        scope: m.scope.map(str::to_string).or(endpoints.scope.clone()),
        server_url: server_url.to_string(),
        auth_method: Some(method.name().to_string()),
        issuer: Some(endpoints.issuer.clone()),
        grant: Some("client_credentials".into()),
        ..Tokens::default()
    };
    match super::token_request(agent, &endpoints.token, form, &creds) {
        Ok(answer) => Ok(super::tokens_from(&answer, &base)),
        Err(TokenError::Refused(why)) => Err(AuthError::Other(format!(
            "the authorization server refused tern's client credentials ({why})"
        ))),
        Err(TokenError::Other(why)) => Err(AuthError::Other(why)),
    }
}

/// The registration answer's `token_endpoint_auth_method`, if any.
pub fn registered_method(answer: Option<&Value>) -> Option<String> {
    answer
        .and_then(|a| a.str_field("token_endpoint_auth_method"))
        .map(str::to_string)
}
