//! What can go wrong with an MCP server: its definition
//! ([`ConfigProblem`]), and starting, talking to and managing it
//! ([`McpError`]). `Display` is the whole sentence the user (or the
//! model, in a tool result) reads, its cause's words included; `source`
//! hands programs the cause itself.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::APPROVAL_HINT;

/// Why a server's definition cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigProblem {
    NoCommand,
    NoUrl,
    NotHttp(String),
    UnknownType(String),
    /// `${` without its `}` in this text.
    Unclosed(String),
    /// `${NAME}` with NAME unset and no default.
    Unset(String),
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigProblem::NoCommand => f.write_str("a stdio server needs a \"command\""),
            ConfigProblem::NoUrl => f.write_str("an http server needs a \"url\""),
            ConfigProblem::NotHttp(url) => write!(f, "\"{url}\" is not an http(s) URL"),
            ConfigProblem::UnknownType(t) => write!(f, "unknown transport type \"{t}\""),
            ConfigProblem::Unclosed(text) => write!(f, "unclosed ${{ in \"{text}\""),
            ConfigProblem::Unset(name) => write!(f, "${{{name}}} is not set"),
        }
    }
}

impl std::error::Error for ConfigProblem {}

/// Why an MCP server could not be started, asked, or managed: the MCP
/// plane's error. Cloned to every request a dead connection leaves
/// waiting, so causes are shared.
#[derive(Debug, Clone)]
pub enum McpError {
    /// The definition cannot be used.
    Config(ConfigProblem),
    /// An SDK server in a session without the SDK's control channel.
    NoControlChannel,
    /// The server's process could not start.
    Spawn {
        command: String,
        source: Arc<std::io::Error>,
    },
    /// The process started without its standard streams.
    NoStdio,
    /// The connection is gone: why (with the server's last words).
    Gone(String),
    /// The server's input is closed.
    InputClosed,
    /// The HTTP server could not be reached.
    Unreachable {
        url: String,
        source: Arc<ureq::Error>,
    },
    /// It answered with an HTTP error; `body` is its first 300 characters.
    Http {
        status: u16,
        url: String,
        body: String,
    },
    /// Its answer is not JSON.
    NotJson(crate::json::ParseError),
    /// It answered the request with a JSON-RPC error.
    Rpc { code: i64, message: String },
    /// No answer to `method` came.
    NoAnswer(String),
    /// The SDK could not deliver the message (its words).
    Carrier(String),
    /// It did not finish starting within MCP_TIMEOUT.
    StartTimeout(Duration),
    /// A tool call had no answer within MCP_TOOL_TIMEOUT.
    CallTimeout(Duration),
    /// `step` (initialize, tools/list) failed.
    Step {
        step: &'static str,
        source: Box<McpError>,
    },
    /// It speaks a protocol version tern does not.
    Version { theirs: String, ours: String },
    /// The named server failed earlier.
    Unavailable { server: String, reason: String },
    /// The named server is still starting.
    Starting(String),
    /// The repository defined the server and the user has not approved it.
    NeedsApproval(String),
    /// The server wants a sign-in (`tern mcp login`): why.
    NeedsLogin { server: String, why: String },
    /// No server of that name.
    Unknown {
        name: String,
        configured: Vec<String>,
    },
}

impl fmt::Display for McpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpError::Config(p) => write!(f, "{p}"),
            McpError::NoControlChannel => f.write_str(
                "an SDK server lives inside the SDK application and needs its control channel \
                 (--input-format stream-json); this session has none",
            ),
            McpError::Spawn { command, source } => write!(f, "cannot start {command}: {source}"),
            McpError::NoStdio => f.write_str("cannot talk to the server's standard streams"),
            McpError::Gone(reason) => f.write_str(reason),
            McpError::InputClosed => f.write_str("the server's input is closed"),
            McpError::Unreachable { url, source } => write!(f, "cannot reach {url}: {source}"),
            McpError::Http { status, url, body } => write!(f, "HTTP {status} from {url}: {body}"),
            McpError::NotJson(e) => write!(f, "the server's answer is not JSON ({e})"),
            McpError::Rpc { code, message } => write!(f, "{message} (code {code})"),
            McpError::NoAnswer(method) => write!(f, "no answer to {method}"),
            McpError::Carrier(m) => f.write_str(m),
            McpError::StartTimeout(t) => {
                write!(f, "no answer within {} s (MCP_TIMEOUT)", t.as_secs_f64())
            }
            McpError::CallTimeout(t) => {
                write!(f, "no answer within {} s (MCP_TOOL_TIMEOUT)", t.as_secs())
            }
            McpError::Step { step, source } => write!(f, "{step} failed: {source}"),
            McpError::Version { theirs, ours } => {
                write!(f, "the server speaks MCP {theirs}; tern speaks {ours}")
            }
            McpError::Unavailable { server, reason } => {
                write!(f, "the MCP server {server} is not available: {reason}")
            }
            McpError::Starting(server) => write!(f, "the MCP server {server} is still starting"),
            McpError::NeedsApproval(server) => {
                write!(f, "the MCP server {server} is {APPROVAL_HINT}")
            }
            McpError::NeedsLogin { server, why } => {
                write!(f, "{why}; sign in with: tern mcp login {server}")
            }
            McpError::Unknown { name, configured } => write!(
                f,
                "no MCP server named '{name}' (configured: {})",
                if configured.is_empty() {
                    "none".to_string()
                } else {
                    configured.join(", ")
                }
            ),
        }
    }
}

impl McpError {
    /// Why a sign-in is needed, when that is what went wrong.
    pub fn login_reason(&self) -> Option<&str> {
        match self {
            McpError::NeedsLogin { why, .. } => Some(why),
            McpError::Step { source, .. } => source.login_reason(),
            _ => None,
        }
    }
}

impl std::error::Error for McpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            McpError::Config(p) => Some(p),
            McpError::Spawn { source, .. } => Some(source.as_ref()),
            McpError::Unreachable { source, .. } => Some(source.as_ref()),
            McpError::NotJson(e) => Some(e),
            McpError::Step { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

impl From<ConfigProblem> for McpError {
    fn from(p: ConfigProblem) -> McpError {
        McpError::Config(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    #[test]
    fn a_failed_step_reads_as_one_sentence_and_keeps_its_cause() {
        let e = McpError::Step {
            step: "initialize",
            source: Box::new(McpError::Rpc {
                code: -32601,
                message: "no such method".into(),
            }),
        };
        assert_eq!(
            e.to_string(),
            "initialize failed: no such method (code -32601)"
        );
        let cause = e.source().and_then(|c| c.downcast_ref::<McpError>());
        assert!(matches!(cause, Some(McpError::Rpc { code: -32601, .. })));
        let spawn = McpError::Spawn {
            command: "srv".into(),
            source: Arc::new(std::io::ErrorKind::NotFound.into()),
        };
        assert!(spawn.to_string().starts_with("cannot start srv: "));
        assert!(spawn.source().is_some());
        assert_eq!(
            McpError::from(ConfigProblem::Unset("TOKEN".into())).to_string(),
            "${TOKEN} is not set"
        );
    }
}
