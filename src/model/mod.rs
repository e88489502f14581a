//! The request plane: talking to the Messages API.
//!
//! `client` sends one attempt and hands back the byte stream, `sse` splits
//! it into events, `stream` assembles content blocks, `request` builds the
//! body, and `RetryPolicy` decides whether and when a failed attempt is
//! tried again. An attempt is not a turn: the agent loop counts turns.

pub(crate) mod client;
pub(crate) mod delta;
pub(crate) mod discover;
pub mod once;
pub(crate) mod openai;
pub(crate) mod price;
pub(crate) mod request;
mod roots;
pub mod sse;
pub mod stream;
pub mod thinking;

use std::fmt;
use std::time::Duration;

use crate::json::Value;

/// The wire format spoken to the model server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Anthropic Messages API (`/v1/messages`).
    Anthropic,
    /// OpenAI-compatible chat completions (`/v1/chat/completions`).
    OpenAi,
}

impl Provider {
    pub fn parse(name: &str) -> Option<Provider> {
        match name.to_ascii_lowercase().as_str() {
            "anthropic" => Some(Provider::Anthropic),
            "openai" | "openai-compatible" => Some(Provider::OpenAi),
            _ => None,
        }
    }
}

/// The words of a failure and, where there was one, the error under it
/// (an I/O or TLS error, or the failure a retry gave up on), kept for
/// [`std::error::Error::source`]. Shared, so an [`ApiError`] stays
/// cheap to clone into events.
#[derive(Debug, Clone)]
pub struct Detail {
    text: String,
    source: Option<std::sync::Arc<dyn std::error::Error + Send + Sync>>,
}

impl Detail {
    /// `text` said because of `source`.
    pub fn caused_by(
        text: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Detail {
        Detail {
            text: text.into(),
            source: Some(std::sync::Arc::new(source)),
        }
    }

    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<String> for Detail {
    fn from(text: String) -> Detail {
        Detail { text, source: None }
    }
}

impl From<&str> for Detail {
    fn from(text: &str) -> Detail {
        Detail::from(text.to_string())
    }
}

impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Why a request to the model did not give an answer: the request
/// plane's error. `Display` is the sentence the user reads (its cause's
/// words included); `source` is the cause itself, for programs.
#[derive(Debug, Clone)]
pub enum ApiError {
    /// The server answered with a non-200 status.
    Http {
        status: u16,
        kind: String,
        message: String,
        retry_after: Option<Duration>,
        request_id: Option<String>,
    },
    /// No response: DNS, connect, TLS, reset before headers.
    Transport(Detail),
    /// The response started but the stream broke or was cut.
    Stream(Detail),
    /// The server sent `event: error` inside the stream.
    InStream { kind: String, message: String },
    /// The server's certificate was not accepted: never retried.
    Tls(Detail),
    /// Our own configuration is unusable (bad CA file, …): never retried.
    Config(Detail),
}

impl ApiError {
    pub fn is_retryable(&self) -> bool {
        match self {
            ApiError::Http { status, .. } => {
                matches!(status, 408 | 409 | 429 | 500..=599) && !self.refuses_tools()
            }
            ApiError::Transport(_) | ApiError::Stream(_) => true,
            ApiError::InStream { kind, .. } => matches!(
                kind.as_str(),
                "overloaded_error" | "api_error" | "rate_limit_error"
            ),
            ApiError::Tls(_) | ApiError::Config(_) => false,
        }
    }

    /// The model itself is unavailable (unknown or overloaded): another
    /// model may serve the turn.
    pub fn wants_fallback(&self) -> bool {
        match self {
            ApiError::Http { status, kind, .. } => {
                matches!(status, 404 | 529)
                    || kind == "overloaded_error"
                    || kind == "not_found_error"
            }
            ApiError::InStream { kind, .. } => kind == "overloaded_error",
            _ => false,
        }
    }

    /// A server that takes no `tools` in a request: a chat template
    /// without tool support (llama.cpp without `--jinja`, an Ollama model
    /// "does not support tools"). Asking again would get the same answer;
    /// the tools can be described in the prompt instead.
    pub fn refuses_tools(&self) -> bool {
        match self {
            ApiError::Http {
                status, message, ..
            } => {
                let m = message.to_ascii_lowercase();
                matches!(status, 400 | 422 | 500 | 501)
                    && (m.contains("tool") || m.contains("function call"))
                    && (m.contains("support")
                        || m.contains("jinja")
                        || m.contains("not allowed")
                        || m.contains("unsupported")
                        || m.contains("requires"))
            }
            _ => false,
        }
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            ApiError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            ApiError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::Http {
                status,
                kind,
                message,
                request_id,
                ..
            } => {
                write!(f, "API error {status} {kind}: {message}")?;
                if let Some(id) = request_id {
                    write!(f, " (request-id {id})")?;
                }
                Ok(())
            }
            ApiError::Transport(m) => write!(f, "connection failed: {m}"),
            ApiError::Stream(m) => write!(f, "stream failed: {m}"),
            ApiError::InStream { kind, message } => write!(f, "API stream error {kind}: {message}"),
            ApiError::Tls(m) => write!(f, "TLS failed: {m}"),
            ApiError::Config(m) => write!(f, "configuration error: {m}"),
        }
    }
}

impl std::error::Error for ApiError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ApiError::Transport(d)
            | ApiError::Stream(d)
            | ApiError::Tls(d)
            | ApiError::Config(d) => d.source(),
            ApiError::Http { .. } | ApiError::InStream { .. } => None,
        }
    }
}

/// Exponential backoff with jitter; `retry-after` wins when the server
/// sends it.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub base: Duration,
    pub cap: Duration,
    /// No retry is started once this much time has gone by since the
    /// first attempt of a turn (a dead network should not take minutes).
    pub max_elapsed: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 10,
            base: Duration::from_millis(500),
            cap: Duration::from_secs(32),
            max_elapsed: Duration::from_secs(180),
        }
    }
}

impl RetryPolicy {
    /// Delay before retry number `attempt` (1-based).
    pub fn delay(&self, attempt: u32, err: &ApiError) -> Duration {
        if let Some(after) = err.retry_after() {
            // Honour the server, within reason.
            return after.min(Duration::from_secs(300));
        }
        let exp = self
            .base
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        let capped = exp.min(self.cap);
        // Up to 25% jitter so clients that failed together don't return together.
        let jitter = capped.mul_f64(fastrand::f64() * 0.25);
        capped + jitter
    }
}

/// The text of a message's or a tool result's content: the string, or its
/// text parts joined by newlines.
pub(crate) fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.str_field("text"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_classification() {
        let http = |status| ApiError::Http {
            status,
            kind: String::new(),
            message: String::new(),
            retry_after: None,
            request_id: None,
        };
        for s in [429, 529, 500, 503, 408] {
            assert!(http(s).is_retryable(), "{s}");
        }
        for s in [400, 401, 403, 404, 413] {
            assert!(!http(s).is_retryable(), "{s}");
        }
        assert!(!ApiError::Config("x".into()).is_retryable());
        assert!(ApiError::Stream("cut".into()).is_retryable());
    }

    #[test]
    fn backoff_grows_caps_and_obeys_retry_after() {
        let p = RetryPolicy {
            max_retries: 10,
            base: Duration::from_millis(100),
            cap: Duration::from_millis(1000),
            max_elapsed: Duration::from_secs(60),
        };
        let e = ApiError::Transport("x".into());
        let d1 = p.delay(1, &e);
        let d3 = p.delay(3, &e);
        let d9 = p.delay(9, &e);
        assert!(d1 >= Duration::from_millis(100) && d1 <= Duration::from_millis(125));
        assert!(d3 >= Duration::from_millis(400) && d3 <= Duration::from_millis(500));
        assert!(d9 >= Duration::from_millis(1000) && d9 <= Duration::from_millis(1250));
        let ra = ApiError::Http {
            status: 429,
            kind: String::new(),
            message: String::new(),
            retry_after: Some(Duration::from_secs(3)),
            request_id: None,
        };
        assert_eq!(p.delay(1, &ra), Duration::from_secs(3));
    }
}
