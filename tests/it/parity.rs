//! Tool results side by side with Claude Code's (issue 35). Models are
//! trained on Claude Code's tools, so the same call must come back with the
//! same material result: the same lines of a file, the same files in the
//! same order, the same error or none, the same working directory, the
//! file changed the same way. Wording may differ; what a model would act
//! on may not.
//!
//! One session of calls runs through tern against a fixture, and each
//! result is reduced to its material facts (`facts`) and compared with
//! what Claude Code 2.1.332 gave for the same call (`want`, recorded from
//! it). Where Claude Code is installed (`TERN_CLAUDE_CODE`, which
//! `ci/claude.sh` provides), the same session also runs through it, live,
//! against the same stand-in, and its facts must equal tern's. A kept
//! difference names its reason (`Kept`) and docs/tools.md lists it.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use support::standin::{self, Request, StandIn};
use support::*;
use tern::json::Value;

/// A call and what Claude Code answered, as facts.
struct Case {
    tool: &'static str,
    /// The input, `{P}` standing for the fixture's absolute path.
    input: &'static str,
    want: &'static str,
    kept: Option<Kept>,
}

/// A difference tern keeps on purpose: its own facts, and why.
struct Kept {
    tern: &'static str,
    why: &'static str,
}

const fn case(tool: &'static str, input: &'static str, want: &'static str) -> Case {
    Case {
        tool,
        input,
        want,
        kept: None,
    }
}

const fn kept(
    tool: &'static str,
    input: &'static str,
    want: &'static str,
    tern: &'static str,
    why: &'static str,
) -> Case {
    Case {
        tool,
        input,
        want,
        kept: Some(Kept { tern, why }),
    }
}

/// The session, in order: Bash's working directory carries from call to
/// call, and Edit needs the Read before it.
const CASES: &[Case] = &[
    case(
        "Read",
        r#"{"file_path": "{P}/a.txt"}"#,
        "1:line one|2:line two",
    ),
    // Numbers as strings, as small models send them.
    case(
        "Read",
        r#"{"file_path": "{P}/a.txt", "offset": "2", "limit": "1"}"#,
        "2:line two",
    ),
    case(
        "Read",
        r#"{"file_path": "{P}/missing.txt"}"#,
        "error|~does not exist",
    ),
    case("Read", r#"{"file_path": "{P}/sub"}"#, "error"),
    case(
        "Read",
        r#"{"file_path": "{P}/u16.txt"}"#,
        "1:hello utf16|2:second",
    ),
    case(
        "Read",
        r#"{"file_path": "{P}/nul.txt"}"#,
        "1:text before?after|2:more|~NUL",
    ),
    case(
        "Read",
        r#"{"file_path": "{P}/crlf.txt"}"#,
        "1:first|2:second|3:third",
    ),
    case(
        "Read",
        r#"{"file_path": "{P}/quotes.txt"}"#,
        "1:say “hello” and it’s ok",
    ),
    case(
        "Edit",
        r#"{"file_path": "{P}/crlf.txt", "old_string": "first\nsecond", "new_string": "uno\ndos\nmas"}"#,
        "ok",
    ),
    case(
        "Edit",
        r#"{"file_path": "{P}/quotes.txt", "old_string": "say \"hello\" and it's", "new_string": "said \"bye\" and it's"}"#,
        "ok",
    ),
    case(
        "Edit",
        r#"{"file_path": "{P}/nb.ipynb", "old_string": "cells", "new_string": "x"}"#,
        "error|~NotebookEdit",
    ),
    case(
        "Edit",
        r#"{"file_path": "{P}/a.txt", "old_string": "nope", "new_string": "x"}"#,
        "error|~not found",
    ),
    // Only the modification time changed since the Read: not "modified".
    case("Bash", r#"{"command": "touch a.txt"}"#, ""),
    case(
        "Edit",
        r#"{"file_path": "{P}/a.txt", "old_string": "line one", "new_string": "line 1"}"#,
        "ok",
    ),
    case(
        "Write",
        r#"{"file_path": "{P}/unread.txt", "content": "fresh\n"}"#,
        "ok",
    ),
    case("Glob", r#"{"pattern": "*.rs"}"#, "sub/deep/x.rs"),
    case("Glob", r#"{"pattern": "*.log"}"#, "ignored.log"),
    case("Glob", r#"{"pattern": "*.txt", "path": "{P}/sub"}"#, ""),
    case("Glob", r#"{"pattern": "{P}/sub/*.py"}"#, "sub/y.py"),
    kept(
        "Glob",
        r#"{"pattern": "**/*.*"}"#,
        "u16.txt|nul.txt|sub/deep/x.rs|sub/y.py|ignored.log|.gitignore|nb.ipynb|sub/deep/.keep|.git/*|crlf.txt|quotes.txt|a.txt|unread.txt",
        "u16.txt|nul.txt|sub/deep/x.rs|sub/y.py|ignored.log|.gitignore|nb.ipynb|sub/deep/.keep|crlf.txt|quotes.txt|a.txt|unread.txt",
        "Glob never lists .git's own files: they are git's, and listing them invites edits there",
    ),
    case(
        "Grep",
        r#"{"pattern": "hi|main", "glob": "*.{py,rs}"}"#,
        "sub/y.py|sub/deep/x.rs",
    ),
    case(
        "Grep",
        r#"{"pattern": "line", "output_mode": "content", "-n": "true"}"#,
        "a.txt:1:line 1|a.txt:2:line two",
    ),
    case(
        "Grep",
        r#"{"pattern": "LINE", "-i": "true", "output_mode": "count"}"#,
        "a.txt:2",
    ),
    case("Grep", r#"{"pattern": "line\\ntwo"}"#, "error|~multiline"),
    case(
        "Grep",
        r#"{"pattern": "e", "output_mode": "files_with_matches", "head_limit": 2, "offset": 1}"#,
        "a.txt|quotes.txt",
    ),
    case("Grep", r#"{"pattern": "ignored content"}"#, ""),
    case("Bash", r#"{"command": "cd sub && pwd"}"#, "{P}/sub"),
    case("Bash", r#"{"command": "pwd; ls"}"#, "{P}/sub|deep|y.py"),
    // Searches without a path start where the shell is.
    case("Glob", r#"{"pattern": "*.py"}"#, "y.py"),
    case("Grep", r#"{"pattern": "print"}"#, "y.py"),
    case(
        "Grep",
        r#"{"pattern": "print", "output_mode": "content"}"#,
        "y.py:1:print('hi')",
    ),
    case(
        "Glob",
        r#"{"pattern": "*.rs", "path": "deep"}"#,
        "deep/x.rs",
    ),
    case("Bash", r#"{"command": "cd / && pwd"}"#, "/|reset {P}"),
    case("Bash", r#"{"command": "pwd"}"#, "{P}"),
    case(
        "Bash",
        r#"{"command": "echo a; echo b >&2; echo c"}"#,
        "a|b|c",
    ),
    case(
        "Bash",
        r#"{"command": "ls nonexistent"}"#,
        "error|exit 2|ls: cannot access 'nonexistent': No such file or directory",
    ),
    case(
        "Bash",
        r#"{"command": "head -c 40000 /dev/zero | tr '\\0' x"}"#,
        "persisted 39.1KB",
    ),
    kept(
        "Bash",
        r#"{"command": "sleep 3; echo done", "timeout": 1000}"#,
        "error|exit 143|~timed out",
        "background",
        "a command past its timeout goes on in the background with an id and \
         its output file (Claude Code does this in its interactive mode; in -p \
         it kills the command): nothing the command did is lost",
    ),
];

/// The fixture: files whose reading, matching and editing differ between
/// implementations (CRLF, typographic quotes, UTF-16, a NUL, a notebook,
/// a gitignored file), with modification times one second apart in a
/// known order, in a git repository.
fn fixture(name: &str) -> PathBuf {
    let dir = std::fs::canonicalize(scratch(name)).unwrap();
    let utf16: Vec<u8> = "\u{feff}hello utf16\nsecond\n"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    let files: [(&str, &[u8]); 11] = [
        ("a.txt", b"line one\nline two\n"),
        ("crlf.txt", b"first\r\nsecond\r\nthird\r\n"),
        ("quotes.txt", "say “hello” and it’s ok\n".as_bytes()),
        ("u16.txt", &utf16),
        ("nul.txt", b"text before\0after\nmore\n"),
        ("sub/deep/x.rs", b"fn main() {}\n"),
        ("sub/y.py", b"print('hi')\n"),
        ("ignored.log", b"ignored content\n"),
        (".gitignore", b"*.log\n"),
        (
            "nb.ipynb",
            b"{\"cells\":[],\"metadata\":{},\"nbformat\":4,\"nbformat_minor\":5}\n",
        ),
        ("sub/deep/.keep", b""),
    ];
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&dir)
        .status();
    assert!(git.is_ok_and(|s| s.success()), "git init");
    let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    for (k, (path, bytes)) in files.iter().enumerate() {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(base + Duration::from_secs(k as u64))
            .unwrap();
    }
    dir
}

/// The input of call `k` for the fixture at `dir`.
fn input(k: usize, dir: &Path) -> String {
    CASES[k].input.replace("{P}", &dir.display().to_string())
}

/// A stand-in that asks for call K once the conversation holds K tool
/// results, and ends the turn after the last. Any other request (a title,
/// a quota check) gets a plain answer.
fn scripted(dir: &Path) -> StandIn {
    let api = StandIn::start(Vec::new());
    let inputs: Vec<String> = (0..CASES.len()).map(|k| input(k, dir)).collect();
    api.set_responder(Box::new(move |req: &Request| {
        if !req.body.contains("\"tools\"") {
            return Some(standin::text_reply("ok"));
        }
        let done = req.body.matches("\"tool_result\"").count();
        Some(match inputs.get(done) {
            Some(input) => {
                let id = format!("toolu_parity{done}");
                standin::tools_reply(&[(&id, CASES[done].tool, input)])
            }
            None => standin::text_reply("All calls done."),
        })
    }));
    api
}

/// The results of the session's calls, from the request that carried
/// them all, in call order: (is_error, text).
fn results(api: &StandIn) -> Vec<(bool, String)> {
    let last = api
        .requests()
        .into_iter()
        .max_by_key(|r| r.body.matches("\"tool_result\"").count())
        .expect("no request reached the stand-in");
    let body = body(&last);
    let mut out = Vec::new();
    for m in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for block in m
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if block.str_field("type") != Some("tool_result") {
                continue;
            }
            let is_error = block.get("is_error").and_then(Value::as_bool) == Some(true);
            let text = match block.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(parts)) => parts
                    .iter()
                    .filter_map(|p| p.str_field("text"))
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            };
            out.push((is_error, text));
        }
    }
    out
}

/// What a model would act on in a result, as `|`-joined facts: "error"
/// for a failure, a file's numbered lines as `N:text`, the paths listed,
/// a command's output lines, its exit code and a reset of its directory;
/// `~word` facts of `want` only ask that the text mention the word.
fn facts(tool: &str, is_error: bool, text: &str, dir: &Path, want: &str) -> String {
    let text = text.replace(&dir.display().to_string(), "{P}");
    let mut out: Vec<String> = Vec::new();
    if is_error {
        out.push("error".into());
    }
    match tool {
        "Read" if !is_error => {
            for l in text.lines() {
                let Some((n, body)) = l.split_once('\t') else {
                    continue;
                };
                let n = n.trim();
                if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
                    // NUL is shown differently by each (a raw NUL, a
                    // symbol): a mark either way.
                    let body: String = body
                        .chars()
                        .map(|c| if c == '\0' || c == '␀' { '?' } else { c })
                        .collect();
                    out.push(format!("{n}:{body}"));
                }
            }
            // Claude Code numbers the empty "line" after a final newline.
            if out.last().is_some_and(|l| l.ends_with(':')) {
                out.pop();
            }
        }
        "Glob" | "Grep" if !is_error => out.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .filter(|l| {
                    !(l.starts_with("Found ")
                        || l.starts_with("No files found")
                        || l.starts_with("No matches found")
                        || l.starts_with('[')
                        || l.starts_with('('))
                })
                .map(|l| {
                    if l.starts_with(".git/") {
                        ".git/*".to_string()
                    } else {
                        l.to_string()
                    }
                }),
        ),
        "Bash" => bash_facts(&text, is_error, &mut out),
        _ if !is_error => out.push("ok".into()),
        _ => {}
    }
    out.dedup();
    for word in want.split('|').filter_map(|f| f.strip_prefix('~')) {
        if text.to_lowercase().contains(&word.to_lowercase()) {
            out.push(format!("~{word}"));
        }
    }
    out.join("|")
}

fn bash_facts(text: &str, is_error: bool, out: &mut Vec<String>) {
    if text.contains("<persisted-output>") {
        let size = text
            .split_once("Output too large (")
            .and_then(|(_, r)| r.split_once(')'))
            .map_or("?", |(s, _)| s);
        out.push(format!("persisted {size}"));
        return;
    }
    if text.contains("Command running in background with ID:") {
        out.push("background".into());
        return;
    }
    let mut lines = Vec::new();
    // "(no output)", "(Bash completed with no output)": wording for none.
    let silent = |l: &str| l.starts_with('(') && l.ends_with("no output)");
    for l in text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty() && !silent(l))
    {
        if let Some(code) = l.strip_prefix("Exit code ") {
            out.push(format!("exit {code}"));
        } else if let Some(to) = l.strip_prefix("Shell cwd was reset to ") {
            lines.push(format!("reset {to}"));
        } else if is_error && l.contains("timed out") {
            // The wording of a timeout; `~timed out` asks for it.
        } else {
            lines.push(l.to_string());
        }
    }
    out.extend(lines);
}

/// The fixture's files after the session, as each agent left them.
fn edited(dir: &Path) -> Vec<(&'static str, Vec<u8>)> {
    ["a.txt", "crlf.txt", "quotes.txt", "nb.ipynb", "unread.txt"]
        .into_iter()
        .map(|f| (f, std::fs::read(dir.join(f)).unwrap_or_default()))
        .collect()
}

const TOOLS: [&str; 6] = ["Bash", "Read", "Glob", "Grep", "Edit", "Write"];

fn tern_session() -> (PathBuf, Vec<(bool, String)>) {
    let dir = fixture("parity-tern");
    let api = scripted(&dir);
    let out = run(tern(&api.url, &dir)
        .args(["-p", "go", "--max-turns", "100", "--allowedTools"])
        .args(TOOLS));
    assert_ok(&out);
    (dir.clone(), results(&api))
}

/// The edits as Claude Code makes them: CRLF kept (also in inserted
/// lines), the file's typographic quotes kept, the mtime-only change not
/// taken for a change.
fn files_as_claude_code_leaves_them(files: &[(&str, Vec<u8>)]) {
    let file = |name: &str| &files.iter().find(|(f, _)| *f == name).unwrap().1;
    assert_eq!(file("crlf.txt"), b"uno\r\ndos\r\nmas\r\nthird\r\n");
    assert_eq!(
        String::from_utf8_lossy(file("quotes.txt")),
        "said “bye” and it’s ok\n"
    );
    assert_eq!(file("a.txt"), b"line 1\nline two\n");
}

/// Claude Code itself, when installed: run as a user would, pointed at
/// the stand-in, with a home of its own.
fn claude_session(claude: &Path) -> (PathBuf, Vec<(bool, String)>) {
    let dir = fixture("parity-claude");
    let api = scripted(&dir);
    let home = home_of(&dir);
    let out = Command::new(claude)
        .current_dir(&dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("ANTHROPIC_BASE_URL", &api.url)
        .env("ANTHROPIC_API_KEY", "sk-test")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .args(["-p", "go", "--max-turns", "100", "--allowedTools"])
        .args(TOOLS)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "Claude Code failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir.clone(), results(&api))
}

/// Where Claude Code is, if a test may run it here.
fn claude_code() -> Option<PathBuf> {
    if runner().is_some() {
        skip_emulated(
            "side by side with Claude Code",
            "Claude Code is an x86_64 program",
        );
        return None;
    }
    match std::env::var_os("TERN_CLAUDE_CODE").map(PathBuf::from) {
        Some(p) if p.is_file() => Some(p),
        _ => {
            skip(
                "side by side with Claude Code",
                "TERN_CLAUDE_CODE does not name Claude Code (ci/claude.sh installs it)",
            );
            None
        }
    }
}

#[test]
fn tool_results_match_claude_codes() {
    let (dir, got) = tern_session();
    assert_eq!(got.len(), CASES.len(), "every call answered: {got:#?}");
    let mut wrong = Vec::new();
    for (k, (c, (is_error, text))) in CASES.iter().zip(&got).enumerate() {
        let mine = facts(c.tool, *is_error, text, &dir, c.want);
        let expected = c.kept.as_ref().map_or(c.want, |kept| kept.tern);
        if mine != expected {
            wrong.push(format!(
                "#{k} {} {}\n  want {expected}\n  got  {mine}\n  text {text:?}",
                c.tool, c.input
            ));
        }
    }
    let files = edited(&dir);
    let Some(claude) = claude_code() else {
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        return files_as_claude_code_leaves_them(&files);
    };
    let (cdir, theirs) = claude_session(&claude);
    assert_eq!(theirs.len(), CASES.len(), "{theirs:#?}");
    let mut differ = Vec::new();
    for (k, (c, (is_error, text))) in CASES.iter().zip(&theirs).enumerate() {
        let facts = facts(c.tool, *is_error, text, &cdir, c.want);
        if facts != c.want {
            differ.push(format!(
                "#{k} {} {}\n  recorded {}\n  now      {facts}\n  text {text:?}",
                c.tool, c.input, c.want
            ));
        }
    }
    assert!(
        wrong.is_empty() && differ.is_empty(),
        "tern:\n{}\nClaude Code, against what was recorded:\n{}",
        wrong.join("\n"),
        differ.join("\n")
    );
    files_as_claude_code_leaves_them(&files);
    assert_eq!(edited(&cdir), files, "the files as each left them");
    for c in CASES {
        if let Some(kept) = &c.kept {
            eprintln!("kept: {} {}: {}", c.tool, c.input, kept.why);
        }
    }
}
