//! Thinking, through the real binary and the stand-in: what is asked for
//! (compared with what Claude Code sends for the same flags), thinking
//! blocks kept with their signatures through a tool call and a resume,
//! and a chat completions server's reasoning kept out of the answer.

use crate::support;

use support::standin::{self, Reply, StandIn};
use support::*;
use tern::json::Value;

/// A reply that thinks (one block in the clear, one redacted, as the API
/// sends them), then asks for one Read.
fn thinking_then_read(signature: &str) -> Reply {
    let mut steps = vec![standin::message_start("msg_think")];
    steps.extend(standin::thinking_block(
        0,
        "The user wants the notes; read them first.",
        signature,
    ));
    steps.push(standin::ev(
        "content_block_start",
        format!(
            r#"{{"type":"content_block_start","index":1,"content_block":{{"type":"redacted_thinking","data":"{REDACTED}"}}}}"#
        ),
    ));
    steps.push(standin::block_stop(1));
    steps.extend(standin::tool_block(
        2,
        "toolu_read",
        "Read",
        r#"{"file_path":"notes.txt"}"#,
        7,
    ));
    steps.extend(standin::message_end("tool_use", 30));
    Reply::Stream(steps)
}

/// A reply that thinks, then answers.
fn thinking_then_text(thinking: &str, text: &str) -> Reply {
    let mut steps = vec![standin::message_start("msg_answer")];
    steps.extend(standin::thinking_block(0, thinking, "sig-answer"));
    steps.extend(standin::text_block(1, text));
    steps.extend(standin::message_end("end_turn", 12));
    Reply::Stream(steps)
}

/// What a redacted block carries: opaque, and to be sent back as it came.
const REDACTED: &str = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP";

fn messages(req: &standin::Request) -> Vec<Value> {
    body(req)
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The thinking blocks of every assistant message a request carries.
fn thinking_sent(req: &standin::Request) -> Vec<Value> {
    messages(req)
        .iter()
        .filter(|m| m.str_field("role") == Some("assistant"))
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|b| b.str_field("type") == Some("thinking"))
        .cloned()
        .collect()
}

#[test]
fn a_budget_is_asked_for_and_thinking_survives_a_tool_call_and_a_resume() {
    let dir = scratch("thinking-round-trip");
    std::fs::write(dir.join("notes.txt"), "buy milk\n").unwrap();
    let api = StandIn::start(vec![
        thinking_then_read("sig-one"),
        standin::text_reply("The notes say: buy milk."),
        standin::text_reply("Still milk."),
    ]);
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "what do my notes say?",
        "--max-thinking-tokens",
        "4000",
        "--allowedTools",
        "Read",
        "--output-format",
        "stream-json",
        "--verbose",
    ]));
    assert_ok(&out);
    let reqs = api.requests();
    let first = body(&reqs[0]);
    assert_eq!(
        first.get("thinking").map(Value::to_json).as_deref(),
        Some(r#"{"type":"enabled","budget_tokens":4000}"#)
    );
    assert!(
        reqs[0]
            .header("anthropic-beta")
            .is_some_and(|b| b.contains("interleaved-thinking-2025-05-14")),
        "{:?}",
        reqs[0].headers
    );
    // The block goes back whole, signature and all, before its tool call.
    let second = messages(&reqs[1]);
    let assistant = second
        .iter()
        .find(|m| m.str_field("role") == Some("assistant"))
        .unwrap();
    let blocks = assistant.get("content").and_then(Value::as_array).unwrap();
    assert_eq!(
        blocks[0].to_json(),
        r#"{"type":"thinking","thinking":"The user wants the notes; read them first.","signature":"sig-one"}"#
    );
    assert_eq!(
        blocks[1].to_json(),
        format!(r#"{{"type":"redacted_thinking","data":"{REDACTED}"}}"#)
    );
    assert_eq!(blocks[2].str_field("type"), Some("tool_use"));
    // stream-json shows it as Claude Code does: a block of the message.
    let printed = lines(&out);
    assert!(
        printed
            .iter()
            .any(|l| l.str_field("type") == Some("assistant")
                && l.get("message")
                    .and_then(|m| m.get("content"))
                    .and_then(Value::as_array)
                    .is_some_and(|c| c
                        .iter()
                        .any(|b| b.str_field("signature") == Some("sig-one")))),
        "{printed:?}"
    );
    // A resumed session sends it back unchanged.
    let id = last_result(&out)
        .str_field("session_id")
        .unwrap()
        .to_string();
    let out = run(tern(&api.url, &dir).args([
        "--resume",
        &id,
        "-p",
        "and now?",
        "--max-thinking-tokens",
        "4000",
    ]));
    assert_ok(&out);
    let resumed = thinking_sent(&api.requests()[2]);
    assert_eq!(resumed.len(), 1, "{resumed:?}");
    assert_eq!(resumed[0].str_field("signature"), Some("sig-one"));
}

#[test]
fn no_flag_asks_for_nothing_and_effort_goes_only_where_it_is_taken() {
    let dir = scratch("thinking-fields");
    let api = StandIn::start(vec![]);
    api.set_fallback(standin::text_reply("ok"));
    let request = |args: &[&str]| {
        let before = api.requests().len();
        assert_ok(&run(tern(&api.url, &dir).arg("-p").arg("hi").args(args)));
        api.requests()[before].clone()
    };
    let plain = request(&[]);
    assert!(body(&plain).get("thinking").is_none());
    assert!(plain.header("anthropic-beta").is_none());

    // As Claude Code sends them (captured through the same stand-in).
    let opus = request(&[
        "--model",
        "claude-opus-4-6",
        "--thinking",
        "adaptive",
        "--effort",
        "medium",
    ]);
    let b = body(&opus);
    assert_eq!(
        b.get("thinking").map(Value::to_json).as_deref(),
        Some(r#"{"type":"adaptive"}"#)
    );
    assert_eq!(
        b.get("output_config").map(Value::to_json).as_deref(),
        Some(r#"{"effort":"medium"}"#)
    );
    let betas = opus
        .header("anthropic-beta")
        .unwrap_or_default()
        .to_string();
    assert!(
        betas.contains("effort-2025-11-24") && betas.contains("interleaved"),
        "{betas}"
    );

    let sonnet = request(&[
        "--model",
        "claude-sonnet-4-5",
        "--thinking",
        "adaptive",
        "--effort",
        "high",
    ]);
    let b = body(&sonnet);
    assert_eq!(
        b.get("thinking").map(Value::to_json).as_deref(),
        Some(r#"{"type":"enabled","budget_tokens":31999}"#)
    );
    assert!(b.get("output_config").is_none());

    let off = request(&["--thinking", "disabled"]);
    assert_eq!(
        body(&off).get("thinking").map(Value::to_json).as_deref(),
        Some(r#"{"type":"disabled"}"#)
    );
    // The environment variable Claude Code reads, under the flag.
    let before = api.requests().len();
    assert_ok(&run(tern(&api.url, &dir)
        .env("MAX_THINKING_TOKENS", "2048")
        .args(["-p", "hi"])));
    assert_eq!(
        body(&api.requests()[before])
            .get("thinking")
            .and_then(|t| t.get("budget_tokens"))
            .and_then(Value::as_i64),
        Some(2048)
    );
}

#[test]
fn bad_thinking_flags_are_named_and_nothing_is_sent() {
    let dir = scratch("thinking-bad-flags");
    let api = StandIn::start(vec![]);
    for args in [
        ["--thinking", "sometimes"],
        ["--max-thinking-tokens", "lots"],
        ["--effort", "extreme"],
        ["--thinking-display", "full"],
    ] {
        let out = run(tern(&api.url, &dir).args(["-p", "hi"]).args(args));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(args[1]), "{args:?}: {err}");
    }
    assert!(api.requests().is_empty());
}

#[test]
fn the_sdk_sets_a_budget_from_the_next_prompt_on() {
    use std::io::Write;
    use std::process::Stdio;
    let dir = scratch("thinking-sdk");
    let api = StandIn::start(vec![]);
    api.set_fallback(standin::text_reply("ok"));
    let input = [
        r#"{"type":"user","message":{"role":"user","content":"one"}}"#,
        r#"{"type":"control_request","request_id":"t1","request":{"subtype":"set_max_thinking_tokens","max_thinking_tokens":3000}}"#,
        r#"{"type":"user","message":{"role":"user","content":"two"}}"#,
        r#"{"type":"control_request","request_id":"t2","request":{"subtype":"set_max_thinking_tokens","max_thinking_tokens":null}}"#,
        r#"{"type":"user","message":{"role":"user","content":"three"}}"#,
        r#"{"type":"control_request","request_id":"t3","request":{"subtype":"set_max_thinking_tokens","max_thinking_tokens":"many"}}"#,
    ]
    .join("\n");
    let mut child = tern(&api.url, &dir)
        .args([
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(format!("{input}\n").as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let budgets: Vec<Option<i64>> = api
        .requests()
        .iter()
        .map(|r| {
            body(r)
                .get("thinking")
                .and_then(|t| t.get("budget_tokens"))
                .and_then(Value::as_i64)
        })
        .collect();
    assert_eq!(budgets, [None, Some(3000), None]);
    let refused = lines(&out)
        .into_iter()
        .find(|l| l.get("response").and_then(|r| r.str_field("request_id")) == Some("t3"));
    assert_eq!(
        refused
            .as_ref()
            .and_then(|l| l.get("response"))
            .and_then(|r| r.str_field("subtype")),
        Some("error")
    );
}

#[test]
fn a_chat_completions_servers_reasoning_is_thinking_not_the_answer() {
    let dir = scratch("thinking-openai");
    let api = StandIn::start(vec![
        thinking_then_text("Secret musing about the user.", "Hello!"),
        Reply::Stream({
            // A model that writes its thinking into the text.
            let mut steps = vec![standin::message_start("msg_tags")];
            steps.extend(standin::text_block(
                0,
                "<think>\nweighing it\n</think>\n\nSecond answer.",
            ));
            steps.extend(standin::message_end("end_turn", 9));
            steps
        }),
    ]);
    let openai = |args: &[&str]| {
        let mut c = tern(&api.url, &dir);
        c.env_remove("ANTHROPIC_BASE_URL")
            .env_remove("ANTHROPIC_API_KEY")
            .env("TERN_PROVIDER", "openai")
            .env("OPENAI_BASE_URL", format!("{}/v1", api.url))
            .env("OPENAI_API_KEY", "sk-openai-test")
            .args(args);
        run(&mut c)
    };
    let out = openai(&["-p", "hi", "--output-format", "json", "--effort", "xhigh"]);
    assert_ok(&out);
    let result = last_result(&out);
    assert_eq!(result.str_field("result"), Some("Hello!"));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Secret musing"));
    let first = body(&api.requests()[0]);
    assert_eq!(first.str_field("reasoning_effort"), Some("high"));
    assert!(first.get("thinking").is_none());

    let id = result.str_field("session_id").unwrap().to_string();
    let out = openai(&["--resume", &id, "-p", "again", "--output-format", "json"]);
    assert_ok(&out);
    assert_eq!(
        last_result(&out).str_field("result"),
        Some("Second answer.")
    );
    // What goes back is what the model said, not what it thought.
    let resent = &api.requests()[1];
    assert!(!resent.body.contains("Secret musing"), "{}", resent.body);
    assert!(resent.body.contains("Hello!"));
}

#[test]
fn a_person_sees_thinking_folded_and_the_answer_alone_on_stdout() {
    let dir = scratch("thinking-line");
    let api = StandIn::start(vec![thinking_then_text(
        "Consider the greeting carefully before answering the user politely.",
        "Hi there.",
    )]);
    let out =
        run(tern(&api.url, &dir).args(["-p", "hi", "--max-thinking-tokens", "2000", "--verbose"]));
    assert_ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Hi there.");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("✻ thought (9 words): Consider the greeting"),
        "{err}"
    );
}
