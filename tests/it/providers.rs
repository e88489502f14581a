//! The same end-to-end scenarios over both wire formats: the Anthropic
//! Messages API and OpenAI-compatible chat completions (which local
//! servers speak). The stand-in serves one script in either format,
//! chosen by the path tern posts to.

use crate::support;

use std::process::Command;

use support::standin::{self, Reply, StandIn, Step};
use support::*;
use tern::json::Value;

#[derive(Clone, Copy, Debug)]
enum Wire {
    Anthropic,
    OpenAi,
}

const BOTH: [Wire; 2] = [Wire::Anthropic, Wire::OpenAi];

fn tern_on(wire: Wire, api: &StandIn, dir: &std::path::Path) -> Command {
    let mut c = tern(&api.url, dir);
    if let Wire::OpenAi = wire {
        c.env_remove("ANTHROPIC_BASE_URL")
            .env_remove("ANTHROPIC_API_KEY")
            .env("TERN_PROVIDER", "openai")
            .env("OPENAI_BASE_URL", format!("{}/v1", api.url))
            .env("OPENAI_API_KEY", "sk-openai-test");
    }
    c
}

fn path_for(wire: Wire) -> &'static str {
    match wire {
        Wire::Anthropic => "/v1/messages",
        Wire::OpenAi => "/v1/chat/completions",
    }
}

#[test]
fn a_text_answer() {
    for wire in BOTH {
        let dir = scratch("wire-text");
        let api = StandIn::start(vec![standin::text_reply("Hello from either side.")]);
        let out = run(tern_on(wire, &api, &dir).args(["-p", "hi", "--output-format", "json"]));
        assert_ok(&out);
        let result = last_result(&out);
        assert_eq!(
            result.str_field("result"),
            Some("Hello from either side."),
            "{wire:?}"
        );
        let usage = result.get("usage").unwrap();
        assert_eq!(
            usage.get("input_tokens").and_then(Value::as_i64),
            Some(100),
            "{wire:?}"
        );
        let req = &api.requests()[0];
        assert_eq!(req.path, path_for(wire));
        match wire {
            Wire::Anthropic => assert_eq!(req.header("x-api-key"), Some("sk-test")),
            Wire::OpenAi => {
                assert_eq!(req.header("authorization"), Some("Bearer sk-openai-test"));
                assert!(req.header("anthropic-version").is_none());
            }
        }
    }
}

#[test]
fn parallel_tool_calls_with_split_json_and_results_sent_back() {
    for wire in BOTH {
        let dir = scratch("wire-tools");
        std::fs::write(dir.join("notes.txt"), "the answer is 42\n").unwrap();
        let api = StandIn::start(vec![
            standin::tools_reply(&[
                ("toolu_read", "Read", r#"{"file_path": "notes.txt"}"#),
                ("toolu_glob", "Glob", r#"{"pattern": "*.txt"}"#),
            ]),
            standin::text_reply("It is 42."),
        ]);
        api.set_split(standin::Split::Random { seed: 99, max: 7 });
        let out = run(tern_on(wire, &api, &dir).args([
            "-p",
            "what is the answer?",
            "--output-format",
            "json",
        ]));
        assert_ok(&out);
        assert_eq!(last_result(&out).str_field("result"), Some("It is 42."));
        let second = body(&api.requests()[1]);
        let msgs = second.get("messages").unwrap().as_array().unwrap();
        match wire {
            Wire::Anthropic => {
                let results = tool_results(&api.requests()[1]);
                assert_eq!(results.len(), 2);
                assert!(results[0].to_json().contains("the answer is 42"));
            }
            Wire::OpenAi => {
                let tool_msgs: Vec<&Value> = msgs
                    .iter()
                    .filter(|m| m.str_field("role") == Some("tool"))
                    .collect();
                assert_eq!(tool_msgs.len(), 2, "{second}");
                assert_eq!(tool_msgs[0].str_field("tool_call_id"), Some("toolu_read"));
                assert!(
                    tool_msgs[0]
                        .str_field("content")
                        .unwrap()
                        .contains("the answer is 42")
                );
                let calls = msgs
                    .iter()
                    .find_map(|m| m.get("tool_calls"))
                    .and_then(Value::as_array)
                    .unwrap();
                assert_eq!(calls.len(), 2);
                assert_eq!(
                    calls[0].get("function").unwrap().str_field("arguments"),
                    Some(r#"{"file_path":"notes.txt"}"#)
                );
                assert!(second.get("tools").unwrap().as_array().unwrap().len() >= 6);
            }
        }
    }
}

#[test]
fn overload_and_rate_limits_are_retried() {
    for wire in BOTH {
        let dir = scratch("wire-retry");
        let api = StandIn::start(vec![
            Reply::Error {
                status: 529,
                retry_after: None,
                body: standin::error_json("overloaded_error", "busy"),
            },
            Reply::Error {
                status: 429,
                retry_after: Some("0".into()),
                body: r#"{"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limit"}}"#.into(),
            },
            standin::text_reply("third time lucky"),
        ]);
        let out =
            run(tern_on(wire, &api, &dir).args(["-p", "x", "--output-format", "stream-json"]));
        assert_ok(&out);
        let retries: Vec<Value> = lines(&out)
            .into_iter()
            .filter(|l| l.str_field("subtype") == Some("api_retry"))
            .collect();
        assert_eq!(retries.len(), 2, "{wire:?}");
        assert_eq!(
            retries[1].get("error_status").and_then(Value::as_i64),
            Some(429)
        );
        assert!(retries[1].str_field("error").unwrap().contains("slow down"));
    }
}

#[test]
fn a_cut_stream_is_retried_and_a_length_stop_continued() {
    for wire in BOTH {
        let dir = scratch("wire-cut");
        let mut cut = vec![standin::message_start("msg_cut")];
        cut.extend(standin::text_block(0, "partial"));
        cut.truncate(2);
        cut.push(Step::Cut);
        let mut long = vec![standin::message_start("msg_len")];
        long.extend(standin::text_block(0, "The first half"));
        long.extend(standin::message_end("max_tokens", 64));
        let api = StandIn::start(vec![
            Reply::Stream(cut),
            Reply::Stream(long),
            standin::text_reply("and the rest."),
        ]);
        let out = run(tern_on(wire, &api, &dir).args(["-p", "x", "--output-format", "json"]));
        assert_ok(&out);
        assert_eq!(
            last_result(&out).str_field("result"),
            Some("and the rest."),
            "{wire:?}"
        );
        let reqs = api.requests();
        assert_eq!(reqs.len(), 3);
        assert!(reqs[2].body.contains("cut off by the output token limit"));
        assert!(reqs[2].body.contains("The first half"));
    }
}

#[test]
fn an_error_inside_the_stream_is_reported() {
    for wire in BOTH {
        let dir = scratch("wire-instream");
        let steps = vec![
            standin::message_start("msg_err"),
            standin::ev(
                "error",
                standin::error_json("invalid_request_error", "prompt is too long"),
            ),
        ];
        let api = StandIn::start(vec![Reply::Stream(steps)]);
        let out = run(tern_on(wire, &api, &dir).args(["-p", "x"]));
        assert_eq!(out.status.code(), Some(1), "{wire:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("prompt is too long"));
    }
}

/// The provider, endpoint and key variable can come from (user) settings;
/// a repository's settings may not choose them.
#[test]
fn settings_choose_the_provider_endpoint_and_key_variable() {
    let dir = scratch("wire-settings");
    let api = StandIn::start(vec![standin::text_reply("configured by settings")]);
    let user = home_of(&dir).join(".config/tern");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("settings.json"),
        format!(
            r#"{{"provider": "openai", "baseUrl": "{}/v1", "apiKeyEnv": "MY_LOCAL_KEY", "model": "qwen2.5-coder"}}"#,
            api.url
        ),
    )
    .unwrap();
    let out = run(tern(&api.url, &dir)
        .env_remove("ANTHROPIC_BASE_URL")
        .env("MY_LOCAL_KEY", "local-secret")
        .args(["-p", "hi", "--output-format", "json"]));
    assert_ok(&out);
    assert_eq!(
        last_result(&out).str_field("result"),
        Some("configured by settings")
    );
    let req = &api.requests()[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.header("authorization"), Some("Bearer local-secret"));
    assert_eq!(body(req).str_field("model"), Some("qwen2.5-coder"));
}
