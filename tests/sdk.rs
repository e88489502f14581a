//! The official Python Agent SDK (`pip install claude-agent-sdk`) driving
//! tern through its control protocol, unmodified: `cli_path` is tern,
//! ANTHROPIC_BASE_URL the stand-in. Scenarios live in tests/sdk/scenarios.py.
//! Skipped with a message where the SDK is not installed, unless
//! TERN_REQUIRE_SDK=1 (CI) makes that a failure.

mod support;

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
    cmd.arg(script)
        .arg(name)
        .current_dir(dir)
        .env("TERN", tern_bin())
        .env("HOME", home_of(dir))
        .env("ANTHROPIC_BASE_URL", &api.url)
        .env("ANTHROPIC_API_KEY", "sk-sdk-test")
        .env("TERN_RETRY_BASE_MS", "20");
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
