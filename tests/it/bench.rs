//! `tern doctor --bench` against the stand-in (each way a server can take
//! a tool), what a session does with what it kept, and a server that
//! refuses `tools` met in the middle of a session. The real servers are
//! in local_model.rs.

use crate::support;

use std::time::Duration;

use support::standin::{self, Reply, StandIn};
use support::*;
use tern::json::{self, Value};

/// The bench's first three requests: a warm-up, the long prompt, and a
/// count whose second piece comes 200 ms after the first.
fn timed_replies(tool: Reply) -> Vec<Reply> {
    vec![
        standin::text_reply("OK"),
        standin::text_reply("OK"),
        standin::slow_text("1, 2, 3,", Duration::from_millis(200), " 4, 5"),
        tool,
    ]
}

fn refusal() -> Reply {
    Reply::Error {
        status: 400,
        retry_after: None,
        body: standin::error_json("invalid_request_error", "this model does not support tools"),
    }
}

fn bench(api: &StandIn, dir: &std::path::Path) -> Value {
    let out = run(chat(api, dir).args(["doctor", "--bench", "--output-format", "json"]));
    let report = json::parse(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert!(out.status.success(), "{report}");
    report.get("bench").cloned().unwrap_or(Value::Null)
}

#[test]
fn the_bench_times_the_server_and_tells_how_it_takes_tools() {
    let cases = [
        (
            "native",
            standin::tools_reply(&[("toolu_w", "get_weather", r#"{"city": "Paris"}"#)]),
        ),
        (
            "recovered",
            standin::text_reply(
                r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>"#,
            ),
        ),
        (
            "ignored",
            // A call of a tool it was not offered is no call.
            standin::text_reply(r#"<tool_call>{"name": "rm", "arguments": {}}</tool_call>"#),
        ),
        ("refused", refusal()),
    ];
    for (want, reply) in cases {
        let dir = scratch(&format!("bench-{want}"));
        let api = StandIn::start(timed_replies(reply));
        api.set_n_ctx(4096);
        let b = bench(&api, &dir);
        assert_eq!(b.str_field("tool_calls"), Some(want), "{b}");
        assert_eq!(b.get("context_window").and_then(Value::as_i64), Some(4096));
        let reqs = api.requests();
        assert_eq!(reqs.len(), 4, "{want}: one request each, no retries");
        // The long prompt: about 500 tokens.
        let prompt = reqs[1].body_len;
        assert!((1_500..=4_000).contains(&prompt), "{prompt} bytes");
        assert!(reqs[3].body.contains("get_weather"));
        // Generation: 20 tokens in two pieces sent 200 ms apart. Timed on
        // arrival, so a loaded machine may read the first late: the rate
        // is only known to exist (the arithmetic has a unit test).
        assert_eq!(b.get("output_tokens").and_then(Value::as_i64), Some(20));
        let rate = b
            .get("output_tokens_per_second")
            .and_then(Value::as_f64)
            .unwrap();
        assert!(rate > 0.0, "{rate}");
        assert!(b.get("turn_seconds").and_then(Value::as_f64).unwrap() > 0.0);
    }
}

#[test]
fn the_text_report_gives_a_verdict_and_a_dead_server_fails() {
    let dir = scratch("bench-text");
    let api = StandIn::start(timed_replies(standin::text_reply("It is sunny.")));
    api.set_n_ctx(4096);
    let out = run(tern(&api.url, &dir).args(["doctor", "--bench"]));
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("tokens/s"), "{text}");
    assert!(text.contains("verdict: a turn of 3000 tokens in"), "{text}");
    assert!(text.contains("answered without calling the tool"), "{text}");
    assert!(
        text.contains("bench.json; sessions with this server"),
        "{text}"
    );

    // Every request refused: the bench fails, and says which request.
    let api = StandIn::start(Vec::new());
    api.set_fallback(Reply::Error {
        status: 401,
        retry_after: None,
        body: standin::error_json("authentication_error", "bad key"),
    });
    let out = run(tern(&api.url, &dir).args(["doctor", "--bench"]));
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("FAIL"), "{text}");
    let out = run(tern(&api.url, &dir).args(["--bench", "-p", "hi"]));
    assert_eq!(out.status.code(), Some(2), "--bench is doctor's alone");
}

/// The system prompt of a chat completions request.
fn system_text(req: &standin::Request) -> String {
    body(req)
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|m| m.iter().find(|m| m.str_field("role") == Some("system")))
        .map(Value::to_json)
        .unwrap_or_default()
}

/// tern talking chat completions to the stand-in, as to a local server.
fn chat(api: &StandIn, dir: &std::path::Path) -> std::process::Command {
    let mut c = tern(&api.url, dir);
    c.env_remove("ANTHROPIC_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env("TERN_PROVIDER", "openai")
        .env("OPENAI_BASE_URL", format!("{}/v1", api.url));
    c
}

#[test]
fn a_session_with_a_benched_server_that_refuses_tools_describes_them() {
    let dir = scratch("bench-kept");
    std::fs::write(dir.join("a.txt"), "alpha\n").unwrap();
    let api = StandIn::start(timed_replies(refusal()));
    api.set_n_ctx(4096);
    assert_eq!(bench(&api, &dir).str_field("tool_calls"), Some("refused"));

    api.push(standin::text_reply(
        r#"<tool_call>{"name": "Read", "arguments": {"file_path": "a.txt"}}</tool_call>"#,
    ));
    api.push(standin::text_reply("it says alpha"));
    let out = run(chat(&api, &dir).args(["-p", "what is in a.txt?", "--verbose"]));
    assert_ok(&out);
    let errors = String::from_utf8_lossy(&out.stderr);
    assert!(
        errors.contains("as `tern doctor --bench` measured it"),
        "{errors}"
    );
    let reqs = api.requests();
    let first = &reqs[4];
    assert!(
        body(first).get("tools").is_none(),
        "tools sent to a server that refuses them"
    );
    let system = system_text(first);
    assert!(system.contains("<tools>"), "{system}");
    assert!(system.contains(r#"\"name\":\"Read\""#), "{system}");
    // The call written as the prompt asked was read and run.
    assert!(reqs[5].body.contains("alpha"), "{}", reqs[5].body);
}

#[test]
fn a_refusal_mid_session_is_answered_by_describing_the_tools() {
    let dir = scratch("tools-refused");
    std::fs::write(dir.join("a.txt"), "alpha\n").unwrap();
    let api = StandIn::start(vec![
        refusal(),
        standin::text_reply(
            r#"<tool_call>{"name": "Read", "arguments": {"file_path": "a.txt"}}</tool_call>"#,
        ),
        standin::text_reply("it says alpha"),
    ]);
    let out = run(chat(&api, &dir).args(["-p", "what is in a.txt?"]));
    assert_ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "it says alpha");
    let errors = String::from_utf8_lossy(&out.stderr);
    assert!(
        errors.contains("describing them in the system prompt"),
        "{errors}"
    );
    let reqs = api.requests();
    assert_eq!(reqs.len(), 3, "the refusal is not retried as it was");
    assert!(body(&reqs[0]).get("tools").is_some());
    for later in &reqs[1..] {
        assert!(body(later).get("tools").is_none());
        assert!(system_text(later).contains("<tool_call>"));
    }
    assert!(reqs[2].body.contains("alpha"), "{}", reqs[2].body);

    // The Messages API takes tools from every model: its error is the
    // run's error, not a reason to describe them.
    let api = StandIn::start(vec![refusal()]);
    let out = run(tern(&api.url, &dir).args(["-p", "what is in a.txt?"]));
    assert!(!out.status.success());
    assert_eq!(api.requests().len(), 1);
}
