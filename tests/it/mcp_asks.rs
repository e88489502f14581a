//! What MCP servers ask of tern: forms (elicitation), the model
//! (sampling) and progress, against a real stdio server
//! (tests/mcp/asking_server.py) and the stand-in model API.
#![cfg(feature = "mcp")]

use crate::support;

use std::path::{Path, PathBuf};

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;

fn asking(log: &Path) -> String {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/asking_server.py");
    let server = tern::obj! {
        "command" => "python3",
        "args" => vec![Value::from(script.display().to_string()), Value::from(log.display().to_string())],
    };
    tern::obj! { "mcpServers" => tern::obj! { "asker" => server } }.to_json()
}

fn result_text(v: &Value) -> String {
    v.get("content").map(Value::to_json).unwrap_or_default()
}

#[test]
fn print_mode_declines_forms_refuses_sampling_and_shows_progress() {
    let dir = scratch("mcp-asks-p");
    let log = dir.join("caps.jsonl");
    let api = StandIn::start(vec![
        standin::tools_reply(&[
            ("toolu_form", "mcp__asker__form", "{}"),
            ("toolu_bad", "mcp__asker__bad_form", "{}"),
            ("toolu_sample", "mcp__asker__sample", "{}"),
            ("toolu_slow", "mcp__asker__slow", "{}"),
        ]),
        standin::text_reply("finished"),
    ]);
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "ask",
        "--mcp-config",
        &asking(&log),
        "--permission-mode",
        "bypassPermissions",
        "--output-format",
        "stream-json",
        "--verbose",
    ]));
    assert_ok(&out);
    // Nobody can answer: neither is offered.
    let caps = std::fs::read_to_string(&log).unwrap();
    assert!(
        !caps.contains("elicitation") && !caps.contains("sampling"),
        "{caps}"
    );
    let results = tool_results(&api.requests()[1]);
    assert_eq!(results.len(), 4);
    assert!(
        result_text(&results[0]).contains("action=decline"),
        "{}",
        results[0]
    );
    // A schema that is not an object: a clear error to the server, and
    // the session goes on.
    let bad = result_text(&results[1]);
    assert!(bad.contains("error=invalid elicitation request"), "{bad}");
    assert!(bad.contains("JSON object schema"), "{bad}");
    let sampled = result_text(&results[2]);
    assert!(
        sampled.contains("error=this client did not offer"),
        "{sampled}"
    );
    assert!(
        result_text(&results[3]).contains("done token="),
        "{}",
        results[3]
    );
    // The model was asked nothing on the server's behalf.
    assert_eq!(api.requests().len(), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("nobody can answer here, so it was declined"),
        "{stderr}"
    );
    assert!(stderr.contains("a form tern cannot show"), "{stderr}");
    let progress: Vec<String> = lines(&out)
        .iter()
        .filter(|l| l.str_field("type") == Some("tool_progress"))
        .filter(|l| l.str_field("tool_use_id") == Some("toolu_slow"))
        .map(|l| l.str_field("text").unwrap_or_default().to_string())
        .collect();
    assert!(
        progress.iter().any(|t| t == "1/2 · halfway"),
        "{progress:?}"
    );
    assert!(progress.iter().any(|t| t == "2/2"), "{progress:?}");
}

#[test]
fn accept_defaults_and_a_sampling_rule_answer_unattended_and_sampling_is_paid_for() {
    let dir = scratch("mcp-asks-allowed");
    let log = dir.join("caps.jsonl");
    let api = StandIn::start(vec![
        standin::tools_reply(&[
            ("toolu_form", "mcp__asker__form", "{}"),
            ("toolu_sample", "mcp__asker__sample", "{}"),
        ]),
        standin::text_reply("hi from the model"),
        standin::text_reply("finished"),
    ]);
    let out = run(tern(&api.url, &dir)
        .env("TERN_MCP_ELICITATION", "accept-defaults")
        .args([
            "-p",
            "ask",
            "--mcp-config",
            &asking(&log),
            "--permission-mode",
            "bypassPermissions",
            "--allowedTools",
            "McpSampling(asker)",
            "--output-format",
            "json",
        ]));
    assert_ok(&out);
    let caps = std::fs::read_to_string(&log).unwrap();
    assert!(
        caps.contains("\"elicitation\"") && caps.contains("\"sampling\""),
        "{caps}"
    );
    let requests = api.requests();
    assert_eq!(requests.len(), 3, "the sampling request went to the model");
    // The server's request as it was: its system prompt and message, no
    // tools, nothing of the conversation.
    let sampling = body(&requests[1]).to_json();
    assert!(
        sampling.contains("You are terse.") && sampling.contains("say hi"),
        "{sampling}"
    );
    assert!(
        !sampling.contains("\"tools\":[{") && !sampling.contains("\"ask\""),
        "{sampling}"
    );
    assert!(sampling.contains("\"max_tokens\":50"), "{sampling}");
    let results = tool_results(&requests[2]);
    // `age` is required and has no default: the unattended accept could
    // not complete the form, so it was declined rather than made up.
    assert!(
        result_text(&results[0]).contains("action=decline"),
        "{}",
        results[0]
    );
    assert!(
        result_text(&results[1]).contains("sampled=hi from the model"),
        "{}",
        results[1]
    );
    // Three model requests are paid for, the server's among them.
    let result: Value = tern::json::parse(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    let usage = result
        .get("modelUsage")
        .map(Value::to_json)
        .unwrap_or_default();
    assert!(usage.contains("\"inputTokens\":300"), "{usage}");
}
