//! Small context windows (local models with 4k-8k tokens), against the
//! stand-in playing a llama.cpp server that reports its `n_ctx`: the
//! request is sized to the window, tools can be limited, memory files and
//! tool results are cut with a note, and an impossible fit is a clear error.

use crate::support;

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;

fn description_bytes(req: &standin::Request) -> usize {
    body(req)
        .get("tools")
        .and_then(Value::as_array)
        .map(|t| t.iter().map(|t| t.to_json().len()).sum())
        .unwrap_or(0)
}

#[test]
fn a_4k_window_gets_a_compact_request_and_200k_the_full_one() {
    let dir = scratch("window-4k");
    let small = StandIn::start(vec![standin::text_reply("hello")]);
    small.set_n_ctx(4096);
    let out = run(tern(&small.url, &dir).args(["-p", "Say hello", "--verbose"]));
    assert_ok(&out);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("reports a context window of 4096 tokens")
    );
    let compact = &small.requests()[0];

    let big = StandIn::start(vec![standin::text_reply("hello")]);
    let out = run(tern(&big.url, &dir).args(["-p", "Say hello", "--model", "claude-sonnet-4-5"]));
    assert_ok(&out);
    let full = &big.requests()[0];

    let tokens = compact.body_len / 4;
    println!(
        "first request, core tools: 4k window {} bytes (~{tokens} tokens), 200k window {} bytes (~{} tokens)",
        compact.body_len,
        full.body_len,
        full.body_len / 4
    );
    assert!(tokens <= 2_500, "a 4k-window request of ~{tokens} tokens");
    assert_eq!(
        tool_names(compact),
        tool_names(full),
        "the same core tools in both"
    );
    assert!(description_bytes(compact) * 2 < description_bytes(full));
    // Full descriptions carry the per-field prose; the compact ones do not.
    assert!(
        full.body.contains("cat -n"),
        "full Read description missing"
    );
    assert!(!compact.body.contains("cat -n"));
    let max_tokens = |r: &standin::Request| body(r).get("max_tokens").and_then(Value::as_i64);
    assert_eq!(max_tokens(compact), Some(1024));
    assert_eq!(max_tokens(full), Some(32_000));

    // With the provider's web search offered too, as on Anthropic's API.
    let searching = StandIn::start(vec![standin::text_reply("hello")]);
    searching.set_n_ctx(4096);
    let out = run(tern(&searching.url, &dir).args([
        "-p",
        "Say hello",
        "--settings",
        r#"{"webSearch":{"enabled":true}}"#,
    ]));
    assert_ok(&out);
    let with_search = &searching.requests()[0];
    let tokens = with_search.body_len / 4;
    println!(
        "first request, core tools and web search: 4k window {} bytes (~{tokens} tokens)",
        with_search.body_len
    );
    assert!(with_search.body.contains("web_search_20250305"));
    assert!(tokens <= 2_500, "a 4k-window request of ~{tokens} tokens");
}

#[test]
fn tools_can_be_limited_or_turned_off() {
    let dir = scratch("tools-flag");
    let api = StandIn::start(vec![
        standin::text_reply("a"),
        standin::text_reply("b"),
        standin::text_reply("c"),
    ]);
    assert_ok(&run(tern(&api.url, &dir).args([
        "-p",
        "x",
        "--tools",
        "Read,Grep",
    ])));
    assert_ok(&run(tern(&api.url, &dir).args(["-p", "x", "--tools", ""])));
    std::fs::create_dir_all(dir.join(".tern")).unwrap();
    std::fs::write(dir.join(".tern/settings.json"), r#"{"tools": ["Glob"]}"#).unwrap();
    let out = run(tern(&api.url, &dir).args(["-p", "x", "--output-format", "stream-json"]));
    assert_ok(&out);
    let reqs = api.requests();
    assert_eq!(tool_names(&reqs[0]), ["Read", "Grep"]);
    assert!(
        body(&reqs[1]).get("tools").is_none(),
        "no tools: no tools field"
    );
    assert_eq!(tool_names(&reqs[2]), ["Glob"]);
    assert_eq!(
        lines(&out)[0].get("tools").unwrap().to_json(),
        r#"["Glob"]"#
    );
}

#[test]
fn memory_and_tool_results_are_cut_to_the_window_with_a_note() {
    let dir = scratch("budget");
    std::fs::write(dir.join("AGENTS.md"), "Always write tests.\n".repeat(2000)).unwrap();
    std::fs::write(
        dir.join("big.log"),
        "a log line that goes on\n".repeat(2000),
    )
    .unwrap();
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_big", "Read", r#"{"file_path": "big.log"}"#)]),
        standin::text_reply("read it"),
    ]);
    api.set_n_ctx(8192);
    let out = run(tern(&api.url, &dir).args(["-p", "x"]));
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("memory files cut to"));
    let first = &api.requests()[0];
    assert!(first.body.contains("[memory files cut at"));
    assert!(
        first.body_len / 4 < 8192 / 2,
        "~{} tokens",
        first.body_len / 4
    );
    let result = tool_results(&api.requests()[1])[0]
        .str_field("content")
        .unwrap()
        .to_string();
    // Read keeps to the window itself, on whole lines, and says how to
    // go on.
    assert!(
        result.contains("more than fits in one result in this model's context window")
            && result.contains("Use offset"),
        "{result}"
    );
    assert!(result.len() < 8192 * 3, "{} chars", result.len());
}

#[test]
fn a_window_too_small_for_any_request_is_a_clear_error() {
    let dir = scratch("too-small");
    let api = StandIn::start(vec![standin::text_reply("never")]);
    api.set_n_ctx(512);
    let out = run(tern(&api.url, &dir).args(["-p", "Say hello", "--output-format", "json"]));
    assert_eq!(out.status.code(), Some(1));
    let errors = last_result(&out).get("errors").unwrap().to_json();
    assert!(
        errors.contains("does not fit the model's context window (512 tokens"),
        "{errors}"
    );
    assert!(errors.contains("tokens)"), "{errors}");
    assert!(api.requests().is_empty(), "nothing is sent that cannot fit");
}
