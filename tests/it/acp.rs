//! `tern acp` driven by the official Agent Client Protocol client
//! (`@agentclientprotocol/sdk`, run with the machine's node from
//! TERN_ACP_NODE_DIR, which ci/acp.sh provisions; tests/acp/client.mjs
//! plays each scenario and prints what it saw). The model is the
//! stand-in. Without the SDK these tests skip with a message (a failure
//! under CI); the malformed-frame test needs only a pipe.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::standin::{self, StandIn};
use support::*;
use tern::json::{self, Value};
use tern::obj;

/// The folder whose node_modules holds the ACP SDK.
fn node_dir() -> Option<String> {
    if runner().is_some() {
        skip_emulated("ACP tests", "the ACP client runs natively");
        return None;
    }
    let dir = std::env::var("TERN_ACP_NODE_DIR").unwrap_or_else(|_| {
        format!(
            "{}/.cache/tern-acp-node",
            std::env::var("HOME").unwrap_or_default()
        )
    });
    let ok = Command::new("node")
        .current_dir(&dir)
        .args(["-e", "import('@agentclientprotocol/sdk')"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip(
            "ACP tests",
            &format!("node cannot import @agentclientprotocol/sdk from {dir} (run ci/acp.sh)"),
        );
        return None;
    }
    Some(dir)
}

/// Runs the client on `scenario` in `dir` against `api`; its transcript.
fn drive(node: &str, dir: &Path, api: &StandIn, scenario: Value) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/acp/client.mjs");
    let mut cmd = Command::new("node");
    cmd.arg(script)
        .arg(scenario.to_json())
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TERN_ACP_NODE_DIR", node)
        .env("TERN", tern_bin())
        .env("TERN_ARGS", r#"["acp"]"#)
        .env("HOME", home_of(dir))
        .env("TMPDIR", dir)
        .env("ANTHROPIC_BASE_URL", &api.url)
        .env("ANTHROPIC_API_KEY", "sk-acp-test")
        .env("TERN_RETRY_BASE_MS", "20");
    let out = run(&mut cmd);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "client failed:\n{stdout}\n{stderr}");
    let last = stdout.lines().last().unwrap_or_default();
    let v = json::parse(last).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    let errors = v.get("errors").unwrap().as_array().unwrap();
    assert!(
        errors.is_empty(),
        "requests failed: {}\n{stderr}",
        Value::Array(errors.clone())
    );
    assert_eq!(v.get("exit").and_then(Value::as_i64), Some(0), "{stderr}");
    v
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The `update`s of every session/update, in order.
fn updates(v: &Value) -> Vec<Value> {
    list(v, "updates")
        .iter()
        .filter_map(|n| n.get("update").cloned())
        .collect()
}

/// The statuses a tool call went through (its tool_call, then updates).
fn statuses(v: &Value, call: &str) -> Vec<String> {
    updates(v)
        .iter()
        .filter(|u| u.str_field("toolCallId") == Some(call))
        .filter_map(|u| u.str_field("status").map(str::to_string))
        .collect()
}

fn stop_reasons(v: &Value) -> Vec<String> {
    list(v, "answers")
        .iter()
        .filter(|a| a.str_field("op") == Some("prompt"))
        .filter_map(|a| a.get("result")?.str_field("stopReason").map(str::to_string))
        .collect()
}

fn prompt(text: &str) -> Value {
    obj! { "op" => "prompt", "text" => text }
}

fn new() -> Value {
    obj! { "op" => "new" }
}

#[test]
fn a_granted_call_runs_and_streams_its_updates() {
    let Some(node) = node_dir() else { return };
    let dir = scratch("acp-grant");
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_w", "Bash", r#"{"command": "echo hi > made.txt"}"#)]),
        standin::text_reply("Made it."),
    ]);
    let v = drive(
        &node,
        &dir,
        &api,
        obj! { "steps" => vec![new(), prompt("make a file")], "permission" => "allow_once" },
    );
    // initialize: the capabilities a client plans with.
    let caps = v
        .get("initialize")
        .unwrap()
        .get("agentCapabilities")
        .unwrap();
    assert_eq!(caps.get("loadSession").and_then(Value::as_bool), Some(true));
    assert!(caps.get("promptCapabilities").is_some());
    assert!(caps.get("mcpCapabilities").is_some());
    // session/new offers the four modes.
    let modes = list(&v, "sessions")[0].get("modes").unwrap();
    assert_eq!(modes.str_field("currentModeId"), Some("default"));
    let ids: Vec<&str> = list(modes, "availableModes")
        .iter()
        .filter_map(|m| m.str_field("id"))
        .collect();
    assert_eq!(ids, ["default", "acceptEdits", "plan", "bypassPermissions"]);
    // The question went to the client with the terminal's answers.
    let asked = list(&v, "permissions");
    assert_eq!(asked.len(), 1, "{v}");
    assert_eq!(
        asked[0].get("toolCall").unwrap().str_field("toolCallId"),
        Some("toolu_w")
    );
    let options: Vec<&str> = list(&asked[0], "options")
        .iter()
        .filter_map(|o| o.str_field("optionId"))
        .collect();
    assert!(
        options.contains(&"allow_once") && options.contains(&"reject"),
        "{options:?}"
    );
    // It ran, and the client saw it go from pending to completed.
    assert_eq!(
        std::fs::read_to_string(dir.join("made.txt")).unwrap(),
        "hi\n"
    );
    let seen = statuses(&v, "toolu_w");
    assert_eq!(
        seen.first().map(String::as_str),
        Some("pending"),
        "{seen:?}"
    );
    assert!(seen.iter().any(|s| s == "in_progress"), "{seen:?}");
    assert_eq!(
        seen.last().map(String::as_str),
        Some("completed"),
        "{seen:?}"
    );
    let call = updates(&v)
        .into_iter()
        .find(|u| u.str_field("sessionUpdate") == Some("tool_call"))
        .unwrap();
    assert_eq!(call.str_field("kind"), Some("execute"));
    // The answer streamed as message chunks; the turn ended normally.
    let text: String = updates(&v)
        .iter()
        .filter(|u| u.str_field("sessionUpdate") == Some("agent_message_chunk"))
        .filter_map(|u| u.get("content")?.str_field("text").map(str::to_string))
        .collect();
    // (the stand-in's tool turn says "Working on it." first)
    assert_eq!(text, "Working on it.Made it.");
    assert_eq!(stop_reasons(&v), ["end_turn"]);
    assert!(
        updates(&v)
            .iter()
            .any(|u| u.str_field("sessionUpdate") == Some("available_commands_update"))
    );
}

#[test]
fn a_refused_call_does_not_run_and_the_model_is_told() {
    let Some(node) = node_dir() else { return };
    let dir = scratch("acp-refuse");
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_r", "Bash", r#"{"command": "echo hi > made.txt"}"#)]),
        standin::text_reply("Understood."),
    ]);
    let v = drive(
        &node,
        &dir,
        &api,
        obj! { "steps" => vec![new(), prompt("make a file")], "permission" => "reject" },
    );
    assert_eq!(list(&v, "permissions").len(), 1);
    assert!(!dir.join("made.txt").exists());
    assert_eq!(
        statuses(&v, "toolu_r").last().map(String::as_str),
        Some("failed")
    );
    let told = &api.requests()[1].body;
    assert!(
        told.contains("toolu_r") && told.contains(r#""is_error":true"#),
        "{told}"
    );
    assert_eq!(stop_reasons(&v), ["end_turn"]);
}

/// Whether a process is gone (a zombie nobody reaped counts as gone).
fn gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[test]
fn cancel_ends_the_running_tool_and_the_prompt() {
    let Some(node) = node_dir() else { return };
    let dir = scratch("acp-cancel");
    let command = "echo $$ > shell.pid; sleep 120 & echo $! > sleep.pid; wait";
    let input = obj! { "command" => command }.to_json();
    let api = StandIn::start(vec![standin::tools_reply(&[("toolu_s", "Bash", &input)])]);
    api.set_fallback(standin::text_reply("(not expected)"));
    let started = Instant::now();
    let v = drive(
        &node,
        &dir,
        &api,
        obj! {
            "steps" => vec![new(), obj! {
                "op" => "prompt",
                "text" => "wait a while",
                "cancelWhenFile" => dir.join("sleep.pid").display().to_string(),
            }],
            "permission" => "allow_once",
        },
    );
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(stop_reasons(&v), ["cancelled"]);
    // The call was answered, as failed.
    assert_eq!(
        statuses(&v, "toolu_s").last().map(String::as_str),
        Some("failed"),
        "{v}"
    );
    for f in ["shell.pid", "sleep.pid"] {
        let pid = std::fs::read_to_string(dir.join(f)).unwrap();
        let pid = pid.trim();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !gone(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(gone(pid), "{f}: process {pid} still runs");
    }
}

#[test]
fn a_loaded_session_replays_its_history_and_goes_on() {
    let Some(node) = node_dir() else { return };
    let dir = scratch("acp-load");
    let api = StandIn::start(vec![
        standin::text_reply("Noted: 42."),
        standin::text_reply("It was 42."),
        standin::text_reply("Still 42."),
    ]);
    let first = drive(
        &node,
        &dir,
        &api,
        obj! { "steps" => vec![new(), prompt("remember the number 42")] },
    );
    let id = list(&first, "sessions")[0]
        .str_field("sessionId")
        .unwrap()
        .to_string();
    let second = drive(
        &node,
        &dir,
        &api,
        obj! { "steps" => vec![
            obj! { "op" => "load", "sessionId" => id.as_str() },
            prompt("which number was it?"),
        ] },
    );
    // The history came back as updates before session/load answered.
    let load = list(&second, "answers")
        .iter()
        .find(|a| a.str_field("op") == Some("load"))
        .unwrap();
    let before = load.get("updatesBefore").and_then(Value::as_i64).unwrap() as usize;
    let replayed: Vec<(String, String)> = updates(&second)[..before]
        .iter()
        .filter_map(|u| {
            Some((
                u.str_field("sessionUpdate")?.to_string(),
                u.get("content")?.str_field("text")?.to_string(),
            ))
        })
        .collect();
    assert!(
        replayed.contains(&("user_message_chunk".into(), "remember the number 42".into())),
        "{replayed:?}"
    );
    assert!(replayed.contains(&("agent_message_chunk".into(), "Noted: 42.".into())));
    // The next prompt went on with it.
    assert_eq!(stop_reasons(&second), ["end_turn"]);
    let sent = &api.requests()[1].body;
    assert!(
        sent.contains("remember the number 42") && sent.contains("Noted: 42."),
        "{sent}"
    );
    // The same session is one `tern --resume` takes.
    let out = run(tern(&api.url, &dir).args(["-p", "--resume", &id, "and now?"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(api.requests()[2].body.contains("which number was it?"));
}

#[test]
fn read_sees_the_editors_unsaved_buffer() {
    let Some(node) = node_dir() else { return };
    let dir = scratch("acp-buffer");
    let file = dir.join("notes.txt");
    std::fs::write(&file, "saved on disk\n").unwrap();
    let input = obj! { "file_path" => file.display().to_string() }.to_json();
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_rd", "Read", &input)]),
        standin::text_reply("Read it."),
    ]);
    let v = drive(
        &node,
        &dir,
        &api,
        obj! {
            "steps" => vec![new(), prompt("read notes.txt")],
            "fs" => true,
            "buffers" => obj! { file.display().to_string() => "typed but not saved\n" },
        },
    );
    let reads = list(&v, "reads");
    assert_eq!(reads.len(), 1, "{v}");
    assert_eq!(
        reads[0].str_field("path"),
        Some(file.display().to_string().as_str())
    );
    let sent = &api.requests()[1].body;
    assert!(sent.contains("typed but not saved"), "{sent}");
    assert!(!sent.contains("saved on disk"), "{sent}");
    let call = updates(&v)
        .into_iter()
        .find(|u| u.str_field("sessionUpdate") == Some("tool_call"))
        .unwrap();
    assert_eq!(call.str_field("kind"), Some("read"));
    assert_eq!(
        list(&call, "locations")[0].str_field("path"),
        Some(file.display().to_string().as_str())
    );
}

#[cfg(feature = "mcp")]
#[test]
fn a_client_mcp_server_is_connected_and_called() {
    let Some(node) = node_dir() else { return };
    let dir = scratch("acp-mcp");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/scripted_server.py");
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_m", "mcp__witness__peek", "{}")]),
        standin::text_reply("Peeked."),
    ]);
    let server = obj! {
        "name" => "witness",
        "command" => "python3",
        "args" => vec![Value::from(script.display().to_string()), Value::from("witness")],
        "env" => vec![obj! { "name" => "WITNESS_MARK", "value" => "acp" }],
    };
    let v = drive(
        &node,
        &dir,
        &api,
        obj! {
            "steps" => vec![obj! { "op" => "new", "mcpServers" => vec![server] }, prompt("peek")],
            "permission" => "allow_once",
        },
    );
    assert!(api.requests()[0].body.contains("mcp__witness__peek"));
    assert!(dir.join("peeked").exists(), "{v}");
    let started = json::parse(&std::fs::read_to_string(dir.join("started.json")).unwrap()).unwrap();
    assert_eq!(started.str_field("WITNESS_MARK"), Some("acp"));
    assert!(api.requests()[1].body.contains("peeked"));
    assert_eq!(
        statuses(&v, "toolu_m").last().map(String::as_str),
        Some("completed")
    );
    assert_eq!(stop_reasons(&v), ["end_turn"]);
}

#[test]
fn malformed_frames_get_json_rpc_errors() {
    let dir = scratch("acp-frames");
    // A server that is never asked: the frames fail before any request.
    let mut child = tern_command()
        .arg("acp")
        .current_dir(&dir)
        .env("HOME", home_of(&dir))
        .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
        .env("ANTHROPIC_API_KEY", "test")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ask = |frame: &[u8]| -> Value {
        stdin.write_all(frame).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
        let line = lines.next().unwrap().unwrap();
        json::parse(&line).unwrap()
    };
    let code = |v: &Value| {
        v.get("error")
            .and_then(|e| e.get("code"))
            .and_then(Value::as_i64)
    };
    let cases: &[(&[u8], i64)] = &[
        (b"this is not json", -32700),
        (b"\xff\xfe{}", -32700),
        (br#"[{"jsonrpc":"2.0","id":1,"method":"initialize"}]"#, -32600),
        (br#"{"jsonrpc":"1.0","id":2,"method":"initialize"}"#, -32600),
        (br#"{"jsonrpc":"2.0","id":3}"#, -32600),
        (br#"{"jsonrpc":"2.0","id":4,"method":"no/such/method"}"#, -32601),
        (br#"{"jsonrpc":"2.0","id":5,"method":"initialize","params":{}}"#, -32602),
        (br#"{"jsonrpc":"2.0","id":6,"method":"session/new","params":{"cwd":"relative"}}"#, -32602),
        (br#"{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"hi"}]}}"#, -32002),
    ];
    for (frame, want) in cases {
        let v = ask(frame);
        assert_eq!(
            code(&v),
            Some(*want),
            "{} → {v}",
            String::from_utf8_lossy(frame)
        );
    }
    // Still serving: a proper initialize is answered.
    let v =
        ask(br#"{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":1}}"#);
    assert_eq!(v.get("id").and_then(Value::as_i64), Some(8));
    assert_eq!(
        v.get("result")
            .unwrap()
            .get("protocolVersion")
            .and_then(Value::as_i64),
        Some(1)
    );
    // Loading a session this directory does not have: not found, and
    // the agent goes on.
    let load = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"session/load","params":{{"sessionId":"0f8e6a62-4c1b-4d2e-9a77-1b2c3d4e5f61","cwd":{},"mcpServers":[]}}}}"#,
        Value::from(dir.display().to_string()).to_json()
    );
    let v = ask(load.as_bytes());
    assert_eq!(code(&v), Some(-32002), "{v}");
    // An id that cannot be one (a path) is a bad parameter.
    let v = ask(load
        .replace("0f8e6a62-4c1b-4d2e-9a77-1b2c3d4e5f61", "../x")
        .as_bytes());
    assert_eq!(code(&v), Some(-32602), "{v}");
    let v = ask(br#"{"jsonrpc":"2.0","id":10,"method":"no/such/method"}"#);
    assert_eq!(code(&v), Some(-32601), "{v}");
    // End of input ends it cleanly.
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn modes_models_plans_and_diffs_reach_the_client() {
    let Some(node) = node_dir() else { return };
    let dir = scratch("acp-modes");
    let todos = r#"{"todos": [{"content": "write the file", "status": "in_progress", "activeForm": "Writing the file"}]}"#;
    let file = dir.join("new.txt");
    let write =
        obj! { "file_path" => file.display().to_string(), "content" => "fresh\n" }.to_json();
    let api = StandIn::start(vec![
        standin::tools_reply(&[
            ("toolu_t", "TodoWrite", todos),
            ("toolu_e", "Write", &write),
        ]),
        standin::text_reply("Written."),
    ]);
    let v = drive(
        &node,
        &dir,
        &api,
        obj! { "steps" => vec![
            new(),
            obj! { "op" => "set_mode", "modeId" => "acceptEdits" },
            obj! { "op" => "set_config", "configId" => "model", "value" => "claude-picked-1" },
            prompt("plan and write"),
        ] },
    );
    // The model offered in session/new, and the one picked, used.
    let offered = &list(&list(&v, "sessions")[0], "configOptions")[0];
    assert_eq!(offered.str_field("id"), Some("model"));
    assert!(offered.str_field("currentValue").is_some());
    assert!(
        api.requests()[0]
            .body
            .contains(r#""model":"claude-picked-1""#)
    );
    // acceptEdits: the edit inside the directory was not asked about.
    assert!(list(&v, "permissions").is_empty(), "{v}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "fresh\n");
    let all = updates(&v);
    let mode = all
        .iter()
        .find(|u| u.str_field("sessionUpdate") == Some("current_mode_update"))
        .unwrap();
    assert_eq!(mode.str_field("currentModeId"), Some("acceptEdits"));
    let plan = all
        .iter()
        .find(|u| u.str_field("sessionUpdate") == Some("plan"))
        .unwrap();
    let entry = &list(plan, "entries")[0];
    assert_eq!(entry.str_field("content"), Some("write the file"));
    assert_eq!(entry.str_field("status"), Some("in_progress"));
    let edit = all
        .iter()
        .find(|u| {
            u.str_field("sessionUpdate") == Some("tool_call")
                && u.str_field("toolCallId") == Some("toolu_e")
        })
        .unwrap();
    assert_eq!(edit.str_field("kind"), Some("edit"));
    let diff = &list(edit, "content")[0];
    assert_eq!(diff.str_field("type"), Some("diff"));
    assert_eq!(
        diff.str_field("path"),
        Some(file.display().to_string().as_str())
    );
    assert_eq!(diff.str_field("newText"), Some("fresh\n"));
    assert_eq!(
        statuses(&v, "toolu_e").last().map(String::as_str),
        Some("completed")
    );
    assert_eq!(stop_reasons(&v), ["end_turn"]);
}

/// With `fs.writeTextFile`, Edit and Write change the disk and then the
/// editor's buffer — but only a buffer that held what the disk held: one
/// with unsaved typing the model never saw is not overwritten (the
/// editor's own reload decides).
#[test]
fn a_change_reaches_a_clean_buffer_and_spares_an_unsaved_one() {
    let Some(node) = node_dir() else { return };
    let dir = scratch("acp-writes");
    let clean = dir.join("clean.txt");
    let dirty = dir.join("dirty.txt");
    std::fs::write(&clean, "one\n").unwrap();
    std::fs::write(&dirty, "on disk\n").unwrap();
    let path = |p: &std::path::Path| p.display().to_string();
    let read = |id: &str, p: &std::path::Path| {
        standin::tools_reply(&[(id, "Read", &obj! { "file_path" => path(p) }.to_json())])
    };
    let edit = obj! { "file_path" => path(&clean), "old_string" => "one", "new_string" => "two" };
    let write = obj! { "file_path" => path(&dirty), "content" => "from the model\n" };
    let api = StandIn::start(vec![
        read("toolu_r1", &clean),
        standin::tools_reply(&[("toolu_e", "Edit", &edit.to_json())]),
        read("toolu_r2", &dirty),
        standin::tools_reply(&[("toolu_w", "Write", &write.to_json())]),
        standin::text_reply("Both changed."),
    ]);
    let v = drive(
        &node,
        &dir,
        &api,
        obj! {
            "steps" => vec![new(), prompt("change both")],
            "fs" => true,
            "fsWrite" => true,
            "buffers" => obj! { path(&dirty) => "unsaved typing\n" },
        },
    );
    assert_eq!(stop_reasons(&v), ["end_turn"]);
    assert_eq!(std::fs::read_to_string(&clean).unwrap(), "two\n");
    assert_eq!(std::fs::read_to_string(&dirty).unwrap(), "from the model\n");
    let writes = list(&v, "writes");
    assert_eq!(writes.len(), 1, "only the clean buffer is written: {v}");
    assert_eq!(writes[0].str_field("path"), Some(path(&clean).as_str()));
    assert_eq!(writes[0].str_field("content"), Some("two\n"));
}
