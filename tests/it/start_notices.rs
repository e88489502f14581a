//! What a session's start has to say (issue 36): a settings file that
//! does not parse, a `--tools` name that is not a tool, an MCP definition
//! refused. A person sees it on stderr as before; a program reading
//! stream-json, or an SDK's session, gets it as a `system` informational
//! message right after `system/init`.

use crate::support;

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The broken project file that `settings::broken_project_file_is_named_and_skipped`
/// uses: named and skipped.
fn broken_settings(dir: &std::path::Path) {
    write(
        &dir.join(".tern/settings.json"),
        "{\n  \"permissions\": {\"allow\": [\"Read\",,]}\n}\n",
    );
}

const BROKEN: &str = ".tern/settings.json:2: invalid JSON";
const NO_TOOL: &str = "--tools names 'Nonesuch', which is not a built-in tool; ignored";

/// The `system` informational messages, in order, as (level, content).
fn informational(all: &[Value]) -> Vec<(String, String)> {
    all.iter()
        .filter(|l| {
            l.str_field("type") == Some("system") && l.str_field("subtype") == Some("informational")
        })
        .map(|l| {
            (
                l.str_field("level").unwrap_or_default().to_string(),
                l.str_field("content").unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Where the first line of `kind` (and `subtype`) is.
fn position(all: &[Value], kind: &str, subtype: Option<&str>) -> usize {
    all.iter()
        .position(|l| {
            l.str_field("type") == Some(kind)
                && subtype.is_none_or(|s| l.str_field("subtype") == Some(s))
        })
        .unwrap_or_else(|| panic!("no {kind} {subtype:?} line in {all:?}"))
}

#[test]
fn stream_json_gets_the_start_warnings_after_init() {
    let dir = scratch("notices-stream");
    broken_settings(&dir);
    let api = StandIn::start(vec![standin::text_reply("still here")]);
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "x",
        "--output-format",
        "stream-json",
        "--verbose",
        "--tools",
        "Read,Nonesuch",
    ]));
    assert_ok(&out);
    let all = lines(&out);
    let said = informational(&all);
    let settings = said
        .iter()
        .position(|(level, text)| level == "warning" && text.contains(BROKEN));
    let tools = said
        .iter()
        .position(|(level, text)| level == "warning" && text == &format!("warning: {NO_TOOL}"));
    assert!(settings.is_some() && tools.is_some(), "{said:?}");
    // In the order they arose (the settings are read first), and before
    // the turn: right after init.
    assert!(settings < tools, "{said:?}");
    let init = position(&all, "system", Some("init"));
    let first = position(&all, "system", Some("informational"));
    assert_eq!(first, init + 1, "{all:?}");
    assert!(first < position(&all, "assistant", None));
    // The person watching stderr sees them too, as before.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("tern: warning: {NO_TOOL}\n")),
        "{err}"
    );
}

#[test]
fn text_mode_still_says_them_on_stderr() {
    let dir = scratch("notices-text");
    broken_settings(&dir);
    let api = StandIn::start(vec![standin::text_reply("still here")]);
    let out = run(tern(&api.url, &dir).args(["-p", "x", "--tools", "Read,Nonesuch"]));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "still here\n");
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    let settings = lines
        .iter()
        .position(|l| l.starts_with("tern: warning: ") && l.contains(BROKEN));
    let tools = lines
        .iter()
        .position(|l| *l == format!("tern: warning: {NO_TOOL}"));
    assert!(settings.is_some() && tools.is_some(), "{err}");
    assert!(settings < tools, "{err}");
}

/// A session that cannot start still says what was wrong before it:
/// the warning may be the reason.
#[test]
fn a_failed_start_says_its_warnings_first() {
    let dir = scratch("notices-failed");
    broken_settings(&dir);
    // --resume of a session that does not exist fails after the settings
    // were read.
    let out = run(tern("http://127.0.0.1:9", &dir).args(["-p", "x", "--resume", "nonesuch"]));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let warning = err.find(BROKEN);
    let failure = err.find("nonesuch");
    assert!(warning.is_some() && failure.is_some(), "{err}");
    assert!(warning < failure, "{err}");
}

/// An SDK's session: the start's warnings (an MCP definition refused
/// among them) follow the first prompt's `system/init`, once.
#[cfg(feature = "mcp")]
#[test]
fn an_sdk_session_gets_them_after_its_first_init() {
    use std::io::Write;
    use std::process::Stdio;
    let dir = scratch("notices-sdk");
    let api = StandIn::start(vec![
        standin::text_reply("first"),
        standin::text_reply("second"),
    ]);
    let mut child = tern(&api.url, &dir)
        .args([
            "--output-format",
            "stream-json",
            "--verbose",
            "--input-format",
            "stream-json",
            "--mcp-config",
            "{not json",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input = [
        r#"{"type":"control_request","request_id":"r1","request":{"subtype":"initialize","hooks":null}}"#,
        r#"{"type":"user","message":{"role":"user","content":"one"},"parent_tool_use_id":null}"#,
        r#"{"type":"user","message":{"role":"user","content":"two"},"parent_tool_use_id":null}"#,
    ]
    .join("\n");
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
    let all = lines(&out);
    let said = informational(&all);
    let refused: Vec<_> = said
        .iter()
        .filter(|(level, text)| {
            level == "warning"
                && text.starts_with("warning: MCP: --mcp-config {not json: not valid JSON")
        })
        .collect();
    assert_eq!(refused.len(), 1, "{said:?}");
    let init = position(&all, "system", Some("init"));
    assert_eq!(position(&all, "system", Some("informational")), init + 1);
    assert_eq!(
        all.iter()
            .filter(|l| l.str_field("subtype") == Some("init"))
            .count(),
        2,
        "one init per prompt"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("tern: warning: MCP: --mcp-config {not json: not valid JSON"),
        "{err}"
    );
}
