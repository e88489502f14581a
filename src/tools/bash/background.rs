//! Background shells: a Bash call with `run_in_background` returns a shell
//! id at once while the command goes on under a task of its own; a
//! foreground command that passes its timeout is moved here the same way,
//! with what it printed so far.
//!
//! A shell's output is kept (new output since the last read, bounded) and
//! written whole to a log in the scratch folder; `BashOutput` reads what
//! is new, `KillShell` stops it. When a command ends on its own, it gets
//! the foreground's treatment (everything it started is killed, then the
//! protected-path check), and the end is told to the model at its next
//! request. The shells belong to one agent's tool context: they all stop
//! when it ends ([`Shells::shutdown`]), and if it is dropped without that,
//! dropping the tasks still kills every process group.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::io::Write as _;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use smol::future::FutureExt;

use super::super::{LocalFuture, Tool, ToolContext, ToolOutput};
use super::INLINE_LIMIT;
use super::process::Process;
use crate::abort::{Abort, Reason};
use crate::json::Value;
use crate::policy::Permit;
use crate::tools::input::{Fields, Schema};

/// New output kept in memory per shell; older unread bytes are dropped
/// (the log still has them).
const MAX_UNREAD: usize = 1 << 20;
/// Shells running at once, so a loop of calls cannot fork without bound.
const MAX_RUNNING: usize = 16;
/// How long KillShell and the session's end wait for a shell to be gone
/// (its supervisor has ten seconds to stop everything).
const STOP_WAIT: Duration = Duration::from_secs(15);

/// A command taken over: its shell id and its log's path.
pub(super) type Taken = (String, Option<String>);

/// The background shells of one agent.
pub struct Shells {
    ex: Option<&'static smol::LocalExecutor<'static>>,
    next: Cell<u32>,
    list: RefCell<Vec<Rc<Shell>>>,
    tasks: RefCell<Vec<smol::Task<()>>>,
}

struct Shell {
    id: String,
    command: String,
    description: String,
    pid: u32,
    started: Instant,
    /// Triggered to stop the command.
    stop: Abort,
    /// Triggered once the command is gone and checked.
    done: Abort,
    state: RefCell<State>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Status {
    Running,
    Exited(i32),
    Signalled,
    Killed,
}

struct State {
    unread: Vec<u8>,
    /// Unread bytes dropped because the buffer was full.
    dropped: usize,
    log: Option<(PathBuf, std::fs::File)>,
    status: Status,
    ended: Option<Instant>,
    /// The protected-path check's lines, once it ran.
    notes: Vec<String>,
    /// The model knows how it ended (told, read or killed by it).
    told: bool,
}

impl State {
    fn push(&mut self, bytes: &[u8]) {
        if let Some((_, f)) = &mut self.log
            && f.write_all(bytes).is_err()
        {
            self.log = None;
        }
        self.unread.extend_from_slice(bytes);
        if self.unread.len() > MAX_UNREAD {
            let excess = self.unread.len() - MAX_UNREAD;
            self.unread.drain(..excess);
            self.dropped += excess;
        }
    }
}

impl Default for Shells {
    /// No executor: background shells are refused (unit tests, contexts
    /// without a session).
    fn default() -> Self {
        Shells {
            ex: None,
            next: Cell::new(1),
            list: RefCell::new(Vec::new()),
            tasks: RefCell::new(Vec::new()),
        }
    }
}

impl Shells {
    /// Shells whose watchers run on `ex`.
    pub fn new(ex: &'static smol::LocalExecutor<'static>) -> Shells {
        Shells {
            ex: Some(ex),
            ..Shells::default()
        }
    }

    pub fn available(&self) -> bool {
        self.ex.is_some()
    }

    /// Why another shell may not start now, if it may not.
    pub(super) fn refuse_another(&self) -> Option<String> {
        (self.running() >= MAX_RUNNING).then(|| {
            format!(
                "{MAX_RUNNING} background shells are running already; stop one with KillShell first"
            )
        })
    }

    /// How many are still running.
    pub fn running(&self) -> usize {
        self.list
            .borrow()
            .iter()
            .filter(|s| s.state.borrow().status == Status::Running)
            .count()
    }

    /// Takes over a started command and answers the Bash call.
    pub(super) fn adopt(
        &self,
        process: Process,
        command: &str,
        description: &str,
        scratch: &crate::tools::scratch::Scratch,
    ) -> ToolOutput {
        match self.take(process, command, description, scratch, &[]) {
            Ok((id, log)) => ToolOutput::ok(started(&id, log.as_deref())),
            // Dropped, the process takes what it started down with it.
            Err(refused) => ToolOutput::error(refused.1),
        }
    }

    /// Takes over a foreground command that ran past its timeout; its log
    /// starts with `so_far`, which the model was shown. Answers the id and
    /// the log's path. Refused (the caller kills it) when no shell can be
    /// started.
    pub(super) fn adopt_running(
        &self,
        process: Process,
        command: &str,
        description: &str,
        scratch: &crate::tools::scratch::Scratch,
        so_far: &[u8],
    ) -> Result<Taken, Box<(Process, String)>> {
        if let Some(why) = self.refuse_another() {
            return Err(Box::new((process, why)));
        }
        self.take(process, command, description, scratch, so_far)
    }

    fn take(
        &self,
        process: Process,
        command: &str,
        description: &str,
        scratch: &crate::tools::scratch::Scratch,
        so_far: &[u8],
    ) -> Result<Taken, Box<(Process, String)>> {
        let Some(ex) = self.ex else {
            let why = "background shells are not available here".to_string();
            return Err(Box::new((process, why)));
        };
        let n = self.next.get();
        self.next.set(n + 1);
        let id = format!("bash_{n}");
        let mut log = scratch.create_file(&format!("{id}.log")).ok();
        if let Some((_, f)) = &mut log
            && f.write_all(so_far).is_err()
        {
            log = None;
        }
        let log_path = log.as_ref().map(|(p, _)| p.display().to_string());
        let shell = Rc::new(Shell {
            id: id.clone(),
            command: command.to_string(),
            description: description.to_string(),
            pid: process.pid(),
            started: Instant::now(),
            stop: Abort::new(),
            done: Abort::new(),
            state: RefCell::new(State {
                unread: Vec::new(),
                dropped: 0,
                log,
                status: Status::Running,
                ended: None,
                notes: Vec::new(),
                told: false,
            }),
        });
        self.list.borrow_mut().push(Rc::clone(&shell));
        self.tasks
            .borrow_mut()
            .push(ex.spawn(watch(shell, process)));
        Ok((id, log_path))
    }

    fn find(&self, id: &str) -> Result<Rc<Shell>, String> {
        let list = self.list.borrow();
        if let Some(s) = list.iter().find(|s| s.id == id) {
            return Ok(Rc::clone(s));
        }
        let known: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
        Err(if known.is_empty() {
            format!("No background shell {id}: none was started")
        } else {
            format!("No background shell {id}; there are {}", known.join(", "))
        })
    }

    /// Ends of shells the model has not heard about, as messages for it
    /// (taken once).
    pub fn take_news(&self) -> Vec<String> {
        let mut out = Vec::new();
        for shell in self.list.borrow().iter() {
            let mut st = shell.state.borrow_mut();
            if st.status == Status::Running || st.told {
                continue;
            }
            st.told = true;
            let mut text = format!(
                "<background-shell-ended>\nshell_id: {}\ncommand: {}\nstatus: {}\n",
                shell.id,
                first_line(&shell.command),
                describe(&st, shell)
            );
            if !st.unread.is_empty() || st.dropped > 0 {
                text.push_str(&format!(
                    "{} bytes of output not read yet (BashOutput shows them)\n",
                    st.unread.len() + st.dropped
                ));
            }
            for note in &st.notes {
                text.push_str(note);
                text.push('\n');
            }
            text.push_str("</background-shell-ended>");
            out.push(text);
        }
        out
    }

    /// One line per shell, for `/bashes`.
    pub fn listing(&self) -> Vec<String> {
        self.lines(false)
    }

    /// One line per shell still running (the interface's cards).
    #[cfg_attr(not(feature = "tui"), allow(dead_code))]
    pub fn running_listing(&self) -> Vec<String> {
        self.lines(true)
    }

    fn lines(&self, running_only: bool) -> Vec<String> {
        self.list
            .borrow()
            .iter()
            .filter(|s| !running_only || s.state.borrow().status == Status::Running)
            .map(|s| {
                let st = s.state.borrow();
                let what = if s.description.is_empty() {
                    &s.command
                } else {
                    &s.description
                };
                format!("{}  {}  {}", s.id, describe(&st, s), first_line(what))
            })
            .collect()
    }

    /// Stops every shell and waits (bounded) until each is gone and
    /// checked. For the end of the session.
    pub async fn shutdown(&self) {
        for s in self.list.borrow().iter() {
            s.stop.trigger(Reason::Requested);
        }
        let tasks = std::mem::take(&mut *self.tasks.borrow_mut());
        for task in tasks {
            task.or(async {
                smol::Timer::after(STOP_WAIT).await;
            })
            .await;
        }
        // Nobody will ask the model now: whoever watches the session hears
        // what the last checks found.
        for s in self.list.borrow().iter() {
            let mut st = s.state.borrow_mut();
            if !st.told && !st.notes.is_empty() {
                st.told = true;
                crate::report::notice(
                    crate::report::Level::Warning,
                    format!("background shell {}: {}", s.id, st.notes.join(" ")),
                );
            }
        }
    }
}

/// Watches one shell until its command is over: output into its state,
/// then the same end as a foreground command.
async fn watch(shell: Rc<Shell>, mut process: Process) {
    let exit = {
        let mut sink = |bytes: &[u8]| shell.state.borrow_mut().push(bytes);
        async { Some(process.wait(&mut sink).await) }
            .or(async {
                shell.stop.wait().await;
                None
            })
            .await
    };
    process.stop().await;
    let verified = process.verify();
    {
        let mut st = shell.state.borrow_mut();
        st.status = match exit {
            Some(Some(code)) => Status::Exited(code),
            Some(None) => Status::Signalled,
            None => Status::Killed,
        };
        st.ended = Some(Instant::now());
        st.notes = verified.notes;
    }
    shell.done.trigger(Reason::Requested);
}

fn describe(st: &State, shell: &Shell) -> String {
    let took = |end: Option<Instant>| {
        let d = end.unwrap_or_else(Instant::now) - shell.started;
        format!("{} s", d.as_secs())
    };
    match st.status {
        Status::Running => format!("running for {} (pid {})", took(None), shell.pid),
        Status::Exited(code) => format!("exited with code {code} after {}", took(st.ended)),
        Status::Signalled => format!("killed by a signal after {}", took(st.ended)),
        Status::Killed => format!("stopped by KillShell or tern after {}", took(st.ended)),
    }
}

/// The answer for a shell just started: Claude Code's sentence, then
/// how to follow it.
pub(super) fn started(id: &str, log: Option<&str>) -> String {
    let mut text = format!("Command running in background with ID: {id}.");
    if let Some(p) = log {
        text.push_str(&format!(" Output is being written to: {p}"));
    }
    text.push_str(&format!(
        "\nBashOutput with bash_id \"{id}\" shows its new output, KillShell with shell_id \
         \"{id}\" stops it, and you will be told when it ends."
    ));
    text
}

fn first_line(text: &str) -> String {
    crate::report::summary(text)
}

/// The shells of the call's context.
fn shells(ctx: &ToolContext) -> &Shells {
    &ctx.shells
}

pub struct BashOutput;

impl Tool for BashOutput {
    fn name(&self) -> &str {
        "BashOutput"
    }
    fn description(&self) -> &str {
        "Read what a background shell (Bash with run_in_background) printed since the \
         last read, and whether it is still running or how it ended. With filter (a \
         regular expression) only the lines that match are shown; the others are \
         discarded."
    }
    fn input_schema(&self) -> Cow<'_, Value> {
        static SCHEMA: Schema = Schema::new(
            r#"{"type":"object","additionalProperties":false,"required":["bash_id"],"properties":{
            "bash_id":{"type":"string","description":"The shell id Bash returned"},
            "filter":{"type":"string","description":"Regular expression: show only matching lines"}}}"#,
        );
        Cow::Borrowed(SCHEMA.get())
    }
    fn kind(&self) -> super::super::Kind {
        super::super::Kind::Other
    }
    fn is_read_only(&self, _: &Value) -> bool {
        // It reads tern's own buffer.
        true
    }
    fn validate(&self, input: &Value, ctx: &ToolContext) -> Result<(), String> {
        let (id, _) = output_args(input)?;
        shells(ctx).find(id).map(|_| ())
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        _: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let (shell, filter) = match output_args(&input)
                .and_then(|(id, filter)| Ok((shells(ctx).find(id)?, filter)))
            {
                Ok(found) => found,
                Err(e) => return ToolOutput::error(e),
            };
            let mut st = shell.state.borrow_mut();
            let running = st.status == Status::Running;
            // While it runs, a filter sees whole lines only: the rest of a
            // half-written line waits for the next read.
            let cut = match (&filter, running) {
                (Some(_), true) => st
                    .unread
                    .iter()
                    .rposition(|b| *b == b'\n')
                    .map_or(0, |i| i + 1),
                _ => st.unread.len(),
            };
            let new: Vec<u8> = st.unread.drain(..cut).collect();
            let dropped = std::mem::take(&mut st.dropped);
            let mut text = String::from_utf8_lossy(&new).into_owned();
            if let Some(re) = &filter {
                let kept: Vec<&str> = text.lines().filter(|l| re.is_match(l)).collect();
                text = kept.join("\n");
                if !text.is_empty() {
                    text.push('\n');
                }
            }
            let text = cut_middle(text);
            let mut out = format!("status: {}\n", describe(&st, &shell));
            if dropped > 0 {
                out.push_str(&format!(
                    "({dropped} earlier bytes were not kept in memory{})\n",
                    st.log
                        .as_ref()
                        .map(|(p, _)| format!("; the log {} has them", p.display()))
                        .unwrap_or_default()
                ));
            }
            if text.is_empty() {
                out.push_str("(no new output)\n");
            } else {
                out.push_str(&text);
            }
            if !running {
                for note in &st.notes {
                    out.push_str(note);
                    out.push('\n');
                }
                st.told = true;
            }
            ToolOutput::ok(out.trim_end().to_string())
        })
    }
}

/// At most the inline limit: the start and the end of `text`.
fn cut_middle(text: String) -> String {
    if text.len() <= INLINE_LIMIT {
        return text;
    }
    let half = INLINE_LIMIT / 2;
    let head = crate::tools::cut_str(&text, half);
    let mut from = text.len() - half;
    while !text.is_char_boundary(from) {
        from += 1;
    }
    let omitted = from - head.len();
    format!("{head}\n… [{omitted} bytes omitted] …\n{}", &text[from..])
}

/// A BashOutput call's input: the shell's id and its filter, compiled.
fn output_args(input: &Value) -> Result<(&str, Option<regex::Regex>), String> {
    let f = Fields::of(input)?;
    let filter = f
        .opt_text("filter")?
        .map(|r| regex::Regex::new(r).map_err(|e| format!("filter is not a valid regex: {e}")))
        .transpose()?;
    Ok((f.text("bash_id")?, filter))
}

pub struct KillShell;

impl Tool for KillShell {
    fn name(&self) -> &str {
        "KillShell"
    }
    fn description(&self) -> &str {
        "Stop a background shell (Bash with run_in_background) and everything it started."
    }
    fn input_schema(&self) -> Cow<'_, Value> {
        static SCHEMA: Schema = Schema::new(
            r#"{"type":"object","additionalProperties":false,"required":["shell_id"],"properties":{
            "shell_id":{"type":"string","description":"The shell id Bash returned"}}}"#,
        );
        Cow::Borrowed(SCHEMA.get())
    }
    fn kind(&self) -> super::super::Kind {
        super::super::Kind::Other
    }
    fn is_read_only(&self, _: &Value) -> bool {
        // It stops only what tern itself started.
        true
    }
    fn validate(&self, input: &Value, ctx: &ToolContext) -> Result<(), String> {
        shells(ctx)
            .find(Fields::of(input)?.text("shell_id")?)
            .map(|_| ())
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        _: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let shell = match Fields::of(&input)
                .and_then(|f| f.text("shell_id"))
                .and_then(|id| shells(ctx).find(id))
            {
                Ok(s) => s,
                Err(e) => return ToolOutput::error(e),
            };
            if shell.state.borrow().status != Status::Running {
                let st = shell.state.borrow();
                return ToolOutput::error(format!(
                    "{} is not running: {}",
                    shell.id,
                    describe(&st, &shell)
                ));
            }
            shell.stop.trigger(Reason::Requested);
            let gone = async {
                shell.done.wait().await;
                true
            }
            .or(async {
                smol::Timer::after(STOP_WAIT).await;
                false
            })
            .await;
            let mut st = shell.state.borrow_mut();
            if !gone {
                return ToolOutput::error(format!(
                    "{} did not stop within {} s",
                    shell.id,
                    STOP_WAIT.as_secs()
                ));
            }
            st.told = true;
            let mut out = format!(
                "{} ({}): {}",
                shell.id,
                first_line(&shell.command),
                describe(&st, &shell)
            );
            for note in &st.notes {
                out.push('\n');
                out.push_str(note);
            }
            ToolOutput::ok(out)
        })
    }
}
