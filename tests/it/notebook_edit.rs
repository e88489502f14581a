//! NotebookEdit through the real binary: it edits only a notebook the
//! model has read, keeps the file valid and every other cell as it was,
//! goes through the same permission pipeline as Edit (deny rules, plan
//! mode, protected paths and the working directories, each shown both
//! ways: the edit lands when nothing stops it, and is refused when the
//! protection is in force), and can be rewound.

use crate::support;

use std::path::{Path, PathBuf};

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;
use tern::obj;

/// One turn of `calls`; the tool results in order.
fn turn(dir: &Path, calls: &[(&str, Value)], args: &[&str]) -> Vec<Value> {
    let inputs: Vec<(String, &str, String)> = calls
        .iter()
        .enumerate()
        .map(|(i, (tool, input))| (format!("toolu_{i}"), *tool, input.to_json()))
        .collect();
    let refs: Vec<(&str, &str, &str)> = inputs
        .iter()
        .map(|(id, t, j)| (id.as_str(), *t, j.as_str()))
        .collect();
    let api = StandIn::start(vec![
        standin::tools_reply(&refs),
        standin::text_reply("done"),
    ]);
    let out = run(tern(&api.url, dir)
        .args(["-p", "go", "--output-format", "json"])
        .args(args));
    assert_ok(&out);
    let results = tool_results(&api.requests()[1]);
    assert_eq!(results.len(), calls.len());
    results
}

fn text(r: &Value) -> String {
    match r.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(b)) => b.iter().filter_map(|x| x.str_field("text")).collect(),
        _ => String::new(),
    }
}

fn is_error(r: &Value) -> bool {
    r.get("is_error").and_then(Value::as_bool) == Some(true)
}

fn cells(path: &Path) -> Vec<Value> {
    tern::json::parse(&std::fs::read_to_string(path).unwrap())
        .unwrap()
        .get("cells")
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn notebook(dir: &Path, name: &str) -> (PathBuf, String) {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    let text = support::samples::notebook(&support::samples::image("png", 16, 16));
    std::fs::write(&path, &text).unwrap();
    (path, text)
}

fn read(path: &str) -> (&'static str, Value) {
    ("Read", obj! { "file_path" => path })
}

fn replace(path: &str, id: &str, source: &str) -> (&'static str, Value) {
    (
        "NotebookEdit",
        obj! { "notebook_path" => path, "cell_id" => id, "new_source" => source },
    )
}

#[test]
fn read_then_edit_keeps_the_notebook_whole() {
    let dir = std::fs::canonicalize(scratch("nbedit-flow")).unwrap();
    let (path, before) = notebook(&dir, "report.ipynb");
    let r = turn(
        &dir,
        &[
            read("report.ipynb"),
            replace("report.ipynb", "oops", "ratio = 1 / 2"),
            (
                "NotebookEdit",
                obj! { "notebook_path" => "report.ipynb", "cell_id" => "intro", "edit_mode" => "insert", "cell_type" => "markdown", "new_source" => "## Method" },
            ),
            (
                "NotebookEdit",
                obj! { "notebook_path" => "report.ipynb", "cell_number" => 5i64, "edit_mode" => "delete" },
            ),
            read("report.ipynb"),
        ],
        &["--permission-mode", "acceptEdits"],
    );
    for x in &r {
        assert!(!is_error(x), "{x:?}");
    }
    let after = cells(&path);
    let old = tern::json::parse(&before)
        .unwrap()
        .get("cells")
        .unwrap()
        .as_array()
        .unwrap()
        .clone();
    // intro, the new markdown, load, the edited one, plot (empty deleted).
    assert_eq!(after.len(), 5);
    assert_eq!(after[0], old[0]);
    assert_eq!(after[2], old[1]);
    assert_eq!(after[4], old[3], "the plot and its image output untouched");
    assert_eq!(
        after[3].get("source").unwrap().to_json(),
        r#"["ratio = 1 / 2"]"#
    );
    assert_eq!(after[1].str_field("cell_type"), Some("markdown"));
    assert!(text(&r[4]).contains("## Method"), "{}", text(&r[4]));
    // The untouched cells are the very bytes they were.
    let now = std::fs::read_to_string(&path).unwrap();
    let plot_at = before.find("   \"id\": \"plot\"").unwrap();
    let plot = &before[before[..plot_at].rfind("  {").unwrap()..];
    let plot = &plot[..plot.find("\n  }").unwrap() + 4];
    assert!(now.contains(plot));
}

#[test]
fn an_unread_or_changed_notebook_is_not_edited() {
    let dir = std::fs::canonicalize(scratch("nbedit-unread")).unwrap();
    let (path, before) = notebook(&dir, "n.ipynb");
    let r = turn(
        &dir,
        &[replace("n.ipynb", "load", "x = 1")],
        &["--permission-mode", "bypassPermissions"],
    );
    assert!(
        is_error(&r[0]) && text(&r[0]).contains("has not been read"),
        "{r:?}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
}

/// Deny rules for Edit cover NotebookEdit, as in Claude Code; plan mode
/// refuses it.
#[test]
fn deny_rules_and_plan_mode_hold_for_notebooks() {
    let dir = std::fs::canonicalize(scratch("nbedit-deny")).unwrap();
    let (path, before) = notebook(&dir, "secret.ipynb");
    let calls = [
        read("secret.ipynb"),
        replace("secret.ipynb", "load", "leak()"),
    ];
    // Nothing in the way: the edit lands.
    let r = turn(&dir, &calls, &["--permission-mode", "bypassPermissions"]);
    assert!(!is_error(&r[1]), "{r:?}");
    assert_ne!(std::fs::read_to_string(&path).unwrap(), before);
    std::fs::write(&path, &before).unwrap();

    for args in [
        vec![
            "--permission-mode",
            "bypassPermissions",
            "--disallowedTools",
            "Edit(./secret.ipynb)",
        ],
        vec!["--permission-mode", "plan"],
    ] {
        let r = turn(&dir, &calls, &args);
        assert!(!is_error(&r[0]), "reading is allowed: {r:?}");
        assert!(is_error(&r[1]), "{args:?}: {r:?}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before, "{args:?}");
    }
}

/// A notebook under `.tern/` or `.claude/` (where tern and Claude Code
/// look for configuration), or reached through a symlink that leads
/// outside the working directory, asks even in acceptEdits.
#[test]
fn protected_and_outside_notebooks_ask_even_in_accept_edits() {
    let base = std::fs::canonicalize(scratch("nbedit-protect")).unwrap();
    let repo = base.join("repo");
    let outside = base.join("outside");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let targets = [".tern/agent.ipynb", ".claude/notes.ipynb", "link.ipynb"];
    let setup = || {
        let mut originals = Vec::new();
        for t in &targets[..2] {
            originals.push(notebook(&repo, t));
        }
        let (real, text) = notebook(&outside, "real.ipynb");
        let _ = std::fs::remove_file(repo.join("link.ipynb"));
        std::os::unix::fs::symlink(&real, repo.join("link.ipynb")).unwrap();
        originals.push((real, text));
        originals
    };
    let calls: Vec<(&str, Value)> = targets
        .iter()
        .flat_map(|t| [read(t), replace(t, "load", "import os; os.system('id')")])
        .collect();

    // Unprotected: bypass changes all three, the one outside included.
    let originals = setup();
    let r = turn(&repo, &calls, &["--permission-mode", "bypassPermissions"]);
    for x in &r {
        assert!(!is_error(x), "{x:?}");
    }
    for (path, text) in &originals {
        assert_ne!(&std::fs::read_to_string(path).unwrap(), text, "{path:?}");
    }

    // acceptEdits: each edit asks, nobody can answer, nothing changes
    // (reading is allowed everywhere, so only the edit is in question).
    let originals = setup();
    let r = turn(
        &repo,
        &calls,
        &["--permission-mode", "acceptEdits", "--allowedTools", "Read"],
    );
    for (i, (path, text)) in originals.iter().enumerate() {
        let edit = &r[2 * i + 1];
        assert!(is_error(edit), "{path:?}: {edit:?}");
        let why = self::text(edit);
        assert!(
            why.contains("would change") && (why.contains("inside") || why.contains("outside")),
            "{why}"
        );
        assert_eq!(&std::fs::read_to_string(path).unwrap(), text, "{path:?}");
    }
}

#[test]
fn rewind_puts_an_edited_notebook_back() {
    let dir = std::fs::canonicalize(scratch("nbedit-rewind")).unwrap();
    let (path, before) = notebook(&dir, "n.ipynb");
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_r", "Read", r#"{"file_path": "n.ipynb"}"#)]),
        standin::tools_reply(&[(
            "toolu_e",
            "NotebookEdit",
            r#"{"notebook_path": "n.ipynb", "cell_number": 0, "edit_mode": "delete"}"#,
        )]),
        standin::text_reply("deleted"),
    ]);
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "drop the intro",
        "--permission-mode",
        "acceptEdits",
        "--output-format",
        "json",
    ]));
    assert_ok(&out);
    assert_eq!(cells(&path).len(), 4);
    let id = last_result(&out)
        .str_field("session_id")
        .unwrap()
        .to_string();
    let out = run(tern(&api.url, &dir).args(["rewind", &id]));
    assert_ok(&out);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
}
