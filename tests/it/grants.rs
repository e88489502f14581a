//! Answers that last: "yes for this session" in line mode and an SDK's
//! `updatedPermissions` apply to every tool, not only Bash. Each is shown
//! both ways: with a one-time yes the next call asks again; with the
//! lasting answer it does not.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::standin::{self, StandIn};
use support::tmux::Tmux;
use support::*;
use tern::json::{self, Value};
use tern::obj;

fn edit(old: &str, new: &str) -> String {
    obj! { "file_path" => "notes.txt", "old_string" => old, "new_string" => new }.to_json()
}

/// The model reads notes.txt, edits it, then edits it again.
fn two_edits() -> Vec<standin::Reply> {
    vec![
        standin::tools_reply(&[("toolu_r", "Read", r#"{"file_path": "notes.txt"}"#)]),
        standin::tools_reply(&[("toolu_e1", "Edit", &edit("one", "two"))]),
        standin::tools_reply(&[("toolu_e2", "Edit", &edit("two", "three"))]),
        standin::text_reply("Edited twice."),
    ]
}

/// A line-mode session where every permission question gets `answer`;
/// returns how many questions were asked and the file's final text.
fn line_session(name: &str, answer: &str) -> (usize, String) {
    let dir = scratch(name);
    std::fs::write(dir.join("notes.txt"), "one\n").unwrap();
    let api = StandIn::start(two_edits());
    let tmux = Tmux::start(name, &dir, &api, "", "--no-tui", (200, 50));
    tmux.wait_for("/help for commands", 1);
    tmux.run(&["send-keys", "-t", &tmux.session, "edit the notes", "Enter"]);
    let mut asked = 0;
    let began = Instant::now();
    loop {
        let screen = tmux.screen();
        if screen.contains("Edited twice.") {
            break;
        }
        let questions = screen.matches("[y/s/a/N]").count();
        if questions > asked {
            asked = questions;
            tmux.run(&["send-keys", "-t", &tmux.session, answer, "Enter"]);
        }
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "the session did not finish:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(30));
    }
    tmux.run(&["send-keys", "-t", &tmux.session, "C-d"]);
    (
        asked,
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
    )
}

#[test]
fn yes_for_this_session_covers_the_next_edit() {
    if runner().is_some() {
        return skip_emulated("line-mode grants", "qemu-user lacks the terminal ioctls");
    }
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip("line-mode grants", "needs tmux (ci/setup.sh installs it)");
    }
    let (asked, text) = line_session("grant-once", "y");
    assert_eq!(
        (asked, text.as_str()),
        (2, "three\n"),
        "a one-time yes asks again"
    );
    let (asked, text) = line_session("grant-session", "s");
    assert_eq!(
        (asked, text.as_str()),
        (1, "three\n"),
        "the session grant did not cover the second Edit"
    );
}

/// Drives tern's control protocol by hand: every `can_use_tool` is
/// answered with `reply`. Returns how many were asked.
fn sdk_session(dir: &Path, api: &StandIn, reply: &Value) -> usize {
    let mut child = tern_command()
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home_of(dir))
        .env("ANTHROPIC_BASE_URL", &api.url)
        .env("ANTHROPIC_API_KEY", "sk-test")
        .args([
            "--output-format",
            "stream-json",
            "--verbose",
            "--input-format",
            "stream-json",
            "--permission-prompt-tool",
            "stdio",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"type":"user","message":{{"role":"user","content":"edit the notes"}}}}"#
    )
    .unwrap();
    let mut asked = 0;
    let stdout = BufReader::new(child.stdout.take().unwrap());
    for line in stdout.lines() {
        let Ok(line) = line else { break };
        let Ok(v) = json::parse(&line) else { continue };
        match v.str_field("type") {
            Some("control_request")
                if v.get("request").and_then(|r| r.str_field("subtype"))
                    == Some("can_use_tool") =>
            {
                asked += 1;
                let id = v.str_field("request_id").unwrap_or_default();
                let answer = obj! {
                    "type" => "control_response",
                    "response" => obj! {
                        "subtype" => "success",
                        "request_id" => id,
                        "response" => reply.clone(),
                    },
                };
                writeln!(stdin, "{}", answer.to_json()).unwrap();
            }
            Some("result") => break,
            _ => {}
        }
    }
    drop(stdin);
    let _ = child.wait();
    asked
}

#[test]
fn sdk_updated_permissions_are_kept() {
    let cases = [
        ("sdk-once", obj! { "behavior" => "allow" }, 2),
        (
            "sdk-rules",
            json::parse(
                r#"{"behavior":"allow","updatedPermissions":[{"type":"addRules","rules":[{"toolName":"Edit","ruleContent":"./notes.txt"}],"behavior":"allow","destination":"session"}]}"#,
            )
            .unwrap(),
            1,
        ),
        (
            "sdk-mode",
            json::parse(
                r#"{"behavior":"allow","updatedPermissions":[{"type":"setMode","mode":"acceptEdits","destination":"session"}]}"#,
            )
            .unwrap(),
            1,
        ),
    ];
    for (name, reply, expected) in cases {
        let dir = scratch(name);
        std::fs::write(dir.join("notes.txt"), "one\n").unwrap();
        let api = StandIn::start(two_edits());
        let asked = sdk_session(&dir, &api, &reply);
        assert_eq!(asked, expected, "{name}");
        assert_eq!(
            std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
            "three\n",
            "{name}"
        );
    }
    // Saved to localSettings: the next session does not ask at all.
    let dir = scratch("sdk-local");
    std::fs::write(dir.join("notes.txt"), "one\n").unwrap();
    let save = json::parse(
        r#"{"behavior":"allow","updatedPermissions":[{"type":"addRules","rules":[{"toolName":"Edit","ruleContent":"./notes.txt"}],"behavior":"allow","destination":"localSettings"}]}"#,
    )
    .unwrap();
    assert_eq!(sdk_session(&dir, &StandIn::start(two_edits()), &save), 1);
    let saved = std::fs::read_to_string(dir.join(".tern/settings.local.json")).unwrap();
    assert!(saved.contains("Edit(./notes.txt)"), "{saved}");
    std::fs::write(dir.join("notes.txt"), "one\n").unwrap();
    assert_eq!(sdk_session(&dir, &StandIn::start(two_edits()), &obj! {}), 0);
}
