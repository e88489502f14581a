//! The streaming tool executor.
//!
//! Calls are added as their blocks close, while the model may still be
//! speaking. A call whose input is concurrency-safe starts as soon as no
//! unsafe call before it is unfinished; an unsafe call starts only when
//! everything before it has finished, and holds back everything after it.
//! Results are handed back in the order the model asked, each paired with
//! its `tool_use_id`, whatever order they finished in.
//!
//! Implementation: each started call is a task on the session's
//! `LocalExecutor` (one thread); a finished task reports on a channel and
//! the owner calls [`StreamingExecutor::next_done`] to record it and start
//! what it was holding back.

use std::rc::Rc;

use smol::LocalExecutor;
use smol::channel::{Receiver, Sender};

use super::pipeline::Pipeline;
use crate::json::Value;
use crate::model::stream::ToolUse;
use crate::tools::ToolOutput;

enum State {
    Waiting(ToolUse),
    Running(#[allow(dead_code)] smol::Task<()>),
    Done(ToolOutput),
}

struct Entry {
    id: String,
    safe: bool,
    state: State,
}

pub struct StreamingExecutor<'ex> {
    ex: &'ex LocalExecutor<'static>,
    pipeline: Rc<Pipeline>,
    entries: Vec<Entry>,
    done_tx: Sender<(usize, ToolOutput)>,
    done_rx: Receiver<(usize, ToolOutput)>,
    stopped: bool,
}

impl<'ex> StreamingExecutor<'ex> {
    pub fn new(ex: &'ex LocalExecutor<'static>, pipeline: Rc<Pipeline>) -> Self {
        let (done_tx, done_rx) = smol::channel::unbounded();
        StreamingExecutor {
            ex,
            pipeline,
            entries: Vec::new(),
            done_tx,
            done_rx,
            stopped: false,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Queues a call whose block just closed and starts whatever may run.
    pub fn add(&mut self, call: ToolUse) {
        // Decided once, on the model's original input.
        let safe = self.pipeline.is_concurrency_safe(&call);
        self.entries.push(Entry {
            id: call.id.clone(),
            safe,
            state: State::Waiting(call),
        });
        self.pump();
    }

    fn pump(&mut self) {
        if self.stopped {
            return;
        }
        let mut unfinished_before = false;
        let mut unsafe_unfinished_before = false;
        for index in 0..self.entries.len() {
            let entry = &mut self.entries[index];
            if matches!(entry.state, State::Waiting(_)) {
                let may_start = if entry.safe {
                    !unsafe_unfinished_before
                } else {
                    !unfinished_before
                };
                if may_start
                    && let State::Waiting(call) =
                        std::mem::replace(&mut entry.state, State::Done(ToolOutput::ok("")))
                {
                    let pipeline = Rc::clone(&self.pipeline);
                    let tx = self.done_tx.clone();
                    let task = self.ex.spawn(async move {
                        let output = pipeline.run(call).await;
                        let _ = tx.send((index, output)).await;
                    });
                    entry.state = State::Running(task);
                }
            }
            if !matches!(entry.state, State::Done(_)) {
                unfinished_before = true;
                if !entry.safe {
                    unsafe_unfinished_before = true;
                }
            }
        }
    }

    pub fn all_done(&self) -> bool {
        self.entries
            .iter()
            .all(|e| matches!(e.state, State::Done(_)))
    }

    fn running(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| matches!(e.state, State::Running(_)))
            .count()
    }

    /// Waits for one running call to finish, records it and starts what it
    /// held back. Never resolves when nothing is running (so it can sit in
    /// a race against the model stream).
    pub async fn next_done(&mut self) {
        if self.running() == 0 {
            return smol::future::pending().await;
        }
        if let Ok((index, output)) = self.done_rx.recv().await
            && let Some(entry) = self.entries.get_mut(index)
        {
            entry.state = State::Done(output);
        }
        self.pump();
    }

    /// Marks every call that has not started as not run, with `reason`, and
    /// starts nothing more. Running calls finish on their own (tools watch
    /// the abort token).
    pub fn stop_waiting(&mut self, reason: &str) {
        self.stopped = true;
        for entry in &mut self.entries {
            if matches!(entry.state, State::Waiting(_)) {
                entry.state = State::Done(ToolOutput::error(reason));
            }
        }
    }

    /// Runs everything to completion and returns the `tool_result` blocks in
    /// the order the calls were made.
    pub async fn drain(mut self) -> Vec<Value> {
        while self
            .entries
            .iter()
            .any(|e| !matches!(e.state, State::Done(_)))
        {
            if self.running() == 0 {
                // Only possible after stop_waiting raced a start; be safe.
                self.stop_waiting("Not run");
                break;
            }
            self.next_done().await;
        }
        self.entries
            .into_iter()
            .map(|e| match e.state {
                State::Done(out) => tool_result(&e.id, &out),
                _ => tool_result(&e.id, &ToolOutput::error("Not run")),
            })
            .collect()
    }
}

pub fn tool_result(id: &str, out: &ToolOutput) -> Value {
    let mut block = crate::obj! {
        "type" => "tool_result",
        "tool_use_id" => id,
        "content" => out.content.as_str(),
    };
    if out.is_error
        && let Some(m) = block.as_object_mut()
    {
        m.insert("is_error", true);
    }
    block
}
