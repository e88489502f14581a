//! Attacks on the file tools, each run both ways through the real binary:
//! with the protection out of the way (bypassPermissions, or no rule) the
//! attack does its harm, which proves the test can see it; in the mode
//! under test tern refuses and nothing outside changes or leaks.
//!
//! Classes: a symlink in the repository pointing outside (Read, Grep,
//! Glob, Write, Edit; `..` after the link taken as the kernel takes it);
//! a Read deny rule bypassed by searching the whole tree; protected paths
//! (`.git/config` with `core.fsmonitor`, settings, `.mcp.json`, hooks)
//! written in acceptEdits; Read of a FIFO or a device; a
//! `sandbox.filesystem.denyRead` path reached by a tool other than
//! sandboxed Bash (Read, Grep, Glob, Edit, NotebookEdit, an unsandboxed
//! `cat`, a memory import, the REPL's inner calls).

use crate::support;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;
use tern::obj;

/// The model's turn asking for `calls` (tool, input), their ids counted
/// from `first`.
fn calls_reply(calls: &[(&str, Value)], first: usize) -> standin::Reply {
    let inputs: Vec<(String, &str, String)> = calls
        .iter()
        .enumerate()
        .map(|(i, (tool, input))| (format!("toolu_{}", first + i), *tool, input.to_json()))
        .collect();
    let refs: Vec<(&str, &str, &str)> = inputs
        .iter()
        .map(|(id, t, j)| (id.as_str(), *t, j.as_str()))
        .collect();
    standin::tools_reply(&refs)
}

/// One turn: the model asks for `calls` (tool, input), then ends. Returns
/// the tool results, in order.
fn turn(dir: &Path, calls: &[(&str, Value)], args: &[&str]) -> Vec<Value> {
    let api = StandIn::start(vec![calls_reply(calls, 0), standin::text_reply("done")]);
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

/// A notebook whose one cell holds a secret.
const SECRET_NOTEBOOK: &str = r#"{"cells":[{"cell_type":"code","id":"c1","metadata":{},"source":["key = 'hunter2-nb'"],"outputs":[],"execution_count":null}],"metadata":{},"nbformat":4,"nbformat_minor":5}"#;

/// One turn of `calls` from `dir`; the tool results and the first
/// request's system prompt (where memory files go).
fn turn_and_system(dir: &Path, calls: &[(&str, Value)], args: &[&str]) -> (Vec<Value>, String) {
    let api = StandIn::start(vec![calls_reply(calls, 0), standin::text_reply("done")]);
    let out = run(tern(&api.url, dir)
        .args(["-p", "go", "--output-format", "json"])
        .args(args));
    assert_ok(&out);
    let reqs = api.requests();
    let results = tool_results(&reqs[1]);
    assert_eq!(results.len(), calls.len());
    let system = body(&reqs[0])
        .get("system")
        .map(Value::to_json)
        .unwrap_or_default();
    (results, system)
}

/// `sandbox.filesystem.denyRead` from any settings layer, sandbox on or
/// off, holds for every tool that reads: without it each call below shows
/// a secret; with it none does, and the refusal names the setting and the
/// file. A denied directory covers what is in it; `~` and absolute paths
/// work as in the sandbox.
#[test]
fn deny_read_holds_for_every_tool_that_reads() {
    let (repo, _) = layout("deny-read");
    let home = home_of(&repo);
    let reset = || {
        std::fs::write(repo.join(".env"), "API_KEY=hunter2-dotenv\n").unwrap();
        std::fs::create_dir_all(repo.join("keys")).unwrap();
        std::fs::write(repo.join("keys/prod.key"), "hunter2-prodkey\n").unwrap();
        std::fs::write(repo.join("keys/book.ipynb"), SECRET_NOTEBOOK).unwrap();
        std::fs::write(home.join("secret.txt"), "hunter2-home\n").unwrap();
    };
    std::fs::write(repo.join("main.rs"), "// hunter2-src\n").unwrap();
    std::fs::write(repo.join("CLAUDE.md"), "Notes.\n\n@.env\n@keys/prod.key\n").unwrap();
    let calls = [
        ("Read", obj! { "file_path" => ".env" }),
        ("Read", obj! { "file_path" => "~/secret.txt" }),
        (
            "Grep",
            obj! { "pattern" => "hunter2", "output_mode" => "content" },
        ),
        ("Glob", obj! { "pattern" => "**/*" }),
        ("Read", obj! { "file_path" => "keys/book.ipynb" }),
        (
            "NotebookEdit",
            obj! { "notebook_path" => "keys/book.ipynb", "cell_id" => "c1", "new_source" => "key = 1" },
        ),
        (
            "Edit",
            obj! { "file_path" => ".env", "old_string" => "API_KEY", "new_string" => "KEY" },
        ),
        ("Bash", obj! { "command" => "cat .env keys/prod.key" }),
        (
            "Write",
            obj! { "file_path" => "keys/new.txt", "content" => "x" },
        ),
    ];
    let bypass = ["--permission-mode", "bypassPermissions"];

    // Without the setting every call reaches a secret.
    reset();
    let (open, system) = turn_and_system(&repo, &calls, &bypass);
    let shown: Vec<&str> = open.iter().map(content).collect();
    assert!(shown[0].contains("hunter2-dotenv"), "{shown:?}");
    assert!(shown[1].contains("hunter2-home"), "{shown:?}");
    assert!(shown[2].contains("hunter2-dotenv") && shown[2].contains("hunter2-prodkey"));
    assert!(shown[3].contains(".env") && shown[3].contains("keys/prod.key"));
    assert!(shown[4].contains("hunter2-nb"), "{shown:?}");
    assert!(!is_error(&open[5]) && !is_error(&open[6]), "{open:?}");
    assert!(shown[7].contains("hunter2-prodkey"), "{shown:?}");
    assert!(!is_error(&open[8]) && repo.join("keys/new.txt").exists());
    std::fs::remove_file(repo.join("keys/new.txt")).unwrap();
    assert!(system.contains("hunter2-dotenv") && system.contains("hunter2-prodkey"));
    // Unsandboxed, a read-only `cat` inside the project runs unasked.
    reset();
    let cat = [("Bash", obj! { "command" => "cat .env" })];
    let (asked, _) = turn_and_system(&repo, &cat, &[]);
    assert!(content(&asked[0]).contains("hunter2-dotenv"), "{asked:?}");

    // The same paths in denyRead: the project's own settings (relative
    // paths, sandbox off; a narrowing, so taken from an untrusted
    // checkout), or the user's (`~`, absolute, sandbox on).
    let project = r#"{"sandbox":{"filesystem":{"denyRead":[".env","keys","~/secret.txt"]}}}"#;
    let user = obj! { "sandbox" => obj! {
        "enabled" => true,
        "filesystem" => obj! { "denyRead" => vec![
            Value::from(repo.join(".env").display().to_string()),
            Value::from(format!("{}/keys/", repo.display())),
            Value::from("~/secret.txt"),
        ] },
    } }
    .to_json();
    let layers = [
        (repo.join(".claude/settings.json"), project.to_string()),
        (home.join(".claude/settings.json"), user),
    ];
    for (file, settings) in &layers {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, settings).unwrap();
        reset();
        let who = file.display().to_string();
        let (guarded, system) = turn_and_system(&repo, &calls, &bypass);
        let shown: Vec<&str> = guarded.iter().map(content).collect();
        for i in [0, 1, 4, 5, 6, 7, 8] {
            assert!(is_error(&guarded[i]), "{who}: call {i}: {:?}", guarded[i]);
            // Edit and NotebookEdit stop earlier still: what they would
            // change was never read (the policy's refusal of them is a
            // unit test in config/sandbox.rs).
            let unread = matches!(i, 5 | 6) && shown[i].contains("has not been read");
            assert!(
                unread
                    || shown[i].contains("sandbox.filesystem.denyRead") && shown[i].contains(&who),
                "{who}: call {i}: {}",
                shown[i]
            );
        }
        assert!(!repo.join("keys/new.txt").exists(), "{who}");
        assert!(!shown.iter().any(|s| s.contains("hunter2-dotenv")), "{who}");
        assert!(
            !shown.iter().any(|s| s.contains("hunter2-prodkey")),
            "{who}"
        );
        assert!(!shown.iter().any(|s| s.contains("hunter2-home")), "{who}");
        assert!(!shown.iter().any(|s| s.contains("hunter2-nb")), "{who}");
        assert!(shown[2].contains("hunter2-src") && shown[2].contains("left out"));
        assert!(shown[3].contains("main.rs"), "{who}: {}", shown[3]);
        assert!(!shown[3].contains(".env") && !shown[3].contains("keys/"));
        assert_eq!(
            std::fs::read_to_string(repo.join(".env")).unwrap(),
            "API_KEY=hunter2-dotenv\n",
            "{who}: Edit changed it"
        );
        assert_eq!(
            std::fs::read_to_string(repo.join("keys/book.ipynb")).unwrap(),
            SECRET_NOTEBOOK
        );
        assert!(
            !system.contains("hunter2-dotenv") && !system.contains("hunter2-prodkey"),
            "{who}: a memory import read it"
        );
        // Not auto-allowed (nor run) in default mode either.
        let (asked, _) = turn_and_system(&repo, &cat, &[]);
        assert!(is_error(&asked[0]), "{who}: {asked:?}");
        assert!(!content(&asked[0]).contains("hunter2"), "{who}: {asked:?}");
        std::fs::remove_file(file).unwrap();
    }
}

/// The REPL's inner calls go through the same pipeline: denyRead holds
/// for its `cat` and `rg` too.
#[cfg(feature = "repl")]
#[test]
fn deny_read_holds_for_the_repl_inner_calls() {
    if support::repl::emulated("deny_read_holds_for_the_repl_inner_calls") {
        return;
    }
    let (repo, _) = layout("deny-read-repl");
    std::fs::write(repo.join(".env"), "API_KEY=hunter2-dotenv\n").unwrap();
    let code = support::repl::code(
        "const r = []; \
         try { r.push(cat('.env')); } catch (e) { r.push(String(e)); } \
         try { r.push(rg('hunter2')); } catch (e) { r.push(String(e)); } \
         r.join('\\n')",
    );
    let bypass = ["--permission-mode", "bypassPermissions"];
    let open = support::repl::session(&repo, std::slice::from_ref(&code), &bypass);
    let text = support::repl::text(&open[0]);
    assert!(text.contains("hunter2-dotenv"), "{text}");
    let settings = obj! { "sandbox" => obj! { "filesystem" => obj! {
        "denyRead" => vec![Value::from(repo.join(".env").display().to_string())],
    } } }
    .to_json();
    let mut args = bypass.to_vec();
    args.extend(["--settings", &settings]);
    let guarded = support::repl::session(&repo, &[code], &args);
    let text = support::repl::text(&guarded[0]);
    assert!(!text.contains("hunter2-dotenv"), "{text}");
    assert!(text.contains("sandbox.filesystem.denyRead"), "{text}");
}

/// Files that configure a command tern later auto-allows (issue 33): git's
/// XDG config when the home folder lies inside the project, and the folder
/// the repository's `core.hooksPath` names. In bypass mode the writes land
/// and an auto-allowed `git diff` runs `diff.external` (a commit runs the
/// hook); in acceptEdits both writes ask, so nothing runs.
#[test]
fn files_that_configure_a_later_git_command_ask_in_accept_edits() {
    if std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_err()
    {
        return skip("files_that_configure_a_later_git_command", "no git");
    }
    let external = "[diff]\n\texternal = touch PWNED-DIFF; true\n";
    for (mode, harm) in [("bypassPermissions", true), ("acceptEdits", false)] {
        let dir = std::fs::canonicalize(scratch("git-xdg")).unwrap();
        let home = dir.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let git_here = |args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .current_dir(&dir)
                .env("HOME", &home)
                .env_remove("XDG_CONFIG_HOME")
                .output()
                .unwrap()
        };
        git_here(&["init", "-q"]);
        git_here(&["config", "core.hooksPath", ".githooks"]);
        std::fs::write(dir.join("f.txt"), "one\n").unwrap();
        git_here(&["add", "f.txt"]);
        git_here(&[
            "-c",
            "user.name=u",
            "-c",
            "user.email=u@x",
            "commit",
            "-qm",
            "one",
        ]);
        std::fs::write(dir.join("f.txt"), "two\n").unwrap();
        let calls = [
            (
                "Write",
                obj! { "file_path" => home.join(".config/git/config").display().to_string(), "content" => external },
            ),
            (
                "Write",
                obj! { "file_path" => ".githooks/pre-commit", "content" => "#!/bin/sh\ntouch PWNED-HOOK\n" },
            ),
            ("Bash", obj! { "command" => "git diff" }),
        ];
        // One call per turn, so the Write lands before git runs.
        let mut replies: Vec<_> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| calls_reply(std::slice::from_ref(c), i))
            .collect();
        replies.push(standin::text_reply("done"));
        let api = StandIn::start(replies);
        let out = run(tern(&api.url, &dir).env("HOME", &home).args([
            "-p",
            "go",
            "--permission-mode",
            mode,
        ]));
        assert_ok(&out);
        assert_eq!(
            dir.join("PWNED-DIFF").exists(),
            harm,
            "{mode}: diff.external"
        );
        // The user's next commit, outside tern.
        let _ = std::process::Command::new("chmod")
            .args(["+x", ".githooks/pre-commit"])
            .current_dir(&dir)
            .output();
        git_here(&["add", "f.txt"]);
        git_here(&[
            "-c",
            "user.name=u",
            "-c",
            "user.email=u@x",
            "commit",
            "-qm",
            "two",
        ]);
        assert_eq!(dir.join("PWNED-HOOK").exists(), harm, "{mode}: hooks path");
        if !harm {
            let results = api.requests();
            let first = tool_results(&results[1]);
            assert!(content(&first[0]).contains("protected"), "{first:?}");
        }
    }
}
