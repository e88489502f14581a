//! Bash: run a shell command in its own process group.
//!
//! The command runs under `bash -c` (or `/bin/sh -c` where there is no
//! bash) with stdin on `/dev/null`, in a new process group so that a
//! timeout or an abort can kill everything it started, not just the shell.
//! Provider credentials are not in its environment (see `config::ChildEnv`). stdout and
//! stderr are merged in arrival order. Output beyond the inline limit is
//! spilled to a file; the model gets the head, the tail and the path.
//! With `run_in_background` the call returns a shell id at once and the
//! command goes on (see `background`).

mod background;
mod exit;
mod output;
mod process;

use std::time::Duration;

use smol::future::FutureExt;

use super::{LocalFuture, Tool, ToolContext, ToolOutput};
use crate::json::{Value, parse};
use crate::policy::Permit;
pub use background::{BashOutput, KillShell, Shells};
use output::{Collector, with_spill_note};
use process::Process;

pub struct Bash;

pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Output up to this many bytes is returned inline.
pub const INLINE_LIMIT: usize = 30_000;
/// How often a running command's latest line is reported (ToolProgress).
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// How long a foreground command may run: its `timeout`, or 120 s.
fn foreground_timeout(input: &Value) -> Duration {
    let ms = input
        .get("timeout")
        .and_then(Value::as_i64)
        .map_or(DEFAULT_TIMEOUT_MS, |t| {
            t.clamp(1, MAX_TIMEOUT_MS as i64) as u64
        });
    Duration::from_millis(ms)
}

impl Tool for Bash {
    fn name(&self) -> &str {
        "Bash"
    }
    fn description(&self) -> &str {
        "Run a shell command (bash, or sh where bash is missing) in the working \
         directory and return its combined stdout and stderr and exit code. Each call \
         starts a fresh shell: `cd` and variables do not persist. stdin is /dev/null, so \
         interactive commands fail; pass flags such as `-y`. Default timeout 120000 ms, \
         at most 600000 ms; on timeout the command and everything it started are \
         killed. Output beyond 30000 characters is saved to a file whose path is \
         given, with the start and end shown. With run_in_background the command keeps \
         running (no timeout) and you get a shell id at once: read its new output with \
         BashOutput, stop it with KillShell; you are told when it ends. Use it for servers \
         and long builds, not with `&`. Prefer Read, Grep and Glob for reading and \
         searching files."
    }
    fn input_schema(&self) -> Value {
        parse(
            r#"{"type":"object","additionalProperties":false,"required":["command"],"properties":{
            "command":{"type":"string","description":"The command to run"},
            "timeout":{"type":"integer","description":"Timeout in milliseconds (default 120000, max 600000)"},
            "description":{"type":"string","description":"Five to ten words saying what the command does"},
            "run_in_background":{"type":"boolean","description":"Run in the background and return a shell id at once"},
            "dangerouslyDisableSandbox":{"type":"boolean","description":"Ask to run outside the sandbox"}}}"#,
        )
        .unwrap_or_default()
    }
    fn kind(&self) -> super::Kind {
        super::Kind::Execute
    }
    fn is_read_only(&self, input: &Value) -> bool {
        // Paths do not matter for read-only-ness; the policy checks them.
        let command = input.str_field("command").unwrap_or("");
        crate::policy::bash::read_only(command)
    }
    fn validate(&self, input: &Value, ctx: &ToolContext) -> Result<(), String> {
        if input.str_field("command").unwrap_or("").trim().is_empty() {
            return Err("command is empty".into());
        }
        if let Some(t) = input.get("timeout").and_then(Value::as_i64)
            && !(1..=MAX_TIMEOUT_MS as i64).contains(&t)
        {
            return Err(format!("timeout must be between 1 and {MAX_TIMEOUT_MS} ms"));
        }
        if background(input) && !ctx.shells.available() {
            return Err(
                "background shells are not available here; run the command in the foreground"
                    .into(),
            );
        }
        Ok(())
    }
    fn native_timeout(&self, input: &Value) -> Option<Duration> {
        // A background command is answered at once with a shell id.
        (!background(input)).then(|| foreground_timeout(input))
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        permit: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let written = input.str_field("command").unwrap_or("");
            // The line as policy decided it (globs already expanded), or as written.
            let command = permit.command().unwrap_or(written).to_string();
            let hardened = permit.hardened();
            if background(&input) {
                let description = input.str_field("description").unwrap_or("");
                // Refused before anything starts, so nothing is left half-checked.
                if let Some(why) = ctx.shells.refuse_another() {
                    return ToolOutput::error(why);
                }
                return match start(&command, &input, ctx, hardened) {
                    Ok(process) => ctx
                        .shells
                        // Shown as the model wrote it (a pinned line may be long).
                        .adopt(process, written, description, &ctx.scratch),
                    Err(why) => ToolOutput::error(why),
                };
            }
            let progress = |text: String| ctx.progress(permit.call_id(), text);
            run(
                &command,
                &input,
                foreground_timeout(&input),
                ctx,
                hardened,
                &progress,
            )
            .await
        })
    }
}

/// The environment a command runs with: tern's own less what
/// `child_env` keeps from children (provider credentials), the settings'
/// `env`, and `TERN=1`. The one place it is built, for both kinds of
/// command.
fn command_env(ctx: &ToolContext, hardened: bool) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let mut env = ctx.child_env.vars();
    if hardened {
        // Defence in depth for a line policy allowed as read-only: git
        // settings that run programs overridden, pagers `cat`, variables
        // that make bash or less run code removed.
        let current: Vec<(String, String)> = env
            .iter()
            .filter_map(|(k, v)| Some((k.to_str()?.to_string(), v.to_str()?.to_string())))
            .collect();
        let (set, unset) = crate::policy::bash::env::hardened(&current);
        env.retain(|(k, _)| !unset.iter().any(|u| k.to_str() == Some(u.as_str())));
        for (k, v) in set {
            let k: std::ffi::OsString = k.into();
            env.retain(|(old, _)| *old != k);
            env.push((k, v.into()));
        }
    }
    env
}

fn background(input: &Value) -> bool {
    input.get("run_in_background").and_then(Value::as_bool) == Some(true)
}

/// Starts `command` as this call's input and context say: sandboxed
/// unless the call leaves the sandbox (which policy asked about).
fn start(
    command: &str,
    input: &Value,
    ctx: &ToolContext,
    hardened: bool,
) -> Result<Process, String> {
    let sandbox = ctx
        .sandbox
        .as_ref()
        .filter(|p| crate::policy::bash::sandbox_applies(p, input));
    Process::start(
        &ctx.shell,
        command,
        ctx,
        sandbox,
        command_env(ctx, hardened),
    )
}

enum Ending {
    Exited(Option<i32>),
    TimedOut,
    Aborted,
}

/// A foreground command: runs until it ends, times out or the turn is
/// interrupted; nothing it started outlives the call.
async fn run(
    command: &str,
    input: &Value,
    timeout: Duration,
    ctx: &ToolContext,
    hardened: bool,
    progress: &dyn Fn(String),
) -> ToolOutput {
    let mut process = match start(command, input, ctx, hardened) {
        Ok(p) => p,
        Err(why) => return ToolOutput::error(why),
    };
    let collector = std::cell::RefCell::new(Collector::new(&ctx.scratch));
    let finished = async {
        let mut sink = |bytes: &[u8]| collector.borrow_mut().push(bytes);
        Ending::Exited(process.wait(&mut sink).await)
    };
    // The latest line, now and then, for whoever watches; never ends.
    let report = async {
        let mut last = None;
        loop {
            smol::Timer::after(PROGRESS_EVERY).await;
            let line = collector.borrow().last_line();
            if line.is_some() && line != last {
                progress(line.clone().unwrap_or_default());
                last = line;
            }
        }
    };
    let timed_out = async {
        smol::Timer::after(timeout).await;
        Ending::TimedOut
    };
    let aborted = async {
        ctx.abort.wait().await;
        Ending::Aborted
    };
    let ending = finished.or(report).or(timed_out).or(aborted).await;
    // Whatever happened, nothing the command started outlives the call.
    process.stop().await;
    let verified = process.verify();

    let (text, spilled) = collector.into_inner().finish();
    let mut result = text;
    for note in &verified.notes {
        if !result.is_empty() && !result.ends_with('\n') {
            result.push('\n');
        }
        result.push_str(note);
        result.push('\n');
    }
    let unsafe_left = verified.unsafe_left;
    match ending {
        Ending::Exited(Some(0)) => {
            if result.is_empty() {
                result = "(no output)".into();
            }
            with_spill_note(result, spilled, unsafe_left)
        }
        Ending::Exited(code) => {
            if !result.is_empty() && !result.ends_with('\n') {
                result.push('\n');
            }
            match code.and_then(|c| exit::exit_meaning(command, c).map(|m| (c, m))) {
                // grep's "no match", diff's "differ": an answer, not a failure.
                Some((c, meaning)) => {
                    result.push_str(&format!("Exit code {c} ({meaning})"));
                    return with_spill_note(result, spilled, unsafe_left);
                }
                None => match code {
                    Some(c) => result.push_str(&format!("Exit code {c}")),
                    None => result.push_str("Killed by a signal"),
                },
            }
            with_spill_note(result, spilled, true)
        }
        Ending::TimedOut => {
            if !result.is_empty() && !result.ends_with('\n') {
                result.push('\n');
            }
            result.push_str(&format!(
                "Command timed out after {} ms and was killed",
                timeout.as_millis()
            ));
            with_spill_note(result, spilled, true)
        }
        Ending::Aborted => ToolOutput::error(format!("{result}\nInterrupted by the user")),
    }
}

#[cfg(test)]
mod tests;
