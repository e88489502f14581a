//! The OpenAI-compatible chat completions wire format, for local servers
//! (llama.cpp's `llama-server`, Ollama, vLLM) and other providers.
//!
//! The conversation stays in Messages API shape everywhere in tern; this
//! module translates at the edges. Requests: system blocks become one
//! system message, tool_use blocks become `tool_calls`, tool_result
//! blocks become `tool` messages. Responses: each streamed chunk becomes
//! the Messages API events the assembler already understands, so the
//! streaming tool executor works the same for both formats. Reasoning —
//! `reasoning_content` or `reasoning` deltas, or a `<think>` block opening
//! the text (see `think`) — becomes thinking blocks, never answer text, and
//! is not sent back: `assistant` keeps only text and tool calls.

mod chunk;
mod think;

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::json::{self, Map, Value};
use crate::model::request::RequestParts;
use crate::obj;

pub fn build(parts: &RequestParts<'_>) -> String {
    let mut messages: Vec<Value> = Vec::new();
    if !parts.system.is_empty() {
        messages.push(obj! { "role" => "system", "content" => parts.system.join("\n\n") });
    }
    for m in parts.messages {
        match m.str_field("role") {
            Some("assistant") => messages.push(assistant(m)),
            _ => messages.extend(user(m)),
        }
    }
    let mut body = obj! {
        "model" => parts.model,
        "max_tokens" => parts.max_tokens,
        "stream" => true,
        "stream_options" => obj! { "include_usage" => true },
        "messages" => messages,
    };
    if let (Some(effort), Some(map)) = (parts.thinking.reasoning_effort(), body.as_object_mut()) {
        map.insert("reasoning_effort", effort);
    }
    if !parts.tools.is_empty()
        && let Some(map) = body.as_object_mut()
    {
        let tools: Vec<Value> = parts
            .tools
            .iter()
            .map(|t| {
                obj! {
                    "type" => "function",
                    "function" => obj! {
                        "name" => t.str_field("name").unwrap_or_default(),
                        "description" => t.str_field("description").unwrap_or_default(),
                        "parameters" => t.get("input_schema").cloned().unwrap_or_else(|| obj! {}),
                    },
                }
            })
            .collect();
        map.insert("tools", tools);
    }
    body.to_json()
}

fn blocks(m: &Value) -> Vec<Value> {
    match m.get("content") {
        Some(Value::Array(b)) => b.clone(),
        Some(Value::String(s)) => vec![obj! { "type" => "text", "text" => s.as_str() }],
        _ => Vec::new(),
    }
}

/// Tool results first (as `tool` messages, which must follow the call),
/// then the user's own text. Images cannot go in a `tool` message, so
/// they follow in a user message as `image_url` parts (data URLs); a PDF
/// cannot be shown through this format at all, and the model is told so.
fn user(m: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    let mut text = Vec::new();
    let mut images: Vec<Value> = Vec::new();
    for b in blocks(m) {
        match b.str_field("type") {
            Some("tool_result") => {
                let mut content = super::content_text(b.get("content"));
                if let Some(Value::Array(parts)) = b.get("content") {
                    for part in parts {
                        match attachment(part) {
                            Some(Attachment::Image(url)) => images.push(url),
                            Some(Attachment::Unshown(note)) => {
                                content.push_str(&format!("\n{note}"));
                            }
                            None => {}
                        }
                    }
                }
                if b.get("is_error").and_then(Value::as_bool) == Some(true) {
                    content = format!("Error: {content}");
                }
                out.push(obj! {
                    "role" => "tool",
                    "tool_call_id" => b.str_field("tool_use_id").unwrap_or_default(),
                    "content" => content,
                });
            }
            Some("text") => text.push(b.str_field("text").unwrap_or_default().to_string()),
            _ => match attachment(&b) {
                Some(Attachment::Image(url)) => images.push(url),
                Some(Attachment::Unshown(note)) => text.push(note),
                None => {}
            },
        }
    }
    if images.is_empty() {
        if !text.is_empty() {
            out.push(obj! { "role" => "user", "content" => text.join("\n\n") });
        }
        return out;
    }
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(obj! { "type" => "text", "text" => text.join("\n\n") });
    } else {
        parts
            .push(obj! { "type" => "text", "text" => "(the images above, from the tool results)" });
    }
    parts.extend(images);
    out.push(obj! { "role" => "user", "content" => parts });
    out
}

enum Attachment {
    /// An `image_url` part.
    Image(Value),
    /// What stands for content this format cannot carry.
    Unshown(String),
}

/// An image or document block in chat completions terms.
fn attachment(b: &Value) -> Option<Attachment> {
    let kind = b.str_field("type")?;
    if kind != "image" && kind != "document" {
        return None;
    }
    let source = b.get("source");
    let media_type = source.and_then(|s| s.str_field("media_type")).unwrap_or("");
    let data = source.and_then(|s| s.str_field("data"));
    match (kind, data) {
        ("image", Some(data)) => Some(Attachment::Image(obj! {
            "type" => "image_url",
            "image_url" => obj! { "url" => format!("data:{media_type};base64,{data}") },
        })),
        ("image", None) => Some(Attachment::Unshown(
            "[an image was attached here, but not as data this provider can be sent]".into(),
        )),
        _ => Some(Attachment::Unshown(format!(
            "[a document ({}) was attached here, but documents cannot be shown through this \
             provider's chat completions format; extract its text instead, e.g. with \
             `pdftotext file.pdf -`]",
            if media_type.is_empty() {
                "unknown type"
            } else {
                media_type
            }
        ))),
    }
}

fn assistant(m: &Value) -> Value {
    let mut text = Vec::new();
    let mut calls = Vec::new();
    for b in blocks(m) {
        match b.str_field("type") {
            Some("text") => text.push(b.str_field("text").unwrap_or_default().to_string()),
            Some("tool_use") => calls.push(obj! {
                "id" => b.str_field("id").unwrap_or_default(),
                "type" => "function",
                "function" => obj! {
                    "name" => b.str_field("name").unwrap_or_default(),
                    "arguments" => b.get("input").map_or("{}".to_string(), Value::to_json),
                },
            }),
            _ => {}
        }
    }
    let mut out = obj! { "role" => "assistant", "content" => text.join("\n\n") };
    if !calls.is_empty()
        && let Some(map) = out.as_object_mut()
    {
        map.insert("tool_calls", calls);
    }
    out
}

#[derive(Debug, PartialEq, Eq)]
enum Open {
    Text(usize),
    Thinking(usize),
    Tool { index: usize, slot: i64 },
}

/// Turns chat completion chunks into Messages API events.
#[derive(Debug, Default)]
pub struct Translator {
    started: bool,
    open: Option<Open>,
    /// Where a `<think>` block in the text ends.
    think: think::Splitter,
    next_index: usize,
    /// A finish_reason was seen: message_delta was sent.
    finished: bool,
    stopped: bool,
    /// Every chunk through the general parser, to hold the fast path to it.
    #[cfg(test)]
    general_only: bool,
}

/// One translated event: (name, JSON data).
pub type Translated = (&'static str, String);

impl Translator {
    /// Translates one SSE `data:` payload.
    pub fn translate(&mut self, data: &str) -> Vec<Translated> {
        let mut out = Vec::new();
        if data.trim() == "[DONE]" {
            self.finish(&mut out, None, None);
            if !self.stopped {
                self.stopped = true;
                out.push(("message_stop", obj! { "type" => "message_stop" }.to_json()));
            }
            return out;
        }
        if self.started && self.plain(data, &mut out) {
            return out;
        }
        let chunk = match json::parse(data) {
            Ok(v) => v,
            Err(e) => {
                out.push(error("invalid_response", &format!("unreadable chunk: {e}")));
                return out;
            }
        };
        if let Some(err) = chunk.get("error") {
            let message = err
                .str_field("message")
                .map(str::to_string)
                .unwrap_or_else(|| err.to_json());
            let kind = err.str_field("type").unwrap_or("api_error");
            out.push(error(kind, &message));
            return out;
        }
        if !self.started {
            self.started = true;
            out.push((
                "message_start",
                obj! {
                    "type" => "message_start",
                    "message" => obj! {
                        "id" => chunk.str_field("id").unwrap_or("chatcmpl"),
                        "type" => "message",
                        "role" => "assistant",
                        "model" => chunk.str_field("model").unwrap_or_default(),
                        "content" => Vec::new(),
                        "usage" => obj! { "input_tokens" => 0i64, "output_tokens" => 0i64 },
                    },
                }
                .to_json(),
            ));
        }
        let usage = chunk.get("usage").filter(|u| !u.is_null()).map(|u| {
            let n = |k: &str| u.get(k).and_then(Value::as_i64).unwrap_or(0);
            (n("prompt_tokens"), n("completion_tokens"))
        });
        let choice = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first());
        if let Some(choice) = choice {
            if let Some(delta) = choice.get("delta") {
                self.delta(delta, &mut out);
            }
            if let Some(reason) = choice.str_field("finish_reason") {
                self.finish(&mut out, Some(reason), usage);
                return out;
            }
        }
        if let Some((input, output)) = usage {
            // Usage in a chunk of its own, after finish_reason.
            out.push(message_delta(None, Some((input, output))));
        }
        out
    }

    /// A chunk that only adds text or reasoning, without a JSON tree (see
    /// `chunk`); false, having done nothing, for any other chunk.
    fn plain(&mut self, data: &str, out: &mut Vec<Translated>) -> bool {
        #[cfg(test)]
        if self.general_only {
            return false;
        }
        let Some(p) = chunk::plain(data) else {
            return false;
        };
        let mut text = [Cow::Borrowed(""), Cow::Borrowed(""), Cow::Borrowed("")];
        for (raw, into) in [p.reasoning_content, p.reasoning, p.content]
            .into_iter()
            .zip(text.iter_mut())
        {
            let Some(raw) = raw else { continue };
            // Without an escape the raw text is the text (the reader let
            // no quote or control character through).
            if !raw.contains('\\') {
                *into = Cow::Borrowed(raw);
                continue;
            }
            let mut decoded = String::with_capacity(raw.len());
            // A bad escape: the general parser words the error.
            if json::unescape_into(raw, &mut decoded).is_err() {
                return false;
            }
            *into = Cow::Owned(decoded);
        }
        let [reasoning_content, reasoning, content] = &text;
        self.text_and_reasoning([reasoning_content, reasoning], content, out);
        true
    }

    fn delta(&mut self, delta: &Value, out: &mut Vec<Translated>) {
        let field = |key: &str| delta.str_field(key).unwrap_or_default();
        self.text_and_reasoning(
            [field("reasoning_content"), field("reasoning")],
            field("content"),
            out,
        );
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let slot = call.get("index").and_then(Value::as_i64).unwrap_or(0);
            let same = matches!(self.open, Some(Open::Tool { slot: s, .. }) if s == slot);
            let function = call.get("function");
            if !same {
                // The text is over when a call begins: what it held back
                // goes before the call.
                self.held_back(out);
                self.close(out);
                let index = self.next_index;
                self.next_index += 1;
                self.open = Some(Open::Tool { index, slot });
                let id = call
                    .str_field("id")
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("call_{index}"));
                let name = function
                    .and_then(|f| f.str_field("name"))
                    .unwrap_or_default();
                out.push((
                    "content_block_start",
                    obj! { "type" => "content_block_start", "index" => index,
                           "content_block" => obj! { "type" => "tool_use", "id" => id, "name" => name, "input" => obj! {} } }
                    .to_json(),
                ));
            }
            let args = function
                .and_then(|f| f.str_field("arguments"))
                .unwrap_or_default();
            if !args.is_empty()
                && let Some(Open::Tool { index, .. }) = self.open
            {
                out.push((
                    "content_block_delta",
                    obj! { "type" => "content_block_delta", "index" => index,
                    "delta" => obj! { "type" => "input_json_delta", "partial_json" => args } }
                    .to_json(),
                ));
            }
        }
    }

    fn text_and_reasoning(
        &mut self,
        reasoning: [&str; 2],
        content: &str,
        out: &mut Vec<Translated>,
    ) {
        // llama.cpp and vLLM say `reasoning_content`; Ollama and OpenRouter
        // `reasoning`.
        for r in reasoning.into_iter().filter(|r| !r.is_empty()) {
            self.piece(true, r, out);
        }
        if content.is_empty() {
            return;
        }
        if self.think.passes_through() {
            self.piece(false, content, out);
            return;
        }
        for piece in self.think.push(content) {
            self.owned_piece(piece, out);
        }
    }

    /// What the `<think>` splitter held back, now that the text is over.
    fn held_back(&mut self, out: &mut Vec<Translated>) {
        for piece in self.think.finish() {
            self.owned_piece(piece, out);
        }
    }

    fn owned_piece(&mut self, piece: think::Piece, out: &mut Vec<Translated>) {
        match piece {
            think::Piece::Thinking(t) => self.piece(true, &t, out),
            think::Piece::Text(t) => self.piece(false, &t, out),
        }
    }

    /// Adds text or thinking to the open block of its kind, or opens one.
    fn piece(&mut self, thinking: bool, text: &str, out: &mut Vec<Translated>) {
        let index = match self.open {
            Some(Open::Thinking(i)) if thinking => i,
            Some(Open::Text(i)) if !thinking => i,
            _ => {
                self.close(out);
                let index = self.next_index;
                self.next_index += 1;
                let block = if thinking {
                    self.open = Some(Open::Thinking(index));
                    obj! { "type" => "thinking", "thinking" => "", "signature" => "" }
                } else {
                    self.open = Some(Open::Text(index));
                    obj! { "type" => "text", "text" => "" }
                };
                out.push((
                    "content_block_start",
                    obj! { "type" => "content_block_start", "index" => index,
                    "content_block" => block }
                    .to_json(),
                ));
                index
            }
        };
        // Written directly, in the byte layout the assembler's fast path
        // reads: most events of a stream are these.
        let (kind, field) = if thinking {
            ("thinking_delta", "thinking")
        } else {
            ("text_delta", "text")
        };
        let mut event = String::with_capacity(text.len() + 96);
        event.push_str("{\"type\":\"content_block_delta\",\"index\":");
        // Writing into a String cannot fail.
        let _ = write!(event, "{index}");
        event.push_str(",\"delta\":{\"type\":\"");
        event.push_str(kind);
        event.push_str("\",\"");
        event.push_str(field);
        event.push_str("\":");
        json::write_str(text, &mut event);
        event.push_str("}}");
        out.push(("content_block_delta", event));
    }

    fn close(&mut self, out: &mut Vec<Translated>) {
        let index = match self.open.take() {
            Some(Open::Text(i) | Open::Thinking(i) | Open::Tool { index: i, .. }) => i,
            None => return,
        };
        out.push((
            "content_block_stop",
            obj! { "type" => "content_block_stop", "index" => index }.to_json(),
        ));
    }

    fn finish(
        &mut self,
        out: &mut Vec<Translated>,
        reason: Option<&str>,
        usage: Option<(i64, i64)>,
    ) {
        self.held_back(out);
        self.close(out);
        if self.finished {
            return;
        }
        if !self.started {
            return;
        }
        self.finished = true;
        let stop = match reason {
            Some("length") => "max_tokens",
            Some("tool_calls" | "function_call") => "tool_use",
            _ => "end_turn",
        };
        out.push(message_delta(Some(stop), usage));
    }
}

fn message_delta(stop: Option<&str>, usage: Option<(i64, i64)>) -> Translated {
    let mut delta = Map::new();
    if let Some(s) = stop {
        delta.insert("stop_reason", s);
    }
    let mut v = obj! { "type" => "message_delta", "delta" => Value::Object(delta) };
    if let (Some((input, output)), Some(map)) = (usage, v.as_object_mut()) {
        map.insert(
            "usage",
            obj! { "input_tokens" => input, "output_tokens" => output },
        );
    }
    ("message_delta", v.to_json())
}

fn error(kind: &str, message: &str) -> Translated {
    (
        "error",
        obj! { "type" => "error", "error" => obj! { "type" => kind, "message" => message } }
            .to_json(),
    )
}

#[cfg(test)]
mod tests;
