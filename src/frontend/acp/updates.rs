//! The loop's events as ACP `session/update`s: text and thinking as
//! message and thought chunks, each tool call as a `tool_call` (with its
//! kind, title, the files it touches and, for edits, a diff) followed by
//! `tool_call_update`s as it is allowed, runs and ends, and TodoWrite's
//! list as the `plan`. A recorded conversation is replayed the same way
//! ([`replay`]) when a client loads a session.

use std::path::Path;

use crate::agent::Event;
use crate::json::{Map, Value};
use crate::obj;
use crate::report::Report;

/// ACP's kind of a tool, for the client's icon and grouping.
fn kind(tool: &str) -> &'static str {
    match tool {
        "Read" => "read",
        "Edit" | "MultiEdit" | "Write" | "NotebookEdit" => "edit",
        "Bash" | "BashOutput" | "KillShell" | "REPL" => "execute",
        "Glob" | "Grep" | "ToolSearch" => "search",
        "WebFetch" | "WebSearch" => "fetch",
        "TodoWrite" | "Agent" | "Task" => "think",
        _ => "other",
    }
}

/// The absolute path a file tool names, if any.
fn target(input: &Value, cwd: &Path) -> Option<String> {
    let p = input
        .str_field("file_path")
        .or_else(|| input.str_field("notebook_path"))
        .or_else(|| input.str_field("path"))?;
    let p = Path::new(p);
    Some(if p.is_absolute() {
        p.display().to_string()
    } else {
        cwd.join(p).display().to_string()
    })
}

/// A tool call's title, kind, raw input, locations and (for edits) diff:
/// the fields `tool_call` and a permission question share.
pub(crate) fn describe(tool: &str, input: &Value, cwd: &Path) -> Value {
    let path = target(input, cwd);
    let title = match (tool, &path) {
        ("Bash", _) => input
            .str_field("command")
            .map_or_else(|| "Bash".to_string(), |c| format!("`{c}`")),
        ("Grep" | "Glob", _) => {
            format!("{tool} {}", input.str_field("pattern").unwrap_or_default())
        }
        ("WebFetch", _) => format!("Fetch {}", input.str_field("url").unwrap_or_default()),
        (_, Some(p)) => format!("{tool} {p}"),
        _ => display_name(tool),
    };
    let mut m = Map::new();
    m.insert("title", title);
    m.insert("kind", kind(tool));
    m.insert("rawInput", input.clone());
    let mut location = Map::new();
    if let Some(p) = &path {
        location.insert("path", p.as_str());
        if let Some(line) = input
            .get("offset")
            .and_then(Value::as_i64)
            .filter(|n| *n > 0)
        {
            location.insert("line", line);
        }
        m.insert("locations", vec![Value::Object(location)]);
    }
    if let Some(diff) = path.as_deref().and_then(|p| diff(tool, input, p)) {
        m.insert("content", vec![diff]);
    }
    Value::Object(m)
}

/// `mcp__calc__add` as "add (calc)".
fn display_name(tool: &str) -> String {
    match tool.strip_prefix("mcp__").and_then(|r| r.split_once("__")) {
        Some((server, name)) => format!("{name} ({server})"),
        None => tool.to_string(),
    }
}

/// What an edit changes, as ACP's diff content: Edit's strings, or
/// Write's new text against the file as it is (none for a new file).
fn diff(tool: &str, input: &Value, path: &str) -> Option<Value> {
    let (old, new) = match tool {
        "Edit" => (
            Some(input.str_field("old_string")?.to_string()),
            input.str_field("new_string")?.to_string(),
        ),
        "Write" => {
            // Only a file small enough to show is read for its old text.
            let old = std::fs::metadata(path)
                .ok()
                .filter(|m| m.is_file() && m.len() <= 1 << 20)
                .and_then(|_| std::fs::read_to_string(path).ok());
            (old, input.str_field("content")?.to_string())
        }
        _ => return None,
    };
    Some(obj! { "type" => "diff", "path" => path, "oldText" => old, "newText" => new })
}

/// TodoWrite's list as ACP plan entries.
fn plan(input: &Value) -> Option<Value> {
    let todos = input.get("todos")?.as_array()?;
    let entries: Vec<Value> = todos
        .iter()
        .map(|t| {
            let status = match t.str_field("status") {
                Some("in_progress") => "in_progress",
                Some("completed") => "completed",
                _ => "pending",
            };
            obj! {
                "content" => t.str_field("content").unwrap_or_default(),
                "priority" => "medium",
                "status" => status,
            }
        })
        .collect();
    Some(obj! { "sessionUpdate" => "plan", "entries" => entries })
}

/// A tool result's content blocks as ACP tool call content.
fn result_content(block: &Value) -> Vec<Value> {
    let text_of = |t: &str| {
        obj! { "type" => "content", "content" => obj! { "type" => "text", "text" => t } }
    };
    match block.get("content") {
        Some(Value::String(s)) => vec![text_of(s)],
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.str_field("text"))
            .map(text_of)
            .collect(),
        _ => Vec::new(),
    }
}

fn text_chunk(kind: &str, text: &str) -> Value {
    obj! { "sessionUpdate" => kind, "content" => obj! { "type" => "text", "text" => text } }
}

/// One live event as the updates a client is sent.
pub(crate) fn live(ev: &Event<'_>, cwd: &Path) -> Vec<Value> {
    match ev {
        Event::TextDelta(t) if !t.is_empty() => vec![text_chunk("agent_message_chunk", t)],
        Event::Thinking(t) if !t.is_empty() => vec![text_chunk("agent_thought_chunk", t)],
        Event::Report(r) => report(r, cwd),
        Event::ToolResults { message, .. } => message
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|b| b.str_field("type") == Some("tool_result"))
            .map(finished)
            .collect(),
        _ => Vec::new(),
    }
}

/// A tool result block as the call's last update.
fn finished(block: &Value) -> Value {
    let failed = block.get("is_error").and_then(Value::as_bool) == Some(true);
    obj! {
        "sessionUpdate" => "tool_call_update",
        "toolCallId" => block.str_field("tool_use_id").unwrap_or_default(),
        "status" => if failed { "failed" } else { "completed" },
        "content" => result_content(block),
    }
}

fn report(r: &Report, cwd: &Path) -> Vec<Value> {
    let status = |id: &str, s: &str| {
        obj! { "sessionUpdate" => "tool_call_update", "toolCallId" => id, "status" => s }
    };
    match r {
        Report::ToolStarted { id, name, input } => {
            let mut call = describe(name, input, cwd);
            if let Some(m) = call.as_object_mut() {
                m.insert("sessionUpdate", "tool_call");
                m.insert("toolCallId", id.as_str());
                m.insert("status", "pending");
            }
            let mut out = vec![call];
            if name == "TodoWrite" {
                out.extend(plan(input));
            }
            out
        }
        Report::ToolProgress { id, .. } => vec![status(id, "in_progress")],
        Report::PermissionAnswered { id, allowed, .. } => {
            vec![status(id, if *allowed { "in_progress" } else { "failed" })]
        }
        Report::ToolFinished { id, is_error, .. } => {
            vec![status(id, if *is_error { "failed" } else { "completed" })]
        }
        Report::PermissionAsked { .. } | Report::Notice { .. } => Vec::new(),
    }
}

/// A recorded conversation as the updates that show it again: the
/// user's text, the agent's text and thinking, each tool call and its
/// result.
pub(crate) fn replay(messages: &[Value], cwd: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    for m in messages {
        let user = m.str_field("role") == Some("user");
        let blocks = match m.get("content") {
            Some(Value::String(s)) => vec![obj! { "type" => "text", "text" => s.as_str() }],
            Some(Value::Array(b)) => b.clone(),
            _ => continue,
        };
        for b in &blocks {
            match (b.str_field("type"), user) {
                (Some("text"), true) => {
                    out.push(text_chunk(
                        "user_message_chunk",
                        b.str_field("text").unwrap_or_default(),
                    ));
                }
                (Some("text"), false) => {
                    out.push(text_chunk(
                        "agent_message_chunk",
                        b.str_field("text").unwrap_or_default(),
                    ));
                }
                (Some("thinking"), false) => {
                    if let Some(t) = b.str_field("thinking").filter(|t| !t.is_empty()) {
                        out.push(text_chunk("agent_thought_chunk", t));
                    }
                }
                (Some("tool_use"), false) => {
                    let name = b.str_field("name").unwrap_or_default();
                    let input = b.get("input").cloned().unwrap_or_default();
                    let mut call = describe(name, &input, cwd);
                    if let Some(c) = call.as_object_mut() {
                        c.insert("sessionUpdate", "tool_call");
                        c.insert("toolCallId", b.str_field("id").unwrap_or_default());
                        c.insert("status", "pending");
                    }
                    out.push(call);
                    if name == "TodoWrite" {
                        out.extend(plan(&input));
                    }
                }
                (Some("tool_result"), true) => out.push(finished(b)),
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json;

    #[test]
    fn an_edit_has_its_diff_and_location() {
        let input =
            json::parse(r#"{"file_path":"a.rs","old_string":"x","new_string":"y"}"#).unwrap();
        let d = describe("Edit", &input, Path::new("/p"));
        assert_eq!(d.str_field("kind"), Some("edit"));
        let loc = &d.get("locations").unwrap().as_array().unwrap()[0];
        assert_eq!(loc.str_field("path"), Some("/p/a.rs"));
        let diff = &d.get("content").unwrap().as_array().unwrap()[0];
        assert_eq!(diff.str_field("type"), Some("diff"));
        assert_eq!(diff.str_field("oldText"), Some("x"));
        assert_eq!(diff.str_field("newText"), Some("y"));
    }

    #[test]
    fn todos_become_the_plan() {
        let input =
            json::parse(r#"{"todos":[{"content":"a","status":"in_progress","activeForm":"A"}]}"#)
                .unwrap();
        let p = plan(&input).unwrap();
        let e = &p.get("entries").unwrap().as_array().unwrap()[0];
        assert_eq!(e.str_field("status"), Some("in_progress"));
    }

    #[test]
    fn replay_pairs_calls_and_results() {
        let msgs = vec![
            json::parse(r#"{"role":"user","content":"hi"}"#).unwrap(),
            json::parse(r#"{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}"#).unwrap(),
            json::parse(r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a.txt"}]}"#).unwrap(),
        ];
        let u = replay(&msgs, Path::new("/p"));
        let kinds: Vec<&str> = u
            .iter()
            .filter_map(|v| v.str_field("sessionUpdate"))
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "agent_message_chunk",
                "tool_call",
                "tool_call_update"
            ]
        );
        assert_eq!(u[3].str_field("status"), Some("completed"));
    }
}
