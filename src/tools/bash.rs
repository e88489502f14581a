//! Bash: run a shell command in its own process group.
//!
//! The command runs under `bash -c` (or `/bin/sh -c` where there is no
//! bash) with stdin on `/dev/null`, in a new process group so that a
//! timeout or an abort can kill everything it started, not just the shell.
//! Provider credentials are not in its environment (see `config::ChildEnv`). stdout and
//! stderr are merged in arrival order. Output beyond the inline limit is
//! spilled to a file; the model gets the head, the tail and the path.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use smol::future::FutureExt;
use smol::io::AsyncReadExt;

use super::{LocalFuture, Tool, ToolContext, ToolOutput};
use crate::json::{Value, parse};
use crate::policy::Permit;

pub struct Bash;

pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Output up to this many bytes is returned inline.
pub const INLINE_LIMIT: usize = 30_000;
/// After the shell exits, how long straggling background children may keep
/// the pipes open before they are killed.
const DRAIN_GRACE: Duration = Duration::from_millis(300);

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
         given, with the start and end shown. Prefer Read, Grep and Glob for reading \
         and searching files."
    }
    fn input_schema(&self) -> Value {
        parse(
            r#"{"type":"object","additionalProperties":false,"required":["command"],"properties":{
            "command":{"type":"string","description":"The command to run"},
            "timeout":{"type":"integer","description":"Timeout in milliseconds (default 120000, max 600000)"},
            "description":{"type":"string","description":"Five to ten words saying what the command does"},
            "run_in_background":{"type":"boolean","description":"Not supported yet; must be false"},
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
    fn validate(&self, input: &Value, _: &ToolContext) -> Result<(), String> {
        if input.str_field("command").unwrap_or("").trim().is_empty() {
            return Err("command is empty".into());
        }
        if let Some(t) = input.get("timeout").and_then(Value::as_i64)
            && !(1..=MAX_TIMEOUT_MS as i64).contains(&t)
        {
            return Err(format!("timeout must be between 1 and {MAX_TIMEOUT_MS} ms"));
        }
        if input.get("run_in_background").and_then(Value::as_bool) == Some(true) {
            return Err(
                "run_in_background is not supported yet; run the command in the foreground".into(),
            );
        }
        Ok(())
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        permit: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let command = input.str_field("command").unwrap_or("").to_string();
            let hardened = permit.hardened();
            let timeout = input
                .get("timeout")
                .and_then(Value::as_i64)
                .map_or(DEFAULT_TIMEOUT_MS, |t| {
                    t.clamp(1, MAX_TIMEOUT_MS as i64) as u64
                });
            run(
                &command,
                &input,
                Duration::from_millis(timeout),
                ctx,
                hardened,
            )
            .await
        })
    }
}

/// The shell to use: bash when present, else the POSIX sh every system has.
fn shell() -> &'static str {
    static SHELL: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    SHELL.get_or_init(|| {
        let on_path = std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("bash").is_file()));
        if on_path { "bash" } else { "/bin/sh" }
    })
}

enum Ending {
    Exited(Option<i32>),
    TimedOut,
    Aborted,
}

/// How long a sandbox supervisor may take to stop everything it watches
/// after SIGTERM before tern kills it outright.
const SUPERVISOR_STOP: Duration = Duration::from_secs(10);

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

/// A running command: a plain child of tern, or a sandboxed one started
/// by the sandbox server, whose launcher reports its end on a pipe.
enum Running {
    Plain(smol::process::Child),
    Sandboxed {
        pid: u32,
        end: smol::Async<std::fs::File>,
    },
}

type Stream = Box<dyn smol::io::AsyncRead + Unpin>;

/// Starts the command; returns it with its stdout and stderr.
fn start(
    command: &str,
    ctx: &ToolContext,
    sandbox: Option<&crate::sandbox::SandboxPolicy>,
    hardened: bool,
) -> Result<(Running, Stream, Stream, Option<crate::sandbox::Finish>), String> {
    let env = command_env(ctx, hardened);
    let Some(policy) = sandbox else {
        let mut c = std::process::Command::new(shell());
        c.arg("-c")
            .arg(command)
            .current_dir(&ctx.cwd)
            .env_clear()
            .envs(env);
        // stdin is /dev/null, so a program that reads stdin when it is a
        // pipe (`rg TODO`) does its ordinary thing; a bare chroot without
        // /dev gets a pipe closed at once instead.
        let null = std::fs::File::open("/dev/null").ok();
        let has_null = null.is_some();
        let stdin = null.map_or_else(std::process::Stdio::piped, std::process::Stdio::from);
        let mut child = crate::sys::spawn_group_reading(c, stdin)
            .map_err(|e| format!("Cannot start {}: {e}", shell()))?;
        if !has_null {
            drop(child.stdin.take());
        }
        let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
            crate::sys::kill_process_group(child.id());
            return Err("Cannot capture the command's output".into());
        };
        return Ok((Running::Plain(child), Box::new(out), Box::new(err), None));
    };
    // A sandboxed command runs under a launcher, which stays as its
    // supervisor and ends every process of it; protected paths are checked
    // once that is done (see sandbox::protect).
    let prepared = policy
        .prepare_in(shell(), command, &ctx.cwd, &env)
        .map_err(|e| e.0)?;
    let (spawned, finish) = prepared.spawn(&ctx.cwd, env).map_err(|e| e.0)?;
    let async_file = |f: std::fs::File| smol::Async::new(f).map_err(|e| e.to_string());
    let out = async_file(spawned.stdout)?;
    let err = async_file(spawned.stderr)?;
    let end = async_file(std::fs::File::from(spawned.end))?;
    Ok((
        Running::Sandboxed {
            pid: spawned.pid,
            end,
        },
        Box::new(out),
        Box::new(err),
        Some(finish),
    ))
}

async fn run(
    command: &str,
    input: &Value,
    timeout: Duration,
    ctx: &ToolContext,
    hardened: bool,
) -> ToolOutput {
    let sandbox = ctx
        .sandbox
        .as_ref()
        .filter(|p| crate::policy::bash::sandbox_applies(p, input));
    let (mut running, mut out, mut err, finish) = match start(command, ctx, sandbox, hardened) {
        Ok(r) => r,
        Err(why) => return ToolOutput::error(why),
    };
    // Should this call be dropped half-way (an interrupt racing it), what
    // the command started still goes down with it.
    let _group = match &running {
        Running::Plain(child) => Some(crate::sys::GroupGuard::new(child.id())),
        Running::Sandboxed { .. } => None,
    };
    let supervisor = StopSupervisor(std::cell::Cell::new(match &running {
        Running::Sandboxed { pid, .. } => Some(*pid),
        Running::Plain(_) => None,
    }));
    let collector = std::cell::RefCell::new(Collector::new(&ctx.scratch));

    let pump = async {
        let mut a = [0u8; 8192];
        let mut b = [0u8; 8192];
        let (mut out_open, mut err_open) = (true, true);
        while out_open || err_open {
            let read_out = async {
                if out_open {
                    (0, out.read(&mut a).await)
                } else {
                    smol::future::pending().await
                }
            };
            let read_err = async {
                if err_open {
                    (1, err.read(&mut b).await)
                } else {
                    smol::future::pending().await
                }
            };
            match read_out.or(read_err).await {
                (0, Ok(n)) if n > 0 => collector.borrow_mut().push(&a[..n]),
                (1, Ok(n)) if n > 0 => collector.borrow_mut().push(&b[..n]),
                (0, _) => out_open = false,
                _ => err_open = false,
            }
        }
    };
    // Done when both pipes hit EOF and the shell exited, or a short grace
    // after the shell exited (a background child may hold the pipes open).
    let exit_code = std::cell::Cell::new(None);
    let (exited_tx, exited_rx) = smol::channel::bounded::<()>(1);
    let waiter = async {
        let code = match &mut running {
            Running::Plain(child) => child.status().await.ok().and_then(|s| s.code()),
            // The launcher says how it ended once every process of it is
            // gone, before the kernel tears its namespaces down.
            Running::Sandboxed { end, .. } => read_end(end).await.flatten(),
        };
        exit_code.set(Some(code));
        let _ = exited_tx.try_send(());
    };
    let grace = async {
        let _ = exited_rx.recv().await;
        smol::Timer::after(DRAIN_GRACE).await;
    };
    let finished = async {
        async {
            smol::future::zip(pump, waiter).await;
        }
        .or(grace)
        .await;
        Ending::Exited(exit_code.get().flatten())
    };
    let timed_out = async {
        smol::Timer::after(timeout).await;
        Ending::TimedOut
    };
    let aborted = async {
        ctx.abort.wait().await;
        Ending::Aborted
    };
    let ending = finished.or(timed_out).or(aborted).await;
    // Whatever happened, nothing the command started outlives the call.
    match &mut running {
        Running::Plain(child) => {
            crate::sys::kill_process_group(child.id());
            let _ = child.status().await;
        }
        Running::Sandboxed { pid, end } => {
            // The supervisor kills every descendant (daemons that left the
            // process group too), reports, and exits.
            if exit_code.get().is_none() {
                crate::sys::signal_process(*pid, libc::SIGTERM);
                let stopped = async {
                    let _ = read_end(end).await;
                    true
                }
                .or(async {
                    smol::Timer::after(SUPERVISOR_STOP).await;
                    false
                })
                .await;
                if !stopped {
                    crate::sys::kill_process_group(*pid);
                }
            }
        }
    }
    supervisor.0.set(None);

    let (text, spilled) = collector.into_inner().finish();
    let mut result = text;
    let mut unsafe_left = false;
    if let Some(finish) = finish {
        let report = finish.run();
        let mut note = |text: String| {
            if !result.is_empty() && !result.ends_with('\n') {
                result.push('\n');
            }
            result.push_str(&text);
            result.push('\n');
        };
        if !report.undone.is_empty() {
            note(format!(
                "[tern] The command changed protected paths, which run code outside the sandbox; tern undid it: {}",
                report.undone.join("; ")
            ));
        }
        if !report.refused.is_empty() {
            unsafe_left = true;
            note(format!(
                "[tern] Protected paths changed in ways tern could not undo: {}. Do not run anything outside the sandbox before they are checked.",
                report.refused.join("; ")
            ));
        }
    }
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
            match code.and_then(|c| exit_meaning(command, c).map(|m| (c, m))) {
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

/// What a non-zero exit means when it is an answer rather than an error:
/// exit 1 of grep and rg ("no match"), diff and cmp ("differ"), test and
/// `[` ("false"). Only when that program decides the exit status: the
/// line is one pipeline (no `;`, `&&`, `||`, `&`, newline, subshell or
/// substitution outside quotes) and the program is its last command.
fn exit_meaning(command: &str, code: i32) -> Option<&'static str> {
    if code != 1 {
        return None;
    }
    let last = last_pipeline_command(command)?;
    let program = first_word(&last)?;
    let name = program.rsplit('/').next().unwrap_or(&program);
    Some(match name {
        "grep" | "egrep" | "fgrep" | "rg" | "git-grep" => "no match",
        "diff" | "cmp" => "the inputs differ",
        "test" | "[" | "[[" => "the condition is false",
        _ => return None,
    })
}

/// The text of the last command of a single pipeline, or None when the
/// line is anything more (lists, background jobs, subshells, expansions
/// that run commands) — then the exit status is nobody's in particular.
fn last_pipeline_command(command: &str) -> Option<String> {
    let mut parts = vec![String::new()];
    let mut chars = command.trim().chars().peekable();
    let (mut single, mut double) = (false, false);
    while let Some(c) = chars.next() {
        let cur = parts.last_mut()?;
        if single {
            single = c != '\'';
            cur.push(c);
            continue;
        }
        match c {
            '\\' => {
                cur.push(c);
                cur.push(chars.next()?);
            }
            '\'' if !double => {
                single = true;
                cur.push(c);
            }
            '"' => {
                double = !double;
                cur.push(c);
            }
            '`' => return None,
            '$' if chars.peek() == Some(&'(') => return None,
            _ if double => cur.push(c),
            ';' | '&' | '\n' | '(' | ')' | '{' | '}' => return None,
            '|' if chars.peek() == Some(&'|') => return None,
            '|' => {
                // `|&` pipes stderr too; still a pipeline.
                if chars.peek() == Some(&'&') {
                    chars.next();
                }
                parts.push(String::new());
            }
            _ => cur.push(c),
        }
    }
    if single || double {
        return None;
    }
    parts.pop().filter(|p| !p.trim().is_empty())
}

/// The first word after any `NAME=value` assignments, quotes removed.
fn first_word(command: &str) -> Option<String> {
    command
        .split_whitespace()
        .find(|w| !(w.contains('=') && !w.starts_with('=') && !w.starts_with(['"', '\''])))
        .map(|w| w.replace(['"', '\''], ""))
}

/// Asks a sandboxed command's supervisor to stop (SIGTERM: it kills every
/// process of the command, daemons included, and exits) when dropped
/// while still armed.
struct StopSupervisor(std::cell::Cell<Option<u32>>);

impl Drop for StopSupervisor {
    fn drop(&mut self) {
        if let Some(pid) = self.0.get() {
            crate::sys::signal_process(pid, libc::SIGTERM);
        }
    }
}

/// Reads the launcher's end-of-command report (see `parse_status`).
async fn read_end(pipe: &mut smol::Async<std::fs::File>) -> Option<Option<i32>> {
    let mut message = Vec::new();
    pipe.read_to_end(&mut message).await.ok()?;
    crate::sandbox::parse_status(&message)
}

fn with_spill_note(mut text: String, spilled: Option<PathBuf>, is_error: bool) -> ToolOutput {
    if let Some(path) = spilled {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("(full output saved to {})", path.display()));
    }
    ToolOutput {
        content: text,
        is_error,
        images: Vec::new(),
    }
}

/// Keeps the first and last halves of the inline budget in memory and,
/// once output outgrows it, streams everything to a spill file.
struct Collector {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: usize,
    scratch: super::scratch::Scratch,
    spill: Option<(PathBuf, std::fs::File)>,
    spill_failed: bool,
}

impl Collector {
    fn new(scratch: &super::scratch::Scratch) -> Self {
        Collector {
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            total: 0,
            scratch: scratch.clone(),
            spill: None,
            spill_failed: false,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len();
        if self.total > INLINE_LIMIT && self.spill.is_none() && !self.spill_failed {
            self.open_spill();
        }
        if let Some((_, f)) = &mut self.spill
            && f.write_all(bytes).is_err()
        {
            self.spill = None;
            self.spill_failed = true;
        }
        let room = INLINE_LIMIT.saturating_sub(self.head.len());
        let (to_head, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(to_head);
        self.tail.extend(rest);
        let keep = INLINE_LIMIT / 2;
        if self.tail.len() > keep {
            let excess = self.tail.len() - keep;
            self.tail.drain(..excess);
        }
    }

    fn open_spill(&mut self) {
        let name = format!("bash-{}-{:08x}.out", std::process::id(), fastrand::u32(..));
        match self.scratch.create_file(&name) {
            Ok((path, mut f)) => {
                // Everything so far is in `head` (we only spill once past it).
                let ok = f.write_all(&self.head).is_ok()
                    && f.write_all(&self.tail.iter().copied().collect::<Vec<u8>>())
                        .is_ok();
                if ok {
                    self.spill = Some((path, f));
                } else {
                    self.spill_failed = true;
                }
            }
            Err(_) => self.spill_failed = true,
        }
    }

    fn finish(self) -> (String, Option<PathBuf>) {
        if self.total <= INLINE_LIMIT {
            return (String::from_utf8_lossy(&self.head).into_owned(), None);
        }
        let half = INLINE_LIMIT / 2;
        let head = String::from_utf8_lossy(&self.head[..half.min(self.head.len())]).into_owned();
        let tail_bytes: Vec<u8> = self.tail.into_iter().collect();
        let tail = String::from_utf8_lossy(&tail_bytes).into_owned();
        let omitted = self.total - half - tail_bytes.len();
        let text = format!("{head}\n… [{omitted} bytes omitted] …\n{tail}");
        (text, self.spill.map(|(p, _)| p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;
    use crate::tools::testing::{context, run as run_tool};

    #[test]
    fn runs_and_reports_exit_codes() {
        let (ctx, _) = context();
        let out = run_tool(&Bash, &ctx, obj! { "command" => "echo out; echo err >&2" });
        assert!(!out.is_error, "{}", out.content);
        assert!(out.content.contains("out") && out.content.contains("err"));
        let out = run_tool(&Bash, &ctx, obj! { "command" => "exit 3" });
        assert!(
            out.is_error && out.content.ends_with("Exit code 3"),
            "{}",
            out.content
        );
    }

    #[test]
    fn stdin_is_dev_null() {
        let (ctx, _) = context();
        let out = run_tool(
            &Bash,
            &ctx,
            obj! { "command" => "readlink /proc/self/fd/0; test -c /dev/stdin && echo char-device" },
        );
        assert_eq!(out.content, "/dev/null\nchar-device\n", "{}", out.content);
    }

    #[test]
    fn exit_one_of_grep_diff_test_is_an_answer_not_an_error() {
        let (ctx, dir) = context();
        std::fs::write(dir.join("a"), "x\n").unwrap();
        std::fs::write(dir.join("b"), "y\n").unwrap();
        for (cmd, meaning) in [
            ("grep nothing-like-this a", "no match"),
            ("cat a | grep -c 'zz|qq'", "no match"),
            ("LC_ALL=C grep -q zzz a", "no match"),
            ("diff a b", "differ"),
            ("cmp -s a b", "differ"),
            ("test -f nope", "false"),
            ("[ -d a ]", "false"),
        ] {
            let out = run_tool(&Bash, &ctx, obj! { "command" => cmd });
            assert!(!out.is_error, "{cmd}: {}", out.content);
            assert!(
                out.content.contains("Exit code 1") && out.content.contains(meaning),
                "{cmd}: {}",
                out.content
            );
        }
        // A real failure, or an exit status that is not grep's to give.
        for cmd in [
            "grep x no-such-file",
            "false; grep x a",
            "grep zzz a || false",
            "grep zzz a && true",
            "echo \"$(false)\" | grep zzz",
            "(grep zzz a)",
            "grep zzz a &",
            "sh -c 'exit 1' \"| grep\"",
        ] {
            let out = run_tool(&Bash, &ctx, obj! { "command" => cmd });
            let quiet = !out.content.contains("no match") && !out.content.contains("false)");
            assert!(quiet, "{cmd}: {}", out.content);
        }
        let out = run_tool(&Bash, &ctx, obj! { "command" => "grep x no-such-file" });
        assert!(out.is_error && out.content.ends_with("Exit code 2"));
    }

    #[test]
    fn provider_credentials_stay_with_tern() {
        let (mut ctx, _) = context();
        // SAFETY (test): this test binary sets a variable no other test reads.
        unsafe { std::env::set_var("TERN_TEST_SECRET_KEY", "hunter2") };
        ctx.child_env = crate::config::ChildEnv::new(vec![], "TERN_TEST_SECRET_KEY", &[], &[]);
        let out = run_tool(
            &Bash,
            &ctx,
            obj! { "command" => "echo \"[${TERN_TEST_SECRET_KEY:-gone}]\"" },
        );
        assert_eq!(out.content, "[gone]\n");
        ctx.child_env = crate::config::ChildEnv::new(
            vec![],
            "TERN_TEST_SECRET_KEY",
            &[],
            &["TERN_TEST_SECRET_KEY".to_string()],
        );
        let out = run_tool(
            &Bash,
            &ctx,
            obj! { "command" => "echo \"[${TERN_TEST_SECRET_KEY:-gone}]\"" },
        );
        assert_eq!(out.content, "[hunter2]\n", "passEnv lets it through");
    }

    #[test]
    fn stdin_is_at_end_of_file() {
        let (ctx, _) = context();
        // `cat` would wait forever on an open stdin.
        let out = run_tool(
            &Bash,
            &ctx,
            obj! { "command" => "cat; echo after", "timeout" => 5000i64 },
        );
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(out.content, "after\n");
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let (ctx, dir) = context();
        let pidfile = dir.join("pid");
        let cmd = format!("sleep 30 & echo $! > {}; wait", pidfile.display());
        let out = run_tool(&Bash, &ctx, obj! { "command" => cmd, "timeout" => 300i64 });
        assert!(
            out.is_error && out.content.contains("timed out after 300 ms"),
            "{}",
            out.content
        );
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The background sleep was in the group and must be gone. SIGKILL
        // lands asynchronously, so allow the kernel a moment on a busy box.
        let alive = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|stat| !stat.contains(") Z"))
                .unwrap_or(false)
        };
        let began = std::time::Instant::now();
        while alive() && began.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let alive = alive();
        assert!(!alive, "background child {pid} survived the timeout");
    }

    #[test]
    fn large_output_spills_with_head_and_tail() {
        let (ctx, _) = context();
        let out = run_tool(&Bash, &ctx, obj! { "command" => "seq 1 20000" });
        assert!(!out.is_error);
        assert!(out.content.starts_with("1\n2\n3\n"));
        assert!(out.content.contains("bytes omitted"));
        assert!(
            out.content
                .trim_end()
                .contains("20000\n(full output saved to ")
        );
        let path = out
            .content
            .rsplit("saved to ")
            .next()
            .unwrap()
            .trim_end_matches(')');
        let full = std::fs::read_to_string(path).unwrap();
        assert_eq!(full.lines().count(), 20000);
        assert!(out.content.len() < INLINE_LIMIT + 500);
    }
}
