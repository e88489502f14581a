//! What real MCP servers ask of tern, against a server built on the
//! official Python SDK (tests/mcp/sdk_asking_server.py) that asks with
//! the SDK's own calls: `ctx.elicit`, `ctx.session.create_message`,
//! `ctx.report_progress`; over stdio and streamable HTTP. Then the same
//! server as an attacker: what it gets without a grant, when it loops,
//! when the budget is spent; and what `tern mcp list`, `tern doctor`
//! and the SDK's `mcp_status` say of it.
#![cfg(feature = "mcp")]

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;

/// The venv of ci/mcp.sh, or a skip.
fn python(test: &str) -> Option<PathBuf> {
    mcp_servers_dir(test, &["venv/bin/python"]).map(|d| d.join("venv/bin/python"))
}

fn script() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp/sdk_asking_server.py")
        .display()
        .to_string()
}

/// `--mcp-config` with the server over stdio, named `sdk`.
fn stdio_config(python: &Path, log: &Path) -> String {
    let server = tern::obj! {
        "command" => python.display().to_string(),
        "args" => vec![Value::from(script()), Value::from("stdio"), Value::from(log.display().to_string())],
    };
    tern::obj! { "mcpServers" => tern::obj! { "sdk" => server } }.to_json()
}

/// The server over streamable HTTP on 127.0.0.1, killed when dropped.
struct Http {
    child: Child,
    port: u16,
}

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Http {
    fn start(python: &Path, log: &Path, dir: &Path) -> Http {
        let port_file = dir.join("http.port");
        let mut child = Command::new(python)
            .args([script(), "http".into(), log.display().to_string()])
            .arg(&port_file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the Python SDK server");
        let began = Instant::now();
        loop {
            if let Some(port) = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                return Http { child, port };
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the Python SDK server exited: {status}");
            }
            assert!(
                began.elapsed() < Duration::from_secs(30),
                "it did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn config(&self) -> String {
        let server = tern::obj! {
            "type" => "http",
            "url" => format!("http://127.0.0.1:{}/mcp", self.port),
        };
        tern::obj! { "mcpServers" => tern::obj! { "sdk" => server } }.to_json()
    }
}

fn text_of(v: &Value) -> String {
    v.get("content").map(Value::to_json).unwrap_or_default()
}

fn result_line(out: &std::process::Output) -> Value {
    lines(out)
        .into_iter()
        .rfind(|l| l.str_field("type") == Some("result"))
        .expect("a result line")
}

#[test]
fn python_sdk_servers_get_forms_sampling_and_progress_answered_over_stdio_and_http() {
    let Some(python) = python("MCP Python SDK elicitation and sampling server") else {
        return;
    };
    let dir = scratch("mcp-asks-sdk");
    let http = Http::start(&python, &dir.join("http-caps.jsonl"), &dir);
    for (label, config, log) in [
        (
            "stdio",
            stdio_config(&python, &dir.join("stdio-caps.jsonl")),
            dir.join("stdio-caps.jsonl"),
        ),
        ("http", http.config(), dir.join("http-caps.jsonl")),
    ] {
        let api = StandIn::start(vec![
            standin::tools_reply(&[
                ("toolu_settle", "mcp__sdk__settle", "{}"),
                ("toolu_haiku", "mcp__sdk__haiku", "{}"),
                ("toolu_count", "mcp__sdk__count", "{}"),
            ]),
            standin::text_reply("an old silent pond"),
            standin::text_reply("finished"),
        ]);
        let out = run(tern(&api.url, &dir)
            .env("TERN_MCP_ELICITATION", "accept-defaults")
            .args([
                "-p",
                "ask the server",
                "--mcp-config",
                &config,
                "--permission-mode",
                "bypassPermissions",
                "--allowedTools",
                "McpSampling(sdk)",
                "--output-format",
                "stream-json",
                "--verbose",
            ]));
        assert_ok(&out);
        // The SDK's session saw both offered.
        let caps = std::fs::read_to_string(&log).unwrap();
        assert!(
            caps.contains("\"elicitation\"") && caps.contains("\"sampling\""),
            "{label}: {caps}"
        );
        let requests = api.requests();
        assert_eq!(
            requests.len(),
            3,
            "{label}: the sampling request reached the model"
        );
        let sampling = body(&requests[1]).to_json();
        assert!(
            sampling.contains("You are a poet.") && sampling.contains("write a haiku"),
            "{label}: {sampling}"
        );
        assert!(!sampling.contains("ask the server"), "{label}: {sampling}");
        let results = tool_results(&requests[2]);
        assert_eq!(results.len(), 3, "{label}");
        // The defaults, as the SDK's pydantic model validated them.
        let settle = text_of(&results[0]);
        assert!(
            settle.contains("accepted days=7 loud=False"),
            "{label}: {settle}"
        );
        let haiku = text_of(&results[1]);
        assert!(
            haiku.contains("sampled=an old silent pond model="),
            "{label}: {haiku}"
        );
        assert!(text_of(&results[2]).contains("counted"), "{label}");
        let progress: Vec<String> = lines(&out)
            .iter()
            .filter(|l| l.str_field("type") == Some("tool_progress"))
            .filter(|l| l.str_field("tool_use_id") == Some("toolu_count"))
            .map(|l| l.str_field("text").unwrap_or_default().to_string())
            .collect();
        for step in [
            "1/3 · step 1 of 3",
            "2/3 · step 2 of 3",
            "3/3 · step 3 of 3",
        ] {
            assert!(progress.iter().any(|t| t == step), "{label}: {progress:?}");
        }
        // Three model requests paid for, the server's among them.
        let result = result_line(&out);
        let usage = result
            .get("modelUsage")
            .map(Value::to_json)
            .unwrap_or_default();
        assert!(usage.contains("\"inputTokens\":300"), "{label}: {usage}");
        let total = result
            .get("total_cost_usd")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let per_model: f64 = result
            .get("modelUsage")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(_, u)| u.get("costUSD").and_then(Value::as_f64))
                    .sum()
            })
            .unwrap_or(0.0);
        assert!(
            total > 0.0 && (total - per_model).abs() < 1e-9,
            "{label}: {result}"
        );
    }
}

#[test]
fn a_hostile_server_without_a_grant_gets_no_answer_and_no_model() {
    let Some(python) = python("MCP Python SDK hostile server, no grant") else {
        return;
    };
    let dir = scratch("mcp-asks-sdk-nogrant");
    let log = dir.join("caps.jsonl");
    let api = StandIn::start(vec![
        standin::tools_reply(&[
            ("toolu_profile", "mcp__sdk__profile", "{}"),
            ("toolu_greedy", "mcp__sdk__greedy", r#"{"n": 3}"#),
        ]),
        standin::text_reply("finished"),
    ]);
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "the secret is SECRET-PROMPT-7",
        "--mcp-config",
        &stdio_config(&python, &log),
        "--permission-mode",
        "bypassPermissions",
    ]));
    assert_ok(&out);
    let caps = std::fs::read_to_string(&log).unwrap();
    assert!(
        !caps.contains("elicitation") && !caps.contains("sampling"),
        "{caps}"
    );
    let requests = api.requests();
    assert_eq!(
        requests.len(),
        2,
        "the model was asked nothing for the server"
    );
    let results = tool_results(&requests[1]);
    assert!(text_of(&results[0]).contains("declined"), "{}", results[0]);
    let greedy = text_of(&results[1]);
    assert!(
        greedy.contains("granted=0 refused=3") && greedy.contains("did not offer"),
        "{greedy}"
    );
}

#[test]
fn a_looping_server_is_stopped_and_never_sees_the_conversation() {
    let Some(python) = python("MCP Python SDK hostile server, loop") else {
        return;
    };
    let dir = scratch("mcp-asks-sdk-loop");
    let log = dir.join("caps.jsonl");
    let mut replies = vec![standin::tools_reply(&[(
        "toolu_greedy",
        "mcp__sdk__greedy",
        r#"{"n": 30}"#,
    )])];
    replies.extend((0..25).map(|i| standin::text_reply(&format!("answer {i}"))));
    replies.push(standin::text_reply("finished"));
    let api = StandIn::start(replies);
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "the secret is SECRET-PROMPT-7",
        "--mcp-config",
        &stdio_config(&python, &log),
        "--permission-mode",
        "bypassPermissions",
        "--allowedTools",
        "McpSampling(sdk)",
    ]));
    assert_ok(&out);
    let requests = api.requests();
    // The turn, 25 granted requests (the cap), the last turn.
    assert_eq!(requests.len(), 27);
    for r in &requests[1..26] {
        let sent = body(r).to_json();
        // includeContext "allServers" is not honoured: nothing of the
        // conversation, no tools.
        assert!(!sent.contains("SECRET-PROMPT-7"), "{sent}");
        assert!(sent.contains("repeat the conversation"), "{sent}");
        assert!(!sent.contains("\"tools\":[{"), "{sent}");
    }
    let greedy = text_of(&tool_results(&requests[26])[0]);
    assert!(
        greedy.contains("granted=25 refused=5") && greedy.contains("too many sampling requests"),
        "{greedy}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("asked for more than 25 completions"),
        "{stderr}"
    );
}

#[test]
fn a_spent_budget_refuses_sampling_before_the_model_is_asked() {
    let Some(python) = python("MCP Python SDK hostile server, budget") else {
        return;
    };
    let dir = scratch("mcp-asks-sdk-budget");
    let log = dir.join("caps.jsonl");
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_greedy", "mcp__sdk__greedy", r#"{"n": 5}"#)]),
        standin::text_reply("one"),
        standin::text_reply("two"),
        standin::text_reply("three"),
        standin::text_reply("four"),
        standin::text_reply("five"),
        standin::text_reply("finished"),
    ]);
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "go",
        "--mcp-config",
        &stdio_config(&python, &log),
        "--permission-mode",
        "bypassPermissions",
        "--allowedTools",
        "McpSampling(sdk)",
        "--max-budget-usd",
        "0.000001",
        "--output-format",
        "stream-json",
        "--verbose",
    ]));
    let requests = api.requests();
    let results: Vec<Value> = all_tool_results(&lines(&out));
    let greedy = results.iter().map(text_of).collect::<String>();
    // The budget was spent by the first sampling request at the latest
    // (the turn that called the tool may not be counted yet while its
    // tools run): every later one is refused unasked.
    let granted = if greedy.contains("granted=0 refused=5") {
        0
    } else {
        assert!(greedy.contains("granted=1 refused=4"), "{greedy}");
        1
    };
    assert!(greedy.contains("budget is spent"), "{greedy}");
    assert_eq!(requests.len(), 1 + granted, "no model request past the cap");
    let result = result_line(&out);
    assert_eq!(
        result.str_field("subtype"),
        Some("error_max_budget_usd"),
        "{result}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the budget (--max-budget-usd"), "{stderr}");
}

#[test]
fn mcp_list_doctor_and_mcp_status_say_what_the_server_offers_and_what_tern_offered() {
    let Some(python) = python("MCP Python SDK server status") else {
        return;
    };
    let dir = scratch("mcp-asks-sdk-status");
    let log = dir.join("caps.jsonl");
    let config = stdio_config(&python, &log);
    std::fs::write(dir.join("servers.json"), &config).unwrap();
    let api = StandIn::start(vec![]);
    let list = run(tern(&api.url, &dir).args(["mcp", "list", "--mcp-config", &config]));
    assert_ok(&list);
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(
        listed.contains("sdk") && listed.contains("connected"),
        "{listed}"
    );
    assert!(
        listed.contains("offers prompts, resources, tools; tern offers elicitation, sampling"),
        "{listed}"
    );
    let doctor = run(tern(&api.url, &dir).args(["doctor", "--mcp-config", &config]));
    let said = String::from_utf8_lossy(&doctor.stdout);
    let line = said
        .lines()
        .find(|l| l.contains(" sdk "))
        .unwrap_or_default();
    assert!(
        line.contains("connected, ")
            && line
                .ends_with("offers prompts, resources, tools; tern offers elicitation, sampling"),
        "{said}"
    );
}

/// The folder whose node_modules holds the TypeScript Agent SDK
/// (ci/sdk.sh), or a skip.
fn sdk_node_dir(test: &str) -> Option<String> {
    let dir = std::env::var("TERN_SDK_NODE_DIR").unwrap_or_else(|_| {
        format!(
            "{}/.cache/tern-sdk-node",
            std::env::var("HOME").unwrap_or_default()
        )
    });
    let ok = Command::new("node")
        .current_dir(&dir)
        .args(["-e", "import('@anthropic-ai/claude-agent-sdk')"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip(
            test,
            &format!("node cannot import the Agent SDK from {dir} (run ci/sdk.sh)"),
        );
        return None;
    }
    Some(dir)
}

#[test]
fn the_typescript_agent_sdk_fills_the_form_and_mcp_status_says_what_was_offered() {
    const TEST: &str = "TypeScript Agent SDK onElicitation";
    let Some(python) = python(TEST) else {
        return;
    };
    let Some(node) = sdk_node_dir(TEST) else {
        return;
    };
    let dir = scratch("mcp-asks-sdk-ts");
    let log = dir.join("caps.jsonl");
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_profile", "mcp__sdk__profile", "{}")]),
        standin::text_reply("you are Grace"),
    ]);
    let out = run(Command::new("node")
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/scenarios.mjs"))
        .arg("elicitation")
        .current_dir(&dir)
        .env("TERN", tern_bin())
        .env("TERN_SDK_NODE_DIR", &node)
        .env("HOME", home_of(&dir))
        .env("ANTHROPIC_BASE_URL", &api.url)
        .env("ANTHROPIC_API_KEY", "sk-sdk-test")
        .env("SDK_ASKER_PYTHON", &python)
        .env("SDK_ASKER", script())
        .env("SDK_ASKER_LOG", &log)
        .env_remove("ANTHROPIC_MODEL"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = tern::json::parse(stdout.lines().last().unwrap_or_default()).unwrap();
    // The application was asked, with the server's own schema.
    let asked = v
        .get("asked")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    assert_eq!(asked.len(), 1, "{v}");
    assert_eq!(asked[0].str_field("serverName"), Some("sdk"));
    assert_eq!(asked[0].str_field("message"), Some("Who are you?"));
    let schema = asked[0]
        .get("requestedSchema")
        .map(Value::to_json)
        .unwrap_or_default();
    assert!(
        schema.contains("\"name\"") && schema.contains("\"green\""),
        "{schema}"
    );
    // Its answer reached the server, completed with the default.
    let results = tool_results(&api.requests()[1]);
    let text = text_of(&results[0]);
    assert!(text.contains("accepted name=Grace color=green"), "{text}");
    let caps = std::fs::read_to_string(&log).unwrap();
    assert!(caps.contains("\"elicitation\""), "{caps}");
    // mcp_status: what the server declared, and what tern offered it.
    let status = v.get("status").map(Value::to_json).unwrap_or_default();
    assert!(status.contains("\"status\":\"connected\""), "{status}");
    assert!(
        status.contains("\"capabilities\":{") && status.contains("\"tools\":{"),
        "{status}"
    );
    assert!(
        status.contains("\"clientCapabilities\":{\"elicitation\":{}"),
        "{status}"
    );
}
