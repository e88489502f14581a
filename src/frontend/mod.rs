//! The observation plane: turns the loop's events into what a person or a
//! program reads. `text` prints the answer, `json` one result object,
//! `stream-json` one NDJSON line per event (Claude Code's shapes).
//!
//! A closed stdout (`tern -p … | head -1`) is not an error: writes after
//! that are dropped quietly.

pub(crate) mod acp;
mod activity;
pub mod approve;
pub mod commands;
#[cfg(feature = "mcp")]
pub(crate) mod elicit;
pub mod line;
mod preview;
pub mod sdk;
pub(crate) mod trust;
#[cfg(feature = "tui")]
pub mod tui;

use std::io::Write;

use crate::abort::Reason;
use crate::agent::subagent::{MessageKind, Relayed};
use crate::agent::{Ending, Event, Outcome};
use crate::cli::OutputFormat;
use crate::json::Value;
use crate::obj;
use crate::report::{Level, Report};
use crate::session::new_uuid;

pub struct SessionInfo {
    pub session_id: String,
    pub cwd: String,
    pub model: String,
    pub tools: Vec<String>,
    pub permission_mode: &'static str,
    pub api_key_source: String,
    /// What the Bash sandbox enforces, for `system/init`.
    pub sandbox: Value,
    /// `[{name, status}]` of the MCP servers.
    pub mcp_servers: Vec<Value>,
    /// The local server found when nothing was configured.
    pub discovered: Option<Value>,
    /// The agent definitions the Agent tool can start.
    pub agents: Vec<String>,
    /// The skills the Skill tool can load.
    pub skills: Vec<String>,
    /// `[{name, path}]` of the plugins loaded.
    pub plugins: Vec<Value>,
    /// Slash commands, without their `/` (MCP prompts among them).
    pub slash_commands: Vec<String>,
    pub additional_directories: Vec<String>,
    /// Options and `initialize` fields accepted but not acted on:
    /// `{option, reason}`, so a program can see what it did not get.
    pub ignored: Vec<Value>,
    /// The requests go to Anthropic's own API.
    pub served_by_anthropic: bool,
    pub context_window: u64,
    pub max_output_tokens: u32,
    /// `{files, not_read: [{path, imported_by, reason}]}`: memory files
    /// read, and those left out because they lie outside the repository.
    pub memory: Value,
    /// `{state, directory, by, ignored, user_only}`: how far the project's
    /// own settings were trusted, and what of them was left out.
    pub trust: Value,
}

/// Standard input a line at a time: the frames of the SDK's and ACP's
/// protocols. Ends at the end of input, or at a read error (said once).
pub(crate) struct InputLines {
    reader: smol::io::BufReader<smol::Unblock<std::io::Stdin>>,
    bytes: Vec<u8>,
}

impl InputLines {
    pub(crate) fn new() -> InputLines {
        InputLines {
            reader: smol::io::BufReader::new(smol::Unblock::new(std::io::stdin())),
            bytes: Vec::new(),
        }
    }

    /// The next line, with its newline; `None` at the end.
    pub(crate) async fn next(&mut self) -> Option<&[u8]> {
        use smol::io::AsyncBufReadExt;
        self.bytes.clear();
        match self.reader.read_until(b'\n', &mut self.bytes).await {
            Ok(0) => None,
            Ok(_) => Some(&self.bytes),
            Err(e) => {
                eprintln!("tern: cannot read standard input ({e}); the session ends");
                None
            }
        }
    }
}

/// The Claude Code release line whose flags and stream-json tern matches.
pub const CLAUDE_CODE_SURFACE: &str = "2.1.0";

pub struct Printer {
    format: OutputFormat,
    /// Stream text to the terminal as it arrives (interactive text mode).
    live_text: bool,
    verbose: bool,
    /// Kept up to date by the session (an SDK may add tools and servers).
    pub info: SessionInfo,
    out: std::io::Stdout,
    wrote_live: bool,
    /// `--include-partial-messages`: raw stream events as `stream_event` lines.
    pub include_partial: bool,
    /// Tool lines for a person watching (line mode), and start times.
    activity: activity::Activity,
    /// Notices from the session's build, for stream-json after init.
    held: Vec<(Level, String)>,
}

impl Printer {
    pub fn new(format: OutputFormat, print: bool, verbose: bool, info: SessionInfo) -> Self {
        Printer {
            format,
            live_text: format == OutputFormat::Text && !print,
            verbose,
            info,
            out: std::io::stdout(),
            wrote_live: false,
            include_partial: false,
            activity: activity::Activity::for_stdout(),
            held: Vec::new(),
        }
    }

    fn line(&mut self, v: &Value) {
        let mut text = v.to_json();
        text.push('\n');
        let mut out = self.out.lock();
        let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    }

    fn envelope(&self, kind: &str, id: &str, message: &Value, parent: Option<&str>) -> Value {
        obj! {
            "type" => kind,
            "message" => message.clone(),
            "parent_tool_use_id" => parent,
            "session_id" => self.info.session_id.as_str(),
            "uuid" => id,
            "timestamp" => crate::session::time::timestamp(),
        }
    }

    /// Tool results as Claude Code sends them: one `user` line per
    /// result, with the result itself in `tool_use_result`.
    fn tool_results(&mut self, ids: &[String], message: &Value, parent: Option<&str>) {
        let blocks = message.get("content").and_then(Value::as_array);
        for (block, id) in blocks.into_iter().flatten().zip(ids) {
            let single = obj! { "role" => "user", "content" => vec![block.clone()] };
            let mut v = self.envelope("user", id, &single, parent);
            if let Some(m) = v.as_object_mut() {
                m.insert(
                    "tool_use_result",
                    block.get("content").cloned().unwrap_or(Value::Null),
                );
            }
            self.line(&v);
        }
    }

    /// A person in line mode sees every tool start and end; `--verbose`
    /// puts them on stderr; stream-json gets Claude Code's progress and
    /// informational messages. Warnings always reach stderr.
    fn report(&mut self, r: &Report) {
        match r {
            Report::ToolStarted { id, name, input } => {
                let line = self.activity.start(id, name, input);
                self.activity_line(&line);
            }
            Report::ToolProgress { id, text } => {
                if self.format == OutputFormat::StreamJson {
                    let mut fields = crate::json::Map::new();
                    fields.insert("tool_use_id", id.as_str());
                    fields.insert("text", text.as_str());
                    fields.insert(
                        "elapsed_time_seconds",
                        self.activity.elapsed(id).as_secs_f64(),
                    );
                    fields.insert("parent_tool_use_id", Value::Null);
                    fields.insert("type", "tool_progress");
                    fields.insert("session_id", self.info.session_id.as_str());
                    fields.insert("uuid", new_uuid());
                    self.line(&Value::Object(fields));
                } else if let Some(line) = self.activity.progress(id, text) {
                    self.activity_line(&line);
                }
            }
            Report::ToolFinished {
                id,
                name,
                is_error,
                summary,
            } => {
                let line = self.activity.finish(id, name, *is_error, summary);
                self.activity_line(&line);
            }
            // A call's time is its running time, not the person's answer.
            Report::PermissionAnswered { id, .. } => self.activity.restart(id),
            Report::PermissionAsked { .. } => {}
            Report::Notice { level, text } => {
                if self.format == OutputFormat::StreamJson {
                    self.informational(*level, text);
                }
                self.notice_on_stderr(*level, text);
            }
        }
    }

    /// A notice as Claude Code's `system` informational message.
    fn informational(&mut self, level: Level, text: &str) {
        let mut fields = crate::json::Map::new();
        fields.insert("content", text);
        fields.insert(
            "level",
            match level {
                Level::Info => "info",
                Level::Warning => "warning",
            },
        );
        self.system("informational", fields);
    }

    /// Warnings always reach stderr; the rest when someone watches.
    fn notice_on_stderr(&mut self, level: Level, text: &str) {
        if level == Level::Warning || self.verbose || self.live_text {
            self.end_live_line();
            eprintln!("tern: {text}");
        }
    }

    /// What was said while the session was being built, shown before
    /// anything else: on stderr now, as any notice; in stream-json right
    /// after the next `system/init` (a program reads init first, and an
    /// SDK's session sends it at the first prompt).
    pub fn notices_first(&mut self, notices: Vec<Report>) {
        for r in notices {
            if let Report::Notice { level, text } = &r {
                self.notice_on_stderr(*level, text);
                if self.format == OutputFormat::StreamJson {
                    self.held.push((*level, text.clone()));
                }
            }
        }
    }

    /// Notices left when the session is over (a server that failed late,
    /// say): stderr only, as the outcome has been printed.
    pub fn notices_last(&self, notices: Vec<Report>) {
        for r in notices {
            if let Report::Notice { text, .. } = r {
                eprintln!("tern: {text}");
            }
        }
    }

    /// A tool line: on stdout in line mode, on stderr with `--verbose`.
    fn activity_line(&mut self, line: &str) {
        if self.live_text {
            self.end_live_line();
            let mut out = self.out.lock();
            let _ = writeln!(out, "{line}").and_then(|()| out.flush());
        } else if self.verbose && self.format != OutputFormat::StreamJson {
            eprintln!("tern: {line}");
        }
    }

    /// Streamed text left without its newline gets one before anything
    /// else is written.
    fn end_live_line(&mut self) {
        if self.wrote_live {
            let _ = self.out.lock().write_all(b"\n");
            self.wrote_live = false;
        }
    }

    fn system(&mut self, subtype: &str, mut fields: crate::json::Map) {
        fields.insert("type", "system");
        fields.insert("subtype", subtype);
        fields.insert("session_id", self.info.session_id.as_str());
        fields.insert("uuid", new_uuid());
        self.line(&Value::Object(fields));
    }

    fn relayed(&mut self, r: &Relayed) {
        use crate::json::Map;
        match r {
            Relayed::Message {
                parent_tool_use_id,
                kind: MessageKind::Assistant,
                ids,
                message,
            } => {
                let id = ids.first().map_or("", String::as_str);
                let v = self.envelope("assistant", id, message, Some(parent_tool_use_id));
                self.line(&v);
            }
            Relayed::Message {
                parent_tool_use_id,
                kind: MessageKind::ToolResults,
                ids,
                message,
            } => self.tool_results(ids, message, Some(parent_tool_use_id)),
            Relayed::TaskStarted {
                task_id,
                tool_use_id,
                description,
                subagent_type,
                prompt,
                background,
                depth,
            } => {
                let mut m = Map::new();
                m.insert("task_id", task_id.as_str());
                m.insert("tool_use_id", tool_use_id.as_str());
                m.insert("description", description.as_str());
                m.insert("subagent_type", subagent_type.as_str());
                m.insert("task_type", "local_agent");
                m.insert("is_backgrounded", *background);
                m.insert("spawn_depth", *depth);
                m.insert("prompt", prompt.as_str());
                self.system("task_started", m);
            }
            Relayed::TaskFinished {
                task_id,
                tool_use_id,
                status,
                summary,
                output_file,
                total_tokens,
                tool_uses,
                duration,
            } => {
                let patch_status = match *status {
                    "stopped" => "killed",
                    other => other,
                };
                let end_time = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64);
                let mut m = Map::new();
                m.insert("task_id", task_id.as_str());
                m.insert(
                    "patch",
                    obj! { "status" => patch_status, "end_time" => end_time },
                );
                self.system("task_updated", m);
                let mut m = Map::new();
                m.insert("task_id", task_id.as_str());
                m.insert("tool_use_id", tool_use_id.as_str());
                m.insert("status", *status);
                m.insert("output_file", output_file.as_str());
                m.insert("summary", summary.as_str());
                m.insert(
                    "usage",
                    obj! {
                        "total_tokens" => *total_tokens,
                        "tool_uses" => *tool_uses,
                        "duration_ms" => duration.as_millis() as u64,
                    },
                );
                self.system("task_notification", m);
            }
        }
    }

    pub fn start(&mut self) {
        if self.format != OutputFormat::StreamJson {
            return;
        }
        let init = obj! {
            "type" => "system",
            "subtype" => "init",
            "session_id" => self.info.session_id.as_str(),
            "cwd" => self.info.cwd.as_str(),
            "tools" => self.info.tools.iter().map(|t| Value::from(t.as_str())).collect::<Vec<_>>(),
            "mcp_servers" => self.info.mcp_servers.clone(),
            "model" => self.info.model.as_str(),
            "permissionMode" => self.info.permission_mode,
            "slash_commands" => self.info.slash_commands.iter().map(|s| Value::from(s.as_str())).collect::<Vec<_>>(),
            "apiKeySource" => self.info.api_key_source.as_str(),
            "output_style" => "default",
            "tern_version" => env!("CARGO_PKG_VERSION"),
            // The Agent SDK reads this to judge compatibility: the Claude
            // Code release whose headless surface tern follows (COMPAT.md).
            "claude_code_version" => CLAUDE_CODE_SURFACE,
            "sandbox" => self.info.sandbox.clone(),
            "discovered_server" => self.info.discovered.clone(),
            "memory" => self.info.memory.clone(),
            "trust" => self.info.trust.clone(),
            "uuid" => new_uuid(),
        };
        let strings = |list: &[String]| -> Vec<Value> {
            list.iter().map(|s| Value::from(s.as_str())).collect()
        };
        let mut init = init;
        if let Some(m) = init.as_object_mut() {
            // Claude Code's other keys, with what is true of tern.
            m.insert("agents", strings(&self.info.agents));
            m.insert("skills", strings(&self.info.skills));
            m.insert("plugins", self.info.plugins.clone());
            m.insert("terminal_slash_commands", Vec::<Value>::new());
            // No protocol extension of Claude Code's list is claimed.
            m.insert("capabilities", Vec::<Value>::new());
            m.insert("analytics_disabled", true);
            m.insert("product_feedback_disabled", true);
            m.insert("served_by_anthropic", self.info.served_by_anthropic);
            m.insert(
                "sandbox_enabled",
                self.info.sandbox.get("enabled").and_then(Value::as_bool) == Some(true),
            );
            m.insert("memory_paths", obj! {});
            m.insert("original_cwd", self.info.cwd.as_str());
            m.insert(
                "additional_directories",
                strings(&self.info.additional_directories),
            );
            m.insert("messaging_socket_path", Value::Null);
            m.insert("fast_mode_state", "off");
            m.insert("fast_mode_disabled_reason", "unavailable");
            m.insert("per_turn_effort_active", false);
            m.insert("ultrathink_available", false);
            m.insert("ultrathink_typed_raises", false);
            m.insert("view_mode", "default");
            m.insert("ignored_options", self.info.ignored.clone());
        }
        self.line(&init);
        for (level, text) in std::mem::take(&mut self.held) {
            self.informational(level, &text);
        }
    }

    pub fn event(&mut self, ev: Event<'_>) {
        match ev {
            // The prompt is the caller's own; it is not echoed.
            Event::Prompt { .. } => {}
            Event::TextDelta(t) => {
                if self.live_text {
                    let mut out = self.out.lock();
                    let _ = out.write_all(t.as_bytes()).and_then(|()| out.flush());
                    self.wrote_live = true;
                }
            }
            // Folded, on the person's stream: standard output is the
            // answer's (stream-json carries the block in its message).
            Event::Thinking(t) => {
                if self.verbose || self.live_text {
                    eprintln!("{}", folded_thinking(t));
                }
            }
            Event::Assistant { id, message: m } => {
                if self.format == OutputFormat::StreamJson {
                    let v = self.envelope("assistant", id, m, None);
                    self.line(&v);
                }
                if self.live_text && self.wrote_live {
                    let _ = self.out.lock().write_all(b"\n");
                    self.wrote_live = false;
                }
            }
            Event::ToolResults { ids, message: m } => {
                if self.format == OutputFormat::StreamJson {
                    self.tool_results(ids, m, None);
                }
            }
            Event::Relayed(r) => {
                if self.format == OutputFormat::StreamJson {
                    self.relayed(r);
                }
            }
            Event::Report(r) => self.report(r),
            // The outcome follows through `finish`.
            Event::TurnEnded(_) => {}
            Event::Stream(data) => {
                if self.include_partial && self.format == OutputFormat::StreamJson {
                    let event = crate::json::parse(data).unwrap_or(Value::Null);
                    let v = obj! {
                        "type" => "stream_event",
                        "uuid" => new_uuid(),
                        "session_id" => self.info.session_id.as_str(),
                        "event" => event,
                        "parent_tool_use_id" => Value::Null,
                    };
                    self.line(&v);
                }
            }
            Event::RequestUsage(u) => {
                if self.verbose {
                    eprintln!(
                        "tern: request used {} input tokens ({} cached, {} written to cache), {} output",
                        u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens,
                        u.cache_read_input_tokens,
                        u.cache_creation_input_tokens,
                        u.output_tokens
                    );
                }
            }
            // Shown as they ran (tool reports); kept by the transcript.
            Event::Virtual { .. } => {}
            Event::MicroCompacted { saved_tokens } => {
                if self.verbose {
                    eprintln!(
                        "tern: cleared old tool results (~{saved_tokens} tokens) to stay inside the context window"
                    );
                }
            }
            Event::Compacted {
                trigger,
                pre_tokens,
                boundary_id,
                ..
            } => {
                if self.format == OutputFormat::StreamJson {
                    let v = obj! {
                        "type" => "system",
                        "subtype" => "compact_boundary",
                        "compact_metadata" => obj! { "trigger" => trigger, "pre_tokens" => pre_tokens },
                        "session_id" => self.info.session_id.as_str(),
                        "uuid" => boundary_id,
                    };
                    self.line(&v);
                }
                if self.verbose || self.live_text {
                    eprintln!(
                        "tern: conversation compacted ({trigger}; ~{pre_tokens} tokens before)"
                    );
                }
            }
            Event::FallbackModel { from, to, error } => {
                if self.format == OutputFormat::StreamJson {
                    let v = obj! {
                        "type" => "system",
                        "subtype" => "model_fallback",
                        "from" => from,
                        "to" => to,
                        "error" => error.to_string(),
                        "session_id" => self.info.session_id.as_str(),
                        "uuid" => new_uuid(),
                    };
                    self.line(&v);
                }
                eprintln!("tern: {error}; switching from {from} to {to}");
            }
            Event::Retrying {
                attempt,
                max_retries,
                delay,
                error,
            } => {
                if self.format == OutputFormat::StreamJson {
                    let v = obj! {
                        "type" => "system",
                        "subtype" => "api_retry",
                        "attempt" => attempt,
                        "max_retries" => max_retries,
                        "retry_delay_ms" => delay.as_millis() as u64,
                        "error_status" => error.status().map(u32::from),
                        "error" => error.to_string(),
                        "session_id" => self.info.session_id.as_str(),
                        "uuid" => new_uuid(),
                    };
                    self.line(&v);
                }
                if self.verbose || self.live_text {
                    eprintln!(
                        "tern: {error}; retrying in {:.1}s (attempt {attempt}/{max_retries})",
                        delay.as_secs_f64()
                    );
                }
            }
        }
    }

    /// Prints the outcome (the exit status it means is `app`'s to say).
    pub fn finish(&mut self, o: &Outcome) {
        let (subtype, is_error, error) = match &o.ending {
            Ending::Completed => ("success", false, None),
            Ending::MaxTurns => (
                "error_max_turns",
                true,
                Some(format!(
                    "Reached the maximum number of turns ({})",
                    o.num_turns
                )),
            ),
            Ending::Aborted(Reason::TimeLimit) => (
                "error_max_duration",
                true,
                Some(format!(
                    "Reached the time limit after {:.1}s (--max-duration)",
                    o.duration.as_secs_f64()
                )),
            ),
            Ending::Aborted(r) => (
                "error_during_execution",
                true,
                Some(match r {
                    Reason::Signal(s) => format!("Interrupted by signal {s}"),
                    Reason::Requested | Reason::TimeLimit => "Interrupted".to_string(),
                }),
            ),
            Ending::ModelError(m) | Ending::Blocked(m) => {
                ("error_during_execution", true, Some(m.clone()))
            }
            Ending::OutputTokensExceeded(written) => (
                "error_max_output_tokens",
                true,
                Some(format!(
                    "Reached the output token budget: {written} tokens written (--max-output-tokens-total)"
                )),
            ),
            Ending::BudgetExceeded(spent) => (
                "error_max_budget_usd",
                true,
                Some(format!(
                    "Reached the budget: ${spent:.4} spent (--max-budget-usd)"
                )),
            ),
            Ending::StructuredOutputRetries(n) => (
                "error_max_structured_output_retries",
                true,
                Some(format!(
                    "The model gave no valid StructuredOutput call in {n} tries (--json-schema)"
                )),
            ),
        };
        let terminal_reason = match &o.ending {
            Ending::Completed => "completed",
            Ending::MaxTurns => "max_turns",
            Ending::Aborted(Reason::TimeLimit) => "max_duration",
            Ending::Aborted(_) if o.aborted_in_tools => "aborted_tools",
            Ending::Aborted(_) => "aborted_streaming",
            Ending::ModelError(_) if o.api_error_status.is_some() => "api_error",
            Ending::ModelError(_) => "model_error",
            Ending::Blocked(_) => "hook_stopped",
            Ending::BudgetExceeded(_) => "budget_exhausted",
            Ending::OutputTokensExceeded(_) => "output_tokens_exhausted",
            Ending::StructuredOutputRetries(_) => "structured_output_retry_exhausted",
        };
        match self.format {
            OutputFormat::Text => {
                if let Some(e) = &error {
                    eprintln!("tern: {e}");
                } else if !self.live_text {
                    let mut text = o.result.clone();
                    if !text.ends_with('\n') {
                        text.push('\n');
                    }
                    let _ = self.out.lock().write_all(text.as_bytes());
                }
            }
            OutputFormat::Json | OutputFormat::StreamJson => {
                let mut r = obj! {
                    "type" => "result",
                    "subtype" => subtype,
                    "is_error" => is_error,
                    "duration_ms" => o.duration.as_millis() as u64,
                    "duration_api_ms" => o.api_duration.as_millis() as u64,
                    "num_turns" => o.num_turns,
                };
                if let Some(m) = r.as_object_mut() {
                    match &error {
                        None => m.insert("result", o.result.as_str()),
                        Some(e) => m.insert("errors", vec![Value::from(e.as_str())]),
                    }
                    m.insert("stop_reason", o.stop_reason.clone());
                    m.insert("session_id", self.info.session_id.as_str());
                    m.insert("total_cost_usd", o.cost_usd);
                    m.insert("usage", o.usage.to_json());
                    m.insert("permission_denials", o.denials.clone());
                    m.insert("modelUsage", self.model_usage(o));
                    m.insert("terminal_reason", terminal_reason);
                    m.insert("api_error_status", o.api_error_status.map(u32::from));
                    if let Some(t) = o.ttft {
                        m.insert("ttft_ms", t.as_millis() as u64);
                    }
                    if let Some(v) = &o.structured_output {
                        m.insert("structured_output", v.clone());
                    }
                    m.insert("uuid", new_uuid());
                }
                self.line(&r);
            }
        }
    }
}

impl Printer {
    /// Claude Code's `modelUsage`: per model, camel-cased.
    fn model_usage(&self, o: &Outcome) -> Value {
        let mut out = crate::json::Map::new();
        for m in &o.model_usage {
            out.insert(
                &m.model,
                obj! {
                    "inputTokens" => m.usage.input_tokens,
                    "outputTokens" => m.usage.output_tokens,
                    "cacheReadInputTokens" => m.usage.cache_read_input_tokens,
                    "cacheCreationInputTokens" => m.usage.cache_creation_input_tokens,
                    "webSearchRequests" => 0u64,
                    "costUSD" => m.cost_usd,
                    "contextWindow" => self.info.context_window,
                    "maxOutputTokens" => self.info.max_output_tokens,
                },
            );
        }
        Value::Object(out)
    }
}

/// A thinking block as one folded line: how much, and how it began.
pub(crate) fn folded_thinking(text: &str) -> String {
    let words = text.split_whitespace().count();
    if words == 0 {
        return "✻ thought (its text was not returned)".to_string();
    }
    let start: String = text
        .split_whitespace()
        .take(12)
        .collect::<Vec<_>>()
        .join(" ");
    let more = if words > 12 { " …" } else { "" };
    format!("✻ thought ({words} words): {start}{more}")
}
