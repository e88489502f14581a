//! The stream-json protocol without the SDK: prompts as NDJSON on stdin,
//! partial messages, control requests answered, unknown input tolerated,
//! and the flags Claude Code's SDK passes accepted.

use crate::support;

use std::io::Write;
use std::process::Stdio;

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;

fn talk(api: &StandIn, dir: &std::path::Path, extra: &[&str], input: &str) -> std::process::Output {
    talk_bytes(api, dir, extra, input.as_bytes())
}

fn talk_bytes(
    api: &StandIn,
    dir: &std::path::Path,
    extra: &[&str],
    input: &[u8],
) -> std::process::Output {
    let mut child = tern(&api.url, dir)
        .args([
            "--output-format",
            "stream-json",
            "--verbose",
            "--input-format",
            "stream-json",
        ])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[test]
fn prompts_on_stdin_partial_messages_and_control_requests() {
    let dir = scratch("protocol");
    let api = StandIn::start(vec![
        standin::text_reply("first"),
        standin::text_reply("second"),
    ]);
    let input = [
        r#"{"type":"control_request","request_id":"r1","request":{"subtype":"initialize","hooks":null}}"#,
        r#"{"type":"keep_alive"}"#,
        r#"{"type":"user","session_id":"whatever","message":{"role":"user","content":"one"},"parent_tool_use_id":null}"#,
        "not json at all",
        r#"{"type":"control_request","request_id":"r2","request":{"subtype":"set_model","model":"claude-haiku-4-5"}}"#,
        r#"{"type":"control_request","request_id":"r3","request":{"subtype":"rewind_everything"}}"#,
        r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"two"}]}}"#,
    ]
    .join("\n");
    let out = talk(
        &api,
        &dir,
        &["--include-partial-messages"],
        &format!("{input}\n"),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all = lines(&out);
    let control: Vec<&Value> = all
        .iter()
        .filter(|l| l.str_field("type") == Some("control_response"))
        .collect();
    assert_eq!(control.len(), 3);
    let status = |id: &str| {
        control
            .iter()
            .find(|c| c.get("response").and_then(|r| r.str_field("request_id")) == Some(id))
            .and_then(|c| c.get("response").and_then(|r| r.str_field("subtype")))
    };
    assert_eq!(status("r1"), Some("success"));
    assert_eq!(status("r2"), Some("success"));
    assert_eq!(status("r3"), Some("error"));
    let results: Vec<&Value> = all
        .iter()
        .filter(|l| l.str_field("type") == Some("result"))
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[1].str_field("result"), Some("second"));
    let events: Vec<&str> = all
        .iter()
        .filter(|l| l.str_field("type") == Some("stream_event"))
        .filter_map(|l| l.get("event").and_then(|e| e.str_field("type")))
        .collect();
    assert!(
        events.starts_with(&["message_start"]) && events.contains(&"content_block_delta"),
        "{events:?}"
    );
    // set_model applies from the next prompt on.
    let reqs = api.requests();
    assert_eq!(body(&reqs[0]).str_field("model"), Some("claude-sonnet-4-5"));
    assert_eq!(body(&reqs[1]).str_field("model"), Some("claude-haiku-4-5"));
    assert!(
        reqs[1].body.contains("one") && reqs[1].body.contains("two"),
        "one session"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("not JSON"));
}

/// A line that is not UTF-8 is that line's problem: it is reported, a
/// control request in it gets an error answer, and the prompts before and
/// after it are answered in the same session (it once ended the input).
#[test]
fn a_line_that_is_not_utf8_loses_nothing_else() {
    let dir = scratch("protocol-utf8");
    let api = StandIn::start(vec![
        standin::text_reply("first"),
        standin::text_reply("second"),
    ]);
    let mut input = Vec::new();
    input.extend_from_slice(br#"{"type":"user","message":{"role":"user","content":"one"}}"#);
    input.push(b'\n');
    input.extend_from_slice(
        b"{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"caf\xe9\"}}\n",
    );
    input.extend_from_slice(
        b"{\"type\":\"control_request\",\"request_id\":\"bad\",\"request\":{\"subtype\":\"set_model\",\"model\":\"x\xff\"}}\n",
    );
    input.extend_from_slice(br#"{"type":"user","message":{"role":"user","content":"two"}}"#);
    input.push(b'\n');
    let out = talk_bytes(&api, &dir, &[], &input);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("not valid UTF-8"), "{err}");
    let all = lines(&out);
    let results: Vec<&str> = all
        .iter()
        .filter(|l| l.str_field("type") == Some("result"))
        .filter_map(|l| l.str_field("result"))
        .collect();
    assert_eq!(results, ["first", "second"]);
    let answer = all
        .iter()
        .filter(|l| l.str_field("type") == Some("control_response"))
        .filter_map(|l| l.get("response"))
        .find(|r| r.str_field("request_id") == Some("bad"));
    assert_eq!(
        answer.and_then(|r| r.str_field("subtype")),
        Some("error"),
        "{all:?}"
    );
    // The bad model name was not applied: the second prompt keeps the model.
    let reqs = api.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(body(&reqs[1]).str_field("model"), Some("claude-sonnet-4-5"));
    assert!(
        !reqs[1].body.contains("caf"),
        "the bad line is not a prompt"
    );
}

#[test]
fn flags_the_sdk_passes_are_accepted() {
    let dir = scratch("sdk-flags");
    let api = StandIn::start(vec![standin::text_reply("fine")]);
    let out = talk(
        &api,
        &dir,
        &[
            "--system-prompt",
            "",
            "--setting-sources=",
            "--mcp-config",
            "{\"mcpServers\":{}}",
            "--strict-mcp-config",
            "--max-thinking-tokens",
            "8000",
            "--permission-prompt-tool",
            "stdio",
            "--include-hook-events",
        ],
        "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--include-hook-events accepted") && !stderr.contains("thinking"),
        "{stderr}"
    );
    assert_eq!(
        body(&api.requests()[0])
            .get("thinking")
            .and_then(|t| t.get("budget_tokens"))
            .and_then(Value::as_i64),
        Some(8000)
    );
    // An empty --system-prompt leaves no empty block behind.
    let system = body(&api.requests()[0]).get("system").unwrap().to_json();
    assert!(!system.contains("\"text\":\"\""), "{system}");
    let v = run(tern(&api.url, &dir).arg("-v"));
    let version = String::from_utf8_lossy(&v.stdout);
    assert!(
        version.split('.').count() >= 3
            && version.chars().next().is_some_and(|c| c.is_ascii_digit())
    );
}

/// A user message the application named keeps its name: the transcript
/// records the prompt under the application's uuid (so `rewind_files`
/// can be given it); a malformed one is replaced by tern's own.
#[test]
fn an_sdk_user_message_keeps_its_uuid() {
    let dir = scratch("protocol-uuid");
    let api = StandIn::start(vec![standin::text_reply("a"), standin::text_reply("b")]);
    let given = "5f0c6f2e-3b1a-4c8e-9d7a-1e2f3a4b5c6d";
    let input = format!(
        "{}\n{}\n",
        format_args!(
            r#"{{"type":"user","uuid":"{given}","message":{{"role":"user","content":"one"}},"parent_tool_use_id":null}}"#
        ),
        r#"{"type":"user","uuid":"../../not-a-uuid","message":{"role":"user","content":"two"},"parent_tool_use_id":null}"#,
    );
    let out = talk(&api, &dir, &[], &input);
    assert_ok(&out);
    let home = home_of(&dir);
    let mut files = Vec::new();
    let mut stack = vec![home];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") && !p.ends_with("index.jsonl") {
                files.push(p);
            }
        }
    }
    let text: String = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    let prompts: Vec<Value> = text
        .lines()
        .map(|l| tern::json::parse(l).unwrap())
        .filter(|v| v.str_field("type") == Some("user"))
        .collect();
    assert_eq!(prompts.len(), 2, "{text}");
    assert_eq!(prompts[0].str_field("uuid"), Some(given));
    let other = prompts[1].str_field("uuid").unwrap();
    assert!(other != given && !other.contains('/'), "{other}");
}
