//! `tern doctor` in healthy and broken setups: the exit status says whether
//! a session could run, the screen says what it would use and where each
//! choice came from, and no secret is ever shown.

use crate::support;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

use support::standin::StandIn;
use support::*;
use tern::json::{self, Value};

const SECRET: &str = "sk-doctor-secret-7f3a";

fn doctor(dir: &Path, url: &str) -> Command {
    let mut c = tern(url, dir);
    c.env("ANTHROPIC_API_KEY", SECRET).arg("doctor");
    c
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The line of a check, by its section-local name.
fn line<'a>(screen: &'a str, name: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(name))
        .unwrap_or_else(|| panic!("no {name} line in:\n{screen}"))
}

fn healthy_server() -> StandIn {
    let api = StandIn::start(vec![]);
    api.set_get(
        "/v1/models",
        200,
        r#"{"data":[{"id":"claude-sonnet-4-5"}]}"#,
    );
    api
}

#[test]
fn a_healthy_setup_says_what_it_uses_and_exits_0() {
    let dir = scratch("doctor-ok");
    std::fs::create_dir_all(dir.join(".tern")).unwrap();
    std::fs::write(
        dir.join(".tern/settings.json"),
        r#"{"model": "claude-haiku-4-5", "permissions": {"allow": ["Bash(git log:*)"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}]}}"#,
    )
    .unwrap();
    let api = healthy_server();
    // The test wrote the project's settings, and trusts them.
    let out = run(doctor(&dir, &api.url).env("TERN_TRUST_PROJECT", "1"));
    let screen = text(&out);
    assert_eq!(out.status.code(), Some(0), "{screen}");
    assert!(
        line(&screen, "directory").contains("trusted for this run (TERN_TRUST_PROJECT)"),
        "{screen}"
    );
    assert!(line(&screen, "base").contains(&api.url), "{screen}");
    assert!(line(&screen, "base").contains("[ANTHROPIC_BASE_URL]"));
    assert!(line(&screen, "model").contains("claude-haiku-4-5  [settings: model]"));
    assert!(line(&screen, "credentials").contains("from ANTHROPIC_API_KEY"));
    assert!(line(&screen, "server").starts_with("  ok"), "{screen}");
    assert!(line(&screen, "read").contains(".tern/settings.json"));
    assert!(line(&screen, "PreToolUse").contains("Bash → ./check.sh"));
    assert!(line(&screen, "folder").contains("(writable)"));
    assert!(screen.contains("ready: nothing blocks a session"));
    assert!(!screen.contains(SECRET), "the key leaked:\n{screen}");
    // The server was asked once, with the key (never shown).
    assert!(api.log().iter().any(|(_, l)| l == "GET /v1/models"));
}

#[test]
fn json_output_has_the_same_checks() {
    let dir = scratch("doctor-json");
    let api = healthy_server();
    let out = run(doctor(&dir, &api.url).args(["--output-format", "json"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let v = json::parse(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert_eq!(v.get("ok").and_then(Value::as_bool), Some(true));
    let checks = v.get("checks").and_then(Value::as_array).unwrap();
    let server = checks
        .iter()
        .find(|c| c.str_field("name") == Some("server"))
        .unwrap();
    assert_eq!(server.str_field("status"), Some("ok"));
    assert!(checks.iter().all(|c| c.str_field("section").is_some()));
    assert!(!String::from_utf8_lossy(&out.stdout).contains(SECRET));
}

#[test]
fn a_broken_settings_file_fails_and_is_named_with_its_line() {
    let dir = scratch("doctor-broken");
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    std::fs::write(
        dir.join(".claude/settings.json"),
        "{\n  \"permissions\": {\"deny\": [\"Bash(rm:*)\"]\n",
    )
    .unwrap();
    let api = healthy_server();
    let out = run(&mut doctor(&dir, &api.url));
    let screen = text(&out);
    assert_eq!(out.status.code(), Some(1), "{screen}");
    let broken = line(&screen, "broken");
    assert!(broken.starts_with("  FAIL"), "{screen}");
    assert!(broken.contains(".claude/settings.json:"), "{broken}");
    assert!(screen.contains("1 problem blocks a session"));
}

#[test]
fn an_unreachable_server_fails() {
    let dir = scratch("doctor-down");
    let port = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", port.local_addr().unwrap());
    drop(port);
    let out = run(&mut doctor(&dir, &url));
    let screen = text(&out);
    assert_eq!(out.status.code(), Some(1), "{screen}");
    assert!(line(&screen, "server").contains("unreachable"), "{screen}");
}

#[test]
fn refused_credentials_fail_without_showing_them() {
    let dir = scratch("doctor-401");
    let api = StandIn::start(vec![]);
    api.set_get(
        "/v1/models",
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    );
    let out = run(&mut doctor(&dir, &api.url));
    let screen = text(&out);
    assert_eq!(out.status.code(), Some(1), "{screen}");
    assert!(line(&screen, "server").contains("refuses the credentials"));
    assert!(!screen.contains(SECRET));
}

#[test]
fn a_discovered_server_is_named_as_the_source() {
    let dir = scratch("doctor-disc");
    let api = StandIn::start(vec![]);
    api.set_get(
        "/props",
        200,
        r#"{"default_generation_settings":{"n_ctx":4096},"model_path":"/m/smol.gguf"}"#,
    );
    api.set_get("/v1/models", 200, r#"{"data":[{"id":"smol"}]}"#);
    let out = run(tern(&api.url, &dir)
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env("TERN_LOCAL_SERVERS", format!("llamacpp={}", api.url))
        .arg("doctor"));
    let screen = text(&out);
    assert_eq!(out.status.code(), Some(0), "{screen}");
    let source = format!("[discovered: llama.cpp at {}]", api.url);
    assert!(
        line(&screen, "model").contains(&format!("smol  {source}")),
        "{screen}"
    );
    assert!(line(&screen, "context").contains(&format!("4096 tokens  {source}")));
    assert!(line(&screen, "credentials").contains("none"));

    // Nothing answering: the probes are listed and the session is blocked.
    let out = run(tern(&api.url, &dir)
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env("TERN_LOCAL_SERVERS", "vllm=http://127.0.0.1:1")
        .arg("doctor"));
    let screen = text(&out);
    assert_eq!(out.status.code(), Some(1), "{screen}");
    assert!(line(&screen, "probe").contains("connection refused"));
    assert!(screen.contains("Fix it one of three ways"));
}
