//! Wiring for WebFetch: its HTTP agents, built from the model client's
//! settings (CA roots, proxy), and the small model its prompts (and the
//! REPL's `haiku()`) go to.

#[cfg(feature = "web")]
use std::rc::Rc;

use crate::config;
#[cfg(feature = "web")]
use crate::model::client::Client;

/// The small model side questions go to, and its window:
/// ANTHROPIC_SMALL_FAST_MODEL when set, Haiku on Anthropic's own API, else
/// the session's model.
pub(super) fn small_model(rt: &config::Runtime, window: u64) -> (String, u64) {
    let small = rt.small_model.clone().unwrap_or_else(|| {
        if rt.client.base_url == config::DEFAULT_BASE_URL
            && rt.client.provider == crate::model::Provider::Anthropic
        {
            config::DEFAULT_SMALL_MODEL.to_string()
        } else {
            rt.model.clone()
        }
    });
    let small_window = if small == rt.model {
        window
    } else {
        crate::context::known_window(&small).unwrap_or(window)
    };
    (small, small_window)
}

/// WebFetch's agents (the model client's CA roots and proxy) and the
/// small model a prompt about a page goes to ([`small_model`]).
#[cfg(feature = "web")]
pub(super) fn access(
    rt: &config::Runtime,
    client: &Client,
    window: u64,
) -> Option<Rc<crate::tools::web::Web>> {
    let http = crate::model::client::http_config(rt.client.extra_ca_pem.as_deref()).ok()?;
    let (small, small_window) = small_model(rt, window);
    let limits = crate::tools::web::Limits {
        bytes: rt.web_max_bytes,
        timeout: rt.web_timeout,
        ..Default::default()
    };
    Some(Rc::new(crate::tools::web::Web::new(
        http.build(),
        limits,
        Some(crate::tools::web::Asker {
            client: client.clone(),
            model: small,
            window: small_window,
        }),
    )))
}
