//! Helpers for the REPL tests: one REPL block per turn through the real
//! binary, and the results read back.

use std::path::Path;

use super::standin::{self, StandIn};
use super::*;
use tern::json::Value;
use tern::obj;

pub fn text(r: &Value) -> String {
    match r.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(b)) => b.iter().filter_map(|x| x.str_field("text")).collect(),
        _ => String::new(),
    }
}

pub fn is_error(r: &Value) -> bool {
    r.get("is_error").and_then(Value::as_bool) == Some(true)
}

/// One session: each block is one REPL call in a turn of its own; the
/// result of each, in order.
pub fn session(dir: &Path, blocks: &[Value], args: &[&str]) -> Vec<Value> {
    session_with(dir, blocks, args, &[])
}

/// As [`session`], with these environment variables set for tern.
pub fn session_with(
    dir: &Path,
    blocks: &[Value],
    args: &[&str],
    env: &[(&str, &str)],
) -> Vec<Value> {
    let mut replies = Vec::new();
    for (i, input) in blocks.iter().enumerate() {
        let id = format!("toolu_{i}");
        let json = input.to_json();
        replies.push(standin::tools_reply(&[(&id, "REPL", &json)]));
    }
    replies.push(standin::text_reply("done"));
    let api = StandIn::start(replies);
    let mut cmd = tern(&api.url, dir);
    cmd.env("TERN_REPL", "1")
        .args(["-p", "go", "--output-format", "json"])
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd);
    assert_ok(&out);
    let reqs = api.requests();
    (1..=blocks.len())
        .map(|i| {
            let r = tool_results(&reqs[i]);
            assert_eq!(r.len(), 1, "one result for block {i}");
            r[0].clone()
        })
        .collect()
}

/// Under qemu-user the VM, which tern starts by executing its own binary,
/// cannot start: a foreign binary needs binfmt_misc, which the emulated
/// runs do not have. Said, never a failure.
pub fn emulated(test: &str) -> bool {
    if runner().is_none() {
        return false;
    }
    skip_emulated(
        test,
        "tern cannot execute its own foreign binary (the REPL VM) without binfmt_misc",
    );
    true
}

pub fn code(c: &str) -> Value {
    obj! { "code" => c }
}
