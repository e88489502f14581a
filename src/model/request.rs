//! Builds the Messages API request body.
//!
//! Prompt caching: the tools and the system prompt form a prefix that does
//! not change during a session, so the last system block carries a
//! breakpoint; a second breakpoint on the newest message lets each turn
//! reuse the conversation cached by the turn before it.

use crate::json::{Value, write_str};
use crate::model::thinking::Thinking;
use crate::obj;

pub struct RequestParts<'a> {
    pub model: &'a str,
    pub max_tokens: u32,
    pub system: &'a [String],
    pub tools: &'a [Value],
    pub messages: &'a [Value],
    /// The session's; side requests (summaries, small models) send the
    /// default: none.
    pub thinking: Thinking,
}

fn ephemeral() -> Value {
    obj! { "type" => "ephemeral" }
}

pub fn build(parts: &RequestParts<'_>) -> String {
    let mut out = String::with_capacity(16 * 1024);
    out.push_str("{\"model\":");
    write_str(parts.model, &mut out);
    out.push_str(&format!(
        ",\"max_tokens\":{},\"stream\":true",
        parts.max_tokens
    ));
    if let Some(thinking) = parts.thinking.field(parts.model, parts.max_tokens) {
        out.push_str(",\"thinking\":");
        out.push_str(&thinking.to_json());
    }
    if let Some(config) = parts.thinking.output_config(parts.model) {
        out.push_str(",\"output_config\":");
        out.push_str(&config.to_json());
    }

    if !parts.system.is_empty() {
        out.push_str(",\"system\":[");
        for (i, text) in parts.system.iter().enumerate() {
            let mut block = obj! { "type" => "text", "text" => text.as_str() };
            if i + 1 == parts.system.len()
                && let Some(m) = block.as_object_mut()
            {
                m.insert("cache_control", ephemeral());
            }
            if i > 0 {
                out.push(',');
            }
            out.push_str(&block.to_json());
        }
        out.push(']');
    }

    if !parts.tools.is_empty() {
        out.push_str(",\"tools\":[");
        for (i, tool) in parts.tools.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&tool.to_json());
        }
        out.push(']');
    }

    out.push_str(",\"messages\":[");
    for (i, message) in parts.messages.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if i + 1 == parts.messages.len() {
            out.push_str(&with_breakpoint(message).to_json());
        } else {
            out.push_str(&message.to_json());
        }
    }
    out.push_str("]}");
    out
}

/// The message with `cache_control` on its last content block; a plain
/// string content is first turned into a text block so it can carry one.
fn with_breakpoint(message: &Value) -> Value {
    let mut m = message.clone();
    let Some(obj) = m.as_object_mut() else {
        return m;
    };
    let content = match obj.remove("content") {
        Some(Value::String(s)) => vec![obj! { "type" => "text", "text" => s }],
        Some(Value::Array(a)) => a,
        Some(other) => {
            obj.insert("content", other);
            return m;
        }
        None => return m,
    };
    let mut content = content;
    if let Some(Value::Object(last)) = content.last_mut() {
        // Thinking blocks cannot carry cache_control, and the provider's
        // own tool blocks go back exactly as they came.
        let kind = last.get("type").and_then(Value::as_str).unwrap_or("");
        if !matches!(
            kind,
            "thinking" | "redacted_thinking" | "server_tool_use" | "web_search_tool_result"
        ) {
            last.insert("cache_control", ephemeral());
        }
    }
    obj.insert("content", content);
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    #[test]
    fn breakpoints_on_system_and_last_message() {
        let system = vec!["a".to_string(), "b".to_string()];
        let tools = vec![obj! { "name" => "Read" }];
        let messages = vec![
            obj! { "role" => "user", "content" => "hi" },
            obj! { "role" => "assistant", "content" => vec![obj! {"type"=>"text","text"=>"yo"}] },
            obj! { "role" => "user", "content" => "more" },
        ];
        let body = build(&RequestParts {
            model: "m",
            max_tokens: 10,
            system: &system,
            tools: &tools,
            messages: &messages,
            thinking: Thinking::default(),
        });
        let v = parse(&body).unwrap();
        let sys = v.get("system").unwrap().as_array().unwrap();
        assert!(sys[0].get("cache_control").is_none());
        assert!(sys[1].get("cache_control").is_some());
        let msgs = v.get("messages").unwrap().as_array().unwrap();
        assert_eq!(msgs[0].get("content").unwrap().as_str(), Some("hi"));
        let last = &msgs[2].get("content").unwrap().as_array().unwrap()[0];
        assert_eq!(last.str_field("text"), Some("more"));
        assert!(last.get("cache_control").is_some());
        assert_eq!(v.get("stream").unwrap().as_bool(), Some(true));
    }
}
