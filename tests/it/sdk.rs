//! The official Agent SDKs driving tern through their control protocol,
//! unmodified: Python (`claude-agent-sdk`, `cli_path` = tern, scenarios in
//! tests/sdk/scenarios.py) and TypeScript (`@anthropic-ai/claude-agent-sdk`
//! run with the machine's node, `pathToClaudeCodeExecutable` = tern,
//! scenarios in tests/sdk/scenarios.mjs); ANTHROPIC_BASE_URL is the
//! stand-in. ci/sdk.sh installs both. A test whose SDK is missing skips
//! with a message (a failure under CI).
//!
//! The rows of docs/sdk.md each have a test below that runs the same
//! scenario through both SDKs and checks what the application saw and
//! what reached the model.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support::standin::{self, Reply, StandIn, Step};
use support::*;
use tern::json::{self, Value};

fn python() -> Option<String> {
    if runner().is_some() {
        skip_emulated("SDK tests", "the SDK runs natively");
        return None;
    }
    let py = std::env::var("TERN_SDK_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = Command::new(&py)
        .args(["-c", "import claude_agent_sdk"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip(
            "SDK tests",
            &format!("{py} cannot import claude_agent_sdk (run ci/sdk.sh)"),
        );
        return None;
    }
    Some(py)
}

fn scenario(py: &str, name: &str, api: &StandIn, dir: &Path) -> (Value, String) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/scenarios.py");
    let mut cmd = Command::new(py);
    cmd.arg(script);
    drive(cmd, name, api, dir)
}

/// The folder whose node_modules holds the TypeScript SDK.
fn node_dir() -> Option<String> {
    if runner().is_some() {
        skip_emulated("SDK tests", "the SDK runs natively");
        return None;
    }
    let dir = std::env::var("TERN_SDK_NODE_DIR").unwrap_or_else(|_| {
        format!(
            "{}/.cache/tern-sdk-node",
            std::env::var("HOME").unwrap_or_default()
        )
    });
    let ok = Command::new("node")
        .current_dir(&dir)
        .args([
            "-e",
            "import('@anthropic-ai/claude-agent-sdk').then(() => import('zod'))",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip(
            "SDK tests (TypeScript)",
            &format!(
                "node cannot import @anthropic-ai/claude-agent-sdk from {dir} (run ci/sdk.sh)"
            ),
        );
        return None;
    }
    Some(dir)
}

fn ts_scenario(node_dir: &str, name: &str, api: &StandIn, dir: &Path) -> (Value, String) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/scenarios.mjs");
    let mut cmd = Command::new("node");
    cmd.arg(script).env("TERN_SDK_NODE_DIR", node_dir);
    drive(cmd, name, api, dir)
}

fn drive(mut cmd: Command, name: &str, api: &StandIn, dir: &Path) -> (Value, String) {
    let scripted = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/scripted_server.py");
    cmd.arg(name)
        .current_dir(dir)
        .env("TERN", tern_bin())
        .env("HOME", home_of(dir))
        .env("ANTHROPIC_BASE_URL", &api.url)
        .env("ANTHROPIC_API_KEY", "sk-sdk-test")
        .env("TERN_RETRY_BASE_MS", "20")
        .env("MCP_TOOL_TIMEOUT", "1000")
        .env("SCRIPTED_SERVER", scripted)
        .env_remove("ANTHROPIC_MODEL");
    let out = run(&mut cmd);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{name} failed:\n{stdout}\n{stderr}");
    let last = stdout.lines().last().unwrap_or_default();
    let v = json::parse(last).unwrap_or_else(|e| panic!("{name}: {e}: {stdout}\n{stderr}"));
    (v, stderr)
}

fn strs(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn query_runs_a_tool_turn() {
    let Some(py) = python() else { return };
    let dir = scratch("sdk-query");
    std::fs::write(dir.join("a.txt"), "x").unwrap();
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_g", "Glob", r#"{"pattern": "*.txt"}"#)]),
        standin::text_reply("There is a.txt."),
    ]);
    let (v, _) = scenario(&py, "tool_turn", &api, &dir);
    assert_eq!(strs(&v, "tool_uses"), ["Glob"]);
    let results = v.get("tool_results").unwrap().as_array().unwrap();
    assert!(results[0].str_field("content").unwrap().contains("a.txt"));
    let result = v.get("result").unwrap();
    assert_eq!(result.str_field("subtype"), Some("success"));
    assert_eq!(result.str_field("text"), Some("There is a.txt."));
    // The SDK's prompt reached the model; the Glob result went back.
    assert!(api.requests()[0].body.contains("list the files"));
    assert!(api.requests()[1].body.contains("a.txt"));
    assert!(
        strs(&v, "types")
            .first()
            .is_some_and(|t| t == "SystemMessage")
    );
}

#[test]
fn can_use_tool_allows_one_call_and_denies_another() {
    let Some(py) = python() else { return };
    let dir = scratch("sdk-permissions");
    let api = StandIn::start(vec![
        standin::tools_reply(&[
            ("toolu_ok", "Bash", r#"{"command": "touch allowed.txt"}"#),
            ("toolu_no", "Bash", r#"{"command": "touch denied.txt"}"#),
        ]),
        standin::text_reply("One of two."),
    ]);
    let (v, _) = scenario(&py, "can_use_tool", &api, &dir);
    let asked = v.get("asked").unwrap().as_array().unwrap();
    assert_eq!(asked.len(), 2, "{v}");
    assert!(dir.join("allowed.txt").exists());
    assert!(!dir.join("denied.txt").exists());
    let sent = tool_results(&api.requests()[1]);
    assert!(sent[0].get("is_error").is_none(), "{:?}", sent[0]);
    assert_eq!(sent[1].get("is_error").and_then(Value::as_bool), Some(true));
    assert!(
        sent[1]
            .str_field("content")
            .unwrap()
            .contains("not this one")
    );
}

/// AskUserQuestion and ExitPlanMode go through `can_use_tool` as in
/// Claude Code: the application's answers come back in `updatedInput`
/// (the model's own `answers` are dropped), and a yes to the plan with a
/// `setMode` update leaves plan mode, so the edit that plan mode refused
/// now runs without asking.
#[test]
fn ask_user_question_and_exit_plan_mode_through_can_use_tool() {
    let Some(py) = python() else { return };
    let dir = scratch("sdk-ask-plan");
    let question = r#"{"questions": [{"question": "Which database?", "header": "DB", "multiSelect": false,
        "options": [{"label": "SQLite", "description": "a file"}, {"label": "Postgres", "description": "a server"}]}],
        "answers": {"Which database?": "made up by the model"}}"#;
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_q", "AskUserQuestion", question)]),
        standin::tools_reply(&[(
            "toolu_w1",
            "Write",
            r#"{"file_path": "db.txt", "content": "postgres\n"}"#,
        )]),
        standin::tools_reply(&[("toolu_p", "ExitPlanMode", r#"{"plan": "1. Write db.txt"}"#)]),
        standin::tools_reply(&[(
            "toolu_w2",
            "Write",
            r#"{"file_path": "db.txt", "content": "postgres\n"}"#,
        )]),
        standin::text_reply("Done."),
    ]);
    // Notification hooks match on the notification's type.
    std::fs::create_dir_all(dir.join(".tern")).unwrap();
    std::fs::write(
        dir.join(".tern/settings.json"),
        r#"{"hooks": {"Notification": [
            {"matcher": "permission_prompt", "hooks": [{"type": "command", "command": "cat >> prompts.jsonl"}]},
            {"matcher": "idle_prompt", "hooks": [{"type": "command", "command": "cat >> idle.jsonl"}]}]}}"#,
    )
    .unwrap();
    let (v, _) = scenario(&py, "ask_and_plan", &api, &dir);
    assert_eq!(
        strs(&v, "asked"),
        ["AskUserQuestion", "ExitPlanMode"],
        "{v}"
    );
    let prompts = std::fs::read_to_string(dir.join("prompts.jsonl")).unwrap();
    assert_eq!(
        prompts
            .matches(r#""hook_event_name":"Notification""#)
            .count(),
        2,
        "{prompts}"
    );
    assert!(
        prompts.contains(r#""notification_type":"permission_prompt""#),
        "{prompts}"
    );
    assert!(!dir.join("idle.jsonl").exists());
    let reqs = api.requests();
    assert!(
        reqs[0].body.contains("Plan mode is on"),
        "the model is told the rules of plan mode"
    );
    let result = |i: usize| {
        tool_results(&reqs[i])[0]
            .str_field("content")
            .unwrap_or("")
            .to_string()
    };
    assert!(
        result(1).contains("\"Which database?\" = \"Postgres\""),
        "{}",
        result(1)
    );
    assert!(!result(1).contains("made up"), "{}", result(1));
    assert!(result(2).contains("plan mode"), "{}", result(2));
    assert!(result(3).contains("approved the plan"), "{}", result(3));
    assert!(!result(4).contains("denied"), "{}", result(4));
    assert_eq!(
        std::fs::read_to_string(dir.join("db.txt")).unwrap(),
        "postgres\n"
    );
}

#[test]
fn a_pre_tool_use_hook_callback_blocks() {
    let Some(py) = python() else { return };
    let dir = scratch("sdk-hook");
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_h", "Bash", r#"{"command": "touch hooked.txt"}"#)]),
        standin::text_reply("It was blocked."),
    ]);
    let (v, _) = scenario(&py, "hook_blocks", &api, &dir);
    assert_eq!(strs(&v, "hook_saw"), ["touch hooked.txt"]);
    assert!(!dir.join("hooked.txt").exists(), "the hook did not block");
    let sent = tool_results(&api.requests()[1]);
    assert!(
        sent[0]
            .str_field("content")
            .unwrap()
            .contains("blocked by the SDK hook")
    );
}

#[test]
fn interrupt_ends_the_turn_and_the_session_goes_on() {
    let Some(py) = python() else { return };
    let dir = scratch("sdk-interrupt");
    let mut slow = vec![standin::message_start("msg_slow")];
    let mut text = standin::text_block(0, "Once upon a time, in a land far away");
    text.truncate(2);
    slow.extend(text);
    slow.push(Step::Sleep(Duration::from_secs(20)));
    let api = StandIn::start(vec![
        Reply::Stream(slow),
        standin::text_reply("Still here."),
    ]);
    // Tell the script when the turn is under way.
    let (flag, reqs) = (dir.join("stream-started"), api.clone_requests_handle());
    std::thread::spawn(move || {
        for _ in 0..2000 {
            if !reqs().is_empty() {
                std::thread::sleep(Duration::from_millis(200));
                let _ = std::fs::write(&flag, "");
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let (v, _) = scenario(&py, "interrupt", &api, &dir);
    let took = v.get("interrupt_seconds").and_then(Value::as_f64).unwrap();
    assert!(took < 10.0, "the interrupt took {took} s");
    let types = strs(&v, "types");
    // One result for the interrupted turn, one for the next.
    assert_eq!(
        types.iter().filter(|t| *t == "ResultMessage").count(),
        2,
        "{types:?}"
    );
    assert_eq!(
        api.requests().len(),
        2,
        "the second query reached the model"
    );
    assert!(api.requests()[1].body.contains("are you still there?"));
    assert_eq!(strs(&v, "subtypes"), ["error_during_execution", "success"]);
    let result = v.get("result").unwrap();
    assert_eq!(result.str_field("text"), Some("Still here."));
}

// ------------------------------------------------------------------ rows
//
// Each row of docs/sdk.md: the same scenario through both SDKs, a fresh
// stand-in for each. `Sdk` says which one ran, for messages and for the
// few places where the SDKs' types differ.

#[derive(Clone, Copy, Debug, PartialEq)]
enum Sdk {
    Python,
    TypeScript,
}

/// Runs scenario `name` through each SDK that is installed (a missing one
/// skips, which fails under CI), with the stand-in `replies` builds.
fn both(
    test: &str,
    name: &str,
    replies: impl Fn(Sdk) -> Vec<Reply>,
    check: impl Fn(Sdk, &Value, &StandIn, &Path),
) {
    if let Some(py) = python() {
        let dir = scratch(&format!("{test}-py"));
        std::fs::write(dir.join("a.txt"), "x").unwrap();
        let api = StandIn::start(replies(Sdk::Python));
        let (v, _) = scenario(&py, name, &api, &dir);
        check(Sdk::Python, &v, &api, &dir);
    }
    if let Some(node) = node_dir() {
        let dir = scratch(&format!("{test}-ts"));
        std::fs::write(dir.join("a.txt"), "x").unwrap();
        let api = StandIn::start(replies(Sdk::TypeScript));
        let (v, _) = ts_scenario(&node, name, &api, &dir);
        check(Sdk::TypeScript, &v, &api, &dir);
    }
}

fn tool_names(req: &standin::Request) -> Vec<String> {
    body(req)
        .get("tools")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                .filter_map(|t| t.str_field("name").map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn system_text(req: &standin::Request) -> String {
    match body(req).get("system") {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.str_field("text"))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    }
}

/// The MCP servers of an `mcp_status` answer (Python wraps the list).
fn servers(v: &Value) -> Vec<Value> {
    let list = v.get("mcpServers").unwrap_or(v);
    list.as_array().cloned().unwrap_or_default()
}

fn calls_of(v: &Value) -> Vec<String> {
    v.get("calls")
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .filter_map(|c| c.str_field("tool").map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn row1_sdk_mcp_servers_run_in_the_application_through_the_permission_pipeline() {
    both(
        "sdk-mcp",
        "sdk_mcp",
        |_| {
            vec![
                standin::tools_reply(&[("toolu_add", "mcp__calc__add", r#"{"a": 2, "b": 3}"#)]),
                standin::tools_reply(&[
                    ("toolu_boom", "mcp__calc__boom", "{}"),
                    ("toolu_secret", "mcp__calc__secret", "{}"),
                    ("toolu_slow", "mcp__calc__slow", "{}"),
                ]),
                standin::text_reply("done"),
            ]
        },
        |sdk, v, api, _| {
            // The handlers ran in the application, the denied one did not.
            assert_eq!(calls_of(v), ["add", "boom", "slow"], "{sdk:?}: {v}");
            let args = v.get("calls").unwrap().as_array().unwrap()[0]
                .get("args")
                .unwrap();
            assert_eq!(args.get("a").and_then(Value::as_f64), Some(2.0), "{sdk:?}");
            // Allowed by a rule: no question; the others were asked about.
            assert_eq!(
                strs(v, "asked"),
                ["mcp__calc__boom", "mcp__calc__slow"],
                "{sdk:?}"
            );
            let reqs = api.requests();
            assert!(tool_names(&reqs[0]).contains(&"mcp__calc__add".to_string()));
            let first = tool_results(&reqs[1]);
            assert!(first[0].to_json().contains("sum=5"), "{sdk:?}: {first:?}");
            let second = tool_results(&reqs[2]);
            let text = |i: usize| second[i].to_json();
            assert!(
                second
                    .iter()
                    .all(|r| r.get("is_error").and_then(Value::as_bool) == Some(true)),
                "{sdk:?}: {second:?}"
            );
            assert!(
                text(0).contains("the boom handler blew up"),
                "{sdk:?}: {}",
                text(0)
            );
            // A bare deny rule hides the tool from the model altogether.
            assert!(
                text(1).contains("No such tool: \\\"mcp__calc__secret"),
                "{sdk:?}: {}",
                text(1)
            );
            assert!(text(2).contains("MCP_TOOL_TIMEOUT"), "{sdk:?}: {}", text(2));
            // mcp_status: the real state, with the server's tools.
            let status = servers(v.get("status").unwrap());
            assert_eq!(
                status[0].str_field("name"),
                Some("calc"),
                "{sdk:?}: {status:?}"
            );
            assert_eq!(status[0].str_field("status"), Some("connected"));
            assert!(status[0].to_json().contains("\"add\""), "{status:?}");
        },
    );
}

#[test]
fn row2_initialize_fields_and_sdk_flags_are_honoured_or_named() {
    both(
        "sdk-init",
        "init_fields",
        |sdk| {
            let mut calls = vec![("toolu_g", "Glob", r#"{"pattern": "*.txt"}"#)];
            if sdk == Sdk::TypeScript {
                calls.push(("toolu_b", "Bash", r#"{"command": "touch bash-ran.txt"}"#));
            }
            vec![standin::tools_reply(&calls), standin::text_reply("seen")]
        },
        |sdk, v, api, dir| {
            let reqs = api.requests();
            let system = system_text(&reqs[0]);
            let init = v.get("init").unwrap();
            let init = init.get("data").unwrap_or(init);
            let ignored = init.get("ignored_options").unwrap().to_json();
            assert_eq!(
                strs(v, "hook_saw"),
                ["Glob"],
                "{sdk:?}: the hook callback ran"
            );
            assert!(
                strs(init, "agents").contains(&"reviewer".to_string()),
                "{init}"
            );
            assert_eq!(init.str_field("permissionMode"), Some("bypassPermissions"));
            // The SDK's thinking budget is asked for, not ignored.
            assert!(!ignored.contains("thinking"), "{sdk:?}: {ignored}");
            assert_eq!(
                body(&reqs[0])
                    .get("thinking")
                    .map(Value::to_json)
                    .as_deref(),
                Some(r#"{"type":"enabled","budget_tokens":2048}"#),
                "{sdk:?}"
            );
            match sdk {
                Sdk::Python => {
                    assert!(system.contains("Python SDK test prompt"), "{system}");
                    assert!(ignored.contains("--debug-to-stderr"), "{ignored}");
                }
                Sdk::TypeScript => {
                    // appendSystemPrompt, mcpServers and disallowedTools
                    // arrived in initialize.
                    assert!(system.contains("APPENDED BY THE TS SDK"), "{system}");
                    assert!(
                        tool_names(&reqs[0]).contains(&"mcp__scripted__add_tool".to_string()),
                        "{:?}",
                        tool_names(&reqs[0])
                    );
                    assert_eq!(
                        v.get("mcp_servers_applied").and_then(Value::as_bool),
                        Some(true)
                    );
                    assert!(
                        !dir.join("bash-ran.txt").exists(),
                        "disallowedTools was dropped"
                    );
                    let refused = v.str_field("refused").unwrap();
                    assert!(refused.contains("'settings'"), "{refused}");
                }
            }
        },
    );
}

#[test]
fn row3_json_schema_makes_the_model_answer_through_structured_output() {
    both(
        "sdk-structured",
        "structured",
        |_| {
            vec![
                standin::tools_reply(&[(
                    "toolu_s1",
                    "StructuredOutput",
                    r#"{"answer": "forty-two"}"#,
                )]),
                standin::tools_reply(&[("toolu_s2", "StructuredOutput", r#"{"answer": 42}"#)]),
                standin::text_reply("never asked for"),
            ]
        },
        |sdk, v, api, _| {
            let result = match sdk {
                Sdk::Python => v.get("result").unwrap().clone(),
                Sdk::TypeScript => v.get("results").unwrap().as_array().unwrap()[0].clone(),
            };
            assert_eq!(
                result.str_field("subtype"),
                Some("success"),
                "{sdk:?}: {result}"
            );
            assert_eq!(
                result
                    .get("structured_output")
                    .map(Value::to_json)
                    .as_deref(),
                Some(r#"{"answer":42}"#),
                "{sdk:?}: {result}"
            );
            let reqs = api.requests();
            assert_eq!(reqs.len(), 2, "{sdk:?}: done once the valid answer came");
            assert!(tool_names(&reqs[0]).contains(&"StructuredOutput".to_string()));
            // The first, invalid call went back with the validation error.
            let refused = tool_results(&reqs[1]);
            assert_eq!(
                refused[0].get("is_error").and_then(Value::as_bool),
                Some(true)
            );
            assert!(refused[0].to_json().contains("answer"), "{refused:?}");
        },
    );
}

#[test]
fn row4_control_requests_report_real_state() {
    both(
        "sdk-control",
        "control",
        |_| {
            vec![
                standin::tools_reply(&[("toolu_a", "mcp__calc__add", r#"{"a": 1, "b": 2}"#)]),
                standin::text_reply("first done"),
                standin::text_reply("second done"),
            ]
        },
        |sdk, v, api, _| {
            let status = servers(v.get("status").unwrap());
            assert_eq!(
                status[0].str_field("status"),
                Some("connected"),
                "{sdk:?}: {status:?}"
            );
            assert_eq!(
                servers(v.get("status_off").unwrap())[0].str_field("status"),
                Some("disabled")
            );
            assert_eq!(
                servers(v.get("status_on").unwrap())[0].str_field("status"),
                Some("connected")
            );
            let usage = v.get("usage").unwrap();
            let names: Vec<String> = usage
                .get("categories")
                .and_then(Value::as_array)
                .unwrap()
                .iter()
                .filter_map(|c| c.str_field("name").map(str::to_string))
                .collect();
            for want in [
                "System prompt",
                "System tools",
                "MCP tools",
                "Messages",
                "Free space",
            ] {
                assert!(
                    names.iter().any(|n| n == want),
                    "{sdk:?}: {want} missing from {names:?}"
                );
            }
            assert_eq!(
                usage.get("maxTokens").and_then(Value::as_i64),
                Some(200_000)
            );
            assert!(usage.get("totalTokens").and_then(Value::as_i64).unwrap() > 0);
            // Switched off: the second prompt's request has no calc tools.
            let reqs = api.requests();
            assert!(tool_names(&reqs[0]).contains(&"mcp__calc__add".to_string()));
            assert!(
                !tool_names(&reqs[2])
                    .iter()
                    .any(|t| t.starts_with("mcp__calc")),
                "{sdk:?}"
            );
            assert!(
                v.str_field("unknown_server").unwrap().contains("nosuch"),
                "{v}"
            );
            if sdk == Sdk::TypeScript {
                // setMaxThinkingTokens holds from the next prompt on.
                assert_eq!(v.str_field("thinking"), Some("no error"), "{v}");
                let budget = |r: &standin::Request| {
                    body(r)
                        .get("thinking")
                        .and_then(|t| t.get("budget_tokens"))
                        .and_then(Value::as_i64)
                };
                assert_eq!(budget(&reqs[0]), None);
                // 1000 is below the API's least budget, 1024.
                assert_eq!(budget(&reqs[2]), Some(1024));
            }
        },
    );
}

#[test]
fn row5_sub_agent_progress_and_task_messages_reach_the_application() {
    both(
        "sdk-subagent",
        "subagent",
        |_| {
            vec![
                standin::tools_reply(&[(
                    "toolu_agent",
                    "Agent",
                    r#"{"description": "search", "prompt": "find txt files", "subagent_type": "general-purpose"}"#,
                )]),
                standin::tools_reply(&[("toolu_cg", "Glob", r#"{"pattern": "*.txt"}"#)]),
                standin::text_reply("the child found a.txt"),
                standin::text_reply("delegated"),
                standin::tools_reply(&[(
                    "toolu_bg",
                    "Agent",
                    r#"{"description": "wait", "prompt": "say ok", "run_in_background": true}"#,
                )]),
                standin::text_reply("ok"),
                standin::text_reply("ok"),
                standin::text_reply("ok"),
            ]
        },
        |sdk, v, api, _| {
            let children = v.get("children").unwrap().to_json();
            assert!(children.contains("toolu_agent"), "{sdk:?}: {children}");
            let kinds: Vec<&Value> = v
                .get("children")
                .unwrap()
                .as_array()
                .unwrap()
                .iter()
                .collect();
            assert!(kinds.iter().any(|c| {
                c.str_field("type")
                    .unwrap()
                    .to_lowercase()
                    .contains("assistant")
            }));
            assert!(
                kinds
                    .iter()
                    .any(|c| c.str_field("type").unwrap().to_lowercase().contains("user"))
            );
            let tasks = v.get("tasks").unwrap().as_array().unwrap().clone();
            let of = |kind: &str, call: &str| -> Vec<Value> {
                tasks
                    .iter()
                    .filter(|t| {
                        t.str_field("type")
                            .unwrap()
                            .to_lowercase()
                            .replace('_', "")
                            .contains(kind)
                            && (t.str_field("tool_use_id") == Some(call) || call.is_empty())
                    })
                    .cloned()
                    .collect()
            };
            for (call, background) in [("toolu_agent", false), ("toolu_bg", true)] {
                let started = of("taskstarted", call);
                assert_eq!(started.len(), 1, "{sdk:?}: {tasks:?}");
                assert_eq!(started[0].str_field("task_type"), Some("local_agent"));
                assert_eq!(
                    started[0].get("background").and_then(Value::as_bool),
                    Some(background)
                );
                let id = started[0].str_field("task_id").unwrap();
                let done: Vec<Value> = of("tasknotification", call);
                assert_eq!(done.len(), 1, "{sdk:?}: {tasks:?}");
                assert_eq!(done[0].str_field("task_id"), Some(id));
                assert_eq!(done[0].str_field("status"), Some("completed"));
                assert!(
                    of("taskupdated", "")
                        .iter()
                        .any(|t| t.str_field("task_id") == Some(id))
                );
            }
            // The background child's result reaches the main model: in a
            // request of its own after the turn's answer (8 requests), or in
            // the turn's next request when the child finished first (7).
            let reqs = api.requests();
            assert!((7..=8).contains(&reqs.len()), "{sdk:?}: {}", reqs.len());
            assert!(
                reqs.iter().any(|r| {
                    r.body.contains("<task-notification>") && r.body.contains("toolu_bg")
                }),
                "{sdk:?}: no request carried the background result"
            );
        },
    );
}

#[test]
fn row6_fallback_after_three_overloaded_answers() {
    let overloaded = || Reply::Error {
        status: 529,
        retry_after: None,
        body: standin::error_json("overloaded_error", "Overloaded"),
    };
    both(
        "sdk-fallback",
        "fallback",
        |_| {
            vec![
                overloaded(),
                overloaded(),
                overloaded(),
                standin::text_reply("from the spare"),
            ]
        },
        |sdk, v, api, _| {
            let reqs = api.requests();
            let models: Vec<String> = reqs
                .iter()
                .map(|r| body(r).str_field("model").unwrap_or_default().to_string())
                .collect();
            assert_eq!(
                models,
                ["claude-main", "claude-main", "claude-main", "claude-spare"],
                "{sdk:?}"
            );
            let result = match sdk {
                Sdk::Python => v.get("result").unwrap().clone(),
                Sdk::TypeScript => v.get("results").unwrap().as_array().unwrap()[0].clone(),
            };
            assert_eq!(result.str_field("subtype"), Some("success"), "{result}");
            let usage = result
                .get("model_usage")
                .or(result.get("modelUsage"))
                .unwrap();
            assert!(usage.get("claude-spare").is_some(), "{sdk:?}: {usage}");
        },
    );
}

#[test]
fn row7_claude_codes_fields_with_their_names_and_types() {
    both(
        "sdk-fields",
        "fields",
        |_| {
            vec![
                standin::tools_reply(&[
                    ("toolu_r", "Read", r#"{"file_path": "/etc/hostname"}"#),
                    (
                        "toolu_b",
                        "Bash",
                        r#"{"command": "touch nope.txt", "description": "Create a marker file"}"#,
                    ),
                ]),
                standin::text_reply("checked"),
                Reply::Error {
                    status: 400,
                    retry_after: None,
                    body: standin::error_json("invalid_request_error", "bad request"),
                },
            ]
        },
        |sdk, v, api, dir| {
            let keys = strs(v, "init_keys");
            for k in [
                "agents",
                "skills",
                "plugins",
                "capabilities",
                "additional_directories",
                "terminal_slash_commands",
                "analytics_disabled",
                "product_feedback_disabled",
                "served_by_anthropic",
                "sandbox_enabled",
                "memory_paths",
                "original_cwd",
                "messaging_socket_path",
                "fast_mode_state",
                "fast_mode_disabled_reason",
                "per_turn_effort_active",
                "ultrathink_available",
                "ultrathink_typed_raises",
                "view_mode",
            ] {
                assert!(keys.iter().any(|x| x == k), "{sdk:?}: init lacks {k}");
            }
            // can_use_tool's context.
            let contexts = v.get("contexts").unwrap().as_array().unwrap().clone();
            assert_eq!(contexts.len(), 2, "{sdk:?}: {contexts:?}");
            let read = &contexts[0];
            assert_eq!(
                read.str_field("blocked_path"),
                Some("/etc/hostname"),
                "{sdk:?}: {read}"
            );
            assert_eq!(read.str_field("display_name"), Some("Read"));
            let bash = &contexts[1];
            assert_eq!(
                bash.str_field("description"),
                Some("Create a marker file"),
                "{bash}"
            );
            assert!(
                bash.get("suggestions")
                    .unwrap()
                    .to_json()
                    .contains("touch:*"),
                "{bash}"
            );
            assert!(
                bash.get("suggestions")
                    .unwrap()
                    .to_json()
                    .contains("addRules"),
                "{bash}"
            );
            // The denial reached the model as the callback wrote it.
            let sent = tool_results(&api.requests()[1]);
            for r in &sent {
                assert_eq!(
                    r.str_field("content"),
                    Some("custom denial text"),
                    "{sdk:?}: {r}"
                );
            }
            assert!(!dir.join("nope.txt").exists());
            let tur = v.get("tool_use_results").unwrap().to_json();
            assert_eq!(
                tur, r#"["custom denial text","custom denial text"]"#,
                "{sdk:?}"
            );
            // The results.
            let results = v.get("results").unwrap().as_array().unwrap().clone();
            let ok = &results[0];
            let usage = ok.get("model_usage").or(ok.get("modelUsage")).unwrap();
            let model = usage
                .get("claude-sonnet-4-5")
                .unwrap_or_else(|| panic!("{usage}"));
            assert_eq!(model.get("inputTokens").and_then(Value::as_i64), Some(200));
            assert_eq!(ok.str_field("terminal_reason"), Some("completed"));
            assert!(
                ok.get("api_error_status").is_some_and(Value::is_null),
                "{ok}"
            );
            let failed = &results[1];
            assert_eq!(failed.get("is_error").and_then(Value::as_bool), Some(true));
            assert_eq!(
                failed.str_field("terminal_reason"),
                Some("api_error"),
                "{failed}"
            );
            assert_eq!(
                failed.get("api_error_status").and_then(Value::as_i64),
                Some(400)
            );
            if sdk == Sdk::TypeScript {
                assert!(ok.get("ttft_ms").and_then(Value::as_f64).is_some(), "{ok}");
                let stamps = v.get("timestamps").unwrap().as_array().unwrap().clone();
                assert!(!stamps.is_empty());
                for s in stamps {
                    let s = s
                        .as_str()
                        .unwrap_or_else(|| panic!("a message without timestamp"));
                    assert!(s.ends_with('Z') && s.len() == 24, "{s}");
                }
            }
        },
    );
}

/// The Python SDK's `plugins` option (`--plugin-dir` on tern's command
/// line): the plugin's command expands, its agent and command are named
/// in `system/init`, and its SessionStart hook runs.
#[cfg(feature = "mcp")]
#[test]
fn the_sdks_plugins_option_loads_a_plugin() {
    let Some(py) = python() else { return };
    let dir = scratch("sdk-plugin");
    let plugin = dir.with_extension("plugins").join("sdkplug");
    crate::plugins::write_plugin(&plugin, "sdkplug");
    let api = StandIn::start(vec![standin::text_reply("Hello, sdk.")]);
    let (v, stderr) = scenario(&py, "plugin", &api, &dir);
    assert_eq!(strs(&v, "plugins"), ["sdkplug"], "{v}\n{stderr}");
    assert!(
        strs(&v, "slash_commands").contains(&"sdkplug:hello".to_string()),
        "{v}"
    );
    assert!(
        strs(&v, "agents").contains(&"sdkplug:reviewer".to_string()),
        "{v}"
    );
    let result = v.get("result").unwrap();
    assert_eq!(result.str_field("text"), Some("Hello, sdk."));
    assert!(
        api.requests()[0]
            .body
            .contains("Greet sdk warmly, from the plugin."),
        "{}",
        api.requests()[0].body
    );
    assert!(
        plugin.join("session.log").exists(),
        "the plugin's hook did not run"
    );
}
