//! Loading a transcript back into a conversation.
//!
//! The record is the truth about what happened; the conversation sent to
//! the model is rebuilt from it and may be repaired, never the other way
//! round. The chain is followed from the last entry back through
//! `parentUuid`; what cannot be trusted is skipped with a warning, and
//! what cannot be rebuilt at all fails with a message naming the line.
//!
//! Repairs, each reported: unreadable lines are skipped; a parent missing
//! from the file falls back to the line before it (a few times at most);
//! a tool_use without a result gets an `is_error` "interrupted" result (the
//! tool is never run again); a tool_result without its tool_use is
//! dropped; neighbouring messages of one role are merged.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::json::{self, Value};
use crate::obj;
use crate::session::SessionError;

/// How often a missing parent may be bridged by file order before the
/// rest of the chain is given up.
const MAX_BRIDGES: usize = 3;

/// The result a tool_use gets when the record has none.
pub const INTERRUPTED: &str = "Interrupted: tern stopped before this tool's result was recorded. \
It was not run again on resume; check its effects before retrying.";

#[derive(Debug)]
pub struct Loaded {
    /// The conversation, API-shaped, alternating user/assistant and
    /// starting with a user message.
    pub messages: Vec<Value>,
    /// The uuid to chain new entries to.
    pub leaf: Option<String>,
    /// Tool results that were synthesised (to be recorded).
    pub synthesized: Vec<Value>,
    /// The last entry's `cwd`: where the Bash tool's shell was (the
    /// caller checks it is still a directory it may use).
    pub cwd: Option<std::path::PathBuf>,
    pub warnings: Vec<String>,
}

struct Entry {
    line: usize,
    uuid: String,
    parent: Option<String>,
    kind: String,
    subtype: Option<String>,
    cwd: Option<String>,
    message: Option<Value>,
    /// Kept, not sent: a REPL block's inner calls (a link of the chain
    /// whose message is not the conversation's).
    virtual_: bool,
}

pub fn load_file(path: &Path) -> Result<Loaded, SessionError> {
    let text = std::fs::read(path).map_err(|source| SessionError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    load(&String::from_utf8_lossy(&text))
}

pub fn load(text: &str) -> Result<Loaded, SessionError> {
    let mut warnings = Vec::new();
    let mut entries: Vec<Entry> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let v = match json::parse(raw) {
            Ok(v) => v,
            Err(e) => {
                warnings.push(format!("line {line}: not valid JSON ({e}); skipped"));
                continue;
            }
        };
        let Some(uuid) = v.str_field("uuid") else {
            continue; // summaries, metadata: not part of the chain
        };
        let kind = v.str_field("type").unwrap_or_default().to_string();
        if !matches!(kind.as_str(), "user" | "assistant" | "system") {
            continue;
        }
        let message = v.get("message").cloned();
        if kind != "system" && !message.as_ref().is_some_and(valid_message) {
            warnings.push(format!(
                "line {line}: a {kind} entry without a usable message; skipped"
            ));
            continue;
        }
        entries.push(Entry {
            line,
            uuid: uuid.to_string(),
            parent: v.str_field("parentUuid").map(str::to_string),
            kind,
            subtype: v.str_field("subtype").map(str::to_string),
            cwd: v.str_field("cwd").map(str::to_string),
            message,
            virtual_: v.get("isVirtual").and_then(Value::as_bool) == Some(true),
        });
    }
    let Some(leaf) = entries.last() else {
        return Err(SessionError::NoConversation);
    };
    let leaf_uuid = leaf.uuid.clone();
    let cwd = leaf.cwd.as_deref().map(std::path::PathBuf::from);

    let by_uuid: HashMap<&str, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.uuid.as_str(), i))
        .collect();
    let mut chain: Vec<usize> = Vec::new();
    let mut seen: HashSet<usize> = HashSet::new();
    let mut bridges = 0;
    let mut at = entries.len() - 1;
    loop {
        if !seen.insert(at) {
            return Err(SessionError::Loop {
                line: entries[at].line,
                uuid: entries[at].uuid.clone(),
            });
        }
        chain.push(at);
        let e = &entries[at];
        if e.kind == "system" && e.subtype.as_deref() == Some("compact_boundary") {
            break; // what came before was summarised
        }
        let Some(parent) = &e.parent else { break };
        match by_uuid.get(parent.as_str()) {
            Some(&p) => at = p,
            None if bridges < MAX_BRIDGES && at > 0 => {
                bridges += 1;
                warnings.push(format!(
                    "line {}: parent {parent} is not in the transcript; continuing with the line before it",
                    e.line
                ));
                at -= 1;
            }
            None => {
                warnings.push(format!(
                    "line {}: parent {parent} is not in the transcript; earlier history is not loaded",
                    e.line
                ));
                break;
            }
        }
    }
    chain.reverse();

    let raw: Vec<Value> = chain
        .iter()
        .filter(|&&i| !entries[i].virtual_)
        .filter_map(|&i| entries[i].message.clone())
        .filter(valid_message)
        .collect();
    let (messages, synthesized) = repair(raw, &mut warnings);
    if messages.is_empty() {
        return Err(SessionError::NothingUsable);
    }
    Ok(Loaded {
        messages,
        leaf: Some(leaf_uuid),
        synthesized,
        cwd,
        warnings,
    })
}

fn valid_message(m: &Value) -> bool {
    matches!(m.str_field("role"), Some("user" | "assistant"))
        && matches!(m.get("content"), Some(Value::String(_) | Value::Array(_)))
}

fn blocks(m: &Value) -> Vec<Value> {
    match m.get("content") {
        Some(Value::Array(b)) => b.clone(),
        Some(Value::String(s)) => vec![obj! { "type" => "text", "text" => s.as_str() }],
        _ => Vec::new(),
    }
}

fn block_type(b: &Value) -> &str {
    b.str_field("type").unwrap_or_default()
}

/// Makes the sequence one the API accepts. Returns the messages and the
/// tool results that had to be made up.
fn repair(raw: Vec<Value>, warnings: &mut Vec<String>) -> (Vec<Value>, Vec<Value>) {
    // Merge neighbours of one role.
    let mut merged: Vec<(String, Vec<Value>)> = Vec::new();
    for m in raw {
        let role = m.str_field("role").unwrap_or_default().to_string();
        let b = blocks(&m);
        match merged.last_mut() {
            Some((r, existing)) if *r == role => existing.extend(b),
            _ => merged.push((role, b)),
        }
    }
    // The conversation starts with the user.
    while merged.first().is_some_and(|(r, _)| r == "assistant") {
        merged.remove(0);
        warnings.push("an assistant message with no prompt before it was dropped".into());
    }

    let mut out: Vec<(String, Vec<Value>)> = Vec::new();
    let mut synthesized = Vec::new();
    let mut pending: Vec<String> = Vec::new(); // tool_use ids awaiting results
    for (role, mut content) in merged {
        if role == "user" {
            let before = content.len();
            content.retain(|b| {
                block_type(b) != "tool_result"
                    || b.str_field("tool_use_id")
                        .is_some_and(|id| pending.iter().any(|p| p == id))
            });
            if content.len() < before {
                warnings.push(format!(
                    "{} tool result(s) without a matching tool_use were dropped",
                    before - content.len()
                ));
            }
            let answered: Vec<String> = content
                .iter()
                .filter(|b| block_type(b) == "tool_result")
                .filter_map(|b| b.str_field("tool_use_id").map(str::to_string))
                .collect();
            // Results first, in the order of the calls, as the API wants.
            let mut missing = Vec::new();
            for id in pending.drain(..) {
                if !answered.contains(&id) {
                    missing.push(interrupted(&id));
                }
            }
            if !missing.is_empty() {
                synthesized.extend(missing.iter().cloned());
                let (results, rest): (Vec<Value>, Vec<Value>) = content
                    .into_iter()
                    .partition(|b| block_type(b) == "tool_result");
                content = results.into_iter().chain(missing).chain(rest).collect();
            }
            if content.is_empty() {
                continue;
            }
            match out.last_mut() {
                Some((r, existing)) if r == "user" => existing.extend(content),
                _ => out.push((role, content)),
            }
        } else {
            if !pending.is_empty() {
                let made: Vec<Value> = pending.drain(..).map(|id| interrupted(&id)).collect();
                synthesized.extend(made.iter().cloned());
                out.push(("user".into(), made));
            }
            pending = content
                .iter()
                .filter(|b| block_type(b) == "tool_use")
                .filter_map(|b| b.str_field("id").map(str::to_string))
                .collect();
            match out.last_mut() {
                Some((r, existing)) if r == "assistant" => existing.extend(content),
                _ => out.push((role, content)),
            }
        }
    }
    if !pending.is_empty() {
        let made: Vec<Value> = pending.drain(..).map(|id| interrupted(&id)).collect();
        synthesized.extend(made.iter().cloned());
        out.push(("user".into(), made));
    }
    if !synthesized.is_empty() {
        warnings.push(format!(
            "{} tool call(s) had no recorded result and are marked interrupted (not re-run)",
            synthesized.len()
        ));
    }
    let messages = out
        .into_iter()
        .map(|(role, content)| obj! { "role" => role, "content" => content })
        .collect();
    (messages, synthesized)
}

fn interrupted(id: &str) -> Value {
    obj! {
        "type" => "tool_result",
        "tool_use_id" => id,
        "is_error" => true,
        "content" => INTERRUPTED,
    }
}

#[cfg(test)]
mod tests;
