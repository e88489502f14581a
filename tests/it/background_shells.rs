//! Background shells through the binary and the stand-in model: Bash with
//! `run_in_background` answers at once with a shell id, BashOutput reads
//! what is new, KillShell stops a shell with everything it started, a
//! shell that ends on its own is told to the model at its next request,
//! and the session's end stops what is left. A long foreground command
//! reports its latest line as `tool_progress` in stream-json.

use crate::support;

use std::io::BufRead as _;
use std::time::{Duration, Instant};

use support::standin::{self, StandIn};
use support::*;

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z"))
}

fn read_pid(path: &std::path::Path) -> u32 {
    let began = Instant::now();
    loop {
        if let Some(p) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return p;
        }
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "{path:?} never written"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn content(req: &standin::Request) -> String {
    tool_results(req)
        .first()
        .and_then(|v| v.str_field("content").map(str::to_string))
        .unwrap_or_default()
}

#[test]
fn start_read_kill_hear_of_the_end_and_stop_the_rest_with_the_session() {
    let dir = scratch("bg-session");
    let calls: Vec<(&str, &str)> = vec![
        // 1: a server-like shell that prints and keeps running.
        (
            "Bash",
            r#"{"command": "echo $$ > server.pid; echo listening; exec sleep 300", "run_in_background": true, "description": "a server"}"#,
        ),
        // 2: a shell that will be killed, with a child of its own.
        (
            "Bash",
            r#"{"command": "sleep 300 & echo $! > child.pid; wait", "run_in_background": true}"#,
        ),
        // 3: one that ends by itself with a failure.
        (
            "Bash",
            r#"{"command": "echo done-by-itself; exit 4", "run_in_background": true}"#,
        ),
        (
            "Bash",
            r#"{"command": "until [ -s server.pid ] && [ -s child.pid ]; do sleep 0.05; done; sleep 1"}"#,
        ),
        ("BashOutput", r#"{"bash_id": "bash_1"}"#),
        ("KillShell", r#"{"shell_id": "bash_2"}"#),
        ("BashOutput", r#"{"bash_id": "bash_9"}"#),
    ];
    let mut replies: Vec<_> = calls
        .iter()
        .enumerate()
        .map(|(i, (tool, input))| {
            let id = format!("toolu_{i}");
            standin::tools_reply(&[(id.as_str(), tool, input)])
        })
        .collect();
    replies.push(standin::text_reply("all done"));
    let api = StandIn::start(replies);
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "go",
        "--permission-mode",
        "bypassPermissions",
        "--output-format",
        "json",
    ]));
    assert_ok(&out);
    let reqs = api.requests();
    assert_eq!(reqs.len(), calls.len() + 1);
    let results: Vec<String> = reqs.iter().skip(1).map(content).collect();
    for (i, id) in ["bash_1", "bash_2", "bash_3"].iter().enumerate() {
        assert!(results[i].contains(id), "{}", results[i]);
    }
    assert!(
        results[4].contains("status: running") && results[4].contains("listening"),
        "{}",
        results[4]
    );
    assert!(results[5].contains("stopped"), "{}", results[5]);
    assert!(
        results[6].contains("No background shell bash_9"),
        "{}",
        results[6]
    );
    // bash_3 ended while the model worked: the request after that says so,
    // once.
    let told: Vec<usize> = reqs
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            r.body
                .contains("<background-shell-ended>\\nshell_id: bash_3")
        })
        .map(|(i, _)| i)
        .collect();
    assert!(!told.is_empty(), "the model never heard bash_3 end");
    let first = told[0];
    assert!(reqs[first].body.contains("exited with code 4"));
    // Later requests carry the history, not a second notice.
    let notices = reqs
        .last()
        .unwrap()
        .body
        .matches("shell_id: bash_3")
        .count();
    assert_eq!(notices, 1, "told more than once");
    // KillShell took bash_2's child down; the session's end took bash_1.
    let child = read_pid(&dir.join("child.pid"));
    let server = read_pid(&dir.join("server.pid"));
    let began = Instant::now();
    while (alive(child) || alive(server)) && began.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(child), "KillShell left {child}");
    assert!(!alive(server), "the session's end left {server}");
}

#[test]
fn a_long_command_reports_its_latest_line_in_stream_json() {
    let dir = scratch("bg-progress");
    let cmd = r#"{"command": "echo compiling crate one; until [ -e go ]; do sleep 0.05; done; echo finished"}"#;
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_1", "Bash", cmd)]),
        standin::text_reply("ok"),
    ]);
    let mut child = tern(&api.url, &dir)
        .args([
            "-p",
            "build",
            "--permission-mode",
            "bypassPermissions",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    // Should no progress come, the command still ends (and the test fails
    // instead of hanging).
    let go = dir.join("go");
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(30));
        let _ = std::fs::write(go, "");
    });
    let mut progress = None;
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.unwrap();
        let v = tern::json::parse(&line).unwrap();
        if v.str_field("type") == Some("tool_progress") && progress.is_none() {
            progress = Some(v);
            // Only now may the command finish.
            std::fs::write(dir.join("go"), "").unwrap();
        }
    }
    let status = child.wait().unwrap();
    assert!(status.success());
    let p = progress.expect("no tool_progress line while the command ran");
    assert_eq!(p.str_field("tool_use_id"), Some("toolu_1"));
    assert_eq!(p.str_field("text"), Some("compiling crate one"));
    assert!(
        p.get("elapsed_time_seconds")
            .and_then(|v| v.as_f64())
            .is_some()
    );
}
