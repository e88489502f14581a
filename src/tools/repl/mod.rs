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

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use super::{LocalFuture, Tool, ToolContext, ToolOutput};
use crate::json::Value;
use crate::obj;
use crate::policy::Permit;
use crate::tools::input::{Fields, Schema};

mod registered;
mod replay;
mod sample;
pub(crate) mod source;
pub(crate) mod vm;
mod wire;

pub(crate) use registered::{Registered, RegisteredTools};
use wire::{Answerer, Exchange, Vm, exchange};

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

/// The REPL state of one agent: its VM, why the last one was lost, and
/// the tools its scripts registered (offered to the model while the
/// context lives).
pub(crate) struct Slot {
    vm: RefCell<Option<Vm>>,
    lost: RefCell<Option<String>>,
    registered: Rc<RefCell<Vec<Rc<Registered>>>>,
    /// Where finished blocks are logged (the session's, when it has a
    /// transcript), and the logged blocks a resumed session replays.
    log: Option<std::path::PathBuf>,
    pending: RefCell<Vec<replay::Block>>,
    /// The inner calls made since the transcript last took them, as
    /// (assistant tool_use, user tool_result) message pairs.
    made: RefCell<Vec<(Value, Value)>>,
    /// The VM's memory limit, in MiB.
    memory_mib: u64,
}

impl Default for Slot {
    fn default() -> Slot {
        Slot {
            vm: RefCell::new(None),
            lost: RefCell::new(None),
            registered: Rc::default(),
            log: None,
            pending: RefCell::new(Vec::new()),
            made: RefCell::new(Vec::new()),
            memory_mib: vm::MEMORY_MIB,
        }
    }
}

impl Slot {
    /// A slot whose registered tools `list` also holds (the registry's
    /// source of them).
    /// With a transcript, blocks are logged beside it. The blocks of the
    /// earlier conversation (`history`, read from `earlier`: the same
    /// transcript on resume, the parent's on a fork) are replayed by the
    /// first call. A fork takes its parent's log as its own (a copy:
    /// the parent's is not written by the fork), never a live VM.
    pub(crate) fn sharing(
        list: Rc<RefCell<Vec<Rc<Registered>>>>,
        transcript: Option<&std::path::Path>,
        earlier: Option<&std::path::Path>,
        history: &[Value],
        memory_mib: u64,
    ) -> Slot {
        let log = transcript.map(replay::log_path);
        let earlier = earlier.map(replay::log_path);
        if let (Some(from), Some(to)) = (&earlier, &log)
            && from != to
            && !to.exists()
        {
            // Without the copy the fork's state would still be rebuilt
            // now (from the parent's log), but not on its own resume.
            let _ = std::fs::copy(from, to);
        }
        let pending = earlier
            .as_deref()
            .map(|l| replay::load(l, history))
            .unwrap_or_default();
        Slot {
            registered: list,
            log,
            pending: RefCell::new(pending),
            memory_mib,
            ..Slot::default()
        }
    }

    /// A sub-agent's: its own context, under the same limits; the tools
    /// its scripts register go to `list` (the child registry's source).
    pub(crate) fn for_child(&self, list: Rc<RefCell<Vec<Rc<Registered>>>>) -> Slot {
        Slot {
            registered: list,
            memory_mib: self.memory_mib,
            ..Slot::default()
        }
    }

    /// The conversation crossed a boundary (compacted, cleared, another
    /// session loaded): this context ends with it, and the next call
    /// starts a fresh one that says why.
    pub(crate) fn boundary(&self, why: &str) {
        if let Some(vm) = self.vm.borrow_mut().take() {
            vm.kill();
            *self.lost.borrow_mut() = Some(why.to_string());
        }
        self.pending.borrow_mut().clear();
    }

    /// The inner calls made since the last take, as virtual message pairs
    /// for the transcript (the model is not sent them: the REPL's result
    /// is what it asked for).
    pub(crate) fn take_made(&self) -> Vec<(Value, Value)> {
        std::mem::take(&mut *self.made.borrow_mut())
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
         calls; `o` is a fresh object each call. The value is the last expression (or `o`), \
         top-level await included. haiku(prompt, schema?) asks a small \
         model one question (with a JSON Schema, its answer is a value matching it). \
         registerTool(name, description, schema, handler) offers you a tool \
         eval_registered__NAME from the next turn on, whose handler runs here (every call of it \
         asks the user); unregisterTool, listTools, getTool. No import, require, filesystem or \
         process access: only the tools. Every inner call is checked as if you made it."
    }
    fn input_schema(&self) -> Cow<'_, Value> {
        static SCHEMA: Schema = Schema::new(
            r#"{"type":"object","additionalProperties":false,"required":["code"],"properties":{
            "code":{"type":"string","description":"The JavaScript to run"},
            "description":{"type":"string","description":"What it does, in a few words"},
            "timeout":{"type":"number","description":"Script budget in milliseconds (default 30000, at most 600000); time spent in inner tool calls is not counted"}}}"#,
        );
        Cow::Borrowed(SCHEMA.get())
    }
    fn kind(&self) -> super::Kind {
        super::Kind::Other
    }
    fn is_read_only(&self, _: &Value) -> bool {
        // Entering only: each inner call is decided on its own.
        true
    }
    fn is_concurrency_safe(&self, _: &Value, _: &ToolContext) -> bool {
        false
    }
    fn validate(&self, input: &Value, _: &ToolContext) -> Result<(), String> {
        Fields::of(input)?.text("code").map(drop)
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
    let f = match Fields::of(&input) {
        Ok(f) => f,
        Err(e) => return ToolOutput::error(e),
    };
    let code = match f.text("code") {
        Ok(c) => c.to_string(),
        Err(e) => return ToolOutput::error(e),
    };
    // A number, not an integer: models write 1500.0.
    let budget = f
        .value("timeout")
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
        .filter(|n| !n.starts_with(registered::PREFIX))
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
    let mut answer = Answerer::live(&*inner, ctx);
    let exchanged = exchange(&mut vm, &request, budget, &mut answer).await;
    let inner_calls = answer.count();
    let Answerer::Live {
        calls,
        inputs,
        ids,
        media,
        media_dropped,
        ..
    } = answer
    else {
        return ToolOutput::error("the REPL lost track of its inner calls");
    };
    record_made(slot, &calls, &inputs, &ids);
    match exchanged {
        Exchange::Done(msg) => {
            *slot.vm.borrow_mut() = Some(vm);
            *slot.lost.borrow_mut() = None;
            notes.extend(registered::apply(&slot.registered, &msg));
            if let (Some(id), Some(log), Some(code)) =
                (call_id, &slot.log, request.str_field("code"))
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
            if media_dropped > 0 {
                notes.push(format!(
                    "[{media_dropped} image(s) or PDF(s) from inner calls were left out: a result \
                     carries at most 8 images and 4 PDFs]"
                ));
            }
            let mut out = finish(&msg, notes, inner_calls);
            out.images = media;
            out
        }
        Exchange::Lost(why, text) => {
            vm.kill();
            *slot.lost.borrow_mut() = Some(why);
            ToolOutput::error(text)
        }
    }
}

/// Keeps the tool calls a request made (not its `haiku()` samples) as a
/// virtual tool_use/tool_result pair for the transcript.
fn record_made(slot: &Slot, calls: &[replay::Call], inputs: &[Value], ids: &[Option<String>]) {
    let made: Vec<(&String, &replay::Call, &Value)> = ids
        .iter()
        .zip(calls.iter().zip(inputs))
        .filter_map(|(id, (c, input))| Some((id.as_ref()?, c, input)))
        .collect();
    if made.is_empty() {
        return;
    }
    let uses = made.iter().map(|(id, c, input)| {
        obj! {
            "type" => "tool_use", "id" => id.as_str(),
            "name" => c.name.as_str(), "input" => (*input).clone(),
        }
    });
    let results = made.iter().map(|(id, c, _)| {
        obj! {
            "type" => "tool_result", "tool_use_id" => id.as_str(),
            "content" => c.content.as_str(), "is_error" => c.is_error,
        }
    });
    slot.made.borrow_mut().push((
        obj! { "role" => "assistant", "content" => Value::Array(uses.collect()) },
        obj! { "role" => "user", "content" => Value::Array(results.collect()) },
    ));
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
    let mut vm = Vm::ready(slot.memory_mib).await?;
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
        let mut answer = Answerer::replay(&block.calls);
        match exchange(&mut vm, &request, DEFAULT_BUDGET_MS, &mut answer).await {
            Exchange::Done(msg) => {
                notes.extend(registered::apply(&slot.registered, &msg));
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
                return Vm::ready(slot.memory_mib).await;
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
