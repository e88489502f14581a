//! The REPL tool through the real binary and the scripted stand-in: it is
//! offered only when turned on; variables live on between calls; every
//! inner call goes through the permission pipeline (each protection shown
//! both ways: the effect happens where nothing stops it, and does not
//! where the pipeline refuses); the VM is sealed; the script budget stops
//! a runaway script but stands still while an inner call runs; a poisoned
//! context is replaced and the model is told.

#![cfg(feature = "repl")]

use crate::support;

use std::path::Path;

use support::repl::*;
use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;
use tern::obj;

fn tool_names(api: &StandIn) -> Vec<String> {
    body(&api.requests()[0])
        .get("tools")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                .filter_map(|x| x.str_field("name").map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_repl_is_offered_only_when_turned_on() {
    let dir = scratch("repl-gate");
    let offered = |env: &[(&str, &str)], settings: Option<&str>| {
        if let Some(s) = settings {
            std::fs::create_dir_all(dir.join(".tern")).unwrap();
            std::fs::write(dir.join(".tern/settings.json"), s).unwrap();
        } else {
            let _ = std::fs::remove_file(dir.join(".tern/settings.json"));
        }
        let api = StandIn::start(vec![standin::text_reply("hi")]);
        let mut cmd = trusted(&api.url, &dir);
        cmd.args(["-p", "hi"]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        assert_ok(&run(&mut cmd));
        tool_names(&api).iter().any(|n| n == "REPL")
    };
    assert!(!offered(&[], None));
    assert!(offered(&[("TERN_REPL", "1")], None));
    assert!(offered(&[("CLAUDE_CODE_REPL", "true")], None));
    assert!(offered(&[], Some(r#"{"repl": {"enabled": true}}"#)));
    // An explicit false wins over every yes.
    assert!(!offered(
        &[("TERN_REPL", "1"), ("CLAUDE_CODE_REPL", "false")],
        Some(r#"{"repl": {"enabled": true}}"#)
    ));
    assert!(!offered(
        &[("TERN_REPL", "1")],
        Some(r#"{"repl": {"enabled": false}}"#)
    ));
}

#[test]
fn variables_live_between_calls_and_inner_calls_return_text() {
    if emulated("variables_live_between_calls_and_inner_calls_return_text") {
        return;
    }
    let dir = scratch("repl-vars");
    std::fs::write(dir.join("notes.txt"), "alpha\nbeta\n").unwrap();
    let r = session(
        &dir,
        &[
            code(
                "let first = cat('notes.txt').split('\\n')[0];\nconst n = sh('echo hi').trim();\nfirst + ' ' + n",
            ),
            // Declared again, and the earlier values are still there.
            code("const n2 = n + '!';\nlet first = first.toUpperCase();\n[first, n2, gl('*.txt')]"),
            code("o.files = rgf('beta'); o.count = o.files.length; void 0"),
        ],
        &[],
    );
    assert!(!is_error(&r[0]), "{}", text(&r[0]));
    assert!(text(&r[0]).contains("result: alpha hi"), "{}", text(&r[0]));
    assert!(!is_error(&r[1]), "{}", text(&r[1]));
    let t = text(&r[1]);
    assert!(t.contains("\"ALPHA\"") && t.contains("\"hi!\""), "{t}");
    assert!(t.contains("notes.txt"), "{t}");
    // With no value of its own, a block answers `o`.
    let t = text(&r[2]);
    assert!(t.contains("\"count\": 1") && t.contains("notes.txt"), "{t}");
}

#[test]
fn a_refused_inner_call_has_no_effect() {
    if emulated("a_refused_inner_call_has_no_effect") {
        return;
    }
    let block = || {
        code(
            "let out = [];\ntry { put('made.txt', 'data') } catch (e) { out.push('put: ' + e.message) }\ntry { sh('touch ran') } catch (e) { out.push('sh: ' + e.message) }\nout",
        )
    };
    // Unprotected (bypass): both effects happen.
    let open = scratch("repl-refused-open");
    let r = session(
        &open,
        &[block()],
        &["--permission-mode", "bypassPermissions"],
    );
    assert!(!is_error(&r[0]), "{}", text(&r[0]));
    assert!(open.join("made.txt").exists() && open.join("ran").exists());
    // Default mode, nobody to ask: both inner calls are refused, nothing
    // is written or run, and the script sees the refusals.
    let dir = scratch("repl-refused");
    let r = session(&dir, &[block()], &[]);
    let t = text(&r[0]);
    assert!(t.contains("put: Write:") && t.contains("sh: Bash:"), "{t}");
    assert!(!dir.join("made.txt").exists(), "the refused Write wrote");
    assert!(!dir.join("ran").exists(), "the refused Bash ran");
    // A deny rule holds inside the REPL as well, even in bypass mode.
    let denied = scratch("repl-denied");
    let r = session(
        &denied,
        &[code("sh('touch ran')")],
        &[
            "--permission-mode",
            "bypassPermissions",
            "--disallowedTools",
            "Bash(touch:*)",
        ],
    );
    assert!(is_error(&r[0]), "{}", text(&r[0]));
    assert!(!denied.join("ran").exists());
}

#[test]
fn the_vm_is_sealed() {
    if emulated("the_vm_is_sealed") {
        return;
    }
    let dir = scratch("repl-sealed");
    let r = session(
        &dir,
        &[
            code("import fs from 'fs'"),
            code("const fs = require('fs')"),
            code("import('fs')"),
            // What a sealed VM does not have.
            code(
                "[typeof process, typeof require, typeof Deno, typeof WebAssembly, typeof fetch].join(',')",
            ),
            // Mentioning the words in a string is fine.
            code("'import x; require(y)'.length"),
        ],
        &[],
    );
    for refused in &r[..3] {
        assert!(is_error(refused), "{}", text(refused));
        assert!(
            text(refused).contains("sealed REPL VM"),
            "{}",
            text(refused)
        );
    }
    assert!(
        text(&r[3]).contains("result: undefined,undefined,undefined,undefined,undefined"),
        "{}",
        text(&r[3])
    );
    assert!(text(&r[4]).contains("result: 20"), "{}", text(&r[4]));
}

#[test]
fn the_budget_stops_a_runaway_script_but_not_a_slow_tool() {
    if emulated("the_budget_stops_a_runaway_script_but_not_a_slow_tool") {
        return;
    }
    let dir = scratch("repl-budget");
    let r = session(
        &dir,
        &[
            code("let kept = 41"),
            obj! { "code" => "while (true) {}", "timeout" => 300i64 },
            code("typeof kept"),
            // An inner call that takes longer than the whole budget: the
            // budget stands still while it runs.
            obj! { "code" => "sh('sleep 1; echo slept').trim()", "timeout" => 400i64 },
        ],
        &["--permission-mode", "bypassPermissions"],
    );
    assert!(!is_error(&r[0]));
    assert!(is_error(&r[1]), "{}", text(&r[1]));
    assert!(text(&r[1]).contains("budget of 300 ms"), "{}", text(&r[1]));
    // The runaway context is gone, and the next call says so.
    let t = text(&r[2]);
    assert!(
        t.contains("fresh REPL context") && t.contains("result: undefined"),
        "{t}"
    );
    assert!(!is_error(&r[3]), "{}", text(&r[3]));
    assert!(text(&r[3]).contains("result: slept"), "{}", text(&r[3]));
}

/// Regression (issue 35): a block that awaits gives its last
/// expression's value, as one that does not await does (seed 000: "the
/// last expression's value, else `o`") — it gave `undefined` unless the
/// code said `return`. With no expression at the top it gives `o`.
#[test]
fn an_awaiting_block_gives_its_last_expression() {
    if emulated("an_awaiting_block_gives_its_last_expression") {
        return;
    }
    let dir = scratch("repl-await-value");
    let r = session(
        &dir,
        &[
            code(
                "const later = (v) => new Promise(r => setTimeout(() => r(v), 10));
const got = await later(5);
got * 3",
            ),
            code("const listed = await sh('echo hi'); listed.trim()"),
            code("await later(1)\n  .then(v => v + 41)"),
            code("o.kept = await later('yes'); const unused = 1"),
            code("for (const v of [await later(3)]) { o.v = v }"),
        ],
        &[],
    );
    assert!(text(&r[0]).contains("result: 15"), "{}", text(&r[0]));
    assert!(text(&r[1]).contains("hi"), "{}", text(&r[1]));
    assert!(text(&r[2]).contains("result: 42"), "{}", text(&r[2]));
    // As a script: a declaration after the last expression adds no value.
    assert!(text(&r[3]).contains("result: yes"), "{}", text(&r[3]));
    // No expression at the top: `o`.
    let t: String = text(&r[4]).split_whitespace().collect();
    assert!(t.contains(r#""v":3"#), "{t}");
}

#[test]
fn values_settle_and_promises_are_not_text() {
    if emulated("values_settle_and_promises_are_not_text") {
        return;
    }
    let dir = scratch("repl-promises");
    let r = session(
        &dir,
        &[
            code(
                "const later = (v) => new Promise(r => setTimeout(() => r(v), 10));\nconst got = await later(5);\nreturn got * 2",
            ),
            code("o.a = later(1); o.b = [later(2), 3]; void 0"),
            code("'total: ' + later(4)"),
            code("console.log('to stdout', {k: 1}); console.error('to stderr'); 7"),
            code("throw {code: 3}"),
        ],
        &[],
    );
    assert!(text(&r[0]).contains("result: 10"), "{}", text(&r[0]));
    let t = text(&r[1]);
    let compact: String = t.split_whitespace().collect();
    assert!(compact.contains(r#""a":1,"b":[2,3]"#), "{t}");
    assert!(is_error(&r[2]), "{}", text(&r[2]));
    assert!(text(&r[2]).contains("await it first"), "{}", text(&r[2]));
    let t = text(&r[3]);
    assert!(
        t.contains("result: 7") && t.contains("stdout:\nto stdout {"),
        "{t}"
    );
    assert!(t.contains("stderr:\nto stderr"), "{t}");
    assert!(
        is_error(&r[4]) && text(&r[4]).contains("thrown: {"),
        "{}",
        text(&r[4])
    );
}

#[test]
fn a_poisoned_global_gives_a_fresh_context() {
    if emulated("a_poisoned_global_gives_a_fresh_context") {
        return;
    }
    let dir = scratch("repl-poison");
    let r = session(
        &dir,
        &[
            code(
                "let mine = 1; Object.defineProperty(globalThis, 'sh', {value: 0, configurable: false}); 'ok'",
            ),
            code("typeof mine"),
            code("typeof mine"),
        ],
        &[],
    );
    assert!(!is_error(&r[0]));
    // The next call finds `sh` pinned: the context is dropped and the
    // model told; the one after runs in a fresh VM without `mine`.
    assert!(is_error(&r[1]), "{}", text(&r[1]));
    assert!(text(&r[1]).contains("poisoned") && text(&r[1]).contains("`sh`"));
    let t = text(&r[2]);
    assert!(
        t.contains("fresh REPL context") && t.contains("result: undefined"),
        "{t}"
    );
}

#[test]
fn inner_calls_are_reported_as_tool_activity() {
    if emulated("inner_calls_are_reported_as_tool_activity") {
        return;
    }
    let dir = scratch("repl-activity");
    let input = code("sh('echo from-inside-the-repl').trim()").to_json();
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_0", "REPL", &input)]),
        standin::text_reply("done"),
    ]);
    let out = run(tern(&api.url, &dir).env("TERN_REPL", "1").args([
        "-p",
        "go",
        "--verbose",
        "--permission-mode",
        "bypassPermissions",
    ]));
    assert_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    // The outer REPL call and the inner Bash call each have their lines.
    let bash = err
        .lines()
        .filter(|l| l.contains("Bash") && l.contains("echo from-inside-the-repl"))
        .count();
    assert!(bash >= 1, "no line for the inner Bash call:\n{err}");
    assert!(err.lines().any(|l| l.contains("REPL")), "{err}");
}

/// The seed's running scenario: find the call sites with `rgf`, read them
/// with `cat`, `put` two edits, register `verify_patch`; next turn the
/// model calls `eval_registered__verify_patch`, which asks — refused with
/// nobody to ask (its handler's effect does not happen), run when the
/// mode allows it (the effect happens).
#[test]
fn a_registered_tool_is_offered_next_turn_and_asks() {
    if emulated("a_registered_tool_is_offered_next_turn_and_asks") {
        return;
    }
    let scenario = |dir: &Path, args: &[&str]| -> (Vec<Value>, Vec<String>) {
        std::fs::create_dir_all(dir.join("src")).unwrap();
        for (f, t) in [
            ("src/a.rs", "old_api(1);\n"),
            ("src/b.rs", "x();\nold_api(2);\n"),
            ("src/c.rs", "old_api(3);\n"),
            ("src/d.rs", "new_api(4);\n"),
        ] {
            std::fs::write(dir.join(f), t).unwrap();
        }
        let block = code(
            "const sites = rgf('old_api', 'src').sort();\n\
             const texts = sites.map(f => cat(f));\n\
             for (const f of sites.slice(0, 2)) put(f, cat(f).replace('old_api', 'new_api'));\n\
             registerTool('verify_patch', 'Checks that no old_api is left', \
               {type: 'object', properties: {dir: {type: 'string'}}, required: ['dir']}, \
               (input) => { sh('touch verified'); return {left: rgf('old_api', input.dir).length}; });\n\
             [sites.length, texts.join('').length, listTools()]",
        );
        let api = StandIn::start(vec![
            standin::tools_reply(&[("toolu_0", "REPL", &block.to_json())]),
            standin::tools_reply(&[(
                "toolu_1",
                "eval_registered__verify_patch",
                r#"{"dir":"src"}"#,
            )]),
            standin::text_reply("done"),
        ]);
        let out = run(tern(&api.url, dir)
            .env("TERN_REPL", "1")
            .args(["-p", "go", "--output-format", "json"])
            .args(args));
        assert_ok(&out);
        let reqs = api.requests();
        let results = vec![
            tool_results(&reqs[1])[0].clone(),
            tool_results(&reqs[2])[0].clone(),
        ];
        let names = body(&reqs[1])
            .get("tools")
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .filter_map(|t| t.str_field("name").map(str::to_string))
            .collect();
        (results, names)
    };
    // Allowed to edit, and asked about nothing else: the edits land, the
    // registered tool is offered and its call asks, which -p refuses.
    let dir = scratch("repl-scenario");
    let (r, names) = scenario(&dir, &["--permission-mode", "acceptEdits"]);
    assert!(!is_error(&r[0]), "{}", text(&r[0]));
    assert!(text(&r[0]).contains("\"verify_patch\""), "{}", text(&r[0]));
    assert!(
        names.iter().any(|n| n == "eval_registered__verify_patch"),
        "{names:?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("src/a.rs")).unwrap(),
        "new_api(1);\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("src/b.rs")).unwrap(),
        "x();\nnew_api(2);\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("src/c.rs")).unwrap(),
        "old_api(3);\n"
    );
    assert!(
        is_error(&r[1]),
        "the registered tool ran without asking: {}",
        text(&r[1])
    );
    assert!(!dir.join("verified").exists(), "its handler ran");
    // Where calls are allowed, the handler runs in the VM with its own
    // inner calls, and its value comes back.
    let open = scratch("repl-scenario-open");
    let (r, _) = scenario(&open, &["--permission-mode", "bypassPermissions"]);
    assert!(!is_error(&r[1]), "{}", text(&r[1]));
    assert!(text(&r[1]).contains("\"left\": 1"), "{}", text(&r[1]));
    assert!(open.join("verified").exists());
}

#[test]
fn register_tool_checks_its_arguments() {
    if emulated("register_tool_checks_its_arguments") {
        return;
    }
    let dir = scratch("repl-register-bad");
    let r = session(
        &dir,
        &[
            code("registerTool('bad name', '', {}, () => 1)"),
            code("registerTool('sh', '', {}, () => 1)"),
            code("registerTool('ok', '', {type: 'string'}, () => 1)"),
            code("registerTool('ok', '', {}, 'not a function')"),
            code("const s = {}; s.self = s; registerTool('ok', '', s, () => 1)"),
            // Schemas the model's API would refuse, sent with every request
            // after: refused at once, so the session's requests stay valid.
            code(
                "registerTool('ok', '', {type: 'object', properties: {a: {type: 'text'}}}, () => 1)",
            ),
            code("registerTool('ok', '', {type: 'object', required: 'a'}, () => 1)"),
            code(
                "registerTool('ok', '', {type: 'object', properties: {a: {$ref: 'https://example.invalid/s'}}}, () => 1)",
            ),
            code(
                "registerTool('ok', 'fine', undefined, () => 1); [listTools(), getTool('ok').schema.type, unregisterTool('ok'), listTools()]",
            ),
        ],
        &[],
    );
    for bad in &r[..8] {
        assert!(is_error(bad), "{}", text(bad));
        assert!(text(bad).contains("registerTool:"), "{}", text(bad));
    }
    assert!(
        text(&r[5]).contains("not a JSON Schema type"),
        "{}",
        text(&r[5])
    );
    let t: String = text(&r[8]).split_whitespace().collect();
    assert!(t.contains(r#"[["ok"],"object",true,[]]"#), "{t}");
}

/// `cat` hands back a file whole or not at all: a text cut at Read's
/// window, written back with `put`, would cut the file.
#[test]
fn cat_refuses_to_hand_back_part_of_a_file() {
    if emulated("cat_refuses_to_hand_back_part_of_a_file") {
        return;
    }
    let dir = scratch("repl-cat-long");
    let long: String = (1..=2500).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.join("long.txt"), &long).unwrap();
    std::fs::write(dir.join("short.txt"), "a\n\nb\n").unwrap();
    let r = session(
        &dir,
        &[
            code("cat('long.txt')"),
            code("cat('long.txt', {offset: 2499, limit: 5})"),
            code("JSON.stringify(cat('short.txt'))"),
        ],
        &[],
    );
    assert!(is_error(&r[0]), "{}", text(&r[0]));
    assert!(
        text(&r[0]).contains("longer than one Read"),
        "{}",
        text(&r[0])
    );
    assert!(
        text(&r[1]).contains("result: line 2499\nline 2500\n"),
        "{}",
        text(&r[1])
    );
    assert!(
        text(&r[2]).contains(r#"result: "a\n\nb\n""#),
        "{}",
        text(&r[2])
    );
}

/// Kill -9 in the middle of a session that ran REPL blocks with Bash side
/// effects, then `--continue`: the variables and registered tools are
/// back, no earlier Bash call ran again (the marker file has exactly the
/// lines it had at the kill), and a block whose `Date.now()` branch goes
/// the other way on replay is reported as drift.
#[test]
fn a_killed_session_resumes_its_repl_state_without_repeating_effects() {
    if emulated("a_killed_session_resumes_its_repl_state_without_repeating_effects") {
        return;
    }
    let dir = scratch("repl-resume");
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    // Taken now; on replay, 2.2 s later, the branch is not.
    let deadline = now_ms + 2000;
    let blocks = [
        code(
            "let count = 0;\nsh('echo one >> marker');\ncount += 1;\nregisterTool('twice', 'doubles', {type: 'object', properties: {n: {type: 'number'}}}, (i) => i.n * 2);\ncount",
        ),
        code(&format!(
            "if (Date.now() < {deadline}) {{ sh('echo early >> marker') }}\ncount += 10;\nconst label = 'kept';\ncount"
        )),
        // Runs while the session is killed: its first call happened, the
        // block never finished.
        code("sh('echo started >> marker'); sh('sleep 30'); count += 100"),
    ];
    let mut replies: Vec<_> = blocks
        .iter()
        .enumerate()
        .map(|(i, b)| standin::tools_reply(&[(&format!("toolu_{i}"), "REPL", &b.to_json())]))
        .collect();
    replies.push(standin::text_reply("never"));
    let api = StandIn::start(replies);
    let mut child = tern(&api.url, &dir)
        .env("TERN_REPL", "1")
        .args(["-p", "go", "--permission-mode", "bypassPermissions"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let marker = dir.join("marker");
    let lines = || std::fs::read_to_string(&marker).unwrap_or_default();
    let waited = std::time::Instant::now();
    while !lines().contains("started") {
        assert!(
            waited.elapsed().as_secs() < 30,
            "the third block never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = lines();
    assert_eq!(before, "one\nearly\nstarted\n");
    // Past the deadline, so the second block's branch goes the other way.
    while std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        <= deadline + 200
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }

    // The log is the newest file beside the transcript; `-c` must still
    // take the transcript (regression: it took the log).
    let projects = home_of(&dir).join(".local/share/tern/projects");
    let logs: Vec<_> = std::fs::read_dir(&projects)
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "repl"))
        .collect();
    assert_eq!(logs.len(), 1, "one REPL log beside the transcript");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let text_of_log = std::fs::read(&logs[0]).unwrap();
    std::fs::write(&logs[0], text_of_log).unwrap();
    let check = code("[count, label, listTools(), typeof twice]");
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_r", "REPL", &check.to_json())]),
        standin::tools_reply(&[("toolu_t", "eval_registered__twice", r#"{"n":21}"#)]),
        standin::text_reply("done"),
    ]);
    let out = run(tern(&api.url, &dir).env("TERN_REPL", "1").args([
        "-c",
        "-p",
        "go on",
        "--permission-mode",
        "bypassPermissions",
    ]));
    assert_ok(&out);
    let reqs = api.requests();
    let r = tool_results(&reqs[1]);
    let t = text(&r[0]);
    assert!(!is_error(&r[0]), "{t}");
    let compact: String = t.split_whitespace().collect();
    // count: 1 + 10 (the killed block's +100 never happened).
    assert!(
        compact.contains(r#"result:[11,"kept",["twice"],"undefined"]"#),
        "{t}"
    );
    assert!(t.contains("rebuilt from the 2 earlier block(s)"), "{t}");
    assert!(t.contains("drifted") && t.contains("block 2"), "{t}");
    // Nothing ran again.
    assert_eq!(lines(), before, "a replayed block ran its Bash call again");
    // The registered tool came back with its context.
    let r = tool_results(&reqs[2]);
    assert!(text(&r[0]).contains("result: 42"), "{}", text(&r[0]));
}

/// The VM runs the model's code: a message it sends over the bound is
/// refused (the context dropped), not held by tern however long it is.
#[test]
fn an_endless_message_from_the_vm_is_cut_off() {
    if emulated("an_endless_message_from_the_vm_is_cut_off") {
        return;
    }
    let dir = scratch("repl-huge");
    let r = session(
        &dir,
        &[
            code("'x'.repeat(70 * 1024 * 1024)"),
            code("'after: ' + typeof sh"),
        ],
        &[],
    );
    assert!(
        is_error(&r[0]),
        "{}",
        &text(&r[0])[..200.min(text(&r[0]).len())]
    );
    assert!(text(&r[0]).contains("over 64 MiB"), "{}", text(&r[0]));
    let t = text(&r[1]);
    assert!(
        t.contains("fresh REPL context") && t.contains("result: after: function"),
        "{t}"
    );
}
