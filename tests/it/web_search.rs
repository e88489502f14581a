//! WebSearch: the Messages API's server-side web search tool. tern sends
//! its definition, the stand-in streams `server_tool_use` and
//! `web_search_tool_result` blocks exactly as the API does, and those
//! blocks stay in the history, the transcript and the stream-json output
//! and go back unchanged in the follow-up request (and after a resume).
//! Not offered where the provider has no such tool, nor when rules or
//! `--tools` leave it out.

use crate::support;

use support::standin::{self, Reply, StandIn};
use support::*;
use tern::json::{self, Value};

const RESULTS: &[(&str, &str)] = &[
    ("https://docs.rs/html5gum", "html5gum - Rust"),
    (
        "https://github.com/untitaker/html5gum",
        "untitaker/html5gum",
    ),
];

fn search_reply(then_read: bool, stop: &str) -> Reply {
    let mut steps = vec![standin::message_start("msg_search")];
    steps.extend(standin::text_block(0, "Let me search."));
    steps.extend(standin::web_search_blocks(
        1,
        "srvtoolu_01A",
        "rust html tokenizer",
        RESULTS,
    ));
    steps.extend(standin::cited_text_block(
        3,
        "html5gum is a WHATWG tokenizer.",
        RESULTS[0].0,
        RESULTS[0].1,
    ));
    if then_read {
        steps.extend(standin::tool_block(
            4,
            "toolu_read",
            "Read",
            r#"{"file_path": "notes.txt"}"#,
            3,
        ));
    }
    steps.extend(standin::message_end_with_searches(stop, 1));
    Reply::Stream(steps)
}

/// The two server blocks exactly as the API sent them.
fn sent_blocks() -> (Value, Value) {
    let use_block = json::parse(
        r#"{"type":"server_tool_use","id":"srvtoolu_01A","name":"web_search","input":{"query":"rust html tokenizer"}}"#,
    )
    .unwrap();
    let result = json::parse(&format!(
        r#"{{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01A","content":[{}]}}"#,
        standin::web_search_results(RESULTS)
    ))
    .unwrap();
    (use_block, result)
}

fn tools(req: &standin::Request) -> Vec<Value> {
    body(req)
        .get("tools")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn search_tool(req: &standin::Request) -> Option<Value> {
    tools(req)
        .into_iter()
        .find(|t| t.str_field("type") == Some("web_search_20250305"))
}

fn enabled(extra: &str) -> String {
    format!(r#"{{"webSearch":{{"enabled":true{extra}}}}}"#)
}

fn blocks_of(message: &Value) -> Vec<Value> {
    message
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

#[test]
fn search_blocks_go_back_unchanged_and_survive_a_resume() {
    let dir = scratch("websearch");
    std::fs::write(dir.join("notes.txt"), "local notes\n").unwrap();
    let api = StandIn::start(vec![
        search_reply(true, "tool_use"),
        standin::text_reply("html5gum it is."),
        standin::text_reply("still html5gum."),
    ]);
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "which html tokenizer?",
        "--settings",
        &enabled(r#","maxUses":3,"allowedDomains":["docs.rs","github.com"]"#),
        "--output-format",
        "stream-json",
        "--verbose",
    ]));
    assert_ok(&out);
    let reqs = api.requests();
    assert_eq!(reqs.len(), 2);
    // The definition, as the API documents it.
    assert_eq!(
        search_tool(&reqs[0]).unwrap().to_json(),
        r#"{"type":"web_search_20250305","name":"web_search","max_uses":3,"allowed_domains":["docs.rs","github.com"]}"#
    );
    let l = lines(&out);
    let init_tools = l[0].get("tools").unwrap().to_json();
    assert!(init_tools.contains("\"WebSearch\""), "{init_tools}");

    // The follow-up carries the server blocks as they came, in place.
    let (use_block, result) = sent_blocks();
    let second = body(&reqs[1]);
    let messages = second.get("messages").unwrap().as_array().unwrap();
    let assistant = blocks_of(&messages[1]);
    assert_eq!(assistant[1], use_block, "{}", assistant[1].to_json());
    assert_eq!(assistant[2], result, "{}", assistant[2].to_json());
    let cited = &assistant[3];
    assert_eq!(
        cited
            .get("citations")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
            .and_then(|c| c.str_field("type")),
        Some("web_search_result_location"),
        "{}",
        cited.to_json()
    );
    assert_eq!(assistant[4].str_field("type"), Some("tool_use"));
    // The Read ran; the server's search did not reach the pipeline.
    let results = tool_results(&reqs[1]);
    assert_eq!(results.len(), 1);
    assert!(results[0].to_json().contains("local notes"));

    // stream-json shows the assistant message with the blocks.
    let shown = first_content(&l, "assistant");
    assert!(shown.contains(&use_block) && shown.contains(&result));

    // The transcript keeps them, and a resumed session sends them again.
    let root = home_of(&dir).join(".local/share/tern/projects");
    let transcript = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .flat_map(|p| std::fs::read_dir(p.path()).unwrap().flatten())
        .map(|f| f.path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("a transcript");
    let text = std::fs::read_to_string(&transcript).unwrap();
    assert!(
        text.contains(&use_block.to_json()),
        "transcript lacks the server_tool_use"
    );
    assert!(
        text.contains(&result.to_json()),
        "transcript lacks the search result"
    );
    let id = transcript
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let out = run(tern(&api.url, &dir).args([
        "--resume",
        &id,
        "-p",
        "sure?",
        "--settings",
        &enabled(""),
    ]));
    assert_ok(&out);
    let third = body(&api.requests()[2]);
    let resumed = blocks_of(&third.get("messages").unwrap().as_array().unwrap()[1]);
    assert_eq!(resumed[1], use_block);
    assert_eq!(resumed[2], result);
}

/// A turn the API paused (`pause_turn`) is sent back as it is and goes on.
#[test]
fn a_paused_turn_is_continued() {
    let dir = scratch("websearch-pause");
    let api = StandIn::start(vec![
        search_reply(false, "pause_turn"),
        standin::text_reply("Done searching."),
    ]);
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "search a lot",
        "--settings",
        &enabled(""),
        "--output-format",
        "json",
    ]));
    assert_ok(&out);
    assert_eq!(
        last_result(&out).str_field("result"),
        Some("Done searching.")
    );
    let reqs = api.requests();
    assert_eq!(reqs.len(), 2);
    let second = body(&reqs[1]);
    let messages = second.get("messages").unwrap().as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last.str_field("role"), Some("assistant"));
    let (use_block, result) = sent_blocks();
    let blocks = blocks_of(last);
    assert_eq!(blocks[1], use_block);
    assert_eq!(blocks[2], result);
}

#[test]
fn offered_only_where_the_provider_searches_and_rules_allow() {
    let dir = scratch("websearch-off");
    let api = StandIn::start(vec![]);
    api.set_fallback(standin::text_reply("ok"));
    let first_tools = |args: &[&str]| {
        let before = api.requests().len();
        let out = run(tern(&api.url, &dir).args(["-p", "x"]).args(args));
        assert_ok(&out);
        (search_tool(&api.requests()[before]), out)
    };
    // A server that is not Anthropic's own API is not sent a definition
    // it may not know, unless the settings say it handles it.
    assert!(first_tools(&[]).0.is_none());
    assert!(first_tools(&["--settings", &enabled("")]).0.is_some());
    assert!(
        first_tools(&["--settings", r#"{"webSearch":{"enabled":false}}"#])
            .0
            .is_none()
    );
    // Rules and --tools name it WebSearch.
    for args in [
        &["--settings", &enabled(""), "--disallowedTools", "WebSearch"][..],
        &["--settings", &enabled(""), "--tools", "Read,Grep"][..],
    ] {
        assert!(first_tools(args).0.is_none(), "{args:?}");
    }
    let (tool, out) = first_tools(&["--settings", &enabled(""), "--tools", "Read,WebSearch"]);
    assert!(tool.is_some());
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("not a built-in tool"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Allowed and blocked lists: the API takes one, so allowed less blocked.
    let (tool, _) = first_tools(&[
        "--settings",
        r#"{"webSearch":{"enabled":true,"allowedDomains":["docs.rs","evil.docs.rs","rust-lang.org"],"blockedDomains":["docs.rs"]}}"#,
    ]);
    assert_eq!(
        tool.unwrap().get("allowed_domains").unwrap().to_json(),
        r#"["rust-lang.org"]"#
    );
    let (tool, _) = first_tools(&[
        "--settings",
        r#"{"webSearch":{"enabled":true,"blockedDomains":["pinterest.com"]}}"#,
    ]);
    let tool = tool.unwrap();
    assert_eq!(
        tool.get("blocked_domains").unwrap().to_json(),
        r#"["pinterest.com"]"#
    );
    assert!(tool.get("allowed_domains").is_none());

    // A repository may narrow the search, never widen it.
    std::fs::create_dir_all(dir.join(".tern")).unwrap();
    std::fs::write(
        dir.join(".tern/settings.json"),
        r#"{"webSearch":{"enabled":true,"allowedDomains":["evil.example"],"blockedDomains":["spam.example"]}}"#,
    )
    .unwrap();
    let (tool, out) = first_tools(&[]);
    let tool = tool.expect("a project may turn the search on");
    assert!(tool.get("allowed_domains").is_none(), "{}", tool.to_json());
    assert_eq!(
        tool.get("blocked_domains").unwrap().to_json(),
        r#"["spam.example"]"#
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("webSearch.allowedDomains ignored"));
}

/// The OpenAI-compatible wire has no server-side search: not offered.
#[test]
fn hidden_on_the_openai_compatible_provider() {
    let dir = scratch("websearch-openai");
    let api = StandIn::start(vec![standin::text_reply("ok")]);
    let out = run(tern(&api.url, &dir)
        .env_remove("ANTHROPIC_BASE_URL")
        .env("OPENAI_BASE_URL", &api.url)
        .env("OPENAI_API_KEY", "k")
        .args([
            "-p",
            "x",
            "--provider",
            "openai",
            "--settings",
            &enabled(""),
            "--output-format",
            "stream-json",
            "--verbose",
        ]));
    assert_ok(&out);
    let req = &api.requests()[0];
    assert!(req.path.ends_with("/chat/completions"), "{}", req.path);
    assert!(!req.body.contains("web_search"), "{}", req.body);
    assert!(
        !lines(&out)[0]
            .get("tools")
            .unwrap()
            .to_json()
            .contains("WebSearch")
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("no server-side search"));
}
