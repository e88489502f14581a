//! What the hub says about its servers: `system/init`'s summary and the
//! SDK's `mcp_status` (Claude Code's McpServerStatus, plus what a
//! connected server declared it offers, `capabilities`, and what tern
//! offered it, `clientCapabilities`).

use super::{APPROVAL_HINT, Hub, ServerConfig, Status, config};
use crate::json::Value;
use crate::obj;

impl Hub {
    /// For `system/init`: `[{name, status, source}]` (and the reason of a failure).
    pub fn summary(&self) -> Vec<Value> {
        self.servers
            .borrow()
            .iter()
            .map(|s| {
                let status = s.status();
                let mut v = obj! {
                    "name" => s.name.as_str(),
                    "status" => status.word(),
                    "source" => source_word(&s.config),
                };
                if let Some(m) = v.as_object_mut() {
                    if status == Status::Connected {
                        m.insert("tools", s.tool_count());
                    }
                    if let Some(e) = error_of(&s.name, &status) {
                        m.insert("error", e);
                    }
                }
                v
            })
            .collect()
    }

    /// For the `mcp_status` control request: Claude Code's McpServerStatus.
    pub fn status_report(&self) -> Vec<Value> {
        self.servers
            .borrow()
            .iter()
            .map(|s| {
                let status = s.status();
                let tools: Vec<Value> = s
                    .listing
                    .borrow()
                    .iter()
                    .map(|t| {
                        let read_only = t
                            .get("annotations")
                            .and_then(|a| a.get("readOnlyHint"))
                            .and_then(Value::as_bool);
                        let mut entry = obj! { "name" => t.str_field("name").unwrap_or_default() };
                        if let Some(m) = entry.as_object_mut() {
                            if let Some(d) = t.str_field("description") {
                                m.insert("description", d);
                            }
                            if let Some(r) = read_only {
                                m.insert("annotations", obj! { "readOnly" => r });
                            }
                        }
                        entry
                    })
                    .collect();
                let mut v = obj! {
                    "name" => s.name.as_str(),
                    "status" => status.word(),
                    "config" => config_summary(&s.config),
                    "scope" => s.config.source.as_str(),
                    "source" => source_word(&s.config),
                    "tools" => tools,
                };
                if let Some(m) = v.as_object_mut() {
                    if let Some(info) = s.server_info.borrow().clone() {
                        m.insert("serverInfo", info);
                    }
                    if status == Status::Connected {
                        m.insert("capabilities", s.capabilities.borrow().clone());
                        let mut offered = s.granted().capabilities();
                        // Roots are always offered (and always empty).
                        if let Some(o) = offered.as_object_mut() {
                            o.remove("roots");
                        }
                        m.insert("clientCapabilities", offered);
                    }
                    if let Some(e) = error_of(&s.name, &status) {
                        m.insert("error", e);
                    }
                }
                v
            })
            .collect()
    }
}

/// Why a server is not usable, and what to do about it, if it is not.
fn error_of(name: &str, status: &Status) -> Option<String> {
    match status {
        Status::Failed(r) => Some(r.clone()),
        Status::NeedsApproval => Some(APPROVAL_HINT.to_string()),
        Status::NeedsAuth(why) => Some(format!("{why}; sign in with: tern mcp login {name}")),
        _ => None,
    }
}

/// "sdk" for servers inside the SDK application, else where the
/// definition came from.
fn source_word(cfg: &ServerConfig) -> &str {
    match cfg.transport {
        Ok(config::Transport::Sdk) => "sdk",
        _ => cfg.source.as_str(),
    }
}

/// The transport part of a configuration, without secrets (no env values
/// or headers).
fn config_summary(cfg: &ServerConfig) -> Value {
    match &cfg.transport {
        Ok(config::Transport::Stdio { command, args, .. }) => obj! {
            "type" => "stdio",
            "command" => command.as_str(),
            "args" => args.iter().map(|a| Value::from(a.as_str())).collect::<Vec<_>>(),
        },
        Ok(config::Transport::Http { url, .. }) => obj! { "type" => "http", "url" => url.as_str() },
        Ok(config::Transport::Sse { url, .. }) => obj! { "type" => "sse", "url" => url.as_str() },
        Ok(config::Transport::Sdk) => obj! { "type" => "sdk", "name" => cfg.name.as_str() },
        Err(_) => obj! {},
    }
}
