//! REPL: JavaScript that orchestrates inner tool calls in one outer call.
//!
//! The script runs in a sealed VM process of its own ([`vm`]); every tool
//! function it calls becomes an inner call through the session's whole
//! permission pipeline ([`super::InnerCalls`]): schema, hooks, rules,
//! mode, asking, sandbox. Entering the REPL is allowed; what runs inside
//! is decided call by call. Variables live on in the VM between calls
//! (one VM per agent: the session's, and each sub-agent's own).
//!
//! The script budget (30 s by default, at most 600 s) counts only the time
//! the VM computes: it stands still while an inner call runs. A script
//! that runs out of it is stopped by ending its VM, which loses the
//! context; the next call starts a fresh one and says so.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use smol::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::{LocalFuture, Tool, ToolContext, ToolOutput};
use crate::json::{self, Value};
use crate::obj;
use crate::policy::Permit;

mod replay;
pub(crate) mod source;
pub(crate) mod vm;

/// The argument that makes tern the VM process.
pub(crate) const VM_ARG: &str = "__tern_repl_vm";
/// The script budget when the call names none, and the most it may name.
const DEFAULT_BUDGET_MS: u64 = 30_000;
const MAX_BUDGET_MS: u64 = 600_000;
/// However long inner calls take, one REPL call ends by then.
const WALL_CLOCK: Duration = Duration::from_secs(600);
/// How long a new VM may take to say it is ready.
const STARTUP: Duration = Duration::from_secs(30);
/// The longest message the VM may send (a block's console output is
/// capped at 50 MiB).
const MAX_MESSAGE: usize = 64 << 20;
/// The longest result text, in characters.
const RESULT_LIMIT: usize = 100_000;

/// A live VM: the process and its pipes.
pub(crate) struct Vm {
    child: smol::process::Child,
    stdin: smol::process::ChildStdin,
    stdout: BufReader<smol::process::ChildStdout>,
}

impl Vm {
    fn start() -> Result<Vm, String> {
        let exe = crate::sandbox::launcher()
            .or_else(|| std::env::current_exe().ok())
            .ok_or("tern cannot find its own binary to start the REPL VM")?;
        let mut child = smol::process::Command::new(exe)
            .arg(VM_ARG)
            .env_clear()
            .stdin(smol::process::Stdio::piped())
            .stdout(smol::process::Stdio::piped())
            .stderr(smol::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start the REPL VM: {e}"))?;
        match (child.stdin.take(), child.stdout.take()) {
            (Some(stdin), Some(stdout)) => Ok(Vm {
                child,
                stdin,
                stdout: BufReader::new(stdout),
            }),
            _ => Err("cannot talk to the REPL VM".into()),
        }
    }

    /// A new VM, once it says it is ready (bounded: a VM that cannot start
    /// must not hang the call).
    async fn ready() -> Result<Vm, String> {
        let mut vm = Vm::start()?;
        let first = smol::future::or(async { vm.next().await.ok() }, async {
            smol::Timer::after(STARTUP).await;
            None
        })
        .await;
        match first {
            Some(m) if m.str_field("op") == Some("ready") => Ok(vm),
            Some(m) => {
                let why = m
                    .str_field("error")
                    .unwrap_or("it said something else")
                    .to_string();
                vm.kill();
                Err(format!("the REPL VM did not start: {why}"))
            }
            None => {
                vm.kill();
                Err("the REPL VM did not start in time".into())
            }
        }
    }

    async fn send(&mut self, v: &Value) -> Result<(), String> {
        let mut line = v.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .await
            .and(self.stdin.flush().await)
            .map_err(|e| format!("the REPL VM stopped listening: {e}"))
    }

    /// The next message, or None when the VM has ended.
    /// Bounded: the VM runs the model's code, which must not make tern
    /// itself hold an endless line.
    async fn next(&mut self) -> Result<Value, String> {
        use smol::io::AsyncReadExt;
        let mut line = String::new();
        let mut bounded = (&mut self.stdout).take(MAX_MESSAGE as u64);
        match bounded.read_line(&mut line).await {
            Ok(0) | Err(_) => Err("the VM ended unexpectedly".into()),
            Ok(_) if !line.ends_with('\n') => Err(format!(
                "the VM sent a message over {} MiB",
                MAX_MESSAGE >> 20
            )),
            Ok(_) => {
                json::parse(&line).map_err(|_| "the VM sent something that is not JSON".into())
            }
        }
    }

    fn kill(mut self) {
        let _ = self.child.kill();
    }
}

/// The REPL state of one agent: its VM, why the last one was lost, and
/// the tools its scripts registered (offered to the model while the
/// context lives).
#[derive(Default)]
pub(crate) struct Slot {
    vm: RefCell<Option<Vm>>,
    lost: RefCell<Option<String>>,
    registered: Rc<RefCell<Vec<Rc<Registered>>>>,
    /// Where finished blocks are logged (the session's, when it has a
    /// transcript), and the logged blocks a resumed session replays.
    log: Option<std::path::PathBuf>,
    pending: RefCell<Vec<replay::Block>>,
}

impl Slot {
    /// A slot whose registered tools `list` also holds (the registry's
    /// source of them).
    /// With a transcript, blocks are logged beside it, and those of the
    /// resumed conversation (`history`) are replayed by the first call.
    pub(crate) fn sharing(
        list: Rc<RefCell<Vec<Rc<Registered>>>>,
        transcript: Option<&std::path::Path>,
        history: &[Value],
    ) -> Slot {
        let log = transcript.map(replay::log_path);
        let pending = log
            .as_deref()
            .map(|l| replay::load(l, history))
            .unwrap_or_default();
        Slot {
            registered: list,
            log,
            pending: RefCell::new(pending),
            ..Slot::default()
        }
    }
}

/// The registered tools, as a catalog the registry offers.
pub(crate) struct RegisteredTools(pub(crate) Rc<RefCell<Vec<Rc<Registered>>>>);

impl super::ToolSource for RegisteredTools {
    fn tools(&self) -> Vec<Rc<dyn Tool>> {
        self.0
            .borrow()
            .iter()
            .map(|t| Rc::clone(t) as Rc<dyn Tool>)
            .collect()
    }
}

/// A tool a script registered: the model calls it as
/// `eval_registered__NAME`; every such call asks (not read-only), and its
/// handler runs in the VM, its own inner calls checked like any other.
pub(crate) struct Registered {
    /// The name in the VM.
    vm_name: String,
    /// `eval_registered__NAME`.
    wire: String,
    description: String,
    schema: Value,
}

impl Tool for Registered {
    fn name(&self) -> &str {
        &self.wire
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> Value {
        self.schema.clone()
    }
    fn kind(&self) -> super::Kind {
        super::Kind::Other
    }
    fn is_read_only(&self, _: &Value) -> bool {
        false
    }
    fn is_concurrency_safe(&self, _: &Value) -> bool {
        false
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        _permit: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let request =
                obj! { "op" => "invoke", "name" => self.vm_name.as_str(), "input" => input };
            in_vm(ctx, request, DEFAULT_BUDGET_MS, None).await
        })
    }
}

pub struct Repl;

impl Tool for Repl {
    fn name(&self) -> &str {
        "REPL"
    }
    fn description(&self) -> &str {
        "Run JavaScript that calls tools, to do many steps in one call. Every tool is a function \
         by its name taking its input object (Read({file_path}), Bash({command}), ...), and \
         returning its text; a refused or failed call throws. Shorthands: sh(command) runs Bash; \
         cat(path) reads a file's text; rg(pattern, path?) searches contents; rgf(pattern, path?) \
         and gl(pattern, path?) give arrays of paths; put(path, text) writes a file; chdir(dir) \
         sets the directory for relative paths and sh() for this call; shQuote(s), str(v), \
         console.log, setTimeout, atob/btoa. Top-level variables and functions stay for later \
         calls; `o` is a fresh object each call. The value is the last expression (or `o`); with \
         top-level await, `return` it or put it in `o`. No import, require, filesystem or \
         process access: only the tools. Every inner call is checked as if you made it."
    }
    fn input_schema(&self) -> Value {
        json::parse(
            r#"{"type":"object","additionalProperties":false,"required":["code"],"properties":{
            "code":{"type":"string","description":"The JavaScript to run"},
            "description":{"type":"string","description":"What it does, in a few words"},
            "timeout":{"type":"number","description":"Script budget in milliseconds (default 30000, at most 600000); time spent in inner tool calls is not counted"}}}"#,
        )
        .unwrap_or_default()
    }
    fn kind(&self) -> super::Kind {
        super::Kind::Other
    }
    fn is_read_only(&self, _: &Value) -> bool {
        // Entering only: each inner call is decided on its own.
        true
    }
    fn is_concurrency_safe(&self, _: &Value) -> bool {
        false
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        permit: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(run(input, ctx, permit.call_id()))
    }
}

async fn run(input: Value, ctx: &ToolContext, call_id: &str) -> ToolOutput {
    let code = input.str_field("code").unwrap_or_default().to_string();
    let budget = input
        .get("timeout")
        .and_then(Value::as_f64)
        .filter(|t| t.is_finite() && *t > 0.0)
        .map_or(DEFAULT_BUDGET_MS, |t| (t as u64).min(MAX_BUDGET_MS));
    if let Some(why) = source::sealed_violation(&code) {
        return ToolOutput::error(format!("{why}; use the tool functions instead"));
    }
    in_vm(
        ctx,
        obj! { "op" => "eval", "code" => code },
        budget,
        Some(call_id),
    )
    .await
}

/// How a VM's inner calls are answered: run through the pipeline (and
/// kept for the log), or, when a context is rebuilt, from the log.
enum Answerer<'a> {
    Live {
        inner: &'a dyn super::InnerCalls,
        started: Instant,
        calls: Vec<replay::Call>,
        inputs: Vec<Value>,
    },
    Replay {
        logged: &'a [replay::Call],
        names: Vec<String>,
        refused: usize,
    },
}

impl Answerer<'_> {
    async fn answer(&mut self, name: String, input: Value) -> (String, bool) {
        match self {
            Answerer::Live {
                inner,
                started,
                calls,
                inputs,
            } => {
                let wall_left = WALL_CLOCK.saturating_sub(started.elapsed());
                let out = smol::future::or(inner.run_inner(name.clone(), input.clone()), async {
                    smol::Timer::after(wall_left).await;
                    ToolOutput::error("the REPL's 600 s wall clock ran out during this call")
                })
                .await;
                calls.push(replay::Call {
                    name,
                    content: out.content.clone(),
                    is_error: out.is_error,
                });
                inputs.push(input);
                (out.content, out.is_error)
            }
            Answerer::Replay {
                logged,
                names,
                refused,
            } => {
                let at = names.len();
                names.push(name.clone());
                match logged.get(at) {
                    Some(c) if c.name == name => (c.content.clone(), c.is_error),
                    _ => {
                        *refused += 1;
                        (
                            "this call is not in the REPL's replay log, so it was not run".into(),
                            true,
                        )
                    }
                }
            }
        }
    }

    fn count(&self) -> usize {
        match self {
            Answerer::Live { calls, .. } => calls.len(),
            Answerer::Replay { names, .. } => names.len(),
        }
    }
}

/// How an exchange with the VM ended.
enum Exchange {
    Done(Value),
    /// The context is gone: why (for the next call), and what to tell now.
    Lost(String, String),
}

/// Sends `request` and answers the VM's inner calls until it is done,
/// within `budget` ms of the VM's own time and the wall clock.
async fn exchange(
    vm: &mut Vm,
    request: &Value,
    budget: u64,
    answer: &mut Answerer<'_>,
) -> Exchange {
    if let Err(e) = vm.send(request).await {
        return Exchange::Lost(e.clone(), e);
    }
    let started = Instant::now();
    let mut left = Duration::from_millis(budget);
    loop {
        let waited = Instant::now();
        let wall_left = WALL_CLOCK.saturating_sub(started.elapsed());
        let limit = left.min(wall_left);
        let next = smol::future::or(async { Some(vm.next().await) }, async {
            smol::Timer::after(limit).await;
            None
        })
        .await;
        left = left.saturating_sub(waited.elapsed());
        let msg = match next {
            None => {
                let why = if wall_left <= limit {
                    "the 600 s wall clock ran out".to_string()
                } else {
                    format!("the script budget of {budget} ms ran out")
                };
                let text = format!(
                    "{why}; the REPL context was stopped and its variables are lost. Split the work, \
                     or give a larger timeout (at most {MAX_BUDGET_MS} ms)"
                );
                return Exchange::Lost(why, text);
            }
            Some(Err(why)) => {
                let text = format!("The REPL failed: {why}; its variables are lost");
                return Exchange::Lost(why, text);
            }
            Some(Ok(m)) => m,
        };
        match msg.str_field("op") {
            Some("call") => {
                let name = msg.str_field("name").unwrap_or_default().to_string();
                let input = msg.get("input").cloned().unwrap_or(Value::Null);
                let (content, is_error) = answer.answer(name, input).await;
                let reply = obj! { "content" => content, "is_error" => is_error };
                if let Err(e) = vm.send(&reply).await {
                    return Exchange::Lost(e.clone(), e);
                }
            }
            Some("done") => return Exchange::Done(msg),
            Some("poisoned") => {
                let name = msg.str_field("name").unwrap_or_default();
                let why = format!("the managed global `{name}` was made non-configurable");
                let text = format!(
                    "The REPL context is poisoned: {why}. It was dropped; the next call starts a \
                     fresh context (variables and functions from earlier calls are gone), so run \
                     again what you need"
                );
                return Exchange::Lost(why, text);
            }
            _ => {
                let why = msg
                    .str_field("error")
                    .unwrap_or("it sent nonsense")
                    .to_string();
                let text = format!("The REPL VM failed: {why}");
                return Exchange::Lost(why, text);
            }
        }
    }
}

/// Runs one request (a block, or a registered tool's handler) in this
/// agent's VM, answering its inner calls, within the budget. `call_id`:
/// the outer call's id, for a block the log keeps.
async fn in_vm(
    ctx: &ToolContext,
    mut request: Value,
    budget: u64,
    call_id: Option<&str>,
) -> ToolOutput {
    let Some(inner) = ctx.inner_calls() else {
        return ToolOutput::error("The REPL is not available here (no tool pipeline to call)");
    };
    let slot = &ctx.repl;
    let names: Vec<Value> = inner
        .inner_names()
        .into_iter()
        .filter(|n| !n.starts_with(REGISTERED_PREFIX))
        .map(Value::from)
        .collect();
    let cwd = ctx.cwd.display().to_string();
    if let Value::Object(m) = &mut request {
        m.insert("tools", Value::Array(names.clone()));
        m.insert("cwd", cwd.as_str());
    }
    let mut notes = Vec::new();
    let existing = slot.vm.borrow_mut().take();
    let mut vm = match existing {
        Some(vm) => vm,
        None => match fresh(slot, &names, &cwd, &mut notes).await {
            Ok(vm) => vm,
            Err(e) => return ToolOutput::error(e),
        },
    };
    // Should this call never finish (the turn interrupted, the future
    // dropped, which ends the VM), the next one says what was lost.
    *slot.lost.borrow_mut() = Some("the call before did not finish".into());
    let mut answer = Answerer::Live {
        inner: &*inner,
        started: Instant::now(),
        calls: Vec::new(),
        inputs: Vec::new(),
    };
    match exchange(&mut vm, &request, budget, &mut answer).await {
        Exchange::Done(msg) => {
            *slot.vm.borrow_mut() = Some(vm);
            *slot.lost.borrow_mut() = None;
            apply(&slot.registered, &msg);
            let inner_calls = answer.count();
            if let (Answerer::Live { calls, inputs, .. }, Some(id), Some(log), Some(code)) =
                (answer, call_id, &slot.log, request.str_field("code"))
            {
                let block = replay::Block {
                    code: code.to_string(),
                    calls,
                    threw: msg.get("ok").and_then(Value::as_bool) != Some(true),
                };
                if let Err(e) = replay::append(log, id, &block, &inputs) {
                    notes.push(format!(
                        "[this block is not in the replay log ({e}): a resumed session will not have its state]"
                    ));
                }
            }
            finish(&msg, notes, inner_calls)
        }
        Exchange::Lost(why, text) => {
            vm.kill();
            *slot.lost.borrow_mut() = Some(why);
            ToolOutput::error(text)
        }
    }
}

/// A new VM for this agent. A resumed session's first one is rebuilt from
/// the log (each block's verdict in `notes`); otherwise what was lost
/// with the old one is said.
async fn fresh(
    slot: &Slot,
    names: &[Value],
    cwd: &str,
    notes: &mut Vec<String>,
) -> Result<Vm, String> {
    let mut vm = Vm::ready().await?;
    // Tools registered in a lost context are gone with it.
    let gone: Vec<String> = slot
        .registered
        .borrow_mut()
        .drain(..)
        .map(|t| t.vm_name.clone())
        .collect();
    if !gone.is_empty() {
        notes.push(format!(
            "[the registered tools {} were lost with the old context]",
            gone.join(", ")
        ));
    }
    if let Some(why) = slot.lost.borrow_mut().take() {
        notes.push(format!(
            "[a fresh REPL context: the previous one was lost ({why}); its variables are gone]"
        ));
    }
    let blocks = std::mem::take(&mut *slot.pending.borrow_mut());
    if blocks.is_empty() {
        return Ok(vm);
    }
    let mut drift = Vec::new();
    for (k, block) in blocks.iter().enumerate() {
        let request = obj! {
            "op" => "eval",
            "code" => block.code.as_str(),
            "tools" => Value::Array(names.to_vec()),
            "cwd" => cwd,
        };
        let mut answer = Answerer::Replay {
            logged: &block.calls,
            names: Vec::new(),
            refused: 0,
        };
        match exchange(&mut vm, &request, DEFAULT_BUDGET_MS, &mut answer).await {
            Exchange::Done(msg) => {
                apply(&slot.registered, &msg);
                let threw = msg.get("ok").and_then(Value::as_bool) != Some(true);
                if let Answerer::Replay { names, refused, .. } = &answer
                    && let replay::Verdict::Drift(what) =
                        replay::verdict(block, names, threw, *refused)
                {
                    drift.push(format!("block {}: {what}", k + 1));
                }
            }
            Exchange::Lost(why, _) => {
                vm.kill();
                slot.registered.borrow_mut().clear();
                notes.push(format!(
                    "[the REPL context could not be rebuilt: replaying block {} of {} failed ({why}); \
                     this is a fresh context without the earlier variables]",
                    k + 1,
                    blocks.len()
                ));
                return Vm::ready().await;
            }
        }
    }
    notes.push(if drift.is_empty() {
        format!(
            "[the REPL context was rebuilt from the {} earlier block(s) of this session, their tool \
             calls answered from the log, none run again]",
            blocks.len()
        )
    } else {
        format!(
            "[the REPL context was rebuilt from the {} earlier block(s), their tool calls answered \
             from the log, none run again; {} drifted, so some values may differ from before: {}]",
            blocks.len(),
            drift.len(),
            drift.join("; ")
        )
    });
    Ok(vm)
}

/// The wire names of registered tools start so.
const REGISTERED_PREFIX: &str = "eval_registered__";

/// A call's `registerTool`/`unregisterTool` changes, in order.
fn apply(list: &RefCell<Vec<Rc<Registered>>>, done: &Value) {
    let Some(changes) = done.get("changes").and_then(Value::as_array) else {
        return;
    };
    let mut list = list.borrow_mut();
    for c in changes {
        let Some(name) = c.str_field("name") else {
            continue;
        };
        list.retain(|t| t.vm_name != name);
        if c.str_field("op") == Some("register") {
            list.push(Rc::new(Registered {
                vm_name: name.to_string(),
                wire: format!("{REGISTERED_PREFIX}{name}"),
                description: c.str_field("description").unwrap_or_default().to_string(),
                schema: c.get("schema").cloned().unwrap_or(Value::Null),
            }));
        }
    }
}

/// The outer result: the value, then what the script printed.
fn finish(done: &Value, notes: Vec<String>, inner_calls: usize) -> ToolOutput {
    let ok = done.get("ok").and_then(Value::as_bool).unwrap_or(false);
    let value = done.str_field("value").unwrap_or_default();
    let stdout = done.str_field("stdout").unwrap_or_default();
    let stderr = done.str_field("stderr").unwrap_or_default();
    let mut text = String::new();
    for n in &notes {
        text.push_str(n);
        text.push('\n');
    }
    text.push_str(if ok { "result: " } else { "error: " });
    text.push_str(value);
    if !stdout.is_empty() {
        text.push_str("\nstdout:\n");
        text.push_str(stdout.trim_end_matches('\n'));
    }
    if !stderr.is_empty() {
        text.push_str("\nstderr:\n");
        text.push_str(stderr.trim_end_matches('\n'));
    }
    if !ok && inner_calls > 0 {
        text.push_str(&format!(
            "\n({inner_calls} inner tool call(s) ran before this; their effects stay)"
        ));
    }
    if text.chars().count() > RESULT_LIMIT {
        let cut: String = text.chars().take(RESULT_LIMIT).collect();
        text = format!("{cut}\n[the result was cut at {RESULT_LIMIT} characters]");
    }
    if ok {
        ToolOutput::ok(text)
    } else {
        ToolOutput::error(text)
    }
}

#[cfg(test)]
mod tests {
    /// The seal the VM puts on itself: after it, this thread opens no
    /// file and makes no TCP connection, though it could before.
    #[test]
    fn the_vm_seal_takes_every_file_and_connection() {
        if std::env::var_os("TERN_TEST_RUNNER").is_some_and(|r| !r.is_empty()) {
            eprintln!("SKIPPED the VM seal test (emulated run): qemu-user has no landlock");
            return;
        }
        if crate::sys::landlock_abi().is_err() {
            assert!(
                std::env::var_os("TERN_REQUIRE_ALL").is_none(),
                "landlock is required"
            );
            eprintln!("skipped: this kernel has no landlock");
            return;
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let before = std::fs::read("/proc/self/status").is_ok()
            && std::net::TcpStream::connect(addr).is_ok();
        assert!(
            before,
            "the thread could open files and connect before the seal"
        );
        // landlock holds a thread and what it starts: a thread of its own.
        let after = std::thread::spawn(move || {
            crate::sandbox::seal_process().unwrap();
            (
                std::fs::read("/proc/self/status").is_err(),
                std::fs::File::create("/tmp/tern-repl-seal-probe").is_err(),
                std::net::TcpStream::connect(addr).is_err(),
            )
        })
        .join()
        .unwrap();
        assert_eq!(after, (true, true, true), "(read, create, connect) refused");
    }
}
