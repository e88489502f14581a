//! The control plane: flags and environment resolved into one immutable
//! runtime configuration, from which the client, the tools and the policy
//! are built. (Settings files, managed policy and memory files join here
//! with the permission work.)

mod child_env;
pub(crate) mod documents;
mod env;
pub(crate) mod memory;
pub(crate) mod plugins;
pub(crate) mod prompt;
#[cfg(feature = "repl")]
mod repl;
mod resolve;
mod sandbox;
pub mod settings;
pub(crate) mod skills;
pub(crate) mod trust;
mod web;

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::cli::OutputFormat;

/// Overloaded answers in a row after which a turn moves to the fallback
/// model, unless TERN_FALLBACK_AFTER says otherwise.
pub const DEFAULT_FALLBACK_AFTER: u32 = 3;
use crate::model::RetryPolicy;
use crate::model::client::{Auth, ClientConfig};
use crate::policy::{Mode, Rule};
pub use child_env::ChildEnv;
pub use documents::{Folder, read_inside};
pub use env::Env;
pub use resolve::resolve;

pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// Side questions (WebFetch's about a page, the REPL's `haiku()`), on
/// Anthropic's own API.
#[cfg(any(feature = "web", feature = "repl"))]
pub const DEFAULT_SMALL_MODEL: &str = "claude-haiku-4-5";
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
pub const DEFAULT_OPENAI_URL: &str = "https://api.openai.com";
pub const DEFAULT_MAX_TOKENS: u32 = 32_000;
/// How deep sub-agents may nest unless TERN_MAX_AGENT_DEPTH says otherwise.
pub const DEFAULT_MAX_AGENT_DEPTH: u32 = 2;

pub struct Runtime {
    pub(crate) prompt: String,
    pub(crate) print: bool,
    pub(crate) format: OutputFormat,
    pub(crate) verbose: bool,
    /// `--no-tui`.
    #[cfg_attr(not(feature = "tui"), allow(dead_code))]
    pub(crate) no_tui: bool,
    pub(crate) persist_session: bool,
    pub(crate) client: ClientConfig,
    /// Where the credentials came from, for `system/init`.
    pub(crate) api_key_source: String,
    pub(crate) model: String,
    pub(crate) max_tokens: u32,
    pub(crate) max_turns: Option<u32>,
    /// What the model is asked to think (`model::thinking`).
    pub(crate) thinking: crate::model::thinking::Thinking,
    /// The settings' `toolCallRecovery` (see [`Runtime::recovers_calls`]).
    pub(crate) tool_call_recovery: Option<bool>,
    /// When MCP tools wait behind ToolSearch (`ENABLE_TOOL_SEARCH`).
    pub(crate) tool_search: crate::context::HoldBack,
    pub(crate) mode: Mode,
    /// Rules from every settings layer and the command line, with origins.
    pub(crate) rules: Vec<Rule>,
    /// Added working directories (settings and --add-dir).
    pub(crate) extra_dirs: Vec<PathBuf>,
    /// Hooks from the settings layers.
    pub(crate) hooks: Vec<settings::HookEntry>,
    /// The environment of the commands, hooks and servers tern starts.
    pub(crate) child_env: ChildEnv,
    /// Set when Bash commands run sandboxed.
    pub(crate) sandbox: Option<crate::sandbox::SandboxPolicy>,
    /// Sandboxed commands that would ask run without asking.
    pub(crate) sandbox_auto_allow: bool,
    /// Beyond the built-in names: files whose change would make tern run
    /// code or allow more (hook scripts, the user's settings folders,
    /// managed policy). Writing them always asks, outside bypass mode.
    pub(crate) protected: Vec<PathBuf>,
    /// The system prompt's parts, composed once the window is known.
    pub(crate) system: prompt::SystemParts,
    /// Skills that were found but left out, and why.
    pub(crate) skill_warnings: Vec<String>,
    /// Memory files read, and those left out (outside the repository).
    pub(crate) memory_files: Vec<PathBuf>,
    pub(crate) memory_skipped: Vec<memory::Skipped>,
    /// `--tools` / the `tools` setting: only these built-in tools.
    pub(crate) tools: Option<Vec<String>>,
    pub(crate) cwd: PathBuf,
    pub(crate) retry: RetryPolicy,
    /// Problems worth telling the user that do not stop the run.
    pub(crate) warnings: Vec<String>,
    pub(crate) session: SessionChoice,
    /// `--input-format stream-json`: the SDK drives the session over stdin.
    pub(crate) stream_input: bool,
    /// `--coordinator` or the `coordinator` setting.
    pub(crate) coordinator: bool,
    /// The REPL tool is offered (CLAUDE_CODE_REPL, TERN_REPL, `repl.enabled`).
    #[cfg(feature = "repl")]
    pub(crate) repl: bool,
    /// The most memory one REPL context may use, in MiB
    /// (TERN_REPL_MEMORY_MB; 2048 unless set, at least 64).
    #[cfg(feature = "repl")]
    pub(crate) repl_memory_mib: u64,
    /// Voice input: the recorder, the speech server (`voice` setting,
    /// TERN_VOICE_*).
    #[cfg(feature = "voice")]
    pub(crate) voice: crate::voice::Config,
    /// MCP servers: from settings layers, `--mcp-config`, strictness.
    pub(crate) mcp_settings: Vec<(String, crate::json::Value, bool)>,
    /// Which project servers (`.mcp.json`, project settings) may start.
    #[cfg(feature = "mcp")]
    pub(crate) mcp_approval: settings::McpApproval,
    pub(crate) mcp_configs: Vec<String>,
    #[cfg(feature = "mcp")]
    pub(crate) strict_mcp: bool,
    pub(crate) include_partial: bool,
    /// `--permission-prompt-tool stdio`.
    pub(crate) sdk_permissions: bool,
    /// No settings layer disables bypassPermissions mode (a mode a
    /// client may switch to later, e.g. over ACP, is held to it too).
    pub(crate) bypass_allowed: bool,
    /// `--fallback-model`: tried in order when the model is unavailable.
    pub(crate) fallback_models: Vec<String>,
    pub(crate) max_budget_usd: Option<f64>,
    /// `--max-output-tokens-total`.
    pub(crate) max_output_tokens_total: Option<u64>,
    /// `--max-duration`, counted from when the flags were read.
    pub(crate) deadline: Option<std::time::Instant>,
    /// Set by `contextWindow` or TERN_CONTEXT_WINDOW; otherwise known
    /// from the model's name or asked of the server.
    pub(crate) context_window: Option<u64>,
    /// The model was named (flag, setting or ANTHROPIC_MODEL), not defaulted.
    pub(crate) model_explicit: bool,
    /// Set when nothing says which server to use: the local servers to
    /// look for before the session starts.
    pub(crate) discover: Option<Discovery>,
    /// Where each of the endpoint's facts came from, for `tern doctor`.
    pub(crate) provenance: Provenance,
    /// The settings files read, and those skipped with their problem.
    pub(crate) settings_files: Vec<String>,
    pub(crate) settings_broken: Vec<String>,
    /// `--json-schema`.
    pub(crate) json_schema: Option<crate::json::Value>,
    /// Overloaded answers in a row before the fallback model takes over
    /// (TERN_FALLBACK_AFTER, default 3).
    pub(crate) fallback_after: u32,
    /// Flags accepted but not acted on: (flag, why).
    pub(crate) ignored: Vec<(String, &'static str)>,
    /// `webSearch` from the settings layers.
    pub(crate) web_search: settings::WebSearchSettings,
    /// ANTHROPIC_SMALL_FAST_MODEL (or ANTHROPIC_DEFAULT_HAIKU_MODEL): the
    /// model side questions go to.
    #[cfg(any(feature = "web", feature = "repl"))]
    pub(crate) small_model: Option<String>,
    /// WebFetch's limits: TERN_WEBFETCH_TIMEOUT_MS, TERN_WEBFETCH_MAX_BYTES.
    #[cfg(feature = "web")]
    pub(crate) web_timeout: Duration,
    #[cfg(feature = "web")]
    pub(crate) web_max_bytes: usize,
    /// tern's environment as read at the start: `${VAR}` in MCP
    /// configurations (files, flags, an SDK's `initialize`) expands from
    /// it. Every other knob that comes from a variable is a field here.
    pub(crate) env: Env,
    /// Plugins that loaded, and the folders that were refused.
    pub(crate) plugins: Vec<plugins::Plugin>,
    pub(crate) plugins_refused: Vec<plugins::Refused>,
    /// Where agent definitions and custom slash commands are read (the
    /// project's and the user's folders): text the model or the person
    /// reads, which runs nothing and can only narrow.
    pub(crate) agent_dirs: Vec<Folder>,
    pub(crate) command_dirs: Vec<Folder>,
    /// `TMPDIR`, else `/tmp`: the scratch folder and the transcripts'
    /// fallback are made there.
    pub(crate) temp_dir: PathBuf,
    /// Where transcripts are kept (TERN_HOME, XDG_DATA_HOME or HOME, and
    /// the temporary fallback).
    pub(crate) transcripts: crate::session::transcript::Places,
    /// How deep sub-agents may nest (TERN_MAX_AGENT_DEPTH, default 2).
    pub(crate) max_agent_depth: u32,
    /// MCP_TIMEOUT, MCP_TOOL_TIMEOUT and TERN_MCP_FIRST_WAIT_MS.
    #[cfg(feature = "mcp")]
    pub(crate) mcp_timeouts: McpTimeouts,
    /// TERN_MCP_ELICITATION=accept-defaults: with nobody to ask (`-p`), a
    /// server's form is accepted with the defaults its own schema gives.
    /// The user's choice for unattended runs (CI, the conformance suite);
    /// it answers only with what the server proposed, never with anything
    /// of the session's, and it is read from tern's own environment,
    /// which a repository cannot set.
    #[cfg(feature = "mcp")]
    pub(crate) mcp_accept_defaults: bool,
    /// How long the line-mode prompt waits, after an answer, before
    /// Notification hooks hear `idle_prompt` (TERN_IDLE_NOTIFY_MS, 60 s
    /// as in Claude Code).
    pub(crate) idle_notify: Duration,
    /// The shell Bash commands run in: `bash` when tern's `PATH` has it,
    /// else `/bin/sh`.
    pub(crate) shell: String,
    /// How far the project's own settings were trusted, and what of them
    /// was left out.
    pub(crate) trust: trust::Trust,
    /// Where a person's answers about directories are kept.
    pub(crate) trust_store: trust::store::Store,
    /// OpenTelemetry export (CLAUDE_CODE_ENABLE_TELEMETRY and the
    /// `OTEL_*` variables); `None`, the default, sends nothing.
    pub(crate) telemetry: Option<crate::telemetry::Config>,
}

/// How long MCP servers may take.
#[cfg(feature = "mcp")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McpTimeouts {
    /// MCP_TIMEOUT (ms, default 30 s): to start.
    pub start: Duration,
    /// MCP_TOOL_TIMEOUT (ms, default 600 s): one tool call.
    pub tool: Duration,
    /// TERN_MCP_FIRST_WAIT_MS (default 5 s): how long the first turn
    /// waits for servers still starting (slower ones join later); never
    /// much past `start`, when every server has settled anyway.
    pub first_wait: Duration,
}

#[cfg(feature = "mcp")]
impl McpTimeouts {
    /// From the variables; an unparsable value is ignored (the default
    /// holds), as it always was.
    fn from_env(env: &Env) -> McpTimeouts {
        let ms = |k: &str, default: u64| {
            Duration::from_millis(env.get(k).and_then(|v| v.parse().ok()).unwrap_or(default))
        };
        let start = ms("MCP_TIMEOUT", 30_000);
        McpTimeouts {
            start,
            tool: ms("MCP_TOOL_TIMEOUT", 600_000),
            // A little margin lets the last start timeout land before the
            // first turn looks.
            first_wait: ms("TERN_MCP_FIRST_WAIT_MS", 5_000).min(start + Duration::from_millis(500)),
        }
    }
}

/// bash when `PATH` has it, else the POSIX sh every system has.
fn choose_shell(path: Option<&str>) -> String {
    let on_path =
        path.is_some_and(|p| std::env::split_paths(p).any(|dir| dir.join("bash").is_file()));
    if on_path { "bash" } else { "/bin/sh" }.to_string()
}

/// Where to look for a local model server, and how long each may take.
#[derive(Debug, Clone)]
pub struct Discovery {
    pub candidates: Vec<crate::model::discover::Candidate>,
    pub timeout: Duration,
}

/// The source of the provider, base URL and model: a flag, an environment
/// variable, a settings file, discovery, or the built-in default.
#[derive(Debug, Clone, Default)]
pub struct Provenance {
    pub provider: String,
    pub base_url: String,
    pub model: String,
    pub context_window: String,
}

/// Which session this run belongs to.
#[derive(Debug, Clone, Default)]
pub struct SessionChoice {
    /// `--resume <id>`.
    pub resume: Option<String>,
    /// `--continue`.
    pub continue_latest: bool,
    /// `--fork-session`.
    pub fork: bool,
    /// `--session-id`.
    pub id: Option<String>,
}

#[derive(Debug)]
pub enum ConfigError {
    /// Bad invocation: exit status 2.
    Usage(String),
    /// Valid invocation that cannot run here: exit status 1.
    Unusable(String),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Usage(m) | ConfigError::Unusable(m) => f.write_str(m),
        }
    }
}

/// Everything resolution reads from the outside world, so tests can
/// supply their own.
pub struct Inputs {
    pub env: Env,
    pub cwd: PathBuf,
    /// Standard input's text when it is not a terminal.
    pub stdin: Option<String>,
}

impl Inputs {
    /// This process's environment and working directory, with `stdin`
    /// (the text piped in, if any).
    pub fn from_process(stdin: Option<String>) -> Result<Inputs, ConfigError> {
        let cwd = std::env::current_dir().map_err(|e| {
            ConfigError::Unusable(format!("cannot determine the working directory: {e}"))
        })?;
        Ok(Inputs {
            env: Env::process(),
            cwd,
            stdin,
        })
    }

    /// Where this environment keeps transcripts (for the subcommands that
    /// read no settings).
    pub fn transcripts(&self) -> crate::session::transcript::Places {
        crate::session::transcript::Places::new(&|k| self.env.get(k), &self.env.temp_dir())
    }
}

impl Runtime {
    /// Where a person's "always" answers are saved.
    pub(crate) fn local_rules(&self) -> settings::LocalRules {
        settings::LocalRules {
            project: self.cwd.clone(),
            store: self.trust_store.clone(),
        }
    }

    /// tern's state folder: where transcripts go, less `projects`
    /// (TERN_HOME, XDG_DATA_HOME/tern, ~/.local/share/tern, else a
    /// folder of this user's in the temp folder).
    pub fn state_root(&self) -> std::path::PathBuf {
        let places = &self.transcripts;
        let projects = places.preferred.as_ref().unwrap_or(&places.fallback);
        projects
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_else(|| projects.clone())
    }

    /// Talking to the real API needs credentials; a local server may not.
    /// (With nothing configured at all, discovery decides instead.)
    pub fn check_credentials(&self) -> Result<(), ConfigError> {
        if self.discover.is_some() {
            return Ok(());
        }
        if matches!(self.client.auth, Auth::None) && self.client.base_url == DEFAULT_BASE_URL {
            return Err(ConfigError::Unusable(
                "no credentials: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN), or point ANTHROPIC_BASE_URL at a local server".into(),
            ));
        }
        if matches!(self.client.auth, Auth::None) && self.client.base_url == DEFAULT_OPENAI_URL {
            return Err(ConfigError::Unusable(
                "no credentials: set OPENAI_API_KEY (or name another variable with the apiKeyEnv setting), or point OPENAI_BASE_URL at a local server".into(),
            ));
        }
        Ok(())
    }
}

impl Runtime {
    /// Whether tool calls a model writes as text are made calls: as the
    /// settings' `toolCallRecovery` says, else on for a chat completions
    /// server on this machine or its network (found or configured: where
    /// small models without a tool-call template run), off for the rest.
    pub(crate) fn recovers_calls(&self) -> bool {
        self.tool_call_recovery.unwrap_or_else(|| {
            self.client.provider == crate::model::Provider::OpenAi
                && crate::policy::url::parse(&self.client.base_url).is_ok_and(|u| u.host.is_local())
        })
    }

    /// Points the session at a discovered local server: its wire format
    /// and URL, a model it lists (unless one was named), its window.
    /// Returns notes worth telling the user.
    pub fn use_discovered(&mut self, found: &crate::model::discover::Found) -> Vec<String> {
        use crate::model::discover;
        let mut notes = Vec::new();
        let wanted = self.model_explicit.then_some(self.model.as_str());
        let (model, note) = discover::choose_model(found, wanted);
        notes.extend(note);
        notes.extend(found.note.clone());
        let origin = format!("discovered: {} at {}", found.kind.name(), found.url);
        self.client = discover::client_config(
            found,
            self.client.extra_ca_pem.take(),
            self.client.idle_timeout,
        );
        if !self.model_explicit {
            self.model = model;
            self.provenance.model = origin.clone();
            self.system.environment = prompt::environment(&self.cwd, &self.model);
        }
        if self.context_window.is_none()
            && let Some(w) = found.context_window
        {
            self.context_window = Some(w);
            self.provenance.context_window = origin.clone();
        }
        self.provenance.provider = origin.clone();
        self.provenance.base_url = origin;
        self.api_key_source = "none".to_string();
        self.discover = None;
        notes
    }
}

#[cfg(test)]
mod tests;
