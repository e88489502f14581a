//! Turns Messages API stream events into finished content blocks.
//!
//! The assembler is fed one SSE event at a time and reports what became
//! complete: text as it arrives (for live display) and each content block
//! when its `content_block_stop` arrives, which is the moment a tool may
//! start. Blocks the client does not interpret (thinking, redacted thinking,
//! server tool blocks) are kept field for field and sent back unchanged.

use crate::json::{self, Map, Value};
use crate::obj;

/// A finished content block of an assistant message.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Text(String),
    ToolUse(ToolUse),
    /// Any other block, in its API shape.
    Other(Value),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolUse {
    pub id: String,
    pub name: String,
    /// The parsed input, or why the streamed JSON could not be parsed.
    pub input: Result<Value, String>,
}

impl Block {
    /// The block as it goes back to the API in the next request.
    pub fn to_api(&self) -> Value {
        match self {
            Block::Text(text) => obj! { "type" => "text", "text" => text.as_str() },
            Block::ToolUse(t) => obj! {
                "type" => "tool_use",
                "id" => t.id.as_str(),
                "name" => t.name.as_str(),
                // An unparsable input is replaced by {} so the request stays
                // valid; the tool_result tells the model what went wrong.
                "input" => t.input.clone().unwrap_or_else(|_| obj! {}),
            },
            Block::Other(v) => v.clone(),
        }
    }
}

/// Token counts as the API reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
}

impl Usage {
    /// A message's `usage`, as the API writes it.
    pub(crate) fn from_api(v: &Value) -> Usage {
        let mut u = Usage::default();
        u.merge_from(v);
        u
    }

    fn merge_from(&mut self, v: &Value) {
        let field = |name: &str| v.get(name).and_then(Value::as_i64).map(|n| n.max(0) as u64);
        if let Some(n) = field("input_tokens") {
            self.input_tokens = n;
        }
        if let Some(n) = field("output_tokens") {
            self.output_tokens = n;
        }
        if let Some(n) = field("cache_creation_input_tokens") {
            self.cache_creation_input_tokens = n;
        }
        if let Some(n) = field("cache_read_input_tokens") {
            self.cache_read_input_tokens = n;
        }
    }

    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
    }

    pub fn to_json(self) -> Value {
        obj! {
            "input_tokens" => self.input_tokens,
            "output_tokens" => self.output_tokens,
            "cache_creation_input_tokens" => self.cache_creation_input_tokens,
            "cache_read_input_tokens" => self.cache_read_input_tokens,
        }
    }
}

/// What one event changed. Text is lent from the block being built, so
/// the hot path allocates nothing per delta.
#[derive(Debug, PartialEq)]
pub enum Update<'a> {
    Nothing,
    /// A piece of visible text.
    TextDelta(&'a str),
    /// A content block is complete.
    BlockDone(Block),
    /// `message_stop` arrived: the message is complete.
    MessageDone,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StreamError {
    /// The server sent `event: error`.
    Api { kind: String, message: String },
    /// An event was not what the protocol allows.
    Protocol(String),
}

impl std::fmt::Display for StreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamError::Api { kind, message } => write!(f, "{kind}: {message}"),
            StreamError::Protocol(m) => write!(f, "malformed stream: {m}"),
        }
    }
}

struct Pending {
    start: Map,
    kind: String,
    text: String,
    thinking: String,
    signature: String,
    partial_json: String,
    citations: Vec<Value>,
}

#[derive(Default)]
pub struct Assembler {
    id: String,
    model: String,
    pending: Vec<(usize, Pending)>,
    blocks: Vec<(usize, Block)>,
    pub usage: Usage,
    pub stop_reason: Option<String>,
    started: bool,
    done: bool,
}

impl Assembler {
    pub fn new() -> Self {
        Assembler::default()
    }

    /// Has any content block completed? Before that a failed attempt can be
    /// retried without anyone having seen a partial answer.
    pub fn has_blocks(&self) -> bool {
        !self.blocks.is_empty()
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The completed blocks so far, in index order.
    pub fn blocks(&self) -> impl Iterator<Item = &Block> {
        self.blocks.iter().map(|(_, b)| b)
    }

    /// The assistant message built from completed blocks (a cut stream keeps
    /// what was complete and drops the unfinished block).
    pub fn message(&self) -> Value {
        let mut blocks: Vec<&(usize, Block)> = self.blocks.iter().collect();
        blocks.sort_by_key(|(i, _)| *i);
        obj! {
            "id" => self.id.as_str(),
            "type" => "message",
            "role" => "assistant",
            "model" => self.model.as_str(),
            "content" => blocks.iter().map(|(_, b)| b.to_api()).collect::<Vec<_>>(),
            "stop_reason" => self.stop_reason.clone(),
            "usage" => self.usage.to_json(),
        }
    }

    /// All the answer's text, its text blocks joined.
    pub fn text(&self) -> String {
        let mut blocks: Vec<&(usize, Block)> = self.blocks.iter().collect();
        blocks.sort_by_key(|(i, _)| *i);
        blocks
            .iter()
            .filter_map(|(_, b)| match b {
                Block::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Turns a finished answer's text into the tool calls it spelled out
    /// (see `agent::recover`): its text blocks become `text` (when any is
    /// left), the calls follow as tool_use blocks, and the answer stops
    /// for tool use as a native call's would.
    pub fn make_calls(&mut self, text: String, calls: Vec<ToolUse>) {
        let first_text = self
            .blocks
            .iter()
            .filter(|(_, b)| matches!(b, Block::Text(_)))
            .map(|(i, _)| *i)
            .min();
        self.blocks.retain(|(_, b)| !matches!(b, Block::Text(_)));
        let mut next = self.blocks.iter().map(|(i, _)| i + 1).max().unwrap_or(0);
        if let Some(at) = first_text.filter(|_| !text.is_empty()) {
            self.blocks.push((at, Block::Text(text)));
            next = next.max(at + 1);
        }
        for call in calls {
            self.blocks.push((next, Block::ToolUse(call)));
            next += 1;
        }
        self.stop_reason = Some("tool_use".to_string());
    }

    pub fn feed(&mut self, event: &str, data: &str) -> Result<Update<'_>, StreamError> {
        if event == "ping" {
            return Ok(Update::Nothing);
        }
        // Most events are small deltas: read those without a JSON tree.
        if let Some(d) = super::delta::scan(data) {
            return self.delta(event, d);
        }
        let v =
            json::parse(data).map_err(|e| StreamError::Protocol(format!("{event} event: {e}")))?;
        let kind = v.str_field("type").unwrap_or(event);
        match kind {
            "ping" => Ok(Update::Nothing),
            "error" => {
                let err = v.get("error").unwrap_or(&Value::Null);
                Err(StreamError::Api {
                    kind: err.str_field("type").unwrap_or("error").to_string(),
                    message: err.str_field("message").unwrap_or("").to_string(),
                })
            }
            "message_start" => {
                let m = v.get("message").unwrap_or(&Value::Null);
                self.id = m.str_field("id").unwrap_or("").to_string();
                self.model = m.str_field("model").unwrap_or("").to_string();
                if let Some(u) = m.get("usage") {
                    self.usage.merge_from(u);
                }
                self.started = true;
                Ok(Update::Nothing)
            }
            "content_block_start" => {
                let index = index_of(&v)?;
                let start = v
                    .get("content_block")
                    .and_then(Value::as_object)
                    .ok_or_else(|| {
                        StreamError::Protocol("content_block_start without block".into())
                    })?
                    .clone();
                let kind = start
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let pending = Pending {
                    text: start
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    thinking: start
                        .get("thinking")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    signature: start
                        .get("signature")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    kind,
                    start,
                    partial_json: String::new(),
                    citations: Vec::new(),
                };
                self.pending.retain(|(i, _)| *i != index);
                self.pending.push((index, pending));
                let text = self.pending.last().map_or("", |(_, p)| p.text.as_str());
                Ok(if text.is_empty() {
                    Update::Nothing
                } else {
                    Update::TextDelta(text)
                })
            }
            "content_block_delta" => {
                let index = index_of(&v)?;
                let p = self.pending_mut(index)?;
                let delta = v.get("delta").unwrap_or(&Value::Null);
                match delta.str_field("type").unwrap_or("") {
                    "text_delta" => {
                        let start = p.text.len();
                        p.text.push_str(delta.str_field("text").unwrap_or(""));
                        return Ok(Update::TextDelta(&p.text[start..]));
                    }
                    "input_json_delta" => p
                        .partial_json
                        .push_str(delta.str_field("partial_json").unwrap_or("")),
                    "thinking_delta" => p
                        .thinking
                        .push_str(delta.str_field("thinking").unwrap_or("")),
                    "signature_delta" => p
                        .signature
                        .push_str(delta.str_field("signature").unwrap_or("")),
                    "citations_delta" => {
                        if let Some(c) = delta.get("citation") {
                            p.citations.push(c.clone());
                        }
                    }
                    _ => {}
                }
                Ok(Update::Nothing)
            }
            "content_block_stop" => {
                let index = index_of(&v)?;
                let at = self
                    .pending
                    .iter()
                    .position(|(i, _)| *i == index)
                    .ok_or_else(|| {
                        StreamError::Protocol(format!("stop for unknown block {index}"))
                    })?;
                let (_, p) = self.pending.remove(at);
                let block = finish(p);
                self.blocks.push((index, block.clone()));
                Ok(Update::BlockDone(block))
            }
            "message_delta" => {
                if let Some(r) = v.get("delta").and_then(|d| d.str_field("stop_reason")) {
                    self.stop_reason = Some(r.to_string());
                }
                if let Some(u) = v.get("usage") {
                    self.usage.merge_from(u);
                }
                Ok(Update::Nothing)
            }
            "message_stop" => {
                self.done = true;
                Ok(Update::MessageDone)
            }
            // Unknown event types are skipped, as the API asks clients to do.
            _ => Ok(Update::Nothing),
        }
    }

    /// A delta read by the fast path: its string is unescaped straight
    /// onto the block's buffer.
    fn delta(
        &mut self,
        event: &str,
        d: super::delta::Delta<'_>,
    ) -> Result<Update<'_>, StreamError> {
        use super::delta::DeltaKind;
        let p = self.pending_mut(d.index)?;
        let buf = match d.kind {
            DeltaKind::Text => &mut p.text,
            DeltaKind::InputJson => &mut p.partial_json,
            DeltaKind::Thinking => &mut p.thinking,
            DeltaKind::Signature => &mut p.signature,
        };
        let start = buf.len();
        if let Err((offset, message)) = json::unescape_into(d.raw, buf) {
            buf.truncate(start);
            return Err(StreamError::Protocol(format!(
                "{event} event: {message} at byte {offset} of its string"
            )));
        }
        Ok(match d.kind {
            DeltaKind::Text => Update::TextDelta(&p.text[start..]),
            _ => Update::Nothing,
        })
    }

    fn pending_mut(&mut self, index: usize) -> Result<&mut Pending, StreamError> {
        self.pending
            .iter_mut()
            .find(|(i, _)| *i == index)
            .map(|(_, p)| p)
            .ok_or_else(|| StreamError::Protocol(format!("delta for unknown block {index}")))
    }
}

fn index_of(v: &Value) -> Result<usize, StreamError> {
    v.get("index")
        .and_then(Value::as_i64)
        .and_then(|i| usize::try_from(i).ok())
        .ok_or_else(|| StreamError::Protocol("event without a block index".into()))
}

fn finish(p: Pending) -> Block {
    match p.kind.as_str() {
        "text" if p.citations.is_empty() => Block::Text(p.text),
        "tool_use" => {
            let raw = p.partial_json.trim();
            let input = if raw.is_empty() {
                // No deltas: the start block's own input (usually {}).
                Ok(p.start.get("input").cloned().unwrap_or_else(|| obj! {}))
            } else {
                match json::parse(raw) {
                    Ok(v @ Value::Object(_)) => Ok(v),
                    Ok(_) => Err("tool input must be a JSON object".to_string()),
                    Err(e) => Err(format!("tool input is not valid JSON ({e})")),
                }
            };
            Block::ToolUse(ToolUse {
                id: p
                    .start
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                name: p
                    .start
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                input,
            })
        }
        _ => {
            let mut m = p.start;
            match p.kind.as_str() {
                "text" => {
                    m.insert("text", p.text);
                    m.insert("citations", p.citations);
                }
                "thinking" => {
                    m.insert("thinking", p.thinking);
                    m.insert("signature", p.signature);
                }
                _ => {
                    if !p.partial_json.trim().is_empty()
                        && let Ok(v) = json::parse(p.partial_json.trim())
                    {
                        m.insert("input", v);
                    }
                }
            }
            Block::Other(Value::Object(m))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An update with its text copied out, so a test can keep many.
    #[derive(Debug, PartialEq)]
    enum Owned {
        Nothing,
        TextDelta(String),
        BlockDone(Block),
        MessageDone,
    }

    fn owned(u: Update<'_>) -> Owned {
        match u {
            Update::Nothing => Owned::Nothing,
            Update::TextDelta(t) => Owned::TextDelta(t.to_string()),
            Update::BlockDone(b) => Owned::BlockDone(b),
            Update::MessageDone => Owned::MessageDone,
        }
    }

    fn feed_all(a: &mut Assembler, events: &[(&str, &str)]) -> Vec<Owned> {
        events
            .iter()
            .map(|(e, d)| owned(a.feed(e, d).unwrap()))
            .collect()
    }

    #[test]
    fn assembles_tool_json_from_fragments() {
        let mut a = Assembler::new();
        let ups = feed_all(
            &mut a,
            &[
                (
                    "message_start",
                    r#"{"type":"message_start","message":{"id":"m1","model":"x","usage":{"input_tokens":7,"output_tokens":1}}}"#,
                ),
                (
                    "content_block_start",
                    r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"Read","input":{}}}"#,
                ),
                (
                    "content_block_delta",
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"file_"}}"#,
                ),
                (
                    "content_block_delta",
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"path\": \"a\"}"}}"#,
                ),
                (
                    "content_block_stop",
                    r#"{"type":"content_block_stop","index":0}"#,
                ),
                (
                    "message_delta",
                    r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}"#,
                ),
                ("message_stop", r#"{"type":"message_stop"}"#),
            ],
        );
        let expected = Block::ToolUse(ToolUse {
            id: "t1".into(),
            name: "Read".into(),
            input: Ok(obj! { "file_path" => "a" }),
        });
        assert_eq!(ups[4], Owned::BlockDone(expected));
        assert_eq!(ups[6], Owned::MessageDone);
        assert_eq!(a.usage.input_tokens, 7);
        assert_eq!(a.usage.output_tokens, 9);
        assert_eq!(a.stop_reason.as_deref(), Some("tool_use"));
    }

    #[test]
    fn thinking_and_signature_round_trip() {
        let mut a = Assembler::new();
        feed_all(
            &mut a,
            &[
                (
                    "content_block_start",
                    r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
                ),
                (
                    "content_block_delta",
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}"#,
                ),
                (
                    "content_block_delta",
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}}"#,
                ),
                (
                    "content_block_stop",
                    r#"{"type":"content_block_stop","index":0}"#,
                ),
            ],
        );
        let content = a.message();
        let block = &content.get("content").unwrap().as_array().unwrap()[0];
        assert_eq!(
            block.to_json(),
            r#"{"type":"thinking","thinking":"hm","signature":"c2ln"}"#
        );
    }

    #[test]
    fn malformed_tool_json_is_reported_not_fatal() {
        let mut a = Assembler::new();
        let ups = feed_all(
            &mut a,
            &[
                (
                    "content_block_start",
                    r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"Bash","input":{}}}"#,
                ),
                (
                    "content_block_delta",
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"command\": "}}"#,
                ),
                (
                    "content_block_stop",
                    r#"{"type":"content_block_stop","index":0}"#,
                ),
            ],
        );
        match &ups[2] {
            Owned::BlockDone(Block::ToolUse(t)) => assert!(t.input.is_err()),
            other => panic!("unexpected {other:?}"),
        }
    }

    /// The fast delta path and the general parser agree: text with every
    /// kind of escape, in the API's layout and with keys reordered, adds
    /// up to exactly the text that was sent.
    #[test]
    fn fast_and_general_delta_paths_agree() {
        let pieces = [
            "plain ",
            "quote \" and \\ back",
            "line\nbreak\ttab",
            "é ü 中文 ",
            "😀 emoji",
            "\u{1}\u{1f} low",
            "/slash/",
            "",
            "{\"json\": [1, 2]}",
        ];
        let mut rng = 7u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for round in 0..200 {
            let mut a = Assembler::new();
            a.feed(
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            )
            .unwrap();
            let mut sent = String::new();
            for _ in 0..(next() % 12) {
                let t = pieces[(next() % pieces.len() as u64) as usize];
                sent.push_str(t);
                let text = Value::from(t).to_json();
                let data = if round % 2 == 0 {
                    format!(
                        r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":{text}}}}}"#
                    )
                } else {
                    format!(
                        r#"{{"delta":{{"text":{text},"type":"text_delta"}},"index":0,"type":"content_block_delta"}}"#
                    )
                };
                assert!(super::super::delta::scan(&data).is_some(), "{data}");
                match a.feed("content_block_delta", &data).unwrap() {
                    Update::TextDelta(got) => assert_eq!(got, t),
                    Update::Nothing => assert!(t.is_empty()),
                    other => panic!("{other:?}"),
                }
            }
            let done = a
                .feed(
                    "content_block_stop",
                    r#"{"type":"content_block_stop","index":0}"#,
                )
                .unwrap();
            assert_eq!(owned(done), Owned::BlockDone(Block::Text(sent)));
        }
        // \u escapes (a pair, a lone surrogate) decode as the parser does.
        let mut a = Assembler::new();
        a.feed(
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        )
        .unwrap();
        let data = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\ud83d\ude00 \ud800x \u00e9"}}"#;
        let general = json::parse(data).unwrap();
        let want = general
            .get("delta")
            .unwrap()
            .str_field("text")
            .unwrap()
            .to_string();
        assert_eq!(
            a.feed("content_block_delta", data).unwrap(),
            Update::TextDelta(&want)
        );
        // A bad escape is a protocol error on either path.
        let bad =
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\q"}}"#;
        assert!(matches!(
            a.feed("content_block_delta", bad),
            Err(StreamError::Protocol(_))
        ));
        assert!(json::parse(bad).is_err());
    }

    #[test]
    fn error_event_is_an_api_error() {
        let mut a = Assembler::new();
        let e = a
            .feed(
                "error",
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            )
            .unwrap_err();
        assert_eq!(
            e,
            StreamError::Api {
                kind: "overloaded_error".into(),
                message: "Overloaded".into()
            }
        );
    }
}
