//! `tern mcp login NAME` and `tern mcp logout NAME`: signing in to a
//! remote MCP server that asks for OAuth, on a box with a browser or
//! without one.

use std::io::BufRead as _;
use std::sync::mpsc;

use super::exit::Exit;
use crate::config::Runtime;
use crate::mcp::{self, config::Transport, oauth};

/// The server of that name, if it is remote; or why not.
fn remote_server(rt: &Runtime, name: &str) -> Result<(String, oauth::OauthConfig), String> {
    let (configs, _) = super::mcp_start::configs(rt);
    let Some(cfg) = configs.into_iter().find(|c| c.name == name) else {
        return Err(format!(
            "no MCP server named '{name}' (tern mcp list shows them)"
        ));
    };
    if cfg.from_project && !rt.mcp_approval.allows(name) {
        return Err(format!("the MCP server {name} is {}", mcp::APPROVAL_HINT));
    }
    match cfg.transport {
        Ok(Transport::Http { url, .. } | Transport::Sse { url, .. }) => Ok((url, cfg.oauth)),
        Ok(_) => Err(format!(
            "the MCP server {name} runs on this machine; only remote (http, sse) servers sign in"
        )),
        Err(e) => Err(format!("the MCP server {name} cannot be used: {e}")),
    }
}

enum From {
    Redirect,
    Paste,
}

pub fn login(rt: &Runtime, name: &str) -> Exit {
    let (url, cfg) = match remote_server(rt, name) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("tern: {e}");
            return Exit::Failure;
        }
    };
    let agent = match mcp::http_agent(rt.client.extra_ca_pem.as_deref()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("tern: {e}");
            return Exit::Failure;
        }
    };
    let store = oauth::Store::new(&rt.state_root());
    if cfg.machine {
        return match oauth::machine(&agent, &url, &cfg) {
            Ok(tokens) => saved(name, &store, &tokens),
            Err(e) => {
                eprintln!("tern: signing in to {name}: {e}");
                Exit::Failure
            }
        };
    }
    // Scopes a session was refused for want of are asked for now.
    let kept = store.load(name, &url);
    let more = oauth::union(
        kept.as_ref().and_then(|t| t.scope.as_deref()),
        kept.as_ref().and_then(|t| t.wants_scope.as_deref()),
    )
    .filter(|_| kept.as_ref().is_some_and(|t| t.wants_scope.is_some()));
    let mut pending = match oauth::begin(&agent, &url, &cfg, None, more.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("tern: signing in to {name}: {e}");
            return Exit::Failure;
        }
    };
    println!(
        "Open this address to sign in to the MCP server {name}:\n\n  {}\n",
        pending.url
    );
    println!(
        "When you have approved, the browser returns to tern by itself. If it runs on another\n\
         machine, it ends on an address starting with {} that does not load:\n\
         copy that whole address (or just its code) here and press Enter.",
        pending.redirect
    );
    open_browser(rt, &pending.url);
    let (tx, rx) = mpsc::channel::<(From, oauth::Code)>();
    let (redirect_tx, redirect_rx) = mpsc::channel();
    pending.serve_redirect(redirect_tx);
    let forward = tx.clone();
    let _ = std::thread::Builder::new().spawn(move || {
        if let Ok(code) = redirect_rx.recv() {
            let _ = forward.send((From::Redirect, code));
        }
    });
    let _ = std::thread::Builder::new().spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if line.trim().is_empty() {
                continue;
            }
            if tx.send((From::Paste, oauth::parse_pasted(&line))).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + oauth::LOGIN_TIME;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let (from, code) = match rx.recv_timeout(left) {
            Ok(got) => got,
            Err(_) => {
                eprintln!(
                    "tern: the sign-in was not finished within {} minutes",
                    oauth::LOGIN_TIME.as_secs() / 60
                );
                return Exit::Failure;
            }
        };
        let (code, state) = match (code, from) {
            (Ok(c), _) => c,
            (Err(why), From::Paste) => {
                eprintln!("tern: {why}; paste the address again");
                continue;
            }
            (Err(why), From::Redirect) => {
                eprintln!("tern: signing in to {name}: {why}");
                return Exit::Failure;
            }
        };
        let tokens = match pending.finish(&code, state.as_deref()) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("tern: signing in to {name}: {e}");
                return Exit::Failure;
            }
        };
        return saved(name, &store, &tokens);
    }
}

fn saved(name: &str, store: &oauth::Store, tokens: &oauth::Tokens) -> Exit {
    match store.save(name, tokens) {
        Ok(path) => {
            let lasts = tokens
                .expires_at
                .map(|at| format!(", valid for {} min", at.saturating_sub(oauth::now()) / 60))
                .unwrap_or_default();
            let renews = if tokens.refresh_token.is_some() || tokens.grant.is_some() {
                "; tern renews it before it runs out"
            } else {
                ""
            };
            println!(
                "Signed in to {name}{lasts}{renews}. Kept in {} (only you can read it).",
                path.display()
            );
            Exit::Success
        }
        Err(e) => {
            eprintln!("tern: signed in, but the tokens could not be saved: {e}");
            Exit::Failure
        }
    }
}

/// A browser on this machine, when there is one (`BROWSER`, or a display).
fn open_browser(rt: &Runtime, url: &str) {
    if let Some(b) = oauth::Browser::from_env(&|k| rt.env.get(k)) {
        b.open(url);
    }
}

pub fn logout(rt: &Runtime, name: &str) -> Exit {
    let (url, _) = match remote_server(rt, name) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("tern: {e}");
            return Exit::Failure;
        }
    };
    match oauth::Store::new(&rt.state_root()).delete(name, &url) {
        Ok(true) => {
            println!("Signed out of {name}: its tokens are deleted.");
            Exit::Success
        }
        Ok(false) => {
            println!("{name} had no sign-in kept.");
            Exit::Success
        }
        Err(e) => {
            eprintln!("tern: cannot delete the sign-in of {name}: {e}");
            Exit::Failure
        }
    }
}
