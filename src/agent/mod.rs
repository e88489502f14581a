//! The agent loop: ask the model, run the tools it asks for while it is
//! still speaking, feed the results back, until it stops asking.
//!
//! The loop never prints. It reports through [`Event`]s to whatever
//! frontend is attached, and ends with an [`Outcome`] that says why.
//! Counting: one *turn* is one model iteration; an API retry is another
//! attempt of the same turn.

pub(crate) mod assemble;
mod attempt;
pub(crate) mod compaction;
mod event;
pub(crate) mod executor;
pub mod hooks;
mod next;
pub mod pipeline;
pub(crate) mod recover;

pub(crate) mod subagent;

use std::rc::Rc;
use std::time::{Duration, Instant};

use smol::LocalExecutor;
use smol::future::FutureExt;

use crate::abort::{Abort, Reason};
use crate::json::{Map, Value};
use crate::model::RetryPolicy;
use crate::model::client::Client;
use crate::model::stream::{Assembler, Block, Usage};
use crate::obj;
use crate::report;
use crate::session::new_uuid;
use attempt::AttemptEnd;
use executor::StreamingExecutor;
use next::{
    Calls, Counters, MAX_LENGTH_RECOVERIES, MAX_STRUCTURED_RETRIES, Next, Now, Reply, Schema, Stop,
    StopHook, StopReason, Turn, Why,
};
use pipeline::Pipeline;

pub use event::{Event, record};

/// Returns once the pipeline or a sub-agent has something to report.
async fn news(relay: Option<&subagent::Relay>, reports: &report::Mailbox<report::Report>) {
    match relay {
        Some(r) => r.wait().or(reports.wait()).await,
        None => reports.wait().await,
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// The model finished without asking for more tools.
    Completed,
    /// The turn limit was reached (that turn's tools did run).
    MaxTurns,
    /// Interrupted by a signal or a controller.
    Aborted(Reason),
    /// The model could not be reached or its answer broke off.
    ModelError(String),
    /// A hook refused the prompt or stopped the session.
    Blocked(String),
    /// `--max-budget-usd` was reached (the cost so far, in dollars).
    BudgetExceeded(f64),
    /// `--max-output-tokens-total` was reached (the tokens written).
    OutputTokensExceeded(u64),
    /// `--json-schema`: the model did not give a valid StructuredOutput
    /// call in this many tries.
    StructuredOutputRetries(u32),
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub ending: Ending,
    /// The final answer's text (empty unless completed).
    pub result: String,
    pub num_turns: u32,
    pub duration: Duration,
    pub api_duration: Duration,
    pub usage: Usage,
    /// Estimated from list prices, per turn with that turn's model.
    pub cost_usd: f64,
    pub stop_reason: Option<String>,
    pub denials: Vec<Value>,
    /// `--json-schema`: the value the model gave through StructuredOutput.
    pub structured_output: Option<Value>,
    /// Tokens and cost per model (a fallback makes more than one).
    pub model_usage: Vec<ModelUse>,
    /// The HTTP status of the API error that ended the run, if one did.
    pub api_error_status: Option<u16>,
    /// From sending the first request to its first stream event.
    pub ttft: Option<Duration>,
    /// The interruption came while tools were running (not while the
    /// model was answering).
    pub aborted_in_tools: bool,
}

/// What one model used during a run.
#[derive(Debug, Clone)]
pub struct ModelUse {
    pub model: String,
    pub usage: Usage,
    pub cost_usd: f64,
}

pub struct Settings {
    pub model: String,
    pub max_tokens: u32,
    pub system: Vec<String>,
    pub max_turns: Option<u32>,
    pub retry: RetryPolicy,
    /// Tried in order when the model is overloaded or unknown.
    pub fallback_models: Vec<String>,
    pub max_budget_usd: Option<f64>,
    /// `--max-output-tokens-total`: what the run's models may write.
    pub max_output_tokens: Option<u64>,
    /// `--max-duration`: when the run is stopped, wherever it is.
    pub deadline: Option<Instant>,
    /// The model's context window in tokens.
    pub context_window: u64,
    /// With fallback models: overloaded answers in a row before switching.
    pub fallback_after: u32,
    /// `--json-schema`: the answer must come through StructuredOutput.
    pub structured: Option<Rc<crate::tools::structured::Structured>>,
    /// What the model is asked to think (sub-agents think as their parent).
    pub thinking: crate::model::thinking::Thinking,
    /// Tool calls written as text are made calls (local servers).
    pub recover_calls: bool,
    /// The server refuses `tools` in a request: they are described in the
    /// system prompt instead (and calls read from the text). Set when a
    /// server's refusal is seen, or known from `doctor --bench`.
    pub tools_as_text: bool,
}

pub struct Agent<'ex> {
    ex: &'ex LocalExecutor<'static>,
    client: Client,
    settings: Settings,
    pipeline: Rc<Pipeline>,
    abort: Abort,
    /// The conversation in API shape.
    messages: Vec<Value>,
    context: compaction::ContextState,
}

impl<'ex> Agent<'ex> {
    /// An agent over `messages` (empty for a new conversation).
    pub fn new(
        ex: &'ex LocalExecutor<'static>,
        client: Client,
        settings: Settings,
        pipeline: Rc<Pipeline>,
        abort: Abort,
        messages: Vec<Value>,
    ) -> Self {
        Agent {
            ex,
            client,
            settings,
            pipeline,
            abort,
            messages,
            context: Default::default(),
        }
    }

    pub fn pipeline(&self) -> &Rc<Pipeline> {
        &self.pipeline
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Interrupts the running turn; reset before the next.
    pub fn abort(&self) -> &Abort {
        &self.abort
    }

    /// What interrupted the turn.
    fn abort_reason(&self) -> Reason {
        self.abort.reason().unwrap_or(Reason::Requested)
    }

    /// The ending of a turn something interrupted, with what did.
    fn aborted(&self) -> Ending {
        Ending::Aborted(self.abort_reason())
    }

    /// The conversation in API shape.
    pub fn messages(&self) -> &[Value] {
        &self.messages
    }

    /// Starts over from `messages` (`/clear`, `/resume`).
    pub fn replace_messages(&mut self, messages: Vec<Value>) {
        #[cfg(feature = "repl")]
        self.pipeline
            .ctx()
            .repl
            .boundary("the conversation was replaced (/clear or another session)");
        self.messages = messages;
    }

    /// The SDK's `set_max_thinking_tokens`: from the next request on.
    pub fn set_thinking(&mut self, mode: crate::model::thinking::Mode) {
        self.settings.thinking.mode = mode;
    }

    /// The model the next request goes to (`/model`, an SDK's set_model).
    pub fn set_model(&mut self, model: String) {
        self.settings.model = model;
    }

    /// The system prompt's parts for the next request.
    pub fn set_system(&mut self, system: Vec<String>) {
        self.settings.system = system;
    }

    /// Runs one user prompt to its end; the last event is `TurnEnded`.
    pub async fn run(&mut self, prompt: Value, sink: &mut dyn FnMut(Event<'_>)) -> Outcome {
        self.run_as(prompt, None, sink).await
    }

    /// The same, with the prompt's identity given by the caller (an SDK
    /// message's `uuid`) instead of made here.
    pub async fn run_as(
        &mut self,
        prompt: Value,
        id: Option<String>,
        sink: &mut dyn FnMut(Event<'_>),
    ) -> Outcome {
        let id = id.unwrap_or_else(new_uuid);
        // At the time limit the run is interrupted wherever it is (a
        // stream, a tool); the timer ends with the run.
        let _deadline = self.settings.deadline.map(|at| {
            let abort = self.abort.clone();
            self.ex.spawn(async move {
                smol::Timer::at(at).await;
                abort.trigger(Reason::TimeLimit);
            })
        });
        let outcome = self.run_prompt(prompt, &id, sink).await;
        self.drain(sink);
        sink(Event::TurnEnded(&outcome.ending));
        outcome
    }

    async fn run_prompt(
        &mut self,
        prompt: Value,
        id: &str,
        sink: &mut dyn FnMut(Event<'_>),
    ) -> Outcome {
        let started = Instant::now();
        let mut outcome = Outcome {
            ending: Ending::Completed,
            result: String::new(),
            num_turns: 0,
            duration: Duration::ZERO,
            api_duration: Duration::ZERO,
            usage: Usage::default(),
            cost_usd: 0.0,
            stop_reason: None,
            denials: Vec::new(),
            structured_output: None,
            model_usage: Vec::new(),
            api_error_status: None,
            ttft: None,
            aborted_in_tools: false,
        };
        if let Some(s) = &self.settings.structured {
            s.reset();
        }
        if let Some(custom) = compaction::compact_command(&prompt) {
            outcome.ending = self.compact_on_request(&custom, &mut outcome, sink).await;
            outcome.duration = started.elapsed();
            return outcome;
        }
        let mut prompt = prompt;
        // An MCP prompt's command becomes what the server gives for it;
        // the resources a prompt names (`@server:uri`) are attached.
        let text = prompt_text(&prompt);
        match self.pipeline.registry().expand(&text).await {
            Some(Ok(blocks)) => prompt = Value::Array(blocks),
            Some(Err(why)) => {
                outcome.ending = Ending::Blocked(why);
                outcome.duration = started.elapsed();
                return outcome;
            }
            None => {}
        }
        let attached = self.pipeline.registry().attach(&text).await;
        if !attached.is_empty() {
            let mut blocks = match prompt {
                Value::Array(b) => b,
                Value::String(s) => vec![obj! { "type" => "text", "text" => s }],
                _ => Vec::new(),
            };
            blocks.extend(attached);
            prompt = Value::Array(blocks);
        }
        let hooks = Rc::clone(self.pipeline.hooks());
        if hooks.wants("UserPromptSubmit", "") {
            let mut fields = Map::new();
            fields.insert("prompt", prompt_text(&prompt));
            let v = hooks.run("UserPromptSubmit", "", fields).await;
            self.pipeline.report(&v.notices);
            self.drain(sink);
            if let Some(reason) = v.block.or(v.stop) {
                outcome.ending =
                    Ending::Blocked(format!("The prompt was blocked by a hook: {reason}"));
                outcome.duration = started.elapsed();
                return outcome;
            }
            if let Value::Array(blocks) = &mut prompt {
                for c in v.context {
                    blocks.push(obj! { "type" => "text", "text" => c });
                }
            }
        }
        let message = obj! { "role" => "user", "content" => prompt };
        sink(Event::Prompt {
            id,
            message: &message,
        });
        push_message(&mut self.messages, message);
        outcome.ending = self.turns(&mut outcome, sink).await;
        // What the last tools spent (a turn that ended the run counts too).
        self.count_spend(&mut outcome);
        outcome.duration = started.elapsed();
        outcome.denials = self.pipeline.denials();
        outcome.structured_output = self.settings.structured.as_ref().and_then(|s| s.value());
        outcome
    }

    /// Turns until the run ends: ask the model, let [`next::next`] decide
    /// from what came back, act, and ask again or stop.
    async fn turns(&mut self, outcome: &mut Outcome, sink: &mut dyn FnMut(Event<'_>)) -> Ending {
        let mut count = Counters::new(self.settings.max_turns, &self.settings.fallback_models);
        let mut tools = self.pipeline.registry().definitions();
        let limits = next::Limits {
            usd: self.settings.max_budget_usd,
            output_tokens: self.settings.max_output_tokens,
        };
        loop {
            self.count_spend(outcome);
            let used = next::Used {
                usd: outcome.cost_usd,
                output_tokens: outcome
                    .model_usage
                    .iter()
                    .map(|m| m.usage.output_tokens)
                    .sum(),
                past_deadline: self
                    .settings
                    .deadline
                    .is_some_and(|at| Instant::now() >= at),
            };
            if let Some(stop) = next::before_asking(self.abort.reason(), used, limits) {
                return self.ending(stop, outcome);
            }
            self.drain(sink);
            self.deliver_notifications(sink);
            count.turns += 1;
            outcome.num_turns = count.turns;
            // Only a changing catalog (MCP servers) is asked again each
            // iteration; the built-in definitions are built once per run.
            if self.pipeline.registry().is_dynamic() {
                self.pipeline.registry().refresh().await;
                tools = self.pipeline.registry().definitions();
            }
            let body = match self.govern(&tools, outcome, sink).await {
                Ok(body) => body,
                Err(ending) => return ending,
            };
            let can_fall_back = !count.fallbacks.is_empty();
            let (asm, mut exec, mut turn) = self.ask(&body, can_fall_back, outcome, sink).await;
            loop {
                match next::next(&turn, &self.now(), &count) {
                    Next::RunTools => {
                        let interrupted = match exec.take() {
                            Some(exec) => self.finish_tools(exec, sink).await,
                            None => false,
                        };
                        turn.calls = Calls::Ran {
                            interrupted: interrupted.then(|| self.abort_reason()),
                        };
                    }
                    Next::AskStopHook { again } => {
                        turn.stop_hook = self.ask_stop_hook(again, sink).await;
                    }
                    Next::FallBack(model) => {
                        if let Reply::Failed(error) = &turn.reply {
                            sink(Event::FallbackModel {
                                from: &self.settings.model,
                                to: &model,
                                error,
                            });
                        }
                        self.settings.model = model;
                        count.fell_back();
                        outcome.num_turns = count.turns;
                        break;
                    }
                    Next::Continue(why) => {
                        self.go_on(&why, sink).await;
                        count.went_on(&why);
                        break;
                    }
                    Next::Stop(stop) => {
                        if let Some(exec) = exec.take() {
                            self.abandon(exec, &stop, sink).await;
                        }
                        if stop.keeps_answer() {
                            outcome.result = final_text(&asm);
                        }
                        return self.ending(stop, outcome);
                    }
                }
            }
        }
    }

    /// Sends one request (with its retries), counts what it cost and
    /// records the answer if there is one.
    async fn ask(
        &mut self,
        body: &str,
        can_fall_back: bool,
        outcome: &mut Outcome,
        sink: &mut dyn FnMut(Event<'_>),
    ) -> (Assembler, Option<StreamingExecutor<'ex>>, Turn) {
        let mut exec = StreamingExecutor::new(self.ex, Rc::clone(&self.pipeline));
        let (mut asm, mut end) = self
            .attempts(body, Some(&mut exec), can_fall_back, outcome, sink)
            .await;
        if self.describe_tools_after_refusal(&end, &asm, sink) {
            // Asked again at once, with the tools in the prompt.
            let body = self.request_body(&self.pipeline.registry().definitions());
            exec = StreamingExecutor::new(self.ex, Rc::clone(&self.pipeline));
            (asm, end) = self
                .attempts(&body, Some(&mut exec), can_fall_back, outcome, sink)
                .await;
        }
        if self.settings.recover_calls && matches!(end, AttemptEnd::Done) && exec.is_empty() {
            self.recover_calls(&mut asm, &mut exec);
        }
        outcome.usage.add(&asm.usage);
        let cost = crate::model::price::cost(&self.settings.model, &asm.usage);
        outcome.cost_usd += cost;
        self.pipeline.ctx().spend.set_counted(outcome.cost_usd);
        note_model_use(outcome, &self.settings.model, &asm.usage, cost);
        outcome.stop_reason = asm.stop_reason.clone();
        if asm.has_blocks() {
            sink(Event::RequestUsage(&asm.usage));
        }
        let reply = match end {
            AttemptEnd::Done => Reply::Done,
            AttemptEnd::Failed(e) => Reply::Failed(e),
            AttemptEnd::Aborted => Reply::Aborted(self.abort_reason()),
        };
        // A failure before any block left nothing to record, and no
        // tool_use that needs answering.
        if asm.has_blocks() || matches!(reply, Reply::Done) {
            let message = asm.message();
            sink(Event::Assistant {
                id: &new_uuid(),
                message: &message,
            });
            // After a `pause_turn` the answer goes on in a second message
            // of the same turn: one assistant message in the history.
            push_message(&mut self.messages, message);
            let u = &asm.usage;
            self.context.note_usage(
                u.input_tokens
                    + u.cache_read_input_tokens
                    + u.cache_creation_input_tokens
                    + u.output_tokens,
                self.messages.len(),
            );
        }
        let turn = Turn {
            reply,
            has_blocks: asm.has_blocks(),
            stop_reason: StopReason::from_wire(asm.stop_reason.as_deref()),
            calls: if exec.is_empty() {
                Calls::None
            } else {
                Calls::Pending
            },
            called_structured: asm.blocks().any(
                |b| matches!(b, Block::ToolUse(c) if c.name == crate::tools::structured::NAME),
            ),
            stop_hook: StopHook::NotAsked,
        };
        (asm, Some(exec), turn)
    }

    /// Whether a failed request was a chat completions server refusing
    /// `tools`: if so, this agent describes them in the system prompt and
    /// reads calls from the text from now on, and says so. Only those
    /// servers: the Messages API takes tools from every model, and an
    /// error of its that names tools is a bad request, not a refusal.
    fn describe_tools_after_refusal(
        &mut self,
        end: &AttemptEnd,
        asm: &Assembler,
        sink: &mut dyn FnMut(Event<'_>),
    ) -> bool {
        let AttemptEnd::Failed(e) = end else {
            return false;
        };
        if self.client.provider() != crate::model::Provider::OpenAi
            || !e.refuses_tools()
            || self.settings.tools_as_text
            || asm.has_blocks()
        {
            return false;
        }
        sink(Event::Report(&crate::report::Report::notice(
            crate::report::Level::Warning,
            format!(
                "the server takes no tools in a request ({e}); describing them in the system prompt instead"
            ),
        )));
        self.settings.tools_as_text = true;
        self.settings.recover_calls = true;
        true
    }

    /// Tool calls the model wrote as text, made calls (see `recover`):
    /// they start like native ones, through the same pipeline.
    fn recover_calls(&self, asm: &mut Assembler, exec: &mut StreamingExecutor<'ex>) {
        let registry = self.pipeline.registry();
        let schema = |name: &str| {
            registry
                .get(name)
                .map(|t| std::borrow::Cow::Owned(t.input_schema().into_owned()))
        };
        let Some(found) = recover::recover(&asm.text(), schema) else {
            return;
        };
        for call in &found.calls {
            exec.add(call.clone());
        }
        asm.make_calls(found.text, found.calls);
    }

    /// What the session holds that the next step depends on.
    fn now(&self) -> Now {
        let schema = match self.settings.structured.as_ref().filter(|s| s.wanted()) {
            None => Schema::NotWanted,
            Some(s) if s.value().is_some() => Schema::Answered,
            Some(_) => Schema::Unanswered,
        };
        Now {
            stop_hooks: self.pipeline.hooks().wants("Stop", ""),
            background: self
                .background()
                .is_some_and(|bg| bg.running() > 0 || bg.has_news()),
            schema,
        }
    }

    /// Runs the Stop hooks; `again` tells them they sent the model back before.
    async fn ask_stop_hook(&mut self, again: bool, sink: &mut dyn FnMut(Event<'_>)) -> StopHook {
        let mut fields = Map::new();
        fields.insert("stop_hook_active", again);
        let v = self.pipeline.hooks().run("Stop", "", fields).await;
        self.pipeline.report(&v.notices);
        self.drain(sink);
        match v.block {
            Some(reason) => StopHook::Blocked(reason),
            None => StopHook::Passed,
        }
    }

    /// What the model gets before it is asked again, for `why`.
    async fn go_on(&mut self, why: &Why, sink: &mut dyn FnMut(Event<'_>)) {
        let text = match why {
            Why::ToolResults { .. } | Why::Paused => return,
            Why::Background => return self.wait_for_background(sink).await,
            Why::OutputLimit => CONTINUE_AFTER_LIMIT,
            Why::StopHook(reason) => reason.as_str(),
            Why::Structured => STRUCTURED_REMINDER,
        };
        let message =
            obj! { "role" => "user", "content" => vec![obj! { "type" => "text", "text" => text }] };
        sink(Event::Prompt {
            id: &new_uuid(),
            message: &message,
        });
        self.messages.push(message);
    }

    /// Waits until a background agent finishes (at once if one has) or
    /// the run is interrupted, which the next turn's check then sees.
    async fn wait_for_background(&mut self, sink: &mut dyn FnMut(Event<'_>)) {
        let Some(bg) = self.background() else {
            return;
        };
        let abort = self.abort.clone();
        let relay = self.relay();
        let reports = Rc::clone(self.pipeline.reports());
        loop {
            enum Wake {
                Finished,
                Relay,
                Abort,
            }
            let wake = async {
                bg.wait().await;
                Wake::Finished
            }
            .or(async {
                news(relay.as_deref(), &reports).await;
                Wake::Relay
            })
            .or(async {
                abort.wait().await;
                Wake::Abort
            })
            .await;
            match wake {
                Wake::Finished | Wake::Abort => return,
                Wake::Relay => self.drain(sink),
            }
        }
    }

    /// A run that stops with tool calls in the record still answers each
    /// of them: the ones not started are reported as not run.
    async fn abandon(
        &mut self,
        mut exec: StreamingExecutor<'ex>,
        stop: &Stop,
        sink: &mut dyn FnMut(Event<'_>),
    ) {
        if exec.is_empty() {
            return;
        }
        exec.stop_waiting(match stop {
            Stop::Aborted { .. } => "Interrupted by the user before it ran",
            _ => "Not run: the model's response was cut off",
        });
        self.finish_tools(exec, sink).await;
    }

    /// The run's ending for `stop`, with what the outcome reports of it.
    fn ending(&self, stop: Stop, outcome: &mut Outcome) -> Ending {
        match stop {
            Stop::Completed => Ending::Completed,
            Stop::CutOff => Ending::ModelError(format!(
                "the answer was still cut off by the output limit ({} tokens) after {MAX_LENGTH_RECOVERIES} continuations",
                self.settings.max_tokens
            )),
            Stop::MaxTurns => Ending::MaxTurns,
            Stop::Budget(spent) => Ending::BudgetExceeded(spent),
            Stop::OutputTokens(written) => Ending::OutputTokensExceeded(written),
            Stop::Aborted { reason, in_tools } => {
                if in_tools {
                    outcome.aborted_in_tools = true;
                }
                Ending::Aborted(reason)
            }
            Stop::Failed(e) => {
                outcome.api_error_status = e.status();
                Ending::ModelError(e.to_string())
            }
            Stop::StructuredRetries => Ending::StructuredOutputRetries(MAX_STRUCTURED_RETRIES),
        }
    }

    /// Waits for the turn's tools (answering all of them if interrupted)
    /// and records the results. Returns true if an abort happened.
    async fn finish_tools(
        &mut self,
        mut exec: StreamingExecutor<'ex>,
        sink: &mut dyn FnMut(Event<'_>),
    ) -> bool {
        if exec.is_empty() {
            return self.abort.is_triggered();
        }
        let abort = self.abort.clone();
        let watcher = async {
            abort.wait().await;
        };
        // Let the tools run; on abort, stop anything not started. Running
        // tools watch the same token and end promptly.
        let mut interrupted = self.abort.is_triggered();
        if interrupted {
            exec.stop_waiting("Interrupted by the user before it ran");
        } else {
            let relay = self.relay();
            let reports = Rc::clone(self.pipeline.reports());
            let mut watcher = Box::pin(watcher);
            loop {
                enum Wake {
                    Done,
                    Relay,
                    Abort,
                }
                if exec.all_done() {
                    break;
                }
                let wake = async {
                    exec.next_done().await;
                    Wake::Done
                }
                .or(async {
                    news(relay.as_deref(), &reports).await;
                    Wake::Relay
                })
                .or(async {
                    (&mut watcher).await;
                    Wake::Abort
                })
                .await;
                match wake {
                    Wake::Done => {}
                    Wake::Relay => self.drain(sink),
                    Wake::Abort => {
                        interrupted = true;
                        break;
                    }
                }
            }
            self.drain(sink);
            if interrupted {
                exec.stop_waiting("Interrupted by the user before it ran");
            }
        }
        let results = exec.drain().await;
        let ids: Vec<String> = results.iter().map(|_| new_uuid()).collect();
        let message = obj! { "role" => "user", "content" => results };
        sink(Event::ToolResults {
            ids: &ids,
            message: &message,
        });
        self.messages.push(message);
        #[cfg(feature = "repl")]
        for (calls, results) in self.pipeline.ctx().repl.take_made() {
            sink(Event::Virtual {
                ids: [&new_uuid(), &new_uuid()],
                calls: &calls,
                results: &results,
            });
        }
        interrupted
    }
}

impl Agent<'_> {
    /// Counts what tools spent on models (WebFetch's side questions,
    /// sub-agents) into the session's cost and per-model usage.
    fn count_spend(&self, outcome: &mut Outcome) {
        for s in self.pipeline.ctx().spend.take() {
            outcome.cost_usd += s.cost_usd;
            note_model_use(outcome, &s.model, &s.usage, s.cost_usd);
        }
        // A server's sampling request checks the budget against this.
        self.pipeline.ctx().spend.set_counted(outcome.cost_usd);
    }

    fn relay(&self) -> Option<Rc<subagent::Relay>> {
        self.pipeline.subagents().map(|h| Rc::clone(&h.relay))
    }

    /// Passes on what the pipeline and sub-agents reported since the
    /// last look.
    fn drain(&self, sink: &mut dyn FnMut(Event<'_>)) {
        for r in self.pipeline.reports().take() {
            sink(Event::Report(&r));
        }
        if let Some(relay) = self.relay() {
            for r in relay.take() {
                sink(Event::Relayed(&r));
            }
        }
    }

    fn background(&self) -> Option<Rc<subagent::Background>> {
        self.pipeline.subagents().map(|h| Rc::clone(&h.background))
    }

    /// Results of background agents that finished since the last look
    /// become a user message the model sees on this iteration.
    fn deliver_notifications(&mut self, sink: &mut dyn FnMut(Event<'_>)) {
        let mut notices = self.background().map(|bg| bg.take()).unwrap_or_default();
        // Background shells that ended on their own since the last look.
        notices.extend(self.pipeline.ctx().shells.take_news());
        // The rules of plan mode, once each time it begins.
        if self.pipeline.plan_mode_begins() {
            notices.push(PLAN_MODE_NOTE.to_string());
        }
        // Resources the user attached that changed since.
        notices.extend(self.pipeline.registry().news());
        if let Some(host) = self.pipeline.subagents() {
            for m in host.inbox.borrow_mut().drain(..) {
                notices.push(format!(
                    "<message-from-parent>\n{m}\n</message-from-parent>"
                ));
            }
        }
        if notices.is_empty() {
            return;
        }
        let blocks: Vec<Value> = notices
            .into_iter()
            .map(|n| obj! { "type" => "text", "text" => n })
            .collect();
        let message = obj! { "role" => "user", "content" => blocks };
        sink(Event::Prompt {
            id: &new_uuid(),
            message: &message,
        });
        push_message(&mut self.messages, message);
    }
}

/// What the model is told when plan mode begins.
pub const PLAN_MODE_NOTE: &str = "<system-reminder>Plan mode is on: research and read \
    as much as you need, but change nothing — edits, writes and commands that change \
    anything are refused. When the plan for a change is ready, present it with \
    ExitPlanMode, which asks the user to approve it and leave plan mode. A question \
    that needs no change you simply answer.</system-reminder>";

/// Appends a message, merging it into the last one when both have the
/// same role (a resumed session may end with tool results, and the API
/// wants user and assistant to alternate).
pub fn push_message(messages: &mut Vec<Value>, message: Value) {
    let same_role = messages
        .last()
        .is_some_and(|m| m.str_field("role") == message.str_field("role"));
    if !same_role {
        messages.push(message);
        return;
    }
    let as_blocks = |v: Option<&Value>| -> Vec<Value> {
        match v {
            Some(Value::Array(b)) => b.clone(),
            Some(Value::String(t)) => vec![obj! { "type" => "text", "text" => t.as_str() }],
            _ => Vec::new(),
        }
    };
    let extra = as_blocks(message.get("content"));
    if let Some(Value::Object(last)) = messages.last_mut() {
        let mut blocks = as_blocks(last.get("content"));
        blocks.extend(extra);
        last.insert("content", blocks);
    }
}

const CONTINUE_AFTER_LIMIT: &str = "Your answer was cut off by the output token limit. \
Continue exactly where it stopped: no apology, no recap.";

const STRUCTURED_REMINDER: &str = "You have not given your answer through the StructuredOutput \
tool. Call StructuredOutput now, once, with an input that matches its schema.";

fn note_model_use(outcome: &mut Outcome, model: &str, usage: &Usage, cost: f64) {
    match outcome.model_usage.iter_mut().find(|m| m.model == model) {
        Some(m) => {
            m.usage.add(usage);
            m.cost_usd += cost;
        }
        None => outcome.model_usage.push(ModelUse {
            model: model.to_string(),
            usage: *usage,
            cost_usd: cost,
        }),
    }
}

fn prompt_text(prompt: &Value) -> String {
    match prompt {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.str_field("text"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn final_text(asm: &Assembler) -> String {
    let mut text = String::new();
    for block in asm.blocks() {
        if let Block::Text(t) = block {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(t);
        }
    }
    text
}
