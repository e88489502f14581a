//! Keeping the conversation inside the model's window: measured before
//! every request, old tool results cleared first, then the history
//! replaced by a summary. The transcript keeps everything; only what is
//! sent shrinks.

use std::rc::Rc;

use super::{Agent, AttemptEnd, Ending, Event, Outcome, final_text, push_message};
use crate::context::{self, Thresholds, compact};
use crate::json::{Map, Value};
use crate::model::Provider;
use crate::model::request::{RequestParts, build};
use crate::obj;

/// What the loop remembers between requests about the window.
#[derive(Debug, Default)]
pub struct ContextState {
    /// Tokens the API reported for the last request and its answer, and
    /// how many messages there were then.
    api_tokens: Option<(u64, usize)>,
    /// Auto-compactions that failed in a row.
    failures: u32,
}

impl ContextState {
    pub fn note_usage(&mut self, tokens: u64, messages: usize) {
        if tokens > 0 {
            self.api_tokens = Some((tokens, messages));
        }
    }
}

impl Agent<'_> {
    fn thresholds(&self) -> Thresholds {
        Thresholds::for_window(
            self.settings.context_window,
            u64::from(self.settings.max_tokens),
        )
    }

    /// Tokens the next request will hold: the larger of the API's own
    /// count (plus what was added since) and a local estimate of `body`.
    pub(super) fn estimate(&self, body: &str) -> u64 {
        let local = context::estimate_request(body.len(), &self.messages);
        let from_api = self.context.api_tokens.map_or(0, |(tokens, at)| {
            let added = self.messages.get(at..).unwrap_or_default();
            let bytes: usize = added.iter().map(|m| m.to_json().len()).sum();
            tokens + context::estimate_request(bytes, added)
        });
        local.max(from_api)
    }

    pub(super) fn request_body(&self, tools: &[Value]) -> String {
        let described: Vec<String>;
        let (system, tools) = if self.settings.tools_as_text && !tools.is_empty() {
            described = self
                .settings
                .system
                .iter()
                .cloned()
                .chain([super::recover::describe(tools, &self.settings.model)])
                .collect();
            (&described[..], &[][..])
        } else {
            (&self.settings.system[..], tools)
        };
        self.encode(&RequestParts {
            model: &self.settings.model,
            max_tokens: self.settings.max_tokens,
            system,
            tools,
            messages: &self.messages,
            thinking: self.settings.thinking,
        })
    }

    /// The request in the wire format of the client's provider.
    pub(super) fn encode(&self, parts: &RequestParts<'_>) -> String {
        match self.client.provider() {
            Provider::Anthropic => build(parts),
            Provider::OpenAi => crate::model::openai::build(parts),
        }
    }

    /// Makes room before a request if the window is filling up. Returns
    /// the body to send, or the ending when even compaction cannot help.
    pub(super) async fn govern(
        &mut self,
        tools: &[Value],
        outcome: &mut Outcome,
        sink: &mut dyn FnMut(Event<'_>),
    ) -> Result<String, Ending> {
        let t = self.thresholds();
        let mut body = self.request_body(tools);
        // Over the API's byte or image limits: the oldest images and
        // documents go first (the transcript keeps them).
        let excess = body.len().saturating_sub(context::media::MAX_REQUEST_BYTES);
        if context::media::shed(&mut self.messages, excess) > 0 {
            self.context.api_tokens = None;
            body = self.request_body(tools);
        }
        let mut tokens = self.estimate(&body);
        if tokens < t.compact {
            return Ok(body);
        }
        let min_savings = context::MIN_MICRO_SAVINGS.min(t.window / 10);
        let saved = context::micro_compact(&mut self.messages, min_savings);
        if saved > 0 {
            sink(Event::MicroCompacted {
                saved_tokens: saved,
            });
            self.context.api_tokens = None;
            body = self.request_body(tools);
            tokens = self.estimate(&body);
        }
        let mut why_not = String::new();
        if tokens >= t.compact {
            if self.context.failures >= context::MAX_COMPACT_FAILURES {
                why_not = format!(
                    "automatic compaction is off after {} failures",
                    context::MAX_COMPACT_FAILURES
                );
            } else {
                match self.compact("auto", None, tokens, outcome, sink).await {
                    Ok(()) => {
                        self.context.failures = 0;
                        body = self.request_body(tools);
                        tokens = self.estimate(&body);
                    }
                    Err(Stopped::Aborted) => return Err(self.aborted()),
                    Err(Stopped::Failed(e)) => {
                        self.context.failures += 1;
                        why_not = format!("compaction failed: {e}");
                    }
                }
            }
        }
        if tokens >= t.blocked {
            return Err(Ending::Blocked(format!(
                "the conversation (~{tokens} tokens) does not fit the model's context window \
                 ({} tokens, {} kept for the answer){}",
                t.window,
                t.reserve,
                if why_not.is_empty() {
                    String::new()
                } else {
                    format!("; {why_not}")
                }
            )));
        }
        Ok(body)
    }

    /// Replaces the history with a summary written by the model.
    /// `Err(Stopped::Aborted)` when a signal or a controller interrupted
    /// it: that ends the run as an interruption, not as a failure.
    pub(super) async fn compact(
        &mut self,
        trigger: &str,
        custom: Option<&str>,
        pre_tokens: u64,
        outcome: &mut Outcome,
        sink: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), Stopped> {
        if self.messages.is_empty() {
            return Err(Stopped::Failed("there is nothing to compact yet".into()));
        }
        let hooks = Rc::clone(self.pipeline.hooks());
        if hooks.wants("PreCompact", trigger) {
            let mut fields = Map::new();
            fields.insert("trigger", trigger);
            fields.insert("custom_instructions", custom.unwrap_or_default());
            let v = hooks.run("PreCompact", trigger, fields).await;
            self.pipeline.report(&v.notices);
            if let Some(reason) = v.block.or(v.stop) {
                return Err(Stopped::Failed(format!(
                    "a PreCompact hook refused: {reason}"
                )));
            }
        }
        // A fresh prompt that has not been answered yet is carried over
        // word for word rather than summarised.
        let pending = self.messages.last().and_then(|m| {
            let blocks = m.get("content")?.as_array()?;
            let fresh = m.str_field("role") == Some("user")
                && blocks.iter().all(|b| b.str_field("type") == Some("text"));
            fresh.then(|| {
                blocks
                    .iter()
                    .filter_map(|b| b.str_field("text"))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        });
        let mut request = self.messages.clone();
        if pending.is_some() {
            request.pop();
        }
        if request.is_empty() {
            return Err(Stopped::Failed(
                "there is nothing before the latest prompt to compact".into(),
            ));
        }
        push_message(
            &mut request,
            obj! { "role" => "user", "content" => vec![obj! { "type" => "text", "text" => compact::instructions(custom) }] },
        );
        let system = [compact::SYSTEM.to_string()];
        let body = self.encode(&RequestParts {
            model: &self.settings.model,
            max_tokens: self.settings.max_tokens.min(20_000),
            system: &system,
            tools: &[],
            messages: &request,
            thinking: Default::default(),
        });
        let (asm, end) = self.attempts(&body, None, false, outcome, sink).await;
        outcome.usage.add(&asm.usage);
        let cost = crate::model::price::cost(&self.settings.model, &asm.usage);
        outcome.cost_usd += cost;
        super::note_model_use(outcome, &self.settings.model, &asm.usage, cost);
        match end {
            AttemptEnd::Done => {}
            AttemptEnd::Failed(e) => return Err(Stopped::Failed(e.to_string())),
            AttemptEnd::Aborted => return Err(Stopped::Aborted),
        }
        let summary = compact::extract(&final_text(&asm))
            .ok_or_else(|| Stopped::Failed("the summary came back empty".to_string()))?;
        self.messages = vec![context::summary_message(&summary, pending.as_deref())];
        self.context.api_tokens = None;
        // The REPL's context is bound to the conversation it served.
        #[cfg(feature = "repl")]
        self.pipeline
            .ctx()
            .repl
            .boundary("the conversation was compacted");
        sink(Event::Compacted {
            trigger,
            pre_tokens,
            boundary_id: &crate::session::new_uuid(),
            summary_id: &crate::session::new_uuid(),
            summary: &self.messages[0],
        });
        Ok(())
    }

    /// `/compact [instructions]`: compacts now, without a model turn.
    pub(super) async fn compact_on_request(
        &mut self,
        custom: &str,
        outcome: &mut Outcome,
        sink: &mut dyn FnMut(Event<'_>),
    ) -> Ending {
        let tools = self.pipeline.registry().definitions();
        let body = self.request_body(&tools);
        let before = self.estimate(&body);
        let custom = Some(custom.trim()).filter(|c| !c.is_empty());
        match self.compact("manual", custom, before, outcome, sink).await {
            Ok(()) => {
                let after = self.estimate(&self.request_body(&tools));
                outcome.result = format!("Compacted: ~{before} tokens down to ~{after}.");
                Ending::Completed
            }
            Err(Stopped::Aborted) => self.aborted(),
            Err(Stopped::Failed(e)) => Ending::ModelError(format!("compaction failed: {e}")),
        }
    }
}

/// Why a compaction did not happen.
pub(super) enum Stopped {
    /// A signal or a controller interrupted it.
    Aborted,
    /// It could not be done, and why.
    Failed(String),
}

/// Text of a prompt if it is a `/compact` command: the instructions after it.
pub fn compact_command(prompt: &Value) -> Option<String> {
    let text = super::prompt_text(prompt);
    let rest = text.trim_start().strip_prefix("/compact")?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim().to_string())
}
