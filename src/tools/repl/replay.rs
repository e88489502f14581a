//! Replay, not snapshots: each finished block is appended to a log beside
//! the transcript (`<session>.repl`, JSON lines, 0600) as `{id, code, calls:
//! [{name, input, content, is_error}], threw}`. A resumed session's first
//! REPL call starts a fresh VM and evaluates the logged blocks of the
//! resumed conversation again, in order, with every tool call answered
//! from the log instead of run — variables and registered tools come
//! back, and no Bash, Write, Edit or MCP call happens a second time.
//!
//! Each block is checked: the same calls by name in the same order, and
//! the same outcome (threw or not). Anything else is drift: said to the
//! model, never hidden. A call the log does not have is refused, not run.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::json::{self, Value};
use crate::obj;

/// One logged block.
#[derive(Debug, Clone)]
pub(crate) struct Block {
    pub(crate) code: String,
    pub(crate) calls: Vec<Call>,
    pub(crate) threw: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) name: String,
    pub(crate) content: String,
    pub(crate) is_error: bool,
}

/// The log of the session whose transcript is `transcript`. Not
/// `.jsonl`: the session store takes every such file for a transcript
/// (`-c` picked the log, being the newest, before).
pub(crate) fn log_path(transcript: &Path) -> PathBuf {
    transcript.with_extension("repl")
}

/// The logged blocks whose REPL call is in `history` (so a rewound or
/// interrupted block is not replayed), in log order. Torn or foreign
/// lines are skipped.
pub(crate) fn load(log: &Path, history: &[Value]) -> Vec<Block> {
    let Ok(text) = std::fs::read_to_string(log) else {
        return Vec::new();
    };
    let ids: Vec<&str> = history
        .iter()
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|b| b.str_field("type") == Some("tool_use") && b.str_field("name") == Some("REPL"))
        .filter_map(|b| b.str_field("id"))
        .collect();
    text.lines()
        .filter_map(|l| json::parse(l).ok())
        .filter(|v| v.str_field("id").is_some_and(|id| ids.contains(&id)))
        .filter_map(|v| {
            let calls = v
                .get("calls")?
                .as_array()?
                .iter()
                .map(|c| {
                    Some(Call {
                        name: c.str_field("name")?.to_string(),
                        content: c.str_field("content").unwrap_or_default().to_string(),
                        is_error: c.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                    })
                })
                .collect::<Option<Vec<Call>>>()?;
            Some(Block {
                code: v.str_field("code")?.to_string(),
                calls,
                threw: v.get("threw").and_then(Value::as_bool).unwrap_or(false),
            })
        })
        .collect()
}

/// Appends one finished block (flushed: a kill right after loses nothing).
pub(crate) fn append(log: &Path, id: &str, block: &Block, inputs: &[Value]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let calls: Vec<Value> = block
        .calls
        .iter()
        .zip(inputs)
        .map(|(c, input)| {
            obj! {
                "name" => c.name.as_str(),
                "input" => input.clone(),
                "content" => c.content.as_str(),
                "is_error" => c.is_error,
            }
        })
        .collect();
    let line = obj! {
        "id" => id,
        "code" => block.code.as_str(),
        "calls" => Value::Array(calls),
        "threw" => block.threw,
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(log)?;
    f.write_all(format!("{line}\n").as_bytes())?;
    f.sync_data()
}

/// How one replayed block went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    Ok,
    /// Its calls or its outcome differed from the log: what differed.
    Drift(String),
}

/// Compares a replayed block with its log entry.
pub(crate) fn verdict(logged: &Block, names: &[String], threw: bool, refused: usize) -> Verdict {
    let want: Vec<&str> = logged.calls.iter().map(|c| c.name.as_str()).collect();
    let got: Vec<&str> = names.iter().map(String::as_str).collect();
    if want != got {
        return Verdict::Drift(format!(
            "it made {} call(s) ({}) where the log has {} ({}){}",
            got.len(),
            got.join(", "),
            want.len(),
            want.join(", "),
            if refused > 0 {
                format!("; {refused} call(s) not in the log were refused, not run")
            } else {
                String::new()
            }
        ));
    }
    if threw != logged.threw {
        return Verdict::Drift(if threw {
            "it threw where it had finished".into()
        } else {
            "it finished where it had thrown".into()
        });
    }
    Verdict::Ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(names: &[&str], threw: bool) -> Block {
        Block {
            code: "x".into(),
            calls: names
                .iter()
                .map(|n| Call {
                    name: n.to_string(),
                    content: String::new(),
                    is_error: false,
                })
                .collect(),
            threw,
        }
    }

    #[test]
    fn drift_is_named() {
        let logged = block(&["Bash", "Read"], false);
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            verdict(&logged, &names(&["Bash", "Read"]), false, 0),
            Verdict::Ok
        );
        assert!(matches!(
            verdict(&logged, &names(&["Bash"]), false, 0),
            Verdict::Drift(_)
        ));
        assert!(matches!(
            verdict(&logged, &names(&["Read", "Bash"]), false, 0),
            Verdict::Drift(_)
        ));
        assert!(matches!(
            verdict(&logged, &names(&["Bash", "Read"]), true, 0),
            Verdict::Drift(_)
        ));
    }

    #[test]
    fn only_blocks_of_the_resumed_conversation_are_loaded_and_torn_lines_are_skipped() {
        let dir = std::env::temp_dir().join(format!("tern-replay-{}", fastrand::u64(..)));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("s.repl");
        append(&log, "toolu_a", &block(&["Bash"], false), &[Value::Null]).unwrap();
        append(&log, "toolu_gone", &block(&[], false), &[]).unwrap();
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(b"{\"id\":\"toolu_b\",\"co").unwrap();
        let history = vec![obj! {
            "role" => "assistant",
            "content" => Value::Array(vec![
                obj! { "type" => "tool_use", "id" => "toolu_a", "name" => "REPL" },
                obj! { "type" => "tool_use", "id" => "toolu_b", "name" => "REPL" },
            ]),
        }];
        let blocks = load(&log, &history);
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].calls[0].name, "Bash");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&log).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
