//! The terminal interface in a real terminal (tmux): the permission
//! dialog's boundaries (the highlight is the grant; leaving the comment
//! field never approves; Enter approves once; Down+Enter on option 2
//! stops later edit prompts), Esc interrupting a running command, the
//! modes, the composer's keys, and the fallbacks to line mode.

#![cfg(feature = "tui")]

use crate::support;

use std::time::{Duration, Instant};

use support::standin::{self, Reply, StandIn, slow_text};
use support::tmux::{Tmux, unavailable};
use support::*;

/// Skipped, with the reason, where no terminal can be had.
macro_rules! needs_terminal {
    ($name:expr) => {
        if let Some(why) = unavailable() {
            if runner().is_some() {
                return skip_emulated($name, why);
            }
            return skip($name, why);
        }
    };
}

fn write(id: &str, file: &str, content: &str) -> Reply {
    let input = tern::obj! { "file_path" => file, "content" => content };
    standin::tools_reply(&[(id, "Write", &input.to_json())])
}

/// Ready: the status line is drawn.
const READY: &str = "shift+tab: mode";

#[test]
fn the_dialog_grants_what_is_highlighted_and_only_that() {
    needs_terminal!("the_dialog_grants_what_is_highlighted_and_only_that");
    let dir = scratch("tui-dialog");
    let api = StandIn::start(vec![
        write("toolu_1", "a.txt", "one\n"),
        standin::text_reply("First done."),
        write("toolu_2", "b.txt", "two\n"),
        standin::text_reply("Second done."),
        write("toolu_3", "c.txt", "three\n"),
        standin::text_reply("Third done."),
        write("toolu_4", "d.txt", "four\n"),
        standin::text_reply("Fourth done."),
    ]);
    let t = Tmux::start("dialog", &dir, &api, "", "", (120, 40));
    t.wait_for(READY, 1);

    // Into the comment field of option 3, then out of it with Shift+Tab:
    // the dialog is still there and nothing was written.
    t.type_text("write a");
    t.keys(&["Enter"]);
    t.wait_for("Allow Write?", 1);
    t.wait_for("+ one", 1);
    t.keys(&["Down", "Down"]);
    t.type_text("x");
    t.wait_for("> x", 1);
    t.keys(&["BTab"]);
    std::thread::sleep(Duration::from_millis(600));
    let s = t.screen();
    assert!(
        !dir.join("a.txt").exists(),
        "Shift+Tab approved the Write:\n{s}"
    );
    assert!(s.contains("❯ 3. No, and tell tern"), "{s}");
    // Esc out of the field likewise; then "1" approves.
    t.keys(&["Tab"]);
    t.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(400));
    assert!(!dir.join("a.txt").exists(), "Esc out of the field approved");
    assert!(t.screen().contains("Allow Write?"));
    t.keys(&["1"]);
    t.wait_for("First done.", 1);
    assert_eq!(std::fs::read_to_string(dir.join("a.txt")).unwrap(), "one\n");
    // The diff of what was written is in the scrollback.
    assert!(t.screen().contains("✓ Write a.txt"), "{}", t.screen());

    // Enter approves once: this Write, and the next one asks again.
    t.type_text("write b");
    t.keys(&["Enter"]);
    t.wait_for("b.txt needs approval", 1);
    t.keys(&["Enter"]);
    t.wait_for("Second done.", 1);
    assert!(dir.join("b.txt").exists());
    t.type_text("write c");
    t.keys(&["Enter"]);
    t.wait_for("c.txt needs approval", 1);
    assert!(!dir.join("c.txt").exists(), "asked, not yet answered");
    // Down and Enter in one burst: option 2, which accepts edits from now on.
    t.keys(&["Down", "Enter"]);
    t.wait_for("Third done.", 1);
    assert!(dir.join("c.txt").exists());
    t.type_text("write d");
    t.keys(&["Enter"]);
    let s = t.wait_for("Fourth done.", 1);
    assert_eq!(
        s.matches("needs approval").count(),
        3,
        "the fourth Write asked:\n{s}"
    );
    assert!(dir.join("d.txt").exists());
    assert!(s.contains("acceptEdits"), "the mode is shown: {s}");
    t.keys(&["C-d"]);
    t.wait_for("EXIT=0", 1);
}

#[test]
fn esc_interrupts_a_running_command_and_its_call_is_answered() {
    needs_terminal!("esc_interrupts_a_running_command_and_its_call_is_answered");
    let dir = scratch("tui-esc");
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_s", "Bash", r#"{"command": "sleep 30"}"#)]),
        standin::text_reply("Back again."),
    ]);
    let t = Tmux::start(
        "esc",
        &dir,
        &api,
        "",
        "--allowedTools 'Bash(sleep:*)'",
        (120, 40),
    );
    t.wait_for(READY, 1);
    t.type_text("wait a while");
    t.keys(&["Enter"]);
    t.wait_for("● Bash sleep 30", 1);
    let pressed = Instant::now();
    t.keys(&["Escape"]);
    t.wait_for("(interrupted)", 1);
    let took = pressed.elapsed();
    eprintln!("Esc to the end of the turn: {} ms", took.as_millis());
    assert!(took < Duration::from_secs(5), "{took:?}");
    t.type_text("go on");
    t.keys(&["Enter"]);
    t.wait_for("Back again.", 1);
    let reqs = api.requests();
    let results = tool_results(&reqs[1]);
    assert_eq!(results.len(), 1, "{}", reqs[1].body);
    assert_eq!(results[0].str_field("tool_use_id"), Some("toolu_s"));
    assert_eq!(
        results[0].get("is_error").and_then(|v| v.as_bool()),
        Some(true)
    );
}

#[test]
fn modes_composer_keys_queue_paste_and_completion() {
    needs_terminal!("modes_composer_keys_queue_paste_and_completion");
    let dir = scratch("tui-keys");
    std::fs::write(dir.join("notes-for-later.md"), "x").unwrap();
    let api = StandIn::start(vec![
        standin::text_reply("# Heading\n\n- an **item**\n- `code` here\n"),
        slow_text("Working on ", Duration::from_millis(1500), "it."),
        standin::text_reply("Queued one answered."),
        standin::text_reply("Paste answered."),
        standin::text_reply("File answered."),
    ]);
    let t = Tmux::start("keys", &dir, &api, "", "", (120, 40));
    t.wait_for(READY, 1);

    // Shift+Tab cycles the mode, shown in the status line.
    t.keys(&["BTab"]);
    t.wait_for("· acceptEdits ·", 1);
    t.keys(&["BTab"]);
    t.wait_for("· plan ·", 1);
    t.keys(&["BTab"]);
    t.wait_for("· default ·", 1);

    // Ctrl-C clears what is typed.
    t.type_text("never sent");
    t.wait_for("> never sent", 1);
    t.keys(&["C-c"]);
    t.wait_until("the composer cleared", |s| !s.contains("never sent"));

    // Three lines: backslash+Enter, then Ctrl-J.
    t.type_text("line one\\");
    t.keys(&["Enter"]);
    t.type_text("line two");
    t.keys(&["C-j"]);
    t.type_text("line three");
    t.keys(&["Enter"]);
    let s = t.wait_for("• an item", 1);
    assert!(s.contains("Heading") && !s.contains("# Heading"), "{s}");
    assert!(
        api.requests()[0]
            .body
            .contains(r"line one\nline two\nline three")
    );

    // Typed during a turn: queued, shown, sent after it.
    t.type_text("slow one");
    t.keys(&["Enter"]);
    t.wait_for("Working on", 1);
    t.type_text("queued one");
    t.keys(&["Enter"]);
    t.wait_for("(queued: queued one)", 1);
    t.wait_for("Queued one answered.", 1);
    assert!(api.requests()[2].body.contains("queued one"));

    // History: Up brings back the last message.
    t.keys(&["Up"]);
    t.wait_for("> queued one", 2);
    t.keys(&["C-u"]);
    // Ctrl-R finds an older one; Enter puts it in the composer.
    t.keys(&["C-r"]);
    t.type_text("slow");
    t.wait_for("(search history) `slow': slow one", 1);
    t.keys(&["Enter"]);
    t.wait_for("> slow one", 2);
    t.keys(&["C-u"]);

    // A large bracketed paste is folded, and sent whole.
    let pasted: String = (1..=30).map(|i| format!("pasted line {i}\n")).collect();
    t.run(&["set-buffer", "-b", "tern", &pasted]);
    t.run(&["paste-buffer", "-p", "-b", "tern", "-t", &t.session]);
    t.wait_for("[Pasted text #1 +30 lines]", 1);
    t.keys(&["Enter"]);
    t.wait_for("Paste answered.", 1);
    let body = &api.requests()[3].body;
    assert!(
        body.contains("pasted line 1\\n") && body.contains("pasted line 30"),
        "{body}"
    );

    // Completion: slash commands with their descriptions, and @files.
    t.type_text("/co");
    let s = t.wait_for("/compact", 1);
    assert!(
        s.contains("/cost") && s.contains("tokens and estimated cost"),
        "{s}"
    );
    t.keys(&["C-u"]);
    t.type_text("read @notes-for");
    t.wait_for("@notes-for-later.md", 1);
    t.keys(&["Tab"]);
    t.keys(&["Enter"]);
    t.wait_for("File answered.", 1);
    assert!(api.requests()[4].body.contains("read @notes-for-later.md"));

    // Ctrl-D on an empty composer leaves.
    t.keys(&["C-d"]);
    t.wait_for("EXIT=0", 1);
}

#[test]
fn ctrl_c_twice_leaves_and_a_small_terminal_says_so() {
    needs_terminal!("ctrl_c_twice_leaves_and_a_small_terminal_says_so");
    let dir = scratch("tui-ctrlc");
    let api = StandIn::start(vec![]);
    let t = Tmux::start("ctrlc", &dir, &api, "NO_COLOR=1", "", (100, 30));
    t.wait_for(READY, 1);
    // NO_COLOR: no colour in what is drawn.
    let drawn = t.screen_escaped();
    assert!(
        !drawn.contains("\x1b[2m") && !drawn.contains("\x1b[36m"),
        "{drawn:?}"
    );
    t.run(&["resize-window", "-t", &t.session, "-x", "15", "-y", "4"]);
    t.wait_for("too small", 1);
    t.run(&["resize-window", "-t", &t.session, "-x", "100", "-y", "30"]);
    t.wait_for(READY, 1);
    t.keys(&["C-c"]);
    t.wait_for("press Ctrl-C again to exit", 1);
    t.keys(&["C-c"]);
    t.wait_for("EXIT=130", 1);
}

#[test]
fn line_mode_when_asked_or_when_the_terminal_cannot_draw() {
    needs_terminal!("line_mode_when_asked_or_when_the_terminal_cannot_draw");
    let dir = scratch("tui-fallback");
    let api = StandIn::start(vec![]);
    for (name, env, args) in [("dumb", "TERM=dumb", ""), ("flag", "", "--no-tui")] {
        let t = Tmux::start(name, &dir, &api, env, args, (100, 30));
        let s = t.wait_for("/help for commands", 1);
        assert!(!s.contains(READY), "{name}: {s}");
        t.keys(&["C-d"]);
        t.wait_for("EXIT=0", 1);
    }
}

/// The CPU time (user + system, in clock ticks) of the tern process under
/// the pane's shell.
fn cpu_ticks_of_tern(t: &Tmux) -> u64 {
    let shell: u32 = t
        .run(&["list-panes", "-t", &t.session, "-F", "#{pane_pid}"])
        .trim()
        .parse()
        .unwrap();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ... utime stime: fields after the comm.
        let Some((head, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if head.ends_with("(tern") && fields[1].parse::<u32>().ok() == Some(shell) {
            return fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        }
    }
    panic!("no tern process under the pane's shell {shell}");
}

/// Waiting at the prompt costs nothing: no polling loop, no timer.
#[test]
fn an_idle_interface_uses_no_cpu() {
    needs_terminal!("an_idle_interface_uses_no_cpu");
    let dir = scratch("tui-idle");
    let api = StandIn::start(vec![standin::text_reply("Said.")]);
    let t = Tmux::start("idle", &dir, &api, "", "", (100, 30));
    t.wait_for(READY, 1);
    t.type_text("say it");
    t.keys(&["Enter"]);
    t.wait_for("Said.", 1);
    std::thread::sleep(Duration::from_millis(300));
    let before = cpu_ticks_of_tern(&t);
    std::thread::sleep(Duration::from_secs(3));
    let spent = cpu_ticks_of_tern(&t) - before;
    eprintln!("idle for 3 s: {spent} clock ticks of CPU");
    // A tick is 10 ms: one at most, for accounting noise, never a loop's.
    assert!(spent <= 1, "{spent} ticks while idle");
}

/// A background shell has a card in the live region while it runs,
/// across turns, with its command.
#[test]
fn a_background_shell_has_a_card_while_it_runs() {
    needs_terminal!("a_background_shell_has_a_card_while_it_runs");
    let dir = scratch("tui-shell");
    let api = StandIn::start(vec![
        standin::tools_reply(&[(
            "toolu_bg",
            "Bash",
            r#"{"command": "sleep 30", "run_in_background": true}"#,
        )]),
        standin::text_reply("Started it."),
    ]);
    let t = Tmux::start(
        "shell",
        &dir,
        &api,
        "",
        "--allowedTools 'Bash(sleep:*)'",
        (120, 30),
    );
    t.wait_for(READY, 1);
    t.type_text("start it");
    t.keys(&["Enter"]);
    t.wait_for("Started it.", 1);
    let s = t.wait_until("a running shell's card", |s| {
        s.lines()
            .any(|l| l.starts_with("◇ ") && l.contains("running for") && l.contains("sleep 30"))
    });
    assert!(s.contains("1 background shell(s)"), "{s}");
    t.keys(&["C-d"]);
    t.wait_for("EXIT=0", 1);
}

/// The status line is the last row whatever the model streams above it:
/// a long line with tabs, wide characters, emoji and combining marks is
/// wrapped by the interface, never by the terminal (a row the terminal
/// wrapped on its own once overwrote the status line).
#[test]
fn a_long_streamed_line_never_overwrites_the_status_line() {
    needs_terminal!("a_long_streamed_line_never_overwrites_the_status_line");
    let dir = scratch("tui-wrap");
    let first = "col\\tumn\\tand\\ttabs 漢字かな混じり文 ☀️ 👍🏽 e\u{301}e\u{301} ".repeat(6);
    let api = StandIn::start(vec![slow_text(
        &first,
        Duration::from_millis(2500),
        "and the end.",
    )]);
    let t = Tmux::start("wrap", &dir, &api, "", "", (80, 20));
    t.wait_for(READY, 1);
    t.type_text("stream a long line");
    t.keys(&["Enter"]);
    t.wait_for("esc interrupts", 1);
    // While the line is pending (the pause), the status line is whole.
    let began = Instant::now();
    while began.elapsed() < Duration::from_millis(1500) {
        let s = t.screen();
        let last = s.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        assert!(
            last.starts_with("claude-sonnet-4-5 · "),
            "the status line was overwritten: {last:?}\n{s}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let s = t.wait_for("end.", 1);
    let last = s.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    assert!(last.starts_with("claude-sonnet-4-5 · "), "{last:?}\n{s}");
    t.keys(&["C-d"]);
    t.wait_for("EXIT=0", 1);
}

/// Cards say what happened: a Read card sums the read up (the file's
/// text never lands on the card's line), an Edit's diff reads removed
/// then added, and a call's time is its running time, not the wait for
/// the person's answer.
#[test]
fn cards_show_what_happened_and_how_long_it_ran() {
    needs_terminal!("cards_show_what_happened_and_how_long_it_ran");
    let dir = scratch("tui-cards");
    std::fs::write(dir.join("f.txt"), "alpha secret\nold line\nomega\n").unwrap();
    let read = tern::obj! { "file_path" => "f.txt" };
    let edit = tern::obj! {
        "file_path" => "f.txt", "old_string" => "old line", "new_string" => "new line"
    };
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_r", "Read", &read.to_json())]),
        standin::tools_reply(&[("toolu_e", "Edit", &edit.to_json())]),
        standin::text_reply("Edited."),
    ]);
    let t = Tmux::start("cards", &dir, &api, "", "", (120, 40));
    t.wait_for(READY, 1);
    t.type_text("edit it");
    t.keys(&["Enter"]);
    t.wait_for("Allow Edit?", 1);
    // The person takes their time.
    std::thread::sleep(Duration::from_millis(2500));
    t.keys(&["1"]);
    let s = t.wait_for("Edited.", 1);
    assert!(
        std::fs::read_to_string(dir.join("f.txt"))
            .unwrap()
            .contains("new line")
    );

    let row = |prefix: &str| {
        s.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} row:\n{s}"))
            .to_string()
    };
    let read_row = row("✓ Read f.txt");
    assert!(read_row.contains("Read 3 lines"), "{read_row}");
    assert!(
        !read_row.contains("alpha"),
        "file text on the card: {read_row}"
    );

    let edit_row = row("✓ Edit f.txt");
    let secs: f64 = edit_row
        .split_once('(')
        .and_then(|(_, r)| r.split_once("s)"))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("no time on {edit_row:?}"));
    assert!(
        secs < 2.0,
        "the wait for the answer was counted: {edit_row}"
    );

    // Every diff on the screen (the dialog's and the card's) reads old, then new.
    let rows: Vec<&str> = s.lines().collect();
    let removed: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].contains("- old line"))
        .collect();
    let added: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].contains("+ new line"))
        .collect();
    assert!(!removed.is_empty() && removed.len() == added.len(), "{s}");
    for (r, a) in removed.iter().zip(&added) {
        assert_eq!(r + 1, *a, "removed then added:\n{s}");
    }
    t.keys(&["C-d"]);
    t.wait_for("EXIT=0", 1);
}

/// A plugin's command in the terminal: offered with its description as
/// `/plugin:name`, and sent as its text.
#[cfg(feature = "mcp")]
#[test]
fn a_plugins_command_is_offered_and_runs() {
    needs_terminal!("a_plugins_command_is_offered_and_runs");
    let dir = scratch("tui-plugin");
    let plugin = dir.with_extension("plugins").join("tuiplug");
    crate::plugins::write_plugin(&plugin, "tuiplug");
    let api = StandIn::start(vec![standin::text_reply("Greeted.")]);
    let args = format!("--plugin-dir {}", plugin.display());
    let t = Tmux::start("plugin", &dir, &api, "", &args, (120, 40));
    t.wait_for(READY, 1);
    t.type_text("/tuip");
    let s = t.wait_for("/tuiplug:hello", 1);
    assert!(s.contains("Greet someone"), "{s}");
    t.keys(&["C-u"]);
    t.type_text("/tuiplug:hello terminal");
    t.keys(&["Enter"]);
    t.wait_for("Greeted.", 1);
    assert!(
        api.requests()[0].body.contains("Greet terminal warmly"),
        "{}",
        api.requests()[0].body
    );
    t.keys(&["C-d"]);
    t.wait_for("EXIT=0", 1);
}
