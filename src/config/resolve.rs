//! Flags, environment and settings resolved into one [`Runtime`], a step
//! at a time: the prompt; the settings layers and plugins through the
//! trust gate; the model's endpoint and credentials; the permission rules
//! and mode; what is protected and sandboxed; the model and its limits;
//! the documents that shape the system prompt. Each step reads what the
//! ones before it settled and nothing else.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::ChildEnv;
#[cfg(feature = "mcp")]
use super::McpTimeouts;
#[cfg(feature = "repl")]
use super::repl;
use super::sandbox::{hook_files, sandbox_policy};
use super::settings::{self, Behavior, Origin, Source};
use super::{
    ConfigError, DEFAULT_BASE_URL, DEFAULT_FALLBACK_AFTER, DEFAULT_MAX_AGENT_DEPTH,
    DEFAULT_MAX_TOKENS, DEFAULT_MODEL, DEFAULT_OPENAI_URL, Discovery, Folder, Inputs, Provenance,
    Runtime, SessionChoice, choose_shell, memory, plugins, prompt, skills, trust,
};
use crate::cli::{Args, OutputFormat};
use crate::model::client::{Auth, ClientConfig};
use crate::model::{Provider, RetryPolicy};
use crate::policy::{Mode, Rule};

/// tern's environment, a variable set to nothing read as unset.
type Vars<'a> = &'a dyn Fn(&str) -> Option<String>;

pub fn resolve(args: Args, inputs: Inputs) -> Result<Runtime, ConfigError> {
    let env = |k: &str| inputs.env.non_empty(k);
    let env: Vars<'_> = &env;
    let prompt = the_prompt(&args, inputs.stdin.clone())?;
    let mut warnings: Vec<String> = ignored_flags(&args).into_iter().collect();
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
    let home = env("HOME").map(PathBuf::from);
    let settled = settle(&args, &inputs, env, &mut warnings)?;
    let layered = &settled.layered;
    let mut provenance = Provenance::default();
    let endpoint = endpoint(args.provider.clone(), layered, env, &mut provenance)?;
    let rules = rules(&args, layered, &inputs.cwd);
    let mode = mode(args.permission_mode, layered, &mut warnings)?;
    let mut extra_dirs = layered.additional_directories.clone();
    extra_dirs.extend(
        args.add_dirs
            .iter()
            .map(|d| settings::expand_path(d, &inputs.cwd, home.as_deref())),
    );
    let protected = protected(&settled, &inputs.cwd);
    let sandbox = sandbox_policy(
        &layered.sandbox,
        &layered.hooks,
        &inputs.cwd,
        &extra_dirs,
        env,
    );
    let model_choice = args
        .model
        .clone()
        .map(|m| (m, "--model"))
        .or_else(|| layered.model.clone().map(|m| (m, "settings: model")))
        .or_else(|| env("ANTHROPIC_MODEL").map(|m| (m, "ANTHROPIC_MODEL")));
    let model_explicit = model_choice.is_some();
    provenance.model = model_choice
        .as_ref()
        .map_or("default", |(_, from)| *from)
        .to_string();
    let model = model_choice.map_or_else(|| DEFAULT_MODEL.to_string(), |(m, _)| m);
    let discover = if endpoint.configured {
        None
    } else {
        Some(discovery(&inputs, env)?)
    };
    let limits = limits(&args, layered, env, &mut provenance)?;
    let documents = documents(&inputs.cwd, home.as_deref(), &settled, &rules, env);
    let system = prompt::SystemParts {
        custom: args.system_prompt.clone(),
        environment: prompt::environment(&inputs.cwd, &model),
        memory: memory::render(&documents.memory.files),
        append: args.append_system_prompt.clone(),
        skills: documents.skills,
    };
    #[cfg(feature = "voice")]
    let voice = {
        let mut v =
            crate::voice::Config::new(layered.voice.as_ref(), |k| inputs.env.get(k), &mut warnings);
        v.extra_ca_pem.clone_from(&extra_ca_pem);
        v
    };
    let telemetry = telemetry(&inputs, layered, &extra_ca_pem, &mut warnings);
    let Settled {
        transcripts,
        temp_dir,
        trust_store,
        layered,
        plugins,
        plugins_refused,
        trust,
        ..
    } = settled;
    Ok(Runtime {
        prompt,
        print: args.print,
        format: args.output_format.unwrap_or(OutputFormat::Text),
        verbose: args.verbose,
        no_tui: args.no_tui,
        persist_session: !args.no_session_persistence,
        client: ClientConfig {
            provider: endpoint.provider,
            base_url: endpoint.base_url,
            auth: endpoint.auth,
            extra_ca_pem,
            idle_timeout: millis(env, "TERN_STREAM_IDLE_TIMEOUT_MS", 120_000)?,
        },
        api_key_source: endpoint.api_key_source,
        model,
        max_tokens: limits.max_tokens,
        max_turns: args.max_turns,
        thinking: limits.thinking,
        tool_call_recovery: layered.tool_call_recovery,
        tool_search: limits.tool_search,
        mode,
        rules,
        extra_dirs,
        child_env: ChildEnv::new(
            layered.env.clone(),
            &endpoint.key_var,
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
        skill_warnings: documents.skill_warnings,
        memory_files: documents
            .memory
            .files
            .iter()
            .map(|f| f.path.clone())
            .collect(),
        memory_skipped: documents.memory.skipped,
        tools: args.tools.or_else(|| layered.tools.clone()),
        cwd: inputs.cwd,
        retry: limits.retry,
        warnings,
        stream_input: args.stream_input,
        coordinator: args.coordinator || layered.coordinator == Some(true),
        #[cfg(feature = "repl")]
        repl: repl::enabled(|k| inputs.env.get(k), layered.repl),
        #[cfg(feature = "voice")]
        voice,
        #[cfg(feature = "repl")]
        repl_memory_mib: number(env, "TERN_REPL_MEMORY_MB")?.map_or(2048, |n| u64::from(n).max(64)),
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
        context_window: limits.context_window,
        model_explicit,
        discover,
        provenance,
        settings_files: layered.files.clone(),
        settings_broken: layered.broken.clone(),
        json_schema: args.json_schema,
        fallback_after: number(env, "TERN_FALLBACK_AFTER")?.unwrap_or(DEFAULT_FALLBACK_AFTER),
        ignored: args.ignored,
        web_search: layered.web_search.clone(),
        #[cfg(any(feature = "web", feature = "repl"))]
        small_model: env("ANTHROPIC_SMALL_FAST_MODEL")
            .or_else(|| env("ANTHROPIC_DEFAULT_HAIKU_MODEL")),
        #[cfg(feature = "web")]
        web_timeout: millis(env, "TERN_WEBFETCH_TIMEOUT_MS", 30_000)?,
        #[cfg(feature = "web")]
        web_max_bytes: number(env, "TERN_WEBFETCH_MAX_BYTES")?
            .map_or(5 * 1024 * 1024, |n| n as usize),
        transcripts,
        temp_dir,
        trust,
        trust_store,
        agent_dirs: documents.agent_dirs,
        command_dirs: documents.command_dirs,
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

/// The prompt: the argument, standard input's text, or both (the piped
/// text first); empty when prompts arrive as messages on stdin.
fn the_prompt(args: &Args, stdin: Option<String>) -> Result<String, ConfigError> {
    match (args.prompt.clone(), stdin.filter(|s| !s.trim().is_empty())) {
        _ if args.stream_input => Ok(String::new()),
        (Some(p), Some(piped)) => Ok(format!("{piped}\n\n{p}")),
        (Some(p), None) => Ok(p),
        (None, Some(piped)) => Ok(piped),
        (None, None) => Err(ConfigError::Usage(
            "no prompt given: pass it as an argument or on standard input".into(),
        )),
    }
}

fn ignored_flags(args: &Args) -> Option<String> {
    if args.ignored.is_empty() {
        return None;
    }
    let names: Vec<&str> = args.ignored.iter().map(|(f, _)| f.as_str()).collect();
    Some(format!(
        "{} accepted for compatibility but not supported by tern; ignored",
        names.join(", ")
    ))
}

/// A duration in milliseconds from a variable, or `default`.
fn millis(env: Vars<'_>, k: &str, default: u64) -> Result<Duration, ConfigError> {
    match env(k) {
        None => Ok(Duration::from_millis(default)),
        Some(v) => v
            .parse::<u64>()
            .map(Duration::from_millis)
            .map_err(|_| ConfigError::Unusable(format!("{k} must be milliseconds, got {v:?}"))),
    }
}

/// A whole number from a variable, if set.
fn number(env: Vars<'_>, k: &str) -> Result<Option<u32>, ConfigError> {
    env(k)
        .map(|v| {
            v.parse::<u32>().map_err(|_| {
                ConfigError::Unusable(format!("{k} must be a whole number, got {v:?}"))
            })
        })
        .transpose()
}

/// What the settings layers and plugins came to, through the trust gate,
/// and where this run keeps what it writes.
struct Settled {
    locations: settings::Locations,
    transcripts: crate::session::transcript::Places,
    temp_dir: PathBuf,
    trust_store: trust::store::Store,
    layered: settings::Settings,
    plugins: Vec<plugins::Plugin>,
    plugins_refused: Vec<plugins::Refused>,
    trust: trust::Trust,
}

/// Reads every settings layer and the plugins they (and the command line)
/// name, then merges them through the trust gate: a project's layers count
/// only as far as the project is trusted.
fn settle(
    args: &Args,
    inputs: &Inputs,
    env: Vars<'_>,
    warnings: &mut Vec<String>,
) -> Result<Settled, ConfigError> {
    let temp_dir = inputs.env.temp_dir();
    let mut locations = settings::Locations::standard(env, &inputs.cwd);
    locations.cli = args.settings.clone();
    locations.sources = args.setting_sources.clone();
    locations.mcp_json = !args.strict_mcp;
    let transcripts = crate::session::transcript::Places::new(env, &temp_dir);
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
        env,
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
    Ok(Settled {
        locations,
        transcripts,
        temp_dir,
        trust_store,
        layered,
        plugins,
        plugins_refused,
        trust,
    })
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

/// Which server the model is asked through, and with what credentials.
struct Endpoint {
    provider: Provider,
    base_url: String,
    auth: Auth,
    api_key_source: String,
    /// The variable the key is read from (kept from commands' environment).
    key_var: String,
    /// Something names a provider, server or credential: without that, a
    /// local server is looked for instead.
    configured: bool,
}

fn endpoint(
    flag: Option<String>,
    layered: &settings::Settings,
    env: Vars<'_>,
    provenance: &mut Provenance,
) -> Result<Endpoint, ConfigError> {
    let provider_choice = flag
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
    let (base_url, from) = match (env(url_var), layered.base_url.clone()) {
        (Some(u), _) => (u, url_var),
        (None, Some(u)) => (u, "settings: baseUrl"),
        (None, None) => (default_url.to_string(), "default"),
    };
    provenance.base_url = from.to_string();
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
    Ok(Endpoint {
        provider,
        base_url,
        auth,
        api_key_source,
        key_var,
        configured,
    })
}

/// Nothing names a server or a credential anywhere: where to look for one
/// on this machine (the air-gapped default) instead of failing.
fn discovery(inputs: &Inputs, env: Vars<'_>) -> Result<Discovery, ConfigError> {
    use crate::model::discover;
    let candidates = match inputs.env.get(discover::LIST_VAR) {
        Some(list) => discover::parse_candidates(&list).map_err(ConfigError::Unusable)?,
        None => discover::default_candidates(),
    };
    Ok(Discovery {
        candidates,
        timeout: millis(
            env,
            discover::TIMEOUT_VAR,
            discover::DEFAULT_TIMEOUT.as_millis() as u64,
        )?,
    })
}

/// Every settings layer's rules, then the command line's, then the
/// sandbox's denied reads.
fn rules(args: &Args, layered: &settings::Settings, cwd: &Path) -> Vec<Rule> {
    let cli_origin = Origin {
        source: Source::Cli,
        file: "command-line flags".into(),
        base: cwd.to_path_buf(),
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
    rules.extend(super::sandbox::deny_read_rules(&layered.sandbox));
    rules
}

/// The permission mode: the flag, else the settings' `defaultMode`; never
/// bypassPermissions where a layer disables it.
fn mode(
    flag: Option<Mode>,
    layered: &settings::Settings,
    warnings: &mut Vec<String>,
) -> Result<Mode, ConfigError> {
    let mode = match (flag, &layered.default_mode) {
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
    let Some(origin) = layered
        .disable_bypass
        .as_ref()
        .filter(|_| mode == Mode::BypassPermissions)
    else {
        return Ok(mode);
    };
    if flag == Some(Mode::BypassPermissions) {
        return Err(ConfigError::Unusable(format!(
            "bypassPermissions mode is disabled by {origin}"
        )));
    }
    warnings.push(format!(
        "bypassPermissions mode is disabled by {origin}; using default"
    ));
    Ok(Mode::Default)
}

/// Files no tool may write: the hooks' scripts, the user's and the managed
/// settings, and the trust record (writing it is granting trust).
fn protected(settled: &Settled, cwd: &Path) -> Vec<PathBuf> {
    let mut protected: Vec<PathBuf> = settled
        .layered
        .hooks
        .iter()
        .flat_map(|h| hook_files(&h.command, cwd))
        .collect();
    protected.extend(settled.locations.user_dirs.iter().cloned());
    protected.push(settled.locations.managed.clone());
    protected.extend(settled.trust_store.path().map(Path::to_path_buf));
    protected
}

/// How much the model may write and think, how failures are retried, and
/// how large its window is.
struct Limits {
    max_tokens: u32,
    thinking: crate::model::thinking::Thinking,
    tool_search: crate::context::HoldBack,
    retry: RetryPolicy,
    context_window: Option<u64>,
}

fn limits(
    args: &Args,
    layered: &settings::Settings,
    env: Vars<'_>,
    provenance: &mut Provenance,
) -> Result<Limits, ConfigError> {
    let max_tokens = number(env, "CLAUDE_CODE_MAX_OUTPUT_TOKENS")?.unwrap_or(DEFAULT_MAX_TOKENS);
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
        max_retries: number(env, "TERN_MAX_RETRIES")?.unwrap_or(defaults.max_retries),
        base: millis(env, "TERN_RETRY_BASE_MS", defaults.base.as_millis() as u64)?,
        cap: defaults.cap,
        max_elapsed: Duration::from_secs(u64::from(
            number(env, "TERN_RETRY_MAX_SECS")?.unwrap_or(defaults.max_elapsed.as_secs() as u32),
        )),
    };
    let context_window = match (number(env, "TERN_CONTEXT_WINDOW")?, layered.context_window) {
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
    Ok(Limits {
        max_tokens,
        thinking,
        tool_search,
        retry,
        context_window,
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

/// The documents a session reads: memory files, skills, and the folders of
/// agent definitions and custom commands, the plugins' among them.
struct Documents {
    memory: memory::Loaded,
    skills: Vec<skills::Skill>,
    skill_warnings: Vec<String>,
    agent_dirs: Vec<Folder>,
    command_dirs: Vec<Folder>,
}

fn documents(
    cwd: &Path,
    home: Option<&Path>,
    settled: &Settled,
    rules: &[Rule],
    env: Vars<'_>,
) -> Documents {
    let memory = memory::load(
        &memory::locate(env, cwd),
        home,
        &memory::Allowed::new(env, cwd, &settled.layered.memory_imports).denying(rules),
    );
    let (mut skills, mut skill_warnings) = skills::discover(&skills::dirs(cwd, home));
    for p in &settled.plugins {
        let (theirs, why) = skills::discover_plugin(&p.name, &p.skills);
        skills.extend(
            theirs
                .into_iter()
                .filter(|t| skills.iter().all(|s| s.name != t.name))
                .collect::<Vec<_>>(),
        );
        skill_warnings.extend(why);
    }
    let mut agent_dirs = agent_dirs(
        cwd,
        home,
        env("XDG_CONFIG_HOME").map(PathBuf::from).as_deref(),
    );
    let mut command_dirs = command_dirs(cwd, home);
    // A plugin's documents after the project's and the user's: its names
    // are namespaced, so they never shadow those.
    for p in &settled.plugins {
        command_dirs.extend(p.commands.iter().cloned());
        agent_dirs.extend(p.agents.iter().cloned());
    }
    Documents {
        memory,
        skills,
        skill_warnings,
        agent_dirs,
        command_dirs,
    }
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

/// The export's settings: tern's environment, else the `env` of the user's
/// own settings (as Claude Code's settings set it); a project's `env` is
/// never read.
fn telemetry(
    inputs: &Inputs,
    layered: &settings::Settings,
    extra_ca_pem: &Option<Vec<u8>>,
    warnings: &mut Vec<String>,
) -> Option<crate::telemetry::Config> {
    let var = |k: &str| {
        inputs.env.get(k).or_else(|| {
            let set = layered.env.iter().rev().find(|(name, _)| name == k);
            set.map(|(_, v)| v.clone())
        })
    };
    crate::telemetry::Config::from_vars(var, warnings).map(|mut t| {
        t.extra_ca_pem.clone_from(extra_ca_pem);
        t
    })
}
