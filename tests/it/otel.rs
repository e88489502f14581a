//! OpenTelemetry export (issue 38, item 3), checked by a real receiver:
//! tests/otel/receiver.py decodes every export with the official OTLP
//! schema (the `opentelemetry-proto` package; ci/otel.sh installs it and
//! names the interpreter in TERN_OTEL_PYTHON) and writes down what it got.
//! A scripted session's metrics, events and spans are checked by name,
//! attribute and count; without the variables nothing is sent; and a
//! collector that is down or slow does not hold the run up.

use crate::support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::standin::{self, StandIn};
use support::*;
use tern::json::{self, Value};

fn python() -> Option<String> {
    if runner().is_some() {
        skip_emulated("OpenTelemetry tests", "the receiver runs natively");
        return None;
    }
    let py = std::env::var("TERN_OTEL_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = Command::new(&py)
        .args([
            "-c",
            "import opentelemetry.proto.collector.metrics.v1.metrics_service_pb2",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip(
            "OpenTelemetry tests",
            &format!("{py} cannot import opentelemetry.proto (run ci/otel.sh)"),
        );
        return None;
    }
    Some(py)
}

/// The receiver, its port and the file it writes.
struct Receiver {
    child: Child,
    port: u16,
    out: PathBuf,
}

impl Receiver {
    fn start(py: &str, dir: &Path, sleep: Option<u32>) -> Receiver {
        let out = dir.with_extension("otlp.jsonl");
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/otel/receiver.py");
        let mut cmd = Command::new(py);
        cmd.arg(script).arg(&out);
        if let Some(s) = sleep {
            cmd.args(["--sleep", &s.to_string()]);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the receiver");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("receiver said {line:?}"));
        Receiver { child, port, out }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request it got, each checked against the schema.
    fn requests(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        let all: Vec<Value> = text
            .lines()
            .map(|l| json::parse(l).unwrap_or_else(|e| panic!("receiver line {l}: {e}")))
            .collect();
        for r in &all {
            assert_eq!(
                r.get("ok").and_then(Value::as_bool),
                Some(true),
                "an export the OTLP schema refused: {r}"
            );
        }
        all
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The telemetry variables, all three signals to `endpoint`.
fn enable(cmd: &mut Command, endpoint: &str) {
    cmd.env("CLAUDE_CODE_ENABLE_TELEMETRY", "1")
        .env("OTEL_METRICS_EXPORTER", "otlp")
        .env("OTEL_LOGS_EXPORTER", "otlp")
        .env("OTEL_TRACES_EXPORTER", "otlp")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint);
}

fn attr<'a>(attrs: &'a Value, key: &str) -> Option<&'a Value> {
    attrs
        .as_array()?
        .iter()
        .find(|a| a.str_field("key") == Some(key))?
        .get("value")
}

fn attr_str<'a>(attrs: &'a Value, key: &str) -> Option<&'a str> {
    attr(attrs, key)?.str_field("stringValue")
}

/// The items under `resource…` / `scope…` / `items` of every request to `path`,
/// with their resource's attributes.
fn items(reqs: &[Value], path: &str, top: &str, scoped: &str, list: &str) -> Vec<(Value, Value)> {
    let mut out = Vec::new();
    for r in reqs.iter().filter(|r| r.str_field("path") == Some(path)) {
        let body = r.get("body").unwrap();
        for res in body
            .get(top)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let rattrs = res
                .get("resource")
                .and_then(|x| x.get("attributes"))
                .cloned()
                .unwrap_or(Value::Null);
            for sc in res
                .get(scoped)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                for it in sc.get(list).and_then(Value::as_array).into_iter().flatten() {
                    out.push((it.clone(), rattrs.clone()));
                }
            }
        }
    }
    out
}

/// Metric points: (metric name, point attributes, value).
fn points(reqs: &[Value]) -> Vec<(String, Value, f64)> {
    let mut out = Vec::new();
    for (m, _) in items(
        reqs,
        "/v1/metrics",
        "resourceMetrics",
        "scopeMetrics",
        "metrics",
    ) {
        let name = m.str_field("name").unwrap().to_string();
        let sum = m.get("sum").expect("a sum");
        for p in sum.get("dataPoints").and_then(Value::as_array).unwrap() {
            let v = p.get("asDouble").and_then(Value::as_f64).unwrap();
            out.push((name.clone(), p.get("attributes").unwrap().clone(), v));
        }
    }
    out
}

fn total(points: &[(String, Value, f64)], name: &str, with: &[(&str, &str)]) -> f64 {
    points
        .iter()
        .filter(|(n, a, _)| n == name && with.iter().all(|(k, v)| attr_str(a, k) == Some(*v)))
        .map(|(_, _, v)| v)
        .sum()
}

/// Log records by event name (the body).
fn events(reqs: &[Value], name: &str) -> Vec<Value> {
    items(reqs, "/v1/logs", "resourceLogs", "scopeLogs", "logRecords")
        .into_iter()
        .map(|(r, _)| r)
        .filter(|r| r.get("body").and_then(|b| b.str_field("stringValue")) == Some(name))
        .collect()
}

fn spans(reqs: &[Value]) -> Vec<Value> {
    items(reqs, "/v1/traces", "resourceSpans", "scopeSpans", "spans")
        .into_iter()
        .map(|(s, _)| s)
        .collect()
}

/// The spans of this name.
fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans
        .iter()
        .filter(|s| s.str_field("name") == Some(name))
        .collect()
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Two model requests; a Read, an Edit that would ask and is allowed by
/// a rule (one line removed, two added), and a Bash command a rule denies.
fn scripted(dir: &Path) -> StandIn {
    let file = dir.join("notes.txt");
    std::fs::write(&file, "alpha\nSECRET-CONTENT\ngamma\n").unwrap();
    let read = format!(r#"{{"file_path": "{}"}}"#, file.display());
    let edit = format!(
        r#"{{"file_path": "{}", "old_string": "SECRET-CONTENT\n", "new_string": "SECRET-ONE\nSECRET-TWO\n"}}"#,
        file.display()
    );
    StandIn::start(vec![
        standin::tools_reply(&[
            ("toolu_read", "Read", &read),
            ("toolu_edit", "Edit", &edit),
            ("toolu_rm", "Bash", r#"{"command": "rm -f notes.txt"}"#),
        ]),
        standin::text_reply("Done."),
    ])
}

fn session_command(api: &StandIn, dir: &Path) -> Command {
    let mut cmd = tern(&api.url, dir);
    cmd.args([
        "-p",
        "PROMPT-TEXT-PRIVATE change the notes",
        "--output-format",
        "json",
        "--allowedTools",
        "Edit",
        "--disallowedTools",
        "Bash(rm:*)",
    ]);
    cmd
}

#[test]
fn a_scripted_session_exports_claude_codes_metrics_events_and_spans() {
    let Some(py) = python() else { return };
    let dir = scratch("otel-session");
    let rx = Receiver::start(&py, &dir, None);
    let api = scripted(&dir);
    let mut cmd = session_command(&api, &dir);
    enable(&mut cmd, &rx.endpoint());
    cmd.env("OTEL_EXPORTER_OTLP_HEADERS", "x-fleet=ci%20job")
        .env("OTEL_RESOURCE_ATTRIBUTES", "team=core")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "60000");
    let out = run(&mut cmd);
    assert_ok(&out);
    assert_eq!(api.requests().len(), 2);
    let reqs = rx.requests();
    let paths: Vec<&str> = reqs.iter().filter_map(|r| r.str_field("path")).collect();
    for p in ["/v1/metrics", "/v1/logs", "/v1/traces"] {
        assert!(paths.contains(&p), "no export to {p}: {paths:?}");
    }
    for r in &reqs {
        let h = r.get("headers").unwrap();
        assert_eq!(h.str_field("x-fleet"), Some("ci job"), "{r}");
        assert_eq!(h.str_field("content-type"), Some("application/json"));
        // Nothing of the prompt or the file leaves without a setting.
        let body = r.get("body").unwrap().to_json();
        for private in ["SECRET", "PROMPT-TEXT-PRIVATE"] {
            assert!(!body.contains(private), "{private} exported: {body}");
        }
    }
    let (_, res) = &items(&reqs, "/v1/logs", "resourceLogs", "scopeLogs", "logRecords")[0];
    assert_eq!(attr_str(res, "service.name"), Some("tern"));
    assert_eq!(attr_str(res, "team"), Some("core"));

    // Metrics, under Claude Code's names and attributes.
    let pts = points(&reqs);
    assert_eq!(total(&pts, "claude_code.session.count", &[]), 1.0);
    // Each of the stand-in's two replies counts 100 input tokens.
    assert_eq!(
        total(&pts, "claude_code.token.usage", &[("type", "input")]),
        200.0
    );
    assert!(total(&pts, "claude_code.token.usage", &[("type", "output")]) > 0.0);
    assert!(
        pts.iter()
            .filter(|(n, _, _)| n == "claude_code.token.usage")
            .all(|(_, a, _)| attr_str(a, "model").is_some())
    );
    assert!(pts.iter().any(|(n, _, _)| n == "claude_code.cost.usage"));
    assert_eq!(
        total(
            &pts,
            "claude_code.lines_of_code.count",
            &[("type", "added")]
        ),
        2.0
    );
    assert_eq!(
        total(
            &pts,
            "claude_code.lines_of_code.count",
            &[("type", "removed")]
        ),
        1.0
    );
    assert_eq!(
        total(
            &pts,
            "claude_code.code_edit_tool.decision",
            &[
                ("tool_name", "Edit"),
                ("decision", "accept"),
                ("source", "config")
            ]
        ),
        1.0
    );
    assert!(
        pts.iter()
            .any(|(n, _, _)| n == "claude_code.active_time.total")
    );
    let session_id = attr_str(&pts[0].1, "session.id")
        .expect("session.id")
        .to_string();
    assert!(
        pts.iter()
            .all(|(_, a, _)| attr_str(a, "session.id") == Some(&session_id))
    );

    // Events.
    let prompts = events(&reqs, "claude_code.user_prompt");
    assert_eq!(prompts.len(), 1);
    let pa = prompts[0].get("attributes").unwrap();
    assert!(attr(pa, "prompt_length").is_some());
    assert!(
        attr(pa, "prompt").is_none(),
        "the prompt without OTEL_LOG_USER_PROMPTS"
    );
    assert_eq!(attr_str(pa, "event.name"), Some("user_prompt"));
    let api_requests = events(&reqs, "claude_code.api_request");
    assert_eq!(api_requests.len(), 2);
    for e in &api_requests {
        let a = e.get("attributes").unwrap();
        for k in [
            "model",
            "cost_usd",
            "duration_ms",
            "input_tokens",
            "output_tokens",
        ] {
            assert!(attr(a, k).is_some(), "api_request lacks {k}: {e}");
        }
        assert_eq!(
            attr(a, "input_tokens").and_then(|v| v.str_field("intValue")),
            Some("100")
        );
    }
    let results = events(&reqs, "claude_code.tool_result");
    let result_of = |tool: &str| {
        results
            .iter()
            .map(|e| e.get("attributes").unwrap())
            .find(|a| attr_str(a, "tool_name") == Some(tool))
            .unwrap_or_else(|| panic!("no tool_result for {tool}: {results:?}"))
    };
    assert_eq!(results.len(), 3);
    assert_eq!(attr_str(result_of("Read"), "success"), Some("true"));
    assert_eq!(attr_str(result_of("Edit"), "success"), Some("true"));
    assert_eq!(attr_str(result_of("Edit"), "decision"), Some("accept"));
    assert_eq!(attr_str(result_of("Bash"), "success"), Some("false"));
    assert_eq!(attr_str(result_of("Bash"), "decision"), Some("reject"));
    assert!(attr(result_of("Bash"), "error").is_some());
    assert!(attr(result_of("Read"), "duration_ms").is_some());
    let decisions = events(&reqs, "claude_code.tool_decision");
    assert_eq!(decisions.len(), 3);
    let bash = decisions
        .iter()
        .map(|e| e.get("attributes").unwrap())
        .find(|a| attr_str(a, "tool_name") == Some("Bash"))
        .unwrap();
    assert_eq!(attr_str(bash, "decision"), Some("reject"));
    assert_eq!(attr_str(bash, "source"), Some("config"));
    assert!(events(&reqs, "claude_code.api_error").is_empty());

    // Spans: one turn, its two model requests and three tool calls.
    let spans = spans(&reqs);
    let named = |n: &str| named(&spans, n);
    let turn = named("claude_code.interaction");
    assert_eq!(turn.len(), 1);
    assert_eq!(named("claude_code.llm_request").len(), 2);
    assert_eq!(named("claude_code.tool").len(), 3);
    let trace = turn[0].str_field("traceId").unwrap();
    let root = turn[0].str_field("spanId").unwrap();
    assert!(is_hex(trace, 32) && is_hex(root, 16), "{}", turn[0]);
    for s in &spans {
        assert_eq!(s.str_field("traceId"), Some(trace));
        if s.str_field("name") != Some("claude_code.interaction") {
            assert_eq!(s.str_field("parentSpanId"), Some(root), "{s}");
        }
        let (start, end) = (
            s.str_field("startTimeUnixNano").unwrap(),
            s.str_field("endTimeUnixNano").unwrap(),
        );
        assert!(start.parse::<u64>().unwrap() <= end.parse::<u64>().unwrap());
    }
    // Events carry the turn's trace.
    assert_eq!(prompts[0].str_field("traceId"), Some(trace));
}

/// A sub-agent's requests and tool calls are the session's too: its
/// tokens and cost count, its calls give tool_result events (and an
/// edit's lines), and its spans hang under the Agent call's span.
#[test]
fn a_sub_agents_requests_and_calls_are_exported_under_its_agent_call() {
    let Some(py) = python() else { return };
    let dir = scratch("otel-subagent");
    let rx = Receiver::start(&py, &dir, None);
    let file = dir.join("notes.txt");
    std::fs::write(&file, "alpha\nSECRET-CONTENT\n").unwrap();
    let read = format!(r#"{{"file_path": "{}"}}"#, file.display());
    let edit = format!(
        r#"{{"file_path": "{}", "old_string": "alpha\n", "new_string": "alpha\nbeta\n"}}"#,
        file.display()
    );
    let api = StandIn::start(vec![
        standin::tools_reply(&[(
            "toolu_agent",
            "Agent",
            r#"{"description": "tidy", "prompt": "add beta to the notes"}"#,
        )]),
        standin::tools_reply(&[
            ("toolu_child_read", "Read", &read),
            ("toolu_child_edit", "Edit", &edit),
        ]),
        standin::text_reply("Added."),
        standin::text_reply("Done."),
    ]);
    let mut cmd = tern(&api.url, &dir);
    cmd.args(["-p", "tidy the notes", "--allowedTools", "Edit"]);
    enable(&mut cmd, &rx.endpoint());
    let out = run(&mut cmd);
    assert_ok(&out);
    assert_eq!(api.requests().len(), 4);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "alpha\nbeta\nSECRET-CONTENT\n"
    );
    let reqs = rx.requests();
    // What the sub-agent read is relayed to the session, not exported.
    for r in &reqs {
        let body = r.get("body").unwrap().to_json();
        assert!(!body.contains("SECRET"), "exported: {body}");
    }

    let pts = points(&reqs);
    assert_eq!(
        total(&pts, "claude_code.token.usage", &[("type", "input")]),
        400.0
    );
    assert_eq!(
        total(
            &pts,
            "claude_code.lines_of_code.count",
            &[("type", "added")]
        ),
        1.0
    );
    assert_eq!(events(&reqs, "claude_code.api_request").len(), 4);
    let results = events(&reqs, "claude_code.tool_result");
    let tools: Vec<&str> = results
        .iter()
        .filter_map(|e| attr_str(e.get("attributes").unwrap(), "tool_name"))
        .collect();
    assert_eq!(results.len(), 3, "{tools:?}");
    for tool in ["Agent", "Read", "Edit"] {
        assert!(tools.contains(&tool), "{tools:?}");
    }

    let spans = spans(&reqs);
    let named = |n: &str| named(&spans, n);
    let root = named("claude_code.interaction")[0]
        .str_field("spanId")
        .unwrap();
    let tool_span = |tool: &str| {
        named("claude_code.tool")
            .into_iter()
            .find(|s| s.get("attributes").and_then(|a| attr_str(a, "tool_name")) == Some(tool))
            .unwrap_or_else(|| panic!("no span for {tool}"))
    };
    let agent = tool_span("Agent");
    assert_eq!(agent.str_field("parentSpanId"), Some(root));
    let agent_id = agent.str_field("spanId").unwrap();
    assert_eq!(tool_span("Edit").str_field("parentSpanId"), Some(agent_id));
    let requests = named("claude_code.llm_request");
    assert_eq!(requests.len(), 4);
    let under_agent = requests
        .iter()
        .filter(|s| s.str_field("parentSpanId") == Some(agent_id))
        .count();
    assert_eq!(under_agent, 2, "the child's two requests");
}

#[test]
fn the_prompt_is_exported_only_when_a_setting_says_so() {
    let Some(py) = python() else { return };
    let dir = scratch("otel-prompt");
    let rx = Receiver::start(&py, &dir, None);
    let api = StandIn::start(vec![standin::text_reply("Hi.")]);
    let mut cmd = tern(&api.url, &dir);
    cmd.args(["-p", "say hi please"]);
    cmd.env("TERN_ENABLE_TELEMETRY", "1")
        .env("OTEL_LOGS_EXPORTER", "otlp")
        .env(
            "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
            format!("{}/v1/logs", rx.endpoint()),
        )
        .env("OTEL_LOG_USER_PROMPTS", "1");
    assert_ok(&run(&mut cmd));
    let reqs = rx.requests();
    assert!(reqs.iter().all(|r| r.str_field("path") == Some("/v1/logs")));
    let prompts = events(&reqs, "claude_code.user_prompt");
    assert_eq!(prompts.len(), 1);
    let a = prompts[0].get("attributes").unwrap();
    assert_eq!(attr_str(a, "prompt"), Some("say hi please"));
}

#[test]
fn without_the_variables_nothing_is_sent() {
    let Some(py) = python() else { return };
    let dir = scratch("otel-off");
    let rx = Receiver::start(&py, &dir, None);
    // The exporter variables alone, and the enabling variable alone,
    // send nothing.
    let api = StandIn::start(vec![
        standin::text_reply("One."),
        standin::text_reply("Two."),
        standin::text_reply("Three."),
    ]);
    let mut exporters_only = tern(&api.url, &dir);
    exporters_only
        .args(["-p", "hi"])
        .env("OTEL_METRICS_EXPORTER", "otlp")
        .env("OTEL_LOGS_EXPORTER", "otlp")
        .env("OTEL_TRACES_EXPORTER", "otlp")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", rx.endpoint());
    assert_ok(&run(&mut exporters_only));
    let mut enabled_only = tern(&api.url, &dir);
    enabled_only
        .args(["-p", "hi"])
        .env("CLAUDE_CODE_ENABLE_TELEMETRY", "1")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", rx.endpoint());
    assert_ok(&run(&mut enabled_only));
    let mut plain = tern(&api.url, &dir);
    plain.args(["-p", "hi"]);
    assert_ok(&run(&mut plain));
    std::thread::sleep(Duration::from_millis(200));
    assert!(rx.requests().is_empty(), "{:?}", rx.requests());
}

/// The scripted session's wall time with no telemetry, then with `endpoint`.
fn timed(dir: &Path, endpoint: Option<&str>, logs_interval_ms: &str) -> (Duration, String) {
    let api = scripted(dir);
    let mut cmd = session_command(&api, dir);
    if let Some(e) = endpoint {
        enable(&mut cmd, e);
        cmd.env("OTEL_LOGS_EXPORT_INTERVAL", logs_interval_ms)
            .env("OTEL_METRIC_EXPORT_INTERVAL", logs_interval_ms);
    }
    let began = Instant::now();
    let out = run(&mut cmd);
    let took = began.elapsed();
    assert_ok(&out);
    let result = last_result(&out);
    assert_eq!(result.str_field("subtype"), Some("success"), "{result}");
    (took, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_collector_that_is_down_costs_the_run_nothing() {
    // A port nobody listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base_dir = scratch("otel-down-base");
    let (base, _) = timed(&base_dir, None, "100");
    let dir = scratch("otel-down");
    let (down, stderr) = timed(&dir, Some(&format!("http://127.0.0.1:{port}")), "100");
    assert!(
        down < base + Duration::from_millis(1500),
        "collector down: {down:?} against {base:?}; {stderr}"
    );
}

#[test]
fn a_slow_collector_costs_the_run_at_most_the_final_flush() {
    let Some(py) = python() else { return };
    let dir = scratch("otel-slow");
    let rx = Receiver::start(&py, &dir, Some(30));
    let base_dir = scratch("otel-slow-base");
    let (base, _) = timed(&base_dir, None, "100");
    // Exports every 100 ms, each answered after 30 s.
    let (slow, stderr) = timed(&dir, Some(&rx.endpoint()), "100");
    assert!(
        slow < base + Duration::from_millis(2500),
        "collector slow: {slow:?} against {base:?}; {stderr}"
    );
    // It did reach the collector (which took the export, then stalled).
    assert!(!rx.requests().is_empty());
}

/// A turn of a second against a collector that never answers, with the
/// default intervals and a final flush allowed 20 s: the first exports
/// left early and were still unanswered at the exit, so the exit did not
/// wait for the flush (it would have taken the whole 20 s).
#[test]
fn an_unanswered_early_export_spares_the_exit_its_flush() {
    let Some(py) = python() else { return };
    let dir = scratch("otel-early");
    let rx = Receiver::start(&py, &dir, Some(60));
    let api = StandIn::start(vec![standin::slow_text(
        "The port",
        Duration::from_secs(1),
        " is set.",
    )]);
    let mut cmd = tern(&api.url, &dir);
    cmd.args(["-p", "where is the port set?"]);
    enable(&mut cmd, &rx.endpoint());
    cmd.env("TERN_OTEL_FLUSH_MS", "20000");
    let began = Instant::now();
    let out = run(&mut cmd);
    let took = began.elapsed();
    assert_ok(&out);
    assert!(
        took < Duration::from_secs(10),
        "the exit waited on a silent collector: {took:?}"
    );
    assert!(!rx.requests().is_empty(), "no export left early");
}

/// The user's own settings may turn the export on (their `env`, as in
/// Claude Code); a project's settings may not, trusted or not: a
/// checkout must not send a session's figures somewhere of its choosing.
#[test]
fn the_users_settings_may_turn_it_on_a_projects_may_not() {
    let Some(py) = python() else { return };
    let env = |endpoint: &str| {
        format!(
            r#"{{"env": {{"CLAUDE_CODE_ENABLE_TELEMETRY": "1", "OTEL_LOGS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "{endpoint}"}}}}"#
        )
    };
    let dir = scratch("otel-project");
    let rx = Receiver::start(&py, &dir, None);
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    std::fs::write(dir.join(".claude/settings.json"), env(&rx.endpoint())).unwrap();
    let api = StandIn::start(vec![standin::text_reply("One.")]);
    let mut cmd = trusted(&api.url, &dir);
    cmd.args(["-p", "hi"]);
    assert_ok(&run(&mut cmd));
    std::thread::sleep(Duration::from_millis(200));
    assert!(rx.requests().is_empty(), "a project turned the export on");

    let dir = scratch("otel-user");
    let rx = Receiver::start(&py, &dir, None);
    let home = home_of(&dir);
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::write(home.join(".claude/settings.json"), env(&rx.endpoint())).unwrap();
    let api = StandIn::start(vec![standin::text_reply("One.")]);
    let mut cmd = tern(&api.url, &dir);
    cmd.args(["-p", "hi"]);
    assert_ok(&run(&mut cmd));
    let reqs = rx.requests();
    assert_eq!(
        events(&reqs, "claude_code.user_prompt").len(),
        1,
        "{reqs:?}"
    );
}

/// An SDK's session (stream-json on stdin): one trace per prompt, the
/// model a `set_model` chose on the second prompt's requests, and one
/// session counted for both.
#[test]
fn an_sdk_session_exports_a_trace_per_prompt() {
    use std::io::Write;
    let Some(py) = python() else { return };
    let dir = scratch("otel-sdk");
    let rx = Receiver::start(&py, &dir, None);
    let api = StandIn::start(vec![
        standin::text_reply("first"),
        standin::text_reply("second"),
    ]);
    let input = [
        r#"{"type":"user","message":{"role":"user","content":"one"},"parent_tool_use_id":null}"#,
        r#"{"type":"control_request","request_id":"r1","request":{"subtype":"set_model","model":"claude-haiku-4-5"}}"#,
        r#"{"type":"user","message":{"role":"user","content":"two"},"parent_tool_use_id":null}"#,
    ]
    .join("\n");
    let mut cmd = tern(&api.url, &dir);
    cmd.args([
        "--output-format",
        "stream-json",
        "--verbose",
        "--input-format",
        "stream-json",
    ]);
    enable(&mut cmd, &rx.endpoint());
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(format!("{input}\n").as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_ok(&out);
    let reqs = rx.requests();
    let spans = spans(&reqs);
    let turns: Vec<&Value> = spans
        .iter()
        .filter(|s| s.str_field("name") == Some("claude_code.interaction"))
        .collect();
    assert_eq!(turns.len(), 2);
    assert_ne!(turns[0].str_field("traceId"), turns[1].str_field("traceId"));
    assert_eq!(events(&reqs, "claude_code.user_prompt").len(), 2);
    let models: Vec<String> = events(&reqs, "claude_code.api_request")
        .iter()
        .filter_map(|e| attr_str(e.get("attributes").unwrap(), "model").map(String::from))
        .collect();
    assert_eq!(models.len(), 2);
    assert_eq!(models[1], "claude-haiku-4-5", "{models:?}");
    assert_eq!(total(&points(&reqs), "claude_code.session.count", &[]), 1.0);
}

/// An editor's session (`tern acp`): its prompts export turns, model
/// requests and the session, as a `-p` run's do, and its answers to
/// permission questions their source (an "always" is permanent).
#[test]
fn an_acp_session_exports_its_prompts_and_how_calls_were_answered() {
    use std::io::Write;
    let Some(py) = python() else { return };
    let dir = scratch("otel-acp");
    let rx = Receiver::start(&py, &dir, None);
    let write = |name: &str| {
        let input = tern::obj! {
            "file_path" => dir.join(name).display().to_string(),
            "content" => "x\n",
        };
        standin::tools_reply(&[("toolu_write", "Write", &input.to_json())])
    };
    let api = StandIn::start(vec![
        write("kept.txt"),
        standin::text_reply("saved"),
        write("once.txt"),
        standin::text_reply("written"),
    ]);
    let mut cmd = tern(&api.url, &dir);
    cmd.arg("acp");
    enable(&mut cmd, &rx.endpoint());
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let cwd = dir.display().to_string();
    let frames = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#.to_string(),
        format!(r#"{{"jsonrpc":"2.0","id":2,"method":"session/new","params":{{"cwd":{},"mcpServers":[]}}}}"#, Value::from(cwd.as_str()).to_json()),
    ];
    // Sends a frame and reads to its answer, answering the permission
    // questions on the way with `pick`.
    let mut answer = |frame: &str, id: i64, pick: &str| -> Value {
        let mut send = |frame: &str| {
            stdin.write_all(frame.as_bytes()).unwrap();
            stdin.write_all(b"\n").unwrap();
            stdin.flush().unwrap();
        };
        send(frame);
        loop {
            let line = lines.next().expect("tern acp ended").unwrap();
            let v = json::parse(&line).unwrap();
            if v.str_field("method") == Some("session/request_permission") {
                let asked = v.get("id").unwrap().to_json();
                send(&format!(
                    r#"{{"jsonrpc":"2.0","id":{asked},"result":{{"outcome":{{"outcome":"selected","optionId":"{pick}"}}}}}}"#
                ));
            } else if v.get("id").and_then(Value::as_i64) == Some(id) && v.get("method").is_none() {
                return v;
            }
        }
    };
    answer(&frames[0], 1, "");
    let created = answer(&frames[1], 2, "");
    let session = created
        .get("result")
        .and_then(|r| r.str_field("sessionId"))
        .unwrap_or_else(|| panic!("{created}"))
        .to_string();
    for (id, pick) in [(3, "allow_always"), (4, "allow_once")] {
        let prompt = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"{session}","prompt":[{{"type":"text","text":"write"}}]}}}}"#
        );
        let done = answer(&prompt, id, pick);
        assert_eq!(
            done.get("result").and_then(|r| r.str_field("stopReason")),
            Some("end_turn"),
            "{done}"
        );
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.join("kept.txt").exists() && dir.join("once.txt").exists());
    let reqs = rx.requests();
    assert_eq!(named(&spans(&reqs), "claude_code.interaction").len(), 2);
    assert_eq!(
        events(&reqs, "claude_code.api_request").len(),
        4,
        "{reqs:?}"
    );
    assert_eq!(total(&points(&reqs), "claude_code.session.count", &[]), 1.0);
    // "Always" is saved, so permanent; "once" is temporary.
    let sources: Vec<String> = events(&reqs, "claude_code.tool_decision")
        .iter()
        .filter_map(|e| attr_str(e.get("attributes").unwrap(), "source").map(str::to_string))
        .collect();
    assert_eq!(sources, ["user_permanent", "user_temporary"]);
}
