//! The web tools' settings: whether the provider's web search is offered
//! and with which definition. (WebFetch's limits and small model are
//! plain fields of the [`Runtime`].)

use super::{DEFAULT_BASE_URL, Runtime};
use crate::model::Provider;

/// Searches per request the web search tool may make, unless
/// `webSearch.maxUses` says otherwise.
pub const DEFAULT_WEB_SEARCHES: u32 = 8;

impl Runtime {
    /// The definition of the provider's web search tool, when it is
    /// offered, and a note when settings asked for what cannot be.
    /// Offered on the Messages API only (the OpenAI-compatible wire has no
    /// server-side search), by default only on Anthropic's own endpoint
    /// (a gateway or local server may reject a definition it does not
    /// know, failing every request), elsewhere when `webSearch.enabled`
    /// says so. Domain lists: the API takes allowed or blocked, not both,
    /// so with both the allowed list is sent less what is blocked.
    pub fn web_search_tool(&self) -> (Option<crate::json::Value>, Option<String>) {
        let ws = &self.web_search;
        if ws.enabled == Some(false) {
            return (None, None);
        }
        if self.client.provider != Provider::Anthropic {
            let note = (ws.enabled == Some(true)).then(|| {
                "webSearch is enabled, but the OpenAI-compatible provider has no server-side search; WebSearch is not offered".to_string()
            });
            return (None, note);
        }
        if ws.enabled.is_none() && self.client.base_url != DEFAULT_BASE_URL {
            return (None, None);
        }
        let covers = |d: &str, x: &str| x == d || x.ends_with(&format!(".{d}"));
        let mut def = crate::obj! {
            "type" => "web_search_20250305",
            "name" => "web_search",
            "max_uses" => ws.max_uses.unwrap_or(DEFAULT_WEB_SEARCHES),
        };
        let Some(map) = def.as_object_mut() else {
            return (None, None);
        };
        if !ws.allowed_domains.is_empty() {
            let allowed: Vec<crate::json::Value> = ws
                .allowed_domains
                .iter()
                .filter(|a| !ws.blocked_domains.iter().any(|b| covers(b, a)))
                .map(|a| crate::json::Value::from(a.as_str()))
                .collect();
            if allowed.is_empty() {
                return (
                    None,
                    Some(
                        "webSearch: every allowed domain is also blocked; WebSearch is not offered"
                            .into(),
                    ),
                );
            }
            map.insert("allowed_domains", allowed);
        } else if !ws.blocked_domains.is_empty() {
            let blocked: Vec<crate::json::Value> = ws
                .blocked_domains
                .iter()
                .map(|b| crate::json::Value::from(b.as_str()))
                .collect();
            map.insert("blocked_domains", blocked);
        }
        (Some(def), None)
    }
}
