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
    /// Holding the task keeps it alive; dropping it would cancel the call.
    Running {
        _task: smol::Task<()>,
    },
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
                    entry.state = State::Running { _task: task };
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
            .filter(|e| matches!(e.state, State::Running { .. }))
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
    let content = if out.images.is_empty() {
        Value::from(out.content.as_str())
    } else {
        let mut blocks = vec![crate::obj! { "type" => "text", "text" => out.content.as_str() }];
        for (media_type, data) in &out.images {
            // Images are image blocks; a PDF is a document block.
            let kind = if media_type.starts_with("image/") {
                "image"
            } else {
                "document"
            };
            blocks.push(crate::obj! {
                "type" => kind,
                "source" => crate::obj! { "type" => "base64", "media_type" => media_type.as_str(), "data" => data.as_str() },
            });
        }
        Value::Array(blocks)
    };
    let mut block = crate::obj! {
        "type" => "tool_result",
        "tool_use_id" => id,
        "content" => content,
    };
    if out.is_error
        && let Some(m) = block.as_object_mut()
    {
        m.insert("is_error", true);
    }
    block
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::rc::Rc;

    use super::*;
    use crate::abort::Abort;
    use crate::json::Value;
    use crate::obj;
    use crate::policy::Permit;
    use crate::policy::{Mode, Policy};
    use crate::tools::{Kind, LocalFuture, Registry, Tool, ToolContext};

    type Log = Rc<RefCell<Vec<String>>>;

    /// A tool whose calls block until the test opens their gate.
    struct Gated {
        name: &'static str,
        safe: bool,
        log: Log,
        gates: Rc<RefCell<HashMap<String, Receiver<()>>>>,
    }

    impl Tool for Gated {
        fn name(&self) -> &str {
            self.name
        }
        fn description(&self) -> &str {
            "test"
        }
        fn input_schema(&self) -> std::borrow::Cow<'_, Value> {
            std::borrow::Cow::Owned(obj! { "type" => "object" })
        }
        fn kind(&self) -> Kind {
            Kind::Other
        }
        fn is_read_only(&self, _: &Value) -> bool {
            self.safe
        }
        fn call<'a>(
            &'a self,
            input: Value,
            _: &'a ToolContext,
            _: &'a Permit,
        ) -> LocalFuture<'a, ToolOutput> {
            Box::pin(async move {
                let gate = input.str_field("gate").unwrap_or("").to_string();
                self.log.borrow_mut().push(format!("start {gate}"));
                let rx = self.gates.borrow_mut().remove(&gate);
                if let Some(rx) = rx {
                    let _ = rx.recv().await;
                }
                self.log.borrow_mut().push(format!("end {gate}"));
                ToolOutput::ok(gate)
            })
        }
    }

    fn bypass_pipeline(tools: Vec<Rc<dyn Tool>>) -> Rc<Pipeline> {
        Rc::new(Pipeline::new(
            Registry::new(tools),
            Policy::new(Mode::BypassPermissions, vec![], &std::env::temp_dir(), &[]),
            ToolContext::new(std::env::temp_dir(), std::env::temp_dir(), Abort::new()),
            None,
            Rc::new(crate::agent::hooks::Hooks::none()),
        ))
    }

    async fn settle() {
        for _ in 0..20 {
            smol::future::yield_now().await;
        }
    }

    #[test]
    fn unsafe_calls_are_barriers_and_results_keep_call_order() {
        let ex = LocalExecutor::new();
        let log: Log = Rc::default();
        let gates: Rc<RefCell<HashMap<String, Receiver<()>>>> = Rc::default();
        let mut openers = HashMap::new();
        for g in ["s1", "s2", "u1", "s3"] {
            let (tx, rx) = smol::channel::bounded::<()>(1);
            gates.borrow_mut().insert(g.to_string(), rx);
            openers.insert(g, tx);
        }
        let tool = |name, safe| -> Rc<dyn Tool> {
            Rc::new(Gated {
                name,
                safe,
                log: Rc::clone(&log),
                gates: Rc::clone(&gates),
            })
        };
        let pipeline = bypass_pipeline(vec![tool("Safe", true), tool("Unsafe", false)]);
        let call = |id: &str, name: &str| ToolUse {
            id: id.into(),
            name: name.into(),
            input: Ok(obj! { "gate" => id }),
        };
        let snapshot = |log: &Log| log.borrow().join(", ");

        let results = smol::block_on(ex.run(async {
            let mut exec = StreamingExecutor::new(&ex, Rc::clone(&pipeline));
            exec.add(call("s1", "Safe"));
            exec.add(call("s2", "Safe"));
            exec.add(call("u1", "Unsafe"));
            exec.add(call("s3", "Safe"));
            settle().await;
            assert_eq!(
                snapshot(&log),
                "start s1, start s2",
                "safe calls overlap; the unsafe one waits"
            );

            openers["s2"].close();
            exec.next_done().await;
            settle().await;
            assert_eq!(
                snapshot(&log),
                "start s1, start s2, end s2",
                "u1 still waits for s1"
            );

            openers["s1"].close();
            exec.next_done().await;
            settle().await;
            assert_eq!(
                snapshot(&log),
                "start s1, start s2, end s2, end s1, start u1",
                "s3 is held back by u1"
            );

            openers["u1"].close();
            exec.next_done().await;
            settle().await;
            assert!(snapshot(&log).ends_with("end u1, start s3"));
            openers["s3"].close();
            exec.drain().await
        }));
        let ids: Vec<&str> = results
            .iter()
            .filter_map(|r| r.str_field("tool_use_id"))
            .collect();
        assert_eq!(ids, ["s1", "s2", "u1", "s3"]);
    }

    #[test]
    fn stop_waiting_answers_unstarted_calls() {
        let ex = LocalExecutor::new();
        let log: Log = Rc::default();
        let gates: Rc<RefCell<HashMap<String, Receiver<()>>>> = Rc::default();
        let (tx, rx) = smol::channel::bounded::<()>(1);
        gates.borrow_mut().insert("u1".into(), rx);
        let unsafe_tool: Rc<dyn Tool> = Rc::new(Gated {
            name: "Unsafe",
            safe: false,
            log: Rc::clone(&log),
            gates,
        });
        let pipeline = bypass_pipeline(vec![unsafe_tool]);
        let results = smol::block_on(ex.run(async {
            let mut exec = StreamingExecutor::new(&ex, pipeline);
            for id in ["u1", "u2"] {
                exec.add(ToolUse {
                    id: id.into(),
                    name: "Unsafe".into(),
                    input: Ok(obj! { "gate" => id }),
                });
            }
            settle().await;
            exec.stop_waiting("not run");
            tx.close();
            exec.drain().await
        }));
        assert_eq!(log.borrow().join(", "), "start u1, end u1");
        assert!(results[0].get("is_error").is_none());
        assert_eq!(results[1].str_field("content"), Some("not run"));
        assert_eq!(
            results[1].get("is_error").and_then(Value::as_bool),
            Some(true)
        );
    }

    /// A tool that never answers, with a native timeout of 100 ms; `dropped`
    /// is set when its call is abandoned.
    struct Hangs {
        dropped: Rc<std::cell::Cell<u32>>,
    }

    struct Flag(Rc<std::cell::Cell<u32>>);
    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }

    impl Tool for Hangs {
        fn name(&self) -> &str {
            "Hangs"
        }
        fn description(&self) -> &str {
            "test"
        }
        fn input_schema(&self) -> std::borrow::Cow<'_, Value> {
            std::borrow::Cow::Owned(obj! { "type" => "object" })
        }
        fn kind(&self) -> Kind {
            Kind::Other
        }
        fn is_read_only(&self, _: &Value) -> bool {
            true
        }
        fn native_timeout(&self, _: &Value) -> Option<std::time::Duration> {
            Some(std::time::Duration::from_millis(100))
        }
        fn call<'a>(
            &'a self,
            _: Value,
            _: &'a ToolContext,
            _: &'a Permit,
        ) -> LocalFuture<'a, ToolOutput> {
            let flag = Flag(Rc::clone(&self.dropped));
            Box::pin(async move {
                let _flag = flag;
                smol::future::pending::<()>().await;
                ToolOutput::ok("never")
            })
        }
    }

    /// The REPL's watchdog: an inner call whose tool hangs past its native
    /// timeout is stopped at ceil(native × 1.5) + 5 s and abandoned; the
    /// same tool called by the model itself is not (the turn's interrupt
    /// is its bound there).
    #[test]
    fn a_hung_inner_call_is_stopped_by_the_watchdog_and_an_outer_one_is_not() {
        use crate::tools::InnerCalls;
        let dropped = Rc::new(std::cell::Cell::new(0));
        let pipeline = bypass_pipeline(vec![Rc::new(Hangs {
            dropped: Rc::clone(&dropped),
        })]);
        let started = std::time::Instant::now();
        let (inner, outer_pending) = smol::block_on(async {
            let outer = pipeline.run(ToolUse {
                id: "outer".into(),
                name: "Hangs".into(),
                input: Ok(obj! {}),
            });
            let outer_bounded = smol::future::or(async { Some(outer.await) }, async {
                smol::Timer::after(std::time::Duration::from_millis(5_800)).await;
                None
            });
            let inner = pipeline.run_inner("Hangs".into(), obj! {});
            smol::future::zip(inner, outer_bounded).await
        });
        let (_, out) = inner;
        assert!(out.is_error, "{}", out.content);
        assert!(
            out.content.contains("watchdog after 5150 ms") && out.content.contains("100 ms"),
            "{}",
            out.content
        );
        assert!(outer_pending.is_none(), "the outer call was not cut short");
        assert!(started.elapsed() >= std::time::Duration::from_millis(5_150));
        assert_eq!(dropped.get(), 2, "both abandoned calls were dropped");
    }

    #[test]
    fn the_watchdog_is_derived_from_the_native_timeout() {
        use std::time::Duration;
        let w = |ms| {
            super::super::pipeline::watchdog_for(Duration::from_millis(ms))
                .map(|(_, w)| w.as_millis())
        };
        assert_eq!(w(120_000), Some(185_000), "Bash's default");
        assert_eq!(w(10_000), Some(20_000), "the file tools'");
        assert_eq!(w(1), Some(5_002), "rounded up");
        assert_eq!(w(397_000), None, "600.5 s is not under the wall clock");
    }
}
