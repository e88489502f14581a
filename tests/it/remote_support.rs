//! What the remote-MCP tests share: servers the test starts (scripted or
//! the Python SDK's), configurations, and `-p` sessions against the
//! stand-in with one MCP server.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::standin::{self, StandIn};
use crate::support::*;
use tern::json::{self, Value};
use tern::obj;

/// A server process the test started; killed when dropped.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The requests it logged, as (method, path, headers, body).
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| json::parse(l).ok())
            .collect()
    }
}

/// Starts a server that writes its port to a file, and waits for it.
pub fn start(mut cmd: Command, dir: &Path, name: &str) -> Server {
    let port_file = dir.join(format!("{name}.port"));
    let log = dir.join(format!("{name}.log"));
    cmd.arg(&port_file)
        .arg(&log)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("start the server");
    let began = Instant::now();
    let port = loop {
        if let Some(p) = std::fs::read_to_string(&port_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            break p;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the server {name} exited: {status}");
        }
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "{name} did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    Server { child, port, log }
}

pub fn scripted(mode: &str, dir: &Path, env: &[(&str, &str)]) -> Server {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/scripted_http.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script).arg(mode);
    for (k, v) in env {
        cmd.env(k, v);
    }
    start(cmd, dir, mode)
}

/// The Python SDK's server over `sse` or `http`.
pub fn fast(servers: &Path, transport: &str, dir: &Path) -> Server {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/fast_server.py");
    let mut cmd = Command::new(servers.join("venv/bin/python"));
    cmd.arg(script).arg(transport);
    start(cmd, dir, &format!("fast-{transport}"))
}

pub fn config(name: &str, entry: Value) -> String {
    obj! { "mcpServers" => obj! { name => entry } }.to_json()
}

pub fn http(url: &str) -> Value {
    obj! { "type" => "http", "url" => url }
}

/// `tern -p PROMPT` against the stand-in with one MCP server, allowed
/// to use everything; its output and the stand-in.
pub fn session(
    dir: &Path,
    mcp: &str,
    prompt: &str,
    replies: Vec<standin::Reply>,
) -> (std::process::Output, StandIn) {
    let api = StandIn::start(replies);
    let out = run(tern(&api.url, dir).args([
        "-p",
        prompt,
        "--mcp-config",
        mcp,
        "--permission-mode",
        "bypassPermissions",
        "--output-format",
        "stream-json",
        "--verbose",
    ]));
    (out, api)
}

pub fn text_of(req: &standin::Request) -> String {
    body(req).to_json()
}

pub fn result_texts(req: &standin::Request) -> String {
    tool_results(req)
        .iter()
        .map(Value::to_json)
        .collect::<Vec<_>>()
        .join("\n")
}
