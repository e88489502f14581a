//! The session's OpenTelemetry observer: one more consumer of the loop's
//! events (beside the transcript and the printer), turning them into the
//! metrics, events and spans Claude Code exports, under its names and
//! attributes (see docs/telemetry.md), and handing them to
//! `crate::telemetry`'s thread.
//!
//! Privacy: no prompt text (unless `OTEL_LOG_USER_PROMPTS=1`), no tool
//! input, no file content and no model output leaves through here; an
//! edit is measured (lines added and removed) and its text forgotten.
//!
//! What the events do not say is inferred, and documented as such: a
//! request's duration runs from when the loop was ready to ask (the
//! prompt, the tool results, a retry's wait) to its usage; a call that
//! was not asked about was decided by configuration, unless the pipeline
//! counted it among its denials.

use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::agent::pipeline::Pipeline;
use crate::agent::subagent::{MessageKind, Relayed};
use crate::agent::{Ending, Event, Outcome};
use crate::config::Runtime;
use crate::json::Value;
use crate::model::stream::Usage;
use crate::report::Report;
use crate::telemetry::{self, Attrs, Record, Span, Telemetry, Val, now_nanos};

/// A turn: one prompt and everything it led to (Claude Code's
/// interaction span).
struct Turn {
    trace: [u8; 16],
    span: [u8; 8],
    start: u64,
    prompt_length: Option<u64>,
}

/// A tool call between its start and its end.
struct Call {
    name: String,
    began: Instant,
    start: u64,
    asked: bool,
    decision: Option<(bool, &'static str)>,
    /// Lines added and removed, for the edit tools.
    lines: Option<(u64, u64)>,
    language: Option<&'static str>,
    /// Its span's id, chosen at the start: a sub-agent's spans (an Agent
    /// call's) hang under it.
    span: [u8; 8],
}

/// How a tool call ended, for its event and span.
struct Ended<'a> {
    name: &'a str,
    began: Instant,
    start: u64,
    /// Its span's id and the span it hangs under (the turn's when none).
    span: ([u8; 8], Option<[u8; 8]>),
    is_error: bool,
    summary: &'a str,
    decision: Option<(bool, &'static str)>,
    lines: Option<(u64, u64)>,
}

/// A sub-agent's tool call, from the message that made it to its result.
struct ChildCall {
    name: String,
    began: Instant,
    start: u64,
    span: [u8; 8],
    /// The span it hangs under: the Agent call that started its agent.
    parent: [u8; 8],
    lines: Option<(u64, u64)>,
}

pub(super) struct Observer {
    tele: Telemetry,
    session_id: String,
    model: String,
    pipeline: Rc<Pipeline>,
    turn: Option<Turn>,
    /// The run's first prompt is the person's; later ones are the loop's.
    prompt_pending: bool,
    /// When the loop became ready to send the next request.
    ready: Option<(Instant, u64)>,
    calls: HashMap<String, Call>,
    /// Sub-agents' calls by id, until their results.
    child_calls: HashMap<String, ChildCall>,
    /// Every call's span and start, own or a sub-agent's, kept to the end
    /// of the run: a sub-agent's last messages are relayed after its
    /// Agent call has ended.
    spans: HashMap<String, ([u8; 8], Instant, u64)>,
    /// When each sub-agent (by its Agent call's id) was last ready to ask.
    child_ready: HashMap<String, (Instant, u64)>,
    sequence: u64,
}

fn attrs<const N: usize>(pairs: [(&str, Val); N]) -> Attrs {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn ms(d: Duration) -> Val {
    Val::Int(d.as_millis().min(i64::MAX as u128) as i64)
}

impl Observer {
    /// The observer, when the configuration asks for an export.
    pub(super) fn start(rt: &Runtime, session_id: &str, pipeline: Rc<Pipeline>) -> Option<Self> {
        let config = rt.telemetry.clone()?;
        let tele = match Telemetry::start(config) {
            Ok(t) => t,
            Err(e) => {
                crate::report::notice(crate::report::Level::Warning, e);
                return None;
            }
        };
        let o = Observer {
            tele,
            session_id: session_id.to_string(),
            model: rt.model.clone(),
            pipeline,
            turn: None,
            prompt_pending: false,
            ready: None,
            calls: HashMap::new(),
            child_calls: HashMap::new(),
            spans: HashMap::new(),
            child_ready: HashMap::new(),
            sequence: 0,
        };
        o.count("claude_code.session.count", "count", 1.0, Attrs::new());
        Some(o)
    }

    /// Claude Code's standard attributes, as far as tern knows them.
    fn standard(&self) -> Attrs {
        let mut a = attrs([
            ("session.id", Val::from(self.session_id.as_str())),
            ("app.version", Val::from(env!("CARGO_PKG_VERSION"))),
        ]);
        if let Some(t) = &self.tele.config().terminal {
            a.push(("terminal.type".into(), Val::from(t.as_str())));
        }
        a
    }

    fn count(&self, name: &'static str, unit: &'static str, value: f64, extra: Attrs) {
        let mut a = self.standard();
        a.extend(extra);
        self.tele.record(Record::Count {
            name,
            unit,
            value,
            attrs: a,
        });
    }

    fn event(&mut self, name: &'static str, extra: Attrs) {
        let short = name.strip_prefix("claude_code.").unwrap_or(name);
        let mut a = self.standard();
        a.push(("event.name".into(), Val::from(short)));
        a.push((
            "event.timestamp".into(),
            Val::from(crate::session::time::timestamp()),
        ));
        a.push(("event.sequence".into(), Val::from(self.sequence)));
        self.sequence += 1;
        a.extend(extra);
        let trace = self.turn.as_ref().map(|t| (t.trace, t.span));
        self.tele.record(Record::Event(telemetry::Event {
            name,
            time: now_nanos(),
            attrs: a,
            trace,
        }));
    }

    /// A span of this id, under `parent` (the turn's when none).
    fn span(
        &self,
        name: &'static str,
        start: u64,
        extra: Attrs,
        error: Option<String>,
        (id, parent): ([u8; 8], Option<[u8; 8]>),
    ) {
        let Some(turn) = &self.turn else { return };
        let mut a = self.standard();
        a.extend(extra);
        self.tele.record(Record::Span(Span {
            trace_id: turn.trace,
            span_id: id,
            parent: Some(parent.unwrap_or(turn.span)),
            name,
            start,
            end: now_nanos(),
            attrs: a,
            error,
        }));
    }

    /// A run begins, with this model.
    pub(super) fn begin(&mut self, model: &str) {
        self.model = model.to_string();
        self.prompt_pending = true;
        self.ready = Some((Instant::now(), now_nanos()));
        self.turn = Some(Turn {
            trace: telemetry::random_id(),
            span: telemetry::random_id(),
            start: now_nanos(),
            prompt_length: None,
        });
    }

    /// One event of the loop, before the printer takes it.
    pub(super) fn on(&mut self, ev: &Event<'_>) {
        match ev {
            Event::Prompt { message, .. } => {
                if std::mem::take(&mut self.prompt_pending) {
                    self.user_prompt(message);
                }
                self.mark_ready();
            }
            Event::ToolResults { .. } | Event::Compacted { .. } => self.mark_ready(),
            Event::RequestUsage(u) => self.request(u),
            Event::Retrying {
                attempt,
                delay,
                error,
                ..
            } => {
                let status = error.status();
                self.api_error(error.to_string(), status, Some(*attempt));
                let (at, nanos) = (Instant::now() + *delay, now_nanos());
                self.ready = Some((at, nanos + delay.as_nanos() as u64));
            }
            Event::FallbackModel { to, error, .. } => {
                self.api_error(error.to_string(), error.status(), None);
                self.model = to.to_string();
                self.mark_ready();
            }
            Event::Report(r) => self.report(r),
            Event::Relayed(r) => self.relayed(r),
            _ => {}
        }
    }

    fn mark_ready(&mut self) {
        self.ready = Some((Instant::now(), now_nanos()));
    }

    fn user_prompt(&mut self, message: &Value) {
        let text = crate::model::content_text(message.get("content"));
        let length = text.chars().count() as u64;
        if let Some(t) = &mut self.turn {
            t.prompt_length = Some(length);
        }
        let mut a = attrs([("prompt_length", Val::from(length))]);
        if self.tele.config().log_user_prompts {
            a.push(("prompt".into(), Val::from(text)));
        }
        self.event("claude_code.user_prompt", a);
    }

    fn request(&mut self, u: &Usage) {
        let ready = self
            .ready
            .take()
            .unwrap_or_else(|| (Instant::now(), now_nanos()));
        let model = self.model.clone();
        self.request_of(&model, u, ready, None);
    }

    /// One model request's tokens, cost, event and span; `parent` is the
    /// Agent call's span for a sub-agent's request.
    fn request_of(
        &mut self,
        model: &str,
        u: &Usage,
        (began, start): (Instant, u64),
        parent: Option<[u8; 8]>,
    ) {
        let took = Instant::now().saturating_duration_since(began);
        let cost = crate::model::price::cost(model, u);
        let model = || ("model", Val::from(model));
        for (kind, n) in [
            ("input", u.input_tokens),
            ("output", u.output_tokens),
            ("cacheRead", u.cache_read_input_tokens),
            ("cacheCreation", u.cache_creation_input_tokens),
        ] {
            if n > 0 || matches!(kind, "input" | "output") {
                let a = attrs([("type", Val::from(kind)), model()]);
                self.count("claude_code.token.usage", "tokens", n as f64, a);
            }
        }
        self.count("claude_code.cost.usage", "USD", cost, attrs([model()]));
        let tokens = attrs([
            model(),
            ("input_tokens", Val::from(u.input_tokens)),
            ("output_tokens", Val::from(u.output_tokens)),
            ("cache_read_tokens", Val::from(u.cache_read_input_tokens)),
            (
                "cache_creation_tokens",
                Val::from(u.cache_creation_input_tokens),
            ),
            ("duration_ms", ms(took)),
        ]);
        let mut event = tokens.clone();
        event.push(("cost_usd".into(), Val::from(cost)));
        self.event("claude_code.api_request", event);
        let id = (telemetry::random_id(), parent);
        self.span("claude_code.llm_request", start, tokens, None, id);
    }

    /// What a sub-agent did, relayed up: its requests count as the
    /// session's (tokens, cost, an api_request event) and its tool calls
    /// give tool_result events and lines of code; their spans hang under
    /// the Agent call that started it. How its calls were decided is not
    /// relayed, so their events carry no decision.
    fn relayed(&mut self, r: &Relayed) {
        let Relayed::Message {
            parent_tool_use_id: agent,
            kind,
            message,
            ..
        } = r
        else {
            return;
        };
        let known = self.spans.get(agent).copied();
        let parent = known.map(|(span, ..)| span);
        let blocks = message
            .get("content")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        match kind {
            MessageKind::Assistant => {
                let ready = self.child_ready.remove(agent).unwrap_or_else(|| {
                    known.map_or_else(|| (Instant::now(), now_nanos()), |(_, at, ns)| (at, ns))
                });
                let usage = message
                    .get("usage")
                    .map(Usage::from_api)
                    .unwrap_or_default();
                let model = message
                    .str_field("model")
                    .unwrap_or(&self.model)
                    .to_string();
                self.request_of(&model, &usage, ready, parent);
                let parent = parent.or(self.turn.as_ref().map(|t| t.span));
                for b in blocks
                    .iter()
                    .filter(|b| b.str_field("type") == Some("tool_use"))
                {
                    let (Some(id), Some(name), Some(parent)) =
                        (b.str_field("id"), b.str_field("name"), parent)
                    else {
                        continue;
                    };
                    let input = b.get("input").unwrap_or(&Value::Null);
                    let call = ChildCall {
                        name: name.to_string(),
                        began: Instant::now(),
                        start: now_nanos(),
                        span: telemetry::random_id(),
                        parent,
                        lines: edit_measure(name, input).0,
                    };
                    self.spans
                        .insert(id.to_string(), (call.span, call.began, call.start));
                    self.child_calls.insert(id.to_string(), call);
                }
            }
            MessageKind::ToolResults => {
                for b in blocks {
                    let Some(c) = b
                        .str_field("tool_use_id")
                        .and_then(|id| self.child_calls.remove(id))
                    else {
                        continue;
                    };
                    let is_error = b.get("is_error").and_then(Value::as_bool) == Some(true);
                    // One short line, as the session's own calls report:
                    // never the output itself.
                    let content = crate::model::content_text(b.get("content"));
                    let summary = crate::report::card_summary(&c.name, is_error, &content);
                    self.tool_ended(Ended {
                        name: &c.name,
                        began: c.began,
                        start: c.start,
                        span: (c.span, Some(c.parent)),
                        is_error,
                        summary: &summary,
                        decision: None,
                        lines: c.lines,
                    });
                }
                self.child_ready
                    .insert(agent.clone(), (Instant::now(), now_nanos()));
            }
        }
    }

    /// A tool call's end, the session's own or a sub-agent's: its
    /// tool_result event, its span and, for a successful edit, its lines.
    fn tool_ended(&mut self, t: Ended<'_>) {
        let took = t.began.elapsed();
        let mut a = attrs([
            ("tool_name", Val::from(t.name)),
            (
                "success",
                Val::from(if t.is_error { "false" } else { "true" }),
            ),
            ("duration_ms", ms(took)),
        ]);
        if t.is_error {
            a.push(("error".into(), Val::from(t.summary)));
        }
        if let Some((allowed, source)) = t.decision {
            a.push((
                "decision".into(),
                Val::from(if allowed { "accept" } else { "reject" }),
            ));
            a.push(("source".into(), Val::from(source)));
        }
        self.event("claude_code.tool_result", a);
        let span_attrs = attrs([
            ("tool_name", Val::from(t.name)),
            ("duration_ms", ms(took)),
            ("success", Val::from(!t.is_error)),
        ]);
        let error = t.is_error.then(|| t.summary.to_string());
        self.span("claude_code.tool", t.start, span_attrs, error, t.span);
        if let (false, Some(lines)) = (t.is_error, t.lines) {
            self.lines_of_code(lines);
        }
    }

    fn lines_of_code(&self, (added, removed): (u64, u64)) {
        for (kind, n) in [("added", added), ("removed", removed)] {
            if n > 0 {
                let a = attrs([("type", Val::from(kind))]);
                self.count("claude_code.lines_of_code.count", "count", n as f64, a);
            }
        }
    }

    fn api_error(&mut self, error: String, status: Option<u16>, attempt: Option<u32>) {
        let took = self
            .ready
            .take()
            .map_or(Duration::ZERO, |(at, _)| at.elapsed());
        let mut a = attrs([
            ("model", Val::from(self.model.as_str())),
            ("error", Val::from(error)),
            (
                "status_code",
                status.map_or(Val::from("undefined"), |s| Val::from(s.to_string())),
            ),
            ("duration_ms", ms(took)),
        ]);
        if let Some(n) = attempt {
            a.push(("attempt".into(), Val::from(u64::from(n))));
        }
        self.event("claude_code.api_error", a);
    }

    fn report(&mut self, r: &Report) {
        match r {
            Report::ToolStarted { id, name, input } => {
                let (lines, language) = edit_measure(name, input);
                let call = Call {
                    name: name.clone(),
                    began: Instant::now(),
                    start: now_nanos(),
                    asked: false,
                    decision: None,
                    lines,
                    language,
                    span: telemetry::random_id(),
                };
                self.spans
                    .insert(id.clone(), (call.span, call.began, call.start));
                self.calls.insert(id.clone(), call);
            }
            Report::PermissionAsked { id, .. } => {
                if let Some(c) = self.calls.get_mut(id) {
                    c.asked = true;
                }
            }
            Report::PermissionAnswered {
                id, allowed, saved, ..
            } => {
                // Claude Code's words: a saved yes is permanent.
                let source = match (allowed, saved) {
                    (true, true) => "user_permanent",
                    (true, false) => "user_temporary",
                    (false, _) => "user_reject",
                };
                if let Some(c) = self.calls.get_mut(id) {
                    c.decision = Some((*allowed, source));
                }
                self.decided(id);
            }
            Report::ToolFinished {
                id,
                is_error,
                summary,
                ..
            } => self.tool_finished(id, *is_error, summary),
            Report::ToolProgress { .. } | Report::Notice { .. } => {}
        }
    }

    /// The decision's event (and, for an edit, its counter).
    fn decided(&mut self, id: &str) {
        let Some(c) = self.calls.get(id) else { return };
        let Some((allowed, source)) = c.decision else {
            return;
        };
        let decision = if allowed { "accept" } else { "reject" };
        let name = c.name.clone();
        if c.lines.is_some() {
            let mut a = attrs([
                ("tool_name", Val::from(name.as_str())),
                ("decision", Val::from(decision)),
                ("source", Val::from(source)),
            ]);
            if let Some(l) = c.language {
                a.push(("language".into(), Val::from(l)));
            }
            self.count("claude_code.code_edit_tool.decision", "count", 1.0, a);
        }
        self.event(
            "claude_code.tool_decision",
            attrs([
                ("tool_name", Val::from(name)),
                ("decision", Val::from(decision)),
                ("source", Val::from(source)),
            ]),
        );
    }

    fn tool_finished(&mut self, id: &str, is_error: bool, summary: &str) {
        if self.calls.get(id).is_some_and(|c| !c.asked) {
            let denied = self
                .pipeline
                .denials()
                .iter()
                .any(|d| d.str_field("tool_use_id") == Some(id));
            let decision = unasked_decision(denied, summary);
            if let Some(c) = self.calls.get_mut(id) {
                c.decision = decision;
            }
            self.decided(id);
        }
        let Some(c) = self.calls.remove(id) else {
            return;
        };
        self.tool_ended(Ended {
            name: &c.name,
            began: c.began,
            start: c.start,
            span: (c.span, None),
            is_error,
            summary,
            decision: c.decision,
            lines: c.lines,
        });
    }

    /// The run is over: what failed it, its active time, its span.
    pub(super) fn finish(&mut self, outcome: &Outcome) {
        if let Ending::ModelError(e) = &outcome.ending {
            self.api_error(e.clone(), outcome.api_error_status, None);
        }
        self.count(
            "claude_code.active_time.total",
            "s",
            outcome.duration.as_secs_f64(),
            attrs([("type", Val::from("cli"))]),
        );
        let Some(turn) = self.turn.take() else { return };
        let mut a = self.standard();
        a.push(("model".into(), Val::from(self.model.as_str())));
        a.push(("num_turns".into(), Val::from(u64::from(outcome.num_turns))));
        if let Some(n) = turn.prompt_length {
            a.push(("user_prompt_length".into(), Val::from(n)));
        }
        let error = match &outcome.ending {
            Ending::Completed => None,
            other => Some(ending_name(other).to_string()),
        };
        self.tele.record(Record::Span(Span {
            trace_id: turn.trace,
            span_id: turn.span,
            parent: None,
            name: "claude_code.interaction",
            start: turn.start,
            end: now_nanos(),
            attrs: a,
            error,
        }));
        self.calls.clear();
        self.child_calls.clear();
        self.spans.clear();
        self.child_ready.clear();
    }

    /// Sends what is left (bounded: `telemetry::Config::final_flush`).
    pub(super) fn shutdown(self) {
        self.tele.shutdown();
    }
}

fn ending_name(e: &Ending) -> &'static str {
    match e {
        Ending::Completed => "completed",
        Ending::MaxTurns => "max_turns",
        Ending::Aborted(_) => "aborted",
        Ending::ModelError(_) => "model_error",
        Ending::Blocked(_) => "blocked",
        Ending::BudgetExceeded(_) => "budget_exceeded",
        Ending::OutputTokensExceeded(_) => "output_tokens_exceeded",
        Ending::StructuredOutputRetries(_) => "structured_output_retries",
    }
}

/// The decision on a call nobody was asked about: refused by a rule or a
/// hook, or allowed by configuration; none when it failed before the
/// decision (an unknown tool, an invalid input, an interruption).
fn unasked_decision(denied: bool, summary: &str) -> Option<(bool, &'static str)> {
    const BEFORE_DECIDING: [&str; 4] = [
        "No such tool",
        "Invalid input",
        "Interrupted by the user before it started",
        "A PreToolUse hook rewrote",
    ];
    let by_hook = summary.starts_with("Denied by a PreToolUse hook")
        || summary.starts_with("Blocked by a PreToolUse hook");
    if by_hook {
        Some((false, "hook"))
    } else if denied {
        Some((false, "config"))
    } else if BEFORE_DECIDING.iter().any(|p| summary.starts_with(p)) {
        None
    } else {
        Some((true, "config"))
    }
}

/// For an edit tool: (lines added, lines removed) and the file's language.
fn edit_measure(tool: &str, input: &Value) -> (Option<(u64, u64)>, Option<&'static str>) {
    let s = |k: &str| input.str_field(k).unwrap_or_default();
    let lines = match tool {
        "Edit" => Some(line_delta(s("old_string"), s("new_string"))),
        "Write" => Some((s("content").lines().count() as u64, 0)),
        "MultiEdit" => Some(
            input
                .get("edits")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|e| {
                    let f = |k: &str| e.str_field(k).unwrap_or_default();
                    line_delta(f("old_string"), f("new_string"))
                })
                .fold((0, 0), |(a, r), (a2, r2)| (a + a2, r + r2)),
        ),
        "NotebookEdit" => Some((s("new_source").lines().count() as u64, 0)),
        _ => None,
    };
    let path = input
        .str_field("file_path")
        .or_else(|| input.str_field("notebook_path"))
        .unwrap_or_default();
    (lines, lines.and_then(|_| language(path)))
}

/// Lines removed and added when `old` becomes `new`: what lies between
/// their common first and last lines.
fn line_delta(old: &str, new: &str) -> (u64, u64) {
    let old: Vec<&str> = old.lines().collect();
    let new: Vec<&str> = new.lines().collect();
    let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let tail = old[head..]
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let added = (new.len() - head - tail) as u64;
    let removed = (old.len() - head - tail) as u64;
    (added, removed)
}

/// The language Claude Code names for a file, by its extension.
fn language(path: &str) -> Option<&'static str> {
    let ext = std::path::Path::new(path).extension()?.to_str()?;
    Some(match ext.to_ascii_lowercase().as_str() {
        "rs" => "Rust",
        "py" => "Python",
        "js" | "mjs" | "cjs" | "jsx" => "JavaScript",
        "ts" | "tsx" => "TypeScript",
        "go" => "Go",
        "c" | "h" => "C",
        "cc" | "cpp" | "hpp" | "cxx" => "C++",
        "java" => "Java",
        "rb" => "Ruby",
        "sh" | "bash" => "Shell",
        "md" => "Markdown",
        "json" => "JSON",
        "toml" => "TOML",
        "yaml" | "yml" => "YAML",
        "html" => "HTML",
        "css" => "CSS",
        "txt" => "Text",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_counts_the_lines_between_what_stays() {
        assert_eq!(line_delta("a\nb\nc", "a\nB\nB2\nc"), (2, 1));
        assert_eq!(line_delta("", "x\ny"), (2, 0));
        assert_eq!(line_delta("same", "same"), (0, 0));
        assert_eq!(line_delta("a\nb", "b"), (0, 1));
    }

    #[test]
    fn an_unasked_call_is_decided_by_configuration_or_refused() {
        assert_eq!(unasked_decision(false, "ok"), Some((true, "config")));
        assert_eq!(
            unasked_decision(true, "Permission denied"),
            Some((false, "config"))
        );
        assert_eq!(
            unasked_decision(true, "Denied by a PreToolUse hook: no"),
            Some((false, "hook"))
        );
        assert_eq!(unasked_decision(false, "No such tool: \"X\""), None);
    }

    #[test]
    fn an_edit_knows_its_language_and_other_tools_have_none() {
        let input =
            crate::obj! { "file_path" => "src/a.rs", "old_string" => "x", "new_string" => "y\nz" };
        assert_eq!(edit_measure("Edit", &input), (Some((2, 1)), Some("Rust")));
        assert_eq!(edit_measure("Read", &input), (None, None));
    }
}
