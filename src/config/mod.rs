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
mod sandbox;
pub mod settings;
pub(crate) mod skills;
pub(crate) mod trust;
use sandbox::{hook_files, sandbox_policy};
mod web;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::{Args, OutputFormat};

/// Overloaded answers in a row after which a turn moves to the fallback
/// model, unless TERN_FALLBACK_AFTER says otherwise.
pub const DEFAULT_FALLBACK_AFTER: u32 = 3;
use crate::model::client::{Auth, ClientConfig};
use crate::model::{Provider, RetryPolicy};
use crate::policy::{Mode, Rule};
pub use child_env::ChildEnv;
pub use documents::{Folder, read_inside};
pub use env::Env;
use settings::{Behavior, Origin, Source};

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

/// The plugins asked for: the command line's, then each settings layer's.
fn plugin_requests(
    dirs: &[String],
    cwd: &Path,
    layers: &settings::Layers,
    home: Option<&Path>,
) -> Vec<plugins::Request> {
    let mut out: Vec<plugins::Request> = dirs
        .iter()
        .map(|d| plugins::Request {
            path: settings::expand_path(d, cwd, home),
            from: "--plugin-dir".into(),
            source: Source::Cli,
        })
        .collect();
    out.extend(layers.plugin_requests(home));
    out
}

/// Where custom slash commands are read, most specific first: the
/// project's, then the user's.
fn command_dirs(cwd: &Path, home: Option<&Path>) -> Vec<Folder> {
    let mut out = vec![cwd.join(".tern/commands"), cwd.join(".claude/commands")];
    if let Some(h) = home {
        out.push(h.join(".config/tern/commands"));
        out.push(h.join(".claude/commands"));
    }
    out.into_iter().map(Folder::plain).collect()
}

/// Where agent definitions are read, most specific first.
fn agent_dirs(cwd: &Path, home: Option<&Path>, config_home: Option<&Path>) -> Vec<Folder> {
    let mut out = vec![cwd.join(".tern/agents"), cwd.join(".claude/agents")];
    if let Some(c) = config_home {
        out.push(c.join("tern/agents"));
    } else if let Some(h) = home {
        out.push(h.join(".config/tern/agents"));
    }
    if let Some(h) = home {
        out.push(h.join(".claude/agents"));
    }
    out.into_iter().map(Folder::plain).collect()
}

pub fn resolve(args: Args, inputs: Inputs) -> Result<Runtime, ConfigError> {
    let env = |k: &str| inputs.env.non_empty(k);

    let prompt = match (args.prompt, inputs.stdin.filter(|s| !s.trim().is_empty())) {
        // Prompts arrive as messages on stdin.
        _ if args.stream_input => String::new(),
        (Some(p), Some(piped)) => format!("{piped}\n\n{p}"),
        (Some(p), None) => p,
        (None, Some(piped)) => piped,
        (None, None) => {
            return Err(ConfigError::Usage(
                "no prompt given: pass it as an argument or on standard input".into(),
            ));
        }
    };

    let mut warnings = Vec::new();
    if !args.ignored.is_empty() {
        let names: Vec<&str> = args.ignored.iter().map(|(f, _)| f.as_str()).collect();
        warnings.push(format!(
            "{} accepted for compatibility but not supported by tern; ignored",
            names.join(", ")
        ));
    }
    // A stale SSL_CERT_FILE (common in containers that inherit the host's
    // environment) should not stop a run that may not even use TLS.
    let extra_ca_pem = env("SSL_CERT_FILE").and_then(|path| match std::fs::read(&path) {
        Ok(pem) => Some(pem),
        Err(e) => {
            warnings.push(format!(
                "cannot read SSL_CERT_FILE {path} ({e}); using the built-in roots only"
            ));
            None
        }
    });
    let millis = |k: &str, default: u64| -> Result<Duration, ConfigError> {
        match env(k) {
            None => Ok(Duration::from_millis(default)),
            Some(v) => v
                .parse::<u64>()
                .map(Duration::from_millis)
                .map_err(|_| ConfigError::Unusable(format!("{k} must be milliseconds, got {v:?}"))),
        }
    };
    let number = |k: &str| -> Result<Option<u32>, ConfigError> {
        env(k)
            .map(|v| {
                v.parse::<u32>().map_err(|_| {
                    ConfigError::Unusable(format!("{k} must be a whole number, got {v:?}"))
                })
            })
            .transpose()
    };

    let home = env("HOME").map(PathBuf::from);
    let temp_dir = inputs.env.temp_dir();
    let mut locations = settings::Locations::standard(&env, &inputs.cwd);
    locations.cli = args.settings.clone();
    locations.sources = args.setting_sources.clone();
    locations.mcp_json = !args.strict_mcp;
    let transcripts = crate::session::transcript::Places::new(&env, &temp_dir);
    let trust_store = trust::store::Store::beside(transcripts.preferred.as_deref());
    let mut layers = settings::read(&locations).map_err(ConfigError::Unusable)?;
    let (plugins, plugins_refused) = plugins::load(
        &plugin_requests(
            &args.plugin_dirs,
            &inputs.cwd,
            &layers,
            locations.home.as_deref(),
        ),
        &inputs.cwd,
        &locations.user_dirs,
    );
    for p in &plugins {
        layers.add_plugin(p);
    }
    let project = trust::resolved(&inputs.cwd).unwrap_or_else(|| inputs.cwd.clone());
    let home_dir = locations.home.as_deref();
    let grant = match trust::whole(
        args.trust_project,
        &env,
        args.setting_sources.as_deref(),
        trust::listed(&project, &layers.trusted_directories(home_dir)),
    ) {
        Some(why) => trust::Grant::Whole(why),
        None => {
            let (grant, problem) = trust_store.grant(&project);
            warnings.extend(problem);
            grant
        }
    };
    let mut gate = trust::Gate::new(grant);
    let layered = layers.merge(&mut gate, home_dir);
    let trust = gate.finish(project);
    warnings.extend(layered.warnings.iter().cloned());

    let mut provenance = Provenance::default();
    let provider_choice = args
        .provider
        .clone()
        .map(|p| (p, "--provider".to_string()))
        .or_else(|| {
            layered
                .provider
                .clone()
                .map(|p| (p, "settings: provider".to_string()))
        })
        .or_else(|| env("TERN_PROVIDER").map(|p| (p, "TERN_PROVIDER".to_string())));
    provenance.provider = provider_choice
        .as_ref()
        .map_or_else(|| "default".to_string(), |(_, from)| from.clone());
    let provider = match provider_choice.as_ref().map(|(p, _)| p.clone()) {
        None => Provider::Anthropic,
        Some(name) => Provider::parse(&name).ok_or_else(|| {
            ConfigError::Unusable(format!(
                "unknown provider \"{name}\" (expected anthropic or openai)"
            ))
        })?,
    };
    let (url_var, key_var, default_url) = match provider {
        Provider::Anthropic => ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", DEFAULT_BASE_URL),
        Provider::OpenAi => ("OPENAI_BASE_URL", "OPENAI_API_KEY", DEFAULT_OPENAI_URL),
    };
    let base_url = match (env(url_var), layered.base_url.clone()) {
        (Some(u), _) => {
            provenance.base_url = url_var.to_string();
            u
        }
        (None, Some(u)) => {
            provenance.base_url = "settings: baseUrl".to_string();
            u
        }
        (None, None) => {
            provenance.base_url = "default".to_string();
            default_url.to_string()
        }
    };
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(ConfigError::Unusable(format!(
            "{url_var} must start with http:// or https:// (got {base_url:?})"
        )));
    }
    let key_var = layered
        .api_key_env
        .clone()
        .unwrap_or_else(|| key_var.to_string());
    let (auth, api_key_source) = match (env(&key_var), env("ANTHROPIC_AUTH_TOKEN")) {
        (Some(k), _) if provider == Provider::Anthropic => (Auth::ApiKey(k), key_var.clone()),
        (Some(k), _) => (Auth::Bearer(k), key_var.clone()),
        (None, Some(t)) if provider == Provider::Anthropic => {
            (Auth::Bearer(t), "ANTHROPIC_AUTH_TOKEN".to_string())
        }
        _ => (Auth::None, "none".to_string()),
    };

    let cli_origin = Origin {
        source: Source::Cli,
        file: "command-line flags".into(),
        base: inputs.cwd.clone(),
    };
    let mut rules: Vec<Rule> = layered
        .rules
        .iter()
        .map(|r| Rule::parse(&r.text, r.behavior, Some(r.origin.clone())))
        .collect();
    rules.extend(
        args.allowed_tools
            .iter()
            .map(|t| Rule::parse(t, Behavior::Allow, Some(cli_origin.clone()))),
    );
    rules.extend(
        args.disallowed_tools
            .iter()
            .map(|t| Rule::parse(t, Behavior::Deny, Some(cli_origin.clone()))),
    );
    rules.extend(sandbox::deny_read_rules(&layered.sandbox));

    let mut mode = match (args.permission_mode, &layered.default_mode) {
        (Some(m), _) => m,
        (None, Some((text, origin))) => Mode::parse(text).unwrap_or_else(|| {
            warnings.push(format!(
                "{}: unknown defaultMode \"{text}\" ignored",
                origin.file
            ));
            Mode::Default
        }),
        (None, None) => Mode::Default,
    };
    if mode == Mode::BypassPermissions
        && let Some(origin) = &layered.disable_bypass
    {
        if args.permission_mode == Some(Mode::BypassPermissions) {
            return Err(ConfigError::Unusable(format!(
                "bypassPermissions mode is disabled by {origin}"
            )));
        }
        warnings.push(format!(
            "bypassPermissions mode is disabled by {origin}; using default"
        ));
        mode = Mode::Default;
    }
    let mut extra_dirs = layered.additional_directories.clone();
    extra_dirs.extend(
        args.add_dirs
            .iter()
            .map(|d| settings::expand_path(d, &inputs.cwd, home.as_deref())),
    );

    let mut protected: Vec<PathBuf> = layered
        .hooks
        .iter()
        .flat_map(|h| hook_files(&h.command, &inputs.cwd))
        .collect();
    protected.extend(locations.user_dirs.iter().cloned());
    protected.push(locations.managed.clone());
    // Writing the record is granting trust.
    protected.extend(trust_store.path().map(std::path::Path::to_path_buf));
    let sandbox = sandbox_policy(
        &layered.sandbox,
        &layered.hooks,
        &inputs.cwd,
        &extra_dirs,
        &env,
    );
    let model_choice = args
        .model
        .map(|m| (m, "--model"))
        .or_else(|| layered.model.clone().map(|m| (m, "settings: model")))
        .or_else(|| env("ANTHROPIC_MODEL").map(|m| (m, "ANTHROPIC_MODEL")));
    let model_explicit = model_choice.is_some();
    provenance.model = model_choice
        .as_ref()
        .map_or("default", |(_, from)| *from)
        .to_string();
    let model = model_choice.map_or_else(|| DEFAULT_MODEL.to_string(), |(m, _)| m);
    // Nothing names a server or a credential anywhere: look for one on
    // this machine (the air-gapped default) instead of failing.
    let configured = provider_choice.is_some()
        || layered.base_url.is_some()
        || layered.api_key_env.is_some()
        || [
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "OPENAI_BASE_URL",
            "OPENAI_API_KEY",
        ]
        .iter()
        .any(|k| env(k).is_some());
    let discover = if configured {
        None
    } else {
        use crate::model::discover;
        let candidates = match inputs.env.get(discover::LIST_VAR) {
            Some(list) => discover::parse_candidates(&list).map_err(ConfigError::Unusable)?,
            None => discover::default_candidates(),
        };
        Some(Discovery {
            candidates,
            timeout: millis(
                discover::TIMEOUT_VAR,
                discover::DEFAULT_TIMEOUT.as_millis() as u64,
            )?,
        })
    };
    let max_tokens = number("CLAUDE_CODE_MAX_OUTPUT_TOKENS")?.unwrap_or(DEFAULT_MAX_TOKENS);
    let thinking = thinking(
        (args.thinking, args.thinking_display, args.effort),
        env("MAX_THINKING_TOKENS"),
        layered.always_thinking,
    )?;
    let tool_search = match env("ENABLE_TOOL_SEARCH") {
        Some(v) => crate::context::HoldBack::parse(&v).map_err(ConfigError::Unusable)?,
        None => crate::context::HoldBack::default(),
    };
    let defaults = RetryPolicy::default();
    let retry = RetryPolicy {
        max_retries: number("TERN_MAX_RETRIES")?.unwrap_or(defaults.max_retries),
        base: millis("TERN_RETRY_BASE_MS", defaults.base.as_millis() as u64)?,
        cap: defaults.cap,
        max_elapsed: Duration::from_secs(u64::from(
            number("TERN_RETRY_MAX_SECS")?.unwrap_or(defaults.max_elapsed.as_secs() as u32),
        )),
    };

    let context_window = match (number("TERN_CONTEXT_WINDOW")?, layered.context_window) {
        (Some(n), _) => {
            provenance.context_window = "TERN_CONTEXT_WINDOW".to_string();
            Some(u64::from(n))
        }
        (None, Some(n)) => {
            provenance.context_window = "settings: contextWindow".to_string();
            Some(n)
        }
        (None, None) => None,
    };
    let memory = memory::load(
        &memory::locate(&env, &inputs.cwd),
        home.as_deref(),
        &memory::Allowed::new(&env, &inputs.cwd, &layered.memory_imports).denying(&rules),
    );
    let (mut skills, mut skill_warnings) =
        skills::discover(&skills::dirs(&inputs.cwd, home.as_deref()));
    for p in &plugins {
        let (theirs, why) = skills::discover_plugin(&p.name, &p.skills);
        skills.extend(
            theirs
                .into_iter()
                .filter(|t| skills.iter().all(|s| s.name != t.name))
                .collect::<Vec<_>>(),
        );
        skill_warnings.extend(why);
    }
    #[cfg(feature = "voice")]
    let voice = {
        let mut v =
            crate::voice::Config::new(layered.voice.as_ref(), |k| inputs.env.get(k), &mut warnings);
        v.extra_ca_pem.clone_from(&extra_ca_pem);
        v
    };
    // tern's environment, else the `env` of the user's own settings (as
    // Claude Code's settings set it); a project's `env` is never read.
    let otel_var = |k: &str| {
        inputs.env.get(k).or_else(|| {
            let set = layered.env.iter().rev().find(|(name, _)| name == k);
            set.map(|(_, v)| v.clone())
        })
    };
    let telemetry = crate::telemetry::Config::from_vars(otel_var, &mut warnings).map(|mut t| {
        t.extra_ca_pem.clone_from(&extra_ca_pem);
        t
    });
    let system = prompt::SystemParts {
        custom: args.system_prompt,
        environment: prompt::environment(&inputs.cwd, &model),
        memory: memory::render(&memory.files),
        append: args.append_system_prompt,
        skills,
    };

    let agent_dirs = agent_dirs(
        &inputs.cwd,
        home.as_deref(),
        env("XDG_CONFIG_HOME").map(PathBuf::from).as_deref(),
    );
    let mut command_dirs = command_dirs(&inputs.cwd, home.as_deref());
    // A plugin's documents after the project's and the user's: its names
    // are namespaced, so they never shadow those.
    let mut agent_dirs = agent_dirs;
    for p in &plugins {
        command_dirs.extend(p.commands.iter().cloned());
        agent_dirs.extend(p.agents.iter().cloned());
    }
    Ok(Runtime {
        prompt,
        print: args.print,
        format: args.output_format.unwrap_or(OutputFormat::Text),
        verbose: args.verbose,
        no_tui: args.no_tui,
        persist_session: !args.no_session_persistence,
        client: ClientConfig {
            provider,
            base_url,
            auth,
            extra_ca_pem,
            idle_timeout: millis("TERN_STREAM_IDLE_TIMEOUT_MS", 120_000)?,
        },
        api_key_source,
        model,
        max_tokens,
        max_turns: args.max_turns,
        thinking,
        tool_call_recovery: layered.tool_call_recovery,
        tool_search,
        mode,
        rules,
        extra_dirs,
        child_env: ChildEnv::new(
            layered.env.clone(),
            &key_var,
            &layered.scrub_env,
            &layered.pass_env,
        ),
        sandbox,
        // Only a sandbox the user turned on lets its commands run unasked.
        sandbox_auto_allow: layered.sandbox.enabled_by_user
            && layered.sandbox.auto_allow_bash.unwrap_or(true),
        protected,
        hooks: layered.hooks,
        system,
        skill_warnings,
        memory_files: memory.files.iter().map(|f| f.path.clone()).collect(),
        memory_skipped: memory.skipped,
        tools: args.tools.or_else(|| layered.tools.clone()),
        cwd: inputs.cwd,
        retry,
        warnings,
        stream_input: args.stream_input,
        coordinator: args.coordinator || layered.coordinator == Some(true),
        #[cfg(feature = "repl")]
        repl: repl::enabled(|k| inputs.env.get(k), layered.repl),
        #[cfg(feature = "voice")]
        voice,
        #[cfg(feature = "repl")]
        repl_memory_mib: number("TERN_REPL_MEMORY_MB")?.map_or(2048, |n| u64::from(n).max(64)),
        mcp_settings: layered.mcp_servers.clone(),
        #[cfg(feature = "mcp")]
        mcp_approval: layered.mcp_approval.clone(),
        mcp_configs: args.mcp_configs.clone(),
        #[cfg(feature = "mcp")]
        strict_mcp: args.strict_mcp,
        include_partial: args.include_partial,
        sdk_permissions: args.permission_prompt_tool.as_deref() == Some("stdio"),
        bypass_allowed: layered.disable_bypass.is_none(),
        session: SessionChoice {
            resume: args.resume,
            continue_latest: args.continue_latest,
            fork: args.fork_session,
            id: args.session_id,
        },
        fallback_models: args.fallback_models,
        max_budget_usd: args.max_budget_usd,
        max_output_tokens_total: args.max_output_tokens_total,
        deadline: args.max_duration.map(|d| std::time::Instant::now() + d),
        context_window,
        model_explicit,
        discover,
        provenance,
        settings_files: layered.files.clone(),
        settings_broken: layered.broken.clone(),
        json_schema: args.json_schema,
        fallback_after: number("TERN_FALLBACK_AFTER")?.unwrap_or(DEFAULT_FALLBACK_AFTER),
        ignored: args.ignored,
        web_search: layered.web_search.clone(),
        #[cfg(any(feature = "web", feature = "repl"))]
        small_model: env("ANTHROPIC_SMALL_FAST_MODEL")
            .or_else(|| env("ANTHROPIC_DEFAULT_HAIKU_MODEL")),
        #[cfg(feature = "web")]
        web_timeout: millis("TERN_WEBFETCH_TIMEOUT_MS", 30_000)?,
        #[cfg(feature = "web")]
        web_max_bytes: number("TERN_WEBFETCH_MAX_BYTES")?.map_or(5 * 1024 * 1024, |n| n as usize),
        transcripts,
        temp_dir,
        trust,
        trust_store,
        agent_dirs,
        command_dirs,
        plugins,
        plugins_refused,
        max_agent_depth: inputs
            .env
            .get("TERN_MAX_AGENT_DEPTH")
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEFAULT_MAX_AGENT_DEPTH),
        #[cfg(feature = "mcp")]
        mcp_timeouts: McpTimeouts::from_env(&inputs.env),
        #[cfg(feature = "mcp")]
        mcp_accept_defaults: inputs.env.get("TERN_MCP_ELICITATION").as_deref()
            == Some("accept-defaults"),
        idle_notify: Duration::from_millis(
            inputs
                .env
                .get("TERN_IDLE_NOTIFY_MS")
                .and_then(|v| v.parse().ok())
                .unwrap_or(60_000),
        ),
        shell: choose_shell(inputs.env.get("PATH").as_deref()),
        telemetry,
        env: inputs.env,
    })
}

/// The thinking asked for: a flag, else `MAX_THINKING_TOKENS`, else the
/// settings' `alwaysThinkingEnabled` (adaptive); none otherwise.
fn thinking(
    (flag, display, effort): (
        Option<crate::model::thinking::Mode>,
        Option<crate::model::thinking::Display>,
        Option<crate::model::thinking::Effort>,
    ),
    budget_var: Option<String>,
    always: Option<bool>,
) -> Result<crate::model::thinking::Thinking, ConfigError> {
    use crate::model::thinking::{Mode, Thinking};
    let from_env = budget_var
        .map(|v| {
            Mode::budget(&v).map_err(|e| ConfigError::Unusable(format!("MAX_THINKING_TOKENS: {e}")))
        })
        .transpose()?;
    let mode = flag
        .or(from_env)
        .or((always == Some(true)).then_some(Mode::Adaptive))
        .unwrap_or_default();
    Ok(Thinking {
        mode,
        display,
        effort,
    })
}

#[cfg(test)]
mod tests;
