//! The MCP client against real servers from npm and PyPI (installed by
//! `ci/mcp.sh`) and a scripted server for failure modes. Skipped with a
//! message where the servers are missing, unless TERN_REQUIRE_MCP=1.
#![cfg(feature = "mcp")]

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;

fn servers_dir() -> Option<PathBuf> {
    mcp_servers_dir(
        "MCP tests",
        &[
            "node_modules/.bin/mcp-server-everything",
            "venv/bin/mcp-server-time",
        ],
    )
}

fn scripted(mode: &str, marker: &str) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/scripted_server.py");
    tern::obj! {
        "command" => "python3",
        "args" => vec![Value::from(script.display().to_string()), Value::from(mode), Value::from(marker)],
    }
}

struct HttpServer(Child);

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn http_everything(dir: &Path) -> (HttpServer, String) {
    let (child, port) = everything_server(dir, "streamableHttp");
    (HttpServer(child), format!("http://127.0.0.1:{port}/mcp"))
}

fn leftovers(marker: &str) -> usize {
    let out = Command::new("pgrep").args(["-f", marker]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().count()
}

#[test]
fn a_turn_calls_a_tool_on_each_real_server() {
    let Some(servers) = servers_dir() else { return };
    let (_web, url) = http_everything(&servers);
    let dir = scratch("mcp-real");
    std::fs::write(dir.join("hello.txt"), "hi").unwrap();
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    assert!(
        Command::new("git")
            .args(["init", "-q"])
            .current_dir(&repo)
            .status()
            .unwrap()
            .success()
    );
    let config = tern::obj! { "mcpServers" => tern::obj! {
        "everything" => tern::obj! { "command" => servers.join("node_modules/.bin/mcp-server-everything").display().to_string(), "args" => vec![Value::from("stdio")] },
        "web" => tern::obj! { "type" => "http", "url" => url.as_str() },
        "files" => tern::obj! { "command" => servers.join("node_modules/.bin/mcp-server-filesystem").display().to_string(), "args" => vec![Value::from(dir.display().to_string())] },
        "time" => tern::obj! { "command" => servers.join("venv/bin/mcp-server-time").display().to_string() },
        "git" => tern::obj! { "command" => servers.join("venv/bin/mcp-server-git").display().to_string() },
    }};
    let repo_input = format!(r#"{{"repo_path": "{}"}}"#, repo.display());
    let files_input = format!(r#"{{"path": "{}"}}"#, dir.display());
    let api = StandIn::start(vec![
        standin::tools_reply(&[
            (
                "toolu_echo",
                "mcp__everything__echo",
                r#"{"message": "echo from tern"}"#,
            ),
            ("toolu_sum", "mcp__web__get-sum", r#"{"a": 20, "b": 22}"#),
            ("toolu_files", "mcp__files__list_directory", &files_input),
            (
                "toolu_time",
                "mcp__time__get_current_time",
                r#"{"timezone": "UTC"}"#,
            ),
            ("toolu_git", "mcp__git__git_status", &repo_input),
        ]),
        standin::text_reply("all five answered"),
    ]);
    let out = run(tern(&api.url, &dir)
        .env("MCP_TIMEOUT", "20000")
        .env("TERN_MCP_FIRST_WAIT_MS", "20000")
        .args([
            "-p",
            "use the servers",
            "--mcp-config",
            &config.to_json(),
            "--permission-mode",
            "bypassPermissions",
            "--output-format",
            "stream-json",
        ]));
    assert_ok(&out);
    let init = &lines(&out)[0];
    for s in init.get("mcp_servers").unwrap().as_array().unwrap() {
        assert_eq!(s.str_field("status"), Some("connected"), "{s}");
    }
    let first = body(&api.requests()[0]);
    let offered = first.get("tools").unwrap().to_json();
    for name in [
        "mcp__everything__echo",
        "mcp__web__get-sum",
        "mcp__files__list_directory",
        "mcp__time__get_current_time",
        "mcp__git__git_status",
    ] {
        assert!(offered.contains(name), "{name} not offered");
    }
    let results = tool_results(&api.requests()[1]);
    let text = |i: usize| results[i].to_json();
    assert!(text(0).contains("echo from tern"), "{}", text(0));
    assert!(text(1).contains("42"), "{}", text(1));
    assert!(text(2).contains("hello.txt"), "{}", text(2));
    assert!(
        text(3).contains("UTC") || text(3).contains("datetime"),
        "{}",
        text(3)
    );
    assert!(
        text(4).to_lowercase().contains("branch") || text(4).contains("status"),
        "{}",
        text(4)
    );
    for r in &results {
        assert!(r.get("is_error").is_none(), "{r}");
    }
}

#[test]
fn list_changed_a_crash_a_silent_server_and_no_orphans() {
    if servers_dir().is_none() {
        return;
    }
    let marker = format!("tern-mcp-marker-{}", std::process::id());
    let config = tern::obj! { "mcpServers" => tern::obj! {
        "changing" => scripted("changing", &marker),
        "dying" => scripted("dying", &marker),
        "silent" => scripted("silent", &marker),
        "noisy" => scripted("noisy", &marker),
    }};
    let dir = scratch("mcp-edge");
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_add", "mcp__changing__add_tool", "{}")]),
        standin::tools_reply(&[
            ("toolu_crash", "mcp__dying__crash", "{}"),
            ("toolu_huge", "mcp__noisy__huge", "{}"),
        ]),
        standin::tools_reply(&[("toolu_new", "mcp__changing__new_tool", "{}")]),
        standin::text_reply("done"),
    ]);
    // The silent server is given up on after MCP_TIMEOUT; the others must
    // start within it, which a loaded machine's python takes over 1.5 s to.
    let out = run(tern(&api.url, &dir)
        .env("MCP_TIMEOUT", "5000")
        .env("TERN_MCP_FIRST_WAIT_MS", "15000")
        .args([
            "-p",
            "x",
            "--mcp-config",
            &config.to_json(),
            "--permission-mode",
            "bypassPermissions",
            "--output-format",
            "stream-json",
        ]));
    assert_ok(&out);
    let init = &lines(&out)[0];
    let status = |name: &str| {
        init.get("mcp_servers")
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s.str_field("name") == Some(name))
            .cloned()
            .unwrap()
    };
    assert_eq!(status("changing").str_field("status"), Some("connected"));
    let silent = status("silent");
    assert_eq!(silent.str_field("status"), Some("failed"));
    assert!(
        silent.str_field("error").unwrap().contains("MCP_TIMEOUT"),
        "{silent}"
    );
    let reqs = api.requests();
    let tools = |i: usize| body(&reqs[i]).get("tools").unwrap().to_json();
    assert!(!tools(0).contains("mcp__changing__new_tool"));
    assert!(
        tools(1).contains("mcp__changing__new_tool"),
        "list_changed did not reach the next request"
    );
    let second = tool_results(&reqs[2]);
    assert_eq!(
        second[0].get("is_error").and_then(Value::as_bool),
        Some(true)
    );
    let crash = second[0].str_field("content").unwrap();
    assert!(crash.contains("exited"), "{crash}");
    let huge = second[1].str_field("content").unwrap();
    assert!(
        huge.contains("result cut at 100000"),
        "{}",
        &huge[huge.len() - 200..]
    );
    let third = tool_results(&reqs[3]);
    assert!(third[0].to_json().contains("new tool works"));
    // Every server process is gone once tern has exited.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(leftovers(&marker), 0, "orphaned MCP servers");
}

#[test]
fn mcp_calls_go_through_the_permission_rules() {
    if servers_dir().is_none() {
        return;
    }
    let marker = format!("tern-mcp-perm-{}", std::process::id());
    let config =
        tern::obj! { "mcpServers" => tern::obj! { "changing" => scripted("changing", &marker) } };
    let dir = scratch("mcp-perm");
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_p1", "mcp__changing__add_tool", "{}")]),
        standin::text_reply("refused"),
        standin::tools_reply(&[("toolu_p2", "mcp__changing__add_tool", "{}")]),
        standin::text_reply("allowed"),
    ]);
    let out = run(tern(&api.url, &dir).args(["-p", "x", "--mcp-config", &config.to_json()]));
    assert_ok(&out);
    let denied = tool_results(&api.requests()[1])[0]
        .str_field("content")
        .unwrap()
        .to_string();
    assert!(denied.contains("Permission denied"), "{denied}");
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "x",
        "--mcp-config",
        &config.to_json(),
        "--allowedTools",
        "mcp__changing",
    ]));
    assert_ok(&out);
    assert!(
        tool_results(&api.requests()[3])[0]
            .to_json()
            .contains("added")
    );
    let listed = run(tern(&api.url, &dir).args([
        "mcp",
        "list",
        "--strict-mcp-config",
        "--mcp-config",
        &config.to_json(),
    ]));
    assert_ok(&listed);
    assert!(
        String::from_utf8_lossy(&listed.stdout)
            .contains("changing             connected   1 tools")
    );
}

/// An interrupted call is cancelled at the server, not left running.
#[test]
fn an_interrupt_cancels_the_call_at_the_server() {
    if servers_dir().is_none() {
        return;
    }
    let marker = format!("tern-mcp-cancel-{}", std::process::id());
    let dir = scratch("mcp-cancel");
    let log = dir.join("cancelled.jsonl");
    let config = tern::obj! { "mcpServers" => tern::obj! { "slow" => scripted("slow", &marker) } };
    let api = StandIn::start(vec![standin::tools_reply(&[(
        "toolu_wait",
        "mcp__slow__wait",
        "{}",
    )])]);
    let mut child = tern(&api.url, &dir)
        .env("SCRIPTED_LOG", &log)
        .args([
            "-p",
            "x",
            "--mcp-config",
            &config.to_json(),
            "--permission-mode",
            "bypassPermissions",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let began = Instant::now();
    while api.requests().is_empty() && began.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let cancelled = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        cancelled.contains("notifications/cancelled") && cancelled.contains("requestId"),
        "{cancelled:?}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(leftovers(&marker), 0, "orphaned MCP server");
}

/// Sub-agents get the session's MCP tools; a coordinator only delegates,
/// so its own requests carry none while its workers' do.
#[test]
fn sub_agents_and_workers_get_the_mcp_tools() {
    if servers_dir().is_none() {
        return;
    }
    let marker = format!("tern-mcp-child-{}", std::process::id());
    let config =
        tern::obj! { "mcpServers" => tern::obj! { "changing" => scripted("changing", &marker) } };
    for coordinator in [false, true] {
        let dir = scratch("mcp-child");
        let api = StandIn::start(vec![
            standin::tools_reply(&[(
                "toolu_a",
                "Agent",
                r#"{"description": "d", "prompt": "CHILD"}"#,
            )]),
            standin::text_reply("child done"),
            standin::text_reply("parent done"),
        ]);
        let mut cmd = tern(&api.url, &dir);
        cmd.args([
            "-p",
            "x",
            "--mcp-config",
            &config.to_json(),
            "--permission-mode",
            "bypassPermissions",
        ]);
        if coordinator {
            cmd.arg("--coordinator");
        }
        assert_ok(&run(&mut cmd));
        let reqs = api.requests();
        let has_mcp = |i: usize| {
            body(&reqs[i])
                .get("tools")
                .unwrap()
                .to_json()
                .contains("mcp__changing__add_tool")
        };
        assert_eq!(
            has_mcp(0),
            !coordinator,
            "the top level, coordinator={coordinator}"
        );
        assert!(has_mcp(1), "the sub-agent, coordinator={coordinator}");
    }
}
