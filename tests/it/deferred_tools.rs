//! MCP tools held back behind ToolSearch when their schemas would crowd
//! the window: three scripted servers of twenty described tools each
//! (tests/mcp/scripted_server.py `many`), the stand-in playing a model
//! that searches, then calls what it loaded.
#![cfg(feature = "mcp")]

use crate::support;

use std::path::PathBuf;

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;

const SUBJECTS: [&str; 3] = ["tracker", "calendar", "files"];

fn three_servers() -> String {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/scripted_server.py");
    let mut servers = tern::json::Map::new();
    for subject in SUBJECTS {
        servers.insert(
            subject,
            tern::obj! {
                "command" => "python3",
                "args" => vec![
                    Value::from(script.display().to_string()),
                    Value::from("many"),
                    Value::from(subject),
                ],
            },
        );
    }
    tern::obj! { "mcpServers" => Value::Object(servers) }.to_json()
}

fn mcp_tool_names(req: &standin::Request) -> Vec<String> {
    let mut names: Vec<String> = tool_names(req)
        .into_iter()
        .filter(|n| n.starts_with("mcp__"))
        .collect();
    names.sort();
    names
}

fn search_description(req: &standin::Request) -> String {
    body(req)
        .get("tools")
        .and_then(Value::as_array)
        .and_then(|t| t.iter().find(|t| t.str_field("name") == Some("ToolSearch")))
        .and_then(|t| t.str_field("description"))
        .unwrap_or_default()
        .to_string()
}

fn tern_with_servers(api: &StandIn, dir: &std::path::Path) -> std::process::Command {
    let mut c = tern(&api.url, dir);
    c.env("MCP_TIMEOUT", "20000")
        .env("TERN_MCP_FIRST_WAIT_MS", "20000")
        .args(["--mcp-config", &three_servers()]);
    c
}

#[test]
fn sixty_mcp_tools_wait_behind_tool_search_in_a_4k_window() {
    let dir = scratch("deferred-4k");
    let api = StandIn::start(vec![
        standin::tools_reply(&[(
            "toolu_search",
            "ToolSearch",
            r#"{"query": "select:mcp__calendar__create_event, list_issue"}"#,
        )]),
        standin::tools_reply(&[(
            "toolu_event",
            "mcp__calendar__create_event",
            r#"{"id": "e1", "title": "standup"}"#,
        )]),
        standin::text_reply("booked"),
    ]);
    api.set_n_ctx(4096);
    let out = run(tern_with_servers(&api, &dir).args([
        "-p",
        "book the standup",
        "--allowedTools",
        "mcp__calendar__create_event",
    ]));
    assert_ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "booked");
    let reqs = api.requests();
    assert_eq!(reqs.len(), 3);

    let first = &reqs[0];
    let tokens = first.body_len / 4;
    println!(
        "first request, 4k window, three 20-tool MCP servers: {} bytes (~{tokens} tokens)",
        first.body_len
    );
    assert!(tokens <= 2_500, "~{tokens} tokens");
    assert!(
        mcp_tool_names(first).is_empty(),
        "{:?}",
        mcp_tool_names(first)
    );
    assert!(tool_names(first).iter().any(|n| n == "ToolSearch"));
    // Every held-back tool is named, so the model can ask for it.
    let names = search_description(first);
    for subject in SUBJECTS {
        assert!(names.contains(&format!("mcp__{subject}__ {{")), "{names}");
    }
    for tool in [
        "create_issue",
        "delete_milestone",
        "list_room",
        "update_revision",
    ] {
        assert!(names.contains(tool), "{tool} missing from {names}");
    }

    // The search loaded exactly what it named; the rest stay held back.
    let second = &reqs[1];
    assert_eq!(
        mcp_tool_names(second),
        ["mcp__calendar__create_event", "mcp__tracker__list_issue"]
    );
    let loaded = tool_results(second)[0].to_json();
    assert!(loaded.contains("Loaded"), "{loaded}");
    assert!(loaded.contains("mcp__tracker__list_issue"), "{loaded}");
    // The loaded definition is the server's own schema.
    let event = body(second)
        .get("tools")
        .and_then(Value::as_array)
        .and_then(|t| {
            t.iter()
                .find(|t| t.str_field("name") == Some("mcp__calendar__create_event"))
                .cloned()
        })
        .unwrap();
    assert!(event.to_json().contains("\"notify\""), "{event}");

    let called = tool_results(&reqs[2])[0].to_json();
    assert!(
        called.contains(r#"called create_event with {\"id\": \"e1\", \"title\": \"standup\"}"#),
        "{called}"
    );
}

/// What a session loaded (by searching, or by calling a tool it knew)
/// is offered again when the session is resumed; a new one starts bare.
#[test]
fn a_resumed_session_offers_what_it_had_loaded() {
    let dir = scratch("deferred-resume");
    let id = "3b0e2f4a-6c1d-4e8f-9a21-5d6c7e8f9a0b";
    let api = StandIn::start(vec![
        standin::tools_reply(&[(
            "toolu_search",
            "ToolSearch",
            r#"{"query": "select:mcp__calendar__create_event"}"#,
        )]),
        standin::tools_reply(&[(
            "toolu_list",
            "mcp__tracker__list_issue",
            r#"{"id": "open"}"#,
        )]),
        standin::text_reply("done"),
        standin::text_reply("again"),
        standin::text_reply("fresh"),
    ]);
    api.set_n_ctx(4096);
    let first = run(tern_with_servers(&api, &dir).args([
        "--session-id",
        id,
        "-p",
        "book it",
        "--allowedTools",
        "mcp__tracker__list_issue",
    ]));
    assert_ok(&first);
    let resumed = run(tern_with_servers(&api, &dir).args(["--resume", id, "-p", "and again"]));
    assert_ok(&resumed);
    assert_eq!(String::from_utf8_lossy(&resumed.stdout).trim(), "again");
    let other = run(tern_with_servers(&api, &dir).args(["-p", "a new one"]));
    assert_ok(&other);
    let reqs = api.requests();
    assert_eq!(reqs.len(), 5);
    assert!(mcp_tool_names(&reqs[0]).is_empty());
    assert_eq!(
        mcp_tool_names(&reqs[3]),
        ["mcp__calendar__create_event", "mcp__tracker__list_issue"]
    );
    assert!(tool_names(&reqs[3]).iter().any(|n| n == "ToolSearch"));
    assert!(
        mcp_tool_names(&reqs[4]).is_empty(),
        "{:?}",
        mcp_tool_names(&reqs[4])
    );
}

#[test]
fn the_same_servers_unheld_do_not_fit_a_4k_window() {
    // What the search saves: with it turned off, the first request is
    // refused before it is sent.
    let dir = scratch("deferred-off");
    let api = StandIn::start(vec![standin::text_reply("never")]);
    api.set_n_ctx(4096);
    let out = run(tern_with_servers(&api, &dir)
        .env("ENABLE_TOOL_SEARCH", "false")
        .args(["-p", "hello"]));
    assert!(!out.status.success());
    let errors = String::from_utf8_lossy(&out.stderr);
    assert!(errors.contains("does not fit"), "{errors}");
    assert!(api.requests().is_empty());
}

#[test]
fn a_large_window_offers_every_tool_unless_told_to_search() {
    let dir = scratch("deferred-200k");
    let api = StandIn::start(vec![standin::text_reply("hi")]);
    let out =
        run(tern_with_servers(&api, &dir).args(["-p", "hello", "--model", "claude-sonnet-4-5"]));
    assert_ok(&out);
    let first = &api.requests()[0];
    assert_eq!(mcp_tool_names(first).len(), 60);
    assert!(!tool_names(first).iter().any(|n| n == "ToolSearch"));

    // ENABLE_TOOL_SEARCH=true holds them back whatever the window; a
    // keyword search with a required word loads the best matches.
    let api = StandIn::start(vec![
        standin::tools_reply(&[(
            "toolu_search",
            "ToolSearch",
            r#"{"query": "+tracker issue", "max_results": 3}"#,
        )]),
        standin::text_reply("found"),
    ]);
    let out = run(tern_with_servers(&api, &dir)
        .env("ENABLE_TOOL_SEARCH", "true")
        .args([
            "-p",
            "find the tracker's tools",
            "--model",
            "claude-sonnet-4-5",
            "--output-format",
            "stream-json",
            "--verbose",
        ]));
    assert_ok(&out);
    let init = &lines(&out)[0];
    let listed = init.get("tools").unwrap().to_json();
    assert!(listed.contains("ToolSearch"), "{listed}");
    assert!(listed.contains("mcp__files__create_share"), "{listed}");
    let reqs = api.requests();
    assert!(mcp_tool_names(&reqs[0]).is_empty());
    let loaded = mcp_tool_names(&reqs[1]);
    assert_eq!(loaded.len(), 3, "{loaded:?}");
    assert!(
        loaded
            .iter()
            .all(|n| n.starts_with("mcp__tracker__") && n.ends_with("_issue")),
        "{loaded:?}"
    );
}

#[test]
fn a_held_back_tool_called_unloaded_is_still_asked_about_and_a_denied_search_offers_all() {
    let dir = scratch("deferred-policy");
    // Called by name without a search: it reaches the tool's checks, and
    // with nothing allowing it, -p refuses it; the server never runs it.
    let api = StandIn::start(vec![
        standin::tools_reply(&[(
            "toolu_del",
            "mcp__files__delete_document",
            r#"{"id": "d1"}"#,
        )]),
        standin::text_reply("could not"),
    ]);
    api.set_n_ctx(4096);
    let out = run(tern_with_servers(&api, &dir).args(["-p", "delete d1"]));
    assert_ok(&out);
    let result = tool_results(&api.requests()[1])[0].to_json();
    assert!(!result.contains("called delete_document"), "{result}");
    assert!(result.contains("Permission denied"), "{result}");

    // A bare deny rule on ToolSearch turns holding back off.
    let api = StandIn::start(vec![standin::text_reply("hi")]);
    let out = run(tern_with_servers(&api, &dir)
        .env("ENABLE_TOOL_SEARCH", "true")
        .args([
            "-p",
            "hello",
            "--model",
            "claude-sonnet-4-5",
            "--disallowedTools",
            "ToolSearch",
        ]));
    assert_ok(&out);
    let first = &api.requests()[0];
    assert_eq!(mcp_tool_names(first).len(), 60);
    assert!(!tool_names(first).iter().any(|n| n == "ToolSearch"));
}
