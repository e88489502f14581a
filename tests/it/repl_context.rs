//! The REPL's context and what it hands back, through the real binary and
//! the scripted stand-in: `haiku()` asks the small model once (schema
//! checked, answered from the log on resume); inner calls are kept in the
//! transcript as virtual tool_use/tool_result pairs and never sent to the
//! model; a compaction ends the context (and says so); a fork rebuilds
//! its own from the parent's log; the VM's
//! memory is bounded; images and PDFs from inner calls reach the model,
//! at most 8 and 4.

#![cfg(feature = "repl")]

use crate::support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use support::repl::*;
use support::standin::{self, StandIn};
use support::*;
use tern::json::{self, Value};
use tern::obj;

/// Every line of the one transcript tern wrote for `dir`.
fn transcript_lines(dir: &Path) -> Vec<Value> {
    let root = home_of(dir).join(".local/share/tern/projects");
    let mut files: Vec<PathBuf> = Vec::new();
    for project in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(project.path()).unwrap().flatten() {
            if f.path().extension().is_some_and(|e| e == "jsonl") {
                files.push(f.path());
            }
        }
    }
    assert_eq!(files.len(), 1, "{files:?}");
    std::fs::read_to_string(&files[0])
        .unwrap()
        .lines()
        .map(|l| json::parse(l).unwrap())
        .collect()
}

fn blocks_of<'a>(line: &'a Value, kind: &str) -> Vec<&'a Value> {
    line.get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .map(|b| {
            b.iter()
                .filter(|x| x.str_field("type") == Some(kind))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn haiku_asks_the_small_model_once_checks_the_schema_and_replays_from_the_log() {
    if emulated("haiku_asks_the_small_model_once_checks_the_schema_and_replays_from_the_log") {
        return;
    }
    let dir = scratch("repl-haiku");
    let block =
        |id: &str, c: &str| standin::tools_reply(&[(id, "REPL", &obj! { "code" => c }.to_json())]);
    let api = StandIn::start(vec![
        block(
            "toolu_1",
            "var pick = haiku('Pick a number', {type: 'object', properties: {n: {type: 'integer'}}, required: ['n']});\npick.n * 2",
        ),
        // The small model's answer, in a code fence.
        standin::text_reply("```json\n{\"n\": 3}\n```"),
        block("toolu_2", "haiku('Say hi')"),
        standin::text_reply("hello there"),
        block(
            "toolu_3",
            "haiku('Another', {type: 'object', properties: {n: {type: 'integer'}}, required: ['n']})",
        ),
        standin::text_reply("I think the answer is three."),
        block(
            "toolu_4",
            "haiku('x', {type: 'object', properties: {n: {type: 'text'}}})",
        ),
        standin::text_reply("done"),
    ]);
    let out = run(tern(&api.url, &dir)
        .env("TERN_REPL", "1")
        .env("ANTHROPIC_SMALL_FAST_MODEL", "small-one")
        .args(["-p", "go", "--output-format", "json"]));
    assert_ok(&out);
    let reqs = api.requests();
    // Three samples, none for the schema tern refused itself.
    assert_eq!(reqs.len(), 8, "{} requests", reqs.len());
    for i in [1, 3, 5] {
        let b = body(&reqs[i]);
        assert_eq!(b.str_field("model"), Some("small-one"), "request {i}");
        let tools = b.get("tools").and_then(Value::as_array).map_or(0, Vec::len);
        assert_eq!(tools, 0, "a sample offers no tools");
        assert_eq!(
            b.get("messages").and_then(Value::as_array).unwrap().len(),
            1
        );
    }
    assert!(reqs[1].body.contains("Pick a number") && reqs[1].body.contains("integer"));
    let result = |i: usize| tool_results(&reqs[i])[0].clone();
    assert_eq!(text(&result(2)), "result: 6");
    assert_eq!(text(&result(4)), "result: hello there");
    let r = result(6);
    assert!(is_error(&r), "{}", text(&r));
    assert!(
        text(&r).contains("did not answer with JSON"),
        "{}",
        text(&r)
    );
    let r = tool_results(&reqs[7])[0].clone();
    assert!(
        is_error(&r) && text(&r).contains("not a JSON Schema type"),
        "{}",
        text(&r)
    );
    // Spent like any request: the small model is in the usage.
    let usage = last_result(&out);
    assert!(
        usage
            .get("modelUsage")
            .and_then(|m| m.get("small-one"))
            .is_some(),
        "{usage}"
    );

    // Resumed: the block that sampled is replayed with the logged answer,
    // and nothing is asked of the small model again.
    let api2 = StandIn::start(vec![
        block("toolu_5", "pick.n"),
        standin::text_reply("done"),
    ]);
    let out = run(tern(&api2.url, &dir)
        .env("TERN_REPL", "1")
        .env("ANTHROPIC_SMALL_FAST_MODEL", "small-one")
        .args(["-c", "-p", "again", "--output-format", "json"]));
    assert_ok(&out);
    let reqs = api2.requests();
    assert_eq!(reqs.len(), 2, "no sample on replay");
    let t = text(&tool_results(&reqs[1])[0]);
    assert!(t.contains("rebuilt") && t.ends_with("result: 3"), "{t}");
}

#[test]
fn inner_calls_are_virtual_pairs_in_the_transcript_and_not_sent_to_the_model() {
    if emulated("inner_calls_are_virtual_pairs_in_the_transcript_and_not_sent_to_the_model") {
        return;
    }
    let dir = scratch("repl-virtual");
    std::fs::write(dir.join("f.txt"), "content of f\n").unwrap();
    let r = session(
        &dir,
        &[code(
            "sh('echo one'); cat('f.txt'); try { Read({}) } catch (e) {}; 'ok'",
        )],
        &[],
    );
    assert_eq!(text(&r[0]), "result: ok");
    let lines = transcript_lines(&dir);
    let virtual_lines: Vec<&Value> = lines
        .iter()
        .filter(|l| l.get("isVirtual").and_then(Value::as_bool) == Some(true))
        .collect();
    assert_eq!(virtual_lines.len(), 2, "one pair");
    let (calls, results) = (virtual_lines[0], virtual_lines[1]);
    assert_eq!(calls.str_field("type"), Some("assistant"));
    assert_eq!(results.str_field("type"), Some("user"));
    // Chained where the block ran: after the REPL's own result.
    let outer_result = lines
        .iter()
        .rposition(|l| !blocks_of(l, "tool_result").is_empty() && l.get("isVirtual").is_none())
        .unwrap();
    assert_eq!(
        calls.str_field("parentUuid"),
        lines[outer_result].str_field("uuid")
    );
    assert_eq!(results.str_field("parentUuid"), calls.str_field("uuid"));
    let uses = blocks_of(calls, "tool_use");
    let names: Vec<&str> = uses.iter().filter_map(|u| u.str_field("name")).collect();
    assert_eq!(names, ["Bash", "Read", "Read"]);
    assert_eq!(
        uses[0].get("input").and_then(|i| i.str_field("command")),
        Some("echo one")
    );
    let answers = blocks_of(results, "tool_result");
    assert_eq!(answers.len(), 3);
    for (u, a) in uses.iter().zip(&answers) {
        assert_eq!(u.str_field("id"), a.str_field("tool_use_id"));
        assert!(u.str_field("id").unwrap().starts_with("toolu_inner_"));
    }
    assert!(answers[0].str_field("content").unwrap().contains("one"));
    assert!(
        answers[1]
            .str_field("content")
            .unwrap()
            .contains("content of f")
    );
    assert_eq!(
        answers[2].get("is_error").and_then(Value::as_bool),
        Some(true)
    );

    // Neither this session's requests nor a resumed one's carry them.
    let api = StandIn::start(vec![standin::text_reply("fine")]);
    assert_ok(&run(tern(&api.url, &dir)
        .env("TERN_REPL", "1")
        .args(["-c", "-p", "and now"])));
    let resumed = &api.requests()[0];
    assert!(
        resumed.body.contains("result: ok"),
        "the REPL's result is there"
    );
    assert!(!resumed.body.contains("toolu_inner_"), "{}", resumed.body);
}

/// A multi-turn session over stream-json: each prompt a turn.
fn talk(api: &StandIn, dir: &Path, prompts: &[&str]) -> std::process::Output {
    let mut child = tern(&api.url, dir)
        .env("TERN_REPL", "1")
        .args([
            "--output-format",
            "stream-json",
            "--verbose",
            "--input-format",
            "stream-json",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for p in prompts {
        let line = obj! {
            "type" => "user",
            "message" => obj! { "role" => "user", "content" => *p },
        };
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[test]
fn a_compaction_ends_the_context_and_says_so() {
    if emulated("a_compaction_ends_the_context_and_says_so") {
        return;
    }
    let dir = scratch("repl-boundary");
    let block =
        |id: &str, c: &str| standin::tools_reply(&[(id, "REPL", &obj! { "code" => c }.to_json())]);
    let api = StandIn::start(vec![
        block("toolu_1", "var keep = 41; keep + 1"),
        standin::text_reply("kept"),
        // "/compact" is answered by the summary below.
        block("toolu_2", "typeof keep"),
        standin::text_reply("after compaction"),
    ]);
    api.set_responder(Box::new(|req| {
        req.body.contains("[tern: compaction request]").then(|| {
            standin::text_reply("<summary>\n1. Primary request: keep a number\n</summary>")
        })
    }));
    let out = talk(&api, &dir, &["one", "/compact", "two"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Vec<Value> = api
        .requests()
        .iter()
        .filter(|r| !r.body.contains("[tern: compaction request]"))
        .flat_map(tool_results)
        .collect();
    let texts: Vec<String> = results.iter().map(text).collect();
    let find = |id: &str| {
        results
            .iter()
            .position(|r| r.str_field("tool_use_id") == Some(id))
            .map(|i| texts[i].clone())
            .unwrap_or_else(|| panic!("no result for {id}: {texts:?}"))
    };
    assert_eq!(find("toolu_1"), "result: 42");
    let t = find("toolu_2");
    assert!(
        t.contains("fresh REPL context")
            && t.contains("compacted")
            && t.ends_with("result: undefined"),
        "{t}"
    );
}

#[test]
fn a_script_that_eats_memory_ends_its_own_vm_not_the_session() {
    if emulated("a_script_that_eats_memory_ends_its_own_vm_not_the_session") {
        return;
    }
    let dir = scratch("repl-memory");
    let r = session_with(
        &dir,
        &[
            // 16 MiB strings, each a copy, until the limit refuses one.
            code(
                "var s = 'y'; for (let i = 0; i < 24; i++) s += s;\nvar hog = []; for (;;) hog.push(s + hog.length)",
            ),
            code("'still here: ' + typeof hog"),
        ],
        &[],
        &[("TERN_REPL_MEMORY_MB", "256")],
    );
    assert!(is_error(&r[0]), "{}", text(&r[0]));
    assert!(
        text(&r[0]).contains("ran out of memory") && text(&r[0]).contains("256 MiB"),
        "{}",
        text(&r[0])
    );
    let t = text(&r[1]);
    assert!(
        t.contains("fresh REPL context") && t.ends_with("result: still here: undefined"),
        "{t}"
    );
}

#[test]
fn images_and_pdfs_from_inner_calls_reach_the_model_at_most_8_and_4() {
    if emulated("images_and_pdfs_from_inner_calls_reach_the_model_at_most_8_and_4") {
        return;
    }
    let dir = scratch("repl-media");
    let png = support::samples::image("png", 40, 30);
    for i in 0..10 {
        std::fs::write(dir.join(format!("p{i}.png")), &png).unwrap();
    }
    std::fs::write(dir.join("doc.pdf"), support::samples::pdf(1, false)).unwrap();
    let script = format!(
        "const d = {:?};\n\
         for (let i = 0; i < 10; i++) Read({{file_path: d + '/p' + i + '.png'}});\n\
         for (let i = 0; i < 5; i++) Read({{file_path: d + '/doc.pdf'}});\n'read'",
        dir.display().to_string()
    );
    let r = session(&dir, &[code(&script)], &[]);
    assert!(!is_error(&r[0]), "{}", text(&r[0]));
    let blocks = r[0].get("content").and_then(Value::as_array).unwrap();
    let count = |kind: &str| {
        blocks
            .iter()
            .filter(|b| b.str_field("type") == Some(kind))
            .count()
    };
    assert_eq!(count("image"), 8);
    assert_eq!(count("document"), 4);
    let t = text(&r[0]);
    assert!(
        t.contains("3 image(s) or PDF(s)") && t.contains("result: read"),
        "{t}"
    );
}

/// A fork (`--resume ID --fork-session`) rebuilds the REPL's state from
/// the parent's log into a VM of its own: the variables are back, no
/// logged call runs again, and what the fork does stays in its own log
/// (the parent resumed later is as it was).
#[test]
fn a_fork_rebuilds_from_the_parents_log_and_leaves_it_alone() {
    if emulated("a_fork_rebuilds_from_the_parents_log_and_leaves_it_alone") {
        return;
    }
    let dir = scratch("repl-fork");
    let parent = "0b7e4a52-9f1c-4d8e-a3b2-5c6d7e8f9012";
    let marker = dir.join("marker");
    let lines = || std::fs::read_to_string(&marker).unwrap_or_default();
    // One run of tern with one REPL block; its result and tern's stdout.
    // Each run's block has an id of its own: the log is matched by id.
    let turn = |id: &str, args: &[&str], c: &str| {
        let api = StandIn::start(vec![
            standin::tools_reply(&[(id, "REPL", &obj! { "code" => c }.to_json())]),
            standin::text_reply("done"),
        ]);
        let out = run(tern(&api.url, &dir)
            .env("TERN_REPL", "1")
            .args(["-p", "go", "--permission-mode", "bypassPermissions"])
            .args(args));
        assert_ok(&out);
        let r = tool_results(&api.requests()[1]);
        assert!(!is_error(&r[0]), "{}", text(&r[0]));
        (
            text(&r[0]),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let _ = turn(
        "toolu_p",
        &["--session-id", parent],
        "var n = 1; sh('echo parent >> marker'); n",
    );
    assert_eq!(lines(), "parent\n");
    let (t, stdout) = turn(
        "toolu_f",
        &[
            "--resume",
            parent,
            "--fork-session",
            "--output-format",
            "json",
        ],
        "n += 10; sh('echo fork >> marker'); n",
    );
    let fork = json::parse(stdout.trim())
        .unwrap()
        .str_field("session_id")
        .unwrap()
        .to_string();
    assert_ne!(fork, parent);
    assert!(t.contains("rebuilt from the 1 earlier block(s)"), "{t}");
    assert!(t.ends_with("result: 11"), "{t}");
    // The parent's Bash call was replayed, not run again.
    assert_eq!(lines(), "parent\nfork\n");

    // The fork resumed: both blocks rebuilt, from its own log.
    let (t, _) = turn("toolu_g", &["--resume", &fork], "n");
    assert!(
        t.contains("rebuilt from the 2 earlier block(s)") && t.ends_with("result: 11"),
        "{t}"
    );

    // The parent, resumed, knows nothing of the fork's block.
    let (t, _) = turn("toolu_h", &["--resume", parent], "n");
    assert!(
        t.contains("rebuilt from the 1 earlier block(s)") && t.ends_with("result: 1"),
        "{t}"
    );
    assert_eq!(lines(), "parent\nfork\n", "nothing ran twice");
}

/// One context per key: a sub-agent's REPL is its own VM (it does not see
/// the parent's variables, and what it sets does not leak back).
#[test]
fn a_sub_agent_has_a_context_of_its_own() {
    if emulated("a_sub_agent_has_a_context_of_its_own") {
        return;
    }
    let dir = scratch("repl-child");
    let block =
        |id: &str, c: &str| standin::tools_reply(&[(id, "REPL", &obj! { "code" => c }.to_json())]);
    let api = StandIn::start(vec![
        block("toolu_p1", "var who = 'parent'; who"),
        standin::tools_reply(&[(
            "toolu_agent",
            "Agent",
            r#"{"description": "look around", "prompt": "CHILD: look"}"#,
        )]),
        block("toolu_c1", "var seen = typeof who; var who = 'child'; seen"),
        standin::text_reply("The child looked."),
        block("toolu_p2", "who"),
        standin::text_reply("done"),
    ]);
    let out = run(tern(&api.url, &dir).env("TERN_REPL", "1").args([
        "-p",
        "go",
        "--permission-mode",
        "bypassPermissions",
    ]));
    assert_ok(&out);
    let reqs = api.requests();
    assert_eq!(reqs.len(), 6);
    assert!(reqs[2].body.contains("CHILD: look"), "the child's request");
    let result = |i: usize, id: &str| {
        let r = tool_results(&reqs[i]);
        let r = r
            .iter()
            .find(|r| r.str_field("tool_use_id") == Some(id))
            .unwrap_or_else(|| panic!("no result for {id} in request {i}"));
        text(r)
    };
    assert_eq!(
        result(3, "toolu_c1"),
        "result: undefined",
        "the child saw the parent's VM"
    );
    assert_eq!(
        result(5, "toolu_p2"),
        "result: parent",
        "the child's variable leaked back"
    );
}

/// The attack the cap is for, shown both ways: the same bounded script
/// (20 copies of a 16 MiB string, 320 MiB) runs to its end under a cap
/// above it and is stopped under one below it, so it is the cap that
/// stops it and nothing else.
#[test]
fn the_memory_cap_is_what_stops_a_hungry_script() {
    if emulated("the_memory_cap_is_what_stops_a_hungry_script") {
        return;
    }
    let hungry = code(
        "var s = 'y'; for (let i = 0; i < 24; i++) s += s;\nvar hog = []; for (let i = 0; i < 20; i++) hog.push(s + i); hog.length",
    );
    let dir = scratch("repl-memory-both");
    let roomy = session_with(
        &dir,
        std::slice::from_ref(&hungry),
        &[],
        &[("TERN_REPL_MEMORY_MB", "2048")],
    );
    assert!(!is_error(&roomy[0]), "{}", text(&roomy[0]));
    assert!(
        text(&roomy[0]).ends_with("result: 20"),
        "{}",
        text(&roomy[0])
    );
    let capped = session_with(&dir, &[hungry], &[], &[("TERN_REPL_MEMORY_MB", "256")]);
    assert!(is_error(&capped[0]), "{}", text(&capped[0]));
    assert!(
        text(&capped[0]).contains("ran out of memory"),
        "{}",
        text(&capped[0])
    );
}

/// A sub-agent limited to `tools: REPL` cannot reach Bash through the
/// REPL's `sh()`: inner calls go through the child's own registry and
/// policy. Shown both ways: a child whose definition also names Bash
/// does write the file.
#[test]
fn a_sub_agents_repl_reaches_only_the_tools_its_definition_names() {
    if emulated("a_sub_agents_repl_reaches_only_the_tools_its_definition_names") {
        return;
    }
    for (tools, written) in [("REPL", false), ("REPL, Bash", true)] {
        let dir = scratch("repl-child-tools");
        std::fs::create_dir_all(dir.join(".tern/agents")).unwrap();
        std::fs::write(
            dir.join(".tern/agents/scripter.md"),
            format!("---\nname: scripter\ndescription: scripts\ntools: {tools}\n---\nScript.\n"),
        )
        .unwrap();
        let api = StandIn::start(vec![
            standin::tools_reply(&[(
                "toolu_agent",
                "Agent",
                r#"{"description": "script", "prompt": "go", "subagent_type": "scripter"}"#,
            )]),
            standin::tools_reply(&[(
                "toolu_c",
                "REPL",
                &obj! { "code" => "sh('touch escaped')" }.to_json(),
            )]),
            standin::text_reply("child done"),
            standin::text_reply("done"),
        ]);
        let out = run(tern(&api.url, &dir).env("TERN_REPL", "1").args([
            "-p",
            "go",
            "--permission-mode",
            "bypassPermissions",
        ]));
        assert_ok(&out);
        assert_eq!(
            dir.join("escaped").exists(),
            written,
            "tools: {tools}: {}",
            api.requests()
                .get(2)
                .map(|r| r.body.clone())
                .unwrap_or_default()
        );
    }
}
