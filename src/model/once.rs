//! One request, one text answer: for side questions a tool asks the model
//! (WebFetch's question about a page) and `doctor --bench`'s measurements,
//! outside the conversation. Nothing runs here: tool calls the model makes
//! (the bench offers one, to see whether it comes back native) are handed
//! back, not made. No retries: the caller has a fallback for a failed side
//! question.

use super::client::Client;
use super::request::RequestParts;
use super::sse::{Flow, SseParser};
use super::stream::{Assembler, Block, StreamError, Update, Usage};
use super::{ApiError, Detail, Provider};

/// A model side questions go to (WebFetch's about a page, the REPL's
/// `haiku()`, an MCP server's sampling): its client, its name, and its
/// context window in tokens. A core build asks none (`doctor --bench`
/// uses [`complete`] alone).
#[cfg(any(feature = "web", feature = "repl", feature = "mcp"))]
pub struct SideModel {
    pub client: Client,
    pub model: String,
    /// What the side question may fill (MCP sampling does not ask).
    #[cfg_attr(not(any(feature = "web", feature = "repl")), allow(dead_code))]
    pub window: u64,
}

/// The model's answer to a side question.
#[derive(Debug, Clone)]
pub struct Answer {
    pub text: String,
    pub usage: Usage,
    /// Tool calls it made natively (none run): `doctor --bench` asks
    /// whether a server returns them.
    pub calls: Vec<super::stream::ToolUse>,
    /// When the first and the last piece of output arrived, from the
    /// moment the request was sent, and how many pieces there were: a
    /// server's prompt and generation speed.
    pub first_output: Option<std::time::Duration>,
    pub last_output: Option<std::time::Duration>,
    pub pieces: u64,
}

/// The request in the wire format of `provider`.
pub fn encode(provider: Provider, parts: &RequestParts<'_>) -> String {
    match provider {
        Provider::Anthropic => super::request::build(parts),
        Provider::OpenAi => super::openai::build(parts),
    }
}

/// Sends `parts` and gathers the text of the answer.
pub async fn complete(client: &Client, parts: &RequestParts<'_>) -> Result<Answer, ApiError> {
    let betas = parts.thinking.betas(parts.model);
    let sent = std::time::Instant::now();
    let (mut first_output, mut last_output, mut pieces) = (None, None, 0u64);
    let mut stream = client
        .open(encode(client.provider(), parts), &betas)
        .await?;
    let mut parser = SseParser::default();
    let mut translator =
        (client.provider() == Provider::OpenAi).then(super::openai::Translator::default);
    let mut asm = Assembler::new();
    let mut buf = vec![0u8; 16 * 1024];
    while !asm.is_done() {
        let n = stream.next_chunk(&mut buf).await?;
        if n == 0 {
            return Err(ApiError::Stream(
                "the response ended before message_stop".into(),
            ));
        }
        let mut failure: Option<ApiError> = None;
        let mut handle = |event: &str, data: &str| -> Flow {
            if event == "content_block_delta" {
                let at = sent.elapsed();
                first_output.get_or_insert(at);
                last_output = Some(at);
                pieces += 1;
            }
            match asm.feed(event, data) {
                Ok(Update::MessageDone) => Flow::Stop,
                Ok(_) => Flow::Continue,
                Err(StreamError::Api { kind, message }) => {
                    failure = Some(ApiError::InStream { kind, message });
                    Flow::Stop
                }
                Err(StreamError::Protocol(m)) => {
                    failure = Some(ApiError::Stream(m.into()));
                    Flow::Stop
                }
            }
        };
        parser
            .feed(&buf[..n], &mut |ev| match translator.as_mut() {
                None => handle(ev.event, ev.data),
                Some(t) => {
                    for (event, data) in t.translate(ev.data) {
                        if handle(event, &data) == Flow::Stop {
                            return Flow::Stop;
                        }
                    }
                    Flow::Continue
                }
            })
            .map_err(|e| ApiError::Stream(Detail::caused_by(e.to_string(), e)))?;
        if let Some(e) = failure {
            return Err(e);
        }
    }
    let text: Vec<&str> = asm
        .blocks()
        .filter_map(|b| match b {
            Block::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    let calls = asm
        .blocks()
        .filter_map(|b| match b {
            Block::ToolUse(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    Ok(Answer {
        text: text.join("\n"),
        usage: asm.usage,
        calls,
        first_output,
        last_output,
        pieces,
    })
}
