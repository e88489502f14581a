//! End to end, the agent loop: the streaming executor, retries, cut
//! streams, malformed calls, turn limits and interrupts. The real `tern`
//! binary against the scripted Messages API stand-in, through real files
//! and processes.

use crate::support;

use std::time::Duration;

use support::standin::{self, Reply, StandIn, Step};
use support::*;
use tern::json::Value;

/// Three read-only commands overlap and the Edit waits for all of them;
/// results come back in the order asked, not the order finished. (Bash
/// `cat` of a FIFO: Read itself refuses FIFOs.)
#[test]
fn reads_overlap_edit_waits_results_in_order() {
    let dir = scratch("overlap");
    let target = dir.join("port.txt");
    std::fs::write(&target, "port = 8080\n").unwrap();
    let fifos: Vec<_> = (1..=3).map(|i| dir.join(format!("fifo{i}"))).collect();
    for f in &fifos {
        let c = std::ffi::CString::new(f.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    }
    let read = |p: &std::path::Path| format!(r#"{{"file_path": "{}"}}"#, p.display());
    let cat = |p: &std::path::Path| format!(r#"{{"command": "cat {}"}}"#, p.display());
    let edit = format!(
        r#"{{"file_path": "{}", "old_string": "8080", "new_string": "9090"}}"#,
        target.display()
    );
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_r0", "Read", &read(&target))]),
        standin::tools_reply(&[
            ("toolu_r1", "Bash", &cat(&fifos[0])),
            ("toolu_r2", "Bash", &cat(&fifos[1])),
            ("toolu_r3", "Bash", &cat(&fifos[2])),
            ("toolu_e1", "Edit", &edit),
        ]),
        standin::text_reply("Port changed."),
    ]);

    // Writers: a FIFO opened non-blocking for writing succeeds only while a
    // reader has it open. Hold every writer until all three readers are in
    // at once, then release them in reverse order.
    let fifos2 = fifos.clone();
    let target2 = target.clone();
    let helper = std::thread::spawn(move || {
        use std::os::unix::fs::OpenOptionsExt;
        let mut writers: Vec<Option<std::fs::File>> = vec![None, None, None];
        let began = std::time::Instant::now();
        while writers.iter().any(Option::is_none) && began.elapsed() < Duration::from_secs(20) {
            for (i, f) in fifos2.iter().enumerate() {
                if writers[i].is_none() {
                    writers[i] = std::fs::OpenOptions::new()
                        .write(true)
                        .custom_flags(libc::O_NONBLOCK)
                        .open(f)
                        .ok();
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let all_at_once = writers.iter().all(Option::is_some);
        let edit_waited = std::fs::read_to_string(&target2).unwrap() == "port = 8080\n";
        // If the reads were not concurrent, still let each one finish (a
        // blocking open waits for its reader) so tern is not left hanging.
        for (i, w) in writers.iter().enumerate() {
            if w.is_none() {
                let f = fifos2[i].clone();
                std::thread::spawn(move || std::fs::write(f, "late\n"));
            }
        }
        for (i, w) in writers.into_iter().enumerate().rev() {
            if let Some(mut w) = w {
                use std::io::Write;
                let _ = w.write_all(format!("content of fifo {}\n", i + 1).as_bytes());
            }
            std::thread::sleep(Duration::from_millis(30));
        }
        (all_at_once, edit_waited)
    });

    let out = run(tern(&api.url, &dir).args([
        "-p",
        "change the port",
        "--permission-mode",
        "acceptEdits",
        "--output-format",
        "json",
    ]));
    let (all_at_once, edit_waited) = helper.join().unwrap();
    assert!(
        all_at_once,
        "the three reads were never running at the same time"
    );
    assert!(
        edit_waited,
        "the Edit ran while reads were still in progress"
    );
    assert_ok(&out);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "port = 9090\n");

    let reqs = api.requests();
    assert_eq!(reqs.len(), 3);
    let results = tool_results(&reqs[2]);
    let ids: Vec<&str> = results
        .iter()
        .filter_map(|r| r.str_field("tool_use_id"))
        .collect();
    assert_eq!(ids, ["toolu_r1", "toolu_r2", "toolu_r3", "toolu_e1"]);
    for (i, r) in results.iter().take(3).enumerate() {
        assert!(
            r.str_field("content")
                .unwrap()
                .contains(&format!("content of fifo {}", i + 1))
        );
    }
    assert!(results[3].get("is_error").is_none(), "{:?}", results[3]);
}

/// A tool starts when its block closes, while the rest of the message is
/// still streaming: the stand-in holds `message_stop` until the tool's
/// side effect appears.
#[test]
fn tool_starts_before_message_stop() {
    let dir = scratch("early");
    let marker = dir.join("started");
    let mut steps = vec![standin::message_start("msg_early")];
    steps.extend(standin::tool_block(
        0,
        "toolu_touch",
        "Bash",
        &format!(r#"{{"command": "touch {}"}}"#, marker.display()),
        3,
    ));
    steps.push(Step::WaitForFile(marker.clone(), Duration::from_secs(20)));
    steps.extend(standin::text_block(1, "(still talking)"));
    steps.extend(standin::message_end("tool_use", 30));
    let api = StandIn::start(vec![Reply::Stream(steps), standin::text_reply("done")]);

    let out =
        run(tern(&api.url, &dir).args(["-p", "go", "--permission-mode", "bypassPermissions"]));
    assert_ok(&out);
    let log = api.log();
    let found = log
        .iter()
        .position(|(_, l)| l.starts_with("found "))
        .expect("marker never appeared");
    let stop = log
        .iter()
        .position(|(_, l)| l == "sent message_stop")
        .unwrap();
    assert!(found < stop, "{log:?}");
}

#[test]
fn rate_limit_and_overload_are_retried_with_backoff() {
    let api = StandIn::start(vec![
        Reply::Error {
            status: 429,
            retry_after: Some("0".into()),
            body: standin::error_json("rate_limit_error", "slow down"),
        },
        Reply::Error {
            status: 529,
            retry_after: None,
            body: standin::error_json("overloaded_error", "Overloaded"),
        },
        standin::text_reply("made it"),
    ]);
    let dir = scratch("retry");
    let out = run(tern(&api.url, &dir).env("TERN_RETRY_BASE_MS", "200").args([
        "-p",
        "hi",
        "--output-format",
        "stream-json",
    ]));
    assert_ok(&out);
    let l = lines(&out);
    let retries: Vec<&Value> = l
        .iter()
        .filter(|v| v.str_field("subtype") == Some("api_retry"))
        .collect();
    assert_eq!(retries.len(), 2);
    assert_eq!(
        retries[0].get("error_status").and_then(Value::as_i64),
        Some(429)
    );
    assert_eq!(
        retries[0].get("retry_delay_ms").and_then(Value::as_i64),
        Some(0),
        "retry-after: 0 honoured"
    );
    assert_eq!(
        retries[1].get("error_status").and_then(Value::as_i64),
        Some(529)
    );
    let delay = retries[1]
        .get("retry_delay_ms")
        .and_then(Value::as_i64)
        .unwrap();
    assert!(
        (200..=500).contains(&delay),
        "529 backoff {delay} ms (base 200, doubled, +25% jitter)"
    );
    let reqs = api.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[2].at - reqs[1].at >= Duration::from_millis(delay as u64));
    let r = last_result(&out);
    assert_eq!(r.str_field("result"), Some("made it"));
    assert_eq!(
        r.get("num_turns").and_then(Value::as_i64),
        Some(1),
        "a retry is not a turn"
    );
}

#[test]
fn client_errors_are_not_retried() {
    let api = StandIn::start(vec![Reply::Error {
        status: 400,
        retry_after: None,
        body: standin::error_json("invalid_request_error", "max_tokens: too large"),
    }]);
    let dir = scratch("400");
    let out = run(tern(&api.url, &dir).args(["-p", "hi"]));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("400") && err.contains("max_tokens: too large"),
        "{err}"
    );
    assert_eq!(api.requests().len(), 1);
}

/// The stream breaks inside the second tool's JSON: the first tool (complete)
/// is answered with its real result, the cut one never exists, the result is
/// a clean error, and nothing is retried once a block had completed.
#[test]
fn stream_cut_mid_tool_answers_every_tool_use() {
    let dir = scratch("cut");
    std::fs::write(dir.join("a.txt"), "alpha\n").unwrap();
    let mut steps = vec![standin::message_start("msg_cut")];
    steps.extend(standin::tool_block(
        0,
        "toolu_ok",
        "Read",
        r#"{"file_path": "a.txt"}"#,
        1,
    ));
    steps.push(standin::tool_start(1, "toolu_cut", "Bash"));
    steps.push(standin::json_delta(1, r#"{"comm"#));
    steps.push(Step::Cut);
    let api = StandIn::start(vec![Reply::Stream(steps)]);
    let out = run(tern(&api.url, &dir).args(["-p", "read", "--output-format", "stream-json"]));
    assert_eq!(out.status.code(), Some(1));
    let l = lines(&out);
    let content = first_content(&l, "assistant");
    let uses: Vec<&str> = content
        .iter()
        .filter(|b| b.str_field("type") == Some("tool_use"))
        .filter_map(|b| b.str_field("id"))
        .collect();
    assert_eq!(uses, ["toolu_ok"]);
    let results = all_tool_results(&l);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].str_field("tool_use_id"), Some("toolu_ok"));
    assert!(results[0].str_field("content").unwrap().contains("alpha"));
    let r = last_result(&out);
    assert_eq!(r.str_field("subtype"), Some("error_during_execution"));
    assert!(
        r.get("errors").unwrap().as_array().unwrap()[0]
            .as_str()
            .unwrap()
            .contains("stream")
    );
    assert_eq!(api.requests().len(), 1);
}

/// A stream that breaks before any block completed is just a failed
/// attempt: it is retried within the same turn.
#[test]
fn stream_cut_before_any_block_is_retried() {
    let api = StandIn::start(vec![
        Reply::Stream(vec![
            standin::message_start("m"),
            standin::tool_start(0, "t", "Read"),
            Step::Cut,
        ]),
        Reply::Stream(vec![
            standin::message_start("m2"),
            Step::Raw(b"event: content_block_st".to_vec()),
            Step::Cut,
        ]),
        standin::text_reply("second time lucky"),
    ]);
    let dir = scratch("cut-retry");
    let out = run(tern(&api.url, &dir).args(["-p", "hi", "--output-format", "json"]));
    assert_ok(&out);
    assert_eq!(
        last_result(&out).str_field("result"),
        Some("second time lucky")
    );
    assert_eq!(api.requests().len(), 3);
}

#[test]
fn malformed_tool_json_becomes_an_error_result_and_the_loop_goes_on() {
    let mut steps = vec![standin::message_start("m")];
    steps.push(standin::tool_start(0, "toolu_bad", "Read"));
    steps.push(standin::json_delta(0, r#"{"file_path": "a.txt""#));
    steps.push(standin::json_delta(0, r#", oops}"#));
    steps.push(standin::block_stop(0));
    steps.extend(standin::message_end("tool_use", 5));
    let api = StandIn::start(vec![
        Reply::Stream(steps),
        standin::tools_reply(&[("toolu_nope", "Teleport", "{}")]),
        standin::text_reply("recovered"),
    ]);
    let dir = scratch("badjson");
    let out = run(tern(&api.url, &dir).args(["-p", "hi", "--output-format", "json"]));
    assert_ok(&out);
    let reqs = api.requests();
    assert_eq!(reqs.len(), 3);
    let bad = &tool_results(&reqs[1])[0];
    assert_eq!(bad.get("is_error").and_then(Value::as_bool), Some(true));
    assert!(
        bad.str_field("content").unwrap().contains("not valid JSON"),
        "{bad:?}"
    );
    // The malformed call went back to the API as a valid block with {} input.
    let msgs = body(&reqs[1])
        .get("messages")
        .unwrap()
        .as_array()
        .unwrap()
        .clone();
    let sent = &msgs[1].get("content").unwrap().as_array().unwrap()[0];
    assert_eq!(sent.get("input").unwrap().to_json(), "{}");
    let unknown = &tool_results(&reqs[2])[0];
    assert!(
        unknown
            .str_field("content")
            .unwrap()
            .contains("No such tool")
    );
    assert_eq!(
        last_result(&out).get("num_turns").and_then(Value::as_i64),
        Some(3)
    );
}

/// `--max-turns 1`: the one allowed turn's tools still run, then the run
/// ends with error_max_turns without asking the model again.
#[test]
fn max_turns_runs_the_last_tools_then_stops() {
    let dir = scratch("maxturns");
    let made = dir.join("made.txt");
    let api = StandIn::start(vec![
        standin::tools_reply(&[(
            "toolu_w",
            "Write",
            &format!(r#"{{"file_path": "{}", "content": "x"}}"#, made.display()),
        )]),
        standin::text_reply("never asked"),
    ]);
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "go",
        "--max-turns",
        "1",
        "--permission-mode",
        "acceptEdits",
        "--output-format",
        "json",
    ]));
    assert_eq!(out.status.code(), Some(1));
    let r = last_result(&out);
    assert_eq!(r.str_field("subtype"), Some("error_max_turns"));
    assert_eq!(r.get("is_error").and_then(Value::as_bool), Some(true));
    assert_eq!(r.get("num_turns").and_then(Value::as_i64), Some(1));
    assert!(made.exists(), "the turn's tool did not run");
    assert_eq!(api.requests().len(), 1);
}

#[test]
fn thinking_blocks_go_back_unchanged() {
    let mut steps = vec![standin::message_start("m")];
    steps.push(standin::ev("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#.into()));
    steps.push(standin::ev("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me look."}}"#.into()));
    steps.push(standin::ev("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}"#.into()));
    steps.push(standin::block_stop(0));
    steps.extend(standin::tool_block(
        1,
        "toolu_g",
        "Glob",
        r#"{"pattern": "*.nothing"}"#,
        9,
    ));
    steps.extend(standin::message_end("tool_use", 5));
    let api = StandIn::start(vec![Reply::Stream(steps), standin::text_reply("ok")]);
    let dir = scratch("thinking");
    let out = run(tern(&api.url, &dir).args(["-p", "x"]));
    assert_ok(&out);
    let b = body(&api.requests()[1]);
    let assistant = &b.get("messages").unwrap().as_array().unwrap()[1];
    let thinking = &assistant.get("content").unwrap().as_array().unwrap()[0];
    assert_eq!(
        thinking.to_json(),
        r#"{"type":"thinking","thinking":"Let me look.","signature":"EqQBCgIYAhIM"}"#
    );
}

/// SIGINT while a tool runs: the tool's whole process group is killed,
/// every open tool_use is answered as interrupted, the result says so and
/// the exit status is 130.
#[test]
fn sigint_mid_tool_interrupts_cleanly() {
    interrupt_mid_tool(libc::SIGINT, 130);
}

#[test]
fn sigterm_mid_tool_interrupts_cleanly() {
    interrupt_mid_tool(libc::SIGTERM, 143);
}

fn interrupt_mid_tool(signal: i32, expected_status: i32) {
    let dir = scratch("signal");
    let pidfile = dir.join("pid");
    let cmd = format!(
        r#"{{"command": "sleep 60 & echo $! > {}; wait"}}"#,
        pidfile.display()
    );
    let api = StandIn::start(vec![standin::tools_reply(&[
        ("toolu_sleep", "Bash", &cmd),
        ("toolu_after", "Bash", r#"{"command": "touch never"}"#),
    ])]);
    let child = tern(&api.url, &dir)
        .args([
            "-p",
            "wait",
            "--permission-mode",
            "bypassPermissions",
            "--output-format",
            "stream-json",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let began = std::time::Instant::now();
    while !pidfile.exists() || std::fs::read_to_string(&pidfile).unwrap().trim().is_empty() {
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "tool never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let sleeper: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    unsafe { libc::kill(child.id() as i32, signal) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(expected_status));
    let l = lines(&out);
    let results = all_tool_results(&l);
    assert_eq!(results.len(), 2);
    for r in &results {
        assert_eq!(r.get("is_error").and_then(Value::as_bool), Some(true));
        assert!(
            r.str_field("content").unwrap().contains("Interrupted"),
            "{r:?}"
        );
    }
    assert!(
        !dir.join("never").exists(),
        "a tool started after the interrupt"
    );
    let r = last_result(&out);
    assert_eq!(r.str_field("subtype"), Some("error_during_execution"));
    // SIGKILL lands asynchronously: give the kernel a moment on a busy box.
    let alive = || {
        std::fs::read_to_string(format!("/proc/{sleeper}/stat"))
            .map(|s| !s.contains(") Z"))
            .unwrap_or(false)
    };
    let began = std::time::Instant::now();
    while alive() && began.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!alive(), "the tool's child process survived the interrupt");
}

/// Regression (issue 16): an interrupt (one signal, or a second one that
/// exits at once) left the process groups of running hooks behind: the
/// hook's future was dropped before its group was killed. A PreToolUse
/// hook that never finishes is interrupted twice; its whole group must go
/// down with tern.
#[test]
fn interrupting_a_hook_kills_its_process_group() {
    let dir = scratch("signal-twice");
    let pidfile = dir.join("hook.pid");
    std::fs::create_dir_all(dir.join(".tern")).unwrap();
    let hook = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    std::fs::write(
        dir.join(".tern/settings.json"),
        tern::obj! { "hooks" => tern::obj! { "PreToolUse" => vec![tern::obj! {
            "matcher" => "Bash",
            "hooks" => vec![tern::obj! { "type" => "command", "command" => hook.as_str() }],
        }] } }
        .to_json(),
    )
    .unwrap();
    let api = StandIn::start(vec![standin::tools_reply(&[(
        "toolu_x",
        "Bash",
        r#"{"command": "true"}"#,
    )])]);
    let child = trusted(&api.url, &dir)
        .args(["-p", "go", "--permission-mode", "bypassPermissions"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let began = std::time::Instant::now();
    while !pidfile.exists() || std::fs::read_to_string(&pidfile).unwrap().trim().is_empty() {
        assert!(began.elapsed() < Duration::from_secs(20), "hook never ran");
        std::thread::sleep(Duration::from_millis(10));
    }
    let sleeper: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let pid = child.id() as i32;
    unsafe { libc::kill(pid, libc::SIGTERM) };
    std::thread::sleep(Duration::from_millis(200));
    unsafe { libc::kill(pid, libc::SIGTERM) };
    // A tern that does not leave fails the test instead of hanging it.
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(30));
        unsafe { libc::kill(pid, libc::SIGKILL) };
    });
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(143),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let alive = || {
        std::fs::read_to_string(format!("/proc/{sleeper}/stat"))
            .map(|s| !s.contains(") Z"))
            .unwrap_or(false)
    };
    let began = std::time::Instant::now();
    while alive() && began.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let survived = alive();
    if survived {
        unsafe { libc::kill(sleeper, libc::SIGKILL) };
    }
    assert!(!survived, "the hook's process outlived tern");
}

/// `--json-schema` with what pydantic writes (a `$ref` into `$defs`, a
/// nullable field, bounds): a call that breaks a nested bound goes back
/// to the model naming the field, and the corrected call is the result.
#[test]
fn a_pydantic_schema_is_held_to_its_references_and_bounds() {
    let dir = scratch("json-schema-pydantic");
    let schema = r##"{"$defs":{"Item":{"properties":{"name":{"type":"string","minLength":1},
        "qty":{"type":"integer","minimum":1}},"required":["name","qty"],"type":"object"}},
        "properties":{"items":{"items":{"$ref":"#/$defs/Item"},"type":"array","minItems":1},
        "note":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null}},
        "required":["items"],"title":"Order","type":"object"}"##;
    let api = StandIn::start(vec![
        standin::tools_reply(&[(
            "toolu_s1",
            "StructuredOutput",
            r#"{"items": [{"name": "bolt", "qty": 0}], "note": null}"#,
        )]),
        standin::tools_reply(&[(
            "toolu_s2",
            "StructuredOutput",
            r#"{"items": [{"name": "bolt", "qty": 3}], "note": null}"#,
        )]),
        standin::text_reply("never asked for"),
    ]);
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "order bolts",
        "--json-schema",
        schema,
        "--output-format",
        "json",
    ]));
    assert_ok(&out);
    let reqs = api.requests();
    assert_eq!(reqs.len(), 2);
    let refused = &tool_results(&reqs[1])[0];
    assert_eq!(refused.get("is_error").and_then(Value::as_bool), Some(true));
    assert!(
        refused
            .to_json()
            .contains("input.items[0].qty must be at least 1"),
        "{refused}"
    );
    let result = last_result(&out);
    assert_eq!(
        result
            .get("structured_output")
            .map(Value::to_json)
            .as_deref(),
        Some(r#"{"items":[{"name":"bolt","qty":3}],"note":null}"#),
        "{result}"
    );
}

/// The scratch folder is made at the first spill, not at start: a run
/// whose output fits inline leaves no `tern-*` folder in TMPDIR; a
/// command that prints more than a result holds gets the whole of it
/// kept there, in a private folder, for the model to read.
#[test]
fn the_scratch_folder_is_made_only_when_output_is_spilled() {
    let dir = scratch("spill");
    let folders = |dir: &std::path::Path| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("tern-"))
            .map(|e| e.path())
            .collect()
    };
    let go = |command: &str| {
        let api = StandIn::start(vec![
            standin::tools_reply(&[("toolu_1", "Bash", &format!(r#"{{"command": "{command}"}}"#))]),
            standin::text_reply("done"),
        ]);
        let out =
            run(tern(&api.url, &dir).args(["-p", "go", "--permission-mode", "bypassPermissions"]));
        assert_ok(&out);
        tool_results(&api.requests()[1])[0].to_json()
    };
    let small = go("echo small");
    assert!(small.contains("small"), "{small}");
    assert!(
        folders(&dir).is_empty(),
        "made for nothing: {:?}",
        folders(&dir)
    );

    let big = go("seq 1 300000");
    let made = folders(&dir);
    assert_eq!(made.len(), 1, "{made:?}");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&made[0]).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o700);
    let at = big.find("Full output saved to: ").expect("no spill note") + 22;
    let path = &big[at..at + big[at..].find('\\').unwrap()];
    assert!(path.starts_with(made[0].to_str().unwrap()), "{path}");
    let kept = std::fs::read_to_string(path).unwrap();
    assert_eq!(kept.lines().count(), 300_000);
    assert_eq!(kept.lines().last(), Some("300000"));
}
