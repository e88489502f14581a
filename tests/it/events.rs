//! The order of what the loop reports, seen by a real consumer (the
//! binary's `--verbose` tool lines): concurrency-safe calls start
//! together, an unsafe call waits for everything before it and holds back
//! everything after it, and results reach the model in the order it asked.

use crate::support;

use support::standin::{self, StandIn};
use support::*;

/// The tool lines tern printed: ("start"|"end", tool name, rest).
fn tool_lines(stderr: &str) -> Vec<(&'static str, String, String)> {
    let mut out = Vec::new();
    for line in stderr.lines() {
        let Some(rest) = line.strip_prefix("tern: ") else {
            continue;
        };
        if let Some(s) = rest.strip_prefix("● ") {
            let (name, arg) = s.split_once(' ').unwrap_or((s, ""));
            out.push(("start", name.to_string(), arg.to_string()));
        } else if let Some(s) = rest
            .trim_start()
            .strip_prefix("✓ ")
            .or_else(|| rest.trim_start().strip_prefix("✗ "))
        {
            let (name, arg) = s.split_once(' ').unwrap_or((s, ""));
            out.push(("end", name.to_string(), arg.to_string()));
        }
    }
    out
}

#[test]
fn parallel_safe_calls_then_an_unsafe_barrier_then_a_safe_call() {
    let dir = scratch("event-order");
    let api = StandIn::start(vec![
        standin::tools_reply(&[
            ("toolu_1", "Bash", r#"{"command": "sleep 1; echo first"}"#),
            ("toolu_2", "Bash", r#"{"command": "sleep 1; echo second"}"#),
            (
                "toolu_3",
                "Write",
                r#"{"file_path": "barrier.txt", "content": "written\n"}"#,
            ),
            ("toolu_4", "Read", r#"{"file_path": "barrier.txt"}"#),
        ]),
        standin::text_reply("done"),
    ]);
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "go",
        "--verbose",
        "--permission-mode",
        "acceptEdits",
    ]));
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines = tool_lines(&stderr);
    assert_eq!(lines.len(), 8, "four starts and four ends:\n{stderr}");
    let at = |kind: &str, what: &str| {
        lines
            .iter()
            .position(|(k, name, rest)| {
                *k == kind && (rest.contains(what) || (name == what && kind == "end"))
            })
            .unwrap_or_else(|| panic!("no {kind} line for {what}:\n{stderr}"))
    };
    let (s1, s2) = (at("start", "echo first"), at("start", "echo second"));
    let (e1, e2) = (at("end", "first"), at("end", "second"));
    let (s3, e3) = (at("start", "barrier.txt"), at("end", "Write"));
    let s4 = lines
        .iter()
        .position(|(k, n, _)| *k == "start" && n == "Read")
        .unwrap();
    let e4 = at("end", "Read");
    // Both safe calls were running at once.
    assert!(s1.max(s2) < e1.min(e2), "not parallel:\n{stderr}");
    // The barrier starts after both and ends before the read begins.
    assert!(e1.max(e2) < s3, "the Write did not wait:\n{stderr}");
    assert!(e3 < s4 && s4 < e4, "the Read did not wait:\n{stderr}");
    // The model gets the results in its own order, whatever finished first.
    let results = tool_results(&api.requests()[1]);
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r.str_field("tool_use_id").unwrap())
        .collect();
    assert_eq!(ids, ["toolu_1", "toolu_2", "toolu_3", "toolu_4"]);
    assert!(results[3].to_json().contains("written"), "{results:?}");
}
