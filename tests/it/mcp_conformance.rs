//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! installed with Node 22 by `ci/mcp.sh`) against tern as the client, one
//! test per client scenario. The suite starts a server for the scenario,
//! runs `tests/mcp/conformance_client.sh` (sign in if needed, then one
//! `tern -p` turn) and grades what tern sent; a scenario passes when none
//! of its checks failed or warned. Beyond the grade, the tool call the
//! scenario's server offers must return its result: the stand-in model
//! calls every MCP tool it is offered and this test reads the results
//! tern sent back.
#![cfg(feature = "mcp")]

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::standin::{self, StandIn};
use support::*;
use tern::json::{self, Value};

const SUITE: &str = "conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js";
const NODE: &str = "conformance/node_modules/node/bin/node";

/// What the scenario's server lets the model do once tern is connected.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Tools {
    /// Every tool offered is called and returns its result.
    Answer,
    /// No tool is offered: the server has none, or tern must not connect.
    NoneOffered,
}

/// A value for a schema: its default, its first enum member, or the
/// simplest value of its type (required properties only).
fn sample(schema: &Value) -> Value {
    if let Some(d) = schema.get("default") {
        return d.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    match schema.str_field("type") {
        Some("number" | "integer") => Value::from(1i64),
        Some("boolean") => Value::from(true),
        Some("array") => Value::Array(vec![]),
        Some("object") => {
            let mut out = json::Map::new();
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (name, prop) in props.iter() {
                    if required.contains(&name) {
                        out.insert(name, sample(prop));
                    }
                }
            }
            Value::Object(out)
        }
        _ => Value::from("x"),
    }
}

/// The tool results in a request's last message.
fn tool_results(body: &Value) -> Vec<Value> {
    let last = body
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|m| m.last());
    last.and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b.str_field("type") == Some("tool_result"))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

fn mcp_tools(body: &Value) -> Vec<Value> {
    body.get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter(|t| t.str_field("name").is_some_and(|n| n.starts_with("mcp__")))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The model: calls every MCP tool it is offered, once, then answers.
fn model() -> StandIn {
    let api = StandIn::start(vec![]);
    api.set_responder(Box::new(|req| {
        let body = json::parse(&req.body).ok()?;
        let tools = mcp_tools(&body);
        if tools.is_empty() || !tool_results(&body).is_empty() {
            return Some(standin::text_reply("done"));
        }
        let calls: Vec<(String, String, String)> = tools
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let input = sample(t.get("input_schema").unwrap_or(&Value::Null));
                (
                    format!("toolu_c{i}"),
                    t.str_field("name").unwrap_or("").to_string(),
                    input.to_json(),
                )
            })
            .collect();
        let calls: Vec<(&str, &str, &str)> = calls
            .iter()
            .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
            .collect();
        Some(standin::tools_reply(&calls))
    }));
    api
}

/// Every checks.json under the suite's output folder.
fn checks(out: &Path) -> Vec<Value> {
    let mut found = vec![];
    let mut dirs = vec![out.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.file_name().is_some_and(|n| n == "checks.json") {
                let text = std::fs::read_to_string(&p).unwrap();
                let list = json::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                found.extend(list.as_array().cloned().unwrap_or_default());
            }
        }
    }
    found
}

fn scenario(name: &str, tools: Tools) {
    let test = format!("conformance scenario {name}");
    let Some(dir) = mcp_servers_dir(&test, &[SUITE, NODE]) else {
        return;
    };
    let api = model();
    let work = scratch(&format!("conformance-{}", name.replace('/', "-")));
    let out = work.join("results");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let driver = root.join("tests/mcp/conformance_client.sh");
    let node = dir.join(NODE);
    let path = format!(
        "{}:{}",
        node.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = Command::new(&node)
        .arg("--require")
        .arg(root.join("tests/mcp/bind-localhost.cjs"))
        .arg(dir.join(SUITE))
        .args(["client", "--scenario", name, "--timeout", "120000"])
        .arg("--command")
        .arg(format!("bash {}", driver.display()))
        .arg("-o")
        .arg(&out)
        .env("PATH", path)
        .env("TERN_BIN", tern_bin())
        .env("ANTHROPIC_BASE_URL", &api.url)
        .env("TMPDIR", &work)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let checks = checks(&out);
    let bad: Vec<String> = checks
        .iter()
        .filter(|c| matches!(c.str_field("status"), Some("FAILURE" | "WARNING")))
        .map(|c| {
            format!(
                "{} {}: {} {}",
                c.str_field("status").unwrap_or(""),
                c.str_field("id").unwrap_or(""),
                c.str_field("description").unwrap_or(""),
                c.get("details").map(Value::to_json).unwrap_or_default()
            )
        })
        .collect();
    let passed = checks
        .iter()
        .filter(|c| c.str_field("status") == Some("SUCCESS"))
        .count();
    assert!(
        bad.is_empty() && passed > 0,
        "{name}: {passed} checks passed, failing:\n{}\n--- the suite said:\n{said}",
        bad.join("\n")
    );

    let bodies: Vec<Value> = api
        .requests()
        .iter()
        .filter_map(|r| json::parse(&r.body).ok())
        .collect();
    let offered = bodies
        .iter()
        .map(mcp_tools)
        .max_by_key(Vec::len)
        .unwrap_or_default();
    match tools {
        Tools::NoneOffered => assert!(
            offered.is_empty(),
            "{name}: tools were offered: {offered:?}\n{said}"
        ),
        Tools::Answer => {
            assert!(
                !offered.is_empty(),
                "{name}: no MCP tool reached the model\n{said}"
            );
            let results: Vec<Value> = bodies.iter().flat_map(tool_results).collect();
            assert_eq!(
                results.len(),
                offered.len(),
                "{name}: not every tool call came back\n{said}"
            );
            for r in &results {
                assert!(
                    r.get("is_error").and_then(Value::as_bool) != Some(true),
                    "{name}: a tool call failed: {}\n{said}",
                    r.to_json()
                );
            }
        }
    }
}

macro_rules! scenarios {
    ($($test:ident => $name:literal, $tools:ident;)*) => {
        $(
            #[test]
            fn $test() {
                scenario($name, Tools::$tools);
            }
        )*
    };
}

scenarios! {
    initialize => "initialize", NoneOffered;
    tools_call => "tools_call", Answer;
    elicitation_defaults => "elicitation-sep1034-client-defaults", Answer;
    sse_retry => "sse-retry", Answer;
    auth_metadata_default => "auth/metadata-default", Answer;
    auth_metadata_var1 => "auth/metadata-var1", Answer;
    auth_metadata_var2 => "auth/metadata-var2", Answer;
    auth_metadata_var3 => "auth/metadata-var3", Answer;
    auth_scope_from_www_authenticate => "auth/scope-from-www-authenticate", Answer;
    auth_scope_from_scopes_supported => "auth/scope-from-scopes-supported", Answer;
    auth_scope_omitted_when_undefined => "auth/scope-omitted-when-undefined", Answer;
    auth_scope_step_up => "auth/scope-step-up", Answer;
    // The server never accepts: after its retries tern gives up, so no tool.
    auth_scope_retry_limit => "auth/scope-retry-limit", NoneOffered;
    auth_token_endpoint_auth_basic => "auth/token-endpoint-auth-basic", Answer;
    auth_token_endpoint_auth_post => "auth/token-endpoint-auth-post", Answer;
    auth_token_endpoint_auth_none => "auth/token-endpoint-auth-none", Answer;
    auth_pre_registration => "auth/pre-registration", Answer;
    auth_2025_03_26_metadata_backcompat => "auth/2025-03-26-oauth-metadata-backcompat", Answer;
    auth_2025_03_26_endpoint_fallback => "auth/2025-03-26-oauth-endpoint-fallback", Answer;
    auth_resource_mismatch => "auth/resource-mismatch", NoneOffered;
    auth_offline_access_scope => "auth/offline-access-scope", Answer;
    auth_offline_access_not_supported => "auth/offline-access-not-supported", Answer;
    auth_client_credentials_jwt => "auth/client-credentials-jwt", Answer;
    auth_client_credentials_basic => "auth/client-credentials-basic", Answer;
}

/// The client scenarios this suite does not run, with the reason each is
/// left out.
const LEFT_OUT: &[(&str, &str)] = &[
    (
        "auth/basic-cimd",
        "URL-based client ids need a client metadata document published at an https address the authorization server can fetch",
    ),
    (
        "auth/cross-app-access-complete-flow",
        "cross-app access needs an enterprise identity provider's token exchange (ID-JAG), which tern does not implement",
    ),
];

/// Every client scenario the installed suite knows is either run above or
/// left out with its reason: a new scenario in a new version of the suite
/// cannot go unnoticed.
#[test]
fn every_client_scenario_is_run_or_left_out_with_a_reason() {
    let Some(dir) = mcp_servers_dir("conformance scenario list", &[SUITE, NODE]) else {
        return;
    };
    let out = Command::new(dir.join(NODE))
        .arg(dir.join(SUITE))
        .arg("list")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let client = text
        .split("Client scenarios")
        .nth(1)
        .unwrap_or_else(|| panic!("no client scenarios in:\n{text}"));
    let listed: Vec<&str> = client
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let source = include_str!("mcp_conformance.rs");
    for name in &listed {
        if let Some((_, why)) = LEFT_OUT.iter().find(|(n, _)| n == name) {
            // Past the harness's capture, so a passing run shows it too.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED conformance scenario {name}: {why}"
            );
            continue;
        }
        assert!(
            source.contains(&format!("=> \"{name}\",")),
            "the suite has a client scenario {name} that this test neither runs nor leaves out"
        );
    }
    assert!(
        listed.len() >= 26,
        "only {} client scenarios listed:\n{text}",
        listed.len()
    );
}
