//! Read, Edit and Write as a model trained on Claude Code's tools calls
//! them, through the real binary (issue 35): numbers and booleans sent as
//! strings, an LF edit of a CRLF file, straight quotes against curly
//! ones, a notebook edit sent to NotebookEdit, a long file cut at the
//! token cap with a note saying where to go on.

use crate::support;

use std::path::Path;

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;
use tern::obj;

/// Runs one session in `dir` where the model makes one turn of tool
/// calls per entry of `turns`, then ends; returns each turn's results.
fn session(dir: &Path, turns: &[Vec<(&str, Value)>]) -> Vec<Vec<Value>> {
    let mut replies = Vec::new();
    let mut n = 0;
    for calls in turns {
        let inputs: Vec<(String, &str, String)> = calls
            .iter()
            .map(|(tool, input)| {
                n += 1;
                (format!("toolu_{n}"), *tool, input.to_json())
            })
            .collect();
        let refs: Vec<(&str, &str, &str)> = inputs
            .iter()
            .map(|(id, t, j)| (id.as_str(), *t, j.as_str()))
            .collect();
        replies.push(standin::tools_reply(&refs));
    }
    replies.push(standin::text_reply("done"));
    let api = StandIn::start(replies);
    let out = run(tern(&api.url, dir).args([
        "-p",
        "go",
        "--output-format",
        "json",
        "--permission-mode",
        "acceptEdits",
    ]));
    assert_ok(&out);
    let reqs = api.requests();
    assert_eq!(reqs.len(), turns.len() + 1);
    reqs[1..].iter().map(tool_results).collect()
}

fn text(r: &Value) -> String {
    match r.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.str_field("text"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn is_error(r: &Value) -> bool {
    r.get("is_error").and_then(Value::as_bool) == Some(true)
}

#[test]
fn numbers_and_booleans_sent_as_strings_are_taken_by_every_tool() {
    let dir = scratch("file-tools-coerce");
    std::fs::write(dir.join("f.txt"), "a = 1\nb = 1\nc = 1\n").unwrap();
    let results = session(
        &dir,
        &[
            vec![(
                "Read",
                obj! { "file_path" => "f.txt", "offset" => "2", "limit" => "1" },
            )],
            vec![(
                "Edit",
                obj! { "file_path" => "f.txt", "old_string" => "= 1", "new_string" => "= 2",
                "replace_all" => "true" },
            )],
            vec![("Read", obj! { "file_path" => "f.txt", "limit" => "1.5" })],
        ],
    );
    assert!(!is_error(&results[0][0]), "{:?}", results[0]);
    assert!(
        text(&results[0][0]).starts_with("     2\tb = 1\n"),
        "{:?}",
        results[0]
    );
    assert!(!is_error(&results[1][0]), "{:?}", results[1]);
    assert_eq!(
        std::fs::read_to_string(dir.join("f.txt")).unwrap(),
        "a = 2\nb = 2\nc = 2\n"
    );
    // What does not convert cleanly is refused, naming the field.
    assert!(is_error(&results[2][0]));
    assert!(
        text(&results[2][0]).contains(r#"limit must be integer, got string "1.5""#),
        "{:?}",
        results[2]
    );
}

#[test]
fn edits_match_line_endings_and_quotes_as_claude_code_does() {
    let dir = scratch("file-tools-edit");
    std::fs::write(dir.join("win.txt"), "one\r\ntwo\r\nthree\r\n").unwrap();
    std::fs::write(dir.join("prose.md"), "She said \u{201c}no\u{201d}.\n").unwrap();
    std::fs::write(
        dir.join("nb.ipynb"),
        r#"{"cells":[],"metadata":{},"nbformat":4,"nbformat_minor":5}"#,
    )
    .unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    let results = session(
        &dir,
        &[
            vec![
                ("Read", obj! { "file_path" => "win.txt" }),
                ("Read", obj! { "file_path" => "prose.md" }),
                ("Read", obj! { "file_path" => "nb.ipynb" }),
            ],
            vec![
                (
                    "Edit",
                    obj! { "file_path" => "win.txt", "old_string" => "one\ntwo", "new_string" => "1\n2\n2.5" },
                ),
                (
                    "Edit",
                    obj! { "file_path" => "prose.md", "old_string" => "said \"no\"", "new_string" => "said \"yes\"" },
                ),
                (
                    "Edit",
                    obj! { "file_path" => "nb.ipynb", "old_string" => "cells", "new_string" => "x" },
                ),
                (
                    "Edit",
                    obj! { "file_path" => "sub", "old_string" => "a", "new_string" => "b" },
                ),
                (
                    "Edit",
                    obj! { "file_path" => "gone.txt", "old_string" => "a", "new_string" => "b" },
                ),
            ],
        ],
    );
    let edits = &results[1];
    assert!(!is_error(&edits[0]), "{:?}", edits[0]);
    assert_eq!(
        std::fs::read_to_string(dir.join("win.txt")).unwrap(),
        "1\r\n2\r\n2.5\r\nthree\r\n"
    );
    assert!(!is_error(&edits[1]), "{:?}", edits[1]);
    assert_eq!(
        std::fs::read_to_string(dir.join("prose.md")).unwrap(),
        "She said \u{201c}yes\u{201d}.\n"
    );
    assert!(is_error(&edits[2]) && text(&edits[2]).contains("NotebookEdit"));
    assert!(is_error(&edits[3]) && text(&edits[3]).contains("is a directory"));
    assert!(
        is_error(&edits[4]) && text(&edits[4]).starts_with("File does not exist"),
        "{:?}",
        edits[4]
    );
}

#[test]
fn a_long_read_is_cut_at_the_token_cap_with_a_note() {
    let dir = scratch("file-tools-cap");
    let body: String = (1..=1200)
        .map(|i| format!("{i:05} {}\n", "y".repeat(300)))
        .collect();
    std::fs::write(dir.join("long.log"), body).unwrap();
    let results = session(
        &dir,
        &[vec![
            ("Read", obj! { "file_path" => "long.log" }),
            (
                "Read",
                obj! { "file_path" => "long.log", "offset" => 1100i64, "allow_large" => "true" },
            ),
        ]],
    );
    let cut = text(&results[0][0]);
    assert!(cut.len() < 101_000, "{}", cut.len());
    assert!(
        cut.contains(
            "of 1200: the file is longer than the 25000 tokens Read returns at once. Use offset"
        ),
        "{}",
        &cut[cut.len().saturating_sub(400)..]
    );
    let rest = text(&results[0][1]);
    assert!(!is_error(&results[0][1]), "{rest}");
    assert_eq!(rest.matches('\t').count(), 101);
}
