//! Glob and Grep through the real binary, answered as Claude Code's tools
//! answer the same calls (issue 35): a slash-less glob at any depth,
//! gitignored files listed, an absolute pattern searched from its own
//! directory (and asked about when that is outside), Grep's brace globs,
//! `offset` paging and its default cap, and a line break without
//! `multiline` refused. Read deny rules still withhold what they cover.

use crate::support;

use std::path::Path;

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;
use tern::obj;

/// One turn: the model asks for `calls` (tool, input), then ends. Returns
/// the tool results, in order.
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
    let reqs = api.requests();
    assert!(
        reqs.len() >= 2,
        "the turn did not finish; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = tool_results(&reqs[1]);
    assert_eq!(results.len(), calls.len());
    results
}

fn content(r: &Value) -> &str {
    r.str_field("content").unwrap_or_default()
}

fn is_error(r: &Value) -> bool {
    r.get("is_error").and_then(Value::as_bool) == Some(true)
}

/// The paths listed, sorted, without the closing notes.
fn sorted(r: &Value) -> Vec<&str> {
    let mut v: Vec<&str> = content(r)
        .lines()
        .filter(|l| !l.starts_with('(') && !l.is_empty())
        .collect();
    v.sort();
    v
}

/// `base/repo` (the working directory, a git-ignoring project) and
/// `base/outside`.
fn project(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let base = std::fs::canonicalize(scratch(name)).unwrap();
    let repo = base.join("repo");
    let outside = base.join("outside");
    for d in ["src/deep", "target/debug", ".git", "secrets"] {
        std::fs::create_dir_all(repo.join(d)).unwrap();
    }
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(repo.join(".gitignore"), "target/\n.env\nsecrets/\n").unwrap();
    for (f, text) in [
        ("main.rs", "fn main() {}\n"),
        ("src/lib.rs", "pub fn port() -> u16 {\n    8080\n}\n"),
        ("src/deep/main.rs", "// PORT = 8080\n"),
        ("src/tool.py", "PORT = 8080\n"),
        ("src/app.js", "const port = 8080;\n"),
        ("target/debug/build.rs", "// 8080\n"),
        (".env", "TOKEN=hunter2\n"),
        ("secrets/key.rs", "// hunter2\n"),
        (".git/HEAD.rs", "ref\n"),
    ] {
        std::fs::write(repo.join(f), text).unwrap();
    }
    std::fs::write(outside.join("other.rs"), "// outside\n").unwrap();
    (repo, outside)
}

#[test]
fn glob_answers_as_claude_codes_glob() {
    let (repo, outside) = project("glob-parity");
    let results = turn(
        &repo,
        &[
            ("Glob", obj! { "pattern" => "main.rs" }),
            ("Glob", obj! { "pattern" => "*.rs", "path" => "src" }),
            ("Glob", obj! { "pattern" => "*.rs" }),
            (
                "Glob",
                obj! { "pattern" => repo.join("src/*.{py,js}").display().to_string() },
            ),
            (
                "Glob",
                obj! { "pattern" => outside.join("*.rs").display().to_string() },
            ),
        ],
        &["--disallowedTools", "Read(./secrets/**)"],
    );
    assert_eq!(sorted(&results[0]), ["main.rs", "src/deep/main.rs"]);
    assert_eq!(sorted(&results[1]), ["src/deep/main.rs", "src/lib.rs"]);
    // Gitignored files are there; .git and what a Read rule denies are not.
    let all = content(&results[2]);
    assert!(all.contains("target/debug/build.rs"), "{all}");
    assert!(!all.contains(".git/") && !all.contains("secrets/"), "{all}");
    assert!(all.contains("1 path left out"), "{all}");
    assert_eq!(sorted(&results[3]), ["src/app.js", "src/tool.py"]);
    // Outside the project: asked about (nobody answers), nothing listed.
    assert!(is_error(&results[4]), "{:?}", results[4]);
    assert!(
        !content(&results[4]).contains("other.rs"),
        "{:?}",
        results[4]
    );
}

#[test]
fn grep_answers_as_claude_codes_grep() {
    let (repo, _) = project("grep-parity");
    let results = turn(
        &repo,
        &[
            ("Grep", obj! { "pattern" => "8080", "glob" => "*.{py,js}" }),
            (
                "Grep",
                obj! { "pattern" => "8080", "output_mode" => "count", "offset" => 1i64, "head_limit" => 1i64 },
            ),
            ("Grep", obj! { "pattern" => "u16 \\{\\n\\s+8080" }),
            (
                "Grep",
                obj! { "pattern" => "u16 \\{\\n\\s+8080", "multiline" => true },
            ),
            ("Grep", obj! { "pattern" => "hunter2", "glob" => ".env" }),
        ],
        &[],
    );
    assert_eq!(sorted(&results[0]), ["src/app.js", "src/tool.py"]);
    assert_eq!(
        content(&results[1]),
        "src/deep/main.rs:1\n\n[Showing results with pagination = limit: 1, offset: 1. \
         More results follow: use offset: 2 for the next page, or head_limit: 0 for all]"
    );
    assert!(is_error(&results[2]), "{:?}", results[2]);
    assert!(
        content(&results[2]).contains("multiline"),
        "{:?}",
        results[2]
    );
    assert_eq!(content(&results[3]), "src/lib.rs");
    // A glob takes back a gitignored file, as ripgrep's does…
    assert_eq!(content(&results[4]), ".env");
    // …never one a Read rule denies.
    let denied = turn(
        &repo,
        &[(
            "Grep",
            obj! { "pattern" => "hunter2", "glob" => ".env", "output_mode" => "content" },
        )],
        &["--disallowedTools", "Read(./.env)"],
    );
    let denied = content(&denied[0]);
    assert!(!denied.contains("hunter2"), "{denied}");
    assert!(denied.contains("1 path left out"), "{denied}");
}

/// After a `cd`, Glob and Grep search from the shell's directory and list
/// from there, as Claude Code's do; the policy judges the same directory
/// the tool searches, so a link there that leads out still asks (and,
/// with nobody to ask, is refused) rather than being judged from the
/// project root, where the same name means nothing.
#[test]
fn searches_start_where_the_shell_is_and_links_out_still_ask() {
    let (repo, outside) = project("search-here");
    std::os::unix::fs::symlink(&outside, repo.join("src/out")).unwrap();
    let calls = [
        ("Bash", obj! { "command" => "cd src" }),
        ("Glob", obj! { "pattern" => "*.py" }),
        ("Grep", obj! { "pattern" => "8080", "glob" => "*.py" }),
        ("Grep", obj! { "pattern" => "outside", "path" => "out" }),
        ("Glob", obj! { "pattern" => "*.rs", "path" => "out" }),
    ];
    let mut replies: Vec<standin::Reply> = calls
        .iter()
        .enumerate()
        .map(|(i, (tool, input))| {
            standin::tools_reply(&[(&format!("toolu_{i}"), tool, &input.to_json())])
        })
        .collect();
    replies.push(standin::text_reply("done"));
    let api = StandIn::start(replies);
    let out = run(tern(&api.url, &repo).args(["-p", "go", "--allowedTools", "Bash(cd:*)"]));
    assert_ok(&out);
    let reqs = api.requests();
    let result = |k: usize| tool_results(&reqs[k + 1]).remove(0);
    assert!(!is_error(&result(0)), "{:?}", result(0));
    assert_eq!(content(&result(1)), "tool.py");
    assert_eq!(content(&result(2)), "tool.py");
    for k in [3, 4] {
        let r = result(k);
        assert!(is_error(&r), "a link out of the shell's directory: {r:?}");
        assert!(!content(&r).contains("other.rs"), "{r:?}");
        assert!(
            content(&r).contains("outside the working directories"),
            "refused for where the link leads: {r:?}"
        );
    }
}
