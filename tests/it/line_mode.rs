//! Line mode in a real terminal (tmux): a prompt, an approval, a message
//! typed during a turn and sent after it, Ctrl-C interrupting a turn,
//! history recall, slash commands and a custom command; tool lines as
//! calls start and end, the diff an Edit approval is about, a Bash
//! command shown whole, refusals, and no colour under NO_COLOR.

use crate::support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::standin::{self, StandIn, slow_text};
use support::tmux::Tmux;
use support::*;

/// tern in line mode (`--no-tui`) in a fresh 150x50 terminal, at its
/// first prompt.
fn start(name: &str, dir: &std::path::Path, api: &StandIn, env: &str) -> Tmux {
    let tmux = Tmux::start(name, dir, api, env, "--no-tui", (150, 50));
    tmux.wait_for("/help for commands", 1);
    tmux
}

#[test]
fn a_session_with_approval_queue_interrupt_history_and_commands() {
    if runner().is_some() {
        return skip_emulated("line mode test", "qemu-user lacks the terminal ioctls");
    }
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip("line mode test", "needs tmux (ci/setup.sh installs it)");
    }
    let dir = scratch("line-mode");
    std::fs::create_dir_all(dir.join(".tern/commands")).unwrap();
    std::fs::write(
        dir.join(".tern/commands/shout.md"),
        "---\ndescription: say it loudly\n---\nSay $ARGUMENTS in capitals.\n",
    )
    .unwrap();
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_1", "Bash", r#"{"command": "touch approved"}"#)]),
        slow_text("Done with the ", Duration::from_millis(1500), "first task."),
        standin::text_reply("Second task handled."),
        slow_text("Once upon ", Duration::from_secs(30), "never reached"),
        standin::text_reply("HELLO"),
    ]);
    let tmux = start("line", &dir, &api, "");

    // A prompt, and an approval for its Bash call.
    tmux.keys(&["first task", "Enter"]);
    tmux.wait_for("[y/s/a/N]", 1);
    tmux.keys(&["y", "Enter"]);
    // While the answer streams, type the next message: it is queued.
    tmux.wait_for("Done with the", 1);
    tmux.keys(&["second task", "Enter"]);
    tmux.wait_for("(queued: second task)", 1);
    tmux.wait_for("Second task handled.", 1);
    // On a terminal without NO_COLOR the tool lines are coloured.
    let coloured = tmux.screen_escaped();
    assert!(coloured.contains("\x1b[32m✓"), "{coloured}");
    assert!(
        dir.join("approved").exists(),
        "the approved command did not run"
    );
    let reqs = api.requests();
    assert_eq!(reqs.len(), 3);
    assert!(
        reqs[2].body.contains("second task"),
        "the queued message was not sent"
    );

    // Ctrl-C interrupts a turn; the session goes on.
    tmux.keys(&["tell me a story", "Enter"]);
    tmux.wait_for("Once upon", 1);
    tmux.keys(&["C-c"]);
    tmux.wait_for("(interrupted)", 1);

    // History: Up recalls the last line typed.
    tmux.keys(&["Up"]);
    let recalled = tmux.wait_for("> tell me a story", 2);
    assert!(recalled.contains("> tell me a story"), "{recalled}");
    tmux.keys(&["C-u"]);

    // Built-in and custom commands.
    tmux.keys(&["/cost", "Enter"]);
    tmux.wait_for("input tokens", 1);
    tmux.keys(&["/help", "Enter"]);
    tmux.wait_for("/shout", 1);
    tmux.keys(&["/shout hello", "Enter"]);
    tmux.wait_for("HELLO", 1);
    assert!(api.requests()[4].body.contains("Say hello in capitals."));
    // Ctrl-C twice at an empty prompt leaves (130: interrupted).
    tmux.keys(&["C-c"]);
    tmux.wait_for("press Ctrl-C again to exit", 1);
    tmux.keys(&["C-c"]);
    let done = tmux.wait_for("EXIT=", 1);
    assert!(done.contains("EXIT=130"), "{done}");
}

#[test]
fn tool_lines_an_edit_diff_a_whole_command_and_refusals() {
    if runner().is_some() {
        return skip_emulated("line mode test", "qemu-user lacks the terminal ioctls");
    }
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip("line mode test", "needs tmux (ci/setup.sh installs it)");
    }
    let dir = scratch("line-tools");
    let notes: String = (1..=30)
        .map(|i| {
            if i == 17 {
                "the color of the sky\n".to_string()
            } else {
                format!("note {i}\n")
            }
        })
        .collect();
    std::fs::write(dir.join("notes.txt"), &notes).unwrap();
    let edit = r#"{"file_path": "notes.txt", "old_string": "color", "new_string": "colour"}"#;
    let api = StandIn::start(vec![
        // An edit before the file was read: refused by the tool.
        standin::tools_reply(&[("toolu_e0", "Edit", edit)]),
        standin::tools_reply(&[("toolu_r", "Read", r#"{"file_path": "notes.txt"}"#)]),
        // Asks; the approval shows the diff; yes.
        standin::tools_reply(&[("toolu_e1", "Edit", edit)]),
        // A two-line command whose second line hides the harm; no.
        standin::tools_reply(&[(
            "toolu_b",
            "Bash",
            r#"{"command": "echo harmless\ntouch pwned"}"#,
        )]),
        standin::text_reply("All finished."),
    ]);
    let tmux = start("tools", &dir, &api, "NO_COLOR=1");
    tmux.keys(&["spell it the British way", "Enter"]);

    // The refused edit: a start line, then a ✗ line saying why.
    let s = tmux.wait_for("has not been read", 1);
    assert!(s.contains("● Edit notes.txt"), "{s}");
    assert!(s.contains("✗ Edit"), "{s}");
    // The read: ✓.
    tmux.wait_for("✓ Read", 1);

    // The approval names the file and shows the change with line numbers
    // and context.
    let s = tmux.wait_for("[y/s/a/N]", 1);
    assert!(s.contains("notes.txt"), "{s}");
    assert!(s.contains("   17 - the color of the sky"), "{s}");
    assert!(s.contains("   17 + the colour of the sky"), "{s}");
    assert!(s.contains("   16   note 16"), "{s}");
    tmux.keys(&["y", "Enter"]);
    tmux.wait_for("✓ Edit", 1);

    // The Bash approval shows every line of the command.
    let s = tmux.wait_for("[y/s/a/N]", 2);
    let asked = &s[s.rfind("Running").unwrap_or(0)..];
    assert!(asked.contains("echo harmless"), "{s}");
    assert!(asked.contains("touch pwned"), "{s}");
    tmux.keys(&["n", "Enter"]);
    let s = tmux.wait_for("All finished.", 1);
    assert!(s.contains("✗ Bash"), "the refusal is shown: {s}");
    assert!(!dir.join("pwned").exists());
    let edited = std::fs::read_to_string(dir.join("notes.txt")).unwrap();
    assert!(edited.contains("the colour of the sky"), "{edited}");

    // NO_COLOR: plain text only.
    let raw = tmux.screen_escaped();
    for sgr in ["\x1b[31m", "\x1b[32m", "\x1b[36m"] {
        assert!(!raw.contains(sgr), "colour {sgr:?} under NO_COLOR:\n{raw}");
    }
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("EXIT=", 1);
}

/// `/bashes` lists the background shells with how they are doing; they
/// end with the session.
#[test]
fn bashes_lists_background_shells_and_they_end_with_the_session() {
    if runner().is_some() {
        return skip_emulated("line mode test", "qemu-user lacks the terminal ioctls");
    }
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip("line mode test", "needs tmux (ci/setup.sh installs it)");
    }
    let dir = scratch("line-bashes");
    let api = StandIn::start(vec![
        standin::tools_reply(&[(
            "toolu_1",
            "Bash",
            r#"{"command": "echo $$ > dev.pid; exec sleep 300", "run_in_background": true, "description": "dev server"}"#,
        )]),
        standin::text_reply("Started it."),
    ]);
    let tmux = start("bashes", &dir, &api, "");
    tmux.keys(&["start the server", "Enter"]);
    tmux.wait_for("[y/s/a/N]", 1);
    tmux.keys(&["y", "Enter"]);
    tmux.wait_for("Started it.", 1);
    tmux.keys(&["/bashes", "Enter"]);
    // (bash_1 is already on screen twice, in the Bash call's result line.)
    let screen = tmux.wait_for("running for", 1);
    assert!(
        screen.contains("bash_1  running for") && screen.contains("dev server"),
        "{screen}"
    );
    let began = Instant::now();
    let pid: u32 = loop {
        if let Some(p) = std::fs::read_to_string(dir.join("dev.pid"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break p;
        }
        assert!(began.elapsed() < Duration::from_secs(20));
        std::thread::sleep(Duration::from_millis(20));
    };
    let alive =
        || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z"));
    assert!(alive());
    tmux.keys(&["/exit", "Enter"]);
    tmux.wait_for("EXIT=0", 1);
    let began = Instant::now();
    while alive() && began.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(), "the dev server outlived the session");
}

/// `/plan` enters plan mode; AskUserQuestion shows its options and takes
/// a number; ExitPlanMode shows the plan and `1` leaves plan mode for
/// acceptEdits, so the edit then runs without a question.
#[test]
fn plan_mode_questions_and_leaving_it() {
    if runner().is_some() {
        return skip_emulated("line mode test", "qemu-user lacks the terminal ioctls");
    }
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip("line mode test", "needs tmux (ci/setup.sh installs it)");
    }
    let dir = scratch("line-plan");
    let question = r#"{"questions": [{"question": "Which database?", "header": "DB", "multiSelect": false,
        "options": [{"label": "SQLite", "description": "a file"}, {"label": "Postgres", "description": "a server"}]}]}"#;
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_q", "AskUserQuestion", question)]),
        standin::tools_reply(&[(
            "toolu_p",
            "ExitPlanMode",
            r#"{"plan": "1. Write db.txt\n2. Nothing else"}"#,
        )]),
        standin::tools_reply(&[(
            "toolu_w",
            "Write",
            r#"{"file_path": "db.txt", "content": "postgres\n"}"#,
        )]),
        standin::text_reply("Done."),
    ]);
    let tmux = start("plan", &dir, &api, "");
    tmux.keys(&["/plan", "Enter"]);
    tmux.wait_for("(plan mode", 1);
    tmux.keys(&["do the database work", "Enter"]);
    let screen = tmux.wait_for("Which database?", 1);
    assert!(screen.contains("2. Postgres  a server"), "{screen}");
    tmux.keys(&["2", "Enter"]);
    let screen = tmux.wait_for("Leave plan mode and start?", 1);
    assert!(screen.contains("  2. Nothing else"), "{screen}");
    tmux.keys(&["1", "Enter"]);
    tmux.wait_for("Done.", 1);
    let screen = tmux.screen();
    assert_eq!(screen.matches("Allow? [y/s/a/N]").count(), 0, "{screen}");
    assert_eq!(
        std::fs::read_to_string(dir.join("db.txt")).unwrap(),
        "postgres\n"
    );
    let reqs = api.requests();
    assert!(reqs[0].body.contains("Plan mode is on"));
    assert!(
        reqs[1]
            .body
            .contains(r#"\"Which database?\" = \"Postgres\""#),
        "{}",
        reqs[1].body
    );
    tmux.keys(&["/mode", "Enter"]);
    tmux.wait_for("permission mode: acceptEdits", 1);
}

/// Notification hooks hear `idle_prompt` once the prompt has waited after
/// an answer — not before the first one, and once per wait.
#[test]
fn an_idle_prompt_after_an_answer_is_a_notification() {
    if runner().is_some() {
        return skip_emulated("line mode test", "qemu-user lacks the terminal ioctls");
    }
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip("line mode test", "needs tmux (ci/setup.sh installs it)");
    }
    let dir = scratch("line-idle");
    std::fs::create_dir_all(dir.join(".tern")).unwrap();
    std::fs::write(
        dir.join(".tern/settings.json"),
        r#"{"hooks": {"Notification": [
            {"matcher": "idle_prompt", "hooks": [{"type": "command", "command": "cat >> idle.jsonl; echo >> idle.jsonl"}]}]}}"#,
    )
    .unwrap();
    let api = StandIn::start(vec![standin::text_reply("Answered.")]);
    // The hook is the test's own: trusted for the run.
    let tmux = start(
        "idle",
        &dir,
        &api,
        "TERN_IDLE_NOTIFY_MS=400 TERN_TRUST_PROJECT=1",
    );
    let idle = dir.join("idle.jsonl");
    // Waiting for the first prompt is not idling after an answer.
    std::thread::sleep(Duration::from_millis(1200));
    assert!(!idle.exists(), "idle before anything was answered");
    tmux.keys(&["hello", "Enter"]);
    tmux.wait_for("Answered.", 1);
    let began = Instant::now();
    while !idle.exists() && began.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(50));
    }
    // Once per wait: more time at the same prompt adds nothing.
    std::thread::sleep(Duration::from_millis(1200));
    let text = std::fs::read_to_string(&idle).expect("no idle_prompt notification");
    let events: Vec<tern::json::Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| tern::json::parse(l).unwrap())
        .collect();
    assert_eq!(events.len(), 1, "{text}");
    assert_eq!(events[0].str_field("hook_event_name"), Some("Notification"));
    assert_eq!(
        events[0].str_field("notification_type"),
        Some("idle_prompt")
    );
    assert!(
        events[0]
            .str_field("message")
            .unwrap()
            .contains("waiting for your input"),
        "{text}"
    );
}

/// `/clear` ends the REPL's context with the conversation: the next block
/// starts a fresh VM and is told why (the model's new conversation knows
/// nothing of the old variables).
#[cfg(feature = "repl")]
#[test]
fn clear_ends_the_repl_context() {
    if runner().is_some() {
        return skip_emulated("line mode test", "qemu-user lacks the terminal ioctls");
    }
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip("line mode test", "needs tmux (ci/setup.sh installs it)");
    }
    let dir = scratch("line-clear-repl");
    let block = |id: &str, c: &str| {
        standin::tools_reply(&[(id, "REPL", &tern::obj! { "code" => c }.to_json())])
    };
    let api = StandIn::start(vec![
        block("toolu_1", "var keep = 41; keep + 1"),
        standin::text_reply("First answered."),
        block("toolu_2", "typeof keep"),
        standin::text_reply("Second answered."),
    ]);
    let tmux = start("clear-repl", &dir, &api, "TERN_REPL=1");
    tmux.keys(&["one", "Enter"]);
    tmux.wait_for("First answered.", 1);
    tmux.keys(&["/clear", "Enter"]);
    tmux.keys(&["two", "Enter"]);
    tmux.wait_for("Second answered.", 1);
    let reqs = api.requests();
    assert_eq!(reqs.len(), 4);
    let result = |i: usize| {
        let r = tool_results(&reqs[i]);
        assert_eq!(r.len(), 1, "{}", reqs[i].body);
        r[0].get("content")
            .map(|c| match c {
                tern::json::Value::String(s) => s.clone(),
                other => other.to_json(),
            })
            .unwrap_or_default()
    };
    assert!(result(1).contains("result: 42"), "{}", result(1));
    // The cleared conversation is not sent again.
    assert!(!reqs[3].body.contains("toolu_1"), "{}", reqs[3].body);
    let t = result(3);
    assert!(
        t.contains("fresh REPL context") && t.contains("/clear") && t.contains("undefined"),
        "{t}"
    );
}
