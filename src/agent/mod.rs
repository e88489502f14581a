//! The agent loop: ask the model, run the tools it asks for while it is
//! still speaking, feed the results back, until it stops asking.
//!
//! The loop never prints. It reports through [`Event`]s to whatever
//! frontend is attached, and ends with an [`Outcome`] that says why.
//! Counting: one *turn* is one model iteration; an API retry is another
//! attempt of the same turn.

mod attempt;
pub(crate) mod compaction;
mod event;
pub(crate) mod executor;
pub mod hooks;
pub mod pipeline;

pub(crate) mod subagent;

use std::rc::Rc;
use std::time::{Duration, Instant};

use smol::LocalExecutor;
use smol::future::FutureExt;

use crate::abort::{Abort, Reason};
use crate::json::{Map, Value};
use crate::model::client::Client;
use crate::model::sse::{Flow, SseParser};
use crate::model::stream::{Assembler, Block, StreamError, Update, Usage};
use crate::model::{ApiError, Detail, RetryPolicy};
use crate::obj;
use crate::report;
use crate::session::new_uuid;
use executor::StreamingExecutor;
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

/// How often a model that should answer through StructuredOutput is sent
/// back to do so.
const MAX_STRUCTURED_RETRIES: u32 = 5;

pub struct Settings {
    pub model: String,
    pub max_tokens: u32,
    pub system: Vec<String>,
    pub max_turns: Option<u32>,
    pub retry: RetryPolicy,
    /// Tried in order when the model is overloaded or unknown.
    pub fallback_models: Vec<String>,
    pub max_budget_usd: Option<f64>,
    /// The model's context window in tokens.
    pub context_window: u64,
    /// With fallback models: overloaded answers in a row before switching.
    pub fallback_after: u32,
    /// `--json-schema`: the answer must come through StructuredOutput.
    pub structured: Option<Rc<crate::tools::structured::Structured>>,
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

/// How one streamed attempt ended.
enum AttemptEnd {
    Done,
    Failed(ApiError),
    Aborted,
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

    /// The ending of a turn something interrupted, with what did.
    fn aborted(&self) -> Ending {
        Ending::Aborted(self.abort.reason().unwrap_or(Reason::Requested))
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

    async fn turns(&mut self, outcome: &mut Outcome, sink: &mut dyn FnMut(Event<'_>)) -> Ending {
        let mut stop_rounds = 0;
        let mut tools = self.pipeline.registry().definitions();
        let mut length_recoveries = 0;
        let mut pauses = 0;
        let mut fallbacks = self.settings.fallback_models.clone().into_iter();
        loop {
            self.count_spend(outcome);
            if let Some(reason) = self.abort.reason() {
                return Ending::Aborted(reason);
            }
            if let Some(budget) = self.settings.max_budget_usd
                && outcome.cost_usd >= budget
            {
                return Ending::BudgetExceeded(outcome.cost_usd);
            }
            self.drain(sink);
            self.deliver_notifications(sink);
            outcome.num_turns += 1;
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
            let mut exec = StreamingExecutor::new(self.ex, Rc::clone(&self.pipeline));
            let can_fall_back = fallbacks.len() > 0;
            let (asm, end) = self
                .attempts(&body, Some(&mut exec), can_fall_back, outcome, sink)
                .await;
            outcome.usage.add(&asm.usage);
            let cost = crate::model::price::cost(&self.settings.model, &asm.usage);
            outcome.cost_usd += cost;
            self.pipeline.ctx().spend.set_counted(outcome.cost_usd);
            note_model_use(outcome, &self.settings.model, &asm.usage, cost);
            outcome.stop_reason = asm.stop_reason.clone();
            if asm.has_blocks() {
                sink(Event::RequestUsage(&asm.usage));
            }

            if let AttemptEnd::Failed(e) = &end
                && !asm.has_blocks()
                && e.wants_fallback()
                && let Some(next) = fallbacks.next()
            {
                sink(Event::FallbackModel {
                    from: &self.settings.model,
                    to: &next,
                    error: e,
                });
                self.settings.model = next;
                outcome.num_turns -= 1; // the same turn, on another model
                continue;
            }

            let failure = match end {
                AttemptEnd::Done => None,
                AttemptEnd::Failed(e) => {
                    outcome.api_error_status = e.status();
                    Some(Ending::ModelError(e.to_string()))
                }
                AttemptEnd::Aborted => Some(self.aborted()),
            };
            if let Some(ending) = &failure
                && !asm.has_blocks()
            {
                // Nothing reached the record: no tool_use needs answering.
                return ending.clone();
            }

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

            if let Some(ending) = failure {
                // Every tool_use that made it into the record gets an answer.
                let reason = match ending {
                    Ending::Aborted(_) => "Interrupted by the user before it ran",
                    _ => "Not run: the model's response was cut off",
                };
                exec.stop_waiting(reason);
                self.finish_tools(exec, sink).await;
                return ending;
            }

            if exec.is_empty()
                && asm.stop_reason.as_deref() == Some("max_tokens")
                && length_recoveries < MAX_LENGTH_RECOVERIES
                && self
                    .settings
                    .max_turns
                    .is_none_or(|max| outcome.num_turns < max)
            {
                // Cut off by the output limit mid-answer: ask it to go on
                // rather than hand back half a sentence.
                length_recoveries += 1;
                let message = obj! { "role" => "user", "content" => vec![obj! { "type" => "text", "text" => CONTINUE_AFTER_LIMIT }] };
                sink(Event::Prompt {
                    id: &new_uuid(),
                    message: &message,
                });
                self.messages.push(message);
                continue;
            }

            if exec.is_empty()
                && asm.stop_reason.as_deref() == Some("pause_turn")
                && pauses < MAX_PAUSES
                && self
                    .settings
                    .max_turns
                    .is_none_or(|max| outcome.num_turns < max)
            {
                // The provider paused a long turn of its own tools (web
                // search): sent back as it is, the model goes on.
                pauses += 1;
                continue;
            }

            if exec.is_empty() {
                // A Stop hook may send the model back to work, a few times at most.
                if stop_rounds < MAX_STOP_ROUNDS
                    && self.pipeline.hooks().wants("Stop", "")
                    && self
                        .settings
                        .max_turns
                        .is_none_or(|max| outcome.num_turns < max)
                {
                    let mut fields = Map::new();
                    fields.insert("stop_hook_active", stop_rounds > 0);
                    let v = self.pipeline.hooks().run("Stop", "", fields).await;
                    self.pipeline.report(&v.notices);
                    self.drain(sink);
                    if let Some(reason) = v.block {
                        stop_rounds += 1;
                        let message = obj! { "role" => "user", "content" => vec![obj! { "type" => "text", "text" => reason }] };
                        sink(Event::Prompt {
                            id: &new_uuid(),
                            message: &message,
                        });
                        self.messages.push(message);
                        continue;
                    }
                }
                // Background agents still running, or finished while this
                // turn ran: their results are part of this answer, so wait
                // for the next one (at once if it is in).
                if let Some(bg) = self.background()
                    && (bg.running() > 0 || bg.has_news())
                    && self
                        .settings
                        .max_turns
                        .is_none_or(|max| outcome.num_turns < max)
                {
                    let abort = self.abort.clone();
                    let relay = self.relay();
                    let reports = Rc::clone(self.pipeline.reports());
                    let woke = loop {
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
                            Wake::Finished => break true,
                            Wake::Relay => self.drain(sink),
                            Wake::Abort => break false,
                        }
                    };
                    if !woke {
                        return self.aborted();
                    }
                    continue;
                }
                if let Some(s) = self.settings.structured.clone().filter(|s| s.wanted())
                    && s.value().is_none()
                {
                    // The answer must come through StructuredOutput.
                    let misses = s.miss();
                    if misses > MAX_STRUCTURED_RETRIES {
                        return Ending::StructuredOutputRetries(MAX_STRUCTURED_RETRIES);
                    }
                    let message = obj! { "role" => "user", "content" => vec![obj! { "type" => "text", "text" => STRUCTURED_REMINDER }] };
                    sink(Event::Prompt {
                        id: &new_uuid(),
                        message: &message,
                    });
                    self.messages.push(message);
                    continue;
                }
                outcome.result = final_text(&asm);
                if asm.stop_reason.as_deref() == Some("max_tokens") {
                    return Ending::ModelError(format!(
                        "the answer was still cut off by the output limit ({} tokens) after {MAX_LENGTH_RECOVERIES} continuations",
                        self.settings.max_tokens
                    ));
                }
                return Ending::Completed;
            }

            let aborted = self.finish_tools(exec, sink).await;
            if aborted {
                outcome.aborted_in_tools = true;
                return self.aborted();
            }
            if let Some(s) = self.settings.structured.clone().filter(|s| s.wanted()) {
                let called = asm.blocks().any(
                    |b| matches!(b, Block::ToolUse(c) if c.name == crate::tools::structured::NAME),
                );
                if s.value().is_some() {
                    // The answer is in: nothing more is needed from the model.
                    outcome.result = final_text(&asm);
                    return Ending::Completed;
                }
                if called && s.miss() > MAX_STRUCTURED_RETRIES {
                    return Ending::StructuredOutputRetries(MAX_STRUCTURED_RETRIES);
                }
            }
            if self
                .settings
                .max_turns
                .is_some_and(|max| outcome.num_turns >= max)
            {
                return Ending::MaxTurns;
            }
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

/// How often a turn the provider paused (`pause_turn`) is resumed.
const MAX_PAUSES: u32 = 5;

/// How often an answer cut off by `max_tokens` is asked to go on.
const MAX_LENGTH_RECOVERIES: u32 = 3;

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

/// How many times Stop hooks may send the model back before tern stops anyway.
const MAX_STOP_ROUNDS: u32 = 5;

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
