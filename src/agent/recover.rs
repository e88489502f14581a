//! Tool calls a model wrote as text: small local models, or servers with
//! no tool-call template for them, answer a request that offered tools
//! with the call spelled out in the family's own format instead of as a
//! native `tool_calls` entry. Recognised:
//!
//! - Hermes / Qwen: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`,
//!   one or more;
//! - Mistral: `[TOOL_CALLS][{"name": …, "arguments": {…}}, …]`, or the
//!   newer `[TOOL_CALLS]name[ARGS]{…}`;
//! - Llama 3.x: `<|python_tag|>{"name": …, "parameters": {…}}`, or the
//!   whole answer being such an object (or a list of them);
//! - a fenced block (```` ```json ````) holding such an object or list.
//!
//! A call counts only when everything about it holds: the text parses as a
//! whole, every call names a tool that was offered, and every input passes
//! that tool's schema. Anything less — one call of two that does not parse,
//! a tool that was not offered, an input of the wrong shape — leaves the
//! answer as the text it was. Recovered calls then go through the same
//! pipeline as native ones: nothing about them is trusted more.
//!
//! The other way round, for a server that refuses `tools` in a request:
//! [`describe`] writes the tools into the system prompt, asking for calls
//! in the format the model's family was trained on.

use std::borrow::Cow;

use crate::json::{self, Value};
use crate::model::stream::ToolUse;

/// The calls found, and what the answer says besides them.
#[derive(Debug)]
pub struct Recovered {
    pub(crate) text: String,
    pub(crate) calls: Vec<ToolUse>,
}

/// The calls written in `text`, if it holds any and all of them are
/// sound. `schema` gives an offered tool's input schema by name.
pub fn recover<'s>(
    text: &str,
    schema: impl Fn(&str) -> Option<Cow<'s, Value>>,
) -> Option<Recovered> {
    let (rest, raw) = hermes(text)
        .or_else(|| mistral(text))
        .or_else(|| python_tag(text))
        .or_else(|| fenced(text))
        .or_else(|| bare(text))?;
    if raw.is_empty() {
        return None;
    }
    let mut calls = Vec::new();
    for (name, mut input) in raw {
        let schema = schema(&name)?;
        crate::tools::check_input(&schema, &mut input).ok()?;
        calls.push(ToolUse {
            id: format!("toolu_text_{}", &crate::session::new_uuid()[..12]),
            name,
            input: Ok(input),
        });
    }
    Some(Recovered {
        text: rest.trim().to_string(),
        calls,
    })
}

type Raw = Vec<(String, Value)>;

/// One call as a JSON object: `name` and its input under `arguments` or
/// `parameters` (an object, or a string holding one, as OpenAI writes it).
fn call(v: &Value) -> Option<(String, Value)> {
    let map = v.as_object()?;
    let name = map.get("name")?.as_str()?.trim().to_string();
    let input = match map.get("arguments").or_else(|| map.get("parameters")) {
        None => Value::Object(json::Map::new()),
        Some(Value::String(s)) => json::parse(s).ok()?,
        Some(v) => v.clone(),
    };
    // Anything else in the object (an id, a type) is allowed; the input
    // must be an object.
    input.as_object()?;
    (!name.is_empty()).then_some((name, input))
}

/// An object or a list of objects, each a call.
fn calls_in(text: &str) -> Option<Raw> {
    match json::parse(text.trim()).ok()? {
        Value::Array(items) if !items.is_empty() => items.iter().map(call).collect(),
        v @ Value::Object(_) => Some(vec![call(&v)?]),
        _ => None,
    }
}

fn hermes(text: &str) -> Option<(String, Raw)> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    if !text.contains(OPEN) {
        return None;
    }
    let mut rest = String::new();
    let mut raw = Vec::new();
    let mut left = text;
    while let Some(at) = left.find(OPEN) {
        rest.push_str(&left[..at]);
        let after = &left[at + OPEN.len()..];
        let end = after.find(CLOSE)?;
        raw.extend(calls_in(&after[..end])?);
        left = &after[end + CLOSE.len()..];
    }
    if left.contains(CLOSE) {
        return None;
    }
    rest.push_str(left);
    Some((rest, raw))
}

fn mistral(text: &str) -> Option<(String, Raw)> {
    const TAG: &str = "[TOOL_CALLS]";
    let at = text.find(TAG)?;
    let (before, after) = (&text[..at], &text[at + TAG.len()..]);
    if after.trim_start().starts_with('[') {
        return Some((before.to_string(), calls_in(after)?));
    }
    // name[ARGS]{…}, each after its own tag.
    let mut raw = Vec::new();
    for part in after.split(TAG) {
        let (name, args) = part.split_once("[ARGS]")?;
        let input = json::parse(args.trim()).ok()?;
        input.as_object()?;
        let name = name.trim();
        if name.is_empty() {
            return None;
        }
        raw.push((name.to_string(), input));
    }
    Some((before.to_string(), raw))
}

fn python_tag(text: &str) -> Option<(String, Raw)> {
    const TAG: &str = "<|python_tag|>";
    let at = text.find(TAG)?;
    let body = text[at + TAG.len()..].trim().trim_end_matches("<|eom_id|>");
    // Several calls come separated by semicolons.
    let raw = match calls_in(body) {
        Some(raw) => raw,
        None => body
            .split(';')
            .filter(|p| !p.trim().is_empty())
            .map(|p| {
                calls_in(p)
                    .filter(|c| c.len() == 1)
                    .map(|mut c| c.remove(0))
            })
            .collect::<Option<Raw>>()?,
    };
    Some((text[..at].to_string(), raw))
}

/// Fenced blocks that each hold calls; text around them stays.
fn fenced(text: &str) -> Option<(String, Raw)> {
    const FENCE: &str = "```";
    let mut rest = String::new();
    let mut raw = Vec::new();
    let mut left = text;
    while let Some(at) = left.find(FENCE) {
        rest.push_str(&left[..at]);
        let after = &left[at + FENCE.len()..];
        let end = after.find(FENCE)?;
        let inner = &after[..end];
        // The info string: json, or nothing.
        let (info, body) = inner.split_once('\n').unwrap_or(("", inner));
        if !matches!(info.trim(), "" | "json" | "tool_call" | "tool_code") {
            return None;
        }
        raw.extend(calls_in(body)?);
        left = &after[end + FENCE.len()..];
    }
    if raw.is_empty() {
        return None;
    }
    rest.push_str(left);
    Some((rest, raw))
}

/// The whole answer is the call (or the list of calls).
fn bare(text: &str) -> Option<(String, Raw)> {
    let t = text.trim();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return None;
    }
    Some((String::new(), calls_in(t)?))
}

/// The tool-call format a model was trained on, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// `<tool_call>{…}</tool_call>`: Hermes, Qwen, and the default.
    Hermes,
    Mistral,
    Llama,
}

impl Family {
    fn of(model: &str) -> Family {
        let m = model.to_ascii_lowercase();
        if ["mistral", "mixtral", "ministral", "codestral", "devstral"]
            .iter()
            .any(|f| m.contains(f))
        {
            Family::Mistral
        } else if m.contains("llama") {
            Family::Llama
        } else {
            Family::Hermes
        }
    }
}

/// A system-prompt block describing `tools` (request definitions) and
/// how to call them, in `model`'s family's format.
pub(crate) fn describe(tools: &[Value], model: &str) -> String {
    let mut out = String::from(
        "# Tools\n\nYou can call these tools. Each is one JSON object: its name, what it \
         does, and the schema of its input.\n<tools>\n",
    );
    for t in tools {
        let one = crate::obj! {
            "name" => t.get("name").cloned().unwrap_or(Value::Null),
            "description" => t.get("description").cloned().unwrap_or(Value::Null),
            "parameters" => t.get("input_schema").cloned().unwrap_or(Value::Null),
        };
        out.push_str(&one.to_json());
        out.push('\n');
    }
    out.push_str("</tools>\n\nTo call a tool, answer with nothing but the call:\n");
    out.push_str(match Family::of(model) {
        Family::Hermes => {
            "<tool_call>\n{\"name\": \"<tool name>\", \"arguments\": {<its input>}}\n</tool_call>\n(one such block per call)"
        }
        Family::Mistral => {
            "[TOOL_CALLS][{\"name\": \"<tool name>\", \"arguments\": {<its input>}}]"
        }
        Family::Llama => "{\"name\": \"<tool name>\", \"parameters\": {<its input>}}",
    });
    out.push_str(
        "\nThe result comes back in the next message. When no tool is needed, answer in plain text.",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;

    #[test]
    fn described_tools_ask_for_the_family_format_and_what_they_ask_for_is_recovered() {
        let tools = vec![obj! {
            "name" => "Read",
            "description" => "Reads a file.",
            "input_schema" => offered("Read").unwrap().into_owned(),
        }];
        for (model, call) in [
            (
                "qwen2.5-coder-7b",
                "<tool_call>\n{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a\"}}\n</tool_call>",
            ),
            (
                "Mistral-7B-Instruct",
                "[TOOL_CALLS][{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a\"}}]",
            ),
            (
                "llama-3.2-3b",
                "{\"name\": \"Read\", \"parameters\": {\"file_path\": \"a\"}}",
            ),
        ] {
            let text = describe(&tools, model);
            assert!(
                text.contains(r#"{"name":"Read","description":"Reads a file.","parameters":{"#),
                "{text}"
            );
            let shape = &call[..8];
            assert!(text.contains(shape), "{model}: {text}");
            // What the prompt asks for is what recovery reads.
            assert_eq!(found(call).unwrap().1, [read("a")], "{model}");
        }
    }

    /// Two offered tools: Read (file_path required) and Glob.
    fn offered(name: &str) -> Option<Cow<'static, Value>> {
        let schema = match name {
            "Read" => obj! {
                "type" => "object",
                "required" => vec![Value::from("file_path")],
                "properties" => obj! {
                    "file_path" => obj! { "type" => "string" },
                    "limit" => obj! { "type" => "integer" },
                },
                "additionalProperties" => false,
            },
            "Glob" => obj! {
                "type" => "object",
                "required" => vec![Value::from("pattern")],
                "properties" => obj! { "pattern" => obj! { "type" => "string" } },
            },
            _ => return None,
        };
        Some(Cow::Owned(schema))
    }

    fn found(text: &str) -> Option<(String, Vec<(String, String)>)> {
        let r = recover(text, offered)?;
        let calls = r
            .calls
            .iter()
            .map(|c| (c.name.clone(), c.input.as_ref().unwrap().to_json()))
            .collect();
        Some((r.text, calls))
    }

    fn read(path: &str) -> (String, String) {
        ("Read".into(), format!(r#"{{"file_path":"{path}"}}"#))
    }

    #[test]
    fn every_family_format_is_recovered() {
        let cases = [
            r#"Let me look.
<tool_call>
{"name": "Read", "arguments": {"file_path": "a.rs"}}
</tool_call>"#,
            r#"Let me look.[TOOL_CALLS][{"name": "Read", "arguments": {"file_path": "a.rs"}}]"#,
            r#"Let me look.[TOOL_CALLS]Read[ARGS]{"file_path": "a.rs"}"#,
            r#"Let me look.<|python_tag|>{"name": "Read", "parameters": {"file_path": "a.rs"}}<|eom_id|>"#,
            "Let me look.\n```json\n{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a.rs\"}}\n```",
        ];
        for text in cases {
            assert_eq!(
                found(text),
                Some(("Let me look.".into(), vec![read("a.rs")])),
                "{text}"
            );
        }
        // The whole answer as the call, arguments as a JSON string (as
        // OpenAI's own format writes them), and a list of two.
        assert_eq!(
            found(r#"{"name": "Read", "arguments": "{\"file_path\": \"b.rs\"}"}"#),
            Some((String::new(), vec![read("b.rs")]))
        );
        assert_eq!(
            found(r#"[{"name":"Read","parameters":{"file_path":"a"}},{"name":"Glob","parameters":{"pattern":"*"}}]"#)
                .map(|(_, c)| c.len()),
            Some(2)
        );
        assert_eq!(
            found(
                "<tool_call>{\"name\":\"Read\",\"arguments\":{\"file_path\":\"a\"}}</tool_call>\n<tool_call>{\"name\":\"Glob\",\"arguments\":{\"pattern\":\"*.rs\"}}</tool_call>"
            )
            .map(|(_, c)| c.len()),
            Some(2)
        );
        // A string the schema says is an integer is coerced, as for native calls.
        assert_eq!(
            found(r#"<tool_call>{"name":"Read","arguments":{"file_path":"a","limit":"5"}}</tool_call>"#)
                .map(|(_, c)| c[0].1.clone()),
            Some(r#"{"file_path":"a","limit":5}"#.to_string())
        );
    }

    #[test]
    fn near_misses_stay_text() {
        for text in [
            // Not offered.
            r#"<tool_call>{"name": "Delete", "arguments": {"path": "/"}}</tool_call>"#,
            // One sound call and one that is not: nothing is taken.
            "<tool_call>{\"name\":\"Read\",\"arguments\":{\"file_path\":\"a\"}}</tool_call><tool_call>{\"name\":\"Read\"</tool_call>",
            // Unclosed, or a close with no open.
            r#"<tool_call>{"name": "Read", "arguments": {"file_path": "a"}}"#,
            r#"{"name": "Read"}</tool_call>"#,
            // An input the schema refuses (missing, wrong type, extra field).
            r#"<tool_call>{"name": "Read", "arguments": {}}</tool_call>"#,
            r#"<tool_call>{"name": "Read", "arguments": {"file_path": 7}}</tool_call>"#,
            r#"<tool_call>{"name": "Read", "arguments": {"file_path": "a", "mode": "x"}}</tool_call>"#,
            // Arguments that are not an object.
            r#"{"name": "Read", "arguments": ["a"]}"#,
            // JSON that is not a call, in a fence or bare.
            "Here is the config:\n```json\n{\"port\": 8080}\n```",
            r#"{"name": "Read"} and then some words"#,
            // Another language's fence.
            "```python\n{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a\"}}\n```",
            // Plain prose that talks about a tool.
            "I would call Read on a.rs next.",
            "[TOOL_CALLS]",
            "[TOOL_CALLS]Read{\"file_path\":\"a\"}",
            "",
        ] {
            assert!(found(text).is_none(), "{text}");
        }
    }
}
