//! When the model side misbehaves: overloaded or unknown models fall back,
//! answers cut by the output limit continue, the budget stops a session,
//! and retries give up within their time limit.

use crate::support;

use support::standin::{self, Reply, StandIn};
use support::*;
use tern::json::Value;

fn overloaded() -> Reply {
    Reply::Error {
        status: 529,
        retry_after: None,
        body: standin::error_json("overloaded_error", "Overloaded"),
    }
}

#[test]
fn an_overloaded_model_falls_back_to_the_next_one() {
    let dir = scratch("fallback");
    let api = StandIn::start(vec![
        overloaded(),
        standin::text_reply("served by the fallback"),
    ]);
    let out = run(tern(&api.url, &dir)
        .env("TERN_MAX_RETRIES", "0")
        .args([
            "-p",
            "hi",
            "--model",
            "claude-opus-4-5",
            "--fallback-model",
            "claude-sonnet-4-5,claude-haiku-4-5",
        ])
        .args(["--output-format", "stream-json"]));
    assert_ok(&out);
    let reqs = api.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(body(&reqs[0]).str_field("model"), Some("claude-opus-4-5"));
    assert_eq!(body(&reqs[1]).str_field("model"), Some("claude-sonnet-4-5"));
    let all = lines(&out);
    assert!(
        all.iter()
            .any(|l| l.str_field("subtype") == Some("model_fallback")
                && l.str_field("to") == Some("claude-sonnet-4-5"))
    );
    let result = last_result(&out);
    assert_eq!(result.str_field("result"), Some("served by the fallback"));
    assert_eq!(result.get("num_turns").and_then(Value::as_i64), Some(1));
}

#[test]
fn without_a_fallback_an_overloaded_model_is_an_error() {
    let dir = scratch("nofallback");
    let api = StandIn::start(vec![overloaded()]);
    let out = run(tern(&api.url, &dir)
        .env("TERN_MAX_RETRIES", "0")
        .args(["-p", "hi"]));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("529"));
}

fn cut_reply(text: &str) -> Reply {
    let mut steps = vec![standin::message_start("msg_cut")];
    steps.extend(standin::text_block(0, text));
    steps.extend(standin::message_end("max_tokens", 64));
    Reply::Stream(steps)
}

#[test]
fn an_answer_cut_by_max_tokens_is_continued() {
    let dir = scratch("maxtokens");
    let api = StandIn::start(vec![
        cut_reply("The first half"),
        standin::text_reply("and the rest."),
    ]);
    let out =
        run(tern(&api.url, &dir).args(["-p", "long answer please", "--output-format", "json"]));
    assert_ok(&out);
    let second = body(&api.requests()[1]);
    let msgs = second.get("messages").unwrap().as_array().unwrap();
    assert_eq!(msgs.len(), 3);
    assert!(
        msgs[2]
            .to_json()
            .contains("cut off by the output token limit")
    );
    assert_eq!(last_result(&out).str_field("result"), Some("and the rest."));
}

#[test]
fn an_answer_cut_again_and_again_is_reported() {
    let dir = scratch("maxtokens-forever");
    let api = StandIn::start((0..4).map(|_| cut_reply("still going")).collect());
    let out = run(tern(&api.url, &dir).args(["-p", "x", "--output-format", "json"]));
    assert_eq!(out.status.code(), Some(1));
    let result = last_result(&out);
    assert!(
        result
            .get("errors")
            .unwrap()
            .to_json()
            .contains("still cut off by the output limit")
    );
    assert_eq!(api.requests().len(), 4);
}

#[test]
fn the_budget_stops_the_session_after_the_turn_that_spent_it() {
    let dir = scratch("budget");
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_1", "Glob", r#"{"pattern": "*"}"#)]),
        standin::text_reply("never asked for"),
    ]);
    // 100 input + 40 output tokens on Sonnet cost $0.0009.
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "x",
        "--model",
        "claude-sonnet-4-5",
        "--max-budget-usd",
        "0.0005",
        "--output-format",
        "json",
    ]));
    assert_eq!(out.status.code(), Some(1));
    let result = last_result(&out);
    assert_eq!(result.str_field("subtype"), Some("error_max_budget_usd"));
    let cost = result
        .get("total_cost_usd")
        .and_then(Value::as_f64)
        .unwrap();
    assert!((cost - 0.0009).abs() < 1e-9, "{cost}");
    assert_eq!(api.requests().len(), 1);
    let bad = run(tern(&api.url, &dir).args(["-p", "x", "--max-budget-usd", "free"]));
    assert_eq!(bad.status.code(), Some(2));
}

/// A local model's run costs $0: what bounds it is what its models write
/// and how long it takes. Each ends the run with its own result.
#[test]
fn output_tokens_and_time_bound_a_run_without_a_price() {
    let dir = scratch("budgets-without-price");
    // Each tool turn writes 40 output tokens; the cap is reached after two.
    let api = StandIn::start(vec![]);
    api.set_fallback(standin::tools_reply(&[(
        "toolu_g",
        "Glob",
        r#"{"pattern": "*"}"#,
    )]));
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "x",
        "--max-output-tokens-total",
        "80",
        "--allowedTools",
        "Glob",
        "--output-format",
        "json",
    ]));
    assert_eq!(out.status.code(), Some(1));
    let result = last_result(&out);
    assert_eq!(result.str_field("subtype"), Some("error_max_output_tokens"));
    assert_eq!(
        result.str_field("terminal_reason"),
        Some("output_tokens_exhausted")
    );
    assert_eq!(api.requests().len(), 2, "no request after the cap");

    // The time limit interrupts whatever runs, a command included, and
    // stops its process group.
    let dir = scratch("budgets-time");
    // A length no other test sleeps, to find the process by.
    let api = StandIn::start(vec![standin::tools_reply(&[(
        "toolu_sleep",
        "Bash",
        r#"{"command": "sleep 31.4159"}"#,
    )])]);
    api.set_fallback(standin::text_reply("never asked for"));
    let began = std::time::Instant::now();
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "x",
        "--max-duration",
        "2s",
        "--permission-mode",
        "bypassPermissions",
        "--output-format",
        "json",
    ]));
    let took = began.elapsed();
    assert_eq!(out.status.code(), Some(1));
    assert!(took < std::time::Duration::from_secs(20), "{took:?}");
    let result = last_result(&out);
    assert_eq!(result.str_field("subtype"), Some("error_max_duration"));
    assert_eq!(result.str_field("terminal_reason"), Some("max_duration"));
    assert_eq!(api.requests().len(), 1);
    let sleeping = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .any(|cmd| String::from_utf8_lossy(&cmd).contains("31.4159"));
    assert!(!sleeping, "the command was stopped with the run");
    let bad = run(tern(&api.url, &dir).args(["-p", "x", "--max-duration", "soon"]));
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn retries_stop_at_the_time_limit() {
    let dir = scratch("retrycap");
    let failing = Reply::Error {
        status: 503,
        retry_after: None,
        body: standin::error_json("api_error", "down"),
    };
    let api = StandIn::start(vec![]);
    api.set_fallback(failing);
    let began = std::time::Instant::now();
    let out = run(tern(&api.url, &dir)
        .env("TERN_RETRY_BASE_MS", "300")
        .env("TERN_RETRY_MAX_SECS", "1")
        .args(["-p", "x"]));
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("gave up after"), "{stderr}");
    assert!(
        api.requests().len() <= 4,
        "{} attempts",
        api.requests().len()
    );
    assert!(began.elapsed() < std::time::Duration::from_secs(10));
}
