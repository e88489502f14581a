//! The observation plane: turns the loop's events into what a person or a
//! program reads. `text` prints the answer, `json` one result object,
//! `stream-json` one NDJSON line per event (Claude Code's shapes).
//!
//! A closed stdout (`tern -p … | head -1`) is not an error: writes after
//! that are dropped quietly.

pub mod approve;
pub mod commands;
pub mod line;
pub mod sdk;

use std::io::Write;

use crate::abort::Reason;
use crate::agent::{Ending, Event, Outcome};
use crate::cli::OutputFormat;
use crate::json::Value;
use crate::obj;
use crate::session::new_uuid;

pub struct SessionInfo {
    pub session_id: String,
    pub cwd: String,
    pub model: String,
    pub tools: Vec<&'static str>,
    pub permission_mode: &'static str,
    pub api_key_source: String,
    /// What the Bash sandbox enforces, for `system/init`.
    pub sandbox: Value,
    /// `[{name, status}]` of the MCP servers.
    pub mcp_servers: Vec<Value>,
    /// The local server found when nothing was configured.
    pub discovered: Option<Value>,
    /// `{files, not_read: [{path, imported_by, reason}]}`: memory files
    /// read, and those left out because they lie outside the repository.
    pub memory: Value,
}

/// The Claude Code release line whose flags and stream-json tern matches.
pub const CLAUDE_CODE_SURFACE: &str = "2.1.0";

pub struct Printer {
    format: OutputFormat,
    /// Stream text to the terminal as it arrives (interactive text mode).
    live_text: bool,
    verbose: bool,
    info: SessionInfo,
    out: std::io::Stdout,
    wrote_live: bool,
    /// `--include-partial-messages`: raw stream events as `stream_event` lines.
    pub include_partial: bool,
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
        }
    }

    fn line(&mut self, v: &Value) {
        let mut text = v.to_json();
        text.push('\n');
        let mut out = self.out.lock();
        let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    }

    fn envelope(&self, kind: &str, message: &Value) -> Value {
        obj! {
            "type" => kind,
            "message" => message.clone(),
            "parent_tool_use_id" => Value::Null,
            "session_id" => self.info.session_id.as_str(),
            "uuid" => new_uuid(),
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
            "tools" => self.info.tools.iter().map(|t| Value::from(*t)).collect::<Vec<_>>(),
            "mcp_servers" => self.info.mcp_servers.clone(),
            "model" => self.info.model.as_str(),
            "permissionMode" => self.info.permission_mode,
            "slash_commands" => Vec::<Value>::new(),
            "apiKeySource" => self.info.api_key_source.as_str(),
            "output_style" => "default",
            "tern_version" => env!("CARGO_PKG_VERSION"),
            // The Agent SDK reads this to judge compatibility: the Claude
            // Code release whose headless surface tern follows (COMPAT.md).
            "claude_code_version" => CLAUDE_CODE_SURFACE,
            "sandbox" => self.info.sandbox.clone(),
            "discovered_server" => self.info.discovered.clone(),
            "memory" => self.info.memory.clone(),
            "uuid" => new_uuid(),
        };
        self.line(&init);
    }

    pub fn event(&mut self, ev: Event<'_>) {
        match ev {
            // The prompt is the caller's own; it is not echoed.
            Event::Prompt(_) => {}
            Event::TextDelta(t) => {
                if self.live_text {
                    let mut out = self.out.lock();
                    let _ = out.write_all(t.as_bytes()).and_then(|()| out.flush());
                    self.wrote_live = true;
                }
            }
            Event::Assistant(m) => {
                if self.format == OutputFormat::StreamJson {
                    let v = self.envelope("assistant", m);
                    self.line(&v);
                }
                if self.live_text && self.wrote_live {
                    let _ = self.out.lock().write_all(b"\n");
                    self.wrote_live = false;
                }
                if self.verbose {
                    for call in tool_uses(m) {
                        eprintln!("tern: tool {call}");
                    }
                }
            }
            Event::ToolResults(m) => {
                if self.format == OutputFormat::StreamJson {
                    let v = self.envelope("user", m);
                    self.line(&v);
                }
            }
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
                ..
            } => {
                if self.format == OutputFormat::StreamJson {
                    let v = obj! {
                        "type" => "system",
                        "subtype" => "compact_boundary",
                        "compact_metadata" => obj! { "trigger" => trigger, "pre_tokens" => pre_tokens },
                        "session_id" => self.info.session_id.as_str(),
                        "uuid" => new_uuid(),
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

    /// Prints the outcome and returns the exit status.
    pub fn finish(&mut self, o: &Outcome) -> i32 {
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
            Ending::Aborted(r) => (
                "error_during_execution",
                true,
                Some(match r {
                    Reason::Signal(s) => format!("Interrupted by signal {s}"),
                    Reason::Requested => "Interrupted".to_string(),
                }),
            ),
            Ending::ModelError(m) | Ending::Blocked(m) => {
                ("error_during_execution", true, Some(m.clone()))
            }
            Ending::BudgetExceeded(spent) => (
                "error_max_budget_usd",
                true,
                Some(format!(
                    "Reached the budget: ${spent:.4} spent (--max-budget-usd)"
                )),
            ),
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
                    m.insert("uuid", new_uuid());
                }
                self.line(&r);
            }
        }
        match &o.ending {
            Ending::Completed => 0,
            Ending::Aborted(Reason::Signal(s)) => 128 + s,
            _ => 1,
        }
    }
}

fn tool_uses(message: &Value) -> Vec<String> {
    message
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b.str_field("type") == Some("tool_use"))
                .map(|b| {
                    format!(
                        "{} {}",
                        b.str_field("name").unwrap_or("?"),
                        b.get("input").map(Value::to_json).unwrap_or_default()
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}
