//! Long sessions through the real binary: resume, continue, fork, the
//! session list, repair of damaged transcripts, rewind of file changes,
//! and sessions killed with SIGKILL at random points.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;

/// Every transcript tern wrote for `dir`.
fn transcripts(dir: &Path) -> Vec<PathBuf> {
    let root = home_of(dir).join(".local/share/tern/projects");
    let mut out = Vec::new();
    for project in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(project.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if f.path().extension().is_some_and(|e| e == "jsonl") {
                out.push(f.path());
            }
        }
    }
    out.sort();
    out
}

fn session_id(path: &Path) -> String {
    path.file_stem().unwrap().to_str().unwrap().to_string()
}

fn messages(req: &standin::Request) -> Vec<Value> {
    body(req)
        .get("messages")
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn text_of(v: &Value) -> String {
    v.to_json()
}

#[test]
fn continue_and_resume_carry_the_conversation() {
    let dir = scratch("resume");
    let api = StandIn::start(vec![
        standin::text_reply("first answer"),
        standin::text_reply("second answer"),
        standin::text_reply("third answer"),
    ]);
    assert_ok(&run(
        tern(&api.url, &dir).args(["-p", "remember the word heron"])
    ));
    let files = transcripts(&dir);
    assert_eq!(files.len(), 1);
    let id = session_id(&files[0]);

    let out = run(tern(&api.url, &dir).args([
        "-c",
        "-p",
        "what was the word?",
        "--output-format",
        "json",
    ]));
    assert_ok(&out);
    assert_eq!(last_result(&out).str_field("session_id"), Some(id.as_str()));
    let second = messages(&api.requests()[1]);
    assert_eq!(second.len(), 3, "{second:?}");
    assert!(text_of(&second[0]).contains("remember the word heron"));
    assert!(text_of(&second[1]).contains("first answer"));
    assert!(text_of(&second[2]).contains("what was the word?"));
    assert_eq!(
        transcripts(&dir).len(),
        1,
        "resume appends to the same file"
    );

    // A unique prefix of the id is enough.
    let out = run(tern(&api.url, &dir).args(["--resume", &id[..8], "-p", "and now?"]));
    assert_ok(&out);
    assert_eq!(messages(&api.requests()[2]).len(), 5);

    let listed = run(tern(&api.url, &dir).arg("sessions"));
    assert_ok(&listed);
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(text.starts_with(&id), "{text}");
    assert!(
        text.contains("3 turns") && text.contains("remember the word heron"),
        "{text}"
    );
}

#[test]
fn fork_makes_a_new_session_and_leaves_the_old_one() {
    let dir = scratch("fork");
    let api = StandIn::start(vec![standin::text_reply("one"), standin::text_reply("two")]);
    assert_ok(&run(tern(&api.url, &dir).args(["-p", "start"])));
    let original = transcripts(&dir)[0].clone();
    let before = std::fs::read_to_string(&original).unwrap();
    let new_id = "0f8e6a62-4c1b-4d2e-9a77-1b2c3d4e5f60";
    let out = run(tern(&api.url, &dir).args([
        "-c",
        "--fork-session",
        "--session-id",
        new_id,
        "-p",
        "branch",
        "--output-format",
        "json",
    ]));
    assert_ok(&out);
    assert_eq!(last_result(&out).str_field("session_id"), Some(new_id));
    assert_eq!(
        std::fs::read_to_string(&original).unwrap(),
        before,
        "the original is untouched"
    );
    assert_eq!(messages(&api.requests()[1]).len(), 3);
    let forked = transcripts(&dir)
        .into_iter()
        .find(|p| session_id(p) == new_id)
        .expect("forked transcript");
    let text = std::fs::read_to_string(forked).unwrap();
    assert!(text.contains("start") && text.contains("branch"));

    // The id is taken now.
    let again = run(tern(&api.url, &dir).args(["--session-id", new_id, "-p", "x"]));
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
}

#[test]
fn bad_resume_requests_fail_clearly() {
    let dir = scratch("badresume");
    let api = StandIn::start(vec![]);
    let out = run(tern(&api.url, &dir).args(["-c", "-p", "x"]));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no earlier session to continue"));
    let out = run(tern(&api.url, &dir).args(["--resume", "nope", "-p", "x"]));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session 'nope'"));
    let out = run(tern(&api.url, &dir).args(["--fork-session", "-p", "x"]));
    assert_eq!(out.status.code(), Some(2));
    let out = run(tern(&api.url, &dir).args(["--session-id", "not-a-uuid", "-p", "x"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(api.requests().is_empty());
}

/// Writes a transcript by hand into the place tern looks for `dir`.
fn plant(dir: &Path, id: &str, lines: &[String]) -> PathBuf {
    let project = tern::harness::project_dir_name(dir);
    let folder = home_of(dir)
        .join(".local/share/tern/projects")
        .join(project);
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join(format!("{id}.jsonl"));
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

fn entry(uuid: &str, parent: Option<&str>, kind: &str, content: Value) -> String {
    tern::obj! {
        "uuid" => uuid, "parentUuid" => parent, "type" => kind, "sessionId" => "x",
        "message" => tern::obj! { "role" => kind, "content" => content },
    }
    .to_json()
}

fn tool_use(id: &str) -> Value {
    Value::Array(vec![tern::obj! {
        "type" => "tool_use", "id" => id, "name" => "Bash", "input" => tern::obj! { "command" => "true" }
    }])
}

fn text(t: &str) -> Value {
    Value::Array(vec![tern::obj! { "type" => "text", "text" => t }])
}

#[test]
fn damaged_transcripts_load_repaired_or_fail_precisely() {
    let dir = scratch("damaged");
    let api = StandIn::start(vec![
        standin::text_reply("a"),
        standin::text_reply("b"),
        standin::text_reply("c"),
    ]);
    // Truncated last line after a tool_use: the call is answered as interrupted.
    let mut cut = entry("u3", Some("u2"), "user", text("half"));
    cut.truncate(cut.len() / 2);
    plant(
        &dir,
        "trunc",
        &[
            entry("u1", None, "user", text("go")),
            entry("u2", Some("u1"), "assistant", tool_use("toolu_x")),
            cut,
        ],
    );
    let out = run(tern(&api.url, &dir).args(["--resume", "trunc", "-p", "next"]));
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 3: not valid JSON"), "{stderr}");
    let sent = messages(&api.requests()[0]);
    let results = sent[2].get("content").unwrap().as_array().unwrap();
    assert_eq!(results[0].str_field("tool_use_id"), Some("toolu_x"));
    assert_eq!(
        results[0].get("is_error").and_then(Value::as_bool),
        Some(true)
    );
    assert!(text_of(&sent[2]).contains("next"));

    // Missing parent: bridged, and said.
    plant(
        &dir,
        "orphaned",
        &[
            entry("o1", None, "user", text("hello")),
            entry("o2", Some("o1"), "assistant", text("hi")),
            entry("o3", Some("lost"), "user", text("more")),
            entry("o4", Some("o3"), "assistant", text("ok")),
        ],
    );
    let out = run(tern(&api.url, &dir).args(["--resume", "orphaned", "-p", "x"]));
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("parent lost is not in the transcript"));
    assert_eq!(messages(&api.requests()[1]).len(), 5);

    // Orphan tool_result: dropped.
    plant(
        &dir,
        "stray",
        &[
            entry("s1", None, "user", text("hello")),
            entry("s2", Some("s1"), "assistant", text("hi")),
            entry(
                "s3",
                Some("s2"),
                "user",
                Value::Array(vec![
                    tern::obj! { "type" => "tool_result", "tool_use_id" => "ghost", "content" => "?" },
                ]),
            ),
        ],
    );
    let out = run(tern(&api.url, &dir).args(["--resume", "stray", "-p", "x"]));
    assert_ok(&out);
    assert!(!text_of(&Value::Array(messages(&api.requests()[2]))).contains("ghost"));

    // A cycle cannot be ordered: refused, naming the line.
    plant(
        &dir,
        "loop",
        &[
            entry("c1", Some("c2"), "user", text("a")),
            entry("c2", Some("c1"), "assistant", text("b")),
        ],
    );
    let out = run(tern(&api.url, &dir).args(["--resume", "loop", "-p", "x"]));
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("loops back to line 2 (c2)"), "{stderr}");
    assert_eq!(
        api.requests().len(),
        3,
        "nothing is sent for a refused transcript"
    );
}

#[test]
fn rewind_puts_files_back_and_names_what_it_cannot() {
    let dir = scratch("rewind");
    std::fs::write(dir.join("notes.md"), "original\n").unwrap();
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_r", "Read", r#"{"file_path": "notes.md"}"#)]),
        standin::tools_reply(&[(
            "toolu_e",
            "Edit",
            r#"{"file_path": "notes.md", "old_string": "original", "new_string": "edited"}"#,
        )]),
        standin::tools_reply(&[
            (
                "toolu_w",
                "Write",
                r#"{"file_path": "new.txt", "content": "made"}"#,
            ),
            (
                "toolu_b",
                "Bash",
                r#"{"command": "echo side > effect.txt"}"#,
            ),
        ]),
        standin::text_reply("done"),
    ]);
    let out = run(tern(&api.url, &dir).args(["-p", "x", "--permission-mode", "bypassPermissions"]));
    assert_ok(&out);
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.md")).unwrap(),
        "edited\n"
    );
    let id = session_id(&transcripts(&dir)[0]);

    let dry = run(tern(&api.url, &dir).args(["rewind", &id, "--dry-run"]));
    assert_ok(&dry);
    let said = String::from_utf8_lossy(&dry.stdout);
    assert!(
        said.contains("would remove") && said.contains("new.txt"),
        "{said}"
    );
    assert!(dir.join("new.txt").exists(), "dry run changes nothing");
    let warned = String::from_utf8_lossy(&dry.stderr);
    assert!(warned.contains("$ echo side > effect.txt"), "{warned}");

    let done = run(tern(&api.url, &dir).args(["rewind", &id]));
    assert_ok(&done);
    assert!(!dir.join("new.txt").exists());
    assert!(
        dir.join("effect.txt").exists(),
        "Bash effects are not undone"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.md")).unwrap(),
        "original\n"
    );
}

/// A session of tool turns killed with SIGKILL at a random moment, then
/// resumed: the transcript always loads, every tool_use the model sees is
/// answered, no tool runs twice, and the files are what the tools that
/// actually ran left.
#[test]
fn sessions_killed_at_random_points_resume_cleanly() {
    const TURNS: usize = 6;
    const TRIALS: usize = 20;
    let script = || {
        let mut replies = Vec::new();
        for i in 0..TURNS {
            let write = format!(r#"{{"file_path": "state.txt", "content": "state-{i}"}}"#);
            let bash = format!(r#"{{"command": "sleep 0.03; echo step-{i} >> log.txt"}}"#);
            replies.push(standin::tools_reply(&[
                (&format!("toolu_w{i}"), "Write", &write),
                (&format!("toolu_b{i}"), "Bash", &bash),
            ]));
        }
        replies.push(standin::text_reply("all done"));
        replies
    };
    let start = |dir: &Path, api: &StandIn| {
        let child = tern(&api.url, dir)
            .args(["-p", "work", "--permission-mode", "bypassPermissions"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let began = Instant::now();
        while api.requests().is_empty() && began.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(2));
        }
        child
    };
    // How long a whole session takes here (much longer under qemu), so
    // the kills spread over all of it.
    let calibration = StandIn::start(script());
    let dir = scratch("kill-calibrate");
    let began = Instant::now();
    let mut child = start(&dir, &calibration);
    let first_request = began.elapsed();
    assert!(child.wait().unwrap().success());
    let span = (began.elapsed() - first_request).as_millis().max(20) as u64;

    let mut resumed = 0;
    let mut kinds = std::collections::BTreeSet::new();
    for trial in 0..TRIALS {
        let dir = scratch(&format!("kill{trial}"));
        let api = StandIn::start(script());
        let mut child = start(&dir, &api);
        std::thread::sleep(Duration::from_millis(fastrand::u64(0..span)));
        let _ = child.kill();
        let _ = child.wait();
        // Commands already started finish in their own process group.
        std::thread::sleep(Duration::from_millis(150));
        let log_before = std::fs::read_to_string(dir.join("log.txt")).unwrap_or_default();
        let state_before = std::fs::read_to_string(dir.join("state.txt")).ok();

        let files = transcripts(&dir);
        assert_eq!(
            files.len(),
            1,
            "trial {trial}: the prompt is recorded before the first request"
        );
        let id = session_id(&files[0]);
        let api2 = StandIn::start(vec![standin::text_reply("resumed")]);
        let out = run(tern(&api2.url, &dir).args([
            "--resume",
            &id,
            "-p",
            "continue",
            "--permission-mode",
            "bypassPermissions",
        ]));
        assert_ok(&out);
        resumed += 1;

        // Every tool_use the model sees is answered in the next message.
        let sent = messages(&api2.requests()[0]);
        for (i, m) in sent.iter().enumerate() {
            let calls: Vec<String> = m
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|b| b.str_field("type") == Some("tool_use"))
                .filter_map(|b| b.str_field("id").map(str::to_string))
                .collect();
            if calls.is_empty() {
                continue;
            }
            let next = text_of(
                sent.get(i + 1)
                    .unwrap_or_else(|| panic!("trial {trial}: no answer after {m}")),
            );
            for c in calls {
                assert!(
                    next.contains(&format!("\"tool_use_id\":\"{c}\"")),
                    "trial {trial}: {c} unanswered"
                );
            }
        }
        // Resuming ran nothing again.
        assert_eq!(
            std::fs::read_to_string(dir.join("log.txt")).unwrap_or_default(),
            log_before
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("state.txt")).ok(),
            state_before
        );
        // No step ran twice, and steps ran in order.
        let steps: Vec<&str> = log_before.lines().collect();
        let repaired = String::from_utf8_lossy(&out.stderr).contains("marked interrupted");
        eprintln!(
            "trial {trial}: {} steps ran, repaired={repaired}",
            steps.len()
        );
        kinds.insert((steps.len(), repaired));
        for (i, s) in steps.iter().enumerate() {
            assert_eq!(*s, format!("step-{i}"), "trial {trial}: log {log_before:?}");
        }
        // The file holds what the last Write that ran left: the last one
        // the record calls successful, or the one in flight at the kill.
        let all = Value::Array(sent.clone()).to_json();
        let last_ok = (0..TURNS).rev().find(|i| {
            all.contains(&format!("\"tool_use_id\":\"toolu_w{i}\",\"content\":\""))
                && !interrupted(&sent, &format!("toolu_w{i}"))
        });
        match (last_ok, &state_before) {
            (Some(i), Some(state)) => assert!(
                *state == format!("state-{i}") || *state == format!("state-{}", i + 1),
                "trial {trial}: state {state:?}, last recorded write {i}"
            ),
            (Some(i), None) => panic!("trial {trial}: write {i} recorded but no file"),
            (None, Some(state)) => assert_eq!(state, "state-0", "trial {trial}"),
            (None, None) => {}
        }
    }
    assert_eq!(resumed, TRIALS);
    // The kills must have landed at different points for the test to mean anything.
    assert!(
        kinds.len() >= 3,
        "kills landed at too few points: {kinds:?}"
    );
}

fn interrupted(sent: &[Value], id: &str) -> bool {
    sent.iter().any(|m| {
        m.get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|b| {
                b.str_field("tool_use_id") == Some(id)
                    && b.get("is_error").and_then(Value::as_bool) == Some(true)
            })
    })
}

/// Each message has one identity: the uuid stream-json prints for an
/// assistant message or a tool result is the one the transcript records,
/// and `tern rewind --to` takes it.
#[test]
fn stream_json_uuids_are_the_transcripts_and_rewind_takes_them() {
    let dir = scratch("one-identity");
    std::fs::write(dir.join("a.txt"), "one\n").unwrap();
    let edit = |id: &str, from: &str, to: &str| {
        standin::tools_reply(&[(
            id,
            "Edit",
            &format!(r#"{{"file_path": "a.txt", "old_string": "{from}", "new_string": "{to}"}}"#),
        )])
    };
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_r", "Read", r#"{"file_path": "a.txt"}"#)]),
        edit("toolu_e1", "one", "two"),
        edit("toolu_e2", "two", "three"),
        standin::text_reply("done"),
    ]);
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "x",
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-mode",
        "acceptEdits",
    ]));
    assert_ok(&out);
    let printed: Vec<Value> = lines(&out)
        .into_iter()
        .filter(|l| matches!(l.str_field("type"), Some("user" | "assistant")))
        .collect();
    let path = &transcripts(&dir)[0];
    let recorded: Vec<Value> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| tern::json::parse(l).unwrap())
        .collect();
    // Every printed message is in the transcript under the same uuid,
    // with the same content.
    for p in &printed {
        let uuid = p.str_field("uuid").unwrap();
        let r = recorded
            .iter()
            .find(|r| r.str_field("uuid") == Some(uuid))
            .unwrap_or_else(|| panic!("printed uuid {uuid} is not in the transcript"));
        assert_eq!(r.get("message"), p.get("message"), "{uuid}");
        assert_eq!(r.str_field("type"), p.str_field("type"));
    }
    assert_eq!(printed.len(), 7, "4 assistant messages and 3 tool results");
    // Rewind to the first edit's result: the second edit is undone.
    let first_edit_result = printed
        .iter()
        .find(|p| p.to_json().contains("\"tool_use_id\":\"toolu_e1\""))
        .and_then(|p| p.str_field("uuid"))
        .unwrap()
        .to_string();
    let id = session_id(path);
    let done = run(tern(&api.url, &dir).args(["rewind", &id, "--to", &first_edit_result]));
    assert_ok(&done);
    assert_eq!(std::fs::read_to_string(dir.join("a.txt")).unwrap(), "two\n");
}
