//! Shared test helpers: the Messages API stand-in and a way to run the
//! real `tern` binary against it in a scratch directory.

#![allow(dead_code)]

pub mod lab;
pub mod pages;
pub mod repl;
pub mod samples;
pub mod standin;
pub mod tmux;
pub mod ws_stt;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use tern::json::{self, Value};

pub fn tern_bin() -> &'static str {
    env!("CARGO_BIN_EXE_tern")
}

/// The emulator that runs foreign-architecture binaries (e.g.
/// `qemu-aarch64-static`), when the suite runs under one.
pub fn runner() -> Option<String> {
    let r = std::env::var("TERN_TEST_RUNNER")
        .ok()
        .filter(|r| !r.is_empty())?;
    // Resolved now: tests may run tern with a PATH that lacks the emulator.
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .map(|d| d.join(&r))
        .find(|p| p.is_file());
    Some(found.map_or(r, |p| p.display().to_string()))
}

/// A command that runs the tern binary, through the runner if there is one.
pub fn tern_command() -> Command {
    match runner() {
        Some(r) => {
            let mut c = Command::new(r);
            c.arg(tern_bin());
            c
        }
        None => Command::new(tern_bin()),
    }
}

/// The same, as a shell word list (for scripts run inside tmux).
pub fn tern_shell_words() -> String {
    match runner() {
        Some(r) => format!("{r} {}", tern_bin()),
        None => tern_bin().to_string(),
    }
}

/// Whether a missing requirement fails the test instead of skipping it:
/// under CI (`CI=true`) or when `ci/test.sh` sets `TERN_REQUIRE_ALL=1`.
pub fn requirements_enforced() -> bool {
    let on = |k: &str| {
        std::env::var(k)
            .map(|v| matches!(v.as_str(), "1" | "true" | "yes"))
            .unwrap_or(false)
    };
    on("CI") || on("TERN_REQUIRE_ALL")
}

/// A test that cannot run on this host says why; where requirements are
/// enforced (CI) that is a failure, since a pass would have tested nothing.
/// Written to stderr directly so the harness shows it for passing tests.
#[track_caller]
pub fn skip(test: &str, why: &str) {
    assert!(
        !requirements_enforced(),
        "{test} cannot run: {why} (requirements are enforced: CI or TERN_REQUIRE_ALL is set)"
    );
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

/// A test that does not apply under the emulator the suite runs in (qemu-user
/// has no landlock, seccomp or terminal ioctls): said, never a failure.
pub fn skip_emulated(test: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {test} (emulated run): {why}");
}

/// Where `ci/mcp.sh` put the real MCP servers (`TERN_MCP_DIR`, else
/// `~/.cache/tern-mcp`), if these files are there; otherwise the test
/// says why it cannot run (under CI, a failure).
pub fn mcp_servers_dir(test: &str, needs: &[&str]) -> Option<PathBuf> {
    if runner().is_some() {
        skip_emulated(test, "the servers run natively");
        return None;
    }
    let dir = std::env::var("TERN_MCP_DIR")
        .map(PathBuf::from)
        .ok()
        .or_else(|| {
            std::env::var("HOME")
                .ok()
                .map(|h| PathBuf::from(h).join(".cache/tern-mcp"))
        })?;
    if !needs.iter().all(|n| dir.join(n).exists()) {
        skip(
            test,
            &format!("no servers in {} (run ci/mcp.sh)", dir.display()),
        );
        return None;
    }
    Some(dir)
}

/// The npm reference server (`server-everything`) in its `sse` or
/// `streamableHttp` mode on a free port of 127.0.0.1, once it listens.
pub fn everything_server(servers: &Path, mode: &str) -> (std::process::Child, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let shim = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/bind-localhost.cjs");
    let child = Command::new("node")
        .arg("--require")
        .arg(shim)
        .arg(servers.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
        .arg(mode)
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let began = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            began.elapsed() < std::time::Duration::from_secs(20),
            "the {mode} server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    (child, port)
}

/// A fresh directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "tern-it-{name}-{}-{}",
        std::process::id(),
        fastrand_u64()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn fastrand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    );
    h.finish()
}

/// The HOME used for a test whose work directory is `dir`.
pub fn home_of(dir: &Path) -> PathBuf {
    let home = dir.with_extension("home");
    std::fs::create_dir_all(&home).unwrap();
    home
}

/// `tern` set up to talk to the stand-in from `dir`, with a clean environment.
pub fn tern(url: &str, dir: &Path) -> Command {
    let mut c = tern_command();
    c.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        // HOME (and so the transcript) lives beside the work dir, not in it,
        // so the model's own tools never see tern's files.
        .env("HOME", home_of(dir))
        .env("TMPDIR", dir)
        .env("ANTHROPIC_BASE_URL", url)
        .env("ANTHROPIC_API_KEY", "sk-test")
        .env("TERN_RETRY_BASE_MS", "20")
        .stdin(Stdio::null());
    c
}

/// [`tern`] in a directory whose own settings the test wrote and trusts
/// for the run, as their author would (`TERN_TRUST_PROJECT=1`, which
/// `--trust-project` also says). Without it a project's hooks, allow
/// rules, looser mode, directories and MCP servers are left out.
pub fn trusted(url: &str, dir: &Path) -> Command {
    let mut c = tern(url, dir);
    c.env("TERN_TRUST_PROJECT", "1");
    c
}

/// Runs to completion, killing tern if it takes over a minute so that a
/// broken build fails the test instead of hanging the suite.
pub fn run(cmd: &mut Command) -> Output {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    // A program a test just copied is busy (ETXTBSY) while any other test
    // thread's fork still holds the copy's write descriptor, until that
    // child execs: wait that out.
    let mut tries = 0;
    let child = loop {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            r => break r.unwrap_or_else(|e| panic!("start {:?}: {e}", cmd.get_program())),
        }
    };
    let pid = child.id() as i32;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = std::sync::Arc::clone(&done);
    std::thread::spawn(move || {
        let began = std::time::Instant::now();
        while !flag.load(std::sync::atomic::Ordering::Relaxed) {
            if began.elapsed() > std::time::Duration::from_secs(60) {
                unsafe { libc::kill(pid, libc::SIGKILL) };
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    });
    let out = child.wait_with_output().expect("wait for tern");
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    out
}

/// The NDJSON lines of a stream-json run.
pub fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| json::parse(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}")))
        .collect()
}

pub fn last_result(out: &Output) -> Value {
    lines(out)
        .into_iter()
        .rev()
        .find(|v| v.str_field("type") == Some("result"))
        .unwrap_or_else(|| {
            panic!(
                "no result line; stdout={} stderr={}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

pub fn body(req: &standin::Request) -> Value {
    json::parse(&req.body).unwrap()
}

/// The tool_result blocks in the last message of a request body.
/// The names of the tools a request offers, in order.
pub fn tool_names(req: &standin::Request) -> Vec<String> {
    body(req)
        .get("tools")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                .filter_map(|t| t.str_field("name").map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub fn tool_results(req: &standin::Request) -> Vec<Value> {
    let b = body(req);
    let msgs = b.get("messages").unwrap().as_array().unwrap();
    msgs.last()
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .filter(|x| x.str_field("type") == Some("tool_result"))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The `message.content` blocks of the first stream-json line of `kind`
/// (`assistant` or `user`).
pub fn first_content(lines: &[Value], kind: &str) -> Vec<Value> {
    let line = lines
        .iter()
        .find(|v| v.str_field("type") == Some(kind))
        .unwrap_or_else(|| panic!("no {kind} line in {lines:?}"));
    line.get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Every tool_result block of the stream-json `user` lines, in order
/// (tern, like Claude Code, sends one `user` line per tool result).
pub fn all_tool_results(lines: &[Value]) -> Vec<Value> {
    lines
        .iter()
        .filter(|v| v.str_field("type") == Some("user"))
        .filter_map(|v| v.get("message")?.get("content")?.as_array().cloned())
        .flatten()
        .filter(|b| b.str_field("type") == Some("tool_result"))
        .collect()
}

/// Fails with tern's stderr unless it exited 0.
#[track_caller]
pub fn assert_ok(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "tern failed; stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
