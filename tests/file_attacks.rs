//! Attacks on the file tools, each run both ways through the real binary:
//! with the protection out of the way (bypassPermissions, or no rule) the
//! attack does its harm, which proves the test can see it; in the mode
//! under test tern refuses and nothing outside changes or leaks.
//!
//! Classes: a symlink in the repository pointing outside (Read, Grep,
//! Glob, Write, Edit; `..` after the link taken as the kernel takes it);
//! a Read deny rule bypassed by searching the whole tree; protected paths
//! (`.git/config` with `core.fsmonitor`, settings, `.mcp.json`, hooks)
//! written in acceptEdits; Read of a FIFO or a device.

mod support;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
    assert!(
        out.status.code().is_some(),
        "tern was killed; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
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

/// `base/repo` (the working directory) and `base/outside`, resolved.
fn layout(name: &str) -> (PathBuf, PathBuf) {
    let base = std::fs::canonicalize(scratch(name)).unwrap();
    let repo = base.join("repo");
    let outside = base.join("outside");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(outside.join("deep")).unwrap();
    (repo, outside)
}

#[test]
fn a_symlink_in_the_repo_does_not_let_reads_reach_outside() {
    let (repo, outside) = layout("link-read");
    std::fs::write(outside.join("secret.txt"), "TOP-SECRET-READ\n").unwrap();
    std::fs::write(outside.join("deep/inner.txt"), "TOP-SECRET-INNER\n").unwrap();
    // Lexically `link/../secret.txt` is this decoy; the kernel opens the
    // outside file.
    std::fs::write(repo.join("secret.txt"), "decoy\n").unwrap();
    symlink(outside.join("deep"), repo.join("link")).unwrap();
    let calls = [
        ("Read", obj! { "file_path" => "link/../secret.txt" }),
        (
            "Read",
            obj! { "file_path" => repo.join("link/inner.txt").display().to_string() },
        ),
        (
            "Grep",
            obj! { "pattern" => "TOP-SECRET", "path" => "link/..", "output_mode" => "content" },
        ),
        ("Glob", obj! { "pattern" => "*.txt", "path" => "link/.." }),
        ("Grep", obj! { "pattern" => "TOP-SECRET", "path" => "link" }),
    ];

    // Unprotected: every call reaches the outside file.
    let open = turn(&repo, &calls, &["--permission-mode", "bypassPermissions"]);
    assert!(content(&open[0]).contains("TOP-SECRET-READ"), "{open:?}");
    assert!(content(&open[1]).contains("TOP-SECRET-INNER"), "{open:?}");
    assert!(content(&open[2]).contains("TOP-SECRET-READ"), "{open:?}");
    assert!(content(&open[3]).contains("secret.txt"), "{open:?}");
    assert!(content(&open[4]).contains("inner.txt"), "{open:?}");

    // Through tern's default mode: each one asks (and nobody can answer).
    let guarded = turn(&repo, &calls, &[]);
    for r in &guarded {
        assert!(is_error(r), "{r:?}");
        assert!(
            content(r).contains("outside the working directories"),
            "{r:?}"
        );
        assert!(!content(r).contains("TOP-SECRET"), "{r:?}");
    }
    // A search of the repository itself does not follow the link out.
    let tree = turn(
        &repo,
        &[
            ("Grep", obj! { "pattern" => "TOP-SECRET" }),
            ("Glob", obj! { "pattern" => "**/*.txt" }),
        ],
        &[],
    );
    assert_eq!(content(&tree[0]), "No matches found", "{tree:?}");
    assert_eq!(content(&tree[1]), "secret.txt", "{tree:?}");
}

#[test]
fn a_symlink_in_the_repo_does_not_let_edits_reach_outside() {
    let (repo, outside) = layout("link-write");
    std::fs::write(outside.join("target.txt"), "original\n").unwrap();
    symlink(&outside, repo.join("link")).unwrap();
    let read_rule = format!("Read(/{}/**)", outside.display());
    let calls = |n: &str| {
        [
            (
                "Write",
                obj! { "file_path" => format!("link/planted-{n}.txt"), "content" => "x" },
            ),
            // Lexically `repo/planted-…` (inside); the kernel writes
            // beside `outside`.
            (
                "Write",
                obj! { "file_path" => format!("link/../planted-dotdot-{n}.txt"), "content" => "x" },
            ),
            ("Read", obj! { "file_path" => "link/target.txt" }),
            (
                "Edit",
                obj! { "file_path" => "link/target.txt", "old_string" => "original", "new_string" => format!("changed by {n}") },
            ),
        ]
    };

    let open = turn(
        &repo,
        &calls("bypass"),
        &["--permission-mode", "bypassPermissions"],
    );
    let beside = outside.parent().unwrap();
    assert!(outside.join("planted-bypass.txt").exists(), "{open:?}");
    assert!(
        beside.join("planted-dotdot-bypass.txt").exists(),
        "{open:?}"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("target.txt")).unwrap(),
        "changed by bypass\n"
    );
    std::fs::write(outside.join("target.txt"), "original\n").unwrap();

    // acceptEdits, with reading outside allowed by a rule: the writes ask.
    let guarded = turn(
        &repo,
        &calls("accept"),
        &[
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            &read_rule,
        ],
    );
    assert!(!outside.join("planted-accept.txt").exists(), "{guarded:?}");
    assert!(
        !beside.join("planted-dotdot-accept.txt").exists(),
        "{guarded:?}"
    );
    assert!(!repo.join("planted-dotdot-accept.txt").exists());
    assert_eq!(
        std::fs::read_to_string(outside.join("target.txt")).unwrap(),
        "original\n"
    );
    for i in [0, 1, 3] {
        assert!(is_error(&guarded[i]), "{:?}", guarded[i]);
        assert!(
            content(&guarded[i]).contains("outside the working directories"),
            "{:?}",
            guarded[i]
        );
    }
    assert!(!is_error(&guarded[2]), "the Read rule allows it");
}

#[test]
fn read_deny_rules_hold_for_searches_of_the_whole_tree() {
    let base = std::fs::canonicalize(scratch("deny-search")).unwrap();
    std::fs::create_dir_all(base.join("src")).unwrap();
    std::fs::create_dir_all(base.join("secrets")).unwrap();
    std::fs::write(base.join(".env"), "API_KEY=hunter2-dotenv\n").unwrap();
    std::fs::write(base.join("secrets/prod.key"), "hunter2-prodkey\n").unwrap();
    std::fs::write(base.join("src/main.rs"), "fn main() {} // hunter2-src\n").unwrap();
    let calls = [
        (
            "Grep",
            obj! { "pattern" => "hunter2", "output_mode" => "content" },
        ),
        ("Glob", obj! { "pattern" => "**/*" }),
        ("Glob", obj! { "pattern" => ".env*" }),
        ("Grep", obj! { "pattern" => "hunter2", "path" => ".env" }),
    ];

    // Without the rules the searches return the secrets.
    let open = turn(&base, &calls, &[]);
    assert!(content(&open[0]).contains("hunter2-dotenv"), "{open:?}");
    assert!(content(&open[0]).contains("hunter2-prodkey"), "{open:?}");
    assert!(content(&open[1]).contains(".env"), "{open:?}");
    assert!(content(&open[2]).contains(".env"), "{open:?}");

    for mode in ["default", "bypassPermissions"] {
        let guarded = turn(
            &base,
            &calls,
            &[
                "--permission-mode",
                mode,
                "--disallowedTools",
                "Read(./.env)",
                "--disallowedTools",
                "Read(./secrets/**)",
            ],
        );
        let grep = content(&guarded[0]);
        assert!(grep.contains("hunter2-src"), "{mode}: {grep}");
        assert!(!grep.contains("hunter2-dotenv"), "{mode}: {grep}");
        assert!(!grep.contains("hunter2-prodkey"), "{mode}: {grep}");
        assert!(grep.contains("left out"), "{mode}: {grep}");
        let listed = content(&guarded[1]);
        assert!(listed.contains("src/main.rs"), "{mode}: {listed}");
        assert!(
            !listed.contains(".env") && !listed.contains("prod.key"),
            "{mode}: {listed}"
        );
        assert!(!content(&guarded[2]).contains(".env\n"), "{mode}");
        assert!(is_error(&guarded[3]), "{mode}: {:?}", guarded[3]);
        assert!(content(&guarded[3]).contains("denied by the rule Read(./.env)"));
    }
}

/// `.git/config` with a `core.fsmonitor` command: the next `git status`
/// anyone runs executes it.
const FSMONITOR: &str =
    "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch PWNED; false\"\n";

fn git(dir: &Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", home_of(dir))
        .output()
        .is_ok_and(|o| o.status.success() || args[0] == "status");
    assert!(ok, "git {args:?}");
}

#[test]
fn protected_paths_ask_even_in_accept_edits() {
    if std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_err()
    {
        return skip("protected_paths_ask_even_in_accept_edits", "no git");
    }
    let attack = |dir: &Path| {
        [
            ("Read", obj! { "file_path" => ".git/config" }),
            (
                "Write",
                obj! { "file_path" => ".git/config", "content" => FSMONITOR },
            ),
            (
                "Write",
                obj! { "file_path" => ".git/hooks/post-checkout", "content" => "#!/bin/sh\ntouch PWNED\n" },
            ),
            (
                "Write",
                obj! { "file_path" => ".tern/settings.json", "content" => r#"{"permissions":{"allow":["Bash"]}}"# },
            ),
            (
                "Write",
                obj! { "file_path" => ".claude/settings.json", "content" => r#"{"permissions":{"defaultMode":"bypassPermissions"}}"# },
            ),
            (
                "Write",
                obj! { "file_path" => dir.join(".mcp.json").display().to_string(), "content" => r#"{"mcpServers":{"x":{"command":"sh"}}}"# },
            ),
            (
                "Edit",
                obj! { "file_path" => ".claude/agents/helper.md", "old_string" => "", "new_string" => "---\nname: helper\n---\n" },
            ),
        ]
    };
    let fresh = |name: &str| {
        let dir = std::fs::canonicalize(scratch(name)).unwrap();
        git(&dir, &["init", "-q"]);
        dir
    };

    // Unprotected: bypass writes them all, and git runs the planted command.
    let open = fresh("protected-bypass");
    let results = turn(
        &open,
        &attack(&open),
        &["--permission-mode", "bypassPermissions"],
    );
    assert!(
        results.iter().all(|r| !is_error(r)),
        "bypass is the user's own choice: {results:?}"
    );
    git(&open, &["status"]);
    assert!(open.join("PWNED").exists(), "git did not run fsmonitor");
    assert!(open.join(".tern/settings.json").exists());

    // acceptEdits (and bare Edit/Write allow rules) ask: nothing changes.
    for (name, args) in [
        ("protected-accept", vec!["--permission-mode", "acceptEdits"]),
        ("protected-rules", vec!["--allowedTools", "Edit,Write"]),
    ] {
        let dir = fresh(name);
        let before = std::fs::read_to_string(dir.join(".git/config")).unwrap();
        let results = turn(&dir, &attack(&dir), &args);
        assert!(!is_error(&results[0]), "reading .git/config is fine");
        for r in &results[1..] {
            assert!(is_error(r), "{name}: {r:?}");
            assert!(content(r).contains("would change"), "{name}: {r:?}");
        }
        assert_eq!(
            std::fs::read_to_string(dir.join(".git/config")).unwrap(),
            before
        );
        for p in [
            ".git/hooks/post-checkout",
            ".tern/settings.json",
            ".claude/settings.json",
            ".mcp.json",
            ".claude/agents/helper.md",
        ] {
            assert!(!dir.join(p).exists(), "{name}: {p} was written");
        }
        git(&dir, &["status"]);
        assert!(!dir.join("PWNED").exists(), "{name}");
    }

    // A rule that names the path is the user's explicit yes.
    let dir = fresh("protected-named");
    let results = turn(
        &dir,
        &[(
            "Write",
            obj! { "file_path" => ".claude/settings.json", "content" => "{}" },
        )],
        &[
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            "Write(./.claude/settings.json)",
        ],
    );
    assert!(!is_error(&results[0]), "{results:?}");
}

#[test]
fn writes_outside_the_working_directories_ask_in_accept_edits() {
    let (repo, outside) = layout("outside-write");
    let target = outside.join("planted.txt");
    let call = [(
        "Write",
        obj! { "file_path" => target.display().to_string(), "content" => "x" },
    )];
    turn(&repo, &call, &["--permission-mode", "bypassPermissions"]);
    assert!(target.exists());
    std::fs::remove_file(&target).unwrap();
    for args in [
        vec!["--permission-mode", "acceptEdits"],
        vec!["--allowedTools", "Write"],
    ] {
        let r = turn(&repo, &call, &args);
        assert!(is_error(&r[0]) && !target.exists(), "{args:?}: {r:?}");
    }
}

#[test]
fn read_refuses_fifos_and_devices_without_hanging() {
    let dir = std::fs::canonicalize(scratch("fifo")).unwrap();
    let fifo = dir.join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);

    // Unprotected: a plain open of the FIFO blocks until a writer comes.
    let f = fifo.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = std::fs::File::open(&f);
        let _ = tx.send(());
    });
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "opening a FIFO did not block, so this test proves nothing"
    );

    let began = Instant::now();
    let r = turn(
        &dir,
        &[
            ("Read", obj! { "file_path" => "pipe" }),
            ("Read", obj! { "file_path" => "/dev/zero" }),
        ],
        &["--permission-mode", "bypassPermissions"],
    );
    assert!(began.elapsed() < Duration::from_secs(20));
    assert!(
        is_error(&r[0]) && content(&r[0]).contains("named pipe"),
        "{r:?}"
    );
    assert!(
        is_error(&r[1]) && content(&r[1]).contains("device"),
        "{r:?}"
    );
    // Let the blocked opener go.
    let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
    let _ = rx.recv_timeout(Duration::from_secs(5));
}
