//! Tool calls a small model writes as text, through the binary: recovered
//! from a local chat completions server and run through the same pipeline
//! as native ones; near misses, other servers and the setting left alone.

use crate::support;

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;

fn local_openai(api: &StandIn, dir: &std::path::Path) -> std::process::Command {
    let mut c = tern(&api.url, dir);
    c.env_remove("ANTHROPIC_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env("TERN_PROVIDER", "openai")
        .env("OPENAI_BASE_URL", format!("{}/v1", api.url))
        .env("OPENAI_API_KEY", "sk-local");
    c
}

const HERMES_READ: &str = "I will read it.\n<tool_call>\n{\"name\": \"Read\", \"arguments\": {\"file_path\": \"notes.txt\"}}\n</tool_call>";

#[test]
fn a_call_written_as_text_runs_through_the_pipeline() {
    let dir = scratch("text-calls");
    std::fs::write(dir.join("notes.txt"), "buy milk\n").unwrap();
    let api = StandIn::start(vec![
        standin::text_reply(HERMES_READ),
        standin::text_reply("The notes say buy milk."),
    ]);
    let out = run(local_openai(&api, &dir).args([
        "-p",
        "what do my notes say?",
        "--allowedTools",
        "Read",
        "--output-format",
        "json",
    ]));
    assert_ok(&out);
    assert_eq!(
        last_result(&out).str_field("result"),
        Some("The notes say buy milk.")
    );
    let reqs = api.requests();
    assert_eq!(reqs.len(), 2);
    // The model is shown its call as a call, and the tool's answer.
    let messages = body(&reqs[1])
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap();
    let assistant = messages
        .iter()
        .find(|m| m.str_field("role") == Some("assistant"))
        .unwrap();
    let call = &assistant
        .get("tool_calls")
        .and_then(Value::as_array)
        .unwrap()[0];
    assert_eq!(
        call.get("function").and_then(|f| f.str_field("name")),
        Some("Read")
    );
    assert_eq!(assistant.str_field("content"), Some("I will read it."));
    let result = messages
        .iter()
        .find(|m| m.str_field("role") == Some("tool"))
        .unwrap();
    assert!(
        result.str_field("content").unwrap().contains("buy milk"),
        "{result}"
    );
}

#[test]
fn a_recovered_call_is_asked_about_like_any_other() {
    // Nothing allows Write: in -p with no one to ask, it is refused.
    let dir = scratch("text-calls-denied");
    let api = StandIn::start(vec![
        standin::text_reply(
            "<tool_call>{\"name\": \"Write\", \"arguments\": {\"file_path\": \"x.txt\", \"content\": \"hi\"}}</tool_call>",
        ),
        standin::text_reply("could not"),
    ]);
    let out = run(local_openai(&api, &dir).args(["-p", "write it", "--output-format", "json"]));
    assert_ok(&out);
    assert!(!dir.join("x.txt").exists());
    let denials = last_result(&out)
        .get("permission_denials")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    assert_eq!(denials.len(), 1, "{denials:?}");
}

#[test]
fn near_misses_other_servers_and_the_setting_leave_the_text_alone() {
    let dir = scratch("text-calls-misses");
    std::fs::write(dir.join("notes.txt"), "buy milk\n").unwrap();
    let not_offered =
        "<tool_call>{\"name\": \"Delete\", \"arguments\": {\"path\": \"notes.txt\"}}</tool_call>";
    let api = StandIn::start(vec![]);
    api.set_fallback(standin::text_reply(not_offered));
    let out = run(local_openai(&api, &dir).args(["-p", "x", "--output-format", "json"]));
    assert_ok(&out);
    assert_eq!(last_result(&out).str_field("result"), Some(not_offered));
    assert_eq!(api.requests().len(), 1);

    // Turned off by the setting: the text is the answer.
    let api = StandIn::start(vec![]);
    api.set_fallback(standin::text_reply(HERMES_READ));
    let out = run(local_openai(&api, &dir).args([
        "-p",
        "x",
        "--allowedTools",
        "Read",
        "--settings",
        r#"{"toolCallRecovery": false}"#,
        "--output-format",
        "json",
    ]));
    assert_ok(&out);
    assert_eq!(last_result(&out).str_field("result"), Some(HERMES_READ));
    assert_eq!(api.requests().len(), 1);

    // The Messages API answers with native calls: its text is text.
    let api = StandIn::start(vec![]);
    api.set_fallback(standin::text_reply(HERMES_READ));
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "x",
        "--allowedTools",
        "Read",
        "--output-format",
        "json",
    ]));
    assert_ok(&out);
    assert_eq!(last_result(&out).str_field("result"), Some(HERMES_READ));
    assert_eq!(api.requests().len(), 1);
}
