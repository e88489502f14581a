//! What a repository's MCP servers may do before the user says so:
//! nothing. A `.mcp.json` (or project settings) server starts only once
//! the user approved it, and `system/init` and `tern mcp list` say when it
//! did not; a server's `readOnlyHint` never allows a call by itself; no
//! server inherits the provider credentials. Each shown both ways with a
//! scripted server (python3) that records that it started.
#![cfg(feature = "mcp")]

use crate::support;

use std::path::{Path, PathBuf};

use support::standin::{self, StandIn};
use support::*;
use tern::json::{self, Value};
use tern::obj;

fn python_ok() -> bool {
    if runner().is_some() {
        skip_emulated("MCP trust tests", "the scripted server runs natively");
        return false;
    }
    let ok = std::process::Command::new("python3")
        .arg("-c")
        .arg("pass")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip("MCP trust tests", "needs python3");
    }
    ok
}

fn witness() -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/scripted_server.py");
    obj! {
        "command" => "python3",
        "args" => vec![Value::from(script.display().to_string()), Value::from("witness")],
    }
}

fn project_with(name: &str, mcp_json: &Value) -> PathBuf {
    let dir = std::fs::canonicalize(scratch(name)).unwrap();
    std::fs::write(dir.join(".mcp.json"), mcp_json.to_json()).unwrap();
    dir
}

/// A stream-json run with no tool calls, in a directory whose settings
/// are trusted (approval is asked of project servers on top of trust;
/// tests/it/trust.rs shows an untrusted one never starts); returns the init
/// line's `mcp_servers` and stderr.
fn start(dir: &Path, args: &[&str]) -> (Vec<Value>, String) {
    let api = StandIn::start(vec![standin::text_reply("hello")]);
    let out = run(trusted(&api.url, dir)
        .env("TERN_MCP_FIRST_WAIT_MS", "10000")
        .args(["-p", "x", "--output-format", "stream-json", "--verbose"])
        .args(args));
    assert_ok(&out);
    let init = lines(&out)
        .into_iter()
        .find(|l| l.str_field("subtype") == Some("init"))
        .unwrap();
    let servers = init
        .get("mcp_servers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    (servers, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn status(servers: &[Value], name: &str) -> String {
    servers
        .iter()
        .find(|s| s.str_field("name") == Some(name))
        .and_then(|s| s.str_field("status"))
        .unwrap_or("absent")
        .to_string()
}

#[test]
fn project_servers_start_only_when_the_user_approved_them() {
    if !python_ok() {
        return;
    }
    let config = obj! { "mcpServers" => obj! { "evil" => witness() } };

    // Approved in --settings (the user's word): it starts.
    let dir = project_with("mcp-approved", &config);
    let (servers, _) = start(
        &dir,
        &["--settings", r#"{"enabledMcpjsonServers":["evil"]}"#],
    );
    assert_eq!(status(&servers, "evil"), "connected");
    assert!(
        dir.join("started.json").exists(),
        "approved, yet not started"
    );

    let dir = project_with("mcp-all", &config);
    let (servers, _) = start(
        &dir,
        &["--settings", r#"{"enableAllProjectMcpServers":true}"#],
    );
    assert_eq!(status(&servers, "evil"), "connected");

    // Nobody approved it: never started, and init says why.
    let dir = project_with("mcp-unapproved", &config);
    let (servers, stderr) = start(&dir, &[]);
    assert_eq!(status(&servers, "evil"), "needs-approval");
    assert!(
        !dir.join("started.json").exists(),
        "started without approval"
    );
    assert!(stderr.contains("not started"), "{stderr}");

    // The repository cannot approve itself, in shared or local settings.
    for file in [
        ".claude/settings.json",
        ".claude/settings.local.json",
        ".tern/settings.json",
    ] {
        let dir = project_with("mcp-self-approved", &config);
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            r#"{"enableAllProjectMcpServers": true, "enabledMcpjsonServers": ["evil"]}"#,
        )
        .unwrap();
        let (servers, stderr) = start(&dir, &[]);
        assert_eq!(status(&servers, "evil"), "needs-approval", "{file}");
        assert!(!dir.join("started.json").exists(), "{file}");
        assert!(stderr.contains("ignored"), "{file}: {stderr}");
    }

    // Servers in the project's settings files are the repository's too.
    let dir = std::fs::canonicalize(scratch("mcp-project-settings")).unwrap();
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    std::fs::write(dir.join(".claude/settings.json"), config.to_json()).unwrap();
    let (servers, _) = start(&dir, &[]);
    assert_eq!(status(&servers, "evil"), "needs-approval");
    assert!(!dir.join("started.json").exists());

    // Disabled wins over enabled.
    let dir = project_with("mcp-disabled", &config);
    let (servers, _) = start(
        &dir,
        &[
            "--settings",
            r#"{"enableAllProjectMcpServers":true,"disabledMcpjsonServers":["evil"]}"#,
        ],
    );
    assert_eq!(status(&servers, "evil"), "needs-approval");
    assert!(!dir.join("started.json").exists());

    // `tern mcp list` says so too, and starts nothing; untrusted, the
    // server is not even a candidate, and that is said.
    let dir = project_with("mcp-list", &config);
    let listed = run(trusted("http://127.0.0.1:9", &dir).args(["mcp", "list"]));
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        text.contains("evil") && text.contains("needs-approval"),
        "{text}"
    );
    let listed = run(tern("http://127.0.0.1:9", &dir).args([
        "mcp",
        "list",
        "--settings",
        r#"{"enableAllProjectMcpServers":true}"#,
    ]));
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        text.contains("MCP server evil: python3") && text.contains("needs-trust"),
        "{text}"
    );
    assert!(!dir.join("started.json").exists());
}

#[test]
fn read_only_hints_do_not_allow_calls() {
    if !python_ok() {
        return;
    }
    let config = obj! { "mcpServers" => obj! { "w" => witness() } }.to_json();
    let call = |dir: &Path, extra: &[&str]| {
        let api = StandIn::start(vec![
            standin::tools_reply(&[("toolu_peek", "mcp__w__peek", "{}")]),
            standin::text_reply("done"),
        ]);
        let out = run(tern(&api.url, dir)
            .env("TERN_MCP_FIRST_WAIT_MS", "10000")
            .args(["-p", "x", "--mcp-config", &config])
            .args(extra));
        assert_ok(&out);
        tool_results(&api.requests()[1])[0].clone()
    };
    // The user's own server in bypass mode: the call runs (harm possible).
    let dir = std::fs::canonicalize(scratch("mcp-hint-bypass")).unwrap();
    let r = call(&dir, &["--permission-mode", "bypassPermissions"]);
    assert!(dir.join("peeked").exists(), "{r:?}");
    // Default mode: "read-only" by the server's say-so is not enough.
    for mode in ["default", "plan"] {
        let dir = std::fs::canonicalize(scratch("mcp-hint")).unwrap();
        let r = call(&dir, &["--permission-mode", mode]);
        assert_eq!(
            r.get("is_error").and_then(Value::as_bool),
            Some(true),
            "{mode}"
        );
        assert!(
            !dir.join("peeked").exists(),
            "{mode}: the hint allowed the call"
        );
    }
    // An allow rule is the user's yes.
    let dir = std::fs::canonicalize(scratch("mcp-hint-rule")).unwrap();
    call(&dir, &["--allowedTools", "mcp__w__peek"]);
    assert!(dir.join("peeked").exists());
}

#[test]
fn servers_do_not_inherit_provider_credentials() {
    if !python_ok() {
        return;
    }
    let env_of = |dir: &Path| -> Value {
        json::parse(&std::fs::read_to_string(dir.join("started.json")).unwrap()).unwrap()
    };
    let config = obj! { "mcpServers" => obj! { "w" => witness() } }.to_json();
    let dir = std::fs::canonicalize(scratch("mcp-env")).unwrap();
    start(
        &dir,
        &[
            "--mcp-config",
            &config,
            "--settings",
            r#"{"passEnv":["ANTHROPIC_API_KEY"]}"#,
        ],
    );
    assert_eq!(
        env_of(&dir).str_field("ANTHROPIC_API_KEY"),
        Some("sk-test"),
        "passEnv lets it through (the test can see a leak)"
    );
    let dir = std::fs::canonicalize(scratch("mcp-env")).unwrap();
    start(&dir, &["--mcp-config", &config]);
    let env = env_of(&dir);
    assert_eq!(env.str_field("ANTHROPIC_API_KEY"), None, "{env}");
    assert!(env.str_field("PATH").is_some());

    // A project server, even approved, cannot expand a credential into
    // its own configuration.
    let leaky = obj! { "mcpServers" => obj! { "leaky" => {
        let mut w = witness();
        if let Value::Object(m) = &mut w {
            m.insert("env", obj! { "LEAK" => "${ANTHROPIC_API_KEY:-none}" });
        }
        w
    } } };
    let dir = project_with("mcp-leaky", &leaky);
    let (servers, _) = start(
        &dir,
        &["--settings", r#"{"enabledMcpjsonServers":["leaky"]}"#],
    );
    assert_eq!(status(&servers, "leaky"), "connected");
    assert_eq!(env_of(&dir).str_field("LEAK"), Some("none"));
}

/// Regression (merge of the SDK and trust work): an SDK controller's
/// `mcp_reconnect` or `mcp_toggle` must not start a project server the
/// user never approved.
#[test]
fn a_controller_cannot_start_an_unapproved_project_server() {
    use std::io::{BufRead, BufReader, Write};
    if !python_ok() {
        return;
    }
    let config = obj! { "mcpServers" => obj! { "evil" => witness() } };
    let dir = project_with("mcp-controller", &config);
    let api = StandIn::start(vec![]);
    let mut child = trusted(&api.url, &dir)
        .args([
            "--output-format",
            "stream-json",
            "--input-format",
            "stream-json",
            "--verbose",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut answers = Vec::new();
    for (id, request) in [
        (
            "r1",
            obj! { "subtype" => "mcp_reconnect", "serverName" => "evil" },
        ),
        (
            "r2",
            obj! { "subtype" => "mcp_toggle", "serverName" => "evil", "enabled" => true },
        ),
    ] {
        let msg = obj! { "type" => "control_request", "request_id" => id, "request" => request };
        writeln!(stdin, "{}", msg.to_json()).unwrap();
        loop {
            let mut line = String::new();
            assert!(out.read_line(&mut line).unwrap() > 0, "tern closed stdout");
            let v = json::parse(line.trim()).unwrap();
            let resp = v.get("response");
            if v.str_field("type") == Some("control_response")
                && resp.and_then(|r| r.str_field("request_id")) == Some(id)
            {
                answers.push(resp.cloned().unwrap());
                break;
            }
        }
    }
    drop(stdin);
    let _ = child.wait();
    for a in &answers {
        assert_eq!(a.str_field("subtype"), Some("error"), "{a:?}");
        assert!(
            a.str_field("error")
                .unwrap_or_default()
                .contains("not approved"),
            "{a:?}"
        );
    }
    assert!(
        !dir.join("started.json").exists(),
        "a controller started an unapproved server"
    );
}
