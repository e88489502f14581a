//! Wires one invocation together: configuration → client, tools, policy →
//! agent loop → printer. Returns the process exit status.

use std::io::{IsTerminal, Read};
use std::rc::Rc;

use smol::LocalExecutor;
use smol::io::AsyncReadExt;

use crate::abort::{Abort, Reason};
use crate::agent::hooks::{Hooks, SessionFacts};
use crate::agent::pipeline::{Approver, Pipeline};
use crate::agent::{Agent, Event, Settings, subagent};
use crate::cli::Args;
use crate::config::settings::Behavior;
use crate::config::{self, ConfigError, Inputs};
use crate::frontend::sdk;
use crate::frontend::{Printer, SessionInfo};
use crate::frontend::{commands, line};
use crate::json::{Map, Value};
use crate::model::client::Client;
use crate::obj;
use crate::policy::Policy;
use crate::session::transcript::{self, Transcript};
use crate::session::{checkpoint, new_uuid, resume, store};
use crate::tools::{Registry, ToolContext};

mod doctor;
mod lines;
mod subcommands;
#[cfg(feature = "web")]
mod web;
pub use doctor::doctor;
pub use subcommands::{config_permissions, mcp_list, rewind, sessions};
#[cfg(feature = "mcp")]
mod mcp_start;

pub async fn run(ex: &'static LocalExecutor<'static>, mut args: Args) -> i32 {
    let stdin_is_terminal = std::io::stdin().is_terminal();
    let interactive = !args.print && stdin_is_terminal && !args.stream_input;
    if interactive && args.prompt.is_none() {
        // Line mode may start without a first prompt.
        args.prompt = Some(String::new());
    }
    // With --input-format stream-json, stdin carries the SDK's messages.
    let stdin = if stdin_is_terminal || args.stream_input {
        None
    } else {
        smol::unblock(|| {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .ok()
                .map(|_| text)
        })
        .await
    };
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("tern: cannot determine the working directory: {e}");
            return 1;
        }
    };
    let env = |k: &str| std::env::var(k).ok();
    let inputs = Inputs {
        env: &env,
        cwd,
        stdin,
    };
    let mut rt =
        match config::resolve(args, inputs).and_then(|rt| rt.check_credentials().map(|()| rt)) {
            Ok(rt) => rt,
            Err(e @ ConfigError::Usage(_)) => {
                eprintln!("tern: {e}\nTry 'tern --help'.");
                return 2;
            }
            Err(e @ ConfigError::Unusable(_)) => {
                eprintln!("tern: {e}");
                return 1;
            }
        };
    for warning in &rt.warnings {
        eprintln!("tern: warning: {warning}");
    }
    let discovered = match discover_server(&mut rt).await {
        Ok(d) => d,
        Err(message) => {
            eprintln!("tern: {message}");
            return 1;
        }
    };
    let client = match Client::new(&rt.client) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tern: {e}");
            return 1;
        }
    };

    let abort = Abort::new();
    watch_signals(ex, abort.clone());

    let opened = match open_session(&env, &rt) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("tern: {e}");
            return 1;
        }
    };
    let OpenedSession {
        session_id,
        mut transcript,
        history,
    } = opened;
    let checkpoints = transcript
        .as_ref()
        .map(|t| checkpoint::Checkpoints::open(t.path()));
    // Made private (mkdtemp) and used through a descriptor: sandboxed
    // commands may write to /tmp.
    let scratch = match crate::tools::scratch::Scratch::create() {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "tern: cannot create a scratch folder in {} ({e})",
                std::env::temp_dir().display()
            );
            return 1;
        }
    };
    let mut registry = Registry::builtin();
    let (web_search, web_search_note) = rt.web_search_tool();
    if let Some(note) = web_search_note {
        eprintln!("tern: warning: {note}");
    }
    if let Some(definition) = web_search {
        registry.add_server_tool("WebSearch", definition);
    }
    // A bare tool name in the deny list removes the tool from view entirely.
    let hidden: Vec<String> = rt
        .rules
        .iter()
        .filter(|r| r.behavior == Behavior::Deny && r.spec.is_none())
        .map(|r| r.tool.clone())
        .collect();
    registry.retain(|name| !hidden.iter().any(|h| h == name));
    // Without skills, the Skill tool would only cost tokens.
    let skills = Rc::new(rt.system.skills.clone());
    if skills.is_empty() {
        registry.retain(|name| name != "Skill");
    }
    for w in &rt.skill_warnings {
        eprintln!("tern: warning: {w}");
    }
    if let Some(only) = &rt.tools {
        for unknown in only.iter().filter(|t| !registry.has(t)) {
            eprintln!(
                "tern: warning: --tools names '{unknown}', which is not a built-in tool; ignored"
            );
        }
        registry.retain(|name| only.iter().any(|t| t == name));
    }
    // Coordinator mode: the top level only delegates; workers get the
    // other tools (but not Agent: they do the work) and a shared scratchpad.
    let worker_tools: Vec<String> = if rt.coordinator {
        registry
            .names()
            .into_iter()
            .filter(|t| *t != "Agent")
            .collect()
    } else {
        registry.names()
    };
    let server_tools = registry.server_tools();
    let scratchpad = rt.coordinator.then(|| scratch.path().join("scratchpad"));
    if let Some(dir) = &scratchpad
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        eprintln!("tern: cannot create the scratchpad {} ({e})", dir.display());
        return 1;
    }
    if rt.coordinator {
        registry = Registry::coordinator();
    }
    let control = Rc::new(sdk::Control::default());
    // An SDK session's own servers answer over its control channel, which
    // is read only once the session runs: no waiting for them here.
    #[cfg(feature = "mcp")]
    let mcp_hub = if rt.stream_input {
        let carrier: Rc<dyn crate::mcp::sdk::Carrier> = Rc::clone(&control) as _;
        mcp_start::start(ex, &rt, &env, mcp_start::Wait::None, Some(carrier)).await
    } else {
        mcp_start::start(ex, &rt, &env, mcp_start::Wait::First, None).await
    };
    // MCP tools: for the session's agent, and for sub-agents (a
    // coordinator itself only delegates, so there for its workers only).
    #[cfg(feature = "mcp")]
    let mcp_tools = mcp_hub
        .as_ref()
        .map(|hub| Rc::clone(hub) as Rc<dyn crate::tools::ToolSource>);
    #[cfg(not(feature = "mcp"))]
    let mcp_tools: Option<Rc<dyn crate::tools::ToolSource>> = None;
    // `--json-schema` (or an SDK's jsonSchema) adds StructuredOutput.
    let structured = Rc::new(crate::tools::structured::Structured::default());
    if let Some(schema) = &rt.json_schema {
        structured.set_schema(schema.clone());
    }
    let own_mcp = mcp_tools.clone().filter(|_| !rt.coordinator);
    if own_mcp.is_some() || rt.json_schema.is_some() || rt.stream_input {
        registry.set_dynamic(
            Rc::new(crate::tools::structured::SessionTools {
                structured: Rc::clone(&structured),
                mcp: own_mcp,
            }),
            hidden.clone(),
        );
    }
    #[cfg(not(feature = "mcp"))]
    if !rt.mcp_configs.is_empty() || !rt.mcp_settings.is_empty() {
        eprintln!(
            "tern: warning: MCP servers are configured, but this tern was built without the mcp feature"
        );
    }
    let context_window = resolve_window(&rt, &client).await;
    let compact = context_window <= COMPACT_WINDOW;
    registry.set_compact(compact);
    #[cfg(feature = "web")]
    let web = web::access(&rt, &client, context_window);
    // A small window gets a budget for memory files and tool results, so
    // one big file cannot take the whole context.
    let memory_budget = context_window as usize * 4 / 8;
    let mut system_parts = rt.system.clone();
    let (mut system, memory_notice) = system_parts.compose(compact, memory_budget);
    let worker_system = system.clone();
    if rt.coordinator {
        system.push(COORDINATOR_NOTE.to_string());
    }
    if let Some(n) = memory_notice {
        eprintln!("tern: {n}");
    }
    let max_tokens = if compact {
        rt.max_tokens.min((context_window / 4) as u32)
    } else {
        rt.max_tokens
    };
    // Line mode: one reader for all of standard input.
    let line_input = interactive.then(line::Input::start);
    let approver: Option<Rc<dyn Approver>> = if rt.sdk_permissions {
        Some(Rc::new(sdk::SdkApprover {
            control: Rc::clone(&control),
            abort: abort.clone(),
            cwd: rt.cwd.clone(),
        }))
    } else if let Some(input) = &line_input {
        Some(Rc::new(line::LineApprover::new(
            Rc::clone(input),
            rt.cwd.clone(),
        )))
    } else {
        None
    };
    let info = SessionInfo {
        session_id: session_id.clone(),
        cwd: rt.cwd.display().to_string(),
        model: rt.model.clone(),
        tools: registry.names(),
        permission_mode: rt.mode.as_str(),
        api_key_source: rt.api_key_source.clone(),
        sandbox: sandbox_summary(rt.sandbox.as_ref()),
        #[cfg(feature = "mcp")]
        mcp_servers: mcp_hub.as_ref().map_or(Vec::new(), |h| h.summary()),
        #[cfg(not(feature = "mcp"))]
        mcp_servers: Vec::new(),
        discovered,
        agents: Vec::new(),
        skills: Vec::new(),
        additional_directories: rt
            .extra_dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect(),
        ignored: rt
            .ignored
            .iter()
            .map(|(flag, why)| obj! { "option" => flag.as_str(), "reason" => *why })
            .collect(),
        served_by_anthropic: rt.client.base_url == config::DEFAULT_BASE_URL,
        context_window,
        max_output_tokens: max_tokens,
        memory: memory_summary(&rt),
    };
    if rt.verbose {
        for s in &rt.memory_skipped {
            eprintln!("tern: memory: {s}");
        }
    }
    let hooks = Rc::new(
        Hooks::new(
            rt.hooks,
            SessionFacts {
                session_id: session_id.clone(),
                transcript_path: transcript
                    .as_ref()
                    .map(|t| t.path().display().to_string())
                    .unwrap_or_default(),
                cwd: rt.cwd.display().to_string(),
                permission_mode: rt.mode.as_str().to_string(),
            },
        )
        .with_env(rt.child_env.clone()),
    );
    let mut prompt_blocks = vec![obj! { "type" => "text", "text" => rt.prompt.clone() }];
    if hooks.wants("SessionStart", "startup") {
        let mut fields = Map::new();
        fields.insert("source", "startup");
        let v = hooks.run("SessionStart", "startup", fields).await;
        for n in &v.notices {
            eprintln!("tern: hook: {n}");
        }
        for c in v.context {
            prompt_blocks.push(obj! { "type" => "text", "text" => c });
        }
    }
    let result_limit = compact.then_some(context_window as usize * 3 / 4);
    let home = env("HOME").map(std::path::PathBuf::from);
    let config_home = env("XDG_CONFIG_HOME").map(std::path::PathBuf::from);
    let (defs, def_warnings) = subagent::defs::load(&subagent::defs::dirs(
        &rt.cwd,
        home.as_deref(),
        config_home.as_deref(),
    ));
    for w in def_warnings {
        eprintln!("tern: warning: agent definition {w}");
    }
    let host = Rc::new(subagent::Host {
        ex,
        client: client.clone(),
        model: rt.model.clone(),
        max_tokens,
        system: worker_system,
        retry: rt.retry,
        context_window,
        mode: rt.mode,
        rules: rt.rules.clone(),
        extra_dirs: rt
            .extra_dirs
            .iter()
            .cloned()
            .chain(scratchpad.clone())
            .collect(),
        sandbox: rt.sandbox.clone(),
        sandbox_auto_allow: rt.sandbox_auto_allow,
        protected: rt.protected.clone(),
        tools: worker_tools,
        server_tools,
        child_env: rt.child_env.clone(),
        result_limit,
        cwd: rt.cwd.clone(),
        scratch: scratch.clone(),
        hooks: Rc::clone(&hooks),
        approver: approver.clone(),
        defs: std::cell::RefCell::new(defs),
        depth: 0,
        max_depth: env("TERN_MAX_AGENT_DEPTH")
            .and_then(|v| v.parse().ok())
            .unwrap_or(subagent::DEFAULT_MAX_DEPTH),
        transcript_dir: transcript
            .as_ref()
            .map(|t| t.path().with_extension("").join("subagents")),
        session_id: session_id.clone(),
        background: Rc::default(),
        inbox: Rc::default(),
        workers: Default::default(),
        mcp_tools: mcp_tools.map(|source| (source, hidden.clone())),
        relay: Rc::default(),
        child_note: scratchpad.as_ref().map(|dir| {
            format!(
                "You are a worker for a coordinating agent. Shared scratchpad directory: {} \
                 (other workers read and write it too; leave notes and results there).",
                dir.display()
            )
        }),
    });
    let mut policy = Policy::new(rt.mode, rt.rules, &rt.cwd, &rt.extra_dirs);
    policy.set_command_env(crate::policy::CommandEnv::new(rt.child_env.vars()));
    policy.sandbox = rt.sandbox.clone();
    policy.sandbox_auto_allow = rt.sandbox_auto_allow;
    policy.protected = rt.protected.clone();
    let mut pipeline = Pipeline::new(
        registry,
        policy,
        ToolContext {
            child_env: rt.child_env.clone(),
            sandbox: rt.sandbox.clone(),
            result_limit,
            subagents: Some(Rc::clone(&host) as Rc<dyn crate::tools::Subagents>),
            shells: Rc::new(crate::tools::Shells::new(ex)),
            skills: Rc::clone(&skills),
            #[cfg(feature = "web")]
            web,
            ..ToolContext::new(rt.cwd.clone(), scratch.clone(), abort.clone())
        },
        approver,
        Rc::clone(&hooks),
    );
    pipeline.subagents = Some(host);
    // The session's own loop also carries what parts without a pipeline
    // (MCP, the transcript writer, sub-agents) have to say.
    pipeline.set_reports(crate::report::notices());
    pipeline.checkpoints = checkpoints.map(std::cell::RefCell::new);
    let mut agent = Agent {
        ex,
        client,
        settings: Settings {
            model: rt.model,
            max_tokens,
            system,
            max_turns: rt.max_turns,
            retry: rt.retry,
            fallback_models: rt.fallback_models,
            max_budget_usd: rt.max_budget_usd,
            context_window,
            fallback_after: rt.fallback_after,
            structured: Some(Rc::clone(&structured)),
        },
        pipeline: Rc::new(pipeline),
        abort,
        messages: history,
        context: Default::default(),
    };
    let mut printer = Printer::new(rt.format, rt.print, rt.verbose, info);
    printer.include_partial = rt.include_partial;
    printer.info.agents = agent_names(&agent);
    printer.info.skills = skills.iter().map(|s| s.name.clone()).collect();
    // An SDK session says who it is at the start of each prompt, when the
    // servers and agents its initialize added are known.
    if !rt.stream_input {
        printer.start();
    }
    // Each event goes to the transcript, then to the printer.
    macro_rules! sink {
        () => {
            &mut |ev: Event<'_>| {
                if let Some(t) = transcript.as_mut() {
                    crate::agent::record(t, &ev);
                }
                printer.event(ev);
            }
        };
    }
    let code = if rt.stream_input {
        // The SDK's session: prompts arrive on stdin until it closes.
        let (tx, rx) = smol::channel::unbounded();
        let ignored = Rc::new(std::cell::RefCell::new(Vec::new()));
        let context = Rc::new(std::cell::RefCell::new(sdk::context_view(
            &agent,
            system_parts.memory.as_deref(),
        )));
        let session = sdk::Session {
            ex,
            control,
            abort: agent.abort.clone(),
            pipeline: Rc::clone(&agent.pipeline),
            #[cfg(feature = "mcp")]
            hub: mcp_hub.clone(),
            cwd: rt.cwd.clone(),
            structured: Rc::clone(&structured),
            context: Rc::clone(&context),
            ignored: Rc::clone(&ignored),
            transcript: transcript.as_ref().map(|t| t.path().to_path_buf()),
            allowed_requests: Default::default(),
        };
        ex.spawn(sdk::read_input(session, tx)).detach();
        let mut code = 0;
        loop {
            match rx.recv().await {
                Ok(sdk::Input::Prompt { content, uuid }) => {
                    agent.abort.reset();
                    // Servers an SDK named get the first turn's usual wait.
                    #[cfg(feature = "mcp")]
                    if let Some(hub) = &mcp_hub {
                        hub.settle(mcp_start::first_turn_wait(&env)).await;
                        printer.info.mcp_servers = hub.summary();
                    }
                    printer.info.tools = agent.pipeline.registry.names();
                    printer.info.model = agent.settings.model.clone();
                    printer.info.permission_mode = agent.pipeline.policy.mode().as_str();
                    printer.info.agents = agent_names(&agent);
                    printer.info.ignored.extend(ignored.borrow_mut().drain(..));
                    printer.start();
                    *context.borrow_mut() =
                        sdk::context_view(&agent, system_parts.memory.as_deref());
                    let outcome = agent.run_as(content, uuid, sink!()).await;
                    code = printer.finish(&outcome);
                    let mut view = sdk::context_view(&agent, system_parts.memory.as_deref());
                    view.api_usage = outcome.model_usage.last().map(|m| m.usage);
                    *context.borrow_mut() = view;
                }
                Ok(sdk::Input::Model(m)) => agent.settings.model = m,
                Ok(sdk::Input::System { custom, append }) => {
                    if custom.is_some() {
                        system_parts.custom = custom;
                    }
                    if append.is_some() {
                        system_parts.append = append;
                    }
                    let (mut system, _) = system_parts.compose(compact, memory_budget);
                    if rt.coordinator {
                        system.push(COORDINATOR_NOTE.to_string());
                    }
                    agent.settings.system = system;
                }
                Ok(sdk::Input::End) | Err(_) => break,
            }
        }
        code
    } else if let Some(input) = line_input {
        let first = (!rt.prompt.trim().is_empty()).then_some(Value::Array(prompt_blocks));
        let home = env("HOME").map(std::path::PathBuf::from);
        let mut session = lines::Lines {
            input,
            custom: commands::load(&commands::dirs(&rt.cwd, home.as_deref())),
            cwd: rt.cwd.clone(),
            transcript: &mut transcript,
            printer: &mut printer,
        };
        let code = session.run(&mut agent, first).await;
        line::restore_terminal();
        code
    } else {
        let outcome = agent.run(Value::Array(prompt_blocks), sink!()).await;
        printer.finish(&outcome)
    };

    // Background shells end with the session (and are checked).
    agent.pipeline.ctx.shells.shutdown().await;
    if hooks.wants("SessionEnd", "") {
        let mut fields = Map::new();
        fields.insert("reason", "other");
        let _ = hooks.run("SessionEnd", "", fields).await;
    }
    #[cfg(feature = "mcp")]
    if let Some(hub) = &mcp_hub {
        hub.shutdown().await;
    }
    // Said after the last turn (a server that failed late, say).
    for r in crate::report::notices().take() {
        if let crate::report::Report::Notice { text, .. } = r {
            eprintln!("tern: {text}");
        }
    }
    // Spill files are referenced by tool results the model has seen; they
    // stay for the user to inspect unless nothing was spilled.
    let _ = std::fs::remove_dir(scratch.path());
    code
}

/// The agent definitions the Agent tool can start.
fn agent_names(agent: &Agent<'_>) -> Vec<String> {
    agent
        .pipeline
        .subagents
        .as_ref()
        .map(|h| h.defs.borrow().iter().map(|d| d.name.clone()).collect())
        .unwrap_or_default()
}

/// With nothing configured, finds a model server on this machine and
/// points the session at it; says which (stderr in text and json modes,
/// `system/init` in stream-json). `Err` lists what was tried.
async fn discover_server(rt: &mut config::Runtime) -> Result<Option<Value>, String> {
    use crate::model::discover;
    let Some(plan) = rt.discover.clone() else {
        return Ok(None);
    };
    let ca = rt.client.extra_ca_pem.clone();
    let probes =
        smol::unblock(move || discover::probe_all(&plan.candidates, plan.timeout, ca.as_deref()))
            .await;
    let Some(found) = discover::pick(&probes).cloned() else {
        return Err(discover::nothing_found(&probes));
    };
    let quiet = rt.format == crate::cli::OutputFormat::StreamJson;
    let skipped: Vec<String> = probes
        .iter()
        .filter_map(|p| match &p.outcome {
            // Only servers that answered wrongly are worth a word; closed
            // ports are the normal case.
            Err(e) if !e.contains("connection refused") => Some(format!(
                "{} at {}: {e}",
                p.candidate.kind.name(),
                p.candidate.url
            )),
            _ => None,
        })
        .collect();
    let notes = rt.use_discovered(&found);
    if !quiet {
        for s in &skipped {
            eprintln!("tern: note: skipped {s}");
        }
        eprintln!(
            "tern: no API key or base URL configured; using {} at {} with model {}",
            found.kind.name(),
            found.url,
            rt.model
        );
        for n in &notes {
            eprintln!("tern: note: {n}");
        }
    }
    Ok(Some(obj! {
        "server" => found.kind.name(),
        "url" => found.url.clone(),
        "model" => rt.model.clone(),
        "models" => found.models.iter().map(|m| Value::from(m.as_str())).collect::<Vec<_>>(),
        "context_window" => found.context_window.map(|w| w as i64),
        "skipped" => skipped.into_iter().map(Value::from).collect::<Vec<_>>(),
        "notes" => notes.into_iter().map(Value::from).collect::<Vec<_>>(),
    }))
}

const COORDINATOR_NOTE: &str = "You are the coordinator. You have only Agent, SendMessage and \
TaskStop: give every piece of work to a worker (use run_in_background for work that can run \
in parallel), steer running workers with SendMessage, stop useless ones with TaskStop, and \
combine their results, which arrive as <task-notification> messages, into your answer.";

/// When neither settings, the server nor the model's name say otherwise.
const DEFAULT_CONTEXT_WINDOW: u64 = 200_000;
/// Windows this small get the compact prompt and tool descriptions.
const COMPACT_WINDOW: u64 = 32_768;

/// The model's context window: the setting, else what a self-hosted
/// server reports (its model name may be anything), else the name table.
async fn resolve_window(rt: &config::Runtime, client: &Client) -> u64 {
    if let Some(w) = rt.context_window {
        return w;
    }
    let known = crate::context::known_window(&rt.model);
    // Ask the server when it is likely self-hosted (its model may be
    // called anything) or the name says nothing; a remote gateway for a
    // known model is not asked, saving a round trip on every start.
    if known.is_none() || is_local(&rt.client.base_url) {
        let probe = client.clone();
        if let Some(w) = smol::unblock(move || probe.server_window()).await {
            if rt.verbose {
                eprintln!("tern: the server reports a context window of {w} tokens");
            }
            return w;
        }
    }
    known.unwrap_or(DEFAULT_CONTEXT_WINDOW)
}

/// Loopback, private-network and `.local` hosts.
fn is_local(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    if host == "localhost" || host.ends_with(".local") || host.ends_with(".localhost") {
        return true;
    }
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        Ok(std::net::IpAddr::V6(ip)) => ip.is_loopback() || (ip.segments()[0] & 0xfe00) == 0xfc00,
        Err(_) => false,
    }
}

struct OpenedSession {
    session_id: String,
    transcript: Option<Transcript>,
    /// The conversation so far (empty for a new session).
    history: Vec<Value>,
}

/// A new session, or a recorded one resumed (same id, same file) or
/// forked (new id, history copied into a new file).
fn open_session(
    env: &dyn Fn(&str) -> Option<String>,
    rt: &config::Runtime,
) -> Result<OpenedSession, String> {
    let choice = &rt.session;
    let source = match (&choice.resume, choice.continue_latest) {
        (Some(id), _) => Some(store::find(env, &rt.cwd, id)?),
        (None, true) => Some(store::latest(env, &rt.cwd)?),
        (None, false) => None,
    };
    let Some(source) = source else {
        let session_id = choice.id.clone().unwrap_or_else(new_uuid);
        if let Some(id) = &choice.id
            && store::find(env, &rt.cwd, id).is_ok()
        {
            return Err(format!(
                "session {id} already exists; use --resume {id} to go on with it"
            ));
        }
        let transcript = rt
            .persist_session
            .then(|| new_transcript(env, rt, &session_id))
            .flatten();
        return Ok(OpenedSession {
            session_id,
            transcript,
            history: Vec::new(),
        });
    };
    let loaded = resume::load_file(&source)
        .map_err(|e| format!("cannot resume {}: {e}", source.display()))?;
    for w in &loaded.warnings {
        eprintln!("tern: resume: {w}");
    }
    let old_id = source
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_string();
    if !choice.fork {
        let mut transcript = if rt.persist_session {
            match transcript::reopen(&source, &rt.cwd, &old_id, loaded.leaf.clone()) {
                Ok(t) => Some(t),
                Err(e) => {
                    eprintln!(
                        "tern: warning: cannot append to {} ({e}); this run is not recorded",
                        source.display()
                    );
                    None
                }
            }
        } else {
            None
        };
        // The made-up results become part of the record, so the next
        // resume sees the same conversation.
        if let Some(t) = transcript.as_mut()
            && !loaded.synthesized.is_empty()
        {
            t.append(
                "user",
                &obj! { "role" => "user", "content" => loaded.synthesized.clone() },
                &crate::session::new_uuid(),
            );
        }
        return Ok(OpenedSession {
            session_id: old_id,
            transcript,
            history: loaded.messages,
        });
    }
    let session_id = choice.id.clone().unwrap_or_else(new_uuid);
    let mut transcript = rt
        .persist_session
        .then(|| new_transcript(env, rt, &session_id))
        .flatten();
    if let Some(t) = transcript.as_mut() {
        for m in &loaded.messages {
            t.append(m.str_field("role").unwrap_or("user"), m, &new_uuid());
        }
    }
    Ok(OpenedSession {
        session_id,
        transcript,
        history: loaded.messages,
    })
}

fn new_transcript(
    env: &dyn Fn(&str) -> Option<String>,
    rt: &config::Runtime,
    session_id: &str,
) -> Option<Transcript> {
    let opened = transcript::open(env, &rt.cwd, session_id);
    if let Some(notice) = opened.notice {
        eprintln!("tern: {notice}");
    }
    opened.transcript
}

/// The memory files read and those left out, for `system/init`.
fn memory_summary(rt: &config::Runtime) -> Value {
    let shown = |p: &std::path::Path| Value::from(p.display().to_string());
    obj! {
        "files" => rt.memory_files.iter().map(|p| shown(p)).collect::<Vec<_>>(),
        "not_read" => rt.memory_skipped.iter().map(|s| obj! {
            "path" => shown(&s.path),
            "imported_by" => s.from.as_deref().map(shown),
            "reason" => s.to_string(),
        }).collect::<Vec<_>>(),
    }
}

/// What the sandbox will enforce in this session, for `system/init`.
fn sandbox_summary(policy: Option<&crate::sandbox::SandboxPolicy>) -> Value {
    match policy {
        Some(p) => crate::sandbox::probe().summary(p),
        None => obj! { "enabled" => false },
    }
}

/// SIGINT/SIGTERM trigger the abort token; a second one exits at once.
fn watch_signals(ex: &LocalExecutor<'static>, abort: Abort) {
    let pipe = match crate::sys::catch_termination_signals().and_then(smol::Async::new) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("tern: warning: cannot catch signals ({e}); Ctrl-C will kill tern outright");
            return;
        }
    };
    ex.spawn(async move {
        let mut pipe = pipe;
        let mut byte = [0u8; 1];
        while let Ok(1) = pipe.read(&mut byte).await {
            let sig = i32::from(byte[0]);
            if abort.is_triggered() {
                crate::frontend::line::restore_terminal();
                crate::sys::kill_registered_groups();
                std::process::exit(128 + sig);
            }
            abort.trigger(Reason::Signal(sig));
        }
    })
    .detach();
}
