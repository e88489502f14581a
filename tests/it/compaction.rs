//! Context governance through the real binary and the stand-in: old tool
//! results are cleared, the history is summarised when the window fills,
//! the transcript records the boundary, `/compact` works on request, and
//! a conversation that cannot fit ends with the numbers.

use crate::support;

use support::standin::{self, Reply, StandIn};
use support::*;
use tern::json::Value;

const MARKER: &str = "[tern: compaction request]";

fn is_compaction(req: &standin::Request) -> bool {
    req.body.contains(MARKER)
}

/// Answers every summary request with a summary that names itself.
fn summarise_on_request(api: &StandIn) {
    api.set_responder(Box::new(|req| {
        is_compaction(req).then(|| {
            standin::text_reply("<analysis>went through it</analysis>\n<summary>\n1. Primary request: SUMMARY-OF-EARLIER-WORK\n</summary>")
        })
    }));
}

/// A reply with a long text and one cheap tool call, so the history grows
/// without tool results that micro-compaction could clear.
fn chatty_turn(i: usize) -> Reply {
    let mut steps = vec![standin::message_start("msg_chat")];
    steps.extend(standin::text_block(
        0,
        &format!("turn {i}: {}", "words ".repeat(400)),
    ));
    steps.extend(standin::tool_block(
        1,
        &format!("toolu_{i}"),
        "Glob",
        r#"{"pattern": "nothing-*"}"#,
        i as u64,
    ));
    steps.extend(standin::message_end("tool_use", 600));
    Reply::Stream(steps)
}

#[test]
fn a_filling_window_is_summarised_and_the_work_goes_on() {
    let dir = scratch("autocompact");
    let mut replies: Vec<Reply> = (0..12).map(chatty_turn).collect();
    replies.push(standin::text_reply("finished after compaction"));
    let api = StandIn::start(replies);
    summarise_on_request(&api);
    let out = run(tern(&api.url, &dir)
        .env("TERN_CONTEXT_WINDOW", "12000")
        .args(["-p", "do the long task", "--output-format", "stream-json"]));
    assert_ok(&out);
    let reqs = api.requests();
    let summaries: Vec<usize> = (0..reqs.len())
        .filter(|&i| is_compaction(&reqs[i]))
        .collect();
    assert!(
        !summaries.is_empty(),
        "no compaction in {} requests",
        reqs.len()
    );
    // The summary request carries the history and no tools.
    let first = body(&reqs[summaries[0]]);
    assert!(
        first
            .get("tools")
            .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty))
    );
    assert!(reqs[summaries[0]].body.contains("9. Next step"));
    // The request after it starts from the summary.
    let after = body(&reqs[summaries[0] + 1]);
    let msgs = after.get("messages").unwrap().as_array().unwrap();
    assert!(
        msgs[0].to_json().contains("SUMMARY-OF-EARLIER-WORK"),
        "{}",
        msgs[0]
    );
    assert!(
        !after.to_json().contains("turn 0:"),
        "old turns are gone from the request"
    );
    // Every request fitted the window's local estimate.
    for r in &reqs {
        assert!(
            r.body.len() / 4 < 12_000,
            "a request of ~{} tokens was sent",
            r.body.len() / 4
        );
    }
    let boundary = lines(&out)
        .into_iter()
        .find(|l| l.str_field("subtype") == Some("compact_boundary"))
        .expect("compact_boundary line");
    assert_eq!(
        boundary
            .get("compact_metadata")
            .and_then(|m| m.str_field("trigger")),
        Some("auto")
    );
    assert_eq!(
        last_result(&out).str_field("result"),
        Some("finished after compaction")
    );

    // The transcript keeps everything, with a boundary; resume starts from the summary.
    let api2 = StandIn::start(vec![standin::text_reply("resumed")]);
    let out = run(tern(&api2.url, &dir)
        .env("TERN_CONTEXT_WINDOW", "12000")
        .args(["-c", "-p", "what now?"]));
    assert_ok(&out);
    let resumed = body(&api2.requests()[0]);
    let msgs = resumed.get("messages").unwrap().as_array().unwrap();
    assert!(msgs[0].to_json().contains("SUMMARY-OF-EARLIER-WORK"));
    assert!(!resumed.to_json().contains("turn 0:"));
}

#[test]
fn old_large_tool_results_are_cleared_first_keeping_their_ids() {
    let dir = scratch("micro");
    std::fs::write(dir.join("big.txt"), "line of a big file\n".repeat(400)).unwrap();
    let mut replies: Vec<Reply> = (0..12)
        .map(|i| {
            standin::tools_reply(&[(
                &format!("toolu_r{i}"),
                "Read",
                r#"{"file_path": "big.txt"}"#,
            )])
        })
        .collect();
    replies.push(standin::text_reply("done"));
    let api = StandIn::start(replies);
    summarise_on_request(&api);
    let out = run(tern(&api.url, &dir)
        .env("TERN_CONTEXT_WINDOW", "30000")
        .args(["-p", "read it many times", "--verbose"]));
    assert_ok(&out);
    let reqs = api.requests();
    assert!(
        reqs.iter().all(|r| !is_compaction(r)),
        "micro-compaction should have been enough"
    );
    let last = reqs.last().unwrap();
    assert!(
        last.body.contains("Old tool result cleared"),
        "nothing was cleared"
    );
    // All twelve calls are still answered, the recent five in full.
    for i in 0..12 {
        assert!(
            last.body
                .contains(&format!("\"tool_use_id\":\"toolu_r{i}\"")),
            "toolu_r{i} lost"
        );
    }
    // The five most recent are never cleared; clearing happens only when
    // the window needs it, so a few more may still be whole.
    let whole = last.body.matches("line of a big file").count() / 400;
    assert!((5..12).contains(&whole), "{whole} results whole");
    assert!(String::from_utf8_lossy(&out.stderr).contains("cleared old tool results"));
}

#[test]
fn compact_on_request_with_instructions() {
    let dir = scratch("manual");
    let api = StandIn::start(vec![standin::text_reply("first answer")]);
    summarise_on_request(&api);
    assert_ok(&run(tern(&api.url, &dir).args(["-p", "start something"])));
    let out = run(tern(&api.url, &dir).args([
        "-c",
        "-p",
        "/compact keep the API notes",
        "--output-format",
        "json",
    ]));
    assert_ok(&out);
    let reqs = api.requests();
    assert_eq!(reqs.len(), 2);
    assert!(is_compaction(&reqs[1]));
    assert!(reqs[1].body.contains("keep the API notes"));
    assert!(reqs[1].body.contains("start something"));
    assert!(
        last_result(&out)
            .str_field("result")
            .unwrap()
            .starts_with("Compacted")
    );
    // Nothing to compact in a fresh session: a clear error.
    let empty = scratch("manual-empty");
    let out = run(tern(&api.url, &empty).args(["-p", "/compact"]));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to compact"));
}

#[test]
fn when_compaction_cannot_help_the_session_ends_with_the_numbers() {
    let dir = scratch("blocked");
    std::fs::create_dir_all(dir.join(".tern")).unwrap();
    std::fs::write(
        dir.join(".tern/settings.json"),
        r#"{"contextWindow": 6000, "hooks": {"PreCompact": [{"hooks": [{"type": "command", "command": "echo 'not now' >&2; exit 2"}]}]}}"#,
    )
    .unwrap();
    let mut replies: Vec<Reply> = (0..8).map(chatty_turn).collect();
    replies.push(standin::text_reply("unreachable"));
    let api = StandIn::start(replies);
    summarise_on_request(&api);
    let out = run(trusted(&api.url, &dir).args(["-p", "x", "--output-format", "json"]));
    assert_eq!(out.status.code(), Some(1));
    let errors = last_result(&out).get("errors").unwrap().to_json();
    assert!(
        errors.contains("does not fit the model's context window (6000 tokens"),
        "{errors}"
    );
    assert!(
        errors.contains("PreCompact hook refused: not now"),
        "{errors}"
    );
    assert!(api.requests().iter().all(|r| !is_compaction(r)));
}

/// A PreCompact hook's matcher is the trigger: one for `manual` leaves
/// automatic compaction alone, one for `auto` can refuse it.
#[test]
fn pre_compact_hooks_match_on_the_trigger() {
    for (matcher, refuses) in [("manual", false), ("auto", true)] {
        let dir = scratch("precompact-matcher");
        std::fs::create_dir_all(dir.join(".tern")).unwrap();
        std::fs::write(
            dir.join(".tern/settings.json"),
            format!(
                r#"{{"contextWindow": 6000, "hooks": {{"PreCompact": [{{"matcher": "{matcher}", "hooks": [{{"type": "command", "command": "echo 'not now' >&2; exit 2"}}]}}]}}}}"#
            ),
        )
        .unwrap();
        let mut replies: Vec<Reply> = (0..8).map(chatty_turn).collect();
        replies.push(standin::text_reply("finished"));
        let api = StandIn::start(replies);
        summarise_on_request(&api);
        let out = run(trusted(&api.url, &dir).args(["-p", "x", "--output-format", "json"]));
        let compacted = api.requests().iter().any(is_compaction);
        assert_eq!(compacted, !refuses, "matcher {matcher}");
        assert_eq!(out.status.success(), !refuses, "matcher {matcher}");
    }
}

/// 300 model turns in a small window: compaction happens again and
/// again, the session finishes, and every tool call stays answered.
#[test]
fn a_300_turn_session_compacts_and_finishes() {
    let dir = scratch("long");
    std::fs::write(dir.join("data.txt"), "some data to read\n".repeat(200)).unwrap();
    let api = StandIn::start(vec![]);
    let mut replies: Vec<Reply> = (0..299)
        .map(|i| {
            if i % 2 == 0 {
                chatty_turn(i)
            } else {
                standin::tools_reply(&[(
                    &format!("toolu_d{i}"),
                    "Read",
                    r#"{"file_path": "data.txt"}"#,
                )])
            }
        })
        .collect();
    replies.push(standin::text_reply("three hundred turns later"));
    for r in replies {
        api.push(r);
    }
    summarise_on_request(&api);
    let out = run(tern(&api.url, &dir)
        .env("TERN_CONTEXT_WINDOW", "16000")
        .args(["-p", "go", "--output-format", "json"]));
    assert_ok(&out);
    let result = last_result(&out);
    assert_eq!(
        result.str_field("result"),
        Some("three hundred turns later")
    );
    assert_eq!(result.get("num_turns").and_then(Value::as_i64), Some(300));
    let compactions = api.requests().iter().filter(|r| is_compaction(r)).count();
    assert!(compactions >= 5, "only {compactions} compactions");
}

/// Regression (issue 33): SIGTERM while the summary is being written ends
/// the run like a signal anywhere else — status 143, not 1 ("compaction
/// failed: interrupted") — and leaves a transcript that resumes. Both
/// triggers: automatic compaction mid-task, and `/compact` on request.
#[test]
fn a_signal_during_compaction_exits_as_a_signal() {
    for trigger in ["auto", "manual"] {
        let dir = scratch("compact-signal");
        let summary_started = dir.join("summary-started");
        let mut replies: Vec<Reply> = (0..12).map(chatty_turn).collect();
        replies.push(standin::text_reply("never reached"));
        let api = StandIn::start(if trigger == "auto" {
            replies
        } else {
            Vec::new()
        });
        // The summary request hangs after it starts streaming.
        let flag = summary_started.clone();
        api.set_responder(Box::new(move |req| {
            is_compaction(req).then(|| {
                let _ = std::fs::write(&flag, "");
                standin::slow_text(
                    "<summary>",
                    std::time::Duration::from_secs(30),
                    "x</summary>",
                )
            })
        }));
        if trigger == "manual" {
            // A session with something to compact first.
            let seed = StandIn::start(vec![standin::text_reply("first answer")]);
            assert_ok(&run(tern(&seed.url, &dir).args(["-p", "hello"])));
        }
        let args: &[&str] = if trigger == "auto" {
            &["-p", "do the long task"]
        } else {
            &["-c", "-p", "/compact"]
        };
        let child = tern(&api.url, &dir)
            .env("TERN_CONTEXT_WINDOW", "12000")
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let began = std::time::Instant::now();
        while !summary_started.exists() {
            assert!(
                began.elapsed() < std::time::Duration::from_secs(60),
                "{trigger}: no compaction began"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        // SAFETY: a plain signal to the child we started.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(143), "{trigger}: {stderr}");
        assert!(!stderr.contains("compaction failed"), "{trigger}: {stderr}");
        // The transcript is whole: the next run resumes it.
        let next = StandIn::start(vec![standin::text_reply("resumed")]);
        let resumed = run(tern(&next.url, &dir).args(["-c", "-p", "and now?"]));
        assert_ok(&resumed);
        assert!(
            !String::from_utf8_lossy(&resumed.stderr).contains("resume:"),
            "{trigger}: {}",
            String::from_utf8_lossy(&resumed.stderr)
        );
    }
}
