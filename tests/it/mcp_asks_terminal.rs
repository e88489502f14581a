//! A person answering MCP servers in a real terminal (tmux): a server on
//! the official Python SDK (tests/mcp/sdk_asking_server.py) asks for a
//! form, which the person fills (typing one value, taking a default) or
//! declines, and asks to use the model, which the person allows once and
//! then refuses; its progress shows on the tool's line. In the TUI and
//! in line mode.
#![cfg(feature = "mcp")]

use crate::support;

use std::path::{Path, PathBuf};

use support::standin::{self, StandIn};
use support::tmux::{Tmux, unavailable};
use support::*;
use tern::json::Value;

/// The server's `--mcp-config` file in `dir`, or None (skipped) where
/// the terminal or the Python SDK is missing.
fn setup(test: &str, dir: &Path) -> Option<PathBuf> {
    if let Some(why) = unavailable() {
        if runner().is_some() {
            skip_emulated(test, why);
        } else {
            skip(test, why);
        }
        return None;
    }
    let python = mcp_servers_dir(test, &["venv/bin/python"])?.join("venv/bin/python");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/sdk_asking_server.py");
    let server = tern::obj! {
        "command" => python.display().to_string(),
        "args" => vec![
            Value::from(script.display().to_string()),
            Value::from("stdio"),
            Value::from(dir.join("caps.jsonl").display().to_string()),
        ],
    };
    let file = dir.join("servers.json");
    let config = tern::obj! { "mcpServers" => tern::obj! { "sdk" => server } };
    std::fs::write(&file, config.to_json()).unwrap();
    Some(file)
}

fn text_of(v: &Value) -> String {
    v.get("content").map(Value::to_json).unwrap_or_default()
}

/// What the server's tool said, as the model was told.
fn result_in(api: &StandIn, request: usize) -> String {
    tool_results(&api.requests()[request])
        .iter()
        .map(text_of)
        .collect()
}

/// Waits until the model has had `n` requests.
#[cfg(feature = "tui")]
fn wait_requests(api: &StandIn, n: usize) {
    let began = std::time::Instant::now();
    while api.requests().len() < n {
        assert!(
            began.elapsed() < std::time::Duration::from_secs(60),
            "the model never had {n} requests"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// One prompt runs every step: the form filled, the form declined, a
/// sampling request allowed, one refused, a slow call with progress.
fn replies() -> Vec<standin::Reply> {
    vec![
        standin::tools_reply(&[("toolu_1", "mcp__sdk__profile", "{}")]),
        standin::tools_reply(&[("toolu_2", "mcp__sdk__profile", "{}")]),
        standin::tools_reply(&[("toolu_3", "mcp__sdk__haiku", "{}")]),
        standin::text_reply("an old silent pond"),
        standin::tools_reply(&[("toolu_4", "mcp__sdk__haiku", "{}")]),
        standin::tools_reply(&[("toolu_5", "mcp__sdk__count", "{}")]),
        standin::text_reply("All steps done."),
    ]
}

/// What reached the server and the model, the same in both frontends.
fn check(api: &StandIn) {
    let requests = api.requests();
    assert_eq!(requests.len(), 7, "one model request for the server");
    assert!(result_in(api, 1).contains("accepted name=Lin color=green"));
    assert!(
        result_in(api, 2).contains("declined"),
        "{}",
        result_in(api, 2)
    );
    let sampling = body(&requests[3]).to_json();
    assert!(sampling.contains("write a haiku"), "{sampling}");
    assert!(
        result_in(api, 4).contains("sampled=an old silent pond"),
        "{}",
        result_in(api, 4)
    );
    // The refusal reached the server as a JSON-RPC error, and the
    // session went on.
    let refused = result_in(api, 5);
    assert!(
        refused.contains("refused=the user declined the sampling request"),
        "{refused}"
    );
    assert!(result_in(api, 6).contains("counted"));
}

#[test]
fn in_line_mode_a_person_fills_declines_allows_and_refuses_and_sees_progress() {
    const TEST: &str = "line mode answering an MCP server";
    let dir = scratch("mcp-asks-line");
    let Some(config) = setup(TEST, &dir) else {
        return;
    };
    let api = StandIn::start(replies());
    let args = format!(
        "--no-tui --permission-mode bypassPermissions --mcp-config {}",
        config.display()
    );
    let t = Tmux::start("mcp-line", &dir, &api, "NO_COLOR=1", &args, (150, 50));
    t.wait_for("/help for commands", 1);
    t.keys(&["ask the server", "Enter"]);
    // The form, field by field: a value typed, a default taken.
    t.wait_for("Who are you?", 1);
    t.wait_for("(required)", 1);
    t.keys(&["Lin", "Enter"]);
    t.wait_for("Favourite color", 1);
    t.keys(&["Enter"]);
    t.wait_for("Send these answers to sdk?", 1);
    t.keys(&["y", "Enter"]);
    // The second form: declined.
    t.wait_for("Who are you?", 2);
    t.keys(&["Lin", "Enter"]);
    t.wait_for("Favourite color", 2);
    t.keys(&["Enter"]);
    t.wait_for("Send these answers to sdk?", 2);
    t.keys(&["n", "Enter"]);
    // Sampling: allowed once, then refused.
    t.wait_for("asks the model", 1);
    t.keys(&["y", "Enter"]);
    t.wait_for("asks the model", 2);
    t.keys(&["n", "Enter"]);
    // The call's progress on its own lines, then the end.
    t.wait_for("mcp__sdk__count  1/3 · step 1 of 3", 1);
    t.wait_for("mcp__sdk__count  3/3 · step 3 of 3", 1);
    t.wait_for("All steps done.", 1);
    check(&api);
}

#[cfg(feature = "tui")]
#[test]
fn in_the_tui_a_person_fills_declines_allows_and_refuses() {
    const TEST: &str = "TUI answering an MCP server";
    let dir = scratch("mcp-asks-tui");
    let Some(config) = setup(TEST, &dir) else {
        return;
    };
    let api = StandIn::start(replies());
    let args = format!(
        "--permission-mode bypassPermissions --mcp-config {}",
        config.display()
    );
    let t = Tmux::start("mcp-tui", &dir, &api, "", &args, (120, 40));
    t.wait_for("shift+tab: mode", 1);
    t.type_text("ask the server");
    t.keys(&["Enter"]);
    // The form: the name typed into its field, the color's default.
    t.wait_for("Your name (required)", 1);
    t.type_text("Lin");
    t.keys(&["Enter"]);
    t.wait_for("Use the default: green", 1);
    t.keys(&["Down", "Enter"]);
    t.wait_for("Send to sdk?", 1);
    t.keys(&["Enter"]);
    // The second form (dialogs leave no trace on the screen, so the
    // model's requests say where the session is): declined at the end.
    wait_requests(&api, 2);
    t.wait_for("Your name (required)", 1);
    t.type_text("Lin");
    t.keys(&["Enter"]);
    t.wait_for("Use the default: green", 1);
    t.keys(&["Down", "Enter"]);
    t.wait_for("Send to sdk?", 1);
    t.keys(&["Down", "Enter"]);
    // Sampling: allowed once, then refused.
    wait_requests(&api, 3);
    t.wait_for("asks the model", 1);
    t.keys(&["1"]);
    wait_requests(&api, 5);
    t.wait_for("asks the model", 1);
    // "No" refuses the server and the turn goes on (it used to stop
    // the turn, as a tool call's "No" does; Esc still does).
    t.wait_for("3. No, refuse the server's request", 1);
    t.keys(&["Down", "Down", "Enter"]);
    t.wait_for("All steps done.", 1);
    check(&api);
}
