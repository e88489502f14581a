//! The session's side of a VM: its process and pipes ([`Vm`]), and one
//! exchange with it ([`exchange`]): a request sent, the VM's inner calls
//! and `haiku()` samples answered ([`Answerer`]) until it is done, within
//! the script budget and the wall clock.

use std::time::{Duration, Instant};

use smol::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::{MAX_BUDGET_MS, MAX_MESSAGE, STARTUP, WALL_CLOCK, replay, sample};
use crate::json::{self, Value};
use crate::obj;
use crate::tools::{InnerCalls, ToolContext, ToolOutput};

/// The name a `haiku()` sample has in the replay log (no tool can have it).
pub(super) const SAMPLE: &str = "haiku()";
/// What one REPL result carries at most beside its text (inner calls'
/// images and PDFs, in the order they came).
const MAX_IMAGES: usize = 8;
const MAX_PDFS: usize = 4;

/// A live VM: the process and its pipes.
pub(crate) struct Vm {
    child: smol::process::Child,
    stdin: smol::process::ChildStdin,
    stdout: BufReader<smol::process::ChildStdout>,
    memory_mib: u64,
}

impl Vm {
    fn start(memory_mib: u64) -> Result<Vm, String> {
        let exe = crate::sandbox::launcher()
            .or_else(|| std::env::current_exe().ok())
            .ok_or("tern cannot find its own binary to start the REPL VM")?;
        let mut child = smol::process::Command::new(exe)
            .arg(super::VM_ARG)
            .arg(memory_mib.to_string())
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
                memory_mib,
            }),
            _ => Err("cannot talk to the REPL VM".into()),
        }
    }

    /// A new VM, once it says it is ready (bounded: a VM that cannot start
    /// must not hang the call).
    pub(super) async fn ready(memory_mib: u64) -> Result<Vm, String> {
        let mut vm = Vm::start(memory_mib)?;
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
            Ok(0) | Err(_) => Err(self.why_ended().await),
            Ok(_) if !line.ends_with('\n') => Err(format!(
                "the VM sent a message over {} MiB",
                MAX_MESSAGE >> 20
            )),
            Ok(_) => {
                json::parse(&line).map_err(|_| "the VM sent something that is not JSON".into())
            }
        }
    }

    /// Why the VM's output ended: an allocation the memory limit refused
    /// aborts it (SIGABRT), which is worth telling apart.
    async fn why_ended(&mut self) -> String {
        use std::os::unix::process::ExitStatusExt;
        let status = smol::future::or(async { self.child.status().await.ok() }, async {
            smol::Timer::after(Duration::from_secs(1)).await;
            None
        })
        .await;
        match status.and_then(|s| s.signal()) {
            Some(libc::SIGABRT) => format!(
                "the VM ran out of memory (a REPL context may use {} MiB; TERN_REPL_MEMORY_MB \
                 sets it)",
                self.memory_mib
            ),
            Some(sig) => format!("the VM ended unexpectedly (signal {sig})"),
            None => "the VM ended unexpectedly".into(),
        }
    }

    pub(super) fn kill(mut self) {
        let _ = self.child.kill();
    }
}

/// How a VM's inner calls are answered: run through the pipeline (and
/// kept for the log and the transcript), or, when a context is rebuilt,
/// from the log.
pub(super) enum Answerer<'a> {
    Live {
        inner: &'a dyn InnerCalls,
        ctx: &'a ToolContext,
        started: Instant,
        calls: Vec<replay::Call>,
        inputs: Vec<Value>,
        /// Each call's id (a `haiku()` sample has none): with `calls` and
        /// `inputs`, the virtual pairs the transcript keeps.
        ids: Vec<Option<String>>,
        /// Images and PDFs the inner calls gave, and how many did not fit.
        media: Vec<(String, String)>,
        media_dropped: usize,
    },
    Replay {
        logged: &'a [replay::Call],
        names: Vec<String>,
        refused: usize,
    },
}

impl<'a> Answerer<'a> {
    pub(super) fn live(inner: &'a dyn InnerCalls, ctx: &'a ToolContext) -> Answerer<'a> {
        Answerer::Live {
            inner,
            ctx,
            started: Instant::now(),
            calls: Vec::new(),
            inputs: Vec::new(),
            ids: Vec::new(),
            media: Vec::new(),
            media_dropped: 0,
        }
    }

    pub(super) fn replay(logged: &'a [replay::Call]) -> Answerer<'a> {
        Answerer::Replay {
            logged,
            names: Vec::new(),
            refused: 0,
        }
    }

    /// `sample`: a `haiku()` request rather than a tool call.
    async fn answer(&mut self, name: String, input: Value, sample: bool) -> (String, bool) {
        match self {
            Answerer::Live {
                inner,
                ctx,
                started,
                calls,
                inputs,
                ids,
                media,
                media_dropped,
            } => {
                let wall_left = WALL_CLOCK.saturating_sub(started.elapsed());
                let run = async {
                    if sample {
                        (None, sample::haiku(ctx, &input).await)
                    } else {
                        let (id, out) = inner.run_inner(name.clone(), input.clone()).await;
                        (Some(id), out)
                    }
                };
                let (id, out) = smol::future::or(run, async {
                    smol::Timer::after(wall_left).await;
                    (
                        None,
                        ToolOutput::error("the REPL's 600 s wall clock ran out during this call"),
                    )
                })
                .await;
                for (kind, data) in out.images {
                    let pdfs = media.iter().filter(|(k, _)| k == "application/pdf").count();
                    let fits = if kind == "application/pdf" {
                        pdfs < MAX_PDFS
                    } else {
                        media.len() - pdfs < MAX_IMAGES
                    };
                    if fits {
                        media.push((kind, data));
                    } else {
                        *media_dropped += 1;
                    }
                }
                ids.push(id);
                calls.push(replay::Call {
                    name: if sample { SAMPLE.to_string() } else { name },
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
                let name = if sample { SAMPLE.to_string() } else { name };
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

    pub(super) fn count(&self) -> usize {
        match self {
            Answerer::Live { calls, .. } => calls.len(),
            Answerer::Replay { names, .. } => names.len(),
        }
    }
}

/// How an exchange with the VM ended.
pub(super) enum Exchange {
    Done(Value),
    /// The context is gone: why (for the next call), and what to tell now.
    Lost(String, String),
}

/// Sends `request` and answers the VM's inner calls until it is done,
/// within `budget` ms of the VM's own time and the wall clock.
pub(super) async fn exchange(
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
        let op = msg.str_field("op");
        match op {
            Some("call" | "sample") => {
                let name = msg.str_field("name").unwrap_or_default().to_string();
                let input = msg.get("input").cloned().unwrap_or(Value::Null);
                let (content, is_error) = answer.answer(name, input, op == Some("sample")).await;
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
