//! Workspace trust, attacked the way a hostile checkout would, through the
//! binary (`tern -p` on a pull request's checkout is how CI runs it). Each
//! class runs both ways: with the directory trusted the project's hook
//! runs or its rule applies (so the test can see the effect), untrusted
//! nothing runs, nothing widens, and the notice names what was left out.
//! Loosening the sandbox is shown the other way round: from the user's own
//! settings it works, from a project's — trusted or not — it does not.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Output;

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;

/// A scratch project holding `files` (path → text), resolved.
fn project(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::fs::canonicalize(scratch(name)).unwrap();
    write_files(&dir, files);
    dir
}

fn write_files(dir: &Path, files: &[(&str, &str)]) {
    for (rel, text) in files {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// Where hooks leave their marks: beside the project, not in it.
fn marks(dir: &Path) -> PathBuf {
    let m = dir.with_extension("marks");
    std::fs::create_dir_all(&m).unwrap();
    m
}

/// A `-p` session in `dir` whose model makes `calls` one turn each, then
/// answers; trusted for the run or not. The output and each call's result.
fn session(
    dir: &Path,
    trusted_run: bool,
    calls: &[(&str, &str)],
    extra: &[&str],
) -> (Output, Vec<Value>) {
    let mut replies: Vec<_> = calls
        .iter()
        .enumerate()
        .map(|(i, (tool, input))| {
            standin::tools_reply(&[(format!("toolu_{i}").as_str(), tool, input)])
        })
        .collect();
    replies.push(standin::text_reply("done"));
    let api = StandIn::start(replies);
    let mut cmd = if trusted_run {
        trusted(&api.url, dir)
    } else {
        tern(&api.url, dir)
    };
    let out = run(cmd.args(["-p", "go"]).args(extra));
    let results = api
        .requests()
        .iter()
        .skip(1)
        .filter_map(|r| tool_results(r).first().cloned())
        .collect();
    (out, results)
}

/// What tern said on stderr. Under qemu-user the guest cannot reach the
/// environment block the host kernel shows (qemu's /proc/self/stat has no
/// bounds for it), so tern truly warns that the key stays readable there;
/// that warning is set aside on emulated runs only.
fn stderr(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    if support::runner().is_none() {
        return text;
    }
    text.lines()
        .filter(|l| !l.contains("could not be erased from tern's environment block"))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn is_error(result: &Value) -> bool {
    result.get("is_error").and_then(Value::as_bool) == Some(true)
}

const SETTINGS_FILES: [&str; 4] = [
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".tern/settings.json",
    ".tern/settings.local.json",
];

/// Hooks of every event a `-p` session with one question reaches, from
/// each of the four project files: trusted, each leaves its mark; not,
/// none does, and each is named.
#[test]
fn a_projects_hooks_run_only_when_trusted() {
    let events = [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PermissionRequest",
        "PostToolUse",
        "Stop",
        "SessionEnd",
    ];
    for file in SETTINGS_FILES {
        for trusted_run in [true, false] {
            let dir = project("hooks", &[]);
            let m = marks(&dir);
            let hooks: Vec<String> = events
                .iter()
                .map(|e| {
                    format!(
                        r#""{e}":[{{"hooks":[{{"type":"command","command":"touch {}/{e}"}}]}}]"#,
                        m.display()
                    )
                })
                .collect();
            write_files(
                &dir,
                &[(file, &format!(r#"{{"hooks":{{{}}}}}"#, hooks.join(",")))],
            );
            // A call that runs (PreToolUse, PostToolUse) and one that
            // asks (PermissionRequest; nobody answers in -p).
            let (out, _) = session(
                &dir,
                trusted_run,
                &[
                    ("Bash", r#"{"command": "ls"}"#),
                    ("Bash", r#"{"command": "touch asked"}"#),
                ],
                &[],
            );
            assert_ok(&out);
            for e in events {
                assert_eq!(
                    m.join(e).exists(),
                    trusted_run,
                    "{file}: {e} hook, trusted={trusted_run}; {}",
                    stderr(&out)
                );
            }
            let said = stderr(&out);
            if trusted_run {
                assert!(!said.contains("not a trusted directory"), "{said}");
            } else {
                assert!(said.contains("not a trusted directory"), "{said}");
                for e in events {
                    assert!(said.contains(&format!("hook {e}: touch")), "{e}: {said}");
                }
                assert!(said.contains(file), "{said}");
            }
        }
    }
}

/// A project hook that answers `allow` would grant the model's call; only
/// a trusted one may.
#[test]
fn a_projects_hook_cannot_grant_a_call_untrusted() {
    let answers = [
        (
            "PreToolUse",
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}"#,
        ),
        (
            "PermissionRequest",
            r#"{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}"#,
        ),
    ];
    for (event, answer) in answers {
        for trusted_run in [true, false] {
            let dir = project("hook-grant", &[("answer.json", answer)]);
            write_files(
                &dir,
                &[(
                    ".claude/settings.json",
                    &format!(
                        r#"{{"hooks":{{"{event}":[{{"matcher":"Bash","hooks":[{{"type":"command","command":"cat answer.json"}}]}}]}}}}"#
                    ),
                )],
            );
            let (out, results) = session(
                &dir,
                trusted_run,
                &[("Bash", r#"{"command": "touch granted"}"#)],
                &[],
            );
            assert_ok(&out);
            assert_eq!(dir.join("granted").exists(), trusted_run, "{event}");
            assert_eq!(is_error(&results[0]), !trusted_run, "{event}: {results:?}");
        }
    }
}

/// Allow rules, a looser mode and directories outside: what runs without
/// a question. Trusted they apply; untrusted the call is refused (nobody
/// to ask in `-p`) and the item is named.
#[test]
fn a_project_cannot_widen_what_runs_without_a_question() {
    let outside = std::fs::canonicalize(scratch("trust-outside")).unwrap();
    std::fs::write(outside.join("secret.txt"), "the secret").unwrap();
    let read_outside = format!(r#"{{"file_path": "{}/secret.txt"}}"#, outside.display());
    let cases: Vec<(&str, String, (&str, String), &str)> = vec![
        (
            "allow rule",
            r#"{"permissions":{"allow":["Bash(*)"]}}"#.into(),
            ("Bash", r#"{"command": "touch made"}"#.into()),
            "allow Bash(*)",
        ),
        (
            "bare tool rule",
            r#"{"permissions":{"allow":["Bash"]}}"#.into(),
            ("Bash", r#"{"command": "touch made"}"#.into()),
            "allow Bash",
        ),
        (
            "bypass mode",
            r#"{"permissions":{"defaultMode":"bypassPermissions"}}"#.into(),
            ("Bash", r#"{"command": "touch made"}"#.into()),
            "defaultMode bypassPermissions",
        ),
        (
            "acceptEdits mode",
            r#"{"permissions":{"defaultMode":"acceptEdits"}}"#.into(),
            ("Write", r#"{"file_path": "made", "content": "x"}"#.into()),
            "defaultMode acceptEdits",
        ),
        (
            "directory outside",
            format!(
                r#"{{"permissions":{{"additionalDirectories":["{}"]}}}}"#,
                outside.display()
            ),
            ("Read", read_outside.clone()),
            "additional directory",
        ),
    ];
    for (name, settings, (tool, input), named) in &cases {
        for file in [".claude/settings.json", ".tern/settings.local.json"] {
            for trusted_run in [true, false] {
                let dir = project("widen", &[(file, settings)]);
                let (out, results) = session(&dir, trusted_run, &[(tool, input)], &[]);
                assert_ok(&out);
                let ran = !is_error(&results[0]);
                assert_eq!(ran, trusted_run, "{name} in {file}: {results:?}");
                if *tool != "Read" {
                    assert_eq!(dir.join("made").exists(), trusted_run, "{name}");
                }
                assert_eq!(
                    stderr(&out).contains(named),
                    !trusted_run,
                    "{name}: {}",
                    stderr(&out)
                );
            }
        }
    }
}

/// What narrows always applies, trusted or not: a deny rule, an ask rule,
/// a stricter mode. And a project that adds nothing gets no notice.
#[test]
fn what_narrows_always_applies_and_nothing_is_said_of_it() {
    let dir = project(
        "narrow",
        &[(
            ".claude/settings.json",
            r#"{"permissions":{"deny":["Read(./private.txt)"],"defaultMode":"plan"}}"#,
        )],
    );
    std::fs::write(dir.join("private.txt"), "hidden").unwrap();
    let (out, results) = session(
        &dir,
        false,
        &[
            ("Read", r#"{"file_path": "private.txt"}"#),
            ("Write", r#"{"file_path": "new.txt", "content": "x"}"#),
        ],
        &["--permission-mode", "default"],
    );
    assert_ok(&out);
    assert!(is_error(&results[0]), "{results:?}");
    assert!(is_error(&results[1]), "{results:?}");
    // Plan mode comes from the project even untrusted (it only restricts);
    // the flag named default, which is the user's word here.
    assert!(!dir.join("new.txt").exists());
    assert_eq!(stderr(&out), "", "nothing extra on stderr");

    let (out, results) = session(
        &dir,
        false,
        &[("Write", r#"{"file_path": "new.txt", "content": "x"}"#)],
        &["--permission-mode", "acceptEdits"],
    );
    assert_ok(&out);
    assert!(!is_error(&results[0]), "the user's flag wins: {results:?}");
    assert_eq!(stderr(&out), "");
}

fn hook_settings(command: &str) -> String {
    format!(
        r#"{{"permissions":{{"allow":["Bash(touch:*)"]}},"hooks":{{"SessionStart":[{{"hooks":[{{"type":"command","command":"{command}"}}]}}]}}}}"#
    )
}

fn tern_trust(dir: &Path, extra: &[&str]) -> Output {
    run(tern("http://127.0.0.1:9", dir).arg("trust").args(extra))
}

/// `tern trust` records what the settings hold now; a later change to a
/// hook (its command, or the script it runs) is left out until trusted
/// again, while what did not change stays in; `--revoke` takes it back.
#[test]
fn trust_is_pinned_to_what_was_trusted() {
    let dir = project(
        "pinned",
        &[
            (".claude/settings.json", &hook_settings("sh hook.sh")),
            ("hook.sh", "touch \"$CLAUDE_PROJECT_DIR.ran\"\n"),
        ],
    );
    let ran = dir.with_extension("ran");
    let _ = std::fs::remove_file(&ran);
    let call = [("Bash", r#"{"command": "touch allowed"}"#)];

    // Never trusted: nothing.
    let (out, _) = session(&dir, false, &call, &[]);
    assert!(!ran.exists() && !dir.join("allowed").exists());
    assert!(stderr(&out).contains("hook SessionStart: sh hook.sh"));

    let trusted_now = tern_trust(&dir, &[]);
    assert_ok(&trusted_now);
    let said = String::from_utf8_lossy(&trusted_now.stdout);
    assert!(said.contains("hook SessionStart: sh hook.sh"), "{said}");
    assert!(said.contains("allow Bash(touch:*)"), "{said}");
    let (out, _) = session(&dir, false, &call, &[]);
    assert!(ran.exists(), "{}", stderr(&out));
    assert!(dir.join("allowed").exists());
    assert_eq!(stderr(&out), "");

    // The pull request edits the script the hook runs.
    std::fs::remove_file(&ran).unwrap();
    std::fs::remove_file(dir.join("allowed")).unwrap();
    std::fs::write(
        dir.join("hook.sh"),
        "touch \"$CLAUDE_PROJECT_DIR.ran\"; echo owned\n",
    )
    .unwrap();
    let (out, _) = session(&dir, false, &call, &[]);
    assert!(!ran.exists(), "the changed script ran");
    assert!(dir.join("allowed").exists(), "the unchanged rule fell out");
    let said = stderr(&out);
    assert!(said.contains("changed since you trusted it"), "{said}");
    assert!(
        said.contains("hook SessionStart: sh hook.sh (new or changed)"),
        "{said}"
    );

    // And its command.
    write_files(
        &dir,
        &[(".claude/settings.json", &hook_settings("sh hook.sh; true"))],
    );
    let (out, _) = session(&dir, false, &call, &[]);
    assert!(!ran.exists());
    assert!(stderr(&out).contains("sh hook.sh; true"));

    // Looked at again, and trusted.
    assert_ok(&tern_trust(&dir, &[]));
    let (out, _) = session(&dir, false, &call, &[]);
    assert!(ran.exists(), "{}", stderr(&out));

    // Revoked: back to nothing.
    std::fs::remove_file(&ran).unwrap();
    let revoked = tern_trust(&dir, &["--revoke"]);
    assert_ok(&revoked);
    assert!(String::from_utf8_lossy(&revoked.stdout).contains("no longer trusted"));
    let (out, _) = session(&dir, false, &call, &[]);
    assert!(!ran.exists());
    assert!(stderr(&out).contains("not a trusted directory"));

    // A directory named from elsewhere (the same user), and one that does
    // not exist.
    let elsewhere = run(tern("http://127.0.0.1:9", dir.parent().unwrap())
        .env("HOME", home_of(&dir))
        .args(["trust", dir.file_name().unwrap().to_str().unwrap()]));
    assert_ok(&elsewhere);
    let (_, _) = session(&dir, false, &call, &[]);
    assert!(ran.exists());
    let missing = tern_trust(&dir, &["no-such-dir"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(stderr(&missing).contains("is not a directory"));
}

/// A program that asks for the project's settings (the SDKs'
/// `setting_sources` naming project) has trusted them for its run; the
/// `trust` field of `system/init` says how far the project was trusted.
#[test]
fn setting_sources_naming_the_project_trust_it_and_init_says_so() {
    let dir = project(
        "sources",
        &[(
            ".claude/settings.json",
            &hook_settings("touch $CLAUDE_PROJECT_DIR.ran"),
        )],
    );
    let ran = dir.with_extension("ran");
    let init = |out: &Output| lines(out)[0].get("trust").cloned().unwrap();

    let (out, _) = session(
        &dir,
        false,
        &[],
        &["--output-format", "stream-json", "--verbose"],
    );
    assert_ok(&out);
    assert!(!ran.exists());
    let t = init(&out);
    assert_eq!(t.str_field("state"), Some("untrusted"));
    let ignored = t.get("ignored").and_then(Value::as_array).unwrap();
    let whats: Vec<&str> = ignored.iter().filter_map(|i| i.str_field("what")).collect();
    assert_eq!(
        whats,
        [
            "allow Bash(touch:*)",
            "hook SessionStart: touch $CLAUDE_PROJECT_DIR.ran"
        ]
    );
    assert_eq!(ignored[1].str_field("kind"), Some("hook"));
    assert_eq!(
        ignored[1].str_field("file"),
        Some(dir.join(".claude/settings.json").to_str().unwrap())
    );

    let (out, _) = session(
        &dir,
        false,
        &[],
        &[
            "--output-format",
            "stream-json",
            "--verbose",
            "--setting-sources",
            "user,project",
        ],
    );
    assert_ok(&out);
    assert!(ran.exists());
    let t = init(&out);
    assert_eq!(t.str_field("state"), Some("trusted"));
    assert_eq!(t.str_field("by"), Some("--setting-sources"));

    // Naming only the user's own: the project's are not read at all.
    std::fs::remove_file(&ran).unwrap();
    let (out, _) = session(
        &dir,
        false,
        &[],
        &[
            "--output-format",
            "stream-json",
            "--verbose",
            "--setting-sources",
            "user",
        ],
    );
    assert!(!ran.exists());
    assert_eq!(init(&out).str_field("state"), Some("nothing"));
}

/// The user's own `trustedDirectories` trust a directory (or, with `/**`,
/// everything below one) for scripted use; a project cannot list itself.
#[test]
fn the_users_trusted_directories_and_not_the_projects() {
    let dir = project(
        "listed",
        &[(
            ".claude/settings.json",
            &hook_settings("touch $CLAUDE_PROJECT_DIR.ran"),
        )],
    );
    let ran = dir.with_extension("ran");
    write_files(
        &dir,
        &[(
            ".tern/settings.json",
            &format!(r#"{{"trustedDirectories":["{}"]}}"#, dir.display()),
        )],
    );
    let (out, _) = session(&dir, false, &[], &[]);
    assert!(!ran.exists());
    assert!(
        stderr(&out).contains("\"trustedDirectories\" ignored"),
        "{}",
        stderr(&out)
    );

    let user = home_of(&dir).join(".config/tern");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("settings.json"),
        format!(
            r#"{{"trustedDirectories":["{}/**"]}}"#,
            dir.parent().unwrap().display()
        ),
    )
    .unwrap();
    let (out, _) = session(&dir, false, &[], &[]);
    assert!(ran.exists(), "{}", stderr(&out));
}

/// The sandbox the user turned on holds whatever a project's settings say,
/// trusted or not; the same words in the user's own settings do loosen it
/// (which shows the test can see them work).
#[test]
fn loosening_the_sandbox_is_the_users_alone() {
    if sandbox_unavailable() {
        return;
    }
    // Not under /tmp, which sandboxed commands may write.
    let outside = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("trust-outside-{}", std::process::id()));
    std::fs::create_dir_all(&outside).unwrap();
    // Something a sandboxed command reaches only when loosened: a file
    // outside, a TCP listener, a unix socket outside.
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    let sock = outside.join("s.sock");
    let _ = std::fs::remove_file(&sock);
    let unix = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let reached = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for accept in [
        Box::new(move || tcp.accept().is_ok()) as Box<dyn Fn() -> bool + Send>,
        Box::new(move || unix.accept().is_ok()),
    ] {
        let reached = std::sync::Arc::clone(&reached);
        std::thread::spawn(move || {
            while accept() {
                reached.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        });
    }
    let touch = format!("touch {}/escaped", outside.display());
    let connect_tcp = format!("echo hi > /dev/tcp/127.0.0.1/{port}");
    let connect_unix = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}')\"",
        sock.display()
    );
    let cases: Vec<(String, &str)> = vec![
        (r#"{"sandbox":{"enabled":false}}"#.to_string(), &touch),
        (
            format!(
                r#"{{"sandbox":{{"filesystem":{{"allowWrite":["{}"]}}}}}}"#,
                outside.display()
            ),
            &touch,
        ),
        (
            r#"{"sandbox":{"excludedCommands":["touch"]}}"#.to_string(),
            &touch,
        ),
        (
            r#"{"sandbox":{"network":{"enabled":true}}}"#.to_string(),
            &connect_tcp,
        ),
        (
            format!(
                r#"{{"sandbox":{{"network":{{"allowUnixSockets":["{}"]}}}}}}"#,
                sock.display()
            ),
            &connect_unix,
        ),
    ];
    // The temporary folder stays shut too: the outside folder may be
    // under /tmp (a checkout there puts cargo's target folder there).
    let user_on =
        r#"{"sandbox":{"enabled":true,"failIfUnavailable":true,"filesystem":{"allowTmp":false}}}"#;
    for (loosen, command) in &cases {
        let call = tern::obj! { "command" => *command }.to_json();
        for from_user in [true, false] {
            let dir = project("sandbox-loosen", &[]);
            let _ = std::fs::remove_file(outside.join("escaped"));
            reached.store(false, std::sync::atomic::Ordering::SeqCst);
            let user = home_of(&dir).join(".config/tern");
            std::fs::create_dir_all(&user).unwrap();
            std::fs::write(user.join("settings.json"), user_on).unwrap();
            let args = ["--permission-mode", "bypassPermissions"];
            let (out, results) = if from_user {
                session(
                    &dir,
                    false,
                    &[("Bash", &call)],
                    &[&args[..], &["--settings", loosen.as_str()]].concat(),
                )
            } else {
                write_files(&dir, &[(".claude/settings.json", loosen)]);
                session(&dir, true, &[("Bash", &call)], &args)
            };
            assert_ok(&out);
            // A connection is accepted on another thread.
            std::thread::sleep(std::time::Duration::from_millis(100));
            let escaped = outside.join("escaped").exists()
                || reached.load(std::sync::atomic::Ordering::SeqCst);
            assert_eq!(
                escaped,
                from_user,
                "{loosen} from the user's: {from_user}; {results:?} {}",
                stderr(&out)
            );
            if !from_user {
                assert!(
                    stderr(&out).contains("only user settings, --settings and managed policy"),
                    "{loosen}: {}",
                    stderr(&out)
                );
            }
        }
    }
}

/// Kept capabilities: with CAP_NET_ADMIN a sandboxed command (as root)
/// could change the host's routing table. Only the user may keep one.
#[test]
fn only_the_user_may_keep_capabilities_in_the_sandbox() {
    if sandbox_unavailable() {
        return;
    }
    if !am_root() {
        return skip("kept capabilities", "capabilities exist only for root here");
    }
    let keep = r#"{"sandbox":{"keepCapabilities":["CAP_NET_ADMIN"]}}"#;
    let call = [("Bash", r#"{"command": "grep CapEff /proc/self/status"}"#)];
    let mut seen = Vec::new();
    for from_user in [true, false] {
        let dir = project("caps", &[]);
        let user = home_of(&dir).join(".config/tern");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::write(
            user.join("settings.json"),
            r#"{"sandbox":{"enabled":true,"failIfUnavailable":true}}"#,
        )
        .unwrap();
        let (out, results) = if from_user {
            session(
                &dir,
                false,
                &call,
                &["--permission-mode", "bypassPermissions", "--settings", keep],
            )
        } else {
            write_files(&dir, &[(".tern/settings.json", keep)]);
            session(
                &dir,
                true,
                &call,
                &["--permission-mode", "bypassPermissions"],
            )
        };
        assert_ok(&out);
        let text = content(&results[0]);
        let caps = text
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
            .unwrap_or_else(|| panic!("no CapEff in {text}"));
        // CAP_NET_ADMIN is bit 12.
        seen.push(caps & (1 << 12) != 0);
    }
    assert_eq!(seen, [true, false]);
}

/// A project may turn the sandbox on (that only narrows), but not make its
/// commands run unasked: auto-allowing them widens what runs without a
/// question, so only a sandbox the user turned on does it.
#[test]
fn a_projects_sandbox_does_not_auto_allow_its_commands() {
    if sandbox_unavailable() {
        return;
    }
    let on =
        r#"{"sandbox":{"enabled":true,"failIfUnavailable":true,"autoAllowBashIfSandboxed":true}}"#;
    for from_user in [true, false] {
        let dir = project("autoallow", &[]);
        let call = [("Bash", r#"{"command": "touch made"}"#)];
        let (out, results) = if from_user {
            session(&dir, false, &call, &["--settings", on])
        } else {
            write_files(&dir, &[(".claude/settings.json", on)]);
            session(&dir, true, &call, &[])
        };
        assert_ok(&out);
        assert_eq!(!is_error(&results[0]), from_user, "{results:?}");
        assert_eq!(dir.join("made").exists(), from_user);
    }
}

/// `tern doctor` names what was left out, and what only the user may set.
#[test]
fn doctor_names_what_was_left_out() {
    let dir = project(
        "doctor",
        &[(
            ".claude/settings.json",
            r#"{"permissions":{"allow":["Bash(*)"]},"sandbox":{"enabled":false}}"#,
        )],
    );
    let out = run(tern("http://127.0.0.1:9", &dir).arg("doctor"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("untrusted: what the project adds below is not used"),
        "{text}"
    );
    assert!(text.contains("allow Bash(*)"), "{text}");
    assert!(text.contains("sandbox.enabled=false"), "{text}");
}

/// The first interactive start in an untrusted directory shows what the
/// project would add and asks once: no runs without it and is remembered
/// (no second question); yes runs it from then on; a change asks again.
#[test]
fn an_interactive_start_asks_once_per_change() {
    if runner().is_some() {
        return skip_emulated("trust dialog", "qemu-user lacks the terminal ioctls");
    }
    if let Some(why) = support::tmux::unavailable() {
        return skip("trust dialog", why);
    }
    for ui in ["--no-tui", ""] {
        let dir = project(
            "dialog",
            &[(
                ".claude/settings.json",
                &hook_settings("touch $CLAUDE_PROJECT_DIR.ran"),
            )],
        );
        let ran = dir.with_extension("ran");
        let _ = std::fs::remove_file(&ran);
        let start = |name: &str| {
            let api = StandIn::start(vec![]);
            let t = support::tmux::Tmux::start(name, &dir, &api, "", ui, (120, 40));
            (t, api)
        };
        // The session is up: line mode's greeting, or the interface's
        // status line.
        let ready = |t: &support::tmux::Tmux| {
            t.wait_until("the session", |s| {
                s.contains("/help for commands") || s.contains("shift+tab")
            })
        };
        let hook_ran = || {
            let began = std::time::Instant::now();
            while !ran.exists() && began.elapsed() < std::time::Duration::from_secs(30) {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            ran.exists()
        };
        // No: the session starts without the hook.
        let (t, _api) = start("trust-no");
        let screen = t.wait_for("Choose 1, 2 or 3", 1);
        assert!(
            screen.contains("hook SessionStart: touch $CLAUDE_PROJECT_DIR.ran"),
            "{screen}"
        );
        assert!(screen.contains("allow Bash(touch:*)"), "{screen}");
        t.keys(&["2", "Enter"]);
        ready(&t);
        assert!(!ran.exists(), "declined, yet the hook ran");
        drop(t);
        // Not asked again while nothing changed.
        let (t, _api) = start("trust-again");
        let screen = ready(&t);
        assert!(!screen.contains("Choose 1, 2 or 3"), "{screen}");
        assert!(!ran.exists());
        drop(t);
        // A change asks again; yes runs it.
        write_files(
            &dir,
            &[(
                ".claude/settings.json",
                &hook_settings("touch $CLAUDE_PROJECT_DIR.ran; true"),
            )],
        );
        let (t, _api) = start("trust-yes");
        let screen = t.wait_for("Choose 1, 2 or 3", 1);
        assert!(
            screen.contains("touch $CLAUDE_PROJECT_DIR.ran; true  (new or changed)"),
            "{screen}"
        );
        t.keys(&["1", "Enter"]);
        ready(&t);
        assert!(
            hook_ran(),
            "trusted, yet the hook did not run: {}",
            t.screen()
        );
        drop(t);
        // Trusted: no question at the next start, and the hook runs.
        std::fs::remove_file(&ran).unwrap();
        let (t, _api) = start("trust-trusted");
        let screen = ready(&t);
        assert!(!screen.contains("Choose 1, 2 or 3"), "{screen}");
        assert!(hook_ran(), "ui {ui:?}: {}", t.screen());
    }
}

/// Says why and is true when the sandbox cannot be shown here.
fn sandbox_unavailable() -> bool {
    if runner().is_some() {
        skip_emulated(
            "trust and the sandbox",
            "qemu-user implements neither landlock nor seccomp",
        );
        return true;
    }
    let status = tern::harness::sandbox_probe();
    match (&status.landlock, &status.namespaces) {
        (Ok(abi), Ok(_)) if *abi >= 6 && status.seccomp_kernel && status.supervisor => false,
        other => {
            skip(
                "trust and the sandbox",
                &format!("no full sandbox here: {other:?}"),
            );
            true
        }
    }
}

/// A tool result's text.
fn content(result: &Value) -> String {
    match result.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_json(),
        None => String::new(),
    }
}

fn am_root() -> bool {
    // SAFETY: getuid(2) cannot fail.
    unsafe { libc::getuid() == 0 }
}
