//! The second stage of configuration: the resolved [`Runtime`] builds the
//! parts of a session — the transcript, the scratch folder, the tool
//! registry, MCP servers, hooks, the policy and sandbox, sub-agents, the
//! pipeline, the agent and its printer. Nothing here reads flags or the
//! environment: every knob arrives in `Runtime`.
//!
//! It lives in `app` rather than in `config` because it needs every plane
//! above the control plane (the import rule in `src/lib.rs`).
//!
//! [`build`] reads as its steps, each a function of what the earlier ones
//! made; nothing here prints: what a step has to say goes into [`Notes`],
//! which the session's frontend shows first.

use std::rc::Rc;

use smol::LocalExecutor;

use super::exit::Failure;
use crate::abort::Abort;
use crate::agent::hooks::{Hooks, SessionFacts};
use crate::agent::{Agent, Settings, assemble, subagent};
use crate::config::Runtime;
use crate::config::prompt::SystemParts;
use crate::frontend::line;
use crate::frontend::sdk;
use crate::frontend::{Printer, SessionInfo};
use crate::json::{Map, Value};
use crate::model::client::Client;
use crate::obj;
use crate::policy::{Policy, PolicySpec};
use crate::report::{Level, Report};
use crate::session::checkpoint;
use crate::session::transcript::Transcript;
use crate::tools::scratch::Scratch;
use crate::tools::structured::Structured;
use crate::tools::{Registry, ToolContext};

mod answer;
mod session;
mod tools;

/// A session's parts, ready to be driven.
pub(super) struct Parts {
    pub agent: Agent<'static>,
    pub printer: Printer,
    pub transcript: Option<Transcript>,
    /// The first prompt's blocks: the prompt, then what SessionStart
    /// hooks added.
    pub first_prompt: Vec<Value>,
    pub hooks: Rc<Hooks>,
    /// The SDK's control channel (used when stdin carries the session).
    pub control: Rc<sdk::Control>,
    pub structured: Rc<Structured>,
    #[cfg(feature = "mcp")]
    pub mcp_hub: Option<Rc<crate::mcp::Hub>>,
    pub scratch: Scratch,
    /// Line mode's reader of standard input.
    pub line_input: Option<Rc<line::Input>>,
    /// The terminal interface, when this session has one.
    #[cfg(feature = "tui")]
    pub tui: Option<Rc<crate::frontend::tui::Tui>>,
    pub system: SystemPrompt,
}

/// The system prompt's parts and how they are put together; an SDK may
/// replace parts during the session.
pub(super) struct SystemPrompt {
    pub parts: SystemParts,
    compact: bool,
    memory_budget: usize,
    coordinator: bool,
}

impl SystemPrompt {
    /// The blocks for the session's own agent, those for its workers (a
    /// coordinator's note is its own), and a notice when memory was cut
    /// to fit.
    pub fn compose(&self) -> (Vec<String>, Vec<String>, Option<String>) {
        let (workers, notice) = self.parts.compose(self.compact, self.memory_budget);
        let mut own = workers.clone();
        if self.coordinator {
            own.push(COORDINATOR_NOTE.to_string());
        }
        (own, workers, notice)
    }
}

const COORDINATOR_NOTE: &str = "You are the coordinator. You have only Agent, SendMessage and \
TaskStop: give every piece of work to a worker (use run_in_background for work that can run \
in parallel), steer running workers with SendMessage, stop useless ones with TaskStop, and \
combine their results, which arrive as <task-notification> messages, into your answer.";

/// What the build has to say, kept in the order it arose: no frontend
/// exists yet, so it is handed to the session's frontend, which shows it
/// before anything else (stderr as `tern: <text>`, and a `system`
/// informational message in stream-json). A session that fails to start
/// says it on stderr before the failure it may explain.
#[derive(Default)]
pub(super) struct Notes(Vec<Report>);

impl Notes {
    /// Always shown: something did not happen as configured.
    pub fn warning(&mut self, text: impl Into<String>) {
        self.0.push(Report::notice(Level::Warning, text));
    }

    /// Shown to whoever watches (`--verbose`, line mode, stream-json).
    pub fn info(&mut self, text: impl Into<String>) {
        self.0.push(Report::notice(Level::Info, text));
    }

    pub fn take(&mut self) -> Vec<Report> {
        std::mem::take(&mut self.0)
    }
}

/// What every step may be given: the executor, the resolved
/// configuration, the model client and the session's abort token.
struct Given<'a> {
    ex: &'static LocalExecutor<'static>,
    rt: &'a Runtime,
    client: &'a Client,
    abort: &'a Abort,
    editor: Option<Rc<dyn crate::tools::Editor>>,
}

/// A program on the other end that answers the session's questions and
/// holds its files open (an ACP client): it takes the place of the
/// terminal and of the SDK's `can_use_tool`.
pub(super) struct External {
    pub approver: Rc<dyn crate::agent::pipeline::Approver>,
    pub editor: Option<Rc<dyn crate::tools::Editor>>,
}

/// Builds the session's parts from `rt`, in the order each needs the
/// last: the record → the tools and MCP servers → what fits the model's
/// window → who answers → hooks → what sub-agents are built from → the
/// policy, tool context and pipeline → the agent and its printer.
/// `discovered` is what discovery found (for `system/init`);
/// `interactive` means a person at a terminal; `external` a program
/// that answers instead. What the steps have to say goes to `notes`.
#[allow(clippy::too_many_arguments)]
pub(super) async fn build(
    ex: &'static LocalExecutor<'static>,
    rt: &Runtime,
    client: Client,
    abort: Abort,
    discovered: Option<Value>,
    interactive: bool,
    external: Option<External>,
    notes: &mut Notes,
) -> Result<Parts, Failure> {
    let (external_approver, editor) = match external {
        Some(e) => (Some(e.approver), e.editor),
        None => (None, None),
    };
    let given = Given {
        ex,
        rt,
        client: &client,
        abort: &abort,
        editor,
    };
    let mut opened = session::open_session(rt, notes)?;
    // Made private (mkdtemp) at the first spill and used through a
    // descriptor: sandboxed commands may write to /tmp.
    let scratch = Scratch::private(&rt.temp_dir);
    let mut tools = tools::tools(rt, &scratch, notes)?;
    let control = Rc::new(sdk::Control::default());
    let mcp = tools::Mcp::start(ex, rt, &control, interactive, notes).await;
    let structured = tools::session_tools(rt, &mut tools, &mcp);
    let window = fit_window(rt, &client, &mut tools.registry, notes).await;
    tools.registry.reload_deferred(&opened.history);
    let mut answerers = answer::who_answers(
        rt,
        interactive,
        external_approver,
        &control,
        &abort,
        window.context_window,
        notes,
    );
    mcp.set_asker(&mut answerers);
    let info = session_info(rt, &opened, &tools, &window, &mcp, discovered, notes);
    let hooks = session_hooks(rt, &opened);
    let first_prompt = first_prompt(rt, &hooks, notes).await;
    let skills = tools.skills.iter().map(|s| s.name.clone()).collect();
    let policy = session_policy(rt);
    let host = subagent_host(
        &given, &opened, &tools, &window, &scratch, &hooks, &answerers, &mcp, &policy, notes,
    );
    let agent = session_agent(
        &given,
        &mut opened,
        tools,
        &window,
        &structured,
        host,
        &mcp,
        policy,
    );
    let printer = printer(rt, info, &agent, skills);
    Ok(Parts {
        hooks,
        agent,
        printer,
        transcript: opened.transcript,
        first_prompt,
        control,
        structured,
        #[cfg(feature = "mcp")]
        mcp_hub: mcp.hub,
        scratch,
        line_input: answerers.line_input,
        #[cfg(feature = "tui")]
        tui: answerers.tui,
        system: window.prompt,
    })
}

/// What the model's context window leaves room for.
struct Window {
    context_window: u64,
    /// How the server takes tools, as `doctor --bench` found: calls read
    /// from text; tools described in the prompt (it refuses `tools`).
    recover_calls: bool,
    tools_as_text: bool,
    max_tokens: u32,
    /// A cap on one tool result in a small window.
    result_limit: Option<usize>,
    prompt: SystemPrompt,
    /// The session's system blocks, and its workers'.
    system: Vec<String>,
    worker_system: Vec<String>,
}

/// Finds the context window and fits the session to it: a small one
/// gets the compact prompt and tool descriptions, fewer output tokens
/// and a budget for memory files and tool results, so one big file
/// cannot take the whole context. What `doctor --bench` measured of this
/// server and model counts: its window, and how it takes tools.
async fn fit_window(
    rt: &Runtime,
    client: &Client,
    registry: &mut Registry,
    notes: &mut Notes,
) -> Window {
    let bench = super::bench::kept(rt);
    if let Some(b) = &bench
        && rt.verbose
    {
        notes.info(format!(
            "this server, as `tern doctor --bench` measured it: {}",
            b.summary()
        ));
    }
    let measured = bench.as_ref().and_then(|b| b.window);
    let context_window = match (rt.context_window, measured) {
        (None, Some(w)) => w,
        _ => super::window::resolve(rt, client, notes).await,
    };
    let tools_as_text = bench
        .as_ref()
        .is_some_and(|b| b.tool_calls == super::bench::ToolCalls::Refused);
    // Recovery the settings turned off stays off, unless the tools can
    // only be described in text.
    let recover_calls = rt.recovers_calls()
        || tools_as_text
        || (rt.tool_call_recovery.is_none()
            && bench
                .as_ref()
                .is_some_and(|b| b.tool_calls == super::bench::ToolCalls::Recovered));
    let compact = crate::context::is_small(context_window);
    registry.set_compact(compact);
    registry.defer_mcp(tool_search(rt), context_window);
    let prompt = SystemPrompt {
        parts: rt.system.clone(),
        compact,
        memory_budget: context_window as usize * 4 / 8,
        coordinator: rt.coordinator,
    };
    let (system, worker_system, memory_notice) = prompt.compose();
    if let Some(n) = memory_notice {
        notes.warning(n);
    }
    let max_tokens = if compact {
        rt.max_tokens.min((context_window / 4) as u32)
    } else {
        rt.max_tokens
    };
    Window {
        context_window,
        recover_calls,
        tools_as_text,
        max_tokens,
        result_limit: compact.then_some(context_window as usize * 3 / 4),
        prompt,
        system,
        worker_system,
    }
}

/// When MCP tools wait behind ToolSearch: as `ENABLE_TOOL_SEARCH` says,
/// never when a bare deny rule takes ToolSearch away.
fn tool_search(rt: &Runtime) -> crate::context::HoldBack {
    let denied = rt.rules.iter().any(|r| {
        r.behavior == crate::config::settings::Behavior::Deny
            && r.spec.is_none()
            && r.tool == crate::tools::deferred::NAME
    });
    if denied {
        crate::context::HoldBack::Never
    } else {
        rt.tool_search
    }
}

/// What `system/init` says about the session; with `--verbose`, which
/// memory files were left out.
fn session_info(
    rt: &Runtime,
    opened: &session::OpenedSession,
    tools: &tools::Tools,
    window: &Window,
    mcp: &tools::Mcp,
    discovered: Option<Value>,
    notes: &mut Notes,
) -> SessionInfo {
    if rt.verbose {
        for s in &rt.memory_skipped {
            notes.info(format!("memory: {s}"));
        }
    }
    SessionInfo {
        session_id: opened.session_id.clone(),
        cwd: rt.cwd.display().to_string(),
        model: rt.model.clone(),
        tools: tools.registry.names(),
        permission_mode: rt.mode.as_str(),
        api_key_source: rt.api_key_source.clone(),
        sandbox: sandbox_summary(rt.sandbox.as_ref()),
        mcp_servers: mcp.summary(),
        discovered,
        agents: Vec::new(),
        skills: Vec::new(),
        plugins: rt.plugins.iter().map(|p| p.to_value()).collect(),
        slash_commands: Vec::new(),
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
        served_by_anthropic: rt.client.base_url == crate::config::DEFAULT_BASE_URL,
        context_window: window.context_window,
        max_output_tokens: window.max_tokens,
        memory: memory_summary(rt),
        trust: rt.trust.to_value(),
    }
}

/// The configured hooks, with the facts every hook is told.
fn session_hooks(rt: &Runtime, opened: &session::OpenedSession) -> Rc<Hooks> {
    let facts = SessionFacts {
        session_id: opened.session_id.clone(),
        transcript_path: opened
            .transcript
            .as_ref()
            .map(|t| t.path().display().to_string())
            .unwrap_or_default(),
        cwd: rt.cwd.display().to_string(),
        permission_mode: rt.mode.as_str().to_string(),
    };
    Rc::new(Hooks::new(rt.hooks.clone(), facts).with_env(rt.child_env.clone()))
}

/// The first prompt's blocks: the prompt, then what SessionStart hooks
/// added.
async fn first_prompt(rt: &Runtime, hooks: &Hooks, notes: &mut Notes) -> Vec<Value> {
    // `tern -p "/review src"`: a custom command's text, not the line.
    let text = if rt.prompt.starts_with('/') {
        let custom = crate::frontend::commands::load(&rt.command_dirs);
        crate::frontend::commands::expand(&rt.prompt, &custom)
    } else {
        None
    };
    let text = text.unwrap_or_else(|| rt.prompt.clone());
    let mut blocks = vec![obj! { "type" => "text", "text" => text }];
    if hooks.wants("SessionStart", "startup") {
        let mut fields = Map::new();
        fields.insert("source", "startup");
        let v = hooks.run("SessionStart", "startup", fields).await;
        for n in &v.notices {
            notes.warning(format!("hook: {n}"));
        }
        for c in v.context {
            blocks.push(obj! { "type" => "text", "text" => c });
        }
    }
    blocks
}

/// What a sub-agent is built from: the session's model, limits,
/// permissions (with the coordinator's scratchpad as a working
/// directory), hooks and approver, the workers' tools, and the agent
/// definitions. The session's own agent is assembled from it too.
#[allow(clippy::too_many_arguments)]
fn subagent_host(
    given: &Given<'_>,
    opened: &session::OpenedSession,
    tools: &tools::Tools,
    window: &Window,
    scratch: &Scratch,
    hooks: &Rc<Hooks>,
    answerers: &answer::Answerers,
    mcp: &tools::Mcp,
    policy: &PolicySpec,
    notes: &mut Notes,
) -> Rc<subagent::Host> {
    let rt = given.rt;
    let (defs, def_warnings) = subagent::defs::load(&rt.agent_dirs);
    for w in def_warnings {
        notes.warning(format!("warning: agent definition {w}"));
    }
    let scratchpad = &tools.scratchpad;
    let spec = subagent::Spec {
        ex: given.ex,
        client: given.client.clone(),
        model: rt.model.clone(),
        max_tokens: window.max_tokens,
        thinking: rt.thinking,
        recover_calls: window.recover_calls,
        tools_as_text: window.tools_as_text,
        system: window.worker_system.clone(),
        retry: rt.retry,
        context_window: window.context_window,
        tool_search: tool_search(rt),
        policy: PolicySpec {
            extra_dirs: policy
                .extra_dirs
                .iter()
                .cloned()
                .chain(scratchpad.clone())
                .collect(),
            ..policy.clone()
        },
        tools: tools.worker_tools.clone(),
        server_tools: tools.server_tools.clone(),
        child_env: rt.child_env.clone(),
        result_limit: window.result_limit,
        scratch: scratch.clone(),
        hooks: Rc::clone(hooks),
        approver: answerers.approver.clone(),
        max_depth: rt.max_agent_depth,
        transcript_dir: opened
            .transcript
            .as_ref()
            .map(|t| t.path().with_extension("").join("subagents")),
        session_id: opened.session_id.clone(),
        local_rules: Some(rt.local_rules()),
        mcp_tools: mcp
            .tools
            .clone()
            .map(|source| (source, tools.hidden.clone())),
        child_note: scratchpad.as_ref().map(|dir| {
            format!(
                "You are a worker for a coordinating agent. Shared scratchpad directory: {} \
                 (other workers read and write it too; leave notes and results there).",
                dir.display()
            )
        }),
    };
    Rc::new(subagent::Host::new(spec, defs))
}

/// The session's permissions, from the resolved rules, mode,
/// directories, sandbox and the environment its commands start with.
fn session_policy(rt: &Runtime) -> PolicySpec {
    PolicySpec {
        command_env: Some(Rc::new(crate::policy::CommandEnv::new(rt.child_env.vars()))),
        sandbox: rt.sandbox.clone(),
        sandbox_auto_allow: rt.sandbox_auto_allow,
        protected: rt.protected.clone(),
        ..PolicySpec::new(rt.mode, rt.rules.clone(), &rt.cwd, &rt.extra_dirs)
    }
}

/// The session's agent: its policy, the tools' context, checkpoints of
/// the files they change, the model settings and the conversation so
/// far, assembled as every sub-agent is. Bash starts where the resumed
/// session's shell was, if that is still a directory inside the working
/// directories, and the record follows it.
#[allow(clippy::too_many_arguments)]
fn session_agent(
    given: &Given<'_>,
    opened: &mut session::OpenedSession,
    tools: tools::Tools,
    window: &Window,
    structured: &Rc<Structured>,
    host: Rc<subagent::Host>,
    mcp: &tools::Mcp,
    spec: PolicySpec,
) -> Agent<'static> {
    let rt = given.rt;
    let policy = Policy::from_spec(spec);
    let shell_cwd = crate::session::ShellCwd::new(&rt.cwd);
    if let Some(dir) = opened
        .shell_cwd
        .take()
        .filter(|d| d.is_dir() && policy.inside(d))
    {
        shell_cwd.set(&crate::policy::canonical(&dir));
    }
    if let Some(t) = opened.transcript.as_mut() {
        t.follow_cwd(shell_cwd.clone());
    }
    let ctx = tool_context(given, opened, &tools, window, &host, &policy, shell_cwd);
    // A server's sampling requests are counted with the tools' model use.
    mcp.set_sampler(rt, given.client, window, &ctx.spend);
    let settings = Settings {
        model: rt.model.clone(),
        max_tokens: window.max_tokens,
        system: window.system.clone(),
        max_turns: rt.max_turns,
        retry: rt.retry,
        fallback_models: rt.fallback_models.clone(),
        max_budget_usd: rt.max_budget_usd,
        max_output_tokens: rt.max_output_tokens_total,
        deadline: rt.deadline,
        context_window: window.context_window,
        fallback_after: rt.fallback_after,
        structured: Some(Rc::clone(structured)),
        thinking: rt.thinking,
        recover_calls: window.recover_calls,
        tools_as_text: window.tools_as_text,
    };
    let own = assemble::SessionOnly {
        checkpoints: opened
            .transcript
            .as_ref()
            .map(|t| checkpoint::Checkpoints::open(t.path())),
        reports: Some(crate::report::notices()),
    };
    let parts = assemble::Parts {
        policy,
        registry: tools.registry,
        ctx,
        settings,
        history: std::mem::take(&mut opened.history),
        abort: given.abort.clone(),
    };
    assemble::assemble(host, parts, own)
}

/// What the session's tools run with: its directories, scratch folder,
/// environment and sandbox, the window's result cap, sub-agents, shells,
/// skills, web access and the REPL's context.
fn tool_context(
    given: &Given<'_>,
    opened: &session::OpenedSession,
    tools: &tools::Tools,
    window: &Window,
    host: &Rc<subagent::Host>,
    policy: &Policy,
    shell_cwd: crate::session::ShellCwd,
) -> ToolContext {
    let rt = given.rt;
    #[cfg(not(feature = "repl"))]
    let _ = opened;
    ToolContext {
        // Model use inside tool calls, counted by the agent.
        spend: Rc::default(),
        child_env: rt.child_env.clone(),
        result_limit: window.result_limit,
        context_window: Some(window.context_window),
        shells: Rc::new(crate::tools::Shells::new(given.ex)),
        skills: Rc::clone(&tools.skills),
        #[cfg(feature = "web")]
        web: super::web::access(rt, given.client, window.context_window),
        home: policy.base().home,
        shell: rt.shell.clone(),
        editor: given.editor.clone(),
        shell_cwd,
        #[cfg(feature = "repl")]
        sampler: rt.repl.then(|| {
            let (model, small_window) = super::web::small_model(rt, window.context_window);
            Rc::new(crate::model::once::SideModel {
                client: given.client.clone(),
                model,
                window: small_window,
            })
        }),
        #[cfg(feature = "repl")]
        repl: crate::tools::repl::Slot::sharing(
            Rc::clone(&tools.repl_tools),
            opened.transcript.as_ref().map(|t| t.path()),
            opened.earlier.as_deref(),
            &opened.history,
            rt.repl_memory_mib,
        ),
        ..ToolContext::new(
            rt.cwd.clone(),
            host.spec.scratch.clone(),
            given.abort.clone(),
        )
    }
}

/// The printer for the chosen output format, with what `system/init`
/// names.
fn printer(rt: &Runtime, info: SessionInfo, agent: &Agent<'_>, skills: Vec<String>) -> Printer {
    let mut printer = Printer::new(rt.format, rt.print, rt.verbose, info);
    printer.include_partial = rt.include_partial;
    printer.info.agents = agent_names(agent);
    printer.info.skills = skills;
    // Only stream-json's init names them (the SDK's session names them
    // at each prompt); reading the command folders is no part of a text
    // run's start.
    if rt.format == crate::cli::OutputFormat::StreamJson && !rt.stream_input {
        printer.info.slash_commands = slash_commands(rt, agent);
    }
    printer
}

/// Without the feature there is never an interface.
#[cfg(not(feature = "tui"))]
pub(super) enum NoTui {}

impl Parts {
    /// The terminal interface, taken to drive the session.
    #[cfg(feature = "tui")]
    pub fn take_tui(&mut self) -> Option<Rc<crate::frontend::tui::Tui>> {
        self.tui.take()
    }

    #[cfg(not(feature = "tui"))]
    pub fn take_tui(&mut self) -> Option<NoTui> {
        None
    }

    /// Hands what the build said to the frontend that drives the
    /// session, to show before anything else: the terminal interface
    /// when there is one, else the printer.
    pub fn show_first(&mut self, notes: Vec<Report>) {
        #[cfg(feature = "tui")]
        if let Some(tui) = &self.tui {
            for r in &notes {
                tui.event(&crate::agent::Event::Report(r));
            }
            return;
        }
        self.printer.notices_first(notes);
    }

    /// After the last turn: background shells stopped, SessionEnd hooks,
    /// the MCP servers stopped, what is left to say, the scratch folder
    /// removed if empty.
    pub async fn finish(self) {
        // Background shells end with the session (and are checked).
        self.agent.pipeline().ctx().shells.shutdown().await;
        if self.hooks.wants("SessionEnd", "") {
            let mut fields = Map::new();
            fields.insert("reason", "other");
            let _ = self.hooks.run("SessionEnd", "", fields).await;
        }
        #[cfg(feature = "mcp")]
        if let Some(hub) = &self.mcp_hub {
            hub.shutdown().await;
        }
        // Said after the last turn (a server that failed late, say).
        self.printer.notices_last(crate::report::notices().take());
        // Spill files are referenced by tool results the model has seen; they
        // stay for the user to inspect unless nothing was spilled.
        if let Some(dir) = self.scratch.made_path() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// The slash commands a prompt may start with, without their `/`: the
/// built-in ones, the user's, and the MCP servers' prompts.
pub(super) fn slash_commands(rt: &Runtime, agent: &Agent<'_>) -> Vec<String> {
    use crate::frontend::commands;
    let mut out: Vec<String> = commands::BUILT_IN
        .iter()
        .filter_map(|(usage, _)| usage.split_whitespace().next())
        .map(|n| n.trim_start_matches('/').to_string())
        .collect();
    out.extend(commands::load(&rt.command_dirs).into_iter().map(|c| c.name));
    out.extend(
        agent
            .pipeline()
            .registry()
            .commands()
            .into_iter()
            .map(|(n, _)| n),
    );
    out
}

/// The agent definitions the Agent tool can start.
pub(super) fn agent_names(agent: &Agent<'_>) -> Vec<String> {
    agent
        .pipeline()
        .subagents()
        .map(|h| h.defs.borrow().iter().map(|d| d.name.clone()).collect())
        .unwrap_or_default()
}

/// The memory files read and those left out, for `system/init`.
fn memory_summary(rt: &Runtime) -> Value {
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
