//! Context governance: how full the model's window is, and the two ways
//! to make room — clearing old tool results (micro-compaction) and
//! replacing the history with a summary (compaction).
//!
//! Thresholds follow the 200k example in ARCHITECTURE.md and scale with
//! the window: reserve up to 20k tokens for the answer, warn 20k before
//! compacting, compact 13k before the usable window ends, refuse to send
//! 3k before it.

pub mod compact;
pub mod media;

use crate::json::Value;
use crate::obj;

/// Tool results this recent are never cleared.
pub const KEEP_RECENT_RESULTS: usize = 5;
/// Micro-compaction runs only if it frees at least this many tokens.
pub const MIN_MICRO_SAVINGS: u64 = 20_000;
/// Auto-compaction stops trying after this many failures in a row.
pub const MAX_COMPACT_FAILURES: u32 = 3;

const CLEARED: &str =
    "[Old tool result cleared to save context; run the tool again if it is still needed]";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    pub window: u64,
    /// Tokens the answer may use.
    pub reserve: u64,
    pub warn: u64,
    pub compact: u64,
    pub blocked: u64,
}

impl Thresholds {
    pub fn for_window(window: u64, max_output: u64) -> Thresholds {
        let reserve = max_output.min(20_000).min(window / 4);
        let usable = window.saturating_sub(reserve);
        // The fixed buffers are sized for 180k usable; smaller windows get
        // the same proportions instead.
        let buffer = 13_000.min(usable * 13 / 180);
        let hard = 3_000.min(usable * 3 / 180);
        let compact = usable.saturating_sub(buffer);
        Thresholds {
            window,
            reserve,
            warn: compact.saturating_sub(20_000.min(usable / 9)),
            compact,
            blocked: usable.saturating_sub(hard),
        }
    }
}

/// The context window of a model, when the name says enough.
pub fn known_window(model: &str) -> Option<u64> {
    let m = model.to_ascii_lowercase();
    if m.starts_with("claude") {
        return Some(if m.contains("[1m]") {
            1_000_000
        } else {
            200_000
        });
    }
    if m.starts_with("gpt-4o")
        || m.starts_with("gpt-4.1")
        || m.starts_with("o3")
        || m.starts_with("o4")
    {
        return Some(128_000);
    }
    None
}

/// Whether a window this size gets the compact prompt and tool
/// descriptions (the session's and its sub-agents').
pub fn is_small(context_window: u64) -> bool {
    context_window <= 32_768
}

/// When MCP tool schemas are held back behind ToolSearch
/// (`ENABLE_TOOL_SEARCH`, as Claude Code reads it; see `tools::deferred`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldBack {
    /// When their definitions would take more than this percentage of
    /// the window (`auto`, `auto:N`).
    Auto(u8),
    /// Always (`true`).
    Always,
    /// Never (`false`): every MCP tool is offered in full.
    Never,
}

impl Default for HoldBack {
    fn default() -> HoldBack {
        HoldBack::Auto(10)
    }
}

impl HoldBack {
    /// `true`, `false`, `auto` or `auto:N` (N a percentage, 0–100).
    pub fn parse(text: &str) -> Result<HoldBack, String> {
        let t = text.trim().to_ascii_lowercase();
        match t.as_str() {
            "true" | "1" | "yes" | "on" => return Ok(HoldBack::Always),
            "false" | "0" | "no" | "off" => return Ok(HoldBack::Never),
            "auto" | "" => return Ok(HoldBack::default()),
            _ => {}
        }
        t.strip_prefix("auto:")
            .and_then(|n| n.trim().trim_end_matches('%').parse::<u8>().ok())
            .filter(|n| *n <= 100)
            .map(HoldBack::Auto)
            .ok_or_else(|| {
                format!("ENABLE_TOOL_SEARCH is {text:?}; expected true, false, auto or auto:N (N a percentage)")
            })
    }
}

/// A cheap local estimate: about four bytes of JSON per token. Counting
/// the serialised request errs on the high side, which is the safe side.
pub fn estimate_bytes(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// Tokens of a tool result's content: its text at four bytes a token,
/// its attachments at what the API charges for them.
fn result_tokens(content: Option<&Value>) -> u64 {
    let Some(content) = content else {
        return 0;
    };
    let media = media::cost_of(Some(content));
    estimate_bytes(content.to_json().len().saturating_sub(media.bytes)) + media.tokens
}

/// Tokens of a serialised request (`body_len` bytes) holding `messages`:
/// [`estimate_bytes`] for all but the attachments, which are priced as
/// the API prices them.
pub fn estimate_request(body_len: usize, messages: &[Value]) -> u64 {
    let media = media::cost(messages);
    estimate_bytes(body_len.saturating_sub(media.bytes)) + media.tokens
}

/// Replaces the content of old, large tool results with a short note,
/// keeping their ids (so every tool_use stays paired). Returns the tokens
/// freed, or 0 (and changes nothing) when that would be under
/// `min_savings`.
pub fn micro_compact(messages: &mut [Value], min_savings: u64) -> u64 {
    // Where every tool result is: (message index, block index, tokens).
    let mut found: Vec<(usize, usize, u64)> = Vec::new();
    for (mi, m) in messages.iter().enumerate() {
        if m.str_field("role") != Some("user") {
            continue;
        }
        let Some(blocks) = m.get("content").and_then(Value::as_array) else {
            continue;
        };
        for (bi, b) in blocks.iter().enumerate() {
            if b.str_field("type") == Some("tool_result") {
                found.push((mi, bi, result_tokens(b.get("content"))));
            }
        }
    }
    let old = found.len().saturating_sub(KEEP_RECENT_RESULTS);
    let cleared = estimate_bytes(CLEARED.len());
    let targets: Vec<(usize, usize, u64)> = found[..old]
        .iter()
        .copied()
        .filter(|&(_, _, tokens)| tokens > cleared * 4)
        .collect();
    let saved: u64 = targets
        .iter()
        .map(|&(_, _, tokens)| tokens.saturating_sub(cleared))
        .sum();
    if saved < min_savings || saved == 0 {
        return 0;
    }
    for (mi, bi, _) in targets {
        if let Some(Value::Object(m)) = messages.get_mut(mi)
            && let Some(Value::Array(blocks)) = m.get_mut("content")
            && let Some(Value::Object(b)) = blocks.get_mut(bi)
        {
            b.insert("content", CLEARED);
        }
    }
    saved
}

/// The message that stands for everything before a compaction.
pub fn summary_message(summary: &str, pending_prompt: Option<&str>) -> Value {
    let mut text = format!(
        "This session continues an earlier conversation that ran out of context. \
         A summary of it follows.\n\n<summary>\n{summary}\n</summary>"
    );
    match pending_prompt {
        Some(p) => text.push_str(&format!("\n\nThe user's latest message, not yet answered:\n\n{p}")),
        None => text.push_str(
            "\n\nGo on with the work from where it stopped, without asking the user anything further first.",
        ),
    }
    obj! { "role" => "user", "content" => vec![obj! { "type" => "text", "text" => text }] }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_match_the_200k_example_and_scale_down() {
        let t = Thresholds::for_window(200_000, 32_000);
        assert_eq!(t.reserve, 20_000);
        assert_eq!(t.compact, 167_000);
        assert_eq!(t.blocked, 177_000);
        assert_eq!(t.warn, 147_000);
        let small = Thresholds::for_window(4_096, 32_000);
        assert_eq!(small.reserve, 1_024);
        assert!(small.compact < small.blocked && small.blocked < small.window - small.reserve + 1);
        assert!(small.compact > 2_500, "{small:?}");
    }

    fn result(id: &str, size: usize) -> Value {
        obj! { "role" => "user", "content" => vec![obj! {
            "type" => "tool_result", "tool_use_id" => id, "content" => "x".repeat(size),
        }] }
    }

    #[test]
    fn micro_compaction_clears_old_results_and_keeps_ids_and_the_last_five() {
        let mut msgs: Vec<Value> = (0..8).map(|i| result(&format!("t{i}"), 40_000)).collect();
        let saved = micro_compact(&mut msgs, MIN_MICRO_SAVINGS);
        assert!(saved >= 29_000, "{saved}");
        for (i, m) in msgs.iter().enumerate() {
            let b = &m.get("content").unwrap().as_array().unwrap()[0];
            assert_eq!(b.str_field("tool_use_id"), Some(format!("t{i}").as_str()));
            assert_eq!(
                b.str_field("content") == Some(CLEARED),
                i < 3,
                "message {i}"
            );
        }
        // Too little to gain: nothing changes.
        let mut few: Vec<Value> = (0..6).map(|i| result(&format!("t{i}"), 1_000)).collect();
        let before = Value::Array(few.clone()).to_json();
        assert_eq!(micro_compact(&mut few, MIN_MICRO_SAVINGS), 0);
        assert_eq!(Value::Array(few).to_json(), before);
    }
}
