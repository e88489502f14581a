//! The sign-in behind a remote server's requests: the bearer token each
//! one carries, renewed before it expires, and what a refusal leads to.
//!
//! - A 401 renews the token once; a server configured for
//!   `client_credentials` gets a new token by that grant instead (no
//!   person needed), once; after that the refusal stands.
//! - A 401 or 403 with `error="insufficient_scope"` asks for a new
//!   authorization with the scopes held and the ones named (a step-up),
//!   at most `STEP_UPS` times per request. It needs a person: in a session
//!   that can open a browser the address is opened and shown, and the
//!   request waits for the redirect; elsewhere the scopes are kept for
//!   the next `tern mcp login` and the request fails saying so.

use std::cell::RefCell;
use std::sync::mpsc;

use super::Remote;
use crate::mcp::error::McpError;
use crate::mcp::oauth::{self, AuthError, Browser, OauthConfig, Store, Tokens, discover};
use crate::mcp::rpc::Connection;

/// New authorizations a single request may ask for.
const STEP_UPS: u32 = 2;

/// The tokens of one server, shared by its requests.
pub(in crate::mcp) struct Auth {
    pub server: String,
    url: String,
    pub store: Store,
    pub tokens: RefCell<Option<Tokens>>,
    /// One renewal or new authorization at a time: a rotated refresh
    /// token works once, and one person answers one browser tab.
    renewing: smol::lock::Mutex<()>,
    agent: ureq::Agent,
    cfg: OauthConfig,
    browser: Option<Browser>,
}

/// What a request has already tried after refusals.
#[derive(Default)]
pub(super) struct Tries {
    renewed: bool,
    machine: bool,
    step_ups: u32,
}

impl Auth {
    pub fn new(
        server: &str,
        url: &str,
        store: Store,
        agent: ureq::Agent,
        cfg: OauthConfig,
        browser: Option<Browser>,
    ) -> Auth {
        let tokens = store.load(server, url);
        Auth {
            server: server.to_string(),
            url: url.to_string(),
            store,
            tokens: RefCell::new(tokens),
            renewing: smol::lock::Mutex::new(()),
            agent,
            cfg,
            browser,
        }
    }

    fn login(&self, why: &str) -> McpError {
        McpError::NeedsLogin {
            server: self.server.clone(),
            why: why.to_string(),
        }
    }

    /// The token to send, renewed first when it is about to expire.
    pub(super) async fn bearer(&self) -> Result<Option<String>, McpError> {
        let current = self.tokens.borrow().clone();
        match current {
            None => Ok(None),
            Some(t) if t.stale() && (t.refresh_token.is_some() || self.cfg.machine) => {
                self.renew(&t.access_token).await.map(Some)
            }
            Some(t) if t.expired() => Err(self.login("the sign-in has expired")),
            Some(t) => Ok(Some(t.access_token)),
        }
    }

    fn keep(&self, new: Tokens) -> String {
        if let Err(e) = self.store.save(&self.server, &new) {
            crate::report::notice(
                crate::report::Level::Warning,
                format!(
                    "MCP server {}: the new sign-in could not be saved ({e}); it lasts for this session",
                    self.server
                ),
            );
        }
        let token = new.access_token.clone();
        *self.tokens.borrow_mut() = Some(new);
        token
    }

    /// Another request replaced the token `used` while this one waited.
    fn replaced(&self, used: Option<&str>) -> bool {
        let current = self.tokens.borrow();
        current
            .as_ref()
            .is_some_and(|t| Some(t.access_token.as_str()) != used && !t.stale())
    }

    /// Renews the token the server refused (`used`), unless another
    /// request renewed it meanwhile.
    async fn renew(&self, used: &str) -> Result<String, McpError> {
        let _one = self.renewing.lock().await;
        let Some(old) = self.tokens.borrow().clone() else {
            return Err(self.login("the server asks for a sign-in"));
        };
        if self.replaced(Some(used)) {
            return Ok(old.access_token);
        }
        let agent = self.agent.clone();
        let cfg = self.cfg.clone();
        let renewed = smol::unblock(move || oauth::refresh(&agent, &old, &cfg)).await;
        match renewed {
            Ok(new) => Ok(self.keep(new)),
            Err(AuthError::Login(why)) => Err(self.login(&why)),
            Err(AuthError::Other(why)) => Err(McpError::Gone(format!(
                "renewing the sign-in failed: {why}"
            ))),
        }
    }

    /// Tokens by `client_credentials`, found from the server's challenge.
    async fn machine(&self, used: Option<&str>, challenge: Option<String>) -> Result<(), McpError> {
        let _one = self.renewing.lock().await;
        if self.replaced(used) {
            return Ok(());
        }
        let (agent, cfg, url) = (self.agent.clone(), self.cfg.clone(), self.url.clone());
        let got = smol::unblock(move || {
            let endpoints =
                discover::endpoints(&agent, &url, challenge.as_deref(), cfg.scope.as_deref())
                    .map_err(AuthError::Other)?;
            cfg.machine_sign_in(&agent, &endpoints, &url)
        })
        .await;
        match got {
            Ok(tokens) => {
                self.keep(tokens);
                Ok(())
            }
            Err(e) => Err(McpError::Gone(format!(
                "signing in with the client credentials failed: {e}"
            ))),
        }
    }

    /// A new authorization for the scopes held and `scope`.
    async fn step_up(
        &self,
        used: Option<&str>,
        challenge: String,
        scope: Option<String>,
    ) -> Result<(), McpError> {
        let _one = self.renewing.lock().await;
        if self.replaced(used) {
            return Ok(());
        }
        let held = self.tokens.borrow().as_ref().and_then(|t| t.scope.clone());
        let wanted = oauth::union(held.as_deref(), scope.as_deref());
        let named = scope.as_deref().unwrap_or("more access");
        if self.cfg.machine {
            let mut cfg = self.cfg.clone();
            cfg.scope = wanted;
            let (agent, url) = (self.agent.clone(), self.url.clone());
            let got = smol::unblock(move || {
                let endpoints = discover::endpoints(&agent, &url, Some(&challenge), None)
                    .map_err(AuthError::Other)?;
                cfg.machine_sign_in(&agent, &endpoints, &url)
            })
            .await;
            return match got {
                Ok(tokens) => {
                    self.keep(tokens);
                    Ok(())
                }
                Err(e) => Err(McpError::Gone(format!(
                    "asking for the scope {named} with the client credentials failed: {e}"
                ))),
            };
        }
        let Some(browser) = self.browser.clone() else {
            // Kept for `tern mcp login`, which then asks for it too.
            let current = self.tokens.borrow().clone();
            if let Some(mut t) = current {
                t.wants_scope = wanted;
                let _ = self.store.save(&self.server, &t);
            }
            return Err(self.login(&format!(
                "the server asks for the scope {named}, which needs a new sign-in, and there is no browser here to do it in"
            )));
        };
        let (agent, cfg, url) = (self.agent.clone(), self.cfg.clone(), self.url.clone());
        let mut pending = smol::unblock(move || {
            oauth::begin(&agent, &url, &cfg, Some(challenge), wanted.as_deref())
        })
        .await
        .map_err(|e| self.login(&format!("asking for the scope {named}: {e}")))?;
        crate::report::notice(
            crate::report::Level::Warning,
            format!(
                "MCP server {} asks for more access (scope {named}). Sign in at:\n  {}",
                self.server, pending.url
            ),
        );
        browser.open(&pending.url);
        let (tx, rx) = mpsc::channel();
        pending.serve_redirect(tx);
        let tokens = smol::unblock(move || {
            let (code, state) = rx
                .recv_timeout(oauth::LOGIN_TIME)
                .map_err(|_| "the sign-in was not finished in time".to_string())??;
            pending.finish(&code, state.as_deref())
        })
        .await
        .map_err(|e| self.login(&format!("asking for the scope {named}: {e}")))?;
        self.keep(tokens);
        Ok(())
    }
}

impl Connection {
    /// After a 401 or 403: renews the token, signs in again by itself
    /// (client credentials) or asks for more scope, as far as `tries`
    /// allows; an error when the request should not be sent again.
    pub(super) async fn after_refusal(
        &self,
        r: &Remote,
        status: u16,
        challenge: Option<String>,
        headers: &[(String, String)],
        tries: &mut Tries,
    ) -> Result<(), McpError> {
        let Some(auth) = &r.auth else {
            return Err(McpError::NeedsLogin {
                server: self.name.clone(),
                why: format!("the server asks for a sign-in (HTTP {status})"),
            });
        };
        let used = headers
            .iter()
            .find(|(k, _)| k == "authorization")
            .and_then(|(_, v)| v.strip_prefix("Bearer "));
        let param = |k: &str| {
            challenge
                .as_deref()
                .and_then(|c| discover::challenge_param(c, k))
        };
        if param("error").as_deref() == Some("insufficient_scope") {
            let scope = param("scope");
            if tries.step_ups == STEP_UPS {
                return Err(auth.login(&format!(
                    "the server still refuses for want of the scope {} after {STEP_UPS} new authorizations",
                    scope.as_deref().unwrap_or("(unnamed)")
                )));
            }
            tries.step_ups += 1;
            return auth
                .step_up(used, challenge.unwrap_or_default(), scope)
                .await;
        }
        if status != 401 {
            return Err(auth.login(&format!("the server refused the sign-in (HTTP {status})")));
        }
        if auth.cfg.machine {
            if tries.machine {
                return Err(McpError::Gone(format!(
                    "the server refused a new token from its own authorization server (HTTP {status} again)"
                )));
            }
            tries.machine = true;
            return auth.machine(used, challenge).await;
        }
        match used {
            Some(token) if !tries.renewed => {
                tries.renewed = true;
                auth.renew(token).await.map(drop)
            }
            Some(_) => Err(auth.login("the server refused the sign-in (HTTP 401)")),
            None => Err(auth.login("the server asks for a sign-in")),
        }
    }
}
