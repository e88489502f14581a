//! Bash: run a shell command in its own process group.
//!
//! The command runs under `bash -c` (or `/bin/sh -c` where there is no
//! bash) with stdin on `/dev/null`, in a new process group so that an
//! abort can kill everything it started, not just the shell. Provider
//! credentials are not in its environment (see `config::ChildEnv`).
//! As in Claude Code: it starts in the directory the last command's
//! shell ended in (see `cwd`); stdout and stderr are one pipe, so the
//! output reads in the order it was written; output over 30,000
//! characters is saved to a file and the model gets its start and the
//! path; a command past its timeout goes on as a background shell. With
//! `run_in_background` the call returns a shell id at once and the
//! command goes on (see `background`).

mod background;
mod cwd;
mod exit;
mod output;
mod process;

use std::borrow::Cow;
use std::path::Path;
use std::time::Duration;

use smol::future::FutureExt;

use super::{LocalFuture, Tool, ToolContext, ToolOutput};
use crate::json::Value;
use crate::policy::Permit;
use crate::tools::input::{Fields, Schema};
pub use background::{BashOutput, KillShell, Shells};
use output::Collector;
use process::Process;

pub struct Bash;

pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Output up to this many bytes is returned inline.
pub const INLINE_LIMIT: usize = 30_000;
/// How often a running command's latest line is reported (ToolProgress).
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// A Bash call's input (`dangerouslyDisableSandbox` is policy's to read).
struct Args<'a> {
    command: &'a str,
    /// Milliseconds, as the model wrote them.
    timeout: Option<i64>,
    description: &'a str,
    background: bool,
}

impl<'a> Args<'a> {
    fn decode(input: &'a Value) -> Result<Args<'a>, String> {
        let f = Fields::of(input)?;
        Ok(Args {
            command: f.text("command")?,
            timeout: f.opt_int("timeout")?,
            description: f.opt_text("description")?.unwrap_or(""),
            background: f.flag("run_in_background")?,
        })
    }

    /// How long a foreground command may run: its `timeout`, or 120 s.
    fn timeout(&self) -> Duration {
        let ms = self.timeout.map_or(DEFAULT_TIMEOUT_MS, |t| {
            t.clamp(1, MAX_TIMEOUT_MS as i64) as u64
        });
        Duration::from_millis(ms)
    }
}

impl Tool for Bash {
    fn name(&self) -> &str {
        "Bash"
    }
    fn description(&self) -> &str {
        "Run a shell command (bash, or sh where bash is missing) and return its output \
         (stdout and stderr together, in the order written) and exit code. The working \
         directory persists between calls: after `cd src` the next command runs in src; \
         a command that leaves the project's directories is put back at the project \
         root, and the result says so. Variables and other shell state do not persist. \
         stdin is /dev/null, so interactive commands fail; pass flags such as `-y`. \
         Default timeout 120000 ms, at most 600000 ms; a command still running then \
         goes on in the background, and you get its shell id and output file. Output \
         over 30000 characters is saved to a file whose path is given, with its first \
         2000 characters shown; Read the file for the rest. With run_in_background the \
         command keeps running (no timeout) and you get a shell id at once: read its new \
         output with BashOutput, stop it with KillShell; you are told when it ends. Use \
         it for servers and long builds, not with `&`. Prefer Read, Grep and Glob for \
         reading and searching files."
    }
    fn input_schema(&self) -> Cow<'_, Value> {
        static SCHEMA: Schema = Schema::new(
            r#"{"type":"object","additionalProperties":false,"required":["command"],"properties":{
            "command":{"type":"string","description":"The command to run"},
            "timeout":{"type":"integer","description":"Timeout in milliseconds (default 120000, max 600000)"},
            "description":{"type":"string","description":"Five to ten words saying what the command does"},
            "run_in_background":{"type":"boolean","description":"Run in the background and return a shell id at once"},
            "dangerouslyDisableSandbox":{"type":"boolean","description":"Ask to run outside the sandbox"}}}"#,
        );
        Cow::Borrowed(SCHEMA.get())
    }
    fn kind(&self) -> super::Kind {
        super::Kind::Execute
    }
    fn is_read_only(&self, _: &Value) -> bool {
        // Never asked: what a line does depends on where it runs, so
        // policy judges Bash from the line's analysis, and concurrency
        // asks below, with the shell's directory.
        false
    }
    fn is_concurrency_safe(&self, input: &Value, ctx: &ToolContext) -> bool {
        // A line that may move the shell runs alone, so the calls after
        // it start (and are judged) in the directory it left.
        let Ok(Args { command, .. }) = Args::decode(input) else {
            return false;
        };
        !may_change_directory(command)
            && crate::policy::bash::read_only_in(
                command,
                &ctx.shell_cwd.get(),
                &crate::policy::CommandEnv::new(ctx.child_env.vars()),
            )
    }
    fn validate(&self, input: &Value, ctx: &ToolContext) -> Result<(), String> {
        let args = Args::decode(input)?;
        if args.command.trim().is_empty() {
            return Err("command is empty".into());
        }
        if let Some(t) = args.timeout
            && !(1..=MAX_TIMEOUT_MS as i64).contains(&t)
        {
            return Err(format!("timeout must be between 1 and {MAX_TIMEOUT_MS} ms"));
        }
        if args.background && !ctx.shells.available() {
            return Err(
                "background shells are not available here; run the command in the foreground"
                    .into(),
            );
        }
        Ok(())
    }
    fn native_timeout(&self, input: &Value) -> Option<Duration> {
        // A background command is answered at once with a shell id.
        let args = Args::decode(input).ok()?;
        (!args.background).then(|| args.timeout())
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        permit: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let args = match Args::decode(&input) {
                Ok(a) => a,
                Err(e) => return ToolOutput::error(e),
            };
            let written = args.command;
            // The line as policy decided it (globs already expanded), or as written.
            let command = permit.command().unwrap_or(written).to_string();
            let hardened = permit.hardened();
            // Where policy judged it: the shell's directory.
            let cwd = permit.cwd().unwrap_or(&ctx.cwd).to_path_buf();
            if args.background {
                let description = args.description;
                // Refused before anything starts, so nothing is left half-checked.
                if let Some(why) = ctx.shells.refuse_another() {
                    return ToolOutput::error(why);
                }
                // It starts where the shell is; its own `cd`s stay its own.
                return match start(&command, permit.sandbox(), ctx, &cwd, hardened, None) {
                    Ok(process) => ctx
                        .shells
                        // Shown as the model wrote it (a pinned line may be long).
                        .adopt(process, written, description, &ctx.scratch),
                    Err(why) => ToolOutput::error(why),
                };
            }
            let progress = |text: String| ctx.progress(permit.call_id(), text);
            run(
                &Line {
                    command: &command,
                    written,
                    description: args.description,
                    sandbox: permit.sandbox(),
                    cwd: &cwd,
                    hardened,
                },
                args.timeout(),
                ctx,
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

/// Might this line change its shell's directory? Read loosely (any
/// `cd`, `pushd` or `popd` in the text): a yes only keeps it from
/// running beside other calls.
fn may_change_directory(command: &str) -> bool {
    ["cd", "pushd", "popd"].iter().any(|w| command.contains(w))
}

/// Starts `command` in `cwd`, in the sandbox its permit names (none when
/// the session has none or policy let the call leave it); with `record`,
/// saying where its shell ended.
fn start(
    command: &str,
    sandbox: Option<&crate::sandbox::SandboxPolicy>,
    ctx: &ToolContext,
    cwd: &Path,
    hardened: bool,
    record: Option<&cwd::Record>,
) -> Result<Process, String> {
    Process::start(
        &ctx.shell,
        command,
        cwd,
        sandbox,
        command_env(ctx, hardened),
        record,
    )
}

/// One foreground line and what policy decided about it.
struct Line<'a> {
    /// What runs (globs pinned).
    command: &'a str,
    /// What the model wrote (shown for a shell moved to the background).
    written: &'a str,
    /// The model's few words on what it does.
    description: &'a str,
    /// The sandbox its permit names.
    sandbox: Option<&'a crate::sandbox::SandboxPolicy>,
    /// Where it runs: where policy judged it.
    cwd: &'a Path,
    hardened: bool,
}

enum Ending {
    Exited(Option<i32>),
    TimedOut,
    Aborted,
}

/// A foreground command: runs until it ends or the turn is interrupted
/// (then nothing it started outlives the call); past its timeout it goes
/// on as a background shell. Where its shell ended becomes the next
/// command's directory.
async fn run(
    line: &Line<'_>,
    timeout: Duration,
    ctx: &ToolContext,
    progress: &dyn Fn(String),
) -> ToolOutput {
    let mut record = cwd::Record::new(&ctx.shell);
    let started = start(
        line.command,
        line.sandbox,
        ctx,
        line.cwd,
        line.hardened,
        record.as_ref(),
    );
    let mut process = match started {
        Ok(p) => p,
        Err(why) => return ToolOutput::error(why),
    };
    let collector = std::cell::RefCell::new(Collector::new(&ctx.scratch));
    let ending = {
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
        finished.or(report).or(timed_out).or(aborted).await
    };
    let collector = collector.into_inner();
    let mut kill_note = None;
    if let Ending::TimedOut = ending {
        let description = line.description;
        let so_far = collector.so_far();
        match ctx
            .shells
            .adopt_running(process, line.written, description, &ctx.scratch, &so_far)
        {
            Ok((id, log)) => return moved(collector, &id, log.as_deref(), timeout),
            // No background shell to be had: it is stopped, as before.
            Err(refused) => {
                let (p, why) = *refused;
                process = p;
                kill_note = Some(why);
            }
        }
    }
    // Whatever happened, nothing the command started outlives the call.
    process.stop().await;
    let verified = process.verify();
    if let (Ending::Exited(_), Some(r)) = (&ending, record.as_mut()) {
        follow(ctx, line.cwd, r);
    }

    let mut result = collector.finish();
    for note in &verified.notes {
        if !result.is_empty() && !result.ends_with('\n') {
            result.push('\n');
        }
        result.push_str(note);
        result.push('\n');
    }
    let unsafe_left = verified.unsafe_left;
    let output = |content: String, is_error: bool| ToolOutput {
        content,
        is_error,
        images: Vec::new(),
    };
    match ending {
        Ending::Exited(Some(0)) => {
            if result.is_empty() {
                result = "(no output)".into();
            }
            output(result, unsafe_left)
        }
        Ending::Exited(code) => {
            if !result.is_empty() && !result.ends_with('\n') {
                result.push('\n');
            }
            match code.and_then(|c| exit::exit_meaning(line.command, c).map(|m| (c, m))) {
                // grep's "no match", diff's "differ": an answer, not a failure.
                Some((c, meaning)) => {
                    result.push_str(&format!("Exit code {c} ({meaning})"));
                    return output(result, unsafe_left);
                }
                None => match code {
                    Some(c) => result.push_str(&format!("Exit code {c}")),
                    None => result.push_str("Killed by a signal"),
                },
            }
            output(result, true)
        }
        Ending::TimedOut => {
            if !result.is_empty() && !result.ends_with('\n') {
                result.push('\n');
            }
            result.push_str(&format!(
                "Command timed out after {} ms and was killed",
                timeout.as_millis()
            ));
            if let Some(why) = kill_note {
                result.push_str(&format!(" (it could not go on in the background: {why})"));
            }
            output(result, true)
        }
        Ending::Aborted => ToolOutput::error(format!("{result}\nInterrupted by the user")),
    }
}

/// The answer for a command moved to the background at its timeout:
/// what it printed so far, then its id and output file.
fn moved(collector: Collector, id: &str, log: Option<&str>, timeout: Duration) -> ToolOutput {
    let mut text = collector.finish();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "The command ran past its {} ms timeout and goes on in the background.\n",
        timeout.as_millis()
    ));
    text.push_str(&background::started(id, log));
    ToolOutput::ok(text)
}

/// Takes where the shell ended as the next command's directory, when it
/// moved and is a directory (the pipeline then checks it is one the
/// shell may stay in).
fn follow(ctx: &ToolContext, from: &Path, record: &mut cwd::Record) {
    let Some(dir) = record.read() else {
        return;
    };
    if dir.is_dir() && dir != crate::policy::canonical(from) {
        ctx.shell_cwd.set(&dir);
    }
}

#[cfg(test)]
mod tests;
