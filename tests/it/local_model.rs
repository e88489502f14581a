//! A real local model: llama.cpp's `llama-server` with SmolLM2-135M-Instruct
//! at a 4096-token context, over both wire formats it serves. Provisioned
//! by `ci/llama.sh` (which `ci/test.sh` runs); elsewhere the test says it
//! is skipped, unless TERN_REQUIRE_LLAMA=1 makes a missing server a failure.

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

fn start(ctx: u32) -> Option<Server> {
    if runner().is_some() {
        skip_emulated("local model test", "the llama-server is an x86_64 binary");
        return None;
    }
    let Some((server, model)) = provisioned() else {
        skip(
            "local model test",
            "no llama-server or model (run ci/llama.sh to build it and fetch SmolLM2)",
        );
        return None;
    };
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
